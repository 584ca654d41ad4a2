//! Dijkstra's algorithm with deterministic tie-breaking.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::path::Path;
use crate::graph::{ArcIx, Graph, NodeIx};

const NO_ARC: ArcIx = ArcIx::MAX;

/// Distances and predecessor arcs from one source to every node.
#[derive(Debug, Clone)]
pub struct ShortestPathTree {
    /// The node distances are measured from.
    pub source: NodeIx,
    /// `u64::MAX` for unreachable nodes.
    pub dist: Vec<u64>,
    /// The arc by which each node is reached (`None` for the source and
    /// unreachable nodes).
    pred: Vec<ArcIx>,
}

impl ShortestPathTree {
    /// Runs Dijkstra from `source` over the whole graph. Among equal-cost
    /// paths, the one found first wins: nodes leave the heap in (distance,
    /// index) order and a node's predecessor changes only on a strictly
    /// shorter distance.
    pub fn compute(graph: &Graph, source: NodeIx) -> Self {
        Self::compute_with(graph, source, None, |a| graph.arc(a).cost.units() as u64)
    }

    /// Dijkstra with the cost of each arc given by `cost`, stopping as soon
    /// as `stop_at` is settled (other nodes' distances are then only upper
    /// bounds; the path to `stop_at` is exact).
    pub fn compute_with(
        graph: &Graph,
        source: NodeIx,
        stop_at: Option<NodeIx>,
        cost: impl Fn(ArcIx) -> u64,
    ) -> Self {
        let n = graph.node_count();
        let mut dist = vec![u64::MAX; n];
        let mut pred = vec![NO_ARC; n];
        let mut heap = BinaryHeap::new();
        dist[source as usize] = 0;
        heap.push(Reverse((0u64, source)));
        while let Some(Reverse((d, u))) = heap.pop() {
            if d > dist[u as usize] {
                continue;
            }
            if Some(u) == stop_at {
                break;
            }
            for a in graph.out_arcs(u) {
                let to = graph.arc(a).to as usize;
                let nd = d.saturating_add(cost(a));
                if nd < dist[to] {
                    dist[to] = nd;
                    pred[to] = a;
                    heap.push(Reverse((nd, to as NodeIx)));
                }
            }
        }
        ShortestPathTree { source, dist, pred }
    }

    /// Whether some path leads from the source to `v`.
    pub fn reachable(&self, v: NodeIx) -> bool {
        self.dist[v as usize] != u64::MAX
    }

    /// The arc by which `v` is reached (`None` for the source and unreachable nodes).
    pub fn pred_arc(&self, v: NodeIx) -> Option<ArcIx> {
        Some(self.pred[v as usize]).filter(|&a| a != NO_ARC)
    }

    /// The path from the source to `target`, if reachable.
    pub fn path_to(&self, graph: &Graph, target: NodeIx) -> Option<Path> {
        if !self.reachable(target) {
            return None;
        }
        let mut arcs = Vec::new();
        let mut v = target;
        while let Some(a) = self.pred_arc(v) {
            arcs.push(a);
            v = graph.arc(a).from;
        }
        arcs.reverse();
        Some(Path::from_arcs(graph, self.source, arcs))
    }
}

/// The best path from `source` to `target`.
pub fn shortest_path(graph: &Graph, source: NodeIx, target: NodeIx) -> Option<Path> {
    ShortestPathTree::compute(graph, source).path_to(graph, target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphBuilder;
    use crate::metric::Metric;

    fn m(c: u32) -> Option<Metric> {
        Some(Metric::from_units(c))
    }

    #[test]
    fn picks_the_cheapest_path_and_respects_direction() {
        // 0 -> 1 -> 3 costs 2; 0 -> 2 -> 3 costs 3; 3 -> 0 only via 2.
        let mut b = GraphBuilder::new(4);
        b.add_link(0, 1, m(1), m(1));
        b.add_link(1, 3, m(1), None);
        b.add_link(0, 2, m(2), m(1));
        b.add_link(2, 3, m(1), m(5));
        let g = b.build();
        let p = shortest_path(&g, 0, 3).unwrap();
        assert_eq!((p.nodes.clone(), p.cost), (vec![0, 1, 3], 2));
        let back = shortest_path(&g, 3, 0).unwrap();
        assert_eq!((back.nodes, back.cost), (vec![3, 2, 0], 6));
    }

    #[test]
    fn ties_are_broken_the_same_way_every_time() {
        let mut b = GraphBuilder::new(4);
        b.add_link(0, 2, m(1), m(1));
        b.add_link(0, 1, m(1), m(1));
        b.add_link(2, 3, m(1), m(1));
        b.add_link(1, 3, m(1), m(1));
        let g = b.build();
        let first = shortest_path(&g, 0, 3).unwrap();
        assert_eq!(first.nodes, vec![0, 1, 3], "lower index wins a tie");
        for _ in 0..10 {
            assert_eq!(shortest_path(&g, 0, 3).unwrap(), first);
        }
    }

    #[test]
    fn unreachable_is_none() {
        let mut b = GraphBuilder::new(3);
        b.add_link(0, 1, m(1), m(1));
        let g = b.build();
        assert!(shortest_path(&g, 0, 2).is_none());
        assert_eq!(shortest_path(&g, 0, 0).unwrap().nodes, vec![0]);
    }
}
