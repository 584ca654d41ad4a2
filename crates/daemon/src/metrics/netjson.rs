//! The live topology as a NetJSON NetworkGraph at `/topology`: every
//! origin in the link-state database, one link per direction with the
//! cost its tail advertised.

use braid_proto::node::Node;
use serde_json::json;

/// The topology as this node knows it: a NetJSON NetworkGraph, one link
/// per direction with the cost its tail advertised.
pub fn netjson(node: &Node, labels: &std::collections::BTreeMap<u16, String>) -> String {
    netjson_value(node, labels).to_string()
}

/// [`netjson`] as a JSON value. Each node's `label` is its name from
/// `[labels]`, else "node N".
pub fn netjson_value(
    node: &Node,
    labels: &std::collections::BTreeMap<u16, String>,
) -> serde_json::Value {
    let lsdb = node.control().lsdb();
    let nodes: Vec<_> = lsdb
        .records()
        .map(|r| {
            json!({
                "id": r.origin.0.to_string(),
                "label": labels.get(&r.origin.0).cloned().unwrap_or_else(|| format!("node {}", r.origin.0)),
                "properties": { "prefixes": r.prefixes.iter().map(|p| p.to_string()).collect::<Vec<_>>() },
            })
        })
        .collect();
    let links: Vec<_> = lsdb
        .records()
        .flat_map(|r| {
            r.links
                .iter()
                .filter(|l| l.metric_out != u32::MAX)
                .map(move |l| {
                    json!({
                        "source": r.origin.0.to_string(),
                        "target": l.neighbor.0.to_string(),
                        "cost": l.metric_out as f64 / braid_proto::metric::SCALE as f64,
                    })
                })
        })
        .collect();
    json!({
        "type": "NetworkGraph",
        "protocol": "braid",
        "version": env!("CARGO_PKG_VERSION"),
        "metric": format!("{:?}", node.control().config().metric).to_lowercase(),
        "router_id": node.id().0.to_string(),
        "nodes": nodes,
        "links": links,
    })
}
