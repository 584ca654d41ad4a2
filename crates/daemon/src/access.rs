//! Access interfaces (docs/operations.md, "Access points"): the L2
//! segments where unmodified clients live. For each, the daemon sets up
//! the anycast gateway (the same address and link address on every access
//! point, so a client keeps its default gateway and its ARP entry from one
//! access point to the next), finds clients from the ARP traffic it hears
//! there, the kernel's neighbor table (`/proc/net/arp`) and the other
//! access points' advertisements, and measures
//! each client's quality by probing it: one ARP request per
//! `probe_interval` from this access point's own address, the quality
//! being the share of the last `probe_window` answered (0-255). A client
//! answers ARP whatever software it runs, and it answers each access
//! point's probe to that access point's address, so the replies tell the
//! access points apart even on a shared medium. The node decides what to
//! serve (`braid_proto::access`).
//!
//! IPv4 only: IPv6 clients (neighbor discovery) are not probed yet.

use std::collections::BTreeMap;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Command;

use braid_proto::access::ClientAddr;
use braid_proto::node::Node;
use braid_proto::time::Instant;
use nix::libc;
use thiserror::Error;
use tracing::{debug, info, warn};

use crate::config::AccessInterface;

const ETH_P_ARP: u16 = 0x0806;
const ETH_HLEN: usize = 14;
const ARP_LEN: usize = 28;
const ARP_REQUEST: u16 = 1;
const ARP_REPLY: u16 = 2;
/// Most clients probed per access interface (clients found here and
/// clients the other access points advertise in its subnet).
pub const MAX_PROBED: usize = 512;

/// Why an access interface could not be set up.
#[derive(Debug, Error)]
pub enum AccessError {
    #[error("access interface {name}: {message}")]
    Setup { name: String, message: String },
    #[error("access interface {name}: {source}")]
    Socket { name: String, source: io::Error },
}

/// One client as probed here.
#[derive(Debug, Clone, Copy)]
struct Probed {
    /// Its link address, once heard (probes go there; broadcast before).
    mac: Option<[u8; 6]>,
    /// One bit per probe interval, newest lowest: whether it answered.
    history: u64,
    /// Answered since the last probe.
    answered: bool,
}

/// What an access interface counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AccessPortCounters {
    pub probes_sent: u64,
    pub replies: u64,
    /// ARP frames that did not parse, or were not Ethernet/IPv4.
    pub malformed: u64,
    /// Clients not probed because the table was full.
    pub refused: u64,
}

/// An access interface: its raw ARP socket and the clients probed on it.
pub struct AccessPort {
    pub config: AccessInterface,
    ifindex: i32,
    fd: OwnedFd,
    probed: BTreeMap<Ipv4Addr, Probed>,
    next_probe: Instant,
    next_neighbor_read: Instant,
    pub counters: AccessPortCounters,
}

/// How often the kernel's neighbor table is read for clients.
const NEIGHBOR_READ: std::time::Duration = std::time::Duration::from_secs(1);

fn setup_err(name: &str, message: impl Into<String>) -> AccessError {
    AccessError::Setup {
        name: name.into(),
        message: message.into(),
    }
}

/// Runs `ip ARGS`; its error output on failure.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn mac_text(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

impl AccessPort {
    /// Sets the interface up as an access point's: the gateway's link
    /// address, this access point's own address and the gateway address,
    /// then opens its ARP socket.
    pub fn open(config: &AccessInterface, now: Instant) -> Result<AccessPort, AccessError> {
        let name = config.name.as_str();
        let ifindex = nix::net::if_::if_nametoindex(name)
            .map_err(|e| setup_err(name, format!("no such interface ({e})")))?
            as i32;
        let mac = mac_text(&config.mac);
        // A live change where the driver allows it, else down and up.
        if ip(&["link", "set", "dev", name, "address", &mac]).is_err() {
            ip(&["link", "set", "dev", name, "down"]).map_err(|m| setup_err(name, m))?;
            ip(&["link", "set", "dev", name, "address", &mac]).map_err(|m| setup_err(name, m))?;
        }
        ip(&["link", "set", "dev", name, "up"]).map_err(|m| setup_err(name, m))?;
        let own = format!("{}/{}", config.address, config.len);
        ip(&["addr", "replace", &own, "dev", name]).map_err(|m| setup_err(name, m))?;
        let gw = format!("{}/32", config.gateway);
        ip(&["addr", "replace", &gw, "dev", name]).map_err(|m| setup_err(name, m))?;
        let fd = arp_socket(ifindex).map_err(|source| AccessError::Socket {
            name: name.into(),
            source,
        })?;
        info!(interface = name, gateway = %config.gateway, mac, "access interface ready");
        Ok(AccessPort {
            config: config.clone(),
            ifindex,
            fd,
            probed: BTreeMap::new(),
            next_probe: now,
            next_neighbor_read: now,
            counters: AccessPortCounters::default(),
        })
    }

    /// The socket, for the poll loop.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// When [`Self::probe`] is next due.
    pub fn next_probe(&self) -> Instant {
        self.next_probe
    }

    /// How many clients are probed.
    pub fn probed(&self) -> usize {
        self.probed.len()
    }

    /// Removes the gateway address (a stopped access point must not
    /// attract its clients' traffic); its own address stays.
    pub fn shutdown(&self) {
        let gw = format!("{}/32", self.config.gateway);
        if let Err(m) = ip(&["addr", "del", &gw, "dev", &self.config.name]) {
            warn!(interface = %self.config.name, error = m, "gateway address not removed");
        }
    }

    /// Reads every ARP frame waiting: replies to our probes count, and
    /// any client heard is probed from now on.
    pub fn read(&mut self) {
        let mut frame = [0u8; 128];
        loop {
            // SAFETY: the buffer is valid for its length; the socket is
            // non-blocking.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    frame.as_mut_ptr().cast(),
                    frame.len(),
                    0,
                )
            };
            if n <= 0 {
                return;
            }
            self.on_frame(&frame[..n as usize]);
        }
    }

    fn on_frame(&mut self, frame: &[u8]) {
        let Some(arp) = Arp::parse(frame) else {
            self.counters.malformed += 1;
            return;
        };
        let c = &self.config;
        // Other access points (they speak with the gateway's link
        // address) and addresses that are not a client's.
        if arp.sha == c.mac
            || !c.covers(arp.spa)
            || arp.spa == c.gateway
            || arp.spa == c.address
            || arp.spa.is_unspecified()
        {
            return;
        }
        let probe_reply = arp.op == ARP_REPLY && arp.tpa == c.address;
        if !self.probed.contains_key(&arp.spa) {
            debug!(interface = %c.name, client = %arp.spa, "client heard");
            if self.probed.len() >= MAX_PROBED {
                self.counters.refused += 1;
                return;
            }
            // Heard just now: counted as answering the probes before.
            self.probed.insert(
                arp.spa,
                Probed {
                    mac: None,
                    history: u64::MAX,
                    answered: false,
                },
            );
        }
        let p = self.probed.get_mut(&arp.spa).expect("inserted");
        p.mac = Some(arp.sha);
        if probe_reply {
            self.counters.replies += 1;
            p.answered = true;
        }
    }

    /// Every `probe_interval`: counts who answered the last probe, tells
    /// the node each client's quality, and probes again. Clients the other
    /// access points advertise in this subnet are probed too (a client
    /// coming into range is found within one probe); one that answers
    /// none of the window and nobody else advertises is forgotten.
    pub fn probe(&mut self, now: Instant, node: &mut Node) {
        if now < self.next_probe {
            return;
        }
        self.next_probe = now + self.config.probe_interval;
        let advertised = advertised_elsewhere(node, &self.config);
        self.learn_advertised(&advertised);
        if now >= self.next_neighbor_read {
            self.next_neighbor_read = now + NEIGHBOR_READ;
            if let Ok(text) = std::fs::read_to_string("/proc/net/arp") {
                self.learn_neighbors(&text);
            }
        }
        let window = self.config.probe_window;
        let mask = if window >= 64 {
            u64::MAX
        } else {
            (1u64 << window) - 1
        };
        let mut gone = Vec::new();
        let mut frames = Vec::new();
        let mut measured = Vec::with_capacity(self.probed.len());
        for (&client, p) in self.probed.iter_mut() {
            p.history = (p.history << 1) | p.answered as u64;
            p.answered = false;
            let answered = (p.history & mask).count_ones();
            let quality = (answered * 255 / window) as u8;
            debug!(interface = %self.config.name, %client, quality, "probe");
            let mut addr = [0u8; 16];
            addr[..4].copy_from_slice(&client.octets());
            measured.push((ClientAddr { addr, v4: true }, quality));
            if quality == 0 && advertised.binary_search(&client).is_err() {
                gone.push(client);
                continue;
            }
            frames.push((client, p.mac));
        }
        node.clients_heard(now, measured);
        for client in gone {
            self.probed.remove(&client);
        }
        for (client, mac) in frames {
            let f = self.request(client, mac);
            self.send(&f);
        }
    }

    /// Starts probing the clients the kernel's neighbor table holds on
    /// this interface (`/proc/net/arp`'s text: complete entries, in the
    /// subnet, not another access point's).
    fn learn_neighbors(&mut self, arp_table: &str) {
        for line in arp_table.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [ip, _, flags, mac, _, dev] = f[..] else {
                continue;
            };
            let complete =
                u32::from_str_radix(flags.trim_start_matches("0x"), 16).is_ok_and(|x| x & 0x2 != 0);
            let (Ok(addr), Some(mac)) = (ip.parse::<Ipv4Addr>(), crate::config::parse_mac(mac))
            else {
                continue;
            };
            let c = &self.config;
            if dev != c.name
                || !complete
                || mac == c.mac
                || !c.covers(addr)
                || addr == c.gateway
                || addr == c.address
                || self.probed.contains_key(&addr)
            {
                continue;
            }
            if self.probed.len() >= MAX_PROBED {
                self.counters.refused += 1;
                return;
            }
            debug!(interface = %c.name, client = %addr, "client in the neighbor table");
            self.probed.insert(
                addr,
                Probed {
                    mac: Some(mac),
                    history: 0,
                    answered: false,
                },
            );
        }
    }

    /// Starts probing the clients other access points advertise in this
    /// subnet.
    fn learn_advertised(&mut self, advertised: &[Ipv4Addr]) {
        for &client in advertised {
            if self.probed.contains_key(&client) {
                continue;
            }
            if self.probed.len() >= MAX_PROBED {
                self.counters.refused += 1;
                return;
            }
            self.probed.insert(
                client,
                Probed {
                    mac: None,
                    history: 0,
                    answered: false,
                },
            );
        }
    }

    /// An ARP request for `client` from this access point's own address,
    /// to its link address when known.
    fn request(&self, client: Ipv4Addr, mac: Option<[u8; 6]>) -> [u8; ETH_HLEN + ARP_LEN] {
        let mut f = [0u8; ETH_HLEN + ARP_LEN];
        f[0..6].copy_from_slice(&mac.unwrap_or([0xff; 6]));
        f[6..12].copy_from_slice(&self.config.mac);
        f[12..14].copy_from_slice(&ETH_P_ARP.to_be_bytes());
        let a = &mut f[ETH_HLEN..];
        a[0..2].copy_from_slice(&1u16.to_be_bytes()); // Ethernet
        a[2..4].copy_from_slice(&0x0800u16.to_be_bytes()); // IPv4
        a[4] = 6;
        a[5] = 4;
        a[6..8].copy_from_slice(&ARP_REQUEST.to_be_bytes());
        a[8..14].copy_from_slice(&self.config.mac);
        a[14..18].copy_from_slice(&self.config.address.octets());
        // Target link address unknown (zeros).
        a[24..28].copy_from_slice(&client.octets());
        f
    }

    fn send(&mut self, frame: &[u8]) {
        // SAFETY: a zero-initialised sockaddr_ll filled below; the frame
        // is valid for its length.
        let sent = unsafe {
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = ETH_P_ARP.to_be();
            sll.sll_ifindex = self.ifindex;
            sll.sll_halen = 6;
            sll.sll_addr[..6].copy_from_slice(&frame[0..6]);
            libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if sent > 0 {
            self.counters.probes_sent += 1;
        }
    }
}

/// The clients other access points advertise in `config`'s subnet.
fn advertised_elsewhere(node: &Node, config: &AccessInterface) -> Vec<Ipv4Addr> {
    let me = node.id();
    let mut out = Vec::new();
    for r in node.control().lsdb().records() {
        if r.origin == me {
            continue;
        }
        for p in r.prefixes.iter() {
            if let braid_wire::Prefix::Client4 { addr, .. } = p {
                let a = Ipv4Addr::from(*addr);
                if config.covers(a) && a != config.address && a != config.gateway {
                    out.push(a);
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// An ARP packet for IPv4 over Ethernet, as read from the socket (with
/// its Ethernet header).
struct Arp {
    op: u16,
    sha: [u8; 6],
    spa: Ipv4Addr,
    tpa: Ipv4Addr,
}

impl Arp {
    fn parse(frame: &[u8]) -> Option<Arp> {
        let a = frame.get(ETH_HLEN..ETH_HLEN + ARP_LEN)?;
        let be16 = |i: usize| u16::from_be_bytes([a[i], a[i + 1]]);
        if be16(0) != 1 || be16(2) != 0x0800 || a[4] != 6 || a[5] != 4 {
            return None;
        }
        let op = be16(6);
        if op != ARP_REQUEST && op != ARP_REPLY {
            return None;
        }
        let ip = |i: usize| Ipv4Addr::new(a[i], a[i + 1], a[i + 2], a[i + 3]);
        Some(Arp {
            op,
            sha: a[8..14].try_into().ok()?,
            spa: ip(14),
            tpa: ip(24),
        })
    }
}

/// A raw socket bound to `ifindex` that receives its ARP frames.
fn arp_socket(ifindex: i32) -> io::Result<OwnedFd> {
    let proto = (ETH_P_ARP.to_be()) as i32;
    // SAFETY: plain socket calls with valid arguments; the address is a
    // zero-initialised sockaddr_ll filled below; the descriptor is owned
    // from here on.
    unsafe {
        let fd = libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            proto,
        );
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto as u16;
        sll.sll_ifindex = ifindex;
        if libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        ) < 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Access interface acc0: 198.18.9.2/24, gateway .1.
    fn acc0() -> AccessInterface {
        AccessInterface {
            name: "acc0".into(),
            address: Ipv4Addr::new(198, 18, 9, 2),
            len: 24,
            gateway: Ipv4Addr::new(198, 18, 9, 1),
            mac: crate::config::DEFAULT_GATEWAY_MAC,
            probe_interval: std::time::Duration::from_millis(100),
            probe_window: 10,
        }
    }

    #[test]
    fn arp_frames_parse_and_garbage_does_not() {
        let cfg = acc0();
        // A request as `request` builds it parses back.
        let mut f = [0u8; ETH_HLEN + ARP_LEN];
        f[12..14].copy_from_slice(&ETH_P_ARP.to_be_bytes());
        let a = &mut f[ETH_HLEN..];
        a[0..2].copy_from_slice(&1u16.to_be_bytes());
        a[2..4].copy_from_slice(&0x0800u16.to_be_bytes());
        a[4] = 6;
        a[5] = 4;
        a[6..8].copy_from_slice(&ARP_REPLY.to_be_bytes());
        a[8..14].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        a[14..18].copy_from_slice(&[198, 18, 9, 9]);
        a[24..28].copy_from_slice(&cfg.address.octets());
        let arp = Arp::parse(&f).unwrap();
        assert_eq!(arp.op, ARP_REPLY);
        assert_eq!(arp.spa, Ipv4Addr::new(198, 18, 9, 9));
        assert_eq!(arp.tpa, cfg.address);
        assert!(Arp::parse(&f[..20]).is_none(), "truncated");
        f[ETH_HLEN + 4] = 8;
        assert!(Arp::parse(&f).is_none(), "not Ethernet/IPv4");
        assert!(cfg.covers(Ipv4Addr::new(198, 18, 9, 200)));
        assert!(!cfg.covers(Ipv4Addr::new(198, 18, 10, 1)));
    }

    #[test]
    fn clients_are_found_in_the_kernels_neighbor_table() {
        let mut port = AccessPort {
            config: acc0(),
            ifindex: 0,
            fd: arp_socket(0).unwrap_or_else(|_| {
                // Without CAP_NET_RAW: any descriptor will do for this test.
                std::fs::File::open("/dev/null").unwrap().into()
            }),
            probed: BTreeMap::new(),
            next_probe: Instant::ZERO,
            next_neighbor_read: Instant::ZERO,
            counters: AccessPortCounters::default(),
        };
        let table =
            "IP address       HW type     Flags       HW address            Mask     Device\n\
            198.18.9.100     0x1         0x2         02:00:00:00:00:64     *        acc0\n\
            198.18.9.101     0x1         0x0         00:00:00:00:00:00     *        acc0\n\
            198.18.9.3       0x1         0x2         02:62:72:64:00:01     *        acc0\n\
            198.18.7.100     0x1         0x2         02:00:00:00:00:65     *        acc0\n\
            198.18.9.102     0x1         0x2         02:00:00:00:00:66     *        eth0\n\
            garbage\n";
        port.learn_neighbors(table);
        let found: Vec<Ipv4Addr> = port.probed.keys().copied().collect();
        assert_eq!(found, vec![Ipv4Addr::new(198, 18, 9, 100)]);
        assert_eq!(port.probed[&found[0]].mac, Some([2, 0, 0, 0, 0, 0x64]));
    }
}
