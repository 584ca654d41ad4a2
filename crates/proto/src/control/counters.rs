//! What the control plane tells its caller beyond its messages: why it
//! refused a datagram, signs that another router uses this node's id,
//! and its counters.

use std::collections::BTreeMap;

use braid_wire::WireError;
use thiserror::Error;

use crate::auth::Refusal;

/// Why the control plane refused a datagram (each is counted in
/// `rx_errors` under [`Refused::kind`]; none changed any table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Refused {
    /// It does not parse, or is not a link-local control message.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// Authentication refused it.
    #[error(transparent)]
    Auth(#[from] Refusal),
    /// A message with our node id and another boot index, whose MAC
    /// checks (or authentication is off): another router uses our id.
    #[error("another router sends with this router's node id")]
    DuplicateId,
}

impl Refused {
    /// The counter's name.
    pub fn kind(&self) -> &'static str {
        match self {
            Refused::Wire(e) => e.kind(),
            Refused::Auth(r) => r.kind(),
            Refused::DuplicateId => "duplicate_id",
        }
    }
}

/// How a duplicate of our node id showed itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DuplicateSign {
    /// A neighbor sends control messages with our id (another boot index).
    NeighborWithOurId,
    /// Advertisements of our id that we did not issue keep arriving: we
    /// had to number past the network's copy again and again.
    ForeignAdvertisements,
}

impl DuplicateSign {
    /// What an operator reads.
    pub fn as_str(self) -> &'static str {
        match self {
            DuplicateSign::NeighborWithOurId => "a neighbor sends with this router's node id",
            DuplicateSign::ForeignAdvertisements => {
                "advertisements of this router's node id that it did not issue keep arriving"
            }
        }
    }
}

/// Counters of the control plane; the operator and tests read them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ControlCounters {
    /// Probes received from neighbors.
    pub rx_probes: u64,
    /// Advertisements received, one by one (a message may carry several).
    pub rx_lsas: u64,
    /// Our own messages heard back (ignored).
    pub rx_own: u64,
    /// Datagrams refused, by [`WireError::kind`].
    pub rx_errors: BTreeMap<String, u64>,
    /// Probes sent.
    pub tx_probes: u64,
    /// Advertisements flooded, and the messages that carried them.
    pub tx_lsas: u64,
    /// Flooding messages sent (each carries one or more advertisements).
    pub tx_lsa_messages: u64,
    /// Messages that did not fit the caller's buffer (dropped).
    pub tx_errors: u64,
    /// Own advertisements made, each with a new sequence number (flooded or kept local).
    pub lsas_originated: u64,
    /// Links the driver reported failed.
    pub links_failed: u64,
    /// Repair floods (what changed since a neighbor and we last agreed)
    /// after its digest stayed different from ours.
    pub resyncs: u64,
    /// Neighbors heard for the first time, and neighbors heard with a new
    /// boot index (restarted): each got a probe and our database.
    pub neighbors_new: u64,
    /// Neighbors heard with a new boot index (restarted).
    pub neighbors_restarted: u64,
    /// Advertisements older than ours that we answered with ours.
    pub stale_answered: u64,
    /// Times the network held a newer advertisement of ours than we did
    /// (from before a restart) and we numbered past it.
    pub own_seq_jumps: u64,
    /// Advertisements flushed (dropped before their maximum age because
    /// their origin left).
    pub flushes_received: u64,
    /// Challenge requests sent (authentication: a sender heard with a
    /// boot index not yet proven live).
    pub challenges_sent: u64,
    /// Challenge replies that proved a sender live.
    pub senders_verified: u64,
    /// Challenge messages dropped because too many waited.
    pub challenges_dropped: u64,
    /// Challenge messages not sent because a rate limit held (one
    /// request and one reply per sender per 300 ms, 50 a second in all).
    pub challenges_limited: u64,
    /// Challenges received whose MAC checked (for us or for another node
    /// on the link; a replayed request is not answered again).
    pub challenges_received: u64,
    /// Messages from a sender not proven live yet (a new neighbor, one
    /// that restarted, or a replay of an old boot), refused until it
    /// answers a challenge. Normal whenever a neighbor comes or comes
    /// back, so not among `rx_errors`.
    #[serde(default)]
    pub unverified: u64,
    /// Advertisements whose origin signature was checked (with a roster:
    /// only those that would change the database; each costs one Ed25519
    /// check).
    #[serde(default)]
    pub origin_checks: u64,
    /// Signs that another router uses our node id: messages from a
    /// neighbor with our id, and repeated foreign advertisements of ours.
    pub duplicate_id_signs: u64,
    /// Advertisements of another area's routers that are not its leader's
    /// summary: not kept, not flooded on (a border hears its neighbors').
    #[serde(default)]
    pub lsas_other_area: u64,
    /// While this router leads its area: members its summary could not
    /// list (past half of what an advertisement carries; unreachable
    /// from other areas). 0 normally.
    #[serde(default)]
    pub area_members_unlisted: u64,
}
