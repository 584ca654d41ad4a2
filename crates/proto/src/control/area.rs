//! The control plane's area duties (docs/protocol.md, "Areas"): which
//! advertisements of other areas it keeps (their leaders' only), which
//! neighbors are of its own area (only theirs have a database to compare
//! digests with), and the entries it adds to its own advertisement: its
//! area and, while it leads the area, the area's summary.

use braid_wire::{Lsa, NodeId, Prefix};

use super::ControlPlane;
use crate::area::{coarse, is_member_entry, summary_entries};
use crate::paths::ShortestPathTree;
use crate::time::Instant;

impl ControlPlane {
    /// Whether an advertisement received is kept: its origin's area is
    /// ours, or it is another area's summary. A neighbor's says which area
    /// the neighbor is of.
    pub(super) fn keeps_area_of(&mut self, lsa: &Lsa<'_>) -> bool {
        let area = lsa
            .prefixes()
            .find_map(|p| p.area())
            .map_or(0, |(id, _)| id);
        if let Some(n) = self.neighbors.iter_mut().find(|n| n.neighbor == lsa.origin) {
            n.area = Some(area);
        }
        let summary = lsa.prefixes().any(|p| is_member_entry(&p));
        self.summaries_heard |= summary;
        if area == self.config.area || summary {
            return true;
        }
        self.counters.lsas_other_area += 1;
        false
    }

    /// Whether `neighbor` is of another area (its database is not ours:
    /// digests are not compared with it).
    pub(super) fn of_other_area(&self, neighbor: NodeId) -> bool {
        self.neighbors
            .iter()
            .find(|n| n.neighbor == neighbor)
            .and_then(|n| n.area)
            .is_some_and(|a| a != self.config.area)
    }

    /// Recomputes the area entries of our advertisement when the database
    /// changed (at most once per `lsa_min_interval`); a change is
    /// advertised.
    pub(super) fn check_area_entries(&mut self, now: Instant) {
        let version = self.lsdb.version();
        let due = self
            .area_checked_at
            .is_none_or(|t| now.since(t) >= self.config.lsa_min_interval);
        if version == self.area_checked_version || !due {
            return;
        }
        self.area_checked_version = version;
        self.area_checked_at = Some(now);
        let flat = self.config.area == 0 && self.area_entries.is_empty() && !self.summaries_heard;
        if flat {
            // One flat area: nothing to say.
            return;
        }
        let entries = self.area_entries_now();
        if entries != self.area_entries {
            self.area_entries = entries;
            self.lsa_wanted = true;
        }
    }

    /// Our area, and the summary when we lead it: the lowest id among the
    /// routers of the area we reach within it.
    fn area_entries_now(&mut self) -> Vec<Prefix> {
        let area = self.config.area;
        let ls = self.lsdb.graph_in(area);
        let Some(me) = ls.index_of(self.id) else {
            return vec![Prefix::Area {
                id: area,
                transit: 0,
            }];
        };
        let spt = ShortestPathTree::compute(&ls.graph, me);
        let mut members = Vec::new();
        let mut farthest = 0u64;
        let mut crossings = Vec::new();
        let mut served = Vec::new();
        for v in 0..ls.ids.len() as u32 {
            if !spt.reachable(v) || !ls.is_local(v) {
                continue;
            }
            let id = ls.id_of(v);
            if let Some(r) = self.lsdb.get(id) {
                members.push(id);
                farthest = farthest.max(spt.dist[v as usize]);
                served.extend(r.prefixes.iter().map(|&p| (id, p)));
            }
            // Its links into other areas.
            for a in ls.graph.out_arcs(v) {
                let arc = ls.graph.arc(a);
                if !ls.is_local(arc.to) {
                    if let Some(b) = ls.areas().area_of(ls.id_of(arc.to)) {
                        crossings.push((b, arc.cost.units()));
                    }
                }
            }
        }
        members.sort_unstable();
        if members.first() != Some(&self.id) {
            return if area == 0 {
                Vec::new()
            } else {
                vec![Prefix::Area {
                    id: area,
                    transit: 0,
                }]
            };
        }
        let mut entries = summary_entries(area, coarse(farthest), &members, &served, &crossings);
        // At most half of what an advertisement may carry (the rest is
        // for what the router serves): members past it are unreachable
        // from other areas, and counted.
        let room = self.lsdb.config().max_prefixes / 2;
        let unlisted: u64 = entries
            .iter()
            .skip(room)
            .map(|p| match p {
                Prefix::Members { extra, .. } => u64::from(*extra) + 1,
                _ => 1,
            })
            .sum();
        entries.truncate(room);
        self.counters.area_members_unlisted = unlisted;
        entries
    }
}
