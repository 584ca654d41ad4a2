//! The lab's link emulator for delay and jitter, for kernels without
//! netem: a process joining two interfaces (AF_PACKET, every frame) that
//! holds each frame in a timed queue before passing it to the other side.
//! Frames keep their order per direction (a jittered frame never
//! overtakes an earlier one, as on a real link); each queue is bounded and
//! drops at its tail. Run by `braid lab` inside a namespace of its own
//! (`braid lab-delay`, hidden from the help). Told to stop (SIGTERM,
//! SIGINT), it prints what it lost as one JSON line on stdout
//! ([`EmulatorDrops`]), which the lab reports beside the flows, so that
//! a loss the emulator caused (it was descheduled, say) is never taken
//! for the routing's.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

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

/// The receive buffer each side asks for: 16 MiB holds over a second of
/// full-size frames at 100 Mbit/s, so that a busy machine (two cores
/// running the routers, the hosts and the emulators) does not make the
/// emulator lose what the scenario did not ask it to.
const RECEIVE_BUFFER: usize = 16 << 20;

/// Frames the emulator lost, both directions together: the line printed
/// when it stops, as `{"emulator_drops": {...}}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmulatorDrops {
    /// Its queue held `queue` frames already.
    pub queue_full: u64,
    /// The kernel dropped them before the emulator read them (its
    /// socket's buffer was full).
    pub socket: u64,
    /// The kernel refused to send them on.
    pub send_failed: u64,
    /// Not lost, but sent 5 ms or more after they were due (the emulator
    /// was not scheduled in time): the link's delay was longer than the
    /// scenario asked for, by up to `max_late_ms`.
    #[serde(default)]
    pub sent_late: u64,
    #[serde(default)]
    pub max_late_ms: u64,
}

/// A frame sent this much after it was due counts in `sent_late`.
const LATE: Duration = Duration::from_millis(5);

impl EmulatorDrops {
    /// Frames lost (those sent late are not).
    pub fn total(&self) -> u64 {
        self.queue_full + self.socket + self.send_failed
    }

    /// Two emulators' counts together (the lateness: the larger).
    pub fn sum(self, other: EmulatorDrops) -> EmulatorDrops {
        EmulatorDrops {
            queue_full: self.queue_full + other.queue_full,
            socket: self.socket + other.socket,
            send_failed: self.send_failed + other.send_failed,
            sent_late: self.sent_late + other.sent_late,
            max_late_ms: self.max_late_ms.max(other.max_late_ms),
        }
    }

    /// The counts in an emulator's output (its last such line), if it
    /// printed them.
    pub fn from_output(text: &str) -> Option<EmulatorDrops> {
        #[derive(Deserialize)]
        struct Line {
            emulator_drops: EmulatorDrops,
        }
        text.lines()
            .rev()
            .find_map(|l| serde_json::from_str::<Line>(l).ok())
            .map(|l| l.emulator_drops)
    }
}

/// Frames in flight one way: (when due, bytes).
struct Line {
    frames: VecDeque<(Instant, Vec<u8>)>,
}

pub fn run(args: DelayArgs) -> anyhow::Result<std::process::ExitCode> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    // A link is never descheduled: ahead of the routers and hosts that
    // share this machine (real-time, the lowest priority), or as it can.
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: a valid sched_param for this process.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        eprintln!(
            "braid lab-delay: running without real-time priority ({}): a busy machine can delay frames",
            std::io::Error::last_os_error()
        );
    }
    let (a, b) = (
        Tap::open(&args.a, Seen::Arriving)?,
        Tap::open(&args.b, Seen::Arriving)?,
    );
    for tap in [&a, &b] {
        tap.grow_receive_buffer(RECEIVE_BUFFER);
    }
    let (delay, jitter) = (args.delay, args.jitter);
    let mut lines = [
        Line {
            frames: VecDeque::new(),
        },
        Line {
            frames: VecDeque::new(),
        },
    ];
    let mut drops = EmulatorDrops::default();
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
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        // Send what is due, each direction in order.
        for (line, out) in lines.iter_mut().zip([&b, &a]) {
            while line.frames.front().is_some_and(|(due, _)| *due <= now) {
                if let Some((due, f)) = line.frames.pop_front() {
                    let late = now - due;
                    if late >= LATE {
                        drops.sent_late += 1;
                        drops.max_late_ms = drops.max_late_ms.max(late.as_millis() as u64);
                    }
                    if !out.send(&f) {
                        drops.send_failed += 1;
                    }
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
                    drops.queue_full += 1;
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
    drops.socket = a.take_dropped() + b.take_dropped();
    println!("{}", serde_json::json!({ "emulator_drops": drops }));
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counts_are_read_back_from_the_last_line_that_carries_them() {
        let d = EmulatorDrops {
            queue_full: 1,
            socket: 20,
            send_failed: 300,
            sent_late: 4000,
            max_late_ms: 7,
        };
        let line = serde_json::json!({ "emulator_drops": d }).to_string();
        let text = format!("starting\n{line}\nbraid: error: something after\n");
        assert_eq!(EmulatorDrops::from_output(&text), Some(d));
        assert_eq!(d.total(), 321);
        assert_eq!(EmulatorDrops::from_output("killed before it said\n"), None);
        // An emulator of an older lab (no lateness) still reads.
        let old = r#"{"emulator_drops":{"queue_full":2,"socket":0,"send_failed":0}}"#;
        let o = EmulatorDrops::from_output(old).unwrap();
        assert_eq!((o.queue_full, o.sent_late), (2, 0));
        // Summed: the losses and late frames add, the lateness is the most.
        let s = d.sum(EmulatorDrops {
            sent_late: 1,
            max_late_ms: 3,
            ..o
        });
        assert_eq!((s.total(), s.sent_late, s.max_late_ms), (323, 4001, 7));
    }
}
