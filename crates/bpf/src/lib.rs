//! braid's eBPF programs, compiled from `bpf/*.c` when braid is built
//! (`build.rs`) and carried here as bytes, and the kernel data path's
//! user-space side: its map layouts ([`maps`], mirroring
//! `bpf/datapath.h`) and its loader ([`datapath`]). Nothing is compiled
//! at run time. When braid was built without clang the objects are empty
//! and [`missing`] says why.
//!
//! | module | owns |
//! |---|---|
//! | [`loss`] | the lab's loss program, attached ahead of everything on a link's receiving side |
//! | [`maps`] | the byte layout of every map the kernel data path shares with the daemon |
//! | [`compile`] | the node's classifier and sessions in the kernel's terms, or why not |
//! | [`datapath`] | loading the data path, attaching it (TCX links), typed map writes, counters |

pub mod compile;
pub mod datapath;
pub mod loss;
pub mod maps;

pub use datapath::{Attachment, Datapath, DatapathError, Program};

/// `bpf/loss.c`: the lab's Gilbert-Elliott loss on a link's receiving side.
pub const LOSS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/loss.o"));

/// `bpf/datapath.c`: braid's kernel data path (transit forwarding, the
/// egress for the modes the kernel does, the ingress's encapsulation).
pub const DATAPATH: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/datapath.o"));

const WHY: &str = include_str!(concat!(env!("OUT_DIR"), "/why"));

/// Why this braid carries no eBPF objects (built without clang), if so.
pub fn missing() -> Option<&'static str> {
    (!WHY.is_empty()).then_some(WHY)
}

#[cfg(test)]
mod tests {
    use super::maps::*;
    use std::mem::size_of;

    /// Every map's key and value size in the object, against the Rust
    /// mirror: a change to datapath.h without maps.rs fails here.
    #[test]
    fn map_layouts_match_the_object() {
        if super::missing().is_some() {
            eprintln!("skipped: braid was built without its eBPF objects");
            return;
        }
        let obj = aya_obj::Object::parse(super::DATAPATH).expect("the object parses");
        let size = |name: &str| {
            let m = obj.maps.get(name).unwrap_or_else(|| panic!("map {name}"));
            (m.key_size() as usize, m.value_size() as usize)
        };
        assert_eq!(size("settings"), (4, size_of::<Settings>()));
        assert_eq!(size("settings_slot"), (4, 4));
        assert_eq!(size("neighbors"), (2, size_of::<Neighbor>()));
        assert_eq!(size("locals"), (4, 4));
        assert_eq!(
            size("prefixes"),
            (4 + size_of::<PrefixAddr>(), size_of::<Prefix>())
        );
        assert_eq!(size("ruleset"), (4, size_of::<Ruleset>()));
        assert_eq!(
            size("sessions"),
            (size_of::<SessionKey>(), size_of::<Session>())
        );
        assert_eq!(size("seqs"), (size_of::<SessionKey>(), size_of::<Seq>()));
        assert_eq!(
            size("windows"),
            (size_of::<WindowKey>(), size_of::<Window>())
        );
        assert_eq!(size("trees"), (size_of::<TreeKey>(), size_of::<Tree>()));
        assert_eq!(
            size("senders"),
            (size_of::<SenderKey>(), size_of::<Sender>())
        );
        let stats = obj.maps.get("stats").expect("stats map");
        assert_eq!(stats.max_entries() as usize, STATS.len());
    }
}
