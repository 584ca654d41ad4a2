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
//! `control::offset`): the docs' byte diagrams use the same numbers, and
//! the eBPF programs take them from a C header that `braid-bpf`'s build
//! script writes from these constants (`braid_wire.h`).
//!
//! | module | owns |
//! |---|---|
//! | [`data`] | the data header, its source route and the forwarding step |
//! | [`control`] | the control header and the control messages, a module each |
//! | `message_type` | the first byte: version and message type, [`peek`] |
//! | `message` | [`Message`] and [`parse_any`], the entry point for received bytes |
//! | `node_id` | [`NodeId`] |
//! | `codec` | bounds-checked big-endian reads and writes (crate-internal) |
//! | `error` | [`WireError`] |
//!
//! This file only declares the modules and re-exports what users name
//! (`braid_wire::NodeId`, `braid_wire::Lsa`, ...).

#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod codec;
pub mod control;
pub mod data;
mod error;
mod message;
mod message_type;
mod node_id;

pub use control::{
    split_mac, Challenge, ChallengeKind, ControlFlags, ControlHeader, ControlMessage, Echo,
    EchoKind, Lsa, LsaBundle, LsaEntry, LsaLink, PathCount, PathReport, Prefix, Probe, ProbeKind,
    ProbeReport, RepairRequest, SessionCheck, SessionCheckKind, CLIENT_QUALITY_MAX,
    CONTROL_HEADER_LEN, DEFAULT_PREFERENCE, MAX_REQUEST_COUNT, MAX_REQUEST_SPAN,
    ORIGIN_SIGNATURE_LEN, RATE_SMALL, RATE_UNSPECIFIED,
};
pub use data::{
    DataFlags, DataHeader, DataPacket, DataView, Group, RedundancyMode, Route, DATA_HEADER_LEN,
    MAX_DEPTH,
};
pub use error::WireError;
pub use message::{parse_any, Message};
pub use message_type::{peek, MessageType, VERSION};
pub use node_id::NodeId;

// The crate's shared helpers, named from the root by `data` and `control`.
pub(crate) use codec::{Reader, Writer};
pub(crate) use message_type::{first_byte, NIBBLE_MAX};
