//! The control socket's protocol (`braid ctl`): a client connects to the
//! daemon's Unix socket, writes one command line, and reads one JSON
//! document back; `monitor` instead keeps the connection and receives one
//! JSON object per line for every event. Every document carries
//! `"version": CTL_VERSION`; fields are only ever added within a version.
//! The documents are built here from the node's state, so the daemon's
//! loop and the documents stay apart.

use std::time::Duration;

use braid_proto::node::Node;
use braid_proto::time::Instant;
use serde_json::{json, Value};

/// Version of every JSON document and event.
pub const CTL_VERSION: u32 = 1;

/// Commands a client may send.
pub const COMMANDS: [&str; 8] = [
    "status",
    "neighbors",
    "links",
    "routes",
    "paths",
    "sessions",
    "stats",
    "monitor",
];

/// What the daemon knows of one neighbor beyond the protocol node.
#[derive(Debug, Clone)]
pub struct NeighborView {
    pub id: u16,
    pub interface: String,
    pub address: String,
    pub last_heard: Instant,
}

/// Everything a document is built from.
pub struct View<'a> {
    pub node: &'a Node,
    pub now: Instant,
    pub started: Instant,
    pub interfaces: &'a [String],
    pub neighbors: &'a [NeighborView],
    pub io: &'a Value,
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// The document a command asks for, or `None` for an unknown command.
pub fn answer(command: &str, v: &View<'_>) -> Option<Value> {
    let body = match command {
        "status" => status(v),
        "neighbors" => neighbors(v),
        "links" => links(v),
        "routes" | "paths" => routes(v),
        "sessions" => sessions(v),
        "stats" => stats(v),
        _ => return None,
    };
    let mut doc = json!({ "version": CTL_VERSION, "node": v.node.id().0 });
    if let (Value::Object(d), Value::Object(b)) = (&mut doc, body) {
        d.extend(b);
    }
    Some(doc)
}

fn status(v: &View<'_>) -> Value {
    let lsdb = v.node.control().lsdb();
    json!({
        "uptime_ms": ms(v.now.since(v.started)),
        "interfaces": v.interfaces,
        "neighbors": v.neighbors.len(),
        "origins_known": lsdb.len(),
        "egresses_routed": v.node.routes().count(),
        "ingress_sessions": v.node.ingress().sessions().count(),
        "egress_sessions": v.node.egress().sessions().count(),
    })
}

fn neighbors(v: &View<'_>) -> Value {
    let list: Vec<Value> = v
        .neighbors
        .iter()
        .map(|n| {
            json!({
                "id": n.id,
                "interface": n.interface,
                "address": n.address,
                "last_heard_ms_ago": ms(v.now.since(n.last_heard)),
            })
        })
        .collect();
    json!({ "neighbors": list })
}

fn metric(m: braid_proto::metric::Metric) -> Value {
    if m.is_infinite() {
        Value::Null
    } else {
        json!(m.units())
    }
}

fn links(v: &View<'_>) -> Value {
    let list: Vec<Value> = v
        .node
        .control()
        .link_estimates(v.now)
        .into_iter()
        .map(|e| {
            json!({
                "neighbor": e.neighbor.0,
                "df": e.df,
                "dr": e.dr,
                "etx": if e.etx.is_finite() { json!(e.etx) } else { Value::Null },
                "metric_out": metric(e.metric_out),
                "metric_in": metric(e.metric_in),
            })
        })
        .collect();
    json!({ "links": list })
}

/// Every egress this node routes to, with its prefixes and its paths,
/// each written in full (this node, transit nodes, egress).
pub fn route_list(node: &Node) -> Vec<Value> {
    let lsdb = node.control().lsdb();
    let me = node.id().0;
    node.routes()
        .map(|(egress, paths)| {
            let prefixes: Vec<String> = lsdb
                .get(egress)
                .map(|r| r.prefixes.iter().map(|p| p.to_string()).collect())
                .unwrap_or_default();
            let paths: Vec<Vec<u16>> = paths
                .iter()
                .map(|transit| {
                    std::iter::once(me)
                        .chain(transit.iter().map(|n| n.0))
                        .chain(std::iter::once(egress.0))
                        .collect()
                })
                .collect();
            json!({ "egress": egress.0, "prefixes": prefixes, "paths": paths })
        })
        .collect()
}

fn routes(v: &View<'_>) -> Value {
    let lsdb = v.node.control().lsdb();
    let list = route_list(v.node);
    let origins: Vec<Value> = lsdb
        .records()
        .map(|r| {
            json!({
                "origin": r.origin.0,
                "seq": r.seq,
                "links": r.links.iter().map(|l| l.neighbor.0).collect::<Vec<_>>(),
                "prefixes": r.prefixes.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "routes": list, "origins": origins })
}

fn sessions(v: &View<'_>) -> Value {
    let ingress: Vec<Value> = v
        .node
        .ingress()
        .sessions()
        .map(|(&(egress, class), s)| {
            json!({
                "egress": egress.0,
                "class": class,
                "mode": s.mode().to_string(),
                "active_mode": s.active_mode().to_string(),
                "counters": s.counters(),
            })
        })
        .collect();
    let egress: Vec<Value> = v
        .node
        .egress()
        .sessions()
        .map(|(&(ingress, class), s)| {
            json!({
                "ingress": ingress.0,
                "class": class,
                "counters": s.counters(),
            })
        })
        .collect();
    json!({ "ingress": ingress, "egress": egress })
}

fn stats(v: &View<'_>) -> Value {
    let c = v.node.control();
    json!({ "stats": {
        "node": v.node.counters(),
        "control": c.counters(),
        "lsdb": c.lsdb().counters(),
        "ingress": v.node.ingress().totals(),
        "egress": { "sessions": v.node.egress().table_counters() },
        "io": v.io,
    }})
}

/// A monitor event line.
pub fn event(kind: &str, now: Instant, fields: Value) -> String {
    let mut e = json!({ "version": CTL_VERSION, "event": kind, "time_ms": now.as_micros() / 1000 });
    if let (Value::Object(d), Value::Object(b)) = (&mut e, fields) {
        d.extend(b);
    }
    let mut line = e.to_string();
    line.push('\n');
    line
}
