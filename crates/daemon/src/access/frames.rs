//! The frames an access interface reads and writes, over Ethernet: ARP
//! (RFC 826), DHCP (RFC 2131: what it says of a client), IPv6 neighbor
//! discovery (RFC 4861: router and neighbor solicitations and
//! advertisements), and the classic BPF filter that lets only these reach
//! the access socket. Parsing never panics: anything short, malformed or
//! with a wrong checksum is `None`.

use smoltcp::wire::checksum;
use std::net::{Ipv4Addr, Ipv6Addr};

pub const ETH_P_ARP: u16 = 0x0806;
pub const ETH_P_IP: u16 = 0x0800;
pub const ETH_P_IPV6: u16 = 0x86dd;
pub const ETH_HLEN: usize = 14;
const ARP_LEN: usize = 28;
pub const ARP_REQUEST: u16 = 1;
pub const ARP_REPLY: u16 = 2;

pub const DHCP_REQUEST: u8 = 3;
pub const DHCP_ACK: u8 = 5;
/// The fixed part of a BOOTP message, before the magic cookie.
const BOOTP_LEN: usize = 236;
const DHCP_COOKIE: [u8; 4] = [99, 130, 83, 99];

pub const ND_ROUTER_SOLICIT: u8 = 133;
pub const ND_ROUTER_ADVERT: u8 = 134;
pub const ND_NEIGHBOR_SOLICIT: u8 = 135;
pub const ND_NEIGHBOR_ADVERT: u8 = 136;
const IPV6_HLEN: usize = 40;
const ICMPV6: u8 = 58;

/// The ethertype of a frame, if it has one.
pub fn ethertype(frame: &[u8]) -> Option<u16> {
    frame.get(12..14).map(|t| u16::from_be_bytes([t[0], t[1]]))
}

/// An ARP packet for IPv4 over Ethernet.
#[derive(Debug, PartialEq, Eq)]
pub struct Arp {
    pub op: u16,
    pub sha: [u8; 6],
    pub spa: Ipv4Addr,
    pub tpa: Ipv4Addr,
}

impl Arp {
    pub fn parse(frame: &[u8]) -> Option<Arp> {
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

    /// An ARP request for `target` from `sender` at `mac`, to `to` (a
    /// link address, or broadcast).
    pub fn request(to: [u8; 6], mac: [u8; 6], sender: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
        let mut f = vec![0u8; ETH_HLEN + ARP_LEN];
        f[0..6].copy_from_slice(&to);
        f[6..12].copy_from_slice(&mac);
        f[12..14].copy_from_slice(&ETH_P_ARP.to_be_bytes());
        let a = &mut f[ETH_HLEN..];
        a[0..2].copy_from_slice(&1u16.to_be_bytes()); // Ethernet
        a[2..4].copy_from_slice(&0x0800u16.to_be_bytes()); // IPv4
        a[4] = 6;
        a[5] = 4;
        a[6..8].copy_from_slice(&ARP_REQUEST.to_be_bytes());
        a[8..14].copy_from_slice(&mac);
        a[14..18].copy_from_slice(&sender.octets());
        // Target link address unknown (zeros).
        a[24..28].copy_from_slice(&target.octets());
        f
    }
}

/// What a DHCP message over Ethernet/IPv4/UDP says of a client: the fixed
/// BOOTP fields, option 53 the message type, option 50 the address
/// requested.
#[derive(Debug, PartialEq, Eq)]
pub struct Dhcp {
    pub kind: u8,
    pub chaddr: [u8; 6],
    pub ciaddr: Option<Ipv4Addr>,
    pub yiaddr: Option<Ipv4Addr>,
    pub requested: Option<Ipv4Addr>,
}

impl Dhcp {
    pub fn parse(frame: &[u8]) -> Option<Dhcp> {
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
    let sum = !checksum::data(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + m.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]); // no UDP checksum (allowed over IPv4)
    f.extend_from_slice(&m);
    f
}

/// The ICMPv6 checksum of `message` (its checksum field zero or not: the
/// result is what makes the whole sum 0xffff when written there).
fn icmpv6_checksum(src: &Ipv6Addr, dst: &Ipv6Addr, message: &[u8]) -> u16 {
    // The pseudo-header (RFC 8200 section 8.1), then the message but its
    // checksum field.
    let length = (message.len() as u32).to_be_bytes();
    !checksum::combine(&[
        checksum::data(&src.octets()),
        checksum::data(&dst.octets()),
        checksum::data(&length),
        checksum::data(&[0, 0, 0, ICMPV6]),
        checksum::data(&message[..2]),
        checksum::data(&message[4..]),
    ])
}

/// An IPv6 neighbor-discovery message over Ethernet (hop limit 255, a
/// valid checksum).
#[derive(Debug, PartialEq, Eq)]
pub struct Nd {
    pub kind: u8,
    /// The frame's source link address.
    pub src_mac: [u8; 6],
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    /// Solicitations and advertisements of neighbors: the address asked
    /// for or advertised.
    pub target: Option<Ipv6Addr>,
    /// The source (solicitations) or target (advertisements) link-layer
    /// address option.
    pub lladdr: Option<[u8; 6]>,
}

impl Nd {
    pub fn parse(frame: &[u8]) -> Option<Nd> {
        let ip = frame.get(ETH_HLEN..)?;
        let header = ip.get(..IPV6_HLEN)?;
        if header[0] >> 4 != 6 || header[6] != ICMPV6 || header[7] != 255 {
            return None;
        }
        let len = u16::from_be_bytes([header[4], header[5]]) as usize;
        let icmp = ip.get(IPV6_HLEN..IPV6_HLEN + len)?;
        let addr =
            |b: &[u8]| -> Option<Ipv6Addr> { Some(Ipv6Addr::from(<[u8; 16]>::try_from(b).ok()?)) };
        let src = addr(&header[8..24])?;
        let dst = addr(&header[24..40])?;
        if icmp.len() < 8 || icmp[1] != 0 {
            return None;
        }
        if u16::from_be_bytes([icmp[2], icmp[3]]) != icmpv6_checksum(&src, &dst, icmp) {
            return None;
        }
        let kind = icmp[0];
        let (target, options, wanted) = match kind {
            ND_ROUTER_SOLICIT => (None, &icmp[8..], 1),
            ND_NEIGHBOR_SOLICIT => (Some(addr(icmp.get(8..24)?)?), &icmp[24..], 1),
            ND_NEIGHBOR_ADVERT => (Some(addr(icmp.get(8..24)?)?), &icmp[24..], 2),
            _ => return None,
        };
        let mut lladdr = None;
        let mut opts = options;
        while !opts.is_empty() {
            let (code, units) = (*opts.first()?, *opts.get(1)? as usize);
            if units == 0 {
                return None;
            }
            let opt = opts.get(..units * 8)?;
            if code == wanted && units == 1 {
                lladdr = opt[2..8].try_into().ok();
            }
            opts = &opts[units * 8..];
        }
        Some(Nd {
            kind,
            src_mac: frame[6..12].try_into().ok()?,
            src,
            dst,
            target,
            lladdr,
        })
    }
}

/// The multicast link address of an IPv6 multicast address.
fn multicast_mac(a: &Ipv6Addr) -> [u8; 6] {
    let o = a.octets();
    [0x33, 0x33, o[12], o[13], o[14], o[15]]
}

/// The solicited-node multicast address of `a`.
pub fn solicited_node(a: &Ipv6Addr) -> Ipv6Addr {
    let o = a.octets();
    Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | o[13] as u16,
        u16::from_be_bytes([o[14], o[15]]),
    )
}

/// An ICMPv6 `message` (checksum filled in here) from `src` at `mac` to
/// `dst`, at link address `to` (the multicast one when `dst` is
/// multicast), with hop limit 255 as neighbor discovery requires.
fn icmpv6_frame(
    to: Option<[u8; 6]>,
    mac: [u8; 6],
    src: Ipv6Addr,
    dst: Ipv6Addr,
    mut message: Vec<u8>,
) -> Vec<u8> {
    let sum = icmpv6_checksum(&src, &dst, &message);
    message[2..4].copy_from_slice(&sum.to_be_bytes());
    let to = if dst.is_multicast() {
        multicast_mac(&dst)
    } else {
        to.unwrap_or_else(|| multicast_mac(&dst))
    };
    let mut f = Vec::with_capacity(ETH_HLEN + IPV6_HLEN + message.len());
    f.extend_from_slice(&to);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&ETH_P_IPV6.to_be_bytes());
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(message.len() as u16).to_be_bytes());
    f.extend_from_slice(&[ICMPV6, 255]);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst.octets());
    f.extend_from_slice(&message);
    f
}

/// A neighbor solicitation for `target` from `src` at `mac`: to the
/// target itself at `to` when its link address is known (a reachability
/// probe), else to its solicited-node multicast address.
pub fn neighbor_solicitation(
    to: Option<[u8; 6]>,
    mac: [u8; 6],
    src: Ipv6Addr,
    target: Ipv6Addr,
) -> Vec<u8> {
    let dst = if to.is_some() {
        target
    } else {
        solicited_node(&target)
    };
    let mut m = vec![ND_NEIGHBOR_SOLICIT, 0, 0, 0, 0, 0, 0, 0];
    m.extend_from_slice(&target.octets());
    m.extend_from_slice(&[1, 1]);
    m.extend_from_slice(&mac);
    icmpv6_frame(to, mac, src, dst, m)
}

/// A neighbor advertisement of `target` (solicited, override) from it at
/// `mac` to `dst` at `to`: what a client answers (for tests).
#[doc(hidden)]
pub fn neighbor_advertisement(
    to: [u8; 6],
    mac: [u8; 6],
    target: Ipv6Addr,
    dst: Ipv6Addr,
) -> Vec<u8> {
    let mut m = vec![ND_NEIGHBOR_ADVERT, 0, 0, 0, 0x60, 0, 0, 0];
    m.extend_from_slice(&target.octets());
    m.extend_from_slice(&[2, 1]);
    m.extend_from_slice(&mac);
    icmpv6_frame(Some(to), mac, target, dst, m)
}

/// A router solicitation from the unspecified address (a client joining
/// the link): for tests.
#[cfg(test)]
pub fn router_solicitation_for_tests(mac: [u8; 6]) -> Vec<u8> {
    let all_routers = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);
    let m = vec![ND_ROUTER_SOLICIT, 0, 0, 0, 0, 0, 0, 0];
    icmpv6_frame(None, mac, Ipv6Addr::UNSPECIFIED, all_routers, m)
}

/// How long clients keep the access points as their default router (s):
/// every access point advertises the same router, so one that stops
/// does not take the route away while another still advertises it.
pub const ROUTER_LIFETIME_S: u16 = 60;

/// A router advertisement from `gateway` (the anycast link-local address)
/// at `mac`, to all nodes: a default router, and `prefix` (/64) on link
/// and for stateless address autoconfiguration.
pub fn router_advertisement(mac: [u8; 6], gateway: Ipv6Addr, prefix: Ipv6Addr) -> Vec<u8> {
    let mut m = vec![ND_ROUTER_ADVERT, 0, 0, 0, 64, 0];
    m.extend_from_slice(&ROUTER_LIFETIME_S.to_be_bytes());
    m.extend_from_slice(&[0; 8]); // reachable time, retransmission timer
    m.extend_from_slice(&[1, 1]);
    m.extend_from_slice(&mac);
    m.extend_from_slice(&[3, 4, 64, 0xc0]); // prefix information: on link, autonomous
    m.extend_from_slice(&86_400u32.to_be_bytes()); // valid lifetime
    m.extend_from_slice(&14_400u32.to_be_bytes()); // preferred lifetime
    m.extend_from_slice(&[0; 4]);
    let mut p = prefix.octets();
    p[8..].fill(0);
    m.extend_from_slice(&p);
    let all_nodes = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
    icmpv6_frame(None, mac, gateway, all_nodes, m)
}

/// Classic BPF for the access socket: ARP; IPv4 UDP to port 67 or 68
/// that is not a later fragment (DHCP); ICMPv6 router solicitations and
/// neighbor solicitations and advertisements right behind the IPv6
/// header (neighbor discovery never has extension headers). Anything else
/// stays in the kernel. Offsets are the Ethernet frame's; jumps count the
/// instructions skipped.
pub const ACCESS_FILTER: [(u16, u8, u8, u32); 20] = [
    (0x28, 0, 0, 12),          //  0 ldh [12]: the ethertype
    (0x15, 16, 0, 0x0806),     //  1 ARP: accept
    (0x15, 9, 0, 0x86dd),      //  2 IPv6: to 12
    (0x15, 0, 15, 0x0800),     //  3 not IPv4: drop
    (0x30, 0, 0, 23),          //  4 ldb [23]: the IP protocol
    (0x15, 0, 13, 17),         //  5 not UDP: drop
    (0x28, 0, 0, 20),          //  6 ldh [20]: flags and fragment offset
    (0x45, 11, 0, 0x1fff),     //  7 a later fragment: drop
    (0xb1, 0, 0, 14),          //  8 ldxb 4*([14]&0xf): the IP header's length
    (0x48, 0, 0, 16),          //  9 ldh [x+16]: the UDP destination port
    (0x15, 7, 0, 67),          // 10 67: accept
    (0x15, 6, 7, 68),          // 11 68: accept, else drop
    (0x30, 0, 0, 20),          // 12 ldb [20]: the IPv6 next header
    (0x15, 0, 5, 58),          // 13 not ICMPv6: drop
    (0x30, 0, 0, 54),          // 14 ldb [54]: the ICMPv6 type
    (0x15, 2, 0, 133),         // 15 router solicitation: accept
    (0x15, 1, 0, 135),         // 16 neighbor solicitation: accept
    (0x15, 0, 1, 136),         // 17 neighbor advertisement: accept, else drop
    (0x06, 0, 0, 0x0004_0000), // 18 accept
    (0x06, 0, 0, 0),           // 19 drop
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the filter's program on `frame` as the kernel does (the
    /// opcodes it uses): whether it accepts.
    fn filter_accepts(frame: &[u8]) -> bool {
        let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
        let byte = |i: usize| frame.get(i).map(|&b| b as u32);
        let half = |i: usize| Some((byte(i)? << 8) | byte(i + 1)?);
        loop {
            let (code, jt, jf, k) = ACCESS_FILTER[pc];
            pc += 1;
            let jump = |c: bool| if c { jt as usize } else { jf as usize };
            match code {
                0x28 => match half(k as usize) {
                    Some(v) => a = v,
                    None => return false,
                },
                0x30 => match byte(k as usize) {
                    Some(v) => a = v,
                    None => return false,
                },
                0x48 => match half((x + k) as usize) {
                    Some(v) => a = v,
                    None => return false,
                },
                0xb1 => match byte(k as usize) {
                    Some(v) => x = 4 * (v & 0xf),
                    None => return false,
                },
                0x15 => pc += jump(a == k),
                0x45 => pc += jump(a & k != 0),
                0x06 => return k != 0,
                _ => panic!("opcode {code:#x} not modelled"),
            }
        }
    }

    const MAC: [u8; 6] = [2, 0, 0, 0, 0, 9];

    #[test]
    fn the_filter_takes_arp_dhcp_and_neighbor_discovery_and_nothing_else() {
        let any = Ipv4Addr::UNSPECIFIED;
        let v4 = Ipv4Addr::new(198, 18, 9, 9);
        let a6: Ipv6Addr = "2001:2:0:c8::9".parse().unwrap();
        let b6: Ipv6Addr = "2001:2:0:c8::2".parse().unwrap();
        let gw6: Ipv6Addr = "fe80::1".parse().unwrap();
        assert!(filter_accepts(&Arp::request([0xff; 6], MAC, v4, v4)));
        assert!(filter_accepts(&dhcp_frame(
            DHCP_REQUEST,
            MAC,
            any,
            any,
            Some(v4)
        )));
        assert!(filter_accepts(&dhcp_frame(DHCP_ACK, MAC, any, v4, None)));
        assert!(filter_accepts(&neighbor_solicitation(None, MAC, b6, a6)));
        assert!(filter_accepts(&neighbor_advertisement(MAC, MAC, a6, b6)));
        let mut rs = neighbor_solicitation(None, MAC, b6, a6);
        rs[ETH_HLEN + IPV6_HLEN] = ND_ROUTER_SOLICIT;
        assert!(filter_accepts(&rs));
        // Not for the socket: other UDP, a later fragment, other ICMPv6
        // (our own router advertisements included), other ethertypes.
        let mut udp = dhcp_frame(DHCP_REQUEST, MAC, any, any, Some(v4));
        udp[ETH_HLEN + 22..ETH_HLEN + 24].copy_from_slice(&5000u16.to_be_bytes());
        assert!(!filter_accepts(&udp));
        let mut frag = dhcp_frame(DHCP_REQUEST, MAC, any, any, Some(v4));
        frag[ETH_HLEN + 7] = 8;
        assert!(!filter_accepts(&frag));
        assert!(!filter_accepts(&router_advertisement(MAC, gw6, a6)));
        let mut tcp6 = neighbor_solicitation(None, MAC, b6, a6);
        tcp6[ETH_HLEN + 6] = 6;
        assert!(!filter_accepts(&tcp6));
        let mut other = Arp::request([0xff; 6], MAC, v4, v4);
        other[12..14].copy_from_slice(&0x88ccu16.to_be_bytes());
        assert!(!filter_accepts(&other));
        assert!(!filter_accepts(&[]));
    }

    #[test]
    fn neighbor_discovery_round_trips_and_a_bad_checksum_or_hop_limit_does_not() {
        let a6: Ipv6Addr = "2001:2:0:c8::9".parse().unwrap();
        let b6: Ipv6Addr = "2001:2:0:c8::2".parse().unwrap();
        let ns = neighbor_solicitation(None, MAC, b6, a6);
        assert_eq!(
            Nd::parse(&ns),
            Some(Nd {
                kind: ND_NEIGHBOR_SOLICIT,
                src_mac: MAC,
                src: b6,
                dst: solicited_node(&a6),
                target: Some(a6),
                lladdr: Some(MAC)
            })
        );
        assert_eq!(&ns[..6], &[0x33, 0x33, 0xff, 0, 0, 9]);
        let probe = neighbor_solicitation(Some([2, 0, 0, 0, 0, 7]), MAC, b6, a6);
        assert_eq!(
            Nd::parse(&probe).unwrap().dst,
            a6,
            "a probe goes to the client"
        );
        assert_eq!(&probe[..6], &[2, 0, 0, 0, 0, 7]);
        let na = neighbor_advertisement(MAC, [2, 0, 0, 0, 0, 7], a6, b6);
        let parsed = Nd::parse(&na).unwrap();
        assert_eq!(
            (parsed.kind, parsed.target, parsed.lladdr),
            (ND_NEIGHBOR_ADVERT, Some(a6), Some([2, 0, 0, 0, 0, 7]))
        );
        let mut bad = na.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(Nd::parse(&bad), None, "checksum");
        let mut hops = na.clone();
        hops[ETH_HLEN + 7] = 64;
        assert_eq!(Nd::parse(&hops), None, "not from this link");
        assert_eq!(Nd::parse(&na[..na.len() - 3]), None, "truncated");
        let ra = router_advertisement(MAC, "fe80::1".parse().unwrap(), a6);
        assert_eq!(Nd::parse(&ra), None, "not one we read");
        // The router advertisement's checksum is right (a host would drop
        // it otherwise).
        let icmp = &ra[ETH_HLEN + IPV6_HLEN..];
        let (src, dst): (Ipv6Addr, Ipv6Addr) =
            ("fe80::1".parse().unwrap(), "ff02::1".parse().unwrap());
        assert_eq!(
            u16::from_be_bytes([icmp[2], icmp[3]]),
            icmpv6_checksum(&src, &dst, icmp)
        );
        assert_eq!(&ra[..6], &[0x33, 0x33, 0, 0, 0, 1]);
    }

    /// The one's complement sum of `bytes` as 16-bit words, by hand.
    fn ones_sum(bytes: &[u8]) -> u32 {
        let mut sum: u32 = bytes
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum
    }

    #[test]
    fn checksums_make_the_whole_sum_all_ones() {
        let ack = dhcp_frame(
            DHCP_ACK,
            MAC,
            Ipv4Addr::new(198, 18, 0, 9),
            Ipv4Addr::new(198, 18, 0, 9),
            None,
        );
        assert_eq!(
            ones_sum(&ack[ETH_HLEN..ETH_HLEN + 20]),
            0xffff,
            "IPv4 header"
        );
        let a6: Ipv6Addr = "2001:2:0:c8::9".parse().unwrap();
        let b6: Ipv6Addr = "2001:2:0:c8::2".parse().unwrap();
        let na = neighbor_advertisement(MAC, [2, 0, 0, 0, 0, 7], a6, b6);
        let icmp = &na[ETH_HLEN + IPV6_HLEN..];
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&na[ETH_HLEN + 8..ETH_HLEN + 40]);
        pseudo.extend_from_slice(&(icmp.len() as u32).to_be_bytes());
        pseudo.extend_from_slice(&[0, 0, 0, ICMPV6]);
        pseudo.extend_from_slice(icmp);
        assert_eq!(ones_sum(&pseudo), 0xffff, "ICMPv6 with its pseudo-header");
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(frame in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..700)) {
            let _ = Arp::parse(&frame);
            let _ = Dhcp::parse(&frame);
            let _ = Nd::parse(&frame);
            let _ = filter_accepts(&frame);
        }
    }
}
