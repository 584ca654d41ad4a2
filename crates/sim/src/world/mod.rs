//! One simulation run: real `braid_proto::node::Node`s, joined by modelled
//! links, with hosts sending constant-bit-rate UDP or TCP. Everything
//! happens in simulated time from one seeded RNG, so a run is a function
//! of its scenario and seed.
//!
//! | module | owns |
//! |---|---|
//! | this file | the world: building it, the event loop and what each event does, results |
//! | `medium` | links and radios: what becomes of a frame |
//! | `traffic` | the hosts' flows: packets, arrivals, each flow's result |
//! | `config` | each node's configuration from the scenario |
//! | `ids` | names to indices, and each index's braid node id (dense or sparse) |
//! | `processing` | processing time charged to a router's clock (signature checks) |
//! | `flooding` | how long advertisements take to reach every router |
//! | `cuts`, `cut_records`; `stats` | links cut on flows' paths (`[[path_cuts]]`) and what they cut; what one router holds and sends |

mod config;
mod cut_records;
mod cuts;
mod flooding;
mod ids;
mod links;
mod medium;
mod processing;
mod stats;
mod traffic;

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use braid_proto::lsdb::LsaStore;
use braid_proto::node::{Dest, Interface, Node, NodeConfig};
use braid_proto::time::Instant;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::event::EventQueue;
use crate::link::Fate;
use crate::results::RunResult;
use crate::scenario::{Scenario, ScenarioError};
use crate::stranger::Stranger;
use config::{flow_rules, node_config};
use flooding::FloodWatch;
use ids::{Index, NodeIds};
use medium::Medium;
use processing::Processing;
use traffic::{flow_class, Flow, TcpPair, FLOW_PORT_BASE};

pub use traffic::host_addr;

enum Event {
    Timer(u32),
    /// A node fails (`up = false`) or restarts with empty state.
    NodePower {
        node: u32,
        up: bool,
    },
    /// One buffer shared by every receiver of a broadcast.
    Arrive {
        from: u32,
        to: u32,
        bytes: Rc<[u8]>,
    },
    FlowTick(u32),
    /// A TCP flow stops (its `duration` is over).
    FlowStop(u32),
    /// A TCP host's timer (`receiver`: which end of flow `flow`).
    TcpTimer {
        flow: u32,
        receiver: bool,
    },
    /// A unicast datagram left `node`'s driver queue toward `to`.
    Sent {
        node: u32,
        to: u32,
    },
    /// A frame from `node` to `to` was lost on every link-layer attempt.
    TxFailed {
        node: u32,
        to: u32,
    },
    /// The link between `a` and `b` loses (or regains) its carrier, and
    /// both drivers see it.
    Carrier {
        a: u32,
        b: u32,
        up: bool,
    },
    /// Access points measure their unmodified clients' links (every
    /// [`ACCESS_TICK`]).
    Access,
    /// Stranger `k` sends the nodes in its range a datagram each.
    Stranger(u32),
    /// Path cut `.0` of the scenario cuts flow `.1`'s path (`cuts.rs`).
    PathCut(u32, u32),
    /// Router `i` is done processing: what it made goes out.
    Done(u32),
}

/// How often an access point's driver reports its clients' quality (the
/// daemon probes every 100 ms too).
const ACCESS_TICK: Duration = Duration::from_millis(100);

/// A network in simulation.
pub struct World {
    names: Vec<String>,
    /// Each index's braid node id (`ids.rs`).
    ids: NodeIds,
    nodes: Vec<Node>,
    configs: Vec<NodeConfig>,
    down: Vec<bool>,
    medium: Medium,
    queue: EventQueue<Event>,
    timer_at: Vec<Instant>,
    flows: Vec<Flow>,
    rng: ChaCha8Rng,
    now: Instant,
    packet_hops: u64,
    /// Bytes of every control message broadcast (probes, floods).
    control_bytes: u64,
    node_events: BTreeMap<&'static str, u64>,
    capture: Option<crate::pcap::Capture>,
    /// Every node's link-state records, interned: an advertisement all
    /// nodes hold is stored once (what makes 10,000 nodes fit in memory).
    lsa_store: LsaStore,
    /// Nodes that run no braid: unmodified clients. Their links lead to
    /// access points, which carry raw IP packets over them.
    unmodified: Vec<bool>,
    /// Hostile strangers (`[[strangers]]`), and per node the strangers in
    /// whose range it is (they hear what it receives).
    strangers: Vec<Stranger>,
    /// The scenario's path cuts, and the cuts they made (`cuts.rs`).
    path_cuts: cut_records::PathCuts,
    overheard_by: Vec<Vec<u32>>,
    /// Processing time charged to routers (`processing.rs`).
    processing: Processing,
    /// Flooding times, when watched (`flooding.rs`).
    flooding: Option<FloodWatch>,
}

impl World {
    /// Builds the network of `scenario` for the run with `seed`.
    pub fn new(scenario: &Scenario, seed: u64) -> Result<World, ScenarioError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (names, edges, edge_length) = scenario.topology.generate(&mut rng);
        let index = Index {
            scenario,
            names: &names,
            of: names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.as_str(), i as u32))
                .collect(),
        };
        let mut medium = Medium::new(scenario, names.len(), &edges, &edge_length, &mut rng);
        for (i, o) in scenario.links.iter().enumerate() {
            let a = index.find(format!("links[{i}].between"), &o.a)?;
            let b = index.find(format!("links[{i}].between"), &o.b)?;
            if !medium.set_link(a, b, &o.spec) {
                return Err(index.error(
                    format!("links[{i}].between"),
                    format!("{} and {} are not linked in this topology", o.a, o.b),
                ));
            }
        }
        let mut flows = Vec::new();
        for (i, f) in scenario.flows.iter().enumerate() {
            let from = index.find(format!("flows[{i}].from"), &f.from)?;
            let to = index.find(format!("flows[{i}].to"), &f.to)?;
            flows.push(Flow::new(f, from, to, FLOW_PORT_BASE + i as u16));
        }
        let mut unmodified = vec![false; names.len()];
        for (k, c) in scenario.clients.iter().enumerate() {
            unmodified[index.find(format!("clients[{k}]"), c)? as usize] = true;
        }
        let rules = flow_rules(scenario);
        let lsa_store = LsaStore::new();
        let mut nodes = Vec::with_capacity(names.len());
        let mut configs = Vec::with_capacity(names.len());
        let ids = NodeIds::new(names.len(), scenario.sparse_ids, seed);
        let roster = scenario
            .sign_origins
            .then(|| config::origin_roster(&ids, names.len() as u32));
        let areas = (scenario.areas > 0)
            .then(|| crate::topology::partition(names.len(), &edges, scenario.areas));
        for i in 0..names.len() as u32 {
            let own: Vec<usize> = (0..flows.len()).filter(|&k| flows[k].from == i).collect();
            let config = node_config(
                scenario,
                seed,
                i,
                (&rules.0, &rules.1),
                &own,
                unmodified[i as usize],
                roster.as_ref(),
            );
            let mut config = config;
            if let Some(areas) = &areas {
                config.control.area = areas[i as usize];
            }
            configs.push(config.clone());
            let node = Node::with_lsa_store(
                ids.id(i),
                config,
                Instant::ZERO,
                &mut rng,
                lsa_store.clone(),
            )
            .map_err(|e| index.error("node", e.to_string()))?;
            nodes.push(node);
        }
        let mut failures = Vec::new();
        for nf in &scenario.node_failures {
            failures.push((index.find("nodes", &nf.name)?, nf.from, nf.until));
        }
        let mut strangers = Vec::new();
        let mut overheard_by = vec![Vec::new(); names.len()];
        for (k, st) in scenario.strangers.iter().enumerate() {
            let mut near = Vec::new();
            for n in &st.near {
                let i = index.find(format!("strangers[{k}].near"), n)?;
                near.push(i);
                overheard_by[i as usize].push(k as u32);
            }
            strangers.push(Stranger::new(
                near,
                st.rate,
                st.until,
                names.len() as u16,
                scenario.auth,
                seed ^ ((k as u64 + 1) << 40),
            ));
        }
        let mut carrier = Vec::new();
        for o in scenario.links.iter().filter(|o| o.spec.carrier) {
            let (a, b) = (index.find("links", &o.a)?, index.find("links", &o.b)?);
            for &(from, until) in &o.spec.down {
                carrier.push((from, Event::Carrier { a, b, up: false }));
                carrier.push((until, Event::Carrier { a, b, up: true }));
            }
        }
        let nodes_count = names.len();
        let mut world = World {
            lsa_store,
            timer_at: vec![Instant(u64::MAX); names.len()],
            down: vec![false; names.len()],
            names,
            nodes,
            configs,
            medium,
            queue: EventQueue::default(),
            flows,
            rng,
            now: Instant::ZERO,
            packet_hops: 0,
            control_bytes: 0,
            node_events: BTreeMap::new(),
            capture: None,
            unmodified,
            strangers,
            path_cuts: cut_records::PathCuts::new(&scenario.path_cuts),
            overheard_by,
            processing: Processing::new(
                (scenario.origin_check_cost, scenario.origin_sign_cost),
                scenario.sign_origins,
                nodes_count,
            ),
            flooding: scenario
                .watch_flooding
                .then(|| FloodWatch::new(nodes_count, &ids)),
            ids,
        };
        world.schedule_start(scenario, carrier, failures);
        Ok(world)
    }

    /// The first events: access point reports, every node's timer, each
    /// flow's start, carrier changes, strangers and node failures.
    fn schedule_start(
        &mut self,
        scenario: &Scenario,
        carrier: Vec<(Instant, Event)>,
        failures: Vec<(u32, Duration, Duration)>,
    ) {
        if self.unmodified.iter().any(|&u| u) {
            self.queue.push(Instant::ZERO, Event::Access);
        }
        for i in 0..self.nodes.len() as u32 {
            self.schedule_timer(i);
        }
        for (i, f) in scenario.flows.iter().enumerate() {
            self.queue
                .push(Instant::ZERO + f.start, Event::FlowTick(i as u32));
        }
        for (at, e) in carrier {
            self.queue.push(at, e);
        }
        for (k, st) in scenario.strangers.iter().enumerate() {
            self.queue
                .push(Instant::ZERO + st.from, Event::Stranger(k as u32));
        }
        for (cut, c) in scenario.path_cuts.iter().enumerate() {
            for flow in 0..c.flows.min(scenario.flows.len()) {
                let at = Instant::ZERO + c.at + c.every * flow as u32;
                let (cut, flow) = (cut as u32, flow as u32);
                self.queue.push(at, Event::PathCut(cut, flow));
            }
        }
        for (node, from, until) in failures {
            self.queue
                .push(Instant::ZERO + from, Event::NodePower { node, up: false });
            self.queue
                .push(Instant::ZERO + until, Event::NodePower { node, up: true });
        }
    }

    fn schedule_timer(&mut self, i: u32) {
        if self.unmodified[i as usize] {
            return; // runs no braid: no timers
        }
        let t = self.nodes[i as usize].poll_timeout().max(self.now);
        if t != self.timer_at[i as usize] {
            self.timer_at[i as usize] = t;
            self.queue.push(t, Event::Timer(i));
        }
    }

    /// Sends what node `i` has queued, takes what it delivered, and counts
    /// what it reported.
    fn drain(&mut self, i: u32) {
        if self.unmodified[i as usize] {
            return;
        }
        while let Some(e) = self.nodes[i as usize].poll_event() {
            *self.node_events.entry(e.kind()).or_default() += 1;
        }
        loop {
            self.drain_transmits(i);
            let mut delivered = false;
            while let Some(p) = self.nodes[i as usize].poll_deliver() {
                delivered = true;
                match self.client_behind(i, &p) {
                    Some(c) => self.access_send(i, c, p.into()),
                    None => self.host_receive(i, &p),
                }
            }
            if !delivered {
                break;
            }
        }
        self.schedule_timer(i);
    }

    fn drain_transmits(&mut self, i: u32) {
        while let Some(t) = self.nodes[i as usize].poll_transmit(self.now) {
            let bytes: Rc<[u8]> = t.bytes.into();
            match t.dest {
                Dest::AllNeighbors => {
                    self.control_bytes += bytes.len() as u64;
                    self.broadcast(i, &bytes, t.rate)
                }
                Dest::Neighbor(n) => {
                    if let Some(to) = self.ids.index(n) {
                        self.unicast(i, to, &bytes, t.rate)
                    }
                }
            }
        }
    }

    /// Schedules the arrival of a frame that crossed the link `from`→`to`.
    fn arrive(&mut self, from: u32, to: u32, fate: Fate, bytes: &Rc<[u8]>) {
        if let Fate::Arrives(at) = fate {
            if let Some(c) = self.capture.as_mut().filter(|c| c.covers(from, to)) {
                c.record(at.as_micros(), from, to, bytes);
            }
            self.queue.push(
                at,
                Event::Arrive {
                    from,
                    to,
                    bytes: bytes.clone(),
                },
            );
        }
    }

    fn broadcast(&mut self, i: u32, bytes: &Rc<[u8]>, rate: Option<u16>) {
        let fates = self.medium.broadcast(
            self.now,
            i,
            bytes.len(),
            rate,
            &self.unmodified,
            &mut self.rng,
        );
        for (to, fate) in fates {
            self.arrive(i, to, fate, bytes);
        }
    }

    fn unicast(&mut self, i: u32, to: u32, bytes: &Rc<[u8]>, rate: Option<u16>) {
        let now = self.now;
        let node = &self.nodes[i as usize];
        let neighbor = self.ids.id(to);
        let probed = || node.control().links().best_rate(neighbor);
        let out = self
            .medium
            .unicast(now, (i, to), bytes.len(), rate, probed, &mut self.rng);
        self.arrive(i, to, out.fate, bytes);
        if out.failed {
            self.queue
                .push(out.departure, Event::TxFailed { node: i, to });
        }
        if self.configs[i as usize].late_binding.is_some() {
            if out.departure <= now {
                self.nodes[i as usize].on_sent(self.ids.id(to));
            } else {
                self.queue.push(out.departure, Event::Sent { node: i, to });
            }
        }
    }

    /// The unmodified client a packet node `i` delivered is for, when `i`
    /// is one of its access points (has a link to it).
    fn client_behind(&self, i: u32, p: &[u8]) -> Option<u32> {
        if p.len() < 20 || p[0] >> 4 != 4 {
            return None;
        }
        self.medium
            .links
            .neighbors(i)
            .iter()
            .copied()
            .find(|&c| self.unmodified[c as usize] && p[16..20] == host_addr(c))
    }

    /// A raw IP packet over the access link `from` -> `to` (an access point
    /// to its client, or a client to an access point).
    fn access_send(&mut self, from: u32, to: u32, bytes: Rc<[u8]>) {
        let sent = self
            .medium
            .access_send(self.now, from, to, bytes.len(), &mut self.rng);
        if let Some(fate) = sent {
            self.arrive(from, to, fate, &bytes);
        }
    }

    /// A packet from the host at node `i`: into braid, or, from an
    /// unmodified client, over its link to the access point it uses: one
    /// whose link is up, the least lossy (ties: the lowest index), as a
    /// client associates with the access point it hears best.
    fn host_send(&mut self, i: u32, p: &[u8]) {
        if !self.unmodified[i as usize] {
            self.nodes[i as usize].send(self.now, p);
            return;
        }
        let now = self.now;
        let best = self
            .medium
            .links
            .neighbors(i)
            .iter()
            .filter_map(|&ap| {
                let l = self.medium.links.get(&(i, ap))?;
                (!l.is_down(now)).then(|| (l.spec.loss.mean_loss(), ap))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        if let Some((_, ap)) = best {
            self.access_send(i, ap, p.into());
        }
    }

    /// Every access point tells its node how well it hears each of its
    /// unmodified clients: the link's delivery (0 while it is down), as a
    /// driver's probes would measure it.
    fn access_tick(&mut self) {
        let now = self.now;
        for c in 0..self.nodes.len() as u32 {
            if !self.unmodified[c as usize] {
                continue;
            }
            let mut addr = [0u8; 16];
            addr[..4].copy_from_slice(&host_addr(c));
            let client = braid_proto::access::ClientAddr { addr, v4: true };
            for ap in self.medium.links.neighbors(c).to_vec() {
                if self.down[ap as usize] || self.unmodified[ap as usize] {
                    continue;
                }
                let quality = self.medium.links.get(&(ap, c)).map_or(0, |l| {
                    if l.is_down(now) {
                        0
                    } else {
                        ((1.0 - l.spec.loss.mean_loss()) * 255.0).round().max(1.0) as u8
                    }
                });
                self.nodes[ap as usize].client_heard(now, client, quality);
                self.drain(ap);
            }
        }
        self.queue.push(now + ACCESS_TICK, Event::Access);
    }

    fn host_receive(&mut self, at: u32, p: &[u8]) {
        if p.len() >= 24 && p[9] == 6 {
            self.tcp_receive(at, p);
            return;
        }
        let now = self.now;
        let flow = Flow::index_of(p).and_then(|fi| self.flows.get_mut(fi));
        if let Some(f) = flow.filter(|f| f.to == at) {
            f.arrived(p, now);
        }
    }

    /// A TCP segment delivered to the host behind node `at`.
    fn tcp_receive(&mut self, at: u32, p: &[u8]) {
        let (sport, dport) = (
            u16::from_be_bytes([p[20], p[21]]),
            u16::from_be_bytes([p[22], p[23]]),
        );
        let Some(fi) = self
            .flows
            .iter()
            .position(|f| f.tcp.is_some() && f.port == dport && f.port == sport)
        else {
            return;
        };
        let f = &self.flows[fi];
        let receiver = if at == f.to {
            true
        } else if at == f.from {
            false
        } else {
            return;
        };
        if let Some(pair) = self.flows[fi].tcp.as_mut() {
            if receiver {
                pair.receiver.deliver(p);
            } else {
                pair.sender.deliver(p);
            }
        }
        self.tcp_poll(fi as u32, receiver);
    }

    /// Runs one TCP end now: its packets enter braid at its node, and its
    /// next timer is scheduled.
    fn tcp_poll(&mut self, fi: u32, receiver: bool) {
        let now = self.now;
        let f = &mut self.flows[fi as usize];
        let node = if receiver { f.to } else { f.from };
        let Some(pair) = f.tcp.as_mut() else {
            return;
        };
        let host = if receiver {
            &mut pair.receiver
        } else {
            &mut pair.sender
        };
        let out = host.poll(now);
        let next = host.poll_at(now);
        let slot = if receiver {
            &mut pair.receiver_at
        } else {
            &mut pair.sender_at
        };
        let schedule = next.filter(|&t| *slot != Some(t));
        if let Some(t) = schedule {
            *slot = Some(t);
        }
        if let Some(t) = schedule {
            self.queue
                .push(t.max(now), Event::TcpTimer { flow: fi, receiver });
        }
        if self.down[node as usize] {
            return;
        }
        if !receiver {
            for pkt in &out {
                self.flows[fi as usize].count_retransmit(pkt);
            }
        }
        for pkt in out {
            self.host_send(node, &pkt);
        }
        if !self.unmodified[node as usize] {
            self.drain_transmits(node);
        }
    }

    /// Runs until `until` (simulated).
    pub fn run_until(&mut self, until: Instant, mut progress: impl FnMut(Instant)) {
        let mut next_tick = Instant::ZERO;
        while let Some((t, e)) = self.queue.pop_until(until) {
            self.now = t;
            if t >= next_tick {
                progress(t);
                next_tick = t + Duration::from_secs(1);
            }
            match e {
                Event::NodePower { node, up } => self.on_power(t, node, up),
                Event::Timer(i) => self.on_timer(t, i),
                Event::Arrive { from, to, bytes } => self.on_arrive(t, from, to, &bytes),
                Event::TcpTimer { flow, receiver } => self.on_tcp_timer(t, flow, receiver),
                Event::FlowStop(fi) => {
                    let f = &mut self.flows[fi as usize];
                    if let Some(pair) = f.tcp.take() {
                        f.stopped = Some((t, pair.receiver.received));
                    }
                }
                Event::Sent { node, to } => {
                    if !self.down[node as usize] {
                        self.nodes[node as usize].on_sent(self.ids.id(to));
                        self.drain(node);
                    }
                }
                Event::TxFailed { node, to } => {
                    if !self.down[node as usize] {
                        let to = self.ids.id(to);
                        self.nodes[node as usize].tx_failed(t, to, &mut self.rng);
                        self.drain(node);
                    }
                }
                Event::Access => self.access_tick(),
                Event::Stranger(k) => self.on_stranger(t, k),
                Event::PathCut(cut, flow) => self.on_path_cut(t, cut, flow),
                Event::Carrier { a, b, up } => self.on_carrier(t, a, b, up),
                Event::FlowTick(fi) if self.flows[fi as usize].tcp_bytes.is_some() => {
                    self.on_tcp_start(t, fi)
                }
                Event::FlowTick(fi) => self.on_flow_tick(t, fi),
                Event::Done(i) => {
                    if !self.down[i as usize] {
                        self.drain(i);
                    }
                }
            }
        }
        self.now = until;
    }

    /// A node fails, or restarts with empty state.
    fn on_power(&mut self, t: Instant, node: u32, up: bool) {
        let i = node as usize;
        self.down[i] = !up;
        if up {
            let mut config = self.configs[i].clone();
            config.seed ^= t.as_micros();
            if let Ok(n) = Node::with_lsa_store(
                self.ids.id(node),
                config,
                t,
                &mut self.rng,
                self.lsa_store.clone(),
            ) {
                self.nodes[i] = n;
            }
            self.timer_at[i] = Instant(u64::MAX);
            self.processing.restarted(node);
            if let Some(w) = &mut self.flooding {
                w.restarted(node);
            }
            self.schedule_timer(node);
        }
    }

    fn on_timer(&mut self, t: Instant, i: u32) {
        if self.timer_at[i as usize] != t || self.down[i as usize] {
            return; // superseded, or the node is down
        }
        if let Some(until) = self.processing.busy(i, t) {
            // Busy: the timer waits until the router is free.
            self.timer_at[i as usize] = until;
            self.queue.push(until, Event::Timer(i));
            return;
        }
        self.timer_at[i as usize] = Instant(u64::MAX);
        self.nodes[i as usize].handle_timeout(t, &mut self.rng);
        self.handled(t, i);
    }

    /// Router `i` handled a datagram or a timer at `t`: what it sends goes
    /// out now, or when the work it did is done (`processing.rs`).
    fn handled(&mut self, t: Instant, i: u32) {
        if let Some(w) = &mut self.flooding {
            w.after(i, &self.nodes[i as usize], t);
        }
        match self.processing.charge(i, &self.nodes[i as usize], t) {
            Some(done) => self.queue.push(done, Event::Done(i)),
            None => self.drain(i),
        }
    }

    /// A frame reaches `to`: a client's packet, a packet for a client, or
    /// a datagram for braid (which the strangers near `to` overhear).
    fn on_arrive(&mut self, t: Instant, from: u32, to: u32, bytes: &Rc<[u8]>) {
        self.packet_hops += 1;
        if self.down[to as usize] {
            return;
        }
        if self.unmodified[to as usize] {
            // An access point's delivery reaches the client.
            self.host_receive(to, bytes);
            return;
        }
        if self.unmodified[from as usize] {
            // A client's packet enters the mesh here.
            self.nodes[to as usize].send(t, bytes);
            self.drain(to);
            return;
        }
        if let Some(until) = self.processing.busy(to, t) {
            // Busy: the datagram waits its turn.
            let bytes = bytes.clone();
            self.queue.push(until, Event::Arrive { from, to, bytes });
            return;
        }
        for &k in &self.overheard_by[to as usize] {
            self.strangers[k as usize].forger.hear(bytes);
        }
        // Every simulated link is an interface of its own, numbered by the
        // node at its other end.
        let via = Interface(from as u16);
        let sender = self.ids.id(from);
        self.nodes[to as usize].handle_datagram(t, via, Some(sender), bytes);
        self.handled(t, to);
    }

    fn on_tcp_timer(&mut self, t: Instant, flow: u32, receiver: bool) {
        let due = self.flows[flow as usize].tcp.as_ref().and_then(|p| {
            if receiver {
                p.receiver_at
            } else {
                p.sender_at
            }
        });
        if due != Some(t) {
            return; // superseded
        }
        if let Some(p) = self.flows[flow as usize].tcp.as_mut() {
            if receiver {
                p.receiver_at = None;
            } else {
                p.sender_at = None;
            }
        }
        self.tcp_poll(flow, receiver);
        let node = if receiver {
            self.flows[flow as usize].to
        } else {
            self.flows[flow as usize].from
        };
        self.drain(node);
    }

    /// Stranger `k` sends each node in its range a datagram, and comes back
    /// `every` later until its time is over.
    fn on_stranger(&mut self, t: Instant, k: u32) {
        let st = &mut self.strangers[k as usize];
        if t > Instant::ZERO + st.until {
            return;
        }
        let next = t + st.every;
        for j in 0..st.near.len() {
            let st = &mut self.strangers[k as usize];
            let to = st.near[j];
            let (_, bytes) = st.forger.datagram(self.ids.id(to));
            if self.down[to as usize] || self.unmodified[to as usize] {
                continue;
            }
            // Its own interface, and no neighbor sends from its address.
            let via = Interface(u16::MAX - k as u16);
            self.nodes[to as usize].handle_datagram(t, via, None, &bytes);
            self.drain(to);
        }
        self.queue.push(next, Event::Stranger(k));
    }

    /// Both ends of the link between `a` and `b` see its carrier go or
    /// come back.
    fn on_carrier(&mut self, t: Instant, a: u32, b: u32, up: bool) {
        for (x, y) in [(a, b), (b, a)] {
            if self.down[x as usize] || self.unmodified[x as usize] {
                continue;
            }
            if up {
                self.nodes[x as usize].link_up(self.ids.id(y));
            } else {
                let y = self.ids.id(y);
                self.nodes[x as usize].link_down(t, y, &mut self.rng);
            }
            self.drain(x);
        }
    }

    /// A TCP flow starts: both ends are made and run.
    fn on_tcp_start(&mut self, t: Instant, fi: u32) {
        let f = &mut self.flows[fi as usize];
        let Some(bytes) = f.tcp_bytes else {
            return;
        };
        f.started = t;
        f.tcp = Some(Box::new(TcpPair {
            sender: crate::tcp::TcpHost::sender(
                host_addr(f.from),
                host_addr(f.to),
                f.port,
                bytes,
                t,
            ),
            receiver: crate::tcp::TcpHost::receiver(host_addr(f.to), f.port, t),
            sender_at: None,
            receiver_at: None,
        }));
        let (from, to) = (f.from, f.to);
        if let Some(d) = f.duration {
            self.queue.push(t + d, Event::FlowStop(fi));
        }
        self.tcp_poll(fi, true);
        self.tcp_poll(fi, false);
        self.drain(from);
        self.drain(to);
    }

    /// A constant-rate flow sends its next packet.
    fn on_flow_tick(&mut self, t: Instant, fi: u32) {
        let f = &self.flows[fi as usize];
        if f.sent < f.count {
            let p = f.packet(f.sent, self.now);
            let (from, interval) = (f.from, f.interval);
            self.flows[fi as usize].sent += 1;
            if !self.down[from as usize] {
                self.host_send(from, &p);
                self.drain(from);
            }
            self.queue.push(t + interval, Event::FlowTick(fi));
        }
    }

    /// Captures every datagram that crosses the link between the nodes
    /// named `a` and `b` from now on (see [`crate::pcap`]).
    pub fn capture(&mut self, a: &str, b: &str) -> Result<(), String> {
        let find = |n: &str| {
            self.names
                .iter()
                .position(|x| x == n)
                .map(|i| i as u32)
                .ok_or_else(|| format!("no node \"{n}\""))
        };
        let (ia, ib) = (find(a)?, find(b)?);
        if !self.medium.links.contains_key(&(ia, ib)) {
            return Err(format!("{a} and {b} are not linked"));
        }
        self.capture = Some(crate::pcap::Capture::new(ia, ib));
        Ok(())
    }

    /// The capture so far, if one was asked for.
    pub fn pcap(&self) -> Option<&crate::pcap::Capture> {
        self.capture.as_ref()
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The results so far.
    pub fn result(&self, scenario: &Scenario, seed: u64) -> RunResult {
        let link_bytes: u64 = self.medium.links.values().map(|l| l.stats.bytes).sum();
        let flows = self
            .flows
            .iter()
            .zip(&scenario.flows)
            .enumerate()
            .map(|(i, (f, spec))| {
                let mode = spec.mode.unwrap_or(scenario.mode).to_string();
                let overhead = || {
                    self.nodes[f.from as usize]
                        .ingress()
                        .session(self.ids.id(f.to), flow_class(i))
                        .map_or(0.0, |s| {
                            let c = s.counters();
                            (c.copies + c.repair_packets) as f64 / c.data_packets.max(1) as f64
                        })
                };
                f.result(spec, mode, self.now, overhead)
            })
            .collect();
        let mut links = BTreeMap::new();
        for (&(a, b), l) in self.medium.links.iter() {
            links.insert(
                format!("{}->{}", self.names[a as usize], self.names[b as usize]),
                l.stats,
            );
        }
        RunResult {
            seed,
            flows,
            events: self.queue.processed(),
            packet_hops: self.packet_hops,
            node_events: self
                .node_events
                .iter()
                .map(|(k, n)| (k.to_string(), *n))
                .collect(),
            link_bytes,
            links,
            injected: self.strangers.iter().map(|s| s.forger.sent).sum(),
            flooding: self.flooding.as_ref().map(FloodWatch::stats),
            routers: self.router_stats(),
            cuts: self.path_cuts.results(&self.flows, &self.names),
        }
    }
}

/// Runs one seed of a scenario to its end.
pub fn run_once(
    scenario: &Scenario,
    seed: u64,
    progress: impl FnMut(Instant),
) -> Result<RunResult, ScenarioError> {
    let mut w = World::new(scenario, seed)?;
    w.run_until(Instant::ZERO + scenario.duration, progress);
    Ok(w.result(scenario, seed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::TopologySpec;

    #[test]
    fn city_mesh_links_lose_more_the_longer_they_are() {
        let spec = TopologySpec::CityMesh {
            nodes: 40,
            degree: 6.0,
            max_loss: 0.5,
        };
        let (names, edges, length) = spec.generate(&mut ChaCha8Rng::seed_from_u64(2));
        assert_eq!(names.len(), 40);
        assert_eq!(edges.len(), length.len());
        let d: Vec<f64> = length.iter().map(|l| l.unwrap()).collect();
        assert!(d.iter().all(|&x| (0.0..=1.0).contains(&x)));
        let spread = d.iter().cloned().fold(0.0, f64::max) - d.iter().cloned().fold(1.0, f64::min);
        assert!(spread > 0.5, "mixed link lengths, spread {spread}");
        // Without radios, loss grows as max_loss × d²; with radios, each
        // direction has a loss per rate, higher for longer links.
        let text = "[topology]\nkind = \"citymesh\"\nnodes = 30\n";
        let plain = Scenario::parse("c.toml", text).unwrap();
        let w = World::new(&plain, 2).unwrap();
        let losses: Vec<f64> = w
            .medium
            .links
            .values()
            .map(|l| l.spec.loss.mean_loss())
            .collect();
        assert!(losses.iter().all(|&l| (0.0..=0.5).contains(&l)));
        assert!(losses.iter().any(|&l| l > 0.2) && losses.iter().any(|&l| l < 0.05));
        let radio = Scenario::parse("c.toml", &format!("{text}[radio]\n")).unwrap();
        let w = World::new(&radio, 2).unwrap();
        assert!(w.medium.links.values().all(|l| l.spec.rate_loss.len() == 4));
        let top: Vec<f64> = w
            .medium
            .links
            .values()
            .map(|l| l.spec.rate_loss[3])
            .collect();
        assert!(
            top.iter().any(|&l| l > 0.9) && top.iter().any(|&l| l < 0.1),
            "{top:?}"
        );
    }
}
