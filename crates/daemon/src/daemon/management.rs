//! The daemon's management plane: signals (SIGHUP reload, SIGTERM stop),
//! the control socket and the metrics port (each client served on
//! readiness events, never blocking the loop), monitors, and what the
//! node reports (its events become logs, monitor events and address-book
//! updates).

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use braid_proto::node::{NodeConfig, NodeEvent};
use braid_proto::time::Instant;
use mio::net::UnixStream;
use mio::{Interest, Token};
use serde_json::json;
use tracing::{debug, error, info, warn};

use super::{io_err, Daemon, DaemonError, CLIENT_BASE};
use crate::clients::{Client, Service, Step, Stream};
use crate::config::Config;
use crate::ctl::{self, View};
use crate::kernel::KernelPath;

/// Monitor clients at most; a slow one that would block is dropped.
const MAX_MONITORS: usize = 16;

/// The pipe that wakes the loop on a signal, and the flags the signals
/// set: (read end, reload wanted, stop wanted).
pub(super) fn signal_pipe() -> Result<(StdUnixStream, Arc<AtomicBool>, Arc<AtomicBool>), DaemonError>
{
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

impl Daemon {
    /// Returns true when the daemon must stop.
    pub(super) fn read_signals(&mut self) -> bool {
        let mut got = [0u8; 16];
        while matches!(self.signals.read(&mut got), Ok(n) if n > 0) {}
        if self.reload_wanted.swap(false, Ordering::SeqCst) {
            // Logged, and told to the monitors, either way.
            let _ = self.reload();
        }
        self.stop_wanted.load(Ordering::SeqCst)
    }

    /// What the node reported since the last call: neighbors going up and
    /// down (the address book follows), route and mode changes, refused
    /// input; logged and told to the monitors (route changes once per
    /// call, with every route).
    pub(super) fn take_events(&mut self, now: Instant) {
        let mut routes_changed = false;
        while let Some(e) = self.node.poll_event() {
            match e {
                NodeEvent::NeighborUp {
                    neighbor,
                    interface,
                } => {
                    let name = self.interface_name(interface.0 as usize);
                    let address = self
                        .book
                        .get(neighbor)
                        .map(|p| p.addr.to_string())
                        .unwrap_or_default();
                    info!(neighbor = neighbor.0, interface = %name, %address, "neighbor up");
                    self.touch_kernel();
                    self.emit_event(
                        e.kind(),
                        now,
                        json!({ "neighbor": neighbor.0, "interface": name, "address": address }),
                    );
                }
                NodeEvent::NeighborMoved { .. } => self.touch_kernel(),
                NodeEvent::NeighborDown { neighbor, why } => {
                    self.book.remove(neighbor);
                    self.touch_kernel();
                    info!(neighbor = neighbor.0, why = why.as_str(), "neighbor down");
                    self.emit_event(
                        e.kind(),
                        now,
                        json!({ "neighbor": neighbor.0, "why": why.as_str() }),
                    );
                }
                NodeEvent::RouteChange { .. } => {
                    routes_changed = true;
                    self.touch_kernel();
                }
                NodeEvent::ModeChange {
                    egress,
                    class,
                    mode,
                } => {
                    info!(egress = egress.0, class, mode = %mode, "session mode");
                    self.touch_kernel();
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
                NodeEvent::EchoReply { from, seq, .. } => self.echo_reply(now, from, seq),
                NodeEvent::DuplicateId { sign, interface } => {
                    let name = self.interface_name(interface.0 as usize);
                    let quiet = self
                        .duplicate_logged_at
                        .is_some_and(|t| now.since(t) < Duration::from_secs(30));
                    if !quiet {
                        self.duplicate_logged_at = Some(now);
                        error!(
                            node = self.node.id().0,
                            interface = %name,
                            sign = sign.as_str(),
                            "ANOTHER ROUTER USES THIS NODE ID: the two fight over the link-state \
                             database and routes through both are wrong. Give one of them another \
                             `node_id` in its config and restart it (`braid ctl status` shows the \
                             last sign; logged at most every 30 s)"
                        );
                    }
                    self.emit_event(e.kind(), now, json!({ "sign": sign, "interface": name }));
                }
            }
        }
        if routes_changed {
            let routes = ctl::route_list(&self.node);
            self.emit_event("route_change", now, json!({ "routes": routes }));
        }
    }

    /// Something the kernel data path follows changed.
    pub(super) fn touch_kernel(&mut self) {
        if let Some(k) = &mut self.kernel {
            k.touch();
        }
    }

    fn interface_name(&self, i: usize) -> String {
        self.config.interfaces.get(i).cloned().unwrap_or_default()
    }

    /// SIGHUP: reads the config again. An invalid file is refused and the
    /// running config kept; a valid one takes effect at once for what can
    /// change while running (redundancy policy and classes, the neighbor
    /// timeout), and what needs a restart (node id, interfaces, port, TUN)
    /// is named in the log.
    /// Returns the fields that changed but take effect only at the next
    /// start, or why the file was refused.
    pub(super) fn reload(&mut self) -> Result<Vec<&'static str>, String> {
        let now = self.now();
        let new = match Config::load(&self.config_path) {
            Ok(c) => c,
            Err(e) => {
                self.counters.reloads_refused += 1;
                self.last_reload = Some((super::unix_now(), false));
                warn!(error = %e, "reload refused; keeping the running config");
                self.emit_event("reload_refused", now, json!({ "error": e.to_string() }));
                return Err(e.to_string());
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
        if new.control_socket != old.control_socket || new.control_group != old.control_group {
            needs_restart.push("control_socket/control_group");
        }
        if new.send_buffer != old.send_buffer {
            needs_restart.push("send_buffer");
        }
        if new.datapath != old.datapath {
            needs_restart.push("datapath");
        }
        if new.kernel_delivery != old.kernel_delivery {
            needs_restart.push("kernel_delivery");
        }
        if new.access != old.access {
            needs_restart.push("access");
        }
        if new.lan_interfaces != old.lan_interfaces {
            needs_restart.push("lan_interfaces");
        }
        // The node's other settings (prefixes, paths, probes, re-order,
        // windows, late binding) are fixed while it runs.
        let live = |c: &NodeConfig| {
            let mut c = NodeConfig {
                policy: old.node_config.policy.clone(),
                classifier: old.node_config.classifier.clone(),
                neighbor_timeout: old.node_config.neighbor_timeout,
                ..c.clone()
            };
            c.control.auth = old.node_config.control.auth.clone();
            c
        };
        if live(&new.node_config) != old.node_config {
            needs_restart.push(
                "prefixes/paths/probes/reorder/windows/late_binding/client_margin/client_hold",
            );
        }
        let modes_changed = new.node_config.policy != old.node_config.policy
            || new.node_config.classifier != old.node_config.classifier;
        if modes_changed {
            self.node.set_policy(
                now,
                new.node_config.policy.clone(),
                new.node_config.classifier.clone(),
            );
            if let Some(k) = &mut self.kernel {
                k.set_classifier(&mut self.node, &new.node_config.classifier);
            }
            self.flush(now);
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
            let node = self.node.id().0;
            // Checked when the config was read: it cannot fail here.
            if let Err(e) = self.node.set_auth(auth.clone()) {
                warn!(error = %e, "reload: keys refused");
            } else {
                let ids: Vec<u8> = auth.keys.iter().map(|k| k.id).collect();
                info!(node, keys = ?ids, "authentication keys changed");
                super::checks::warn_if_unauthenticated(&new);
            }
        }
        // A neighbor timeout that follows the running probe interval.
        let timeout = Some(old.node_config.control.probes.small_interval * new.dead_after);
        self.node.set_neighbor_timeout(timeout);
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
        kept.control_group = old.control_group;
        kept.send_buffer = old.send_buffer;
        kept.access = old.access;
        kept.lan_interfaces = old.lan_interfaces;
        kept.node_config = NodeConfig {
            policy: kept.node_config.policy,
            classifier: kept.node_config.classifier,
            neighbor_timeout: timeout,
            ..old.node_config
        };
        kept.node_config.control.auth = auth;
        self.config = kept;
        self.last_reload = Some((super::unix_now(), true));
        Ok(needs_restart)
    }

    pub(super) fn accept_ctl(&mut self) {
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

    pub(super) fn accept_metrics(&mut self) {
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
    pub(super) fn client_event(&mut self, slot: usize, readable: bool, writable: bool) {
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
                Service::Ctl if super::echo::is_echo_request(line) => {
                    // Answered when the replies are in (echo.rs): the
                    // client waits in its slot, the loop does not.
                    self.counters.ctl_requests += 1;
                    match self.start_echo(slot, line.trim()) {
                        Ok(()) => Step::Wait,
                        Err(doc) => client.answer(ctl::line(&doc), now),
                    }
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
    pub(super) fn drop_idle_clients(&mut self, now: Instant) {
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
    fn view(&self) -> View<'_> {
        View {
            node: &self.node,
            now: self.now(),
            started: self.started,
            interfaces: &self.config.interfaces,
            book: &self.book,
            io: &self.counters,
            kernel: self.kernel.as_ref(),
            access: &self.access,
        }
    }

    fn ctl_reply(&mut self, command: &str) -> Vec<u8> {
        self.counters.ctl_requests += 1;
        let doc = if command == "reload" {
            match self.reload() {
                Ok(restart) => serde_json::json!({
                    "version": ctl::CTL_VERSION,
                    "node": self.config.node.0,
                    "reloaded": true,
                    "restart_needed": restart,
                }),
                Err(e) => ctl::error_doc(&format!("reload refused, the running config kept: {e}")),
            }
        } else {
            match ctl::answer(command, &self.view()) {
                Some(doc) => doc,
                None => {
                    self.counters.ctl_bad_requests += 1;
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
    fn metrics_reply(&self, request_line: &str) -> Vec<u8> {
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
        match path {
            "/metrics" => crate::metrics::response(
                "200 OK",
                "text/plain; version=0.0.4",
                &crate::metrics::prometheus(
                    &self.node,
                    self.now(),
                    self.node.neighbors().len(),
                    &self.counters,
                    self.kernel.as_ref().map(KernelPath::report).as_ref(),
                    crate::metrics::ProcessFacts {
                        started_unix: self.started_unix,
                        last_reload: self.last_reload,
                    },
                ),
            ),
            "/topology" => crate::metrics::response(
                "200 OK",
                "application/json",
                &crate::metrics::netjson(&self.node, &self.config.labels),
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
                    &self.view(),
                    &self.config.labels,
                    &self.config.node_config.policy.default.to_string(),
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

    pub(super) fn emit_event(&mut self, kind: &str, now: Instant, fields: serde_json::Value) {
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
}
