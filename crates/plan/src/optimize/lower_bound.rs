//! How far a plan can be from the best: the bound of the exact model's LP
//! relaxation (every radio count and choice continuous), solved with the
//! same lazily generated capacity cuts as the MILP ([`super::exact`]),
//! the cuts found by max flows over the relaxation's fractional
//! capacities.
//!
//! Every relaxation of the model bounds it: the least cost at a capacity
//! is at least the relaxation's, the most capacity at a budget at most
//! the relaxation's. That holds at every round of cuts, not only the
//! last (a relaxation with fewer cuts is a relaxation still), so a bound
//! cut short by the time or round limit (per round, and
//! [`BOUND_TOTAL_S`] in all) is valid, only looser. It is
//! what lets `braid plan` say of a heuristic design "within x% of the
//! best possible" where the MILP does not finish (issue 36): a proven
//! gap, though one that the integer radio counts may keep wide.

use std::time::Instant;

use crate::design::Problem;
use crate::flow;

use super::bounds::most_cut;
use super::cuts::{separate, Pool, Stage};
use super::goal::{Goal, OptimizeError, BOUND_LIMITS, EPS_MBPS};
use super::model::{solve_once, SolveFail};

/// A cut short by less than this (Mbit/s) in the relaxation is taken as
/// kept: max flows are whole kbit/s, and a fractional capacity rounded
/// there must not count as a violation with no new cut to add.
const SLACK_MBPS: f64 = 0.01;

/// The relaxation's bound for `goal`: a cost no design meeting it can
/// beat (least cost), or a network capacity no design within the budget
/// can pass (most capacity), and whether the cuts ran out (the bound of
/// the whole relaxation) rather than the rounds.
pub(super) fn relaxation_bound(
    problem: &Problem,
    goal: Goal,
    pool: &mut Pool,
    total_s: f64,
    progress: &mut dyn FnMut(&str),
) -> Result<(f64, bool), OptimizeError> {
    let limits = BOUND_LIMITS;
    let stage = match goal {
        Goal::MinCost { network_mbps } => Stage::MinCost(network_mbps),
        Goal::MaxCapacity { budget } => Stage::MaxCapacity {
            budget,
            bound: most_cut(problem),
        },
    };
    let mut last = None;
    let started = Instant::now();
    for it in 1..=limits.max_iterations {
        let left = total_s - started.elapsed().as_secs_f64();
        if left <= 0.0 {
            break;
        }
        let time_limit = limits.time_limit_s.min(left);
        let s = match solve_once(problem, pool, stage, time_limit, true) {
            Ok(s) => s,
            Err(SolveFail::Infeasible) => {
                return Err(OptimizeError::Infeasible {
                    message: "no design meets the goal, even with fractional radios".into(),
                })
            }
            Err(SolveFail::NoAnswer { .. }) => match last {
                Some(bound) => return Ok((bound, false)),
                None => {
                    return Err(OptimizeError::Unfinished {
                        message: "the first linear program did not finish in time".into(),
                    })
                }
            },
            Err(SolveFail::Error(e)) => match last {
                // A round that did not finish: the last one's bound holds.
                Some(bound) => return Ok((bound, false)),
                None => return Err(e),
            },
        };
        last = Some(s.objective);
        let edges: Vec<flow::Edge> = s
            .pair_mbps
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > EPS_MBPS)
            .map(|(p, &c)| (problem.net.pairs[p].a, problem.net.pairs[p].b, c))
            .collect();
        let slack = (SLACK_MBPS, SLACK_MBPS);
        let (_, added) = separate(problem, pool, stage, &edges, s.f, slack);
        progress(&format!(
            "bound (LP relaxation): round {it}, {} cuts, {}",
            pool.len(),
            stage.show(s.objective)
        ));
        if added == 0 {
            return Ok((s.objective, true));
        }
    }
    last.map(|bound| (bound, false))
        .ok_or_else(|| OptimizeError::Unfinished {
            message: "no round of the relaxation ran".into(),
        })
}
