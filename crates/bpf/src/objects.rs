//! The compiled eBPF objects, carried as bytes: `build.rs` compiles
//! `bpf/*.c` into OUT_DIR when braid is built, and nothing is compiled at
//! run time. When braid was built without clang the objects are empty
//! and [`missing`] says why.

/// `bpf/loss.c`: the lab's Gilbert-Elliott loss on a link's receiving side.
pub const LOSS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/loss.o"));

/// `bpf/datapath.c`: braid's kernel data path (transit forwarding, the
/// egress for the modes the kernel does, the ingress's encapsulation).
pub const DATAPATH: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/datapath.o"));

/// `bpf/gen.c`: the lab benchmark's packet generator (XDP, run in
/// live-frames mode).
pub const GEN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/gen.o"));

const WHY: &str = include_str!(concat!(env!("OUT_DIR"), "/why"));

/// Why this braid carries no eBPF objects (built without clang), if so.
pub fn missing() -> Option<&'static str> {
    (!WHY.is_empty()).then_some(WHY)
}
