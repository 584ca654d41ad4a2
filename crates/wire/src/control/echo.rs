//! Echoes (type 6): braid's ping through the mesh (`braid ctl ping`),
//! carried end to end inside data packets of the control class.

use super::header::{emit_control, expect_type, ControlHeader, ControlMessage, CONTROL_HEADER_LEN};
use super::offset;
use crate::{MessageType, NodeId, Reader, WireError};

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
