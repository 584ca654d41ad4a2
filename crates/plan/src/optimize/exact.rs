//! The exact method: a MILP with lazily generated cuts.
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
//! ([`super::EXACT_MAX_ITERATIONS`]) and each solve has a time limit.

use std::collections::HashMap;

use good_lp::solvers::microlp::{MicroLpProblem, MicroLpSolution};
use good_lp::solvers::SolutionStatus;
use good_lp::{
    microlp, variable, Expression, ProblemVariables, ResolutionError, Solution, SolverModel,
    Variable, WithInitialSolution, WithTimeLimit,
};

use crate::design::{Design, Equipment, Problem};
use crate::flow;
use crate::units::{mbps, money};

use super::bounds::{below_budget, kept_today, most_cut, out_of_reach};
use super::goal::{ExactLimits, Goal, OptimizeError, EPS_COST, EPS_MBPS};
use super::heuristic::heuristic;

/// Integer variables of the exact model: one per pair and choice.
pub fn integer_variables(problem: &Problem) -> usize {
    problem.choices.iter().map(Vec::len).sum()
}

/// One capacity cut: the pairs crossing S, what the edge sites outside S
/// need, and whether S holds no edge site (a network cut).
#[derive(Debug, Clone)]
struct Row {
    pairs: Vec<usize>,
    edge_need: f64,
    network: bool,
}

pub(super) struct Pool {
    rows: Vec<Row>,
    index: HashMap<Vec<usize>, usize>,
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
    for &(k, need) in &problem.required {
        let cut = flow::max_flow(n, edges, g, &[k]);
        if cut.value_mbps + slack.0 < need {
            violated = true;
            added += usize::from(pool.add(problem, &cut.source_side));
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

pub(super) enum SolveFail {
    Infeasible,
    Error(OptimizeError),
}

pub(super) struct Solved {
    design: Design,
    /// What each pair carries in the solver's answer, Mbit/s (fractional
    /// where the model is relaxed).
    pub(super) pair_mbps: Vec<f64>,
    pub(super) objective: f64,
    pub(super) f: f64,
}

/// The model's variables: `x[p][c]` per pair and choice, `F` (the network
/// capacity maximised at a budget), and per pair whose radios today
/// exceed the parallel limit the binary that allows them.
struct Variables {
    xs: Vec<Vec<Variable>>,
    f: Option<Variable>,
    zs: Vec<Option<Variable>>,
}

impl Variables {
    /// With `relaxed`, the counts and binaries are continuous (the LP
    /// relaxation, whose optimum bounds the MILP's).
    fn new(problem: &Problem, stage: Stage, relaxed: bool, vars: &mut ProblemVariables) -> Self {
        let m = problem.net.constraints.max_parallel;
        let xs: Vec<Vec<Variable>> = problem
            .choices
            .iter()
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        let x = variable().min(0.0).max(f64::from(c.max_count));
                        vars.add(if relaxed { x } else { x.integer() })
                    })
                    .collect()
            })
            .collect();
        let f = match stage {
            Stage::MaxCapacity { bound, .. } => {
                Some(vars.add(variable().min(0.0).max(bound.max(0.0))))
            }
            Stage::MinCost(_) => None,
        };
        let zs: Vec<Option<Variable>> = (0..problem.choices.len())
            .map(|p| {
                (kept_today(problem, p) > m).then(|| {
                    vars.add(if relaxed {
                        variable().min(0.0).max(1.0)
                    } else {
                        variable().binary()
                    })
                })
            })
            .collect();
        Variables { xs, f, zs }
    }
}

pub(super) fn solve_once(
    problem: &Problem,
    pool: &Pool,
    stage: Stage,
    warm: Option<&Design>,
    time_limit: f64,
    relaxed: bool,
) -> Result<Solved, SolveFail> {
    let mut vars = ProblemVariables::new();
    let v = Variables::new(problem, stage, relaxed, &mut vars);
    let mut cost = Expression::with_capacity(v.xs.iter().map(Vec::len).sum());
    for (cs, x) in problem.choices.iter().zip(&v.xs) {
        for (c, &var) in cs.iter().zip(x) {
            cost.add_mul(c.price, var);
        }
    }
    let mut model = match (stage, v.f) {
        (Stage::MaxCapacity { .. }, Some(f)) => vars.maximise(f),
        _ => vars.minimise(cost.clone()),
    }
    .using(microlp)
    .with_time_limit(time_limit);
    add_pair_limits(&mut model, problem, &v);
    add_site_limits(&mut model, problem, &v.xs);
    if let Stage::MaxCapacity { budget, .. } = stage {
        model.add_constraint(cost.clone().leq(budget + EPS_COST * budget.max(1.0)));
    }
    add_cuts(&mut model, problem, pool, stage, &v);
    if let Some(d) = warm {
        model = model.with_initial_solution(warm_start(problem, &v, d));
    }
    let solution = solve(model, time_limit)?;
    // Per pair and choice: the solver's count (fractional if relaxed),
    // rounded and clamped into the design.
    let mut counts = Vec::with_capacity(v.xs.len());
    let mut pair_mbps = Vec::with_capacity(v.xs.len());
    for (cs, x) in problem.choices.iter().zip(&v.xs) {
        let values: Vec<f64> = x
            .iter()
            .map(|&var| solution.value(var))
            .map(|k| if k.is_finite() { k.max(0.0) } else { 0.0 })
            .collect();
        counts.push(
            cs.iter()
                .zip(&values)
                .map(|(c, k)| k.round().min(f64::from(c.max_count)) as u32)
                .collect(),
        );
        pair_mbps.push(
            cs.iter()
                .zip(&values)
                .map(|(c, k)| c.capacity_mbps * k)
                .sum(),
        );
    }
    let design = Design { counts };
    let objective = match v.f {
        Some(f) => solution.value(f),
        None => cost.eval_with(&solution),
    };
    Ok(Solved {
        f: v.f.map_or(0.0, |f| solution.value(f)),
        design,
        pair_mbps,
        objective,
    })
}

/// Radios per pair: at most the parallel limit, or, where today's pair
/// carries more, either at most that many or no new model.
fn add_pair_limits(model: &mut MicroLpProblem, problem: &Problem, v: &Variables) {
    let m = problem.net.constraints.max_parallel;
    for (p, (cs, x)) in problem.choices.iter().zip(&v.xs).enumerate() {
        let mut all = Expression::with_capacity(x.len());
        let mut new = Expression::with_capacity(x.len());
        for (c, &var) in cs.iter().zip(x) {
            all.add_mul(1.0, var);
            if matches!(c.equipment, Equipment::Model(_)) {
                new.add_mul(1.0, var);
            }
        }
        match v.zs[p] {
            None => {
                model.add_constraint(all.leq(f64::from(m)));
            }
            Some(z) => {
                // z = 1: at most m radios; z = 0: no new model (today's
                // radios, more than m, may stay).
                let kept = f64::from(kept_today(problem, p));
                let mut new_z = new;
                new_z.add_mul(-f64::from(m), z);
                model.add_constraint(new_z.leq(0.0));
                let mut all_z = all;
                all_z.add_mul(kept - f64::from(m), z);
                model.add_constraint(all_z.leq(kept));
            }
        }
    }
}

/// Radios per site, spectrum per site and antenna direction.
fn add_site_limits(model: &mut MicroLpProblem, problem: &Problem, xs: &[Vec<Variable>]) {
    for s in 0..problem.net.sites.len() {
        if let Some(limit) = problem.net.max_links(s) {
            let mut e = Expression::default();
            for &(p, _) in &problem.sharing[s] {
                for &var in &xs[p] {
                    e.add_mul(1.0, var);
                }
            }
            model.add_constraint(e.leq(f64::from(limit)));
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
                for (c, &var) in problem.choices[q].iter().zip(&xs[q]) {
                    e.add_mul(c.band_share, var);
                }
            }
            model.add_constraint(e.leq(1.0 + 1e-9));
        }
    }
}

/// The capacity cuts of the pool (and `F` below every network cut).
fn add_cuts(
    model: &mut MicroLpProblem,
    problem: &Problem,
    pool: &Pool,
    stage: Stage,
    v: &Variables,
) {
    for row in &pool.rows {
        let mut e = Expression::default();
        for &p in &row.pairs {
            for (c, &var) in problem.choices[p].iter().zip(&v.xs[p]) {
                e.add_mul(c.capacity_mbps, var);
            }
        }
        let need = match stage {
            Stage::MinCost(t) if row.network => row.edge_need.max(t),
            _ => row.edge_need,
        };
        if need > EPS_MBPS {
            model.add_constraint(e.clone().geq(need - EPS_MBPS));
        }
        if let (Stage::MaxCapacity { .. }, Some(f), true) = (stage, v.f, row.network) {
            let mut e = e;
            e.add_mul(-1.0, f);
            model.add_constraint(e.geq(0.0));
        }
    }
}

/// A design as the solver's starting point.
fn warm_start(problem: &Problem, v: &Variables, d: &Design) -> Vec<(Variable, f64)> {
    let mut start: Vec<(Variable, f64)> = Vec::new();
    for (x, ns) in v.xs.iter().zip(&d.counts) {
        for (&var, &k) in x.iter().zip(ns) {
            start.push((var, f64::from(k)));
        }
    }
    for (p, z) in v.zs.iter().enumerate() {
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
    if let Some(f) = v.f {
        start.push((f, problem.network_cut(d).value_mbps));
    }
    start
}

/// Runs the solver (a panic in it is an error, not a crash); only a
/// proven optimum is an answer.
fn solve(model: MicroLpProblem, time_limit: f64) -> Result<MicroLpSolution, SolveFail> {
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
    Ok(solution)
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
    let label = match stage {
        Stage::MinCost(_) => "least cost",
        Stage::MaxCapacity { .. } => "most capacity",
    };
    for it in 1..=limits.max_iterations {
        let s = solve_once(problem, pool, stage, warm, limits.time_limit_s, false)?;
        let edges = problem.edges(&s.design);
        let (violated, added) = separate(problem, pool, stage, &edges, s.f, (EPS_MBPS, 1e-4));
        progress(&format!(
            "exact ({label}): iteration {it}, {} cuts, bound {}",
            pool.rows.len(),
            stage.show(s.objective)
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

pub(super) fn exact(
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
pub(super) fn exact_from(
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
