//! The control header every control message starts with, the message
//! split into header, body and MAC trailer, and the one emitter of that
//! frame (each message's module writes only its body).

use super::offset;
use crate::{first_byte, peek, MessageType, NodeId, Reader, WireError, Writer};

/// Length of the control header.
pub const CONTROL_HEADER_LEN: usize = offset::header::BODY;

/// Control header flags (byte 1). This version defines one
/// ([`ControlFlags::SIGNED_ORIGINS`]); the others are sent as 0 and
/// ignored on receipt, so a later version can use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ControlFlags(u8);

impl ControlFlags {
    /// The bits this version defines.
    const KNOWN: u8 = Self::SIGNED_ORIGINS.0;

    /// In an LSA message: every LSA is followed by its origin's Ed25519
    /// signature (64 bytes) over [`crate::LsaEntry::signed_content`].
    pub const SIGNED_ORIGINS: ControlFlags = ControlFlags(0x01);

    /// No flags set.
    pub const fn empty() -> Self {
        ControlFlags(0)
    }
    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: ControlFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// These flags and `other`'s.
    pub const fn with(self, other: ControlFlags) -> Self {
        ControlFlags(self.0 | other.0)
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
    /// Header flags ([`ControlFlags::SIGNED_ORIGINS`] in LSA messages).
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
pub(super) fn emit_control(
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

/// Refuses a header whose type is not one of `ok` (the first is the one
/// the error names).
pub(super) fn expect_type(header: &ControlHeader, ok: &[MessageType]) -> Result<(), WireError> {
    if ok.contains(&header.msg_type) {
        Ok(())
    } else {
        Err(WireError::WrongType {
            expected: ok[0] as u8,
            found: header.msg_type as u8,
        })
    }
}

/// A header for the tests: sender 7, boot index 0x0a0b0c0d, counter 42,
/// unauthenticated.
#[cfg(test)]
pub(super) fn test_header(ty: MessageType) -> ControlHeader {
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
