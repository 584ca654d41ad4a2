//! braid's on-the-wire formats.
//!
//! This crate owns every byte braid puts on the wire: the data header that
//! wraps encapsulated traffic ([`data`]) and the control messages that measure
//! links and spread link state ([`control`]). Nothing else in braid reads or
//! writes packet bytes directly.
//!
//! Every message starts with one byte: the protocol version in the high four
//! bits and the message type in the low four. [`peek`] reads that byte, so a
//! node can reject (and count) a version it does not speak before it looks any
//! further. The byte diagrams live in `docs/protocol.md`.
//!
//! **Parsing** never allocates and never panics: any byte string yields a
//! value or a [`WireError`] (checked: version, type, every length and count
//! against the bytes present, every field's range, LSA checksums). Parsed
//! messages borrow from the input buffer and hand out iterators over their
//! entries.
//!
//! **Emitting** is the mirror contract: `emit` writes one whole message at
//! the front of the caller's buffer and returns its length. It first checks
//! that every field fits the format ([`WireError::TooLarge`],
//! [`WireError::InvalidField`]) and that the buffer is large enough
//! ([`WireError::BufferTooSmall`]); on an error nothing is written. On
//! success every byte of the message is written (none is left from the
//! buffer's old contents: the known-bytes tests pre-fill their buffers with
//! a pattern to catch one). It never allocates and never panics. Every
//! message has an `encoded_len` that gives its size up front, and the
//! position of each field is a named constant (`data::offset`,
//! `control::offset`): the eBPF programs and the docs' byte diagrams use
//! the same numbers.

#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod control;
pub mod data;
mod error;

pub use control::{
    split_mac, Challenge, ChallengeKind, ControlFlags, ControlHeader, ControlMessage, Echo,
    EchoKind, Lsa, LsaBundle, LsaEntry, LsaLink, PathCount, PathReport, Prefix, Probe, ProbeKind,
    ProbeReport, CLIENT_QUALITY_MAX, CONTROL_HEADER_LEN, RATE_SMALL, RATE_UNSPECIFIED,
};
pub use data::{
    DataFlags, DataHeader, DataPacket, DataView, Group, RedundancyMode, Route, DATA_HEADER_LEN,
    MAX_DEPTH,
};
pub use error::WireError;

/// The protocol version this crate speaks.
pub const VERSION: u8 = 1;

/// Largest value a 4-bit header field can carry.
pub(crate) const NIBBLE_MAX: u8 = 0x0f;

/// A braid node identifier. `0xffff` is reserved ([`NodeId::NONE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct NodeId(pub u16);

impl NodeId {
    /// Reserved: "no node" (for example the egress of a tree-mode packet
    /// addressed to whichever access points serve a client).
    pub const NONE: NodeId = NodeId(0xffff);
}

impl core::fmt::Display for NodeId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "n{}", self.0)
    }
}

/// The message types. The type lives in the low nibble of byte 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MessageType {
    /// Encapsulated user traffic ([`DataHeader`]).
    Data = 0,
    /// Small (ACK-sized) link probe ([`Probe`]).
    ProbeSmall = 1,
    /// Big (MTU-sized) link probe ([`Probe`]).
    ProbeBig = 2,
    /// Link-state advertisement ([`Lsa`]).
    Lsa = 3,
    /// An egress's per-path receive counts for one session ([`PathReport`]).
    PathReport = 4,
    /// A challenge request or reply (authentication's restart check).
    Challenge = 5,
    /// An echo request or reply, end to end ([`Echo`]: `braid ctl ping`).
    Echo = 6,
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

/// Any braid message, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    /// A data packet.
    Data(DataPacket<'a>),
    /// A small or big link probe, with the control message that carries it.
    Probe(ControlMessage<'a>, Probe<'a>),
    /// An LSA message: one or more LSAs.
    Lsa(ControlMessage<'a>, LsaBundle<'a>),
    /// An egress's per-path receive counts for one session.
    PathReport(ControlMessage<'a>, PathReport<'a>),
    /// A challenge request or reply.
    Challenge(ControlMessage<'a>, Challenge),
    /// An echo request or reply.
    Echo(ControlMessage<'a>, Echo),
}

/// Parses whatever message `buf` holds. The one entry point for bytes that
/// arrive from the network (and the fuzz target's).
pub fn parse_any(buf: &[u8]) -> Result<Message<'_>, WireError> {
    match peek(buf)? {
        MessageType::Data => Ok(Message::Data(DataHeader::parse(buf)?)),
        MessageType::ProbeSmall | MessageType::ProbeBig => {
            let msg = ControlMessage::parse(buf)?;
            Ok(Message::Probe(msg, Probe::parse(&msg)?))
        }
        MessageType::Lsa => {
            let msg = ControlMessage::parse(buf)?;
            Ok(Message::Lsa(msg, LsaBundle::parse(&msg)?))
        }
        MessageType::PathReport => {
            let msg = ControlMessage::parse(buf)?;
            Ok(Message::PathReport(msg, PathReport::parse(&msg)?))
        }
        MessageType::Challenge => {
            let msg = ControlMessage::parse(buf)?;
            Ok(Message::Challenge(msg, Challenge::parse(&msg)?))
        }
        MessageType::Echo => {
            let msg = ControlMessage::parse(buf)?;
            Ok(Message::Echo(msg, Echo::parse(&msg)?))
        }
    }
}

pub(crate) fn first_byte(ty: MessageType) -> u8 {
    (VERSION << 4) | ty as u8
}

/// Bounds-checked big-endian reads over a byte slice.
#[derive(Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(WireError::Truncated {
                need: self.pos.saturating_add(n),
                have: self.buf.len(),
            }),
        }
    }

    pub(crate) fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16, WireError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos == self.buf.len()
    }

    /// What `later` (a clone of this reader, moved on) read since.
    pub(crate) fn between(&self, later: &Reader<'a>) -> &'a [u8] {
        &self.buf[self.pos..later.pos]
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }
}

/// Bounds-checked big-endian writes into a caller's buffer.
pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Writer { buf, pos: 0 }
    }

    /// Fails up front if `total` bytes will not fit, so that emitters write
    /// all or nothing.
    pub(crate) fn reserve(&self, total: usize) -> Result<(), WireError> {
        if total > self.buf.len() {
            Err(WireError::BufferTooSmall {
                need: total,
                have: self.buf.len(),
            })
        } else {
            Ok(())
        }
    }

    pub(crate) fn put(&mut self, bytes: &[u8]) {
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }

    pub(crate) fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }

    pub(crate) fn u16(&mut self, v: u16) {
        self.put(&v.to_be_bytes());
    }

    pub(crate) fn u32(&mut self, v: u32) {
        self.put(&v.to_be_bytes());
    }

    pub(crate) fn zeros(&mut self, n: usize) {
        self.buf[self.pos..self.pos + n].fill(0);
        self.pos += n;
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }
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
        assert_eq!(peek(&[0x14]), Ok(MessageType::PathReport));
        assert_eq!(peek(&[0x10]), Ok(MessageType::Data));
        assert_eq!(peek(&[0x13]), Ok(MessageType::Lsa));
    }
}
