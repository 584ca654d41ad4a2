//! Owns the optimiser: the least-cost design at a network capacity and the
//! most network capacity at a budget (seed 002, section 2.5 and table 2),
//! solved exactly (a MILP) or by the paper's heuristic, never giving any
//! edge site less than its capacity today and keeping every limit of
//! [`Problem::violation`].
//!
//! A design's capacity is its network min cut: the max flow from the
//! gateway to all edge sites at once ([`Problem::network_cut`]).
//!
//! # Exact: a MILP with lazily generated cuts
//!
//! One integer variable `x[p][c]` in `0..=max_count` per pair `p` and
//! choice `c`. Linear limits go in directly: radios per pair
//! (`Σ_c x[p][c] ≤ max_parallel`, with one binary more where today's pair
//! already carries more radios than that: then either at most
//! `max_parallel` radios or no new model), radios per site, and spectrum
//! per site and antenna direction (`Σ_{q in group} Σ_c band_share·x ≤ 1`).
//! Capacity is the cutset formulation: for a set S of sites holding the
//! gateway, the pairs crossing it must carry at least what each edge site
//! outside S needs (`Σ_{p∈δ(S)} Σ_c cap_c·x[p][c] ≥ max required`), and
//! when S holds no edge site, at least the network target (or `F`, the
//! variable maximised at a budget). There are exponentially many such S,
//! so they are generated as needed: start with the stars (around each edge
//! site, around the gateway, around all edge sites), solve, compute the max
//! flows of the answer with [`crate::flow::max_flow`], add the min cut of
//! every flow short of its need, and solve again, until the answer keeps
//! every cut: then it is optimal. At a budget, a second solve minimises the
//! cost at the maximum capacity found, so the answer wastes no money.
//! The heuristic's design seeds each solve (a warm start). Solved with
//! good_lp over microlp (branch and bound, pure Rust); the loop is bounded
//! ([`EXACT_MAX_ITERATIONS`]) and each solve has a time limit.
//!
//! # Heuristic
//!
//! The paper's: "iteratively computing the min cut of the network and
//! adding a link that bridges the cut, subject to line of sight and
//! spectrum constraints", with a pruning pass after. A *unit* is a change
//! to one pair: one more radio of a choice (on an existing or a
//! line-of-sight pair), one radio upgraded to a faster choice, or the pair
//! re-built as a faster bundle (the bundles of each pair that no other
//! beats on cost, capacity, spectrum and radios together). A *path unit*
//! is a set of those along one path: on top of the current max flow, the
//! cheapest way (a shortest path; a pair costs nothing where its residual
//! capacity carries the step, else its cheapest upgrade that does) to
//! carry one more step (each choice's capacity, or what is missing) from
//! the gateway; it catches links in series that only help together.
//!
//! * Least cost at a capacity: start from today's network with every pair
//!   re-built as the cheapest bundle with at least its capacity today (the
//!   paper's "re-create the topology with parallel links"), pair by pair
//!   where the limits allow, so no cut loses capacity. While the network
//!   min cut (or an edge site's) is short, apply the unit or path unit with
//!   the best gain per dollar that keeps every limit; units are those on
//!   pairs crossing the current min cuts; gains are capped at what is
//!   still missing, so a cheap unit that finishes beats a big one; when
//!   nothing raises the flow (ties between min cuts) the capacity added
//!   across the cut counts instead. Stuck: the most capacity first
//!   (below), pruned after. Then improve until nothing changes: make a
//!   pair cheaper (a radio less, a cheaper choice, a cheaper bundle) while
//!   [`Problem::feasible`] holds, biggest saving first; re-build pairs as
//!   cheaper bundles of the same capacity; and make a pair cheaper and
//!   repair the shortfall on the others, kept when the whole is cheaper.
//!   The same runs from no links at all (links bought path by path); the
//!   cheaper answer wins.
//! * Most capacity at a budget: from the cheapest design the above finds
//!   keeping every edge site's capacity (and from today's network re-built,
//!   when it fits the budget), apply the unit or path unit with the best
//!   gain per dollar that raises the network min cut while the budget
//!   allows; prune at the capacity reached to free money and add again;
//!   the better start wins (capacity, then cost). Then bisect on the
//!   capacity between that and the bound (every pair at its most) with the
//!   least-cost heuristic: a higher capacity whose least cost fits the
//!   budget wins.
//!
//! All loops are bounded (steps, rounds, and budgets of max-flow
//! computations), so the heuristic takes one to five seconds on a 64-site
//! network with about 90 pairs (release build). `examples/gap.rs`
//! measures its gap to the exact optimum.
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

use std::collections::HashMap;

use good_lp::solvers::SolutionStatus;
use good_lp::{
    microlp, variable, Expression, ProblemVariables, ResolutionError, Solution, SolverModel,
    Variable, WithInitialSolution, WithTimeLimit,
};
use thiserror::Error;

use crate::units::{mbps, money};

use crate::design::{Design, Equipment, Evaluation, Problem};
use crate::flow::{self, Cut, FlowGraph};

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
        /// What may be spent (with [`Problem::sunk`] pricing).
        budget: f64,
    },
}

/// How to optimise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Exact when the problem is small enough, else the heuristic.
    Auto,
    /// The MILP, to proven optimality (or an error).
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
    /// True when solved by the MILP to proven optimality.
    pub exact: bool,
    /// Which method ran and how (iterations, cuts), or why Auto fell back.
    pub note: String,
}

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

/// Auto solves exactly at most this many integer variables (choices over
/// all pairs). Measured with `examples/gap.rs` (50 seeded instances each
/// of 4-12 sites, three goals each, release build): the exact method's
/// median time per goal is 0.01 s at 20-39 variables, 0.07 s at 40-59,
/// 0.18 s at 60-79 and 0.56 s at 80-99, but the mean grows from 0.14 s
/// to 1.3 s to 14 s and single goals take 20-90 s (many rounds of cuts,
/// or a long branch and bound); within [`AUTO_LIMITS`] those fall back to
/// the heuristic, which is within a few percent on average.
pub const AUTO_MAX_VARIABLES: usize = 80;
/// Auto's time limit per MILP solve, seconds (then the heuristic).
pub const AUTO_TIME_LIMIT_S: f64 = 2.0;
/// Auto's solve-and-cut rounds per stage at most (then the heuristic):
/// with [`AUTO_TIME_LIMIT_S`], bounds Auto's exact attempt to about two
/// minutes at worst (three stages at most); typical solves take
/// milliseconds.
pub const AUTO_MAX_ITERATIONS: usize = 20;
/// Exact's time limit per MILP solve, seconds.
pub const EXACT_TIME_LIMIT_S: f64 = 600.0;
/// Solve-and-cut rounds of one exact stage at most.
pub const EXACT_MAX_ITERATIONS: usize = 200;

/// How long the exact method may go on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExactLimits {
    /// Seconds per MILP solve (microlp's own clock).
    pub time_limit_s: f64,
    /// Solve-and-cut rounds per stage (a budget has two stages).
    pub max_iterations: usize,
}

/// [`Method::Exact`]'s limits.
pub const EXACT_LIMITS: ExactLimits = ExactLimits {
    time_limit_s: EXACT_TIME_LIMIT_S,
    max_iterations: EXACT_MAX_ITERATIONS,
};
/// [`Method::Auto`]'s limits for its exact attempt.
pub const AUTO_LIMITS: ExactLimits = ExactLimits {
    time_limit_s: AUTO_TIME_LIMIT_S,
    max_iterations: AUTO_MAX_ITERATIONS,
};

/// Capacity tolerance, Mbit/s (flows are whole kbit/s).
const EPS_MBPS: f64 = 1e-6;
/// Cost tolerance, dollars.
const EPS_COST: f64 = 1e-6;
/// Heuristic steps (units added) at most per augmentation.
const MAX_STEPS: usize = 10_000;
/// Improvement rounds at most.
const MAX_ROUNDS: usize = 12;
/// Max-flow computations the heuristic's local search may spend.
const FLOW_BUDGET: u64 = 150_000;
/// Least-cost runs the capacity bisection at a budget makes at most.
const BISECTIONS: usize = 6;
/// Max-flow computations the bisection may spend.
const BISECTION_FLOWS: u64 = 1_000_000;
/// Step sizes tried for path changes at most.
const MAX_DELTAS: usize = 8;
/// Bundles explored per pair re-build at most.
const BUNDLE_NODES: usize = 100_000;

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
            finish(problem, goal, design, false, note)
        }
        Method::Exact => {
            let (design, note) = exact(problem, goal, EXACT_LIMITS, progress)?;
            finish(problem, goal, design, true, note)
        }
        Method::Auto if variables > AUTO_MAX_VARIABLES => {
            let (design, note) = heuristic(problem, goal, progress)?;
            let note = format!(
                "auto chose the heuristic ({variables} integer variables; exact up to {AUTO_MAX_VARIABLES}): {note}"
            );
            finish(problem, goal, design, false, note)
        }
        Method::Auto => match exact(problem, goal, AUTO_LIMITS, progress) {
            Ok((design, note)) => {
                let note = format!(
                    "auto chose the exact method ({variables} integer variables, at most {AUTO_MAX_VARIABLES}): {note}"
                );
                finish(problem, goal, design, true, note)
            }
            Err(e @ (OptimizeError::Unfinished { .. } | OptimizeError::Solver { .. })) => {
                progress("auto: the exact method did not finish; running the heuristic");
                let (design, note) = heuristic(problem, goal, progress)?;
                let note = format!("auto fell back to the heuristic ({e}): {note}");
                finish(problem, goal, design, false, note)
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
    finish(problem, goal, design, true, note)
}

/// Integer variables of the exact model: one per pair and choice.
pub fn integer_variables(problem: &Problem) -> usize {
    problem.choices.iter().map(Vec::len).sum()
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
    Ok(Plan {
        design,
        eval,
        exact,
        note,
    })
}

/// The most each pair can carry on its own (limits at sites ignored), and
/// the network min cut with every pair at that: a bound on any design's.
fn most_cut(problem: &Problem) -> f64 {
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

fn out_of_reach(problem: &Problem, target: f64) -> Option<OptimizeError> {
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
fn cost_floor(problem: &Problem) -> f64 {
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

fn below_budget(budget: f64, cheapest: f64, how: &str) -> String {
    format!(
        "a budget of {} is below the {} {how}",
        money(budget),
        money(cheapest)
    )
}

// ---------------------------------------------------------------------
// Exact
// ---------------------------------------------------------------------

/// One capacity cut: the pairs crossing S, what the edge sites outside S
/// need, and whether S holds no edge site (a network cut).
#[derive(Debug, Clone)]
struct Row {
    pairs: Vec<usize>,
    edge_need: f64,
    network: bool,
}

struct Pool {
    rows: Vec<Row>,
    index: HashMap<Vec<usize>, usize>,
}

impl Pool {
    fn new(problem: &Problem) -> Self {
        let mut pool = Pool {
            rows: Vec::new(),
            index: HashMap::new(),
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
    fn add(&mut self, problem: &Problem, side: &[bool]) -> bool {
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
enum Stage {
    /// Least cost with the network cut at least this.
    MinCost(f64),
    /// Most network capacity (`F`) within this budget, at most `bound`.
    MaxCapacity { budget: f64, bound: f64 },
}

enum SolveFail {
    Infeasible,
    Error(OptimizeError),
}

struct Solved {
    design: Design,
    objective: f64,
    f: f64,
}

/// Today's radios per pair (the parallel limit's exception).
fn kept_today(problem: &Problem, p: usize) -> u32 {
    problem.choices[p]
        .iter()
        .filter(|c| matches!(c.equipment, Equipment::Existing { .. }))
        .map(|c| c.max_count)
        .sum()
}

fn solve_once(
    problem: &Problem,
    pool: &Pool,
    stage: Stage,
    warm: Option<&Design>,
    time_limit: f64,
) -> Result<Solved, SolveFail> {
    let net = problem.net;
    let m = net.constraints.max_parallel;
    let mut vars = ProblemVariables::new();
    let xs: Vec<Vec<Variable>> = problem
        .choices
        .iter()
        .map(|cs| {
            cs.iter()
                .map(|c| vars.add(variable().integer().min(0.0).max(f64::from(c.max_count))))
                .collect()
        })
        .collect();
    let f = match stage {
        Stage::MaxCapacity { bound, .. } => Some(vars.add(variable().min(0.0).max(bound.max(0.0)))),
        Stage::MinCost(_) => None,
    };
    let zs: Vec<Option<Variable>> = (0..problem.choices.len())
        .map(|p| (kept_today(problem, p) > m).then(|| vars.add(variable().binary())))
        .collect();
    let mut cost = Expression::with_capacity(xs.iter().map(Vec::len).sum());
    for (cs, x) in problem.choices.iter().zip(&xs) {
        for (c, &v) in cs.iter().zip(x) {
            cost.add_mul(c.price, v);
        }
    }
    let mut model = match (stage, f) {
        (Stage::MaxCapacity { .. }, Some(f)) => vars.maximise(f),
        _ => vars.minimise(cost.clone()),
    }
    .using(microlp)
    .with_time_limit(time_limit);

    // Radios per pair.
    for (p, (cs, x)) in problem.choices.iter().zip(&xs).enumerate() {
        let mut all = Expression::with_capacity(x.len());
        let mut new = Expression::with_capacity(x.len());
        for (c, &v) in cs.iter().zip(x) {
            all.add_mul(1.0, v);
            if matches!(c.equipment, Equipment::Model(_)) {
                new.add_mul(1.0, v);
            }
        }
        match zs[p] {
            None => model = model.with(all.leq(f64::from(m))),
            Some(z) => {
                // z = 1: at most m radios; z = 0: no new model (today's
                // radios, more than m, may stay).
                let kept = f64::from(kept_today(problem, p));
                let mut new_z = new;
                new_z.add_mul(-f64::from(m), z);
                model = model.with(new_z.leq(0.0));
                let mut all_z = all;
                all_z.add_mul(kept - f64::from(m), z);
                model = model.with(all_z.leq(kept));
            }
        }
    }
    // Radios per site, spectrum per site and direction.
    for s in 0..net.sites.len() {
        if let Some(limit) = net.max_links(s) {
            let mut e = Expression::default();
            for &(p, _) in &problem.sharing[s] {
                for &v in &xs[p] {
                    e.add_mul(1.0, v);
                }
            }
            model = model.with(e.leq(f64::from(limit)));
        }
        let mut groups: Vec<Vec<usize>> = problem.sharing[s]
            .iter()
            .map(|(_, g)| {
                let mut g = g.clone();
                g.sort_unstable();
                g
            })
            .collect();
        groups.sort();
        groups.dedup();
        for g in groups {
            let mut e = Expression::default();
            for q in g {
                for (c, &v) in problem.choices[q].iter().zip(&xs[q]) {
                    e.add_mul(c.band_share, v);
                }
            }
            model = model.with(e.leq(1.0 + 1e-9));
        }
    }
    if let Stage::MaxCapacity { budget, .. } = stage {
        model = model.with(cost.clone().leq(budget + EPS_COST * budget.max(1.0)));
    }
    // Capacity cuts.
    for row in &pool.rows {
        let mut e = Expression::default();
        for &p in &row.pairs {
            for (c, &v) in problem.choices[p].iter().zip(&xs[p]) {
                e.add_mul(c.capacity_mbps, v);
            }
        }
        let need = match stage {
            Stage::MinCost(t) if row.network => row.edge_need.max(t),
            _ => row.edge_need,
        };
        if need > EPS_MBPS {
            model = model.with(e.clone().geq(need - EPS_MBPS));
        }
        if let (Stage::MaxCapacity { .. }, Some(f), true) = (stage, f, row.network) {
            let mut e = e;
            e.add_mul(-1.0, f);
            model = model.with(e.geq(0.0));
        }
    }
    if let Some(d) = warm {
        let mut start: Vec<(Variable, f64)> = Vec::new();
        for (x, ns) in xs.iter().zip(&d.counts) {
            for (&v, &k) in x.iter().zip(ns) {
                start.push((v, f64::from(k)));
            }
        }
        for (p, z) in zs.iter().enumerate() {
            if let Some(z) = z {
                let new: u32 = problem.choices[p]
                    .iter()
                    .zip(&d.counts[p])
                    .filter(|(c, _)| matches!(c.equipment, Equipment::Model(_)))
                    .map(|(_, &k)| k)
                    .sum();
                start.push((*z, if new > 0 { 1.0 } else { 0.0 }));
            }
        }
        if let Some(f) = f {
            start.push((f, problem.network_cut(d).value_mbps));
        }
        model = model.with_initial_solution(start);
    }
    let solved = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| model.solve()));
    let solution = match solved {
        Err(_) => {
            return Err(SolveFail::Error(OptimizeError::Solver {
                message: "microlp panicked".into(),
            }))
        }
        Ok(Err(ResolutionError::Infeasible)) => return Err(SolveFail::Infeasible),
        Ok(Err(ResolutionError::Other(msg))) if msg.contains("Time limit") => {
            return Err(SolveFail::Error(OptimizeError::Unfinished {
                message: format!("no solution within the time limit of {time_limit} s per solve"),
            }))
        }
        Ok(Err(e)) => {
            return Err(SolveFail::Error(OptimizeError::Solver {
                message: e.to_string(),
            }))
        }
        Ok(Ok(s)) => s,
    };
    if !matches!(solution.status(), SolutionStatus::Optimal) {
        return Err(SolveFail::Error(OptimizeError::Unfinished {
            message: format!(
                "not proven optimal within the time limit of {time_limit} s per solve"
            ),
        }));
    }
    let design = Design {
        counts: problem
            .choices
            .iter()
            .zip(&xs)
            .map(|(cs, x)| {
                cs.iter()
                    .zip(x)
                    .map(|(c, &v)| {
                        let k = solution.value(v).round();
                        if k.is_finite() {
                            k.clamp(0.0, f64::from(c.max_count)) as u32
                        } else {
                            0
                        }
                    })
                    .collect()
            })
            .collect(),
    };
    let objective = match f {
        Some(f) => solution.value(f),
        None => cost.eval_with(&solution),
    };
    Ok(Solved {
        f: f.map_or(0.0, |f| solution.value(f)),
        design,
        objective,
    })
}

struct StageResult {
    design: Design,
    iterations: usize,
}

/// Solves one stage to optimality, adding violated cuts.
fn lazy(
    problem: &Problem,
    pool: &mut Pool,
    stage: Stage,
    warm: Option<&Design>,
    limits: ExactLimits,
    progress: &mut dyn FnMut(&str),
) -> Result<StageResult, SolveFail> {
    let n = problem.net.sites.len();
    let g = problem.net.gateway;
    let sinks = problem.net.edges();
    let label = match stage {
        Stage::MinCost(_) => "least cost",
        Stage::MaxCapacity { .. } => "most capacity",
    };
    for it in 1..=limits.max_iterations {
        let s = solve_once(problem, pool, stage, warm, limits.time_limit_s)?;
        let edges = problem.edges(&s.design);
        let mut violated = false;
        let mut added = 0;
        for &(k, need) in &problem.required {
            let cut = flow::max_flow(n, &edges, g, &[k]);
            if cut.value_mbps + EPS_MBPS < need {
                violated = true;
                added += usize::from(pool.add(problem, &cut.source_side));
            }
        }
        let network_need = match stage {
            Stage::MinCost(t) => t,
            Stage::MaxCapacity { .. } => s.f,
        };
        if network_need > EPS_MBPS {
            let cut = flow::max_flow(n, &edges, g, &sinks);
            if cut.value_mbps + 1e-4 < network_need {
                violated = true;
                added += usize::from(pool.add(problem, &cut.source_side));
            }
        }
        let bound = match stage {
            Stage::MinCost(_) => money(s.objective),
            Stage::MaxCapacity { .. } => format!("{} Mbit/s", mbps(s.objective)),
        };
        progress(&format!(
            "exact ({label}): iteration {it}, {} cuts, bound {bound}",
            pool.rows.len()
        ));
        if !violated {
            return Ok(StageResult {
                design: s.design,
                iterations: it,
            });
        }
        if added == 0 {
            return Err(SolveFail::Error(OptimizeError::Solver {
                message:
                    "the solver's design breaks a cut already in the model (numerical trouble)"
                        .into(),
            }));
        }
    }
    Err(SolveFail::Error(OptimizeError::Unfinished {
        message: format!(
            "{} rounds of adding cuts ({} cuts) without an answer that keeps them all",
            limits.max_iterations,
            pool.rows.len()
        ),
    }))
}

fn exact(
    problem: &Problem,
    goal: Goal,
    limits: ExactLimits,
    progress: &mut dyn FnMut(&str),
) -> Result<(Design, String), OptimizeError> {
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
/// cut, or None).
fn exact_from(
    problem: &Problem,
    goal: Goal,
    limits: ExactLimits,
    warm: Option<Design>,
    progress: &mut dyn FnMut(&str),
) -> Result<(Design, String), OptimizeError> {
    let mut pool = Pool::new(problem);
    let vars = integer_variables(problem);
    match goal {
        Goal::MinCost { network_mbps } => {
            if let Some(e) = out_of_reach(problem, network_mbps) {
                return Err(e);
            }
            match lazy(
                problem,
                &mut pool,
                Stage::MinCost(network_mbps),
                warm.as_ref(),
                limits,
                progress,
            ) {
                Ok(r) => Ok((
                    r.design,
                    format!(
                        "exact (MILP over microlp, {vars} integer variables): {} of solving, {} cuts; proven optimal",
                        rounds(r.iterations),
                        pool.rows.len()
                    ),
                )),
                Err(SolveFail::Infeasible) => Err(OptimizeError::Infeasible {
                    message: format!(
                        "a network min cut of {} Mbit/s is out of reach within the spectrum and site limits (with every pair at its most, limits at sites aside, the cut would be {} Mbit/s)",
                        mbps(network_mbps),
                        mbps(most_cut(problem))
                    ),
                }),
                Err(SolveFail::Error(e)) => Err(e),
            }
        }
        Goal::MaxCapacity { budget } => {
            let most = most_cut(problem);
            let stage = Stage::MaxCapacity {
                budget,
                bound: most,
            };
            let first = match lazy(problem, &mut pool, stage, warm.as_ref(), limits, progress) {
                Ok(r) => r,
                Err(SolveFail::Infeasible) => {
                    let cheapest = lazy(
                        problem,
                        &mut pool,
                        Stage::MinCost(0.0),
                        None,
                        limits,
                        &mut |_| {},
                    )
                    .map(|r| problem.evaluate(&r.design).cost);
                    return Err(OptimizeError::Infeasible {
                        message: match cheapest {
                            Ok(c) => below_budget(
                                budget,
                                c,
                                "the cheapest design keeping every edge site's capacity costs",
                            ),
                            Err(_) => format!(
                                "a budget of {} does not buy a design keeping every edge site's capacity",
                                money(budget)
                            ),
                        },
                    });
                }
                Err(SolveFail::Error(e)) => return Err(e),
            };
            let reached = problem.network_cut(&first.design).value_mbps;
            let second = match lazy(
                problem,
                &mut pool,
                Stage::MinCost(reached),
                Some(&first.design),
                limits,
                progress,
            ) {
                Ok(r) => r,
                Err(SolveFail::Infeasible) => {
                    return Err(OptimizeError::Solver {
                        message: "the least cost at the most capacity found came out infeasible"
                            .into(),
                    })
                }
                Err(SolveFail::Error(e)) => return Err(e),
            };
            Ok((
                second.design,
                format!(
                    "exact (MILP over microlp, {vars} integer variables): {} for the most capacity ({} Mbit/s), {} for its least cost, {} cuts; proven optimal",
                    rounds(first.iterations),
                    mbps(reached),
                    rounds(second.iterations),
                    pool.rows.len()
                ),
            ))
        }
    }
}

/// "1 round" or "3 rounds" (of solving and adding cuts).
fn rounds(n: usize) -> String {
    if n == 1 {
        "1 round".into()
    } else {
        format!("{n} rounds")
    }
}

// ---------------------------------------------------------------------
// Heuristic
// ---------------------------------------------------------------------

/// A pair upgrade: capacity added, cost added, the pair's new counts.
type Upgrade = (f64, f64, Vec<u32>);

/// One way to equip a pair on its own (its own limits kept).
#[derive(Debug, Clone)]
struct Bundle {
    counts: Vec<u32>,
    cost: f64,
    cap: f64,
}

/// A change to one pair: its new counts.
#[derive(Debug, Clone)]
struct Change {
    pair: usize,
    counts: Vec<u32>,
}

struct Search<'p, 'a> {
    pb: &'p Problem<'a>,
    n: usize,
    g: usize,
    sinks: Vec<usize>,
    /// Per pair, the bundles no other bundle beats on cost, capacity,
    /// spectrum and radios, cheapest first.
    frontier: Vec<Vec<Bundle>>,
    /// Step sizes for path changes: the choices' capacities.
    deltas: Vec<f64>,
    flows: u64,
    /// Local search stops past this many max flows.
    flow_limit: u64,
    added: usize,
    improved: usize,
}

impl<'p, 'a> Search<'p, 'a> {
    fn new(pb: &'p Problem<'a>) -> Self {
        let frontier = (0..pb.choices.len()).map(|p| frontier(pb, p)).collect();
        let mut deltas: Vec<f64> = pb
            .choices
            .iter()
            .flatten()
            .map(|c| c.capacity_mbps)
            .filter(|c| c.is_finite() && *c > 0.0)
            .collect();
        deltas.sort_by(f64::total_cmp);
        deltas.dedup_by(|a, b| (*a - *b).abs() < EPS_MBPS);
        if deltas.len() > MAX_DELTAS {
            let k = deltas.len();
            deltas = (0..MAX_DELTAS)
                .map(|i| deltas[i * (k - 1) / (MAX_DELTAS - 1)])
                .collect();
        }
        Search {
            pb,
            n: pb.net.sites.len(),
            g: pb.net.gateway,
            sinks: pb.net.edges(),
            frontier,
            deltas,
            flows: 0,
            flow_limit: FLOW_BUDGET,
            added: 0,
            improved: 0,
        }
    }

    fn cost(&self, d: &Design) -> f64 {
        (0..d.counts.len())
            .map(|p| self.pair_cost(p, &d.counts[p]))
            .sum()
    }

    fn pair_cost(&self, p: usize, counts: &[u32]) -> f64 {
        self.pb.choices[p]
            .iter()
            .zip(counts)
            .map(|(c, &k)| c.price * f64::from(k))
            .sum()
    }

    fn pair_cap(&self, p: usize, counts: &[u32]) -> f64 {
        self.pb.choices[p]
            .iter()
            .zip(counts)
            .map(|(c, &k)| c.capacity_mbps * f64::from(k))
            .sum()
    }

    /// Applies a change; returns the pair's old counts.
    fn apply(d: &mut Design, ch: &Change) -> Vec<u32> {
        std::mem::replace(&mut d.counts[ch.pair], ch.counts.clone())
    }

    fn flow(&mut self, edges: &[flow::Edge], sinks: &[usize]) -> Cut {
        self.flows += 1;
        flow::max_flow(self.n, edges, self.g, sinks)
    }

    /// A design's graph, for several max flows from the gateway.
    fn graph(&self, d: &Design) -> FlowGraph {
        FlowGraph::new(self.n, &self.pb.edges(d), &self.sinks)
    }

    fn flow_in(&mut self, graph: &mut FlowGraph, sinks: &[usize]) -> Cut {
        self.flows += 1;
        graph.max_flow(self.g, sinks)
    }

    fn network(&mut self, d: &Design) -> Cut {
        let edges = self.pb.edges(d);
        let sinks = self.sinks.clone();
        self.flow(&edges, &sinks)
    }

    /// Shortfalls: which constraints are short (None: the network), by
    /// how much in total, and their cuts.
    fn shortfall(&mut self, d: &Design, target: f64) -> (f64, Vec<Option<usize>>, Vec<Vec<bool>>) {
        let mut graph = self.graph(d);
        let mut total = 0.0;
        let mut which = Vec::new();
        let mut cuts = Vec::new();
        for i in 0..self.pb.required.len() {
            let (k, need) = self.pb.required[i];
            let cut = self.flow_in(&mut graph, &[k]);
            if cut.value_mbps + EPS_MBPS < need {
                total += need - cut.value_mbps;
                which.push(Some(i));
                cuts.push(cut.source_side);
            }
        }
        if target > EPS_MBPS {
            let sinks = self.sinks.clone();
            let cut = self.flow_in(&mut graph, &sinks);
            if cut.value_mbps + EPS_MBPS < target {
                total += target - cut.value_mbps;
                which.push(None);
                cuts.push(cut.source_side);
            }
        }
        (total, which, cuts)
    }

    /// The shortfall over the given constraints only.
    fn shortfall_of(&mut self, d: &Design, target: f64, which: &[Option<usize>]) -> f64 {
        let mut graph = self.graph(d);
        let mut total = 0.0;
        for w in which {
            let (sinks, need) = match *w {
                Some(i) => (vec![self.pb.required[i].0], self.pb.required[i].1),
                None => (self.sinks.clone(), target),
            };
            let v = self.flow_in(&mut graph, &sinks).value_mbps;
            total += (need - v).max(0.0);
        }
        total
    }

    /// True when `d` keeps every limit and every capacity; `changed`: the
    /// one pair changed since `d` was last known to keep the limits (only
    /// the limits near it are checked), None: check them all.
    fn fits(&mut self, d: &Design, target: f64, changed: Option<usize>) -> bool {
        let within = match changed {
            Some(p) => self.pb.keeps_limits_near(d, &[p]),
            None => self.pb.violation(d).is_none(),
        };
        if !within {
            return false;
        }
        let mut graph = self.graph(d);
        if target > EPS_MBPS {
            let sinks = self.sinks.clone();
            if self.flow_in(&mut graph, &sinks).value_mbps + EPS_MBPS < target {
                return false;
            }
        }
        for i in 0..self.pb.required.len() {
            let (k, need) = self.pb.required[i];
            if self.flow_in(&mut graph, &[k]).value_mbps + EPS_MBPS < need {
                return false;
            }
        }
        true
    }

    /// Changes that raise capacity on the pairs crossing any of `cuts`
    /// (not pair `banned`): one radio more, one radio upgraded, or the
    /// pair re-built as a faster bundle.
    fn raising(&self, d: &Design, cuts: &[Vec<bool>], banned: Option<usize>) -> Vec<Change> {
        let mut out: Vec<Change> = Vec::new();
        for (p, pair) in self.pb.net.pairs.iter().enumerate() {
            let crosses = cuts.iter().any(|side| {
                side.get(pair.a).copied().unwrap_or(false)
                    != side.get(pair.b).copied().unwrap_or(false)
            });
            if !crosses || banned == Some(p) {
                continue;
            }
            let cs = &self.pb.choices[p];
            let now = &d.counts[p];
            // The one-radio changes are distinct by construction; a
            // bundle is skipped when it is one of them.
            for c in 0..cs.len() {
                if now[c] < cs[c].max_count {
                    let mut v = now.clone();
                    v[c] += 1;
                    out.push(Change { pair: p, counts: v });
                }
                if now[c] > 0 {
                    for to in 0..cs.len() {
                        if cs[to].capacity_mbps > cs[c].capacity_mbps && now[to] < cs[to].max_count
                        {
                            let mut v = now.clone();
                            v[c] -= 1;
                            v[to] += 1;
                            out.push(Change { pair: p, counts: v });
                        }
                    }
                }
            }
            let cap = self.pair_cap(p, now);
            for b in &self.frontier[p] {
                let unit = match one_radio_step(now, &b.counts) {
                    Some((None, _)) => true,
                    Some((Some(from), to)) => cs[to].capacity_mbps > cs[from].capacity_mbps,
                    None => false,
                };
                if b.cap > cap + EPS_MBPS && !unit {
                    out.push(Change {
                        pair: p,
                        counts: b.counts.clone(),
                    });
                }
            }
        }
        out
    }

    /// Changes that make one pair cheaper: one radio less, one radio
    /// swapped for a cheaper choice, or the pair re-built as a cheaper
    /// bundle; biggest saving first.
    fn lowering(&self, d: &Design) -> Vec<(f64, Change)> {
        let mut out: Vec<(f64, Change)> = Vec::new();
        for (p, cs) in self.pb.choices.iter().enumerate() {
            let now = &d.counts[p];
            let cost = self.pair_cost(p, now);
            let push = |counts: Vec<u32>, out: &mut Vec<(f64, Change)>| {
                let saving = cost - self.pair_cost(p, &counts);
                if saving > EPS_COST {
                    out.push((saving, Change { pair: p, counts }));
                }
            };
            // The one-radio changes are distinct by construction; a
            // bundle is skipped when it is one of them.
            for c in 0..cs.len() {
                if now[c] == 0 {
                    continue;
                }
                let mut v = now.clone();
                v[c] -= 1;
                push(v, &mut out);
                for to in 0..cs.len() {
                    if to != c && now[to] < cs[to].max_count {
                        let mut v = now.clone();
                        v[c] -= 1;
                        v[to] += 1;
                        push(v, &mut out);
                    }
                }
            }
            for b in &self.frontier[p] {
                let unit = matches!(one_radio_step(now, &b.counts), Some((Some(_), _)))
                    || one_radio_less(now, &b.counts);
                if b.cost + EPS_COST < cost && !unit {
                    push(b.counts.clone(), &mut out);
                }
            }
        }
        out.sort_by(|a, b| b.0.total_cmp(&a.0));
        out
    }

    /// Adds capacity until the shortfall against `target` (and every edge
    /// site's need) is gone, spending at most `limit` in all and leaving
    /// pair `banned` alone. True when nothing is short at the end.
    fn repair(&mut self, d: &mut Design, target: f64, limit: f64, banned: Option<usize>) -> bool {
        for _ in 0..MAX_STEPS {
            let (short, which, cuts) = self.shortfall(d, target);
            if short <= EPS_MBPS {
                return true;
            }
            let mut sets: Vec<Vec<Change>> = self
                .raising(d, &cuts, banned)
                .into_iter()
                .map(|ch| vec![ch])
                .collect();
            let sinks: Vec<Vec<usize>> = which
                .iter()
                .map(|w| match *w {
                    Some(i) => vec![self.pb.required[i].0],
                    None => self.sinks.clone(),
                })
                .collect();
            sets.extend(self.paths(d, &sinks, short, banned));
            let aim = Aim::Short {
                target,
                which,
                short,
            };
            if !self.step(d, sets, &aim, limit, true) {
                return false;
            }
        }
        false
    }

    /// Adds capacity bridging the network min cut while the budget allows.
    fn grow(&mut self, d: &mut Design, budget: f64) {
        for _ in 0..MAX_STEPS {
            let cut = self.network(d);
            let mut sets: Vec<Vec<Change>> = self
                .raising(d, std::slice::from_ref(&cut.source_side), None)
                .into_iter()
                .map(|ch| vec![ch])
                .collect();
            let sinks = vec![self.sinks.clone()];
            sets.extend(self.paths(d, &sinks, f64::INFINITY, None));
            let aim = Aim::Network {
                now: cut.value_mbps,
            };
            if !self.step(d, sets, &aim, budget, false) {
                return;
            }
        }
    }

    /// What a change set gains toward the aim.
    fn gain(&mut self, d: &Design, aim: &Aim) -> f64 {
        match aim {
            Aim::Short {
                target,
                which,
                short,
            } => short - self.shortfall_of(d, *target, which),
            Aim::Network { now } => self.network(d).value_mbps - now,
        }
    }

    /// Applies the best of the change sets (gain per dollar, within the
    /// cost limit, keeping every limit); with `proxy`, capacity added
    /// across the cut counts when no set raises the flow. False when
    /// none qualifies.
    fn step(
        &mut self,
        d: &mut Design,
        sets: Vec<Vec<Change>>,
        aim: &Aim,
        limit: f64,
        proxy: bool,
    ) -> bool {
        let cost = self.cost(d);
        let cap_at = match aim {
            Aim::Short { short, .. } => *short,
            Aim::Network { .. } => f64::INFINITY,
        };
        let mut best: Option<(Key, Vec<Change>)> = None;
        for set in sets {
            let mut dc = 0.0;
            let mut dcap = 0.0;
            for ch in &set {
                let p = ch.pair;
                dc += self.pair_cost(p, &ch.counts) - self.pair_cost(p, &d.counts[p]);
                dcap += self.pair_cap(p, &ch.counts) - self.pair_cap(p, &d.counts[p]);
            }
            if cost + dc > limit + EPS_COST {
                continue;
            }
            let olds: Vec<(usize, Vec<u32>)> =
                set.iter().map(|ch| (ch.pair, Self::apply(d, ch))).collect();
            let pairs: Vec<usize> = set.iter().map(|ch| ch.pair).collect();
            let gain = if self.pb.keeps_limits_near(d, &pairs) {
                Some(self.gain(d, aim))
            } else {
                None
            };
            for (p, old) in olds.into_iter().rev() {
                d.counts[p] = old;
            }
            let Some(gain) = gain else { continue };
            if !proxy && gain <= EPS_MBPS {
                continue;
            }
            let key = key(gain.min(cap_at), dcap.min(cap_at), dc);
            if best.as_ref().is_none_or(|(k, _)| key > *k) {
                best = Some((key, set));
            }
        }
        let Some((_, set)) = best else { return false };
        for ch in &set {
            Self::apply(d, ch);
        }
        self.added += set.len();
        true
    }

    /// Path changes: for each sink set and each step size δ (the choices'
    /// capacities, and `short`), the cheapest set of pair upgrades that
    /// opens a path carrying δ more from the gateway, on top of today's
    /// max flow (a shortest path where a pair costs nothing when its
    /// residual capacity carries δ, else its cheapest upgrade that does).
    /// Series links that only help together come in one change set.
    fn paths(
        &mut self,
        d: &Design,
        sinks_list: &[Vec<usize>],
        short: f64,
        banned: Option<usize>,
    ) -> Vec<Vec<Change>> {
        let pairs = &self.pb.net.pairs;
        let edges: Vec<flow::Edge> = (0..pairs.len())
            .map(|p| (pairs[p].a, pairs[p].b, self.pair_cap(p, &d.counts[p])))
            .collect();
        let mut deltas = self.deltas.clone();
        if short.is_finite() && short > EPS_MBPS {
            deltas.push(short);
        }
        let mut upgrades: Vec<Option<Vec<Upgrade>>> = vec![None; pairs.len()];
        let mut scratch = d.clone();
        let mut out: Vec<Vec<Change>> = Vec::new();
        for sinks in sinks_list {
            self.flows += 1;
            let (_, f) = flows_on(self.n, &edges, self.g, sinks);
            for &delta in &deltas {
                let Some(path) = self.cheapest_path(
                    &mut scratch,
                    &edges,
                    &f,
                    sinks,
                    delta,
                    &[banned],
                    &mut upgrades,
                ) else {
                    continue;
                };
                // Upgrades fine alone may break a limit together (two at
                // one site): then try without each of them in turn.
                let mut found = vec![path];
                if !self.keeps_limits(&mut scratch, &found[0]) {
                    let first = found.remove(0);
                    for ch in &first {
                        let without = [banned, Some(ch.pair)];
                        if let Some(other) = self.cheapest_path(
                            &mut scratch,
                            &edges,
                            &f,
                            sinks,
                            delta,
                            &without,
                            &mut upgrades,
                        ) {
                            found.push(other);
                        }
                    }
                }
                for path in found {
                    if !path.is_empty() && !out.iter().any(|o| same(o, &path)) {
                        out.push(path);
                    }
                }
            }
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn cheapest_path(
        &self,
        scratch: &mut Design,
        edges: &[flow::Edge],
        f: &[f64],
        sinks: &[usize],
        delta: f64,
        banned: &[Option<usize>],
        upgrades: &mut [Option<Vec<Upgrade>>],
    ) -> Option<Vec<Change>> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let n = self.n;
        let mut at: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (p, e) in edges.iter().enumerate() {
            if e.0 < n && e.1 < n {
                at[e.0].push(p);
                at[e.1].push(p);
            }
        }
        let mut is_sink = vec![false; n];
        for &k in sinks {
            if k < n && k != self.g {
                is_sink[k] = true;
            }
        }
        let mut dist = vec![f64::INFINITY; n];
        // How each site was reached: the pair, and its upgrade if any.
        let mut prev: Vec<Option<(usize, Option<Vec<u32>>)>> = vec![None; n];
        let mut done = vec![false; n];
        let mut heap = BinaryHeap::new();
        if self.g >= n {
            return None;
        }
        dist[self.g] = 0.0;
        heap.push(Reverse((0u64, self.g)));
        let mut reached = None;
        while let Some(Reverse((_, u))) = heap.pop() {
            if done[u] {
                continue;
            }
            done[u] = true;
            if is_sink[u] {
                reached = Some(u);
                break;
            }
            for &p in &at[u] {
                let (a, b, cap) = edges[p];
                let v = if a == u { b } else { a };
                if done[v] {
                    continue;
                }
                // Net flow a->b is f[p]; residual from u toward v.
                let residual = if a == u { cap - f[p] } else { cap + f[p] };
                let need = delta - residual;
                let (w, change) = if need <= EPS_MBPS {
                    (0.0, None)
                } else {
                    if banned.contains(&Some(p)) {
                        continue;
                    }
                    let options =
                        upgrades[p].get_or_insert_with(|| self.upgrade_options(scratch, p));
                    match options.iter().find(|o| o.0 + EPS_MBPS >= need) {
                        Some(o) => (o.1.max(0.0) + 1e-6, Some(o.2.clone())),
                        None => continue,
                    }
                };
                let nd = dist[u] + w;
                if nd < dist[v] {
                    dist[v] = nd;
                    prev[v] = Some((p, change));
                    heap.push(Reverse((nd.to_bits(), v)));
                }
            }
        }
        let mut v = reached?;
        let mut out = Vec::new();
        for _ in 0..n {
            if v == self.g {
                return Some(out);
            }
            let (p, change) = prev[v].clone()?;
            if let Some(counts) = change {
                out.push(Change { pair: p, counts });
            }
            v = if edges[p].0 == v {
                edges[p].1
            } else {
                edges[p].0
            };
        }
        None
    }

    /// True when the changes together keep every limit (`scratch` is the
    /// design, left as it was).
    fn keeps_limits(&self, scratch: &mut Design, set: &[Change]) -> bool {
        let olds: Vec<(usize, Vec<u32>)> = set
            .iter()
            .map(|ch| (ch.pair, Self::apply(scratch, ch)))
            .collect();
        let pairs: Vec<usize> = set.iter().map(|ch| ch.pair).collect();
        let ok = self.pb.keeps_limits_near(scratch, &pairs);
        for (p, old) in olds.into_iter().rev() {
            scratch.counts[p] = old;
        }
        ok
    }

    /// Pair `p`'s upgrades that keep every limit applied alone: capacity
    /// added, cost, counts; cheapest first.
    fn upgrade_options(&self, scratch: &mut Design, p: usize) -> Vec<Upgrade> {
        let cap = self.pair_cap(p, &scratch.counts[p]);
        let cost = self.pair_cost(p, &scratch.counts[p]);
        let everything = vec![vec![true; self.n]];
        let mut side = everything;
        // Any cut p crosses: the raising changes of p alone.
        side[0][self.pb.net.pairs[p].b] = false;
        let mut out = Vec::new();
        for ch in self.raising(scratch, &side, None) {
            if ch.pair != p {
                continue;
            }
            let old = Self::apply(scratch, &ch);
            let ok = self.pb.keeps_limits_near(scratch, &[p]);
            scratch.counts[p] = old;
            if ok {
                let dcap = self.pair_cap(p, &ch.counts) - cap;
                let dc = self.pair_cost(p, &ch.counts) - cost;
                out.push((dcap, dc, ch.counts));
            }
        }
        out.sort_by(|a, b| a.1.total_cmp(&b.1).then(b.0.total_cmp(&a.0)));
        out
    }

    /// Makes pairs cheaper while the design fits; true when anything
    /// changed.
    fn prune(&mut self, d: &mut Design, target: f64) -> bool {
        let mut any = false;
        for _ in 0..MAX_ROUNDS {
            let mut changed = false;
            for (_, ch) in self.lowering(d) {
                if self.flows > self.flow_limit {
                    break;
                }
                // Earlier changes this pass may have touched the pair.
                let p = ch.pair;
                let cheaper =
                    self.pair_cost(p, &ch.counts) + EPS_COST < self.pair_cost(p, &d.counts[p]);
                if !cheaper {
                    continue;
                }
                let old = Self::apply(d, &ch);
                if self.fits(d, target, Some(p)) {
                    changed = true;
                    self.improved += 1;
                } else {
                    d.counts[p] = old;
                }
            }
            if !changed {
                break;
            }
            any = true;
        }
        any
    }

    /// Re-builds each pair as the cheapest bundle with at least its
    /// capacity that keeps the limits; true when anything changed.
    fn rebuild(&mut self, d: &mut Design) -> bool {
        let mut any = false;
        for p in 0..d.counts.len() {
            let cap = self.pair_cap(p, &d.counts[p]);
            let cost = self.pair_cost(p, &d.counts[p]);
            if cap <= 0.0 {
                continue;
            }
            let options: Vec<Vec<u32>> = self.frontier[p]
                .iter()
                .filter(|b| b.cap + EPS_MBPS >= cap && b.cost + EPS_COST < cost)
                .map(|b| b.counts.clone())
                .collect();
            for counts in options {
                let old = std::mem::replace(&mut d.counts[p], counts);
                if self.pb.keeps_limits_near(d, &[p]) {
                    any = true;
                    self.improved += 1;
                    break;
                }
                d.counts[p] = old;
            }
        }
        any
    }

    /// Makes one pair cheaper (one radio less, a cheaper choice, a
    /// cheaper bundle) and repairs the shortfall on other pairs; kept when
    /// the whole is cheaper. True when anything changed.
    fn drop_repair(&mut self, d: &mut Design, target: f64) -> bool {
        let mut any = false;
        for (_, ch) in self.lowering(d) {
            if self.flows > self.flow_limit {
                break;
            }
            let p = ch.pair;
            let cost = self.cost(d);
            // Earlier changes may have made this one moot.
            if self.pair_cost(p, &ch.counts) + EPS_COST >= self.pair_cost(p, &d.counts[p]) {
                continue;
            }
            let mut t = d.clone();
            Self::apply(&mut t, &ch);
            let before = (self.added, self.improved);
            let better = self.repair(&mut t, target, cost - EPS_COST, Some(p)) && {
                self.prune(&mut t, target);
                self.cost(&t) + EPS_COST < cost && self.fits(&t, target, None)
            };
            (self.added, self.improved) = before;
            if better {
                *d = t;
                any = true;
                self.improved += 1;
            }
        }
        any
    }
}

/// When `to` is `from` with one radio added (`(None, c)`) or one radio
/// of choice `a` swapped for one of `c` (`(Some(a), c)`).
fn one_radio_step(from: &[u32], to: &[u32]) -> Option<(Option<usize>, usize)> {
    let mut up = None;
    let mut down = None;
    for (c, (&x, &y)) in from.iter().zip(to).enumerate() {
        match i64::from(y) - i64::from(x) {
            0 => {}
            1 if up.is_none() => up = Some(c),
            -1 if down.is_none() => down = Some(c),
            _ => return None,
        }
    }
    up.map(|u| (down, u))
}

/// When `to` is `from` with one radio fewer.
fn one_radio_less(from: &[u32], to: &[u32]) -> bool {
    let mut down = 0;
    for (&x, &y) in from.iter().zip(to) {
        match i64::from(y) - i64::from(x) {
            0 => {}
            -1 => down += 1,
            _ => return false,
        }
    }
    down == 1
}

/// The bundles of pair `p` that keep its own limits (counts, parallel
/// radios, spectrum of its own) and that no other beats on cost,
/// capacity, spectrum and radios together; cheapest first.
fn frontier(pb: &Problem, p: usize) -> Vec<Bundle> {
    let cs = &pb.choices[p];
    let m = pb.net.constraints.max_parallel;
    let most = m.max(kept_today(pb, p));
    let mut all: Vec<(Bundle, f64, u32)> = Vec::new();
    let mut counts = vec![0u32; cs.len()];
    let mut nodes = 0usize;
    #[allow(clippy::too_many_arguments)]
    fn walk(
        cs: &[crate::design::Choice],
        i: usize,
        counts: &mut Vec<u32>,
        radios: u32,
        most: u32,
        m: u32,
        nodes: &mut usize,
        all: &mut Vec<(Bundle, f64, u32)>,
    ) {
        *nodes += 1;
        if *nodes > BUNDLE_NODES {
            return;
        }
        if i == cs.len() {
            let kept: u32 = cs
                .iter()
                .zip(counts.iter())
                .filter(|(c, _)| matches!(c.equipment, Equipment::Existing { .. }))
                .map(|(_, &k)| k)
                .sum();
            let share: f64 = cs
                .iter()
                .zip(counts.iter())
                .map(|(c, &k)| c.band_share * f64::from(k))
                .sum();
            if radios > m.max(kept) || share > 1.0 + 1e-9 {
                return;
            }
            let cost = cs
                .iter()
                .zip(counts.iter())
                .map(|(c, &k)| c.price * f64::from(k))
                .sum();
            let cap = cs
                .iter()
                .zip(counts.iter())
                .map(|(c, &k)| c.capacity_mbps * f64::from(k))
                .sum();
            all.push((
                Bundle {
                    counts: counts.clone(),
                    cost,
                    cap,
                },
                share,
                radios,
            ));
            return;
        }
        let top = cs[i].max_count.min(most.saturating_sub(radios));
        for k in 0..=top {
            counts[i] = k;
            walk(cs, i + 1, counts, radios + k, most, m, nodes, all);
        }
        counts[i] = 0;
    }
    walk(cs, 0, &mut counts, 0, most, m, &mut nodes, &mut all);
    all.sort_by(|a, b| {
        a.0.cost
            .total_cmp(&b.0.cost)
            .then(b.0.cap.total_cmp(&a.0.cap))
            .then(a.1.total_cmp(&b.1))
            .then(a.2.cmp(&b.2))
    });
    let mut kept: Vec<(Bundle, f64, u32)> = Vec::new();
    for (b, share, radios) in all {
        let beaten = kept
            .iter()
            .any(|(k, ks, kr)| k.cap + EPS_MBPS >= b.cap && *ks <= share + 1e-12 && *kr <= radios);
        if !beaten {
            kept.push((b, share, radios));
        }
    }
    kept.into_iter().map(|k| k.0).collect()
}

/// What a step aims at: closing shortfalls, or raising the network cut.
enum Aim {
    Short {
        target: f64,
        which: Vec<Option<usize>>,
        short: f64,
    },
    Network {
        now: f64,
    },
}

/// The same changes (pairs and counts), in any order.
fn same(a: &[Change], b: &[Change]) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|x| b.iter().any(|y| y.pair == x.pair && y.counts == x.counts))
}

/// Max flow from `s` to `sinks` with each edge's net flow (a to b
/// positive), Mbit/s; whole kbit/s like [`flow::max_flow`]
/// (Edmonds-Karp: at most nodes x arcs augmentations).
fn flows_on(n: usize, edges: &[flow::Edge], s: usize, sinks: &[usize]) -> (f64, Vec<f64>) {
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

/// How a change ranks: changes that raise the flow first, then capacity
/// per dollar (the flow's gain, else the capacity added across the cut),
/// free or paying changes above priced ones, then the cheaper.
type Key = (bool, f64, f64);

fn key(gain: f64, dcap: f64, dc: f64) -> Key {
    let real = gain > EPS_MBPS;
    let worth = if real { gain } else { dcap };
    (real, ratio(worth, dc), -dc)
}

/// Gain per dollar; free or paying moves rank above any priced one.
fn ratio(gain: f64, cost: f64) -> f64 {
    if cost <= EPS_COST {
        1e12 * gain - cost
    } else {
        gain / cost
    }
}

/// Today's network with every pair re-built where cheaper.
fn rebuilt_today(s: &mut Search) -> Design {
    let mut d = s.pb.today();
    s.rebuild(&mut d);
    d
}

/// The least-cost heuristic at `target`; `thorough` adds the
/// drop-and-repair moves to the improvement rounds.
fn least_cost(
    s: &mut Search,
    target: f64,
    thorough: bool,
    progress: &mut dyn FnMut(&str),
) -> Option<Design> {
    let mut best: Option<Design> = None;
    let rebuilt = rebuilt_today(s);
    progress(&format!(
        "heuristic: today's network re-built for {}",
        money(s.cost(&rebuilt))
    ));
    // Two starts: today's network re-built (the paper's), and nothing at
    // all (links bought path by path); the cheaper result wins.
    for from_scratch in [false, true] {
        s.flow_limit = s.flows + FLOW_BUDGET;
        let mut d = if from_scratch {
            s.pb.empty()
        } else {
            rebuilt.clone()
        };
        if !s.repair(&mut d, target, f64::INFINITY, None) {
            if from_scratch {
                continue;
            }
            // Stuck (spectrum taken by cheap units): the most capacity
            // first, pruned after.
            d = rebuilt.clone();
            s.grow(&mut d, f64::INFINITY);
            if s.network(&d).value_mbps + EPS_MBPS < target {
                continue;
            }
        }
        let how = if from_scratch {
            "from no links"
        } else {
            "from today's network"
        };
        progress(&format!(
            "heuristic ({how}): target met for {}",
            money(s.cost(&d))
        ));
        for round in 1..=MAX_ROUNDS {
            let a = s.prune(&mut d, target);
            let b = s.rebuild(&mut d);
            let c = thorough && s.drop_repair(&mut d, target);
            progress(&format!(
                "heuristic ({how}): improvement round {round}, {}",
                money(s.cost(&d))
            ));
            if !(a || b || c) || s.flows > s.flow_limit {
                break;
            }
        }
        if best
            .as_ref()
            .is_none_or(|b| s.cost(&d) + EPS_COST < s.cost(b))
        {
            best = Some(d);
        }
    }
    best
}

fn heuristic(
    problem: &Problem,
    goal: Goal,
    progress: &mut dyn FnMut(&str),
) -> Result<(Design, String), OptimizeError> {
    let mut s = Search::new(problem);
    match goal {
        Goal::MinCost { network_mbps } => {
            if let Some(e) = out_of_reach(problem, network_mbps) {
                return Err(e);
            }
            match least_cost(&mut s, network_mbps, true, progress) {
                Some(d) => Ok((
                    d,
                    format!(
                        "heuristic (min-cut bridging, then pruning): {} units added, {} improvements, {} max flows",
                        s.added, s.improved, s.flows
                    ),
                )),
                None => {
                    let today = rebuilt_today(&mut s);
                    let got = s.network(&today).value_mbps;
                    Err(OptimizeError::NotFound {
                        message: format!(
                            "the heuristic found no design with a network min cut of {} Mbit/s within the spectrum and site limits (today's network re-built gives {} Mbit/s, every pair at its most at most {}); the exact method can tell whether one exists",
                            mbps(network_mbps),
                            mbps(got),
                            mbps(most_cut(problem))
                        ),
                    })
                }
            }
        }
        Goal::MaxCapacity { budget } => {
            let floor = cost_floor(problem);
            if budget + EPS_COST < floor {
                return Err(OptimizeError::Infeasible {
                    message: below_budget(
                        budget,
                        floor,
                        "that keeping every edge site's capacity costs at the least (each edge site's need at the best price per Mbit/s)",
                    ),
                });
            }
            let cheapest = least_cost(&mut s, 0.0, true, progress);
            let mut starts: Vec<Design> = Vec::new();
            match &cheapest {
                Some(d) if s.cost(d) <= budget + EPS_COST => starts.push(d.clone()),
                Some(d) => {
                    return Err(OptimizeError::NotFound {
                        message: below_budget(
                            budget,
                            s.cost(d),
                            "of the cheapest design the heuristic found keeping every edge site's capacity (the exact method can tell whether a cheaper one exists)",
                        ),
                    })
                }
                None => {}
            }
            let today = rebuilt_today(&mut s);
            if s.cost(&today) <= budget + EPS_COST {
                starts.push(today);
            }
            let mut best: Option<(f64, f64, Design)> = None;
            for start in starts {
                s.flow_limit = s.flows + FLOW_BUDGET;
                let mut d = start;
                for _ in 0..MAX_ROUNDS {
                    s.grow(&mut d, budget);
                    let reached = s.network(&d).value_mbps;
                    progress(&format!(
                        "heuristic: {} Mbit/s for {}",
                        mbps(reached),
                        money(s.cost(&d))
                    ));
                    let a = s.prune(&mut d, reached);
                    let b = s.rebuild(&mut d);
                    if !(a || b) || s.flows > s.flow_limit {
                        break;
                    }
                }
                let cap = s.network(&d).value_mbps;
                let cost = s.cost(&d);
                let wins = best.as_ref().is_none_or(|(bc, bcost, _)| {
                    cap > bc + EPS_MBPS || (cap + EPS_MBPS >= *bc && cost + EPS_COST < *bcost)
                });
                if wins {
                    best = Some((cap, cost, d));
                }
            }
            // Then bisect on the capacity with the least-cost heuristic:
            // a higher target whose least cost fits the budget wins.
            if let Some((found, _, _)) = &best {
                let mut lo = *found;
                let mut hi = most_cut(problem);
                let step = s.deltas.first().copied().unwrap_or(1.0).max(1.0) / 2.0;
                let spent = s.flows;
                for probe in 1..=BISECTIONS {
                    if hi - lo < step || s.flows - spent > BISECTION_FLOWS {
                        break;
                    }
                    let mid = 0.5 * (lo + hi);
                    let got = least_cost(&mut s, mid, false, &mut |_| {});
                    match got {
                        Some(d) if s.cost(&d) <= budget + EPS_COST => {
                            let cap = s.network(&d).value_mbps;
                            let cost = s.cost(&d);
                            progress(&format!(
                                "heuristic: bisection {probe}, {} Mbit/s for {}",
                                mbps(cap),
                                money(cost)
                            ));
                            lo = cap.max(mid);
                            let wins = best.as_ref().is_none_or(|(bc, bcost, _)| {
                                cap > bc + EPS_MBPS
                                    || (cap + EPS_MBPS >= *bc && cost + EPS_COST < *bcost)
                            });
                            if wins {
                                best = Some((cap, cost, d));
                            }
                        }
                        _ => hi = mid,
                    }
                }
            }
            match best {
                Some((_, _, d)) => Ok((
                    d,
                    format!(
                        "heuristic (min-cut bridging within the budget, pruning, then bisection on the capacity): {} units added, {} improvements, {} max flows",
                        s.added, s.improved, s.flows
                    ),
                )),
                None => Err(OptimizeError::NotFound {
                    message: format!(
                        "the heuristic found no design within a budget of {} keeping every edge site's capacity",
                        money(budget)
                    ),
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
