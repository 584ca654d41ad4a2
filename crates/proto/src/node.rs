//! A whole braid node, sans-IO: the one object the simulator and the
//! daemon drive. It joins the control plane (probes, link state), path
//! selection (k disjoint paths per egress, damped), the ingress (classify,
//! encode), forwarding (source routes), and the egress (dedup, rebuild,
//! re-order), and it sends path reports back to each session's ingress.
//!
//! The driver:
//! * gives user packets from local hosts to [`Node::send`],
//! * gives datagrams from neighbors to [`Node::handle_datagram`],
//! * runs [`Node::handle_timeout`] at [`Node::poll_timeout`],
//! * drains [`Node::poll_transmit`] (to one neighbor, or to all of them for
//!   control messages) and [`Node::poll_deliver`] (to local hosts).
//!
//! Queues toward the driver are bounded; what does not fit is counted.
//!
//! Late binding (seed 003, on by default): data this node originates
//! waits above the binding point in a per-egress [`Scheduler`], queued by
//! traffic class, and is bound to one of the egress's paths only when that
//! path's first hop holds fewer than `bound` datagrams in the driver. The
//! contract: with late binding on, the driver reports every unicast
//! datagram leaving its queue (sent or dropped) with [`Node::on_sent`].
//! When a path breaks, what waits for it moves to the remaining paths;
//! only the at most `bound` datagrams in the driver can be lost.
//!
//! Link failures the driver sees (a frame unacknowledged after every
//! link-layer retry, or carrier lost) come in by [`Node::tx_failed`] and
//! [`Node::link_down`]; the first is ignored by default (SrcRR's
//! IGNORE-FAIL: transient bursts must not move routes).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use braid_wire::data::{forward_in_place, Forward};
use braid_wire::{
    ControlHeader, ControlMessage, DataHeader, MessageType, NodeId, PathCount, PathReport,
    RedundancyMode,
};
use rand_core::RngCore;

use crate::classify::{inspect, Classified, Classifier};
use crate::control::{ConfigError, ControlConfig, ControlPlane};
use crate::lsdb::LsaStore;
use crate::paths::{Damping, DampingConfig, DisjointPaths, Disjointness};
use crate::redundancy::{
    Egress, EgressConfig, Ingress, IngressConfig, Outgoing, PathState, Payload, Policy,
    SessionLimits, CLASS_CONTROL,
};
use crate::scheduler::{Scheduler, SchedulerConfig};
use crate::time::Instant;

/// Everything a node is configured with.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeConfig {
    pub control: ControlConfig,
    pub ingress: IngressConfig,
    pub egress: EgressConfig,
    pub policy: Policy,
    pub classifier: Classifier,
    /// Paths kept per egress (k).
    pub max_paths: usize,
    pub disjoint: Disjointness,
    pub damping: DampingConfig,
    /// Bounds of the session tables (each side: ingress, egress).
    pub sessions: SessionLimits,
    /// How often each egress session reports per-path counts to its ingress.
    pub path_report_interval: Duration,
    /// Bound of the transmit and deliver queues toward the driver.
    pub max_queue: usize,
    /// After the link state changes, routes are recomputed at most this
    /// often (SPF throttling): a burst of LSAs costs one computation.
    pub route_delay: Duration,
    /// Picks first sequence numbers (use a fresh value per start).
    pub seed: u64,
    /// Late binding: at most this many datagrams per next hop in the
    /// driver, the rest above the binding point. `None`: early binding
    /// (everything goes to the driver at once).
    pub late_binding: Option<LateBinding>,
    /// Ignore link-layer transmission failures (SrcRR IGNORE-FAIL): the
    /// probes' long-term measure decides. Otherwise a failed link is
    /// treated as down for `tx_failure_hold`.
    pub ignore_tx_failures: bool,
    pub tx_failure_hold: Duration,
}

/// Most buffers kept for reuse, and the largest kept.
const POOL_BUFFERS: usize = 256;
const POOL_BUFFER_BYTES: usize = 16 << 10;

/// An empty buffer from `pool`, or a new one.
fn take_buffer(pool: &mut Vec<Vec<u8>>) -> Vec<u8> {
    pool.pop().unwrap_or_default()
}

/// Keeps `buf` in `pool` for reuse, within the pool's bounds.
fn give_back(pool: &mut Vec<Vec<u8>>, mut buf: Vec<u8>) {
    if pool.len() < POOL_BUFFERS && buf.capacity() <= POOL_BUFFER_BYTES {
        buf.clear();
        pool.push(buf);
    }
}

/// Late-binding settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LateBinding {
    /// Datagrams per next hop below the binding point (the seed: 2).
    pub bound: usize,
    /// Limits of each egress's queue above the binding point.
    pub scheduler: SchedulerConfig,
}

impl Default for LateBinding {
    fn default() -> Self {
        LateBinding {
            bound: 2,
            scheduler: SchedulerConfig {
                // The scheduler's own binding holds one packet per path;
                // the bound toward the driver is `bound`.
                bound_per_path: 1,
                max_packets: 1024,
                max_bytes: 1 << 20,
                flow_buckets: 32,
                quantum: 1514,
            },
        }
    }
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            control: ControlConfig::default(),
            ingress: IngressConfig::default(),
            egress: EgressConfig::default(),
            policy: Policy::default(),
            classifier: Classifier::default(),
            max_paths: 3,
            disjoint: Disjointness::Node,
            damping: DampingConfig::default(),
            sessions: SessionLimits::default(),
            path_report_interval: Duration::from_secs(1),
            max_queue: 4096,
            route_delay: Duration::from_millis(200),
            seed: 0,
            late_binding: Some(LateBinding::default()),
            ignore_tx_failures: true,
            tx_failure_hold: Duration::from_secs(10),
        }
    }
}

/// Where a datagram goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    /// Every neighbor (control messages are link-local broadcasts).
    AllNeighbors,
    Neighbor(NodeId),
}

/// A datagram for the driver to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    pub dest: Dest,
    pub bytes: Vec<u8>,
    /// Bit-rate to send at, 100 kbit/s units (big probes measure one rate
    /// each); `None`: the radio's own choice.
    pub rate: Option<u16>,
}

/// Counters of the node's data path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct NodeCounters {
    /// User packets handed to `send`.
    pub user_in: u64,
    /// User packets whose destination no node serves.
    pub no_egress: u64,
    /// User packets whose destination has no path.
    pub no_path: u64,
    /// User packets that were not IP.
    pub not_ip: u64,
    /// User packets delivered to local hosts.
    pub delivered: u64,
    pub forwarded: u64,
    pub hop_limit_exceeded: u64,
    pub not_on_route: u64,
    /// Data datagrams that failed to parse.
    pub malformed: u64,
    /// Dropped because the transmit or deliver queue was full.
    pub queue_full: u64,
    pub path_reports_sent: u64,
    pub path_reports_received: u64,
    pub route_changes: u64,
    /// Link-layer failures the driver reported.
    pub tx_failures: u64,
    /// Dropped above the binding point to stay within its bounds.
    pub binding_overflow: u64,
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

/// One egress session's per-path receive counts: (ingress, class, counts).
type SessionCounts = (NodeId, u8, Vec<(u8, u32)>);

/// A datagram above the binding point: everything but its path.
#[derive(Debug)]
struct Pending {
    header: DataHeader,
    body: Vec<u8>,
}

#[derive(Debug)]
struct RouteSet {
    damping: Damping<Vec<Vec<NodeId>>>,
    /// Late binding: what waits for one of these paths.
    waiting: Option<Scheduler<Pending>>,
}

/// How a datagram from the ingress is to be queued.
#[derive(Debug, Clone, Copy, Default)]
struct FlowKey {
    hash: u64,
    urgent: bool,
}

/// A braid node.
#[derive(Debug)]
pub struct Node {
    id: NodeId,
    config: NodeConfig,
    control: ControlPlane,
    ingress: Ingress,
    egress: Egress,
    routes: BTreeMap<NodeId, RouteSet>,
    topology_seen: u64,
    /// When routes are next due for recomputation (the topology changed).
    routes_due: Option<Instant>,
    routes_computed: Instant,
    outbox: VecDeque<Transmit>,
    delivered: VecDeque<Vec<u8>>,
    next_report: Instant,
    scratch: Vec<Outgoing>,
    /// Packets the egress handed over, before delivery (reused).
    got: Vec<Vec<u8>>,
    /// Buffers the driver gave back ([`Node::recycle`]), reused for the
    /// next datagrams: once warm, the data path allocates nothing.
    pool: Vec<Vec<u8>>,
    /// Reused for control messages; grows to the largest sent.
    control_buf: Vec<u8>,
    /// Late binding: unicast datagrams in the driver, per next hop.
    in_driver: BTreeMap<NodeId, usize>,
    /// Egresses with datagrams above the binding point, sorted (a vector
    /// keeps its room when it empties: no allocation per packet, as a
    /// set's node would be).
    backlog: Vec<NodeId>,
    counters: NodeCounters,
}

impl Node {
    pub fn new(
        id: NodeId,
        config: NodeConfig,
        now: Instant,
        rng: &mut dyn RngCore,
    ) -> Result<Self, ConfigError> {
        Self::with_lsa_store(id, config, now, rng, LsaStore::new())
    }

    /// A node whose link-state records are interned in `store`: nodes of
    /// one simulation share it, so an advertisement every node holds is
    /// stored once (see [`crate::lsdb`]).
    pub fn with_lsa_store(
        id: NodeId,
        config: NodeConfig,
        now: Instant,
        rng: &mut dyn RngCore,
        store: LsaStore,
    ) -> Result<Self, ConfigError> {
        let control = ControlPlane::with_lsa_store(id, config.control.clone(), now, rng, store)?;
        Ok(Node {
            id,
            ingress: Ingress::new(
                id,
                config.ingress,
                config.policy.clone(),
                config.classifier.clone(),
                config.sessions,
                config.seed,
            ),
            egress: Egress::new(config.egress, config.sessions),
            control,
            routes: BTreeMap::new(),
            topology_seen: u64::MAX,
            routes_due: None,
            routes_computed: now,
            outbox: VecDeque::new(),
            delivered: VecDeque::new(),
            next_report: now + config.path_report_interval,
            scratch: Vec::new(),
            got: Vec::new(),
            pool: Vec::new(),
            control_buf: Vec::new(),
            in_driver: BTreeMap::new(),
            backlog: Default::default(),
            counters: NodeCounters::default(),
            config,
        })
    }

    pub fn id(&self) -> NodeId {
        self.id
    }
    pub fn control(&self) -> &ControlPlane {
        &self.control
    }
    pub fn ingress(&self) -> &Ingress {
        &self.ingress
    }
    pub fn egress(&self) -> &Egress {
        &self.egress
    }
    pub fn counters(&self) -> &NodeCounters {
        &self.counters
    }

    /// The transit nodes of each path in use toward `egress`.
    pub fn paths_to(&self, egress: NodeId) -> Option<&Vec<Vec<NodeId>>> {
        self.routes.get(&egress).and_then(|r| r.damping.current())
    }

    /// A user packet from a local host.
    pub fn send(&mut self, now: Instant, packet: &[u8]) {
        self.counters.user_in += 1;
        let Ok(info) = inspect(packet) else {
            self.counters.not_ip += 1;
            return;
        };
        let Some(egress) = self.control.lsdb().egress_for(&info.dst, info.v4, self.id) else {
            self.counters.no_egress += 1;
            return;
        };
        if egress == self.id {
            let mut buf = take_buffer(&mut self.pool);
            buf.extend_from_slice(packet);
            self.deliver_local(buf);
            return;
        }
        if !self.ensure_routes(now, egress) {
            self.counters.no_path += 1;
            return;
        }
        let mut out = std::mem::take(&mut self.scratch);
        let key = match self.ingress.send(now, egress, packet, false, &mut out) {
            Ok(c) => FlowKey {
                hash: c.flow_hash,
                urgent: c.urgent,
            },
            Err(_) => FlowKey::default(),
        };
        self.emit_all(&mut out, packet, key);
        self.scratch = out;
    }

    /// A datagram from a neighbor.
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) {
        if braid_wire::peek(bytes) == Ok(MessageType::Data) {
            self.handle_data(now, bytes);
        } else {
            // Counted by the control plane when bad.
            let _ = self.control.handle(now, bytes);
            self.note_topology(now);
        }
    }

    fn handle_data(&mut self, now: Instant, bytes: &[u8]) {
        let mut buf = take_buffer(&mut self.pool);
        buf.extend_from_slice(bytes);
        let deliver = match forward_in_place(&mut buf, self.id) {
            Ok(Forward::Deliver) => true,
            Ok(Forward::To(next)) => {
                self.counters.forwarded += 1;
                self.push_out(Transmit {
                    dest: Dest::Neighbor(next),
                    bytes: buf,
                    rate: None,
                });
                return;
            }
            Ok(Forward::HopLimitExceeded) => {
                self.counters.hop_limit_exceeded += 1;
                false
            }
            Ok(Forward::NotOnRoute) => {
                self.counters.not_on_route += 1;
                false
            }
            Err(_) => {
                self.counters.malformed += 1;
                false
            }
        };
        let class = match deliver.then(|| DataHeader::parse(&buf)) {
            None => None,
            Some(Ok(pkt)) => {
                let (got, pool) = (&mut self.got, &mut self.pool);
                self.egress.receive(now, &pkt, &mut |p| {
                    let mut b = take_buffer(pool);
                    b.extend_from_slice(p);
                    got.push(b);
                });
                Some(pkt.header.class)
            }
            Some(Err(_)) => {
                self.counters.malformed += 1;
                None
            }
        };
        give_back(&mut self.pool, buf);
        if let Some(class) = class {
            self.take_delivered(now, class);
        }
    }

    /// Delivers what the egress handed over (`self.got`): path reports to
    /// the ingress, the rest to the host.
    fn take_delivered(&mut self, now: Instant, class: u8) {
        let mut got = std::mem::take(&mut self.got);
        for p in got.drain(..) {
            if class == CLASS_CONTROL {
                self.on_node_message(now, &p);
                give_back(&mut self.pool, p);
            } else {
                self.deliver_local(p);
            }
        }
        self.got = got;
    }

    fn on_node_message(&mut self, now: Instant, bytes: &[u8]) {
        let Ok(msg) = ControlMessage::parse(bytes) else {
            self.counters.malformed += 1;
            return;
        };
        let Ok(report) = PathReport::parse(&msg) else {
            self.counters.malformed += 1;
            return;
        };
        if report.ingress != self.id {
            self.counters.malformed += 1;
            return;
        }
        self.counters.path_reports_received += 1;
        let counts: Vec<(u8, u32)> = report.counts().map(|c| (c.path, c.received)).collect();
        let mut out = std::mem::take(&mut self.scratch);
        self.ingress
            .on_path_report(now, msg.header.sender, report.class, &counts, &mut out);
        self.emit_all(&mut out, &[], FlowKey::default());
        self.scratch = out;
    }

    fn deliver_local(&mut self, p: Vec<u8>) {
        if self.delivered.len() >= self.config.max_queue {
            self.counters.queue_full += 1;
            give_back(&mut self.pool, p);
            return;
        }
        self.counters.delivered += 1;
        self.delivered.push_back(p);
    }

    fn push_out(&mut self, t: Transmit) {
        if self.outbox.len() >= self.config.max_queue {
            self.counters.queue_full += 1;
            give_back(&mut self.pool, t.bytes);
            return;
        }
        self.outbox.push_back(t);
    }

    /// Turns the ingress's output into datagrams: with late binding, each
    /// waits above the binding point for its path; otherwise it gets its
    /// path's source route and goes to the driver now.
    fn emit_all(&mut self, out: &mut Vec<Outgoing>, input: &[u8], key: FlowKey) {
        for o in out.drain(..) {
            let body: &[u8] = match &o.payload {
                Payload::Input => input,
                Payload::Repair(r) => r,
            };
            let late = self
                .config
                .late_binding
                .filter(|_| o.header.mode != RedundancyMode::Tree);
            let Some(late) = late else {
                self.emit_on_path(o.header, o.path as usize, body);
                continue;
            };
            let egress = o.header.egress;
            let Some(set) = self.routes.get_mut(&egress) else {
                self.counters.no_path += 1;
                continue;
            };
            let paths = set.damping.current().map_or(0, Vec::len);
            let waiting = set.waiting.get_or_insert_with(|| {
                let mut s = Scheduler::new(late.scheduler, crate::redundancy::mode::MAX_PATHS);
                for p in paths..s.paths() {
                    s.set_path_up(p, false);
                }
                s
            });
            let urgent = key.urgent || o.header.flags.contains(braid_wire::DataFlags::URGENT);
            let dropped = waiting.enqueue(
                Pending {
                    header: o.header,
                    body: {
                        let mut b = take_buffer(&mut self.pool);
                        b.extend_from_slice(body);
                        b
                    },
                },
                body.len(),
                key.hash ^ o.header.class as u64,
                urgent,
                1 << o.path,
            );
            self.counters.binding_overflow += dropped.len() as u64;
            for d in dropped {
                give_back(&mut self.pool, d.body);
            }
            if let Err(at) = self.backlog.binary_search(&egress) {
                self.backlog.insert(at, egress);
            }
        }
    }

    /// Gives a datagram its path's source route and sends it to the first
    /// hop. Returns the first hop, or `None` when the path is gone.
    fn route_datagram(
        &mut self,
        mut header: DataHeader,
        path: usize,
        body: &[u8],
    ) -> Option<Transmit> {
        let route: &[NodeId] = if header.mode == RedundancyMode::Tree {
            &[]
        } else {
            let paths = self
                .routes
                .get(&header.egress)
                .and_then(|r| r.damping.current());
            match paths.and_then(|p| p.get(path)) {
                Some(r) => r,
                None => {
                    self.counters.no_path += 1;
                    return None;
                }
            }
        };
        header.path = path as u8;
        let mut buf = take_buffer(&mut self.pool);
        buf.resize(DataHeader::encoded_len(route.len()) + body.len(), 0);
        let Ok(n) = header.emit(route, &mut buf) else {
            self.counters.malformed += 1;
            give_back(&mut self.pool, buf);
            return None;
        };
        buf[n..].copy_from_slice(body);
        match forward_in_place(&mut buf, self.id) {
            Ok(Forward::To(next)) => Some(Transmit {
                dest: Dest::Neighbor(next),
                bytes: buf,
                rate: None,
            }),
            _ => {
                self.counters.not_on_route += 1;
                give_back(&mut self.pool, buf);
                None
            }
        }
    }

    fn emit_on_path(&mut self, header: DataHeader, path: usize, body: &[u8]) {
        if let Some(t) = self.route_datagram(header, path, body) {
            self.push_out(t);
        }
    }

    /// Late binding: the next datagram whose path's first hop has room in
    /// the driver.
    fn pull_bound(&mut self) -> Option<Transmit> {
        let bound = self.config.late_binding?.bound.max(1);
        let mut after: Option<NodeId> = None;
        loop {
            let next = after.map_or(0, |e| self.backlog.partition_point(|&x| x <= e));
            let egress = self.backlog.get(next).copied()?;
            after = Some(egress);
            let (pulled, idle) = match self.routes.get_mut(&egress) {
                Some(RouteSet {
                    damping,
                    waiting: Some(waiting),
                }) => {
                    let mut pulled = None;
                    for (p, transit) in damping.current().into_iter().flatten().enumerate() {
                        let hop = transit.first().copied().unwrap_or(egress);
                        if self.in_driver.get(&hop).copied().unwrap_or(0) >= bound {
                            continue;
                        }
                        if let Some(pending) = waiting.pull(p) {
                            pulled = Some((p, pending));
                            break;
                        }
                    }
                    let idle = pulled.is_none()
                        && waiting.queued() == 0
                        && (0..waiting.paths()).all(|p| waiting.bound(p) == 0);
                    (pulled, idle)
                }
                _ => (None, true),
            };
            if idle {
                if let Ok(at) = self.backlog.binary_search(&egress) {
                    self.backlog.remove(at);
                }
            }
            if let Some((p, pending)) = pulled {
                let t = self.route_datagram(pending.header, p, &pending.body);
                give_back(&mut self.pool, pending.body);
                if let Some(t) = t {
                    return Some(t);
                }
                // Counted by `route_datagram`; try this egress again.
                after = None;
            }
        }
    }

    /// Whether traffic waits above the binding point (late binding): the
    /// driver then hands the node's datagrams to the kernel only as fast
    /// as the kernel takes them, and anything the kernel takes but drops
    /// (an interface losing its carrier) drains what waits.
    pub fn holds_backlog(&self) -> bool {
        !self.backlog.is_empty()
    }

    /// The driver's report that a unicast datagram to `neighbor` left its
    /// queue (sent, or dropped): room for the next one (late binding).
    pub fn on_sent(&mut self, neighbor: NodeId) {
        // Entries stay at zero (one per next hop ever used: bounded by the
        // neighbors) so that the hot path does not allocate.
        if let Some(n) = self.in_driver.get_mut(&neighbor) {
            *n = n.saturating_sub(1);
        }
    }

    /// The driver's report that a frame to `neighbor` was not acknowledged
    /// after every link-layer retry.
    pub fn tx_failed(&mut self, now: Instant, neighbor: NodeId, rng: &mut dyn RngCore) {
        self.counters.tx_failures += 1;
        if !self.config.ignore_tx_failures {
            let until = now + self.config.tx_failure_hold;
            self.link_failed(now, neighbor, until, rng);
        }
    }

    /// The driver lost the link to `neighbor` (carrier or association
    /// lost): routes move off it at once.
    pub fn link_down(&mut self, now: Instant, neighbor: NodeId, rng: &mut dyn RngCore) {
        self.link_failed(now, neighbor, Instant(u64::MAX), rng);
    }

    /// The driver has the link to `neighbor` back; probes decide when it
    /// is used again.
    pub fn link_up(&mut self, neighbor: NodeId) {
        self.control.link_restored(neighbor);
    }

    fn link_failed(
        &mut self,
        now: Instant,
        neighbor: NodeId,
        until: Instant,
        rng: &mut dyn RngCore,
    ) {
        self.control.link_failed(now, neighbor, until, rng);
        self.note_topology(now);
        // A local failure is not throttled: recompute now.
        self.routes_due = None;
        self.routes_computed = now;
        let egresses: Vec<NodeId> = self.routes.keys().copied().collect();
        self.update_routes(now, &egresses);
    }

    /// Computes (or re-computes) the paths toward `egress`; false when none.
    fn ensure_routes(&mut self, now: Instant, egress: NodeId) -> bool {
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
            let best: Vec<Vec<NodeId>> = paths
                .iter()
                .map(|p| p.transit().iter().map(|&v| ls.id_of(v)).collect())
                .collect();
            // Damping weighs the primary path (slot 0: what single-path
            // traffic rides; the others are ranked behind it). A set with a
            // broken path counts as gone, so it is replaced at once.
            let best_cost = paths.first().map_or(u64::MAX, |p| p.cost);
            let set = self.routes.get_mut(&egress).expect("ensured");
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
                let count = states.len();
                if let Some(waiting) = self
                    .routes
                    .get_mut(&egress)
                    .and_then(|s| s.waiting.as_mut())
                {
                    // Paths are re-numbered: what was bound to one goes
                    // back above the binding point.
                    for p in 0..waiting.paths() {
                        for pending in waiting.set_path_up(p, false) {
                            let len = pending.body.len();
                            let urgent =
                                pending.header.flags.contains(braid_wire::DataFlags::URGENT);
                            let class = pending.header.class as u64;
                            let dropped = waiting.enqueue(pending, len, class, urgent, 1 << p);
                            self.counters.binding_overflow += dropped.len() as u64;
                        }
                    }
                    for p in 0..count.min(waiting.paths()) {
                        waiting.set_path_up(p, true);
                    }
                }
                let mut out = std::mem::take(&mut self.scratch);
                self.ingress.set_paths(now, egress, &states, &mut out);
                self.emit_all(&mut out, &[], FlowKey::default());
                self.scratch = out;
            }
        }
    }

    /// Runs every timer due at `now`.
    /// Takes new redundancy settings (an operator's reload) without
    /// dropping traffic: sessions whose mode changes switch at once, and
    /// what the switch sends (a flushed parity group) goes out.
    pub fn set_policy(&mut self, now: Instant, policy: Policy, classifier: Classifier) {
        self.ingress.set_classifier(classifier.clone());
        let mut out = std::mem::take(&mut self.scratch);
        self.ingress.set_policy(now, policy.clone(), &mut out);
        self.emit_all(&mut out, &[], FlowKey::default());
        self.scratch = out;
        self.config.policy = policy;
        self.config.classifier = classifier;
    }

    /// Every egress this node has routes to, with its paths (each from
    /// this node to the egress).
    pub fn routes(&self) -> impl Iterator<Item = (NodeId, &Vec<Vec<NodeId>>)> + '_ {
        self.routes
            .keys()
            .filter_map(|&e| Some((e, self.paths_to(e)?)))
    }

    pub fn handle_timeout(&mut self, now: Instant, rng: &mut dyn RngCore) {
        self.control.handle_timeout(now, rng);
        let mut out = std::mem::take(&mut self.scratch);
        self.ingress.handle_timeout(now, &mut out);
        self.emit_all(&mut out, &[], FlowKey::default());
        self.scratch = out;
        self.deliver_from_egress(|egress, deliver| egress.handle_timeout(now, deliver));
        self.note_topology(now);
        if self.routes_due.is_some_and(|t| t <= now) {
            self.routes_due = None;
            self.routes_computed = now;
            let egresses: Vec<NodeId> = self.routes.keys().copied().collect();
            self.update_routes(now, &egresses);
        }
        if now >= self.next_report {
            self.next_report = now + self.config.path_report_interval;
            self.send_path_reports(now);
            self.expire_idle(now);
        }
    }

    /// Runs `step` on the egress and delivers to local hosts what it hands
    /// over (re-ordered packets released by a timer, or by a session that
    /// expired).
    fn deliver_from_egress(&mut self, step: impl FnOnce(&mut Egress, &mut dyn FnMut(&[u8]))) {
        let (got, pool) = (&mut self.got, &mut self.pool);
        step(&mut self.egress, &mut |p| {
            let mut b = take_buffer(pool);
            b.extend_from_slice(p);
            got.push(b);
        });
        let mut got = std::mem::take(&mut self.got);
        for p in got.drain(..) {
            self.deliver_local(p);
        }
        self.got = got;
    }

    /// Drops idle sessions (each side), and the routes toward nodes that no
    /// session uses any more and nothing waits for: no per-peer table
    /// keeps what traffic left behind.
    fn expire_idle(&mut self, now: Instant) {
        self.ingress.expire(now);
        self.deliver_from_egress(|egress, deliver| egress.expire(now, deliver));
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
        // Next hops that are neighbors no more (and hold nothing in the
        // driver); a current neighbor's entry stays at zero, so that the
        // data path does not allocate it again.
        let links = self.control.links();
        self.in_driver
            .retain(|n, held| *held > 0 || links.knows(*n));
    }

    /// The node is leaving (an operator's shutdown): its link-state
    /// advertisement is flushed from every database (see
    /// [`ControlPlane::leave`]). Drain [`Self::poll_transmit`] before
    /// stopping.
    pub fn leave(&mut self) {
        self.control.leave();
    }

    /// Notes a link-state change and schedules the route recomputation
    /// (at once if the last one was long enough ago).
    fn note_topology(&mut self, now: Instant) {
        let seen = self.control.lsdb().version();
        if seen != self.topology_seen {
            self.topology_seen = seen;
            if self.routes_due.is_none() && !self.routes.is_empty() {
                self.routes_due = Some(now.max(self.routes_computed + self.config.route_delay));
            }
        }
    }

    fn send_path_reports(&mut self, now: Instant) {
        let reports: Vec<SessionCounts> = self
            .egress
            .sessions()
            .filter(|((_, class), _)| *class != CLASS_CONTROL)
            .map(|(&(ingress, class), s)| (ingress, class, s.path_counts()))
            .collect();
        for (ingress, class, counts) in reports {
            let counts: Vec<PathCount> = counts
                .into_iter()
                .map(|(path, received)| PathCount { path, received })
                .collect();
            let header = ControlHeader::new(MessageType::PathReport, self.id);
            let mut buf = vec![0u8; 16 + 4 + 8 * counts.len()];
            let Ok(n) = PathReport::emit(&header, ingress, class, &counts, &mut buf) else {
                continue;
            };
            buf.truncate(n);
            if !self.ensure_routes(now, ingress) {
                continue;
            }
            let c = Classified {
                class: CLASS_CONTROL,
                urgent: true,
                flow_hash: 0,
            };
            let mut out = std::mem::take(&mut self.scratch);
            if self
                .ingress
                .send_classified(now, ingress, c, &buf, false, &mut out)
                .is_ok()
            {
                self.counters.path_reports_sent += 1;
            }
            let key = FlowKey {
                hash: 0,
                urgent: true,
            };
            self.emit_all(&mut out, &buf, key);
            self.scratch = out;
        }
    }

    /// When [`Self::handle_timeout`] should next run.
    pub fn poll_timeout(&self) -> Instant {
        let mut t = self.control.poll_timeout().min(self.next_report);
        if let Some(due) = self.routes_due {
            t = t.min(due);
        }
        for x in [self.ingress.poll_timeout(), self.egress.poll_timeout()]
            .into_iter()
            .flatten()
        {
            t = t.min(x);
        }
        t
    }

    /// The next datagram to send: control messages first, then datagrams
    /// already bound, then (late binding) datagrams whose path has room.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if let Some(n) = self.control.poll_transmit(now, &mut self.control_buf) {
            let bytes = self.control_buf[..n].to_vec();
            return Some(Transmit {
                dest: Dest::AllNeighbors,
                bytes,
                rate: self.control.last_tx_rate(),
            });
        }
        let t = match self.outbox.pop_front() {
            Some(t) => t,
            None => self.pull_bound()?,
        };
        if let (Some(_), Dest::Neighbor(n)) = (self.config.late_binding, t.dest) {
            *self.in_driver.entry(n).or_default() += 1;
        }
        Some(t)
    }

    /// The next packet for a local host.
    pub fn poll_deliver(&mut self) -> Option<Vec<u8>> {
        self.delivered.pop_front()
    }

    /// Gives back the buffer of a datagram the driver has sent, or of a
    /// packet it has delivered: the node reuses it for the next one, so a
    /// driver that gives its buffers back makes the data path allocate
    /// nothing once warm. Optional; the pool is bounded.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        give_back(&mut self.pool, buf);
    }
}
