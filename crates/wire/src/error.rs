//! The one error type of the wire crate.

/// Why a byte string is not a valid braid message, or why a message does not
/// fit the buffer it is emitted into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The input ended before the message did.
    #[error("message truncated: need {need} bytes, have {have}")]
    Truncated {
        /// Bytes needed to read up to the end of the field that did not fit.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// The version nibble names a protocol version this node does not speak.
    #[error("unsupported protocol version {0}")]
    UnsupportedVersion(u8),
    /// The type nibble names no message type.
    #[error("unknown message type {0}")]
    UnknownType(u8),
    /// The message is of another type than the parser that was called.
    #[error("expected message type {expected}, found {found}")]
    WrongType {
        /// Type code the parser takes (the first, if it takes several).
        expected: u8,
        /// Type code the message has.
        found: u8,
    },
    /// A field holds a value outside its range.
    #[error("invalid {field}: {value}")]
    InvalidField {
        /// Which field.
        field: &'static str,
        /// The offending value.
        value: u32,
    },
    /// A declared length or count disagrees with the bytes present.
    #[error("{field} declares {declared} bytes but {available} are present")]
    LengthMismatch {
        /// What declares the length.
        field: &'static str,
        /// Bytes declared.
        declared: usize,
        /// Bytes present.
        available: usize,
    },
    /// A checksum does not match the bytes it covers (corrupted in
    /// flight, or made by a broken sender).
    #[error("{field} checksum is {declared:#010x} but the contents give {computed:#010x}")]
    BadChecksum {
        /// What the checksum covers.
        field: &'static str,
        /// The checksum the message carries.
        declared: u32,
        /// The checksum of the bytes received.
        computed: u32,
    },
    /// The output buffer is too small for the message.
    #[error("output buffer too small: need {need} bytes, have {have}")]
    BufferTooSmall {
        /// Bytes the message takes.
        need: usize,
        /// Bytes the buffer holds.
        have: usize,
    },
    /// The message to emit does not fit the format (too many entries, ...).
    #[error("cannot encode {field}: {value} exceeds the format's limit")]
    TooLarge {
        /// What does not fit.
        field: &'static str,
        /// How many entries (or bytes) it has.
        value: usize,
    },
}

impl WireError {
    /// A short stable name for counters (`braid_wire_errors_total{kind=...}`).
    pub fn kind(&self) -> &'static str {
        match self {
            WireError::Truncated { .. } => "truncated",
            WireError::UnsupportedVersion(_) => "unsupported_version",
            WireError::UnknownType(_) => "unknown_type",
            WireError::WrongType { .. } => "wrong_type",
            WireError::InvalidField { .. } => "invalid_field",
            WireError::LengthMismatch { .. } => "length_mismatch",
            WireError::BadChecksum { .. } => "bad_checksum",
            WireError::BufferTooSmall { .. } => "buffer_too_small",
            WireError::TooLarge { .. } => "too_large",
        }
    }
}
