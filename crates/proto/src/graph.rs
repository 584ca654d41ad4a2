//! The directed graph every path computation runs on.
//!
//! Nodes are dense indices `0..n`. Arcs are stored in compressed sparse rows
//! (outgoing and incoming), sorted so that the same input always gives the
//! same graph and so the same paths. Each arc belongs to a *link*: the two
//! directions of one physical link share a link id, which is what
//! edge-disjointness counts. Parallel links between two nodes are distinct
//! links. Infinite-cost arcs never enter the graph.

use crate::metric::Metric;

/// Index of a node in a [`Graph`].
pub type NodeIx = u32;
/// Index of an arc in a [`Graph`].
pub type ArcIx = u32;

/// One direction of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arc {
    /// The node the arc leaves.
    pub from: NodeIx,
    /// The node the arc enters.
    pub to: NodeIx,
    /// The cost of this direction (never infinite).
    pub cost: Metric,
    /// The physical link this arc is a direction of.
    pub link: u32,
}

/// An immutable directed multigraph with positive arc costs.
#[derive(Debug, Clone)]
pub struct Graph {
    arcs: Vec<Arc>,
    out_start: Vec<u32>,
    in_start: Vec<u32>,
    /// Arc indices ordered by head node.
    in_arcs: Vec<ArcIx>,
    links: u32,
}

impl Graph {
    /// Number of nodes (indices `0..node_count()`).
    pub fn node_count(&self) -> usize {
        self.out_start.len() - 1
    }

    /// Number of arcs (usable link directions).
    pub fn arc_count(&self) -> usize {
        self.arcs.len()
    }

    /// Number of links added, including links with no usable direction.
    pub fn link_count(&self) -> usize {
        self.links as usize
    }

    /// The arc with index `a`.
    pub fn arc(&self, a: ArcIx) -> &Arc {
        &self.arcs[a as usize]
    }

    /// Outgoing arcs of `v` as a range of arc indices.
    pub fn out_arcs(&self, v: NodeIx) -> core::ops::Range<ArcIx> {
        self.out_start[v as usize]..self.out_start[v as usize + 1]
    }

    /// Incoming arcs of `v`.
    pub fn in_arcs(&self, v: NodeIx) -> &[ArcIx] {
        let (s, e) = (self.in_start[v as usize], self.in_start[v as usize + 1]);
        &self.in_arcs[s as usize..e as usize]
    }

    /// Sum of all arc costs: an upper bound on any simple path's cost.
    pub fn total_cost(&self) -> u64 {
        self.arcs.iter().map(|a| a.cost.units() as u64).sum()
    }

    /// The cheapest arc from `u` to `v`, if any.
    pub fn find_arc(&self, u: NodeIx, v: NodeIx) -> Option<ArcIx> {
        self.out_arcs(u)
            .filter(|&a| self.arcs[a as usize].to == v)
            .min_by_key(|&a| (self.arcs[a as usize].cost, a))
    }
}

/// Collects links, then builds a [`Graph`].
#[derive(Debug, Clone)]
pub struct GraphBuilder {
    nodes: usize,
    arcs: Vec<Arc>,
    links: u32,
}

impl GraphBuilder {
    /// A builder for a graph of `nodes` nodes and no links yet.
    pub fn new(nodes: usize) -> Self {
        assert!(nodes < u32::MAX as usize, "graph too large");
        GraphBuilder {
            nodes,
            arcs: Vec::new(),
            links: 0,
        }
    }

    /// Number of nodes the graph will have.
    pub fn node_count(&self) -> usize {
        self.nodes
    }

    /// Adds a link; `None` (or an infinite metric) means that direction is
    /// unusable. Returns the link id.
    pub fn add_link(
        &mut self,
        a: NodeIx,
        b: NodeIx,
        a_to_b: Option<Metric>,
        b_to_a: Option<Metric>,
    ) -> u32 {
        assert!(
            (a as usize) < self.nodes && (b as usize) < self.nodes,
            "node out of range"
        );
        let link = self.links;
        self.links += 1;
        for (from, to, cost) in [(a, b, a_to_b), (b, a, b_to_a)] {
            if let Some(cost) = cost.filter(|c| !c.is_infinite()) {
                if from != to {
                    self.arcs.push(Arc {
                        from,
                        to,
                        cost,
                        link,
                    });
                }
            }
        }
        link
    }

    /// Builds the graph, its arcs sorted by tail, head, cost and link.
    pub fn build(mut self) -> Graph {
        // Deterministic order: by tail, then head, cost and link.
        self.arcs.sort_by_key(|a| (a.from, a.to, a.cost, a.link));
        let n = self.nodes;
        let mut out_start = vec![0u32; n + 1];
        let mut in_start = vec![0u32; n + 1];
        for a in &self.arcs {
            out_start[a.from as usize + 1] += 1;
            in_start[a.to as usize + 1] += 1;
        }
        for i in 0..n {
            out_start[i + 1] += out_start[i];
            in_start[i + 1] += in_start[i];
        }
        let mut fill = in_start.clone();
        let mut in_arcs = vec![0; self.arcs.len()];
        for (i, a) in self.arcs.iter().enumerate() {
            let slot = &mut fill[a.to as usize];
            in_arcs[*slot as usize] = i as ArcIx;
            *slot += 1;
        }
        Graph {
            arcs: self.arcs,
            out_start,
            in_start,
            in_arcs,
            links: self.links,
        }
    }
}
