//! The lab's spoofer: a process on a router's link that hears one real
//! data packet that router sends toward the next (to the egress of its
//! session), then sends forged copies of it *as that router* (its MAC
//! and address: the frame is the real one, edited), the way a stranger
//! on a shared radio spoofs a neighbor: one with a new session epoch,
//! two with close numbers far ahead (what a real jump looks like), ten
//! of both mixed, a second apart (`braid lab-spoof`, hidden from the
//! help; prints what it sent as one JSON line). Its payloads are real
//! packets of the flow: one delivered again would show as a duplicate.

use std::time::{Duration, Instant};

use braid_wire::data::offset;
use braid_wire::{DataHeader, MessageType, NodeId, RedundancyMode};

use crate::tap::{Seen, Tap};

/// The spoofer's settings (`braid lab-spoof`'s arguments).
#[derive(Debug, Clone)]
pub struct SpoofArgs {
    /// The link (in the spoofed router's namespace) toward the target.
    pub listen: String,
    /// braid's port.
    pub port: u16,
    /// The target's node id: the egress of the session forged.
    pub target: u16,
}

/// What was heard and sent.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SpoofReport {
    /// The session forged: its ingress, class, epoch, and the number of
    /// the packet heard.
    pub ingress: u16,
    pub class: u8,
    pub epoch: u32,
    pub seq: u32,
    /// Forged datagrams sent, by round.
    pub new_epoch: u64,
    pub far_ahead: u64,
    pub mixed: u64,
}

/// A real data frame heard: the whole Ethernet frame, and where its
/// braid header starts.
struct Heard {
    frame: Vec<u8>,
    braid: usize,
    header: DataHeader,
}

/// The first data packet to `target` (not of the control class, not
/// tree mode) crossing `dev` within `during`.
fn hear(dev: &str, port: u16, target: u16, during: Duration) -> anyhow::Result<Heard> {
    let tap = Tap::open(dev, Seen::Both)?;
    let end = Instant::now() + during;
    let mut buf = vec![0u8; 2048];
    while Instant::now() < end {
        let Some(n) = tap.recv(&mut buf) else {
            std::thread::sleep(Duration::from_millis(2));
            continue;
        };
        let frame = &buf[..n];
        if frame.len() < 14 + 20 + 8 || frame[12..14] != [0x08, 0x00] {
            continue;
        }
        let ihl = usize::from(frame[14] & 0x0f) * 4;
        let udp = 14 + ihl;
        if frame[14 + 9] != 17 || frame.len() < udp + 8 {
            continue;
        }
        if u16::from_be_bytes([frame[udp + 2], frame[udp + 3]]) != port {
            continue;
        }
        let braid = udp + 8;
        if braid_wire::peek(&frame[braid..]) != Ok(MessageType::Data) {
            continue;
        }
        let Ok(pkt) = DataHeader::parse(&frame[braid..]) else {
            continue;
        };
        let h = pkt.header;
        if h.egress == NodeId(target)
            && h.class != braid_proto::redundancy::CLASS_CONTROL
            && h.mode != RedundancyMode::Tree
            && h.group.is_none()
        {
            return Ok(Heard {
                frame: frame.to_vec(),
                braid,
                header: h,
            });
        }
    }
    anyhow::bail!("no data packet to node {target} crossed {dev} in {during:?}")
}

/// The heard frame with `epoch` and `seq` in its braid header and no
/// UDP checksum (zero: none, for IPv4).
fn forge(h: &Heard, epoch: u32, seq: u32) -> Vec<u8> {
    let mut f = h.frame.clone();
    let b = h.braid;
    f[b + offset::EPOCH..b + offset::EPOCH + 4].copy_from_slice(&epoch.to_be_bytes());
    f[b + offset::SEQ..b + offset::SEQ + 4].copy_from_slice(&seq.to_be_bytes());
    f[b - 2..b].copy_from_slice(&[0, 0]);
    f
}

/// Hears a packet (for up to 5 s), then sends the three rounds a second
/// apart.
pub fn run(args: SpoofArgs) -> anyhow::Result<SpoofReport> {
    let heard = hear(&args.listen, args.port, args.target, Duration::from_secs(5))?;
    let tap = Tap::open(&args.listen, Seen::Arriving)?;
    let (epoch, seq) = (heard.header.epoch, heard.header.seq);
    let mut report = SpoofReport {
        ingress: heard.header.ingress.0,
        class: heard.header.class,
        epoch,
        seq,
        ..SpoofReport::default()
    };
    let rounds: [Vec<(u32, u32)>; 3] = [
        vec![(epoch ^ 0x5a5a_5a5a, seq.wrapping_add(50))],
        vec![
            (epoch, seq.wrapping_add(1_000_000)),
            (epoch, seq.wrapping_add(1_000_001)),
        ],
        (0..10u32)
            .map(|k| {
                if k % 2 == 0 {
                    (epoch.wrapping_add(k + 1), seq.wrapping_add(50 + k))
                } else {
                    (epoch, seq.wrapping_add(2_000_000 + k))
                }
            })
            .collect(),
    ];
    for (i, round) in rounds.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_secs(1));
        }
        for &(e, s) in round {
            tap.send(&forge(&heard, e, s));
        }
        let sent = round.len() as u64;
        match i {
            0 => report.new_epoch = sent,
            1 => report.far_ahead = sent,
            _ => report.mixed = sent,
        }
    }
    Ok(report)
}
