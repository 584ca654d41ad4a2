//! A whole braid node, sans-IO: the one object the simulator and the
//! daemon drive. It owns the sub-machines and alone orchestrates them:
//! the control plane (probes, link state), the neighbor table, the
//! routes (k disjoint paths per egress, damped), the ingress (classify,
//! encode), late binding, forwarding (source routes, and entry-point
//! trees for tree mode), the egress (dedup, rebuild, re-order) and node
//! messages (path reports, echoes). Each sub-machine is a type of its
//! own that returns what it decided; only this file calls one with what
//! another returned.
//!
//! This file is kept larger than the project's 1,000 lines: it is the
//! driver's contract (below) and the one place the sub-machines are
//! joined, and splitting that orchestration across files would spread
//! the node over fragments again.
//!
//! # The driver's contract
//!
//! The node does no I/O, reads no clock and draws no randomness of its
//! own: the driver (the simulator's world, the daemon's loop) passes all
//! three in and carries out what the node asks. Every public method
//! falls in one of these groups.
//!
//! **Construction.** [`Node::new`] (a router), [`Node::with_lsa_store`]
//! (nodes of one simulation sharing their link-state records).
//!
//! **Inputs** (`handle_*` and the driver's events):
//! * [`Node::send`]: a user packet from a local host (an IP packet).
//! * [`Node::handle_datagram`]: a datagram from the underlay, with the
//!   [`Interface`] it arrived on and the neighbor the driver knows sent
//!   it. It returns the neighbor that sent it when it was a control
//!   message the node took: the driver keeps that neighbor's address
//!   (the node knows neighbors by id only).
//! * [`Node::handle_timeout`]: when [`Node::poll_timeout`] says.
//! * [`Node::on_sent`]: a unicast datagram left the driver's queue, sent
//!   or dropped (the late-binding contract; report every one while late
//!   binding is on).
//! * [`Node::tx_failed`]: a frame unacknowledged after every link-layer
//!   retry.
//! * [`Node::link_down`] / [`Node::link_up`]: carrier or association of
//!   the link to one neighbor.
//! * [`Node::interface_down`] / [`Node::interface_up`]: the kernel says
//!   an interface lost or regained its carrier; while it is down nothing
//!   heard on it counts. [`Node::interface_failed`]: a send found an
//!   interface down before the kernel said so; its neighbors go down but
//!   come back as soon as they are heard (the interface is not marked
//!   down).
//! * [`Node::client_heard`] / [`Node::clients_heard`]: as an access
//!   point, the quality the driver measured toward unmodified clients.
//!
//! **Commands** (management):
//! [`Node::set_policy`] and [`Node::set_auth`] and
//! [`Node::set_neighbor_timeout`] (a reload),
//! [`Node::set_external_prefixes`] (a gateway's uplink found healthy or
//! not, kernel routes redistributed), [`Node::leave`] (a clean
//! shutdown: the node's advertisement is flushed everywhere),
//! [`Node::send_echo`] (`braid ctl ping`), [`Node::lend_session`] /
//! [`Node::take_back_session`] (another encoder, the kernel data path,
//! runs a session for a while), [`Node::set_external_path_counts`] (what
//! that other decoder received, for the path reports), [`Node::recycle`]
//! (buffers back).
//!
//! **Outputs** (`poll_*`), drained until they return `None` after every
//! input:
//! * [`Node::poll_transmit`]: datagrams to send, to every neighbor
//!   (control messages are link-local broadcasts) or to one;
//! * [`Node::poll_deliver`]: packets for local hosts;
//! * [`Node::poll_event`]: what happened ([`NodeEvent`]: neighbors up and
//!   down, route and mode changes, refused input) for logs and monitors;
//! * [`Node::poll_timeout`]: when to call [`Node::handle_timeout`].
//!
//! Draining `poll_transmit` may itself free room below the binding point
//! (through `on_sent`), so a driver drains until nothing moves. Buffers
//! the driver is done with go back through [`Node::recycle`] (optional;
//! with it the data path allocates nothing once warm).
//!
//! **Queries** (no effect on the protocol; some fill caches):
//! [`Node::id`], [`Node::config`], [`Node::control`],
//! [`Node::neighbors`], [`Node::ingress`], [`Node::egress`],
//! [`Node::access`], [`Node::counters`], [`Node::paths_to`],
//! [`Node::routes`], [`Node::candidate_paths`], [`Node::path_cost`],
//! [`Node::holds_backlog`], and what a driver mirrors into the kernel:
//! [`Node::choose_egress`], [`Node::nearest_of`],
//! [`Node::prefix_table`], [`Node::tree_hop`].
//!
//! **Time** is an [`Instant`] the driver supplies; it must never go
//! backwards between calls (the node does not check, and timers would
//! misfire). [`Node::poll_timeout`] may return a time in the past: call
//! [`Node::handle_timeout`] at once. It changes after every input, so ask
//! again each time round the loop.
//!
//! **Bounds.** Every queue toward the driver is bounded (`max_queue`
//! datagrams and packets, [`events::MAX_EVENTS`] events); what does not
//! fit is dropped and counted. Nothing a neighbor sends grows a table
//! without a bound.
//!
//! **Panics.** The node does not panic on any input: bad bytes are
//! counted and refused ([`Refusal`]). A panic is a bug; the node's state
//! is then unspecified and the driver should start a new one (a restart,
//! which the protocol recovers from: new boot index, new session epochs).
//!
//! # Sub-machines
//!
//! | file | type | owns |
//! |---|---|---|
//! | `neighbors.rs` | [`NeighborTable`] | who is up, on which interface |
//! | `routes.rs` | `Routes` | damped disjoint paths per egress and what the ingress knows of each |
//! | `binding.rs` | `Binder` | late binding: queues above the binding point, counts below it |
//! | `hold.rs` | `HoldLine` | delay equalisation: bulk datagrams for a fast path wait for the slow path's delay |
//! | `tree.rs` | `Trees` | tree mode: copies along the entry point's tree |
//! | `reports.rs` | `Reporter` | node messages: path reports and echoes, written and read |
//! | `outbox.rs` | `Outbox` | the bounded queues toward the driver |
//! | `refusal.rs` | [`Refusal`] | why a datagram was refused, and the counter it was counted under |
//! | `events.rs` | [`NodeEvent`] | what happened, for the driver |
//! | `pool.rs` | `BufferPool` | buffers reused by the data path |
//! | `config.rs` | [`NodeConfig`] | settings, and the types handed out |
//!
//! A datagram is parsed once per hop ([`DataHeader::parse`] in
//! `handle_datagram`) and the parsed packet is passed along; a user
//! packet is inspected once ([`inspect`] in `send`).

mod admission;
mod binding;
mod config;
mod copies;
mod costs;
pub mod events;
mod gateways;
mod hold;
mod interface;
mod neighbors;
mod outbox;
mod pool;
mod refusal;
mod reports;
mod routes;
mod tree;
mod waypoint;

use braid_wire::data::{forwarding_step, previous_hop, Forward};
use std::collections::BTreeSet;
use std::time::Duration;

use braid_wire::{
    DataFlags, DataHeader, DataPacket, DataView, MessageType, NodeId, PathCount, Prefix,
    RedundancyMode, RepairRequest, SessionCheck, SessionCheckKind,
};
use rand_core::RngCore;

use crate::access::{AccessPoint, ClientAddr};
use crate::classify::{inspect, Classified, Classifier, PacketInfo};
use crate::control::{ConfigError, ControlPlane, External};
use crate::forward::{TreeDest, TreeHop};
use crate::lsdb::LsaStore;
use crate::redundancy::equalise;
use crate::redundancy::{
    Egress, Ingress, IngressConfig, Mode, Outgoing, Payload, Policy, ProvenWindow, SendHints,
    CLASS_CONTROL,
};
use crate::time::Instant;

use binding::{Binder, FlowKey, Pending, BACKLOG_PACKETS};
pub use config::{
    Dest, LateBinding, NodeConfig, NodeCounters, Transmit, PATH_REPORT_INTERVALS,
    PATH_REPORT_INTERVALS_TEXT,
};
pub use costs::CostOverrides;
pub use events::{DownReason, NodeEvent};
pub use gateways::{FlowPins, GatewayChoice, GatewayCounters};
use hold::{Held, HoldLine};
pub use interface::Interface;
use neighbors::Heard;
pub use neighbors::NeighborTable;
use outbox::Outbox;
pub use refusal::{Counter, Refusal};
pub use reports::DecodedPath;
use reports::{
    answer_echo, check_message, echo_message, read_node_message, repair_request_message,
    EchoAnswer, NodeMessage, Reporter,
};
use routes::{write_route, RouteChange, RouteSettings, Routes, Unrouted};
use tree::{Trees, View};
use waypoint::Waypoint;

/// A braid node.
#[derive(Debug)]
pub struct Node {
    id: NodeId,
    config: NodeConfig,
    control: ControlPlane,
    neighbors: NeighborTable,
    ingress: Ingress,
    egress: Egress,
    routes: Routes,
    /// Where a packet whose route ends here at a waypoint goes on.
    waypoint: Waypoint,
    /// Route changes not yet handed to the ingress and the binder (reused).
    route_changes: Vec<RouteChange>,
    binder: Binder,
    /// Bulk datagrams for a path faster than the slowest, until their
    /// hold passes (`hold.rs`; with late binding only).
    held: HoldLine,
    trees: Trees,
    /// As an access point: the clients heard and served.
    access: AccessPoint,
    /// Flows pinned to the egress they started with (`gateways.rs`).
    pins: gateways::FlowPins,
    /// What this egress delivered lately, to catch copies (`copies.rs`).
    copies: copies::CopyFilter,
    /// Origins tied for a destination (reused).
    tied: Vec<NodeId>,
    reporter: Reporter,
    out: Outbox,
    /// Why the last datagram given to `handle_datagram` was refused.
    last_refusal: Option<Refusal>,
    /// What the ingress encoded, before binding (reused).
    scratch: Vec<Outgoing>,
    /// Packets the egress handed over, before delivery (reused).
    got: Vec<Vec<u8>>,
    /// Reused for control messages; grows to the largest sent.
    control_buf: Vec<u8>,
    counters: NodeCounters,
    /// Pacing: the earliest time a paced path with datagrams waiting for
    /// it may send again, as the last pull above the binding point found.
    pace_wake: Option<Instant>,
}

/// The link-state view tree lookups read: the database, and its graph
/// built only when a tree must be computed.
macro_rules! tree_view {
    ($control:expr) => {{
        let control = &$control;
        View {
            lsdb: control.lsdb(),
            graph: &mut || control.graph(),
        }
    }};
}

impl Node {
    // ---------------------------------------------------------- construction

    /// A node with a link-state store of its own (a router).
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
        let settings = RouteSettings {
            max_paths: config.max_paths,
            disjoint: config.disjoint,
            damping: config.damping,
            route_delay: config.route_delay,
            etx: config.control.metric == crate::linkest::MetricKind::Etx,
        };
        Ok(Node {
            id,
            neighbors: NeighborTable::new(config.control.links.max_neighbors),
            ingress: Ingress::new(
                id,
                IngressConfig {
                    late_binding: config.late_binding.is_some(),
                    ..config.ingress
                },
                config.policy.clone(),
                config.classifier.clone(),
                config.sessions,
                config.seed,
            ),
            // The control plane's boot index is drawn at random each
            // start: session checks' nonces never repeat an earlier one's.
            egress: Egress::new(config.egress, config.sessions, control.boot_index()),
            control,
            routes: Routes::new(id, settings, now),
            waypoint: Waypoint::default(),
            route_changes: Vec::new(),
            binder: Binder::new(config.late_binding),
            held: HoldLine::default(),
            trees: Trees::new(id),
            access: AccessPoint::new(config.access),
            pins: gateways::FlowPins::default(),
            copies: copies::CopyFilter::default(),
            tied: Vec::new(),
            reporter: Reporter::new(now, config.path_report_interval),
            out: Outbox::new(config.max_queue),
            last_refusal: None,
            scratch: Vec::new(),
            got: Vec::new(),
            control_buf: Vec::new(),
            counters: NodeCounters::default(),
            pace_wake: None,
            config,
        })
    }

    // --------------------------------------------------------------- queries

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }
    /// What the node was configured with (the policy and classifier as
    /// last set).
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }
    /// The control plane: link estimates, the link-state database.
    pub fn control(&self) -> &ControlPlane {
        &self.control
    }
    /// The neighbors up now.
    pub fn neighbors(&self) -> &NeighborTable {
        &self.neighbors
    }
    /// The sessions this node is the ingress of.
    pub fn ingress(&self) -> &Ingress {
        &self.ingress
    }
    /// The sessions this node is the egress of.
    pub fn egress(&self) -> &Egress {
        &self.egress
    }
    /// As an access point: the clients it hears and serves.
    pub fn access(&self) -> &AccessPoint {
        &self.access
    }

    /// The data path's counters.
    pub fn counters(&self) -> NodeCounters {
        NodeCounters {
            events_dropped: self.out.events_dropped(),
            queue_full: self.out.full(),
            delivered: self.out.delivered(),
            neighbors_refused: self.neighbors.refused(),
            binding_overflow: self.binder.overflow(),
            held: self.held.total(),
            held_early: self.held.released_early(),
            ..self.counters
        }
    }

    /// The transit nodes of each path in use toward `egress`.
    pub fn paths_to(&self, egress: NodeId) -> Option<&Vec<Vec<NodeId>>> {
        self.routes.paths_to(egress)
    }

    /// How long a bulk packet of a mode that spreads packets waits before
    /// it leaves on path `path` toward `egress` (delay equalisation; zero
    /// when it is off).
    pub fn path_hold(&self, egress: NodeId, path: usize) -> Duration {
        if self.equalises() {
            self.routes.hold(egress, path)
        } else {
            Duration::ZERO
        }
    }

    /// Datagrams toward `egress` waiting above the binding point for
    /// path `path` (0 without late binding).
    pub fn path_waiting(&self, egress: NodeId, path: usize) -> usize {
        self.binder.waiting_for(egress, path)
    }

    /// The rate path `path` toward `egress` is paced at, bytes per
    /// second (`None`: pacing is off, or the path not paced yet).
    pub fn path_pace_rate(&self, egress: NodeId, path: usize) -> Option<f64> {
        if !self.paces() {
            return None;
        }
        self.routes.pacer(egress, path).and_then(|p| p.rate())
    }

    /// Whether this node equalises its paths' delays (`equalise_delay`,
    /// with late binding).
    fn equalises(&self) -> bool {
        self.config.equalise_delay && self.binder.is_on()
    }

    /// Whether this node's spreading modes follow the lead rule
    /// (`equalise.rs`): where it re-orders as an egress, so do the egresses
    /// it sends to (a mesh's routers share their redundancy settings), and
    /// a packet sent on a faster path after one on the slowest waits there.
    fn leads(&self) -> bool {
        self.config.egress.reorder.is_some()
    }

    /// The path the next bulk packet toward `egress` takes by the lead
    /// rule, if any.
    fn lead(&self, now: Instant, egress: NodeId) -> Option<u8> {
        if !self.leads() {
            return None;
        }
        self.routes.lead(egress, now).map(|p| p as u8)
    }

    /// Whether this node paces its paths (`pace`, with late binding).
    fn paces(&self) -> bool {
        self.config.pace && self.binder.is_on()
    }

    /// Every egress this node has routes to, with its paths (each from
    /// this node to the egress).
    pub fn routes(&self) -> impl Iterator<Item = (NodeId, &Vec<Vec<NodeId>>)> + '_ {
        self.routes.iter()
    }

    /// The paths this node would take toward `egress` now, computed on
    /// the link-state graph without touching the routes in use (which
    /// exist only toward destinations traffic goes to): transit nodes and
    /// cost of each, cheapest first. For showing an operator the routes.
    pub fn candidate_paths(&self, egress: NodeId) -> Vec<(Vec<NodeId>, u64)> {
        self.routes.candidates(&self.control.graph(), egress)
    }

    /// The cost of a path (transit nodes toward `egress`) on the current
    /// link-state graph, in metric units; `None` when a link of it is gone.
    pub fn path_cost(&self, transit: &[NodeId], egress: NodeId) -> Option<u64> {
        routes::path_cost(&self.control.graph(), self.id, transit, egress)
    }

    /// Whether traffic waits above the binding point (late binding): the
    /// driver then hands the node's datagrams to the kernel only as fast
    /// as the kernel takes them, and anything the kernel takes but drops
    /// (an interface losing its carrier) drains what waits.
    pub fn holds_backlog(&self) -> bool {
        self.binder.holds_backlog()
    }

    /// The origin that serves `dst` (an IPv4 address in the first four
    /// bytes when `v4`) best as seen from this node: longest prefix, best
    /// client quality, then the nearest (see [`crate::forward`]).
    pub fn choose_egress(&mut self, dst: &[u8; 16], v4: bool) -> Option<NodeId> {
        let View { lsdb, graph } = tree_view!(self.control);
        self.trees.tables.egress_for(lsdb, graph, self.id, dst, v4)
    }

    /// Among `origins` (sorted), the one nearest this node (ties to the
    /// lowest id): how the node breaks a tie between equally good
    /// origins, for a driver that mirrors its choice (the kernel's prefix
    /// table).
    pub fn nearest_of(&mut self, origins: &[NodeId]) -> Option<NodeId> {
        let View { lsdb, graph } = tree_view!(self.control);
        self.trees.tables.nearest(lsdb, graph, self.id, origins)
    }

    /// Every prefix and client of one IP family served (IPv4 when `v4`,
    /// else IPv6; an IPv4 address in the first 4 bytes), with the origin
    /// this node sends it to (as [`Self::choose_egress`] decides): the
    /// table the kernel data path matches destinations against. A prefix (not a
    /// host route) that several origins serve is left out while flows are
    /// pinned or spread ([`GatewayChoice`]): the kernel then hands its
    /// packets to the node, which decides per flow.
    pub fn prefix_table(&mut self, v4: bool) -> Vec<([u8; 16], u8, NodeId)> {
        let table = self.control.lsdb().prefix_table(self.id, v4);
        let per_flow = self.config.gateways.sticky || self.config.gateways.spread;
        let host = if v4 { 32 } else { 128 };
        table
            .into_iter()
            .filter(|&(_, l, _, serving)| !(per_flow && l < host && serving > 1))
            .filter_map(|(a, l, origins, _)| Some((a, l, self.nearest_of(&origins)?)))
            .collect()
    }

    /// What the flow pins did ([`GatewayChoice`]) and how many are held.
    pub fn gateway_counters(&self) -> (GatewayCounters, usize) {
        (self.pins.counters(), self.pins.pinned())
    }

    /// The flow pins themselves: where flows are pinned, and the choice a
    /// new flow would get as the latest packet found it.
    pub fn flow_pins(&self) -> &FlowPins {
        &self.pins
    }

    /// The egress for a user packet's flow: as [`Self::choose_egress`]
    /// for a host route (a client, who roams), else among the origins tied
    /// for its destination the nearest or (spreading) the flow's share by
    /// capacity, kept for the flow while it still serves (`gateways.rs`).
    fn egress_for_flow(&mut self, now: Instant, info: &PacketInfo) -> Option<NodeId> {
        let choice = self.config.gateways;
        if !choice.sticky && !choice.spread {
            return self.choose_egress(&info.dst, info.v4);
        }
        let me = self.id;
        let mut tied = std::mem::take(&mut self.tied);
        let len = self
            .control
            .lsdb()
            .best_origins(&info.dst, info.v4, me, &mut tied);
        let host = if info.v4 { 32 } else { 128 };
        let best = match len {
            Some(l) if l == host => {
                self.tied = tied;
                return self.choose_egress(&info.dst, info.v4);
            }
            None => None,
            Some(l) if choice.spread && tied.len() > 1 => {
                let lsdb = self.control.lsdb();
                gateways::spread(&tied, info.flow_hash, |o| lsdb.gateway(o).1).map(|o| (o, l))
            }
            Some(l) => self.nearest_of(&tied).map(|o| (o, l)),
        };
        self.tied = tied;
        self.pins.note_choice(best.map(|b| b.0));
        if !choice.sticky {
            return best.map(|b| b.0);
        }
        // Its pinned egress still serves if it serves the destination and
        // a path leads there.
        let kept = self.pins.peek(info.flow_hash).and_then(|o| {
            let len = self.control.lsdb().serves(o, &info.dst, info.v4, me)?;
            (o == me || self.reachable(o)).then_some(len)
        });
        self.pins.egress(&choice, now, info.flow_hash, kept, best)
    }

    /// Whether a path leads from this node to `origin` in the link-state
    /// graph.
    fn reachable(&mut self, origin: NodeId) -> bool {
        let View { lsdb, graph } = tree_view!(self.control);
        self.trees
            .tables
            .distance(lsdb, graph, self.id, origin)
            .is_some()
    }

    /// This node's part of `entry`'s tree toward `dest` (tree mode): the
    /// next hops it copies to and whether it delivers (the table a driver
    /// mirrors into the kernel).
    pub fn tree_hop(&mut self, entry: NodeId, dest: TreeDest) -> TreeHop {
        let View { lsdb, graph } = tree_view!(self.control);
        self.trees.tables.hop(lsdb, graph, entry, dest).clone()
    }

    // ---------------------------------------------------------------- inputs

    /// A user packet from a local host.
    pub fn send(&mut self, now: Instant, packet: &[u8]) {
        self.counters.user_in += 1;
        let Ok(info) = inspect(packet) else {
            self.counters.not_ip += 1;
            return;
        };
        let Some(mut egress) = self.egress_for_flow(now, &info) else {
            self.counters.no_egress += 1;
            return;
        };
        if egress == self.id {
            // A client this access point serves best; in tree mode the
            // others serving it get their copies too (the tree delivers
            // here as well), so the egress becomes one of them.
            let view = tree_view!(self.control);
            let (classifier, policy) = (&self.config.classifier, &self.config.policy);
            egress =
                tree::other_server_in_tree_mode(view, &mut self.trees, self.id, &info, |o, c| {
                    policy.mode_for(o, classifier.classify(c).class) == Mode::Tree
                })
                .unwrap_or(egress);
        }
        if egress == self.id {
            let buf = self.out.pool.copy_of(packet);
            self.out.deliver(buf);
            return;
        }
        if !self.ensure_routes(now, egress) {
            self.counters.no_path += 1;
            return;
        }
        let mut out = std::mem::take(&mut self.scratch);
        let paths = self.routes.states(egress);
        let hints = SendHints {
            backlogged: self.binder.backlogged(egress, BACKLOG_PACKETS),
            lead: self.lead(now, egress),
            ..SendHints::default()
        };
        let c = self.ingress.classify(&info);
        if !c.urgent && self.paces() && !self.binder.admit(egress, now) {
            self.counters.queue_dropped += 1;
            self.scratch = out;
            return;
        }
        let flow = FlowKey {
            hash: c.flow_hash,
            urgent: c.urgent,
        };
        if !c.urgent && self.binder.would_drop(egress, packet.len(), flow, c.class) {
            // Dropped unnumbered: the egress has no gap to wait for.
            self.counters.binding_full += 1;
            self.scratch = out;
            return;
        }
        let key = match self
            .ingress
            .send_classified(now, egress, c, packet, hints, paths, &mut out)
        {
            Ok(()) => flow,
            Err(_) => FlowKey::default(),
        };
        self.emit_all(now, &mut out, packet, key);
        self.scratch = out;
    }

    /// Why the last datagram given to [`Node::handle_datagram`] was
    /// refused (`None`: it was taken). The driver knows the underlay
    /// address it came from, which the node does not: it tells the
    /// operator which neighbor's key fails ([`Refusal::key_mismatch`]).
    pub fn last_refusal(&self) -> Option<Refusal> {
        self.last_refusal
    }

    /// A datagram from the underlay that arrived on `interface`. `from` is
    /// the neighbor the driver knows sent it (the underlay address that
    /// neighbor's taken control messages come from), `None` when the
    /// address is no neighbor's. Returns the neighbor that sent it when it
    /// was a control message the node took (not its own, not refused, not
    /// on an interface that is down): the driver notes that neighbor's
    /// address there.
    ///
    /// Data is checked against `from`: with authentication on, data from
    /// no neighbor is refused (`unauthenticated`), and a routed packet
    /// whose route names another node before us than `from` is refused
    /// (`wrong_previous_hop`): a neighbor can inject only packets that
    /// claim to come through it.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        interface: Interface,
        from: Option<NodeId>,
        bytes: &[u8],
    ) -> Option<NodeId> {
        self.last_refusal = None;
        if braid_wire::peek(bytes) == Ok(MessageType::Data) {
            if from.is_none() && self.control.auth().enabled() {
                self.refuse(Refusal::Unauthenticated);
                return None;
            }
            match DataHeader::parse(bytes) {
                Ok(pkt) => self.handle_data(now, from, &pkt, bytes),
                Err(e) => self.refuse(Refusal::Malformed(e)),
            }
            return None;
        }
        let sender = match self.control.handle(now, bytes) {
            Ok(sender) => sender,
            Err(e) => {
                self.refuse(Refusal::Control(e));
                None
            }
        };
        if let Some(sign) = self.control.take_duplicate_sign() {
            self.out.event(NodeEvent::DuplicateId { sign, interface });
        }
        self.note_topology(now);
        let sender = sender?;
        match self.neighbors.heard(now, sender, interface) {
            Heard::Up => {
                // Back after being taken down: its link counts again.
                self.control.link_restored(sender);
                self.out.event(NodeEvent::NeighborUp {
                    neighbor: sender,
                    interface,
                });
            }
            Heard::Moved => self.out.event(NodeEvent::NeighborMoved {
                neighbor: sender,
                interface,
            }),
            Heard::Again => {}
            Heard::Ignored => return None,
        }
        // Looked at on every control message: a change of interface, a
        // reload, or a neighbor the estimator forgot and heard again
        // takes effect within a probe interval.
        let factor = self.config.cost_overrides.factor(sender, interface);
        if self.control.cost_factor(sender) != factor {
            self.control.set_cost_factor(sender, factor);
        }
        Some(sender)
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant, rng: &mut dyn RngCore) {
        self.control.handle_timeout(now, rng);
        if let Some(timeout) = self.config.neighbor_timeout {
            let gone = self.neighbors.expire(now, timeout);
            self.retire_all(now, gone, DownReason::Unheard, rng);
        }
        self.release_held(now);
        let mut out = std::mem::take(&mut self.scratch);
        self.ingress.handle_timeout(now, &mut out);
        self.emit_all(now, &mut out, &[], FlowKey::default());
        self.scratch = out;
        self.deliver_from_egress(now, |egress, deliver| egress.handle_timeout(now, deliver));
        self.send_session_checks(now);
        self.send_repair_requests(now);
        self.note_topology(now);
        if self.routes.is_due(now) {
            self.recompute_routes(now);
        }
        if self.access.next_deadline().is_some_and(|t| t <= now) {
            self.update_access(now);
        }
        if self.reporter.due(now) {
            self.send_path_reports(now, None);
            self.expire_idle(now);
        }
    }

    /// The driver's report that a unicast datagram to `neighbor` left its
    /// queue (sent, or dropped): room for the next one (late binding).
    pub fn on_sent(&mut self, neighbor: NodeId) {
        self.binder.on_sent(neighbor);
    }

    /// The driver's report that a frame to `neighbor` was not acknowledged
    /// after every link-layer retry.
    pub fn tx_failed(&mut self, now: Instant, neighbor: NodeId, rng: &mut dyn RngCore) {
        self.counters.tx_failures += 1;
        if !self.config.ignore_tx_failures {
            let until = now + self.config.tx_failure_hold;
            self.control.link_failed(now, neighbor, until, rng);
            self.after_local_failure(now);
        }
    }

    /// The driver lost the link to `neighbor` (carrier or association
    /// lost): routes move off it at once.
    pub fn link_down(&mut self, now: Instant, neighbor: NodeId, rng: &mut dyn RngCore) {
        let was_up = self.neighbors.remove(neighbor);
        self.link_gone(now, neighbor, DownReason::LinkDown, was_up, rng);
        self.after_local_failure(now);
    }

    /// The driver has the link to `neighbor` back; probes decide when it
    /// is used again.
    pub fn link_up(&mut self, neighbor: NodeId) {
        self.control.link_restored(neighbor);
    }

    /// The kernel says `interface` lost its carrier (or went down): every
    /// neighbor heard on it goes down at once, and nothing heard on it
    /// counts until [`Self::interface_up`] (datagrams queued before it
    /// went still arrive). Returns how many neighbors went down.
    pub fn interface_down(
        &mut self,
        now: Instant,
        interface: Interface,
        rng: &mut dyn RngCore,
    ) -> usize {
        let gone = self.neighbors.interface_down(interface);
        self.retire_all(now, gone, DownReason::InterfaceDown, rng)
    }

    /// A send found `interface` down before the kernel said so: its
    /// neighbors go down at once, but unlike [`Self::interface_down`]
    /// the interface is not marked down, so each comes back as soon as
    /// it is heard. Returns how many went down.
    pub fn interface_failed(
        &mut self,
        now: Instant,
        interface: Interface,
        rng: &mut dyn RngCore,
    ) -> usize {
        let gone = self.neighbors.remove_on(interface);
        self.retire_all(now, gone, DownReason::InterfaceDown, rng)
    }

    /// `interface` is usable again; its neighbors come back as they are
    /// heard.
    pub fn interface_up(&mut self, interface: Interface) {
        self.neighbors.interface_up(interface);
    }

    /// The driver measured `quality` (0: not heard; 255: every probe
    /// answered) toward `client`, an unmodified host on one of its access
    /// interfaces. Whether this node serves it is decided at once (see
    /// [`crate::access`]) and advertised within `lsa_min_interval`.
    pub fn client_heard(&mut self, now: Instant, client: ClientAddr, quality: u8) {
        self.clients_heard(now, [(client, quality)]);
    }

    /// As [`Self::client_heard`] for every client a driver measured in one
    /// round: all recorded, then decided once (deciding looks at every
    /// client and the database).
    pub fn clients_heard(
        &mut self,
        now: Instant,
        measured: impl IntoIterator<Item = (ClientAddr, u8)>,
    ) {
        for (client, quality) in measured {
            self.access.heard(now, client, quality);
        }
        self.update_access(now);
    }

    // -------------------------------------------------------------- commands

    /// Takes new redundancy settings (an operator's reload) without
    /// dropping traffic: sessions whose mode changes switch at once, and
    /// what the switch sends (a flushed parity group) goes out.
    pub fn set_policy(&mut self, now: Instant, policy: Policy, classifier: Classifier) {
        self.ingress.set_classifier(classifier.clone());
        let mut out = std::mem::take(&mut self.scratch);
        self.ingress.set_policy(now, policy.clone(), &mut out);
        self.emit_all(now, &mut out, &[], FlowKey::default());
        self.scratch = out;
        self.note_mode_changes();
        self.config.policy = policy;
        self.config.classifier = classifier;
    }

    /// New authentication keys (a reload): what this node sends is signed
    /// with the first from now on, and every one is accepted. Neighbors
    /// already verified stay verified.
    pub fn set_auth(
        &mut self,
        auth: crate::auth::AuthConfig,
    ) -> Result<(), crate::auth::AuthError> {
        self.control.set_auth(auth.clone())?;
        self.config.control.auth = auth;
        Ok(())
    }

    /// A new origin key or roster (an operator's reload; see
    /// [`crate::origin`]).
    pub fn set_origins(
        &mut self,
        origins: crate::origin::OriginConfig,
    ) -> Result<(), crate::origin::OriginError> {
        self.control.set_origins(origins.clone())?;
        self.config.control.origins = origins;
        Ok(())
    }

    /// The prefixes `source` finds reachable outside the mesh through
    /// this router now (see [`ControlPlane::set_external_prefixes`]: a
    /// withdrawal is advertised at once). Returns how many did not fit in
    /// an advertisement.
    pub fn set_external_prefixes(&mut self, source: External, prefixes: Vec<Prefix>) -> usize {
        self.control.set_external_prefixes(source, prefixes)
    }

    /// A new neighbor timeout (an operator's reload; see
    /// [`NodeConfig::neighbor_timeout`]).
    pub fn set_neighbor_timeout(&mut self, timeout: Option<std::time::Duration>) {
        self.config.neighbor_timeout = timeout;
    }

    /// New cost factors (an operator's reload; see
    /// [`NodeConfig::cost_overrides`]): each neighbor's link takes its
    /// factor when the neighbor is next heard (within a probe interval).
    pub fn set_cost_overrides(&mut self, overrides: CostOverrides) {
        self.config.cost_overrides = overrides;
    }

    /// The node is leaving (an operator's shutdown): its link-state
    /// advertisement is flushed from every database (see
    /// [`ControlPlane::leave`]). Drain [`Self::poll_transmit`] before
    /// stopping.
    pub fn leave(&mut self) {
        self.control.leave();
    }

    /// Sends an echo request to `target` through the mesh, on the paths
    /// user traffic to it takes (the control class's session), to be
    /// answered with an [`NodeEvent::EchoReply`] carrying `seq` and
    /// `stamp`. False when there is no path to it.
    pub fn send_echo(&mut self, now: Instant, target: NodeId, seq: u32, stamp: u64) -> bool {
        let echo = braid_wire::Echo {
            kind: braid_wire::EchoKind::Request,
            target,
            seq,
            stamp,
        };
        self.send_end_to_end(now, target, &echo)
    }

    /// Lends ingress session (`egress`, `class`) to another encoder (the
    /// kernel data path): returns its epoch and the first sequence number
    /// the borrower uses (`gap` after the next one here; this node keeps
    /// those `gap` numbers for packets that still reach it). See
    /// [`crate::redundancy::IngressSession::lend`].
    pub fn lend_session(&mut self, egress: NodeId, class: u8, gap: u32) -> Option<(u32, u32)> {
        self.ingress.lend(egress, class, gap)
    }

    /// Takes a lent session back; the borrower stopped at `next_seq`,
    /// having sent `sent[slot]` packets on each path slot.
    pub fn take_back_session(&mut self, egress: NodeId, class: u8, next_seq: u32, sent: &[u64]) {
        self.ingress.take_back(egress, class, next_seq, sent);
    }

    /// What the encoder session (`egress`, `class`) is lent to has sent
    /// so far: per path slot, packets, every one numbered below
    /// `next_seq`. The session's path estimates
    /// count them, so that the egress's reports of them tell loss and
    /// rate (and the automatic mode can leave a mode the borrower
    /// encodes when the paths start losing).
    pub fn note_sent_elsewhere(&mut self, session: (NodeId, u8), next_seq: u32, sent: &[u64]) {
        self.ingress.on_sent_elsewhere(session, next_seq, sent);
    }

    /// What another decoder of this node's egress sessions (the kernel
    /// data path) has received so far, per (ingress, class) and path
    /// (arrivals, and the newest arrival and when it came): merged with
    /// the node's own counts in the next path reports.
    /// Replaces what was given before; at most as many sessions as the
    /// egress table holds are kept.
    pub fn set_external_path_counts(
        &mut self,
        counts: impl IntoIterator<Item = ((NodeId, u8), Vec<DecodedPath>)>,
    ) {
        self.reporter.set_external(counts, self.config.sessions.max);
    }

    /// What another decoder of this node's egress sessions (the kernel
    /// data path) holds: per (ingress, class), its epoch and highest
    /// number. What it passes up as unproven (another epoch, numbers
    /// too far ahead) is then checked here against that state, and a
    /// proof hands the window back through [`Self::poll_proven_window`].
    pub fn set_external_windows(
        &mut self,
        windows: impl IntoIterator<Item = ((NodeId, u8), (u32, Option<u32>))>,
    ) {
        self.egress.set_external_windows(windows);
    }

    /// The next egress window the other decoder must take over: its
    /// ingress proved a new epoch or a jump here ([`ProvenWindow`]).
    pub fn poll_proven_window(&mut self) -> Option<ProvenWindow> {
        self.egress.poll_proven()
    }

    /// Gives back the buffer of a datagram the driver has sent, or of a
    /// packet it has delivered: the node reuses it for the next one, so a
    /// driver that gives its buffers back makes the data path allocate
    /// nothing once warm. Optional; the pool is bounded.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        self.out.pool.give(buf);
    }

    // --------------------------------------------------------------- outputs

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
        self.release_held(now);
        let t = match self.out.next_transmit() {
            Some(t) => t,
            None => self.pull_bound(now)?,
        };
        if let Dest::Neighbor(n) = t.dest {
            self.binder.handed_to_driver(n);
        }
        Some(t)
    }

    /// The next packet for a local host.
    pub fn poll_deliver(&mut self) -> Option<Vec<u8>> {
        self.out.next_delivered()
    }

    /// The next thing that happened (see [`NodeEvent`]).
    pub fn poll_event(&mut self) -> Option<NodeEvent> {
        self.out.next_event()
    }

    /// When the egress sessions' next path reports are due (a driver
    /// whose other decoder counts arrivals, the kernel data path, gives
    /// its counts through [`Self::set_external_path_counts`] just before:
    /// stale counts date an arrival the ingress no longer remembers).
    pub fn path_reports_due(&self) -> Instant {
        self.reporter.poll_timeout()
    }

    /// When [`Self::handle_timeout`] should next run.
    pub fn poll_timeout(&self) -> Instant {
        let mut t = self
            .control
            .poll_timeout()
            .min(self.reporter.poll_timeout());
        let neighbors = self
            .config
            .neighbor_timeout
            .and_then(|timeout| self.neighbors.next_expiry(timeout));
        for x in [
            self.routes.poll_timeout(),
            self.ingress.poll_timeout(),
            self.egress.poll_timeout(),
            neighbors,
            self.access.next_deadline(),
            self.held.next_ready(),
            self.pace_wake,
        ]
        .into_iter()
        .flatten()
        {
            t = t.min(x);
        }
        t
    }

    // ----------------------------------------------------- the data path

    /// A data packet from a neighbor, parsed: tree mode, or this node's
    /// step on its source route (deliver, send on, or refuse).
    fn handle_data(
        &mut self,
        now: Instant,
        from: Option<NodeId>,
        pkt: &DataPacket<'_>,
        bytes: &[u8],
    ) {
        if pkt.header.mode == RedundancyMode::Tree {
            self.handle_tree(now, pkt, bytes);
            return;
        }
        if let Some(from) = from {
            let before = previous_hop(pkt, self.id);
            // A transit node the route does not reach is `not_on_route`
            // below; anything else must name the sender.
            let off_route = before.is_none() && pkt.header.egress != self.id;
            if !off_route && before != Some(from) {
                self.refuse(Refusal::WrongPreviousHop);
                return;
            }
        }
        let route = pkt.route;
        match forwarding_step(&pkt.header, |i| route.get(i), self.id) {
            (Forward::Deliver, _) => {
                let (got, pool) = (&mut self.got, &mut self.out.pool);
                self.egress
                    .receive(now, pkt, &mut |p| got.push(pool.copy_of(p)));
                self.take_delivered(now, pkt.header.class);
                if self.egress.has_news() {
                    // A path's first packet: its ingress learns the
                    // path's delay now, not a report interval later (it
                    // equalises the paths from a session's first round
                    // trip on: `redundancy/equalise.rs`).
                    let news = self.egress.take_news();
                    self.send_path_reports(now, Some(&news));
                }
                self.send_session_checks(now);
                self.send_repair_requests(now);
            }
            (Forward::To(next), route_ptr) => {
                self.counters.forwarded += 1;
                let mut buf = self.out.pool.copy_of(bytes);
                let mut view = DataView::new_unchecked(&mut buf[..]);
                view.set_route_ptr(route_ptr);
                view.set_hop_limit(pkt.header.hop_limit - 1);
                self.out.send(Transmit {
                    dest: Dest::Neighbor(next),
                    bytes: buf,
                    rate: None,
                });
            }
            (Forward::RouteOn, _) => self.route_on(now, pkt),
            (Forward::HopLimitExceeded, _) => self.refuse(Refusal::HopLimitExceeded),
            (Forward::NotOnRoute, _) => self.refuse(Refusal::NotOnRoute),
        }
    }

    /// This node is the waypoint `pkt`'s route ends at: the packet goes on
    /// along this node's own shortest path to its egress
    /// (`node/waypoint.rs`), with a route that starts here.
    fn route_on(&mut self, now: Instant, pkt: &DataPacket<'_>) {
        let version = self.control.lsdb().version();
        let control = &self.control;
        let Some((route, beyond)) =
            self.waypoint
                .route_on(now, version, || control.graph(), self.id, pkt.header.egress)
        else {
            self.counters.no_path += 1;
            return;
        };
        let mut header = pkt.header;
        header.route_ptr = 1;
        match write_route(
            header,
            route,
            self.id,
            beyond,
            pkt.payload,
            &mut self.out.pool,
        ) {
            Ok(t) => {
                self.counters.forwarded += 1;
                self.counters.routed_on += 1;
                self.out.send(t);
            }
            Err(e) => self.count_unrouted(e),
        }
    }

    /// A tree-mode packet from a neighbor: copies along the entry point's
    /// tree, and delivery when this node serves the destination.
    fn handle_tree(&mut self, now: Instant, pkt: &DataPacket<'_>, bytes: &[u8]) {
        let view = tree_view!(self.control);
        let deliver = match self
            .trees
            .forward(view, pkt, bytes, &mut self.out, &mut self.counters)
        {
            Ok(deliver) => deliver,
            Err((refusal, deliver)) => {
                self.refuse(refusal);
                deliver
            }
        };
        if !deliver {
        } else if pkt.header.class == CLASS_CONTROL {
            self.on_node_message(now, pkt.payload);
        } else {
            let p = self.out.pool.copy_of(pkt.payload);
            self.deliver_from_mesh(now, p);
        }
    }

    /// Delivers what the egress handed over (`self.got`): node messages
    /// to the node, the rest to the host.
    fn take_delivered(&mut self, now: Instant, class: u8) {
        let mut got = std::mem::take(&mut self.got);
        for p in got.drain(..) {
            if class == CLASS_CONTROL {
                self.on_node_message(now, &p);
                self.out.pool.give(p);
            } else {
                self.deliver_from_mesh(now, p);
            }
        }
        self.got = got;
    }

    /// Hands a user packet that crossed the mesh to the host, unless it
    /// is a copy of one just delivered that entered the mesh twice
    /// (`copies.rs`).
    fn deliver_from_mesh(&mut self, now: Instant, p: Vec<u8>) {
        if let Some(window) = self.config.copy_window {
            if self.copies.is_copy(now, window, &p) {
                self.counters.copies_dropped += 1;
                self.out.pool.give(p);
                return;
            }
        }
        self.out.deliver(p);
    }

    /// Runs `step` on the egress and delivers to local hosts what it hands
    /// over (re-ordered packets released by a timer, or by a session that
    /// expired).
    fn deliver_from_egress(
        &mut self,
        now: Instant,
        step: impl FnOnce(&mut Egress, &mut dyn FnMut(&[u8])),
    ) {
        let (got, pool) = (&mut self.got, &mut self.out.pool);
        step(&mut self.egress, &mut |p| got.push(pool.copy_of(p)));
        let mut got = std::mem::take(&mut self.got);
        for p in got.drain(..) {
            self.deliver_from_mesh(now, p);
        }
        self.got = got;
    }

    /// Counts `refusal` under its counter and tells the driver.
    fn refuse(&mut self, refusal: Refusal) {
        self.last_refusal = Some(refusal);
        self.counters.count(refusal);
        self.out.event(NodeEvent::Refused { reason: refusal });
    }

    /// Turns the ingress's output into datagrams: with late binding, each
    /// waits above the binding point for its path; otherwise it gets its
    /// path's source route and goes to the driver now. Tree mode has no
    /// path to bind to: a copy per branch of the tree.
    fn emit_all(&mut self, now: Instant, out: &mut Vec<Outgoing>, input: &[u8], key: FlowKey) {
        for o in out.drain(..) {
            let body: &[u8] = match &o.payload {
                Payload::Input => input,
                Payload::Repair(r) => r,
            };
            if o.header.mode == RedundancyMode::Tree {
                let view = tree_view!(self.control);
                let me = self.id;
                let sent =
                    self.trees
                        .send(view, me, o.header, body, &mut self.out, &mut self.counters);
                if sent == Some(true) {
                    let p = self.out.pool.copy_of(body);
                    self.out.deliver(p);
                }
                if self.binder.is_on() {
                    self.ingress
                        .on_transmit(now, &o.header, o.path as usize, false);
                }
                continue;
            }
            let urgent = key.urgent || o.header.flags.contains(DataFlags::URGENT);
            let spreads = equalise::spreads(o.header.mode);
            // Bound to whichever path has room first where packets wait
            // here anyway (a queue stands above the binding point: below
            // that the split spreads them as planned), unless it waits
            // to equalise delays (a hold is its path's), the node paces
            // (a pacer is its path's) or it is urgent (its path was
            // chosen for it).
            let free = o.free
                && !urgent
                && !self.equalises()
                && !self.paces()
                && self.binder.holds_for(o.header.egress);
            if spreads && !urgent && !free && matches!(o.payload, Payload::Input) {
                // Bound now or later, it arrives no earlier than now plus
                // its path's delay: the lead rule counts it from here.
                self.routes.note_sent(o.header.egress, now, o.path as usize);
            }
            if !self.binder.is_on() {
                if let Some(t) = self.route_datagram(o.header, o.path as usize, body) {
                    self.out.send(t);
                }
                continue;
            }
            let egress = o.header.egress;
            if !self.routes.has(egress) {
                self.counters.no_path += 1;
                self.ingress.on_dropped(&o.header);
                continue;
            }
            let pending = Pending {
                header: o.header,
                body: self.out.pool.copy_of(body),
                queued_at: now,
            };
            if spreads
                && matches!(o.payload, Payload::Input)
                && (self.equalises() || self.leads())
                && self.routes.take_probe(egress)
            {
                self.send_probe_copies(now, &o, &pending, key);
            }
            let hold = if !o.after.is_zero() {
                // An urgent packet's spaced copy (`redundancy/urgent.rs`).
                o.after
            } else if urgent || !spreads {
                Duration::ZERO
            } else {
                self.path_hold(egress, o.path as usize)
            };
            let held = Held {
                ready: now + hold,
                egress,
                path: o.path,
                free,
                pending,
                key,
            };
            if hold.is_zero() {
                self.bind(now, held);
            } else if let Some(early) = self.held.hold(held) {
                self.ingress.on_released(now, &early.pending.header);
                self.bind(now, early);
            }
        }
    }

    /// A copy of data packet `o` (its datagram `pending`) on each other
    /// path up toward its egress, at once: the egress reports each path's
    /// first packet as it comes, so the paths' delays are known from the
    /// session's first round trip (the egress drops the copies it already
    /// has).
    fn send_probe_copies(&mut self, now: Instant, o: &Outgoing, pending: &Pending, key: FlowKey) {
        let egress = o.header.egress;
        let up: Vec<u8> = (self.routes.states(egress).iter().enumerate())
            .filter(|(p, s)| s.up && *p != o.path as usize)
            .map(|(p, _)| p as u8)
            .collect();
        for path in up {
            let copy = Held {
                ready: now,
                egress,
                path,
                free: false,
                pending: Pending {
                    header: DataHeader { path, ..o.header },
                    body: self.out.pool.copy_of(&pending.body),
                    queued_at: now,
                },
                key,
            };
            self.counters.probe_copies += 1;
            self.bind(now, copy);
        }
    }

    /// Puts a datagram above the binding point for its path; what the
    /// queue's bounds drop never left (the path estimates are told).
    fn bind(&mut self, now: Instant, h: Held) {
        let paths = self.routes.paths_to(h.egress).map_or(0, Vec::len);
        let dropped = if h.free {
            self.binder
                .enqueue_any(now, h.egress, paths, h.pending, h.key)
        } else {
            self.binder
                .enqueue(now, h.egress, paths, h.path, h.pending, h.key)
        };
        for dropped in dropped {
            self.ingress.on_dropped(&dropped.header);
            self.out.pool.give(dropped.body);
        }
    }

    /// Moves every held datagram whose hold has passed above the binding
    /// point.
    fn release_held(&mut self, now: Instant) {
        while let Some(h) = self.held.pop_ready(now) {
            self.ingress.on_released(now, &h.pending.header);
            self.bind(now, h);
        }
    }

    /// Gives a datagram its path's source route, ready for its first hop;
    /// `None` (counted) when the path is gone.
    fn route_datagram(&mut self, header: DataHeader, path: usize, body: &[u8]) -> Option<Transmit> {
        let routed = self
            .routes
            .source_route(header, path, body, &mut self.out.pool);
        match routed {
            Ok(t) => Some(t),
            Err(e) => {
                self.count_unrouted(e);
                None
            }
        }
    }

    /// Counts a datagram that could not be given its route.
    fn count_unrouted(&mut self, e: Unrouted) {
        let c = &mut self.counters;
        match e {
            Unrouted::NoPath => c.no_path += 1,
            Unrouted::Malformed => c.malformed += 1,
            Unrouted::NotOnRoute => c.not_on_route += 1,
            Unrouted::TooLong => c.route_too_long += 1,
        }
    }

    /// Late binding: the next datagram whose path's first hop has room in
    /// the driver, with its source route.
    fn pull_bound(&mut self, now: Instant) -> Option<Transmit> {
        let paces = self.paces();
        loop {
            let routes = &self.routes;
            let mut wake: Option<Instant> = None;
            let pulled = self.binder.pull(
                now,
                |egress| routes.paths_to(egress).map(Vec::as_slice),
                |egress, path| {
                    let Some(until) = routes
                        .pacer(egress, path)
                        .filter(|_| paces)
                        .and_then(|p| p.wait_until(now))
                    else {
                        return true;
                    };
                    wake = Some(wake.map_or(until, |w| w.min(until)));
                    false
                },
            );
            self.pace_wake = wake;
            let (path, pending) = pulled?;
            let t = self.route_datagram(pending.header, path, &pending.body);
            if let Some(t) = &t {
                // A paced node's path delay counts from here: the wait
                // for the pacer is braid's queue, not the path's.
                self.ingress.on_transmit(now, &pending.header, path, paces);
                let header = &pending.header;
                if header.mode == RedundancyMode::Stripe
                    && !header.flags.contains(DataFlags::URGENT)
                {
                    // A free packet (`emit_all`) is counted by the lead
                    // rule where it leaves (a pinned one again: it left).
                    self.routes.note_sent(header.egress, now, path);
                }
                if paces {
                    if let Some(p) = self.routes.pacer_mut(pending.header.egress, path) {
                        p.on_send(now, t.bytes.len());
                    }
                }
            } else {
                self.ingress.on_dropped(&pending.header);
            }
            self.out.pool.give(pending.body);
            if t.is_some() {
                return t;
            }
            // Counted by `route_datagram`; try again.
        }
    }

    // ---------------------------------------------------------------- routes

    /// Computes the paths toward `egress` if there are none yet; false
    /// when there is no path.
    fn ensure_routes(&mut self, now: Instant, egress: NodeId) -> bool {
        let control = &self.control;
        let ok = self
            .routes
            .ensure(now, egress, || control.graph(), &mut self.route_changes);
        self.take_route_changes(now);
        ok
    }

    /// Recomputes every route now.
    fn recompute_routes(&mut self, now: Instant) {
        let ls = self.control.graph();
        self.routes.recompute(now, &ls, &mut self.route_changes);
        self.take_route_changes(now);
    }

    /// Hands each route change to the binder (paths renumbered) and the
    /// ingress (new path states), and sends what that sends.
    fn take_route_changes(&mut self, now: Instant) {
        let mut changes = std::mem::take(&mut self.route_changes);
        for change in changes.drain(..) {
            self.counters.route_changes += 1;
            self.out.event(NodeEvent::RouteChange {
                egress: change.egress,
            });
            for h in self.held.take_egress(change.egress) {
                self.ingress.on_released(now, &h.pending.header);
                self.bind(now, h);
            }
            self.binder.renumber(change.egress, change.states.len());
            let mut out = std::mem::take(&mut self.scratch);
            self.ingress
                .set_paths(now, change.egress, &change.states, &mut out);
            self.emit_all(now, &mut out, &[], FlowKey::default());
            self.scratch = out;
            self.note_mode_changes();
        }
        self.route_changes = changes;
    }

    /// Notes a link-state change: routes are due for recomputation, and
    /// another access point's advertisement may have changed which of
    /// them serve a client.
    fn note_topology(&mut self, now: Instant) {
        let version = self.control.lsdb().version();
        if self.routes.note_topology(now, version) && !self.access.is_empty() {
            self.update_access(now);
        }
    }

    /// A local link failed: routes move now, not after `route_delay`.
    fn after_local_failure(&mut self, now: Instant) {
        self.note_topology(now);
        self.recompute_routes(now);
    }

    /// Turns the ingress's mode changes into events.
    fn note_mode_changes(&mut self) {
        for (egress, class, mode) in self.ingress.take_mode_changes() {
            self.out.event(NodeEvent::ModeChange {
                egress,
                class,
                mode,
            });
        }
    }

    /// Re-decides which clients this access point serves and gives the
    /// control plane what to advertise.
    fn update_access(&mut self, now: Instant) {
        let (me, lsdb) = (self.id, self.control.lsdb());
        let mut servers = Vec::new();
        let entries = self.access.update(now, |c| {
            lsdb.clients_served(&c.addr, c.v4, me, &mut servers);
            servers
                .iter()
                .filter(|&&(o, _)| o != me)
                .map(|&(_, q)| q)
                .max()
        });
        if let Some(entries) = entries {
            self.control.set_clients(entries);
        }
    }

    // ------------------------------------------------------------- neighbors

    /// The link to `neighbor` goes out of use until it is heard again;
    /// one that was up goes down (an event).
    fn link_gone(
        &mut self,
        now: Instant,
        neighbor: NodeId,
        why: DownReason,
        was_up: bool,
        rng: &mut dyn RngCore,
    ) {
        self.control
            .link_failed(now, neighbor, Instant(u64::MAX), rng);
        if was_up {
            self.out.event(NodeEvent::NeighborDown { neighbor, why });
        }
    }

    /// `gone` (up, and out of the table already) go down; routes move
    /// once. Returns how many.
    fn retire_all(
        &mut self,
        now: Instant,
        gone: Vec<NodeId>,
        why: DownReason,
        rng: &mut dyn RngCore,
    ) -> usize {
        let n = gone.len();
        if n > 0 {
            for neighbor in gone {
                self.link_gone(now, neighbor, why, true, rng);
            }
            self.after_local_failure(now);
        }
        n
    }

    /// Drops idle sessions (each side), and the routes toward nodes that no
    /// session uses any more and nothing waits for: no per-peer table
    /// keeps what traffic left behind.
    fn expire_idle(&mut self, now: Instant) {
        self.ingress.expire(now);
        self.deliver_from_egress(now, |egress, deliver| egress.expire(now, deliver));
        let (ingress, egress, binder, held) =
            (&self.ingress, &self.egress, &self.binder, &self.held);
        let unused = self.routes.retain(|peer| {
            ingress.serves(peer)
                || egress.serves(peer)
                || binder.holds_for(peer)
                || held.holds_for(peer)
        });
        for peer in unused {
            self.binder.forget(peer);
            self.held.forget(peer);
        }
        // Next hops that are neighbors no more (and hold nothing in the
        // driver); a current neighbor's entry stays at zero, so that the
        // data path does not allocate it again.
        let links = self.control.links();
        self.binder.forget_hops(|n| links.knows(n));
    }

    // --------------------------------------------------------- node messages

    /// Sends each egress session's report to its ingress (`only`: just
    /// these sessions').
    fn send_path_reports(&mut self, now: Instant, only: Option<&BTreeSet<(NodeId, u8)>>) {
        let mac = self.control.mac_fields();
        for (ingress, buf) in self.reporter.reports(now, &self.egress, self.id, mac, only) {
            // End to end: signed by the egress, checked by the ingress
            // (no replay state: the report only says what arrived).
            if self.send_in_control_class(now, ingress, buf) {
                self.counters.path_reports_sent += 1;
            }
        }
    }

    /// Asks the ingress of every session that holds packets it has not
    /// proven (a new epoch, numbers too far ahead) for its proof.
    fn send_session_checks(&mut self, now: Instant) {
        for (ingress, class, nonce) in self.egress.poll_checks(now) {
            let check = SessionCheck {
                kind: SessionCheckKind::Request,
                class,
                target: ingress,
                epoch: 0,
                next_seq: 0,
                nonce,
            };
            if let Some(buf) = check_message(&check, self.id, self.control.mac_fields()) {
                if self.send_in_control_class(now, ingress, buf) {
                    self.counters.session_checks_sent += 1;
                }
            }
        }
    }

    /// Asks the ingress of every session whose sliding-window decoder
    /// misses packets past their wait for more repair (`sliding_ask.rs`).
    fn send_repair_requests(&mut self, now: Instant) {
        for (ingress, class, want) in self.egress.poll_repairs(now) {
            let request = RepairRequest {
                class,
                count: want.count,
                target: ingress,
                end: want.end,
                first: want.first,
            };
            let mac = self.control.mac_fields();
            if let Some(buf) = repair_request_message(&request, self.id, mac) {
                if self.send_in_control_class(now, ingress, buf) {
                    self.counters.repair_requests_sent += 1;
                }
            }
        }
    }

    /// A repair request from `sender`, the egress of one of our sessions:
    /// the repair it asks for goes out now.
    fn on_repair_request(&mut self, now: Instant, sender: NodeId, request: RepairRequest) {
        if request.target != self.id {
            return self.refuse(Refusal::NotOurRequest);
        }
        let mut out = std::mem::take(&mut self.scratch);
        let sent = self.ingress.answer_repair(
            now,
            (sender, request.class),
            (request.first, request.end),
            request.count,
            &mut out,
        );
        let key = FlowKey {
            hash: 0,
            urgent: true,
        };
        self.emit_all(now, &mut out, &[], key);
        self.scratch = out;
        match sent {
            None => self.refuse(Refusal::NotOurRequest),
            Some(0) => self.counters.repair_requests_unanswered += 1,
            Some(_) => self.counters.repair_requests_answered += 1,
        }
    }

    /// Writes `echo` and sends it to `to` in the control class.
    fn send_end_to_end(&mut self, now: Instant, to: NodeId, echo: &braid_wire::Echo) -> bool {
        match echo_message(echo, self.id, self.control.mac_fields()) {
            Some(buf) => self.send_in_control_class(now, to, buf),
            None => false,
        }
    }

    /// Signs a node message (a path report, an echo) and sends it to `to`
    /// inside a data packet of the control class, urgent; false when
    /// there is no path to it.
    fn send_in_control_class(&mut self, now: Instant, to: NodeId, mut buf: Vec<u8>) -> bool {
        self.control.sign(&mut buf);
        if to == self.id || !self.ensure_routes(now, to) {
            return false;
        }
        let c = Classified {
            class: CLASS_CONTROL,
            urgent: true,
            flow_hash: 0,
        };
        let mut out = std::mem::take(&mut self.scratch);
        let paths = self.routes.states(to);
        let sent = self
            .ingress
            .send_classified(now, to, c, &buf, SendHints::default(), paths, &mut out)
            .is_ok();
        let key = FlowKey {
            hash: 0,
            urgent: true,
        };
        self.emit_all(now, &mut out, &buf, key);
        self.scratch = out;
        sent
    }

    /// Pacing: a path report from `egress` with its delay `samples` (per
    /// path slot) moves the rate of each path it counted.
    fn pace_on_report(
        &mut self,
        now: Instant,
        egress: NodeId,
        counts: &[PathCount],
        samples: &[Option<f64>],
    ) {
        let gap = self.config.path_report_interval / 2;
        // What each path carried, every session toward the egress summed
        // (datagrams per second; each session's estimates taken once).
        let mut carried: Vec<Option<f64>> = Vec::new();
        for s in self.ingress.sessions_to(egress) {
            for (path, e) in s.path_estimates().into_iter().enumerate() {
                if path >= carried.len() {
                    carried.resize(path + 1, None);
                }
                if let Some(e) = e {
                    carried[path] = Some(carried[path].unwrap_or(0.0) + e.carried_per_s);
                }
            }
        }
        for c in counts {
            let path = c.path as usize;
            let carried = carried.get(path).copied().flatten();
            let held = self.binder.waiting_for(egress, path) > 0;
            let sample = samples.get(path).copied().flatten();
            if let Some(p) = self.routes.pacer_mut(egress, path) {
                p.on_report(now, gap, sample, carried, held);
            }
        }
    }

    /// A session check from `sender`: a request to us as the ingress of
    /// one of its sessions (answered with our proof), or a proof for one
    /// of our egress sessions (what it held goes through).
    fn on_session_check(&mut self, now: Instant, sender: NodeId, check: SessionCheck) {
        if check.target != self.id {
            return self.refuse(Refusal::NotOurCheck);
        }
        match check.kind {
            SessionCheckKind::Request => {
                let Some((epoch, next_seq)) = self.ingress.proof(now, sender, check.class) else {
                    // No such session (it expired, or the request was
                    // forged by a key holder), or answered just now.
                    return self.refuse(Refusal::UnansweredCheck);
                };
                let proof = SessionCheck {
                    kind: SessionCheckKind::Proof,
                    epoch,
                    next_seq,
                    target: sender,
                    ..check
                };
                if let Some(buf) = check_message(&proof, self.id, self.control.mac_fields()) {
                    if self.send_in_control_class(now, sender, buf) {
                        self.counters.session_checks_answered += 1;
                    }
                }
            }
            SessionCheckKind::Proof => {
                let (got, pool) = (&mut self.got, &mut self.out.pool);
                let taken = self.egress.on_proof(
                    now,
                    (sender, check.class),
                    (check.epoch, check.next_seq),
                    check.nonce,
                    &mut |p| got.push(pool.copy_of(p)),
                );
                self.take_delivered(now, check.class);
                if taken.is_err() {
                    self.refuse(Refusal::UnexpectedProof);
                }
            }
        }
    }

    /// A message of the control class delivered here: a path report for
    /// one of our ingress sessions, a session check, or an echo.
    fn on_node_message(&mut self, now: Instant, bytes: &[u8]) {
        let (sender, body) = match read_node_message(bytes, self.control.auth()) {
            Ok(read) => read,
            Err(refusal) => return self.refuse(refusal),
        };
        match body {
            NodeMessage::Report(report) => {
                if report.ingress != self.id {
                    return self.refuse(Refusal::NotOurReport);
                }
                self.counters.path_reports_received += 1;
                let counts: Vec<PathCount> = report.counts().collect();
                let mut out = std::mem::take(&mut self.scratch);
                self.ingress
                    .on_path_report(now, sender, report.class, &counts, &mut out);
                if let Some(session) = self.ingress.session(sender, report.class) {
                    let mut samples = session.last_delays();
                    for (p, d) in samples.iter_mut().enumerate() {
                        if !counts.iter().any(|c| c.path as usize == p) {
                            *d = None;
                        }
                    }
                    self.routes.note_delays(sender, &samples);
                    if self.paces() {
                        self.pace_on_report(now, sender, &counts, &samples);
                    }
                }
                self.emit_all(now, &mut out, &[], FlowKey::default());
                self.scratch = out;
                self.note_mode_changes();
            }
            NodeMessage::Check(check) => self.on_session_check(now, sender, check),
            NodeMessage::Repair(request) => self.on_repair_request(now, sender, request),
            NodeMessage::Echo(echo) => match answer_echo(echo, self.id, sender) {
                Ok(EchoAnswer::Reply(reply)) => {
                    if self.send_end_to_end(now, sender, &reply) {
                        self.counters.echoes_answered += 1;
                    }
                }
                Ok(EchoAnswer::Returned) => self.out.event(NodeEvent::EchoReply {
                    from: sender,
                    seq: echo.seq,
                    stamp: echo.stamp,
                }),
                Err(refusal) => self.refuse(refusal),
            },
        }
    }
}
