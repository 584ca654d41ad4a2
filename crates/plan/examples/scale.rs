//! The heuristic's gap and the MILP's at real sizes, against the MILP's
//! proven bound: `cargo run --release -p braid-plan --example scale --
//! <seconds per goal> <sites...>` (default 60 s; 20, 150 and 300 sites,
//! `braid_plan::instances::small` seed 1, priced new; `64` means the
//! shipped synthetic WISP, scenarios/plan/wisp64.json). Goals: least cost
//! at today's network min cut, most capacity at today's cost. For each it
//! prints the heuristic's answer and time, the MILP's (from the
//! heuristic's design, within the time limit, its time including that
//! heuristic run), the MILP's best bound, and both gaps to it: no design
//! beats the bound, so each gap is at least how far that answer is from
//! the best (issue 36, docs/planning.md).

use std::path::Path;
use std::time::Instant;

use braid_plan::design::Problem;
use braid_plan::optimize::{
    integer_variables, optimize, optimize_exact_within, ExactLimits, Goal, Method, Plan,
    EXACT_MAX_ITERATIONS,
};
use braid_plan::{instances, network, prices};

fn main() {
    let args: Vec<f64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let limit = args.first().copied().unwrap_or(60.0);
    let sizes: Vec<usize> = if args.len() > 1 {
        args[1..].iter().map(|&s| s as usize).collect()
    } else {
        vec![20, 150, 300]
    };
    let limits = ExactLimits {
        time_limit_s: limit,
        max_iterations: EXACT_MAX_ITERATIONS,
    };
    println!("| sites | int. vars | goal | heuristic (s) | MILP within {limit} s (s) | MILP's bound | heuristic's gap | MILP's gap |");
    println!("|---|---|---|---|---|---|---|---|");
    for sites in sizes {
        let (net, cat) = if sites == 64 {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/plan");
            let text = std::fs::read_to_string(dir.join("wisp64.json")).expect("wisp64.json");
            let table = std::fs::read_to_string(dir.join("prices.csv")).expect("prices.csv");
            (
                network::parse(&text).expect("the synthetic WISP parses"),
                prices::parse_csv(&table).expect("the price table parses"),
            )
        } else {
            instances::small(1, sites)
        };
        let pb = Problem::new(&net, &cat, false).expect("a problem");
        let today = pb.evaluate(&pb.today());
        let goals = [
            (
                "least cost at today's capacity",
                Goal::MinCost {
                    network_mbps: today.network_mbps,
                },
            ),
            (
                "most capacity at today's cost",
                Goal::MaxCapacity { budget: today.cost },
            ),
        ];
        for (name, goal) in goals {
            let t = Instant::now();
            let h = optimize(&pb, goal, Method::Heuristic, &mut |_| {});
            let th = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let e = optimize_exact_within(&pb, goal, limits, &mut |l| {
                eprintln!("{sites} sites, {name}: {l}")
            });
            let te = t.elapsed().as_secs_f64();
            let show = |p: &Plan| match goal {
                Goal::MinCost { .. } => format!("${:.0}", p.eval.cost),
                Goal::MaxCapacity { .. } => format!("{:.0} Mbit/s", p.eval.network_mbps),
            };
            let gap = |p: &Plan, bound: f64| match goal {
                Goal::MinCost { .. } => 100.0 * (p.eval.cost - bound) / p.eval.cost.max(1e-9),
                Goal::MaxCapacity { .. } => 100.0 * (bound - p.eval.network_mbps) / bound.max(1e-9),
            };
            match (&h, &e) {
                (Ok(h), Ok(e)) => {
                    let bound = e.bound.map(|b| b.value);
                    let cell = |p: &Plan| match bound {
                        Some(b) => format!("{:.1}%", gap(p, b).max(0.0)),
                        None => "-".into(),
                    };
                    println!(
                        "| {sites} | {} | {name} | {} in {th:.1} | {} in {te:.1}{} | {} | {} | {} |",
                        integer_variables(&pb),
                        show(h),
                        show(e),
                        if e.exact { " (optimal)" } else { "" },
                        bound.map_or("-".into(), |b| match goal {
                            Goal::MinCost { .. } => format!("${b:.0}"),
                            Goal::MaxCapacity { .. } => format!("{b:.0} Mbit/s"),
                        }),
                        cell(h),
                        cell(e),
                    );
                }
                _ => println!(
                    "| {sites} | {} | {name} | {:?} | {:?} | - | - | - |",
                    integer_variables(&pb),
                    h.as_ref().map(show).map_err(|e| e.to_string()),
                    e.as_ref().map(show).map_err(|e| e.to_string()),
                ),
            }
        }
    }
}
