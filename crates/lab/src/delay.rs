//! The lab's link emulator for delay and jitter, for kernels without
//! netem: a process joining two interfaces (AF_PACKET, every frame) that
//! holds each frame in a timed queue before passing it to the other side.
//! Frames keep their order per direction (a jittered frame never
//! overtakes an earlier one, as on a real link); each queue is bounded and
//! drops at its tail. Run by `braid lab` inside a namespace of its own
//! (`braid lab-delay`, hidden from the help).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nix::libc;

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

/// A raw socket on one interface that sees every frame arriving there.
struct Tap {
    fd: i32,
    index: i32,
}

impl Tap {
    fn open(name: &str) -> anyhow::Result<Tap> {
        let index = nix::net::if_::if_nametoindex(name)
            .with_context(|| format!("interface {name}"))? as i32;
        let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
        // SAFETY: plain socket calls with valid arguments; the address is
        // a zero-initialised sockaddr_ll filled below.
        unsafe {
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK, proto);
            if fd < 0 {
                bail!("AF_PACKET socket: {}", std::io::Error::last_os_error());
            }
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto as u16;
            sll.sll_ifindex = index;
            if libc::bind(
                fd,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            ) < 0
            {
                bail!("bind to {name}: {}", std::io::Error::last_os_error());
            }
            // Only frames arriving here, not the ones we send out of it.
            let one: libc::c_int = 1;
            libc::setsockopt(
                fd,
                libc::SOL_PACKET,
                libc::PACKET_IGNORE_OUTGOING,
                (&one as *const libc::c_int).cast(),
                4,
            );
            Ok(Tap { fd, index })
        }
    }

    fn recv(&self, buf: &mut [u8]) -> Option<usize> {
        // SAFETY: buf is valid for its length.
        let n = unsafe { libc::recv(self.fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        (n > 0).then_some(n as usize)
    }

    fn send(&self, frame: &[u8]) {
        // SAFETY: frame is valid for its length; the socket is bound.
        unsafe {
            libc::send(self.fd, frame.as_ptr().cast(), frame.len(), 0);
        }
    }
}

/// Frames in flight one way: (when due, bytes).
struct Line {
    frames: VecDeque<(Instant, Vec<u8>)>,
    dropped: u64,
}

pub fn run(args: DelayArgs) -> anyhow::Result<std::process::ExitCode> {
    let (a, b) = (Tap::open(&args.a)?, Tap::open(&args.b)?);
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
