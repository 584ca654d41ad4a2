//! Where a data packet goes next from this node, and which origin serves
//! a destination best.
//!
//! Source-routed packets (every mode but tree) follow their route:
//! [`braid_wire::data::forward_in_place`] is the whole decision. Tree-mode
//! packets (SMesh) follow the entry point's tree toward every access point
//! that serves the destination client, and are copied at each node with
//! more than one next hop: [`TreeTables`] is that decision, one table per
//! entry point, keyed by destination. Every node computes the same tree
//! from the same link-state database (the entry point's shortest-path
//! tree, ties broken by index), so the copies never loop; while databases
//! differ the hop limit bounds what a loop can cost.
//!
//! The destinations of (entry point, destination address): the access
//! points whose advertisements list the address as a client (all of them:
//! that is what makes a handoff lossless); for any other address, the
//! origin that serves it best as seen from the entry point (longest
//! prefix, then the nearest to the entry point, then the lowest id: with
//! several gateways, traffic goes to the entry point's nearest one, and
//! every node on the way agrees which that is).

use std::collections::BTreeMap;

use braid_wire::NodeId;

use crate::lsdb::Lsdb;
use crate::lsgraph::LsGraph;
use crate::paths::{entry_tree_from, ShortestPathTree};

/// Most (entry point, destination) entries kept before the tables start
/// afresh (counted): 64 entry points times 64 clients.
pub const MAX_TREE_ENTRIES: usize = 4096;
/// Most entry points' shortest-path trees kept (each holds a distance and
/// a predecessor per node) before they start afresh.
pub const MAX_ENTRY_TREES: usize = 256;

/// What this node does with a tree-mode packet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeHop {
    /// A copy to each of these neighbors.
    pub next_hops: Vec<NodeId>,
    /// This node serves the destination: deliver a copy here too.
    pub deliver: bool,
}

/// What a tree entry is keyed by besides its entry point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TreeDest {
    /// An IP destination (an IPv4 address in the first four bytes when
    /// the flag is true): its clients' access points, or its best origin.
    Addr([u8; 16], bool),
    /// A node (a packet that is not IP, or whose destination nothing
    /// serves: the node the entry point named).
    Node(NodeId),
}

/// One node's per-entry-point forwarding tables for tree mode, computed
/// on demand from the link-state database and dropped whenever it
/// changes.
#[derive(Debug)]
pub struct TreeTables {
    me: NodeId,
    version: Option<u64>,
    graph: Option<LsGraph>,
    spts: BTreeMap<NodeId, ShortestPathTree>,
    entries: BTreeMap<(NodeId, TreeDest), TreeHop>,
    servers: Vec<(NodeId, u8)>,
    origins: Vec<NodeId>,
    /// Times the tables filled up and started afresh.
    pub overflows: u64,
}

impl TreeTables {
    /// Empty tables for node `me`.
    pub fn new(me: NodeId) -> Self {
        TreeTables {
            me,
            version: None,
            graph: None,
            spts: BTreeMap::new(),
            entries: BTreeMap::new(),
            servers: Vec::new(),
            origins: Vec::new(),
            overflows: 0,
        }
    }

    /// Forgets everything computed for an older database.
    fn refresh(&mut self, lsdb: &Lsdb) {
        if self.version != Some(lsdb.version()) {
            self.version = Some(lsdb.version());
            self.graph = None;
            self.spts.clear();
            self.entries.clear();
        }
    }

    fn spt<'a>(
        graph: &'a mut Option<LsGraph>,
        spts: &'a mut BTreeMap<NodeId, ShortestPathTree>,
        make_graph: &mut dyn FnMut() -> LsGraph,
        entry: NodeId,
    ) -> (Option<&'a ShortestPathTree>, &'a LsGraph) {
        let g = graph.get_or_insert_with(make_graph);
        if spts.len() >= MAX_ENTRY_TREES && !spts.contains_key(&entry) {
            spts.clear();
        }
        let spt = g.index_of(entry).map(|e| {
            &*spts
                .entry(entry)
                .or_insert_with(|| ShortestPathTree::compute(&g.graph, e))
        });
        (spt, g)
    }

    /// The origin among `origins` (sorted, not empty) nearest to `entry`
    /// in the graph `make_graph` builds (the database's; ties and
    /// unreachable ones to the lowest id).
    pub fn nearest(
        &mut self,
        lsdb: &Lsdb,
        make_graph: &mut dyn FnMut() -> LsGraph,
        entry: NodeId,
        origins: &[NodeId],
    ) -> Option<NodeId> {
        if origins.len() <= 1 {
            return origins.first().copied();
        }
        self.refresh(lsdb);
        let (spt, g) = Self::spt(&mut self.graph, &mut self.spts, make_graph, entry);
        let distance = |o: NodeId| match (spt, g.target_of(o)) {
            (Some(spt), Some(v)) => spt.dist[v as usize],
            _ => u64::MAX,
        };
        origins.iter().copied().min_by_key(|&o| (distance(o), o))
    }

    /// How far `origin` is from `entry` in the graph `make_graph` builds:
    /// `None` when no path leads there.
    pub fn distance(
        &mut self,
        lsdb: &Lsdb,
        make_graph: &mut dyn FnMut() -> LsGraph,
        entry: NodeId,
        origin: NodeId,
    ) -> Option<u64> {
        self.refresh(lsdb);
        let (spt, g) = Self::spt(&mut self.graph, &mut self.spts, make_graph, entry);
        let d = spt?.dist[g.target_of(origin)? as usize];
        (d != u64::MAX).then_some(d)
    }

    /// The origin that serves `dst` best as seen from `entry` (see the
    /// module comment). `None` when nothing serves it.
    pub fn egress_for(
        &mut self,
        lsdb: &Lsdb,
        make_graph: &mut dyn FnMut() -> LsGraph,
        entry: NodeId,
        dst: &[u8; 16],
        v4: bool,
    ) -> Option<NodeId> {
        let mut origins = std::mem::take(&mut self.origins);
        lsdb.best_origins(dst, v4, entry, &mut origins);
        let best = self.nearest(lsdb, make_graph, entry, &origins);
        self.origins = origins;
        best
    }

    /// What this node does with a tree-mode packet that entered the mesh
    /// at `entry` toward `dest`.
    pub fn hop(
        &mut self,
        lsdb: &Lsdb,
        make_graph: &mut dyn FnMut() -> LsGraph,
        entry: NodeId,
        dest: TreeDest,
    ) -> &TreeHop {
        self.refresh(lsdb);
        let key = (entry, dest);
        if !self.entries.contains_key(&key) {
            if self.entries.len() >= MAX_TREE_ENTRIES {
                self.entries.clear();
                self.overflows += 1;
            }
            let hop = self.compute(lsdb, make_graph, entry, dest);
            self.entries.insert(key, hop);
        }
        &self.entries[&key]
    }

    fn compute(
        &mut self,
        lsdb: &Lsdb,
        make_graph: &mut dyn FnMut() -> LsGraph,
        entry: NodeId,
        dest: TreeDest,
    ) -> TreeHop {
        let me = self.me;
        let mut servers = std::mem::take(&mut self.servers);
        servers.clear();
        if let TreeDest::Addr(dst, v4) = dest {
            // Every access point that lists the client, whoever asks: the
            // entry point's view decides, and every node shares it.
            lsdb.clients_served(&dst, v4, entry, &mut servers);
            if servers.is_empty() {
                if let Some(o) = self.egress_for(lsdb, make_graph, entry, &dst, v4) {
                    servers.push((o, 0));
                }
            }
        }
        if let TreeDest::Node(n) = dest {
            servers.push((n, 0));
        }
        let deliver = servers.iter().any(|&(s, _)| s == me);
        let (spt, g) = Self::spt(&mut self.graph, &mut self.spts, make_graph, entry);
        let next_hops = match (spt, g.index_of(me)) {
            (Some(spt), Some(m)) => {
                let dests: Vec<_> = servers.iter().filter_map(|&(s, _)| g.index_of(s)).collect();
                let tree = entry_tree_from(&g.graph, spt, &dests);
                tree.next_hops
                    .get(&m)
                    .map(|hops| hops.iter().map(|&v| g.id_of(v)).collect())
                    .unwrap_or_default()
            }
            _ => Vec::new(),
        };
        self.servers = servers;
        TreeHop { next_hops, deliver }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsdb::{LsaRecord, LsdbConfig};
    use crate::time::Instant;
    use braid_wire::{LsaLink, Prefix};

    const CLIENT: [u8; 4] = [198, 18, 7, 7];

    fn client_dest() -> TreeDest {
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&CLIENT);
        TreeDest::Addr(a, true)
    }

    /// Links of cost 1 from a node to each of `neighbors`.
    fn links_to(neighbors: impl IntoIterator<Item = u16>) -> Box<[LsaLink]> {
        neighbors
            .into_iter()
            .map(|n| LsaLink {
                neighbor: NodeId(n),
                link_id: 0,
                metric_out: 1000,
                metric_in: 1000,
            })
            .collect()
    }

    /// Entries 1 and 6; 1-2, 2-3, 2-4, 4-5, 6-4; a client handing off
    /// between access points 3 and 5 is advertised by both.
    fn network() -> Lsdb {
        let mut db = Lsdb::new(LsdbConfig::default());
        let client = Prefix::Client4 {
            addr: CLIENT,
            quality: 100,
        };
        let links = [(1, 2), (2, 3), (2, 4), (4, 5), (6, 4)];
        for node in 1..=6u16 {
            let mine = links_to(
                links
                    .iter()
                    .filter_map(|&(a, b)| (a == node).then_some(b).or((b == node).then_some(a))),
            );
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

    /// Forwards a packet from `entry` hop by hop, copying at branches;
    /// returns how often each node saw it and where it was delivered.
    fn flood(db: &Lsdb, entry: u16) -> (BTreeMap<NodeId, u32>, Vec<NodeId>) {
        let mut tables: BTreeMap<NodeId, TreeTables> = BTreeMap::new();
        let mut arrivals = BTreeMap::new();
        let mut delivered = Vec::new();
        let mut frontier = vec![NodeId(entry)];
        let mut graph = || db.graph();
        while let Some(at) = frontier.pop() {
            *arrivals.entry(at).or_insert(0) += 1;
            assert!(arrivals[&at] < 10, "a loop through {at:?}");
            let t = tables.entry(at).or_insert_with(|| TreeTables::new(at));
            let hop = t.hop(db, &mut graph, NodeId(entry), client_dest());
            if hop.deliver {
                delivered.push(at);
            }
            frontier.extend(hop.next_hops.iter().copied());
        }
        delivered.sort();
        (arrivals, delivered)
    }

    #[test]
    fn a_client_in_handoff_gets_one_copy_through_each_access_point() {
        let db = network();
        let (arrivals, delivered) = flood(&db, 1);
        assert_eq!(delivered, vec![NodeId(3), NodeId(5)]);
        assert!(
            arrivals.values().all(|&n| n == 1),
            "no node sees a packet twice: {arrivals:?}"
        );
        let mut graph = || db.graph();
        let at2 = TreeTables::new(NodeId(2))
            .hop(&db, &mut graph, NodeId(1), client_dest())
            .clone();
        assert_eq!(at2.next_hops, vec![NodeId(3), NodeId(4)]);
    }

    #[test]
    fn a_node_forwards_by_the_entry_points_table() {
        // Seed 000's figure 1: node 4 forwards differently for entry 1
        // (toward 5 only: 3 is reached through 2) and entry 6 (toward 5
        // and back to 2 for 3).
        let db = network();
        let mut tables = TreeTables::new(NodeId(4));
        let mut graph = || db.graph();
        let from1 = tables
            .hop(&db, &mut graph, NodeId(1), client_dest())
            .clone();
        let from6 = tables
            .hop(&db, &mut graph, NodeId(6), client_dest())
            .clone();
        assert_eq!(from1.next_hops, vec![NodeId(5)]);
        assert_eq!(from6.next_hops, vec![NodeId(2), NodeId(5)]);
        let (_, delivered) = flood(&db, 6);
        assert_eq!(delivered, vec![NodeId(3), NodeId(5)]);
    }

    #[test]
    fn an_address_no_client_has_goes_to_the_entry_points_nearest_origin() {
        // Two gateways (3 and 5) serve the default route: entry 1 is nearer
        // 3, entry 6 nearer 5; every node agrees with the entry point.
        let mut db = network();
        for (gw, links) in [(3u16, vec![2u16]), (5, vec![4])] {
            let links = links_to(links);
            db.install_own(
                Instant::ZERO,
                LsaRecord::new(
                    NodeId(gw),
                    2,
                    links,
                    vec![Prefix::V4 {
                        addr: [0; 4],
                        len: 0,
                    }]
                    .into(),
                ),
            );
        }
        let mut tables = TreeTables::new(NodeId(4));
        let mut graph = || db.graph();
        let dst = {
            let mut a = [0u8; 16];
            a[..4].copy_from_slice(&[203, 0, 113, 1]);
            a
        };
        assert_eq!(
            tables.egress_for(&db, &mut graph, NodeId(1), &dst, true),
            Some(NodeId(3))
        );
        assert_eq!(
            tables.egress_for(&db, &mut graph, NodeId(6), &dst, true),
            Some(NodeId(5))
        );
        let hop = tables.hop(&db, &mut graph, NodeId(6), TreeDest::Addr(dst, true));
        assert_eq!(hop.next_hops, vec![NodeId(5)]);
    }
}
