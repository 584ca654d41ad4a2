//! Link-state advertisements (type 3): an LSA message carries one or more
//! LSAs back to back, each with its origin's links (metrics both ways)
//! and what it serves ([`Prefix`]), checksummed (CRC-32) without its age,
//! and, in a message flagged [`ControlFlags::SIGNED_ORIGINS`], followed by
//! its origin's Ed25519 signature (64 bytes) over the same contents.

use super::header::{
    emit_control, expect_type, ControlFlags, ControlHeader, ControlMessage, CONTROL_HEADER_LEN,
};
use super::offset;
use super::prefix::Prefix;
use crate::{MessageType, NodeId, Reader, WireError, Writer};

const LSA_FIXED_LEN: usize = offset::lsa::LINKS;
const LSA_LINK_LEN: usize = offset::lsa_link::LEN;

/// Bytes of an origin's signature (Ed25519).
pub const ORIGIN_SIGNATURE_LEN: usize = 64;

/// What an origin signs before its LSA's contents (so that no other
/// message braid signs reads as an LSA).
const SIGNED_PREFIX: &[u8] = b"braid LSA v1\0";

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
    /// The counts, links and prefixes as sent: what the checksum and the
    /// signature cover after the origin and number.
    covered: &'a [u8],
    /// The origin's signature, in a message flagged
    /// [`ControlFlags::SIGNED_ORIGINS`].
    pub signature: Option<&'a [u8; ORIGIN_SIGNATURE_LEN]>,
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
    signed: bool,
}

impl<'a> LsaBundle<'a> {
    /// Decodes an LSA message body and validates every LSA in it, checksums included.
    pub fn parse(msg: &ControlMessage<'a>) -> Result<Self, WireError> {
        expect_type(&msg.header, &[MessageType::Lsa])?;
        let signed = msg.header.flags.contains(ControlFlags::SIGNED_ORIGINS);
        let mut r = Reader::new(msg.body);
        let mut count = 0;
        loop {
            Lsa::read(&mut r, Checksum::Verify, signed)?;
            count += 1;
            if r.is_empty() {
                break;
            }
        }
        Ok(LsaBundle {
            body: msg.body,
            count,
            signed,
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
        let signed = self.signed;
        // Validated (checksums too) in `parse`, so `read` cannot fail here.
        (0..self.count).map_while(move |_| Lsa::read(&mut r, Checksum::Trust, signed).ok())
    }

    /// Whether every LSA carries its origin's signature.
    pub fn is_signed(&self) -> bool {
        self.signed
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
    /// The origin's signature over [`Self::signed_content`], if it has
    /// one (written only in a message flagged
    /// [`ControlFlags::SIGNED_ORIGINS`], which every entry must have).
    pub signature: Option<&'b [u8; ORIGIN_SIGNATURE_LEN]>,
}

impl<'b> LsaEntry<'b> {
    /// Bytes this LSA takes in a message body (with its signature in a
    /// signed message).
    pub fn encoded_len(&self) -> usize {
        LSA_FIXED_LEN
            + self.links.len() * LSA_LINK_LEN
            + self.prefixes.iter().map(Prefix::encoded_len).sum::<usize>()
            + self.signature.map_or(0, |_| ORIGIN_SIGNATURE_LEN)
    }

    /// What an origin signs: a fixed prefix, then the bytes the checksum
    /// covers (origin, sequence number, counts, links, prefixes). Not the
    /// age, which changes in flight.
    pub fn signed_content(
        origin: NodeId,
        seq: u32,
        links: &[LsaLink],
        prefixes: &[Prefix],
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            SIGNED_PREFIX.len() + 10 + links.len() * LSA_LINK_LEN + prefixes.len() * 18,
        );
        out.extend_from_slice(SIGNED_PREFIX);
        out.extend_from_slice(&origin.0.to_be_bytes());
        out.extend_from_slice(&seq.to_be_bytes());
        out.extend_from_slice(&(links.len() as u16).to_be_bytes());
        out.extend_from_slice(&(prefixes.len() as u16).to_be_bytes());
        let mut link = [0u8; LSA_LINK_LEN];
        for l in links {
            l.encode(&mut link);
            out.extend_from_slice(&link);
        }
        let mut prefix = [0u8; super::prefix::MAX_ENTRY_LEN];
        for p in prefixes {
            let n = p.encoded_len();
            p.write(&mut Writer::new(&mut prefix[..n]));
            out.extend_from_slice(&prefix[..n]);
        }
        out
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
            signature: None,
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
        let mut prefix = [0u8; super::prefix::MAX_ENTRY_LEN];
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

    fn read(r: &mut Reader<'a>, checksum_check: Checksum, signed: bool) -> Result<Self, WireError> {
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
            Prefix::skip(r)?;
        }
        let prefixes = start.between(r);
        let covered_bytes = covered.between(r);
        if checksum_check == Checksum::Verify {
            // The same bytes, in the same order, as `LsaEntry::checksum_of`.
            let mut head = [0u8; 6];
            head[..2].copy_from_slice(&origin.0.to_be_bytes());
            head[2..].copy_from_slice(&seq.to_be_bytes());
            let mut h = crc32fast::Hasher::new();
            h.update(&head);
            h.update(covered_bytes);
            let computed = h.finalize();
            if computed != checksum {
                return Err(WireError::BadChecksum {
                    field: "LSA",
                    declared: checksum,
                    computed,
                });
            }
        }
        let signature = if signed {
            let b = r.take(ORIGIN_SIGNATURE_LEN)?;
            Some(b.try_into().map_err(|_| WireError::Truncated {
                need: ORIGIN_SIGNATURE_LEN,
                have: b.len(),
            })?)
        } else {
            None
        };
        Ok(Lsa {
            origin,
            age,
            seq,
            checksum,
            links,
            prefixes,
            prefix_count,
            covered: covered_bytes,
            signature,
        })
    }

    /// What its origin signed ([`LsaEntry::signed_content`]), from the
    /// bytes as they arrived.
    pub fn signed_content(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(SIGNED_PREFIX.len() + 6 + self.covered.len());
        out.extend_from_slice(SIGNED_PREFIX);
        out.extend_from_slice(&self.origin.0.to_be_bytes());
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(self.covered);
        out
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

    /// Writes a message carrying `entries` (at least one), in order; in a
    /// message flagged [`ControlFlags::SIGNED_ORIGINS`] every entry must
    /// carry its signature (and only there is it written).
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
        let signed = header.flags.contains(ControlFlags::SIGNED_ORIGINS);
        if signed && entries.iter().any(|e| e.signature.is_none()) {
            return Err(WireError::InvalidField {
                field: "LSA signature",
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
        let body_len = entries
            .iter()
            .map(|e| {
                e.encoded_len() - e.signature.map_or(0, |_| ORIGIN_SIGNATURE_LEN)
                    + if signed { ORIGIN_SIGNATURE_LEN } else { 0 }
            })
            .sum();
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
                if let (true, Some(sig)) = (signed, e.signature) {
                    w.put(sig);
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::header::test_header as hdr;
    use crate::control::Probe;

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
}
