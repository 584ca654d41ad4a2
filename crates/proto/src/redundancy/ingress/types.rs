//! What goes into and out of the ingress encoder (`mod.rs`): per-packet
//! facts and hints, the packets it emits, its settings and its counters.

use std::time::Duration;

use braid_wire::DataHeader;

use crate::redundancy::mode::MAX_PATHS;

/// Per-packet facts from the classifier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketMeta {
    /// Hash of the packet's 5-tuple; `stripe:pinned` keeps a flow on one path by it.
    pub flow_hash: u64,
    /// Urgent class: the header gets the urgent flag.
    pub urgent: bool,
    /// What the node knows of the moment it is sent.
    pub hints: SendHints,
}

/// What the node knows about the moment a packet is sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendHints {
    /// The sender saw congestion: the header gets the congestion flag.
    pub congestion: bool,
    /// Path slots (bit i: slot i) whose queue above the binding point is
    /// long while another's is not: stripe, and the coded modes' data,
    /// leave them out while so.
    pub backlogged: u16,
    /// The path slot the next spread data packet (stripe, or a coded
    /// mode's data shard) takes, if up and not backlogged
    /// (`equalise.rs`'s lead rule: it would otherwise arrive ahead of the
    /// session's others).
    pub lead: Option<u8>,
}

/// The bytes an outgoing packet carries after its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// The packet given to [`crate::redundancy::IngressSession::encode`], unchanged.
    Input,
    /// A parity/repair payload made here.
    Repair(Vec<u8>),
}

/// One packet to send: on path slot `path`, with `header`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The path slot (0..16) to send on.
    pub path: u8,
    /// Any path up may carry it instead (a striped packet that neither
    /// leads nor is pinned to its flow's path): with late binding, the
    /// first path with room takes it ([`crate::redundancy::IngressSession::on_transmit`]
    /// then moves its accounting there).
    pub free: bool,
    /// How long after now it leaves (an urgent packet's spaced copy,
    /// `urgent.rs`; zero for every other packet). Needs late binding: the
    /// node holds it above the binding point until then.
    pub after: Duration,
    /// The data header; the node attaches the slot's source route.
    pub header: DataHeader,
    /// What follows the header.
    pub payload: Payload,
}

/// Encoder settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IngressConfig {
    /// A group that has not filled within this time is closed and its
    /// repair packets sent. Data never waits for it.
    pub flush_after: Duration,
    /// The data header's hop limit. Source routes cannot loop, so it only
    /// has to let the longest route through: 64 hops (63 transit nodes).
    /// A path longer than that continues at a waypoint, and its packets
    /// leave with the largest hop limit, 255 (`node/routes.rs`).
    pub hop_limit: u8,
    /// Encoded packets wait above a binding point: the node reports when
    /// each leaves ([`crate::redundancy::IngressSession::on_transmit`]) or is dropped before
    /// ([`crate::redundancy::IngressSession::on_dropped`]), and the path estimates count it
    /// sent then. Off: sent when encoded.
    pub late_binding: bool,
    /// An urgent packet gets copies on the paths (`urgent.rs`) until the
    /// chance that every copy is lost is at most this, ...
    pub urgent_residual: f64,
    /// ... or until it has this many copies, the mode's own included
    /// (1: no copies; a session of mode `single` or `tree` gets none).
    pub urgent_copies: u8,
    /// Copies a session adds per second at most (a burst may take
    /// [`crate::redundancy::urgent::CopyBudget::BURST`] at once).
    pub urgent_copies_per_s: u32,
}

impl Default for IngressConfig {
    fn default() -> Self {
        IngressConfig {
            flush_after: Duration::from_millis(20),
            hop_limit: braid_wire::data::MAX_ROUTE_LEN as u8 + 1,
            late_binding: false,
            urgent_residual: 0.001,
            urgent_copies: 6,
            urgent_copies_per_s: 1000,
        }
    }
}

/// Counters of one ingress session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IngressCounters {
    /// Data packets encoded (not those dropped for want of a path).
    pub data_packets: u64,
    /// Copies of data packets sent, on all paths together.
    pub copies: u64,
    /// Parity/repair packets sent.
    pub repair_packets: u64,
    /// Groups closed before they filled (flush timer or mode change).
    pub groups_flushed: u64,
    /// Packets dropped because no path was up.
    pub no_path: u64,
    /// Times the mode in force changed (a new policy, or the adaptive mode's choice).
    pub mode_changes: u64,
    /// Copies of urgent packets sent beyond the mode's own (`urgent.rs`;
    /// counted in `copies` too).
    pub urgent_copies: u64,
    /// Urgent copies the plan wanted that the per-second bound refused.
    pub urgent_copies_refused: u64,
    /// Packets sent on each path slot, data copies and repair together.
    pub sent_per_path: [u64; MAX_PATHS],
    /// Packets lost on each path, from the egress's path reports.
    pub lost_per_path: [u64; MAX_PATHS],
    /// Path reports taken from the egress.
    pub path_reports: u64,
    /// Packets not encoded because the session is lent to another encoder
    /// (the kernel) and the numbers kept here ran out (see
    /// [`crate::redundancy::IngressSession::lend`]).
    pub lent_out: u64,
    /// Repair packets of the sliding-window code sent because the egress
    /// asked (counted in `repair_packets` too).
    #[serde(default)]
    pub repair_on_request: u64,
    /// Repair requests that got nothing: the packets they named had left
    /// the window, the session no longer sends that code, or the
    /// per-interval bound was reached.
    #[serde(default)]
    pub requests_unanswered: u64,
}
