//! Challenges (type 5): how a receiver tells a neighbor that restarted
//! (a new boot index) from a replay of an old boot (RFC 8967 section 4.3).

use super::header::{emit_control, expect_type, ControlHeader, ControlMessage, CONTROL_HEADER_LEN};
use super::offset;
use crate::{MessageType, NodeId, Reader, WireError};

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
