//! Lower bounds on the cost from any node to a target, from distances to
//! and from a few landmarks (ALT: A*, landmarks and the triangle
//! inequality; Goldberg and Harrelson, "Computing the shortest path: A*
//! search meets graph theory", SODA 2005).
//!
//! For a landmark `L` and any nodes `v`, `t`: `d(L,t) <= d(L,v) + d(v,t)`
//! and `d(v,L) <= d(v,t) + d(t,L)`, so `d(v,t)` is at least
//! `d(L,t) - d(L,v)` and `d(v,L) - d(t,L)`. The largest of these over the
//! landmarks is a consistent estimate (it drops by at most an arc's cost
//! along that arc), which is what lets an A* search settle each node once
//! and pop keys in order (the radix heap needs that). The same
//! inequalities also prove some nodes cannot reach the target at all:
//! [`Landmarks::lower_bound`] says so with `None`.
//!
//! Landmarks are chosen by farthest-point selection from the source: the
//! first is the node farthest from it, each next the node farthest from
//! the source and every landmark so far (by distances from them), so
//! that they sit at the mesh's edges, where the bounds are tightest for
//! the paths between them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::dijkstra::ShortestPathTree;
use crate::graph::{Graph, NodeIx};

/// Distances from and to each of a few landmarks, per node.
#[derive(Debug, Clone)]
pub(crate) struct Landmarks {
    count: usize,
    /// `from[v * count + i]`: the cost from landmark `i` to `v`.
    from: Vec<u64>,
    /// `to[v * count + i]`: the cost from `v` to landmark `i`.
    to: Vec<u64>,
}

impl Landmarks {
    /// Chooses up to `count` landmarks among the nodes `source_dist` (the
    /// source's distances) shows reachable, and measures every node's
    /// distance from and to each: two Dijkstras per landmark.
    pub(crate) fn choose(graph: &Graph, source_dist: &[u64], count: usize) -> Self {
        let n = graph.node_count();
        // The distance from the landmarks so far to each node (the least).
        let mut nearest: Vec<u64> = source_dist.to_vec();
        let mut chosen: Vec<(Vec<u64>, Vec<u64>)> = Vec::with_capacity(count);
        for _ in 0..count {
            let far = (0..n)
                .filter(|&v| nearest[v] != u64::MAX && nearest[v] > 0)
                .max_by_key(|&v| (nearest[v], Reverse(v)));
            let Some(far) = far else {
                break; // every reachable node is a landmark already
            };
            let from = ShortestPathTree::compute(graph, far as NodeIx).dist;
            let to = distances_to(graph, far as NodeIx);
            for (m, &d) in nearest.iter_mut().zip(&from) {
                if *m != u64::MAX {
                    *m = (*m).min(d);
                }
            }
            chosen.push((from, to));
        }
        let count = chosen.len();
        let mut from = vec![0; n * count];
        let mut to = vec![0; n * count];
        for (i, (f, t)) in chosen.iter().enumerate() {
            for v in 0..n {
                from[v * count + i] = f[v];
                to[v * count + i] = t[v];
            }
        }
        Landmarks { count, from, to }
    }

    /// A lower bound on the cost of any path from `v` to `target`, or
    /// `None` when the landmarks prove there is no such path.
    pub(crate) fn lower_bound(&self, v: NodeIx, target: NodeIx) -> Option<u64> {
        let (v, t) = (v as usize * self.count, target as usize * self.count);
        let mut bound = 0;
        for i in 0..self.count {
            let (from_v, from_t) = (self.from[v + i], self.from[t + i]);
            let (to_v, to_t) = (self.to[v + i], self.to[t + i]);
            // L reaches v but not t: v does not reach t (else L would).
            if from_v != u64::MAX && from_t == u64::MAX {
                return None;
            }
            // t reaches L but v does not: v does not reach t.
            if to_t != u64::MAX && to_v == u64::MAX {
                return None;
            }
            if from_v != u64::MAX {
                bound = bound.max(from_t.saturating_sub(from_v));
            }
            if to_v != u64::MAX {
                bound = bound.max(to_v.saturating_sub(to_t));
            }
        }
        Some(bound)
    }
}

/// Every node's distance to `root`, by Dijkstra along the arcs backward
/// (the forward distances are [`ShortestPathTree::compute`]'s);
/// `u64::MAX` where there is no path.
fn distances_to(graph: &Graph, root: NodeIx) -> Vec<u64> {
    let mut dist = vec![u64::MAX; graph.node_count()];
    let mut heap = BinaryHeap::new();
    dist[root as usize] = 0;
    heap.push(Reverse((0u64, root)));
    while let Some(Reverse((d, u))) = heap.pop() {
        if d > dist[u as usize] {
            continue; // a stale heap entry
        }
        for &a in graph.in_arcs(u) {
            let arc = graph.arc(a);
            let (v, nd) = (arc.from as usize, d.saturating_add(arc.cost.units() as u64));
            if nd < dist[v] {
                dist[v] = nd;
                heap.push(Reverse((nd, arc.from)));
            }
        }
    }
    dist
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphBuilder;
    use crate::metric::Metric;

    /// Every bound is at most the true distance, and `None` only where
    /// there is no path; returns how many pairs got a bound above 0.
    fn assert_sound(g: &Graph, lm: &Landmarks) -> usize {
        let n = g.node_count() as NodeIx;
        let mut informative = 0;
        for v in 0..n {
            let dist = ShortestPathTree::compute(g, v).dist;
            for t in 0..n {
                let d = dist[t as usize];
                match lm.lower_bound(v, t) {
                    Some(bound) => {
                        assert!(bound <= d, "{v}->{t}: bound {bound} > {d}");
                        informative += usize::from(bound > 0);
                    }
                    None => assert_eq!(d, u64::MAX, "{v}->{t} said unreachable"),
                }
            }
        }
        informative
    }

    #[test]
    fn bounds_on_a_random_mesh_are_sound_and_mostly_informative() {
        use rand_chacha::rand_core::SeedableRng;
        let mesh = crate::generate::random_geometric(
            80,
            6.0,
            &mut rand_chacha::ChaCha8Rng::seed_from_u64(7),
        );
        let g = &mesh.graph;
        let lm = Landmarks::choose(g, &ShortestPathTree::compute(g, 0).dist, 6);
        let informative = assert_sound(g, &lm);
        let pairs = g.node_count() * (g.node_count() - 1);
        assert!(
            informative * 2 > pairs,
            "{informative} of {pairs} pairs bounded above 0"
        );
    }

    #[test]
    fn bounds_never_exceed_the_true_distance_and_spot_the_unreachable() {
        // A ring of six with one one-way spur 6 -> 0 and a lone node 7.
        let mut b = GraphBuilder::new(8);
        let m = |c| Some(Metric::from_units(c));
        for (x, y, c) in [
            (0, 1, 3),
            (1, 2, 1),
            (2, 3, 4),
            (3, 4, 1),
            (4, 5, 5),
            (5, 0, 2),
        ] {
            b.add_link(x, y, m(c), m(c + 1));
        }
        b.add_link(6, 0, m(2), None);
        let g = b.build();
        let source = ShortestPathTree::compute(&g, 0);
        let lm = Landmarks::choose(&g, &source.dist, 3);
        assert_eq!(lm.count, 3);
        assert_sound(&g, &lm);
        // 0 cannot reach 6 (the spur is one-way) nor 7: some landmark
        // proves the first; nothing reaches or leaves 7, so no proof.
        assert_eq!(lm.lower_bound(0, 6), None);
        assert!(
            lm.lower_bound(3, 0).unwrap() > 0,
            "the bounds say something"
        );
    }
}
