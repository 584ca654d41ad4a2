//! Owns the optimiser: the least-cost design at a network capacity and the
//! most network capacity at a budget (seed 002, section 2.5 and table 2),
//! solved exactly (a MILP) or by the paper's heuristic, never giving any
//! edge site less than its capacity today and keeping every limit of
//! [`Problem::violation`].
//!
//! A design's capacity is its network min cut: the max flow from the
//! gateway to all edge sites at once ([`Problem::network_cut`]).
//!
//! Two methods, each in its own module: [`exact`] (a MILP with lazily
//! generated cuts) and [`heuristic`] (the paper's min-cut bridging, then
//! pruning). `goal` holds what both are asked and answer, `bounds`
//! what the problem allows before any search, `lower_bound` the LP
//! relaxation's bound that every heuristic plan carries (how far it is
//! proven to be from the best).
//!
//! # Auto
//!
//! Exact when the problem has at most [`AUTO_MAX_VARIABLES`] integer
//! variables, within [`AUTO_LIMITS`] (each solve at most
//! [`AUTO_TIME_LIMIT_S`] seconds, at most [`AUTO_MAX_ITERATIONS`] rounds
//! of cuts per stage), else the heuristic; an exact run that does not
//! finish falls back to the heuristic. The [`Plan::note`] says which ran
//! and why. Time limits are microlp's own clock: an instance near a limit
//! may come out exact on one run and from the heuristic on another.

mod bounds;
pub mod exact;
mod goal;
pub mod heuristic;
mod lower_bound;

use crate::design::{Design, Problem};
use crate::units::{mbps, money};

pub use exact::integer_variables;
pub use goal::{
    Bound, BoundSource, ExactLimits, Goal, Method, OptimizeError, Plan, AUTO_LIMITS,
    AUTO_MAX_ITERATIONS, AUTO_MAX_VARIABLES, AUTO_TIME_LIMIT_S, BOUND_LIMITS, EXACT_LIMITS,
    EXACT_MAX_ITERATIONS, EXACT_TIME_LIMIT_S,
};

use exact::exact;
use goal::{EPS_COST, EPS_MBPS};
use heuristic::heuristic;
use lower_bound::relaxation_bound;

/// Finds a design for the goal; `progress` gets short lines on the way
/// ("exact (least cost): iteration 3, 41 cuts, bound $18,200"). Every
/// answer keeps every limit and every edge site's capacity today, and is
/// checked against the goal before it is returned. Auto's threshold:
/// [`AUTO_MAX_VARIABLES`].
pub fn optimize(
    problem: &Problem,
    goal: Goal,
    method: Method,
    progress: &mut dyn FnMut(&str),
) -> Result<Plan, OptimizeError> {
    check_goal(goal)?;
    let variables = integer_variables(problem);
    match method {
        Method::Heuristic => {
            let (design, note) = heuristic(problem, goal, progress)?;
            finish(problem, goal, design, false, note, progress)
        }
        Method::Exact => {
            let (design, note) = exact(problem, goal, EXACT_LIMITS, progress)?;
            finish(problem, goal, design, true, note, progress)
        }
        Method::Auto if variables > AUTO_MAX_VARIABLES => {
            let (design, note) = heuristic(problem, goal, progress)?;
            let note = format!(
                "auto chose the heuristic ({variables} integer variables; exact up to {AUTO_MAX_VARIABLES}): {note}"
            );
            finish(problem, goal, design, false, note, progress)
        }
        Method::Auto => match exact(problem, goal, AUTO_LIMITS, progress) {
            Ok((design, note)) => {
                let note = format!(
                    "auto chose the exact method ({variables} integer variables, at most {AUTO_MAX_VARIABLES}): {note}"
                );
                finish(problem, goal, design, true, note, progress)
            }
            Err(e @ (OptimizeError::Unfinished { .. } | OptimizeError::Solver { .. })) => {
                progress("auto: the exact method did not finish; running the heuristic");
                let (design, note) = heuristic(problem, goal, progress)?;
                let note = format!("auto fell back to the heuristic ({e}): {note}");
                finish(problem, goal, design, false, note, progress)
            }
            Err(e) => Err(e),
        },
    }
}

/// The exact method with other limits than [`Method::Exact`]'s (e.g. a
/// shorter time per solve); an [`OptimizeError::Unfinished`] when they
/// are hit.
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
                "a time limit of {} s per solve is not a positive number",
                limits.time_limit_s
            ),
        });
    }
    let (design, note) = exact(problem, goal, limits, progress)?;
    finish(problem, goal, design, true, note, progress)
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
    exact: bool,
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
    let bound = if exact {
        Some(Bound {
            value: match goal {
                Goal::MinCost { .. } => eval.cost,
                Goal::MaxCapacity { .. } => eval.network_mbps,
            },
            gap: 0.0,
            source: BoundSource::Milp,
        })
    } else {
        progress("bounding the plan: the LP relaxation");
        prove_gap(problem, goal, &eval, progress)
    };
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

/// The relaxation's bound and the plan's gap to it (None if the
/// relaxation failed: the plan stands, unbounded).
fn prove_gap(
    problem: &Problem,
    goal: Goal,
    eval: &crate::design::Evaluation,
    progress: &mut dyn FnMut(&str),
) -> Option<Bound> {
    let (value, complete) = match relaxation_bound(problem, goal, BOUND_LIMITS, progress) {
        Ok(b) => b,
        Err(e) => {
            progress(&format!("no bound: {e}"));
            return None;
        }
    };
    let gap = match goal {
        Goal::MinCost { .. } if eval.cost > EPS_COST => (eval.cost - value) / eval.cost,
        Goal::MaxCapacity { .. } if value > EPS_MBPS => (value - eval.network_mbps) / value,
        _ => 0.0,
    };
    Some(Bound {
        value,
        gap: gap.max(0.0),
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
        BoundSource::Milp => "the MILP",
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
                    (Ok(w), Ok((d, _))) => {
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
            plan.note.starts_with("auto chose the exact method"),
            "{}",
            plan.note
        );
        assert!(lines.iter().any(|l| l.starts_with("exact")), "{lines:?}");
    }

    #[test]
    fn the_heuristic_plans_a_large_network_quickly() {
        let (net, cat) = instances::small(7, 64);
        let pb = Problem::new(&net, &cat, false).unwrap();
        assert!(integer_variables(&pb) > AUTO_MAX_VARIABLES);
        let today = pb.evaluate(&pb.today());
        let plan = optimize(
            &pb,
            Goal::MinCost {
                network_mbps: 1.5 * today.network_mbps,
            },
            Method::Auto,
            &mut quiet(),
        );
        match plan {
            Ok(p) => {
                assert!(!p.exact);
                assert!(p.note.starts_with("auto chose the heuristic"), "{}", p.note);
            }
            Err(e) => assert!(
                matches!(
                    e,
                    OptimizeError::Infeasible { .. } | OptimizeError::NotFound { .. }
                ),
                "{e}"
            ),
        }
        let plan = optimize(
            &pb,
            Goal::MaxCapacity { budget: today.cost },
            Method::Auto,
            &mut quiet(),
        )
        .unwrap();
        assert!(plan.eval.network_mbps + 1e-6 >= today.network_mbps);
    }
}
