//! The control socket's protocol (`braid ctl`): a client connects to the
//! daemon's Unix socket, writes one command line, and reads one JSON
//! document back; `monitor` instead keeps the connection and receives one
//! JSON object per line for every event. Every document carries
//! `"version": CTL_VERSION` and the node's id; fields are only ever added
//! within a version.
//!
//! The documents are typed here, once: the daemon builds them from the
//! node's state, and clients (`braid ctl`, the lab) read them back into
//! the same types. Also here: the client's side of the socket.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use braid_proto::control::ControlCounters;
use braid_proto::lsdb::LsdbCounters;
use braid_proto::node::{Node, NodeCounters};
use braid_proto::redundancy::reorder::ReorderCounters;
use braid_proto::redundancy::{
    EgressCounters, IngressCounters, IngressTotals, SessionTableCounters,
};
use braid_proto::time::Instant;
use braid_wire::NodeId;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::counters::IoCounters;
use crate::kernel::{KernelPath, KernelReport};
use crate::neighbors::AddressBook;

/// Version of every JSON document and event.
pub const CTL_VERSION: u32 = 1;

/// Commands a client may send.
pub const COMMANDS: [&str; 13] = [
    "status",
    "neighbors",
    "links",
    "routes",
    "paths",
    "topology",
    "sessions",
    "clients",
    "stats",
    "monitor",
    "reload",
    "ping",
    "traceroute",
];

/// `clients`: as an access point, the clients it hears and serves, and
/// the access points each client is served by (from the advertisements).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Clients {
    pub clients: Vec<ClientEntry>,
    pub interfaces: Vec<AccessInterfaceEntry>,
}

/// One client this access point hears.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientEntry {
    pub client: String,
    /// 0 (no probe answered) to 255 (every one).
    pub quality: u8,
    pub serving: bool,
    pub last_heard_ms_ago: u64,
    /// Every access point advertising it, with its quality.
    pub served_by: Vec<(u16, u8)>,
}

/// One access interface's counters.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AccessInterfaceEntry {
    pub interface: String,
    pub gateway: String,
    pub probed: usize,
    #[serde(flatten)]
    pub counters: crate::access::AccessPortCounters,
}

/// A document: the version and node, then the command's own fields.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Doc<T> {
    pub version: u32,
    pub node: u16,
    #[serde(flatten)]
    pub body: T,
}

/// `status`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    pub uptime_ms: u64,
    pub interfaces: Vec<String>,
    pub neighbors: usize,
    pub origins_known: usize,
    pub egresses_routed: usize,
    pub ingress_sessions: usize,
    pub egress_sessions: usize,
    pub authentication: Authentication,
    /// The last sign that another router uses this node id, if any.
    pub duplicate_id: Option<DuplicateId>,
    /// The uplink's health, on a gateway that checks it (`[uplink]`).
    #[serde(default)]
    pub uplink: Option<UplinkStatus>,
}

/// A gateway's uplink (`[uplink]`): whether its prefixes are advertised,
/// and what the probes found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UplinkStatus {
    /// Healthy: the prefixes are advertised.
    pub healthy: bool,
    /// How long it has been as it is, ms.
    pub for_ms: u64,
    pub prefixes: Vec<String>,
    /// `icmp`, `tcp` or `dns`.
    pub method: String,
    pub interface: Option<String>,
    pub interval_ms: u64,
    pub timeout_ms: u64,
    /// Answers a round needs to pass.
    pub reliability: usize,
    /// Failed rounds in a row that take it down, passed that bring it up.
    pub down: u32,
    pub up: u32,
    /// Rounds in a row that disagree with the state now.
    pub streak: u32,
    pub targets: Vec<UplinkTarget>,
    pub rounds_passed: u64,
    pub rounds_failed: u64,
    pub went_down: u64,
    pub went_up: u64,
    /// Advertised with the prefixes (`[uplink] preference`, `capacity`).
    pub preference: Option<u8>,
    pub capacity_kbps: Option<u32>,
    /// Answers that fit no open round (late, repeated).
    pub stray_answers: u64,
    /// Probes the kernel refused to send (no route, interface down).
    pub send_failed: u64,
    /// The last such refusal.
    pub last_error: Option<String>,
}

/// One uplink target's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UplinkTarget {
    pub address: String,
    /// Whether it answered the last round that ended.
    pub answered_last: bool,
    pub sent: u64,
    pub answered: u64,
    /// Its last answer's round trip, ms.
    pub last_rtt_ms: Option<f64>,
}

/// Control-plane authentication (`[auth]`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Authentication {
    pub enabled: bool,
    /// The key id that signs what this router sends.
    pub signing_key: Option<u8>,
    /// Every key id accepted.
    pub accepted_keys: Vec<u8>,
    /// Neighbors up now that were proven live by a challenge.
    pub verified_senders: usize,
    /// Underlay addresses whose control messages failed the key check in
    /// the last two minutes (another key there?), by interface.
    #[serde(default)]
    pub failing: Vec<FailingSender>,
}

/// An address whose control messages fail the key check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FailingSender {
    pub interface: String,
    pub address: String,
    /// The node id its messages claim (not proven).
    pub says_node: Option<u16>,
    /// `bad_mac` (another secret), `unknown_key` (a key id we lack) or
    /// `unauthenticated` (no MAC: authentication off there).
    pub reason: String,
    pub messages: u64,
    pub last_ms_ago: u64,
}

/// A sign of a duplicate node id.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DuplicateId {
    pub sign: String,
    pub ms_ago: u64,
    pub fix: String,
}

/// `neighbors`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Neighbors {
    pub neighbors: Vec<NeighborEntry>,
}

/// One neighbor up.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NeighborEntry {
    pub id: u16,
    pub interface: String,
    pub address: String,
    pub last_heard_ms_ago: u64,
}

/// `links`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Links {
    pub links: Vec<LinkEntry>,
}

/// One link's estimate; `None` where it is unusable.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LinkEntry {
    pub neighbor: u16,
    /// The interface the neighbor is heard on and its underlay address
    /// (empty while the neighbor is down).
    #[serde(default)]
    pub interface: String,
    #[serde(default)]
    pub address: String,
    pub df: f64,
    pub dr: f64,
    pub etx: Option<f64>,
    /// The costs advertised: measured, raised by `cost_factor`.
    pub metric_out: Option<u32>,
    pub metric_in: Option<u32>,
    /// The operator's factor on this link (`[[cost]]`), if any.
    #[serde(default)]
    pub cost_factor: Option<f64>,
}

/// `routes` and `paths`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Routes {
    pub routes: Vec<RouteEntry>,
    /// The link-state database.
    pub origins: Vec<OriginEntry>,
}

/// The paths toward one egress, each in full (this node, transit nodes,
/// egress).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteEntry {
    pub egress: u16,
    pub prefixes: Vec<String>,
    pub paths: Vec<Vec<u16>>,
    /// Each path's cost (the sum of its links' ETX, or ETT in ms with the
    /// ETT metric); null where a link of it is gone. The first path is
    /// the primary (what single-path traffic takes).
    #[serde(default)]
    pub costs: Vec<Option<f64>>,
    /// Whether traffic uses these paths now; otherwise they are what this
    /// router would take (computed for the operator: routes are kept only
    /// toward destinations traffic goes to).
    #[serde(default = "in_use_default")]
    pub in_use: bool,
}

fn in_use_default() -> bool {
    true
}

/// One origin's advertisement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OriginEntry {
    pub origin: u16,
    pub seq: u32,
    pub links: Vec<u16>,
    pub prefixes: Vec<String>,
    /// Each link's cost out and in, as the origin advertises them (null:
    /// unusable), in the order of `links`.
    #[serde(default)]
    pub link_costs: Vec<(Option<f64>, Option<f64>)>,
}

/// `sessions`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sessions {
    pub ingress: Vec<IngressSessionEntry>,
    pub egress: Vec<EgressSessionEntry>,
}

/// A session this node is the ingress of.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IngressSessionEntry {
    pub egress: u16,
    pub class: u8,
    pub mode: String,
    pub active_mode: String,
    /// Where the session is encoded: `kernel` (lent to the kernel data
    /// path: see `stats.kernel` for what it sent) or `user`.
    #[serde(default)]
    pub datapath: String,
    pub counters: IngressCounters,
    /// What the egress's path reports say of each path (those with
    /// enough packets to say anything).
    #[serde(default)]
    pub paths: Vec<PathEstimateEntry>,
}

/// One path of an ingress session as its reports measure it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PathEstimateEntry {
    /// The path slot (as in the data header).
    pub path: u8,
    /// The routers the path in that slot crosses now ("1>3>4"): its
    /// identity, which stays when slots are re-ordered.
    #[serde(default)]
    pub route: String,
    #[serde(flatten)]
    pub estimate: braid_proto::redundancy::estimate::PathEstimate,
    /// The path's share of the split (0 to 1).
    #[serde(default)]
    pub share: f64,
    /// How long a bulk packet waits before it leaves on this path, to
    /// arrive with the slowest path's (delay equalisation), ms.
    #[serde(default)]
    pub hold_ms: f64,
    /// The rate the path is paced at, Mbit/s (`None`: not paced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace_mbit: Option<f64>,
    /// Datagrams toward the egress waiting above the binding point for
    /// this path (every class; striped ones free to take any count on none).
    #[serde(default)]
    pub waiting: usize,
}

/// A session this node is the egress of.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EgressSessionEntry {
    pub ingress: u16,
    pub class: u8,
    /// Where the session is decoded: `kernel` (its dedup window lives in
    /// the kernel data path) or `user`. A session whose coded packets
    /// reach user space while the kernel takes the rest is listed twice.
    #[serde(default)]
    pub datapath: String,
    pub counters: EgressCounters,
    /// The re-order buffer, when the egress re-orders (`reorder = true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<ReorderEntry>,
}

/// An egress session's re-order buffer in `sessions`: its counters
/// (`held`, `gaps_skipped`, `late`) and the wait it has learned.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ReorderEntry {
    #[serde(flatten)]
    pub counters: ReorderCounters,
    /// How long a gap may hold packets back now, ms (learned).
    pub wait_ms: f64,
}

/// `stats`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stats {
    pub stats: StatsBody,
}

/// Every counter.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatsBody {
    pub node: NodeCounters,
    pub control: ControlCounters,
    pub lsdb: LsdbCounters,
    pub ingress: IngressTotals,
    pub egress: EgressTotals,
    pub io: IoCounters,
    /// The kernel data path, when it runs.
    #[serde(default)]
    pub kernel: Option<KernelReport>,
    /// The keys in use (ids only).
    #[serde(default)]
    pub auth: Option<Authentication>,
    /// Flows pinned to their gateway (`gateway_sticky`).
    #[serde(default)]
    pub gateways: Option<GatewayStats>,
}

/// What the entry point's flow pins did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GatewayStats {
    #[serde(flatten)]
    pub counters: braid_proto::node::GatewayCounters,
    /// Flows pinned now.
    pub pinned: usize,
    /// Flows pinned now, per egress (in egress order).
    #[serde(default)]
    pub pinned_to: Vec<PinnedTo>,
    /// The egress a new flow would have been given when the latest user
    /// packet was forwarded: where pinned flows are kept from (`null`
    /// before any packet).
    #[serde(default)]
    pub latest_choice: Option<u16>,
}

/// How many flows are pinned to one egress. (A list of these rather than
/// a map keyed by node id: a map with number keys inside the flattened
/// `GatewayStats` does not read back.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedTo {
    pub egress: u16,
    pub flows: usize,
}

/// The egress side as a whole.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EgressTotals {
    pub sessions: SessionTableCounters,
}

/// An error document (an unknown command).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorDoc {
    pub version: u32,
    pub error: String,
}

/// Everything a document is built from.
pub struct View<'a> {
    pub node: &'a Node,
    pub now: Instant,
    pub started: Instant,
    pub interfaces: &'a [String],
    pub book: &'a AddressBook,
    pub key_mismatches: &'a crate::key_mismatch::KeyMismatches,
    /// Names for node ids (`[labels]`).
    pub labels: &'a std::collections::BTreeMap<u16, String>,
    pub io: &'a IoCounters,
    pub kernel: Option<&'a KernelPath>,
    pub access: &'a [crate::access::AccessPort],
    /// The uplink checker, on a gateway that runs one.
    pub uplink: Option<&'a crate::uplink::Uplink>,
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// The document a command asks for, or `None` for an unknown command.
pub fn answer(command: &str, v: &View<'_>) -> Option<Value> {
    let doc = |body: Value| -> Value {
        let mut d = json!({ "version": CTL_VERSION, "node": v.node.id().0 });
        if let (Value::Object(d), Value::Object(b)) = (&mut d, body) {
            // What the tables name things by: routers (`[labels]`) and
            // traffic classes (`[[policy]] name`).
            if !v.labels.is_empty() {
                d.insert("names".into(), json!(v.labels));
            }
            let classes: std::collections::BTreeMap<u8, &str> = v
                .node
                .config()
                .classifier
                .rules
                .iter()
                .map(|r| (r.id, r.name.as_str()))
                .collect();
            if !classes.is_empty() {
                d.insert("classes".into(), json!(classes));
            }
            d.extend(b);
        }
        d
    };
    let to = |x: Result<Value, serde_json::Error>| x.unwrap_or(Value::Null);
    let body = match command {
        "status" => to(serde_json::to_value(status(v))),
        "neighbors" => to(serde_json::to_value(neighbors(v))),
        "links" => to(serde_json::to_value(links(v))),
        "routes" | "paths" | "topology" => to(serde_json::to_value(routes(v))),
        "sessions" => to(serde_json::to_value(sessions(v))),
        "clients" => to(serde_json::to_value(clients(v))),
        "stats" => to(serde_json::to_value(stats(v))),
        _ => return None,
    };
    Some(doc(body))
}

/// A document as the socket carries it: one line.
pub fn line(doc: &Value) -> Vec<u8> {
    let mut reply = doc.to_string().into_bytes();
    reply.push(b'\n');
    reply
}

/// The document for a request the daemon cannot answer.
pub fn error_doc(message: &str) -> Value {
    serde_json::to_value(ErrorDoc {
        version: CTL_VERSION,
        error: message.to_string(),
    })
    .unwrap_or(Value::Null)
}

fn status(v: &View<'_>) -> Status {
    Status {
        uptime_ms: ms(v.now.since(v.started)),
        interfaces: v.interfaces.to_vec(),
        neighbors: v.node.neighbors().len(),
        origins_known: v.node.control().lsdb().len(),
        egresses_routed: v.node.routes().count(),
        ingress_sessions: v.node.ingress().sessions().count(),
        egress_sessions: v.node.egress().sessions().count(),
        authentication: authentication(v),
        duplicate_id: v
            .node
            .control()
            .duplicate_id_seen()
            .map(|(sign, at)| DuplicateId {
                sign: sign.as_str().to_string(),
                ms_ago: ms(v.now.since(at)),
                fix: "give one of the two routers another `node` (the config's node id) and restart it; a restart of this router does not raise this sign".to_string(),
            }),
        uplink: v.uplink.map(|u| uplink_status(u, v.now)),
    }
}

fn uplink_status(u: &crate::uplink::Uplink, now: Instant) -> UplinkStatus {
    let t = u.tracker();
    let c = t.config();
    let (tc, pc) = u.counters();
    UplinkStatus {
        healthy: u.healthy(),
        for_ms: ms(now.since(t.since())),
        prefixes: u.config().prefixes.iter().map(|p| p.to_string()).collect(),
        method: u.config().method.name().to_string(),
        interface: u.config().interface.clone(),
        interval_ms: ms(c.interval),
        timeout_ms: ms(c.timeout),
        reliability: c.reliability,
        down: c.down,
        up: c.up,
        streak: t.streak(),
        targets: u
            .targets()
            .map(|(addr, s)| UplinkTarget {
                address: addr.to_string(),
                answered_last: s.answered_last,
                sent: s.sent,
                answered: s.answered,
                last_rtt_ms: s.last_rtt.map(|d| d.as_secs_f64() * 1e3),
            })
            .collect(),
        rounds_passed: tc.rounds_passed,
        rounds_failed: tc.rounds_failed,
        went_down: tc.went_down,
        went_up: tc.went_up,
        preference: u.config().gateway.and_then(|g| g.gateway()).map(|g| g.0),
        capacity_kbps: u
            .config()
            .gateway
            .and_then(|g| g.gateway())
            .map(|g| g.1)
            .filter(|&c| c > 0),
        stray_answers: tc.stray_answers,
        send_failed: pc.send_failed,
        last_error: u.last_error().map(str::to_string),
    }
}

fn neighbors(v: &View<'_>) -> Neighbors {
    let neighbors = v
        .node
        .neighbors()
        .iter()
        .map(|(id, interface, last_heard)| NeighborEntry {
            id: id.0,
            interface: v
                .interfaces
                .get(interface.0 as usize)
                .cloned()
                .unwrap_or_default(),
            address: v
                .book
                .get(id)
                .map(|p| p.addr.to_string())
                .unwrap_or_default(),
            last_heard_ms_ago: ms(v.now.since(last_heard)),
        })
        .collect();
    Neighbors { neighbors }
}

fn metric(m: braid_proto::metric::Metric) -> Option<u32> {
    (!m.is_infinite()).then(|| m.units())
}

fn links(v: &View<'_>) -> Links {
    let up: Vec<_> = v.node.neighbors().iter().collect();
    let links = v
        .node
        .control()
        .link_estimates(v.now)
        .into_iter()
        .map(|e| {
            // A neighbor taken down (its interface went down, or it fell
            // silent) has no usable link, whatever the probes said last.
            let heard = up.iter().find(|(id, _, _)| *id == e.neighbor);
            let usable = heard.is_some() && e.etx.is_finite();
            let factor = v.node.control().cost_factor(e.neighbor);
            let raised = |m| factor.map_or(m, |f| f.apply(m));
            LinkEntry {
                neighbor: e.neighbor.0,
                interface: heard
                    .and_then(|(_, i, _)| v.interfaces.get(i.0 as usize).cloned())
                    .unwrap_or_default(),
                address: heard
                    .and_then(|_| v.book.get(e.neighbor))
                    .map(|p| p.addr.to_string())
                    .unwrap_or_default(),
                df: e.df,
                dr: e.dr,
                etx: usable.then_some(e.etx),
                metric_out: metric(raised(e.metric_out)).filter(|_| usable),
                metric_in: metric(raised(e.metric_in)).filter(|_| usable),
                cost_factor: factor.map(|f| f.get()),
            }
        })
        .collect();
    Links { links }
}

/// A cost in metric units as the operator reads it: ETX (1.0 a perfect
/// link), or with the ETT metric milliseconds.
pub fn cost(units: u64) -> f64 {
    units as f64 / braid_proto::metric::SCALE as f64
}

/// A path written as its routers, "1>3>4": this node, the transit
/// nodes, the egress.
pub fn route_text(me: NodeId, transit: &[NodeId], egress: NodeId) -> String {
    full_path(me.0, transit, egress.0)
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(">")
}

fn full_path(me: u16, transit: &[NodeId], egress: u16) -> Vec<u16> {
    std::iter::once(me)
        .chain(transit.iter().map(|n| n.0))
        .chain(std::iter::once(egress))
        .collect()
}

/// Every egress this node routes to, with its prefixes and its paths,
/// each written in full (this node, transit nodes, egress).
pub fn route_list(node: &Node) -> Vec<RouteEntry> {
    let lsdb = node.control().lsdb();
    let me = node.id().0;
    node.routes()
        .map(|(egress, paths)| RouteEntry {
            egress: egress.0,
            prefixes: lsdb
                .get(egress)
                .map(|r| r.prefixes.iter().map(|p| p.to_string()).collect())
                .unwrap_or_default(),
            paths: paths.iter().map(|t| full_path(me, t, egress.0)).collect(),
            costs: paths
                .iter()
                .map(|t| node.path_cost(t, egress).map(cost))
                .collect(),
            in_use: true,
        })
        .collect()
}

/// What a route change changed: each egress whose primary path is not
/// the one `primaries` held (`from`: the old, `to`: the new; `null` for
/// none), in egress order. `primaries` becomes the primaries of `routes`.
pub fn primary_changes(
    primaries: &mut std::collections::BTreeMap<u16, Vec<u16>>,
    routes: &[RouteEntry],
) -> Vec<Value> {
    let now: std::collections::BTreeMap<u16, Vec<u16>> = routes
        .iter()
        .filter_map(|r| Some((r.egress, r.paths.first()?.clone())))
        .collect();
    let egresses: std::collections::BTreeSet<u16> =
        primaries.keys().chain(now.keys()).copied().collect();
    let changed = egresses
        .into_iter()
        .filter(|e| primaries.get(e) != now.get(e))
        .map(|e| json!({ "egress": e, "from": primaries.get(&e), "to": now.get(&e) }))
        .collect();
    *primaries = now;
    changed
}

/// The routes in use, then toward every other origin of the database
/// the paths this node would take (computed now, nothing changed).
pub fn all_routes(node: &Node) -> Vec<RouteEntry> {
    let mut out = route_list(node);
    let lsdb = node.control().lsdb();
    let me = node.id();
    let mut others: Vec<NodeId> = lsdb
        .records()
        .map(|r| r.origin)
        .filter(|&o| o != me && !out.iter().any(|r| r.egress == o.0))
        .collect();
    others.sort();
    for egress in others {
        let found = node.candidate_paths(egress);
        out.push(RouteEntry {
            egress: egress.0,
            prefixes: lsdb
                .get(egress)
                .map(|r| r.prefixes.iter().map(|p| p.to_string()).collect())
                .unwrap_or_default(),
            paths: found
                .iter()
                .map(|(t, _)| full_path(me.0, t, egress.0))
                .collect(),
            costs: found.iter().map(|(_, c)| Some(cost(*c))).collect(),
            in_use: false,
        });
    }
    out
}

fn routes(v: &View<'_>) -> Routes {
    let usable = |m: u32| (m != u32::MAX).then(|| cost(u64::from(m)));
    let origins = v
        .node
        .control()
        .lsdb()
        .records()
        .map(|r| OriginEntry {
            origin: r.origin.0,
            seq: r.seq,
            links: r.links.iter().map(|l| l.neighbor.0).collect(),
            prefixes: r.prefixes.iter().map(|p| p.to_string()).collect(),
            link_costs: r
                .links
                .iter()
                .map(|l| (usable(l.metric_out), usable(l.metric_in)))
                .collect(),
        })
        .collect();
    Routes {
        routes: all_routes(v.node),
        origins,
    }
}

fn clients(v: &View<'_>) -> Clients {
    let lsdb = v.node.control().lsdb();
    let mut served = Vec::new();
    let clients = v
        .node
        .access()
        .clients()
        .map(|(c, st)| {
            lsdb.clients_served(&c.addr, c.v4, v.node.id(), &mut served);
            ClientEntry {
                client: c.to_string(),
                quality: st.quality,
                serving: st.serving,
                last_heard_ms_ago: v.now.since(st.heard).as_millis() as u64,
                served_by: served.iter().map(|&(o, q)| (o.0, q)).collect(),
            }
        })
        .collect();
    let interfaces = v
        .access
        .iter()
        .map(|a| AccessInterfaceEntry {
            interface: a.config.name.clone(),
            gateway: a.config.gateway.to_string(),
            probed: a.probed(),
            counters: a.counters,
        })
        .collect();
    Clients {
        clients,
        interfaces,
    }
}

fn sessions(v: &View<'_>) -> Sessions {
    let ingress = v
        .node
        .ingress()
        .sessions()
        .map(|(&(egress, class), s)| IngressSessionEntry {
            egress: egress.0,
            class,
            mode: s.mode().to_string(),
            active_mode: s.active_mode().to_string(),
            datapath: if v.kernel.is_some_and(|k| k.encodes(egress, class)) {
                "kernel".into()
            } else {
                "user".into()
            },
            counters: *s.counters(),
            paths: {
                let shares = s.shares();
                s.path_estimates()
                    .into_iter()
                    .enumerate()
                    .filter_map(|(path, e)| {
                        e.map(|estimate| PathEstimateEntry {
                            path: path as u8,
                            route: v
                                .node
                                .paths_to(egress)
                                .and_then(|p| p.get(path))
                                .map(|t| route_text(v.node.id(), t, egress))
                                .unwrap_or_default(),
                            estimate,
                            share: shares.get(path).copied().unwrap_or(0.0),
                            hold_ms: v.node.path_hold(egress, path).as_secs_f64() * 1e3,
                            pace_mbit: v.node.path_pace_rate(egress, path).map(|r| r * 8e-6),
                            waiting: v.node.path_waiting(egress, path),
                        })
                    })
                    .collect()
            },
        })
        .collect();
    let egress = v
        .node
        .egress()
        .sessions()
        .map(|(&(ingress, class), s)| EgressSessionEntry {
            ingress: ingress.0,
            class,
            datapath: "user".into(),
            counters: *s.counters(),
            reorder: s.reorder_counters().map(|counters| ReorderEntry {
                counters,
                wait_ms: s.reorder_timeout().unwrap_or_default().as_secs_f64() * 1e3,
            }),
        })
        .chain(
            v.kernel
                .map(|k| k.report().egress_sessions)
                .unwrap_or_default()
                .into_iter()
                .map(|w| EgressSessionEntry {
                    ingress: w.ingress,
                    class: w.class,
                    datapath: "kernel".into(),
                    counters: w.counters(),
                    reorder: None,
                }),
        )
        .collect();
    Sessions { ingress, egress }
}

fn stats(v: &View<'_>) -> Stats {
    let c = v.node.control();
    Stats {
        stats: StatsBody {
            node: v.node.counters(),
            control: c.counters().clone(),
            lsdb: c.lsdb().counters(),
            ingress: v.node.ingress().totals(),
            egress: EgressTotals {
                sessions: v.node.egress().table_counters(),
            },
            io: v.io.clone(),
            kernel: v.kernel.map(KernelPath::report),
            auth: Some(authentication(v)),
            gateways: {
                let pins = v.node.flow_pins();
                Some(GatewayStats {
                    counters: pins.counters(),
                    pinned: pins.pinned(),
                    pinned_to: pins
                        .pinned_by_egress()
                        .into_iter()
                        .map(|(e, flows)| PinnedTo { egress: e.0, flows })
                        .collect(),
                    latest_choice: pins.latest_choice().map(|e| e.0),
                })
            },
        },
    }
}

fn authentication(v: &View<'_>) -> Authentication {
    let auth = v.node.control().auth();
    let keys = &auth.config().keys;
    let failing = v
        .key_mismatches
        .current(v.now)
        .map(|m| FailingSender {
            interface: v.interfaces.get(m.port).cloned().unwrap_or_default(),
            address: m.addr.to_string(),
            says_node: m.claimed.map(|n| n.0),
            reason: m.reason.to_string(),
            messages: m.count,
            last_ms_ago: ms(v.now.since(m.last)),
        })
        .collect();
    Authentication {
        enabled: auth.enabled(),
        signing_key: keys.first().map(|k| k.id),
        accepted_keys: keys.iter().map(|k| k.id).collect(),
        verified_senders: v
            .node
            .neighbors()
            .iter()
            .filter(|(n, _, _)| auth.is_proven(*n))
            .count(),
        failing,
    }
}

/// A monitor event line.
pub fn event(kind: &str, now: Instant, fields: Value) -> String {
    // `time_ms` is the daemon's clock (since it started); `unix_ms` the
    // wall clock, for lines read beside other logs.
    let unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut e = json!({
        "version": CTL_VERSION,
        "event": kind,
        "time_ms": now.as_micros() / 1000,
        "unix_ms": unix_ms,
    });
    if let (Value::Object(d), Value::Object(b)) = (&mut e, fields) {
        d.extend(b);
    }
    let mut line = e.to_string();
    line.push('\n');
    line
}

/// Why a client's request got no document.
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    #[error("cannot reach a braid daemon on {socket}: {source}")]
    Unreachable { socket: String, source: io::Error },
    #[error("the daemon's reply is not a {what} document: {reason}: {reply}")]
    Unreadable {
        what: &'static str,
        reason: String,
        reply: String,
    },
    #[error("{0}")]
    Refused(String),
}

/// A client's side of the control socket: sends `command`, returns the
/// reply (one JSON document, as text).
pub fn request(socket: &Path, command: &str) -> io::Result<String> {
    let mut s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(command.as_bytes())?;
    s.write_all(b"\n")?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)?;
    Ok(reply)
}

/// Sends `command` and reads the reply into its document type (`T`, one
/// of this module's: `Routes` for "routes", ...).
pub fn query<T: DeserializeOwned>(socket: &Path, command: &str) -> Result<Doc<T>, CtlError> {
    let reply = request(socket, command).map_err(|source| CtlError::Unreachable {
        socket: socket.display().to_string(),
        source,
    })?;
    if let Ok(e) = serde_json::from_str::<ErrorDoc>(&reply) {
        return Err(CtlError::Refused(e.error));
    }
    serde_json::from_str(&reply).map_err(|e| CtlError::Unreadable {
        what: std::any::type_name::<T>()
            .rsplit("::")
            .next()
            .unwrap_or("ctl"),
        reason: e.to_string(),
        reply: reply.trim().chars().take(200).collect(),
    })
}

/// A client's side of `monitor`: calls `line` for every event until the
/// daemon goes away or `line` returns false.
pub fn monitor(socket: &Path, mut line: impl FnMut(&str) -> bool) -> io::Result<()> {
    let mut s = UnixStream::connect(socket)?;
    s.write_all(b"monitor\n")?;
    for l in BufReader::new(s).lines() {
        if !line(&l?) {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(egress: u16, primary: &[u16]) -> RouteEntry {
        RouteEntry {
            egress,
            prefixes: Vec::new(),
            paths: vec![primary.to_vec()],
            costs: vec![None],
            in_use: true,
        }
    }

    /// Issue 32: a route change event said only `route_change`.
    #[test]
    fn a_route_change_names_each_primary_path_that_changed() {
        let mut held = Default::default();
        let first = primary_changes(&mut held, &[route(4, &[1, 2, 4]), route(5, &[1, 5])]);
        assert_eq!(first.len(), 2, "new routes are changes: {first:?}");
        let moved = primary_changes(&mut held, &[route(4, &[1, 3, 4]), route(5, &[1, 5])]);
        assert_eq!(
            moved,
            [json!({ "egress": 4, "from": [1, 2, 4], "to": [1, 3, 4] })]
        );
        let gone = primary_changes(&mut held, &[route(4, &[1, 3, 4])]);
        assert_eq!(gone, [json!({ "egress": 5, "from": [1, 5], "to": null })]);
        assert!(primary_changes(&mut held, &[route(4, &[1, 3, 4])]).is_empty());
    }

    /// The gateway counters read back as they were written, pins and all
    /// (the lab reads every daemon's `stats` typed; a map keyed by node id
    /// inside the flattened counters did not, and the lab lost the
    /// daemons that had pinned a flow).
    #[test]
    fn gateway_stats_with_pins_read_back() {
        let written = GatewayStats {
            counters: braid_proto::node::GatewayCounters {
                flows_pinned: 3,
                packets_kept: 7,
                ..Default::default()
            },
            pinned: 3,
            pinned_to: vec![
                PinnedTo {
                    egress: 1,
                    flows: 2,
                },
                PinnedTo {
                    egress: 3,
                    flows: 1,
                },
            ],
            latest_choice: Some(3),
        };
        let text = serde_json::to_string(&written).unwrap();
        let read: GatewayStats = serde_json::from_str(&text).unwrap();
        assert_eq!(read.pinned_to, written.pinned_to);
        assert_eq!(read.latest_choice, Some(3));
        assert_eq!(read.counters, written.counters);
        assert_eq!(serde_json::to_string(&read).unwrap(), text);
    }
}
