//! What an LSA's origin serves: IPv4 and IPv6 prefixes, clients it
//! serves as an access point (with the quality of its link to them), as
//! a gateway its preference and uplink capacity, and its routing area
//! (with, from an area's leader, the area's summary: members and
//! adjacent areas); their encoding (kind, a length byte, a body).

use crate::{Reader, WireError, Writer};

/// Something an LSA's origin serves: an IP prefix, or a client (one host
/// address) that the origin serves as an access point, with how well.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Prefix {
    /// An IPv4 prefix.
    V4 {
        /// The address, most significant byte first.
        addr: [u8; 4],
        /// Prefix length in bits (0..=32).
        len: u8,
    },
    /// An IPv6 prefix.
    V6 {
        /// The address, most significant byte first.
        addr: [u8; 16],
        /// Prefix length in bits (0..=128).
        len: u8,
    },
    /// An IPv4 client of an access point: one host address (a /32), with
    /// the quality of the access point's link to it.
    Client4 {
        /// The client's address, most significant byte first.
        addr: [u8; 4],
        /// 1 (barely heard) to [`CLIENT_QUALITY_MAX`] (every probe
        /// answered); 0 is refused.
        quality: u8,
    },
    /// An IPv6 client of an access point (a /128), with its link quality.
    Client6 {
        /// The client's address, most significant byte first.
        addr: [u8; 16],
        /// 1 (barely heard) to 255 (every probe answered).
        quality: u8,
    },
    /// The origin is a gateway: how entry points should weigh the IP
    /// prefixes it serves against other origins' for the same prefix.
    /// At most one per advertisement counts (the first).
    Gateway {
        /// Higher is preferred (a fibre primary over an LTE backup);
        /// origins without this entry have [`DEFAULT_PREFERENCE`].
        preference: u8,
        /// The uplink's capacity, kbit/s (0: not said), by which entry
        /// points that spread flows across equally preferred gateways
        /// weigh them.
        capacity_kbps: u32,
    },
    /// The origin's routing area (docs/protocol.md, "Areas"); an
    /// advertisement without one is of area 0. At most one per
    /// advertisement counts (the first).
    Area {
        /// The area.
        id: u16,
        /// From the area's leader: what crossing the area costs, metric
        /// units (0 from every other router).
        transit: u32,
    },
    /// From an area's leader: routers `first` to `first + extra` (ids)
    /// are of its area.
    Members {
        /// The first id of the run.
        first: u16,
        /// How many ids follow the first in the run (0-255).
        extra: u8,
    },
    /// From an area's leader: an IPv4 prefix a router of its area serves
    /// (a member listed so needs no [`Prefix::Members`] run).
    Member4 {
        /// The router that serves it.
        node: u16,
        /// The address, most significant byte first.
        addr: [u8; 4],
        /// Prefix length in bits (0..=32).
        len: u8,
    },
    /// From an area's leader: an IPv6 prefix a router of its area serves.
    Member6 {
        /// The router that serves it.
        node: u16,
        /// The address, most significant byte first.
        addr: [u8; 16],
        /// Prefix length in bits (0..=128).
        len: u8,
    },
    /// From an area's leader: an area adjacent to its own, and the
    /// cheapest link across (metric units).
    Adjacent {
        /// The adjacent area.
        area: u16,
        /// The cheapest link from the leader's area into it.
        metric: u32,
    },
}

/// The preference of an origin that advertises no [`Prefix::Gateway`].
pub const DEFAULT_PREFERENCE: u8 = 100;

/// The most bytes one entry takes (an IPv6 prefix of an area member: kind,
/// length, node, address).
pub(super) const MAX_ENTRY_LEN: usize = 2 + 18;

/// The best quality a client entry can carry.
pub const CLIENT_QUALITY_MAX: u8 = 255;

impl core::fmt::Display for Prefix {
    /// `198.18.0.0/15`, `2001:db8::/32`, or a client's MAC address.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Prefix::V4 { addr, len } => write!(f, "{}/{len}", core::net::Ipv4Addr::from(*addr)),
            Prefix::V6 { addr, len } => write!(f, "{}/{len}", core::net::Ipv6Addr::from(*addr)),
            Prefix::Client4 { addr, quality } => write!(
                f,
                "client {} (quality {quality})",
                core::net::Ipv4Addr::from(*addr)
            ),
            Prefix::Client6 { addr, quality } => write!(
                f,
                "client {} (quality {quality})",
                core::net::Ipv6Addr::from(*addr)
            ),
            Prefix::Gateway {
                preference,
                capacity_kbps,
            } => write!(
                f,
                "gateway (preference {preference}, capacity {capacity_kbps} kbit/s)"
            ),
            Prefix::Area { id, transit: 0 } => write!(f, "area {id}"),
            Prefix::Area { id, transit } => write!(f, "area {id} (leader, transit {transit})"),
            Prefix::Members { first, extra: 0 } => write!(f, "member {first}"),
            Prefix::Members { first, extra } => {
                write!(
                    f,
                    "members {first}-{}",
                    u32::from(*first) + u32::from(*extra)
                )
            }
            Prefix::Adjacent { area, metric } => {
                write!(f, "adjacent area {area} (metric {metric})")
            }
            Prefix::Member4 { node, addr, len } => write!(
                f,
                "{}/{len} at member {node}",
                core::net::Ipv4Addr::from(*addr)
            ),
            Prefix::Member6 { node, addr, len } => write!(
                f,
                "{}/{len} at member {node}",
                core::net::Ipv6Addr::from(*addr)
            ),
        }
    }
}

const PREFIX_V4: u8 = 4;
const PREFIX_V6: u8 = 6;
const PREFIX_CLIENT_V4: u8 = 0x14;
const PREFIX_CLIENT_V6: u8 = 0x16;
const PREFIX_GATEWAY: u8 = 0x20;
const PREFIX_AREA: u8 = 0x30;
const PREFIX_MEMBERS: u8 = 0x31;
const PREFIX_ADJACENT: u8 = 0x32;
const PREFIX_MEMBER_V4: u8 = 0x34;
const PREFIX_MEMBER_V6: u8 = 0x36;

impl Prefix {
    /// The client this entry names and its quality: its address (an IPv4
    /// address in the first four bytes), whether IPv4, the quality.
    /// `None` for a prefix that is not a client.
    pub fn client(&self) -> Option<([u8; 16], bool, u8)> {
        let mut a = [0u8; 16];
        match self {
            Prefix::Client4 { addr, quality } => {
                a[..4].copy_from_slice(addr);
                Some((a, true, *quality))
            }
            Prefix::Client6 { addr, quality } => Some((*addr, false, *quality)),
            _ => None,
        }
    }

    /// A gateway entry's preference and capacity (kbit/s).
    pub fn gateway(&self) -> Option<(u8, u32)> {
        match *self {
            Prefix::Gateway {
                preference,
                capacity_kbps,
            } => Some((preference, capacity_kbps)),
            _ => None,
        }
    }

    /// The router of a leader's area that serves this prefix, and the
    /// prefix as the router's own advertisement says it, if this is a
    /// member's prefix.
    pub fn member(&self) -> Option<(u16, Prefix)> {
        match *self {
            Prefix::Member4 { node, addr, len } => Some((node, Prefix::V4 { addr, len })),
            Prefix::Member6 { node, addr, len } => Some((node, Prefix::V6 { addr, len })),
            _ => None,
        }
    }

    /// The origin's area and transit cost, if this is an area entry.
    pub fn area(&self) -> Option<(u16, u32)> {
        match *self {
            Prefix::Area { id, transit } => Some((id, transit)),
            _ => None,
        }
    }

    /// The body length of a kind, and the most its length byte may say
    /// (a client's length byte is its quality: 1-255; a run of members'
    /// how many follow the first).
    pub(super) fn addr_len(kind: u8) -> Result<(usize, u8), WireError> {
        match kind {
            PREFIX_V4 => Ok((4, 32)),
            PREFIX_V6 => Ok((16, 128)),
            PREFIX_CLIENT_V4 => Ok((4, CLIENT_QUALITY_MAX)),
            PREFIX_CLIENT_V6 => Ok((16, CLIENT_QUALITY_MAX)),
            PREFIX_GATEWAY => Ok((4, u8::MAX)),
            PREFIX_AREA | PREFIX_ADJACENT => Ok((6, 0)),
            PREFIX_MEMBERS => Ok((2, u8::MAX)),
            PREFIX_MEMBER_V4 => Ok((6, 32)),
            PREFIX_MEMBER_V6 => Ok((18, 128)),
            other => Err(WireError::InvalidField {
                field: "prefix kind",
                value: other as u32,
            }),
        }
    }

    pub(super) fn encoded_len(&self) -> usize {
        2 + match self {
            Prefix::V4 { .. } | Prefix::Client4 { .. } | Prefix::Gateway { .. } => 4,
            Prefix::V6 { .. } | Prefix::Client6 { .. } => 16,
            Prefix::Area { .. } | Prefix::Adjacent { .. } => 6,
            Prefix::Members { .. } => 2,
            Prefix::Member4 { .. } => 6,
            Prefix::Member6 { .. } => 18,
        }
    }

    /// Checks the next prefix and steps over it: its kind, length byte
    /// and body. Every check [`Prefix::read`] makes is made here (an
    /// advertisement is checked whole when it is parsed, and its prefixes
    /// read again only when used).
    pub(super) fn skip<'a>(r: &mut Reader<'a>) -> Result<(u8, u8, &'a [u8]), WireError> {
        let kind = r.u8()?;
        let len = r.u8()?;
        let (addr_len, max_len) = Self::addr_len(kind)?;
        let client = matches!(kind, PREFIX_CLIENT_V4 | PREFIX_CLIENT_V6);
        if client && len == 0 {
            return Err(WireError::InvalidField {
                field: "client quality",
                value: 0,
            });
        }
        if len > max_len {
            return Err(WireError::InvalidField {
                field: "prefix length",
                value: len as u32,
            });
        }
        Ok((kind, len, r.take(addr_len)?))
    }

    pub(super) fn read(r: &mut Reader<'_>) -> Result<Prefix, WireError> {
        let (kind, len, a) = Self::skip(r)?;
        Ok(match kind {
            PREFIX_V4 => Prefix::V4 {
                addr: [a[0], a[1], a[2], a[3]],
                len,
            },
            PREFIX_CLIENT_V4 => Prefix::Client4 {
                addr: [a[0], a[1], a[2], a[3]],
                quality: len,
            },
            PREFIX_GATEWAY => Prefix::Gateway {
                preference: len,
                capacity_kbps: u32::from_be_bytes([a[0], a[1], a[2], a[3]]),
            },
            PREFIX_AREA => Prefix::Area {
                id: u16::from_be_bytes([a[0], a[1]]),
                transit: u32::from_be_bytes([a[2], a[3], a[4], a[5]]),
            },
            PREFIX_ADJACENT => Prefix::Adjacent {
                area: u16::from_be_bytes([a[0], a[1]]),
                metric: u32::from_be_bytes([a[2], a[3], a[4], a[5]]),
            },
            PREFIX_MEMBERS => Prefix::Members {
                first: u16::from_be_bytes([a[0], a[1]]),
                extra: len,
            },
            PREFIX_MEMBER_V4 => Prefix::Member4 {
                node: u16::from_be_bytes([a[0], a[1]]),
                addr: [a[2], a[3], a[4], a[5]],
                len,
            },
            PREFIX_MEMBER_V6 => {
                let mut addr = [0u8; 16];
                addr.copy_from_slice(&a[2..]);
                Prefix::Member6 {
                    node: u16::from_be_bytes([a[0], a[1]]),
                    addr,
                    len,
                }
            }
            _ => {
                let mut addr = [0u8; 16];
                addr.copy_from_slice(a);
                if kind == PREFIX_V6 {
                    Prefix::V6 { addr, len }
                } else {
                    Prefix::Client6 { addr, quality: len }
                }
            }
        })
    }

    pub(super) fn write(&self, w: &mut Writer<'_>) {
        match self {
            Prefix::V4 { addr, len } => {
                w.u8(PREFIX_V4);
                w.u8(*len);
                w.put(addr);
            }
            Prefix::V6 { addr, len } => {
                w.u8(PREFIX_V6);
                w.u8(*len);
                w.put(addr);
            }
            Prefix::Client4 { addr, quality } => {
                w.u8(PREFIX_CLIENT_V4);
                w.u8(*quality);
                w.put(addr);
            }
            Prefix::Client6 { addr, quality } => {
                w.u8(PREFIX_CLIENT_V6);
                w.u8(*quality);
                w.put(addr);
            }
            Prefix::Gateway {
                preference,
                capacity_kbps,
            } => {
                w.u8(PREFIX_GATEWAY);
                w.u8(*preference);
                w.put(&capacity_kbps.to_be_bytes());
            }
            Prefix::Area { id, transit } => {
                w.u8(PREFIX_AREA);
                w.u8(0);
                w.put(&id.to_be_bytes());
                w.put(&transit.to_be_bytes());
            }
            Prefix::Adjacent { area, metric } => {
                w.u8(PREFIX_ADJACENT);
                w.u8(0);
                w.put(&area.to_be_bytes());
                w.put(&metric.to_be_bytes());
            }
            Prefix::Members { first, extra } => {
                w.u8(PREFIX_MEMBERS);
                w.u8(*extra);
                w.put(&first.to_be_bytes());
            }
            Prefix::Member4 { node, addr, len } => {
                w.u8(PREFIX_MEMBER_V4);
                w.u8(*len);
                w.put(&node.to_be_bytes());
                w.put(addr);
            }
            Prefix::Member6 { node, addr, len } => {
                w.u8(PREFIX_MEMBER_V6);
                w.u8(*len);
                w.put(&node.to_be_bytes());
                w.put(addr);
            }
        }
    }

    pub(super) fn check(&self) -> Result<(), WireError> {
        let (len, max) = match self {
            Prefix::V4 { len, .. } | Prefix::Member4 { len, .. } => (*len, 32),
            Prefix::V6 { len, .. } | Prefix::Member6 { len, .. } => (*len, 128),
            Prefix::Client4 { quality, .. } | Prefix::Client6 { quality, .. } => {
                if *quality == 0 {
                    return Err(WireError::InvalidField {
                        field: "client quality",
                        value: 0,
                    });
                }
                (0, 0)
            }
            Prefix::Gateway { .. }
            | Prefix::Area { .. }
            | Prefix::Adjacent { .. }
            | Prefix::Members { .. } => (0, 0),
        };
        if len > max {
            return Err(WireError::InvalidField {
                field: "prefix length",
                value: len as u32,
            });
        }
        Ok(())
    }
}
