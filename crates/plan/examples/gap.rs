//! The heuristic's gap to the exact optimum, and the exact method's time
//! by instance size: `cargo run --release -p braid-plan --example gap`
//! (optionally `-- <instances per size> <sizes...>`, default 50 of 4, 6,
//! 8, 10 and 12 sites). Instances are `braid_plan::instances::small`
//! seeds 0.., priced new (not sunk). Goals: least cost at 1.0x and 1.5x
//! today's network min cut, most capacity at today's cost. Times are wall
//! clock per goal on this machine, one goal at a time; the exact method
//! (the MILP over HiGHS) runs with at most 10 s per goal and 60 rounds of
//! cuts per stage, and goals it does not prove optimal within that are
//! counted as unsolved.

use std::time::Instant;

use braid_plan::design::Problem;
use braid_plan::instances;
use braid_plan::optimize::{
    integer_variables, optimize, optimize_exact_within, ExactLimits, Goal, Method, OptimizeError,
    Plan,
};

/// The exact method's limits here: instances it does not solve within
/// them are counted as unsolved and left out of the gaps.
const LIMITS: ExactLimits = ExactLimits {
    time_limit_s: 10.0,
    max_iterations: 60,
};

#[derive(Default)]
struct Gaps {
    /// Percent gaps of the instances both methods solved.
    gaps: Vec<f64>,
    /// Goals no design meets (the exact method proved it).
    infeasible: usize,
    /// Feasible goals where the heuristic found nothing.
    gave_up: usize,
    /// Exact failures (limits), not counted in the gaps.
    unsolved: usize,
}

impl Gaps {
    fn cells(&self) -> String {
        if self.gaps.is_empty() {
            return format!("{:>6} {:>6} {:>6}", "-", "-", "-");
        }
        let n = self.gaps.len() as f64;
        let mean = self.gaps.iter().sum::<f64>() / n;
        let max = self.gaps.iter().copied().fold(0.0, f64::max);
        let optimal = self.gaps.iter().filter(|&&g| g <= 1e-9).count() as f64 / n * 100.0;
        format!("{mean:>5.1}% {max:>5.1}% {optimal:>5.0}%")
    }
}

#[derive(Default)]
struct Times {
    exact: Vec<f64>,
    heuristic: Vec<f64>,
}

fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        0.0
    } else {
        x.iter().sum::<f64>() / x.len() as f64
    }
}

fn max(x: &[f64]) -> f64 {
    x.iter().copied().fold(0.0, f64::max)
}

fn timed(pb: &Problem, goal: Goal, method: Method) -> (Result<Plan, OptimizeError>, f64) {
    let t = Instant::now();
    let r = match method {
        Method::Exact => optimize_exact_within(pb, goal, LIMITS, &mut |_| {}),
        _ => optimize(pb, goal, method, &mut |_| {}),
    };
    (r, t.elapsed().as_secs_f64())
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let per_size = args.first().copied().unwrap_or(50);
    let sizes: Vec<usize> = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        vec![4, 6, 8, 10, 12]
    };
    // Exact time by integer variables (buckets of 20).
    let mut by_vars: Vec<Vec<f64>> = vec![Vec::new(); 8];
    println!(
        "| sites | instances | int. vars (mean, max) | exact s/goal (mean, max) | heuristic s/goal (mean, max) \
         | cost gap at 1.0x: mean, max, optimal | cost gap at 1.5x: mean, max, optimal (n) | capacity gap at today's cost: mean, max, optimal |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for &sites in &sizes {
        let mut times = Times::default();
        let mut vars = Vec::new();
        let mut same = Gaps::default();
        let mut more = Gaps::default();
        let mut cap = Gaps::default();
        for seed in 0..per_size as u64 {
            let (net, cat) = instances::small(seed, sites);
            let Ok(pb) = Problem::new(&net, &cat, false) else {
                continue;
            };
            let v = integer_variables(&pb);
            vars.push(v as f64);
            let today = pb.evaluate(&pb.today());
            let goals = [
                Goal::MinCost {
                    network_mbps: today.network_mbps,
                },
                Goal::MinCost {
                    network_mbps: 1.5 * today.network_mbps,
                },
                Goal::MaxCapacity { budget: today.cost },
            ];
            for (i, goal) in goals.into_iter().enumerate() {
                let (e, te) = timed(&pb, goal, Method::Exact);
                let (h, th) = timed(&pb, goal, Method::Heuristic);
                times.exact.push(te);
                times.heuristic.push(th);
                by_vars[(v / 20).min(7)].push(te);
                let tally = match i {
                    0 => &mut same,
                    1 => &mut more,
                    _ => &mut cap,
                };
                match (e, h) {
                    (Ok(e), _) if !e.exact => {
                        eprintln!("{sites} sites, seed {seed}, {goal:?}: {}", e.note);
                        tally.unsolved += 1;
                    }
                    (Ok(e), Ok(h)) => {
                        let gap = match goal {
                            Goal::MinCost { .. } => {
                                100.0 * (h.eval.cost - e.eval.cost) / e.eval.cost.max(1e-9)
                            }
                            Goal::MaxCapacity { .. } => {
                                100.0 * (e.eval.network_mbps - h.eval.network_mbps)
                                    / e.eval.network_mbps.max(1e-9)
                            }
                        };
                        if gap > 20.0 {
                            eprintln!("{sites} sites, seed {seed}, {goal:?}: gap {gap:.1}%");
                        }
                        tally.gaps.push(if gap.abs() < 1e-7 { 0.0 } else { gap });
                    }
                    (Ok(_), Err(_)) => tally.gave_up += 1,
                    (Err(OptimizeError::Infeasible { .. }), _) => tally.infeasible += 1,
                    (Err(err), _) => {
                        eprintln!("{sites} sites, seed {seed}, {goal:?}: {err}");
                        tally.unsolved += 1;
                    }
                }
            }
        }
        let note = |g: &Gaps| {
            let mut extra = Vec::new();
            if g.infeasible > 0 {
                extra.push(format!("{} infeasible", g.infeasible));
            }
            if g.gave_up > 0 {
                extra.push(format!("heuristic gave up on {}", g.gave_up));
            }
            if g.unsolved > 0 {
                extra.push(format!("exact unsolved {}", g.unsolved));
            }
            if extra.is_empty() {
                String::new()
            } else {
                format!(" ({})", extra.join(", "))
            }
        };
        println!(
            "| {sites} | {} | {:.0}, {:.0} | {:.3}, {:.2} | {:.3}, {:.2} | {}{} | {}{} | {}{} |",
            vars.len(),
            mean(&vars),
            max(&vars),
            mean(&times.exact),
            max(&times.exact),
            mean(&times.heuristic),
            max(&times.heuristic),
            same.cells(),
            note(&same),
            more.cells(),
            note(&more),
            cap.cells(),
            note(&cap),
        );
    }
    println!();
    println!("| integer variables | goals | exact s/goal mean | median | max |");
    println!("|---|---|---|---|---|");
    for (i, t) in by_vars.iter_mut().enumerate() {
        if t.is_empty() {
            continue;
        }
        t.sort_by(f64::total_cmp);
        let label = if i == 7 {
            "140+".to_string()
        } else {
            format!("{}-{}", 20 * i, 20 * i + 19)
        };
        println!(
            "| {label} | {} | {:.3} | {:.3} | {:.2} |",
            t.len(),
            mean(t),
            t[t.len() / 2],
            max(t)
        );
    }
}
