//! Where each field of a control message starts: the header's from the
//! message's start, a body's from the body's start, an entry's from the
//! entry's start (docs/protocol.md draws the same).

/// The control header.
pub mod header {
    /// Version (high nibble) and message type (low nibble).
    pub const VERSION_TYPE: usize = 0;
    /// Flags (none defined).
    pub const FLAGS: usize = 1;
    /// Body length (16 bits).
    pub const BODY_LEN: usize = 2;
    /// The sending node's id (16 bits).
    pub const SENDER: usize = 4;
    /// Key id.
    pub const KEY_ID: usize = 6;
    /// MAC length.
    pub const MAC_LEN: usize = 7;
    /// Boot index (32 bits).
    pub const BOOT_INDEX: usize = 8;
    /// Packet counter (32 bits).
    pub const COUNTER: usize = 12;
    /// The body.
    pub const BODY: usize = 16;
}
/// A probe's body.
pub mod probe {
    /// Probe sequence number (32 bits).
    pub const SEQ: usize = 0;
    /// Mean interval, ms (16 bits).
    pub const INTERVAL: usize = 4;
    /// Rate, 100 kbit/s units (16 bits).
    pub const RATE: usize = 6;
    /// Number of reports (16 bits).
    pub const REPORT_COUNT: usize = 8;
    /// Database digest (16 bits).
    pub const DIGEST: usize = 10;
    /// The reports, then padding.
    pub const REPORTS: usize = 12;
}
/// One report in a probe.
pub mod probe_report {
    /// The neighbor reported on (16 bits).
    pub const NEIGHBOR: usize = 0;
    /// Its stream's rate (16 bits).
    pub const RATE: usize = 2;
    /// Delivery ratio, 0-255.
    pub const RATIO: usize = 4;
    /// Bytes per report (one reserved).
    pub const LEN: usize = 6;
}
/// One LSA in an LSA message's body.
pub mod lsa {
    /// Origin node id (16 bits).
    pub const ORIGIN: usize = 0;
    /// Age, seconds (16 bits).
    pub const AGE: usize = 2;
    /// Sequence number (32 bits).
    pub const SEQ: usize = 4;
    /// Checksum (CRC-32).
    pub const CHECKSUM: usize = 8;
    /// Number of links (16 bits).
    pub const LINK_COUNT: usize = 12;
    /// Number of prefixes (16 bits).
    pub const PREFIX_COUNT: usize = 14;
    /// The links, then the prefixes.
    pub const LINKS: usize = 16;
}
/// One link in an LSA.
pub mod lsa_link {
    /// The neighbor (16 bits).
    pub const NEIGHBOR: usize = 0;
    /// Link id.
    pub const LINK_ID: usize = 2;
    /// Metric from the origin to the neighbor (32 bits).
    pub const METRIC_OUT: usize = 4;
    /// Metric from the neighbor to the origin (32 bits).
    pub const METRIC_IN: usize = 8;
    /// Bytes per link.
    pub const LEN: usize = 12;
}
/// A challenge's body (type 5).
pub mod challenge {
    /// Request (1) or reply (2).
    pub const KIND: usize = 0;
    /// Reserved, sent as 0.
    pub const RESERVED: usize = 1;
    /// The node asked (request) or answered (reply).
    pub const TARGET: usize = 2;
    /// The requester's nonce, echoed by the reply.
    pub const NONCE: usize = 4;
    /// Body bytes.
    pub const LEN: usize = 12;
}
/// An echo's body (type 6).
pub mod echo {
    /// Request (1) or reply (2).
    pub const KIND: usize = 0;
    /// Reserved, sent as 0.
    pub const RESERVED: usize = 1;
    /// The node asked (request) or the requester (reply).
    pub const TARGET: usize = 2;
    /// The requester's sequence number, echoed by the reply.
    pub const SEQ: usize = 4;
    /// The requester's stamp (its clock, opaque to others), echoed.
    pub const STAMP: usize = 8;
    /// Body bytes.
    pub const LEN: usize = 16;
}
/// A session check's body (type 7).
pub mod session_check {
    /// Request (1) or proof (2).
    pub const KIND: usize = 0;
    /// The session's class.
    pub const CLASS: usize = 1;
    /// The ingress asked (request) or the egress answered (proof).
    pub const TARGET: usize = 2;
    /// The session's epoch (proof; 0 in a request).
    pub const EPOCH: usize = 4;
    /// The number the session's next packet will carry (proof; 0 in a
    /// request).
    pub const NEXT_SEQ: usize = 8;
    /// The egress's nonce, echoed by the proof.
    pub const NONCE: usize = 12;
    /// Body bytes.
    pub const LEN: usize = 20;
}
/// A repair request's body.
pub mod repair_request {
    /// The session's class.
    pub const CLASS: usize = 0;
    /// Repair packets wanted (1-15).
    pub const COUNT: usize = 1;
    /// The session's ingress (16 bits).
    pub const TARGET: usize = 2;
    /// The newest data packet to cover (32 bits).
    pub const END: usize = 4;
    /// The oldest data packet to cover (32 bits; at most 63 before END).
    pub const FIRST: usize = 8;
    /// Body bytes.
    pub const LEN: usize = 12;
}
/// A path report's body.
pub mod path_report {
    /// The session's ingress (16 bits).
    pub const INGRESS: usize = 0;
    /// The session's class.
    pub const CLASS: usize = 2;
    /// Number of path counts.
    pub const COUNT: usize = 3;
    /// The path counts.
    pub const COUNTS: usize = 4;
}
/// One path count in a path report.
pub mod path_count {
    /// The path index (0-15).
    pub const PATH: usize = 0;
    /// Bit 23 of these 24 bits set: bits 0-22 are the send order (see
    /// `DataHeader::send_order`) of the latest packet that arrived on
    /// the path, modulo 2^23. Clear: not known.
    pub const LATEST: usize = 1;
    /// Packets received on it (32 bits).
    pub const RECEIVED: usize = 4;
    /// Milliseconds from the latest arrival to the report (16 bits,
    /// saturating; 0 when the send order is not known).
    pub const AGE: usize = 8;
    /// Bytes per count.
    pub const LEN: usize = 10;
}
