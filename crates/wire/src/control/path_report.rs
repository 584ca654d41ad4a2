//! Path reports (type 4): an egress's per-path receive counts for one
//! session, which tell its ingress each path's loss and delay.

use super::header::{emit_control, expect_type, ControlHeader, ControlMessage, CONTROL_HEADER_LEN};
use super::offset;
use crate::{MessageType, NodeId, Reader, WireError};

const PATH_REPORT_FIXED_LEN: usize = offset::path_report::COUNTS;
const PATH_COUNT_LEN: usize = offset::path_count::LEN;

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
    use crate::control::header::test_header as hdr;

    /// Every byte of a path report, emitted into a buffer pre-filled with
    /// a pattern (a byte the emitter forgets shows), and the named offsets
    /// pointing at their fields.
    #[test]
    fn path_report_known_bytes() {
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
