//! The node's routes: per egress, the k disjoint paths computed on the
//! link-state graph and damped (SrcRR), recomputed when the topology
//! changes (throttled by `route_delay`) or a local link fails (at once),
//! and dropped when no session uses them any more.

use braid_wire::NodeId;

use super::binding::Pending;
use super::events::NodeEvent;
use super::Node;
use crate::paths::{Damping, DisjointPaths};
use crate::redundancy::PathState;
use crate::scheduler::Scheduler;
use crate::time::Instant;

/// The paths toward one egress, and what waits for them.
#[derive(Debug)]
pub(super) struct RouteSet {
    pub(super) damping: Damping<Vec<Vec<NodeId>>>,
    /// Late binding: what waits for one of these paths.
    pub(super) waiting: Option<Scheduler<Pending>>,
}

/// A path's loss implied by its links' ETX: with ETX = 1/(df·dr) and
/// similar directions, a link delivers about 1/√ETX of the packets sent on
/// it. An estimate until the egress's path reports measure the real thing.
fn etx_path_loss(graph: &crate::graph::Graph, path: &crate::paths::Path) -> f64 {
    let delivery: f64 = path
        .arcs
        .iter()
        .map(|&a| {
            (crate::metric::SCALE as f64 / graph.arc(a).cost.units() as f64)
                .sqrt()
                .min(1.0)
        })
        .product();
    1.0 - delivery
}

impl Node {
    /// The transit nodes of each path in use toward `egress`.
    pub fn paths_to(&self, egress: NodeId) -> Option<&Vec<Vec<NodeId>>> {
        self.routes.get(&egress).and_then(|r| r.damping.current())
    }

    /// Every egress this node has routes to, with its paths (each from
    /// this node to the egress).
    pub fn routes(&self) -> impl Iterator<Item = (NodeId, &Vec<Vec<NodeId>>)> + '_ {
        self.routes
            .keys()
            .filter_map(|&e| Some((e, self.paths_to(e)?)))
    }

    /// The paths this node would take toward `egress` now, computed on
    /// the link-state graph without touching the routes in use (which
    /// exist only toward destinations traffic goes to): transit nodes and
    /// cost of each, cheapest first. For showing an operator the routes.
    pub fn candidate_paths(&self, egress: NodeId) -> Vec<(Vec<NodeId>, u64)> {
        let ls = self.control.graph();
        let (Some(me), Some(e)) = (ls.index_of(self.id), ls.index_of(egress)) else {
            return Vec::new();
        };
        let Ok(mut dp) = DisjointPaths::new(&ls.graph, me) else {
            return Vec::new();
        };
        let k = self
            .config
            .max_paths
            .clamp(1, crate::redundancy::mode::MAX_PATHS);
        dp.to(e, k, self.config.disjoint)
            .map(|paths| {
                paths
                    .iter()
                    .map(|p| (p.transit().iter().map(|&v| ls.id_of(v)).collect(), p.cost))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The cost of a path (transit nodes toward `egress`) on the current
    /// link-state graph, in metric units; `None` when a link of it is gone.
    pub fn path_cost(&self, transit: &[NodeId], egress: NodeId) -> Option<u64> {
        let ls = self.control.graph();
        let hops: Vec<NodeId> = std::iter::once(self.id)
            .chain(transit.iter().copied())
            .chain(std::iter::once(egress))
            .collect();
        let mut total = 0u64;
        for w in hops.windows(2) {
            let (a, b) = (ls.index_of(w[0])?, ls.index_of(w[1])?);
            total += ls.graph.arc(ls.graph.find_arc(a, b)?).cost.units() as u64;
        }
        Some(total)
    }

    /// Computes (or re-computes) the paths toward `egress`; false when none.
    pub(super) fn ensure_routes(&mut self, now: Instant, egress: NodeId) -> bool {
        if !self.routes.contains_key(&egress) {
            self.routes.insert(
                egress,
                RouteSet {
                    damping: Damping::new(self.config.damping),
                    waiting: None,
                },
            );
            self.update_routes(now, &[egress]);
        }
        self.paths_to(egress).is_some_and(|p| !p.is_empty())
    }

    /// Recomputes every route now (a local link failed: not throttled).
    pub(super) fn recompute_routes_now(&mut self, now: Instant) {
        self.routes_due = None;
        self.routes_computed = now;
        let egresses: Vec<NodeId> = self.routes.keys().copied().collect();
        self.update_routes(now, &egresses);
    }

    /// Recomputes the routes if they are due (the topology changed at
    /// least `route_delay` after the last computation).
    pub(super) fn recompute_routes_if_due(&mut self, now: Instant) {
        if self.routes_due.is_some_and(|t| t <= now) {
            self.recompute_routes_now(now);
        }
    }

    /// Notes a link-state change and schedules the route recomputation
    /// (at once if the last one was long enough ago).
    pub(super) fn note_topology(&mut self, now: Instant) {
        let seen = self.control.lsdb().version();
        if seen != self.topology_seen {
            self.topology_seen = seen;
            if !self.access.is_empty() {
                // Another access point's advertisement may have changed
                // which of them serve a client.
                self.update_access(now);
            }
            if self.routes_due.is_none() && !self.routes.is_empty() {
                self.routes_due = Some(now.max(self.routes_computed + self.config.route_delay));
            }
        }
    }

    /// Drops the routes toward nodes that no session uses any more and
    /// nothing waits for, with the ingress's paths toward them.
    pub(super) fn drop_unused_routes(&mut self) {
        let unused: Vec<NodeId> = self
            .routes
            .iter()
            .filter(|(&peer, set)| {
                !self.ingress.serves(peer)
                    && !self.egress.serves(peer)
                    && set.waiting.as_ref().is_none_or(|w| w.queued() == 0)
                    && self.backlog.binary_search(&peer).is_err()
            })
            .map(|(&peer, _)| peer)
            .collect();
        for peer in unused {
            self.routes.remove(&peer);
            self.ingress.forget_paths(peer);
        }
    }

    fn update_routes(&mut self, now: Instant, egresses: &[NodeId]) {
        let ls = self.control.graph();
        let Some(me) = ls.index_of(self.id) else {
            return;
        };
        let Ok(mut dp) = DisjointPaths::new(&ls.graph, me) else {
            return;
        };
        let k = self
            .config
            .max_paths
            .clamp(1, crate::redundancy::mode::MAX_PATHS);
        for &egress in egresses {
            let Some(e) = ls.index_of(egress) else {
                continue;
            };
            let Ok(paths) = dp.to(e, k, self.config.disjoint) else {
                continue;
            };
            let mut best: Vec<Vec<NodeId>> = paths
                .iter()
                .map(|p| p.transit().iter().map(|&v| ls.id_of(v)).collect())
                .collect();
            let set = self.routes.get_mut(&egress).expect("ensured");
            // A path appeared or broke while the primary is still among the
            // best: it stays first, so the new set is taken at once below
            // (a second path found after boot must not wait out the hold
            // because it is a little cheaper than the first).
            let mut paths: Vec<&crate::paths::Path> = paths.iter().collect();
            if let Some(cur) = set.damping.current() {
                let same_paths = cur.len() == best.len() && cur.iter().all(|p| best.contains(p));
                let kept = cur.first().and_then(|p0| best.iter().position(|p| p == p0));
                if let (false, Some(i)) = (same_paths, kept) {
                    let primary = best.remove(i);
                    best.insert(0, primary);
                    let primary = paths.remove(i);
                    paths.insert(0, primary);
                }
            }
            // Damping weighs the primary path (slot 0: what single-path
            // traffic rides; the others are ranked behind it). A set with a
            // broken path counts as gone, so it is replaced at once.
            let best_cost = paths.first().map_or(u64::MAX, |p| p.cost);
            let current_cost = set.damping.current().and_then(|cur| {
                let mut primary = None;
                for transit in cur {
                    let hops: Vec<NodeId> = std::iter::once(self.id)
                        .chain(transit.iter().copied())
                        .chain(std::iter::once(egress))
                        .collect();
                    let mut total = 0u64;
                    for w in hops.windows(2) {
                        let (a, b) = (ls.index_of(w[0])?, ls.index_of(w[1])?);
                        total += ls.graph.arc(ls.graph.find_arc(a, b)?).cost.units() as u64;
                    }
                    primary.get_or_insert(total);
                }
                primary
            });
            if best.is_empty() {
                continue;
            }
            // The same primary with other extra paths (one appeared or
            // broke): nothing to damp, take the new set at once.
            let same_primary = set
                .damping
                .current()
                .is_some_and(|cur| cur.first() == best.first() && *cur != best);
            let current_cost = current_cost.filter(|_| !same_primary);
            let (chosen, changed) = set.damping.offer(now, best, best_cost, current_cost);
            if changed {
                let chosen = chosen.clone();
                self.counters.route_changes += 1;
                self.events.push(NodeEvent::RouteChange { egress });
                let etx = self.config.control.metric == crate::linkest::MetricKind::Etx;
                let states: Vec<PathState> = paths
                    .iter()
                    .take(chosen.len())
                    .map(|p| PathState {
                        up: true,
                        weight: (1e9 / p.cost.max(1) as f64) as u32,
                        loss: if etx {
                            etx_path_loss(&ls.graph, p)
                        } else {
                            0.0
                        },
                    })
                    .collect();
                self.renumber_waiting(egress, states.len());
                let mut out = std::mem::take(&mut self.scratch);
                self.ingress.set_paths(now, egress, &states, &mut out);
                self.emit_all(&mut out, &[], Default::default());
                self.scratch = out;
                self.note_mode_changes();
            }
        }
    }
}
