//! The daemon's loop: drives one protocol [`Node`] with real I/O, and
//! owns everything the daemon opened. Packets enter the mesh from the TUN
//! device and leave it there; everything between braid nodes crosses the
//! per-interface UDP sockets; timers come from `Node::poll_timeout`.
//!
//! Where a packet goes: TUN read -> `Node::send` (the ingress decides its
//! paths) -> `Node::poll_transmit` -> UDP to the first hop. A datagram from
//! a neighbor -> `Node::handle_datagram` (forward, or deliver at the
//! egress) -> `Node::poll_deliver` -> TUN write. That is the data plane
//! (`dataplane.rs`); the control socket, metrics, monitors, signals and
//! reload are the management plane (`management.rs`); where each neighbor
//! is, is the address book (`crate::neighbors`). With the kernel data
//! path on (`crate::kernel`), transit packets, the egress of the modes
//! the kernel does, and (without late binding) the ingress of the
//! sessions lent to it never reach this loop; the loop keeps the kernel's
//! maps in step after every round.
//!
//! Interfaces come and go (`links.rs`): a configured interface that does
//! not exist at start is waited for, and opened when the kernel's link
//! notifications say it appeared; one that goes away is closed, its
//! neighbors down, until it comes back. Each keeps its place in
//! `ports` (its position in the config, the node's `Interface(i)`).

pub(crate) mod checks;
mod dataplane;
mod echo;
mod links;
mod management;

use std::io::{self, ErrorKind};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use braid_proto::node::Node;
use braid_proto::time::Instant;
use mio::net::{TcpListener, UnixListener, UnixStream};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use thiserror::Error;
use tracing::{error, info, warn};

use crate::access::{AccessError, AccessPort};
use crate::batch::{RecvBatch, SendBatch};
use crate::carrier::CarrierWatch;
use crate::clients::Client;
use crate::config::{Config, ConfigLoadError};
use crate::counters::IoCounters;
use crate::kernel::{KernelError, KernelPath};
use crate::neighbors::AddressBook;
use crate::underlay::{Port, UnderlayError};

const TUN: Token = Token(0);
const SIGNALS: Token = Token(1);
const CTL: Token = Token(2);
const METRICS: Token = Token(3);
const CARRIER: Token = Token(4);
/// Tokens of access interfaces' sockets: this plus their index.
const ACCESS_BASE: usize = 1 << 16;
const PORT_BASE: usize = 16;
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
    #[error(transparent)]
    Access(#[from] AccessError),
    #[error("kernel data path (datapath = \"kernel\"): {0}")]
    Kernel(#[from] KernelError),
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
    #[error("a braid daemon already runs here: its control socket {path} answers (stop it first, or give this one its own control_socket, [tun] name and interfaces)")]
    AlreadyRunning { path: String },
    #[error("TUN device {name} is in use, by another braid daemon or another program (ip -d link show {name}); stop it, or set another [tun] name")]
    TunBusy { name: String },
    #[error("control_group {group}: {why}")]
    ControlGroup { group: String, why: String },
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: io::Error,
    },
}

fn io_err(what: &'static str) -> impl FnOnce(io::Error) -> DaemonError {
    move |source| DaemonError::Io { what, source }
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
    /// Each configured interface's sockets, by its position in the config
    /// (the node's `Interface(i)`, poll tokens `PORT_BASE + 2i`): `None`
    /// while the interface does not exist.
    ports: Vec<Option<Port>>,
    /// Why a configured interface that exists could not be opened, as
    /// last logged (said once per reason).
    open_errors: Vec<Option<String>>,
    /// The kernel's link notifications (`None`: unavailable, then failed
    /// sends and silence take neighbors down, and interfaces are looked
    /// at every `links::RESCAN_EVERY`).
    carrier: Option<CarrierWatch>,
    /// Without link notifications: when the interfaces are next looked at.
    next_rescan: Instant,
    /// Received datagrams, a batch at a time, and what waits to be sent
    /// on each port.
    recv: RecvBatch,
    outgoing: Vec<SendBatch>,
    /// Where each neighbor up is (the node decides who is up).
    book: AddressBook,
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
    /// The kernel data path, when it runs (`kernel.rs`).
    kernel: Option<KernelPath>,
    /// Access interfaces (`access.rs`).
    access: Vec<AccessPort>,
    /// When a duplicate node id was last logged (at most every 30 s).
    duplicate_logged_at: Option<Instant>,
    /// When the daemon started, seconds since the Unix epoch.
    started_unix: f64,
    /// The last reload: when (Unix seconds) and whether it was taken.
    last_reload: Option<(f64, bool)>,
    /// The last monitor events, for the dashboard (bounded).
    recent_events: std::collections::VecDeque<String>,
    /// Pings and traceroutes waiting for their replies (`echo.rs`).
    echoes: Vec<echo::Waiting>,
    /// The last echo sequence number used.
    echo_seq: u32,
}

/// Seconds since the Unix epoch (for metrics' timestamps).
pub(super) fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Daemon {
    /// Reads the config and sets everything up: TUN device with its address
    /// and routes, two sockets per interface (`underlay.rs`), the control
    /// socket.
    pub fn start(config_path: &Path) -> Result<Daemon, DaemonError> {
        let config = Config::load(config_path)?;
        checks::check_forwarding(&config);
        checks::warn_if_unauthenticated(&config);
        checks::check_interfaces(&config);
        refuse_if_running(&config.control_socket)?;
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
        // Listening before the interfaces are opened: one that appears
        // meanwhile is either opened now or notified.
        let carrier = CarrierWatch::open()
            .inspect_err(|e| warn!(error = %e, "no link notifications: carrier loss is seen only by failed sends and silence, and missing interfaces are looked for every 5 s"))
            .ok();
        let ports = open_ports(&config)?;
        let missing = ports.iter().filter(|p| p.is_none()).count() as u64;
        let kernel = KernelPath::start(&config, &ports)?;
        let access = config
            .access
            .iter()
            .map(|a| AccessPort::open(a, now))
            .collect::<Result<Vec<_>, _>>()?;
        let ctl = open_ctl(&config.control_socket)?;
        share_ctl(&config.control_socket, config.control_group.as_deref())?;
        let metrics = config
            .metrics
            .map(TcpListener::bind)
            .transpose()
            .map_err(io_err("metrics port"))?;
        let (signals, reload, stop) = management::signal_pipe()?;
        let poll = Poll::new().map_err(io_err("poll"))?;
        let recv_slot = (config.tun.mtu as usize + 512).max(2048);
        let max_neighbors = config.node_config.control.links.max_neighbors;
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
            open_errors: vec![None; ports.len()],
            ports,
            carrier,
            next_rescan: now + links::RESCAN_EVERY,
            book: AddressBook::new(max_neighbors),
            ctl,
            metrics,
            monitors: Vec::new(),
            duplicate_logged_at: None,
            started_unix: unix_now(),
            last_reload: None,
            recent_events: Default::default(),
            echoes: Vec::new(),
            echo_seq: 0,
            clients: (0..crate::clients::MAX_CLIENTS).map(|_| None).collect(),
            signals,
            reload_wanted: reload,
            stop_wanted: stop,
            poll,
            counters: IoCounters {
                interfaces_missing: missing,
                ..IoCounters::default()
            },
            kernel,
            access,
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
        for (i, a) in self.access.iter().enumerate() {
            // Its sockets share its token: a read drains them all.
            for fd in a.raw_fds() {
                r.register(
                    &mut SourceFd(&fd),
                    Token(ACCESS_BASE + i),
                    Interest::READABLE,
                )
                .map_err(io_err("poll access interface"))?;
            }
        }
        for (i, p) in self.ports.iter_mut().enumerate() {
            if let Some(p) = p {
                register_port(r, i, p).map_err(io_err("poll socket"))?;
            }
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
            let wake = self
                .access
                .iter()
                .map(AccessPort::next_probe)
                .chain(self.echo_timeout())
                .fold(self.node.poll_timeout(), Instant::min);
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
                    Token(t) if t >= ACCESS_BASE => {
                        let now = self.now();
                        if let Some(a) = self.access.get_mut(t - ACCESS_BASE) {
                            a.read(now);
                        }
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
            for a in &mut self.access {
                a.probe(now, &mut self.node);
            }
            if self.node.poll_timeout() <= now {
                self.node.handle_timeout(now, &mut self.rng);
            }
            self.drop_idle_clients(now);
            if self.carrier.is_none() && now >= self.next_rescan {
                self.next_rescan = now + links::RESCAN_EVERY;
                self.rescan_links();
            }
            self.flush(now);
            self.take_events(now);
            if !self.echoes.is_empty() {
                self.advance_echoes(now);
            }
            if let Some(k) = &mut self.kernel {
                k.sync(now, &mut self.node, &self.book, &self.ports);
            }
        }
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
        for a in &self.access {
            a.shutdown();
        }
        // The kernel data path's programs go with this process (TCX
        // links); what it added besides goes now.
        if let Some(k) = &mut self.kernel {
            k.shutdown();
        }
        // The TUN device goes when its descriptor closes (on drop), and
        // the kernel removes the routes through it with it.
    }
}

/// Opens every configured interface that exists (`None` for one that
/// does not: said, and waited for); any other failure to open one refuses
/// the start.
fn open_ports(config: &Config) -> Result<Vec<Option<Port>>, DaemonError> {
    let mut ports = Vec::with_capacity(config.interfaces.len());
    let mut missing = Vec::new();
    for name in &config.interfaces {
        match Port::open(name, config.port, config.group, config.send_buffer) {
            Ok(p) => ports.push(Some(p)),
            Err(UnderlayError::NoInterface { .. }) => {
                missing.push(name.clone());
                ports.push(None);
            }
            Err(e) => return Err(e.into()),
        }
    }
    let (warnings, none) = checks::missing_interface_messages(&missing, ports.len());
    for w in warnings {
        warn!("{w}");
    }
    if let Some(e) = none {
        error!("{e}");
    }
    Ok(ports)
}

/// Registers port `i`'s sockets with the loop, under its tokens.
fn register_port(r: &mio::Registry, i: usize, p: &mut Port) -> io::Result<()> {
    r.register(&mut p.socket, Token(PORT_BASE + 2 * i), Interest::READABLE)?;
    // Edge-triggered: an event each time the kernel's queue for this
    // interface frees room after a send found it full.
    r.register(
        &mut p.data,
        Token(PORT_BASE + 2 * i + 1),
        Interest::WRITABLE,
    )
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
    let dev = b.build_sync().map_err(|e| {
        if e.raw_os_error() == Some(nix::libc::EBUSY) {
            DaemonError::TunBusy {
                name: t.name.clone(),
            }
        } else {
            err(e)
        }
    })?;
    dev.set_nonblocking(true).map_err(err)?;
    for route in &t.routes {
        add_route(&route.to_string(), &t.name)?;
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

/// Refuses to start a second daemon on the same control socket, before
/// anything is touched (the TUN device would otherwise be "busy").
fn refuse_if_running(path: &Path) -> Result<(), DaemonError> {
    if path.exists() && StdUnixStream::connect(path).is_ok() {
        return Err(DaemonError::AlreadyRunning {
            path: path.display().to_string(),
        });
    }
    Ok(())
}

/// Opens the control socket to `group` (mode 0660): its members may run
/// `braid ctl` without root. Without a group it is root's alone (0600).
fn share_ctl(path: &Path, group: Option<&str>) -> Result<(), DaemonError> {
    use std::os::unix::fs::PermissionsExt;
    let fail = |g: &str, why: String| DaemonError::ControlGroup {
        group: g.to_string(),
        why,
    };
    let mode = match group {
        None => 0o600,
        Some(g) => {
            let gid = nix::unistd::Group::from_name(g)
                .map_err(|e| fail(g, e.to_string()))?
                .ok_or_else(|| {
                    fail(
                        g,
                        "no such group (create it: groupadd --system NAME)".into(),
                    )
                })?
                .gid;
            nix::unistd::chown(path, None, Some(gid)).map_err(|e| fail(g, e.to_string()))?;
            0o660
        }
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(|source| {
        DaemonError::Socket {
            path: path.display().to_string(),
            source,
        }
    })
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
