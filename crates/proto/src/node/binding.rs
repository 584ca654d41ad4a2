//! Late binding (seed 003): what the ingress encodes waits above the
//! binding point in its egress's [`Scheduler`], queued by class and flow,
//! and is bound to one of the egress's paths only when that path's first
//! hop holds fewer than `bound` datagrams in the driver (the driver tells
//! the node each departure with `Node::on_sent`). When a path breaks,
//! what waits for it moves to the others; only the at most `bound`
//! datagrams in the driver can be lost with it.
//!
//! [`Binder`] holds the queues above the binding point, which egresses
//! have something waiting (the backlog) and how many datagrams each next
//! hop holds below it. It reads the paths it binds to from its caller
//! and gives back what it pulls; it sends nothing itself.

use std::collections::BTreeMap;

use braid_wire::{DataFlags, DataHeader, NodeId};

use super::admission::EntryCodel;
use super::config::LateBinding;
use crate::scheduler::Scheduler;
use crate::time::Instant;

/// Packets waiting above the binding point for one path alone, beyond
/// the fewest waiting for any path up, from which that path counts as
/// backlogged ([`Binder::backlogged`]): 18 ms of 1400-byte packets at 10
/// Mbit/s; a path with room holds none.
pub const BACKLOG_PACKETS: usize = 16;

/// A datagram above the binding point: everything but its path.
#[derive(Debug)]
pub struct Pending {
    /// Its header, path and route still to be given.
    pub header: DataHeader,
    /// What follows the header.
    pub body: Vec<u8>,
    /// When it went above the binding point (set by [`Binder::enqueue`]).
    pub queued_at: Instant,
}

/// How a datagram from the ingress is to be queued.
#[derive(Debug, Clone, Copy, Default)]
pub struct FlowKey {
    /// Its flow (datagrams of one flow keep their order).
    pub hash: u64,
    /// Urgent: sent before bulk.
    pub urgent: bool,
}

/// The scheduler's flow of a datagram in flow `key` and class `class`
/// (the same user flow in two classes queues apart).
fn flow_of(key: FlowKey, class: u8) -> u64 {
    key.hash ^ u64::from(class)
}

/// The queues above the binding point and the counts below it.
#[derive(Debug)]
pub struct Binder {
    late: Option<LateBinding>,
    /// Per egress: what waits for one of its paths.
    waiting: BTreeMap<NodeId, Scheduler<Pending>>,
    /// Egresses with datagrams above the binding point, sorted (a vector
    /// keeps its room when it empties: no allocation per packet, as a
    /// set's node would be).
    backlog: Vec<NodeId>,
    /// Unicast datagrams in the driver, per next hop.
    in_driver: BTreeMap<NodeId, usize>,
    /// Datagrams dropped above the binding point to stay within bounds.
    overflow: u64,
    /// Per egress asked about ([`Binder::admit`]: pacing nodes only):
    /// which bulk user packets toward it are dropped before they are
    /// encoded (`admission.rs`). Gone with the egress's queue.
    admission: BTreeMap<NodeId, EntryCodel>,
}

impl Binder {
    /// A binder with nothing queued; `None`: late binding is off (every
    /// datagram is bound as it is made, and nothing is counted).
    pub fn new(late: Option<LateBinding>) -> Self {
        Binder {
            late,
            waiting: BTreeMap::new(),
            backlog: Vec::new(),
            in_driver: BTreeMap::new(),
            overflow: 0,
            admission: BTreeMap::new(),
        }
    }

    /// Whether late binding is on.
    pub fn is_on(&self) -> bool {
        self.late.is_some()
    }

    /// Datagrams dropped above the binding point so far.
    pub fn overflow(&self) -> u64 {
        self.overflow
    }

    /// Whether a bulk user packet toward `egress` arriving at `now` may be
    /// encoded: false while the queue above the binding point toward it
    /// has stood too long (`admission.rs`: drop it, before encoding).
    /// Always true without late binding.
    pub fn admit(&mut self, egress: NodeId, now: Instant) -> bool {
        if self.late.is_none() {
            return true;
        }
        let codel = self.admission.entry(egress).or_default();
        if self.waiting.get(&egress).is_none_or(|w| w.queued() == 0) {
            codel.on_empty(now);
        }
        codel.admit(now)
    }

    /// Whether a bulk user packet of `len` bytes in flow `key` toward
    /// `egress` would only be dropped above the binding point
    /// ([`Scheduler::would_drop`]): the caller drops it before it is
    /// encoded instead, so that its number leaves no gap the egress's
    /// re-order buffer would wait on.
    pub fn would_drop(&self, egress: NodeId, len: usize, key: FlowKey, class: u8) -> bool {
        self.waiting
            .get(&egress)
            .is_some_and(|w| w.would_drop(len, flow_of(key, class)))
    }

    /// Queues `pending` for path `path` of `egress` (which has `paths`
    /// paths now), in flow `key`, at `now`. Returns what the queue's
    /// bounds dropped (counted), for the caller to recycle.
    pub fn enqueue(
        &mut self,
        now: Instant,
        egress: NodeId,
        paths: usize,
        path: u8,
        pending: Pending,
        key: FlowKey,
    ) -> Vec<Pending> {
        self.enqueue_for(now, egress, paths, 1 << path, pending, key)
    }

    /// [`Self::enqueue`] for whichever of the `paths` paths up toward
    /// `egress` has room first.
    pub fn enqueue_any(
        &mut self,
        now: Instant,
        egress: NodeId,
        paths: usize,
        pending: Pending,
        key: FlowKey,
    ) -> Vec<Pending> {
        let every = (1u32 << paths.clamp(1, 16)).wrapping_sub(1) as u16;
        self.enqueue_for(now, egress, paths, every, pending, key)
    }

    fn enqueue_for(
        &mut self,
        now: Instant,
        egress: NodeId,
        paths: usize,
        allowed: u16,
        mut pending: Pending,
        key: FlowKey,
    ) -> Vec<Pending> {
        let Some(late) = self.late else {
            return vec![pending];
        };
        pending.queued_at = now;
        let waiting = self.waiting.entry(egress).or_insert_with(|| {
            let mut s = Scheduler::new(late.scheduler, crate::redundancy::mode::MAX_PATHS);
            for p in paths..s.paths() {
                s.set_path_up(p, false);
            }
            s
        });
        let urgent = key.urgent || pending.header.flags.contains(DataFlags::URGENT);
        let (len, flow) = (pending.body.len(), flow_of(key, pending.header.class));
        let dropped = waiting.enqueue(pending, len, flow, urgent, allowed);
        self.overflow += dropped.len() as u64;
        if let Err(at) = self.backlog.binary_search(&egress) {
            self.backlog.insert(at, egress);
        }
        dropped
    }

    /// The paths toward `egress` were renumbered (`count` of them now):
    /// what was bound to one goes back above the binding point.
    pub fn renumber(&mut self, egress: NodeId, count: usize) {
        let Some(waiting) = self.waiting.get_mut(&egress) else {
            return;
        };
        for p in 0..waiting.paths() {
            for pending in waiting.set_path_up(p, false) {
                let len = pending.body.len();
                let urgent = pending.header.flags.contains(DataFlags::URGENT);
                let class = pending.header.class as u64;
                let dropped = waiting.enqueue(pending, len, class, urgent, 1 << p);
                self.overflow += dropped.len() as u64;
            }
        }
        for p in 0..count.min(waiting.paths()) {
            waiting.set_path_up(p, true);
        }
    }

    /// The next datagram whose path's first hop has room in the driver
    /// and whose path `may_send` (the pacer, asked only for a path with
    /// datagrams waiting for it), with the index of that path. `paths_of`
    /// gives the transit nodes of each path toward an egress (`None`: the
    /// node keeps no routes toward it). An egress with nothing left
    /// leaves the backlog.
    pub fn pull<'a>(
        &mut self,
        now: Instant,
        paths_of: impl Fn(NodeId) -> Option<&'a [Vec<NodeId>]>,
        mut may_send: impl FnMut(NodeId, usize) -> bool,
    ) -> Option<(usize, Pending)> {
        let bound = self.late?.bound.max(1);
        let mut after: Option<NodeId> = None;
        loop {
            let next = after.map_or(0, |e| self.backlog.partition_point(|&x| x <= e));
            let egress = self.backlog.get(next).copied()?;
            after = Some(egress);
            let (pulled, idle) = match (paths_of(egress), self.waiting.get_mut(&egress)) {
                (Some(paths), Some(waiting)) => {
                    let mut pulled = None;
                    for (p, transit) in paths.iter().enumerate() {
                        let hop = transit.first().copied().unwrap_or(egress);
                        if self.in_driver.get(&hop).copied().unwrap_or(0) >= bound {
                            continue;
                        }
                        if waiting.waiting_for(p) > 0 && !may_send(egress, p) {
                            continue;
                        }
                        if let Some(pending) = waiting.pull(p) {
                            pulled = Some((p, pending));
                            break;
                        }
                    }
                    let idle = pulled.is_none()
                        && waiting.queued() == 0
                        && (0..waiting.paths()).all(|p| waiting.bound(p) == 0);
                    (pulled, idle)
                }
                _ => (None, true),
            };
            if idle {
                if let Ok(at) = self.backlog.binary_search(&egress) {
                    self.backlog.remove(at);
                }
            }
            if let Some((_, pending)) = &pulled {
                if let Some(codel) = self.admission.get_mut(&egress) {
                    codel.on_sojourn(now, now.since(pending.queued_at));
                }
                return pulled;
            }
        }
    }

    /// Whether traffic waits above the binding point.
    pub fn holds_backlog(&self) -> bool {
        !self.backlog.is_empty()
    }

    /// The paths toward `egress` (bit i: path i) for which at least
    /// `over` packets more wait above the binding point than for the path
    /// up with the fewest: full now against that one, whatever the
    /// split's estimates say. Measured against the shortest queue, not
    /// against zero: once every path holds `over`, a path the split gives
    /// more than it carries would otherwise grow its queue unchecked,
    /// and everything the other paths deliver wait for it at the egress.
    /// Paths whose queues are alike are not set apart: there is nowhere
    /// else to go.
    pub fn backlogged(&self, egress: NodeId, over: usize) -> u16 {
        let Some(w) = self.waiting.get(&egress) else {
            return 0;
        };
        let n = w.paths().min(16);
        let Some(least) = (0..n)
            .filter(|&p| w.is_up(p))
            .map(|p| w.waiting_for(p))
            .min()
        else {
            return 0;
        };
        (0..n)
            .filter(|&p| w.waiting_for(p) >= least + over)
            .fold(0, |m, p| m | 1 << p)
    }

    /// Datagrams waiting above the binding point for path `path` toward
    /// `egress` (of every class).
    pub fn waiting_for(&self, egress: NodeId, path: usize) -> usize {
        self.waiting
            .get(&egress)
            .filter(|w| path < w.paths())
            .map_or(0, |w| w.waiting_for(path))
    }

    /// Whether anything for `egress` waits above the binding point.
    pub fn holds_for(&self, egress: NodeId) -> bool {
        self.waiting.get(&egress).is_some_and(|w| w.queued() > 0)
            || self.backlog.binary_search(&egress).is_ok()
    }

    /// Forgets `egress`'s queue (the node no longer routes to it; nothing
    /// waits in it).
    pub fn forget(&mut self, egress: NodeId) {
        self.waiting.remove(&egress);
        self.admission.remove(&egress);
    }

    /// A unicast datagram to `neighbor` went to the driver.
    pub fn handed_to_driver(&mut self, neighbor: NodeId) {
        if self.late.is_some() {
            *self.in_driver.entry(neighbor).or_default() += 1;
        }
    }

    /// A unicast datagram to `neighbor` left the driver's queue (sent, or
    /// dropped): room for the next one.
    pub fn on_sent(&mut self, neighbor: NodeId) {
        // Entries stay at zero (one per next hop in use; gone ones are
        // dropped by `forget_hops`) so that the hot path does not
        // allocate.
        if let Some(n) = self.in_driver.get_mut(&neighbor) {
            *n = n.saturating_sub(1);
        }
    }

    /// Forgets the next hops `keep` says no to and that hold nothing in
    /// the driver.
    pub fn forget_hops(&mut self, mut keep: impl FnMut(NodeId) -> bool) {
        self.in_driver.retain(|&n, held| *held > 0 || keep(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_wire::{Group, RedundancyMode};

    const EGRESS: NodeId = NodeId(9);

    fn pending(seq: u32, urgent: bool) -> Pending {
        let mut flags = DataFlags::empty();
        if urgent {
            flags.insert(DataFlags::URGENT);
        }
        Pending {
            header: DataHeader {
                flags,
                mode: RedundancyMode::Single,
                path: 0,
                route_ptr: 0,
                ingress: NodeId(1),
                egress: EGRESS,
                seq,
                group: Group::NONE,
                hop_limit: 16,
                class: 0,
                epoch: 1,
            },
            body: vec![0; 100],
            queued_at: Instant::ZERO,
        }
    }

    fn binder() -> Binder {
        Binder::new(Some(LateBinding::default()))
    }

    #[test]
    fn at_most_bound_datagrams_per_first_hop_go_to_the_driver() {
        let mut b = binder();
        let paths = [vec![NodeId(2)], vec![NodeId(3)]];
        for seq in 0..6 {
            assert!(b
                .enqueue(
                    Instant::ZERO,
                    EGRESS,
                    2,
                    0,
                    pending(seq, false),
                    FlowKey::default()
                )
                .is_empty());
        }
        let mut sent = Vec::new();
        while let Some((p, d)) = b.pull(Instant::ZERO, |_| Some(&paths[..]), |_, _| true) {
            let hop = paths[p][0];
            b.handed_to_driver(hop);
            sent.push(d.header.seq);
        }
        assert_eq!(sent, vec![0, 1], "the bound is 2 per next hop");
        assert!(b.holds_backlog() && b.holds_for(EGRESS));
        b.on_sent(NodeId(2));
        let (p, d) = b
            .pull(Instant::ZERO, |_| Some(&paths[..]), |_, _| true)
            .unwrap();
        assert_eq!((p, d.header.seq), (0, 2));
    }

    #[test]
    fn a_free_datagram_leaves_on_whichever_path_has_room() {
        let mut b = binder();
        let paths = [vec![NodeId(2)], vec![NodeId(3)]];
        let key = FlowKey::default();
        // Path 0's first hop is full; path 1's has room.
        b.handed_to_driver(NodeId(2));
        b.handed_to_driver(NodeId(2));
        b.enqueue(Instant::ZERO, EGRESS, 2, 0, pending(0, false), key);
        for seq in 1..4 {
            b.enqueue_any(Instant::ZERO, EGRESS, 2, pending(seq, false), key);
        }
        let pull = |b: &mut Binder| {
            let (p, d) = b.pull(Instant::ZERO, |_| Some(&paths[..]), |_, _| true)?;
            b.handed_to_driver(paths[p][0]);
            Some((p, d.header.seq))
        };
        // The free ones go where there is room, past the one bound to
        // path 0, which waits for its path.
        assert_eq!(pull(&mut b), Some((1, 1)), "free: path 1 has room");
        assert_eq!(pull(&mut b), Some((1, 2)));
        assert_eq!(pull(&mut b), None, "both first hops full");
        b.on_sent(NodeId(2));
        assert_eq!(pull(&mut b), Some((0, 0)), "path 0's own first");
        assert_eq!(pull(&mut b), None);
        b.on_sent(NodeId(3));
        assert_eq!(pull(&mut b), Some((1, 3)), "free: path 1 has room again");
        // Free datagrams count toward no one path's queue.
        assert_eq!(b.waiting_for(EGRESS, 0) + b.waiting_for(EGRESS, 1), 0);
    }

    #[test]
    fn a_path_whose_queue_grows_while_another_drains_is_backlogged() {
        let mut b = binder();
        let paths = [vec![NodeId(2)], vec![NodeId(3)]];
        // Path 0's first hop takes nothing; path 1's takes everything.
        for seq in 0..40 {
            let path = (seq % 2) as u8;
            b.enqueue(
                Instant::ZERO,
                EGRESS,
                2,
                path,
                pending(seq, false),
                FlowKey::default(),
            );
            while let Some((p, _)) = b.pull(Instant::ZERO, |_| Some(&paths[..]), |_, _| true) {
                b.handed_to_driver(paths[p][0]);
                if p == 1 {
                    b.on_sent(NodeId(3));
                }
            }
            // Path 0 has had seq / 2 + 1 packets; the 2 the driver holds
            // went below the binding point, the rest wait.
            let waiting = (seq as usize / 2 + 1).saturating_sub(2);
            let expect = u16::from(waiting >= BACKLOG_PACKETS);
            assert_eq!(b.backlogged(EGRESS, BACKLOG_PACKETS), expect, "after {seq}");
        }
        assert_eq!(
            b.backlogged(EGRESS, BACKLOG_PACKETS),
            1,
            "18 wait for path 0 (2 went to the driver)"
        );
        // Both full: the longer queue is set apart while it is longer by
        // BACKLOG_PACKETS or more, not once they are alike (there is
        // nowhere else to go).
        let to_path_1 = |range: std::ops::Range<u32>, b: &mut Binder| {
            for seq in range {
                let p = pending(seq, false);
                b.enqueue(Instant::ZERO, EGRESS, 2, 1, p, FlowKey::default());
            }
        };
        to_path_1(40..73, &mut b);
        assert_eq!(b.backlogged(EGRESS, BACKLOG_PACKETS), 0, "33 against 18");
        to_path_1(73..74, &mut b);
        assert_eq!(b.backlogged(EGRESS, BACKLOG_PACKETS), 0b10, "34 against 18");
        // Another egress has nothing queued.
        assert_eq!(b.backlogged(NodeId(77), BACKLOG_PACKETS), 0);
    }

    #[test]
    fn urgent_datagrams_leave_first() {
        let mut b = binder();
        let paths = [vec![]];
        b.enqueue(
            Instant::ZERO,
            EGRESS,
            1,
            0,
            pending(0, false),
            FlowKey {
                hash: 1,
                urgent: false,
            },
        );
        b.enqueue(
            Instant::ZERO,
            EGRESS,
            1,
            0,
            pending(1, false),
            FlowKey {
                hash: 1,
                urgent: false,
            },
        );
        b.enqueue(
            Instant::ZERO,
            EGRESS,
            1,
            0,
            pending(2, true),
            FlowKey {
                hash: 2,
                urgent: true,
            },
        );
        let first = b
            .pull(Instant::ZERO, |_| Some(&paths[..]), |_, _| true)
            .unwrap()
            .1;
        assert_eq!(first.header.seq, 2);
    }

    #[test]
    fn renumbered_paths_take_back_what_waited_for_the_old_ones() {
        let mut b = binder();
        b.enqueue(
            Instant::ZERO,
            EGRESS,
            2,
            1,
            pending(7, false),
            FlowKey::default(),
        );
        // Path 1 is gone: one path left, and the datagram rides it.
        b.renumber(EGRESS, 1);
        let one = [vec![NodeId(2)]];
        let (p, d) = b
            .pull(Instant::ZERO, |_| Some(&one[..]), |_, _| true)
            .unwrap();
        assert_eq!((p, d.header.seq), (0, 7));
        assert!(b
            .pull(Instant::ZERO, |_| Some(&one[..]), |_, _| true)
            .is_none());
        assert!(
            !b.holds_backlog(),
            "an egress with nothing left leaves the backlog"
        );
    }

    #[test]
    fn an_egress_without_routes_leaves_the_backlog() {
        let mut b = binder();
        b.enqueue(
            Instant::ZERO,
            EGRESS,
            1,
            0,
            pending(0, false),
            FlowKey::default(),
        );
        assert!(b.pull(Instant::ZERO, |_| None, |_, _| true).is_none());
        assert!(!b.holds_backlog());
    }

    #[test]
    fn bounds_above_the_binding_point_drop_and_count() {
        let mut late = LateBinding::default();
        late.scheduler.max_packets = 3;
        let mut b = Binder::new(Some(late));
        let dropped: usize = (0..5)
            .map(|seq| {
                b.enqueue(
                    Instant::ZERO,
                    EGRESS,
                    1,
                    0,
                    pending(seq, false),
                    FlowKey::default(),
                )
                .len()
            })
            .sum();
        assert_eq!(dropped, 2);
        assert_eq!(b.overflow(), 2);
    }

    #[test]
    fn without_late_binding_nothing_waits_and_nothing_is_counted() {
        let mut b = Binder::new(None);
        assert_eq!(
            b.enqueue(
                Instant::ZERO,
                EGRESS,
                1,
                0,
                pending(0, false),
                FlowKey::default()
            )
            .len(),
            1
        );
        b.handed_to_driver(NodeId(2));
        assert!(!b.holds_backlog() && b.pull(Instant::ZERO, |_| None, |_, _| true).is_none());
    }
}
