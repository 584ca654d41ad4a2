//! The daemon's loop: drives one protocol [`Node`] with real I/O, and
//! owns everything the daemon opened. Packets enter the mesh from the TUN
//! device and leave it there; everything between braid nodes crosses the
//! per-interface UDP sockets; timers come from `Node::poll_timeout`.
//!
//! Where a packet goes: TUN read -> `Node::send` (the ingress decides its
//! paths) -> `Node::poll_transmit` -> UDP to the first hop. A datagram from
//! a neighbor -> `Node::handle_datagram` (forward, or deliver at the
//! egress) -> `Node::poll_deliver` -> TUN write. With the kernel data
//! path on (`crate::kernel`), transit packets, the egress of the modes
//! the kernel does, and (without late binding) the ingress of the
//! sessions lent to it never reach this loop; the loop keeps the kernel's
//! maps in step after every round.
//!
//! This file opens the daemon's parts and runs the loop, handing each
//! event to the part it is for (`tokens.rs`):
//!
//! | module | owns |
//! |---|---|
//! | `dataplane` | the node and its I/O (TUN, sockets, address book, access interfaces, kernel data path), which the other parts work on |
//! | `links` | the interfaces as the kernel's link notifications tell them |
//! | `management` | signals, reload, the control socket and metrics port, monitors, the node's events |
//! | `echo` | pings and traceroutes waiting for their replies |
//! | `reload` | what a new config changes at once and what waits for a restart |
//! | `checks` | start-up checks of the host's settings |
//! | `tokens` | which source a poll event is for |
//! | `error` | [`DaemonError`] |
//!
//! Interfaces come and go (`links.rs`): a configured interface that does
//! not exist at start is waited for, and opened when the kernel's link
//! notifications say it appeared; one that goes away is closed, its
//! neighbors down, until it comes back. Each keeps its place in
//! `ports` (its position in the config, the node's `Interface(i)`).

pub(crate) mod checks;
mod dataplane;
mod echo;
mod error;
mod links;
mod management;
mod reload;
mod tokens;

pub use checks::host_warnings;
pub use error::DaemonError;

use std::io::ErrorKind;
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::Path;
use std::time::Duration;

use braid_proto::node::Node;
use braid_proto::time::Instant;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tracing::info;

use crate::access::AccessPort;
use crate::batch::{RecvBatch, SendBatch};
use crate::config::Config;
use crate::counters::IoCounters;
use crate::kernel::KernelPath;
use crate::neighbors::AddressBook;
use crate::uplink::Uplink;

use dataplane::DataPlane;
use error::io_err;
use links::Links;
use management::Management;
use tokens::Ready;

/// Largest datagram read from the TUN or a socket.
const BUF: usize = 65_536;

/// A running daemon: its data plane, its interfaces as they come and go,
/// its management plane, and the loop's poll.
pub struct Daemon {
    data: DataPlane,
    links: Links,
    management: Management,
    poll: Poll,
}

impl Daemon {
    /// Reads the config and sets everything up: TUN device with its address
    /// and routes, two sockets per interface (`underlay.rs`), the control
    /// socket.
    pub fn start(config_path: &Path) -> Result<Daemon, DaemonError> {
        let config = Config::load(config_path)?;
        checks::check_forwarding(&config);
        checks::warn_if_unauthenticated(&config);
        if let Some(w) = crate::config::inline_keys_warning(config_path, &config) {
            tracing::warn!("{w}");
        }
        checks::check_interfaces(&config);
        refuse_if_running(&config.control_socket)?;
        // Everything that can refuse before anything in the kernel is
        // touched: a daemon refused changes nothing of a running one's.
        let management = Management::open(config_path, &config)?;
        check_routes_free(&config)?;
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
        let links = Links::open(config.interfaces.len(), now);
        let ports = links::open_ports(&config)?;
        let missing = ports.iter().filter(|p| p.is_none()).count() as u64;
        let kernel = KernelPath::start(&config, &ports)?;
        let access = config
            .access
            .iter()
            .map(|a| AccessPort::open(a, now))
            .collect::<Result<Vec<_>, _>>()?;
        let uplink = match &config.uplink {
            Some(u) => {
                use rand_chacha::rand_core::RngCore;
                let ident = rng.next_u32() as u16;
                Some(Uplink::open(u.clone(), now, ident).map_err(io_err("uplink probes"))?)
            }
            None => None,
        };
        let routes = crate::routes::KernelRoutes::new(
            config.redistribute.clone(),
            config.install,
            tun.if_index().unwrap_or(0),
            now,
        );
        let poll = Poll::new().map_err(io_err("poll"))?;
        let recv_slot = (config.tun.mtu as usize + 512).max(2048);
        let max_neighbors = config.node_config.control.links.max_neighbors;
        let data = DataPlane {
            node,
            rng,
            clock,
            started: now,
            tun,
            recv: RecvBatch::new(recv_slot),
            outgoing: (0..ports.len()).map(|_| SendBatch::default()).collect(),
            ports,
            book: AddressBook::new(max_neighbors),
            key_mismatches: Default::default(),
            counters: IoCounters {
                interfaces_missing: missing,
                ..IoCounters::default()
            },
            kernel,
            access,
            uplink,
            routes,
            config,
        };
        let mut d = Daemon {
            data,
            links,
            management,
            poll,
        };
        d.register()?;
        info!(node = d.data.config.node.0, interfaces = ?d.data.config.interfaces, "braid daemon started");
        Ok(d)
    }

    fn register(&mut self) -> Result<(), DaemonError> {
        use std::os::fd::AsRawFd;
        let r = self.poll.registry();
        let tun_fd = self.data.tun.as_raw_fd();
        r.register(&mut SourceFd(&tun_fd), tokens::TUN, Interest::READABLE)
            .map_err(io_err("poll TUN"))?;
        self.management.register(r)?;
        if let Some(c) = &self.links.carrier {
            r.register(
                &mut SourceFd(&c.as_raw_fd()),
                tokens::CARRIER,
                Interest::READABLE,
            )
            .map_err(io_err("poll link notifications"))?;
        }
        for fd in self.data.uplink.iter().flat_map(Uplink::read_fds) {
            r.register(&mut SourceFd(&fd), tokens::UPLINK, Interest::READABLE)
                .map_err(io_err("poll uplink probes"))?;
        }
        for (i, a) in self.data.access.iter().enumerate() {
            // Its sockets share its token: a read drains them all.
            for fd in a.raw_fds() {
                r.register(&mut SourceFd(&fd), tokens::access(i), Interest::READABLE)
                    .map_err(io_err("poll access interface"))?;
            }
        }
        for (i, p) in self.data.ports.iter_mut().enumerate() {
            if let Some(p) = p {
                links::register_port(r, i, p).map_err(io_err("poll socket"))?;
            }
        }
        Ok(())
    }

    /// Runs until SIGTERM or SIGINT; then removes what it added (the TUN
    /// device, with the routes through it, and the control socket).
    pub fn run(mut self) -> Result<(), DaemonError> {
        let mut events = Events::with_capacity(64);
        let mut buf = vec![0u8; BUF];
        loop {
            let now = self.data.now();
            let wake = self
                .data
                .access
                .iter()
                .map(AccessPort::next_probe)
                .chain(self.management.echo_timeout())
                .chain(self.data.uplink.as_ref().map(Uplink::poll_timeout))
                .chain(self.data.routes.as_ref().map(|r| r.poll_timeout()))
                .fold(self.data.node.poll_timeout(), Instant::min);
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
                if self.handle(tokens::ready(ev.token()), ev, &mut buf) {
                    self.shutdown();
                    return Ok(());
                }
            }
            self.round();
        }
    }

    /// Hands one event to the part it is for; true when the daemon must
    /// stop.
    fn handle(&mut self, ready: Ready, ev: &mio::event::Event, buf: &mut [u8]) -> bool {
        let registry = self.poll.registry();
        let (data, management) = (&mut self.data, &mut self.management);
        match ready {
            Ready::Tun => data.read_tun(buf),
            Ready::Signals => return management.read_signals(data),
            Ready::Ctl => management.accept_ctl(data, registry),
            Ready::Metrics => management.accept_metrics(data, registry),
            Ready::Carrier => self.links.read_carrier(data, registry),
            Ready::Client(slot) => {
                management.client_event(slot, ev.is_readable(), ev.is_writable(), data, registry)
            }
            Ready::Access(i) => {
                let now = data.now();
                if let Some(a) = data.access.get_mut(i) {
                    a.read(now);
                }
            }
            Ready::Uplink => {
                let now = data.now();
                if let Some(u) = &mut data.uplink {
                    if let Some(c) = u.read(now, &mut data.node) {
                        management.uplink_changed(now, &c);
                    }
                }
            }
            Ready::UplinkTcp(i) => {
                let now = data.now();
                if let Some(u) = &mut data.uplink {
                    if let Some(c) = u.connect_ready(now, i, &mut data.node) {
                        management.uplink_changed(now, &c);
                    }
                }
            }
            Ready::PortReadable(i) => data.read_port(i),
            Ready::PortWritable(i) => {
                if let Some(b) = data.outgoing.get_mut(i) {
                    b.unblock();
                }
            }
            Ready::Unknown => {}
        }
        false
    }

    /// What follows every round of events: probes and timers due, idle
    /// clients dropped, interfaces looked at (without notifications),
    /// what the node has sent and reported, echoes, the kernel's maps.
    fn round(&mut self) {
        let registry = self.poll.registry();
        let data = &mut self.data;
        let now = data.now();
        for a in &mut data.access {
            a.probe(now, &mut data.node);
        }
        if let Some(u) = data.uplink.as_mut().filter(|u| u.poll_timeout() <= now) {
            let mut watch = Vec::new();
            if let Some(c) = u.advance(now, &mut data.node, &mut watch) {
                self.management.uplink_changed(now, &c);
            }
            for (i, fd) in watch {
                // A probe that cannot be polled counts as unanswered.
                let _ = registry.register(
                    &mut SourceFd(&fd),
                    tokens::uplink_tcp(i),
                    Interest::WRITABLE,
                );
            }
        }
        if let Some(r) = &mut data.routes {
            r.sync(now, &mut data.node);
        }
        if data.node.poll_timeout() <= now {
            if let Some(k) = &mut data.kernel {
                k.before_timeout(now, &mut data.node);
            }
            data.node.handle_timeout(now, &mut data.rng);
        }
        self.management.drop_idle_clients(now, registry);
        self.links.rescan_if_due(now, data, registry);
        data.flush(now);
        self.management.take_events(now, data);
        self.management.advance_echoes(now, data, registry);
        if let Some(k) = &mut data.kernel {
            k.sync(now, &mut data.node, &data.book, &data.ports);
        }
    }

    fn shutdown(&mut self) {
        info!("stopping");
        // Flush our advertisement from every database (best effort: what
        // the sockets take now), so that nobody routes through us until
        // it ages out.
        let data = &mut self.data;
        let now = data.now();
        data.node.leave();
        data.flush(now);
        let _ = std::fs::remove_file(&data.config.control_socket);
        for a in &data.access {
            a.shutdown();
        }
        // The kernel data path's programs go with this process (TCX
        // links); what it added besides goes now.
        if let Some(k) = &mut data.kernel {
            k.shutdown();
        }
        // The TUN device goes when its descriptor closes (on drop), and
        // the kernel removes the routes through it with it.
    }
}

/// Packets the TUN device holds for the daemon (Linux's default is 500).
/// A host's burst must fit, so that braid's scheduler, not the TUN's
/// tail drop, decides what waits and what is dropped: with 500, the
/// urgent datagram behind a burst of 1,000 was dropped before braid
/// read it. The daemon drains the queue at its own speed, so a full one
/// adds what reading 2,048 packets takes.
const TUN_QUEUE: u32 = 2048;

fn open_tun(config: &Config) -> Result<tun_rs::SyncDevice, DaemonError> {
    let t = &config.tun;
    let err = |source| DaemonError::Tun {
        name: t.name.clone(),
        source,
    };
    let mut b = tun_rs::DeviceBuilder::new()
        .name(&t.name)
        .mtu(t.mtu)
        .tx_queue_len(TUN_QUEUE);
    if let Some((addr, len)) = t.address {
        b = b.ipv4(addr, len, None);
    }
    if let Some((addr, len)) = t.address6 {
        b = b.ipv6(addr, len);
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

/// Refuses `[tun] routes` that another device routes already (another
/// braid daemon's TUN device, or the system's own route): `ip route
/// replace` would take them over, and they would go with this daemon's
/// device when it stops. Read-only: runs before the TUN device is made.
fn check_routes_free(config: &Config) -> Result<(), DaemonError> {
    let ours = &config.tun.name;
    for route in &config.tun.routes {
        let text = route.to_string();
        let family = if text.contains(':') { "-6" } else { "-4" };
        let Ok(out) = std::process::Command::new("ip")
            .args([family, "-j", "route", "show", "exact", &text])
            .output()
        else {
            // No iproute2: add_route says so when it runs.
            continue;
        };
        let Ok(list) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else {
            continue;
        };
        let other = list.as_array().into_iter().flatten().find_map(|r| {
            let dev = r["dev"].as_str()?;
            // Only the main table's unicast routes (not `unreachable`
            // and the like, which carry no device).
            (dev != ours).then(|| dev.to_string())
        });
        if let Some(dev) = other {
            return Err(DaemonError::RouteTaken { route: text, dev });
        }
    }
    Ok(())
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
