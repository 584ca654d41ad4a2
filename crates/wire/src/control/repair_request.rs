//! Repair requests (type 8): an egress asking a session's ingress for
//! more repair of the sliding-window code, for packets that neither
//! arrived nor could be rebuilt from the repair sent with them. Carried
//! end to end inside data packets of the control class (as path reports
//! and session checks are), signed by the egress, checked by the ingress.
//! The ingress answers with `count` repair packets over data packets
//! `first..=end`, if it still keeps them; a request never changes a
//! table, and what it costs is bounded by the count and the span.

use super::header::{emit_control, expect_type, ControlHeader, ControlMessage, CONTROL_HEADER_LEN};
use super::offset;
use crate::{MessageType, NodeId, Reader, WireError};

/// Most data packets one request names (`end - first + 1`): the most one
/// repair packet of the sliding-window code covers.
pub const MAX_REQUEST_SPAN: u32 = 64;
/// Most repair packets one request asks for.
pub const MAX_REQUEST_COUNT: u8 = 15;

/// A repair request (type 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RepairRequest {
    /// The session's class.
    pub class: u8,
    /// Repair packets wanted (1-15).
    pub count: u8,
    /// The session's ingress (the request's destination).
    pub target: NodeId,
    /// The newest data packet the repair is to cover (its number).
    pub end: u32,
    /// The oldest data packet the repair is to cover: at most
    /// [`MAX_REQUEST_SPAN`] - 1 before `end` (wrapping).
    pub first: u32,
}

impl RepairRequest {
    /// Data packets the request names.
    pub fn span(&self) -> u32 {
        self.end.wrapping_sub(self.first).wrapping_add(1)
    }

    /// Decodes a repair request body: 12 bytes, a count of 1-15 and a
    /// span of 1-64.
    pub fn parse(msg: &ControlMessage<'_>) -> Result<Self, WireError> {
        expect_type(&msg.header, &[MessageType::RepairRequest])?;
        if msg.body.len() != offset::repair_request::LEN {
            return Err(WireError::LengthMismatch {
                field: "repair request",
                declared: offset::repair_request::LEN,
                available: msg.body.len(),
            });
        }
        let mut r = Reader::new(msg.body);
        let request = RepairRequest {
            class: r.u8()?,
            count: r.u8()?,
            target: NodeId(r.u16()?),
            end: r.u32()?,
            first: r.u32()?,
        };
        if request.count == 0 || request.count > MAX_REQUEST_COUNT {
            return Err(WireError::InvalidField {
                field: "repair request count",
                value: u32::from(request.count),
            });
        }
        if request.span() == 0 || request.span() > MAX_REQUEST_SPAN {
            return Err(WireError::InvalidField {
                field: "repair request span",
                value: request.span(),
            });
        }
        Ok(request)
    }

    /// Bytes a repair request takes with its header and a MAC of
    /// `mac_len` bytes.
    pub const fn encoded_len(mac_len: usize) -> usize {
        CONTROL_HEADER_LEN + offset::repair_request::LEN + mac_len
    }

    /// Writes this request; returns the total length.
    pub fn emit(&self, header: &ControlHeader, out: &mut [u8]) -> Result<usize, WireError> {
        expect_type(header, &[MessageType::RepairRequest])?;
        emit_control(header, offset::repair_request::LEN, out, |w| {
            w.u8(self.class);
            w.u8(self.count);
            w.u16(self.target.0);
            w.u32(self.end);
            w.u32(self.first);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(r: &RepairRequest) -> Vec<u8> {
        let header = ControlHeader::new(MessageType::RepairRequest, NodeId(4));
        let mut buf = vec![0u8; RepairRequest::encoded_len(0)];
        let n = r.emit(&header, &mut buf).unwrap();
        assert_eq!(n, buf.len());
        buf
    }

    #[test]
    fn a_request_reads_back_and_bad_counts_spans_and_lengths_are_refused() {
        let r = RepairRequest {
            class: 0,
            count: 3,
            target: NodeId(9),
            end: 5,
            first: u32::MAX - 20, // across the wrap: 27 packets
        };
        assert_eq!(r.span(), 27);
        let buf = written(&r);
        let msg = ControlMessage::parse(&buf).unwrap();
        assert_eq!(RepairRequest::parse(&msg), Ok(r));
        for (count, first, field) in [
            (0, 0, "repair request count"),
            (16, 0, "repair request count"),
            (1, 6, "repair request span"),
            (1, 5u32.wrapping_sub(64), "repair request span"),
        ] {
            let bad = written(&RepairRequest { count, first, ..r });
            let msg = ControlMessage::parse(&bad).unwrap();
            assert!(
                matches!(RepairRequest::parse(&msg), Err(WireError::InvalidField { field: f, .. }) if f == field),
                "count {count} first {first}"
            );
        }
        // The widest span is taken.
        let widest = RepairRequest {
            first: 5u32.wrapping_sub(63),
            ..r
        };
        let msg_buf = written(&widest);
        let msg = ControlMessage::parse(&msg_buf).unwrap();
        assert_eq!(RepairRequest::parse(&msg).unwrap().span(), 64);
        // A body one byte short is refused by its length.
        let mut short = buf.clone();
        short.pop();
        short[2..4].copy_from_slice(&11u16.to_be_bytes());
        let msg = ControlMessage::parse(&short).unwrap();
        assert!(matches!(
            RepairRequest::parse(&msg),
            Err(WireError::LengthMismatch { .. })
        ));
    }
}
