//! The live topology as a NetJSON NetworkGraph at `/topology`: every
//! origin in the link-state database, one link per direction with the
//! cost routing gives it (`Lsdb::advertised_cost`: the worse of its two
//! ends' word; the tail's alone while the head does not list the link).

use braid_proto::node::Node;
use serde_json::json;

/// The topology as this node knows it: a NetJSON NetworkGraph, one link
/// per direction with the cost routing gives it.
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
            r.links.iter().filter_map(move |l| {
                let cost = lsdb.advertised_cost(r.origin, l);
                (!cost.is_infinite()).then(|| {
                    json!({
                        "source": r.origin.0.to_string(),
                        "target": l.neighbor.0.to_string(),
                        "cost": cost.as_cost(),
                    })
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

#[cfg(test)]
mod tests {
    use braid_proto::node::{Interface, NodeConfig};
    use braid_proto::time::Instant;
    use braid_wire::{ControlHeader, LsaEntry, LsaLink, MessageType, NodeId};

    use super::*;

    fn link(to: u16, out: u32, inn: u32) -> LsaLink {
        LsaLink {
            neighbor: NodeId(to),
            link_id: 0,
            metric_out: out,
            metric_in: inn,
        }
    }

    /// Origin `origin`'s advertisement, as its neighbor 2 floods it.
    fn lsa(origin: u16, links: &[LsaLink]) -> Vec<u8> {
        let entry = LsaEntry::new(NodeId(origin), 0, 1, links, &[]);
        let header = ControlHeader::new(MessageType::Lsa, NodeId(2));
        let mut buf = vec![0u8; 512];
        let n = braid_wire::Lsa::emit_bundle(&header, &[entry], &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    #[test]
    fn each_direction_costs_what_routing_gives_it() {
        let mut rng = <rand_chacha::ChaCha8Rng as rand_core::SeedableRng>::seed_from_u64(1);
        let mut node =
            Node::new(NodeId(1), NodeConfig::default(), Instant::ZERO, &mut rng).unwrap();
        // 2 raised its link to 3 (a cost factor of 5 there: both of its
        // figures); 3 measured 1.0 both ways; 2 also lists 4, which
        // never confirmed it.
        let from_2 = lsa(2, &[link(3, 5000, 5000), link(4, 1500, 1500)]);
        let from_3 = lsa(3, &[link(2, 1000, 1000)]);
        for bytes in [from_2, from_3] {
            node.handle_datagram(Instant::ZERO, Interface(0), Some(NodeId(2)), &bytes);
        }
        let topo = netjson_value(&node, &Default::default());
        let cost = |a: &str, b: &str| {
            topo["links"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["source"] == a && l["target"] == b)
                .map(|l| l["cost"].as_f64().unwrap())
        };
        assert_eq!(cost("2", "3"), Some(5.0));
        assert_eq!(cost("3", "2"), Some(5.0), "2's raise shows both ways");
        assert_eq!(cost("2", "4"), Some(1.5), "unconfirmed: the tail's word");
    }
}
