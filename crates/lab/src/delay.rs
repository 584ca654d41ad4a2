//! The lab's link emulator for delay and jitter, for kernels without
//! netem: a process joining two interfaces (AF_PACKET, every frame) that
//! holds each frame in a timed queue before passing it to the other side.
//! Frames keep their order per direction (a jittered frame never
//! overtakes an earlier one, as on a real link); each queue is bounded and
//! drops at its tail. Run by `braid lab` inside a namespace of its own
//! (`braid lab-delay`, hidden from the help).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use nix::libc;

use crate::tap::{Seen, Tap};

/// The emulator's settings (`braid lab-delay`'s arguments).
#[derive(Debug, Clone)]
pub struct DelayArgs {
    /// The two interfaces to join.
    pub a: String,
    pub b: String,
    /// One-way delay, each direction.
    pub delay: Duration,
    /// Uniform jitter added to each frame's delay, 0 to this.
    pub jitter: Duration,
    /// Most frames held per direction.
    pub queue: usize,
}

/// Frames in flight one way: (when due, bytes).
struct Line {
    frames: VecDeque<(Instant, Vec<u8>)>,
    dropped: u64,
}

pub fn run(args: DelayArgs) -> anyhow::Result<std::process::ExitCode> {
    let (a, b) = (
        Tap::open(&args.a, Seen::Arriving)?,
        Tap::open(&args.b, Seen::Arriving)?,
    );
    let (delay, jitter) = (args.delay, args.jitter);
    let mut lines = [
        Line {
            frames: VecDeque::new(),
            dropped: 0,
        },
        Line {
            frames: VecDeque::new(),
            dropped: 0,
        },
    ];
    let mut buf = vec![0u8; 65_536];
    // A small xorshift for jitter; its seed only has to differ per run.
    let mut x: u64 =
        Instant::now().elapsed().as_nanos() as u64 ^ 0x9e37_79b9_7f4a_7c15 ^ (a.index as u64) << 32;
    let mut fds = [
        libc::pollfd {
            fd: a.fd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: b.fd,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        let now = Instant::now();
        // Send what is due, each direction in order.
        for (line, out) in lines.iter_mut().zip([&b, &a]) {
            while line.frames.front().is_some_and(|(due, _)| *due <= now) {
                if let Some((_, f)) = line.frames.pop_front() {
                    out.send(&f);
                }
            }
        }
        let next = lines
            .iter()
            .filter_map(|l| l.frames.front().map(|(due, _)| *due))
            .min();
        let timeout_ms = next.map_or(100, |t| {
            t.saturating_duration_since(Instant::now())
                .as_micros()
                .div_ceil(1000) as i32
        });
        // SAFETY: fds is a valid array of two pollfd.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout_ms) };
        for (i, tap) in [&a, &b].into_iter().enumerate() {
            while let Some(n) = tap.recv(&mut buf) {
                let line = &mut lines[i];
                if line.frames.len() >= args.queue {
                    line.dropped += 1;
                    continue;
                }
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let extra = if jitter.is_zero() {
                    Duration::ZERO
                } else {
                    jitter.mul_f64((x >> 11) as f64 / (1u64 << 53) as f64)
                };
                let mut due = Instant::now() + delay + extra;
                // Never overtake the frame ahead.
                if let Some((last, _)) = line.frames.back() {
                    due = due.max(*last);
                }
                line.frames.push_back((due, buf[..n].to_vec()));
            }
        }
        for f in &mut fds {
            f.revents = 0;
        }
    }
}
