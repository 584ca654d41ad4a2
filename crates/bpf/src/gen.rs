//! The lab benchmark's packet generator (`bpf/gen.c`): an XDP program
//! that returns `XDP_TX`, run by `BPF_PROG_TEST_RUN` in live-frames mode
//! (the mechanism of xdp-trafficgen; this kernel has no pktgen). A run
//! sends copies of one Ethernet frame out of an interface of the calling
//! thread's network namespace at a set rate, paced by the program from
//! the kernel's clock, built and sent inside the kernel.
//! The receiving side of that interface's peer must run NAPI (a veth
//! whose peer has GRO on or an XDP program), or the kernel drops them.
//! The program writes each frame's first [`HEAD`] bytes back before it
//! sends it (the routers rewrite them in place in a recycled page: see
//! the C file) and numbers its IPv4 identification: the frame must be
//! IPv4 over Ethernet, with identification 0.

use aya::maps::{Array, MapData};
use aya::programs::{ProgramError, TestRun, Xdp};
use aya::{Ebpf, TestRunAttrs, TestRunOptions};

use crate::DatapathError;

/// Frames the kernel builds and sends per batch inside one run.
const BATCH: u32 = 64;

/// The bytes of a frame written back before each send; a frame is at
/// least this long (`bpf/gen.c`).
pub const HEAD: usize = 64;

/// The loaded generator.
pub struct Generator {
    ebpf: Ebpf,
}

impl std::fmt::Debug for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator").finish_non_exhaustive()
    }
}

impl Generator {
    /// Loads and verifies the program.
    pub fn load() -> Result<Generator, DatapathError> {
        if let Some(why) = crate::objects::missing() {
            return Err(DatapathError::NotBuilt(why));
        }
        let mut generator = Generator {
            ebpf: Ebpf::load(crate::objects::GEN)?,
        };
        let prog = generator.program_mut()?;
        crate::datapath::verify(|| prog.load()).map_err(err("verifying"))?;
        Ok(generator)
    }

    fn program(&self) -> Result<&Xdp, DatapathError> {
        self.ebpf
            .program("bench_tx")
            .and_then(|p| p.try_into().ok())
            .ok_or(DatapathError::Map("bench_tx"))
    }

    fn program_mut(&mut self) -> Result<&mut Xdp, DatapathError> {
        self.ebpf
            .program_mut("bench_tx")
            .and_then(|p| p.try_into().ok())
            .ok_or(DatapathError::Map("bench_tx"))
    }

    /// Sets up the next [`Generator::run`]: `total` copies of `frame` (a
    /// whole Ethernet frame, [`HEAD`] bytes or more) at `rate` per second,
    /// the clock started by the run's first frame.
    pub fn pace(&mut self, frame: &[u8], rate: u64, total: u64) -> Result<(), DatapathError> {
        let first = frame
            .first_chunk::<HEAD>()
            .ok_or(DatapathError::ShortFrame(frame.len()))?;
        let mut head: Array<&mut MapData, [u8; HEAD]> = self
            .ebpf
            .map_mut("head")
            .and_then(|m| Array::try_from(m).ok())
            .ok_or(DatapathError::Map("head"))?;
        head.set(0, *first, 0).map_err(access("head"))?;
        let mut pace: Array<&mut MapData, Pace> = self
            .ebpf
            .map_mut("pace")
            .and_then(|m| Array::try_from(m).ok())
            .ok_or(DatapathError::Map("pace"))?;
        let plan = Pace {
            interval_ps: 1_000_000_000_000 / rate.max(1),
            total,
            ..Pace::default()
        };
        pace.set(0, plan, 0).map_err(access("pace"))
    }

    /// Sends what [`Generator::pace`] set up out of the interface numbered
    /// `ifindex` in the calling thread's namespace, and returns when a
    /// signal interrupts it (the caller's way to end it once the frames
    /// have left: the program sends nothing more, but the kernel runs it
    /// until interrupted or after 4 billion runs). The kernel does not say
    /// how many frames its driver took: count them where they arrive.
    pub fn run(&self, ifindex: u32, frame: &[u8]) -> Result<(), DatapathError> {
        // struct xdp_md: data, data_end, data_meta, ingress_ifindex,
        // rx_queue_index, egress_ifindex; data_end is the frame's length.
        let mut ctx = [0u8; 24];
        ctx[4..8].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
        ctx[12..16].copy_from_slice(&ifindex.to_ne_bytes());
        let opts = TestRunOptions {
            data_in: Some(frame),
            ctx_in: Some(&ctx),
            repeat: u32::MAX,
            attrs: TestRunAttrs::new().xdp_live_frames(BATCH),
            ..Default::default()
        };
        let program = self.program()?;
        match program.test_run(opts) {
            Ok(_) => Ok(()),
            Err(ProgramError::SyscallError(e))
                if e.io_error.raw_os_error() == Some(nix::errno::Errno::EINTR as i32) =>
            {
                Ok(())
            }
            Err(source) => Err(DatapathError::Program {
                what: "sending frames with",
                program: "bench_tx",
                source,
            }),
        }
    }

    /// Runs the program once on `frame` without sending anything (a
    /// plain test run, one frame): its verdict (3 sent, 1 not due or all
    /// sent) and the frame as it would have left. For tests.
    pub fn rehearse(&self, frame: &[u8]) -> Result<(u32, Vec<u8>), DatapathError> {
        let mut out = vec![0u8; frame.len()];
        let opts = TestRunOptions {
            data_in: Some(frame),
            data_out: Some(&mut out),
            ..Default::default()
        };
        let program = self.program()?;
        let verdict = program
            .test_run(opts)
            .map_err(err("test-running"))?
            .return_value;
        Ok((verdict, out))
    }

    /// What the last run sent, as the program counted it.
    pub fn paced(&self) -> Result<Paced, DatapathError> {
        let pace: Array<&MapData, Pace> = self
            .ebpf
            .map("pace")
            .and_then(|m| Array::try_from(m).ok())
            .ok_or(DatapathError::Map("pace"))?;
        let p = pace.get(&0, 0).map_err(access("pace"))?;
        Ok(Paced {
            sent: p.sent,
            took: std::time::Duration::from_nanos(p.last_ns.saturating_sub(p.start_ns)),
            max_lag: p.max_lag,
            skipped: p.skipped,
        })
    }
}

/// `struct pace` of bpf/gen.c.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Pace {
    start_ns: u64,
    interval_ps: u64,
    total: u64,
    sent: u64,
    last_ns: u64,
    max_lag: u64,
    skipped: u64,
}

// SAFETY: plain integers, no padding.
unsafe impl aya::Pod for Pace {}

/// What a run sent.
#[derive(Debug, Clone, Copy)]
pub struct Paced {
    pub sent: u64,
    /// From the first frame to the last.
    pub took: std::time::Duration,
    /// The most frames the program was ever behind its schedule.
    pub max_lag: u64,
    /// Frames never sent: the program fell more than 256 behind and
    /// skipped them rather than send a burst (the sender was the limit).
    pub skipped: u64,
}

fn access(map: &'static str) -> impl FnOnce(aya::maps::MapError) -> DatapathError {
    move |source| DatapathError::Access { map, source }
}

fn err(what: &'static str) -> impl FnOnce(ProgramError) -> DatapathError {
    move |source| DatapathError::Program {
        what,
        program: "bench_tx",
        source,
    }
}
