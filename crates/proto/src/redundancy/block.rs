//! The block of coded groups an ingress session is filling, and what each
//! group keeps until its repair is made (`ingress.rs` fills and closes
//! them; `placement.rs` says where each group's shards go).

use braid_wire::MAX_DEPTH;

use super::coding::XorParity;
use super::mode::MAX_PATHS;
use super::path::PathState;
use super::placement::GroupPlan;
use crate::time::Instant;

/// The groups being filled: `depth` of them, in turn (data packet
/// `base + k` goes to group `k mod depth`, whose first data packet is
/// `base + (k mod depth)`). Without interleaving, one group.
#[derive(Debug, Clone)]
pub(super) struct OpenBlock {
    pub(super) base: u32,
    pub(super) depth: u8,
    pub(super) data: u8,
    pub(super) repair: u8,
    /// Data packets each group has so far.
    pub(super) counts: [u8; MAX_DEPTH as usize],
    /// Whether a group holds an urgent packet: its repair is urgent too
    /// (a lost VoIP packet is rebuilt from it, and must not wait behind
    /// bulk for it).
    pub(super) urgent: [bool; MAX_DEPTH as usize],
    /// Where each group's shards go (`placement.rs`), as indices into `up`.
    pub(super) plans: [GroupPlan; MAX_DEPTH as usize],
    /// The path slots up when the block opened.
    pub(super) up: [u8; MAX_PATHS],
    pub(super) opened_at: Instant,
}

impl OpenBlock {
    /// The slot shard `i` of group `j` goes on, if that path is still up.
    pub(super) fn planned_slot(&self, j: usize, i: usize, paths: &[PathState]) -> Option<usize> {
        let slot = self.up[self.plans[j].shard(i)] as usize;
        paths.get(slot).is_some_and(|p| p.up).then_some(slot)
    }

    pub(super) fn filled(&self) -> u32 {
        self.counts.iter().map(|&c| u32::from(c)).sum()
    }
}

/// What one open group keeps until its repair is made.
#[derive(Debug, Default)]
pub(super) struct GroupBuffer {
    /// Erasure: the data payloads.
    pub(super) held: Vec<Vec<u8>>,
    /// Parity: the running XOR.
    pub(super) xor: XorParity,
}
