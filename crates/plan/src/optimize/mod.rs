//! Owns the optimiser: the least-cost design at a network capacity and the
//! most network capacity at a budget (seed 002, section 2.5 and table 2),
//! solved exactly (a MILP) or by the paper's heuristic, never giving any
//! edge site less than its capacity today and keeping every limit of
//! [`Problem::violation`].
//!
//! A design's capacity is its network min cut: the max flow from the
//! gateway to all edge sites at once ([`Problem::network_cut`]).
//!
//! Two methods, each in its own module: [`exact`] (a MILP over HiGHS
//! with lazily generated cuts: `model` writes and solves one model,
//! `cuts` keeps the cuts and finds them, `solver` runs HiGHS) and
//! [`heuristic`] (the paper's min-cut bridging, then pruning). `goal`
//! holds what both are asked and answer, `bounds` what the problem
//! allows before any search, `lower_bound` the LP relaxation's bound that
//! every heuristic plan carries (how far it is proven to be from the
//! best).
//!
//! # Auto and Exact
//!
//! Both run the heuristic first, then the LP relaxation's rounds of cuts
//! (a first bound, and cuts to start from), then the MILP over HiGHS from
//! the heuristic's design, adding cuts until an optimal answer keeps
//! them all or the time limit comes ([`AUTO_TIME_LIMIT_S`] per goal,
//! [`EXACT_TIME_LIMIT_S`] for Exact). The plan is the best design found
//! and carries the MILP's best bound: gap 0 when proven optimal, else how
//! far from the best it can be. Time limits are the wall clock: near a
//! limit, the same input may stop with a different gap on another
//! machine. Should the MILP fail, Auto falls back to the heuristic and
//! says so in [`Plan::note`].

mod bounds;
mod cuts;
pub mod exact;
mod goal;
pub mod heuristic;
mod lower_bound;
mod model;
mod solver;

use crate::design::{Design, Problem};
use crate::units::{mbps, money};

pub use goal::{
    Bound, BoundSource, ExactLimits, Goal, Method, OptimizeError, Plan, AUTO_LIMITS,
    AUTO_TIME_LIMIT_S, BOUND_LIMITS, BOUND_TOTAL_S, EXACT_LIMITS, EXACT_MAX_ITERATIONS,
    EXACT_TIME_LIMIT_S,
};
pub use model::integer_variables;
pub use solver::MIP_REL_GAP;

use exact::{exact, ExactAnswer};
use goal::{EPS_COST, EPS_MBPS};
use heuristic::heuristic;
use lower_bound::relaxation_bound;

/// Finds a design for the goal; `progress` gets short lines on the way
/// ("exact (least cost): round 3, 41 cuts, best $18,400, bound
/// $18,200"). Every answer keeps every limit and every edge site's
/// capacity today, and is checked against the goal before it is
/// returned.
pub fn optimize(
    problem: &Problem,
    goal: Goal,
    method: Method,
    progress: &mut dyn FnMut(&str),
) -> Result<Plan, OptimizeError> {
    check_goal(goal)?;
    match method {
        Method::Heuristic => {
            let (design, note) = heuristic(problem, goal, progress)?;
            finish(problem, goal, design, None, note, progress)
        }
        Method::Exact => {
            let answer = exact(problem, goal, EXACT_LIMITS, progress)?;
            finish_exact(problem, goal, answer, progress)
        }
        Method::Auto => match exact(problem, goal, AUTO_LIMITS, progress) {
            Ok(answer) => finish_exact(problem, goal, answer, progress),
            Err(e @ (OptimizeError::Unfinished { .. } | OptimizeError::Solver { .. })) => {
                progress("auto: the exact method failed; running the heuristic");
                let (design, note) = heuristic(problem, goal, progress)?;
                let note = format!("auto fell back to the heuristic ({e}): {note}");
                finish(problem, goal, design, None, note, progress)
            }
            Err(e) => Err(e),
        },
    }
}

/// The exact method with other limits than [`Method::Exact`]'s (e.g. a
/// shorter time per goal).
pub fn optimize_exact_within(
    problem: &Problem,
    goal: Goal,
    limits: ExactLimits,
    progress: &mut dyn FnMut(&str),
) -> Result<Plan, OptimizeError> {
    check_goal(goal)?;
    if !(limits.time_limit_s.is_finite() && limits.time_limit_s > 0.0) {
        return Err(OptimizeError::InvalidGoal {
            message: format!(
                "a time limit of {} s is not a positive number",
                limits.time_limit_s
            ),
        });
    }
    let answer = exact(problem, goal, limits, progress)?;
    finish_exact(problem, goal, answer, progress)
}

/// The MILP's answer as a plan, with its bound.
fn finish_exact(
    problem: &Problem,
    goal: Goal,
    answer: ExactAnswer,
    progress: &mut dyn FnMut(&str),
) -> Result<Plan, OptimizeError> {
    let proof = Proof {
        bound: answer.bound,
        optimal: answer.optimal,
    };
    finish(
        problem,
        goal,
        answer.design,
        Some(proof),
        answer.note,
        progress,
    )
}

/// What the MILP proved about its design.
#[derive(Debug, Clone, Copy)]
struct Proof {
    bound: Option<f64>,
    optimal: bool,
}

fn check_goal(goal: Goal) -> Result<(), OptimizeError> {
    let (what, x) = match goal {
        Goal::MinCost { network_mbps } => ("network capacity", network_mbps),
        Goal::MaxCapacity { budget } => ("budget", budget),
    };
    if x.is_finite() && x >= 0.0 {
        Ok(())
    } else {
        Err(OptimizeError::InvalidGoal {
            message: format!("the {what} {x} is not a number of at least 0"),
        })
    }
}

/// Checks the answer against the goal and every limit, and wraps it.
fn finish(
    problem: &Problem,
    goal: Goal,
    design: Design,
    proof: Option<Proof>,
    note: String,
    progress: &mut dyn FnMut(&str),
) -> Result<Plan, OptimizeError> {
    let bad = |why: String| OptimizeError::Solver {
        message: format!("its design {why} (a bug: please report it)"),
    };
    if let Some(v) = problem.violation(&design) {
        return Err(bad(format!("breaks a limit: {v}")));
    }
    let eval = problem.evaluate(&design);
    for (&have, &(k, need)) in eval.per_edge_mbps.iter().zip(&problem.required) {
        if have + EPS_MBPS < need {
            return Err(bad(format!(
                "leaves {} with {} of its {} Mbit/s",
                problem.net.sites[k].id,
                mbps(have),
                mbps(need)
            )));
        }
    }
    match goal {
        Goal::MinCost { network_mbps } if eval.network_mbps + EPS_MBPS < network_mbps => {
            return Err(bad(format!(
                "has a network min cut of {} Mbit/s, below the {}",
                mbps(eval.network_mbps),
                mbps(network_mbps)
            )))
        }
        Goal::MaxCapacity { budget } if eval.cost > budget + EPS_COST => {
            return Err(bad(format!(
                "costs {}, over the budget of {}",
                money(eval.cost),
                money(budget)
            )))
        }
        _ => {}
    }
    let achieved = match goal {
        Goal::MinCost { .. } => eval.cost,
        Goal::MaxCapacity { .. } => eval.network_mbps,
    };
    let bound = match proof {
        Some(Proof { optimal: true, .. }) => Some(Bound {
            value: achieved,
            gap: 0.0,
            source: BoundSource::Milp,
        }),
        Some(Proof {
            bound: Some(value), ..
        }) => Some(Bound {
            value,
            gap: gap_to(goal, &eval, value),
            source: BoundSource::Milp,
        }),
        Some(Proof { bound: None, .. }) => None,
        None => {
            progress("bounding the plan: the LP relaxation");
            prove_gap(problem, goal, &eval, progress)
        }
    };
    let exact = proof.is_some_and(|p| p.optimal);
    let note = match &bound {
        Some(b) if !exact => format!("{note}; {}", describe_bound(goal, b)),
        _ => note,
    };
    Ok(Plan {
        design,
        eval,
        exact,
        note,
        bound,
    })
}

/// The plan's distance from a bound: a share of its cost (least cost) or
/// of the bound (most capacity).
fn gap_to(goal: Goal, eval: &crate::design::Evaluation, bound: f64) -> f64 {
    match goal {
        Goal::MinCost { .. } => goal::relative_gap(true, eval.cost, bound),
        Goal::MaxCapacity { .. } => goal::relative_gap(false, eval.network_mbps, bound),
    }
}

/// The relaxation's bound and the plan's gap to it (None if the
/// relaxation failed: the plan stands, unbounded).
fn prove_gap(
    problem: &Problem,
    goal: Goal,
    eval: &crate::design::Evaluation,
    progress: &mut dyn FnMut(&str),
) -> Option<Bound> {
    let mut pool = cuts::Pool::new(problem);
    let (value, complete) =
        match relaxation_bound(problem, goal, &mut pool, BOUND_TOTAL_S, progress) {
            Ok(b) => b,
            Err(e) => {
                progress(&format!("no bound: {e}"));
                return None;
            }
        };
    Some(Bound {
        value,
        gap: gap_to(goal, eval, value),
        source: if complete {
            BoundSource::Relaxation
        } else {
            BoundSource::RelaxationCutShort
        },
    })
}

/// "within 7.3% of the best possible (no design costs less than $12,900:
/// LP relaxation)".
fn describe_bound(goal: Goal, b: &Bound) -> String {
    let limit = match goal {
        Goal::MinCost { .. } => format!("no design costs less than {}", money(b.value)),
        Goal::MaxCapacity { .. } => {
            format!(
                "no design within the budget carries more than {} Mbit/s",
                mbps(b.value)
            )
        }
    };
    let how = match b.source {
        BoundSource::Milp => "the MILP's bound when it stopped",
        BoundSource::Relaxation => "LP relaxation",
        BoundSource::RelaxationCutShort => "LP relaxation, cut short by its limits",
    };
    format!(
        "within {:.1}% of the best possible ({limit}: {how})",
        100.0 * b.gap
    )
}

#[cfg(test)]
mod tests {
    use super::bounds::most_cut;
    use super::exact::exact_from;
    use super::*;
    use crate::instances;

    fn quiet() -> impl FnMut(&str) {
        |_| {}
    }

    #[test]
    fn bad_goals_are_refused() {
        let (net, cat) = instances::small(1, 4);
        let pb = Problem::new(&net, &cat, false).unwrap();
        for goal in [
            Goal::MinCost {
                network_mbps: f64::NAN,
            },
            Goal::MinCost { network_mbps: -1.0 },
            Goal::MaxCapacity {
                budget: f64::INFINITY,
            },
        ] {
            let e = optimize(&pb, goal, Method::Heuristic, &mut quiet()).unwrap_err();
            assert!(matches!(e, OptimizeError::InvalidGoal { .. }), "{e}");
        }
    }

    #[test]
    fn todays_capacity_costs_no_more_than_today() {
        for seed in 0..20 {
            let (net, cat) = instances::small(seed, 6);
            let pb = Problem::new(&net, &cat, false).unwrap();
            let today = pb.evaluate(&pb.today());
            for method in [Method::Heuristic, Method::Exact] {
                let plan = optimize(
                    &pb,
                    Goal::MinCost {
                        network_mbps: today.network_mbps,
                    },
                    method,
                    &mut quiet(),
                )
                .unwrap();
                assert!(pb.feasible(&plan.design, today.network_mbps));
                assert!(plan.eval.cost <= today.cost + 1e-6, "seed {seed}: {plan:?}");
                assert_eq!(plan.exact, method == Method::Exact);
            }
        }
    }

    #[test]
    fn the_exact_answer_is_never_worse_than_the_heuristics() {
        for seed in 0..20 {
            let (net, cat) = instances::small(seed, 6);
            let pb = Problem::new(&net, &cat, seed % 2 == 0).unwrap();
            let today = pb.evaluate(&pb.today());
            let goal = Goal::MinCost {
                network_mbps: 1.3 * today.network_mbps,
            };
            let h = optimize(&pb, goal, Method::Heuristic, &mut quiet());
            let e = optimize(&pb, goal, Method::Exact, &mut quiet());
            match (h, e) {
                (Ok(h), Ok(e)) => assert!(e.eval.cost <= h.eval.cost + 1e-6),
                (Err(_), Ok(_)) => {}
                (Ok(h), Err(e)) => panic!("seed {seed}: heuristic {h:?} but exact {e}"),
                (Err(_), Err(e)) => assert!(matches!(e, OptimizeError::Infeasible { .. })),
            }
            let budget = today.cost;
            let goal = Goal::MaxCapacity { budget };
            let h = optimize(&pb, goal, Method::Heuristic, &mut quiet()).unwrap();
            let e = optimize(&pb, goal, Method::Exact, &mut quiet()).unwrap();
            assert!(e.eval.network_mbps + 1e-6 >= h.eval.network_mbps);
            assert!(e.eval.network_mbps + 1e-6 >= today.network_mbps);
            assert!(e.eval.cost <= budget + 1e-6);
        }
    }

    #[test]
    fn exact_answers_do_not_depend_on_the_warm_start() {
        // Without the heuristic's design to start from, the first stage at
        // a budget often ends on a costlier design of the same capacity:
        // the second stage must bring it down.
        let mut differs = 0;
        for seed in 0..24 {
            let (net, cat) = instances::small(seed, 5);
            let pb = Problem::new(&net, &cat, false).unwrap();
            let today = pb.evaluate(&pb.today());
            for goal in [
                Goal::MaxCapacity { budget: today.cost },
                Goal::MaxCapacity {
                    budget: 1.5 * today.cost,
                },
                Goal::MinCost {
                    network_mbps: 1.2 * today.network_mbps,
                },
            ] {
                let warm = optimize(&pb, goal, Method::Exact, &mut quiet());
                let cold = exact_from(&pb, goal, EXACT_LIMITS, None, &mut quiet());
                match (warm, cold) {
                    (Ok(w), Ok(ExactAnswer { design: d, .. })) => {
                        let c = pb.evaluate(&d);
                        assert!(pb.violation(&d).is_none());
                        assert!((w.eval.cost - c.cost).abs() < 1e-6, "seed {seed} {goal:?}");
                        assert!(
                            (w.eval.network_mbps - c.network_mbps).abs() < 1e-6
                                || matches!(goal, Goal::MinCost { .. })
                        );
                        differs += usize::from(w.design != d);
                    }
                    (Err(a), Err(b)) => assert_eq!(a, b, "seed {seed} {goal:?}"),
                    (a, b) => panic!("seed {seed} {goal:?}: {a:?} vs {b:?}"),
                }
            }
        }
        // Equal in value, not always the same design: the check has teeth.
        assert!(differs > 0);
    }

    #[test]
    fn an_unreachable_target_names_the_most_any_design_gives() {
        let (net, cat) = instances::small(3, 5);
        let pb = Problem::new(&net, &cat, false).unwrap();
        let most = most_cut(&pb);
        for method in [Method::Heuristic, Method::Exact, Method::Auto] {
            let e = optimize(
                &pb,
                Goal::MinCost {
                    network_mbps: most + 1.0,
                },
                method,
                &mut quiet(),
            )
            .unwrap_err();
            let text = e.to_string();
            assert!(matches!(e, OptimizeError::Infeasible { .. }), "{text}");
            assert!(text.contains("is out of reach"), "{text}");
            assert!(text.contains(&mbps(most)), "{text}");
            assert!(!text.contains('\n'));
        }
    }

    #[test]
    fn a_budget_below_the_cheapest_design_is_named() {
        let (net, cat) = instances::small(5, 5);
        let pb = Problem::new(&net, &cat, false).unwrap();
        let cheapest = optimize(
            &pb,
            Goal::MinCost { network_mbps: 0.0 },
            Method::Exact,
            &mut quiet(),
        )
        .unwrap()
        .eval
        .cost;
        let e = optimize(
            &pb,
            Goal::MaxCapacity {
                budget: cheapest - 1.0,
            },
            Method::Exact,
            &mut quiet(),
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, OptimizeError::Infeasible { .. }), "{text}");
        assert!(text.contains(&money(cheapest)), "{text}");
    }

    #[test]
    fn progress_is_reported_and_auto_says_what_it_chose() {
        let (net, cat) = instances::small(2, 5);
        let pb = Problem::new(&net, &cat, false).unwrap();
        let mut lines = Vec::new();
        let today = pb.evaluate(&pb.today());
        let plan = optimize(
            &pb,
            Goal::MinCost {
                network_mbps: today.network_mbps,
            },
            Method::Auto,
            &mut |l: &str| lines.push(l.to_string()),
        )
        .unwrap();
        assert!(plan.exact, "{}", plan.note);
        assert!(
            plan.note.starts_with("exact (MILP over HiGHS")
                && plan.note.ends_with("proven optimal"),
            "{}",
            plan.note
        );
        assert!(lines.iter().any(|l| l.starts_with("exact")), "{lines:?}");
    }

    #[test]
    fn a_search_stopped_by_its_time_limit_keeps_the_best_design_and_its_proven_gap() {
        // 64 sites: far more than the MILP closes in a tenth of a second.
        let (net, cat) = instances::small(7, 64);
        let pb = Problem::new(&net, &cat, false).unwrap();
        let today = pb.evaluate(&pb.today());
        let limits = ExactLimits {
            time_limit_s: 0.1,
            max_iterations: EXACT_MAX_ITERATIONS,
        };
        let target = 1.2 * today.network_mbps;
        let heuristic = optimize(
            &pb,
            Goal::MinCost {
                network_mbps: target,
            },
            Method::Heuristic,
            &mut quiet(),
        );
        let plan = optimize_exact_within(
            &pb,
            Goal::MinCost {
                network_mbps: target,
            },
            limits,
            &mut quiet(),
        );
        match (heuristic, plan) {
            (Ok(h), Ok(p)) => {
                assert!(pb.feasible(&p.design, target));
                assert!(p.eval.cost <= h.eval.cost + 1e-6, "{}", p.note);
                assert!(!p.exact, "{}", p.note);
                assert!(p.note.contains("stopped at its limit"), "{}", p.note);
                let b = p.bound.expect("a bound");
                assert!(b.value <= p.eval.cost + 1e-6);
                assert!(b.gap > 0.0 && b.gap < 1.0, "{b:?}");
            }
            (h, p) => panic!("heuristic {h:?}, exact {p:?}"),
        }
        let plan = optimize_exact_within(
            &pb,
            Goal::MaxCapacity { budget: today.cost },
            limits,
            &mut quiet(),
        )
        .unwrap();
        assert!(plan.eval.network_mbps + 1e-6 >= today.network_mbps);
        assert!(plan.eval.cost <= today.cost + 1e-6);
        let b = plan.bound.expect("a bound");
        assert!(b.value + 1e-6 >= plan.eval.network_mbps);
    }
}
