//! Runs one model through HiGHS: the model is written with good_lp's
//! modelling layer (`exact.rs`), handed to the `highs` crate's `Model`
//! here, given its time limit and gap tolerance, and solved;
//! what comes back is the answer (if the solver has one), its objective,
//! and the solver's best bound (for a MILP, its dual bound: no answer of
//! this model beats it, even when the search stopped early).
//!
//! good_lp's own `solve` is not used because it keeps the best bound to
//! itself; the bound is what lets a plan stopped by its time limit say how
//! far from the best it is proven to be (issue 36).

use good_lp::solvers::highs::HighsProblem;
use highs::{HighsModelStatus, HighsSolutionStatus};

/// The relative gap at which HiGHS calls a MILP solved: the answer's
/// objective and the best bound differ by at most this share.
pub const MIP_REL_GAP: f64 = 1e-6;

/// What one solve gives.
#[derive(Debug, Clone)]
pub(super) struct Outcome {
    /// Value per column (good_lp's variable index), the solver's best
    /// answer.
    pub(super) columns: Vec<f64>,
    /// Its objective.
    pub(super) objective: f64,
    /// What no answer of this model beats: at most the objective when
    /// minimising, at least when maximising. Equal to it for a linear
    /// program solved to optimality; None when a search stopped before
    /// HiGHS had one.
    pub(super) bound: Option<f64>,
    /// Solved to optimality (within [`MIP_REL_GAP`]).
    pub(super) optimal: bool,
}

/// Why a solve gave no answer.
#[derive(Debug, Clone)]
pub(super) enum RunFail {
    /// The model has no answer (proven).
    Infeasible,
    /// The time limit came before any answer; the bound found by then,
    /// if any.
    NoAnswer { bound: Option<f64> },
    /// HiGHS failed.
    Error(String),
}

/// Solves `model` within `time_limit_s` seconds. No starting design is
/// handed over: HiGHS 1.16 (highs-sys 1.16), given one with presolve on,
/// reported the 64-site WISP's least cost solved at an objective the
/// answer it returned did not have; the caller keeps its own best design
/// instead (`exact.rs`) and checks every objective.
pub(super) fn run(model: HighsProblem, time_limit_s: f64) -> Result<Outcome, RunFail> {
    let mut model = model
        .try_into_inner()
        .map_err(|e| RunFail::Error(e.to_string()))?;
    for (name, value) in [
        ("time_limit", time_limit_s.max(0.001)),
        ("mip_rel_gap", MIP_REL_GAP),
    ] {
        model
            .try_set_option(name, value)
            .map_err(|e| RunFail::Error(format!("setting {name}: {e:?}")))?;
    }
    // One thread: the plan is one job among others on a small machine,
    // and HiGHS's branch and bound is serial in any case.
    model
        .try_set_option("threads", 1)
        .map_err(|e| RunFail::Error(format!("setting threads: {e:?}")))?;
    let solved = model
        .try_solve()
        .map_err(|e| RunFail::Error(format!("HiGHS failed: {e:?}")))?;
    let status = solved.status();
    let has_answer = solved.primal_solution_status() == HighsSolutionStatus::Feasible;
    let objective = solved.objective_value();
    // A MILP's dual bound; for a linear program (no integer column) HiGHS
    // reports none, and its optimum is its bound.
    let dual = solved
        .double_info_value(c"mip_dual_bound")
        .ok()
        .filter(|b| b.is_finite());
    let gap = solved.mip_gap();
    match status {
        HighsModelStatus::Optimal => {
            let bound = match dual {
                Some(b) if gap.is_finite() => b,
                _ => objective,
            };
            let bound = Some(bound);
            Ok(Outcome {
                columns: solved.get_solution().columns().to_vec(),
                objective,
                bound,
                optimal: !gap.is_finite() || gap <= MIP_REL_GAP * 1.0001,
            })
        }
        HighsModelStatus::Infeasible | HighsModelStatus::UnboundedOrInfeasible => {
            Err(RunFail::Infeasible)
        }
        HighsModelStatus::ReachedTimeLimit
        | HighsModelStatus::ReachedIterationLimit
        | HighsModelStatus::ReachedSolutionLimit
        | HighsModelStatus::ReachedInterrupt
        | HighsModelStatus::ReachedMemoryLimit => {
            if has_answer {
                Ok(Outcome {
                    columns: solved.get_solution().columns().to_vec(),
                    objective,
                    bound: dual,
                    optimal: false,
                })
            } else {
                Err(RunFail::NoAnswer { bound: dual })
            }
        }
        other => Err(RunFail::Error(format!("HiGHS stopped with {other:?}"))),
    }
}
