//! Routing areas (docs/protocol.md, "Areas"): what a router knows of the
//! areas beyond its own from their leaders' advertisements (which ids each
//! holds, which areas adjoin, what crossing each costs), the area-level
//! distances by which routes beyond its area are chosen, and the summary a
//! router advertises while it leads its area.
//!
//! Pure functions of the link-state database: no clocks, no sockets.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use braid_wire::{NodeId, Prefix};

/// The area of an advertisement's entries: the first [`Prefix::Area`], else 0.
pub fn area_in(prefixes: &[Prefix]) -> u16 {
    prefixes
        .iter()
        .find_map(Prefix::area)
        .map_or(0, |(id, _)| id)
}

/// Whether an advertisement carries its area's summary (it lists the
/// area's members, by id or by what they serve: its origin leads the
/// area).
pub fn is_summary(prefixes: &[Prefix]) -> bool {
    prefixes.iter().any(is_member_entry)
}

/// Whether an entry lists members of its origin's area (by id, or by what
/// they serve).
pub fn is_member_entry(p: &Prefix) -> bool {
    matches!(
        p,
        Prefix::Members { .. } | Prefix::Member4 { .. } | Prefix::Member6 { .. }
    )
}

/// One area as its leader's summary describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AreaSummary {
    /// The lowest-id leader heard (two leaders while an area is split).
    leader: NodeId,
    /// What crossing the area costs (metric units).
    transit: u32,
    /// Adjacent areas, and the cheapest link into each.
    adjacent: Vec<(u16, u32)>,
}

/// The network's areas as the leaders' summaries describe them: which
/// area each id is in, and the area-level distance between any two.
#[derive(Debug, Clone, Default)]
pub struct AreaMap {
    /// Runs of ids (first, last, area), sorted by first id.
    runs: Vec<(u16, u16, u16)>,
    areas: BTreeMap<u16, AreaSummary>,
}

impl AreaMap {
    /// The map of every summary among the advertisements (origin and
    /// entries) of `records`.
    pub fn new<'a>(records: impl IntoIterator<Item = (NodeId, &'a [Prefix])>) -> Self {
        let mut map = AreaMap::default();
        for (origin, prefixes) in records {
            if !is_summary(prefixes) {
                continue;
            }
            let mut area = None;
            for p in prefixes {
                match *p {
                    Prefix::Area { id, transit } if area.is_none() => area = Some((id, transit)),
                    Prefix::Members { first, extra } => {
                        if let Some((id, _)) = area {
                            let last = first.saturating_add(u16::from(extra));
                            map.runs.push((first, last, id));
                        }
                    }
                    Prefix::Member4 { node, .. } | Prefix::Member6 { node, .. } => {
                        if let Some((id, _)) = area {
                            map.runs.push((node, node, id));
                        }
                    }
                    _ => {}
                }
            }
            let (id, transit) = area.unwrap_or((0, 0));
            let adjacent = prefixes
                .iter()
                .filter_map(|p| match *p {
                    Prefix::Adjacent { area, metric } if area != id => Some((area, metric)),
                    _ => None,
                })
                .collect();
            let summary = AreaSummary {
                leader: origin,
                transit,
                adjacent,
            };
            // Two leaders of one area (split, or a handover in flight):
            // the lower id's summary stands for the area.
            match map.areas.get(&id) {
                Some(s) if s.leader < origin => {}
                _ => {
                    map.areas.insert(id, summary);
                }
            }
        }
        map.runs.sort_unstable();
        map
    }

    /// The area of node `id`, when a summary lists it.
    pub fn area_of(&self, id: NodeId) -> Option<u16> {
        let k = self.runs.partition_point(|&(first, _, _)| first <= id.0);
        self.runs[..k]
            .iter()
            .rev()
            .take_while(|&&(first, _, _)| first <= id.0)
            .find(|&&(_, last, _)| id.0 <= last)
            .map(|&(_, _, area)| area)
    }

    /// The node that stands for `area` in a router's graph: its leader.
    pub fn leader(&self, area: u16) -> Option<NodeId> {
        self.areas.get(&area).map(|s| s.leader)
    }

    /// How many areas the summaries describe.
    pub fn len(&self) -> usize {
        self.areas.len()
    }

    /// Whether no summary was heard.
    pub fn is_empty(&self) -> bool {
        self.areas.is_empty()
    }

    /// Area-level distances from `from` to every area reachable: crossing
    /// `from` itself, then for each area entered the cheapest link into it
    /// and its transit. The estimate by which a router picks the border a
    /// packet leaves its area by.
    pub fn distances_from(&self, from: u16) -> BTreeMap<u16, u64> {
        let mut dist = BTreeMap::new();
        let Some(start) = self.areas.get(&from) else {
            return dist;
        };
        let mut heap = BinaryHeap::new();
        heap.push(Reverse((u64::from(start.transit), from)));
        while let Some(Reverse((d, a))) = heap.pop() {
            if dist.contains_key(&a) {
                continue;
            }
            dist.insert(a, d);
            let Some(s) = self.areas.get(&a) else {
                continue;
            };
            for &(b, metric) in &s.adjacent {
                let Some(next) = self.areas.get(&b) else {
                    continue;
                };
                if !dist.contains_key(&b) {
                    let nd = d + u64::from(metric) + u64::from(next.transit);
                    heap.push(Reverse((nd, b)));
                }
            }
        }
        dist
    }
}

/// The most ids one [`Prefix::Members`] entry covers.
const RUN: usize = 256;

/// The summary entries of an area led by the router that advertises
/// them, in this order: its area and `transit`; each adjacent area with
/// the cheapest link into it (`crossings`: area and metric, any order);
/// the IP prefixes its members serve
/// (`served`: member and [`Prefix::V4`] or [`Prefix::V6`]; others are
/// left out) as [`Prefix::Member4`] and [`Prefix::Member6`]; the other
/// `members` (sorted, without duplicates) as runs of consecutive ids.
pub fn summary_entries(
    area: u16,
    transit: u32,
    members: &[NodeId],
    served: &[(NodeId, Prefix)],
    crossings: &[(u16, u32)],
) -> Vec<Prefix> {
    let mut out = vec![Prefix::Area { id: area, transit }];
    let mut cheapest: BTreeMap<u16, u32> = BTreeMap::new();
    for &(a, metric) in crossings {
        if a != area {
            let m = cheapest.entry(a).or_insert(metric);
            *m = (*m).min(metric);
        }
    }
    out.extend(
        cheapest
            .into_iter()
            .map(|(area, metric)| Prefix::Adjacent { area, metric }),
    );
    let mut listed: Vec<NodeId> = Vec::new();
    for &(node, p) in served {
        let entry = match p {
            Prefix::V4 { addr, len } => Prefix::Member4 {
                node: node.0,
                addr,
                len,
            },
            Prefix::V6 { addr, len } => Prefix::Member6 {
                node: node.0,
                addr,
                len,
            },
            _ => continue,
        };
        out.push(entry);
        listed.push(node);
    }
    listed.sort_unstable();
    let members: Vec<NodeId> = members
        .iter()
        .copied()
        .filter(|m| listed.binary_search(m).is_err())
        .collect();
    let mut i = 0;
    while i < members.len() {
        let first = members[i].0;
        let mut extra = 0usize;
        while i + extra + 1 < members.len()
            && extra + 1 < RUN
            && u32::from(members[i + extra + 1].0) == u32::from(first) + extra as u32 + 1
        {
            extra += 1;
        }
        out.push(Prefix::Members {
            first,
            extra: extra as u8,
        });
        i += extra + 1;
    }
    out
}

/// A cost rounded up to three significant bits (at most 25% over): an
/// area's transit, which would otherwise change with every metric of the
/// area and re-issue its leader's advertisement network-wide each time.
pub fn coarse(cost: u64) -> u32 {
    let cost = cost.min(u64::from(u32::MAX >> 1));
    if cost < 8 {
        return cost as u32;
    }
    let shift = 64 - cost.leading_zeros() - 3;
    let top = cost.div_ceil(1 << shift);
    (top << shift) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leader(
        origin: u16,
        area: u16,
        transit: u32,
        members: &[u16],
        adj: &[(u16, u32)],
    ) -> (NodeId, Vec<Prefix>) {
        let members: Vec<NodeId> = members.iter().map(|&m| NodeId(m)).collect();
        (
            NodeId(origin),
            summary_entries(area, transit, &members, &[], adj),
        )
    }

    #[test]
    fn members_are_written_as_runs_of_at_most_256() {
        let ids: Vec<NodeId> = (10..300).chain([302, 303, 400]).map(NodeId).collect();
        let e = summary_entries(3, 40, &ids, &[], &[(4, 7), (4, 5), (3, 1), (9, 2)]);
        assert_eq!(
            e,
            vec![
                Prefix::Area { id: 3, transit: 40 },
                Prefix::Adjacent { area: 4, metric: 5 },
                Prefix::Adjacent { area: 9, metric: 2 },
                Prefix::Members {
                    first: 10,
                    extra: 255
                },
                Prefix::Members {
                    first: 266,
                    extra: 33
                },
                Prefix::Members {
                    first: 302,
                    extra: 1
                },
                Prefix::Members {
                    first: 400,
                    extra: 0
                },
            ]
        );
        assert!(is_summary(&e));
        assert_eq!(area_in(&e), 3);
        assert_eq!(area_in(&[]), 0);
    }

    #[test]
    fn members_that_serve_a_prefix_are_listed_with_it_not_in_a_run() {
        let v4 = Prefix::V4 {
            addr: [198, 18, 0, 7],
            len: 32,
        };
        let client = Prefix::Client4 {
            addr: [198, 18, 0, 8],
            quality: 9,
        };
        let ids: Vec<NodeId> = [5, 6, 7].map(NodeId).to_vec();
        let served = [(NodeId(6), v4), (NodeId(7), client)];
        let e = summary_entries(2, 0, &ids, &served, &[]);
        assert_eq!(
            e,
            vec![
                Prefix::Area { id: 2, transit: 0 },
                Prefix::Member4 {
                    node: 6,
                    addr: [198, 18, 0, 7],
                    len: 32
                },
                Prefix::Members { first: 5, extra: 0 },
                Prefix::Members { first: 7, extra: 0 },
            ]
        );
        let map = AreaMap::new([(NodeId(5), &e[..])]);
        assert_eq!(map.area_of(NodeId(6)), Some(2));
        assert_eq!(map.area_of(NodeId(7)), Some(2));
    }

    #[test]
    fn ids_map_to_the_area_whose_leader_lists_them() {
        let recs = [
            leader(5, 1, 100, &[1, 2, 3, 5, 9], &[(2, 10)]),
            leader(4, 2, 300, &[4, 6, 7, 8, 65535], &[(1, 10)]),
        ];
        let map = AreaMap::new(recs.iter().map(|(o, p)| (*o, &p[..])));
        assert_eq!(map.len(), 2);
        for (id, area) in [
            (1, Some(1)),
            (3, Some(1)),
            (4, Some(2)),
            (9, Some(1)),
            (10, None),
        ] {
            assert_eq!(map.area_of(NodeId(id)), area, "{id}");
        }
        assert_eq!(map.area_of(NodeId(65535)), Some(2));
        assert_eq!(map.leader(2), Some(NodeId(4)));
    }

    #[test]
    fn the_lower_leader_of_a_split_area_stands_for_it() {
        let recs = [leader(9, 1, 100, &[9], &[]), leader(3, 1, 50, &[3], &[])];
        let map = AreaMap::new(recs.iter().map(|(o, p)| (*o, &p[..])));
        assert_eq!(map.leader(1), Some(NodeId(3)));
        // Both halves' members are known.
        assert_eq!(map.area_of(NodeId(9)), Some(1));
    }

    #[test]
    fn area_distances_add_links_across_and_transits() {
        // 1 - 2 - 3 in a line, and 1 - 4 - 3 dearer.
        let recs = [
            leader(1, 1, 100, &[1], &[(2, 10), (4, 10)]),
            leader(2, 2, 200, &[2], &[(1, 10), (3, 10)]),
            leader(3, 3, 300, &[3], &[(2, 10), (4, 10)]),
            leader(4, 4, 900, &[4], &[(1, 10), (3, 10)]),
            leader(5, 5, 1, &[5], &[]),
        ];
        let d = AreaMap::new(recs.iter().map(|(o, p)| (*o, &p[..]))).distances_from(1);
        assert_eq!(d[&1], 100);
        assert_eq!(d[&2], 100 + 10 + 200);
        assert_eq!(d[&3], 100 + 10 + 200 + 10 + 300);
        assert_eq!(d[&4], 100 + 10 + 900);
        assert!(!d.contains_key(&5));
        assert!(AreaMap::new(recs.iter().map(|(o, p)| (*o, &p[..])))
            .distances_from(7)
            .is_empty());
    }

    #[test]
    fn coarse_costs_round_up_by_at_most_a_quarter() {
        for c in [0u64, 1, 7, 8, 9, 15, 16, 17, 1000, 1023, 123_456, u64::MAX] {
            let q = u64::from(coarse(c));
            let c = c.min(u64::from(u32::MAX >> 1));
            assert!(q >= c && q <= c + c / 4 + 1, "{c} -> {q}");
        }
        assert_eq!(coarse(1000), coarse(1001));
    }
}
