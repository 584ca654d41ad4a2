//! The node's routes: per egress, the k disjoint paths computed on the
//! link-state graph and damped (SrcRR), with what the ingress knows of
//! each (its [`PathState`]): the one place a node keeps the paths toward
//! an egress. Recomputed when the topology changes (throttled by
//! `route_delay`) or a local link fails (at once), dropped when no
//! session uses them any more.
//!
//! [`Routes`] reads the graph it is given and returns what changed
//! ([`RouteChange`]); it calls nothing else. The node hands each change
//! to the ingress (new path states) and the binder (paths renumbered).
//! It also gives a datagram the source route of one of its paths.

use std::collections::BTreeMap;
use std::time::Duration;

use braid_wire::data::{forwarding_step, Forward, MAX_ROUTE_LEN};
use braid_wire::{DataFlags, DataHeader, DataView, NodeId};

use super::config::{Dest, Transmit};
use super::pool::BufferPool;
use crate::graph::Graph;
use crate::lsgraph::LsGraph;
use crate::paths::{Damping, DampingConfig, DisjointPaths, Disjointness, Path};
use crate::redundancy::equalise::PathDelays;
use crate::redundancy::pacing::{PathPacer, PathPacers};
use crate::redundancy::PathState;
use crate::time::Instant;

/// How routes are computed and damped (from the node's config).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RouteSettings {
    /// Paths kept per egress (1..=`MAX_PATHS`).
    pub max_paths: usize,
    /// Node- or edge-disjoint.
    pub disjoint: Disjointness,
    /// When a better primary path replaces the current one.
    pub damping: DampingConfig,
    /// Least time between two recomputations after topology changes.
    pub route_delay: Duration,
    /// The links' costs are ETX: a new path's loss is estimated from
    /// them until path reports measure it.
    pub etx: bool,
}

/// The paths toward one egress.
#[derive(Debug)]
struct RouteSet {
    /// The transit nodes of each path in use, damped.
    damping: Damping<Vec<Vec<NodeId>>>,
    /// What the ingress knows of each path in use, in the same order.
    states: Vec<PathState>,
    /// How long each path takes, from the path reports, and the holds
    /// that equalise them (`redundancy/equalise.rs`), in the same order.
    delays: PathDelays,
    /// How fast each path may be sent on (`redundancy/pacing.rs`), in
    /// the same order.
    pacers: PathPacers,
    /// The egress is beyond this router's area: each route ends at the
    /// first router beyond it, which routes the packet on.
    beyond: bool,
}

/// The paths toward `egress` changed: the new state of each, in path
/// order (the ingress's sessions take them; what the binder held for
/// one of the old paths goes back above the binding point).
#[derive(Debug, Clone, PartialEq)]
pub struct RouteChange {
    /// The egress whose paths changed.
    pub egress: NodeId,
    /// The new paths' states, in path order.
    pub states: Vec<PathState>,
}

/// Why a datagram got no source route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unrouted {
    /// Its path toward the egress is gone (`no_path`).
    NoPath,
    /// The header and route do not fit the format (`malformed`).
    Malformed,
    /// The route's first step does not start here (`not_on_route`).
    NotOnRoute,
    /// The path has more hops than the hop limit lets a packet make
    /// ([`MAX_PATH_HOPS`] at most: `route_too_long`).
    TooLong,
}

/// Most hops a path can take: the hop limit, 8 bits, must last the whole
/// way (an ingress whose route continues past a waypoint sets it to
/// this).
pub const MAX_PATH_HOPS: usize = u8::MAX as usize;

/// Writes a datagram (`header`, then `body`) with `route` in a buffer
/// from `pool`, and takes its first step from `me` as every transit node
/// takes its own ([`forwarding_step`]): ready for its next hop. `route`
/// is the whole way to the egress, or (`beyond`) the way to the first
/// router beyond this router's area, which routes the packet on
/// (docs/protocol.md, "Areas"); the header's route pointer says where
/// `me` stands on it (0: the ingress; 1: a waypoint, `route[0]`).
///
/// A route longer than the header holds ([`MAX_ROUTE_LEN`]) is cut
/// there, and its last node becomes a waypoint that routes the packet on
/// ([`DataFlags::WAYPOINT`]); an ingress then sets the hop limit to its
/// maximum, so the packet lasts the whole way. A path with more hops
/// than the hop limit allows is refused ([`Unrouted::TooLong`]).
pub fn write_route(
    mut header: DataHeader,
    route: &[NodeId],
    me: NodeId,
    beyond: bool,
    body: &[u8],
    pool: &mut BufferPool,
) -> Result<Transmit, Unrouted> {
    let hops = (route.len() + 1).saturating_sub(usize::from(header.route_ptr));
    let written = if beyond && route.len() <= MAX_ROUTE_LEN {
        // Its last node is beyond this router's area and routes it on.
        header.flags.insert(DataFlags::WAYPOINT);
        if header.route_ptr == 0 {
            header.hop_limit = MAX_PATH_HOPS as u8;
        }
        route
    } else if route.len() > MAX_ROUTE_LEN {
        header.flags.insert(DataFlags::WAYPOINT);
        if header.route_ptr == 0 {
            header.hop_limit = MAX_PATH_HOPS as u8;
        }
        &route[..MAX_ROUTE_LEN]
    } else {
        header.flags.remove(DataFlags::WAYPOINT);
        route
    };
    if hops > usize::from(header.hop_limit) {
        return Err(Unrouted::TooLong);
    }
    let mut buf = pool.take();
    buf.resize(DataHeader::encoded_len(written.len()) + body.len(), 0);
    let Ok(n) = header.emit(written, &mut buf) else {
        pool.give(buf);
        return Err(Unrouted::Malformed);
    };
    buf[n..].copy_from_slice(body);
    let (Forward::To(next), route_ptr) = forwarding_step(&header, |i| written.get(i).copied(), me)
    else {
        pool.give(buf);
        return Err(Unrouted::NotOnRoute);
    };
    let mut view = DataView::new_unchecked(&mut buf[..]);
    view.set_route_ptr(route_ptr);
    view.set_hop_limit(header.hop_limit - 1);
    Ok(Transmit {
        dest: Dest::Neighbor(next),
        bytes: buf,
        rate: None,
    })
}

/// Every egress's damped paths, and when they are next recomputed.
#[derive(Debug)]
pub struct Routes {
    me: NodeId,
    settings: RouteSettings,
    sets: BTreeMap<NodeId, RouteSet>,
    /// The link-state database version the routes last saw.
    topology_seen: u64,
    /// When routes are next due for recomputation (the topology changed).
    due: Option<Instant>,
    /// When they were last computed.
    computed: Instant,
}

/// The route of `path` (toward an egress beyond the area, up to the
/// first router beyond it: `LsGraph::route_of`).
fn route_ids(ls: &LsGraph, path: &Path) -> Vec<NodeId> {
    ls.route_of(path.transit(), path.target()).0
}

/// A path's loss implied by its links' ETX: with ETX = 1/(df·dr) and
/// similar directions, a link delivers about 1/√ETX of the packets sent on
/// it. An estimate until the egress's path reports measure the real thing.
fn etx_path_loss(graph: &Graph, path: &Path) -> f64 {
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

/// The cost of the path `me`, `transit`..., `egress` on `ls`, in metric
/// units; `None` when a link of it is gone.
///
/// Toward an egress beyond the area, `transit` is the route (up to the
/// first router beyond), and the last step is that router's link to the
/// leader standing for the egress's area.
pub fn path_cost(ls: &LsGraph, me: NodeId, transit: &[NodeId], egress: NodeId) -> Option<u64> {
    let mut total = 0u64;
    let mut from = ls.index_of(me)?;
    let target = ls.target_of(egress)?;
    for &hop in transit {
        let to = ls.index_of(hop)?;
        total += ls.graph.arc(ls.graph.find_arc(from, to)?).cost.units() as u64;
        from = to;
    }
    if from != target {
        total += ls.graph.arc(ls.graph.find_arc(from, target)?).cost.units() as u64;
    }
    Some(total)
}

impl Routes {
    /// No routes yet; `now` counts as the last computation.
    pub fn new(me: NodeId, settings: RouteSettings, now: Instant) -> Self {
        Routes {
            me,
            settings,
            sets: BTreeMap::new(),
            topology_seen: u64::MAX,
            due: None,
            computed: now,
        }
    }

    fn k(&self) -> usize {
        self.settings
            .max_paths
            .clamp(1, crate::redundancy::mode::MAX_PATHS)
    }

    /// The transit nodes of each path in use toward `egress`.
    pub fn paths_to(&self, egress: NodeId) -> Option<&Vec<Vec<NodeId>>> {
        self.sets.get(&egress).and_then(|r| r.damping.current())
    }

    /// What the ingress knows of each path in use toward `egress` (empty
    /// when there is none).
    pub fn states(&self, egress: NodeId) -> &[PathState] {
        self.sets.get(&egress).map_or(&[], |r| &r.states)
    }

    /// Notes a path report's delay sample (ms) of each path toward
    /// `egress` (`None`: no sample for that path).
    pub fn note_delays(&mut self, egress: NodeId, samples: &[Option<f64>]) {
        if let Some(set) = self.sets.get_mut(&egress) {
            set.delays.note(samples);
        }
    }

    /// How long a bulk packet of a mode that spreads packets waits before
    /// it leaves on path `path` toward `egress`, so that it arrives with
    /// the slowest path's (`redundancy/equalise.rs`).
    pub fn hold(&self, egress: NodeId, path: usize) -> Duration {
        self.sets
            .get(&egress)
            .map_or(Duration::ZERO, |s| s.delays.hold(path))
    }

    /// The path toward `egress` a bulk packet of a mode that spreads
    /// packets should take now (`PathDelays::lead`).
    pub fn lead(&self, egress: NodeId, now: Instant) -> Option<usize> {
        self.sets.get(&egress)?.delays.lead(now)
    }

    /// A bulk packet of a spreading mode went on `path` toward `egress`.
    pub fn note_sent(&mut self, egress: NodeId, now: Instant, path: usize) {
        if let Some(set) = self.sets.get_mut(&egress) {
            set.delays.note_sent(now, path);
        }
    }

    /// Whether the next packet toward `egress` should go on each of its
    /// paths, to date those whose delay is not known yet (counted:
    /// `PathDelays::take_probe`).
    pub fn take_probe(&mut self, egress: NodeId) -> bool {
        self.sets
            .get_mut(&egress)
            .is_some_and(|s| s.delays.take_probe())
    }

    /// The pacer of path `path` toward `egress` (`None`: no such path).
    pub fn pacer(&self, egress: NodeId, path: usize) -> Option<&PathPacer> {
        self.sets.get(&egress)?.pacers.get(path)
    }

    /// The same, to change.
    pub fn pacer_mut(&mut self, egress: NodeId, path: usize) -> Option<&mut PathPacer> {
        self.sets.get_mut(&egress)?.pacers.get_mut(path)
    }

    /// Whether the node keeps routes toward `egress` (computed, maybe
    /// empty).
    pub fn has(&self, egress: NodeId) -> bool {
        self.sets.contains_key(&egress)
    }

    /// Every egress with paths in use, with its paths.
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, &Vec<Vec<NodeId>>)> + '_ {
        self.sets
            .iter()
            .filter_map(|(&e, r)| Some((e, r.damping.current()?)))
    }

    /// The paths this node would take toward `egress` on `ls` now,
    /// without touching the routes in use: transit nodes and cost of
    /// each, cheapest first.
    pub fn candidates(&self, ls: &LsGraph, egress: NodeId) -> Vec<(Vec<NodeId>, u64)> {
        let (Some(me), Some(e)) = (ls.index_of(self.me), ls.target_of(egress)) else {
            return Vec::new();
        };
        let Ok(mut dp) = DisjointPaths::new(&ls.graph, me) else {
            return Vec::new();
        };
        dp.to(e, self.k(), self.settings.disjoint)
            .map(|paths| paths.iter().map(|p| (route_ids(ls, p), p.cost)).collect())
            .unwrap_or_default()
    }

    /// Gives a datagram (`header`, then `body`) the source route of path
    /// `path` toward its egress, in a buffer from `pool`, with the route's
    /// first step taken as every transit node takes its own
    /// ([`forwarding_step`]): ready for its first hop.
    pub fn source_route(
        &self,
        mut header: DataHeader,
        path: usize,
        body: &[u8],
        pool: &mut BufferPool,
    ) -> Result<Transmit, Unrouted> {
        let set = self.sets.get(&header.egress);
        let route = set
            .and_then(|s| s.damping.current())
            .and_then(|p| p.get(path))
            .ok_or(Unrouted::NoPath)?;
        let beyond = set.is_some_and(|s| s.beyond);
        header.path = path as u8;
        write_route(header, route, self.me, beyond, body, pool)
    }

    /// Computes the paths toward `egress` if the node has none yet
    /// (`graph` is called only then); true when there is at least one.
    /// A first computation is a change (pushed to `changes`).
    pub fn ensure(
        &mut self,
        now: Instant,
        egress: NodeId,
        graph: impl FnOnce() -> LsGraph,
        changes: &mut Vec<RouteChange>,
    ) -> bool {
        if !self.sets.contains_key(&egress) {
            self.sets.insert(
                egress,
                RouteSet {
                    damping: Damping::new(self.settings.damping),
                    states: Vec::new(),
                    delays: PathDelays::default(),
                    pacers: PathPacers::default(),
                    beyond: false,
                },
            );
            self.update(now, &graph(), &[egress], changes);
        }
        self.paths_to(egress).is_some_and(|p| !p.is_empty())
    }

    /// Notes the link-state database's `version`: when it changed, the
    /// recomputation is scheduled (at once if the last one was long
    /// enough ago). Returns whether it changed.
    pub fn note_topology(&mut self, now: Instant, version: u64) -> bool {
        if version == self.topology_seen {
            return false;
        }
        self.topology_seen = version;
        if self.due.is_none() && !self.sets.is_empty() {
            self.due = Some(now.max(self.computed + self.settings.route_delay));
        }
        true
    }

    /// When the routes are next due for recomputation.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.due
    }

    /// Whether the recomputation is due at `now`.
    pub fn is_due(&self, now: Instant) -> bool {
        self.due.is_some_and(|t| t <= now)
    }

    /// Recomputes every route now (a local link failed, or they are due).
    pub fn recompute(&mut self, now: Instant, ls: &LsGraph, changes: &mut Vec<RouteChange>) {
        self.due = None;
        self.computed = now;
        let egresses: Vec<NodeId> = self.sets.keys().copied().collect();
        self.update(now, ls, &egresses, changes);
    }

    /// Drops the routes toward every egress `keep` says no to; returns
    /// them.
    pub fn retain(&mut self, mut keep: impl FnMut(NodeId) -> bool) -> Vec<NodeId> {
        let unused: Vec<NodeId> = self.sets.keys().copied().filter(|&e| !keep(e)).collect();
        for egress in &unused {
            self.sets.remove(egress);
        }
        unused
    }

    fn update(
        &mut self,
        now: Instant,
        ls: &LsGraph,
        egresses: &[NodeId],
        changes: &mut Vec<RouteChange>,
    ) {
        let Some(me) = ls.index_of(self.me) else {
            return;
        };
        let Ok(mut dp) = DisjointPaths::new(&ls.graph, me) else {
            return;
        };
        let k = self.k();
        for &egress in egresses {
            let Some(e) = ls.target_of(egress) else {
                continue;
            };
            let Ok(paths) = dp.to(e, k, self.settings.disjoint) else {
                continue;
            };
            if let Some(change) = self.offer(now, ls, egress, &paths) {
                changes.push(change);
            }
        }
    }

    /// Offers the best paths now known toward `egress` to its damping;
    /// the change, when they are taken.
    fn offer(
        &mut self,
        now: Instant,
        ls: &LsGraph,
        egress: NodeId,
        paths: &[Path],
    ) -> Option<RouteChange> {
        let me = self.me;
        let etx = self.settings.etx;
        let set = self.sets.get_mut(&egress)?;
        let mut best: Vec<Vec<NodeId>> = paths.iter().map(|p| route_ids(ls, p)).collect();
        // A path appeared or broke while the primary is still among the
        // best: it stays first, so the new set is taken at once below
        // (a second path found after boot must not wait out the hold
        // because it is a little cheaper than the first).
        let mut paths: Vec<&Path> = paths.iter().collect();
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
                let cost = path_cost(ls, me, transit, egress)?;
                primary.get_or_insert(cost);
            }
            primary
        });
        if best.is_empty() {
            return None;
        }
        // The same primary with other extra paths (one appeared or
        // broke): nothing to damp, take the new set at once.
        let same_primary = set
            .damping
            .current()
            .is_some_and(|cur| cur.first() == best.first() && *cur != best);
        let current_cost = current_cost.filter(|_| !same_primary);
        let before = set.damping.current().cloned().unwrap_or_default();
        let (chosen, changed) = set.damping.offer(now, best, best_cost, current_cost);
        if !changed {
            return None;
        }
        set.beyond = paths.first().is_some_and(|p| !ls.is_local(p.target()));
        let taken = chosen.len();
        let old: Vec<Option<usize>> = chosen
            .iter()
            .map(|p| before.iter().position(|q| q == p))
            .collect();
        set.delays = set.delays.renumbered(&old);
        set.pacers = set.pacers.renumbered(&old);
        set.states = paths
            .iter()
            .take(taken)
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
        Some(RouteChange {
            egress,
            states: set.states.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphBuilder;
    use crate::metric::Metric;

    const ME: NodeId = NodeId(1);
    const EGRESS: NodeId = NodeId(4);

    fn settings() -> RouteSettings {
        RouteSettings {
            max_paths: 3,
            disjoint: Disjointness::Node,
            damping: DampingConfig::default(),
            route_delay: Duration::from_millis(200),
            etx: true,
        }
    }

    /// 1 - 2 - 4 and 1 - 3 - 4 (both ways), the second at `second` per
    /// link.
    fn diamond(second: u32) -> LsGraph {
        let ids = vec![NodeId(1), NodeId(2), NodeId(3), NodeId(4)];
        let mut graph = GraphBuilder::new(4);
        let one = Some(Metric::from_units(crate::metric::SCALE));
        let other = Some(Metric::from_units(second));
        for (a, b, c) in [(0, 1, one), (1, 3, one), (0, 2, other), (2, 3, other)] {
            graph.add_link(a, b, c, c);
        }
        LsGraph::flat(graph.build(), ids)
    }

    fn secs(s: u64) -> Instant {
        Instant::ZERO + Duration::from_secs(s)
    }

    #[test]
    fn a_first_computation_is_a_change_with_every_path_and_its_state() {
        let mut routes = Routes::new(ME, settings(), Instant::ZERO);
        let mut changes = Vec::new();
        let ls = diamond(2 * crate::metric::SCALE);
        assert!(routes.ensure(Instant::ZERO, EGRESS, || ls, &mut changes));
        assert_eq!(
            routes.paths_to(EGRESS),
            Some(&vec![vec![NodeId(2)], vec![NodeId(3)]])
        );
        assert_eq!(changes.len(), 1);
        let states = &changes[0].states;
        assert_eq!(states.len(), 2);
        assert!(
            states[0].weight > states[1].weight,
            "the cheaper path weighs more"
        );
        assert!(states[0].loss < states[1].loss, "ETX 2 per link loses more");
        assert_eq!(routes.states(EGRESS), &states[..]);
        // Asked again: nothing computed, nothing changed.
        assert!(routes.ensure(Instant::ZERO, EGRESS, || unreachable!(), &mut changes));
        assert_eq!(changes.len(), 1);
    }

    #[test]
    fn the_primary_is_damped_and_replaced_after_the_hold() {
        let mut routes = Routes::new(ME, settings(), Instant::ZERO);
        let mut changes = Vec::new();
        let (slow, fast) = (diamond(1500), diamond(750));
        routes.ensure(Instant::ZERO, EGRESS, || slow, &mut changes);
        changes.clear();
        // Path 1-3-4 becomes better by less than the margin: damped.
        routes.recompute(secs(1), &fast, &mut changes);
        assert!(changes.is_empty());
        assert_eq!(routes.paths_to(EGRESS).unwrap()[0], vec![NodeId(2)]);
        // After the hold it is taken.
        routes.recompute(secs(6), &fast, &mut changes);
        assert_eq!(changes.len(), 1);
        assert_eq!(routes.paths_to(EGRESS).unwrap()[0], vec![NodeId(3)]);
    }

    #[test]
    fn topology_changes_schedule_a_throttled_recomputation() {
        let mut routes = Routes::new(ME, settings(), Instant::ZERO);
        assert!(routes.note_topology(Instant::ZERO, 1));
        assert_eq!(
            routes.poll_timeout(),
            None,
            "no routes: nothing to recompute"
        );
        routes.ensure(Instant::ZERO, EGRESS, || diamond(1000), &mut Vec::new());
        assert!(!routes.note_topology(Instant::ZERO, 1), "the same version");
        assert!(routes.note_topology(Instant::ZERO, 2));
        let due = Instant::ZERO + Duration::from_millis(200);
        assert_eq!(routes.poll_timeout(), Some(due));
        assert!(!routes.is_due(Instant::ZERO) && routes.is_due(due));
        routes.recompute(due, &diamond(1000), &mut Vec::new());
        assert_eq!(routes.poll_timeout(), None);
    }

    #[test]
    fn path_costs_follow_the_graph_and_vanish_with_a_link() {
        let ls = diamond(2000);
        assert_eq!(path_cost(&ls, ME, &[NodeId(3)], EGRESS), Some(4000));
        assert_eq!(path_cost(&ls, ME, &[], EGRESS), None, "no link 1-4");
        let routes = Routes::new(ME, settings(), Instant::ZERO);
        let costs: Vec<u64> = routes.candidates(&ls, EGRESS).iter().map(|c| c.1).collect();
        assert_eq!(costs, vec![2000, 4000]);
    }

    #[test]
    fn a_source_routed_datagram_leaves_with_its_first_step_taken() {
        let mut routes = Routes::new(ME, settings(), Instant::ZERO);
        routes.ensure(Instant::ZERO, EGRESS, || diamond(2000), &mut Vec::new());
        let header = DataHeader {
            flags: braid_wire::DataFlags::empty(),
            mode: braid_wire::RedundancyMode::Stripe,
            path: 0,
            route_ptr: 0,
            ingress: ME,
            egress: EGRESS,
            seq: 5,
            group: braid_wire::Group::NONE,
            hop_limit: 16,
            class: 0,
            epoch: 1,
        };
        let mut pool = BufferPool::default();
        let t = routes.source_route(header, 1, b"body", &mut pool).unwrap();
        assert_eq!(t.dest, Dest::Neighbor(NodeId(3)));
        let pkt = DataHeader::parse(&t.bytes).unwrap();
        assert_eq!((pkt.header.path, pkt.header.route_ptr), (1, 1));
        assert_eq!(pkt.header.hop_limit, 15);
        assert_eq!(pkt.route.iter().collect::<Vec<_>>(), vec![NodeId(3)]);
        assert_eq!(pkt.payload, b"body");
        // The same bytes as writing the route and stepping it in place.
        let mut stepped = vec![0; t.bytes.len()];
        let n = DataHeader { path: 1, ..header }
            .emit(&[NodeId(3)], &mut stepped)
            .unwrap();
        stepped[n..].copy_from_slice(b"body");
        let step = braid_wire::data::forward_in_place(&mut stepped, ME).unwrap();
        assert_eq!((step, &stepped), (Forward::To(NodeId(3)), &t.bytes));
        assert_eq!(
            routes.source_route(header, 2, b"body", &mut pool).err(),
            Some(Unrouted::NoPath)
        );
        let elsewhere = DataHeader {
            ingress: NodeId(7),
            ..header
        };
        assert_eq!(
            routes.source_route(elsewhere, 0, b"body", &mut pool).err(),
            Some(Unrouted::NotOnRoute)
        );
    }

    #[test]
    fn unused_routes_are_dropped() {
        let mut routes = Routes::new(ME, settings(), Instant::ZERO);
        routes.ensure(Instant::ZERO, EGRESS, || diamond(1000), &mut Vec::new());
        assert_eq!(routes.retain(|e| e != EGRESS), vec![EGRESS]);
        assert!(!routes.has(EGRESS) && routes.states(EGRESS).is_empty());
    }
}
