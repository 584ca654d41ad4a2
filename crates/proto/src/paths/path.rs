//! A path through the graph (its nodes, arcs and cost), and what the
//! paths of a disjoint set must not share.

use crate::graph::{ArcIx, Graph, NodeIx};

/// What must not be shared between the paths of a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Disjointness {
    /// No transit node in common (and so no link either).
    #[default]
    Node,
    /// No link in common; transit nodes may be shared.
    Edge,
}

impl Disjointness {
    /// A short stable name: `node` or `edge`.
    pub fn as_str(self) -> &'static str {
        match self {
            Disjointness::Node => "node",
            Disjointness::Edge => "edge",
        }
    }
}

/// A path through the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    /// Nodes from source to destination, both included.
    pub nodes: Vec<NodeIx>,
    /// The arcs taken, one fewer than the nodes.
    pub arcs: Vec<ArcIx>,
    /// Sum of the arcs' costs, in metric units.
    pub cost: u64,
    /// True when this path shares a node (or link, for edge-disjoint
    /// requests) with another path of the set: there were fewer disjoint
    /// paths than asked for.
    pub shared: bool,
}

impl Path {
    pub(crate) fn from_arcs(graph: &Graph, source: NodeIx, arcs: Vec<ArcIx>) -> Path {
        let mut nodes = Vec::with_capacity(arcs.len() + 1);
        nodes.push(source);
        let mut cost = 0u64;
        for &a in &arcs {
            let arc = graph.arc(a);
            debug_assert_eq!(arc.from, *nodes.last().unwrap());
            nodes.push(arc.to);
            cost += arc.cost.units() as u64;
        }
        Path {
            nodes,
            arcs,
            cost,
            shared: false,
        }
    }

    /// Number of arcs on the path.
    pub fn hops(&self) -> usize {
        self.arcs.len()
    }

    /// Whether this path and `other` share what `mode` forbids: a link, or
    /// for node-disjointness also a transit node.
    pub fn shares_with(&self, graph: &Graph, other: &Path, mode: Disjointness) -> bool {
        let link = |a: &ArcIx| graph.arc(*a).link;
        let shares_link = self
            .arcs
            .iter()
            .any(|a| other.arcs.iter().any(|b| link(a) == link(b)));
        let shares_node = mode == Disjointness::Node
            && self.transit().iter().any(|v| other.transit().contains(v));
        shares_link || shares_node
    }

    /// The nodes strictly between source and destination.
    pub fn transit(&self) -> &[NodeIx] {
        match self.nodes.len() {
            0..=2 => &[],
            n => &self.nodes[1..n - 1],
        }
    }

    /// The node the path ends at.
    pub fn target(&self) -> NodeIx {
        self.nodes.last().copied().unwrap_or_default()
    }
}
