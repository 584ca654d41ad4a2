//! Reading a NetJSON NetworkGraph into a [`Graph`].
//!
//! Only what path computation needs is read: `nodes[].id`,
//! `links[].source`, `links[].target`, `links[].cost`; other fields are
//! ignored. A link listed once is usable both ways with its cost; when both
//! directions are listed, each direction has its own cost. Every problem is
//! a [`NetJsonError`] that names where it is.

use std::collections::HashMap;

use serde::Deserialize;
use thiserror::Error;

use crate::graph::{Graph, GraphBuilder, NodeIx};
use crate::metric::{Metric, MetricError};

/// A topology with named nodes.
#[derive(Debug, Clone)]
pub struct Topology {
    names: Vec<String>,
    index: HashMap<String, NodeIx>,
    /// The graph; node index i is the i-th entry of `nodes`.
    pub graph: Graph,
}

impl Topology {
    /// The index of the node with id `name`, if it is listed.
    pub fn node(&self, name: &str) -> Option<NodeIx> {
        self.index.get(name).copied()
    }

    /// The id of node `v`, as the document gives it.
    pub fn name(&self, v: NodeIx) -> &str {
        &self.names[v as usize]
    }

    /// Every node id, by index (the document's order).
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

/// Why a NetJSON document is not a usable topology.
#[derive(Debug, Error)]
pub enum NetJsonError {
    /// The text is not JSON, or not shaped like a NetworkGraph.
    #[error("malformed NetJSON at line {line}, column {column}: {message}")]
    Json {
        /// Line where the parser stopped.
        line: usize,
        /// Column where the parser stopped.
        column: usize,
        /// What the parser said, without its position.
        message: String,
    },
    /// Two nodes have the same id.
    #[error("nodes[{index}]: node id \"{id}\" is listed twice")]
    DuplicateNode {
        /// Position of the second listing in `nodes`.
        index: usize,
        /// The id listed twice.
        id: String,
    },
    /// A link names a node that is not listed.
    #[error("links[{index}].{field}: unknown node \"{id}\"")]
    UnknownNode {
        /// Position of the link in `links`.
        index: usize,
        /// Which end: `source` or `target`.
        field: &'static str,
        /// The id that names no node.
        id: String,
    },
    /// A link's cost is not a usable metric.
    #[error("links[{index}] ({from} -> {to}): {error}")]
    BadCost {
        /// Position of the link in `links`.
        index: usize,
        /// The link's source.
        from: String,
        /// The link's target.
        to: String,
        /// Why the cost is refused.
        error: MetricError,
    },
    /// The same direction of a link is listed twice.
    #[error("links[{index}]: link {from} -> {to} is listed twice")]
    DuplicateLink {
        /// Position of the second listing in `links`.
        index: usize,
        /// The link's source.
        from: String,
        /// The link's target.
        to: String,
    },
    /// A link joins a node to itself.
    #[error("links[{index}]: link from \"{id}\" to itself")]
    SelfLoop {
        /// Position of the link in `links`.
        index: usize,
        /// The node's id.
        id: String,
    },
    /// `nodes` is empty.
    #[error("the topology has no nodes")]
    Empty,
    /// More nodes than a graph can index (the count given).
    #[error("the topology has {0} nodes; braid handles at most {max}", max = u32::MAX - 1)]
    TooLarge(usize),
}

#[derive(Deserialize)]
struct Document {
    nodes: Vec<NodeEntry>,
    #[serde(default)]
    links: Vec<LinkEntry>,
}

#[derive(Deserialize)]
struct NodeEntry {
    id: String,
}

#[derive(Deserialize)]
struct LinkEntry {
    source: String,
    target: String,
    cost: f64,
}

/// Parses a NetJSON NetworkGraph.
pub fn parse(text: &str) -> Result<Topology, NetJsonError> {
    let doc: Document = serde_json::from_str(text).map_err(|e| NetJsonError::Json {
        line: e.line(),
        column: e.column(),
        message: strip_position(&e.to_string()),
    })?;
    if doc.nodes.is_empty() {
        return Err(NetJsonError::Empty);
    }
    if doc.nodes.len() >= u32::MAX as usize {
        return Err(NetJsonError::TooLarge(doc.nodes.len()));
    }
    let mut names = Vec::with_capacity(doc.nodes.len());
    let mut index = HashMap::with_capacity(doc.nodes.len());
    for (i, n) in doc.nodes.into_iter().enumerate() {
        if index.insert(n.id.clone(), i as NodeIx).is_some() {
            return Err(NetJsonError::DuplicateNode { index: i, id: n.id });
        }
        names.push(n.id);
    }
    // Directed costs, in order of first listing.
    let mut directed: HashMap<(NodeIx, NodeIx), Metric> = HashMap::new();
    let mut order: Vec<(NodeIx, NodeIx)> = Vec::new();
    for (i, l) in doc.links.iter().enumerate() {
        let lookup = |field, id: &String| {
            index
                .get(id)
                .copied()
                .ok_or_else(|| NetJsonError::UnknownNode {
                    index: i,
                    field,
                    id: id.clone(),
                })
        };
        let s = lookup("source", &l.source)?;
        let t = lookup("target", &l.target)?;
        if s == t {
            return Err(NetJsonError::SelfLoop {
                index: i,
                id: l.source.clone(),
            });
        }
        let cost = Metric::from_cost(l.cost).map_err(|error| NetJsonError::BadCost {
            index: i,
            from: l.source.clone(),
            to: l.target.clone(),
            error,
        })?;
        if directed.insert((s, t), cost).is_some() {
            return Err(NetJsonError::DuplicateLink {
                index: i,
                from: l.source.clone(),
                to: l.target.clone(),
            });
        }
        order.push((s, t));
    }
    let mut b = GraphBuilder::new(names.len());
    let mut added = std::collections::HashSet::new();
    for (s, t) in order {
        if !added.insert((s.min(t), s.max(t))) {
            continue; // the other direction of a link already added
        }
        let there = directed[&(s, t)];
        let back = directed.get(&(t, s)).copied().unwrap_or(there);
        b.add_link(s, t, Some(there), Some(back));
    }
    Ok(Topology {
        names,
        index,
        graph: b.build(),
    })
}

/// serde_json appends " at line L column C"; the error carries those apart.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_listing_is_both_ways_two_listings_are_one_way_each() {
        let t = parse(
            r#"{"type":"NetworkGraph","nodes":[{"id":"A"},{"id":"B"},{"id":"C"}],
               "links":[{"source":"A","target":"B","cost":1.5},
                        {"source":"B","target":"C","cost":1},
                        {"source":"C","target":"B","cost":4}]}"#,
        )
        .unwrap();
        let (a, b, c) = (
            t.node("A").unwrap(),
            t.node("B").unwrap(),
            t.node("C").unwrap(),
        );
        let cost = |u, v| t.graph.arc(t.graph.find_arc(u, v).unwrap()).cost.units();
        assert_eq!((cost(a, b), cost(b, a)), (1500, 1500));
        assert_eq!((cost(b, c), cost(c, b)), (1000, 4000));
        assert_eq!(t.graph.link_count(), 2);
        assert_eq!(t.name(c), "C");
    }

    #[test]
    fn errors_name_the_problem() {
        let msg = |text: &str| parse(text).unwrap_err().to_string();
        assert!(msg("{nodes").starts_with("malformed NetJSON at line 1, column 2"));
        assert_eq!(
            msg(r#"{"nodes":[{"id":"A"}],"links":[{"source":"A","target":"Z","cost":1}]}"#),
            "links[0].target: unknown node \"Z\""
        );
        assert_eq!(
            msg(
                r#"{"nodes":[{"id":"A"},{"id":"B"}],"links":[{"source":"A","target":"B","cost":-2}]}"#
            ),
            "links[0] (A -> B): cost -2 is negative"
        );
        assert!(msg(r#"{"nodes":[{"id":"A"},{"id":"B"}],"links":[{"source":"A","target":"B","cost":1e999}]}"#)
            .starts_with("malformed NetJSON"));
        assert!(msg(
            r#"{"nodes":[{"id":"A"},{"id":"B"}],"links":[{"source":"A","target":"B","cost":"x"}]}"#
        )
        .contains("invalid type: string"));
        assert_eq!(
            msg(r#"{"nodes":[{"id":"A"},{"id":"A"}]}"#),
            "nodes[1]: node id \"A\" is listed twice"
        );
        assert_eq!(
            msg(
                r#"{"nodes":[{"id":"A"},{"id":"B"}],"links":[{"source":"A","target":"B","cost":1},{"source":"A","target":"B","cost":2}]}"#
            ),
            "links[1]: link A -> B is listed twice"
        );
        assert_eq!(msg(r#"{"nodes":[]}"#), "the topology has no nodes");
    }
}
