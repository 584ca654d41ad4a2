//! Control messages: link probes and link-state advertisements.
//!
//! Every control message is a 16-byte control header, a body whose length
//! the header gives, and a MAC trailer whose length the header also gives
//! (zero while the control plane is unauthenticated). The header carries a
//! key id, the sender's boot index and a packet counter (RFC 8967's index
//! and PC), so authenticating the control plane changes no message layout:
//!
//! ```text
//!  0: ver:4 type:4 | 1: flags | 2: body length:16
//!  4: sender:16               | 6: key id | 7: MAC length
//!  8: boot index:32
//! 12: packet counter:32
//! 16: body (body length bytes) | MAC (MAC length bytes)
//! ```

use crate::{first_byte, peek, MessageType, NodeId, Reader, WireError, Writer};

/// Length of the control header.
pub const CONTROL_HEADER_LEN: usize = offset::header::BODY;
const PROBE_FIXED_LEN: usize = offset::probe::REPORTS;
const PROBE_REPORT_LEN: usize = offset::probe_report::LEN;
const LSA_FIXED_LEN: usize = offset::lsa::LINKS;
const LSA_LINK_LEN: usize = offset::lsa_link::LEN;
const PATH_REPORT_FIXED_LEN: usize = offset::path_report::COUNTS;
const PATH_COUNT_LEN: usize = offset::path_count::LEN;

/// Where each field of a control message starts: the header's from the
/// message's start, a body's from the body's start, an entry's from the
/// entry's start (docs/protocol.md draws the same).
pub mod offset {
    /// The control header.
    pub mod header {
        /// Version (high nibble) and message type (low nibble).
        pub const VERSION_TYPE: usize = 0;
        /// Flags (none defined).
        pub const FLAGS: usize = 1;
        /// Body length (16 bits).
        pub const BODY_LEN: usize = 2;
        /// The sending node's id (16 bits).
        pub const SENDER: usize = 4;
        /// Key id.
        pub const KEY_ID: usize = 6;
        /// MAC length.
        pub const MAC_LEN: usize = 7;
        /// Boot index (32 bits).
        pub const BOOT_INDEX: usize = 8;
        /// Packet counter (32 bits).
        pub const COUNTER: usize = 12;
        /// The body.
        pub const BODY: usize = 16;
    }
    /// A probe's body.
    pub mod probe {
        /// Probe sequence number (32 bits).
        pub const SEQ: usize = 0;
        /// Mean interval, ms (16 bits).
        pub const INTERVAL: usize = 4;
        /// Rate, 100 kbit/s units (16 bits).
        pub const RATE: usize = 6;
        /// Number of reports (16 bits).
        pub const REPORT_COUNT: usize = 8;
        /// Database digest (16 bits).
        pub const DIGEST: usize = 10;
        /// The reports, then padding.
        pub const REPORTS: usize = 12;
    }
    /// One report in a probe.
    pub mod probe_report {
        /// The neighbor reported on (16 bits).
        pub const NEIGHBOR: usize = 0;
        /// Its stream's rate (16 bits).
        pub const RATE: usize = 2;
        /// Delivery ratio, 0-255.
        pub const RATIO: usize = 4;
        /// Bytes per report (one reserved).
        pub const LEN: usize = 6;
    }
    /// One LSA in an LSA message's body.
    pub mod lsa {
        /// Origin node id (16 bits).
        pub const ORIGIN: usize = 0;
        /// Age, seconds (16 bits).
        pub const AGE: usize = 2;
        /// Sequence number (32 bits).
        pub const SEQ: usize = 4;
        /// Checksum (CRC-32).
        pub const CHECKSUM: usize = 8;
        /// Number of links (16 bits).
        pub const LINK_COUNT: usize = 12;
        /// Number of prefixes (16 bits).
        pub const PREFIX_COUNT: usize = 14;
        /// The links, then the prefixes.
        pub const LINKS: usize = 16;
    }
    /// One link in an LSA.
    pub mod lsa_link {
        /// The neighbor (16 bits).
        pub const NEIGHBOR: usize = 0;
        /// Link id.
        pub const LINK_ID: usize = 2;
        /// Metric from the origin to the neighbor (32 bits).
        pub const METRIC_OUT: usize = 4;
        /// Metric from the neighbor to the origin (32 bits).
        pub const METRIC_IN: usize = 8;
        /// Bytes per link.
        pub const LEN: usize = 12;
    }
    /// A challenge's body (type 5).
    pub mod challenge {
        /// Request (1) or reply (2).
        pub const KIND: usize = 0;
        /// Reserved, sent as 0.
        pub const RESERVED: usize = 1;
        /// The node asked (request) or answered (reply).
        pub const TARGET: usize = 2;
        /// The requester's nonce, echoed by the reply.
        pub const NONCE: usize = 4;
        /// Body bytes.
        pub const LEN: usize = 12;
    }
    /// An echo's body (type 6).
    pub mod echo {
        /// Request (1) or reply (2).
        pub const KIND: usize = 0;
        /// Reserved, sent as 0.
        pub const RESERVED: usize = 1;
        /// The node asked (request) or the requester (reply).
        pub const TARGET: usize = 2;
        /// The requester's sequence number, echoed by the reply.
        pub const SEQ: usize = 4;
        /// The requester's stamp (its clock, opaque to others), echoed.
        pub const STAMP: usize = 8;
        /// Body bytes.
        pub const LEN: usize = 16;
    }
    /// A path report's body.
    pub mod path_report {
        /// The session's ingress (16 bits).
        pub const INGRESS: usize = 0;
        /// The session's class.
        pub const CLASS: usize = 2;
        /// Number of path counts.
        pub const COUNT: usize = 3;
        /// The path counts.
        pub const COUNTS: usize = 4;
    }
    /// One path count in a path report.
    pub mod path_count {
        /// The path index (0-15).
        pub const PATH: usize = 0;
        /// Bit 23 of these 24 bits set: bits 0-22 are the send order (see
        /// `DataHeader::send_order`) of the latest packet that arrived on
        /// the path, modulo 2^23. Clear: not known.
        pub const LATEST: usize = 1;
        /// Packets received on it (32 bits).
        pub const RECEIVED: usize = 4;
        /// Milliseconds from the latest arrival to the report (16 bits,
        /// saturating; 0 when the send order is not known).
        pub const AGE: usize = 8;
        /// Bytes per count.
        pub const LEN: usize = 10;
    }
}

/// Control header flags (byte 1). This version defines none: they are
/// sent as 0 and ignored on receipt, so a later version can use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ControlFlags(u8);

impl ControlFlags {
    /// The bits this version defines.
    const KNOWN: u8 = 0;

    /// No flags set.
    pub const fn empty() -> Self {
        ControlFlags(0)
    }
    /// The flags as the byte sent.
    pub const fn bits(self) -> u8 {
        self.0
    }
    /// Keeps only the bits this version defines.
    pub const fn from_bits_truncate(bits: u8) -> Self {
        ControlFlags(bits & Self::KNOWN)
    }
}

/// The control header, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ControlHeader {
    /// Which control message follows: a probe, an LSA or a path report.
    pub msg_type: MessageType,
    /// Header flags (none defined in this version).
    pub flags: ControlFlags,
    /// The neighbor that sent this copy (not necessarily the LSA's origin).
    pub sender: NodeId,
    /// Which key the MAC was made with (0 while unauthenticated).
    pub key_id: u8,
    /// Length of the MAC trailer in bytes (0 while unauthenticated).
    pub mac_len: u8,
    /// Drawn at random each time the sender starts: a neighbor that sees
    /// it change knows the sender restarted (RFC 8967's index).
    pub boot_index: u32,
    /// +1 per message the sender sends in this boot (RFC 8967's packet
    /// counter): with the boot index it lets a receiver refuse replays.
    pub counter: u32,
}

impl ControlHeader {
    /// An unauthenticated header of `msg_type` from `sender`, boot index
    /// and counter 0 (fill them in before sending).
    pub const fn new(msg_type: MessageType, sender: NodeId) -> Self {
        ControlHeader {
            msg_type,
            flags: ControlFlags::empty(),
            sender,
            key_id: 0,
            mac_len: 0,
            boot_index: 0,
            counter: 0,
        }
    }
}

/// A control message split into its parts, all borrowed from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlMessage<'a> {
    /// The decoded header.
    pub header: ControlHeader,
    /// The body, as many bytes as the header declares.
    pub body: &'a [u8],
    /// The MAC trailer (empty while unauthenticated).
    pub mac: &'a [u8],
    /// Header and body: the bytes a MAC covers.
    pub authenticated: &'a [u8],
}

impl<'a> ControlMessage<'a> {
    /// Splits a control message; checks version, type and lengths.
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        let ty = peek(buf)?;
        if !ty.is_control() {
            return Err(WireError::WrongType {
                expected: MessageType::Lsa as u8,
                found: ty as u8,
            });
        }
        let mut r = Reader::new(buf);
        let _first = r.u8()?;
        let flags = ControlFlags::from_bits_truncate(r.u8()?);
        let body_len = r.u16()? as usize;
        let sender = NodeId(r.u16()?);
        let key_id = r.u8()?;
        let mac_len = r.u8()?;
        let boot_index = r.u32()?;
        let counter = r.u32()?;
        let declared = CONTROL_HEADER_LEN + body_len + mac_len as usize;
        if buf.len() != declared {
            return Err(WireError::LengthMismatch {
                field: "control message",
                declared,
                available: buf.len(),
            });
        }
        let body = r.take(body_len)?;
        let mac = r.rest();
        Ok(ControlMessage {
            header: ControlHeader {
                msg_type: ty,
                flags,
                sender,
                key_id,
                mac_len,
                boot_index,
                counter,
            },
            body,
            mac,
            authenticated: &buf[..CONTROL_HEADER_LEN + body_len],
        })
    }
}

/// Splits a whole control message in `buf` into the bytes its MAC covers
/// (header and body) and its MAC trailer, for the authenticator to fill
/// in. Checks the lengths as [`ControlMessage::parse`] does.
pub fn split_mac(buf: &mut [u8]) -> Result<(&[u8], &mut [u8]), WireError> {
    let covered = ControlMessage::parse(buf)?.authenticated.len();
    let (covered, mac) = buf.split_at_mut(covered);
    Ok((covered, mac))
}

/// Writes a control header, lets `body` write the body, and appends a
/// zeroed MAC trailer of `header.mac_len` bytes for the authenticator to
/// fill in. Returns the total length.
fn emit_control(
    header: &ControlHeader,
    body_len: usize,
    out: &mut [u8],
    body: impl FnOnce(&mut Writer<'_>),
) -> Result<usize, WireError> {
    let body_len16 = u16::try_from(body_len).map_err(|_| WireError::TooLarge {
        field: "control body",
        value: body_len,
    })?;
    let mut w = Writer::new(out);
    w.reserve(CONTROL_HEADER_LEN + body_len + header.mac_len as usize)?;
    w.u8(first_byte(header.msg_type));
    w.u8(header.flags.bits());
    w.u16(body_len16);
    w.u16(header.sender.0);
    w.u8(header.key_id);
    w.u8(header.mac_len);
    w.u32(header.boot_index);
    w.u32(header.counter);
    let start = w.pos();
    body(&mut w);
    debug_assert_eq!(w.pos() - start, body_len, "body writer and length disagree");
    w.zeros(header.mac_len as usize);
    Ok(w.pos())
}

fn expect_type(header: &ControlHeader, ok: &[MessageType]) -> Result<(), WireError> {
    if ok.contains(&header.msg_type) {
        Ok(())
    } else {
        Err(WireError::WrongType {
            expected: ok[0] as u8,
            found: header.msg_type as u8,
        })
    }
}

// ---------------------------------------------------------------- probes

/// Small probes measure ACK-sized delivery; big probes measure MTU-sized
/// delivery, one stream per bit-rate (SrcRR section 4.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    /// A small (ACK-sized) probe.
    Small,
    /// A big (MTU-sized) probe; one stream per bit-rate.
    Big,
}

impl ProbeKind {
    /// The message type that carries probes of this kind.
    pub fn message_type(self) -> MessageType {
        match self {
            ProbeKind::Small => MessageType::ProbeSmall,
            ProbeKind::Big => MessageType::ProbeBig,
        }
    }
}

/// The `rate` of the small-probe stream in reports.
pub const RATE_SMALL: u16 = 0;
/// The `rate` of big probes sent at whatever rate the radio picks (real
/// radios, whose driver reports the link's throughput instead).
pub const RATE_UNSPECIFIED: u16 = u16::MAX;

/// One line of a prober's report: how well it hears `neighbor`'s probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProbeReport {
    /// The neighbor whose probes this line is about.
    pub neighbor: NodeId,
    /// Which probe stream: [`RATE_SMALL`] for small probes, else the big
    /// probes' bit-rate in units of 100 kbit/s (or [`RATE_UNSPECIFIED`]).
    pub rate: u16,
    /// Delivery ratio of that stream over the window, scaled to 0..=255.
    pub ratio: u8,
}

/// A parsed probe. Its reports are decoded on demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe<'a> {
    /// Small or big, from the header's message type.
    pub kind: ProbeKind,
    /// Per (sender, kind, rate) sequence number: gaps are losses.
    pub seq: u32,
    /// The sender's mean probe interval for this stream, in milliseconds.
    pub interval_ms: u16,
    /// Bit-rate this probe was sent at, 100 kbit/s units; [`RATE_SMALL`]
    /// for small probes, [`RATE_UNSPECIFIED`] when the radio chose.
    pub rate: u16,
    /// A 16-bit digest of the sender's link-state database (which
    /// advertisement, by origin and sequence number, it holds): a neighbor
    /// whose own digest stays different knows that flooding lost something
    /// between them, and floods again what changed since they agreed.
    pub digest: u16,
    reports: &'a [u8],
}

impl<'a> Probe<'a> {
    /// Decodes a probe body (the header says small or big).
    pub fn parse(msg: &ControlMessage<'a>) -> Result<Self, WireError> {
        expect_type(
            &msg.header,
            &[MessageType::ProbeSmall, MessageType::ProbeBig],
        )?;
        let kind = if msg.header.msg_type == MessageType::ProbeSmall {
            ProbeKind::Small
        } else {
            ProbeKind::Big
        };
        let mut r = Reader::new(msg.body);
        let seq = r.u32()?;
        let interval_ms = r.u16()?;
        let rate = r.u16()?;
        let count = r.u16()? as usize;
        let digest = r.u16()?;
        let reports = r.take(count * PROBE_REPORT_LEN)?;
        // Whatever follows is padding that makes a big probe big.
        Ok(Probe {
            kind,
            seq,
            interval_ms,
            rate,
            digest,
            reports,
        })
    }

    /// How many reports the probe carries.
    pub fn report_count(&self) -> usize {
        self.reports.len() / PROBE_REPORT_LEN
    }

    /// The probe's reports, decoded in order.
    pub fn reports(&self) -> impl Iterator<Item = ProbeReport> + 'a {
        use offset::probe_report::*;
        self.reports
            .chunks_exact(PROBE_REPORT_LEN)
            .map(|b| ProbeReport {
                neighbor: NodeId(u16::from_be_bytes([b[NEIGHBOR], b[NEIGHBOR + 1]])),
                rate: u16::from_be_bytes([b[RATE], b[RATE + 1]]),
                ratio: b[RATIO],
            })
    }

    /// Bytes a probe with `reports` reports takes, with a MAC of
    /// `mac_len` bytes, padded to at least `pad_to` (what [`Self::emit`]
    /// writes).
    pub const fn encoded_len(reports: usize, pad_to: usize, mac_len: usize) -> usize {
        let unpadded = CONTROL_HEADER_LEN + PROBE_FIXED_LEN + reports * PROBE_REPORT_LEN + mac_len;
        if unpadded > pad_to {
            unpadded
        } else {
            pad_to
        }
    }

    /// Writes a probe. The body is padded with zeros so that the whole
    /// message is at least `pad_to` bytes long (big probes).
    #[allow(clippy::too_many_arguments)]
    pub fn emit(
        header: &ControlHeader,
        seq: u32,
        interval_ms: u16,
        rate: u16,
        digest: u16,
        reports: &[ProbeReport],
        pad_to: usize,
        out: &mut [u8],
    ) -> Result<usize, WireError> {
        expect_type(header, &[MessageType::ProbeSmall, MessageType::ProbeBig])?;
        let count = u16::try_from(reports.len()).map_err(|_| WireError::TooLarge {
            field: "probe reports",
            value: reports.len(),
        })?;
        let content = PROBE_FIXED_LEN + reports.len() * PROBE_REPORT_LEN;
        let unpadded = CONTROL_HEADER_LEN + content + header.mac_len as usize;
        let body_len = content + pad_to.saturating_sub(unpadded);
        emit_control(header, body_len, out, |w| {
            w.u32(seq);
            w.u16(interval_ms);
            w.u16(rate);
            w.u16(count);
            w.u16(digest);
            for rep in reports {
                w.u16(rep.neighbor.0);
                w.u16(rep.rate);
                w.u8(rep.ratio);
                w.u8(0);
            }
            w.zeros(body_len - content);
        })
    }
}

// ---------------------------------------------------------------- LSAs

/// One link of an LSA's origin, with its metric in both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LsaLink {
    /// The node at the other end of the link.
    pub neighbor: NodeId,
    /// Distinguishes parallel links between the same two nodes.
    pub link_id: u8,
    /// Cost from the origin to the neighbor (`u32::MAX`: unusable).
    pub metric_out: u32,
    /// Cost from the neighbor to the origin (`u32::MAX`: unusable).
    pub metric_in: u32,
}

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
}

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
        }
    }
}

const PREFIX_V4: u8 = 4;
const PREFIX_V6: u8 = 6;
const PREFIX_CLIENT_V4: u8 = 0x14;
const PREFIX_CLIENT_V6: u8 = 0x16;

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

    /// The address length of a kind, and the most its length byte may
    /// say (a client's length byte is its quality: 1-255).
    fn addr_len(kind: u8) -> Result<(usize, u8), WireError> {
        match kind {
            PREFIX_V4 => Ok((4, 32)),
            PREFIX_V6 => Ok((16, 128)),
            PREFIX_CLIENT_V4 => Ok((4, CLIENT_QUALITY_MAX)),
            PREFIX_CLIENT_V6 => Ok((16, CLIENT_QUALITY_MAX)),
            other => Err(WireError::InvalidField {
                field: "prefix kind",
                value: other as u32,
            }),
        }
    }

    fn encoded_len(&self) -> usize {
        2 + match self {
            Prefix::V4 { .. } | Prefix::Client4 { .. } => 4,
            Prefix::V6 { .. } | Prefix::Client6 { .. } => 16,
        }
    }

    fn read(r: &mut Reader<'_>) -> Result<Prefix, WireError> {
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
        let a = r.take(addr_len)?;
        Ok(match kind {
            PREFIX_V4 => Prefix::V4 {
                addr: [a[0], a[1], a[2], a[3]],
                len,
            },
            PREFIX_CLIENT_V4 => Prefix::Client4 {
                addr: [a[0], a[1], a[2], a[3]],
                quality: len,
            },
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

    fn write(&self, w: &mut Writer<'_>) {
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
        }
    }

    fn check(&self) -> Result<(), WireError> {
        let (len, max) = match self {
            Prefix::V4 { len, .. } => (*len, 32),
            Prefix::V6 { len, .. } => (*len, 128),
            Prefix::Client4 { quality, .. } | Prefix::Client6 { quality, .. } => {
                if *quality == 0 {
                    return Err(WireError::InvalidField {
                        field: "client quality",
                        value: 0,
                    });
                }
                (0, 0)
            }
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

/// A parsed link-state advertisement; links and prefixes decode on demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lsa<'a> {
    /// The node that issued the LSA and whose links it lists.
    pub origin: NodeId,
    /// Seconds since the origin issued this LSA, as of sending.
    pub age: u16,
    /// Origin's sequence number (serial-number arithmetic, RFC 1982).
    pub seq: u32,
    /// CRC-32 of the contents (everything but the age), checked when
    /// parsed: see [`LsaEntry::checksum`].
    pub checksum: u32,
    links: &'a [u8],
    prefixes: &'a [u8],
    prefix_count: usize,
}

/// Whether reading an LSA checks its checksum (a bundle checks each once,
/// when parsed, and trusts it when iterated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checksum {
    Verify,
    Trust,
}

/// The body of an LSA message: one or more LSAs back to back (a node
/// floods what it has waiting in one frame: on a radio, every broadcast
/// frame costs a preamble and a contention period). Every LSA in it is
/// validated when the bundle is parsed, so iterating cannot fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LsaBundle<'a> {
    body: &'a [u8],
    count: usize,
}

impl<'a> LsaBundle<'a> {
    /// Decodes an LSA message body and validates every LSA in it, checksums included.
    pub fn parse(msg: &ControlMessage<'a>) -> Result<Self, WireError> {
        expect_type(&msg.header, &[MessageType::Lsa])?;
        let mut r = Reader::new(msg.body);
        let mut count = 0;
        loop {
            Lsa::read(&mut r, Checksum::Verify)?;
            count += 1;
            if r.is_empty() {
                break;
            }
        }
        Ok(LsaBundle {
            body: msg.body,
            count,
        })
    }

    /// How many LSAs the message carries (at least one).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the bundle holds no LSA (never true of a parsed bundle).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The LSAs, in the order they were sent.
    pub fn iter(&self) -> impl Iterator<Item = Lsa<'a>> + 'a {
        let mut r = Reader::new(self.body);
        // Validated (checksums too) in `parse`, so `read` cannot fail here.
        (0..self.count).map_while(move |_| Lsa::read(&mut r, Checksum::Trust).ok())
    }
}

/// One LSA to write: see [`Lsa::emit_bundle`]. Its checksum is computed
/// once, when the LSA is made ([`LsaEntry::new`]), and travels with it:
/// flooding an LSA on costs no checksum, receiving one costs one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LsaEntry<'b> {
    /// The node that issued the LSA.
    pub origin: NodeId,
    /// Seconds since the origin issued the LSA (not covered by the checksum).
    pub age: u16,
    /// The origin's sequence number (serial-number arithmetic, RFC 1982).
    pub seq: u32,
    /// [`LsaEntry::checksum_of`] the other fields (a receiver refuses the
    /// LSA if it is not).
    pub checksum: u32,
    /// The origin's links, with their metrics.
    pub links: &'b [LsaLink],
    /// What the origin serves: IP prefixes and clients' MAC addresses.
    pub prefixes: &'b [Prefix],
}

impl<'b> LsaEntry<'b> {
    /// Bytes this LSA takes in a message body.
    pub fn encoded_len(&self) -> usize {
        LSA_FIXED_LEN
            + self.links.len() * LSA_LINK_LEN
            + self.prefixes.iter().map(Prefix::encoded_len).sum::<usize>()
    }

    /// An entry with its checksum computed.
    pub fn new(
        origin: NodeId,
        age: u16,
        seq: u32,
        links: &'b [LsaLink],
        prefixes: &'b [Prefix],
    ) -> Self {
        LsaEntry {
            origin,
            age,
            seq,
            checksum: Self::checksum_of(origin, seq, links, prefixes),
            links,
            prefixes,
        }
    }

    /// The checksum an LSA carries: CRC-32 (IEEE) over its encoding
    /// without the age and the checksum field (origin, sequence number,
    /// counts, links, prefixes), so that it does not change in flight and
    /// two LSAs with one number and other contents are told apart.
    pub fn checksum_of(origin: NodeId, seq: u32, links: &[LsaLink], prefixes: &[Prefix]) -> u32 {
        let mut head = [0u8; 6];
        head[..2].copy_from_slice(&origin.0.to_be_bytes());
        head[2..].copy_from_slice(&seq.to_be_bytes());
        let mut h = crc32fast::Hasher::new();
        h.update(&head);
        h.update(&(links.len() as u16).to_be_bytes());
        h.update(&(prefixes.len() as u16).to_be_bytes());
        let mut link = [0u8; LSA_LINK_LEN];
        for l in links {
            l.encode(&mut link);
            h.update(&link);
        }
        let mut prefix = [0u8; 18];
        for p in prefixes {
            let n = p.encoded_len();
            p.write(&mut Writer::new(&mut prefix[..n]));
            h.update(&prefix[..n]);
        }
        h.finalize()
    }
}

impl LsaLink {
    fn encode(&self, b: &mut [u8; LSA_LINK_LEN]) {
        use offset::lsa_link::*;
        b[NEIGHBOR..NEIGHBOR + 2].copy_from_slice(&self.neighbor.0.to_be_bytes());
        b[LINK_ID] = self.link_id;
        b[LINK_ID + 1] = 0;
        b[METRIC_OUT..METRIC_OUT + 4].copy_from_slice(&self.metric_out.to_be_bytes());
        b[METRIC_IN..METRIC_IN + 4].copy_from_slice(&self.metric_in.to_be_bytes());
    }
}

impl<'a> Lsa<'a> {
    /// Parses a message that carries exactly one LSA.
    pub fn parse(msg: &ControlMessage<'a>) -> Result<Self, WireError> {
        let bundle = LsaBundle::parse(msg)?;
        match (bundle.len(), bundle.iter().next()) {
            (1, Some(lsa)) => Ok(lsa),
            (n, _) => Err(WireError::InvalidField {
                field: "LSA count",
                value: n as u32,
            }),
        }
    }

    fn read(r: &mut Reader<'a>, checksum_check: Checksum) -> Result<Self, WireError> {
        let origin = NodeId(r.u16()?);
        let age = r.u16()?;
        let seq = r.u32()?;
        let checksum = r.u32()?;
        // Counts, links and prefixes: one run of bytes the checksum covers.
        let covered = r.clone();
        let link_count = r.u16()? as usize;
        let prefix_count = r.u16()? as usize;
        let links = r.take(link_count * LSA_LINK_LEN)?;
        // Prefixes are self-delimiting: read them to find where this LSA
        // ends, which validates every one.
        let start = r.clone();
        for _ in 0..prefix_count {
            Prefix::read(r)?;
        }
        let prefixes = start.between(r);
        if checksum_check == Checksum::Verify {
            // The same bytes, in the same order, as `LsaEntry::checksum_of`.
            let mut head = [0u8; 6];
            head[..2].copy_from_slice(&origin.0.to_be_bytes());
            head[2..].copy_from_slice(&seq.to_be_bytes());
            let mut h = crc32fast::Hasher::new();
            h.update(&head);
            h.update(covered.between(r));
            let computed = h.finalize();
            if computed != checksum {
                return Err(WireError::BadChecksum {
                    field: "LSA",
                    declared: checksum,
                    computed,
                });
            }
        }
        Ok(Lsa {
            origin,
            age,
            seq,
            checksum,
            links,
            prefixes,
            prefix_count,
        })
    }

    /// How many links the LSA lists.
    pub fn link_count(&self) -> usize {
        self.links.len() / LSA_LINK_LEN
    }

    /// How many prefixes the LSA lists.
    pub fn prefix_count(&self) -> usize {
        self.prefix_count
    }

    /// The origin's links, decoded in order.
    pub fn links(&self) -> impl Iterator<Item = LsaLink> + 'a {
        use offset::lsa_link::*;
        let u32_at =
            |b: &[u8], at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        self.links.chunks_exact(LSA_LINK_LEN).map(move |b| LsaLink {
            neighbor: NodeId(u16::from_be_bytes([b[NEIGHBOR], b[NEIGHBOR + 1]])),
            link_id: b[LINK_ID],
            metric_out: u32_at(b, METRIC_OUT),
            metric_in: u32_at(b, METRIC_IN),
        })
    }

    /// What the origin serves, decoded in order.
    pub fn prefixes(&self) -> impl Iterator<Item = Prefix> + 'a {
        let mut r = Reader::new(self.prefixes);
        // Validated in `parse`, so `read` cannot fail here.
        (0..self.prefix_count).map_while(move |_| Prefix::read(&mut r).ok())
    }

    /// Writes a message carrying one LSA.
    pub fn emit(
        header: &ControlHeader,
        origin: NodeId,
        age: u16,
        seq: u32,
        links: &[LsaLink],
        prefixes: &[Prefix],
        out: &mut [u8],
    ) -> Result<usize, WireError> {
        let entry = LsaEntry::new(origin, age, seq, links, prefixes);
        Self::emit_bundle(header, &[entry], out)
    }

    /// Bytes a message carrying `entries` takes, with a MAC of `mac_len`
    /// bytes (what [`Self::emit_bundle`] writes).
    pub fn bundle_len(entries: &[LsaEntry<'_>], mac_len: usize) -> usize {
        CONTROL_HEADER_LEN + entries.iter().map(LsaEntry::encoded_len).sum::<usize>() + mac_len
    }

    /// Writes a message carrying `entries` (at least one), in order.
    pub fn emit_bundle(
        header: &ControlHeader,
        entries: &[LsaEntry<'_>],
        out: &mut [u8],
    ) -> Result<usize, WireError> {
        expect_type(header, &[MessageType::Lsa])?;
        let too_large = |field, value| WireError::TooLarge { field, value };
        if entries.is_empty() {
            return Err(WireError::InvalidField {
                field: "LSA count",
                value: 0,
            });
        }
        for e in entries {
            u16::try_from(e.links.len()).map_err(|_| too_large("LSA links", e.links.len()))?;
            u16::try_from(e.prefixes.len())
                .map_err(|_| too_large("LSA prefixes", e.prefixes.len()))?;
            for p in e.prefixes {
                p.check()?;
            }
        }
        let body_len = entries.iter().map(LsaEntry::encoded_len).sum();
        emit_control(header, body_len, out, |w| {
            let mut link = [0u8; LSA_LINK_LEN];
            for e in entries {
                w.u16(e.origin.0);
                w.u16(e.age);
                w.u32(e.seq);
                w.u32(e.checksum);
                w.u16(e.links.len() as u16);
                w.u16(e.prefixes.len() as u16);
                for l in e.links {
                    l.encode(&mut link);
                    w.put(&link);
                }
                for p in e.prefixes {
                    p.write(w);
                }
            }
        })
    }
}

// ---------------------------------------------------------------- challenges

/// Which half of a challenge exchange (RFC 8967 section 4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChallengeKind {
    /// "Prove you are live": sent to a neighbor heard with a boot index
    /// we hold no counter for.
    Request = 1,
    /// The answer, echoing the request's nonce.
    Reply = 2,
}

/// A challenge request or reply (type 5): how a receiver tells a
/// neighbor that restarted (new boot index) from a replay of an old boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Challenge {
    /// Request or reply.
    pub kind: ChallengeKind,
    /// The neighbor asked (request) or the requester answered (reply);
    /// every other node on the link ignores it.
    pub target: NodeId,
    /// The requester's nonce, unique per request; a reply echoes it.
    pub nonce: [u8; 8],
}

impl Challenge {
    /// Decodes a challenge body: 12 bytes, kind 1 or 2.
    pub fn parse(msg: &ControlMessage<'_>) -> Result<Self, WireError> {
        expect_type(&msg.header, &[MessageType::Challenge])?;
        if msg.body.len() != offset::challenge::LEN {
            return Err(WireError::LengthMismatch {
                field: "challenge",
                declared: offset::challenge::LEN,
                available: msg.body.len(),
            });
        }
        let mut r = Reader::new(msg.body);
        let kind = match r.u8()? {
            1 => ChallengeKind::Request,
            2 => ChallengeKind::Reply,
            other => {
                return Err(WireError::InvalidField {
                    field: "challenge kind",
                    value: other as u32,
                })
            }
        };
        let _reserved = r.u8()?;
        let target = NodeId(r.u16()?);
        let mut nonce = [0u8; 8];
        nonce.copy_from_slice(r.take(8)?);
        Ok(Challenge {
            kind,
            target,
            nonce,
        })
    }

    /// Bytes a challenge takes with its header and a MAC of `mac_len` bytes.
    pub const fn encoded_len(mac_len: usize) -> usize {
        CONTROL_HEADER_LEN + offset::challenge::LEN + mac_len
    }

    /// Writes this challenge; returns the total length.
    pub fn emit(&self, header: &ControlHeader, out: &mut [u8]) -> Result<usize, WireError> {
        expect_type(header, &[MessageType::Challenge])?;
        emit_control(header, offset::challenge::LEN, out, |w| {
            w.u8(self.kind as u8);
            w.u8(0);
            w.u16(self.target.0);
            w.put(&self.nonce);
        })
    }
}

// ---------------------------------------------------------------- echo

/// Which half of an echo exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EchoKind {
    /// "Answer me": sent end to end to a router (`braid ctl ping`).
    Request = 1,
    /// The answer, echoing the request's sequence number and stamp.
    Reply = 2,
}

/// An echo request or reply (type 6): braid's ping through the mesh.
/// Carried end to end inside a data packet of the control class (as path
/// reports are), signed by its sender and checked by its receiver, so it
/// measures the paths user traffic takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Echo {
    /// Request or reply.
    pub kind: EchoKind,
    /// The router asked (request) or the requester answered (reply).
    pub target: NodeId,
    /// The requester's sequence number; a reply echoes it.
    pub seq: u32,
    /// The requester's stamp (its own clock), echoed by the reply.
    pub stamp: u64,
}

impl Echo {
    /// Decodes an echo body: 16 bytes, kind 1 or 2.
    pub fn parse(msg: &ControlMessage<'_>) -> Result<Self, WireError> {
        expect_type(&msg.header, &[MessageType::Echo])?;
        if msg.body.len() != offset::echo::LEN {
            return Err(WireError::LengthMismatch {
                field: "echo",
                declared: offset::echo::LEN,
                available: msg.body.len(),
            });
        }
        let mut r = Reader::new(msg.body);
        let kind = match r.u8()? {
            1 => EchoKind::Request,
            2 => EchoKind::Reply,
            other => {
                return Err(WireError::InvalidField {
                    field: "echo kind",
                    value: other as u32,
                })
            }
        };
        let _reserved = r.u8()?;
        let target = NodeId(r.u16()?);
        let seq = r.u32()?;
        let stamp =
            u64::from_be_bytes(r.take(8)?.try_into().map_err(|_| WireError::Truncated {
                need: offset::echo::LEN,
                have: msg.body.len(),
            })?);
        Ok(Echo {
            kind,
            target,
            seq,
            stamp,
        })
    }

    /// Bytes an echo takes with its header and a MAC of `mac_len` bytes.
    pub const fn encoded_len(mac_len: usize) -> usize {
        CONTROL_HEADER_LEN + offset::echo::LEN + mac_len
    }

    /// Writes this echo; returns the total length.
    pub fn emit(&self, header: &ControlHeader, out: &mut [u8]) -> Result<usize, WireError> {
        expect_type(header, &[MessageType::Echo])?;
        emit_control(header, offset::echo::LEN, out, |w| {
            w.u8(self.kind as u8);
            w.u8(0);
            w.u16(self.target.0);
            w.u32(self.seq);
            w.put(&self.stamp.to_be_bytes());
        })
    }
}

// ---------------------------------------------------------------- path reports

/// How many packets of a session arrived on one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PathCount {
    /// The path index (0..=15), as in the data header.
    pub path: u8,
    /// Packets (data and repair) received on this path since the session
    /// began, wrapping at 2^32.
    pub received: u32,
    /// The send order ([`crate::DataHeader::send_order`]) of the latest
    /// packet that arrived on this path, modulo 2^23 ([`LATEST_MASK`]);
    /// `None` when the egress does not know it. With it the ingress counts
    /// packets still in flight as in flight, not as lost.
    pub latest: Option<u32>,
    /// Milliseconds from the latest packet's arrival to this report
    /// (saturating at 65,535; 0 without `latest`). With the time it sent
    /// that packet, the ingress measures the path's delay.
    pub age_ms: u16,
}

/// The send orders a path report carries are taken modulo 2^23.
pub const LATEST_MASK: u32 = (1 << 23) - 1;
const LATEST_KNOWN: u32 = 1 << 23;

/// An egress's report to a session's ingress: what arrived on each path.
/// The ingress compares it with what it sent to learn each path's loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathReport<'a> {
    /// The session's ingress (the report's destination).
    pub ingress: NodeId,
    /// Traffic class of the session reported on.
    pub class: u8,
    counts: &'a [u8],
}

impl<'a> PathReport<'a> {
    /// Decodes a path report body; checks its length and every path index.
    pub fn parse(msg: &ControlMessage<'a>) -> Result<Self, WireError> {
        expect_type(&msg.header, &[MessageType::PathReport])?;
        let mut r = Reader::new(msg.body);
        let ingress = NodeId(r.u16()?);
        let class = r.u8()?;
        let count = r.u8()? as usize;
        let counts = r.take(count * PATH_COUNT_LEN)?;
        let rest = r.rest();
        if !rest.is_empty() {
            return Err(WireError::LengthMismatch {
                field: "path report",
                declared: count * PATH_COUNT_LEN,
                available: count * PATH_COUNT_LEN + rest.len(),
            });
        }
        for c in counts.chunks_exact(PATH_COUNT_LEN) {
            if c[0] > crate::NIBBLE_MAX {
                return Err(WireError::InvalidField {
                    field: "path index",
                    value: c[0] as u32,
                });
            }
        }
        Ok(PathReport {
            ingress,
            class,
            counts,
        })
    }

    /// The per-path counts, in the order sent.
    pub fn counts(&self) -> impl Iterator<Item = PathCount> + 'a {
        use offset::path_count::*;
        self.counts.chunks_exact(PATH_COUNT_LEN).map(|b| {
            let v = u32::from_be_bytes([0, b[LATEST], b[LATEST + 1], b[LATEST + 2]]);
            let latest = (v & LATEST_KNOWN != 0).then_some(v & LATEST_MASK);
            PathCount {
                path: b[PATH],
                latest,
                received: u32::from_be_bytes([
                    b[RECEIVED],
                    b[RECEIVED + 1],
                    b[RECEIVED + 2],
                    b[RECEIVED + 3],
                ]),
                // An age dates the latest arrival: without one, none.
                age_ms: if latest.is_some() {
                    u16::from_be_bytes([b[AGE], b[AGE + 1]])
                } else {
                    0
                },
            }
        })
    }

    /// Bytes a path report with `counts` entries takes, with its control
    /// header and a MAC of `mac_len` bytes.
    pub const fn encoded_len(counts: usize, mac_len: usize) -> usize {
        CONTROL_HEADER_LEN + PATH_REPORT_FIXED_LEN + counts * PATH_COUNT_LEN + mac_len
    }

    /// Writes a path report for `ingress`'s session of `class`: at most 16 counts, with
    /// path indices 0..=15. Returns the total length.
    pub fn emit(
        header: &ControlHeader,
        ingress: NodeId,
        class: u8,
        counts: &[PathCount],
        out: &mut [u8],
    ) -> Result<usize, WireError> {
        expect_type(header, &[MessageType::PathReport])?;
        if counts.len() > 16 {
            return Err(WireError::TooLarge {
                field: "path counts",
                value: counts.len(),
            });
        }
        if let Some(c) = counts.iter().find(|c| c.path > crate::NIBBLE_MAX) {
            return Err(WireError::InvalidField {
                field: "path index",
                value: c.path as u32,
            });
        }
        let body_len = PATH_REPORT_FIXED_LEN + counts.len() * PATH_COUNT_LEN;
        emit_control(header, body_len, out, |w| {
            w.u16(ingress.0);
            w.u8(class);
            w.u8(counts.len() as u8);
            for c in counts {
                w.u8(c.path);
                let latest = c.latest.map_or(0, |l| LATEST_KNOWN | (l & LATEST_MASK));
                w.put(&latest.to_be_bytes()[1..]);
                w.u32(c.received);
                w.u16(if c.latest.is_some() { c.age_ms } else { 0 });
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr(ty: MessageType) -> ControlHeader {
        ControlHeader {
            msg_type: ty,
            flags: ControlFlags::empty(),
            sender: NodeId(7),
            key_id: 0,
            mac_len: 0,
            boot_index: 0x0a0b_0c0d,
            counter: 42,
        }
    }

    #[test]
    fn lsa_known_bytes_with_checksum() {
        let links = [LsaLink {
            neighbor: NodeId(2),
            link_id: 1,
            metric_out: 1000,
            metric_in: 2000,
        }];
        let prefixes = [Prefix::V4 {
            addr: [198, 18, 0, 1],
            len: 32,
        }];
        let h = hdr(MessageType::Lsa);
        // Pre-filled with a pattern: a byte the emitter forgets shows.
        let mut buf = [0xa5u8; 64];
        let n = Lsa::emit(&h, NodeId(1), 5, 77, &links, &prefixes, &mut buf).unwrap();
        assert_eq!(n, CONTROL_HEADER_LEN + LSA_FIXED_LEN + LSA_LINK_LEN + 6);
        // CRC-32 of 00 01 | 00 00 00 4d | 00 01 00 01 | link | prefix, as
        // Python's zlib.crc32 computes it (an independent implementation).
        let sum = 0x6871_7e67u32;
        assert_eq!(LsaEntry::checksum_of(NodeId(1), 77, &links, &prefixes), sum);
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            &[0x13, 0x00, 0, 34, 0, 7, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 42][..],
            &[0, 1, 0, 5, 0, 0, 0, 77], &sum.to_be_bytes(), &[0, 1, 0, 1],
            &[0, 2, 1, 0, 0, 0, 0x03, 0xe8, 0, 0, 0x07, 0xd0],
            &[4, 32, 198, 18, 0, 1],
        ]
        .concat();
        assert_eq!(&buf[..n], &expected[..]);
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        assert_eq!(msg.header, h);
        let lsa = Lsa::parse(&msg).unwrap();
        assert_eq!(lsa.checksum, sum);
        // The age is not covered: it changes in flight.
        buf[CONTROL_HEADER_LEN + 3] = 9;
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        assert_eq!(Lsa::parse(&msg).unwrap().age, 9);
        // Anything else is: a flipped metric bit is refused.
        buf[CONTROL_HEADER_LEN + LSA_FIXED_LEN + 7] ^= 1;
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        let e = Lsa::parse(&msg).unwrap_err();
        assert!(matches!(e, WireError::BadChecksum { field: "LSA", .. }));
        assert_eq!(e.kind(), "bad_checksum");
    }

    /// Every byte of a probe and of a path report, emitted into buffers
    /// pre-filled with a pattern (a byte the emitter forgets shows), and
    /// the named offsets pointing at their fields.
    #[test]
    fn probe_and_path_report_known_bytes() {
        let mut buf = [0xa5u8; 64];
        let reports = [ProbeReport {
            neighbor: NodeId(3),
            rate: 110,
            ratio: 200,
        }];
        let n = Probe::emit(
            &hdr(MessageType::ProbeSmall),
            0x0102_0304,
            1000,
            0,
            0xbeef,
            &reports,
            0,
            &mut buf,
        )
        .unwrap();
        assert_eq!(n, Probe::encoded_len(1, 0, 0));
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            &[0x11, 0, 0, 18, 0, 7, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 42][..],
            &[1, 2, 3, 4, 0x03, 0xe8, 0, 0, 0, 1, 0xbe, 0xef],
            &[0, 3, 0, 110, 200, 0],
        ]
        .concat();
        assert_eq!(&buf[..n], &expected[..]);
        let body = &buf[offset::header::BODY..n];
        assert_eq!(body[offset::probe::DIGEST..][..2], [0xbe, 0xef]);
        let rep = &body[offset::probe::REPORTS..];
        assert_eq!(rep[offset::probe_report::RATIO], 200);

        let mut buf = [0xa5u8; 64];
        let counts = [PathCount {
            path: 2,
            received: 0x0a0b_0c0d,
            latest: Some(0x12_3456),
            age_ms: 321,
        }];
        let n = PathReport::emit(
            &hdr(MessageType::PathReport),
            NodeId(9),
            5,
            &counts,
            &mut buf,
        )
        .unwrap();
        assert_eq!(n, PathReport::encoded_len(1, 0));
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            &[0x14, 0, 0, 14, 0, 7, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 42][..],
            &[0, 9, 5, 1],
            &[2, 0x92, 0x34, 0x56, 0x0a, 0x0b, 0x0c, 0x0d, 0x01, 0x41],
        ]
        .concat();
        assert_eq!(&buf[..n], &expected[..]);
        let body = &buf[offset::header::BODY..n];
        assert_eq!(body[offset::path_report::CLASS], 5);
        let count = &body[offset::path_report::COUNTS..];
        assert_eq!(count[offset::path_count::PATH], 2);
        assert_eq!(count[offset::path_count::AGE..][..2], [0x01, 0x41]);
    }

    #[test]
    fn probe_round_trip_with_padding() {
        let reports = [
            ProbeReport {
                neighbor: NodeId(3),
                rate: 0,
                ratio: 255,
            },
            ProbeReport {
                neighbor: NodeId(3),
                rate: 110,
                ratio: 128,
            },
        ];
        let mut buf = [0u8; 1500];
        let n = Probe::emit(
            &hdr(MessageType::ProbeBig),
            9,
            1000,
            110,
            0xbeef,
            &reports,
            1400,
            &mut buf,
        )
        .unwrap();
        assert_eq!(n, 1400);
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        assert_eq!(msg.header, hdr(MessageType::ProbeBig));
        let p = Probe::parse(&msg).unwrap();
        assert_eq!(
            (p.kind, p.seq, p.interval_ms, p.rate, p.digest),
            (ProbeKind::Big, 9, 1000, 110, 0xbeef)
        );
        assert_eq!(p.reports().collect::<Vec<_>>(), reports);
        // Without padding the small probe is as short as it can be.
        let n = Probe::emit(
            &hdr(MessageType::ProbeSmall),
            1,
            1000,
            0,
            0,
            &[],
            0,
            &mut buf,
        )
        .unwrap();
        assert_eq!(n, CONTROL_HEADER_LEN + PROBE_FIXED_LEN);
        // Flags this version does not define are ignored on receipt.
        buf[1] = 0xfe;
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        assert_eq!(msg.header.flags, ControlFlags::empty());
    }

    #[test]
    fn lsa_round_trip() {
        let links = [LsaLink {
            neighbor: NodeId(2),
            link_id: 1,
            metric_out: 1000,
            metric_in: u32::MAX,
        }];
        let prefixes = [
            Prefix::V4 {
                addr: [198, 18, 0, 0],
                len: 24,
            },
            Prefix::Client4 {
                addr: [198, 18, 0, 9],
                quality: 200,
            },
            Prefix::Client6 {
                addr: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9],
                quality: 1,
            },
            Prefix::V6 {
                addr: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                len: 48,
            },
        ];
        let mut buf = [0u8; 256];
        let n = Lsa::emit(
            &hdr(MessageType::Lsa),
            NodeId(1),
            5,
            77,
            &links,
            &prefixes,
            &mut buf,
        )
        .unwrap();
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        let lsa = Lsa::parse(&msg).unwrap();
        assert_eq!((lsa.origin, lsa.age, lsa.seq), (NodeId(1), 5, 77));
        assert_eq!(lsa.links().collect::<Vec<_>>(), links);
        assert_eq!(lsa.prefixes().collect::<Vec<_>>(), prefixes);
    }

    #[test]
    fn lsa_bundles_carry_several_and_refuse_empty_or_trailing_bytes() {
        let links = [LsaLink {
            neighbor: NodeId(2),
            link_id: 0,
            metric_out: 1000,
            metric_in: 2000,
        }];
        let client = [Prefix::Client4 {
            addr: [198, 18, 0, 9],
            quality: 255,
        }];
        let entries = [
            LsaEntry::new(NodeId(1), 3, 10, &links, &[]),
            LsaEntry::new(NodeId(7), 0, 11, &[], &client),
        ];
        let mut buf = [0u8; 256];
        let n = Lsa::emit_bundle(&hdr(MessageType::Lsa), &entries, &mut buf).unwrap();
        assert_eq!(
            n,
            CONTROL_HEADER_LEN + entries.iter().map(LsaEntry::encoded_len).sum::<usize>()
        );
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        let bundle = LsaBundle::parse(&msg).unwrap();
        let got: Vec<_> = bundle.iter().collect();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].origin, got[0].age, got[0].seq), (NodeId(1), 3, 10));
        assert_eq!(got[0].links().collect::<Vec<_>>(), links);
        assert_eq!(got[1].prefixes().collect::<Vec<_>>(), client);
        assert!(
            matches!(
                Lsa::parse(&msg),
                Err(WireError::InvalidField {
                    field: "LSA count",
                    value: 2
                })
            ),
            "a single-LSA parse refuses a bundle"
        );
        assert!(Lsa::emit_bundle(&hdr(MessageType::Lsa), &[], &mut buf).is_err());
        // A body that ends inside a second LSA is refused as a whole.
        let one = Lsa::emit_bundle(&hdr(MessageType::Lsa), &entries[..1], &mut buf).unwrap();
        let mut longer = buf[..one + 3].to_vec();
        let body_len = (one + 3 - CONTROL_HEADER_LEN) as u16;
        longer[2..4].copy_from_slice(&body_len.to_be_bytes());
        let msg = ControlMessage::parse(&longer).unwrap();
        assert!(matches!(
            LsaBundle::parse(&msg),
            Err(WireError::Truncated { .. })
        ));
    }

    #[test]
    fn mac_trailer_is_reserved_and_covered_range_excludes_it() {
        let mut h = hdr(MessageType::ProbeSmall);
        h.key_id = 3;
        h.mac_len = 16;
        let mut buf = [0u8; 128];
        let n = Probe::emit(&h, 1, 500, 0, 0, &[], 0, &mut buf).unwrap();
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        assert_eq!(msg.mac.len(), 16);
        assert_eq!(msg.authenticated.len(), n - 16);
        assert_eq!(msg.header.key_id, 3);
    }

    #[test]
    fn bad_lengths_and_prefixes_are_errors() {
        let mut buf = [0u8; 128];
        let n = Lsa::emit(
            &hdr(MessageType::Lsa),
            NodeId(1),
            0,
            1,
            &[],
            &[Prefix::V4 {
                addr: [1, 2, 3, 4],
                len: 32,
            }],
            &mut buf,
        )
        .unwrap();
        assert!(matches!(
            ControlMessage::parse(&buf[..n + 1]),
            Err(WireError::LengthMismatch { .. })
        ));
        let mut bad = buf;
        bad[CONTROL_HEADER_LEN + LSA_FIXED_LEN + 1] = 33; // v4 prefix length
        let msg = ControlMessage::parse(&bad[..n]).unwrap();
        assert!(matches!(
            Lsa::parse(&msg),
            Err(WireError::InvalidField {
                field: "prefix length",
                ..
            })
        ));
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        assert!(matches!(
            Probe::parse(&msg),
            Err(WireError::WrongType { .. })
        ));
        assert!(Prefix::V4 {
            addr: [0; 4],
            len: 40
        }
        .check()
        .is_err());
    }

    #[test]
    fn path_report_round_trip_and_bad_index() {
        let counts = [
            PathCount {
                path: 0,
                received: 10,
                latest: None,
                age_ms: 0,
            },
            PathCount {
                path: 3,
                received: u32::MAX,
                latest: Some(LATEST_MASK),
                age_ms: u16::MAX,
            },
        ];
        let mut buf = [0u8; 128];
        let n = PathReport::emit(
            &hdr(MessageType::PathReport),
            NodeId(4),
            2,
            &counts,
            &mut buf,
        )
        .unwrap();
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        let r = PathReport::parse(&msg).unwrap();
        assert_eq!((r.ingress, r.class), (NodeId(4), 2));
        assert_eq!(r.counts().collect::<Vec<_>>(), counts);
        let mut bad = buf;
        bad[CONTROL_HEADER_LEN + PATH_REPORT_FIXED_LEN] = 16;
        let msg = ControlMessage::parse(&bad[..n]).unwrap();
        assert!(matches!(
            PathReport::parse(&msg),
            Err(WireError::InvalidField { .. })
        ));
        let too_many = [PathCount {
            path: 0,
            received: 0,
            latest: None,
            age_ms: 0,
        }; 17];
        assert!(PathReport::emit(
            &hdr(MessageType::PathReport),
            NodeId(4),
            2,
            &too_many,
            &mut buf
        )
        .is_err());
    }
}
