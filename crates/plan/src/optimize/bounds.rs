//! What the problem allows before any search: the most network capacity
//! any design reaches, the least any design keeping every edge site's
//! capacity costs, today's radios per pair, and the errors that say a
//! goal is out of reach. Both methods start from these.

use crate::design::{Equipment, Problem};
use crate::flow;
use crate::units::{mbps, money};

use super::goal::{OptimizeError, EPS_MBPS};

/// The most each pair can carry on its own (limits at sites ignored), and
/// the network min cut with every pair at that: a bound on any design's.
pub(super) fn most_cut(problem: &Problem) -> f64 {
    let m = problem.net.constraints.max_parallel;
    let edges: Vec<flow::Edge> = problem
        .choices
        .iter()
        .enumerate()
        .map(|(p, cs)| {
            let kept: u32 = cs
                .iter()
                .filter(|c| matches!(c.equipment, Equipment::Existing { .. }))
                .map(|c| c.max_count)
                .sum();
            let mut caps: Vec<(f64, u32)> =
                cs.iter().map(|c| (c.capacity_mbps, c.max_count)).collect();
            caps.sort_by(|a, b| b.0.total_cmp(&a.0));
            let mut left = m.max(kept);
            let mut total = 0.0;
            for (cap, count) in caps {
                let n = count.min(left);
                total += cap * f64::from(n);
                left -= n;
            }
            (problem.net.pairs[p].a, problem.net.pairs[p].b, total)
        })
        .filter(|e| e.2 > 0.0)
        .collect();
    flow::max_flow(
        problem.net.sites.len(),
        &edges,
        problem.net.gateway,
        &problem.net.edges(),
    )
    .value_mbps
}

pub(super) fn out_of_reach(problem: &Problem, target: f64) -> Option<OptimizeError> {
    let most = most_cut(problem);
    (target > most + EPS_MBPS).then(|| OptimizeError::Infeasible {
        message: format!(
            "a network min cut of {} Mbit/s is out of reach: with every pair at its most the cut is at most {} Mbit/s",
            mbps(target),
            mbps(most)
        ),
    })
}

/// A lower bound on what keeping every edge site's capacity costs: each
/// edge site's need at the best price per Mbit/s of the pairs at it.
pub(super) fn cost_floor(problem: &Problem) -> f64 {
    problem
        .required
        .iter()
        .map(|&(k, need)| {
            let best = problem.sharing[k]
                .iter()
                .flat_map(|(p, _)| &problem.choices[*p])
                .filter(|c| c.capacity_mbps > 0.0)
                .map(|c| c.price / c.capacity_mbps)
                .fold(f64::INFINITY, f64::min);
            if need > 0.0 {
                need * best
            } else {
                0.0
            }
        })
        .fold(0.0, f64::max)
}

pub(super) fn below_budget(budget: f64, cheapest: f64, how: &str) -> String {
    format!(
        "a budget of {} is below the {} {how}",
        money(budget),
        money(cheapest)
    )
}

/// Today's radios per pair (the parallel limit's exception).
pub(super) fn kept_today(problem: &Problem, p: usize) -> u32 {
    problem.choices[p]
        .iter()
        .filter(|c| matches!(c.equipment, Equipment::Existing { .. }))
        .map(|c| c.max_count)
        .sum()
}
