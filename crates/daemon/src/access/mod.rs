//! Access interfaces (docs/operations.md, "Access points"): the L2
//! segments where unmodified clients live. For each, the daemon sets up
//! the anycast gateway (the same address and link address on every access
//! point, so a client keeps its default gateway and its ARP entry from one
//! access point to the next; for IPv6 the same link-local address, made
//! from that link address, advertised as the default router), finds
//! clients from the ARP, DHCP and neighbor discovery traffic it hears
//! there, the kernel's neighbor table (`table.rs`) and the other
//! access points' advertisements, and measures each client's quality by
//! probing it: one ARP request (IPv4) or neighbor solicitation (IPv6) per
//! `probe_interval` from this access point's own address, the quality
//! being the share of the last `probe_window` answered (0-255). A client
//! answers them whatever software it runs, and it answers each access
//! point's probe to that access point's address, so the replies tell the
//! access points apart even on a shared medium. The node decides what to
//! serve (`braid_proto::access`). The frames themselves: `frames.rs`.

pub mod frames;
mod table;

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Command;
use std::time::Duration;

use braid_proto::access::ClientAddr;
use braid_proto::node::Node;
use braid_proto::time::Instant;
use nix::libc;
use thiserror::Error;
use tracing::{debug, info, warn};

use crate::config::AccessInterface;
#[doc(hidden)]
pub use frames::{dhcp_frame, neighbor_advertisement, neighbor_solicitation, solicited_node};
use frames::{
    Arp, Dhcp, Nd, ACCESS_FILTER, ARP_REPLY, DHCP_ACK, DHCP_REQUEST, ETH_P_ARP, ETH_P_IP,
    ETH_P_IPV6, ND_NEIGHBOR_ADVERT, ND_NEIGHBOR_SOLICIT, ND_ROUTER_SOLICIT,
};

/// Router advertisements: one this often, and one at most this soon
/// after a router solicitation (a client joining asks for one).
const RA_INTERVAL: Duration = Duration::from_secs(4);
const RA_AFTER_SOLICIT: Duration = Duration::from_millis(200);
/// Most clients probed per access interface (clients found here and
/// clients the other access points advertise in its subnets).
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
    /// Its link address, once heard (probes go there; broadcast, or the
    /// solicited-node multicast address, before).
    mac: Option<[u8; 6]>,
    /// One bit per probe interval, newest lowest: whether it answered.
    history: u64,
    /// Answered since the last probe.
    answered: bool,
    /// Probe rounds since it was found (up to the window): one found
    /// without being heard is forgotten only after a whole window of
    /// unanswered probes.
    rounds: u32,
}

/// What an access interface counted (`braid ctl clients` shows them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AccessPortCounters {
    pub probes_sent: u64,
    pub replies: u64,
    /// DHCP requests and acknowledgements that named a client here.
    pub dhcp: u64,
    /// Neighbor solicitations and advertisements that named a client here.
    pub neighbor_discovery: u64,
    pub router_advertisements: u64,
    /// ARP, DHCP or neighbor discovery frames that did not parse (ARP not
    /// Ethernet/IPv4, a truncated DHCP message or one without the magic
    /// cookie, neighbor discovery with a bad checksum or not from the
    /// link).
    pub malformed: u64,
    /// Clients not probed because the table was full.
    pub refused: u64,
}

/// An access interface: its raw sockets (ARP, DHCP and neighbor
/// discovery, as the stack receives them) and the clients probed on it.
pub struct AccessPort {
    pub config: AccessInterface,
    ifindex: i32,
    /// One socket per protocol read (ARP, IPv4, and IPv6 when it serves
    /// IPv6): bound to a protocol, a packet socket sees what the stack
    /// receives, after the interface's ingress filters; the first also
    /// sends.
    fds: Vec<OwnedFd>,
    probed: BTreeMap<IpAddr, Probed>,
    next_probe: Instant,
    next_neighbor_read: Instant,
    /// When the next router advertisement is due (IPv6 only).
    next_advert: Instant,
    pub counters: AccessPortCounters,
}

/// How often the kernel's neighbor table is read for clients.
const NEIGHBOR_READ: Duration = Duration::from_secs(1);

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

/// The IPv6 address `a` as the node's client address.
fn client_addr(a: IpAddr) -> ClientAddr {
    match a {
        IpAddr::V4(v) => {
            let mut addr = [0u8; 16];
            addr[..4].copy_from_slice(&v.octets());
            ClientAddr { addr, v4: true }
        }
        IpAddr::V6(v) => ClientAddr {
            addr: v.octets(),
            v4: false,
        },
    }
}

impl AccessPort {
    /// Sets the interface up as an access point's: the gateway's link
    /// address, this access point's own address and the gateway address
    /// (and for IPv6 the gateway's link-local address, without duplicate
    /// address detection: every access point holds it), then opens its
    /// socket.
    pub fn open(config: &AccessInterface, now: Instant) -> Result<AccessPort, AccessError> {
        let name = config.name.as_str();
        let ifindex = nix::net::if_::if_nametoindex(name)
            .map_err(|e| setup_err(name, format!("no such interface ({e})")))?
            as i32;
        let mac = mac_text(&config.mac);
        if config.address6.is_some() {
            // Every access point of the segment holds the gateway's
            // link-local address: detecting it as a duplicate would
            // disable it.
            let knob = format!("/proc/sys/net/ipv6/conf/{name}/accept_dad");
            std::fs::write(&knob, "0")
                .map_err(|e| setup_err(name, format!("{knob}: {e} (IPv6 off?)")))?;
        }
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
        if let Some(own6) = config.address6 {
            for a in [format!("{}/64", config.gateway6()), format!("{own6}/64")] {
                ip(&["-6", "addr", "replace", &a, "dev", name, "nodad"])
                    .map_err(|m| setup_err(name, m))?;
            }
        }
        let mut protocols = vec![ETH_P_ARP, ETH_P_IP];
        if config.address6.is_some() {
            protocols.push(ETH_P_IPV6);
        }
        let fds = protocols
            .into_iter()
            .map(|p| access_socket(ifindex, p))
            .collect::<io::Result<Vec<_>>>()
            .map_err(|source| AccessError::Socket {
                name: name.into(),
                source,
            })?;
        info!(interface = name, gateway = %config.gateway, mac, ipv6 = ?config.address6, "access interface ready");
        Ok(AccessPort {
            config: config.clone(),
            ifindex,
            fds,
            probed: BTreeMap::new(),
            next_probe: now,
            next_neighbor_read: now,
            next_advert: now,
            counters: AccessPortCounters::default(),
        })
    }

    /// The sockets, for the poll loop.
    pub fn raw_fds(&self) -> Vec<RawFd> {
        self.fds.iter().map(|f| f.as_raw_fd()).collect()
    }

    /// When [`Self::probe`] is next due.
    pub fn next_probe(&self) -> Instant {
        match self.config.address6 {
            Some(_) => self.next_probe.min(self.next_advert),
            None => self.next_probe,
        }
    }

    /// How many clients are probed.
    pub fn probed(&self) -> usize {
        self.probed.len()
    }

    /// Removes the gateway addresses (a stopped access point must not
    /// attract its clients' traffic); its own addresses stay. No router
    /// advertisement with a zero lifetime: the other access points
    /// advertise the same router, which stays the clients' default.
    pub fn shutdown(&self) {
        let name = &self.config.name;
        let gw = format!("{}/32", self.config.gateway);
        if let Err(m) = ip(&["addr", "del", &gw, "dev", name]) {
            warn!(interface = %name, error = m, "gateway address not removed");
        }
        if self.config.address6.is_some() {
            let gw6 = format!("{}/64", self.config.gateway6());
            if let Err(m) = ip(&["-6", "addr", "del", &gw6, "dev", name]) {
                warn!(interface = %name, error = m, "IPv6 gateway address not removed");
            }
        }
    }

    /// Reads every frame waiting: replies to our probes count, and any
    /// client heard (ARP, neighbor discovery) or given or asking for an
    /// address (DHCP) is probed from now on.
    pub fn read(&mut self, now: Instant) {
        let mut frame = [0u8; 1600];
        for k in 0..self.fds.len() {
            loop {
                // SAFETY: the buffer is valid for its length; the socket
                // is non-blocking.
                let n = unsafe {
                    libc::recv(
                        self.fds[k].as_raw_fd(),
                        frame.as_mut_ptr().cast(),
                        frame.len(),
                        0,
                    )
                };
                if n <= 0 {
                    break;
                }
                self.on_frame(now, &frame[..n as usize]);
            }
        }
    }

    fn on_frame(&mut self, now: Instant, frame: &[u8]) {
        match frames::ethertype(frame) {
            Some(ETH_P_IP) => self.on_dhcp(frame),
            Some(ETH_P_IPV6) => self.on_nd(now, frame),
            _ => self.on_arp(frame),
        }
    }

    fn on_arp(&mut self, frame: &[u8]) {
        let Some(arp) = Arp::parse(frame) else {
            self.counters.malformed += 1;
            return;
        };
        let c = &self.config;
        // Other access points (they speak with the gateway's link
        // address) and addresses that are not a client's.
        if arp.sha == c.mac || !self.is_client(IpAddr::V4(arp.spa)) {
            return;
        }
        let probe_reply = arp.op == ARP_REPLY && arp.tpa == c.address;
        if probe_reply {
            self.counters.replies += 1;
        }
        self.note(IpAddr::V4(arp.spa), arp.sha, true, probe_reply, "ARP");
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
        let (client, heard) = match d.kind {
            DHCP_REQUEST => (d.requested.or(d.ciaddr), true),
            DHCP_ACK => (d.yiaddr, false),
            _ => return,
        };
        let Some(client) = client else { return };
        if d.chaddr == self.config.mac || !self.is_client(IpAddr::V4(client)) {
            return;
        }
        self.counters.dhcp += 1;
        self.note(IpAddr::V4(client), d.chaddr, heard, false, "DHCP");
    }

    /// Neighbor discovery: a client's duplicate address detection (a
    /// solicitation from the unspecified address names the address it
    /// takes), its solicitations from its address, and its advertisements
    /// (one to this access point's own address answers a probe) make it a
    /// client here; a router solicitation brings a router advertisement
    /// forward. Frames with the gateway's link address are other access
    /// points' (or ours).
    fn on_nd(&mut self, now: Instant, frame: &[u8]) {
        let Some(nd) = Nd::parse(frame) else {
            self.counters.malformed += 1;
            return;
        };
        let Some(own6) = self.config.address6 else {
            return;
        };
        if nd.src_mac == self.config.mac {
            return;
        }
        let client = match nd.kind {
            ND_ROUTER_SOLICIT => {
                self.next_advert = self.next_advert.min(now + RA_AFTER_SOLICIT);
                return;
            }
            ND_NEIGHBOR_SOLICIT if nd.src.is_unspecified() => nd.target,
            ND_NEIGHBOR_SOLICIT => Some(nd.src),
            ND_NEIGHBOR_ADVERT => nd.target,
            _ => None,
        };
        let Some(client) = client else { return };
        if !self.is_client(IpAddr::V6(client)) {
            return;
        }
        let probe_reply = nd.kind == ND_NEIGHBOR_ADVERT && nd.dst == own6;
        if probe_reply {
            self.counters.replies += 1;
        }
        self.counters.neighbor_discovery += 1;
        let mac = nd.lladdr.unwrap_or(nd.src_mac);
        self.note(
            IpAddr::V6(client),
            mac,
            true,
            probe_reply,
            "neighbor discovery",
        );
    }

    /// Whether `a` can be a client's address here: in a client subnet, not
    /// the gateway's, not this access point's.
    fn is_client(&self, a: IpAddr) -> bool {
        let c = &self.config;
        match a {
            IpAddr::V4(v) => c.covers(v) && v != c.gateway && v != c.address && !v.is_unspecified(),
            IpAddr::V6(v) => c.covers6(v),
        }
    }

    /// A client seen at `mac`: probed from now on (`heard`: in range just
    /// now, counted as answering the probes before); `answered` counts
    /// for the current probe.
    fn note(&mut self, client: IpAddr, mac: [u8; 6], heard: bool, answered: bool, how: &str) {
        if !self.probed.contains_key(&client) {
            debug!(interface = %self.config.name, %client, heard, "client found in {how}");
        }
        if let Some(p) = self.track(client, if heard { u64::MAX } else { 0 }) {
            p.mac = Some(mac);
            p.answered |= answered;
        }
    }

    /// Client `client`'s entry, made (with `history`) if it is new and the
    /// table has room; `None` (counted) when it is full.
    fn track(&mut self, client: IpAddr, history: u64) -> Option<&mut Probed> {
        if !self.probed.contains_key(&client) && self.probed.len() >= MAX_PROBED {
            self.counters.refused += 1;
            return None;
        }
        Some(self.probed.entry(client).or_insert(Probed {
            mac: None,
            history,
            answered: false,
            rounds: 0,
        }))
    }

    /// The clients probed here, with their link address once known.
    pub fn clients(&self) -> impl Iterator<Item = (IpAddr, Option<[u8; 6]>)> + '_ {
        self.probed.iter().map(|(&a, p)| (a, p.mac))
    }

    /// Every `probe_interval`: counts who answered the last probe, tells
    /// the node each client's quality, and probes again. Clients the other
    /// access points advertise in this subnet are probed too (a client
    /// coming into range is found within one probe); one that answers
    /// none of the window and nobody else advertises is forgotten. With
    /// IPv6, a router advertisement every few seconds (sooner when a
    /// client asked for one).
    pub fn probe(&mut self, now: Instant, node: &mut Node) {
        if now >= self.next_advert {
            self.next_advert = now + RA_INTERVAL;
            self.advertise_router();
        }
        if now < self.next_probe {
            return;
        }
        self.next_probe = now + self.config.probe_interval;
        let advertised = advertised_elsewhere(node, &self.config);
        self.learn_advertised(&advertised);
        if now >= self.next_neighbor_read {
            self.next_neighbor_read = now + NEIGHBOR_READ;
            match table::dump(self.ifindex as u32) {
                Ok(table) => self.learn_neighbors(&table),
                Err(e) => {
                    debug!(interface = %self.config.name, error = %e, "neighbor table not read")
                }
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
            p.rounds = (p.rounds + 1).min(window);
            p.answered = false;
            let answered = (p.history & mask).count_ones();
            let quality = (answered * 255 / window) as u8;
            debug!(interface = %self.config.name, %client, quality, "probe");
            measured.push((client_addr(client), quality));
            if quality == 0 && p.rounds >= window && advertised.binary_search(&client).is_err() {
                gone.push(client);
                continue;
            }
            frames.push((client, p.mac));
        }
        node.clients_heard(now, measured);
        for client in gone {
            self.probed.remove(&client);
        }
        let (ours, own, own6) = (self.config.mac, self.config.address, self.config.address6);
        for (client, mac) in frames {
            let f = match (client, own6) {
                (IpAddr::V4(v), _) => Arp::request(mac.unwrap_or([0xff; 6]), ours, own, v),
                (IpAddr::V6(v), Some(own6)) => neighbor_solicitation(mac, ours, own6, v),
                (IpAddr::V6(_), None) => continue,
            };
            if self.send(&f) {
                self.counters.probes_sent += 1;
            }
        }
    }

    /// Sends a router advertisement (IPv6 only): the gateway's link-local
    /// address as the default router, the clients' /64 for SLAAC.
    pub fn advertise_router(&mut self) {
        if let Some(own6) = self.config.address6 {
            let ra = frames::router_advertisement(self.config.mac, self.config.gateway6(), own6);
            if self.send(&ra) {
                self.counters.router_advertisements += 1;
            }
        }
    }

    /// Starts probing the clients the kernel's neighbor table holds on
    /// this interface (resolved entries, IPv4 and IPv6, of a client
    /// subnet, not another access point's).
    fn learn_neighbors(&mut self, table: &[(IpAddr, [u8; 6])]) {
        for &(addr, mac) in table {
            if mac == self.config.mac || !self.is_client(addr) || self.probed.contains_key(&addr) {
                continue;
            }
            debug!(interface = %self.config.name, client = %addr, "client in the neighbor table");
            match self.track(addr, 0) {
                Some(p) => p.mac = Some(mac),
                None => return,
            }
        }
    }

    /// Starts probing the clients other access points advertise in this
    /// subnet.
    fn learn_advertised(&mut self, advertised: &[IpAddr]) {
        for &client in advertised {
            if self.track(client, 0).is_none() {
                return;
            }
        }
    }

    /// Sends `frame` (its ethertype in bytes 12-13) out of the interface;
    /// whether it went.
    fn send(&mut self, frame: &[u8]) -> bool {
        let ethertype = frames::ethertype(frame).unwrap_or(ETH_P_ARP);
        // SAFETY: a zero-initialised sockaddr_ll filled below; the frame
        // is valid for its length.
        let sent = unsafe {
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = ethertype.to_be();
            sll.sll_ifindex = self.ifindex;
            sll.sll_halen = 6;
            sll.sll_addr[..6].copy_from_slice(&frame[0..6]);
            libc::sendto(
                self.fds[0].as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        sent > 0
    }
}

/// The clients other access points advertise in `config`'s subnets,
/// sorted.
fn advertised_elsewhere(node: &Node, config: &AccessInterface) -> Vec<IpAddr> {
    let me = node.id();
    let mut out = Vec::new();
    for r in node.control().lsdb().records() {
        if r.origin == me {
            continue;
        }
        for p in r.prefixes.iter() {
            match p {
                braid_wire::Prefix::Client4 { addr, .. } => {
                    let a = Ipv4Addr::from(*addr);
                    if config.covers(a) && a != config.address && a != config.gateway {
                        out.push(IpAddr::V4(a));
                    }
                }
                braid_wire::Prefix::Client6 { addr, .. } => {
                    let a = Ipv6Addr::from(*addr);
                    if config.covers6(a) {
                        out.push(IpAddr::V6(a));
                    }
                }
                _ => {}
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// A raw socket bound to protocol `protocol` of interface `ifindex`,
/// behind [`ACCESS_FILTER`] (ARP, DHCP, neighbor discovery). It is opened
/// for no protocol and bound once filtered: no other interface's frames
/// and no unfiltered ones ever reach it. Bound to one protocol (not all),
/// it sees incoming frames after the interface's ingress filters, as the
/// stack does (a frame a filter drops was not heard), and no outgoing
/// ones.
fn access_socket(ifindex: i32, protocol: u16) -> io::Result<OwnedFd> {
    let proto = (protocol.to_be()) as i32;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn port() -> AccessPort {
        AccessPort {
            config: acc0(),
            ifindex: 0,
            // Never read or written here: any descriptor will do.
            fds: vec![std::fs::File::open("/dev/null").unwrap().into()],
            probed: BTreeMap::new(),
            next_probe: Instant::ZERO,
            next_neighbor_read: Instant::ZERO,
            next_advert: Instant::ZERO,
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
        p.on_frame(Instant::ZERO, &req);
        assert_eq!(
            p.clients().collect::<Vec<_>>(),
            [(IpAddr::V4(client), Some(CLIENT_MAC))]
        );
        assert_eq!(
            p.probed[&IpAddr::V4(client)].history,
            u64::MAX,
            "heard: in range"
        );
        assert_eq!(p.counters.dhcp, 1);
        // A server's acknowledgement: known, not yet heard.
        let other = Ipv4Addr::new(198, 18, 9, 78);
        let ack = dhcp_frame(DHCP_ACK, [2, 0, 0, 0, 0, 0x78], any, other, None);
        p.on_frame(Instant::ZERO, &ack);
        assert_eq!(
            p.probed[&IpAddr::V4(other)].history,
            0,
            "given an address: probed"
        );
        // Renewing (ciaddr) names the client too; out of the subnet, the
        // gateway's or another access point's link address: not a client.
        let renew = dhcp_frame(
            DHCP_REQUEST,
            [2, 0, 0, 0, 0, 0x79],
            Ipv4Addr::new(198, 18, 9, 79),
            any,
            None,
        );
        p.on_frame(Instant::ZERO, &renew);
        let outside = dhcp_frame(
            DHCP_ACK,
            [2, 0, 0, 0, 0, 0x7a],
            any,
            Ipv4Addr::new(198, 18, 10, 5),
            None,
        );
        p.on_frame(Instant::ZERO, &outside);
        let gw = dhcp_frame(DHCP_REQUEST, CLIENT_MAC, any, any, Some(acc0().gateway));
        p.on_frame(Instant::ZERO, &gw);
        let ours = dhcp_frame(
            DHCP_REQUEST,
            acc0().mac,
            any,
            any,
            Some(Ipv4Addr::new(198, 18, 9, 80)),
        );
        p.on_frame(Instant::ZERO, &ours);
        assert_eq!(p.probed.len(), 3);
        assert_eq!(p.counters.dhcp, 3);
        assert_eq!(p.counters.malformed, 0);
        // Truncated, no cookie, no message type, a bad option length.
        for bad in [
            req[..req.len() - 20].to_vec(),
            {
                let mut f = req.clone();
                f[14 + 28 + 236] = 0;
                f
            },
            {
                let mut f = req.clone();
                let at = 14 + 28 + 236 + 4;
                f[at] = 12; // hostname, not the message type
                f
            },
            {
                let mut f = req.clone();
                f[14 + 28 + 236 + 5] = 200;
                f
            },
        ] {
            assert_eq!(Dhcp::parse(&bad), None);
            p.on_frame(Instant::ZERO, &bad);
        }
        assert_eq!(p.counters.malformed, 4);
        assert_eq!(p.probed.len(), 3);
    }

    proptest::proptest! {
        #[test]
        fn any_frame_is_parsed_or_counted_never_a_panic(
            frame in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..700),
            kind in proptest::prelude::any::<u8>(),
        ) {
            let mut frame = frame;
            if frame.len() >= 14 {
                let t = [ETH_P_ARP, ETH_P_IP, ETH_P_IPV6][kind as usize % 3];
                frame[12..14].copy_from_slice(&t.to_be_bytes());
            }
            let mut p = port();
            p.on_frame(Instant::ZERO, &frame);
            proptest::prop_assert!(p.probed.len() <= 1);
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
            address6: Some("2001:2:0:9::2".parse().unwrap()),
            probe_interval: std::time::Duration::from_millis(100),
            probe_window: 10,
        }
    }

    #[test]
    fn arp_frames_parse_and_garbage_does_not() {
        let cfg = acc0();
        // A client's reply to our probe parses back.
        let mut f = Arp::request(
            cfg.mac,
            [2, 0, 0, 0, 0, 9],
            Ipv4Addr::new(198, 18, 9, 9),
            cfg.address,
        );
        f[14 + 7] = ARP_REPLY as u8;
        let arp = Arp::parse(&f).unwrap();
        assert_eq!(arp.op, ARP_REPLY);
        assert_eq!(arp.spa, Ipv4Addr::new(198, 18, 9, 9));
        assert_eq!(arp.tpa, cfg.address);
        let mut p = port();
        p.on_frame(Instant::ZERO, &f);
        assert!(p.probed[&IpAddr::V4(arp.spa)].answered, "a probe's answer");
        assert!(Arp::parse(&f[..20]).is_none(), "truncated");
        f[14 + 4] = 8;
        assert!(Arp::parse(&f).is_none(), "not Ethernet/IPv4");
        p.on_frame(Instant::ZERO, &f);
        assert_eq!(p.counters.malformed, 1);
        assert!(cfg.covers(Ipv4Addr::new(198, 18, 9, 200)));
        assert!(!cfg.covers(Ipv4Addr::new(198, 18, 10, 1)));
    }

    #[test]
    fn ipv6_clients_are_found_by_neighbor_discovery_and_answer_probes() {
        let cfg = acc0();
        let own6 = cfg.address6.unwrap();
        let client: Ipv6Addr = "2001:2:0:9:0:ff:fe00:77".parse().unwrap();
        let mut p = port();
        // Duplicate address detection: from ::, for the address it takes.
        let dad = neighbor_solicitation(None, CLIENT_MAC, Ipv6Addr::UNSPECIFIED, client);
        p.on_frame(Instant::ZERO, &dad);
        assert_eq!(
            p.clients().collect::<Vec<_>>(),
            [(IpAddr::V6(client), Some(CLIENT_MAC))]
        );
        assert!(!p.probed[&IpAddr::V6(client)].answered);
        // Its answer to our probe (to our own address) counts; one to
        // another access point's address, or another access point's own
        // solicitation (the gateway's link address), does not.
        let other_ap: Ipv6Addr = "2001:2:0:9::3".parse().unwrap();
        p.on_frame(
            Instant::ZERO,
            &neighbor_advertisement(cfg.mac, CLIENT_MAC, client, other_ap),
        );
        assert!(!p.probed[&IpAddr::V6(client)].answered);
        let theirs = neighbor_solicitation(Some(CLIENT_MAC), cfg.mac, other_ap, client);
        p.on_frame(Instant::ZERO, &theirs);
        p.on_frame(
            Instant::ZERO,
            &neighbor_advertisement(cfg.mac, CLIENT_MAC, client, own6),
        );
        assert!(p.probed[&IpAddr::V6(client)].answered);
        assert_eq!((p.counters.replies, p.counters.neighbor_discovery), (1, 3));
        // Link-local, another /64, our own address: not clients.
        for a in ["fe80::77", "2001:2:0:10::77", "2001:2:0:9::2"] {
            let a: Ipv6Addr = a.parse().unwrap();
            p.on_frame(
                Instant::ZERO,
                &neighbor_solicitation(None, CLIENT_MAC, Ipv6Addr::UNSPECIFIED, a),
            );
        }
        assert_eq!(p.probed.len(), 1);
        // A router solicitation brings the next advertisement forward.
        p.next_advert = Instant::from_millis(4000);
        let mut rs = neighbor_solicitation(None, CLIENT_MAC, Ipv6Addr::UNSPECIFIED, client);
        rs[14 + 40] = 133;
        // (its checksum now wrong: counted, nothing else)
        p.on_frame(Instant::from_millis(1000), &rs);
        assert_eq!(p.counters.malformed, 1);
        assert_eq!(p.next_advert, Instant::from_millis(4000));
        let rs = frames::router_solicitation_for_tests(CLIENT_MAC);
        p.on_frame(Instant::from_millis(1000), &rs);
        assert_eq!(p.next_advert, Instant::from_millis(1200));
        // An access point without IPv6 ignores all of it.
        let mut v4only = port();
        v4only.config.address6 = None;
        v4only.on_frame(Instant::ZERO, &dad);
        assert!(!v4only.is_client(IpAddr::V6(client)));
        assert_eq!(v4only.probed.len(), 0);
    }

    #[test]
    fn clients_are_found_in_the_kernels_neighbor_table() {
        let mut port = port();
        let entry = |a: &str, last: u8| (a.parse::<IpAddr>().unwrap(), [2, 0, 0, 0, 0, last]);
        let table = [
            entry("198.18.9.100", 0x64),
            entry("2001:2:0:9::64", 0x64),
            (IpAddr::V4(Ipv4Addr::new(198, 18, 9, 3)), acc0().mac), // another AP
            entry("198.18.7.100", 0x65),                            // another subnet
            entry("198.18.9.1", 0x66),                              // the gateway
            entry("fe80::64", 0x64),                                // link-local
            entry("2001:2:0:9::2", 0x67),                           // this AP's own
        ];
        port.learn_neighbors(&table);
        let found: Vec<IpAddr> = port.probed.keys().copied().collect();
        assert_eq!(found, vec![table[0].0, table[1].0]);
        assert_eq!(port.probed[&found[0]].mac, Some([2, 0, 0, 0, 0, 0x64]));
        assert_eq!(port.probed[&found[1]].history, 0, "probed, not yet heard");
        // Probed for a whole window before it is forgotten unanswered.
        let mut rng = <rand_chacha::ChaCha8Rng as rand_core::SeedableRng>::seed_from_u64(1);
        let mut node = Node::new(
            braid_wire::NodeId(1),
            braid_proto::node::NodeConfig::default(),
            Instant::ZERO,
            &mut rng,
        )
        .unwrap();
        for round in 1..=10u64 {
            port.probe(Instant::from_millis(100 * round), &mut node);
            assert_eq!(
                port.probed.len(),
                if round < 10 { 2 } else { 0 },
                "round {round}"
            );
        }
    }
}
