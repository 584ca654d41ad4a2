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
//! [`DisjointPaths`] computes once and reuses for every destination. Each
//! round after it searches from both ends at once (a bidirectional
//! Dijkstra on the reduced costs, the side that has settled fewer states
//! going next), and its potentials are raised by the forward distances
//! and lowered by the backward ones, each capped so that the two caps add
//! up to the path found (`augment` proves this keeps every reduced cost
//! non-negative). Balancing the two sides also ends the rounds cheaply
//! where no more paths exist: a search that must fail stops once the
//! smaller side of the cut is exhausted, at twice its cost at most
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
    fwd: Side,
    bwd: Side,
    /// Finds the least-shared extras, with scratch space of its own.
    extras: SharedExtras,
    /// The residual arcs at one state (`residual`'s answer).
    arcs: Vec<(usize, i64, Step)>,
    /// States on an augmenting path's forward half (by stamp).
    seen: Vec<u32>,
    stamp: u32,
}

/// One side of a round's bidirectional search: labels, steps, queue.
struct Side {
    dist: Vec<i64>,
    /// The step at each labelled state toward this side's end.
    pred: Vec<Step>,
    heap: RadixHeap,
    /// The key of the last state settled: every state below it is settled.
    radius: i64,
    settled: usize,
}

impl Side {
    fn new(states: usize) -> Self {
        Side {
            dist: vec![i64::MAX; states],
            pred: vec![Step::None; states],
            heap: RadixHeap::new(states),
            radius: 0,
            settled: 0,
        }
    }

    /// Starts a search at `at`.
    fn start(&mut self, at: usize) {
        self.dist.fill(i64::MAX);
        self.heap.clear();
        self.dist[at] = 0;
        self.pred[at] = Step::None;
        self.heap.push(0, at as u32);
        self.radius = 0;
        self.settled = 0;
    }
}

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
            fwd: Side::new(states),
            bwd: Side::new(states),
            extras: SharedExtras::new(graph),
            arcs: Vec::new(),
            seen: vec![0; states],
            stamp: 0,
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
        while flow < bound && self.augment(target, mode) {
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

    /// The residual arcs at state `x` into `out` (cleared): with
    /// `forward` those leaving it, else those entering it; each as (the
    /// state at its other end, its cost, the step it is). The one place
    /// the residual graph is defined, for both sides of the searches. A
    /// node the source does not reach is on no augmenting path and is
    /// left out (its potential, 0, is not feasible).
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

    /// One round of successive shortest paths: the cheapest augmenting
    /// path on reduced costs, then the flow and the potentials updated.
    /// Returns false when no augmenting path exists (the disjoint set is
    /// maximum).
    ///
    /// The search runs from the source's out-state forward and from the
    /// target's in-state backward along residual arcs reversed (reduced
    /// costs do not depend on which way an arc is walked), the side that
    /// has settled fewer states next. Every relaxation that labels a state
    /// the other side has labelled offers a path; the best, `D`, is the
    /// cheapest once the key about to be settled plus the other side's
    /// radius reaches it (bidirectional Dijkstra's rule). Where one side's
    /// states run out, the search ends too: every state that side reaches
    /// is settled, so the best path offered is the cheapest, and where
    /// none was offered no augmenting path exists.
    ///
    /// The new potentials are `p + min(df, a) - min(db, b)`, with `df`,
    /// `db` the distances from the source and to the target, `a` at most
    /// the forward radius, `b = D - a` at most the backward one (the rule
    /// that stopped the search makes room for both). Every state with `df`
    /// below `a` is settled forward, so those labels are exact, and the
    /// rest read `a`; likewise backward. The caps are feasible: an arc u ->
    /// v of reduced cost `l` gets `l + F(u) - F(v) + G(v) - G(u)`, where
    /// `F = min(df, a)` and `G = min(db, b)`, and `F(v) <= F(u) + l`,
    /// `G(u) <= G(v) + l`; if both differences are negative, `df(u) < a`
    /// and `db(v) < b`, and since `df(u) + l + db(v) >= D = a + b` the sum
    /// is still at least 0. Along the path found `df + db = D` everywhere,
    /// which makes every arc of it cost 0, so its reversal is feasible too.
    /// With `a = D` this is the forward Dijkstra's update, with `a = 0`
    /// the backward one's.
    fn augment(&mut self, target: NodeIx, mode: Disjointness) -> bool {
        let source = self.base.source;
        let (src, sink) = (state_out(source), state_in(target));
        self.fwd.start(src);
        self.bwd.start(sink);
        let mut best = i64::MAX;
        let mut meet = usize::MAX;
        let mut arcs = std::mem::take(&mut self.arcs);
        // Each side's radius when the search stopped.
        let (forward_radius, backward_radius) = loop {
            let forward = self.fwd.settled <= self.bwd.settled;
            let side = if forward {
                &mut self.fwd
            } else {
                &mut self.bwd
            };
            let Some((d, x)) = side.heap.pop() else {
                let exhausted = (self.fwd.radius, self.bwd.radius);
                break if forward {
                    (i64::MAX, exhausted.1)
                } else {
                    (exhausted.0, i64::MAX)
                };
            };
            let (d, x) = (d as i64, x as usize);
            let other_radius = if forward {
                self.bwd.radius
            } else {
                self.fwd.radius
            };
            if d.saturating_add(other_radius) >= best {
                break if forward {
                    (d, other_radius)
                } else {
                    (other_radius, d)
                };
            }
            self.residual(x, forward, target, mode, &mut arcs);
            let (side, other) = if forward {
                (&mut self.fwd, &self.bwd)
            } else {
                (&mut self.bwd, &self.fwd)
            };
            side.radius = d;
            side.settled += 1;
            let potential = &self.potential;
            // An arc's reduced cost: its cost plus its tail's potential
            // minus its head's (x is the tail forward, the head backward).
            let reduced = |x: usize, y: usize, cost: i64| {
                if forward {
                    cost + potential[x] - potential[y]
                } else {
                    cost + potential[y] - potential[x]
                }
            };
            let mut label = |y: usize, nd: i64, step: Step, side: &mut Side| {
                side.dist[y] = nd;
                side.pred[y] = step;
                let there = other.dist[y];
                if there != i64::MAX && nd + there < best {
                    best = nd + there;
                    meet = y;
                }
            };
            for &(y, cost, step) in &arcs {
                let nd = d + reduced(x, y, cost);
                debug_assert!(nd >= d, "negative reduced cost");
                if nd >= side.dist[y] {
                    continue;
                }
                label(y, nd, step, side);
                // An unused node's in-state has one residual arc out, to
                // its out-state, and its out-state one in, from its
                // in-state: follow it now instead of queueing y (the same
                // labels, half the heap work).
                let u = node_of(y);
                let single = is_in_state(y) == forward
                    && mode == Disjointness::Node
                    && self.node_flow[u as usize] == 0
                    && u != source
                    && u != target;
                if !single {
                    side.heap.push(nd as u64, y as u32);
                    continue;
                }
                let z = y ^ 1;
                let nz = nd + reduced(y, z, 0);
                if nz < side.dist[z] {
                    label(z, nz, Step::Enter, side);
                    side.heap.push(nz as u64, z as u32);
                }
            }
        };
        self.arcs = arcs;
        if best == i64::MAX {
            return false;
        }
        let a = forward_radius.min(best);
        let b = best - a;
        debug_assert!(b <= backward_radius, "the stopping rule leaves room");
        let labels = self.fwd.dist.iter().zip(&self.bwd.dist);
        for (p, (&df, &db)) in self.potential.iter_mut().zip(labels) {
            *p += df.min(a) - db.min(b);
        }
        self.apply(meet, src, sink, mode);
        true
    }

    /// Applies the augmenting path through `meet`: the forward labels'
    /// steps back to `src` and the backward ones' on to `sink`. Where the
    /// two halves cross before `meet` (possible only through a cycle of
    /// reduced cost 0), the path joins them at the last state of the
    /// backward half that the forward half holds, so it stays simple.
    fn apply(&mut self, meet: usize, src: usize, sink: usize, mode: Disjointness) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.seen.fill(0);
            self.stamp = 1;
        }
        let mut x = meet;
        loop {
            self.seen[x] = self.stamp;
            if x == src {
                break;
            }
            x = self.other_end(x, self.fwd.pred[x]);
        }
        let (mut join, mut x) = (meet, meet);
        while x != sink {
            x = self.other_end(x, self.bwd.pred[x]);
            if self.seen[x] == self.stamp {
                join = x;
            }
        }
        let mut x = join;
        while x != src {
            x = self.take_step(x, self.fwd.pred[x], mode);
        }
        let mut x = join;
        while x != sink {
            x = self.take_step(x, self.bwd.pred[x], mode);
        }
    }

    /// The state at the other end of step `step` taken at `x`, an end of
    /// it (the one place the steps' ends are read).
    fn other_end(&self, x: usize, step: Step) -> usize {
        match step {
            Step::Arc(a) | Step::Cancel(a) => {
                let g = self.graph;
                let (from, to) = (state_out(g.arc(a).from), state_in(g.arc(a).to));
                if x == from {
                    to
                } else {
                    from
                }
            }
            Step::Enter | Step::Leave => x ^ 1,
            Step::None => unreachable!("augmenting path broken at state {x}"),
        }
    }

    /// Applies the step `step` of an augmenting path to the flow (an
    /// arc taken or its use cancelled, a node entered or left) and
    /// returns the state at the step's other end.
    fn take_step(&mut self, x: usize, step: Step, mode: Disjointness) -> usize {
        let node = node_of(x) as usize;
        match step {
            Step::Arc(a) => self.arc_flow[a as usize] = true,
            Step::Cancel(a) => self.arc_flow[a as usize] = false,
            Step::Enter if mode == Disjointness::Node => self.node_flow[node] += 1,
            Step::Leave if mode == Disjointness::Node => self.node_flow[node] -= 1,
            Step::Enter | Step::Leave | Step::None => {}
        }
        self.other_end(x, step)
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
