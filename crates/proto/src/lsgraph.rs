//! The graph a router computes paths on, built from its link-state
//! database: two-way links only, each direction at the worse of its two
//! ends' word; in a network of areas (docs/protocol.md, "Areas") its own
//! area's links, the links across, and the leaders that stand for the
//! other areas.

use std::collections::BTreeMap;

use braid_wire::NodeId;

use crate::area::{area_in, AreaMap};
use crate::graph::{Graph, GraphBuilder, NodeIx};
use crate::lsdb::{direction_cost, LsaRecord, Lsdb};
use crate::metric::Metric;

impl Lsdb {
    /// Builds the graph of everything known. A link is in it only when
    /// both ends list it (the two-way check of RFC 2328 §16.1): one end's
    /// word is not enough, so a stale advertisement of a router that
    /// restarted or left cannot keep links alive, and no router attracts
    /// traffic with links nobody confirms. Both ends estimate both
    /// directions; a direction costs the worse of its two ends' word (the
    /// tail's `metric_out`, the head's `metric_in`). So an operator's cost
    /// override at either end (which raises both figures that end
    /// advertises) holds in both directions, everywhere in the network,
    /// and no router can make a link look better than its other end sees
    /// it. Nodes are sorted by id, so the graph and every path computed on
    /// it are the same for the same database.
    pub fn graph(&self) -> LsGraph {
        self.graph_in(0)
    }

    /// [`Self::graph`] as a router of `area` sees it (docs/protocol.md,
    /// "Areas"): the links of its area's routers; each link from one of
    /// them to a router another area's summary lists, one way (the
    /// member's word); and from each such router a link to the leader of
    /// every other area it leads to, costing the area-level distance. With
    /// no summaries held (a flat network) it is the whole database's graph.
    pub fn graph_in(&self, area: u16) -> LsGraph {
        let map = AreaMap::new(self.records().map(|r| (r.origin, &r.prefixes[..])));
        let is_local = |r: &LsaRecord| area_in(&r.prefixes) == area;
        let mut ids: Vec<NodeId> = self.records().map(|r| r.origin).collect();
        for r in self.records().filter(|r| is_local(r)) {
            ids.extend(r.links.iter().map(|l| l.neighbor));
        }
        ids.sort_unstable();
        ids.dedup();
        // Per physical link (lower id, higher id, link id): what each end
        // advertised (its out, its in), once each end has listed it.
        type Dir = Option<(Metric, Metric)>;
        let mut links: BTreeMap<(NodeId, NodeId, u8), (Dir, Dir)> = BTreeMap::new();
        // Links into other areas: (member, router beyond, its area, cost).
        let mut crossings: Vec<(NodeId, NodeId, u16, Metric)> = Vec::new();
        for r in self.records().filter(|r| is_local(r)) {
            for l in r.links.iter() {
                let beyond = match self.get(l.neighbor) {
                    Some(n) if is_local(n) => None,
                    _ => map.area_of(l.neighbor).filter(|&b| b != area),
                };
                if let Some(b) = beyond {
                    let cost = direction_cost(Metric::from_units(l.metric_out), None);
                    crossings.push((r.origin, l.neighbor, b, cost));
                    continue;
                }
                if l.neighbor == r.origin {
                    continue;
                }
                let (lo, hi) = (r.origin.min(l.neighbor), r.origin.max(l.neighbor));
                let entry = links.entry((lo, hi, l.link_id)).or_insert((None, None));
                let own = if r.origin == lo {
                    &mut entry.0
                } else {
                    &mut entry.1
                };
                // A record lists a link once (duplicates keep the first).
                own.get_or_insert((
                    Metric::from_units(l.metric_out),
                    Metric::from_units(l.metric_in),
                ));
            }
        }
        let index = |id: NodeId| ids.binary_search(&id).expect("collected above") as NodeIx;
        let mut b = GraphBuilder::new(ids.len());
        for ((lo, hi, _), (lo_end, hi_end)) in links {
            // The two-way check: a link only one end lists is left out.
            let (Some((lo_out, lo_in)), Some((hi_out, hi_in))) = (lo_end, hi_end) else {
                continue;
            };
            b.add_link(
                index(lo),
                index(hi),
                Some(direction_cost(lo_out, Some(hi_in))),
                Some(direction_cost(hi_out, Some(lo_in))),
            );
        }
        let mut distances: BTreeMap<u16, BTreeMap<u16, u64>> = BTreeMap::new();
        let mut entries: Vec<NodeId> = Vec::new();
        for &(member, beyond, their_area, cost) in &crossings {
            if cost.is_infinite() {
                continue;
            }
            b.add_link(index(member), index(beyond), Some(cost), None);
            entries.push(beyond);
            distances
                .entry(their_area)
                .or_insert_with(|| map.distances_from(their_area));
        }
        entries.sort_unstable();
        entries.dedup();
        // From each router beyond, to the leader of each area it leads to
        // that is nearer to that area than ours is (area-level distance:
        // each area a packet enters is strictly nearer its destination's,
        // so no packet comes back to an area it left while the summaries
        // agree). Without our own area's summary yet, every area counts.
        let ours = map.distances_from(area);
        for &entry in &entries {
            let Some(from) = map.area_of(entry) else {
                continue;
            };
            for (&z, &d) in &distances[&from] {
                let nearer = ours.get(&z).is_none_or(|&o| d < o);
                let leader = map.leader(z).filter(|&l| l != entry);
                if let (true, true, Some(l)) = (z != area, nearer, leader) {
                    let cost = Metric::from_units(d.min(u64::from(u32::MAX - 1)) as u32);
                    b.add_link(index(entry), index(l), Some(cost), None);
                }
            }
        }
        let local = ids
            .iter()
            .map(|&id| {
                self.get(id).is_none_or(&is_local) && map.area_of(id).is_none_or(|a| a == area)
            })
            .collect();
        LsGraph {
            graph: b.build(),
            ids,
            local,
            areas: map,
            area,
        }
    }
}

/// A graph built from the database, with its node ids.
#[derive(Debug, Clone)]
pub struct LsGraph {
    /// The graph; node index i is node `ids[i]`.
    pub graph: Graph,
    /// Node id of each graph index, sorted.
    pub ids: Vec<NodeId>,
    /// Whether each node is of the graph's area (every node, in a flat
    /// network): a source route ends at the first that is not.
    local: Vec<bool>,
    /// The other areas, from their leaders' summaries.
    areas: AreaMap,
    /// The area the graph was built for.
    area: u16,
}

impl LsGraph {
    /// A graph of one flat area (area 0): node index i is `ids[i]`.
    pub fn flat(graph: Graph, ids: Vec<NodeId>) -> Self {
        LsGraph {
            local: vec![true; ids.len()],
            graph,
            ids,
            areas: AreaMap::default(),
            area: 0,
        }
    }

    /// The graph index of node `id`, if the graph has it.
    pub fn index_of(&self, id: NodeId) -> Option<NodeIx> {
        self.ids.binary_search(&id).ok().map(|i| i as NodeIx)
    }

    /// Where paths toward `dst` end: `dst` itself when it is of the
    /// graph's area, else the leader of its area (which stands for it).
    pub fn target_of(&self, dst: NodeId) -> Option<NodeIx> {
        match self.index_of(dst) {
            Some(v) if self.local[v as usize] => Some(v),
            _ => {
                let area = self.areas.area_of(dst).filter(|&a| a != self.area)?;
                self.index_of(self.areas.leader(area)?)
            }
        }
    }

    /// The route of a path (its `transit` nodes, then `target`, where
    /// [`Self::target_of`] the egress led): the transit nodes' ids, and
    /// false, when the target is of the graph's area; else the nodes up
    /// to the first beyond the area, which routes the packet on, and
    /// true (docs/protocol.md, "Areas").
    pub fn route_of(&self, transit: &[NodeIx], target: NodeIx) -> (Vec<NodeId>, bool) {
        if self.local[target as usize] {
            return (transit.iter().map(|&v| self.id_of(v)).collect(), false);
        }
        let mut route = Vec::new();
        for &v in transit.iter().chain(std::iter::once(&target)) {
            route.push(self.id_of(v));
            if !self.local[v as usize] {
                break;
            }
        }
        (route, true)
    }

    /// Whether node `v` is of the graph's area.
    pub fn is_local(&self, v: NodeIx) -> bool {
        self.local[v as usize]
    }

    /// The areas the graph knows of beyond its own.
    pub fn areas(&self) -> &AreaMap {
        &self.areas
    }

    /// The area the graph was built for.
    pub fn area(&self) -> u16 {
        self.area
    }

    /// The node id of graph index `v`.
    pub fn id_of(&self, v: NodeIx) -> NodeId {
        self.ids[v as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_wire::Prefix;

    use crate::lsdb::tests::link;
    use crate::time::Instant;

    /// Three areas in a line: area 1 (routers 1-2-3, led by 1), area 2
    /// (4-5, led by 4), area 3 (6); links 3-4 and 5-6 cross. Each area's
    /// view takes its own routers' advertisements and the leaders' (the
    /// others are held here only to serve every view from one database).
    fn three_areas() -> Lsdb {
        use crate::area::summary_entries;
        let mut db = Lsdb::new(crate::lsdb::LsdbConfig::default());
        let area = |id, transit| Prefix::Area { id, transit };
        let one = 1000;
        let summary = |a: u16, members: &[u16], adjacent: &[(u16, u32)]| {
            let ids: Vec<NodeId> = members.iter().map(|&m| NodeId(m)).collect();
            let mut p = summary_entries(a, 2 * one, &ids, &[], adjacent);
            p.remove(0);
            p.insert(0, area(a, 2 * one));
            p
        };
        let records = [
            (
                1,
                vec![link(2, one, one)],
                summary(1, &[1, 2, 3], &[(2, one)]),
            ),
            (
                2,
                vec![link(1, one, one), link(3, one, one)],
                vec![area(1, 0)],
            ),
            (
                3,
                vec![link(2, one, one), link(4, one, one)],
                vec![area(1, 0)],
            ),
            (
                4,
                vec![link(3, one, one), link(5, one, one)],
                summary(2, &[4, 5], &[(1, one), (3, one)]),
            ),
            (
                5,
                vec![link(4, one, one), link(6, one, one)],
                vec![area(2, 0)],
            ),
            (6, vec![link(5, one, one)], summary(3, &[6], &[(2, one)])),
        ];
        for (origin, links, prefixes) in records {
            let r = LsaRecord::new(NodeId(origin), 1, links.into(), prefixes.into());
            db.install_own(Instant::ZERO, r);
        }
        db
    }

    #[test]
    fn a_router_routes_beyond_its_area_to_the_leader_standing_for_the_destinations_area() {
        let db = three_areas();
        let g = db.graph_in(1);
        let ix = |n: u16| g.index_of(NodeId(n)).unwrap();
        // Its area's routers are local; the leaders of the others are not.
        assert!([1, 2, 3].iter().all(|&n| g.is_local(ix(n))));
        assert!(!g.is_local(ix(4)) && !g.is_local(ix(6)));
        // Router 5 stands behind area 2's leader, 6 leads area 3.
        assert_eq!(g.target_of(NodeId(5)), Some(ix(4)));
        assert_eq!(g.target_of(NodeId(6)), Some(ix(6)));
        assert_eq!(g.target_of(NodeId(2)), Some(ix(2)));
        assert_eq!(g.target_of(NodeId(9)), None);
        // The crossing 3 -> 4 is in the graph one way; 4 leads on to 6.
        assert!(g.graph.find_arc(ix(3), ix(4)).is_some());
        assert!(g.graph.find_arc(ix(4), ix(3)).is_none());
        assert!(g.graph.find_arc(ix(4), ix(6)).is_some());
        // The route to 6 from 1 ends at 4, which routes it on.
        let path = crate::paths::shortest_path(&g.graph, ix(1), ix(6)).unwrap();
        let (route, beyond) = g.route_of(path.transit(), path.target());
        assert_eq!(
            (route, beyond),
            (vec![NodeId(2), NodeId(3), NodeId(4)], true)
        );
        // Within the area, as in a flat network.
        let path = crate::paths::shortest_path(&g.graph, ix(1), ix(3)).unwrap();
        assert_eq!(
            g.route_of(path.transit(), path.target()),
            (vec![NodeId(2)], false)
        );
    }

    #[test]
    fn no_router_beyond_leads_to_an_area_farther_from_the_destination_than_its_own() {
        // Area 2's view: router 3 (area 1) and router 6 (area 3) are
        // beyond. Area-level distances (transit 2,000 each, links 1,000):
        // from area 2 to area 1 or 3, 5,000; from area 1 to area 3, 8,000.
        // So 3 leads on to area 1's leader but not toward area 3 (a packet
        // would come back through area 2), and 6 not toward area 1.
        let db = three_areas();
        let g = db.graph_in(2);
        let ix = |n: u16| g.index_of(NodeId(n)).unwrap();
        assert!(g.is_local(ix(4)) && g.is_local(ix(5)));
        assert!(g.graph.find_arc(ix(4), ix(3)).is_some());
        assert!(g.graph.find_arc(ix(5), ix(6)).is_some());
        assert!(g.graph.find_arc(ix(3), ix(1)).is_some());
        assert!(g.graph.find_arc(ix(3), ix(6)).is_none());
        assert!(g.graph.find_arc(ix(6), ix(1)).is_none());
        // Router 2 (area 1) is reached through 4 and 3.
        let path = crate::paths::shortest_path(&g.graph, ix(5), g.target_of(NodeId(2)).unwrap());
        let path = path.unwrap();
        let (route, beyond) = g.route_of(path.transit(), path.target());
        assert_eq!((route, beyond), (vec![NodeId(4), NodeId(3)], true));
    }
}
