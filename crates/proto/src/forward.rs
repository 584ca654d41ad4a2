//! Where a data packet goes next from this node.
//!
//! Source-routed packets (every mode but tree) follow their route:
//! [`braid_wire::data::forward_in_place`] is the whole decision. Tree-mode
//! packets (SMesh) follow the entry point's tree toward every access point
//! that serves the destination client, and are copied at each node with
//! more than one next hop; every node computes the same tree from the same
//! link-state database, so the copies never loop.

use braid_wire::NodeId;

use crate::lsdb::LsGraph;
use crate::paths::entry_tree;

/// This node's next hops on `entry`'s tree toward `destinations` (the
/// access points serving the client). Empty when this node is not on the
/// tree or is a leaf.
pub fn tree_next_hops(
    ls: &LsGraph,
    entry: NodeId,
    destinations: &[NodeId],
    me: NodeId,
) -> Vec<NodeId> {
    let (Some(e), Some(m)) = (ls.index_of(entry), ls.index_of(me)) else {
        return Vec::new();
    };
    let dests: Vec<_> = destinations
        .iter()
        .filter_map(|&d| ls.index_of(d))
        .collect();
    let tree = entry_tree(&ls.graph, e, &dests);
    tree.next_hops
        .get(&m)
        .map(|hops| hops.iter().map(|&v| ls.id_of(v)).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsdb::{LsaRecord, Lsdb, LsdbConfig};
    use crate::time::Instant;
    use braid_wire::{LsaLink, Prefix};

    /// Entry 1; 1-2, 2-3, 2-4, 4-5; a client handing off between APs 3
    /// and 5 is advertised by both.
    fn network() -> Lsdb {
        let mut db = Lsdb::new(LsdbConfig::default());
        let client = Prefix::Mac([2, 0, 0, 0, 0, 7]);
        let links = [(1, 2), (2, 3), (2, 4), (4, 5)];
        for node in 1..=5u16 {
            let mine = links
                .iter()
                .filter_map(|&(a, b)| (a == node).then_some(b).or((b == node).then_some(a)))
                .map(|n| LsaLink {
                    neighbor: NodeId(n),
                    link_id: 0,
                    metric_out: 1000,
                    metric_in: 1000,
                })
                .collect();
            let prefixes = if node == 3 || node == 5 {
                vec![client]
            } else {
                vec![]
            };
            db.install_own(
                Instant::ZERO,
                LsaRecord::new(NodeId(node), 1, mine, prefixes.into()),
            );
        }
        db
    }

    #[test]
    fn a_client_in_handoff_gets_one_copy_through_each_access_point() {
        let db = network();
        let aps = db.origins_serving(&Prefix::Mac([2, 0, 0, 0, 0, 7]));
        assert_eq!(aps, vec![NodeId(3), NodeId(5)]);
        let ls = db.graph(&Default::default());
        // Forward a packet hop by hop, copying at branches.
        let mut arrivals = std::collections::BTreeMap::new();
        let mut frontier = vec![NodeId(1)];
        while let Some(at) = frontier.pop() {
            *arrivals.entry(at).or_insert(0) += 1;
            frontier.extend(tree_next_hops(&ls, NodeId(1), &aps, at));
        }
        assert_eq!(arrivals[&NodeId(3)], 1);
        assert_eq!(arrivals[&NodeId(5)], 1);
        assert!(
            arrivals.values().all(|&n| n == 1),
            "no node sees a packet twice: {arrivals:?}"
        );
        assert_eq!(
            tree_next_hops(&ls, NodeId(1), &aps, NodeId(2)),
            vec![NodeId(3), NodeId(4)]
        );
    }
}
