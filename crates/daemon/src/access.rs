//! Access interfaces (docs/operations.md, "Access points"): the L2
//! segments where unmodified clients live. For each, the daemon sets up
//! the anycast gateway (the same address and link address on every access
//! point, so a client keeps its default gateway and its ARP entry from one
//! access point to the next), finds clients from the ARP and DHCP traffic
//! it hears there, the kernel's neighbor table (`/proc/net/arp`) and the
//! other access points' advertisements, and measures
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
const ETH_P_IP: u16 = 0x0800;
const ETH_P_ALL: u16 = 0x0003;
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
    /// DHCP requests and acknowledgements that named a client here.
    pub dhcp: u64,
    /// ARP or DHCP frames that did not parse (ARP not Ethernet/IPv4, a
    /// truncated DHCP message, no DHCP magic cookie).
    pub malformed: u64,
    /// Clients not probed because the table was full.
    pub refused: u64,
}

/// An access interface: its raw socket (ARP frames and DHCP messages, in
/// both directions: a DHCP server on this router answers through it) and
/// the clients probed on it.
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
        let fd = access_socket(ifindex).map_err(|source| AccessError::Socket {
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

    /// Reads every frame waiting: replies to our probes count, and any
    /// client heard (ARP) or given or asking for an address (DHCP) is
    /// probed from now on.
    pub fn read(&mut self) {
        let mut frame = [0u8; 1600];
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
        let ethertype = frame.get(12..14).map(|t| u16::from_be_bytes([t[0], t[1]]));
        if ethertype == Some(ETH_P_IP) {
            return self.on_dhcp(frame);
        }
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

    /// A DHCP message (the socket's filter lets only UDP to port 67 or 68
    /// through): a client asking for an address (a request, as a client
    /// that moved here sends one to confirm its lease) was heard here, and
    /// is counted as answering the probes before, as a client heard in
    /// ARP is; one given an address (an acknowledgement: it may be out of
    /// this access point's range) is probed from now on, and its quality
    /// is what it answers.
    fn on_dhcp(&mut self, frame: &[u8]) {
        let Some(d) = Dhcp::parse(frame) else {
            self.counters.malformed += 1;
            return;
        };
        let c = &self.config;
        let (client, heard) = match d.kind {
            DHCP_REQUEST => (d.requested.or(d.ciaddr), true),
            DHCP_ACK => (d.yiaddr, false),
            _ => return,
        };
        let Some(client) = client else { return };
        if d.chaddr == c.mac
            || !c.covers(client)
            || client == c.gateway
            || client == c.address
            || client.is_unspecified()
        {
            return;
        }
        self.counters.dhcp += 1;
        if !self.probed.contains_key(&client) {
            debug!(interface = %c.name, %client, heard, "client in DHCP");
            if self.probed.len() >= MAX_PROBED {
                self.counters.refused += 1;
                return;
            }
            self.probed.insert(
                client,
                Probed {
                    mac: None,
                    history: if heard { u64::MAX } else { 0 },
                    answered: false,
                },
            );
        }
        let p = self.probed.get_mut(&client).expect("inserted");
        p.mac = Some(d.chaddr);
    }

    /// The clients probed here, with their link address once known.
    pub fn clients(&self) -> impl Iterator<Item = (Ipv4Addr, Option<[u8; 6]>)> + '_ {
        self.probed.iter().map(|(&a, p)| (a, p.mac))
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

const DHCP_REQUEST: u8 = 3;
const DHCP_ACK: u8 = 5;
/// The fixed part of a BOOTP message, before the magic cookie.
const BOOTP_LEN: usize = 236;
const DHCP_COOKIE: [u8; 4] = [99, 130, 83, 99];

/// What a DHCP message over Ethernet/IPv4/UDP says of a client (RFC 2131:
/// the fixed BOOTP fields, option 53 the message type, option 50 the
/// address requested).
#[derive(Debug, PartialEq, Eq)]
struct Dhcp {
    kind: u8,
    chaddr: [u8; 6],
    ciaddr: Option<Ipv4Addr>,
    yiaddr: Option<Ipv4Addr>,
    requested: Option<Ipv4Addr>,
}

impl Dhcp {
    fn parse(frame: &[u8]) -> Option<Dhcp> {
        let ip = frame.get(ETH_HLEN..)?;
        let ihl = ((*ip.first()? & 0x0f) as usize) * 4;
        if ip[0] >> 4 != 4 || ihl < 20 || *ip.get(9)? != 17 {
            return None;
        }
        let udp = ip.get(ihl..)?;
        let port = |i: usize| Some(u16::from_be_bytes([*udp.get(i)?, *udp.get(i + 1)?]));
        let (src, dst) = (port(0)?, port(2)?);
        if !matches!((src, dst), (68, 67) | (67, 68) | (67, 67)) {
            return None;
        }
        let m = udp.get(8..)?;
        if m.len() < BOOTP_LEN + 4 || m[BOOTP_LEN..BOOTP_LEN + 4] != DHCP_COOKIE {
            return None;
        }
        // Ethernet hardware addresses only.
        if m[1] != 1 || m[2] != 6 {
            return None;
        }
        let addr = |i: usize| {
            let a = Ipv4Addr::new(m[i], m[i + 1], m[i + 2], m[i + 3]);
            (!a.is_unspecified()).then_some(a)
        };
        let mut d = Dhcp {
            kind: 0,
            chaddr: m[28..34].try_into().ok()?,
            ciaddr: addr(12),
            yiaddr: addr(16),
            requested: None,
        };
        let mut opts = &m[BOOTP_LEN + 4..];
        while let Some((&code, rest)) = opts.split_first() {
            match code {
                0 => {
                    opts = rest;
                    continue;
                }
                255 => break,
                _ => {}
            }
            let (&len, rest) = rest.split_first()?;
            let value = rest.get(..len as usize)?;
            match (code, value) {
                (53, &[kind]) => d.kind = kind,
                (50, &[a, b, c, e]) => d.requested = Some(Ipv4Addr::new(a, b, c, e)),
                _ => {}
            }
            opts = &rest[len as usize..];
        }
        (d.kind != 0).then_some(d)
    }
}

/// Classic BPF for the access socket: ARP frames, and IPv4 UDP to port 67
/// or 68 that is not a later fragment (DHCP); anything else stays in the
/// kernel. The offsets are the Ethernet frame's.
const ACCESS_FILTER: [(u16, u8, u8, u32); 13] = [
    (0x28, 0, 0, 12),          // ldh [12]: the ethertype
    (0x15, 9, 0, 0x0806),      // ARP: accept
    (0x15, 0, 9, 0x0800),      // not IPv4: drop
    (0x30, 0, 0, 23),          // ldb [23]: the IP protocol
    (0x15, 0, 7, 17),          // not UDP: drop
    (0x28, 0, 0, 20),          // ldh [20]: flags and fragment offset
    (0x45, 5, 0, 0x1fff),      // a later fragment: drop
    (0xb1, 0, 0, 14),          // ldxb 4*([14]&0xf): the IP header's length
    (0x48, 0, 0, 16),          // ldh [x+16]: the UDP destination port
    (0x15, 1, 0, 67),          // 67: accept
    (0x15, 0, 1, 68),          // not 68: drop
    (0x06, 0, 0, 0x0004_0000), // accept
    (0x06, 0, 0, 0),           // drop
];

/// A raw socket bound to `ifindex` that receives its ARP frames and DHCP
/// messages (both directions; [`ACCESS_FILTER`]). It is opened for no
/// protocol and bound to every protocol of `ifindex` once filtered: no
/// other interface's frames and no unfiltered ones ever reach it.
fn access_socket(ifindex: i32) -> io::Result<OwnedFd> {
    let proto = (ETH_P_ALL.to_be()) as i32;
    // SAFETY: plain socket calls with valid arguments; the address is a
    // zero-initialised sockaddr_ll filled below; the descriptor is owned
    // from here on.
    unsafe {
        let fd = libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        );
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let mut code: Vec<libc::sock_filter> = ACCESS_FILTER
            .iter()
            .map(|&(code, jt, jf, k)| libc::sock_filter { code, jt, jf, k })
            .collect();
        let program = libc::sock_fprog {
            len: code.len() as u16,
            filter: code.as_mut_ptr(),
        };
        if libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&program as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as u32,
        ) < 0
        {
            return Err(io::Error::last_os_error());
        }
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

/// A DHCP message of `kind` (3 request, 5 acknowledgement) in an Ethernet
/// frame, as a client (request) or a server (acknowledgement) sends it:
/// for tests here and in `tests/access.rs`.
#[doc(hidden)]
pub fn dhcp_frame(
    kind: u8,
    chaddr: [u8; 6],
    ciaddr: Ipv4Addr,
    yiaddr: Ipv4Addr,
    requested: Option<Ipv4Addr>,
) -> Vec<u8> {
    let mut m = vec![0u8; BOOTP_LEN];
    m[0] = if kind == DHCP_ACK { 2 } else { 1 };
    m[1] = 1;
    m[2] = 6;
    m[12..16].copy_from_slice(&ciaddr.octets());
    m[16..20].copy_from_slice(&yiaddr.octets());
    m[28..34].copy_from_slice(&chaddr);
    m.extend_from_slice(&DHCP_COOKIE);
    m.extend_from_slice(&[53, 1, kind]);
    if let Some(r) = requested {
        m.extend_from_slice(&[50, 4]);
        m.extend_from_slice(&r.octets());
    }
    m.push(255);
    let (sport, dport): (u16, u16) = if kind == DHCP_ACK { (67, 68) } else { (68, 67) };
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&chaddr);
    f.extend_from_slice(&ETH_P_IP.to_be_bytes());
    let total = (20 + 8 + m.len()) as u16;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&ciaddr.octets());
    ip[16..20].copy_from_slice(&[255; 4]);
    let sum = ip
        .chunks(2)
        .map(|w| u16::from_be_bytes([w[0], w[1]]) as u32)
        .sum::<u32>();
    let sum = (sum & 0xffff) + (sum >> 16);
    ip[10..12].copy_from_slice(&(!((sum & 0xffff) + (sum >> 16)) as u16).to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + m.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]); // no UDP checksum (allowed over IPv4)
    f.extend_from_slice(&m);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port() -> AccessPort {
        AccessPort {
            config: acc0(),
            ifindex: 0,
            // Never read or written here: any descriptor will do.
            fd: std::fs::File::open("/dev/null").unwrap().into(),
            probed: BTreeMap::new(),
            next_probe: Instant::ZERO,
            next_neighbor_read: Instant::ZERO,
            counters: AccessPortCounters::default(),
        }
    }

    const CLIENT_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x77];

    #[test]
    fn dhcp_requests_and_acknowledgements_name_clients_and_garbage_does_not() {
        let any = Ipv4Addr::UNSPECIFIED;
        let client = Ipv4Addr::new(198, 18, 9, 77);
        // A client that moved here confirms its lease: heard here.
        let req = dhcp_frame(DHCP_REQUEST, CLIENT_MAC, any, any, Some(client));
        let d = Dhcp::parse(&req).unwrap();
        assert_eq!(
            d,
            Dhcp {
                kind: DHCP_REQUEST,
                chaddr: CLIENT_MAC,
                ciaddr: None,
                yiaddr: None,
                requested: Some(client)
            }
        );
        let mut p = port();
        p.on_frame(&req);
        assert_eq!(
            p.clients().collect::<Vec<_>>(),
            [(client, Some(CLIENT_MAC))]
        );
        assert_eq!(p.probed[&client].history, u64::MAX, "heard: in range");
        assert_eq!(p.counters.dhcp, 1);
        // A server's acknowledgement: known, not yet heard.
        let other = Ipv4Addr::new(198, 18, 9, 78);
        let ack = dhcp_frame(DHCP_ACK, [2, 0, 0, 0, 0, 0x78], any, other, None);
        p.on_frame(&ack);
        assert_eq!(p.probed[&other].history, 0, "given an address: probed");
        // Renewing (ciaddr) names the client too; out of the subnet, the
        // gateway's or another access point's link address: not a client.
        let renew = dhcp_frame(
            DHCP_REQUEST,
            [2, 0, 0, 0, 0, 0x79],
            Ipv4Addr::new(198, 18, 9, 79),
            any,
            None,
        );
        p.on_frame(&renew);
        let outside = dhcp_frame(
            DHCP_ACK,
            [2, 0, 0, 0, 0, 0x7a],
            any,
            Ipv4Addr::new(198, 18, 10, 5),
            None,
        );
        p.on_frame(&outside);
        let gw = dhcp_frame(DHCP_REQUEST, CLIENT_MAC, any, any, Some(acc0().gateway));
        p.on_frame(&gw);
        let ours = dhcp_frame(
            DHCP_REQUEST,
            acc0().mac,
            any,
            any,
            Some(Ipv4Addr::new(198, 18, 9, 80)),
        );
        p.on_frame(&ours);
        assert_eq!(p.probed.len(), 3);
        assert_eq!(p.counters.dhcp, 3);
        assert_eq!(p.counters.malformed, 0);
        // Truncated, no cookie, no message type, a bad option length.
        for bad in [
            req[..req.len() - 20].to_vec(),
            {
                let mut f = req.clone();
                f[ETH_HLEN + 28 + BOOTP_LEN] = 0;
                f
            },
            {
                let mut f = req.clone();
                let at = ETH_HLEN + 28 + BOOTP_LEN + 4;
                f[at] = 12; // hostname, not the message type
                f
            },
            {
                let mut f = req.clone();
                f[ETH_HLEN + 28 + BOOTP_LEN + 5] = 200;
                f
            },
        ] {
            assert_eq!(Dhcp::parse(&bad), None);
            p.on_frame(&bad);
        }
        assert_eq!(p.counters.malformed, 4);
        assert_eq!(p.probed.len(), 3);
    }

    proptest::proptest! {
        #[test]
        fn any_frame_is_parsed_or_counted_never_a_panic(
            frame in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..700),
            ip in proptest::prelude::any::<bool>(),
        ) {
            let mut frame = frame;
            if ip && frame.len() >= 14 {
                frame[12..14].copy_from_slice(&ETH_P_IP.to_be_bytes());
            }
            let mut p = port();
            p.on_frame(&frame);
            proptest::prop_assert!(p.probed.len() <= 1);
            let _ = Dhcp::parse(&frame);
        }
    }

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
        let mut port = port();
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
