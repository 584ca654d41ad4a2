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
//! stops, however it stops.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::Duration;

use braid_bpf::compile::{self, IngressPath};
use braid_bpf::maps::{
    self, Neighbor, SenderKey, Session, SessionKey, Settings, Tree, TreeKey, MAX_WINDOW,
};
use braid_bpf::{Attachment, Datapath, DatapathError, Program};
use braid_proto::forward::TreeDest;
use braid_proto::node::Node;
use braid_proto::redundancy::dedup::DedupWindow;
use braid_proto::redundancy::EgressCounters;
use braid_proto::redundancy::Mode;
use braid_proto::time::Instant;
use braid_wire::NodeId;
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use crate::config::{Config, DatapathChoice, KernelDelivery};
use crate::neighbors::AddressBook;
use crate::underlay::Port;

/// Numbers a session keeps in user space when it is lent (packets queued
/// on the way to the daemon at that moment): well inside half of the
/// default dedup window, so the egress takes the step.
pub const LEND_GAP: u32 = 256;
/// Packets of a lent session that still reach user space after its own
/// numbers ran out before it is taken back for good.
const STRAY_LIMIT: u64 = 64;
/// How often sessions are looked at for lending (besides events).
const SYNC_EVERY: Duration = Duration::from_millis(50);
/// Most tree entries the kernel holds (its `trees` map).
const MAX_TREE_ENTRIES: usize = 16384;
/// How often the kernel's windows and counters are read.
const SWEEP_EVERY: Duration = Duration::from_millis(500);

/// What the kernel data path is doing, for `braid ctl stats` and metrics.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KernelReport {
    /// Transit forwarding in the kernel.
    pub transit: bool,
    /// The egress in the kernel, or why not.
    pub egress: String,
    /// The ingress in the kernel, or why not.
    pub ingress: String,
    /// Whether the ingress finishes checksums a sender left to the device
    /// before encoding, and why.
    #[serde(default)]
    pub checksums: String,
    /// Tree mode: whether packets entering here are marked in the kernel,
    /// or why not.
    #[serde(default)]
    pub tree_entry: String,
    /// Tree mode: (entry point, client) entries in the kernel's table.
    #[serde(default)]
    pub tree_entries: usize,
    /// The programs' counters, by name.
    pub programs: BTreeMap<String, u64>,
    /// Sessions encoded in the kernel now.
    pub ingress_sessions: Vec<KernelIngressEntry>,
    /// Egress sessions the kernel deduplicates.
    pub egress_sessions: Vec<KernelEgressEntry>,
    /// What this control plane did.
    pub counters: KernelCounters,
}

/// Packets on one path (by its index in the data header).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathPackets {
    pub path: u8,
    pub packets: u64,
}

/// A session the kernel encodes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KernelIngressEntry {
    pub egress: u16,
    pub class: u8,
    pub mode: String,
    pub next_seq: u32,
    pub packets: u64,
    /// Copies sent on each of the session's kernel paths.
    pub sent: Vec<PathPackets>,
}

/// An egress session the kernel deduplicates.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KernelEgressEntry {
    pub ingress: u16,
    pub class: u8,
    pub delivered: u64,
    pub duplicates: u64,
    pub too_old: u64,
    pub too_far_ahead: u64,
    pub old_epoch: u64,
    pub epoch_changes: u64,
    /// Packets received on each path (wrapping at 2^32, as path reports
    /// carry them).
    pub received: Vec<PathPackets>,
}

impl KernelEgressEntry {
    /// Its counters as the user-space egress counts them (`ctl sessions`
    /// lists both kinds alike).
    pub fn counters(&self) -> EgressCounters {
        let mut c = EgressCounters {
            delivered: self.delivered,
            duplicates: self.duplicates,
            too_old: self.too_old,
            too_far_ahead: self.too_far_ahead,
            old_epoch: self.old_epoch,
            epoch_changes: self.epoch_changes,
            ..EgressCounters::default()
        };
        for p in &self.received {
            if let Some(pc) = c.per_path.get_mut(p.path as usize) {
                pc.received = p.packets;
            }
        }
        c
    }
}

/// What the control plane did.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct KernelCounters {
    /// Sessions handed to the kernel.
    pub lent: u64,
    /// Sessions taken back into user space.
    pub taken_back: u64,
    /// Egress windows dropped after `idle` without a packet.
    pub windows_expired: u64,
    /// Map writes the kernel refused (full maps): that part stays in
    /// user space.
    pub map_errors: u64,
}

/// Why the kernel data path is not running here.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error(transparent)]
    Datapath(#[from] DatapathError),
    #[error("{what}: {message}")]
    Setup { what: String, message: String },
}

/// A session the kernel encodes, as written.
#[derive(Debug, Clone)]
struct Lent {
    session: Session,
    /// The first number lent (what user space resumes from if the kernel
    /// never used one).
    first: u32,
    /// The session's `lent_out` when lent (strays counted since).
    strays_at_lend: u64,
}

/// The segmenter: a veth pair whose first end cuts GSO packets up and
/// finishes checksums.
struct Segmenter {
    outer: String,
    inner: String,
}

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
    neighbors: BTreeMap<NodeId, Neighbor>,
    /// Where authenticated neighbors send from, as written to `senders`.
    senders: BTreeMap<SenderKey, u16>,
    /// Neighbor entries the kernel keeps resolved for mirror copies.
    managed: BTreeSet<(String, Ipv4Addr)>,
    locals: BTreeSet<u32>,
    prefixes: BTreeMap<(u32, u8), u16>,
    prefixes_seen: u64,
    sessions: BTreeMap<(NodeId, u8), Lent>,
    /// Tree mode's table as written.
    trees: BTreeMap<TreeKey, Tree>,
    why_no_tree_entry: Option<String>,
    /// LAN ports whose receive side encodes (`lan_interfaces`).
    lan_ports: Vec<String>,
    /// `braid_rx` on each configured interface (by its position in the
    /// config): `None` while it is missing.
    rx: Vec<Option<Attachment>>,
    /// Sessions taken back for good (packets kept reaching user space).
    user_only: BTreeSet<(NodeId, u8)>,
    segmenter: Option<Segmenter>,
    next_sync: Instant,
    next_sweep: Instant,
    /// Something changed (neighbors, routes, modes): sync at once.
    dirty: bool,
    report: KernelReport,
    counters: KernelCounters,
}

fn ip(args: &[&str]) -> Result<(), KernelError> {
    run("ip", args)
}

/// Runs `tool` with `args`; its error output is the error.
fn run(tool: &str, args: &[&str]) -> Result<(), KernelError> {
    let what = format!("{tool} {}", args.join(" "));
    let out = Command::new(tool)
        .args(args)
        .output()
        .map_err(|e| KernelError::Setup {
            what: what.clone(),
            message: format!("cannot run {tool}: {e}"),
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(KernelError::Setup {
            what,
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Whether interface `name` is a device (a NIC, a radio) rather than a
/// virtual one (veth, tap, bridge), which has no `device` in sysfs.
fn physical(name: &str) -> bool {
    std::path::Path::new("/sys/class/net")
        .join(name)
        .join("device")
        .exists()
}

fn ifindex(name: &str) -> Result<u32, KernelError> {
    nix::net::if_::if_nametoindex(name).map_err(|e| KernelError::Setup {
        what: format!("interface {name}"),
        message: e.to_string(),
    })
}

/// The IPv4 addresses (with prefix length) of every interface, by name
/// (one dump for all).
fn addresses() -> BTreeMap<String, Vec<(Ipv4Addr, u8)>> {
    let mut by_name: BTreeMap<String, Vec<(Ipv4Addr, u8)>> = BTreeMap::new();
    let Ok(all) = nix::ifaddrs::getifaddrs() else {
        return by_name;
    };
    for a in all {
        let Some(addr) = a.address.and_then(|x| x.as_sockaddr_in().map(|s| s.ip())) else {
            continue;
        };
        let len = a
            .netmask
            .and_then(|m| m.as_sockaddr_in().map(|m| u32::from(m.ip()).count_ones()))
            .unwrap_or(32) as u8;
        by_name
            .entry(a.interface_name)
            .or_default()
            .push((addr, len));
    }
    by_name
}

/// The open interfaces that are virtual (veth, tap, bridge, VLAN).
fn virtual_ports(ports: &[Option<Port>]) -> Vec<&str> {
    ports
        .iter()
        .flatten()
        .filter(|p| !physical(&p.name))
        .map(|p| p.name.as_str())
        .collect()
}

/// Whether the kernel's ingress finishes checksums before encoding, and
/// why, for an ingress in the kernel or not and the virtual interfaces
/// among braid's (which pass a sender's unfinished checksums on).
fn checksums(ingress: bool, virtual_ports: &[&str]) -> (bool, String) {
    if !ingress {
        (
            false,
            "the daemon encodes (the TUN device finishes them)".to_string(),
        )
    } else if virtual_ports.is_empty() {
        (
            false,
            "left to the interfaces' devices (all physical)".to_string(),
        )
    } else {
        (
            true,
            format!(
                "finished before encoding: {} virtual, passing them on unfinished",
                virtual_ports.join(", ")
            ),
        )
    }
}

/// Network order, as a packet carries it.
fn be(a: Ipv4Addr) -> u32 {
    u32::from_ne_bytes(a.octets())
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
        if why_no_egress.is_none() {
            flags |= maps::EGRESS;
            if config.kernel_delivery == KernelDelivery::Route {
                flags |= maps::ROUTE_DELIVERED;
            }
        }
        let mut segmenter = None;
        if why_no_ingress.is_none() {
            flags |= maps::INGRESS;
        }
        if flags & (maps::INGRESS | maps::TREE_ENTRY) != 0 {
            segmenter = Some(Self::segmenter(config.node)?);
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
            neighbors: BTreeMap::new(),
            senders: BTreeMap::new(),
            managed: BTreeSet::new(),
            locals: BTreeSet::new(),
            prefixes: BTreeMap::new(),
            prefixes_seen: u64::MAX,
            sessions: BTreeMap::new(),
            trees: BTreeMap::new(),
            why_no_tree_entry,
            lan_ports: if flags & maps::INGRESS != 0 {
                config.lan_interfaces.clone()
            } else {
                Vec::new()
            },
            rx,
            user_only: BTreeSet::new(),
            segmenter: None,
            next_sync: Instant::ZERO,
            next_sweep: Instant::ZERO,
            dirty: true,
            report: KernelReport::default(),
            counters: KernelCounters::default(),
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

    /// Makes the segmenter veth pair (a leftover of a daemon that died is
    /// replaced): its outer end takes GSO packets and, allowing one
    /// segment per packet, cuts them up on the way to the inner end; it
    /// finishes unfinished checksums on the way too.
    fn segmenter(node: NodeId) -> Result<Segmenter, KernelError> {
        let outer = format!("bsg{}o", node.0);
        let inner = format!("bsg{}i", node.0);
        let _ = ip(&["link", "del", &outer]);
        ip(&[
            "link",
            "add",
            &outer,
            "gso_max_segs",
            "1",
            "type",
            "veth",
            "peer",
            "name",
            &inner,
        ])?;
        // Without checksum offload the outer end finishes every checksum
        // a sender left to the device (braid_tx sends such packets here).
        let segmenter = Segmenter { outer, inner };
        if let Err(e) = run("ethtool", &["-K", &segmenter.outer, "tx", "off"]) {
            let _ = ip(&["link", "del", &segmenter.outer]);
            return Err(e);
        }
        ip(&["link", "set", &segmenter.outer, "up"])?;
        ip(&["link", "set", &segmenter.inner, "up"])?;
        Ok(segmenter)
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
                let keys: Vec<_> = self.sessions.keys().copied().collect();
                for k in keys {
                    self.take_back(node, k);
                }
                if self.write_settings().is_err() {
                    self.counters.map_errors += 1;
                }
            }
        }
        self.dirty = true;
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
        let lsdb = node.control().lsdb().version();
        if !self.dirty && now < self.next_sync && lsdb == self.prefixes_seen {
            return;
        }
        self.dirty = false;
        self.next_sync = now + SYNC_EVERY;
        self.sync_neighbors(book, ports);
        self.sync_senders(node, book, ports);
        if lsdb != self.prefixes_seen {
            self.prefixes_seen = lsdb;
            self.sync_prefixes(node);
            self.sync_trees(node);
        }
        if self.flags & maps::INGRESS != 0 {
            self.sync_sessions(node);
        }
        if now >= self.next_sweep {
            self.next_sweep = now + SWEEP_EVERY;
            self.sweep(node);
        }
    }

    /// With authentication on, `braid_rx` takes data only from where an
    /// authenticated neighbor sends (the book's senders), as its route
    /// says; the flag follows the node's keys (a reload can add or drop
    /// them).
    fn sync_senders(&mut self, node: &Node, book: &AddressBook, ports: &[Option<Port>]) {
        let mut want: BTreeMap<SenderKey, u16> = BTreeMap::new();
        for (port, addr, id) in book.senders() {
            let (Some(Some(p)), std::net::IpAddr::V4(a)) = (ports.get(port), addr) else {
                continue;
            };
            if want.len() < maps::MAX_SENDERS {
                want.insert(
                    SenderKey {
                        ifindex: p.index,
                        addr_be: be(a),
                    },
                    id.0,
                );
            }
        }
        for (key, &id) in &want {
            if self.senders.get(key) != Some(&id) && self.dp.set_sender(*key, id).is_err() {
                self.counters.map_errors += 1;
            }
        }
        for key in self.senders.keys().filter(|k| !want.contains_key(k)) {
            if self.dp.remove_sender(*key).is_err() {
                self.counters.map_errors += 1;
            }
        }
        self.senders = want;
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

    fn sync_neighbors(&mut self, book: &AddressBook, ports: &[Option<Port>]) {
        let mut want: BTreeMap<NodeId, Neighbor> = BTreeMap::new();
        let addrs_of = addresses();
        let none = Vec::new();
        for (id, place) in book.iter() {
            let (Some(Some(port)), SocketAddr::V4(a)) = (ports.get(place.port), place.addr) else {
                continue;
            };
            let ours = addrs_of.get(&port.name).unwrap_or(&none);
            // Our address on the neighbor's subnet, else the first.
            let on_link = ours.iter().find(|(o, len)| {
                let mask = compile::prefix_mask(*len);
                u32::from(*o) & mask == u32::from(*a.ip()) & mask
            });
            let Some((src, _)) = on_link.or(ours.first()) else {
                continue;
            };
            want.insert(
                id,
                Neighbor {
                    ifindex: port.index,
                    addr_be: be(*a.ip()),
                    src_be: be(*src),
                    pad: 0,
                },
            );
        }
        for (&id, n) in &want {
            if self.neighbors.get(&id) != Some(n) && self.dp.set_neighbor(id.0, *n).is_err() {
                self.counters.map_errors += 1;
            }
        }
        for id in self.neighbors.keys().filter(|id| !want.contains_key(id)) {
            if self.dp.remove_neighbor(id.0).is_err() {
                self.counters.map_errors += 1;
            }
        }
        // Mirror and tree copies need the neighbors' link addresses
        // resolved before the first packet: the kernel keeps these
        // entries resolved.
        if self.flags & (maps::INGRESS | maps::TREES) != 0 {
            let mut managed = BTreeSet::new();
            for (id, n) in &want {
                let Some(Some(port)) = book.get(*id).and_then(|place| ports.get(place.port)) else {
                    continue;
                };
                let name = port.name.clone();
                let addr = Ipv4Addr::from(n.addr_be.to_ne_bytes());
                if !self.managed.contains(&(name.clone(), addr)) {
                    let a = addr.to_string();
                    if let Err(e) = ip(&["neigh", "replace", &a, "dev", &name, "managed"]) {
                        warn!(error = %e, neighbor = id.0, "no managed neighbor entry: mirror copies to it wait for its link address");
                    }
                }
                managed.insert((name, addr));
            }
            // Entries of neighbors gone (or moved) go with them: the set
            // never holds more than the neighbor table.
            for (dev, addr) in self.managed.difference(&managed) {
                let _ = ip(&["neigh", "del", &addr.to_string(), "dev", dev]);
            }
            self.managed = managed;
        }
        self.neighbors = want;
        // Our own addresses: what the kernel answers for.
        let locals: BTreeSet<u32> = ports
            .iter()
            .flatten()
            .flat_map(|p| {
                let index = p.index;
                addrs_of
                    .get(&p.name)
                    .into_iter()
                    .flatten()
                    .map(move |(a, _)| (be(*a), index))
            })
            .map(|(a, i)| {
                if !self.locals.contains(&a) && self.dp.set_local(a, i).is_err() {
                    self.counters.map_errors += 1;
                }
                a
            })
            .collect();
        for a in self.locals.difference(&locals) {
            let _ = self.dp.remove_local(*a);
        }
        self.locals = locals;
    }

    fn sync_prefixes(&mut self, node: &mut Node) {
        let want: BTreeMap<(u32, u8), u16> = node
            .v4_prefix_table()
            .into_iter()
            .map(|(a, l, o)| ((u32::from_ne_bytes(a), l), o.0))
            .collect();
        for (&(a, l), &o) in &want {
            if self.prefixes.get(&(a, l)) != Some(&o) && self.dp.set_prefix(a, l, o).is_err() {
                self.counters.map_errors += 1;
            }
        }
        for &(a, l) in self.prefixes.keys().filter(|k| !want.contains_key(k)) {
            let _ = self.dp.remove_prefix(a, l);
        }
        self.prefixes = want;
    }

    /// Tree mode's table: for every entry point (this router, and every
    /// origin that serves a prefix or a client: where traffic enters the
    /// mesh) and every client advertised, this router's part of the entry
    /// point's tree, as the node computes it. Entries with nothing to do
    /// here are left out (a packet that comes anyway goes to the stack),
    /// and so are entries with more next hops than the kernel holds.
    fn sync_trees(&mut self, node: &mut Node) {
        let me = node.id();
        let mut entries = BTreeSet::new();
        let mut clients = BTreeSet::new();
        for r in node.control().lsdb().records() {
            if !r.prefixes.is_empty() {
                entries.insert(r.origin);
            }
            for p in r.prefixes.iter() {
                if let braid_wire::Prefix::Client4 { addr, .. } = p {
                    clients.insert(*addr);
                }
            }
        }
        if self.flags & maps::TREE_ENTRY != 0 {
            entries.insert(me);
        } else {
            entries.remove(&me);
        }
        let mut want: BTreeMap<TreeKey, Tree> = BTreeMap::new();
        'all: for &entry in &entries {
            for &client in &clients {
                let mut dst = [0u8; 16];
                dst[..4].copy_from_slice(&client);
                let hop = node.tree_hop(entry, TreeDest::Addr(dst, true));
                if (hop.next_hops.is_empty() && !hop.deliver)
                    || hop.next_hops.len() > maps::TREE_HOPS
                {
                    continue;
                }
                if want.len() >= MAX_TREE_ENTRIES {
                    self.counters.map_errors += 1;
                    break 'all;
                }
                let mut t = Tree {
                    n_hops: hop.next_hops.len() as u8,
                    deliver: u8::from(hop.deliver),
                    ..Tree::default()
                };
                for (slot, n) in t.hops.iter_mut().zip(&hop.next_hops) {
                    *slot = n.0;
                }
                let key = TreeKey {
                    entry: entry.0,
                    pad: 0,
                    dst_be: u32::from_ne_bytes(client),
                };
                want.insert(key, t);
            }
        }
        for (k, t) in &want {
            if self.trees.get(k) != Some(t) && self.dp.set_tree(*k, *t).is_err() {
                self.counters.map_errors += 1;
            }
        }
        for k in self.trees.keys().filter(|k| !want.contains_key(k)) {
            let _ = self.dp.remove_tree(*k);
        }
        self.trees = want;
    }

    /// The kernel's version of a node's ingress session, or why none.
    fn compile(node: &Node, egress: NodeId, class: u8) -> Result<(Session, u32), String> {
        let s = node.ingress().session(egress, class).ok_or("no session")?;
        let transit = node.paths_to(egress).ok_or("no route")?;
        let paths: Vec<IngressPath<'_>> = transit
            .iter()
            .zip(s.paths())
            .enumerate()
            .map(|(i, (t, st))| IngressPath {
                slot: i as u8,
                transit: t,
                state: *st,
            })
            .collect();
        compile::session(egress, s.active_mode(), s.epoch(), &paths)
            .map(|k| (k, s.epoch()))
            .map_err(|e| e.to_string())
    }

    fn sync_sessions(&mut self, node: &mut Node) {
        // Taken back: sessions gone from the node, sessions whose strays
        // keep coming, sessions the kernel can no longer encode.
        let keys: Vec<(NodeId, u8)> = self.sessions.keys().copied().collect();
        for key in keys {
            let Some(s) = node.ingress().session(key.0, key.1) else {
                self.drop_kernel_session(key);
                continue;
            };
            let strays = s.counters().lent_out - self.sessions[&key].strays_at_lend;
            if strays >= STRAY_LIMIT {
                info!(
                    egress = key.0 .0,
                    class = key.1,
                    "packets of a kernel session keep reaching user space: it stays there"
                );
                self.user_only.insert(key);
                self.take_back(node, key);
                continue;
            }
            match Self::compile(node, key.0, key.1) {
                Ok((session, _)) => {
                    let lent = self.sessions.get_mut(&key).expect("listed");
                    if lent.session != session {
                        let k = session_key(key);
                        if self.dp.set_session(k, &session).is_ok() {
                            lent.session = session;
                        } else {
                            self.counters.map_errors += 1;
                        }
                    }
                }
                Err(_) => self.take_back(node, key),
            }
        }
        // Sessions kept in user space are remembered while the node has
        // them: one opened again later gets another chance.
        self.user_only
            .retain(|k| node.ingress().session(k.0, k.1).is_some());
        // Lent: open sessions the kernel can encode.
        let candidates: Vec<(NodeId, u8)> = node
            .ingress()
            .sessions()
            .filter(|(k, s)| {
                !s.is_lent()
                    && k.1 != braid_proto::redundancy::CLASS_CONTROL
                    && !self.user_only.contains(k)
                    && !self.sessions.contains_key(k)
            })
            .map(|(k, _)| *k)
            .collect();
        for key in candidates {
            let Ok((session, _)) = Self::compile(node, key.0, key.1) else {
                continue;
            };
            let strays_at_lend = node
                .ingress()
                .session(key.0, key.1)
                .map_or(0, |s| s.counters().lent_out);
            let Some((_, first)) = node.lend_session(key.0, key.1, LEND_GAP) else {
                continue;
            };
            let k = session_key(key);
            if self.dp.start_seq(k, first).is_err() || self.dp.set_session(k, &session).is_err() {
                self.counters.map_errors += 1;
                let _ = self.dp.remove_session(k);
                node.take_back_session(key.0, key.1, first);
                self.user_only.insert(key);
                continue;
            }
            self.counters.lent += 1;
            self.sessions.insert(
                key,
                Lent {
                    session,
                    first,
                    strays_at_lend,
                },
            );
        }
    }

    /// Stops encoding `key` in the kernel and gives the node the number
    /// the kernel stopped at.
    fn take_back(&mut self, node: &mut Node, key: (NodeId, u8)) {
        let Some(lent) = self.sessions.remove(&key) else {
            return;
        };
        let next = match self.dp.remove_session(session_key(key)) {
            Ok(Some(seq)) => seq.next,
            _ => lent.first,
        };
        node.take_back_session(key.0, key.1, next);
        self.counters.taken_back += 1;
    }

    /// The node dropped the session: so does the kernel.
    fn drop_kernel_session(&mut self, key: (NodeId, u8)) {
        self.sessions.remove(&key);
        let _ = self.dp.remove_session(session_key(key));
    }

    /// Reads the kernel's windows and counters: per-path receive counts
    /// into the node's path reports, idle windows and sessions dropped,
    /// the report refreshed.
    fn sweep(&mut self, node: &mut Node) {
        let idle = node_idle(node);
        let now_ns = braid_bpf::datapath::kernel_now_ns();
        let windows = self.dp.windows();
        let mut external = Vec::new();
        let mut egress_sessions = Vec::new();
        for (k, w) in &windows {
            if now_ns.saturating_sub(w.last_ns) >= idle.as_nanos() as u64 {
                if self.dp.remove_window(*k).is_ok() {
                    self.counters.windows_expired += 1;
                }
                continue;
            }
            let received: Vec<(u8, u32)> = w
                .received
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(p, &n)| (p as u8, n))
                .collect();
            external.push(((NodeId(k.ingress), k.class_id), received.clone()));
            egress_sessions.push(KernelEgressEntry {
                ingress: k.ingress,
                class: k.class_id,
                delivered: w.delivered,
                duplicates: w.duplicates,
                too_old: w.too_old,
                too_far_ahead: w.too_far_ahead,
                old_epoch: w.old_epoch,
                epoch_changes: w.epoch_changes,
                received: received
                    .into_iter()
                    .map(|(path, n)| PathPackets {
                        path,
                        packets: u64::from(n),
                    })
                    .collect(),
            });
        }
        node.set_external_path_counts(external);
        // Kernel sessions idle as long as the node's idle limit go back
        // (and then expire in the node as usual).
        let mut ingress_sessions = Vec::new();
        let keys: Vec<(NodeId, u8)> = self.sessions.keys().copied().collect();
        for key in keys {
            let seq = self.dp.seq(session_key(key)).ok().flatten();
            match seq {
                Some(s)
                    if s.packets > 0
                        && now_ns.saturating_sub(s.last_ns) < idle.as_nanos() as u64 =>
                {
                    let lent = &self.sessions[&key];
                    ingress_sessions.push(KernelIngressEntry {
                        egress: key.0 .0,
                        class: key.1,
                        mode: ["single", "stripe", "mirror"]
                            .get(lent.session.mode as usize)
                            .unwrap_or(&"?")
                            .to_string(),
                        next_seq: s.next,
                        packets: s.packets,
                        sent: (0..lent.session.n_paths as usize)
                            .map(|i| PathPackets {
                                path: lent.session.paths[i].slot,
                                packets: s.sent[i],
                            })
                            .collect(),
                    });
                }
                Some(s) if s.packets == 0 => {}
                _ => self.take_back(node, key),
            }
        }
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
            tree_entry: self
                .why_no_tree_entry
                .clone()
                .unwrap_or_else(|| "kernel".into()),
            tree_entries: self.trees.len(),
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
        self.sessions.contains_key(&(egress, class))
    }

    /// Removes what this process added besides the programs (which go
    /// with it): the segmenter and the managed neighbor entries.
    pub fn shutdown(&mut self) {
        if let Some(s) = self.segmenter.take() {
            let _ = ip(&["link", "del", &s.outer]);
        }
        for (dev, addr) in std::mem::take(&mut self.managed) {
            let a = addr.to_string();
            let _ = ip(&["neigh", "del", &a, "dev", &dev]);
        }
    }
}

impl Drop for KernelPath {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn session_key((egress, class): (NodeId, u8)) -> SessionKey {
    SessionKey {
        egress: egress.0,
        class_id: class,
        pad: 0,
    }
}

/// The node's session idle limit.
fn node_idle(node: &Node) -> Duration {
    node.config().sessions.idle
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctl::{Doc, Stats};

    /// Decided at start and again whenever an interface comes or goes.
    #[test]
    fn checksums_are_finished_only_for_an_ingress_in_the_kernel_with_a_virtual_interface() {
        assert!(!checksums(false, &["veth0"]).0);
        let (finish, why) = checksums(true, &[]);
        assert!(!finish);
        assert!(why.contains("all physical"), "{why}");
        let (finish, why) = checksums(true, &["veth0", "br0"]);
        assert!(finish);
        assert!(why.contains("veth0, br0 virtual"), "{why}");
    }

    /// The report inside `braid ctl stats --json` reads back into the
    /// typed document (the lab and other clients read it so).
    #[test]
    fn the_kernel_report_reads_back_from_a_stats_document() {
        let r = KernelReport {
            transit: true,
            egress: "kernel".into(),
            ingress: "user space: late binding".into(),
            checksums: "left to the interfaces' devices (all physical)".into(),
            tree_entry: "kernel".into(),
            tree_entries: 4,
            programs: [("rx_forwarded".to_string(), 7)].into_iter().collect(),
            ingress_sessions: vec![KernelIngressEntry {
                egress: 3,
                class: 0,
                mode: "single".into(),
                next_seq: 9,
                packets: 299,
                sent: vec![PathPackets {
                    path: 0,
                    packets: 299,
                }],
            }],
            egress_sessions: vec![KernelEgressEntry {
                ingress: 1,
                received: vec![PathPackets {
                    path: 1,
                    packets: 5,
                }],
                ..KernelEgressEntry::default()
            }],
            counters: KernelCounters::default(),
        };
        let doc = serde_json::json!({
            "version": 1, "node": 1,
            "stats": {
                "node": braid_proto::node::NodeCounters::default(),
                "control": braid_proto::control::ControlCounters::default(),
                "lsdb": braid_proto::lsdb::LsdbCounters::default(),
                "ingress": braid_proto::redundancy::IngressTotals::default(),
                "egress": { "sessions": braid_proto::redundancy::SessionTableCounters::default() },
                "io": crate::counters::IoCounters::default(),
                "kernel": r,
            }
        });
        let back: Doc<Stats> = serde_json::from_value(doc).unwrap();
        let k = back.body.stats.kernel.unwrap();
        assert_eq!(k.ingress_sessions[0].sent[0].packets, 299);
        assert_eq!(k.egress_sessions[0].received[0].path, 1);
        assert_eq!(k.programs["rx_forwarded"], 7);
    }
}
