//! The exact method: a MILP over HiGHS, its capacity written as flows
//! and lazily generated cuts.
//!
//! One integer variable `x[p][c]` in `0..=max_count` per pair `p` and
//! choice `c`. Linear limits go in directly: radios per pair
//! (`Σ_c x[p][c] ≤ max_parallel`, with one binary more where today's pair
//! already carries more radios than that: then either at most
//! `max_parallel` radios or no new model), radios per site, and spectrum
//! per site and antenna direction (`Σ_{q in group} Σ_c band_share·x ≤ 1`).
//!
//! Capacity: the network's (gateway to all edge sites at once) is a flow,
//! both ways on every pair within its capacity `Σ_c cap_c·x[p][c]`, at
//! least the target (or `F`, the variable maximised at a budget). Each
//! edge site's own need is a cut: for a set S of sites holding the
//! gateway, the pairs crossing it carry at least what each edge site
//! outside S needs. Such sets are too many to list, so they are added as
//! needed: start with the stars (around each edge site, around the
//! gateway, around all edge sites), solve, compute the max flows of the
//! answer with [`crate::flow::max_flow`], add the min cut of every flow
//! short of its need, and give each edge site left short a flow of its
//! own (then no cut of it is missing), and solve again, until an
//! optimal answer keeps every need: then it is optimal. At a budget, a
//! second solve minimises the cost at the maximum capacity found, so the
//! answer wastes no money.
//!
//! Every solve has a deadline (the goal's time limit): one stopped early
//! still gives HiGHS's best bound, which bounds the whole model (its cuts
//! are a subset of all), and its answer, made whole by the heuristic's
//! repair where it breaks a cut not yet added ([`polish`]). The best design
//! found (from the heuristic's on) is the answer, with the best bound.
use std::time::{Duration, Instant};

use crate::design::{Design, Problem};
use crate::units::{mbps, money};

use super::bounds::{below_budget, most_cut, out_of_reach};
use super::cuts::{separate, Pool, Stage};
use super::goal::{
    relative_gap, ExactLimits, Goal, OptimizeError, BOUND_TOTAL_S, EPS_COST, EPS_MBPS,
};
use super::heuristic::{heuristic, polish};
use super::lower_bound::relaxation_bound;
use super::model::{integer_variables, solve_once, SolveFail};
use super::solver::MIP_REL_GAP;

/// What one stage found: the best design keeping every cut, the best
/// proven bound on the stage's objective, and how the search ended.
pub(super) struct StageResult {
    pub(super) design: Design,
    /// The stage's objective at `design`: its cost (least cost) or its
    /// network min cut (most capacity).
    pub(super) value: f64,
    /// No design beats this (None: nothing proven).
    pub(super) bound: Option<f64>,
    /// `design` proven optimal.
    pub(super) optimal: bool,
    pub(super) rounds: usize,
}

/// The stage's objective at a design keeping every cut.
fn stage_value(problem: &Problem, stage: Stage, d: &Design) -> f64 {
    match stage {
        Stage::MinCost(_) => problem.evaluate(d).cost,
        Stage::MaxCapacity { .. } => problem.network_cut(d).value_mbps,
    }
}

/// The solver's answer as a design meeting the goal, with its objective.
/// One that keeps every cut is one already. At a capacity, one that
/// breaks some is repaired by the heuristic ([`polish`]); at a budget,
/// one within it that keeps every edge site's need is a design of the
/// capacity it has (less than the solver's `F`).
fn candidate(
    problem: &Problem,
    stage: Stage,
    design: Design,
    violated: bool,
) -> Option<(Design, f64)> {
    let design = match stage {
        Stage::MinCost(t) if violated => polish(problem, &design, t)?,
        Stage::MinCost(_) => design,
        Stage::MaxCapacity { budget, .. } => {
            let e = problem.evaluate(&design);
            let edges_kept = e
                .per_edge_mbps
                .iter()
                .zip(&problem.required)
                .all(|(&have, &(_, need))| have + EPS_MBPS >= need);
            if !edges_kept || e.cost > budget + EPS_COST * budget.max(1.0) {
                return None;
            }
            design
        }
    };
    if problem.violation(&design).is_some() {
        return None;
    }
    let value = stage_value(problem, stage, &design);
    Some((design, value))
}

/// Whether objective `a` is better than `b` for the stage, beyond the
/// tolerances.
fn better(stage: Stage, a: f64, b: f64) -> bool {
    match stage {
        Stage::MinCost(_) => a < b - EPS_COST,
        Stage::MaxCapacity { .. } => a > b + EPS_MBPS,
    }
}

/// The tighter of two bounds for the stage.
fn tighter(stage: Stage, a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(match stage {
            Stage::MinCost(_) => a.max(b),
            Stage::MaxCapacity { .. } => a.min(b),
        }),
        (a, b) => a.or(b),
    }
}

/// Solves one stage: solve, add the cuts the answer breaks, solve again,
/// until an optimal answer keeps every cut, the rounds run out or the
/// deadline comes. Every answer keeping every cut is a design; the best
/// is kept (from `warm`, a design keeping every cut, on), and every
/// solve's bound is a bound of the whole model (its cuts are a subset).
fn lazy(
    problem: &Problem,
    pool: &mut Pool,
    stage: Stage,
    warm: Option<&Design>,
    limits: StageLimits,
    progress: &mut dyn FnMut(&str),
) -> Result<StageResult, SolveFail> {
    let label = match stage {
        Stage::MinCost(_) => "least cost",
        Stage::MaxCapacity { .. } => "most capacity",
    };
    let mut best: Option<(Design, f64)> = warm.map(|d| (d.clone(), stage_value(problem, stage, d)));
    let mut bound = limits.bound;
    let mut optimal = false;
    let mut rounds = 0;
    while rounds < limits.max_rounds {
        let left = limits
            .deadline
            .saturating_duration_since(Instant::now())
            .as_secs_f64();
        if left < 0.01 {
            break;
        }
        rounds += 1;
        let s = match solve_once(problem, pool, stage, left, false) {
            Ok(s) => s,
            Err(SolveFail::NoAnswer { bound: b }) => {
                bound = tighter(stage, bound, b);
                break;
            }
            Err(SolveFail::Infeasible) if best.is_some() => {
                return Err(SolveFail::Error(OptimizeError::Solver {
                    message: "the solver called the model infeasible though a design keeps it (numerical trouble)".into(),
                }))
            }
            Err(e) => return Err(e),
        };
        bound = tighter(stage, bound, s.bound);
        let edges = problem.edges(&s.design);
        let (violated, added) = separate(problem, pool, stage, &edges, s.f, (EPS_MBPS, 1e-4));
        if let Some((design, value)) = candidate(problem, stage, s.design, violated) {
            if best.as_ref().is_none_or(|b| better(stage, value, b.1)) {
                best = Some((design, value));
            }
        }
        let best_text = best.as_ref().map_or("none yet".into(), |b| stage.show(b.1));
        let bound_text = bound.map_or("none yet".into(), |b| stage.show(b));
        progress(&format!(
            "exact ({label}): round {rounds}, {} cuts, best {best_text}, bound {bound_text}",
            pool.len(),
        ));
        let closed = match (&best, bound) {
            (Some(b), Some(x)) => {
                relative_gap(matches!(stage, Stage::MinCost(_)), b.1, x) <= MIP_REL_GAP
            }
            _ => false,
        };
        // An optimal answer keeping every cut is optimal for the whole
        // model, once the best design is worth as much (it is that
        // answer, unless the answer could not be read back as one).
        let solved = !violated
            && s.optimal
            && best
                .as_ref()
                .is_some_and(|b| !better(stage, s.objective, b.1));
        if solved || closed {
            optimal = true;
            break;
        }
        if violated && added == 0 {
            return Err(SolveFail::Error(OptimizeError::Solver {
                message:
                    "the solver's design breaks a cut already in the model (numerical trouble)"
                        .into(),
            }));
        }
        if !violated && !s.optimal {
            // The time ran out inside this solve and its answer keeps
            // every cut: more rounds would solve the same model again.
            break;
        }
    }
    match best {
        Some((design, value)) => Ok(StageResult {
            design,
            value,
            bound,
            optimal,
            rounds,
        }),
        None => Err(SolveFail::NoAnswer { bound }),
    }
}

/// How far one stage may go on.
#[derive(Debug, Clone, Copy)]
struct StageLimits {
    deadline: Instant,
    max_rounds: usize,
    /// A bound already proven (the relaxation's).
    bound: Option<f64>,
}

/// The exact method's answer: the best design found (optimal when
/// proven so) and the bound on the goal.
#[derive(Debug, Clone)]
pub(super) struct ExactAnswer {
    pub(super) design: Design,
    pub(super) note: String,
    /// No design meeting the goal beats this (cost or Mbit/s).
    pub(super) bound: Option<f64>,
    pub(super) optimal: bool,
}

pub(super) fn exact(
    problem: &Problem,
    goal: Goal,
    limits: ExactLimits,
    progress: &mut dyn FnMut(&str),
) -> Result<ExactAnswer, OptimizeError> {
    // The heuristic's answer is the warm start (and its bounds settle
    // the hopeless cases at once).
    let warm = match heuristic(problem, goal, &mut |_| {}) {
        Ok((d, _)) => Some(d),
        Err(e @ OptimizeError::Infeasible { .. }) => return Err(e),
        Err(_) => None,
    };
    exact_from(problem, goal, limits, warm, progress)
}

/// The exact method from a warm start (a design keeping every limit and
/// cut, or None): the LP relaxation's rounds first (fast; their cuts
/// seed the MILP, their optimum is a first bound), then the MILP's.
pub(super) fn exact_from(
    problem: &Problem,
    goal: Goal,
    limits: ExactLimits,
    warm: Option<Design>,
    progress: &mut dyn FnMut(&str),
) -> Result<ExactAnswer, OptimizeError> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(limits.time_limit_s.max(0.0));
    let vars = integer_variables(problem);
    let unreachable = |target: f64| {
        OptimizeError::Infeasible {
        message: format!(
            "a network min cut of {} Mbit/s is out of reach within the spectrum and site limits (with every pair at its most, limits at sites aside, the cut would be {} Mbit/s)",
            mbps(target),
            mbps(most_cut(problem))
        ),
    }
    };
    if let Goal::MinCost { network_mbps } = goal {
        if let Some(e) = out_of_reach(problem, network_mbps) {
            return Err(e);
        }
    }
    let mut pool = Pool::new(problem);
    let relaxation_s = (limits.time_limit_s / 3.0).min(BOUND_TOTAL_S);
    let relaxed = match relaxation_bound(problem, goal, &mut pool, relaxation_s, progress) {
        Ok((b, _)) => Some(b),
        Err(OptimizeError::Infeasible { .. }) => None,
        Err(e) => {
            progress(&format!("no relaxation bound: {e}"));
            None
        }
    };
    let describe = |rounds: usize, pool: &Pool, optimal: bool| {
        let how = if optimal {
            "proven optimal".to_string()
        } else {
            format!("stopped at its limit of {} s", limits.time_limit_s.round())
        };
        format!(
            "exact (MILP over HiGHS, {vars} integer variables): {} in {:.1} s, {} cuts; {how}",
            rounds_text(rounds),
            started.elapsed().as_secs_f64(),
            pool.len()
        )
    };
    match goal {
        Goal::MinCost { network_mbps } => {
            let stage = Stage::MinCost(network_mbps);
            let stage_limits = StageLimits {
                deadline,
                max_rounds: limits.max_iterations,
                bound: relaxed,
            };
            match lazy(problem, &mut pool, stage, warm.as_ref(), stage_limits, progress) {
                Ok(r) => Ok(ExactAnswer {
                    note: describe(r.rounds, &pool, r.optimal),
                    bound: if r.optimal { Some(r.value) } else { r.bound },
                    optimal: r.optimal,
                    design: r.design,
                }),
                Err(SolveFail::Infeasible) => Err(unreachable(network_mbps)),
                Err(SolveFail::NoAnswer { .. }) => Err(OptimizeError::Unfinished {
                    message: format!(
                        "no design found within the time limit of {} s (the heuristic found none either)",
                        limits.time_limit_s
                    ),
                }),
                Err(SolveFail::Error(e)) => Err(e),
            }
        }
        Goal::MaxCapacity { budget } => {
            let stage = Stage::MaxCapacity {
                budget,
                bound: most_cut(problem),
            };
            // Three quarters of the time for the capacity, the rest for
            // the least cost at it.
            let first_deadline =
                started + Duration::from_secs_f64(0.75 * limits.time_limit_s.max(0.0));
            let stage_limits = StageLimits {
                deadline: first_deadline,
                max_rounds: limits.max_iterations,
                bound: relaxed,
            };
            let first = match lazy(problem, &mut pool, stage, warm.as_ref(), stage_limits, progress) {
                Ok(r) => r,
                Err(SolveFail::Infeasible) => return Err(over_budget(problem, &mut pool, budget, deadline, limits)),
                Err(SolveFail::NoAnswer { .. }) => {
                    return Err(OptimizeError::Unfinished {
                        message: format!(
                            "no design found within the time limit of {} s (the heuristic found none either)",
                            limits.time_limit_s
                        ),
                    })
                }
                Err(SolveFail::Error(e)) => return Err(e),
            };
            let reached = first.value;
            let second_limits = StageLimits {
                deadline,
                max_rounds: limits.max_iterations,
                bound: None,
            };
            let design = match lazy(
                problem,
                &mut pool,
                Stage::MinCost(reached),
                Some(&first.design),
                second_limits,
                &mut |_| {},
            ) {
                Ok(r) => r.design,
                Err(SolveFail::Infeasible) => {
                    return Err(OptimizeError::Solver {
                        message: "the least cost at the most capacity found came out infeasible"
                            .into(),
                    })
                }
                Err(SolveFail::NoAnswer { .. }) => first.design,
                Err(SolveFail::Error(e)) => return Err(e),
            };
            let rounds = first.rounds;
            Ok(ExactAnswer {
                note: format!(
                    "{}, the most capacity {} Mbit/s",
                    describe(rounds, &pool, first.optimal),
                    mbps(reached)
                ),
                bound: if first.optimal {
                    Some(reached)
                } else {
                    first.bound
                },
                optimal: first.optimal,
                design,
            })
        }
    }
}

/// Why no design fits the budget: the cheapest design that keeps every
/// edge site's capacity, if the solver finds it in time.
fn over_budget(
    problem: &Problem,
    pool: &mut Pool,
    budget: f64,
    deadline: Instant,
    limits: ExactLimits,
) -> OptimizeError {
    let stage_limits = StageLimits {
        deadline: deadline.max(Instant::now() + Duration::from_secs(10)),
        max_rounds: limits.max_iterations,
        bound: None,
    };
    let cheapest = lazy(
        problem,
        pool,
        Stage::MinCost(0.0),
        None,
        stage_limits,
        &mut |_| {},
    )
    .ok()
    .filter(|r| r.optimal)
    .map(|r| r.value);
    OptimizeError::Infeasible {
        message: match cheapest {
            Some(c) => below_budget(
                budget,
                c,
                "the cheapest design keeping every edge site's capacity costs",
            ),
            None => format!(
                "a budget of {} does not buy a design keeping every edge site's capacity",
                money(budget)
            ),
        },
    }
}

/// "1 round" or "3 rounds" (of solving and adding cuts).
fn rounds_text(n: usize) -> String {
    if n == 1 {
        "1 round".into()
    } else {
        format!("{n} rounds")
    }
}
