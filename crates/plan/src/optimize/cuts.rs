//! The capacity cuts of the exact model and the relaxation: the pool of
//! cuts found so far (and which edge sites have a flow of their own), the
//! stage being solved, and the separation that finds what an answer
//! leaves short.

use std::collections::HashMap;

use crate::design::Problem;
use crate::flow;
use crate::units::{mbps, money};

use super::goal::EPS_MBPS;

/// One capacity cut: the pairs crossing S, what the edge sites outside S
/// need, and whether S holds no edge site (a network cut).
#[derive(Debug, Clone)]
pub(super) struct Row {
    pub(super) pairs: Vec<usize>,
    pub(super) edge_need: f64,
    pub(super) network: bool,
}

pub(super) struct Pool {
    pub(super) rows: Vec<Row>,
    index: HashMap<Vec<usize>, usize>,
    /// Edge sites (indices into `Problem::required`) whose need is
    /// written as a flow of its own: those an answer once left short.
    pub(super) flow_sites: Vec<bool>,
}

impl Pool {
    /// The cuts in the model.
    pub(super) fn len(&self) -> usize {
        self.rows.len()
    }

    pub(super) fn new(problem: &Problem) -> Self {
        let mut pool = Pool {
            rows: Vec::new(),
            index: HashMap::new(),
            flow_sites: vec![false; problem.required.len()],
        };
        let n = problem.net.sites.len();
        let g = problem.net.gateway;
        let mut gateway_only = vec![false; n];
        if g < n {
            gateway_only[g] = true;
        }
        pool.add(problem, &gateway_only);
        let mut no_edges = vec![true; n];
        for &(k, _) in &problem.required {
            if k < n {
                no_edges[k] = false;
            }
            let mut all_but = vec![true; n];
            if k < n {
                all_but[k] = false;
            }
            pool.add(problem, &all_but);
        }
        pool.add(problem, &no_edges);
        pool
    }

    /// Adds the cut around `side` (true: with the gateway); false when it
    /// adds nothing new.
    pub(super) fn add(&mut self, problem: &Problem, side: &[bool]) -> bool {
        let g = problem.net.gateway;
        if !side.get(g).copied().unwrap_or(false) {
            return false;
        }
        let inside = |s: usize| side.get(s).copied().unwrap_or(false);
        let pairs: Vec<usize> = (0..problem.net.pairs.len())
            .filter(|&p| inside(problem.net.pairs[p].a) != inside(problem.net.pairs[p].b))
            .collect();
        let outside: Vec<f64> = problem
            .required
            .iter()
            .filter(|&&(k, _)| !inside(k))
            .map(|&(_, need)| need)
            .collect();
        let edge_need = outside.iter().copied().fold(0.0, f64::max);
        let network = outside.len() == problem.required.len();
        match self.index.get(&pairs) {
            Some(&i) => {
                let row = &mut self.rows[i];
                let stronger = edge_need > row.edge_need + EPS_MBPS || (network && !row.network);
                row.edge_need = row.edge_need.max(edge_need);
                row.network |= network;
                stronger
            }
            None => {
                self.index.insert(pairs.clone(), self.rows.len());
                self.rows.push(Row {
                    pairs,
                    edge_need,
                    network,
                });
                true
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Stage {
    /// Least cost with the network cut at least this.
    MinCost(f64),
    /// Most network capacity (`F`) within this budget, at most `bound`.
    MaxCapacity { budget: f64, bound: f64 },
}

impl Stage {
    /// An objective of this stage, written: a cost or a capacity.
    pub(super) fn show(self, objective: f64) -> String {
        match self {
            Stage::MinCost(_) => money(objective),
            Stage::MaxCapacity { .. } => format!("{} Mbit/s", mbps(objective)),
        }
    }
}

/// Adds to `pool` the min cut of every flow a solution's `edges` (what
/// each pair carries) leave short of its need: each edge site's, and the
/// network's (the stage's target, or `f` at a budget). `slack`: how short
/// (Mbit/s) an edge site's and the network's flow may fall and count as
/// kept. Returns whether any fell short, and how many cuts were new.
pub(super) fn separate(
    problem: &Problem,
    pool: &mut Pool,
    stage: Stage,
    edges: &[flow::Edge],
    f: f64,
    slack: (f64, f64),
) -> (bool, usize) {
    let n = problem.net.sites.len();
    let g = problem.net.gateway;
    let (mut violated, mut added) = (false, 0);
    for (i, &(k, need)) in problem.required.iter().enumerate() {
        let cut = flow::max_flow(n, edges, g, &[k]);
        if cut.value_mbps + slack.0 < need {
            violated = true;
            added += usize::from(pool.add(problem, &cut.source_side));
            if let Some(f) = pool.flow_sites.get_mut(i) {
                added += usize::from(!*f);
                *f = true;
            }
        }
    }
    let network_need = match stage {
        Stage::MinCost(t) => t,
        Stage::MaxCapacity { .. } => f,
    };
    if network_need > EPS_MBPS {
        let cut = flow::max_flow(n, edges, g, &problem.net.edges());
        if cut.value_mbps + slack.1 < network_need {
            violated = true;
            added += usize::from(pool.add(problem, &cut.source_side));
        }
    }
    (violated, added)
}
