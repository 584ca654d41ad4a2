//! A whole braid node, sans-IO: the one object the simulator and the
//! daemon drive. It joins the control plane (probes, link state), the
//! neighbor table, path selection (k disjoint paths per egress, damped),
//! the ingress (classify, encode), late binding, forwarding (source
//! routes, and entry-point trees for tree mode), the egress (dedup, rebuild, re-order) and path reports.
//!
//! # The driver's contract
//!
//! The node does no I/O, reads no clock and draws no randomness of its
//! own: the driver (the simulator's world, the daemon's loop) passes all
//! three in and carries out what the node asks.
//!
//! **Inputs.**
//! * [`Node::send`]: a user packet from a local host (an IP packet).
//! * [`Node::handle_datagram`]: a datagram from the underlay, with the
//!   [`Interface`] it arrived on. It returns the neighbor that sent it when
//!   it was a control message the node took: the driver keeps that
//!   neighbor's address (the node knows neighbors by id only).
//! * [`Node::handle_timeout`]: when [`Node::poll_timeout`] says.
//! * Driver events: [`Node::on_sent`] (a unicast datagram left the
//!   driver's queue, sent or dropped: the late-binding contract; report
//!   every one while late binding is on), [`Node::tx_failed`] (a frame
//!   unacknowledged after every link-layer retry), [`Node::link_down`] /
//!   [`Node::link_up`] (carrier or association of the link to one
//!   neighbor), [`Node::interface_down`] / [`Node::interface_up`] (an
//!   interface lost or regained its carrier).
//! * Management: [`Node::set_policy`] (a reload), [`Node::leave`] (a clean
//!   shutdown: the node's advertisement is flushed everywhere).
//!
//! **Outputs**, drained until they return `None` after every input:
//! * [`Node::poll_transmit`]: datagrams to send, to every neighbor
//!   (control messages are link-local broadcasts) or to one;
//! * [`Node::poll_deliver`]: packets for local hosts;
//! * [`Node::poll_event`]: what happened ([`NodeEvent`]: neighbors up and
//!   down, route and mode changes, refused input) for logs and monitors.
//!
//! Draining `poll_transmit` may itself free room below the binding point
//! (through `on_sent`), so a driver drains until nothing moves. Buffers
//! the driver is done with go back through [`Node::recycle`] (optional;
//! with it the data path allocates nothing once warm).
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
//! counted and refused. A panic is a bug; the node's state is then
//! unspecified and the driver should start a new one (a restart, which
//! the protocol recovers from: new boot index, new session epochs).
//!
//! # Sub-machines
//!
//! `neighbors.rs` (who is up, on which interface), `routes.rs` (damped
//! disjoint paths per egress), `binding.rs` (late binding and source
//! routing), `tree.rs` (tree mode: copies along the entry point's tree),
//! `reports.rs` (path reports), `pool.rs` (buffers), `events.rs`
//! (the event queue), `config.rs` (settings and the types handed out).

mod binding;
mod config;
pub mod events;
mod neighbors;
mod pool;
mod reports;
mod routes;
mod tree;

use std::collections::{BTreeMap, VecDeque};

use braid_wire::data::{forward_in_place, Forward};
use braid_wire::{DataHeader, MessageType, NodeId, RedundancyMode};
use rand_core::RngCore;

use crate::access::{AccessPoint, ClientAddr};
use crate::classify::{inspect, Classifier};
use crate::control::{ConfigError, ControlPlane};
use crate::forward::TreeTables;
use crate::lsdb::LsaStore;
use crate::redundancy::{Egress, Ingress, Outgoing, Policy, CLASS_CONTROL};
use crate::time::Instant;

use binding::FlowKey;
pub use config::{Dest, LateBinding, NodeConfig, NodeCounters, Transmit};
use events::EventQueue;
pub use events::{DownReason, Interface, NodeEvent};
use neighbors::Heard;
pub use neighbors::NeighborTable;
use pool::BufferPool;
use routes::RouteSet;

/// A braid node.
#[derive(Debug)]
pub struct Node {
    id: NodeId,
    config: NodeConfig,
    control: ControlPlane,
    neighbors: NeighborTable,
    ingress: Ingress,
    egress: Egress,
    routes: BTreeMap<NodeId, RouteSet>,
    topology_seen: u64,
    /// When routes are next due for recomputation (the topology changed).
    routes_due: Option<Instant>,
    routes_computed: Instant,
    outbox: VecDeque<Transmit>,
    delivered: VecDeque<Vec<u8>>,
    events: EventQueue,
    next_report: Instant,
    scratch: Vec<Outgoing>,
    /// Packets the egress handed over, before delivery (reused).
    got: Vec<Vec<u8>>,
    /// Buffers the driver gave back, reused for the next datagrams.
    pool: BufferPool,
    /// Per-path receive counts of egress sessions another decoder (the
    /// kernel data path) keeps (see `reports.rs`).
    external_counts: BTreeMap<(NodeId, u8), Vec<(u8, u32)>>,
    /// Reused for control messages; grows to the largest sent.
    control_buf: Vec<u8>,
    /// Late binding: unicast datagrams in the driver, per next hop.
    in_driver: BTreeMap<NodeId, usize>,
    /// Egresses with datagrams above the binding point, sorted (a vector
    /// keeps its room when it empties: no allocation per packet, as a
    /// set's node would be).
    backlog: Vec<NodeId>,
    /// Tree mode's per-entry-point tables, and the egress choice among
    /// origins that serve a destination equally well.
    trees: TreeTables,
    /// As an access point: the clients heard and served.
    access: AccessPoint,
    /// Next hops of the tree-mode packet at hand (reused).
    tree_hops: Vec<NodeId>,
    counters: NodeCounters,
}

impl Node {
    /// A node with a link-state store of its own (a router).
    pub fn new(
        id: NodeId,
        config: NodeConfig,
        now: Instant,
        rng: &mut dyn RngCore,
    ) -> Result<Self, ConfigError> {
        Self::with_lsa_store(id, config, now, rng, LsaStore::new())
    }

    /// The origin that serves `dst` (an IPv4 address in the first four
    /// bytes when `v4`) best as seen from this node: longest prefix, best
    /// client quality, then the nearest (see [`crate::forward`]).
    pub fn choose_egress(&mut self, dst: &[u8; 16], v4: bool) -> Option<NodeId> {
        let control = &self.control;
        self.trees
            .egress_for(control.lsdb(), &mut || control.graph(), self.id, dst, v4)
    }

    /// Every IPv4 prefix and client served, with the origin this node
    /// sends it to (as [`Self::choose_egress`] decides): the table the
    /// kernel data path matches destinations against.
    pub fn v4_prefix_table(&mut self) -> Vec<([u8; 4], u8, NodeId)> {
        let table = self.control.lsdb().v4_prefix_table(self.id);
        table
            .into_iter()
            .filter_map(|(a, l, origins)| Some((a, l, self.nearest_of(&origins)?)))
            .collect()
    }

    /// This node's part of `entry`'s tree toward `dest` (tree mode): the
    /// next hops it copies to and whether it delivers (the table a driver
    /// mirrors into the kernel).
    pub fn tree_hop(
        &mut self,
        entry: NodeId,
        dest: crate::forward::TreeDest,
    ) -> crate::forward::TreeHop {
        let control = &self.control;
        self.trees
            .hop(control.lsdb(), &mut || control.graph(), entry, dest)
            .clone()
    }

    /// Among `origins` (sorted), the one nearest this node (ties to the
    /// lowest id): how the node breaks a tie between equally good
    /// origins, for a driver that mirrors its choice (the kernel's prefix
    /// table).
    pub fn nearest_of(&mut self, origins: &[NodeId]) -> Option<NodeId> {
        let control = &self.control;
        self.trees
            .nearest(control.lsdb(), &mut || control.graph(), self.id, origins)
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
            neighbors: NeighborTable::new(config.control.links.max_neighbors),
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
            events: EventQueue::default(),
            next_report: now + config.path_report_interval,
            scratch: Vec::new(),
            got: Vec::new(),
            pool: BufferPool::default(),
            external_counts: BTreeMap::new(),
            control_buf: Vec::new(),
            in_driver: BTreeMap::new(),
            backlog: Default::default(),
            trees: TreeTables::new(id),
            access: AccessPoint::new(config.access),
            tree_hops: Vec::new(),
            counters: NodeCounters::default(),
            config,
        })
    }

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

    /// Re-decides which clients this access point serves and gives the
    /// control plane what to advertise.
    pub(super) fn update_access(&mut self, now: Instant) {
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

    /// The data path's counters.
    pub fn counters(&self) -> NodeCounters {
        NodeCounters {
            events_dropped: self.events.dropped(),
            neighbors_refused: self.neighbors.refused(),
            ..self.counters
        }
    }

    /// A user packet from a local host.
    pub fn send(&mut self, now: Instant, packet: &[u8]) {
        self.counters.user_in += 1;
        let Ok(info) = inspect(packet) else {
            self.counters.not_ip += 1;
            return;
        };
        let Some(mut egress) = self.choose_egress(&info.dst, info.v4) else {
            self.counters.no_egress += 1;
            return;
        };
        if egress == self.id {
            // A client this access point serves best; in tree mode the
            // others serving it get their copies too (the tree delivers
            // here as well), so the egress becomes one of them.
            egress = self.other_server_in_tree_mode(&info).unwrap_or(egress);
        }
        if egress == self.id {
            let buf = self.pool.copy_of(packet);
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
        if braid_wire::peek(bytes) == Ok(MessageType::Data) {
            if from.is_none() && self.control.auth().enabled() {
                self.counters.unauthenticated += 1;
                self.refuse("unauthenticated");
                return None;
            }
            self.handle_data(now, from, bytes);
            return None;
        }
        let sender = match self.control.handle(now, bytes) {
            Ok(sender) => sender,
            Err(e) => {
                // Counted by the control plane.
                self.refuse(e.kind());
                None
            }
        };
        if let Some(sign) = self.control.take_duplicate_sign() {
            self.events.push(NodeEvent::DuplicateId { sign, interface });
        }
        self.note_topology(now);
        let sender = sender?;
        match self.neighbors.heard(now, sender, interface) {
            Heard::Up => {
                // Back after being taken down: its link counts again.
                self.control.link_restored(sender);
                self.events.push(NodeEvent::NeighborUp {
                    neighbor: sender,
                    interface,
                });
            }
            Heard::Moved => self.events.push(NodeEvent::NeighborMoved {
                neighbor: sender,
                interface,
            }),
            Heard::Again => {}
            Heard::Ignored => return None,
        }
        Some(sender)
    }

    fn handle_data(&mut self, now: Instant, from: Option<NodeId>, bytes: &[u8]) {
        if bytes
            .get(braid_wire::data::offset::FLAGS_MODE)
            .map(|b| b & 0x0f)
            == Some(RedundancyMode::Tree as u8)
        {
            self.handle_tree(now, bytes);
            return;
        }
        if let (Some(from), Ok(pkt)) = (from, DataHeader::parse(bytes)) {
            let before = braid_wire::data::previous_hop(&pkt, self.id);
            // A transit node the route does not reach is `not_on_route`
            // below; anything else must name the sender.
            let off_route = before.is_none() && pkt.header.egress != self.id;
            if !off_route && before != Some(from) {
                self.counters.wrong_previous_hop += 1;
                self.refuse("wrong_previous_hop");
                return;
            }
        }
        let mut buf = self.pool.copy_of(bytes);
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
                self.refuse("hop_limit_exceeded");
                false
            }
            Ok(Forward::NotOnRoute) => {
                self.counters.not_on_route += 1;
                self.refuse("not_on_route");
                false
            }
            Err(e) => {
                self.counters.malformed += 1;
                self.refuse(e.kind());
                false
            }
        };
        let class = match deliver.then(|| DataHeader::parse(&buf)) {
            None => None,
            Some(Ok(pkt)) => {
                let (got, pool) = (&mut self.got, &mut self.pool);
                self.egress
                    .receive(now, &pkt, &mut |p| got.push(pool.copy_of(p)));
                Some(pkt.header.class)
            }
            Some(Err(e)) => {
                self.counters.malformed += 1;
                self.refuse(e.kind());
                None
            }
        };
        self.pool.give(buf);
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
                self.pool.give(p);
            } else {
                self.deliver_local(p);
            }
        }
        self.got = got;
    }

    /// Runs `step` on the egress and delivers to local hosts what it hands
    /// over (re-ordered packets released by a timer, or by a session that
    /// expired).
    fn deliver_from_egress(&mut self, step: impl FnOnce(&mut Egress, &mut dyn FnMut(&[u8]))) {
        let (got, pool) = (&mut self.got, &mut self.pool);
        step(&mut self.egress, &mut |p| got.push(pool.copy_of(p)));
        let mut got = std::mem::take(&mut self.got);
        for p in got.drain(..) {
            self.deliver_local(p);
        }
        self.got = got;
    }

    fn deliver_local(&mut self, p: Vec<u8>) {
        if self.delivered.len() >= self.config.max_queue {
            self.counters.queue_full += 1;
            self.pool.give(p);
            return;
        }
        self.counters.delivered += 1;
        self.delivered.push_back(p);
    }

    fn push_out(&mut self, t: Transmit) {
        if self.outbox.len() >= self.config.max_queue {
            self.counters.queue_full += 1;
            self.pool.give(t.bytes);
            return;
        }
        self.outbox.push_back(t);
    }

    /// Tells the driver a datagram was refused (counted where it was).
    fn refuse(&mut self, reason: &'static str) {
        self.events.push(NodeEvent::Refused { reason });
    }

    /// Turns the ingress's mode changes into events.
    fn note_mode_changes(&mut self) {
        for (egress, class, mode) in self.ingress.take_mode_changes() {
            self.events.push(NodeEvent::ModeChange {
                egress,
                class,
                mode,
            });
        }
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
        self.take_down(now, neighbor, DownReason::LinkDown, rng);
        self.after_local_failure(now);
    }

    /// The driver has the link to `neighbor` back; probes decide when it
    /// is used again.
    pub fn link_up(&mut self, neighbor: NodeId) {
        self.control.link_restored(neighbor);
    }

    /// `interface` lost its carrier (or went down): every neighbor heard
    /// on it goes down at once, and nothing heard on it counts until
    /// [`Self::interface_up`] (datagrams queued before it went still
    /// arrive). Returns how many neighbors went down.
    pub fn interface_down(
        &mut self,
        now: Instant,
        interface: Interface,
        rng: &mut dyn RngCore,
    ) -> usize {
        let gone = self.neighbors.interface_down(interface);
        self.retire_all(now, gone, DownReason::InterfaceDown, rng)
    }

    /// A send found `interface` down (the driver has no word from the
    /// kernel yet): its neighbors go down at once and come back as they
    /// are heard. Returns how many went down.
    pub fn interface_failed(
        &mut self,
        now: Instant,
        interface: Interface,
        rng: &mut dyn RngCore,
    ) -> usize {
        let gone = self.neighbors.remove_on(interface);
        self.retire_all(now, gone, DownReason::InterfaceDown, rng)
    }

    /// Retires `gone` (out of the table already) and moves routes once.
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
                self.retire(now, neighbor, why, rng);
            }
            self.after_local_failure(now);
        }
        n
    }

    /// `interface` is usable again; its neighbors come back as they are
    /// heard.
    pub fn interface_up(&mut self, interface: Interface) {
        self.neighbors.interface_up(interface);
    }

    /// Takes `neighbor`'s link out of use (a neighbor that was up goes
    /// down: an event).
    fn take_down(
        &mut self,
        now: Instant,
        neighbor: NodeId,
        why: DownReason,
        rng: &mut dyn RngCore,
    ) {
        let was_up = self.neighbors.remove(neighbor);
        self.control
            .link_failed(now, neighbor, Instant(u64::MAX), rng);
        if was_up {
            self.events.push(NodeEvent::NeighborDown { neighbor, why });
        }
    }

    /// The link to `neighbor`, taken out of the table already, goes out
    /// of use until it is heard again.
    fn retire(&mut self, now: Instant, neighbor: NodeId, why: DownReason, rng: &mut dyn RngCore) {
        self.control
            .link_failed(now, neighbor, Instant(u64::MAX), rng);
        self.events.push(NodeEvent::NeighborDown { neighbor, why });
    }

    /// A local link failed: routes move now, not after `route_delay`.
    fn after_local_failure(&mut self, now: Instant) {
        self.note_topology(now);
        self.recompute_routes_now(now);
    }

    /// A new neighbor timeout (an operator's reload; see
    /// [`NodeConfig::neighbor_timeout`]).
    pub fn set_neighbor_timeout(&mut self, timeout: Option<std::time::Duration>) {
        self.config.neighbor_timeout = timeout;
    }

    /// Takes new redundancy settings (an operator's reload) without
    /// dropping traffic: sessions whose mode changes switch at once, and
    /// what the switch sends (a flushed parity group) goes out.
    pub fn set_policy(&mut self, now: Instant, policy: Policy, classifier: Classifier) {
        self.ingress.set_classifier(classifier.clone());
        let mut out = std::mem::take(&mut self.scratch);
        self.ingress.set_policy(now, policy.clone(), &mut out);
        self.emit_all(&mut out, &[], FlowKey::default());
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

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant, rng: &mut dyn RngCore) {
        self.control.handle_timeout(now, rng);
        if let Some(timeout) = self.config.neighbor_timeout {
            let gone = self.neighbors.expire(now, timeout);
            self.retire_all(now, gone, DownReason::Unheard, rng);
        }
        let mut out = std::mem::take(&mut self.scratch);
        self.ingress.handle_timeout(now, &mut out);
        self.emit_all(&mut out, &[], FlowKey::default());
        self.scratch = out;
        self.deliver_from_egress(|egress, deliver| egress.handle_timeout(now, deliver));
        self.note_topology(now);
        self.recompute_routes_if_due(now);
        if self.access.next_deadline().is_some_and(|t| t <= now) {
            self.update_access(now);
        }
        if now >= self.next_report {
            self.next_report = now + self.config.path_report_interval;
            self.send_path_reports(now);
            self.expire_idle(now);
        }
    }

    /// Drops idle sessions (each side), and the routes toward nodes that no
    /// session uses any more and nothing waits for: no per-peer table
    /// keeps what traffic left behind.
    fn expire_idle(&mut self, now: Instant) {
        self.ingress.expire(now);
        self.deliver_from_egress(|egress, deliver| egress.expire(now, deliver));
        self.drop_unused_routes();
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

    /// When [`Self::handle_timeout`] should next run.
    pub fn poll_timeout(&self) -> Instant {
        let mut t = self.control.poll_timeout().min(self.next_report);
        if let Some(due) = self.routes_due {
            t = t.min(due);
        }
        let neighbors = self
            .config
            .neighbor_timeout
            .and_then(|timeout| self.neighbors.next_expiry(timeout));
        for x in [
            self.ingress.poll_timeout(),
            self.egress.poll_timeout(),
            neighbors,
            self.access.next_deadline(),
        ]
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
        self.count_in_driver(&t);
        Some(t)
    }

    /// Lends ingress session (`egress`, `class`) to another encoder (the
    /// kernel data path): returns its epoch and the first sequence number
    /// the borrower uses (`gap` after the next one here; this node keeps
    /// those `gap` numbers for packets that still reach it). See
    /// [`crate::redundancy::IngressSession::lend`].
    pub fn lend_session(&mut self, egress: NodeId, class: u8, gap: u32) -> Option<(u32, u32)> {
        self.ingress.lend(egress, class, gap)
    }

    /// Takes a lent session back; the borrower stopped at `next_seq`.
    pub fn take_back_session(&mut self, egress: NodeId, class: u8, next_seq: u32) {
        self.ingress.take_back(egress, class, next_seq);
    }

    /// Lent sessions whose packets keep reaching this node (its own
    /// numbers ran out; the borrower should take them, or give them back).
    pub fn exhausted_loans(&self) -> Vec<(NodeId, u8)> {
        self.ingress.exhausted_loans()
    }

    /// The next packet for a local host.
    pub fn poll_deliver(&mut self) -> Option<Vec<u8>> {
        self.delivered.pop_front()
    }

    /// The next thing that happened (see [`NodeEvent`]).
    pub fn poll_event(&mut self) -> Option<NodeEvent> {
        self.events.pop()
    }

    /// Gives back the buffer of a datagram the driver has sent, or of a
    /// packet it has delivered: the node reuses it for the next one, so a
    /// driver that gives its buffers back makes the data path allocate
    /// nothing once warm. Optional; the pool is bounded.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        self.pool.give(buf);
    }
}
