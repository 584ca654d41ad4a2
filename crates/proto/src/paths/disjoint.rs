//! k maximally disjoint paths with minimum total cost.
//!
//! This is Suurballe's idea in its general form: successive shortest paths
//! in a unit-capacity flow network (min-cost flow), with Johnson potentials
//! so that every round is a Dijkstra on non-negative reduced costs. Each
//! round either adds one more disjoint path, re-routing earlier paths where
//! that lowers the total (the "interlacing" Bhandari's algorithm resolves),
//! or proves that no more disjoint paths exist. So the result is the largest
//! disjoint set of up to k paths, and among sets of that size, the cheapest
//! in total. It is not a greedy remove-and-retry heuristic, which can find
//! fewer disjoint paths than exist (the classic "trap" topology; see the
//! tests).
//!
//! Node-disjointness splits every node v into `in(v) -> out(v)` with
//! capacity 1; edge-disjointness gives that inner arc unlimited capacity and
//! keeps capacity 1 on every arc. Both are implicit: no second graph is
//! built.
//!
//! When fewer than k disjoint paths exist, the remaining paths are the
//! least shared with those before them, then the cheapest, one at a time
//! ([`super::shared`]). Those paths carry `shared: true`.
//!
//! The first round is the plain shortest-path tree from the source, which
//! [`DisjointPaths`] computes once and reuses for every destination. The
//! rounds after it alternate direction, the first searched back from the
//! target (`augment` says why that stays near the source-target
//! corridor), and a short walk of the residual graph ends them where a
//! cut lies next to the end a search would reach last, so that a search
//! that must fail and would settle nearly everything is not run
//! (docs/performance.md, "Path computation", has the figures).

use super::radix_heap::{self, RadixHeap};

use thiserror::Error;

use super::dijkstra::ShortestPathTree;
use super::path::{Disjointness, Path};
use super::shared::SharedExtras;
use crate::graph::{ArcIx, Graph, NodeIx};

/// Most paths one request may ask for: the data header's path index has
/// four bits.
pub const MAX_PATHS: usize = 16;

/// Why a path request cannot be answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum PathError {
    /// `k` is 0 or more than 16 (the most paths one request may ask for).
    #[error("k must be between 1 and {MAX_PATHS}, got {0}")]
    InvalidK(usize),
    /// A node index is not in the graph.
    #[error("node index {0} is not in the graph")]
    UnknownNode(NodeIx),
    /// Source and destination are the same node.
    #[error("source and destination are the same node")]
    SameEndpoints,
    /// The graph has more nodes than the searches' queue can index.
    #[error("the graph has {0} nodes; disjoint paths are computed on up to {max}", max = MAX_NODES)]
    TooLarge(usize),
}

/// Most nodes [`DisjointPaths`] takes: each is two states in its searches'
/// queue.
pub const MAX_NODES: usize = radix_heap::MAX_ITEMS / 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    None,
    /// Along an unused arc.
    Arc(ArcIx),
    /// Backwards along a used arc (cancelling its flow).
    Cancel(ArcIx),
    /// `in(v) -> out(v)`.
    Enter,
    /// `out(v) -> in(v)`, cancelling a node's use.
    Leave,
}

const fn state_in(v: NodeIx) -> usize {
    2 * v as usize
}
const fn state_out(v: NodeIx) -> usize {
    2 * v as usize + 1
}
const fn is_in_state(state: usize) -> bool {
    state & 1 == 0
}
const fn node_of(state: usize) -> NodeIx {
    (state / 2) as NodeIx
}

/// Computes disjoint path sets from one source; reuses its shortest-path
/// tree and scratch space across destinations.
pub struct DisjointPaths<'g> {
    graph: &'g Graph,
    base: ShortestPathTree,
    // Scratch, sized once.
    arc_flow: Vec<bool>,
    node_flow: Vec<u8>,
    potential: Vec<i64>,
    dist: Vec<i64>,
    pred: Vec<Step>,
    heap: RadixHeap,
    /// Finds the least-shared extras, with scratch space of its own.
    extras: SharedExtras,
    /// The residual arcs at one state (`residual`'s answer).
    arcs: Vec<(usize, i64, Step)>,
    /// `cut_near_the_far_end`'s walk: states seen (by stamp) and in order.
    seen: Vec<u32>,
    stamp: u32,
    walk: Vec<u32>,
}

/// Most states `cut_near_the_far_end` walks before it leaves the
/// question to the search.
const CUT_BUDGET: usize = 128;

impl<'g> DisjointPaths<'g> {
    /// Prepares requests from `source`: computes its shortest-path tree once.
    pub fn new(graph: &'g Graph, source: NodeIx) -> Result<Self, PathError> {
        if graph.node_count() > MAX_NODES {
            return Err(PathError::TooLarge(graph.node_count()));
        }
        if source as usize >= graph.node_count() {
            return Err(PathError::UnknownNode(source));
        }
        let states = 2 * graph.node_count();
        let base = ShortestPathTree::compute(graph, source);
        Ok(DisjointPaths {
            graph,
            base,
            arc_flow: vec![false; graph.arc_count()],
            node_flow: vec![0; graph.node_count()],
            potential: vec![0; states],
            dist: vec![0; states],
            pred: vec![Step::None; states],
            heap: RadixHeap::new(states),
            extras: SharedExtras::new(graph),
            arcs: Vec::new(),
            seen: vec![0; states],
            stamp: 0,
            walk: Vec::new(),
        })
    }

    /// The node every path starts from.
    pub fn source(&self) -> NodeIx {
        self.base.source
    }

    /// Up to `k` paths to `target`: as many mutually disjoint ones as exist
    /// (cheapest total first), then least-shared ones flagged `shared`.
    /// An empty result means the target is unreachable.
    pub fn to(
        &mut self,
        target: NodeIx,
        k: usize,
        mode: Disjointness,
    ) -> Result<Vec<Path>, PathError> {
        if k == 0 || k > MAX_PATHS {
            return Err(PathError::InvalidK(k));
        }
        if target as usize >= self.graph.node_count() {
            return Err(PathError::UnknownNode(target));
        }
        let source = self.base.source;
        if target == source {
            return Err(PathError::SameEndpoints);
        }
        let Some(first) = self.base.path_to(self.graph, target) else {
            return Ok(Vec::new());
        };
        self.reset(mode);
        for &a in &first.arcs {
            self.arc_flow[a as usize] = true;
        }
        for &v in first.transit() {
            self.node_flow[v as usize] += 1;
        }
        // No more disjoint paths than the source has neighbors to leave by
        // or the target has neighbors to arrive from: stop there rather
        // than run a last search that must fail.
        let bound = k
            .min(self.fan(source, target, mode, true))
            .min(self.fan(target, source, mode, false));
        let mut flow = 1;
        // The first search runs back from the target (the potentials are
        // distances from the source), then the direction alternates: see
        // `augment`.
        while flow < bound {
            // A cut next to the end the search would reach last ends the
            // rounds without it: the states on that side run out within a
            // small budget. (Near its own end, a failing search is cheap.)
            let forward = flow % 2 == 0;
            let cut = self.cut_near_the_far_end(target, mode, forward);
            if cut {
                break;
            }
            let found = self.augment(target, mode, forward);
            if !found {
                break;
            }
            flow += 1;
        }
        let mut paths = self.decompose(target, flow);
        paths.sort_by(|a, b| (a.cost, &a.nodes).cmp(&(b.cost, &b.nodes)));
        if paths.len() < k {
            self.extras
                .add(self.graph, &self.base, &mut paths, target, k, mode);
        }
        Ok(paths)
    }

    /// An upper bound on disjoint paths through `v`'s side: its distinct
    /// neighbors (node mode; every direct arc to `other` counts apart, as
    /// parallel links are node-disjoint paths) or its links (edge mode).
    fn fan(&self, v: NodeIx, other: NodeIx, mode: Disjointness, out: bool) -> usize {
        let g = self.graph;
        let arcs: Vec<&crate::graph::Arc> = if out {
            g.out_arcs(v).map(|a| g.arc(a)).collect()
        } else {
            g.in_arcs(v).iter().map(|&a| g.arc(a)).collect()
        };
        let mut ends: Vec<(u32, u32)> = arcs
            .iter()
            .map(|a| {
                let far = if out { a.to } else { a.from };
                match mode {
                    Disjointness::Node if far != other => (far, 0),
                    _ => (far, a.link),
                }
            })
            .collect();
        ends.sort_unstable();
        ends.dedup();
        ends.len()
    }

    fn reset(&mut self, _mode: Disjointness) {
        self.arc_flow.fill(false);
        self.node_flow.fill(0);
        // Exact distances are feasible potentials: every arc's reduced cost
        // c + d(u) - d(v) is non-negative. Unreachable nodes never enter a
        // search from the source, so their potential is never read.
        for (v, &d) in self.base.dist.iter().enumerate() {
            let d = if d == u64::MAX { 0 } else { d as i64 };
            self.potential[2 * v] = d;
            self.potential[2 * v + 1] = d;
        }
    }

    /// Whether the states on the far side of a search about to run
    /// `forward` (from the source) or back from the target number at most
    /// [`CUT_BUDGET`]: before a forward search, the states that reach the
    /// target through residual arcs; before a backward one, the states
    /// the source reaches. Then no augmenting path exists, found at the
    /// cost of that small side alone. A search that fails settles every
    /// state of its own side, which is cheap where the cut is near its
    /// own end and may be the whole graph where it is near the far one;
    /// so only the far end is walked.
    fn cut_near_the_far_end(&mut self, target: NodeIx, mode: Disjointness, forward: bool) -> bool {
        let (src, sink) = (state_out(self.base.source), state_in(target));
        if forward {
            self.side_runs_out(sink, src, false, target, mode)
        } else {
            self.side_runs_out(src, sink, true, target, mode)
        }
    }

    /// A breadth-first walk of residual arcs from `start` (forward, or
    /// backward along them) that meets neither `goal` nor more than
    /// [`CUT_BUDGET`] states: true when it ran out first.
    fn side_runs_out(
        &mut self,
        start: usize,
        goal: usize,
        forward: bool,
        target: NodeIx,
        mode: Disjointness,
    ) -> bool {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.seen.fill(0);
            self.stamp = 1;
        }
        let stamp = self.stamp;
        self.walk.clear();
        self.walk.push(start as u32);
        self.seen[start] = stamp;
        let mut arcs = std::mem::take(&mut self.arcs);
        let mut next = 0;
        let mut ran_out = true;
        while next < self.walk.len() {
            let x = self.walk[next] as usize;
            next += 1;
            self.residual(x, forward, target, mode, &mut arcs);
            for &(y, _, _) in &arcs {
                if y == goal {
                    ran_out = false;
                } else if self.seen[y] != stamp {
                    self.seen[y] = stamp;
                    self.walk.push(y as u32);
                }
            }
            if !ran_out || self.walk.len() > CUT_BUDGET {
                ran_out = false;
                break;
            }
        }
        self.arcs = arcs;
        ran_out
    }

    /// The residual arcs at state `x` into `out` (cleared): with
    /// `forward` those leaving it, else those entering it; each as (the
    /// state at its other end, its cost, the step it is). The one place
    /// the residual graph is defined, for the searches both ways and the
    /// walks. A node the source does not reach is on no augmenting path
    /// and is left out (its potential, 0, is not feasible).
    fn residual(
        &self,
        x: usize,
        forward: bool,
        target: NodeIx,
        mode: Disjointness,
        out: &mut Vec<(usize, i64, Step)>,
    ) {
        let g = self.graph;
        let v = node_of(x);
        let cost = |a: ArcIx| g.arc(a).cost.units() as i64;
        out.clear();
        let mut push = |y: usize, c: i64, step: Step| {
            if self.base.dist[node_of(y) as usize] != u64::MAX {
                out.push((y, c, step));
            }
        };
        match (forward, is_in_state(x)) {
            // Leaving in(v): through v, or cancelling a used arc into v.
            (true, true) => {
                if self.enters(v, target, mode) {
                    push(state_out(v), 0, Step::Enter);
                }
                for &a in g.in_arcs(v) {
                    if self.arc_flow[a as usize] {
                        push(state_out(g.arc(a).from), -cost(a), Step::Cancel(a));
                    }
                }
            }
            // Leaving out(v): along an unused arc, or backing out of v.
            (true, false) => {
                for a in g.out_arcs(v) {
                    if !self.arc_flow[a as usize] {
                        push(state_in(g.arc(a).to), cost(a), Step::Arc(a));
                    }
                }
                if self.leaves(v, target, mode) {
                    push(state_in(v), 0, Step::Leave);
                }
            }
            // Into in(v): along an unused arc, or backing out of v.
            (false, true) => {
                for &a in g.in_arcs(v) {
                    if !self.arc_flow[a as usize] {
                        push(state_out(g.arc(a).from), cost(a), Step::Arc(a));
                    }
                }
                if self.leaves(v, target, mode) {
                    push(state_out(v), 0, Step::Leave);
                }
            }
            // Into out(v): through v, or cancelling a used arc out of v.
            (false, false) => {
                if self.enters(v, target, mode) {
                    push(state_in(v), 0, Step::Enter);
                }
                for a in g.out_arcs(v) {
                    if self.arc_flow[a as usize] {
                        push(state_in(g.arc(a).to), -cost(a), Step::Cancel(a));
                    }
                }
            }
        }
    }

    /// Whether `v`'s inner arc in(v) -> out(v) is open: a path may pass
    /// through `v` (never the ends; in node mode only while unused).
    fn enters(&self, v: NodeIx, target: NodeIx, mode: Disjointness) -> bool {
        v != self.base.source
            && v != target
            && (mode == Disjointness::Edge || self.node_flow[v as usize] == 0)
    }

    /// Whether out(v) -> in(v) is open: in node mode only to undo `v`'s
    /// use; in edge mode the split is only bookkeeping and both ways are
    /// free (a path may cancel one used arc into `v` and then another).
    fn leaves(&self, v: NodeIx, target: NodeIx, mode: Disjointness) -> bool {
        match mode {
            Disjointness::Node => {
                v != self.base.source && v != target && self.node_flow[v as usize] > 0
            }
            Disjointness::Edge => v != target,
        }
    }

    /// One round of successive shortest paths: a Dijkstra on reduced
    /// costs for the cheapest augmenting path, then the flow and the
    /// potentials updated. Returns false when no augmenting path exists
    /// (the disjoint set is maximum).
    ///
    /// With `forward` false the search runs back from the target's
    /// in-state along residual arcs reversed until the source is settled:
    /// the same path (reduced costs do not depend on which way they are
    /// walked), but goal-directed where the potentials are distances from
    /// the source: a state's reduced distance to the target is then the
    /// detour through it, so the search stays near the source-target
    /// corridor where a forward one would settle every state the
    /// shortest-path tree reaches at reduced cost 0. The new potentials
    /// (minus the backward distances) suit a forward search next, whose
    /// update (plus the forward distances) suits a backward one again:
    /// `to` alternates.
    fn augment(&mut self, target: NodeIx, mode: Disjointness, forward: bool) -> bool {
        let source = self.base.source;
        let (src, sink) = (state_out(source), state_in(target));
        let (start, goal) = if forward { (src, sink) } else { (sink, src) };
        self.dist.fill(i64::MAX);
        self.heap.clear();
        self.dist[start] = 0;
        self.pred[start] = Step::None;
        self.heap.push(0, start as u32);
        let mut arcs = std::mem::take(&mut self.arcs);
        let mut reached = false;
        while let Some((d, x)) = self.heap.pop() {
            let (d, x) = (d as i64, x as usize);
            // The heap holds each state once, at its best label.
            debug_assert_eq!(d, self.dist[x]);
            if x == goal {
                reached = true;
                break;
            }
            // An arc's reduced cost: its cost plus its tail's potential
            // minus its head's (x is the tail forward, the head backward).
            let reduced = |y: usize, cost: i64, this: &Self| {
                if forward {
                    cost + this.potential[x] - this.potential[y]
                } else {
                    cost + this.potential[y] - this.potential[x]
                }
            };
            self.residual(x, forward, target, mode, &mut arcs);
            for &(y, cost, step) in &arcs {
                let nd = d + reduced(y, cost, self);
                debug_assert!(nd >= d, "negative reduced cost");
                if nd >= self.dist[y] {
                    continue;
                }
                self.dist[y] = nd;
                // The step between y and x: the arc into y forward, the
                // arc out of y toward the target backward.
                self.pred[y] = step;
                let u = node_of(y);
                // An unused node's in-state has one residual arc out, to
                // its out-state, and its out-state one in, from its
                // in-state: follow it now instead of queueing y (the same
                // labels, half the heap work).
                let single = is_in_state(y) == forward
                    && mode == Disjointness::Node
                    && self.node_flow[u as usize] == 0
                    && u != source
                    && u != target;
                if !single {
                    self.heap.push(nd as u64, y as u32);
                    continue;
                }
                let z = y ^ 1;
                let nz = if forward {
                    nd + self.potential[y] - self.potential[z]
                } else {
                    nd + self.potential[z] - self.potential[y]
                };
                if nz < self.dist[z] {
                    self.dist[z] = nz;
                    self.pred[z] = Step::Enter;
                    self.heap.push(nz as u64, z as u32);
                }
            }
        }
        self.arcs = arcs;
        if !reached {
            return false;
        }
        // Keep reduced costs non-negative for the next round: plus the
        // forward distances, or minus the backward ones, each at most the
        // goal's.
        let dg = self.dist[goal];
        for (p, &d) in self.potential.iter_mut().zip(&self.dist) {
            if forward {
                *p += d.min(dg);
            } else {
                *p -= d.min(dg);
            }
        }
        // Apply the augmenting path, from the goal back to the start.
        let mut x = goal;
        while x != start {
            x = self.take_step(x, mode);
        }
        true
    }

    /// Applies the step `pred[x]` of an augmenting path to the flow (an
    /// arc taken or its use cancelled, a node entered or left) and
    /// returns the state at the step's other end.
    fn take_step(&mut self, x: usize, mode: Disjointness) -> usize {
        let g = self.graph;
        match self.pred[x] {
            Step::Arc(a) | Step::Cancel(a) => {
                let taken = matches!(self.pred[x], Step::Arc(_));
                self.arc_flow[a as usize] = taken;
                // The arc's two states: out(from) and in(to); the step
                // ends at whichever `x` is not.
                let (from, to) = (state_out(g.arc(a).from), state_in(g.arc(a).to));
                if x == from {
                    to
                } else {
                    from
                }
            }
            Step::Enter => {
                if mode == Disjointness::Node {
                    self.node_flow[node_of(x) as usize] += 1;
                }
                x ^ 1
            }
            Step::Leave => {
                if mode == Disjointness::Node {
                    self.node_flow[node_of(x) as usize] -= 1;
                }
                x ^ 1
            }
            Step::None => unreachable!("augmenting path broken at state {x}"),
        }
    }

    /// Splits the flow into `flow` paths from source to target.
    fn decompose(&mut self, target: NodeIx, flow: usize) -> Vec<Path> {
        let g = self.graph;
        let source = self.base.source;
        let mut paths = Vec::with_capacity(flow);
        for _ in 0..flow {
            let mut arcs = Vec::new();
            let mut v = source;
            while v != target {
                let next = g.out_arcs(v).find(|&a| self.arc_flow[a as usize]);
                // Min-cost flow on positive costs has no cycles, so every
                // unit of flow leaving the source reaches the target.
                let a = next.expect("flow is conserved");
                self.arc_flow[a as usize] = false;
                arcs.push(a);
                v = g.arc(a).to;
            }
            paths.push(Path::from_arcs(g, source, arcs));
        }
        paths
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphBuilder;
    use crate::metric::Metric;

    fn graph(n: usize, links: &[(u32, u32, u32)]) -> Graph {
        let mut b = GraphBuilder::new(n);
        for &(x, y, c) in links {
            let m = Some(Metric::from_units(c));
            b.add_link(x, y, m, m);
        }
        b.build()
    }

    fn nodes(paths: &[Path]) -> Vec<Vec<NodeIx>> {
        paths.iter().map(|p| p.nodes.clone()).collect()
    }

    /// The trap topology: the shortest path 0-1-2-3 blocks both disjoint
    /// paths; remove-and-retry finds only one, min-cost flow finds two.
    #[test]
    fn escapes_the_trap_that_greedy_falls_into() {
        let g = graph(
            6,
            &[
                (0, 1, 1),
                (1, 2, 1),
                (2, 3, 1),
                (0, 4, 2),
                (4, 2, 2),
                (1, 5, 2),
                (5, 3, 2),
            ],
        );
        let mut dp = DisjointPaths::new(&g, 0).unwrap();
        let paths = dp.to(3, 2, Disjointness::Node).unwrap();
        assert_eq!(nodes(&paths), vec![vec![0, 1, 5, 3], vec![0, 4, 2, 3]]);
        assert!(paths.iter().all(|p| !p.shared));
        assert_eq!(paths.iter().map(|p| p.cost).sum::<u64>(), 10);
    }

    #[test]
    fn fewer_disjoint_than_asked_gives_flagged_least_shared_extras() {
        // Two disjoint routes 0-1-3 and 0-2-3; a third must share.
        let g = graph(
            5,
            &[
                (0, 1, 1),
                (1, 3, 1),
                (0, 2, 1),
                (2, 3, 2),
                (0, 4, 1),
                (4, 1, 1),
            ],
        );
        let mut dp = DisjointPaths::new(&g, 0).unwrap();
        let paths = dp.to(3, 3, Disjointness::Node).unwrap();
        assert_eq!(paths.len(), 3);
        assert_eq!(nodes(&paths[..2]), vec![vec![0, 1, 3], vec![0, 2, 3]]);
        assert_eq!(paths[2].nodes, vec![0, 4, 1, 3]);
        assert!(paths[2].shared);
        assert!(
            !paths[0].shared && !paths[1].shared,
            "the disjoint core is not flagged"
        );
    }

    #[test]
    fn edge_disjoint_may_share_nodes_but_not_links() {
        // A bow tie: everything passes node 2.
        let g = graph(
            5,
            &[
                (0, 1, 1),
                (1, 2, 1),
                (0, 2, 1),
                (2, 3, 1),
                (2, 4, 1),
                (4, 3, 1),
            ],
        );
        let mut dp = DisjointPaths::new(&g, 0).unwrap();
        let node = dp.to(3, 2, Disjointness::Node).unwrap();
        assert!(node[1].shared, "no two node-disjoint paths exist");
        let edge = dp.to(3, 2, Disjointness::Edge).unwrap();
        assert_eq!(edge.len(), 2);
        assert!(edge.iter().all(|p| !p.shared && p.nodes.contains(&2)));
        assert!(!edge[0].shares_with(&g, &edge[1], Disjointness::Edge));
        assert_eq!(edge[0].cost + edge[1].cost, 6);
    }

    /// Found by the property test: the optimum needs an augmenting path
    /// that cancels two used arcs in a row through node 1 (edge mode).
    #[test]
    fn edge_mode_cancels_consecutive_arcs() {
        let mut b = GraphBuilder::new(7);
        let m = |c| Some(Metric::from_units(c));
        b.add_link(3, 4, m(1), m(4));
        b.add_link(1, 3, m(1), m(1));
        b.add_link(0, 4, m(9), m(9));
        b.add_link(3, 6, m(1), m(1));
        b.add_link(0, 2, m(1), m(1));
        b.add_link(2, 6, m(6), m(6));
        b.add_link(1, 2, m(1), m(1));
        let g = b.build();
        let paths = DisjointPaths::new(&g, 0)
            .unwrap()
            .to(6, 2, Disjointness::Edge)
            .unwrap();
        assert_eq!(nodes(&paths), vec![vec![0, 2, 6], vec![0, 4, 3, 6]]);
        assert_eq!(paths.iter().map(|p| p.cost).sum::<u64>(), 21);
    }

    #[test]
    fn a_line_has_one_path_and_no_repeats() {
        let g = graph(3, &[(0, 1, 1), (1, 2, 1)]);
        let mut dp = DisjointPaths::new(&g, 0).unwrap();
        let paths = dp.to(2, 4, Disjointness::Node).unwrap();
        assert_eq!(nodes(&paths), vec![vec![0, 1, 2]]);
        assert!(!paths[0].shared);
    }

    #[test]
    fn bad_requests_are_errors() {
        let g = graph(3, &[(0, 1, 1)]);
        let mut dp = DisjointPaths::new(&g, 0).unwrap();
        assert_eq!(dp.to(1, 0, Disjointness::Node), Err(PathError::InvalidK(0)));
        assert_eq!(
            dp.to(1, 17, Disjointness::Node),
            Err(PathError::InvalidK(17))
        );
        assert_eq!(
            dp.to(0, 1, Disjointness::Node),
            Err(PathError::SameEndpoints)
        );
        assert_eq!(
            dp.to(9, 1, Disjointness::Node),
            Err(PathError::UnknownNode(9))
        );
        assert_eq!(dp.to(2, 2, Disjointness::Node), Ok(vec![]));
        assert!(DisjointPaths::new(&g, 5).is_err());
    }
}
