//! The lab's hostile stranger: a process on a router's link, at an
//! address no braid router uses, that floods a braid router's port for a
//! bounded time with garbage, control messages forged under a key the
//! network does not use, replays of the real control messages it heard on
//! the link, and data packets claiming routes through the target. Run by
//! a lab flow of kind `flood` (`braid lab-flood`, hidden from the help);
//! prints what it sent as one JSON object.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use braid_proto::auth::{AuthConfig, AuthKey, Authenticator};
use braid_wire::{
    ControlHeader, DataFlags, DataHeader, Group, LsaEntry, LsaLink, MessageType, NodeId, Prefix,
    RedundancyMode,
};
use nix::libc;

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

/// Cheap deterministic bytes (the flood's content need not be secret).
struct Bytes(u64);

impl Bytes {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn fill(&mut self, out: &mut [u8]) {
        for b in out {
            *b = self.next() as u8;
        }
    }
}

/// Captures UDP payloads to braid's port crossing `dev` for `during`:
/// the real control messages the routers on the link send, but the
/// target's own (it would take a replay of its own message as its own
/// echo, not as a replay).
fn hear(dev: &str, port: u16, target: u16, during: Duration) -> anyhow::Result<Vec<Vec<u8>>> {
    let index = nix::net::if_::if_nametoindex(dev).with_context(|| format!("interface {dev}"))?;
    // Every protocol: only such a tap sees the frames sent out of `dev`
    // too (the neighbor's messages, sent from this namespace).
    let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
    // SAFETY: plain socket calls with valid arguments; the address is a
    // zero-initialised sockaddr_ll filled below; the fd is closed below.
    let fd = unsafe {
        let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK, proto);
        if fd < 0 {
            bail!("AF_PACKET socket: {}", std::io::Error::last_os_error());
        }
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto as u16;
        sll.sll_ifindex = index as i32;
        if libc::bind(
            fd,
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        ) < 0
        {
            let e = std::io::Error::last_os_error();
            libc::close(fd);
            bail!("bind to {dev}: {e}");
        }
        fd
    };
    let mut kept = Vec::new();
    let end = Instant::now() + during;
    let mut buf = vec![0u8; 2048];
    while Instant::now() < end && kept.len() < 256 {
        // SAFETY: buf is valid for its length.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        let frame = &buf[..n as usize];
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
    // SAFETY: fd is ours and open.
    unsafe { libc::close(fd) };
    Ok(kept)
}

/// A control message forged under a key the network does not use:
/// an advertisement claiming the target's neighbors and a prefix.
fn forged(rng: &mut Bytes, signer: &Authenticator, target: u16) -> Vec<u8> {
    let origin = NodeId((rng.next() % 64) as u16 + 1);
    let links = [LsaLink {
        neighbor: NodeId(target),
        link_id: 0,
        metric_out: 1,
        metric_in: 1,
    }];
    let prefixes = [Prefix::V4 {
        addr: [198, 18, (rng.next() % 250) as u8, 0],
        len: 24,
    }];
    let entry = LsaEntry::new(origin, 0, rng.next() as u32, &links, &prefixes);
    let (key_id, mac_len) = signer.header_fields();
    let header = ControlHeader {
        key_id,
        mac_len,
        boot_index: rng.next() as u32,
        counter: rng.next() as u32,
        ..ControlHeader::new(MessageType::Lsa, origin)
    };
    let mut buf = vec![0u8; 256];
    let n = braid_wire::Lsa::emit_bundle(&header, &[entry], &mut buf).unwrap_or(0);
    buf.truncate(n);
    signer.sign(&mut buf);
    buf
}

/// A data packet for a host behind some router, claiming a route that
/// passes the target.
fn data(rng: &mut Bytes, target: u16) -> Vec<u8> {
    let h = DataHeader {
        flags: DataFlags::empty(),
        mode: RedundancyMode::Single,
        path: 0,
        route_ptr: 1,
        ingress: NodeId((rng.next() % 8) as u16 + 1),
        egress: NodeId((rng.next() % 8) as u16 + 1),
        seq: rng.next() as u32,
        group: Group::NONE,
        hop_limit: 16,
        class: 0,
        epoch: rng.next() as u32,
    };
    let mut buf = vec![0u8; 24 + 100];
    let Ok(n) = h.emit(&[NodeId(target)], &mut buf) else {
        return Vec::new();
    };
    // An IPv4 packet behind the header.
    let inner = &mut buf[n..];
    rng.fill(inner);
    inner[0] = 0x45;
    inner[2..4].copy_from_slice(&100u16.to_be_bytes());
    inner[9] = 17;
    buf
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
    let stranger = Authenticator::new(
        NodeId(0xfffe),
        AuthConfig {
            keys: vec![AuthKey::new(1, b"not the network's key, 32 bytes!")?],
        },
        1,
    )?;
    let mut rng = Bytes(0x9e37_79b9_7f4a_7c15);
    let mut report = FloodReport {
        heard: heard.len(),
        ..FloodReport::default()
    };
    let start = Instant::now();
    let mut garbage = [0u8; 200];
    let mut k = 0u64;
    while start.elapsed() < args.duration {
        // Check the clock every 64 sends.
        for _ in 0..64 {
            k += 1;
            let (bytes, kind): (Vec<u8>, usize) = match k % 4 {
                0 => {
                    let len = 1 + (rng.next() % 200) as usize;
                    rng.fill(&mut garbage[..len]);
                    // Half of it looks like a braid control header.
                    if k.is_multiple_of(8) {
                        garbage[0] = 0x13;
                    }
                    (garbage[..len].to_vec(), 0)
                }
                1 => (forged(&mut rng, &stranger, args.target), 1),
                2 if !heard.is_empty() => (heard[(rng.next() as usize) % heard.len()].clone(), 2),
                _ => (data(&mut rng, args.target), 3),
            };
            match socket.send_to(&bytes, args.to) {
                Ok(_) => match kind {
                    0 => report.garbage += 1,
                    1 => report.forged += 1,
                    2 => report.replayed += 1,
                    _ => report.data += 1,
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
