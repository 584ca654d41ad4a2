//! The heuristic method: min-cut bridging, then pruning.
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

use crate::design::{Design, Problem};
use crate::units::{mbps, money};

use super::bounds::{below_budget, cost_floor, most_cut, out_of_reach};
use super::goal::{Goal, OptimizeError, EPS_COST, EPS_MBPS};
use search::{Search, FLOW_BUDGET, MAX_ROUNDS};

mod pair;
mod search;

/// Least-cost runs the capacity bisection at a budget makes at most.
const BISECTIONS: usize = 6;
/// Max-flow computations the bisection may spend.
const BISECTION_FLOWS: u64 = 1_000_000;

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

/// A design the MILP stopped on, short of some cut it had not met yet,
/// made whole: the heuristic's repair adds what the network or an edge
/// site lacks at `target`, then its improvement rounds prune. None when
/// the repair gets stuck.
pub(super) fn polish(problem: &Problem, from: &Design, target: f64) -> Option<Design> {
    let mut s = Search::new(problem);
    s.flow_limit = s.flows + FLOW_BUDGET;
    let mut d = from.clone();
    if !s.repair(&mut d, target, f64::INFINITY, None) {
        return None;
    }
    for _ in 1..=MAX_ROUNDS {
        let a = s.prune(&mut d, target);
        let b = s.rebuild(&mut d);
        if !(a || b) || s.flows > s.flow_limit {
            break;
        }
    }
    problem.feasible(&d, target).then_some(d)
}

pub(super) fn heuristic(
    problem: &Problem,
    goal: Goal,
    progress: &mut dyn FnMut(&str),
) -> Result<(Design, String), OptimizeError> {
    let mut s = Search::new(problem);
    match goal {
        Goal::MinCost { network_mbps } => at_capacity(&mut s, network_mbps, progress),
        Goal::MaxCapacity { budget } => at_budget(&mut s, budget, progress),
    }
}

/// The least cost at a network capacity.
fn at_capacity(
    s: &mut Search,
    network_mbps: f64,
    progress: &mut dyn FnMut(&str),
) -> Result<(Design, String), OptimizeError> {
    let problem = s.pb;
    if let Some(e) = out_of_reach(problem, network_mbps) {
        return Err(e);
    }
    match least_cost(s, network_mbps, true, progress) {
        Some(d) => Ok((
            d,
            format!(
                "heuristic (min-cut bridging, then pruning): {} units added, {} improvements, {} max flows",
                s.added, s.improved, s.flows
            ),
        )),
        None => {
            let today = rebuilt_today(s);
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

/// The best design found so far at a budget: its network capacity, its
/// cost, and the design.
type Best = Option<(f64, f64, Design)>;

/// True when a design of capacity `cap` and cost `cost` beats `best`:
/// more capacity, or as much for less.
fn beats(best: &Best, cap: f64, cost: f64) -> bool {
    best.as_ref().is_none_or(|(bc, bcost, _)| {
        cap > bc + EPS_MBPS || (cap + EPS_MBPS >= *bc && cost + EPS_COST < *bcost)
    })
}

/// The most network capacity at a budget (then the least cost at it).
fn at_budget(
    s: &mut Search,
    budget: f64,
    progress: &mut dyn FnMut(&str),
) -> Result<(Design, String), OptimizeError> {
    let problem = s.pb;
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
    let cheapest = least_cost(s, 0.0, true, progress);
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
    let today = rebuilt_today(s);
    if s.cost(&today) <= budget + EPS_COST {
        starts.push(today);
    }
    let mut best = grow_from(s, starts, budget, progress);
    bisect(s, &mut best, budget, progress);
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

/// From each start, adds capacity bridging the network min cut while the
/// budget allows, pruning at the capacity reached to free money and
/// adding again; the better result wins (capacity, then cost).
fn grow_from(
    s: &mut Search,
    starts: Vec<Design>,
    budget: f64,
    progress: &mut dyn FnMut(&str),
) -> Best {
    let mut best: Best = None;
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
        if beats(&best, cap, cost) {
            best = Some((cap, cost, d));
        }
    }
    best
}

/// Bisects on the capacity between the best found and the bound with the
/// least-cost heuristic: a higher target whose least cost fits the
/// budget wins.
fn bisect(s: &mut Search, best: &mut Best, budget: f64, progress: &mut dyn FnMut(&str)) {
    let Some((found, _, _)) = best else {
        return;
    };
    let mut lo = *found;
    let mut hi = most_cut(s.pb);
    let step = s.deltas.first().copied().unwrap_or(1.0).max(1.0) / 2.0;
    let spent = s.flows;
    for probe in 1..=BISECTIONS {
        if hi - lo < step || s.flows - spent > BISECTION_FLOWS {
            break;
        }
        let mid = 0.5 * (lo + hi);
        let got = least_cost(s, mid, false, &mut |_| {});
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
                if beats(best, cap, cost) {
                    *best = Some((cap, cost, d));
                }
            }
            _ => hi = mid,
        }
    }
}
