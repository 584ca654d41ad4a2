//! Session checks (type 7): how an egress makes sure a session's new
//! epoch, or a jump of its numbers, is the ingress's own before it takes
//! it. Carried end to end inside data packets of the control class (as
//! path reports and echoes are), signed by the sender, checked by the
//! receiver. The egress asks with a fresh nonce; the ingress answers with
//! the session's epoch and the number its next packet will carry, and the
//! nonce: a recorded proof answers no later request.

use super::header::{emit_control, expect_type, ControlHeader, ControlMessage, CONTROL_HEADER_LEN};
use super::offset;
use crate::{MessageType, NodeId, Reader, WireError};

/// Which half of a session check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionCheckKind {
    /// From an egress: "what are this session's epoch and number now?"
    Request = 1,
    /// From the ingress: the epoch and next number, with the request's nonce.
    Proof = 2,
}

/// A session check request or proof (type 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionCheck {
    /// Request or proof.
    pub kind: SessionCheckKind,
    /// The session's class (its ingress is the request's target, the
    /// proof's sender).
    pub class: u8,
    /// The ingress asked (request) or the egress answered (proof).
    pub target: NodeId,
    /// The session's epoch now (proof; 0 in a request).
    pub epoch: u32,
    /// The sequence number the session's next packet will carry (proof;
    /// 0 in a request).
    pub next_seq: u32,
    /// The egress's nonce, echoed by the proof.
    pub nonce: [u8; 8],
}

impl SessionCheck {
    /// Decodes a session check body: 20 bytes, kind 1 or 2.
    pub fn parse(msg: &ControlMessage<'_>) -> Result<Self, WireError> {
        expect_type(&msg.header, &[MessageType::SessionCheck])?;
        if msg.body.len() != offset::session_check::LEN {
            return Err(WireError::LengthMismatch {
                field: "session check",
                declared: offset::session_check::LEN,
                available: msg.body.len(),
            });
        }
        let mut r = Reader::new(msg.body);
        let kind = match r.u8()? {
            1 => SessionCheckKind::Request,
            2 => SessionCheckKind::Proof,
            other => {
                return Err(WireError::InvalidField {
                    field: "session check kind",
                    value: other as u32,
                })
            }
        };
        let class = r.u8()?;
        let target = NodeId(r.u16()?);
        let epoch = r.u32()?;
        let next_seq = r.u32()?;
        let nonce: [u8; 8] = r.take(8)?.try_into().map_err(|_| WireError::Truncated {
            need: offset::session_check::LEN,
            have: msg.body.len(),
        })?;
        Ok(SessionCheck {
            kind,
            class,
            target,
            epoch,
            next_seq,
            nonce,
        })
    }

    /// Bytes a session check takes with its header and a MAC of
    /// `mac_len` bytes.
    pub const fn encoded_len(mac_len: usize) -> usize {
        CONTROL_HEADER_LEN + offset::session_check::LEN + mac_len
    }

    /// Writes this session check; returns the total length.
    pub fn emit(&self, header: &ControlHeader, out: &mut [u8]) -> Result<usize, WireError> {
        expect_type(header, &[MessageType::SessionCheck])?;
        emit_control(header, offset::session_check::LEN, out, |w| {
            w.u8(self.kind as u8);
            w.u8(self.class);
            w.u16(self.target.0);
            w.u32(self.epoch);
            w.u32(self.next_seq);
            w.put(&self.nonce);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_reads_back_and_bad_kinds_and_lengths_are_refused() {
        let header = ControlHeader::new(MessageType::SessionCheck, NodeId(4));
        let c = SessionCheck {
            kind: SessionCheckKind::Proof,
            class: 46,
            target: NodeId(9),
            epoch: 0xdead_beef,
            next_seq: 77,
            nonce: [1, 2, 3, 4, 5, 6, 7, 8],
        };
        let mut buf = vec![0u8; SessionCheck::encoded_len(0)];
        let n = c.emit(&header, &mut buf).unwrap();
        assert_eq!(n, buf.len());
        let msg = ControlMessage::parse(&buf).unwrap();
        assert_eq!(SessionCheck::parse(&msg), Ok(c));
        let mut bad = buf.clone();
        bad[CONTROL_HEADER_LEN + offset::session_check::KIND] = 3;
        let msg = ControlMessage::parse(&bad).unwrap();
        assert!(matches!(
            SessionCheck::parse(&msg),
            Err(WireError::InvalidField { value: 3, .. })
        ));
        let echo = ControlHeader::new(MessageType::Echo, NodeId(4));
        assert!(c.emit(&echo, &mut buf).is_err());
    }
}
