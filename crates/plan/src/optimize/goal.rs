//! What the optimiser is asked and what it answers: the goal, the method,
//! the exact method's limits, the plan and why there is none, and the
//! tolerances every method compares capacities and costs with.

use thiserror::Error;

use crate::design::{Design, Evaluation};

/// What to optimise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// The least cost with a network min cut of at least this, Mbit/s.
    MinCost {
        /// The network capacity to reach, Mbit/s.
        network_mbps: f64,
    },
    /// The most network capacity for at most this cost (then the least
    /// cost at that capacity).
    MaxCapacity {
        /// What may be spent (with [`crate::design::Problem::sunk`] pricing).
        budget: f64,
    },
}

/// How to optimise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The MILP from the heuristic's design, stopped after
    /// [`AUTO_TIME_LIMIT_S`] with its best design and proven gap.
    Auto,
    /// The same, with [`EXACT_TIME_LIMIT_S`].
    Exact,
    /// The paper's min-cut heuristic: fast, not always optimal.
    Heuristic,
}

/// The optimiser's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// What to build.
    pub design: Design,
    /// Its cost, cuts and radios.
    pub eval: Evaluation,
    /// True when the MILP proved the plan optimal.
    pub exact: bool,
    /// Which method ran and how (iterations, cuts), or why Auto fell back.
    pub note: String,
    /// How far from the best possible the plan is proven to be.
    pub bound: Option<Bound>,
}

/// A proven bound on the goal, and the plan's distance from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// No design meeting the goal costs less than this, dollars (least
    /// cost), or carries more than this, Mbit/s (most capacity).
    pub value: f64,
    /// The plan's distance from it, as a share of the plan's cost (least
    /// cost) or of the bound (most capacity): 0 when proven optimal.
    pub gap: f64,
    /// Where it comes from: the MILP's search (its best bound when it
    /// stopped, the plan itself when it proved it optimal) or the LP
    /// relaxation, whole or cut short by its limits.
    pub source: BoundSource,
}

/// Which model proved a [`Bound`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundSource {
    /// The MILP's search: its best bound (gap 0: the plan is optimal).
    Milp,
    /// The LP relaxation with every cut it needed.
    Relaxation,
    /// The LP relaxation stopped by its time or round limit (looser).
    RelaxationCutShort,
}

/// Limits of the relaxation's bound under a heuristic plan: it is a
/// sequence of linear programs (fast), so the rounds are many and each
/// short; all of them together stop at [`BOUND_TOTAL_S`].
pub const BOUND_LIMITS: ExactLimits = ExactLimits {
    time_limit_s: 60.0,
    max_iterations: 400,
};
/// Seconds the relaxation's bound may take in all (the last finished
/// round's bound holds when it stops).
pub const BOUND_TOTAL_S: f64 = 120.0;

/// Why no plan.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum OptimizeError {
    /// No design meets the goal (proven); the message names why.
    #[error("{message}")]
    Infeasible {
        /// One line: the goal and what stands in its way.
        message: String,
    },
    /// The heuristic found no design meeting the goal, though one may
    /// exist (the exact method can tell).
    #[error("{message}")]
    NotFound {
        /// One line: the goal and how far the heuristic got.
        message: String,
    },
    /// The goal is not a number the optimiser can use.
    #[error("{message}")]
    InvalidGoal {
        /// What is wrong with it.
        message: String,
    },
    /// The exact method stopped before proving an optimum (time or
    /// iteration limit).
    #[error("the exact optimiser stopped: {message}")]
    Unfinished {
        /// Which limit, where.
        message: String,
    },
    /// The MILP solver failed.
    #[error("the MILP solver failed: {message}")]
    Solver {
        /// What it said.
        message: String,
    },
}

/// Auto's time limit per goal, seconds: the MILP (HiGHS, from the
/// heuristic's design) stops there with its best design and the proven
/// gap. Issue 36's goal for the shipped 64-site WISP: both goals within a
/// minute.
pub const AUTO_TIME_LIMIT_S: f64 = 60.0;
/// Exact's time limit per goal, seconds.
pub const EXACT_TIME_LIMIT_S: f64 = 600.0;
/// Solve-and-cut rounds of one stage at most.
pub const EXACT_MAX_ITERATIONS: usize = 200;

/// How long the exact method may go on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExactLimits {
    /// Seconds for one goal in all (the relaxation's rounds, then the
    /// MILP's; at a budget both of its stages).
    pub time_limit_s: f64,
    /// Solve-and-cut rounds per stage (a budget has two stages).
    pub max_iterations: usize,
}

/// [`Method::Exact`]'s limits.
pub const EXACT_LIMITS: ExactLimits = ExactLimits {
    time_limit_s: EXACT_TIME_LIMIT_S,
    max_iterations: EXACT_MAX_ITERATIONS,
};
/// [`Method::Auto`]'s limits.
pub const AUTO_LIMITS: ExactLimits = ExactLimits {
    time_limit_s: AUTO_TIME_LIMIT_S,
    max_iterations: EXACT_MAX_ITERATIONS,
};

/// Capacity tolerance, Mbit/s (flows are whole kbit/s).
pub(super) const EPS_MBPS: f64 = 1e-6;
/// Cost tolerance, dollars.
pub(super) const EPS_COST: f64 = 1e-6;

/// A design's distance from a bound on its objective: a share of the
/// design's cost when minimising cost, of the bound when maximising
/// capacity; never below 0.
pub(super) fn relative_gap(minimise_cost: bool, value: f64, bound: f64) -> f64 {
    let gap = if minimise_cost {
        if value > EPS_COST {
            (value - bound) / value
        } else {
            0.0
        }
    } else if bound > EPS_MBPS {
        (bound - value) / bound
    } else {
        0.0
    };
    gap.max(0.0)
}
