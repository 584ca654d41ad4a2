//! Writes one model of a stage (the MILP, or its LP relaxation) with
//! good_lp: the radio counts, the limits, the network's flow, the flows of
//! the edge sites that have one, and the pool's cuts; solves it with
//! HiGHS (`solver.rs`) and reads the answer back as a design.

use std::collections::HashMap;

use good_lp::solvers::highs::HighsProblem;
use good_lp::{highs, variable, Expression, ProblemVariables, SolverModel, Variable};

use crate::design::{Design, Equipment, Problem};

use super::bounds::kept_today;
use super::cuts::{Pool, Stage};
use super::goal::{OptimizeError, EPS_COST, EPS_MBPS};
use super::solver::{self, RunFail};

/// Integer variables of the exact model: one per pair and choice.
pub fn integer_variables(problem: &Problem) -> usize {
    problem.choices.iter().map(Vec::len).sum()
}

pub(super) enum SolveFail {
    Infeasible,
    /// The time ran out before the solver had an answer; the bound it
    /// had proven by then, if any.
    NoAnswer {
        bound: Option<f64>,
    },
    Error(OptimizeError),
}

pub(super) struct Solved {
    pub(super) design: Design,
    /// What each pair carries in the solver's answer, Mbit/s (fractional
    /// where the model is relaxed).
    pub(super) pair_mbps: Vec<f64>,
    pub(super) objective: f64,
    pub(super) f: f64,
    /// The solver's bound on this model's objective (no answer of the
    /// model beats it), if it has one.
    pub(super) bound: Option<f64>,
    /// Solved to optimality.
    pub(super) optimal: bool,
}

/// The model's variables: `x[p][c]` per pair and choice, `F` (the network
/// capacity maximised at a budget), and per pair whose radios today
/// exceed the parallel limit the binary that allows them.
struct Variables {
    xs: Vec<Vec<Variable>>,
    f: Option<Variable>,
    zs: Vec<Option<Variable>>,
    /// The network's flow, both ways on every pair (a → b, b → a): the
    /// capacity from the gateway to all edge sites at once, written as a
    /// flow so that no network cut needs finding (empty when the stage
    /// asks no network capacity).
    flows: Vec<(Variable, Variable)>,
    /// Per edge site, its own flow (its need, alone).
    site_flows: Vec<Vec<(Variable, Variable)>>,
    /// Each variable's column in the solver's model (good_lp hands the
    /// variables over in the order they were added).
    columns: HashMap<Variable, usize>,
}

impl Variables {
    /// With `relaxed`, the counts and binaries are continuous (the LP
    /// relaxation, whose optimum bounds the MILP's).
    fn new(
        problem: &Problem,
        pool: &Pool,
        stage: Stage,
        relaxed: bool,
        vars: &mut ProblemVariables,
    ) -> Self {
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
        let needs_network = match stage {
            Stage::MinCost(t) => t > EPS_MBPS,
            Stage::MaxCapacity { .. } => true,
        };
        let flows = if needs_network {
            (0..problem.net.pairs.len())
                .map(|_| (vars.add(variable().min(0.0)), vars.add(variable().min(0.0))))
                .collect()
        } else {
            Vec::new()
        };
        let site_flows = pool
            .flow_sites
            .iter()
            .map(|&on| {
                if on {
                    (0..problem.net.pairs.len())
                        .map(|_| (vars.add(variable().min(0.0)), vars.add(variable().min(0.0))))
                        .collect()
                } else {
                    Vec::new()
                }
            })
            .collect();
        let columns = vars
            .iter_variables_with_def()
            .enumerate()
            .map(|(i, (var, _))| (var, i))
            .collect();
        Variables {
            xs,
            f,
            zs,
            flows,
            site_flows,
            columns,
        }
    }
}

pub(super) fn solve_once(
    problem: &Problem,
    pool: &Pool,
    stage: Stage,
    time_limit: f64,
    relaxed: bool,
) -> Result<Solved, SolveFail> {
    let mut vars = ProblemVariables::new();
    let v = Variables::new(problem, pool, stage, relaxed, &mut vars);
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
    .using(highs);
    add_pair_limits(&mut model, problem, &v);
    add_site_limits(&mut model, problem, &v.xs);
    if let Stage::MaxCapacity { budget, .. } = stage {
        model.add_constraint(cost.clone().leq(budget + EPS_COST * budget.max(1.0)));
    }
    add_cuts(&mut model, problem, pool, stage, &v);
    add_network_flow(&mut model, problem, stage, &v);
    add_site_flows(&mut model, problem, &v);
    let outcome = match solver::run(model, time_limit) {
        Ok(o) => o,
        Err(RunFail::Infeasible) => return Err(SolveFail::Infeasible),
        Err(RunFail::NoAnswer { bound }) => return Err(SolveFail::NoAnswer { bound }),
        Err(RunFail::Error(message)) => {
            return Err(SolveFail::Error(OptimizeError::Solver { message }))
        }
    };
    let value = |var: Variable| {
        let k = v
            .columns
            .get(&var)
            .and_then(|&i| outcome.columns.get(i))
            .copied()
            .unwrap_or(0.0);
        if k.is_finite() {
            k
        } else {
            0.0
        }
    };
    // Per pair and choice: the solver's count (fractional if relaxed),
    // rounded and clamped into the design.
    let mut counts = Vec::with_capacity(v.xs.len());
    let mut pair_mbps = Vec::with_capacity(v.xs.len());
    for (cs, x) in problem.choices.iter().zip(&v.xs) {
        let values: Vec<f64> = x.iter().map(|&var| value(var).max(0.0)).collect();
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
    // The objective at the answer, recomputed: HiGHS's own figure must
    // agree (a check on the solver, which once reported an objective
    // its answer did not have when given a starting design).
    let objective = match v.f {
        Some(f) => value(f),
        None => {
            let values: HashMap<Variable, f64> =
                v.columns.keys().map(|&var| (var, value(var))).collect();
            cost.eval_with(&values)
        }
    };
    if (objective - outcome.objective).abs() > 1e-6 * objective.abs().max(1.0) {
        return Err(SolveFail::Error(OptimizeError::Solver {
            message: format!(
                "HiGHS reported an objective of {} for an answer worth {objective}",
                outcome.objective
            ),
        }));
    }
    Ok(Solved {
        f: v.f.map_or(0.0, value),
        design: Design { counts },
        pair_mbps,
        objective: outcome.objective,
        bound: outcome.bound,
        optimal: outcome.optimal,
    })
}

/// Radios per pair: at most the parallel limit, or, where today's pair
/// carries more, either at most that many or no new model.
fn add_pair_limits(model: &mut HighsProblem, problem: &Problem, v: &Variables) {
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
fn add_site_limits(model: &mut HighsProblem, problem: &Problem, xs: &[Vec<Variable>]) {
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

/// One flow's pairs (`flows`: a → b and b → a per pair) within each
/// pair's capacity; returns what flows into each site, net.
fn pair_flows(
    model: &mut HighsProblem,
    problem: &Problem,
    v: &Variables,
    flows: &[(Variable, Variable)],
) -> Vec<Expression> {
    let mut net_in: Vec<Expression> = vec![Expression::default(); problem.net.sites.len()];
    for (p, (&(ab, ba), (cs, x))) in flows
        .iter()
        .zip(problem.choices.iter().zip(&v.xs))
        .enumerate()
    {
        let (a, b) = (problem.net.pairs[p].a, problem.net.pairs[p].b);
        let mut within = Expression::default();
        within.add_mul(1.0, ab);
        within.add_mul(1.0, ba);
        for (c, &var) in cs.iter().zip(x) {
            within.add_mul(-c.capacity_mbps, var);
        }
        model.add_constraint(within.leq(0.0));
        net_in[b].add_mul(1.0, ab);
        net_in[b].add_mul(-1.0, ba);
        net_in[a].add_mul(1.0, ba);
        net_in[a].add_mul(-1.0, ab);
    }
    net_in
}

/// The network's flow: within each pair's capacity, conserved at every
/// site but the gateway and the edge sites, into every edge site, and in
/// all at least the stage's target (or `F`, at a budget).
fn add_network_flow(model: &mut HighsProblem, problem: &Problem, stage: Stage, v: &Variables) {
    if v.flows.is_empty() {
        return;
    }
    let net_in = pair_flows(model, problem, v, &v.flows);
    let edge_sites = problem.net.edges();
    let mut delivered = Expression::default();
    for (site, e) in net_in.into_iter().enumerate() {
        if site == problem.net.gateway {
            continue;
        }
        if edge_sites.contains(&site) {
            delivered += e.clone();
            model.add_constraint(e.geq(0.0));
        } else {
            model.add_constraint(e.eq(0.0));
        }
    }
    match (stage, v.f) {
        (Stage::MaxCapacity { .. }, Some(f)) => {
            delivered.add_mul(-1.0, f);
            model.add_constraint(delivered.geq(0.0));
        }
        (Stage::MinCost(t), _) => {
            model.add_constraint(delivered.geq(t - EPS_MBPS));
        }
        _ => {}
    }
}

/// Each edge site's own flow, for those that have one: its need, alone,
/// from the gateway.
fn add_site_flows(model: &mut HighsProblem, problem: &Problem, v: &Variables) {
    for (flows, &(k, need)) in v.site_flows.iter().zip(&problem.required) {
        if flows.is_empty() {
            continue;
        }
        let net_in = pair_flows(model, problem, v, flows);
        for (site, e) in net_in.into_iter().enumerate() {
            if site == problem.net.gateway {
                continue;
            }
            if site == k {
                model.add_constraint(e.geq(need - EPS_MBPS));
            } else {
                model.add_constraint(e.eq(0.0));
            }
        }
    }
}

/// The capacity cuts of the pool (and `F` below every network cut).
fn add_cuts(model: &mut HighsProblem, problem: &Problem, pool: &Pool, stage: Stage, v: &Variables) {
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
