//! The least-shared extras: when fewer than k disjoint paths exist, each
//! further path is the one sharing the least with the paths before it,
//! and among those the cheapest. A share is one earlier path's use of a
//! link the new path takes or (node mode only) of a node it passes
//! through; the ends are never counted.
//!
//! Each extra is a cheapest path where every arc costs its own cost plus
//! a penalty per share, the penalty above the cost of any simple path.
//! With that penalty a plain Dijkstra settles every node it reaches with
//! fewer shares before any with more: nearly the whole mesh per extra.
//! So the search is an A* with two consistent estimates added up:
//! - the landmarks' lower bound on the own costs to the target
//!   ([`super::landmarks`]), which directs it once it has taken the shares
//!   the source's side forces;
//! - the fewest shares from each node to the target, counted by a short
//!   walk back from the target, which keeps it from settling every node
//!   of fewer shares before it takes the shares the target's side forces.
//!
//! Both are consistent, so the answer is exactly the least shared and
//! then the cheapest (the property test in `tests/paths_properties.rs`
//! checks it against every simple path).

use super::dijkstra::ShortestPathTree;
use super::landmarks::Landmarks;
use super::path::{Disjointness, Path};
use super::radix_heap::RadixHeap;
use crate::graph::{ArcIx, Graph, NodeIx};

/// How many landmarks direct the searches: each costs two Dijkstras, once
/// per source, at its first extra.
const LANDMARKS: usize = 4;

/// Most nodes `count_shares_to` settles walking back from a target.
const SHARE_BUDGET: usize = 64;

/// Finds least-shared extras from one source; scratch space sized once.
pub(crate) struct SharedExtras {
    heap: RadixHeap,
    /// `cheapest`'s distances, estimates to the target and predecessor
    /// arcs, per node.
    dist: Vec<u64>,
    estimate: Vec<u64>,
    pred: Vec<ArcIx>,
    /// Chosen at the first extra: requests that need none never pay.
    landmarks: Option<Landmarks>,
    /// Uses of each node (as a transit node) and link by the paths so far.
    node_use: Vec<u32>,
    link_use: Vec<u32>,
    /// `count_shares_to`'s answer, the nodes it wrote, and its buckets
    /// (one per share count).
    shares_to: Vec<u32>,
    share_touched: Vec<NodeIx>,
    share_buckets: Vec<Vec<NodeIx>>,
}

impl SharedExtras {
    pub(crate) fn new(graph: &Graph) -> Self {
        let n = graph.node_count();
        SharedExtras {
            heap: RadixHeap::new(n),
            dist: vec![u64::MAX; n],
            estimate: vec![0; n],
            pred: vec![0; n],
            landmarks: None,
            node_use: vec![0; n],
            link_use: vec![0; graph.link_count()],
            shares_to: vec![u32::MAX; n],
            share_touched: Vec::new(),
            share_buckets: Vec::new(),
        }
    }

    /// Adds least-shared paths from `base`'s source to `target` to `paths`
    /// until there are `k` or no new path exists.
    pub(crate) fn add(
        &mut self,
        g: &Graph,
        base: &ShortestPathTree,
        paths: &mut Vec<Path>,
        target: NodeIx,
        k: usize,
        mode: Disjointness,
    ) {
        let penalty = g.total_cost().saturating_add(1);
        self.node_use.fill(0);
        self.link_use.fill(0);
        for p in paths.iter() {
            self.count(g, p);
        }
        while paths.len() < k {
            let (node_use, link_use) = (&self.node_use, &self.link_use);
            let shares = |a: ArcIx| {
                let arc = g.arc(a);
                let mut shared = link_use[arc.link as usize];
                if mode == Disjointness::Node && arc.to != target {
                    shared += node_use[arc.to as usize];
                }
                shared
            };
            let cost = |a: ArcIx| {
                let surcharge = penalty.saturating_mul(shares(a) as u64);
                (g.arc(a).cost.units() as u64).saturating_add(surcharge)
            };
            let cap = count_shares_to(
                g,
                target,
                shares,
                &mut self.shares_to,
                &mut self.share_touched,
                &mut self.share_buckets,
            );
            let shares_to = &self.shares_to;
            let floor = |v: NodeIx| match shares_to[v as usize].min(cap) {
                u32::MAX => None,
                s => Some(penalty.saturating_mul(s as u64)),
            };
            let landmarks = self
                .landmarks
                .get_or_insert_with(|| Landmarks::choose(g, &base.dist, LANDMARKS));
            let mut search = Search {
                heap: &mut self.heap,
                dist: &mut self.dist,
                estimate: &mut self.estimate,
                pred: &mut self.pred,
            };
            let found = search.cheapest(g, base.source, target, cost, |v| {
                Some(landmarks.lower_bound(v, target)?.saturating_add(floor(v)?))
            });
            let Some(mut p) = found else {
                break;
            };
            if paths.iter().any(|q| q.arcs == p.arcs) {
                break; // nothing new: every remaining path repeats one we have
            }
            p.shared = true;
            self.count(g, &p);
            paths.push(p);
        }
    }

    fn count(&mut self, g: &Graph, p: &Path) {
        for &a in &p.arcs {
            self.link_use[g.arc(a).link as usize] += 1;
        }
        for &v in p.transit() {
            self.node_use[v as usize] += 1;
        }
    }
}

/// `cheapest`'s scratch space, borrowed from [`SharedExtras`].
struct Search<'a> {
    heap: &'a mut RadixHeap,
    dist: &'a mut [u64],
    estimate: &'a mut [u64],
    pred: &'a mut [ArcIx],
}

impl Search<'_> {
    /// The cheapest path from `source` to `target` at the arc costs
    /// `cost`, if there is one: an A* search whose `estimate` at a node is
    /// a consistent lower bound on its cost to the target (`None` where it
    /// cannot reach it). So it stops, exact, once the target is settled,
    /// having settled only nodes whose cost from the source plus estimate
    /// is at most the answer's.
    fn cheapest(
        &mut self,
        g: &Graph,
        source: NodeIx,
        target: NodeIx,
        cost: impl Fn(ArcIx) -> u64,
        estimate: impl Fn(NodeIx) -> Option<u64>,
    ) -> Option<Path> {
        self.dist.fill(u64::MAX);
        self.heap.clear();
        let first = estimate(source)?;
        self.dist[source as usize] = 0;
        self.estimate[source as usize] = first;
        self.heap.push(first, source);
        while let Some((key, u)) = self.heap.pop() {
            let d = self.dist[u as usize];
            // The heap holds each node once, at its best label.
            debug_assert_eq!(key, d.saturating_add(self.estimate[u as usize]));
            if u == target {
                break;
            }
            for a in g.out_arcs(u) {
                let to = g.arc(a).to as usize;
                let nd = d.saturating_add(cost(a));
                if nd >= self.dist[to] {
                    continue;
                }
                if self.dist[to] == u64::MAX {
                    // First reached: its estimate, or never if it cannot
                    // reach the target.
                    let Some(e) = estimate(to as NodeIx) else {
                        continue;
                    };
                    self.estimate[to] = e;
                }
                self.dist[to] = nd;
                self.pred[to] = a;
                self.heap
                    .push(nd.saturating_add(self.estimate[to]), to as u32);
            }
        }
        if self.dist[target as usize] == u64::MAX {
            return None;
        }
        let mut arcs = Vec::new();
        let mut v = target;
        while v != source {
            let a = self.pred[v as usize];
            arcs.push(a);
            v = g.arc(a).from;
        }
        arcs.reverse();
        Some(Path::from_arcs(g, source, arcs))
    }
}

/// The fewest shares (`shares`, per arc) on any way from each node to
/// `target`, as far as a walk of [`SHARE_BUDGET`] nodes finds them:
/// Dial's algorithm backward from the target, one bucket per share count
/// (counts are small integers and most arcs share nothing). Leaves exact
/// counts in `out` for the nodes it settled, upper bounds for those it
/// reached and did not settle, `u32::MAX` elsewhere (resetting what
/// `touched` wrote last time), and returns the count it stopped at, which
/// every unsettled node's is at least: so `min(out[v], returned)` is
/// exact up to the returned count, a consistent lower bound. Returns `u32::MAX` when it settled every node that reaches the
/// target (the others, left at `u32::MAX`, reach it not at all).
fn count_shares_to(
    g: &Graph,
    target: NodeIx,
    shares: impl Fn(ArcIx) -> u32,
    out: &mut [u32],
    touched: &mut Vec<NodeIx>,
    buckets: &mut Vec<Vec<NodeIx>>,
) -> u32 {
    for &v in touched.iter() {
        out[v as usize] = u32::MAX;
    }
    touched.clear();
    buckets.iter_mut().for_each(Vec::clear);
    if buckets.is_empty() {
        buckets.push(Vec::new());
    }
    out[target as usize] = 0;
    touched.push(target);
    buckets[0].push(target);
    let (mut level, mut settled) = (0usize, 0usize);
    while level < buckets.len() {
        let Some(v) = buckets[level].pop() else {
            level += 1;
            continue;
        };
        if out[v as usize] as usize != level {
            continue; // reached again with fewer shares
        }
        settled += 1;
        if settled > SHARE_BUDGET {
            // Every level below this one is complete.
            return level as u32;
        }
        for &a in g.in_arcs(v) {
            let u = g.arc(a).from as usize;
            let n = level + shares(a) as usize;
            if n < out[u] as usize {
                if out[u] == u32::MAX {
                    touched.push(u as NodeIx);
                }
                out[u] = n as u32;
                if buckets.len() <= n {
                    buckets.resize_with(n + 1, Vec::new);
                }
                buckets[n].push(u as NodeIx);
            }
        }
    }
    u32::MAX
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphBuilder;
    use crate::metric::Metric;

    /// A ladder 0-1-2-3 over 4-5-6-7 with rungs; one path 0-1-2-3 in use.
    fn ladder() -> Graph {
        let mut b = GraphBuilder::new(8);
        let m = Some(Metric::from_units(1));
        for (x, y) in [
            (0, 1),
            (1, 2),
            (2, 3),
            (4, 5),
            (5, 6),
            (6, 7),
            (0, 4),
            (1, 5),
            (2, 6),
            (3, 7),
        ] {
            b.add_link(x, y, m, m);
        }
        b.build()
    }

    #[test]
    fn shares_to_the_target_are_counted_exactly_within_the_budget() {
        let g = ladder();
        // Every arc into 1 or 2 (transit nodes of the path in use) shares
        // one node; the path's own arcs share their link as well.
        let used_nodes = [1, 2];
        let used_links: Vec<u32> = [(0, 1), (1, 2), (2, 3)]
            .iter()
            .map(|&(x, y)| g.arc(g.find_arc(x, y).unwrap()).link)
            .collect();
        let shares = |a: ArcIx| {
            let arc = g.arc(a);
            u32::from(used_links.contains(&arc.link)) + u32::from(used_nodes.contains(&arc.to))
        };
        let (mut out, mut touched, mut buckets) = (vec![u32::MAX; 8], Vec::new(), Vec::new());
        let cap = count_shares_to(&g, 3, shares, &mut out, &mut touched, &mut buckets);
        assert_eq!(cap, u32::MAX, "eight nodes fit the budget");
        // 0 reaches 3 along the bottom (0-4-5-6-7-3) sharing nothing; 1
        // and 2 leave by a rung and share nothing more.
        assert_eq!(out, vec![0, 0, 0, 0, 0, 0, 0, 0]);
        // Cut the bottom's last link: every way to 3 now ends on 2-3.
        let shares_cut = |a: ArcIx| {
            let arc = g.arc(a);
            if (arc.from, arc.to) == (7, 3) {
                return 5;
            }
            shares(a)
        };
        let cap = count_shares_to(&g, 3, shares_cut, &mut out, &mut touched, &mut buckets);
        assert_eq!(cap, u32::MAX);
        assert_eq!(out[2], 1, "2's own link to 3");
        assert_eq!(out[6], 2, "into 2 (a node), then its link");
        assert_eq!(out[7], 2, "7 goes round by 6 rather than pay 5");
    }

    #[test]
    fn past_the_budget_every_other_node_gets_the_level_it_stopped_at() {
        // A line 0-1-...-199 toward 199, every arc sharing one: node v is
        // 199 - v shares away.
        let mut b = GraphBuilder::new(200);
        for v in 0..199 {
            b.add_link(v, v + 1, Some(Metric::from_units(1)), None);
        }
        let g = b.build();
        let (mut out, mut touched, mut buckets) = (vec![u32::MAX; 200], Vec::new(), Vec::new());
        let cap = count_shares_to(&g, 199, |_| 1, &mut out, &mut touched, &mut buckets);
        assert_eq!(
            cap as usize, SHARE_BUDGET,
            "stopped at the node past the budget"
        );
        for v in 0..200u32 {
            let truth = 199 - v;
            let bound = out[v as usize].min(cap);
            assert!(bound <= truth, "node {v}: {bound} > {truth}");
            assert_eq!(
                bound,
                truth.min(cap),
                "node {v}: as tight as the walk allows"
            );
        }
    }
}
