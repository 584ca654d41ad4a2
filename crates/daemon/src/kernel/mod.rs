//! The kernel data path's control plane: what the kernel does here
//! (transit, the egress, which ingress sessions) and its maps kept in
//! step with the node. The programs and their maps are `braid_bpf`'s;
//! the decisions are the node's; this module carries one to the other.
//!
//! * **Transit** runs in the kernel whenever the programs load.
//! * **The egress** runs there unless re-ordering is on or the dedup
//!   window exceeds the kernel's 8,192 numbers (user space keeps those).
//!   Groups (parity, erasure) and the control class always go up.
//! * **The ingress** runs there only without late binding
//!   (`late_binding = 0`): the kernel cannot hold a packet above the
//!   binding point, so with late binding on every session is encoded in
//!   user space, where the scheduler keeps at most `late_binding`
//!   datagrams below it. A session opens in user space (its first
//!   packets cross the daemon), is lent to the kernel within one sync
//!   (its epoch, and numbers from a gap ahead on: see
//!   `IngressSession::lend`), follows route and mode changes, and comes
//!   back (with the kernel's next number) when its mode is one the kernel
//!   does not do, when packets keep reaching user space (IPv6, say), or
//!   when it goes idle.
//!
//! * **Trees** (tree mode, zero bytes added): marked packets are forwarded
//!   by their entry point's tree and delivered to the clients served here
//!   whenever the programs load; packets entering the mesh here are
//!   marked in the kernel when every packet entering here goes in tree
//!   mode (`mode = "tree"` with no policy that says otherwise: the kernel
//!   does not classify for trees). The tables are this router's part of
//!   each entry point's tree toward each client, recomputed when the
//!   link-state database changes.
//!
//! * **Interfaces that come and go**: `braid_rx` is attached to every
//!   braid interface there at start, and to one that appears later when
//!   the daemon opens it ([`KernelPath::port_opened`]); taken off one
//!   that goes away ([`KernelPath::port_closed`]). Whether the ingress
//!   finishes checksums (a virtual interface among them) is decided
//!   again each time.
//!
//! Every map write replaces one whole entry (the maps without
//! preallocation swap entries atomically): no packet sees half a session.
//! The programs hang on TCX links owned by this process: they go when it
//!
//! | module | owns |
//! |---|---|
//! | `report` | [`KernelReport`] and its parts: what `braid ctl stats` and the metrics show |
//! | `error` | [`KernelError`] |
//! | `host` | commands, interfaces and addresses of the host; the segmenter veth pair |
//! | `tables` | neighbors, our addresses, senders, prefixes and trees, kept in step |
//! | `lending` | the ingress sessions lent to the kernel, and taken back |
//! | `egress` | the egress's dedup windows read back |
//!
//! This file holds [`KernelPath`], which starts the data path and calls
//! on the others in turn.

mod delivery;
mod egress;
mod error;
mod host;
mod lending;
mod report;
mod tables;

use std::time::Duration;

use braid_bpf::compile;
use braid_bpf::maps::{self, Settings, MAX_WINDOW};
use braid_bpf::{Attachment, Datapath, Program};
use braid_proto::node::Node;
use braid_proto::redundancy::dedup::DedupWindow;
use braid_proto::redundancy::Mode;
use braid_proto::time::Instant;
use braid_wire::NodeId;
use tracing::{info, warn};

pub use error::KernelError;
pub use lending::LEND_GAP;
pub use report::{
    KernelCounters, KernelEgressEntry, KernelIngressEntry, KernelReport, PathPackets,
};

use crate::config::{Config, DatapathChoice};
use crate::neighbors::AddressBook;
use crate::underlay::Port;
use delivery::Delivery;
use host::{checksums, ifindex, virtual_ports, Segmenter};
use lending::Lending;
use tables::Tables;

/// How often sessions are looked at for lending (besides events).
const SYNC_EVERY: Duration = Duration::from_millis(50);
/// How often the kernel's windows and counters are read (and right
/// before the node's path reports: [`KernelPath::before_timeout`]).
const SWEEP_EVERY: Duration = Duration::from_millis(500);

/// The kernel data path, running.
pub struct KernelPath {
    dp: Datapath,
    flags: u32,
    window_mask: u32,
    why_no_egress: Option<String>,
    why_no_ingress: Option<String>,
    checksums: String,
    tun_ifindex: u32,
    hop_limit: u8,
    /// Neighbors, addresses, senders, prefixes and trees as written.
    tables: Tables,
    /// The link-state database version the prefixes and trees follow.
    prefixes_seen: u64,
    /// The ingress sessions the kernel encodes.
    lending: Lending,
    why_no_tree_entry: Option<String>,
    /// LAN ports whose receive side encodes (`lan_interfaces`).
    lan_ports: Vec<String>,
    /// `braid_rx` on each configured interface (by its position in the
    /// config): `None` while it is missing.
    rx: Vec<Option<Attachment>>,
    segmenter: Option<Segmenter>,
    next_sync: Instant,
    next_sweep: Instant,
    /// Something changed (neighbors, routes, modes): sync at once.
    dirty: bool,
    report: KernelReport,
    counters: KernelCounters,
    /// How the egress hands delivered packets on (`kernel_delivery`).
    delivery: Delivery,
}

impl KernelPath {
    /// Starts the kernel data path as `config` chooses: `None` for
    /// `user`, and for `auto` where the kernel refuses it (said once, with
    /// the reason); an error for `kernel` where it is refused.
    pub fn start(
        config: &Config,
        ports: &[Option<Port>],
    ) -> Result<Option<KernelPath>, KernelError> {
        let r = match config.datapath {
            DatapathChoice::User => {
                info!("data path: user space (datapath = \"user\")");
                return Ok(None);
            }
            _ => Self::load(config, ports),
        };
        match (r, config.datapath) {
            (Ok(k), _) => {
                info!(
                    egress = k.why_no_egress.as_deref().unwrap_or("kernel"),
                    ingress = k.why_no_ingress.as_deref().unwrap_or("kernel"),
                    "data path: kernel (eBPF) for transit"
                );
                Ok(Some(k))
            }
            (Err(e), DatapathChoice::Auto) => {
                warn!(error = %e, "the kernel data path is unavailable; running the user-space data path (datapath = \"auto\")");
                Ok(None)
            }
            (Err(e), _) => Err(e),
        }
    }

    fn load(config: &Config, ports: &[Option<Port>]) -> Result<KernelPath, KernelError> {
        let nc = &config.node_config;
        let mut dp = Datapath::load(
            config.node.0,
            config.port,
            nc.sessions.max as u32,
            nc.control.links.max_neighbors as u32,
        )?;
        let tun_ifindex = ifindex(&config.tun.name)?;
        let window = DedupWindow::new(nc.egress.dedup_window).size();
        let why_no_egress = if nc.egress.reorder.is_some() {
            Some("user space: re-ordering is on".to_string())
        } else if window > MAX_WINDOW {
            Some(format!(
                "user space: dedup_window {window} exceeds the kernel's {MAX_WINDOW}"
            ))
        } else {
            None
        };
        let why_no_ingress = nc.late_binding.map(|l| {
            format!(
                "user space: late binding (late_binding = {}) needs the user-space scheduler; late_binding = 0 lets the kernel encode",
                l.bound
            )
        });
        let mut flags = maps::TRANSIT | maps::TREES;
        let policy = &nc.policy;
        let why_no_tree_entry = if policy.default != Mode::Tree {
            Some(format!("user space: the mode here is {}", policy.default))
        } else if !policy.classes.is_empty() || !policy.peers.is_empty() {
            Some("user space: policies choose modes by class (the kernel does not classify for trees)".to_string())
        } else {
            flags |= maps::TREE_ENTRY;
            None
        };
        let mut delivery = Delivery::off();
        if why_no_egress.is_none() {
            flags |= maps::EGRESS;
            delivery = Delivery::start(config.kernel_delivery, &config.tun.name);
            if delivery.route() {
                flags |= maps::ROUTE_DELIVERED;
            }
        }
        let mut segmenter = None;
        if why_no_ingress.is_none() {
            flags |= maps::INGRESS;
        }
        if flags & (maps::INGRESS | maps::TREE_ENTRY) != 0 {
            segmenter = Some(Segmenter::create(config.node)?);
        }
        let (finish, checksums) = checksums(flags & maps::INGRESS != 0, &virtual_ports(ports));
        if finish {
            flags |= maps::FINISH_CHECKSUMS;
        }
        let mut rx = Vec::with_capacity(ports.len());
        for p in ports {
            rx.push(match p {
                Some(p) => Some(dp.attach(Program::Rx, &p.name)?),
                None => None,
            });
        }
        if flags & maps::INGRESS != 0 {
            dp.attach(Program::Tx, &config.tun.name)?;
            for lan in &config.lan_interfaces {
                dp.attach(Program::LanRx, lan)?;
            }
        } else if !config.lan_interfaces.is_empty() {
            warn!("lan_interfaces: the ingress is in user space here (late binding); nothing is encoded at the LAN ports");
        }
        if flags & maps::TREE_ENTRY != 0 {
            dp.attach(Program::TreeTx, &config.tun.name)?;
        }
        let mut k = KernelPath {
            dp,
            flags,
            window_mask: window - 1,
            why_no_egress,
            why_no_ingress,
            checksums,
            tun_ifindex,
            hop_limit: nc.ingress.hop_limit,
            tables: Tables::default(),
            prefixes_seen: u64::MAX,
            lending: Lending::default(),
            why_no_tree_entry,
            lan_ports: if flags & maps::INGRESS != 0 {
                config.lan_interfaces.clone()
            } else {
                Vec::new()
            },
            rx,
            segmenter: None,
            next_sync: Instant::ZERO,
            next_sweep: Instant::ZERO,
            dirty: true,
            report: KernelReport::default(),
            counters: KernelCounters::default(),
            delivery,
        };
        if let Some(seg) = segmenter {
            if flags & maps::INGRESS != 0 {
                k.dp.attach(Program::TxL2, &seg.inner)?;
            }
            if flags & maps::TREE_ENTRY != 0 {
                // Tree-mode GSO packets come back cut up: marked here.
                k.dp.attach_ingress_first(Program::TreeTx, &seg.inner)?;
            }
            k.segmenter = Some(seg);
        }
        if flags & maps::INGRESS != 0 {
            let rules = compile::ruleset(&nc.classifier).map_err(|e| KernelError::Setup {
                what: "the classifier in the kernel".into(),
                message: e.to_string(),
            })?;
            k.dp.set_ruleset(&rules)?;
        }
        k.write_settings()?;
        Ok(k)
    }

    fn write_settings(&mut self) -> Result<(), KernelError> {
        let segmenter_ifindex = match &self.segmenter {
            Some(s) => ifindex(&s.outer)?,
            None => 0,
        };
        self.dp.set_settings(Settings {
            flags: self.flags,
            window_mask: self.window_mask,
            tun_ifindex: self.tun_ifindex,
            segmenter_ifindex,
            hop_limit: self.hop_limit,
            pad: [0; 7],
        })?;
        Ok(())
    }

    /// Configured interface `i` (of `ports`) was opened while the data
    /// path runs (it appeared, or came back): `braid_rx` goes on it, and
    /// the maps follow at the next sync. An error leaves the interface
    /// to user space (everything arriving on it crosses the daemon).
    pub fn port_opened(&mut self, i: usize, ports: &[Option<Port>]) -> Result<(), KernelError> {
        let Some(Some(p)) = ports.get(i) else {
            return Ok(());
        };
        if self.rx.len() < ports.len() {
            self.rx.resize_with(ports.len(), || None);
        }
        if let Some(old) = self.rx[i].take() {
            let _ = self.dp.detach(old);
        }
        let attached = self.dp.attach(Program::Rx, &p.name);
        self.ports_changed(ports);
        self.rx[i] = Some(attached?);
        Ok(())
    }

    /// Configured interface `i` was closed (it went away): `braid_rx`
    /// comes off it (a device removed took the link's use with it; a
    /// renamed one is no braid interface any more).
    pub fn port_closed(&mut self, i: usize, ports: &[Option<Port>]) {
        if let Some(a) = self.rx.get_mut(i).and_then(Option::take) {
            if self.dp.detach(a).is_err() {
                self.counters.map_errors += 1;
            }
        }
        self.ports_changed(ports);
    }

    /// The interfaces changed: checksums decided again, maps synced at
    /// the next call.
    fn ports_changed(&mut self, ports: &[Option<Port>]) {
        let (finish, text) = checksums(self.flags & maps::INGRESS != 0, &virtual_ports(ports));
        self.checksums = text;
        let flags = if finish {
            self.flags | maps::FINISH_CHECKSUMS
        } else {
            self.flags & !maps::FINISH_CHECKSUMS
        };
        if flags != self.flags {
            self.flags = flags;
            if self.write_settings().is_err() {
                self.counters.map_errors += 1;
            }
        }
        self.dirty = true;
    }

    /// Something the kernel follows changed (a neighbor, a route, a mode,
    /// the policy): sync at the next call.
    pub fn touch(&mut self) {
        self.dirty = true;
    }

    /// A new classifier (a reload): the kernel classifies by it at once.
    /// Rules the kernel cannot hold take the kernel's sessions back.
    pub fn set_classifier(&mut self, node: &mut Node, c: &braid_proto::classify::Classifier) {
        if self.flags & maps::INGRESS == 0 {
            return;
        }
        match compile::ruleset(c) {
            Ok(rules) => {
                if self.dp.set_ruleset(&rules).is_err() {
                    self.counters.map_errors += 1;
                }
            }
            Err(e) => {
                warn!(error = %e, "the kernel cannot classify by these rules: the ingress goes back to user space");
                self.flags &= !maps::INGRESS;
                self.why_no_ingress = Some(format!("user space: {e}"));
                self.lending
                    .take_back_all(&mut self.dp, node, &mut self.counters);
                if self.write_settings().is_err() {
                    self.counters.map_errors += 1;
                }
            }
        }
        self.dirty = true;
    }

    /// Called before the node's timers run at `now`: when its path
    /// reports are due, the kernel's windows are read first, so that the
    /// reports carry the arrivals of now. Counts up to a sweep old date
    /// the newest arrival by a packet sent that long ago; at a few
    /// thousand packets a second per path the ingress no longer
    /// remembers it and learns nothing of the path (and, at times, took
    /// packets in flight for lost).
    pub fn before_timeout(&mut self, now: Instant, node: &mut Node) {
        if node.path_reports_due() <= now {
            self.next_sweep = now + SWEEP_EVERY;
            self.sweep(node, now);
        }
    }

    /// Keeps the kernel in step with the node: neighbors and addresses,
    /// prefixes, the sessions it encodes. Cheap when nothing changed;
    /// call after every round of the loop.
    pub fn sync(
        &mut self,
        now: Instant,
        node: &mut Node,
        book: &AddressBook,
        ports: &[Option<Port>],
    ) {
        // Windows the node's ingresses proved: at once, so that the
        // kernel takes the session's packets again.
        egress::hand_over(&mut self.dp, node, self.window_mask, &mut self.counters);
        let lsdb = node.control().lsdb().version();
        if !self.dirty && now < self.next_sync && lsdb == self.prefixes_seen {
            return;
        }
        self.dirty = false;
        self.next_sync = now + SYNC_EVERY;
        self.tables
            .sync_neighbors(&mut self.dp, book, ports, self.flags, &mut self.counters);
        self.tables
            .sync_senders(&mut self.dp, book, ports, &mut self.counters);
        self.follow_auth(node);
        if lsdb != self.prefixes_seen {
            self.prefixes_seen = lsdb;
            self.tables
                .sync_prefixes(&mut self.dp, node, &mut self.counters);
            self.tables
                .sync_trees(&mut self.dp, node, self.flags, &mut self.counters);
            self.tables
                .sync_copy_sources(&mut self.dp, node, &mut self.counters);
        }
        if self.flags & maps::INGRESS != 0 {
            self.lending.sync(&mut self.dp, node, &mut self.counters);
        }
        if now >= self.next_sweep {
            self.next_sweep = now + SWEEP_EVERY;
            self.sweep(node, now);
        }
    }

    /// With authentication on, `braid_rx` takes data only from where an
    /// authenticated neighbor sends, as its route says: the flag follows
    /// the node's keys (a reload can add or drop them).
    fn follow_auth(&mut self, node: &Node) {
        let flags = if node.control().auth().enabled() {
            self.flags | maps::AUTHENTICATED
        } else {
            self.flags & !maps::AUTHENTICATED
        };
        if flags != self.flags {
            self.flags = flags;
            if self.write_settings().is_err() {
                self.counters.map_errors += 1;
            }
        }
    }

    /// Takes what `kernel_delivery = "auto"`'s watcher found of the stack
    /// and turns route delivery on or off as it says.
    fn follow_delivery(&mut self) {
        self.delivery.follow();
        let flags = if self.delivery.route() {
            self.flags | maps::ROUTE_DELIVERED
        } else {
            self.flags & !maps::ROUTE_DELIVERED
        };
        if flags == self.flags {
            return;
        }
        info!(delivery = %self.delivery.why(), "the egress's delivery changed");
        let before = std::mem::replace(&mut self.flags, flags);
        if let Err(e) = self.write_settings() {
            // Tried again at the next sweep.
            warn!(error = %e, "the kernel data path's settings could not be written");
            self.flags = before;
            self.counters.map_errors += 1;
        }
    }

    /// Reads the kernel's windows and counters: per-path receive counts
    /// into the node's path reports, idle windows and sessions dropped,
    /// the report refreshed.
    fn sweep(&mut self, node: &mut Node, now: Instant) {
        self.follow_delivery();
        let idle = node_idle(node);
        let now_ns = braid_bpf::datapath::kernel_now_ns();
        let windows = egress::read_windows(&mut self.dp, idle, (now_ns, now), &mut self.counters);
        node.set_external_path_counts(windows.counts);
        node.set_external_windows(windows.states);
        let egress_sessions = windows.entries;
        let ingress_sessions =
            self.lending
                .sweep(&mut self.dp, node, idle, now_ns, &mut self.counters);
        self.report = KernelReport {
            transit: true,
            egress: self
                .why_no_egress
                .clone()
                .unwrap_or_else(|| "kernel".into()),
            ingress: self.why_no_ingress.clone().unwrap_or_else(|| {
                if self.lan_ports.is_empty() {
                    "kernel".into()
                } else {
                    format!("kernel, and at the LAN ports {}", self.lan_ports.join(", "))
                }
            }),
            checksums: self.checksums.clone(),
            delivery: self.delivery.why().to_string(),
            tree_entry: self
                .why_no_tree_entry
                .clone()
                .unwrap_or_else(|| "kernel".into()),
            tree_entries: self.tables.tree_entries(),
            programs: self
                .dp
                .stats()
                .into_iter()
                .map(|(n, v)| (n.to_string(), v))
                .collect(),
            ingress_sessions,
            egress_sessions,
            counters: self.counters,
        };
    }

    /// What the kernel data path is doing (as of the last sweep).
    pub fn report(&self) -> KernelReport {
        KernelReport {
            counters: self.counters,
            ..self.report.clone()
        }
    }

    /// Whether `key` is encoded in the kernel.
    pub fn encodes(&self, egress: NodeId, class: u8) -> bool {
        self.lending.encodes((egress, class))
    }

    /// Removes what this process added besides the programs (which go
    /// with it): the segmenter and the managed neighbor entries.
    pub fn shutdown(&mut self) {
        if let Some(s) = self.segmenter.take() {
            s.remove();
        }
        self.tables.forget_managed();
    }
}

impl Drop for KernelPath {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The node's session idle limit.
fn node_idle(node: &Node) -> Duration {
    node.config().sessions.idle
}
