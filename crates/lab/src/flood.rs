//! The lab's hostile stranger: a process on a router's link, at an
//! address no braid router uses, that floods a braid router's port for a
//! bounded time with what the simulator's stranger makes
//! ([`braid_sim::stranger::Forger`]: garbage, control messages forged
//! under a key the network does not use, replays of the real control
//! messages it heard on the link, and data packets claiming routes
//! through the target). Run by a lab flow of kind `flood` (`braid
//! lab-flood`, hidden from the help); prints what it sent as one JSON
//! object.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use anyhow::Context;
use braid_sim::stranger::{Forger, Kind};
use braid_wire::{MessageType, NodeId};

use crate::tap::{Seen, Tap};

/// The flooder's settings (`braid lab-flood`'s arguments).
#[derive(Debug, Clone)]
pub struct FloodArgs {
    /// Our own address (on the link, none of braid's).
    pub from: SocketAddr,
    /// The router flooded: its underlay address and braid port.
    pub to: SocketAddr,
    /// The interface to hear real control messages on (for replays).
    pub listen: String,
    /// How long to flood.
    pub duration: Duration,
    /// The target's node id (data packets claim routes through it).
    pub target: u16,
}

/// What was sent, by kind.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct FloodReport {
    pub garbage: u64,
    pub forged: u64,
    pub replayed: u64,
    pub data: u64,
    /// Real control messages heard on the link and kept for replay.
    pub heard: usize,
    /// Sends the kernel refused (a full socket buffer): not sent.
    pub send_errors: u64,
    pub seconds: f64,
}

/// Captures UDP payloads to braid's port crossing `dev` for `during`:
/// the real control messages the routers on the link send, but the
/// target's own (it would take a replay of its own message as its own
/// echo, not as a replay).
fn hear(dev: &str, port: u16, target: u16, during: Duration) -> anyhow::Result<Vec<Vec<u8>>> {
    // Both ways: the neighbor's messages are sent from this namespace.
    let tap = Tap::open(dev, Seen::Both)?;
    let mut kept = Vec::new();
    let end = Instant::now() + during;
    let mut buf = vec![0u8; 2048];
    while Instant::now() < end && kept.len() < 256 {
        let Some(n) = tap.recv(&mut buf) else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        let frame = &buf[..n];
        if frame.len() < 14 + 20 || frame[12..14] != [0x08, 0x00] {
            continue;
        }
        let ip = &frame[14..];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        if ip.len() < ihl + 8 || ip[9] != 17 {
            continue;
        }
        let udp = &ip[ihl..];
        let dport = u16::from_be_bytes([udp[2], udp[3]]);
        let payload = &udp[8..];
        let control = braid_wire::peek(payload).is_ok_and(|t| t != MessageType::Data);
        let sender = payload.get(4..6).map(|b| u16::from_be_bytes([b[0], b[1]]));
        if dport == port && control && sender != Some(target) {
            kept.push(payload.to_vec());
        }
    }
    Ok(kept)
}

/// Floods `args.to` for `args.duration`, as fast as the socket takes it.
pub fn run(args: FloodArgs) -> anyhow::Result<FloodReport> {
    let heard = hear(
        &args.listen,
        args.to.port(),
        args.target,
        Duration::from_millis(1500),
    )?;
    let socket = UdpSocket::bind(args.from).with_context(|| format!("binding {}", args.from))?;
    socket.set_nonblocking(true)?;
    // Forged origins among 64 node ids, signed with a key of its own.
    let mut forger = Forger::new(64, true, 0x9e37_79b9_7f4a_7c15);
    for m in &heard {
        forger.hear(m);
    }
    let mut report = FloodReport {
        heard: heard.len(),
        ..FloodReport::default()
    };
    let start = Instant::now();
    let target = NodeId(args.target);
    while start.elapsed() < args.duration {
        // Check the clock every 64 sends.
        for _ in 0..64 {
            let (kind, bytes) = forger.datagram(target);
            match socket.send_to(&bytes, args.to) {
                Ok(_) => match kind {
                    Kind::Garbage => report.garbage += 1,
                    Kind::Forged => report.forged += 1,
                    Kind::Replay => report.replayed += 1,
                    Kind::Data => report.data += 1,
                },
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    report.send_errors += 1;
                    std::thread::yield_now();
                }
                Err(_) => report.send_errors += 1,
            }
        }
    }
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}
