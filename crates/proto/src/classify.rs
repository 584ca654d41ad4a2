//! Packet classification: which traffic class a user packet belongs to,
//! whether it is urgent, and its flow hash. Stateless per packet and
//! allocation-free: it reads the IP header and the first four bytes of the
//! transport header, nothing else.
//!
//! A class rule matches on destination prefixes, DSCP values, IP protocols
//! and source/destination port ranges; an empty list matches anything, and
//! all non-empty lists must match. Rules are tried in order; the first
//! match wins; no match is class 0. DSCP EF (46) and CS6 (48) are urgent
//! unless a rule says otherwise.

use core::fmt;
use core::str::FromStr;
use std::net::IpAddr;

use thiserror::Error;

/// Why a packet could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum InspectError {
    /// The version nibble is neither 4 nor 6.
    #[error("not an IPv4 or IPv6 packet")]
    NotIp,
    /// The packet ends before its IP header does.
    #[error("IP header truncated")]
    Truncated,
}

/// What classification needs from a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketInfo {
    /// Destination address, IPv4 in the first four bytes.
    pub dst: [u8; 16],
    /// Whether the packet is IPv4 (else IPv6).
    pub v4: bool,
    /// DSCP: the top six bits of the IPv4 TOS or IPv6 traffic class byte.
    pub dscp: u8,
    /// IP protocol number (for IPv6, the first next-header value).
    pub protocol: u8,
    /// Ports for TCP, UDP, UDP-Lite, SCTP and DCCP (0 otherwise).
    pub src_port: u16,
    /// Destination port, for the same protocols (0 otherwise).
    pub dst_port: u16,
    /// Hash of the 5-tuple (FNV-1a): equal for every packet of a flow.
    pub flow_hash: u64,
}

const PORTED: [u8; 5] = [6, 17, 33, 132, 136];

/// FNV-1a over `bytes`, continuing from `h`.
pub(crate) fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Reads an IP packet's header.
pub fn inspect(packet: &[u8]) -> Result<PacketInfo, InspectError> {
    let version = packet.first().ok_or(InspectError::Truncated)? >> 4;
    let (src, dst, dscp, protocol, l4): (&[u8], &[u8], u8, u8, usize) = match version {
        4 => {
            if packet.len() < 20 {
                return Err(InspectError::Truncated);
            }
            let ihl = (packet[0] & 0x0f) as usize * 4;
            if ihl < 20 || packet.len() < ihl {
                return Err(InspectError::Truncated);
            }
            // Later fragments carry no transport header.
            let frag_offset = u16::from_be_bytes([packet[6], packet[7]]) & 0x1fff;
            let l4 = if frag_offset == 0 { ihl } else { usize::MAX };
            (
                &packet[12..16],
                &packet[16..20],
                packet[1] >> 2,
                packet[9],
                l4,
            )
        }
        6 => {
            if packet.len() < 40 {
                return Err(InspectError::Truncated);
            }
            let tc = ((packet[0] & 0x0f) << 4) | (packet[1] >> 4);
            (&packet[8..24], &packet[24..40], tc >> 2, packet[6], 40)
        }
        _ => return Err(InspectError::NotIp),
    };
    let (src_port, dst_port) = match packet.get(l4..l4.saturating_add(4)) {
        Some(p) if PORTED.contains(&protocol) => (
            u16::from_be_bytes([p[0], p[1]]),
            u16::from_be_bytes([p[2], p[3]]),
        ),
        _ => (0, 0),
    };
    let mut d = [0u8; 16];
    d[..dst.len()].copy_from_slice(dst);
    let mut h = fnv(0xcbf2_9ce4_8422_2325, src);
    h = fnv(h, dst);
    h = fnv(h, &[protocol]);
    h = fnv(h, &src_port.to_be_bytes());
    h = fnv(h, &dst_port.to_be_bytes());
    Ok(PacketInfo {
        dst: d,
        v4: version == 4,
        dscp,
        protocol,
        src_port,
        dst_port,
        flow_hash: h,
    })
}

/// An IP prefix such as `198.18.0.0/15` or `2001:db8::/32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpPrefix {
    addr: [u8; 16],
    v4: bool,
    len: u8,
}

/// Why a prefix or rule text is not valid.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RuleError {
    /// The text is not an IP prefix.
    #[error("\"{0}\" is not an IP prefix (like 198.18.0.0/15 or 2001:db8::/32)")]
    Prefix(String),
    /// The text is not a port or port range.
    #[error("\"{0}\" is not a port range (like 5060 or 16384-32767)")]
    Ports(String),
}

impl IpPrefix {
    /// The prefix with its host bits cleared (the network it names).
    pub fn network(&self) -> IpPrefix {
        let mut addr = self.addr;
        let width = if self.v4 { 4 } else { 16 };
        for (i, b) in addr.iter_mut().enumerate() {
            let first_bit = i as u32 * 8;
            let keep = (u32::from(self.len).saturating_sub(first_bit)).min(8);
            *b &= if i >= width || keep == 0 {
                0
            } else {
                0xffu8 << (8 - keep)
            };
        }
        IpPrefix { addr, ..*self }
    }

    /// Whether the packet's destination lies in this prefix (of the same IP version).
    pub fn contains(&self, info: &PacketInfo) -> bool {
        if self.v4 != info.v4 {
            return false;
        }
        let full = (self.len / 8) as usize;
        if self.addr[..full] != info.dst[..full] {
            return false;
        }
        let rest = self.len % 8;
        rest == 0 || {
            let mask = 0xffu8 << (8 - rest);
            self.addr[full] & mask == info.dst[full] & mask
        }
    }
}

impl From<IpPrefix> for braid_wire::Prefix {
    /// The prefix as link-state advertisements carry it.
    fn from(p: IpPrefix) -> Self {
        if p.v4 {
            let mut addr = [0u8; 4];
            addr.copy_from_slice(&p.addr[..4]);
            braid_wire::Prefix::V4 { addr, len: p.len }
        } else {
            braid_wire::Prefix::V6 {
                addr: p.addr,
                len: p.len,
            }
        }
    }
}

impl FromStr for IpPrefix {
    type Err = RuleError;
    fn from_str(s: &str) -> Result<Self, RuleError> {
        let bad = || RuleError::Prefix(s.to_string());
        let (a, l) = s.split_once('/').unwrap_or((s, ""));
        let ip: IpAddr = a.trim().parse().map_err(|_| bad())?;
        let (addr, v4, max) = match ip {
            IpAddr::V4(v) => {
                let mut b = [0u8; 16];
                b[..4].copy_from_slice(&v.octets());
                (b, true, 32)
            }
            IpAddr::V6(v) => (v.octets(), false, 128),
        };
        let len = if l.is_empty() {
            max
        } else {
            l.trim().parse::<u8>().map_err(|_| bad())?
        };
        if len > max {
            return Err(bad());
        }
        Ok(IpPrefix { addr, v4, len })
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ip: IpAddr = if self.v4 {
            IpAddr::from([self.addr[0], self.addr[1], self.addr[2], self.addr[3]])
        } else {
            IpAddr::from(self.addr)
        };
        write!(f, "{ip}/{}", self.len)
    }
}

/// An inclusive port range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange(pub u16, pub u16);

impl FromStr for PortRange {
    type Err = RuleError;
    fn from_str(s: &str) -> Result<Self, RuleError> {
        let bad = || RuleError::Ports(s.to_string());
        let (a, b) = s.split_once('-').unwrap_or((s, s));
        let lo: u16 = a.trim().parse().map_err(|_| bad())?;
        let hi: u16 = b.trim().parse().map_err(|_| bad())?;
        if lo > hi {
            return Err(bad());
        }
        Ok(PortRange(lo, hi))
    }
}

/// What a class rule matches. Empty lists match anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Match {
    /// Destination prefixes: one must hold the packet's destination.
    pub dst: Vec<IpPrefix>,
    /// DSCP values: the packet's must be one of them.
    pub dscp: Vec<u8>,
    /// IP protocol numbers: the packet's must be one of them.
    pub protocols: Vec<u8>,
    /// Source port ranges: one must hold the packet's source port.
    pub src_ports: Vec<PortRange>,
    /// Destination port ranges: one must hold the packet's destination port.
    pub dst_ports: Vec<PortRange>,
}

impl Match {
    /// Whether the packet meets every non-empty list.
    pub fn matches(&self, p: &PacketInfo) -> bool {
        let port_in = |ranges: &[PortRange], port: u16| {
            ranges.is_empty() || ranges.iter().any(|r| (r.0..=r.1).contains(&port))
        };
        (self.dst.is_empty() || self.dst.iter().any(|d| d.contains(p)))
            && (self.dscp.is_empty() || self.dscp.contains(&p.dscp))
            && (self.protocols.is_empty() || self.protocols.contains(&p.protocol))
            && port_in(&self.src_ports, p.src_port)
            && port_in(&self.dst_ports, p.dst_port)
    }
}

/// One traffic class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassRule {
    /// The operator's name for the class (`voip`, `dns`, ...).
    pub name: String,
    /// 1..=255; class 0 is "everything else".
    pub id: u8,
    /// Which packets belong to the class.
    pub matches: Match,
    /// Scheduled ahead of bulk; `None`: urgent when DSCP is EF or CS6.
    pub urgent: Option<bool>,
}

/// The result of classifying one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classified {
    /// Traffic class: the id of the first rule that matched, or 0.
    pub class: u8,
    /// Whether the packet is scheduled ahead of bulk.
    pub urgent: bool,
    /// The packet's flow hash ([`PacketInfo::flow_hash`]).
    pub flow_hash: u64,
}

/// DSCP values treated as urgent by default: EF and CS6.
pub const URGENT_DSCP: [u8; 2] = [46, 48];

/// Ordered class rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Classifier {
    /// The rules, in the order they are tried; the first match wins.
    pub rules: Vec<ClassRule>,
}

impl Classifier {
    /// The policy operators ask for most, as an example and a test fixture:
    /// class 1 "voip" (UDP to 5060 or 16384-32767, urgent), class 2 "dns"
    /// (port 53), class 3 "office" (198.19.0.0/16); everything else class 0.
    pub fn example() -> Classifier {
        let ports = |s: &[&str]| {
            s.iter()
                .map(|p| p.parse().expect("valid port range"))
                .collect()
        };
        Classifier {
            rules: vec![
                ClassRule {
                    name: "voip".into(),
                    id: 1,
                    matches: Match {
                        protocols: vec![17],
                        dst_ports: ports(&["5060", "16384-32767"]),
                        ..Match::default()
                    },
                    urgent: Some(true),
                },
                ClassRule {
                    name: "dns".into(),
                    id: 2,
                    matches: Match {
                        dst_ports: ports(&["53"]),
                        ..Match::default()
                    },
                    urgent: None,
                },
                ClassRule {
                    name: "office".into(),
                    id: 3,
                    matches: Match {
                        dst: vec!["198.19.0.0/16".parse().expect("valid prefix")],
                        ..Match::default()
                    },
                    urgent: None,
                },
            ],
        }
    }

    /// Classifies a packet: the first rule that matches decides; no match is class 0.
    pub fn classify(&self, info: &PacketInfo) -> Classified {
        let rule = self.rules.iter().find(|r| r.matches.matches(info));
        Classified {
            class: rule.map_or(0, |r| r.id),
            urgent: rule
                .and_then(|r| r.urgent)
                .unwrap_or_else(|| URGENT_DSCP.contains(&info.dscp)),
            flow_hash: info.flow_hash,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal IPv4 UDP/TCP packet.
    pub fn ipv4(dst: [u8; 4], dscp: u8, protocol: u8, sport: u16, dport: u16) -> Vec<u8> {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[1] = dscp << 2;
        p[9] = protocol;
        p[12..16].copy_from_slice(&[198, 18, 0, 1]);
        p[16..20].copy_from_slice(&dst);
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p
    }

    #[test]
    fn rules_in_order_first_match_wins() {
        let c = Classifier::example();
        let class = |p: &[u8]| c.classify(&inspect(p).unwrap());
        assert_eq!(class(&ipv4([198, 19, 1, 1], 0, 17, 4000, 20000)).class, 1);
        assert!(class(&ipv4([198, 19, 1, 1], 0, 17, 4000, 20000)).urgent);
        assert_eq!(class(&ipv4([198, 18, 9, 9], 0, 17, 4000, 53)).class, 2);
        assert_eq!(class(&ipv4([198, 19, 9, 9], 0, 6, 4000, 443)).class, 3);
        let bulk = class(&ipv4([198, 18, 9, 9], 0, 6, 4000, 443));
        assert_eq!((bulk.class, bulk.urgent), (0, false));
        assert!(
            class(&ipv4([198, 18, 9, 9], 46, 6, 4000, 443)).urgent,
            "EF is urgent"
        );
    }

    #[test]
    fn flows_hash_alike_and_bad_packets_are_errors() {
        let a = inspect(&ipv4([198, 18, 0, 2], 0, 6, 1000, 80)).unwrap();
        let b = inspect(&ipv4([198, 18, 0, 2], 0, 6, 1000, 80)).unwrap();
        let c = inspect(&ipv4([198, 18, 0, 2], 0, 6, 1001, 80)).unwrap();
        assert_eq!(a.flow_hash, b.flow_hash);
        assert_ne!(a.flow_hash, c.flow_hash);
        assert_eq!(inspect(&[]), Err(InspectError::Truncated));
        assert_eq!(inspect(&[0x45; 10]), Err(InspectError::Truncated));
        assert_eq!(inspect(&[0x20; 40]), Err(InspectError::NotIp));
        let mut v6 = vec![0u8; 48];
        v6[0] = 0x6b; // traffic class 0xb8 = DSCP 46
        v6[1] = 0x80;
        v6[6] = 17;
        v6[24] = 0x20;
        v6[42..44].copy_from_slice(&53u16.to_be_bytes());
        let info = inspect(&v6).unwrap();
        assert_eq!(
            (info.v4, info.dscp, info.protocol, info.dst_port),
            (false, 46, 17, 53)
        );
        assert!("2000::/3".parse::<IpPrefix>().unwrap().contains(&info));
    }

    #[test]
    fn prefixes_and_ports_parse_or_explain() {
        assert_eq!(
            "198.18.0.0/15".parse::<IpPrefix>().unwrap().to_string(),
            "198.18.0.0/15"
        );
        assert!("198.18.0.0/33".parse::<IpPrefix>().is_err());
        assert!("nonsense".parse::<IpPrefix>().is_err());
        assert_eq!("10-20".parse::<PortRange>().unwrap(), PortRange(10, 20));
        assert!("20-10".parse::<PortRange>().is_err());
        let p: IpPrefix = "198.18.0.0/15".parse().unwrap();
        let inside = inspect(&ipv4([198, 19, 255, 1], 0, 6, 1, 1)).unwrap();
        let outside = inspect(&ipv4([198, 20, 0, 1], 0, 6, 1, 1)).unwrap();
        assert!(p.contains(&inside) && !p.contains(&outside));
    }
}
