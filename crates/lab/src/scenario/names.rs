//! The names and addresses a checked lab derives: namespaces, interfaces,
//! IPv4 and IPv6 addresses and subnets, the lab's directory and its
//! daemons' control sockets; and which flow end is a client, which
//! segments a router serves, a client's home. Addresses (all from the benchmarking range
//! 198.18.0.0/15): router i (from 1) serves 198.18.i.0/24, its host is
//! 198.18.i.2 behind 198.18.i.1; link j (from 0) is 198.19.j.1/24 -
//! 198.19.j.2/24; segment s is 198.18.(200+s).0/24. IPv6 (RFC 5180's
//! 2001:2::/48) mirrors them.
//!
//! The internet: each gateway with an uplink (the k-th) reaches an ISP of
//! its own on 198.19.(250+k).0/24 (the gateway .2, the ISP .1), and the
//! ISP the internet on 198.19.254.(4k).0/30 (the ISP .1, the internet
//! .2); the internet's one host is 198.19.255.1, outside the mesh's
//! 198.18.0.0/16. A flow names it `internet` as its `to` end (numbered
//! after the routers and clients).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

use super::model::{Lab, LabFlow};

impl Lab {
    /// Router `router`'s network namespace.
    pub fn ns(&self, router: usize) -> String {
        format!("braid-{}-{}", self.name, self.routers[router].name)
    }

    /// The namespace of the end host behind router `router`.
    pub fn host_ns(&self, router: usize) -> String {
        format!("braid-{}-{}h", self.name, self.routers[router].name)
    }

    /// Whether flow end `end` is a client (its index among the clients).
    pub fn client_of(&self, end: usize) -> Option<usize> {
        end.checked_sub(self.routers.len())
            .filter(|&c| c < self.clients.len())
    }

    /// The flow end that is the internet (after the routers and the
    /// clients), whether or not the lab has one.
    pub fn internet_end(&self) -> usize {
        self.routers.len() + self.clients.len()
    }

    /// Whether the lab has an internet: a router with an uplink.
    pub fn has_internet(&self) -> bool {
        self.routers.iter().any(|r| r.uplink)
    }

    /// The gateways with an uplink, in the file's order (the k-th has
    /// the k-th ISP).
    pub fn uplinks(&self) -> Vec<usize> {
        (0..self.routers.len())
            .filter(|&i| self.routers[i].uplink)
            .collect()
    }

    /// The namespace a flow end's sockets live in: a router's host, a
    /// client, or the internet.
    pub fn end_ns(&self, end: usize) -> String {
        match self.client_of(end) {
            Some(c) => self.client_ns(c),
            None if end == self.internet_end() => self.internet_ns(),
            None => self.host_ns(end),
        }
    }

    /// A flow end's address.
    pub fn end_addr(&self, end: usize) -> Ipv4Addr {
        match self.client_of(end) {
            Some(c) => self.client_addr(c),
            None if end == self.internet_end() => Self::INTERNET_HOST,
            None => Self::host_addr(end),
        }
    }

    /// The internet's one host.
    pub const INTERNET_HOST: Ipv4Addr = Ipv4Addr::new(198, 19, 255, 1);

    /// The internet's namespace.
    pub fn internet_ns(&self) -> String {
        format!("braid-{}-inet", self.name)
    }

    /// The ISP namespace beyond the `k`-th gateway with an uplink.
    pub fn isp_ns(&self, k: usize) -> String {
        format!("braid-{}-isp{k}", self.name)
    }

    /// The `k`-th uplink's subnet between the gateway (.2) and its ISP
    /// (.1).
    pub fn uplink_addr(k: usize, gateway: bool) -> Ipv4Addr {
        Ipv4Addr::new(198, 19, 250 + k as u8, if gateway { 2 } else { 1 })
    }

    /// The `k`-th uplink's subnet (a /24).
    pub fn uplink_net(k: usize) -> Ipv4Addr {
        Ipv4Addr::new(198, 19, 250 + k as u8, 0)
    }

    /// The `k`-th ISP's address (`isp`) or the internet's on their /30.
    pub fn transit_addr(k: usize, isp: bool) -> Ipv4Addr {
        Ipv4Addr::new(198, 19, 254, 4 * k as u8 + if isp { 1 } else { 2 })
    }

    /// A gateway's interface toward its ISP.
    pub const UPLINK_DEV: &'static str = "up0";

    /// A flow end's address for flow `f` (IPv6 when it says so).
    pub fn flow_addr(&self, f: &LabFlow, end: usize) -> IpAddr {
        match (f.ipv6, self.client_of(end)) {
            (false, _) => IpAddr::V4(self.end_addr(end)),
            (true, Some(c)) => IpAddr::V6(self.client_addr6(c)),
            (true, None) => IpAddr::V6(Self::host_addr6(end)),
        }
    }

    /// Whether any flow runs over IPv6: then every end and router gets
    /// IPv6 addresses in 2001:2::/48 (RFC 5180's benchmarking range), the
    /// access points advertise their segment's /64 and clients take an
    /// address in it by SLAAC.
    pub fn ipv6(&self) -> bool {
        self.flows.iter().any(|f| f.ipv6)
    }

    /// The lab's IPv6 range, routed into the mesh at every router.
    pub const IPV6_RANGE: &'static str = "2001:2::/48";

    /// The address of the host behind router `router`: 2001:2:0:(router+1)::2.
    pub fn host_addr6(router: usize) -> Ipv6Addr {
        Ipv6Addr::new(0x2001, 2, 0, router as u16 + 1, 0, 0, 0, 2)
    }

    /// Router `router`'s address on its host's /64 (the host's gateway).
    pub fn gateway_addr6(router: usize) -> Ipv6Addr {
        Ipv6Addr::new(0x2001, 2, 0, router as u16 + 1, 0, 0, 0, 1)
    }

    /// Segment `s`'s /64: 2001:2:0:(200+s)::/64.
    pub fn segment_net6(s: usize) -> Ipv6Addr {
        Ipv6Addr::new(0x2001, 2, 0, 200 + s as u16, 0, 0, 0, 0)
    }

    /// Access point `ap`'s own IPv6 address on segment `s`.
    pub fn access_addr6(&self, s: usize, ap: usize) -> Ipv6Addr {
        let v4 = self.access_addr(s, ap).octets();
        Ipv6Addr::new(0x2001, 2, 0, 200 + s as u16, 0, 0, 0, v4[3] as u16)
    }

    /// Client `c`'s link address: 02:00:00:00:(s):(k), k-th client of
    /// segment s (set by the lab, so that its SLAAC address is known).
    pub fn client_mac(&self, c: usize) -> [u8; 6] {
        let s = self.clients[c].segment;
        let k = self.clients[..c].iter().filter(|x| x.segment == s).count();
        [2, 0, 0, 0, s as u8, k as u8]
    }

    /// Client `c`'s IPv6 address: the one it takes by SLAAC (modified
    /// EUI-64 of its link address) in its segment's /64.
    pub fn client_addr6(&self, c: usize) -> Ipv6Addr {
        let m = self.client_mac(c);
        let mut o = Self::segment_net6(self.clients[c].segment).octets();
        o[8..].copy_from_slice(&[m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]]);
        Ipv6Addr::from(o)
    }

    /// A flow end's name (a router's, a client's, or "internet").
    pub fn end_name(&self, end: usize) -> &str {
        match self.client_of(end) {
            Some(c) => &self.clients[c].name,
            None if end == self.internet_end() => "internet",
            None => &self.routers[end].name,
        }
    }

    /// Client `c`'s namespace.
    pub fn client_ns(&self, c: usize) -> String {
        format!("braid-{}-{}", self.name, self.clients[c].name)
    }

    /// Client `c`'s address: 198.18.(200+s).(100+k) for the k-th client
    /// of segment s.
    pub fn client_addr(&self, c: usize) -> Ipv4Addr {
        let s = self.clients[c].segment;
        let k = self.clients[..c].iter().filter(|x| x.segment == s).count();
        Ipv4Addr::new(198, 18, 200 + s as u8, 100 + k as u8)
    }

    /// Segment `s`'s subnet: 198.18.(200+s).0/24.
    pub fn segment_net(s: usize) -> (Ipv4Addr, u8) {
        (Ipv4Addr::new(198, 18, 200 + s as u8, 0), 24)
    }

    /// The clients' gateway on segment `s` (every access point's).
    pub fn segment_gateway(s: usize) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, 200 + s as u8, 1)
    }

    /// Access point `ap`'s own address on segment `s`.
    pub fn access_addr(&self, s: usize, ap: usize) -> Ipv4Addr {
        let k = self.segments[s]
            .access_points
            .iter()
            .position(|&a| a == ap)
            .unwrap_or(0);
        Ipv4Addr::new(198, 18, 200 + s as u8, 2 + k as u8)
    }

    /// Segment `s`'s namespace (its bridge).
    pub fn segment_ns(&self, s: usize) -> String {
        format!("braid-{}-seg-{}", self.name, self.segments[s].name)
    }

    /// A router's access interface on segment `s`.
    pub fn access_dev(s: usize) -> String {
        format!("acc{s}")
    }

    /// Access point `ap`'s port on segment `s`'s bridge.
    pub fn port_dev(ap: usize) -> String {
        format!("p{ap}")
    }

    /// Client `c`'s port on its segment's bridge.
    pub fn client_port_dev(c: usize) -> String {
        format!("c{c}")
    }

    /// The segments router `i` is an access point of, with their index.
    pub fn access_segments(&self, i: usize) -> Vec<usize> {
        (0..self.segments.len())
            .filter(|&s| self.segments[s].access_points.contains(&i))
            .collect()
    }

    /// The access point a plain network routes client `c` to at start:
    /// the first roam's `from`, else its segment's first access point.
    pub fn home_of(&self, c: usize) -> usize {
        self.roams.iter().find(|r| r.client == c).map_or(
            self.segments[self.clients[c].segment].access_points[0],
            |r| r.from,
        )
    }

    /// The namespace of link `j`'s delay emulator.
    pub fn emulator_ns(&self, j: usize) -> String {
        format!("braid-{}-d{j}", self.name)
    }

    /// The interface of link `j` (the same name at both ends).
    pub fn link_dev(j: usize) -> String {
        format!("bl{j}")
    }

    /// The interfaces of router `i`, one per link, in link order.
    pub fn interfaces_of(&self, i: usize) -> Vec<String> {
        self.links
            .iter()
            .enumerate()
            .filter(|(_, l)| l.a == i || l.b == i)
            .map(|(j, _)| Self::link_dev(j))
            .collect()
    }

    /// The control socket of router `i`'s braid daemon.
    pub fn socket(&self, i: usize) -> PathBuf {
        self.dir().join(format!("{}.sock", self.routers[i].name))
    }

    /// Where the lab keeps its files: configs, logs, pid files, control
    /// sockets. Removed when the lab is torn down (kept after a failure
    /// or with `--keep`).
    pub fn dir(&self) -> PathBuf {
        std::env::temp_dir().join(format!("braid-lab-{}", self.name))
    }

    /// The address of the host behind router `router`.
    pub fn host_addr(router: usize) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, router as u8 + 1, 2)
    }

    /// Router `router`'s address on its host's subnet (the host's
    /// gateway).
    pub fn gateway_addr(router: usize) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, router as u8 + 1, 1)
    }

    /// The IPv6 /64 router `router` serves.
    pub fn host_net6(router: usize) -> Ipv6Addr {
        Ipv6Addr::new(0x2001, 2, 0, router as u16 + 1, 0, 0, 0, 0)
    }

    /// The subnet router `router` serves.
    pub fn host_net(router: usize) -> (Ipv4Addr, u8) {
        (Ipv4Addr::new(198, 18, router as u8 + 1, 0), 24)
    }

    /// The sending host's address for its MPTCP subflow over path `k`.
    pub fn subflow_addr(router: usize, k: usize) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, router as u8 + 1, 10 + k as u8)
    }

    /// Router `router`'s address on link `j`.
    pub fn link_addr(&self, j: usize, router: usize) -> Ipv4Addr {
        let side = if self.links[j].a == router { 1 } else { 2 };
        Ipv4Addr::new(198, 19, j as u8, side)
    }
}
