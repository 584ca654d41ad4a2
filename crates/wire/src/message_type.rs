//! The first byte of every braid message: the protocol version in the
//! high four bits, the message type in the low four. [`peek`] reads it, so
//! a node can reject (and count) a version it does not speak before it
//! looks any further.

use crate::WireError;

/// The protocol version this crate speaks.
pub const VERSION: u8 = 1;

/// Largest value a 4-bit header field can carry.
pub(crate) const NIBBLE_MAX: u8 = 0x0f;

/// The message types. The type lives in the low nibble of byte 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MessageType {
    /// Encapsulated user traffic ([`DataHeader`](crate::DataHeader)).
    Data = 0,
    /// Small (ACK-sized) link probe ([`Probe`](crate::Probe)).
    ProbeSmall = 1,
    /// Big (MTU-sized) link probe ([`Probe`](crate::Probe)).
    ProbeBig = 2,
    /// Link-state advertisement ([`Lsa`](crate::Lsa)).
    Lsa = 3,
    /// An egress's per-path receive counts for one session ([`PathReport`](crate::PathReport)).
    PathReport = 4,
    /// A challenge request or reply (authentication's restart check).
    Challenge = 5,
    /// An echo request or reply, end to end ([`Echo`](crate::Echo): `braid ctl ping`).
    Echo = 6,
    /// A session check request or proof, end to end
    /// ([`SessionCheck`](crate::SessionCheck): an egress making sure of a
    /// new epoch or a jump).
    SessionCheck = 7,
    /// An egress asking a session's ingress for more repair, end to end
    /// ([`RepairRequest`](crate::RepairRequest): the sliding-window code).
    RepairRequest = 8,
}

impl MessageType {
    fn from_nibble(v: u8) -> Result<Self, WireError> {
        Ok(match v {
            0 => MessageType::Data,
            1 => MessageType::ProbeSmall,
            2 => MessageType::ProbeBig,
            3 => MessageType::Lsa,
            4 => MessageType::PathReport,
            5 => MessageType::Challenge,
            6 => MessageType::Echo,
            7 => MessageType::SessionCheck,
            8 => MessageType::RepairRequest,
            other => return Err(WireError::UnknownType(other)),
        })
    }

    /// Whether this is a control-plane message (everything but data).
    pub fn is_control(self) -> bool {
        !matches!(self, MessageType::Data)
    }
}

/// Reads the first byte of a message: checks the version and returns the type.
pub fn peek(buf: &[u8]) -> Result<MessageType, WireError> {
    let first = *buf
        .first()
        .ok_or(WireError::Truncated { need: 1, have: 0 })?;
    let version = first >> 4;
    if version != VERSION {
        return Err(WireError::UnsupportedVersion(version));
    }
    MessageType::from_nibble(first & NIBBLE_MAX)
}

/// The first byte of a message of type `ty` in this version.
pub(crate) fn first_byte(ty: MessageType) -> u8 {
    (VERSION << 4) | ty as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peek_rejects_other_versions_and_unknown_types() {
        assert_eq!(peek(&[]), Err(WireError::Truncated { need: 1, have: 0 }));
        assert_eq!(peek(&[0x20]), Err(WireError::UnsupportedVersion(2)));
        assert_eq!(peek(&[0x00]), Err(WireError::UnsupportedVersion(0)));
        assert_eq!(peek(&[0x1f]), Err(WireError::UnknownType(15)));
        assert_eq!(peek(&[0x19]), Err(WireError::UnknownType(9)));
        assert_eq!(peek(&[0x18]), Ok(MessageType::RepairRequest));
        assert_eq!(peek(&[0x14]), Ok(MessageType::PathReport));
        assert_eq!(peek(&[0x10]), Ok(MessageType::Data));
        assert_eq!(peek(&[0x13]), Ok(MessageType::Lsa));
    }
}
