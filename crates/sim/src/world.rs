//! One simulation run: real `braid_proto::node::Node`s, joined by modelled
//! links, with hosts sending constant-bit-rate UDP. Everything happens in
//! simulated time from one seeded RNG, so a run is a function of its
//! scenario and seed.
//!
//! Every node serves one host address: node index i has 198.18.(i/256).(i%256)
//! as a /32 (from the benchmarking range). Flow i sends to UDP port 10000+i,
//! which the nodes classify as class i+1, so each flow can have its own
//! redundancy mode.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use braid_proto::classify::{ClassRule, Classifier, Match, PortRange};
use braid_proto::generate::random_geometric;
use braid_proto::linkest::MetricKind;
use braid_proto::lsdb::LsaStore;
use braid_proto::node::{Dest, Interface, LateBinding, Node, NodeConfig};
use braid_proto::paths::{DampingConfig, Margin};
use braid_proto::redundancy::Policy;
use braid_proto::time::Instant;
use braid_wire::{NodeId, Prefix};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::event::EventQueue;
use crate::link::{Fate, LinkDir, Outcome};
use crate::radio::{FirmwareRate, Radio, RadioSpec, RateControl};
use crate::results::{delay_stats, FlowResult, Outage, RunResult, MAX_OUTAGES};
use crate::scenario::{Scenario, ScenarioError, TopologySpec};
use crate::stranger::Stranger;

const FLOW_PORT_BASE: u16 = 10_000;
const PAYLOAD_OFFSET: usize = 28;

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
        bytes: std::rc::Rc<[u8]>,
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
}

/// How often an access point's driver reports its clients' quality (the
/// daemon probes every 100 ms too).
const ACCESS_TICK: Duration = Duration::from_millis(100);

struct Flow {
    from: u32,
    to: u32,
    port: u16,
    size: usize,
    interval: Duration,
    count: u64,
    sent: u64,
    delivered: Vec<bool>,
    duplicates: u64,
    delays_us: Vec<u64>,
    last_arrival: Option<Instant>,
    max_gap_us: u64,
    outages: Vec<Outage>,
    /// For TCP flows: the two ends, once started, and their next timers.
    tcp: Option<Box<TcpPair>>,
    tcp_bytes: Option<u64>,
    started: Instant,
    /// TCP: the flow stops this long after it starts.
    duration: Option<Duration>,
    /// TCP: when it stopped, and the bytes received in order by then.
    stopped: Option<(Instant, u64)>,
    /// TCP: segments the sender sent again (seen on the wire).
    retransmits: u64,
    /// TCP: the highest sequence number sent so far (end of segment).
    sent_up_to: Option<u32>,
}

struct TcpPair {
    sender: crate::tcp::TcpHost,
    receiver: crate::tcp::TcpHost,
    sender_at: Option<Instant>,
    receiver_at: Option<Instant>,
}

/// A network in simulation.
pub struct World {
    names: Vec<String>,
    nodes: Vec<Node>,
    configs: Vec<NodeConfig>,
    down: Vec<bool>,
    links: HashMap<(u32, u32), LinkDir>,
    neighbors: Vec<Vec<u32>>,
    queue: EventQueue<Event>,
    timer_at: Vec<Instant>,
    flows: Vec<Flow>,
    rng: ChaCha8Rng,
    now: Instant,
    packet_hops: u64,
    node_events: BTreeMap<&'static str, u64>,
    capture: Option<crate::pcap::Capture>,
    radio: Option<RadioSpec>,
    radios: Vec<Radio>,
    /// How radios pick unicast rates, and the firmware's state per
    /// (sender, neighbor) when the firmware picks.
    rate_control: RateControl,
    firmware: HashMap<(u32, u32), FirmwareRate>,
    /// Times a failed frame is handed to the radio.
    persistence: u32,
    /// Every node's link-state records, interned: an advertisement all
    /// nodes hold is stored once (what makes 10,000 nodes fit in memory).
    lsa_store: LsaStore,
    /// Nodes that run no braid: unmodified clients. Their links lead to
    /// access points, which carry raw IP packets over them.
    unmodified: Vec<bool>,
    /// Hostile strangers (`[[strangers]]`), and per node the strangers in
    /// whose range it is (they hear what it receives).
    strangers: Vec<Stranger>,
    overheard_by: Vec<Vec<u32>>,
}

/// The traffic class of flow `i` (flows beyond 254 share the last class).
fn flow_class(i: usize) -> u8 {
    (i + 1).min(254) as u8
}

/// The key of a simulated network with `[node] auth = true`.
fn sim_key() -> braid_proto::auth::AuthConfig {
    let key = braid_proto::auth::AuthKey::new(1, b"the simulated network's key, 32B")
        .expect("a 32-byte secret");
    braid_proto::auth::AuthConfig { keys: vec![key] }
}

/// The host address node `i` serves.
pub fn host_addr(i: u32) -> [u8; 4] {
    [198, 18 + (i >> 16) as u8, (i >> 8) as u8, i as u8]
}

/// Node names, links, and for the city mesh each link's length (1 = the
/// edge of radio range).
type Generated = (Vec<String>, Vec<(u32, u32)>, Vec<Option<f64>>);

fn topology(spec: &TopologySpec, rng: &mut ChaCha8Rng) -> Generated {
    let (names, edges) = match *spec {
        TopologySpec::CityMesh { nodes, degree, .. } => {
            let mesh = random_geometric(nodes, degree, rng);
            let mut edges = Vec::new();
            let mut loss = Vec::new();
            let g = &mesh.graph;
            for a in 0..g.arc_count() as u32 {
                let arc = g.arc(a);
                if arc.from < arc.to {
                    let (p, q) = (
                        mesh.positions[arc.from as usize],
                        mesh.positions[arc.to as usize],
                    );
                    let d = ((p.0 - q.0).powi(2) + (p.1 - q.1).powi(2)).sqrt() / mesh.radius;
                    edges.push((arc.from, arc.to));
                    loss.push(Some(d));
                }
            }
            return ((1..=nodes).map(|i| format!("n{i}")).collect(), edges, loss);
        }
        TopologySpec::Wisp {
            nodes,
            edges,
            cross,
        } => {
            let names = spec.node_names();
            let relays = nodes - 1 - edges;
            let pick = |rng: &mut ChaCha8Rng, n: usize| (rng.next_u64() % n as u64) as u32;
            let mut links: Vec<(u32, u32)> = Vec::new();
            // Relay i (index i) attaches to the gateway or an earlier relay.
            for i in 1..=relays as u32 {
                links.push((pick(rng, i as usize), i));
            }
            // Edge sites hang off a relay (or the gateway when there are none).
            for e in 0..edges as u32 {
                let at = if relays == 0 {
                    0
                } else {
                    1 + pick(rng, relays)
                };
                links.push((at, 1 + relays as u32 + e));
            }
            // Cross links between relays (or the gateway) not yet linked.
            let mut added = 0;
            for _ in 0..cross * 20 {
                if added == cross || relays < 2 {
                    break;
                }
                let (a, b) = (pick(rng, relays + 1), pick(rng, relays + 1));
                let (a, b) = (a.min(b), a.max(b));
                if a != b && !links.contains(&(a, b)) && !links.contains(&(b, a)) {
                    links.push((a, b));
                    added += 1;
                }
            }
            (names, links)
        }
        _ => topology_plain(spec, rng),
    };
    let n = edges.len();
    (names, edges, vec![None; n])
}

fn topology_plain(spec: &TopologySpec, rng: &mut ChaCha8Rng) -> (Vec<String>, Vec<(u32, u32)>) {
    match *spec {
        TopologySpec::Line { nodes } => (
            (1..=nodes).map(|i| format!("n{i}")).collect(),
            (1..nodes as u32).map(|i| (i - 1, i)).collect(),
        ),
        TopologySpec::Grid { width, height } => {
            let names = (0..width * height).map(|i| format!("n{}", i + 1)).collect();
            let mut edges = Vec::new();
            for y in 0..height {
                for x in 0..width {
                    let i = (y * width + x) as u32;
                    if x + 1 < width {
                        edges.push((i, i + 1));
                    }
                    if y + 1 < height {
                        edges.push((i, i + width as u32));
                    }
                }
            }
            (names, edges)
        }
        TopologySpec::Parallel { paths, hops } => {
            let mut names = vec!["s".to_string(), "t".to_string()];
            let mut edges = Vec::new();
            for p in 0..paths {
                let mut prev = 0u32;
                for h in 0..hops.saturating_sub(1) {
                    names.push(format!("p{p}h{h}"));
                    let me = names.len() as u32 - 1;
                    edges.push((prev, me));
                    prev = me;
                }
                edges.push((prev, 1));
            }
            (names, edges)
        }
        TopologySpec::NetJson {
            ref names,
            ref edges,
        } => (names.clone(), edges.clone()),
        TopologySpec::CityMesh { .. } | TopologySpec::Wisp { .. } => {
            unreachable!("generated by `topology`")
        }
        TopologySpec::Geometric { nodes, degree } => {
            let mesh = random_geometric(nodes, degree, rng);
            let g = &mesh.graph;
            let mut edges: Vec<(u32, u32)> = (0..g.arc_count() as u32)
                .map(|a| g.arc(a))
                .filter(|a| a.from < a.to)
                .map(|a| (a.from, a.to))
                .collect();
            edges.sort_unstable();
            edges.dedup();
            ((1..=nodes).map(|i| format!("n{i}")).collect(), edges)
        }
    }
}

impl World {
    /// Builds the network of `scenario` for the run with `seed`.
    pub fn new(scenario: &Scenario, seed: u64) -> Result<World, ScenarioError> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (names, edges, edge_length) = topology(&scenario.topology, &mut rng);
        let index: HashMap<&str, u32> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i as u32))
            .collect();
        let unknown = |field: String, name: &str| ScenarioError {
            file: scenario.name.clone(),
            line: 0,
            field,
            message: format!(
                "no node \"{name}\" in this topology (nodes: {})",
                names.iter().take(8).cloned().collect::<Vec<_>>().join(", ")
            ),
        };
        let mut links = HashMap::new();
        let mut neighbors = vec![Vec::new(); names.len()];
        for (&(a, b), length) in edges.iter().zip(&edge_length) {
            for (x, y) in [(a, b), (b, a)] {
                let mut spec = scenario.link.clone();
                match (length, &scenario.radio, &scenario.topology) {
                    (Some(d), Some(radio), _) => spec.rate_loss = radio.citymesh_loss(*d, &mut rng),
                    (Some(d), None, TopologySpec::CityMesh { max_loss, .. }) => {
                        spec.loss = crate::link::LossModel::Bernoulli(max_loss * d * d)
                    }
                    _ => {}
                }
                links.insert((x, y), LinkDir::new(spec));
                neighbors[x as usize].push(y);
            }
        }
        for (i, o) in scenario.links.iter().enumerate() {
            let a = *index
                .get(o.a.as_str())
                .ok_or_else(|| unknown(format!("links[{i}].between"), &o.a))?;
            let b = *index
                .get(o.b.as_str())
                .ok_or_else(|| unknown(format!("links[{i}].between"), &o.b))?;
            for key in [(a, b), (b, a)] {
                match links.get_mut(&key) {
                    Some(l) => *l = LinkDir::new(o.spec.clone()),
                    None => {
                        return Err(ScenarioError {
                            file: scenario.name.clone(),
                            line: 0,
                            field: format!("links[{i}].between"),
                            message: format!("{} and {} are not linked in this topology", o.a, o.b),
                        })
                    }
                }
            }
        }
        // Each flow has its own class (by destination port) and mode.
        let mut classifier = Classifier::default();
        let mut policy = Policy {
            default: scenario.mode,
            ..Policy::default()
        };
        let mut flows = Vec::new();
        for (i, f) in scenario.flows.iter().enumerate() {
            let from = *index
                .get(f.from.as_str())
                .ok_or_else(|| unknown(format!("flows[{i}].from"), &f.from))?;
            let to = *index
                .get(f.to.as_str())
                .ok_or_else(|| unknown(format!("flows[{i}].to"), &f.to))?;
            let port = FLOW_PORT_BASE + i as u16;
            let class = flow_class(i);
            classifier.rules.push(ClassRule {
                name: f.name.clone(),
                id: class,
                matches: Match {
                    dst_ports: vec![PortRange(port, port)],
                    ..Match::default()
                },
                urgent: None,
            });
            if let Some(m) = f.mode {
                policy.classes.insert(class, m);
            }
            flows.push(Flow {
                from,
                to,
                port,
                size: f.size,
                interval: f.interval,
                count: f.count,
                sent: 0,
                delivered: vec![false; f.count as usize],
                duplicates: 0,
                delays_us: Vec::new(),
                last_arrival: None,
                max_gap_us: 0,
                outages: Vec::new(),
                tcp: None,
                tcp_bytes: f.tcp_bytes,
                started: Instant::ZERO + f.start,
                duration: f.duration,
                stopped: None,
                retransmits: 0,
                sent_up_to: None,
            });
        }
        let mut unmodified = vec![false; names.len()];
        for (k, c) in scenario.clients.iter().enumerate() {
            let i = *index
                .get(c.as_str())
                .ok_or_else(|| unknown(format!("clients[{k}]"), c))?;
            unmodified[i as usize] = true;
        }
        let mut nodes = Vec::with_capacity(names.len());
        let lsa_store = LsaStore::new();
        let mut configs = Vec::with_capacity(names.len());
        for i in 0..names.len() as u32 {
            // Only a flow's ingress classifies its packets (the rules match
            // its destination port, which reverse traffic does not carry):
            // each node gets the rules and modes of the flows it sends, not
            // every node every flow's (100 flows x 10,000 nodes of copies).
            let own: Vec<usize> = (0..flows.len()).filter(|&k| flows[k].from == i).collect();
            let mut node_policy = policy.clone();
            node_policy
                .classes
                .retain(|c, _| own.iter().any(|&k| flow_class(k) == *c));
            let node_classifier = Classifier {
                rules: own.iter().map(|&k| classifier.rules[k].clone()).collect(),
            };
            let mut config = NodeConfig {
                policy: node_policy,
                classifier: node_classifier,
                max_paths: scenario.paths,
                seed: seed ^ ((i as u64) << 20),
                ignore_tx_failures: scenario.ignore_tx_failures,
                late_binding: scenario.bound.map(|bound| LateBinding {
                    bound,
                    ..LateBinding::default()
                }),
                ..NodeConfig::default()
            };
            config.control.metric = scenario.metric;
            if scenario.auth {
                config.control.auth = sim_key();
            }
            if !scenario.damping {
                config.damping = DampingConfig {
                    margin: Margin::Absolute(0),
                    hold: Duration::ZERO,
                };
            } else if scenario.metric == MetricKind::Ett {
                // One expected transmission is ETX's margin; for air time
                // the same idea is relative.
                config.damping.margin = Margin::Percent(10);
            }
            if let Some(radio) = &scenario.radio {
                // Big probes at every rate, so that ETT sees each one.
                config.control.probes.big_rates = radio
                    .rates_bps
                    .iter()
                    .map(|&r| (r / 100_000).clamp(1, u16::MAX as u64 - 1) as u16)
                    .collect();
            }
            config.ingress.flush_after = scenario.flush;
            if scenario.reorder {
                config.egress.reorder =
                    Some(braid_proto::redundancy::reorder::ReorderConfig::default());
            }
            // An unmodified client advertises nothing (it runs no braid);
            // its access points advertise it.
            config.control.prefixes = if unmodified[i as usize] {
                Vec::new()
            } else {
                vec![Prefix::V4 {
                    addr: host_addr(i),
                    len: 32,
                }]
            };
            configs.push(config.clone());
            let node = Node::with_lsa_store(
                NodeId(i as u16),
                config,
                Instant::ZERO,
                &mut rng,
                lsa_store.clone(),
            )
            .map_err(|e| ScenarioError {
                file: scenario.name.clone(),
                line: 0,
                field: "node".into(),
                message: e.to_string(),
            })?;
            nodes.push(node);
        }
        let mut failures = Vec::new();
        for nf in &scenario.node_failures {
            let node = *index
                .get(nf.name.as_str())
                .ok_or_else(|| unknown("nodes".into(), &nf.name))?;
            failures.push((node, nf.from, nf.until));
        }
        let mut strangers = Vec::new();
        let mut overheard_by = vec![Vec::new(); names.len()];
        for (k, st) in scenario.strangers.iter().enumerate() {
            let mut near = Vec::new();
            for n in &st.near {
                let i = *index
                    .get(n.as_str())
                    .ok_or_else(|| unknown(format!("strangers[{k}].near"), n))?;
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
            let (a, b) = (index[o.a.as_str()], index[o.b.as_str()]);
            for &(from, until) in &o.spec.down {
                carrier.push((from, Event::Carrier { a, b, up: false }));
                carrier.push((until, Event::Carrier { a, b, up: true }));
            }
        }
        let mut world = World {
            radios: vec![Radio::default(); names.len()],
            lsa_store,
            radio: scenario.radio.clone(),
            rate_control: scenario.rate_control,
            firmware: HashMap::new(),
            persistence: scenario.persistence.max(1),
            timer_at: vec![Instant(u64::MAX); names.len()],
            down: vec![false; names.len()],
            names,
            nodes,
            configs,
            links,
            neighbors,
            queue: EventQueue::default(),
            flows,
            rng,
            now: Instant::ZERO,
            packet_hops: 0,
            node_events: BTreeMap::new(),
            capture: None,
            unmodified,
            strangers,
            overheard_by,
        };
        if world.unmodified.iter().any(|&u| u) {
            world.queue.push(Instant::ZERO, Event::Access);
        }
        for i in 0..world.nodes.len() as u32 {
            world.schedule_timer(i);
        }
        for (i, f) in scenario.flows.iter().enumerate() {
            world
                .queue
                .push(Instant::ZERO + f.start, Event::FlowTick(i as u32));
        }
        for (at, e) in carrier {
            world.queue.push(at, e);
        }
        for (k, st) in scenario.strangers.iter().enumerate() {
            world
                .queue
                .push(Instant::ZERO + st.from, Event::Stranger(k as u32));
        }
        for (node, from, until) in failures {
            world
                .queue
                .push(Instant::ZERO + from, Event::NodePower { node, up: false });
            world
                .queue
                .push(Instant::ZERO + until, Event::NodePower { node, up: true });
        }
        Ok(world)
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
            let bytes: std::rc::Rc<[u8]> = t.bytes.into();
            match t.dest {
                Dest::AllNeighbors => self.broadcast(i, &bytes, t.rate),
                Dest::Neighbor(n) => self.unicast(i, n.0 as u32, &bytes, t.rate),
            }
        }
    }

    /// Schedules the arrival of a frame that crossed the link `from`→`to`.
    fn arrive(&mut self, from: u32, to: u32, fate: Fate, bytes: &std::rc::Rc<[u8]>) {
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

    fn broadcast(&mut self, i: u32, bytes: &std::rc::Rc<[u8]>, rate: Option<u16>) {
        // Borrowed out and put back: no copy of the neighbor list per frame.
        let targets = std::mem::take(&mut self.neighbors[i as usize]);
        self.broadcast_to(i, &targets, bytes, rate);
        self.neighbors[i as usize] = targets;
    }

    /// The unmodified client a packet node `i` delivered is for, when `i`
    /// is one of its access points (has a link to it).
    fn client_behind(&self, i: u32, p: &[u8]) -> Option<u32> {
        if p.len() < 20 || p[0] >> 4 != 4 {
            return None;
        }
        self.neighbors[i as usize]
            .iter()
            .copied()
            .find(|&c| self.unmodified[c as usize] && p[16..20] == host_addr(c))
    }

    /// A raw IP packet over the access link `from` -> `to` (an access point
    /// to its client, or a client to an access point).
    fn access_send(&mut self, from: u32, to: u32, bytes: std::rc::Rc<[u8]>) {
        let now = self.now;
        if let Some(link) = self.links.get_mut(&(from, to)) {
            let out = link.transmit(now, bytes.len(), true, &mut self.rng);
            self.arrive(from, to, out.fate, &bytes);
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
        let best = self.neighbors[i as usize]
            .iter()
            .filter_map(|&ap| {
                let l = self.links.get(&(i, ap))?;
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
            for ap in self.neighbors[c as usize].clone() {
                if self.down[ap as usize] || self.unmodified[ap as usize] {
                    continue;
                }
                let quality = self.links.get(&(ap, c)).map_or(0, |l| {
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

    fn broadcast_to(
        &mut self,
        i: u32,
        targets: &[u32],
        bytes: &std::rc::Rc<[u8]>,
        rate: Option<u16>,
    ) {
        let now = self.now;
        let Some(radio) = &self.radio else {
            for &to in targets {
                if self.unmodified[to as usize] {
                    continue; // hears no braid control message
                }
                if let Some(link) = self.links.get_mut(&(i, to)) {
                    let fate = link.send(now, bytes.len(), &mut self.rng);
                    self.arrive(i, to, fate, bytes);
                }
            }
            return;
        };
        // One transmission on the air, heard (or not) by every neighbor.
        let k = rate.map_or(0, |r| radio.index_of(r));
        let air = radio.airtime(bytes.len(), radio.rates_bps[k], 1, false);
        let Some(end) = self.radios[i as usize].reserve(now, air, radio.queue) else {
            for &to in targets {
                if let Some(link) = self.links.get_mut(&(i, to)) {
                    link.stats.offered += 1;
                    link.stats.queue_drops += 1;
                }
            }
            return;
        };
        for &to in targets {
            self.radios[to as usize].defer_until(end);
        }
        for &to in targets {
            let Some(link) = self
                .links
                .get_mut(&(i, to))
                .filter(|_| !self.unmodified[to as usize])
            else {
                continue;
            };
            let loss = link.spec.rate_loss.get(k).copied().unwrap_or(0.0);
            let (_, ok) = link.attempts(now, loss, false, &mut self.rng);
            let fate = link.settle(now, end, bytes.len(), ok, &mut self.rng);
            self.arrive(i, to, fate, bytes);
        }
    }

    fn unicast(&mut self, i: u32, to: u32, bytes: &std::rc::Rc<[u8]>, rate: Option<u16>) {
        let now = self.now;
        let out = match self.links.get_mut(&(i, to)) {
            None => Outcome {
                fate: Fate::Down,
                departure: now,
                failed: false,
            },
            Some(link) => match &self.radio {
                None => link.transmit(now, bytes.len(), true, &mut self.rng),
                Some(radio) => {
                    if link.is_down(now) {
                        let fate = link.settle(now, now, bytes.len(), false, &mut self.rng);
                        Outcome {
                            fate,
                            departure: now,
                            failed: false,
                        }
                    } else {
                        // Each hand-over to the radio is tried up to
                        // 1 + retries times at the rate the controller
                        // picks then; the next starts where it ended.
                        let rates = radio.rates_bps.len();
                        let mut air = Duration::ZERO;
                        let mut ok = false;
                        // The driver reports every hand-over that failed
                        // all its attempts (SrcRR: the route error of a
                        // node without IGNORE-FAIL follows the first).
                        let mut handover_failed = false;
                        for _ in 0..self.persistence {
                            let at = now + air;
                            let k = match (rate, self.rate_control) {
                                (Some(r), _) => radio.index_of(r),
                                (None, RateControl::Ideal) => radio.best_rate(&link.spec.rate_loss),
                                (None, RateControl::Probes) => self.nodes[i as usize]
                                    .control()
                                    .links()
                                    .best_rate(NodeId(to as u16))
                                    .map_or(0, |r| radio.index_of(r)),
                                (None, RateControl::Firmware) => {
                                    self.firmware.entry((i, to)).or_default().rate(at, rates)
                                }
                            };
                            let loss = link.spec.rate_loss.get(k).copied().unwrap_or(0.0);
                            let (tries, delivered) = link.attempts(at, loss, true, &mut self.rng);
                            air += radio.airtime(bytes.len(), radio.rates_bps[k], tries, true);
                            if delivered {
                                ok = true;
                                break;
                            }
                            handover_failed = true;
                            if rate.is_none() && self.rate_control == RateControl::Firmware {
                                self.firmware.entry((i, to)).or_default().failed(at, rates);
                            }
                        }
                        match self.radios[i as usize].reserve(now, air, radio.queue) {
                            None => {
                                link.stats.offered += 1;
                                link.stats.queue_drops += 1;
                                Outcome {
                                    fate: Fate::QueueFull,
                                    departure: now,
                                    failed: false,
                                }
                            }
                            Some(end) => {
                                let fate = link.settle(now, end, bytes.len(), ok, &mut self.rng);
                                for &n in &self.neighbors[i as usize] {
                                    self.radios[n as usize].defer_until(end);
                                }
                                Outcome {
                                    fate,
                                    departure: end,
                                    failed: handover_failed && fate != Fate::Down,
                                }
                            }
                        }
                    }
                }
            },
        };
        self.arrive(i, to, out.fate, bytes);
        if out.failed {
            self.queue
                .push(out.departure, Event::TxFailed { node: i, to });
        }
        if self.configs[i as usize].late_binding.is_some() {
            if out.departure <= now {
                self.nodes[i as usize].on_sent(NodeId(to as u16));
            } else {
                self.queue.push(out.departure, Event::Sent { node: i, to });
            }
        }
    }

    fn host_receive(&mut self, at: u32, p: &[u8]) {
        if p.len() >= 24 && p[9] == 6 {
            self.tcp_receive(at, p);
            return;
        }
        if p.len() < PAYLOAD_OFFSET + 16 {
            return;
        }
        let port = u16::from_be_bytes([p[22], p[23]]);
        let Some(fi) = port.checked_sub(FLOW_PORT_BASE) else {
            return;
        };
        let Some(f) = self.flows.get_mut(fi as usize) else {
            return;
        };
        if f.to != at {
            return;
        }
        let b = &p[PAYLOAD_OFFSET..];
        let seq = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let sent_us = u64::from_be_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]);
        match f.delivered.get_mut(seq) {
            Some(d) if *d => f.duplicates += 1,
            Some(d) => {
                *d = true;
                f.delays_us
                    .push(self.now.as_micros().saturating_sub(sent_us));
                if let Some(last) = f.last_arrival {
                    let gap = self.now.since(last);
                    f.max_gap_us = f.max_gap_us.max(gap.as_micros() as u64);
                    let outage = (f.interval * 5).max(Duration::from_millis(100));
                    if gap > outage && f.outages.len() < MAX_OUTAGES {
                        f.outages.push(Outage {
                            from_s: last.as_micros() as f64 / 1e6,
                            ms: gap.as_micros() as f64 / 1000.0,
                        });
                    }
                }
                f.last_arrival = Some(self.now);
            }
            None => {}
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
                self.count_retransmit(fi, pkt);
            }
        }
        for pkt in out {
            self.host_send(node, &pkt);
        }
        if !self.unmodified[node as usize] {
            self.drain_transmits(node);
        }
    }

    /// Counts a TCP segment that carries data sent before (a
    /// retransmission, as the kernel's TCPRetransSegs counts them).
    fn count_retransmit(&mut self, fi: u32, p: &[u8]) {
        let ihl = (p.first().map_or(0, |b| b & 0x0f) as usize) * 4;
        if p.len() < ihl + 20 {
            return;
        }
        let total = u16::from_be_bytes([p[2], p[3]]) as usize;
        let doff = (p[ihl + 12] >> 4) as usize * 4;
        let len = total.saturating_sub(ihl + doff) as u32;
        if len == 0 {
            return;
        }
        let seq = u32::from_be_bytes([p[ihl + 4], p[ihl + 5], p[ihl + 6], p[ihl + 7]]);
        let end = seq.wrapping_add(len);
        let f = &mut self.flows[fi as usize];
        match f.sent_up_to {
            Some(top) if (end.wrapping_sub(top) as i32) <= 0 => f.retransmits += 1,
            _ => f.sent_up_to = Some(end),
        }
    }

    fn packet(&self, f: &Flow, seq: u64) -> Vec<u8> {
        let len = f.size.max(PAYLOAD_OFFSET + 16);
        let mut p = vec![0u8; len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        p[8] = 64;
        p[9] = 17;
        p[12..16].copy_from_slice(&host_addr(f.from));
        p[16..20].copy_from_slice(&host_addr(f.to));
        p[20..22].copy_from_slice(&f.port.to_be_bytes());
        p[22..24].copy_from_slice(&f.port.to_be_bytes());
        p[24..26].copy_from_slice(&((len - 20) as u16).to_be_bytes());
        let b = &mut p[PAYLOAD_OFFSET..];
        b[0..4].copy_from_slice(&(seq as u32).to_be_bytes());
        b[8..16].copy_from_slice(&self.now.as_micros().to_be_bytes());
        p
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
                Event::NodePower { node, up } => {
                    let i = node as usize;
                    self.down[i] = !up;
                    if up {
                        // A restart: the node comes back with empty state.
                        let mut config = self.configs[i].clone();
                        config.seed ^= t.as_micros();
                        if let Ok(n) = Node::with_lsa_store(
                            NodeId(node as u16),
                            config,
                            t,
                            &mut self.rng,
                            self.lsa_store.clone(),
                        ) {
                            self.nodes[i] = n;
                        }
                        self.timer_at[i] = Instant(u64::MAX);
                        self.schedule_timer(node);
                    }
                }
                Event::Timer(i) => {
                    if self.timer_at[i as usize] != t || self.down[i as usize] {
                        continue; // superseded, or the node is down
                    }
                    self.timer_at[i as usize] = Instant(u64::MAX);
                    self.nodes[i as usize].handle_timeout(t, &mut self.rng);
                    self.drain(i);
                }
                Event::Arrive { from, to, bytes } => {
                    self.packet_hops += 1;
                    if self.down[to as usize] {
                        continue;
                    }
                    if self.unmodified[to as usize] {
                        // An access point's delivery reaches the client.
                        self.host_receive(to, &bytes);
                        continue;
                    }
                    if self.unmodified[from as usize] {
                        // A client's packet enters the mesh here.
                        self.nodes[to as usize].send(t, &bytes);
                        self.drain(to);
                        continue;
                    }
                    for &k in &self.overheard_by[to as usize] {
                        self.strangers[k as usize].forger.hear(&bytes);
                    }
                    // Every simulated link is an interface of its own,
                    // numbered by the node at its other end.
                    let via = Interface(from as u16);
                    let sender = NodeId(from as u16);
                    self.nodes[to as usize].handle_datagram(t, via, Some(sender), &bytes);
                    self.drain(to);
                }
                Event::TcpTimer { flow, receiver } => {
                    let due = self.flows[flow as usize].tcp.as_ref().and_then(|p| {
                        if receiver {
                            p.receiver_at
                        } else {
                            p.sender_at
                        }
                    });
                    if due != Some(t) {
                        continue; // superseded
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
                Event::FlowStop(fi) => {
                    let f = &mut self.flows[fi as usize];
                    if let Some(pair) = f.tcp.take() {
                        f.stopped = Some((t, pair.receiver.received));
                    }
                }
                Event::Sent { node, to } => {
                    if !self.down[node as usize] {
                        self.nodes[node as usize].on_sent(NodeId(to as u16));
                        self.drain(node);
                    }
                }
                Event::TxFailed { node, to } => {
                    if !self.down[node as usize] {
                        self.nodes[node as usize].tx_failed(t, NodeId(to as u16), &mut self.rng);
                        self.drain(node);
                    }
                }
                Event::Access => self.access_tick(),
                Event::Stranger(k) => {
                    let st = &mut self.strangers[k as usize];
                    if t > Instant::ZERO + st.until {
                        continue;
                    }
                    let next = t + st.every;
                    for j in 0..st.near.len() {
                        let st = &mut self.strangers[k as usize];
                        let to = st.near[j];
                        let (_, bytes) = st.forger.datagram(NodeId(to as u16));
                        if self.down[to as usize] || self.unmodified[to as usize] {
                            continue;
                        }
                        // Its own interface, and no neighbor sends from
                        // its address.
                        let via = Interface(u16::MAX - k as u16);
                        self.nodes[to as usize].handle_datagram(t, via, None, &bytes);
                        self.drain(to);
                    }
                    self.queue.push(next, Event::Stranger(k));
                }
                Event::Carrier { a, b, up } => {
                    for (x, y) in [(a, b), (b, a)] {
                        if self.down[x as usize] || self.unmodified[x as usize] {
                            continue;
                        }
                        if up {
                            self.nodes[x as usize].link_up(NodeId(y as u16));
                        } else {
                            self.nodes[x as usize].link_down(t, NodeId(y as u16), &mut self.rng);
                        }
                        self.drain(x);
                    }
                }
                Event::FlowTick(fi) if self.flows[fi as usize].tcp_bytes.is_some() => {
                    let f = &mut self.flows[fi as usize];
                    let bytes = f.tcp_bytes.expect("checked");
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
                Event::FlowTick(fi) => {
                    let f = &self.flows[fi as usize];
                    if f.sent < f.count {
                        let p = self.packet(f, f.sent);
                        let (from, interval) = (f.from, f.interval);
                        self.flows[fi as usize].sent += 1;
                        if !self.down[from as usize] {
                            self.host_send(from, &p);
                            self.drain(from);
                        }
                        self.queue.push(t + interval, Event::FlowTick(fi));
                    }
                }
            }
        }
        self.now = until;
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
        if !self.links.contains_key(&(ia, ib)) {
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
        let link_bytes: u64 = self.links.values().map(|l| l.stats.bytes).sum();
        let flows = self
            .flows
            .iter()
            .zip(&scenario.flows)
            .enumerate()
            .map(|(i, (f, spec))| {
                let tcp_state = match (&f.stopped, f.tcp.as_ref()) {
                    (Some((at, got)), _) => Some((*at, *got)),
                    (None, Some(pair)) => Some((self.now, pair.receiver.received)),
                    (None, None) => None,
                };
                if let (Some(bytes), Some((until, got))) = (f.tcp_bytes, tcp_state) {
                    let secs = until.since(f.started).as_secs_f64().max(1e-9);
                    return FlowResult {
                        name: spec.name.clone(),
                        mode: spec.mode.unwrap_or(scenario.mode).to_string(),
                        sent: if f.duration.is_some() { got } else { bytes },
                        delivered: got,
                        lost: if f.duration.is_some() {
                            0
                        } else {
                            bytes.saturating_sub(got)
                        },
                        loss_ratio: 0.0,
                        retransmits: f.retransmits,
                        goodput_mbps: got as f64 * 8.0 / secs / 1e6,
                        ..FlowResult::default()
                    };
                }
                let delivered = f.delivered.iter().filter(|&&d| d).count() as u64;
                let mut d = f.delays_us.clone();
                let (delay_mean_ms, delay_p50_ms, delay_p99_ms) = delay_stats(&mut d);
                let class = flow_class(i);
                let overhead = self.nodes[f.from as usize]
                    .ingress()
                    .session(NodeId(f.to as u16), class)
                    .map_or(0.0, |s| {
                        let c = s.counters();
                        (c.copies + c.repair_packets) as f64 / c.data_packets.max(1) as f64
                    });
                FlowResult {
                    name: spec.name.clone(),
                    mode: spec.mode.unwrap_or(scenario.mode).to_string(),
                    sent: f.sent,
                    delivered,
                    duplicates: f.duplicates,
                    lost: f.sent - delivered,
                    loss_ratio: if f.sent == 0 {
                        0.0
                    } else {
                        1.0 - delivered as f64 / f.sent as f64
                    },
                    delay_mean_ms,
                    delay_p50_ms,
                    delay_p99_ms,
                    overhead,
                    max_gap_ms: f.max_gap_us as f64 / 1000.0,
                    outages: f.outages.clone(),
                    retransmits: 0,
                    retransmits_after_event: None,
                    goodput_series_mbps: Vec::new(),
                    rtt_ms: None,
                    delay_cdf_ms: Vec::new(),
                    details: None,
                    lost_series: lost_per_second(
                        &f.delivered[..(f.sent as usize).min(f.delivered.len())],
                        f.interval,
                    ),
                    goodput_mbps: {
                        let secs = (f.interval * f.count.max(1) as u32).as_secs_f64().max(1e-9);
                        (delivered * f.size as u64) as f64 * 8.0 / secs / 1e6
                    },
                }
            })
            .collect();
        let mut links = BTreeMap::new();
        for (&(a, b), l) in &self.links {
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

/// Packets lost among those sent in each second of a constant-rate flow
/// (packet `i` leaves `i` intervals after the flow's start).
fn lost_per_second(delivered: &[bool], interval: Duration) -> Vec<u64> {
    let per_second = (1_000_000_000 / interval.as_nanos().max(1)).max(1) as usize;
    delivered
        .chunks(per_second)
        .map(|c| c.iter().filter(|&&d| !d).count() as u64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connected(n: usize, edges: &[(u32, u32)]) -> bool {
        let mut seen = vec![false; n];
        let mut stack = vec![0u32];
        seen[0] = true;
        while let Some(v) = stack.pop() {
            for &(a, b) in edges {
                for (x, y) in [(a, b), (b, a)] {
                    if x == v && !seen[y as usize] {
                        seen[y as usize] = true;
                        stack.push(y);
                    }
                }
            }
        }
        seen.iter().all(|&s| s)
    }

    #[test]
    fn wisp_is_a_connected_tree_plus_cross_links() {
        let spec = TopologySpec::Wisp {
            nodes: 64,
            edges: 41,
            cross: 8,
        };
        let (names, edges, loss) = topology(&spec, &mut ChaCha8Rng::seed_from_u64(1));
        assert_eq!(names.len(), 64);
        assert_eq!(
            (names[0].as_str(), names[1].as_str(), names[63].as_str()),
            ("gw", "r1", "e41")
        );
        assert_eq!(
            edges.len(),
            63 + 8,
            "a tree has n-1 links; plus the cross links"
        );
        assert!(connected(64, &edges));
        assert!(loss.iter().all(Option::is_none));
        // Edge sites are leaves.
        for e in 23..64u32 {
            assert_eq!(edges.iter().filter(|&&(a, b)| a == e || b == e).count(), 1);
        }
    }

    #[test]
    fn city_mesh_links_lose_more_the_longer_they_are() {
        let spec = TopologySpec::CityMesh {
            nodes: 40,
            degree: 6.0,
            max_loss: 0.5,
        };
        let (names, edges, length) = topology(&spec, &mut ChaCha8Rng::seed_from_u64(2));
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
        let losses: Vec<f64> = w.links.values().map(|l| l.spec.loss.mean_loss()).collect();
        assert!(losses.iter().all(|&l| (0.0..=0.5).contains(&l)));
        assert!(losses.iter().any(|&l| l > 0.2) && losses.iter().any(|&l| l < 0.05));
        let radio = Scenario::parse("c.toml", &format!("{text}[radio]\n")).unwrap();
        let w = World::new(&radio, 2).unwrap();
        assert!(w.links.values().all(|l| l.spec.rate_loss.len() == 4));
        let top: Vec<f64> = w.links.values().map(|l| l.spec.rate_loss[3]).collect();
        assert!(
            top.iter().any(|&l| l > 0.9) && top.iter().any(|&l| l < 0.1),
            "{top:?}"
        );
    }
}
