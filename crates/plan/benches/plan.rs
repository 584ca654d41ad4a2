//! Planning the synthetic 64-site WISP (scenarios/plan: 63 links, 25
//! line-of-sight candidates, 12 models) with `--method auto` (the
//! heuristic, then the MILP over HiGHS for at most 60 s per goal): each
//! goal of table 2 timed three times, with the spread between runs and
//! the answer's proven gap (issue 36: within 1% in under 60 s).
//! `cargo bench -p braid-plan --bench plan`.

use std::path::Path;
use std::time::Instant;

use braid_plan::design::Problem;
use braid_plan::optimize::{integer_variables, optimize, Goal, Method};
use braid_plan::paths::{add_links, edges_today, multiplicity, Addition};
use braid_plan::{network, prices};

const RUNS: usize = 3;
const TARGET_S: f64 = 60.0;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/plan");
    let text =
        std::fs::read_to_string(dir.join("wisp64.json")).expect("scenarios/plan/wisp64.json");
    let net = network::parse(&text).expect("the synthetic WISP parses");
    let table = std::fs::read_to_string(dir.join("prices.csv")).expect("scenarios/plan/prices.csv");
    let catalogue = prices::parse_csv(&table).expect("the price table parses");
    let problem = Problem::new(&net, &catalogue, false).expect("a problem");
    let today = problem.evaluate(&problem.today());
    let candidates = net.pairs.iter().filter(|p| !p.exists()).count();
    println!(
        "synthetic WISP: {} sites, {} links, {candidates} line-of-sight candidates, {} models, {} integer variables",
        net.sites.len(),
        net.pairs.len() - candidates,
        catalogue.models.len(),
        integer_variables(&problem)
    );
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
    let mut total = vec![0.0; RUNS];
    for (name, goal) in goals {
        let mut times = Vec::new();
        let mut answer = String::new();
        for slot in total.iter_mut() {
            let start = Instant::now();
            let plan = optimize(&problem, goal, Method::Auto, &mut |_| {}).expect("a plan");
            let t = start.elapsed().as_secs_f64();
            *slot += t;
            times.push(t);
            answer = format!(
                "{:.0} Mbit/s for ${:.0}, {}",
                plan.eval.network_mbps,
                plan.eval.cost,
                match plan.bound {
                    Some(_) if plan.exact => "proven optimal".to_string(),
                    Some(b) => format!("proven within {:.1}%", 100.0 * b.gap),
                    None => "no bound".to_string(),
                }
            );
        }
        report(name, &times, &answer);
    }
    report("both goals (table 2)", &total, "");
    let start = Instant::now();
    for n in [5, 10, 20] {
        for kind in [Addition::Parallel, Addition::Cross, Addition::Both] {
            let grown = add_links(&net, kind, n, 1).expect("links to add");
            std::hint::black_box(multiplicity(&net, &grown.edges, 1_000_000));
        }
    }
    std::hint::black_box(multiplicity(&net, &edges_today(&net), 1_000_000));
    println!(
        "path multiplicity (figure 8: today and 5, 10, 20 of each kind): {:.2} s",
        start.elapsed().as_secs_f64()
    );
}

fn report(name: &str, times: &[f64], answer: &str) {
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let lo = times.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = times.iter().copied().fold(0.0, f64::max);
    println!(
        "{name}: mean {mean:.1} s over {} runs (spread {lo:.1}-{hi:.1} s) against the target of under {TARGET_S:.0} s{}{answer}",
        times.len(),
        if answer.is_empty() { "" } else { "; " }
    );
}
