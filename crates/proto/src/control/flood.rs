//! Flooding, the control plane's second half: which advertisements wait
//! to go (`want_flood`), when the next flooding message may leave, the
//! message itself (as many as fit, straight from the database, signed
//! origins and unsigned ones apart), and the repair of lost floods by the
//! probes' database digest.

use braid_wire::{ControlFlags, ControlHeader, NodeId, WireError};

use super::{fit, ControlPlane, NeighborState, FLUSH_AGE, MAX_MAC};
use crate::time::Instant;

impl ControlPlane {
    /// Queues every advertisement we hold for flooding (ours only once it
    /// has been sent: see `originate`).
    pub(super) fn flood_database(&mut self) {
        let origins: Vec<NodeId> = self.lsdb.records().map(|r| r.origin).collect();
        for origin in origins {
            if origin != self.id || self.flooded_own {
                self.want_flood(origin);
            }
        }
    }

    /// Our database's digest as probes carry it (16 bits).
    pub(super) fn digest(&self) -> u16 {
        let d = self.lsdb.digest();
        (d ^ d >> 16 ^ d >> 32 ^ d >> 48) as u16
    }

    /// A neighbor's probe said its database digest is `theirs`. Two probes
    /// in a row with the same two different digests (neither database
    /// changed in between, so no flood was on its way) mean one of us
    /// missed an advertisement: flood what we hold that was issued since
    /// our databases last agreed (everything, if they never did). The
    /// neighbor installs what is newer, and does the same for us. Only
    /// what changed goes again: on a radio link a whole database flooded
    /// at the base rate costs air time that traffic waits for.
    pub(super) fn compare_digest(&mut self, now: Instant, neighbor: NodeId, theirs: u16) {
        if self.of_other_area(neighbor) {
            // Its database is of its area, not ours.
            return;
        }
        let ours = self.digest();
        // Tracked as long as the link estimator tracks the neighbor (which
        // bounds how many it tracks): see `neighbor_up`.
        let Some(k) = self.neighbors.iter().position(|d| d.neighbor == neighbor) else {
            return;
        };
        let last = self.neighbors[k];
        let agreed_at = (theirs == ours).then_some(now).or(last.agreed_at);
        self.neighbors[k] = NeighborState {
            theirs,
            ours,
            agreed_at,
            ..last
        };
        // The first probe of a neighbor that just came up has nothing to
        // compare with (`theirs` and `ours` of the state are 0 then).
        let lasting = theirs != ours && last.theirs == theirs && last.ours == ours;
        let allowed = self
            .last_resync_at
            .is_none_or(|t| now.since(t) >= self.config.resync_interval);
        if lasting && allowed {
            self.last_resync_at = Some(now);
            self.counters.resyncs += 1;
            // Issued since the last agreement: no older than that, with a
            // margin of two seconds (ages are whole seconds).
            let max_age = agreed_at.map(|t| now.since(t).as_secs().saturating_add(2));
            let origins: Vec<NodeId> = self
                .lsdb
                .records()
                .map(|r| r.origin)
                .filter(|&o| {
                    max_age.is_none_or(|max| {
                        self.lsdb.age(o, now).is_some_and(|a| u64::from(a) <= max)
                    })
                })
                .collect();
            for origin in origins {
                // Our own advertisement goes only once it has been sent
                // (see `originate`).
                if origin != self.id || self.flooded_own {
                    self.want_flood(origin);
                }
            }
        }
    }

    pub(super) fn want_flood(&mut self, origin: NodeId) {
        self.pending_floods.insert(origin.0 as usize);
    }

    /// When the advertisements waiting to be flooded may go: at once
    /// after a quiet `flood_gap`, else when it has passed.
    pub(super) fn next_flood(&self) -> Option<Instant> {
        if self.pending_floods.is_empty() {
            return None;
        }
        Some(match self.last_flood_at {
            Some(t) => t + self.config.flood_gap,
            None => Instant::ZERO,
        })
    }

    /// Writes the waiting advertisements, lowest origin id first, as many
    /// as fit in `flood_bundle_bytes` (at least one), straight from the
    /// database (floods are most of a large network's control traffic).
    /// Returns 0 when none of them is still held (expired meanwhile).
    pub(super) fn emit_floods(
        &mut self,
        now: Instant,
        buf: &mut Vec<u8>,
    ) -> Result<usize, WireError> {
        let mut entries: Vec<braid_wire::LsaEntry<'_>> = Vec::new();
        let mut bytes = 0;
        let mut taken = Vec::new();
        // A message's advertisements all carry their origin's signature
        // (flagged), or none does: the first one decides; the others wait
        // for the next message.
        let mut signed = None;
        for i in self.pending_floods.ones() {
            let origin = NodeId(i as u16);
            // What we hold (ours with the flush age when leaving), else a
            // flush received and going on.
            let entry = match (self.lsdb.get(origin), self.flushing.get(&origin)) {
                (Some(r), _) if origin == self.id && self.leaving => r.entry(FLUSH_AGE),
                (Some(r), _) => r.entry(self.lsdb.age(origin, now).unwrap_or(0)),
                (None, Some(r)) => r.entry(FLUSH_AGE),
                (None, None) => {
                    taken.push(i);
                    continue;
                }
            };
            let has = entry.signature.is_some();
            if *signed.get_or_insert(has) != has {
                continue;
            }
            let len = entry.encoded_len();
            if !entries.is_empty() && bytes + len > self.config.flood_bundle_bytes {
                break;
            }
            bytes += len;
            entries.push(entry);
            taken.push(i);
        }
        let sent = entries.len() as u64;
        let result = if entries.is_empty() {
            Ok(0)
        } else {
            // Written out (not `next_header`): the entries borrow the
            // database.
            self.counter = self.counter.wrapping_add(1);
            let (key_id, mac_len) = self.auth.header_fields();
            let flags = if signed == Some(true) {
                ControlFlags::SIGNED_ORIGINS
            } else {
                ControlFlags::empty()
            };
            let header = ControlHeader {
                boot_index: self.boot_index,
                counter: self.counter,
                key_id,
                mac_len,
                flags,
                ..ControlHeader::new(braid_wire::MessageType::Lsa, self.id)
            };
            fit(buf, braid_wire::Lsa::bundle_len(&entries, MAX_MAC));
            braid_wire::Lsa::emit_bundle(&header, &entries, buf)
        };
        for i in taken {
            self.pending_floods.remove(i);
            self.flushing.remove(&NodeId(i as u16));
        }
        if result.as_ref().is_ok_and(|&n| n > 0) {
            self.counters.tx_lsas += sent;
            self.counters.tx_lsa_messages += 1;
        }
        result
    }
}
