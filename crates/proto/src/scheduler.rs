//! The late-binding scheduler (seed 003): wherever a packet can leave by
//! one of several paths or interfaces, it waits *above* the binding point
//! in a per-flow queue, not tied to any path, and is bound to a path only
//! when that path can take it now. Below the binding point each path holds
//! at most `bound` packets (default 2).
//!
//! * Urgent packets (DSCP EF/CS6, or a class marked urgent) go first: an
//!   urgent packet waits behind at most the `bound` packets already bound
//!   to its path.
//! * Between flows: deficit round robin (byte-fair).
//! * A path that goes down gives its unbound packets to the remaining
//!   paths: none lost, none duplicated. Only the at most `bound` packets
//!   already bound to it are stranded (returned to the caller, counted).
//! * Memory is bounded: at most `max_packets` and `max_bytes` queued in
//!   all; beyond that the tail of the longest flow queue (in bytes) is
//!   dropped, so one bulk flow cannot push out everyone else. Flows hash
//!   into a fixed number of buckets, so the flow table is bounded too.
//!
//! * It says how many packets wait for each path alone
//!   ([`Scheduler::waiting_for`]): a path whose queue grows while others
//!   take theirs is full now, before any report says so.
//!
//! The driver calls [`Scheduler::enqueue`] for each packet and
//! [`Scheduler::pull`] whenever a path can transmit.

use std::collections::VecDeque;

/// A set of path indexes (bit i = path i).
pub type PathMask = u16;

/// Scheduler limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// Most packets bound to one path (below the binding point).
    pub bound_per_path: usize,
    /// Most packets queued above the binding point, all flows together.
    pub max_packets: usize,
    /// Most bytes queued above the binding point, all flows together (1 MiB by default).
    pub max_bytes: usize,
    /// Flow buckets (fixed: the flow table never grows).
    pub flow_buckets: usize,
    /// Bytes a flow may send per round.
    pub quantum: usize,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            bound_per_path: 2,
            max_packets: 1024,
            max_bytes: 1 << 20,
            flow_buckets: 256,
            quantum: 1514,
        }
    }
}

/// Counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedulerCounters {
    /// Packets offered to [`Scheduler::enqueue`].
    pub enqueued: u64,
    /// Packets pulled to be sent ([`Scheduler::pull`]).
    pub sent: u64,
    /// Dropped from the longest flow to stay within bounds.
    pub dropped_overflow: u64,
    /// Bound to a path that then went down.
    pub stranded: u64,
    /// Unbound packets moved off a path that went down.
    pub retargeted: u64,
    /// Packets whose paths were all down when they were queued, held until
    /// one comes up.
    pub no_path: u64,
}

#[derive(Debug)]
struct Queued<P> {
    packet: P,
    len: usize,
    allowed: PathMask,
}

#[derive(Debug)]
struct Flow<P> {
    packets: VecDeque<Queued<P>>,
    bytes: usize,
    deficit: usize,
    active: bool,
}

/// A late-binding scheduler over packets of type `P`.
#[derive(Debug)]
pub struct Scheduler<P> {
    config: SchedulerConfig,
    flows: Vec<Flow<P>>,
    /// Flows with packets, in round-robin order.
    active: VecDeque<usize>,
    urgent: VecDeque<Queued<P>>,
    bound: Vec<VecDeque<P>>,
    up: PathMask,
    packets: usize,
    bytes: usize,
    /// Packets above the binding point allowed on one path only, per path.
    waiting: Vec<usize>,
    counters: SchedulerCounters,
}

impl<P> Scheduler<P> {
    /// A scheduler for `paths` paths (at most 16), all up.
    pub fn new(config: SchedulerConfig, paths: usize) -> Self {
        let paths = paths.clamp(1, 16);
        let buckets = config.flow_buckets.max(1);
        Scheduler {
            config,
            flows: (0..buckets)
                .map(|_| Flow {
                    packets: VecDeque::new(),
                    bytes: 0,
                    deficit: 0,
                    active: false,
                })
                .collect(),
            active: VecDeque::new(),
            urgent: VecDeque::new(),
            bound: (0..paths).map(|_| VecDeque::new()).collect(),
            up: if paths == 16 {
                u16::MAX
            } else {
                (1u16 << paths) - 1
            },
            packets: 0,
            bytes: 0,
            waiting: vec![0; paths],
            counters: SchedulerCounters::default(),
        }
    }

    /// Packets above the binding point that may take `path` and no other.
    pub fn waiting_for(&self, path: usize) -> usize {
        self.waiting.get(path).copied().unwrap_or(0)
    }

    /// Counts `q` in (`+1`) or out (`-1`) of its one path's waiting count.
    fn count_waiting(&mut self, allowed: PathMask, add: bool) {
        if allowed.count_ones() == 1 {
            let w = &mut self.waiting[allowed.trailing_zeros() as usize];
            *w = if add { *w + 1 } else { w.saturating_sub(1) };
        }
    }

    /// What the scheduler has counted so far.
    pub fn counters(&self) -> SchedulerCounters {
        self.counters
    }

    /// Packets above the binding point.
    pub fn queued(&self) -> usize {
        self.packets
    }

    /// Packets bound to `path` and not yet pulled.
    pub fn bound(&self, path: usize) -> usize {
        self.bound.get(path).map_or(0, VecDeque::len)
    }

    /// Whether `path` is up.
    pub fn is_up(&self, path: usize) -> bool {
        path < 16 && self.up & (1 << path) != 0
    }

    /// Number of paths the scheduler serves.
    pub fn paths(&self) -> usize {
        self.bound.len()
    }

    fn all_paths(&self) -> PathMask {
        let n = self.bound.len();
        if n == 16 {
            u16::MAX
        } else {
            (1u16 << n) - 1
        }
    }

    /// Whether a bulk packet of `len` bytes in flow `flow_hash` would be
    /// dropped at once by [`Self::enqueue`]: the queue is full and that
    /// flow, with the packet, is the longest (it would lose its own
    /// tail). A caller that numbers packets before queueing them can then
    /// drop it unnumbered, which leaves no gap in the numbers for a
    /// receiver to wait on.
    pub fn would_drop(&self, len: usize, flow_hash: u64) -> bool {
        let full =
            self.packets >= self.config.max_packets || self.bytes + len > self.config.max_bytes;
        if !full {
            return false;
        }
        let f = (flow_hash % self.flows.len() as u64) as usize;
        let mine = self.flows[f].bytes + len;
        (self.flows.iter().enumerate()).all(|(g, flow)| g == f || flow.bytes < mine)
    }

    /// Queues a packet that may leave by any path in `allowed`. Returns the
    /// packets dropped to stay within bounds (possibly this one).
    pub fn enqueue(
        &mut self,
        packet: P,
        len: usize,
        flow_hash: u64,
        urgent: bool,
        allowed: PathMask,
    ) -> Vec<P> {
        let mut allowed = allowed & self.all_paths();
        if allowed == 0 {
            allowed = self.all_paths();
        }
        if allowed & self.up == 0 {
            self.counters.no_path += 1;
        }
        self.counters.enqueued += 1;
        let q = Queued {
            packet,
            len,
            allowed,
        };
        self.packets += 1;
        self.bytes += len;
        self.count_waiting(allowed, true);
        if urgent {
            self.urgent.push_back(q);
        } else {
            let f = (flow_hash % self.flows.len() as u64) as usize;
            let flow = &mut self.flows[f];
            flow.packets.push_back(q);
            flow.bytes += len;
            if !flow.active {
                flow.active = true;
                flow.deficit = 0;
                self.active.push_back(f);
            }
        }
        let mut dropped = Vec::new();
        while self.packets > self.config.max_packets || self.bytes > self.config.max_bytes {
            match self.drop_from_longest() {
                Some(p) => dropped.push(p),
                None => break,
            }
        }
        dropped
    }

    fn drop_from_longest(&mut self) -> Option<P> {
        let longest = (0..self.flows.len())
            .filter(|&f| self.flows[f].bytes > 0)
            .max_by_key(|&f| (self.flows[f].bytes, usize::MAX - f));
        let q = match longest {
            Some(f) => {
                let flow = &mut self.flows[f];
                let q = flow.packets.pop_back().expect("bytes > 0");
                flow.bytes -= q.len;
                if flow.packets.is_empty() {
                    flow.active = false;
                    self.active.retain(|&x| x != f);
                }
                q
            }
            None => self.urgent.pop_back()?,
        };
        self.packets -= 1;
        self.bytes -= q.len;
        self.count_waiting(q.allowed, false);
        self.counters.dropped_overflow += 1;
        Some(q.packet)
    }

    /// Binds packets to `path` until it holds `bound_per_path`.
    fn bind(&mut self, path: usize) {
        let bit = 1u16 << path;
        if self.up & bit == 0 {
            return;
        }
        while self.bound[path].len() < self.config.bound_per_path.max(1) {
            let Some(q) = self.next_for(bit) else {
                break;
            };
            self.packets -= 1;
            self.bytes -= q.len;
            self.count_waiting(q.allowed, false);
            self.bound[path].push_back(q.packet);
        }
    }

    /// The next packet allowed on the path `bit`: urgent first, then deficit
    /// round robin over the flows that have a packet for this path. Within
    /// a flow, the first packet that may take the path goes, even if
    /// packets pinned to other paths are ahead of it: a mirror's copy
    /// waiting for a stalled path must not hold up the copies for the
    /// others (order per path is kept).
    fn next_for(&mut self, bit: PathMask) -> Option<Queued<P>> {
        let up = self.up;
        // A packet whose paths are all down may take any path that is up.
        let fits = |q: &Queued<P>| q.allowed & bit != 0 || q.allowed & up == 0;
        if let Some(i) = self.urgent.iter().position(fits) {
            return self.urgent.remove(i);
        }
        let quantum = self.config.quantum.max(1);
        // Each active flow is visited at most twice: once to top up its
        // deficit, once to send.
        for _ in 0..2 * self.active.len() {
            let f = *self.active.front()?;
            let flow = &mut self.flows[f];
            let Some(i) = flow.packets.iter().position(fits) else {
                self.active.rotate_left(1);
                continue;
            };
            if flow.deficit < flow.packets[i].len {
                flow.deficit += quantum;
                self.active.rotate_left(1);
                continue;
            }
            let q = flow.packets.remove(i).expect("found above");
            flow.deficit -= q.len;
            flow.bytes -= q.len;
            if flow.packets.is_empty() {
                flow.active = false;
                flow.deficit = 0;
                self.active.pop_front();
            }
            return Some(q);
        }
        None
    }

    /// Path `path` can transmit now: returns its next packet, binding more
    /// from above as room frees up.
    pub fn pull(&mut self, path: usize) -> Option<P> {
        if path >= self.bound.len() {
            return None;
        }
        self.bind(path);
        let p = self.bound[path].pop_front()?;
        self.counters.sent += 1;
        self.bind(path);
        Some(p)
    }

    /// Marks a path up or down. Going down returns the packets already
    /// bound to it (stranded: at most `bound_per_path`); the unbound ones
    /// simply wait for the remaining paths.
    pub fn set_path_up(&mut self, path: usize, up: bool) -> Vec<P> {
        if path >= self.bound.len() {
            return Vec::new();
        }
        let bit = 1u16 << path;
        if up {
            self.up |= bit;
            return Vec::new();
        }
        if self.up & bit == 0 {
            return Vec::new();
        }
        self.up &= !bit;
        // Unbound packets allowed only on this path may now take any path.
        let mut moved = 0;
        for q in self
            .urgent
            .iter_mut()
            .chain(self.flows.iter_mut().flat_map(|f| f.packets.iter_mut()))
        {
            if q.allowed & bit != 0 && q.allowed & self.up == 0 {
                moved += 1;
            }
        }
        self.counters.retargeted += moved;
        let stranded: Vec<P> = self.bound[path].drain(..).collect();
        self.counters.stranded += stranded.len() as u64;
        stranded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A one-path scheduler that holds at most 10 packets.
    fn ten_packets<P>() -> Scheduler<P> {
        let config = SchedulerConfig {
            max_packets: 10,
            ..Default::default()
        };
        Scheduler::new(config, 1)
    }

    #[test]
    fn a_full_queue_says_which_packet_it_would_drop_before_it_is_offered() {
        let mut s = ten_packets();
        for i in 0..7u32 {
            assert!(!s.would_drop(1000, 1), "room for packet {i}");
            assert!(s.enqueue(i, 1000, 1, false, 1).is_empty());
        }
        for i in 7..10u32 {
            s.enqueue(i, 1000, 2, false, 1);
        }
        // Full: flow 1 (7 packets) is the longest, flow 2 (3) is not.
        assert!(s.would_drop(1000, 1));
        assert!(
            !s.would_drop(1000, 2),
            "flow 2 would push out flow 1's tail"
        );
        let dropped = s.enqueue(10, 1000, 1, false, 1);
        assert_eq!(dropped, [10], "as said: its own");
        let dropped = s.enqueue(11, 1000, 2, false, 1);
        assert_eq!(dropped, [6], "as said: another flow's tail");
    }

    #[test]
    fn urgent_waits_behind_at_most_the_bound_packets() {
        let mut s = Scheduler::new(
            SchedulerConfig {
                max_packets: 5000,
                max_bytes: 1 << 24,
                ..Default::default()
            },
            1,
        );
        for i in 0..1000u32 {
            assert!(s.enqueue(i, 1400, 7, false, 1).is_empty());
        }
        // Two bulk packets are bound as the path starts sending.
        assert_eq!(s.pull(0), Some(0));
        assert_eq!(s.bound(0), 2);
        s.enqueue(9999, 100, 8, true, 1);
        let waited = (0..).take_while(|_| s.pull(0) != Some(9999)).count();
        assert_eq!(
            waited, 2,
            "the urgent packet waited behind the two bound packets only"
        );
    }

    #[test]
    fn a_stalled_path_does_not_hold_up_a_flows_copies_for_the_others() {
        let mut s = Scheduler::new(SchedulerConfig::default(), 2);
        // Mirror copies of one flow, alternately pinned to path 0 and 1.
        for i in 0..20u32 {
            s.enqueue((i, 0), 200, 7, false, 0b01);
            s.enqueue((i, 1), 200, 7, false, 0b10);
        }
        // Path 0 never sends (a neighbor still being resolved, a full
        // queue); path 1 takes all of its copies, in order.
        let sent: Vec<(u32, usize)> = (0..20).map_while(|_| s.pull(1)).collect();
        assert_eq!(sent, (0..20).map(|i| (i, 1)).collect::<Vec<_>>());
        assert_eq!(s.pull(1), None);
        assert_eq!(s.pull(0), Some((0, 0)));
    }

    #[test]
    fn flows_share_fairly() {
        let mut s = Scheduler::new(SchedulerConfig::default(), 1);
        for i in 0..100u32 {
            s.enqueue((1, i), 1000, 1, false, 1);
        }
        for i in 0..10u32 {
            s.enqueue((2, i), 1000, 2, false, 1);
        }
        let first20: Vec<u32> = (0..20).map(|_| s.pull(0).unwrap().0).collect();
        let from2 = first20.iter().filter(|&&f| f == 2).count();
        assert!((8..=10).contains(&from2), "flow 2 got {from2} of 20");
    }

    #[test]
    fn longest_flow_loses_first() {
        let mut s = ten_packets();
        for i in 0..9u32 {
            s.enqueue((1, i), 100, 1, false, 1);
        }
        let dropped = s.enqueue((2, 0), 100, 2, false, 1);
        assert!(dropped.is_empty());
        let dropped = s.enqueue((2, 1), 100, 2, false, 1);
        assert_eq!(dropped, vec![(1, 8)], "the bulk flow's tail goes");
    }

    #[derive(Debug, Clone)]
    enum Op {
        Enqueue {
            flow: u64,
            urgent: bool,
            len: usize,
            allowed: PathMask,
        },
        Pull(usize),
        Down(usize),
        Up(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..6, prop::bool::weighted(0.1), 40usize..1500, 1u16..16)
                .prop_map(|(flow, urgent, len, allowed)| Op::Enqueue { flow, urgent, len, allowed }),
            4 => (0usize..4).prop_map(Op::Pull),
            1 => (0usize..4).prop_map(Op::Down),
            1 => (0usize..4).prop_map(Op::Up),
        ]
    }

    proptest! {
        /// Whatever happens: never more than the bound on a path; every
        /// packet ends exactly once as sent, dropped (overflow) or stranded
        /// (bound to a path that went down); unbound packets are never lost
        /// to a path failure; memory stays within its bounds.
        #[test]
        fn invariants(ops in prop::collection::vec(op(), 1..400), bound in 1usize..4) {
            let config = SchedulerConfig { bound_per_path: bound, max_packets: 50, max_bytes: 40_000, flow_buckets: 8, quantum: 1500 };
            let mut s = Scheduler::new(config, 4);
            let mut next = 0u32;
            let mut outcome: std::collections::HashMap<u32, &str> = Default::default();
            let end = |outcome: &mut std::collections::HashMap<u32, &str>, p: u32, how: &'static str| {
                prop_assert!(outcome.insert(p, how).is_none(), "packet {} ended twice", p);
                Ok(())
            };
            for op in ops {
                match op {
                    Op::Enqueue { flow, urgent, len, allowed } => {
                        for p in s.enqueue(next, len, flow, urgent, allowed) {
                            end(&mut outcome, p, "dropped")?;
                        }
                        next += 1;
                    }
                    Op::Pull(path) => {
                        if let Some(p) = s.pull(path) {
                            end(&mut outcome, p, "sent")?;
                        }
                    }
                    Op::Down(path) => {
                        let stranded = s.set_path_up(path, false);
                        prop_assert!(stranded.len() <= bound);
                        for p in stranded {
                            end(&mut outcome, p, "stranded")?;
                        }
                    }
                    Op::Up(path) => { s.set_path_up(path, true); }
                }
                for path in 0..4 {
                    prop_assert!(s.bound(path) <= bound);
                }
                prop_assert!(s.queued() <= 50);
                let waiting: usize = (0..4).map(|p| s.waiting_for(p)).sum();
                prop_assert!(waiting <= s.queued(), "{} waiting for one path, {} queued", waiting, s.queued());
            }
            // Bring every path up and drain: everything left comes out.
            for path in 0..4 { s.set_path_up(path, true); }
            for _ in 0..10_000 {
                let mut any = false;
                for path in 0..4 {
                    if let Some(p) = s.pull(path) {
                        end(&mut outcome, p, "sent")?;
                        any = true;
                    }
                }
                if !any { break; }
            }
            prop_assert_eq!(s.queued(), 0);
            prop_assert_eq!((0..4).map(|p| s.waiting_for(p)).sum::<usize>(), 0);
            prop_assert_eq!(outcome.len() as u32, next, "a packet vanished");
            let c = s.counters();
            prop_assert_eq!(c.sent + c.dropped_overflow + c.stranded, next as u64);
        }
    }
}
