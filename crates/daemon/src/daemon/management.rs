//! The daemon's management plane ([`Management`]): signals (SIGHUP
//! reload, SIGTERM stop), the control socket and the metrics port (each
//! client served on readiness events, never blocking the loop), monitors,
//! pings and traceroutes waiting for replies, and what the node reports
//! (its events become logs, monitor events and address-book updates).
//! It works on the data plane it is given.

use std::collections::VecDeque;
use std::io::{self, ErrorKind, Read, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use braid_proto::node::NodeEvent;
use braid_proto::time::Instant;
use mio::net::{TcpListener, UnixListener, UnixStream};
use mio::unix::SourceFd;
use mio::{Interest, Registry};
use serde_json::{json, Value};
use tracing::{debug, error, info, warn};

use super::checks;
use super::dataplane::DataPlane;
use super::echo::{self, Echoes};
use super::error::{io_err, DaemonError};
use super::reload;
use super::tokens;
use crate::clients::{Client, Service, Step, Stream};
use crate::config::Config;
use crate::ctl;
use crate::kernel::KernelPath;

/// Monitor clients at most; a slow one that would block is dropped.
const MAX_MONITORS: usize = 16;

/// Seconds since the Unix epoch (for metrics' timestamps).
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// What the daemon is managed through, and what it tells.
pub(super) struct Management {
    /// Where the config is read again from.
    config_path: PathBuf,
    ctl: UnixListener,
    /// The control socket's file: removed when the daemon stops, or when
    /// a later step of its start fails.
    ctl_path: PathBuf,
    metrics: Option<TcpListener>,
    monitors: Vec<UnixStream>,
    /// Control-socket and metrics clients being served, by slot.
    clients: Vec<Option<Client>>,
    signals: StdUnixStream,
    reload_wanted: Arc<AtomicBool>,
    stop_wanted: Arc<AtomicBool>,
    /// When a duplicate node id was last logged (at most every 30 s).
    duplicate_logged_at: Option<Instant>,
    /// When the daemon started, seconds since the Unix epoch.
    started_unix: f64,
    /// The last reload: when (Unix seconds) and whether it was taken.
    last_reload: Option<(f64, bool)>,
    /// The last monitor events, for the dashboard (bounded).
    recent_events: VecDeque<String>,
    /// Pings and traceroutes waiting for their replies (`echo.rs`).
    echoes: Echoes,
    /// Each egress's primary path at the last route change (what the
    /// next `route_change` event says changed; as many as routes).
    primaries: std::collections::BTreeMap<u16, Vec<u16>>,
}

impl Drop for Management {
    fn drop(&mut self) {
        // Ours: open_ctl refused a socket another daemon answers on.
        let _ = std::fs::remove_file(&self.ctl_path);
    }
}

impl Management {
    /// Opens the metrics port if asked for, the control socket (shared
    /// with `control_group`), and the signals' pipe. The daemon's start
    /// does this before it touches anything in the kernel, so that a
    /// daemon refused here changes nothing.
    pub fn open(config_path: &Path, config: &Config) -> Result<Management, DaemonError> {
        let metrics = config
            .metrics
            .map(|addr| {
                TcpListener::bind(addr).map_err(|source| DaemonError::Metrics { addr, source })
            })
            .transpose()?;
        let ctl = open_ctl(&config.control_socket)?;
        let remove = |e| {
            let _ = std::fs::remove_file(&config.control_socket);
            e
        };
        share_ctl(&config.control_socket, config.control_group.as_deref()).map_err(remove)?;
        let (signals, reload_wanted, stop_wanted) = signal_pipe().map_err(remove)?;
        Ok(Management {
            config_path: config_path.to_path_buf(),
            ctl,
            ctl_path: config.control_socket.clone(),
            metrics,
            monitors: Vec::new(),
            clients: (0..crate::clients::MAX_CLIENTS).map(|_| None).collect(),
            signals,
            reload_wanted,
            stop_wanted,
            duplicate_logged_at: None,
            started_unix: unix_now(),
            last_reload: None,
            recent_events: Default::default(),
            echoes: Echoes::default(),
            primaries: Default::default(),
        })
    }

    /// Registers the signals' pipe, the control socket and the metrics
    /// port with the loop.
    pub fn register(&mut self, r: &Registry) -> Result<(), DaemonError> {
        use std::os::fd::AsRawFd;
        let sig_fd = self.signals.as_raw_fd();
        r.register(&mut SourceFd(&sig_fd), tokens::SIGNALS, Interest::READABLE)
            .map_err(io_err("poll signals"))?;
        r.register(&mut self.ctl, tokens::CTL, Interest::READABLE)
            .map_err(io_err("poll control socket"))?;
        if let Some(m) = &mut self.metrics {
            r.register(m, tokens::METRICS, Interest::READABLE)
                .map_err(io_err("poll metrics port"))?;
        }
        Ok(())
    }

    /// Returns true when the daemon must stop.
    pub fn read_signals(&mut self, data: &mut DataPlane) -> bool {
        let mut got = [0u8; 16];
        while matches!(self.signals.read(&mut got), Ok(n) if n > 0) {}
        if self.reload_wanted.swap(false, Ordering::SeqCst) {
            // Logged, and told to the monitors, either way.
            let _ = self.reload(data);
        }
        self.stop_wanted.load(Ordering::SeqCst)
    }

    /// What the node reported since the last call: neighbors going up and
    /// down (the address book follows), route and mode changes, refused
    /// input; logged and told to the monitors (route changes once per
    /// call, with every route).
    pub fn take_events(&mut self, now: Instant, data: &mut DataPlane) {
        let mut routes_changed = false;
        while let Some(e) = data.node.poll_event() {
            match e {
                NodeEvent::NeighborUp {
                    neighbor,
                    interface,
                } => {
                    let name = interface_name(data, interface.0 as usize);
                    let address = data
                        .book
                        .get(neighbor)
                        .map(|p| p.addr.to_string())
                        .unwrap_or_default();
                    info!(neighbor = neighbor.0, interface = %name, %address, "neighbor up");
                    data.touch_kernel();
                    self.emit_event(
                        e.kind(),
                        now,
                        json!({ "neighbor": neighbor.0, "interface": name, "address": address }),
                    );
                }
                NodeEvent::NeighborMoved { .. } => data.touch_kernel(),
                NodeEvent::NeighborDown { neighbor, why } => {
                    data.book.remove(neighbor);
                    data.touch_kernel();
                    info!(neighbor = neighbor.0, why = why.as_str(), "neighbor down");
                    self.emit_event(
                        e.kind(),
                        now,
                        json!({ "neighbor": neighbor.0, "why": why.as_str() }),
                    );
                }
                NodeEvent::RouteChange { .. } => {
                    routes_changed = true;
                    data.touch_kernel();
                }
                NodeEvent::ModeChange {
                    egress,
                    class,
                    mode,
                } => {
                    info!(egress = egress.0, class, mode = %mode, "session mode");
                    data.touch_kernel();
                    self.emit_event(
                        "session_mode",
                        now,
                        json!({ "egress": egress.0, "class": class, "mode": mode.to_string() }),
                    );
                }
                NodeEvent::Refused { reason } => debug!(
                    reason = reason.reason(),
                    counter = reason.counter().name(),
                    "datagram refused"
                ),
                NodeEvent::EchoReply { from, seq, .. } => self.echoes.reply(now, from, seq),
                NodeEvent::DuplicateId { sign, interface } => {
                    let name = interface_name(data, interface.0 as usize);
                    let quiet = self
                        .duplicate_logged_at
                        .is_some_and(|t| now.since(t) < Duration::from_secs(30));
                    if !quiet {
                        self.duplicate_logged_at = Some(now);
                        error!(
                            node = data.node.id().0,
                            interface = %name,
                            sign = sign.as_str(),
                            "ANOTHER ROUTER USES THIS NODE ID: the two fight over the link-state \
                             database and routes through both are wrong. Give one of them another \
                             `node` in its config and restart it. A restart of this router does not \
                             raise this: with keys, the other router answered a challenge just now \
                             (it is live), or advertisements of this id numbered past this \
                             router's own keep arriving (`braid ctl status` shows the last sign; \
                             logged at most every 30 s)"
                        );
                    }
                    self.emit_event(e.kind(), now, json!({ "sign": sign, "interface": name }));
                }
            }
        }
        if routes_changed {
            let routes = ctl::route_list(&data.node);
            let changed = ctl::primary_changes(&mut self.primaries, &routes);
            self.emit_event(
                "route_change",
                now,
                json!({ "changed": changed, "routes": routes }),
            );
        }
    }

    /// The uplink changed: logged (a warning when it went down) and told
    /// to the monitors (`uplink`).
    pub fn uplink_changed(&mut self, now: Instant, c: &crate::uplink::UplinkChange) {
        let prefixes: Vec<String> = c.prefixes.iter().map(|p| p.to_string()).collect();
        let answered: Vec<String> = c.answered.iter().map(|a| a.to_string()).collect();
        if c.healthy {
            info!(
                ?prefixes,
                ?answered,
                "uplink healthy: its prefixes are advertised"
            );
        } else {
            warn!(
                ?prefixes,
                ?answered,
                "uplink down (too few targets answer): its prefixes are withdrawn"
            );
        }
        self.emit_event(
            "uplink",
            now,
            json!({ "healthy": c.healthy, "prefixes": prefixes, "answered": answered }),
        );
    }

    /// SIGHUP: reads the config again. An invalid file is refused and the
    /// running config kept; a valid one takes effect at once for what can
    /// change while running (redundancy policy and classes, the neighbor
    /// timeout), and what needs a restart (node id, interfaces, port, TUN)
    /// is named in the log.
    /// Returns the fields that changed but take effect only at the next
    /// start, or why the file was refused.
    pub fn reload(&mut self, data: &mut DataPlane) -> Result<Vec<String>, String> {
        let now = data.now();
        let new = match Config::load(&self.config_path) {
            Ok(c) => c,
            Err(e) => {
                data.counters.reloads_refused += 1;
                self.last_reload = Some((unix_now(), false));
                warn!(error = %e, "reload refused; keeping the running config");
                self.emit_event("reload_refused", now, json!({ "error": e.to_string() }));
                return Err(e.to_string());
            }
        };
        let old = data.config.clone();
        // The log level changes at once where this process's log is
        // braid's own (`crate::logging`).
        let log_live = new.log == old.log || crate::logging::set_level(&new.log);
        if new.log != old.log && log_live {
            info!(level = %new.log, "log level changed");
        }
        let needs_restart = reload::restart_needed(&old, &new, log_live);
        let modes_changed = new.node_config.policy != old.node_config.policy
            || new.node_config.classifier != old.node_config.classifier;
        if modes_changed {
            data.node.set_policy(
                now,
                new.node_config.policy.clone(),
                new.node_config.classifier.clone(),
            );
            if let Some(k) = &mut data.kernel {
                k.set_classifier(&mut data.node, &new.node_config.classifier);
            }
            data.flush(now);
            self.emit_event(
                "mode_change",
                now,
                json!({ "default": new.node_config.policy.default.to_string() }),
            );
        }
        // Keys take effect at once: rotating one is three reloads
        // (docs/security.md).
        let auth = new.node_config.control.auth.clone();
        let keys_changed = auth != old.node_config.control.auth;
        if keys_changed {
            let node = data.node.id().0;
            // Checked when the config was read: it cannot fail here.
            if let Err(e) = data.node.set_auth(auth.clone()) {
                warn!(error = %e, "reload: keys refused");
            } else {
                let ids: Vec<u8> = auth.keys.iter().map(|k| k.id).collect();
                info!(node, keys = ?ids, "authentication keys changed");
                checks::warn_if_unauthenticated(&new);
            }
        }
        // The origin key and roster too: revoking a key is a roster
        // without it, and a reload (docs/security.md).
        let origins = new.node_config.control.origins.clone();
        if origins != old.node_config.control.origins {
            match data.node.set_origins(origins.clone()) {
                Ok(()) => info!(
                    signing = origins.key.is_some(),
                    roster = origins.roster.as_ref().map_or(0, |r| r.len()),
                    "origin key or roster changed"
                ),
                Err(e) => warn!(error = %e, "reload: origin key or roster refused"),
            }
        }
        // A neighbor timeout that follows the running probe interval.
        let timeout = Some(old.node_config.control.probes.small_interval * new.dead_after);
        data.node.set_neighbor_timeout(timeout);
        if !needs_restart.is_empty() {
            warn!(fields = ?needs_restart, "reload: these take effect at the next start");
        }
        data.counters.reloads += 1;
        info!(modes_changed, "config reloaded");
        // Keep what is running for the fields that need a restart.
        data.config = reload::running_after(old, new, timeout, auth, origins, log_live);
        let costs = data.config.node_config.cost_overrides.clone();
        if costs != data.node.config().cost_overrides {
            info!(costs = ?data.config.costs, "cost factors changed");
            data.node.set_cost_overrides(costs);
        }
        self.last_reload = Some((unix_now(), true));
        Ok(needs_restart)
    }

    pub fn accept_ctl(&mut self, data: &mut DataPlane, registry: &Registry) {
        loop {
            match self.ctl.accept() {
                Ok((stream, _)) => {
                    self.add_client(Service::Ctl, Stream::Unix(stream), data, registry)
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => {
                    debug!(error = %e, "control socket accept failed");
                    return;
                }
            }
        }
    }

    pub fn accept_metrics(&mut self, data: &mut DataPlane, registry: &Registry) {
        loop {
            let Some(listener) = &self.metrics else {
                return;
            };
            match listener.accept() {
                Ok((stream, _)) => {
                    self.add_client(Service::Metrics, Stream::Tcp(stream), data, registry)
                }
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
    fn add_client(
        &mut self,
        service: Service,
        mut stream: Stream,
        data: &mut DataPlane,
        registry: &Registry,
    ) {
        let Some(slot) = self.clients.iter().position(Option::is_none) else {
            data.counters.clients_refused += 1;
            return;
        };
        let token = tokens::client(slot);
        if registry
            .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
            .is_err()
        {
            return;
        }
        self.clients[slot] = Some(Client::new(service, stream, data.now()));
        self.client_event(slot, true, false, data, registry);
    }

    /// A client's socket is ready: read its request, answer it, write the
    /// answer, as far as the socket allows now.
    pub fn client_event(
        &mut self,
        slot: usize,
        readable: bool,
        writable: bool,
        data: &mut DataPlane,
        registry: &Registry,
    ) {
        let Some(mut client) = self.clients.get_mut(slot).and_then(Option::take) else {
            return;
        };
        let now = data.now();
        let mut step = Step::Wait;
        if readable {
            step = client.on_readable(now);
        }
        if let Step::Request(line) = &step {
            step = match client.service {
                Service::Ctl if line.trim() == "monitor" => {
                    data.counters.ctl_requests += 1;
                    let _ = registry.deregister(&mut client.stream);
                    if let Stream::Unix(stream) = client.stream {
                        self.add_monitor(stream, data);
                    }
                    return;
                }
                Service::Ctl if echo::is_echo_request(line) => {
                    // Answered when the replies are in (echo.rs): the
                    // client waits in its slot, the loop does not.
                    data.counters.ctl_requests += 1;
                    let labels = &data.config.labels;
                    match self
                        .echoes
                        .start(slot, line.trim(), &data.node, labels, now)
                    {
                        Ok(()) => Step::Wait,
                        Err(doc) => client.answer(ctl::line(&doc), now),
                    }
                }
                Service::Ctl => {
                    let reply = self.ctl_reply(line.trim(), data);
                    client.answer(reply, now)
                }
                Service::Metrics => {
                    let reply = self.metrics_reply(line, data);
                    client.answer(reply, now)
                }
            };
        } else if writable && step == Step::Wait {
            step = client.on_writable(now);
        }
        match step {
            Step::Close { bad } => {
                if bad && client.service == Service::Ctl {
                    data.counters.ctl_bad_requests += 1;
                }
                let _ = registry.deregister(&mut client.stream);
            }
            _ => self.clients[slot] = Some(client),
        }
    }

    /// Drops clients that have made no progress for `clients::IDLE`.
    pub fn drop_idle_clients(&mut self, now: Instant, registry: &Registry) {
        for slot in &mut self.clients {
            if slot.as_ref().is_some_and(|c| c.idle(now)) {
                if let Some(mut c) = slot.take() {
                    let _ = registry.deregister(&mut c.stream);
                }
            }
        }
    }

    /// `monitor`: the connection stays open for events, written without
    /// waiting (a monitor that cannot take a whole line is dropped).
    fn add_monitor(&mut self, mut stream: UnixStream, data: &DataPlane) {
        if self.monitors.len() >= MAX_MONITORS {
            let _ = stream.write_all(b"{\"error\":\"too many monitors\"}\n");
            return;
        }
        let hello = ctl::event("hello", data.now(), json!({ "node": data.config.node.0 }));
        if matches!(stream.write(hello.as_bytes()), Ok(n) if n == hello.len()) {
            self.monitors.push(stream);
        }
    }

    /// The answer to a ctl command, one JSON document and a line end.
    fn ctl_reply(&mut self, command: &str, data: &mut DataPlane) -> Vec<u8> {
        data.counters.ctl_requests += 1;
        if command == "stats" {
            data.read_kernel_drops();
        }
        let doc = if command == "reload" {
            match self.reload(data) {
                Ok(restart) => serde_json::json!({
                    "version": ctl::CTL_VERSION,
                    "node": data.config.node.0,
                    "reloaded": true,
                    "restart_needed": restart,
                }),
                Err(e) => ctl::error_doc(&format!("reload refused, the running config kept: {e}")),
            }
        } else {
            match ctl::answer(command, &data.view()) {
                Some(doc) => doc,
                None => {
                    data.counters.ctl_bad_requests += 1;
                    ctl::error_doc(&format!(
                        "unknown command \"{command}\"; commands: {}",
                        ctl::COMMANDS.join(", ")
                    ))
                }
            }
        };
        ctl::line(&doc)
    }

    /// The answer to an HTTP request line on the metrics port: `/metrics`
    /// (Prometheus) or `/topology` (NetJSON).
    fn metrics_reply(&self, request_line: &str, data: &mut DataPlane) -> Vec<u8> {
        let mut words = request_line.split_whitespace();
        let method = words.next().unwrap_or("");
        let path = words.next().unwrap_or("");
        if method != "GET" && method != "HEAD" {
            return crate::metrics::response(
                "405 Method Not Allowed\r\nAllow: GET, HEAD",
                "text/plain",
                "only GET and HEAD are served here\n",
            )
            .into_bytes();
        }
        if path == "/metrics" {
            data.read_kernel_drops();
        }
        match path {
            "/metrics" => crate::metrics::response(
                "200 OK",
                "text/plain; version=0.0.4",
                &crate::metrics::prometheus(
                    &data.node,
                    data.now(),
                    data.node.neighbors().len(),
                    &data.counters,
                    crate::metrics::Parts {
                        kernel: data.kernel.as_ref().map(KernelPath::report).as_ref(),
                        uplink: data.uplink.as_ref(),
                        routes: data.routes.as_ref().map(|r| r.counters()),
                    },
                    crate::metrics::ProcessFacts {
                        started_unix: self.started_unix,
                        last_reload: self.last_reload,
                    },
                ),
            ),
            "/topology" => crate::metrics::response(
                "200 OK",
                "application/json",
                &crate::metrics::netjson(&data.node, &data.config.labels),
            ),
            "/" => crate::metrics::response(
                "200 OK",
                "text/html; charset=utf-8",
                crate::dashboard::PAGE,
            ),
            "/state" => crate::metrics::response(
                "200 OK",
                "application/json",
                &crate::dashboard::state(
                    &data.view(),
                    &data.config.node_config.policy.default.to_string(),
                    &self.recent_events,
                ),
            ),
            _ => crate::metrics::response(
                "404 Not Found",
                "text/plain",
                "try / (the dashboard), /metrics, /topology or /state\n",
            ),
        }
        .into_bytes()
    }

    fn emit_event(&mut self, kind: &str, now: Instant, fields: Value) {
        let line = ctl::event(kind, now, fields);
        // The dashboard shows the last few, whether anyone monitors or not.
        if self.recent_events.len() == crate::dashboard::RECENT_EVENTS {
            self.recent_events.pop_front();
        }
        self.recent_events.push_back(line.trim_end().to_string());
        if self.monitors.is_empty() {
            return;
        }
        // A monitor that cannot take a whole line now is dropped: the
        // daemon never waits for a client, and never buffers for one.
        self.monitors
            .retain_mut(|m| matches!(m.write(line.as_bytes()), Ok(n) if n == line.len()));
    }

    /// When the next echo is due or a request's wait ends.
    pub fn echo_timeout(&self) -> Option<Instant> {
        self.echoes.timeout()
    }

    /// Sends the echoes that are due, and answers the requests that are
    /// done.
    pub fn advance_echoes(&mut self, now: Instant, data: &mut DataPlane, registry: &Registry) {
        if self.echoes.is_empty() {
            return;
        }
        for (slot, doc) in self.echoes.advance(now, &mut data.node) {
            self.answer_slot(slot, doc, now, registry);
        }
        data.flush(now);
    }

    /// Answers the control client in `slot` (if it is still there).
    fn answer_slot(&mut self, slot: usize, doc: Value, now: Instant, registry: &Registry) {
        let Some(mut client) = self.clients.get_mut(slot).and_then(Option::take) else {
            return;
        };
        match client.answer(ctl::line(&doc), now) {
            Step::Close { .. } => {
                let _ = registry.deregister(&mut client.stream);
            }
            _ => self.clients[slot] = Some(client),
        }
    }
}

/// Configured interface `i`'s name ("" for none).
fn interface_name(data: &DataPlane, i: usize) -> String {
    data.config.interfaces.get(i).cloned().unwrap_or_default()
}

/// The pipe that wakes the loop on a signal, and the flags the signals
/// set: (read end, reload wanted, stop wanted).
fn signal_pipe() -> Result<(StdUnixStream, Arc<AtomicBool>, Arc<AtomicBool>), DaemonError> {
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
    Ok((signals, reload, stop))
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
