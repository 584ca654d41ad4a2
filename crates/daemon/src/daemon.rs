//! The daemon's loop: drives one protocol [`Node`] with real I/O. Packets
//! enter the mesh from the TUN device and leave it there; everything
//! between braid nodes crosses the per-interface UDP sockets; timers come
//! from `Node::poll_timeout`. Also here: the neighbor table (node id to
//! interface and address), the control socket, SIGHUP reload and SIGTERM.
//!
//! Where a packet goes: TUN read -> `Node::send` (the ingress decides its
//! paths) -> `Node::poll_transmit` -> UDP to the first hop. A datagram from
//! a neighbor -> `Node::handle_datagram` (forward, or deliver at the
//! egress) -> `Node::poll_deliver` -> TUN write.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use braid_proto::node::{Dest, Node, NodeConfig};
use braid_proto::time::Instant;
use braid_wire::NodeId;
use mio::net::{TcpListener, UnixListener, UnixStream};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use thiserror::Error;
use tracing::{debug, info, warn};

use crate::batch::{RecvBatch, SendBatch};
use crate::carrier::CarrierWatch;
use crate::clients::{Client, Service, Step, Stream};
use crate::config::{Config, ConfigLoadError};
use crate::ctl::{self, NeighborView, View};
use crate::underlay::{Port, UnderlayError};

const TUN: Token = Token(0);
const SIGNALS: Token = Token(1);
const CTL: Token = Token(2);
const METRICS: Token = Token(3);
const CARRIER: Token = Token(4);
const PORT_BASE: usize = 16;

/// Monitor clients at most; a slow one that would block is dropped.
const MAX_MONITORS: usize = 16;
/// Longest the loop waits for a control or metrics client to send its
/// request or take its reply: forwarding stops meanwhile, so a client must
/// send its one line at once (`braid ctl` does).
/// Tokens of local clients (`clients.rs`): this plus their slot.
const CLIENT_BASE: usize = 1 << 20;
/// Largest datagram read from the TUN or a socket.
const BUF: usize = 65_536;

/// Why the daemon could not start or had to stop.
#[derive(Debug, Error)]
pub enum DaemonError {
    #[error(transparent)]
    Config(#[from] ConfigLoadError),
    #[error("invalid node settings: {0}")]
    Node(#[from] braid_proto::control::ConfigError),
    #[error(transparent)]
    Underlay(#[from] UnderlayError),
    #[error("TUN device {name}: {source}")]
    Tun { name: String, source: io::Error },
    #[error("route {route} via {dev}: {message}")]
    Route {
        route: String,
        dev: String,
        message: String,
    },
    #[error("control socket {path}: {source}")]
    Socket { path: String, source: io::Error },
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: io::Error,
    },
}

fn io_err(what: &'static str) -> impl FnOnce(io::Error) -> DaemonError {
    move |source| DaemonError::Io { what, source }
}

/// Counts of what the I/O layer did (the node counts the protocol).
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct IoCounters {
    pub tun_rx: u64,
    pub tun_tx: u64,
    pub tun_tx_errors: u64,
    pub udp_rx: u64,
    /// Datagrams longer than the receive slot (TUN MTU + 512): dropped.
    pub udp_rx_truncated: u64,
    pub udp_tx: u64,
    pub udp_tx_errors: u64,
    /// Times an interface's kernel queue was full (late binding held
    /// the traffic in the node).
    pub udp_tx_blocked: u64,
    /// Datagrams dropped because too many waited for one interface.
    pub udp_tx_queue_full: u64,
    /// Local clients (ctl, metrics) refused: too many at once.
    pub clients_refused: u64,
    /// Unicast datagrams for a neighbor whose address is not known.
    pub unknown_neighbor: u64,
    /// Times an interface went down or lost its carrier (its neighbors
    /// went down with it).
    pub carrier_lost: u64,
    /// Link notifications from the kernel that did not decode.
    pub carrier_malformed: u64,
    pub reloads: u64,
    pub reloads_refused: u64,
    pub ctl_requests: u64,
    pub ctl_bad_requests: u64,
}

struct Neighbor {
    port: usize,
    addr: SocketAddr,
    last_heard: Instant,
}

/// A running daemon.
pub struct Daemon {
    config_path: PathBuf,
    config: Config,
    node: Node,
    rng: ChaCha8Rng,
    clock: std::time::Instant,
    started: Instant,
    tun: tun_rs::SyncDevice,
    ports: Vec<Port>,
    /// The kernel's link notifications (`None`: unavailable, then only
    /// failed sends and silence take neighbors down).
    carrier: Option<CarrierWatch>,
    /// Per port: the kernel said it is down or without carrier, and has
    /// not said otherwise since. Messages still queued from before do not
    /// bring its neighbors back meanwhile.
    carrier_down: Vec<bool>,
    /// Received datagrams, a batch at a time, and what waits to be sent
    /// on each port.
    recv: RecvBatch,
    outgoing: Vec<SendBatch>,
    heard_from: Vec<(NodeId, SocketAddr)>,
    neighbors: BTreeMap<NodeId, Neighbor>,
    ctl: UnixListener,
    metrics: Option<TcpListener>,
    monitors: Vec<UnixStream>,
    /// Control-socket and metrics clients being served, by slot.
    clients: Vec<Option<Client>>,
    signals: StdUnixStream,
    reload_wanted: Arc<AtomicBool>,
    stop_wanted: Arc<AtomicBool>,
    poll: Poll,
    counters: IoCounters,
    route_changes_seen: u64,
}

impl Daemon {
    /// Reads the config and sets everything up: TUN device with its address
    /// and routes, two sockets per interface (`underlay.rs`), the control
    /// socket.
    pub fn start(config_path: &Path) -> Result<Daemon, DaemonError> {
        let config = Config::load(config_path)?;
        let clock = std::time::Instant::now();
        let now = Instant::ZERO;
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut nc = config.node_config.clone();
        nc.seed = seed;
        let node = Node::new(config.node, nc, now, &mut rng)?;

        let tun = open_tun(&config)?;
        let ports = config
            .interfaces
            .iter()
            .map(|name| Port::open(name, config.port, config.group, config.send_buffer))
            .collect::<Result<Vec<_>, _>>()?;
        let carrier = CarrierWatch::open()
            .inspect_err(|e| warn!(error = %e, "no link notifications: carrier loss is seen only by failed sends and silence"))
            .ok();
        let ctl = open_ctl(&config.control_socket)?;
        let metrics = config
            .metrics
            .map(TcpListener::bind)
            .transpose()
            .map_err(io_err("metrics port"))?;
        let (signals, signal_writer) = StdUnixStream::pair().map_err(io_err("signal pipe"))?;
        signals
            .set_nonblocking(true)
            .map_err(io_err("signal pipe"))?;
        signal_writer
            .set_nonblocking(true)
            .map_err(io_err("signal pipe"))?;
        // Each signal sets its flag and writes a byte to wake the loop.
        let reload = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        for (sig, flag) in [
            (signal_hook::consts::SIGHUP, &reload),
            (signal_hook::consts::SIGTERM, &stop),
            (signal_hook::consts::SIGINT, &stop),
        ] {
            signal_hook::flag::register(sig, flag.clone()).map_err(io_err("signal handler"))?;
            let w = signal_writer.try_clone().map_err(io_err("signal pipe"))?;
            signal_hook::low_level::pipe::register(sig, w).map_err(io_err("signal handler"))?;
        }

        let poll = Poll::new().map_err(io_err("poll"))?;
        let recv_slot = (config.tun.mtu as usize + 512).max(2048);
        let mut d = Daemon {
            config_path: config_path.to_path_buf(),
            config,
            node,
            rng,
            clock,
            started: now,
            tun,
            recv: RecvBatch::new(recv_slot),
            outgoing: (0..ports.len()).map(|_| SendBatch::default()).collect(),
            heard_from: Vec::new(),
            carrier_down: vec![false; ports.len()],
            ports,
            carrier,
            neighbors: BTreeMap::new(),
            ctl,
            metrics,
            monitors: Vec::new(),
            clients: (0..crate::clients::MAX_CLIENTS).map(|_| None).collect(),
            signals,
            reload_wanted: reload,
            stop_wanted: stop,
            poll,
            counters: IoCounters::default(),
            route_changes_seen: 0,
        };
        d.register()?;
        info!(node = d.config.node.0, interfaces = ?d.config.interfaces, "braid daemon started");
        Ok(d)
    }

    fn register(&mut self) -> Result<(), DaemonError> {
        use std::os::fd::AsRawFd;
        let r = self.poll.registry();
        let tun_fd = self.tun.as_raw_fd();
        r.register(&mut SourceFd(&tun_fd), TUN, Interest::READABLE)
            .map_err(io_err("poll TUN"))?;
        let sig_fd = self.signals.as_raw_fd();
        r.register(&mut SourceFd(&sig_fd), SIGNALS, Interest::READABLE)
            .map_err(io_err("poll signals"))?;
        r.register(&mut self.ctl, CTL, Interest::READABLE)
            .map_err(io_err("poll control socket"))?;
        if let Some(c) = &self.carrier {
            r.register(&mut SourceFd(&c.as_raw_fd()), CARRIER, Interest::READABLE)
                .map_err(io_err("poll link notifications"))?;
        }
        if let Some(m) = &mut self.metrics {
            r.register(m, METRICS, Interest::READABLE)
                .map_err(io_err("poll metrics port"))?;
        }
        for (i, p) in self.ports.iter_mut().enumerate() {
            r.register(&mut p.socket, Token(PORT_BASE + 2 * i), Interest::READABLE)
                .map_err(io_err("poll socket"))?;
            // Edge-triggered: an event each time the kernel's queue for
            // this interface frees room after a send found it full.
            r.register(
                &mut p.data,
                Token(PORT_BASE + 2 * i + 1),
                Interest::WRITABLE,
            )
            .map_err(io_err("poll socket"))?;
        }
        Ok(())
    }

    fn now(&self) -> Instant {
        Instant(self.clock.elapsed().as_micros() as u64)
    }

    /// Runs until SIGTERM or SIGINT; then removes what it added (the TUN
    /// device, with the routes through it, and the control socket).
    pub fn run(mut self) -> Result<(), DaemonError> {
        let mut events = Events::with_capacity(64);
        let mut buf = vec![0u8; BUF];
        loop {
            let now = self.now();
            let wake = self.node.poll_timeout();
            let timeout =
                Duration::from_micros(wake.0.saturating_sub(now.0)).min(Duration::from_secs(1));
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(DaemonError::Io {
                        what: "poll",
                        source: e,
                    })
                }
            }
            for ev in events.iter() {
                match ev.token() {
                    TUN => self.read_tun(&mut buf),
                    SIGNALS if self.read_signals() => {
                        self.shutdown();
                        return Ok(());
                    }
                    CTL => self.accept_ctl(),
                    METRICS => self.accept_metrics(),
                    CARRIER => self.read_carrier(),
                    Token(t) if t >= CLIENT_BASE => {
                        self.client_event(t - CLIENT_BASE, ev.is_readable(), ev.is_writable())
                    }
                    Token(t) if t >= PORT_BASE && (t - PORT_BASE).is_multiple_of(2) => {
                        self.read_port((t - PORT_BASE) / 2)
                    }
                    Token(t) if t >= PORT_BASE => {
                        if let Some(b) = self.outgoing.get_mut((t - PORT_BASE) / 2) {
                            b.unblock();
                        }
                    }
                    _ => {}
                }
            }
            let now = self.now();
            if self.node.poll_timeout() <= now {
                self.node.handle_timeout(now, &mut self.rng);
            }
            self.expire_neighbors(now);
            self.drop_idle_clients(now);
            self.flush(now);
            self.note_route_changes(now);
        }
    }

    /// Reads the TUN device: up to a batch of packets go to the node before
    /// what it sends goes out (one sendmmsg per port for the batch).
    fn read_tun(&mut self, buf: &mut [u8]) {
        loop {
            let mut read = 0;
            let now = self.now();
            while read < crate::batch::BATCH {
                match self.tun.recv(buf) {
                    Ok(n) => {
                        self.counters.tun_rx += 1;
                        self.node.send(now, &buf[..n]);
                        read += 1;
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => {
                        if e.kind() != ErrorKind::WouldBlock {
                            warn!(error = %e, "TUN read failed");
                        }
                        break;
                    }
                }
            }
            self.flush(now);
            if read < crate::batch::BATCH {
                return;
            }
        }
    }

    /// Reads port `i` a batch at a time (recvmmsg): every datagram goes
    /// to the node, then what the node sends goes out in one sendmmsg per
    /// port.
    fn read_port(&mut self, i: usize) {
        use std::os::fd::AsRawFd;
        let Some(port) = self.ports.get(i) else {
            return;
        };
        let fd = port.socket.as_raw_fd();
        let mut heard = std::mem::take(&mut self.heard_from);
        loop {
            let n = match self.recv.recv(fd) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    debug!(error = %e, interface = %self.ports[i].name, "receive failed");
                    break;
                }
            };
            let now = self.now();
            for k in 0..n {
                let (bytes, from, truncated) = self.recv.get(k);
                self.counters.udp_rx += 1;
                if truncated {
                    self.counters.udp_rx_truncated += 1;
                    continue;
                }
                if let Ok(msg) = braid_wire::ControlMessage::parse(bytes) {
                    heard.push((msg.header.sender, from));
                }
                self.node.handle_datagram(now, bytes);
            }
            for (id, from) in heard.drain(..) {
                self.heard(now, id, i, from);
            }
            self.flush(now);
            if n < crate::batch::BATCH {
                break;
            }
        }
        self.heard_from = heard;
    }

    /// A control message from `id` arrived on port `i` from `from`.
    fn heard(&mut self, now: Instant, id: NodeId, i: usize, from: SocketAddr) {
        if id == self.config.node || self.carrier_down[i] {
            return;
        }
        let max = self.config.node_config.control.links.max_neighbors;
        let room = self.neighbors.len() < max;
        match self.neighbors.get_mut(&id) {
            Some(n) => {
                if (n.port, n.addr) != (i, from) {
                    info!(neighbor = id.0, interface = %self.ports[i].name, %from, "neighbor moved");
                }
                n.port = i;
                n.addr = from;
                n.last_heard = now;
            }
            None if room => {
                info!(neighbor = id.0, interface = %self.ports[i].name, %from, "neighbor up");
                // Back after being taken down: its links count again.
                self.node.link_up(id);
                self.neighbors.insert(
                    id,
                    Neighbor {
                        port: i,
                        addr: from,
                        last_heard: now,
                    },
                );
                self.emit_event(
                    "neighbor_up",
                    now,
                    json!({ "neighbor": id.0, "interface": self.ports[i].name, "address": from.to_string() }),
                );
            }
            None => {}
        }
    }

    fn expire_neighbors(&mut self, now: Instant) {
        let timeout = self.config.neighbor_timeout();
        let gone: Vec<NodeId> = self
            .neighbors
            .iter()
            .filter(|(_, n)| now.since(n.last_heard) > timeout)
            .map(|(&id, _)| id)
            .collect();
        for id in gone {
            self.neighbor_down(now, id, "unheard");
        }
    }

    /// Reads the kernel's link notifications: an interface of ours that is
    /// down or without carrier takes its neighbors down now.
    fn read_carrier(&mut self) {
        let Some(watch) = &mut self.carrier else {
            return;
        };
        let mut states = Vec::new();
        let r = watch.read(|s| states.push(s));
        self.counters.carrier_malformed += r.malformed;
        // The last word about each of our interfaces.
        let mut usable: Vec<Option<bool>> = vec![None; self.ports.len()];
        for s in states {
            if let Some(i) = self.ports.iter().position(|p| p.index == s.index) {
                usable[i] = Some(s.usable);
            }
        }
        if r.overrun {
            // Notifications were lost: ask for every interface's state.
            for (i, p) in self.ports.iter().enumerate() {
                usable[i] = Some(crate::carrier::usable_now(&p.name) == Some(true));
            }
        }
        let now = self.now();
        for (i, u) in usable.into_iter().enumerate() {
            match u {
                Some(false) => {
                    self.carrier_down[i] = true;
                    self.port_down(now, i, "carrier lost");
                }
                Some(true) => self.carrier_down[i] = false,
                None => {}
            }
        }
    }

    /// Interface `i` went down: its neighbors go down with it.
    fn port_down(&mut self, now: Instant, i: usize, why: &str) {
        let ids: Vec<NodeId> = self
            .neighbors
            .iter()
            .filter(|(_, n)| n.port == i)
            .map(|(&id, _)| id)
            .collect();
        if !ids.is_empty() {
            self.counters.carrier_lost += 1;
            info!(interface = %self.ports[i].name, why, "interface down");
        }
        for id in ids {
            self.neighbor_down(now, id, why);
        }
    }

    /// Takes `id` down: routes move off it at once; hearing it again
    /// brings it back.
    fn neighbor_down(&mut self, now: Instant, id: NodeId, why: &str) {
        if self.neighbors.remove(&id).is_some() {
            info!(neighbor = id.0, why, "neighbor down");
            self.node.link_down(now, id, &mut self.rng);
            self.emit_event(
                "neighbor_down",
                now,
                json!({ "neighbor": id.0, "why": why }),
            );
        }
    }

    /// Sends everything the node has ready and writes what it delivers.
    ///
    /// Late binding: the node hands out a datagram for a next hop only
    /// while fewer than `late_binding` wait here for that hop, and a
    /// datagram stops waiting (`on_sent`) when the kernel takes it; the
    /// kernel takes no more than the data socket's small send buffer
    /// holds. So when an interface is slower than the traffic offered,
    /// the queue builds in the node, above the binding point, where a
    /// datagram can still move to another path or jump ahead as urgent.
    fn flush(&mut self, now: Instant) {
        use std::os::fd::AsRawFd;
        loop {
            while let Some(t) = self.node.poll_transmit(now) {
                match t.dest {
                    Dest::AllNeighbors => {
                        for p in &self.ports {
                            match p.send_all(&t.bytes) {
                                Ok(_) => self.counters.udp_tx += 1,
                                Err(_) => self.counters.udp_tx_errors += 1,
                            }
                        }
                        self.node.recycle(t.bytes);
                    }
                    Dest::Neighbor(id) => match self.neighbors.get(&id) {
                        Some(n) => {
                            if let Err(bytes) = self.outgoing[n.port].push(t.bytes, n.addr, id) {
                                self.counters.udp_tx_queue_full += 1;
                                self.node.on_sent(id);
                                self.node.recycle(bytes);
                            }
                        }
                        None => {
                            self.counters.unknown_neighbor += 1;
                            self.node.on_sent(id);
                            self.node.recycle(t.bytes);
                        }
                    },
                }
            }
            let mut taken = 0;
            let mut down = Vec::new();
            // A closing interface, or one without carrier, takes datagrams
            // and drops them without an error; late binding would then
            // pour everything it holds into it before the kernel's link
            // notification arrives. While the node holds traffic, look
            // at the interface's flags before each send (one ioctl per
            // batch; without a backlog only what arrives meanwhile is
            // lost, as on any link that fails).
            let look = self.node.holds_backlog();
            for (i, (p, batch)) in self.ports.iter().zip(&mut self.outgoing).enumerate() {
                let node = &mut self.node;
                let left = |id, bytes| {
                    node.on_sent(id);
                    node.recycle(bytes);
                };
                if batch.is_empty() || batch.is_blocked() {
                    continue;
                }
                if look && !p.usable() {
                    let n = batch.fail_all(left);
                    self.counters.udp_tx_errors += n;
                    taken += n;
                    down.push(i);
                    continue;
                }
                let r = batch.flush(p.data.as_raw_fd(), left);
                self.counters.udp_tx += r.sent;
                self.counters.udp_tx_errors += r.failed;
                self.counters.udp_tx_blocked += u64::from(r.blocked);
                taken += r.sent + r.failed;
                if r.down {
                    down.push(i);
                }
            }
            // The interface went down under us (carrier or address
            // lost): what waited for it was dropped; its neighbors go
            // down now rather than after `dead_after` silent probes.
            for i in down {
                self.port_down(now, i, "interface down at send");
            }
            // Room freed below the binding point lets the node hand out
            // more; stop when nothing moved.
            if taken == 0 {
                break;
            }
        }
        while let Some(p) = self.node.poll_deliver() {
            match self.tun.send(&p) {
                Ok(_) => self.counters.tun_tx += 1,
                Err(_) => self.counters.tun_tx_errors += 1,
            }
            self.node.recycle(p);
        }
    }

    fn note_route_changes(&mut self, now: Instant) {
        let changes = self.node.counters().route_changes;
        if changes != self.route_changes_seen {
            self.route_changes_seen = changes;
            let routes = ctl::route_list(&self.node);
            self.emit_event("route_change", now, json!({ "routes": routes }));
        }
    }

    /// Returns true when the daemon must stop.
    fn read_signals(&mut self) -> bool {
        let mut got = [0u8; 16];
        while matches!(self.signals.read(&mut got), Ok(n) if n > 0) {}
        if self.reload_wanted.swap(false, Ordering::SeqCst) {
            self.reload();
        }
        self.stop_wanted.load(Ordering::SeqCst)
    }

    /// SIGHUP: reads the config again. An invalid file is refused and the
    /// running config kept; a valid one takes effect at once for what can
    /// change while running (redundancy policy and classes), and what needs
    /// a restart (node id, interfaces, port, TUN) is named in the log.
    fn reload(&mut self) {
        let now = self.now();
        let new = match Config::load(&self.config_path) {
            Ok(c) => c,
            Err(e) => {
                self.counters.reloads_refused += 1;
                warn!(error = %e, "reload refused; keeping the running config");
                self.emit_event("reload_refused", now, json!({ "error": e.to_string() }));
                return;
            }
        };
        let old = self.config.clone();
        let mut needs_restart = Vec::new();
        if new.node != old.node {
            needs_restart.push("node");
        }
        if new.interfaces != old.interfaces {
            needs_restart.push("interface");
        }
        if new.port != old.port || new.group != old.group {
            needs_restart.push("port/group");
        }
        if new.tun != old.tun {
            needs_restart.push("tun");
        }
        if new.control_socket != old.control_socket {
            needs_restart.push("control_socket");
        }
        if new.send_buffer != old.send_buffer {
            needs_restart.push("send_buffer");
        }
        // The node's other settings (prefixes, paths, probes, re-order,
        // windows, late binding) are fixed while it runs.
        let node_rest_changed = NodeConfig {
            policy: old.node_config.policy.clone(),
            classifier: old.node_config.classifier.clone(),
            ..new.node_config.clone()
        } != old.node_config;
        if node_rest_changed {
            needs_restart.push("prefixes/paths/probes/reorder/windows/late_binding");
        }
        let modes_changed = new.node_config.policy != old.node_config.policy
            || new.node_config.classifier != old.node_config.classifier;
        if modes_changed {
            self.node.set_policy(
                now,
                new.node_config.policy.clone(),
                new.node_config.classifier.clone(),
            );
            self.flush(now);
            self.emit_event(
                "mode_change",
                now,
                json!({ "default": new.node_config.policy.default.to_string() }),
            );
        }
        if !needs_restart.is_empty() {
            warn!(fields = ?needs_restart, "reload: these take effect at the next start");
        }
        self.counters.reloads += 1;
        info!(modes_changed, "config reloaded");
        // Keep what is running for the fields that need a restart.
        let mut kept = new;
        kept.node = old.node;
        kept.interfaces = old.interfaces;
        kept.port = old.port;
        kept.group = old.group;
        kept.tun = old.tun;
        kept.control_socket = old.control_socket;
        kept.send_buffer = old.send_buffer;
        kept.node_config = NodeConfig {
            policy: kept.node_config.policy,
            classifier: kept.node_config.classifier,
            ..old.node_config
        };
        self.config = kept;
    }

    fn accept_ctl(&mut self) {
        loop {
            match self.ctl.accept() {
                Ok((stream, _)) => self.add_client(Service::Ctl, Stream::Unix(stream)),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => {
                    debug!(error = %e, "control socket accept failed");
                    return;
                }
            }
        }
    }

    fn accept_metrics(&mut self) {
        loop {
            let Some(listener) = &self.metrics else {
                return;
            };
            match listener.accept() {
                Ok((stream, _)) => self.add_client(Service::Metrics, Stream::Tcp(stream)),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => {
                    debug!(error = %e, "metrics accept failed");
                    return;
                }
            }
        }
    }

    /// Takes a new client into a free slot (or refuses it: closed at
    /// once) and serves what it has sent already.
    fn add_client(&mut self, service: Service, mut stream: Stream) {
        let Some(slot) = self.clients.iter().position(Option::is_none) else {
            self.counters.clients_refused += 1;
            return;
        };
        let token = Token(CLIENT_BASE + slot);
        if self
            .poll
            .registry()
            .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
            .is_err()
        {
            return;
        }
        self.clients[slot] = Some(Client::new(service, stream, self.now()));
        self.client_event(slot, true, false);
    }

    /// A client's socket is ready: read its request, answer it, write the
    /// answer, as far as the socket allows now.
    fn client_event(&mut self, slot: usize, readable: bool, writable: bool) {
        let Some(mut client) = self.clients.get_mut(slot).and_then(Option::take) else {
            return;
        };
        let now = self.now();
        let mut step = Step::Wait;
        if readable {
            step = client.on_readable(now);
        }
        if let Step::Request(line) = &step {
            step = match client.service {
                Service::Ctl if line.trim() == "monitor" => {
                    self.counters.ctl_requests += 1;
                    let _ = self.poll.registry().deregister(&mut client.stream);
                    if let Stream::Unix(stream) = client.stream {
                        self.add_monitor(stream);
                    }
                    return;
                }
                Service::Ctl => {
                    let reply = self.ctl_reply(line.trim());
                    client.answer(reply, now)
                }
                Service::Metrics => {
                    let reply = self.metrics_reply(line);
                    client.answer(reply, now)
                }
            };
        } else if writable && step == Step::Wait {
            step = client.on_writable(now);
        }
        match step {
            Step::Close { bad } => {
                if bad && client.service == Service::Ctl {
                    self.counters.ctl_bad_requests += 1;
                }
                let _ = self.poll.registry().deregister(&mut client.stream);
            }
            _ => self.clients[slot] = Some(client),
        }
    }

    /// Drops clients that have made no progress for `clients::IDLE`.
    fn drop_idle_clients(&mut self, now: Instant) {
        for slot in &mut self.clients {
            if slot.as_ref().is_some_and(|c| c.idle(now)) {
                if let Some(mut c) = slot.take() {
                    let _ = self.poll.registry().deregister(&mut c.stream);
                }
            }
        }
    }

    /// `monitor`: the connection stays open for events, written without
    /// waiting (a monitor that cannot take a whole line is dropped).
    fn add_monitor(&mut self, mut stream: UnixStream) {
        if self.monitors.len() >= MAX_MONITORS {
            let _ = stream.write_all(b"{\"error\":\"too many monitors\"}\n");
            return;
        }
        let hello = ctl::event("hello", self.now(), json!({ "node": self.config.node.0 }));
        if matches!(stream.write(hello.as_bytes()), Ok(n) if n == hello.len()) {
            self.monitors.push(stream);
        }
    }

    /// The answer to a ctl command, one JSON document and a line end.
    fn ctl_reply(&mut self, command: &str) -> Vec<u8> {
        self.counters.ctl_requests += 1;
        let now = self.now();
        let neighbors: Vec<NeighborView> = self
            .neighbors
            .iter()
            .map(|(&id, n)| NeighborView {
                id: id.0,
                interface: self.ports[n.port].name.clone(),
                address: n.addr.to_string(),
                last_heard: n.last_heard,
            })
            .collect();
        let io = serde_json::to_value(&self.counters).unwrap_or_default();
        let view = View {
            node: &self.node,
            now,
            started: self.started,
            interfaces: &self.config.interfaces,
            neighbors: &neighbors,
            io: &io,
        };
        let doc = match ctl::answer(command, &view) {
            Some(doc) => doc,
            None => {
                self.counters.ctl_bad_requests += 1;
                json!({
                    "version": ctl::CTL_VERSION,
                    "error": format!("unknown command \"{command}\"; commands: {}", ctl::COMMANDS.join(", ")),
                })
            }
        };
        let mut reply = doc.to_string().into_bytes();
        reply.push(b'\n');
        reply
    }

    /// The answer to an HTTP request line on the metrics port: `/metrics`
    /// (Prometheus) or `/topology` (NetJSON).
    fn metrics_reply(&self, request_line: &str) -> Vec<u8> {
        let path = request_line.split_whitespace().nth(1).unwrap_or("");
        match path {
            "/metrics" => crate::metrics::response(
                "200 OK",
                "text/plain; version=0.0.4",
                &crate::metrics::prometheus(
                    &self.node,
                    self.now(),
                    self.neighbors.len(),
                    &self.counters,
                ),
            ),
            "/topology" => crate::metrics::response(
                "200 OK",
                "application/json",
                &crate::metrics::netjson(&self.node),
            ),
            _ => crate::metrics::response(
                "404 Not Found",
                "text/plain",
                "try /metrics or /topology\n",
            ),
        }
        .into_bytes()
    }

    fn emit_event(&mut self, kind: &str, now: Instant, fields: serde_json::Value) {
        if self.monitors.is_empty() {
            return;
        }
        let line = ctl::event(kind, now, fields);
        // A monitor that cannot take a whole line now is dropped: the
        // daemon never waits for a client, and never buffers for one.
        self.monitors
            .retain_mut(|m| matches!(m.write(line.as_bytes()), Ok(n) if n == line.len()));
    }

    fn shutdown(&mut self) {
        info!("stopping");
        // Flush our advertisement from every database (best effort: what
        // the sockets take now), so that nobody routes through us until
        // it ages out.
        let now = self.now();
        self.node.leave();
        self.flush(now);
        let _ = std::fs::remove_file(&self.config.control_socket);
        // The TUN device goes when its descriptor closes (on drop), and
        // the kernel removes the routes through it with it.
    }
}

fn open_tun(config: &Config) -> Result<tun_rs::SyncDevice, DaemonError> {
    let t = &config.tun;
    let err = |source| DaemonError::Tun {
        name: t.name.clone(),
        source,
    };
    let mut b = tun_rs::DeviceBuilder::new().name(&t.name).mtu(t.mtu);
    if let Some((addr, len)) = t.address {
        b = b.ipv4(addr, len, None);
    }
    let dev = b.build_sync().map_err(err)?;
    dev.set_nonblocking(true).map_err(err)?;
    for &(addr, len) in &t.routes {
        add_route(&format!("{addr}/{len}"), &t.name)?;
    }
    Ok(dev)
}

/// Routes `route` into the mesh through the TUN device, with iproute2
/// (present wherever braid runs; the route goes with the device).
fn add_route(route: &str, dev: &str) -> Result<(), DaemonError> {
    let out = std::process::Command::new("ip")
        .args(["route", "replace", route, "dev", dev])
        .output()
        .map_err(|e| DaemonError::Route {
            route: route.into(),
            dev: dev.into(),
            message: format!("cannot run ip: {e}"),
        })?;
    if !out.status.success() {
        return Err(DaemonError::Route {
            route: route.into(),
            dev: dev.into(),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

fn open_ctl(path: &Path) -> Result<UnixListener, DaemonError> {
    let err = |source| DaemonError::Socket {
        path: path.display().to_string(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    // A socket file left by a daemon that did not stop cleanly: refuse if
    // a daemon still answers on it, else replace it.
    if path.exists() {
        if StdUnixStream::connect(path).is_ok() {
            return Err(err(io::Error::new(
                ErrorKind::AddrInUse,
                "another braid daemon is running on it",
            )));
        }
        std::fs::remove_file(path).map_err(err)?;
    }
    UnixListener::bind(path).map_err(err)
}

/// A client's side of the control socket: sends `command`, returns the
/// reply (one JSON document).
pub fn request(socket: &Path, command: &str) -> io::Result<String> {
    let mut s = StdUnixStream::connect(socket)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(command.as_bytes())?;
    s.write_all(b"\n")?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)?;
    Ok(reply)
}

/// A client's side of `monitor`: calls `line` for every event until the
/// daemon goes away or `line` returns false.
pub fn monitor(socket: &Path, mut line: impl FnMut(&str) -> bool) -> io::Result<()> {
    let mut s = StdUnixStream::connect(socket)?;
    s.write_all(b"monitor\n")?;
    for l in BufReader::new(s).lines() {
        if !line(&l?) {
            break;
        }
    }
    Ok(())
}
