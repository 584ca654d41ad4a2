//! Per-entry-point trees (SMesh): from one entry point to a *set* of
//! destination access points, the union of shortest paths, as each node's
//! set of next hops.
//!
//! The union is taken within one shortest-path tree, so it is a tree: a
//! packet copied to every next hop reaches each destination once, and a
//! client served by several access points during a handoff gets a copy
//! through each of them.

use std::collections::BTreeMap;

use super::dijkstra::ShortestPathTree;
use crate::graph::{Graph, NodeIx};

/// An entry point's tree toward a set of destinations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryTree {
    /// The entry point the tree starts from.
    pub entry: NodeIx,
    /// For every node that forwards: its next hops, sorted.
    pub next_hops: BTreeMap<NodeIx, Vec<NodeIx>>,
    /// Destinations no path reaches.
    pub unreachable: Vec<NodeIx>,
}

/// Builds the tree from `entry` to every node of `destinations`.
pub fn entry_tree(graph: &Graph, entry: NodeIx, destinations: &[NodeIx]) -> EntryTree {
    let spt = ShortestPathTree::compute(graph, entry);
    entry_tree_from(graph, &spt, destinations)
}

/// As [`entry_tree`], from a shortest-path tree already computed.
pub fn entry_tree_from(
    graph: &Graph,
    spt: &ShortestPathTree,
    destinations: &[NodeIx],
) -> EntryTree {
    let mut next_hops: BTreeMap<NodeIx, Vec<NodeIx>> = BTreeMap::new();
    let mut unreachable = Vec::new();
    for &d in destinations {
        if !spt.reachable(d) {
            unreachable.push(d);
            continue;
        }
        let mut v = d;
        while let Some(a) = spt.pred_arc(v) {
            let from = graph.arc(a).from;
            let hops = next_hops.entry(from).or_default();
            if hops.contains(&v) {
                break; // the rest of the way up is already in the tree
            }
            hops.push(v);
            v = from;
        }
    }
    for hops in next_hops.values_mut() {
        hops.sort_unstable();
    }
    unreachable.sort_unstable();
    unreachable.dedup();
    EntryTree {
        entry: spt.source,
        next_hops,
        unreachable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphBuilder;
    use crate::metric::Metric;

    #[test]
    fn union_of_shortest_paths_branches_where_destinations_part() {
        // 0 - 1 - 2 - 3 (AP) and 2 - 4 (AP); 5 is cut off.
        let mut b = GraphBuilder::new(6);
        for (x, y) in [(0, 1), (1, 2), (2, 3), (2, 4)] {
            let m = Some(Metric::ONE);
            b.add_link(x, y, m, m);
        }
        let g = b.build();
        let t = entry_tree(&g, 0, &[3, 4, 5]);
        assert_eq!(t.next_hops[&0], vec![1]);
        assert_eq!(t.next_hops[&1], vec![2]);
        assert_eq!(t.next_hops[&2], vec![3, 4]);
        assert_eq!(t.next_hops.len(), 3);
        assert_eq!(t.unreachable, vec![5]);
    }

    #[test]
    fn entry_point_that_is_a_destination_needs_no_hops_to_itself() {
        let mut b = GraphBuilder::new(2);
        b.add_link(0, 1, Some(Metric::ONE), Some(Metric::ONE));
        let t = entry_tree(&b.build(), 0, &[0, 1]);
        assert_eq!(
            t.next_hops.into_iter().collect::<Vec<_>>(),
            vec![(0, vec![1])]
        );
    }
}
