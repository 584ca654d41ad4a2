//! Maximum flow and minimum cut on an undirected multigraph (Dinic's
//! algorithm), in whole kbit/s so that cuts are exact: the one max-flow
//! every planning analysis and the optimiser's feasibility check use.
//! Also the flow on each edge (`flows_on`, Edmonds-Karp), where the
//! optimiser's heuristic opens paths on top of the current flow.

/// An undirected edge: two site indices and a capacity (Mbit/s).
pub type Edge = (usize, usize, f64);

/// Capacity treated as unbounded (the super-sink's arcs), in kbit/s.
const UNBOUNDED: u64 = u64::MAX / 4;

/// A minimum cut: its value and which nodes are on the source's side.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    /// The maximum flow, equal to the cut's capacity, Mbit/s.
    pub value_mbps: f64,
    /// `true` for nodes the source still reaches in the residual graph.
    pub source_side: Vec<bool>,
}

impl Cut {
    /// Indices (into the edge list) of the edges the cut separates.
    pub fn edges(&self, edges: &[Edge]) -> Vec<usize> {
        (0..edges.len())
            .filter(|&i| {
                let (a, b, _) = edges[i];
                self.source_side[a] != self.source_side[b]
            })
            .collect()
    }
}

fn kbps(mbps: f64) -> u64 {
    if mbps <= 0.0 || !mbps.is_finite() {
        0
    } else {
        (mbps * 1000.0).round() as u64
    }
}

struct Dinic {
    head: Vec<Option<usize>>,
    to: Vec<usize>,
    cap: Vec<u64>,
    next: Vec<Option<usize>>,
    level: Vec<i32>,
    iter: Vec<Option<usize>>,
}

impl Dinic {
    fn new(n: usize) -> Self {
        Dinic {
            head: vec![None; n],
            to: Vec::new(),
            cap: Vec::new(),
            next: Vec::new(),
            level: vec![0; n],
            iter: vec![None; n],
        }
    }

    /// Arcs u->v with capacity `forward` and v->u with `backward`.
    fn add(&mut self, u: usize, v: usize, forward: u64, backward: u64) {
        for (from, to, cap) in [(u, v, forward), (v, u, backward)] {
            self.to.push(to);
            self.cap.push(cap);
            self.next.push(self.head[from]);
            self.head[from] = Some(self.to.len() - 1);
        }
    }

    fn bfs(&mut self, s: usize, t: usize) -> bool {
        self.level.fill(-1);
        self.level[s] = 0;
        let mut queue = std::collections::VecDeque::from([s]);
        while let Some(v) = queue.pop_front() {
            let mut a = self.head[v];
            while let Some(i) = a {
                let w = self.to[i];
                if self.cap[i] > 0 && self.level[w] < 0 {
                    self.level[w] = self.level[v] + 1;
                    queue.push_back(w);
                }
                a = self.next[i];
            }
        }
        self.level[t] >= 0
    }

    fn dfs(&mut self, v: usize, t: usize, pushed: u64) -> u64 {
        if v == t {
            return pushed;
        }
        while let Some(i) = self.iter[v] {
            let w = self.to[i];
            if self.cap[i] > 0 && self.level[w] == self.level[v] + 1 {
                let got = self.dfs(w, t, pushed.min(self.cap[i]));
                if got > 0 {
                    self.cap[i] -= got;
                    self.cap[i ^ 1] = self.cap[i ^ 1].saturating_add(got);
                    return got;
                }
            }
            self.iter[v] = self.next[i];
        }
        0
    }

    fn run(&mut self, s: usize, t: usize) -> u64 {
        let mut flow = 0u64;
        while self.bfs(s, t) {
            self.iter.clone_from(&self.head);
            loop {
                let f = self.dfs(s, t, UNBOUNDED);
                if f == 0 {
                    break;
                }
                flow = flow.saturating_add(f);
            }
        }
        flow
    }

    fn reachable(&self, s: usize) -> Vec<bool> {
        let mut seen = vec![false; self.head.len()];
        seen[s] = true;
        let mut stack = vec![s];
        while let Some(v) = stack.pop() {
            let mut a = self.head[v];
            while let Some(i) = a {
                let w = self.to[i];
                if self.cap[i] > 0 && !seen[w] {
                    seen[w] = true;
                    stack.push(w);
                }
                a = self.next[i];
            }
        }
        seen
    }
}

/// The maximum flow from `s` to any of `sinks` at once (a super-sink
/// joined to each by an unbounded arc) over undirected `edges` on nodes
/// `0..n`, and a minimum cut that achieves it.
pub fn max_flow(n: usize, edges: &[Edge], s: usize, sinks: &[usize]) -> Cut {
    FlowGraph::new(n, edges, sinks).max_flow(s, sinks)
}

/// One graph asked for many max flows (from different sources, to
/// different sink sets among those it was built with) without being
/// built again: what checking every edge site of one design needs.
pub struct FlowGraph {
    dinic: Dinic,
    n: usize,
    /// Each arc's capacity before any flow.
    base: Vec<u64>,
    /// Per node, its arc to the super-sink, if it may be a sink.
    to_sink: Vec<Option<usize>>,
}

impl FlowGraph {
    /// The graph of `edges` on nodes `0..n`; any of `sinks` may later be
    /// asked for as a sink.
    pub fn new(n: usize, edges: &[Edge], sinks: &[usize]) -> Self {
        let mut dinic = Dinic::new(n + 1);
        for &(a, b, c) in edges {
            let c = kbps(c);
            dinic.add(a, b, c, c);
        }
        let mut to_sink = vec![None; n];
        for &k in sinks {
            if k < n && to_sink[k].is_none() {
                to_sink[k] = Some(dinic.to.len());
                dinic.add(k, n, 0, 0);
            }
        }
        FlowGraph {
            base: dinic.cap.clone(),
            dinic,
            n,
            to_sink,
        }
    }

    /// The maximum flow from `s` to all of `sinks` at once (each must be
    /// one the graph was built with; others are ignored), and a minimum
    /// cut.
    pub fn max_flow(&mut self, s: usize, sinks: &[usize]) -> Cut {
        let d = &mut self.dinic;
        d.cap.copy_from_slice(&self.base);
        for &k in sinks {
            if k != s {
                if let Some(Some(arc)) = self.to_sink.get(k) {
                    d.cap[*arc] = UNBOUNDED;
                }
            }
        }
        let flow = d.run(s, self.n);
        let mut source_side = d.reachable(s);
        source_side.truncate(self.n);
        Cut {
            value_mbps: flow as f64 / 1000.0,
            source_side,
        }
    }
}

/// Max flow from `s` to `sinks` with each edge's net flow (a to b
/// positive), Mbit/s; whole kbit/s like [`max_flow`]
/// (Edmonds-Karp: at most nodes x arcs augmentations).
pub(crate) fn flows_on(n: usize, edges: &[Edge], s: usize, sinks: &[usize]) -> (f64, Vec<f64>) {
    const BIG: i64 = i64::MAX / 4;
    let kbps = |c: f64| {
        if c.is_finite() && c > 0.0 {
            (c * 1000.0).round().min(1e15) as i64
        } else {
            0
        }
    };
    let t = n;
    let mut head: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    let mut to: Vec<usize> = Vec::new();
    let mut cap: Vec<i64> = Vec::new();
    let mut arc = |u: usize, v: usize, fwd: i64, back: i64, head: &mut Vec<Vec<usize>>| {
        head[u].push(to.len());
        to.push(v);
        cap.push(fwd);
        head[v].push(to.len());
        to.push(u);
        cap.push(back);
    };
    for &(a, b, c) in edges {
        let a = a.min(n);
        let b = b.min(n);
        let c = kbps(c);
        arc(a, b, c, c, &mut head);
    }
    for &k in sinks {
        if k < n && k != s {
            arc(k, t, BIG, 0, &mut head);
        }
    }
    let mut total: i64 = 0;
    if s < n {
        let limit = (n + 1) * (to.len() + 1);
        for _ in 0..limit {
            let mut prev: Vec<Option<usize>> = vec![None; n + 1];
            let mut seen = vec![false; n + 1];
            seen[s] = true;
            let mut queue = std::collections::VecDeque::from([s]);
            while let Some(u) = queue.pop_front() {
                if u == t {
                    break;
                }
                for &i in &head[u] {
                    let v = to[i];
                    if cap[i] > 0 && !seen[v] {
                        seen[v] = true;
                        prev[v] = Some(i);
                        queue.push_back(v);
                    }
                }
            }
            if !seen[t] {
                break;
            }
            let mut push = BIG;
            let mut v = t;
            while let Some(i) = prev[v] {
                push = push.min(cap[i]);
                v = to[i ^ 1];
            }
            let mut v = t;
            while let Some(i) = prev[v] {
                cap[i] -= push;
                cap[i ^ 1] = cap[i ^ 1].saturating_add(push);
                v = to[i ^ 1];
            }
            total = total.saturating_add(push);
        }
    }
    let flows = edges
        .iter()
        .enumerate()
        .map(|(i, &(_, _, c))| (kbps(c) - cap[2 * i]) as f64 / 1000.0)
        .collect();
    (total as f64 / 1000.0, flows)
}

/// The number of internally node-disjoint paths from `s` to `t` (each
/// intermediate node used once; parallel edges are separate paths).
pub fn node_disjoint_paths(n: usize, edges: &[(usize, usize)], s: usize, t: usize) -> u64 {
    if s == t {
        return 0;
    }
    // Node v splits into v_in = v and v_out = n + v, joined by 1 (s and t
    // unbounded); an edge a-b is a_out -> b_in and b_out -> a_in.
    let mut d = Dinic::new(2 * n);
    for v in 0..n {
        let through = if v == s || v == t { UNBOUNDED } else { 1 };
        d.add(v, n + v, through, 0);
    }
    for &(a, b) in edges {
        d.add(n + a, b, 1, 0);
        d.add(n + b, a, 1, 0);
    }
    d.run(n + s, t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_is_cut_at_its_thinnest_link() {
        let edges = [(0, 1, 400.0), (1, 2, 100.0), (2, 3, 300.0)];
        let c = max_flow(4, &edges, 0, &[3]);
        assert_eq!(c.value_mbps, 100.0);
        assert_eq!(c.edges(&edges), vec![1]);
    }

    /// gw - a (300) - e1 (200); gw - b (100) - e2 (500); a - b (50).
    const TWO_BRANCHES: [Edge; 5] = [
        (0, 1, 300.0),
        (1, 3, 200.0),
        (0, 2, 100.0),
        (2, 4, 500.0),
        (1, 2, 50.0),
    ];

    #[test]
    fn sinks_together_take_what_the_source_gives() {
        let edges = TWO_BRANCHES;
        assert_eq!(max_flow(5, &edges, 0, &[3, 4]).value_mbps, 350.0);
        assert_eq!(max_flow(5, &edges, 0, &[4]).value_mbps, 150.0);
    }

    #[test]
    fn one_graph_answers_for_each_sink_set_as_a_new_one_would() {
        let edges = TWO_BRANCHES;
        let mut g = FlowGraph::new(5, &edges, &[3, 4]);
        for sinks in [&[3, 4][..], &[4], &[3], &[4], &[]] {
            assert_eq!(
                g.max_flow(0, sinks),
                max_flow(5, &edges, 0, sinks),
                "{sinks:?}"
            );
        }
        assert_eq!(g.max_flow(0, &[3, 4]).value_mbps, 350.0);
    }

    #[test]
    fn parallel_edges_are_disjoint_paths_and_a_shared_relay_is_one() {
        // s=0 to t=3 through relay 1 twice and directly twice.
        let edges = [(0, 1), (1, 3), (0, 1), (1, 3), (0, 3), (0, 3)];
        assert_eq!(node_disjoint_paths(4, &edges, 0, 3), 3);
    }
}
