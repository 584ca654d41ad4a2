//! Where a waypoint sends a packet on: a packet whose route ends at this
//! node short of its egress (`DataFlags::WAYPOINT`: a path longer than
//! one route holds, or one into this node's area from another) goes on
//! along this node's shortest path to the egress, from its own
//! link-state database; toward an egress of another area, to the first
//! router beyond this one's (docs/protocol.md, "Areas").
//!
//! Why the shortest path: once the network has converged, every node on
//! a shortest path from here to the egress is strictly nearer the egress
//! (costs are positive), so each waypoint a packet meets is nearer than
//! the one before and no packet can come back to a waypoint it passed:
//! no loop. While databases differ, the hop limit (set to its maximum by
//! an ingress whose route continues) bounds any loop.
//!
//! One shortest-path tree from this node serves every egress (kept as
//! each node's parent, some kilobytes, not the graph). It is
//! computed again when the database has changed, at most every
//! [`RECOMPUTE_GAP`]: a large mesh changes often, and a tree a moment old
//! routes as well as the ingress's own paths did.

use std::time::Duration;

use braid_wire::NodeId;

use crate::area::AreaMap;
use crate::lsgraph::LsGraph;
use crate::paths::ShortestPathTree;
use crate::time::Instant;

/// Shortest time between two computations of the tree.
pub const RECOMPUTE_GAP: Duration = Duration::from_millis(100);

/// This node's shortest paths to every node, as a waypoint uses them.
#[derive(Debug, Default)]
pub struct Waypoint {
    /// The database version the tree was computed from, and when.
    computed: Option<(u64, Instant)>,
    /// Every node the tree reaches, sorted, with the node before it on
    /// this node's shortest path to it (this node's own entry names
    /// itself) and whether it is of this node's area. A node's parent
    /// id, not the graph: some kilobytes where the graph of a
    /// 10,000-router mesh is a megabyte.
    parents: Vec<(NodeId, NodeId, bool)>,
    /// The other areas (their leaders stand for their routers), and ours.
    areas: AreaMap,
    area: u16,
    /// The last route written (reused: no allocation per packet).
    route: Vec<NodeId>,
}

impl Waypoint {
    /// The route on from `me` to `egress`: `me`, then every transit node
    /// of this node's shortest path to it (the egress not included), and
    /// false; toward an egress beyond this node's area, the nodes up to
    /// the first beyond it (which routes the packet on), and true. `None`
    /// when the egress cannot be reached. `version` is the link-state
    /// database's; `graph` is called only when the tree is computed again.
    pub fn route_on(
        &mut self,
        now: Instant,
        version: u64,
        graph: impl FnOnce() -> LsGraph,
        me: NodeId,
        egress: NodeId,
    ) -> Option<(&[NodeId], bool)> {
        let stale = match self.computed {
            None => true,
            Some((seen, at)) => seen != version && now.since(at) >= RECOMPUTE_GAP,
        };
        if stale {
            let ls = graph();
            self.parents = parents(&ls, me);
            self.areas = ls.areas().clone();
            self.area = ls.area();
            self.computed = Some((version, now));
        }
        let entry = |v: NodeId| {
            self.parents
                .binary_search_by_key(&v, |&(id, _, _)| id)
                .ok()
                .map(|i| self.parents[i])
        };
        let (target, beyond) = match entry(egress) {
            Some((_, _, true)) => (egress, false),
            _ => {
                let area = self.areas.area_of(egress).filter(|&a| a != self.area)?;
                (self.areas.leader(area)?, true)
            }
        };
        let route = &mut self.route;
        route.clear();
        if beyond {
            route.push(target);
        }
        let mut v = entry(target)?.1;
        // Back from the egress; the walk is bounded by the nodes held.
        while v != me {
            if route.len() >= self.parents.len() {
                return None;
            }
            route.push(v);
            v = entry(v)?.1;
        }
        route.push(me);
        route.reverse();
        if beyond {
            // Up to the first node beyond the area.
            let first = route
                .iter()
                .position(|&v| entry(v).is_some_and(|(_, _, local)| !local))?;
            route.truncate(first + 1);
        }
        Some((route, beyond))
    }
}

/// Each node the shortest-path tree from `me` reaches, sorted by id, with
/// its parent (`me`'s own entry names `me`) and whether it is of the
/// graph's area.
fn parents(ls: &LsGraph, me: NodeId) -> Vec<(NodeId, NodeId, bool)> {
    let Some(source) = ls.index_of(me) else {
        return Vec::new();
    };
    let tree = ShortestPathTree::compute(&ls.graph, source);
    // `ls.ids` is sorted: so is what is kept of it.
    (0..ls.ids.len() as u32)
        .filter_map(|v| match tree.pred_arc(v) {
            Some(a) => Some((ls.id_of(v), ls.id_of(ls.graph.arc(a).from), ls.is_local(v))),
            None => (v == source).then_some((me, me, true)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphBuilder;
    use crate::metric::{Metric, SCALE};

    /// A line of `n` nodes, ids 1..=n, unit costs both ways.
    fn line(n: u16) -> LsGraph {
        let mut graph = GraphBuilder::new(n as usize);
        let one = Some(Metric::from_units(SCALE));
        for i in 0..u32::from(n) - 1 {
            graph.add_link(i, i + 1, one, one);
        }
        LsGraph::flat(graph.build(), (1..=n).map(NodeId).collect())
    }

    #[test]
    fn the_route_on_starts_here_and_lists_the_transit_nodes_to_the_egress() {
        let mut w = Waypoint::default();
        let r = w.route_on(Instant::ZERO, 1, || line(6), NodeId(2), NodeId(6));
        assert_eq!(
            r,
            Some((&[NodeId(2), NodeId(3), NodeId(4), NodeId(5)][..], false))
        );
        // A neighbor egress: the route is this node alone.
        let r = w.route_on(Instant::ZERO, 1, || unreachable!(), NodeId(2), NodeId(3));
        assert_eq!(r, Some((&[NodeId(2)][..], false)));
        // An egress the database does not hold.
        let r = w.route_on(Instant::ZERO, 1, || unreachable!(), NodeId(2), NodeId(9));
        assert_eq!(r, None);
    }

    #[test]
    fn the_tree_is_computed_again_after_a_change_but_not_more_often_than_the_gap() {
        let mut w = Waypoint::default();
        let t0 = Instant::ZERO;
        assert!(w
            .route_on(t0, 1, || line(4), NodeId(1), NodeId(4))
            .is_some());
        // A new version within the gap: the old tree serves.
        let soon = t0 + Duration::from_millis(10);
        assert!(w
            .route_on(soon, 2, || unreachable!(), NodeId(1), NodeId(4))
            .is_some());
        // After the gap, the new database: node 4 is gone.
        let later = t0 + RECOMPUTE_GAP;
        assert_eq!(w.route_on(later, 2, || line(3), NodeId(1), NodeId(4)), None);
        // The same version again: not computed again.
        let r = w.route_on(
            later + RECOMPUTE_GAP,
            2,
            || unreachable!(),
            NodeId(1),
            NodeId(3),
        );
        assert_eq!(r, Some((&[NodeId(1), NodeId(2)][..], false)));
    }
}
