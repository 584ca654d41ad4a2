//! Delay equalisation at the ingress: a bulk datagram bound for a path
//! faster than the slowest its session uses waits here first, for the
//! difference of the paths' delays (`redundancy/equalise.rs` says how
//! long), and only then goes above the binding point. All of a session's
//! packets then arrive about as late as the slowest path's, so TCP behind
//! the egress sees one round trip, not a mix of the fast path's and the
//! slow one's (a mix makes CUBIC's HyStart leave slow start early and
//! BBR take the fast path's round trip for the pipe's).
//!
//! An urgent packet's spaced copies (`redundancy/urgent.rs`: a copy on
//! a path that carries one already may leave 10-20 ms after it, apart
//! from its bursts of loss) wait here too, in queues of their own.
//!
//! [`HoldLine`] keeps one first-in first-out queue per (egress, path,
//! urgent): the hold of one path changes slowly, so a later datagram is
//! never ready before an earlier one of the same queue (its ready time is
//! raised to the one before it if the hold shrank); urgent copies and
//! bulk never wait for each other. Bounded: at most
//! [`MAX_HELD`] datagrams in all; one more releases the oldest of its
//! queue early (it is sent, never dropped). It sends nothing itself: the
//! node moves what is ready to the binder.

use std::collections::{BTreeMap, VecDeque};

use braid_wire::{DataFlags, NodeId};

use super::binding::{FlowKey, Pending};
use crate::time::Instant;

/// Most datagrams held, all queues together: 250 ms of 1400-byte packets
/// at 100 Mbit/s.
pub const MAX_HELD: usize = 2048;

/// A held datagram.
#[derive(Debug)]
pub struct Held {
    /// When it may go on.
    pub ready: Instant,
    /// Its egress.
    pub egress: NodeId,
    /// Its path slot.
    pub path: u8,
    /// Any path up may take it (`Outgoing::free`).
    pub free: bool,
    /// The datagram.
    pub pending: Pending,
    /// Its flow, for the scheduler above the binding point.
    pub key: FlowKey,
}

/// The held datagrams, per (egress, path).
#[derive(Debug, Default)]
pub struct HoldLine {
    queues: BTreeMap<(NodeId, u8, bool), VecDeque<Held>>,
    held: usize,
    /// Bulk datagrams held so far (urgent copies are counted where they
    /// are made).
    total: u64,
    /// Datagrams released before their time because the line was full.
    early: u64,
}

impl HoldLine {
    /// Holds `held` until its ready time. Returns a datagram to go on now
    /// when the line was full (the oldest of the same queue, or `held`
    /// itself when its queue is empty).
    pub fn hold(&mut self, mut held: Held) -> Option<Held> {
        let urgent = held.pending.header.flags.contains(DataFlags::URGENT);
        if !urgent {
            self.total += 1;
        }
        let q = self
            .queues
            .entry((held.egress, held.path, urgent))
            .or_default();
        if let Some(last) = q.back() {
            held.ready = held.ready.max(last.ready);
        }
        if self.held >= MAX_HELD {
            self.early += 1;
            if q.is_empty() {
                return Some(held);
            }
            q.push_back(held);
            return q.pop_front();
        }
        q.push_back(held);
        self.held += 1;
        None
    }

    /// The next datagram ready at `now`, oldest ready time first.
    pub fn pop_ready(&mut self, now: Instant) -> Option<Held> {
        let (&key, _) = self
            .queues
            .iter()
            .filter_map(|(k, q)| Some((k, q.front()?.ready)))
            .filter(|&(_, ready)| ready <= now)
            .min_by_key(|&(_, ready)| ready)?;
        self.take_front(key)
    }

    /// Every datagram held for `egress`, in the order they came (its paths
    /// are about to be renumbered: they go on now).
    pub fn take_egress(&mut self, egress: NodeId) -> Vec<Held> {
        let keys: Vec<(NodeId, u8, bool)> = self
            .queues
            .range((egress, 0, false)..=(egress, u8::MAX, true))
            .map(|(&k, _)| k)
            .collect();
        let mut all = Vec::new();
        for k in keys {
            if let Some(q) = self.queues.remove(&k) {
                self.held -= q.len();
                all.extend(q);
            }
        }
        all
    }

    /// Forgets `egress`'s queues (the node no longer routes to it; nothing
    /// is held for it).
    pub fn forget(&mut self, egress: NodeId) {
        self.queues
            .retain(|&(e, _, _), q| e != egress || !q.is_empty());
    }

    /// When the next datagram is ready (`None`: nothing held).
    pub fn next_ready(&self) -> Option<Instant> {
        self.queues
            .values()
            .filter_map(|q| q.front())
            .map(|h| h.ready)
            .min()
    }

    /// Datagrams held now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.held
    }

    /// Datagrams held so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether anything is held for `egress`.
    pub fn holds_for(&self, egress: NodeId) -> bool {
        self.queues
            .range((egress, 0, false)..=(egress, u8::MAX, true))
            .any(|(_, q)| !q.is_empty())
    }

    /// Datagrams released early because the line was full.
    pub fn released_early(&self) -> u64 {
        self.early
    }

    fn take_front(&mut self, key: (NodeId, u8, bool)) -> Option<Held> {
        let q = self.queues.get_mut(&key)?;
        // An empty queue stays (with its room) until the egress is
        // forgotten: no allocation per burst.
        let h = q.pop_front()?;
        self.held -= 1;
        Some(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_wire::{DataFlags, DataHeader, Group, RedundancyMode};
    use std::time::Duration;

    fn held(at: Instant, egress: u16, path: u8, seq: u32) -> Held {
        Held {
            ready: at,
            egress: NodeId(egress),
            path,
            free: false,
            pending: Pending {
                header: DataHeader {
                    flags: DataFlags::empty(),
                    mode: RedundancyMode::Stripe,
                    path,
                    route_ptr: 0,
                    ingress: NodeId(1),
                    egress: NodeId(egress),
                    seq,
                    group: Group::NONE,
                    hop_limit: 16,
                    class: 0,
                    epoch: 1,
                },
                body: vec![0; 10],
                queued_at: at,
            },
            key: FlowKey::default(),
        }
    }

    #[test]
    fn datagrams_go_on_when_ready_and_in_order_per_path() {
        let t0 = Instant::ZERO;
        let ms = |n| t0 + Duration::from_millis(n);
        let mut line = HoldLine::default();
        assert!(line.hold(held(ms(40), 9, 0, 1)).is_none());
        assert!(line.hold(held(ms(5), 9, 1, 2)).is_none());
        // The hold of path 0 shrank: the later one still waits for the first.
        assert!(line.hold(held(ms(30), 9, 0, 3)).is_none());
        assert_eq!(line.next_ready(), Some(ms(5)));
        assert!(line.pop_ready(ms(4)).is_none());
        assert_eq!(line.pop_ready(ms(5)).map(|h| h.pending.header.seq), Some(2));
        assert!(line.pop_ready(ms(39)).is_none());
        let seqs: Vec<u32> = std::iter::from_fn(|| line.pop_ready(ms(40)))
            .map(|h| h.pending.header.seq)
            .collect();
        assert_eq!(seqs, vec![1, 3]);
        assert_eq!(line.len(), 0);
        assert_eq!(line.next_ready(), None);
    }

    #[test]
    fn an_urgent_copy_and_bulk_on_one_path_never_wait_for_each_other() {
        let t0 = Instant::ZERO;
        let ms = |n| t0 + Duration::from_millis(n);
        let mut line = HoldLine::default();
        // Bulk held 40 ms to equalise; an urgent copy spaced 10 ms on the
        // same path; bulk again.
        line.hold(held(ms(40), 9, 0, 1));
        let mut copy = held(ms(10), 9, 0, 2);
        copy.pending.header.flags = DataFlags::URGENT;
        line.hold(copy);
        line.hold(held(ms(41), 9, 0, 3));
        assert_eq!(line.next_ready(), Some(ms(10)));
        assert_eq!(
            line.pop_ready(ms(10)).map(|h| h.pending.header.seq),
            Some(2)
        );
        assert!(line.pop_ready(ms(39)).is_none());
        // The copy is not counted as bulk held.
        assert_eq!(line.total(), 2);
    }

    #[test]
    fn a_full_line_sends_its_oldest_on_early_and_loses_nothing() {
        let t0 = Instant::ZERO;
        let mut line = HoldLine::default();
        let mut early = Vec::new();
        for seq in 0..(MAX_HELD as u32 + 10) {
            early.extend(line.hold(held(t0 + Duration::from_secs(1), 9, 0, seq)));
        }
        assert_eq!(line.len(), MAX_HELD);
        assert_eq!(line.released_early(), 10);
        let seqs: Vec<u32> = early.iter().map(|h| h.pending.header.seq).collect();
        assert_eq!(seqs, (0..10).collect::<Vec<_>>());
        let rest = line.take_egress(NodeId(9));
        assert_eq!(rest.len(), MAX_HELD);
        assert_eq!(rest[0].pending.header.seq, 10);
        assert_eq!(line.len(), 0);
        assert!(!line.holds_for(NodeId(9)));
    }

    #[test]
    fn renumbering_takes_only_that_egress() {
        let t0 = Instant::ZERO;
        let mut line = HoldLine::default();
        line.hold(held(t0, 9, 0, 1));
        line.hold(held(t0, 9, 3, 2));
        line.hold(held(t0, 7, 0, 3));
        assert_eq!(line.take_egress(NodeId(9)).len(), 2);
        assert!(line.holds_for(NodeId(7)));
        assert_eq!(line.len(), 1);
        line.forget(NodeId(7));
        assert!(line.holds_for(NodeId(7)), "what is held is not forgotten");
        assert!(line.pop_ready(t0).is_some());
        line.forget(NodeId(7));
        assert!(line.queues.is_empty());
    }
}
