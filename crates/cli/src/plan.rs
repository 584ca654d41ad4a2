//! `braid plan`: reads an operator's network and price table, runs the
//! planning analyses and optimisations (braid-plan), simulates a rain
//! fade on today's and the proposed networks, and writes the report, the
//! proposed topologies and the scenarios. Progress goes to stderr.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use braid_plan::design::{Design, Evaluation, Problem};
use braid_plan::export::{fade, fade_scenario, topology_json, Fade};
use braid_plan::fit::fit_prices;
use braid_plan::optimize::{
    optimize, optimize_exact_within, BoundSource, ExactLimits, Goal, Method, Plan,
    EXACT_MAX_ITERATIONS,
};
use braid_plan::paths::{add_links, edges_today, multiplicity, Addition};
use braid_plan::report::{self, changes, FadeRow, Growth, Report};
use braid_plan::{network, prices};
use braid_sim::Scenario;
use clap::{Args, ValueEnum};
use serde_json::json;

#[derive(Args)]
pub struct PlanArgs {
    /// The network: a NetJSON NetworkGraph with site roles, link capacities
    /// and distances, and line-of-sight pairs (docs/planning.md).
    file: PathBuf,
    /// The price table: CSV with model, capacity_mbps, price (both ends),
    /// max_distance_km and optionally channel_mhz.
    #[arg(long, value_name = "PRICES.csv")]
    prices: PathBuf,
    /// Plan the least cost whose network min cut is at least this, Mbit/s.
    /// Without it or --budget, both are planned: at today's capacity and
    /// at today's cost.
    #[arg(
        long,
        value_name = "MBPS",
        conflicts_with = "budget",
        allow_negative_numbers = true
    )]
    target_capacity: Option<f64>,
    /// Plan the most capacity costing at most this.
    #[arg(long, value_name = "DOLLARS", allow_negative_numbers = true)]
    budget: Option<f64>,
    /// Where the report, the proposed topologies and the scenarios go.
    #[arg(long, default_value = "out/plan", value_name = "DIR")]
    out: PathBuf,
    /// How to optimise: auto (the MILP over HiGHS from the heuristic's
    /// design, stopped after 60 s per goal with its proven gap), exact (the
    /// same, 600 s per goal) or heuristic (the paper's method, with the LP
    /// relaxation's bound).
    #[arg(long, value_enum, default_value_t = MethodArg::Auto)]
    method: MethodArg,
    /// Seconds the MILP may take per goal (overrides the method's limit;
    /// not with --method heuristic). It stops there with its best design
    /// and the proven gap.
    #[arg(long, value_name = "SECONDS")]
    time_limit: Option<f64>,
    /// Today's radios are already paid for: keeping one costs nothing and
    /// the budget is what new radios cost (needs --target-capacity or
    /// --budget).
    #[arg(long)]
    sunk: bool,
    /// Links added at random for the path-multiplicity charts (each of
    /// parallel, cross, and both).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "5,10,20",
        value_name = "N,N,..."
    )]
    additions: Vec<usize>,
    /// Seed of those random additions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Runs per mode in the rain-fade simulation, 0 to 20 (0: no
    /// simulation).
    #[arg(long, default_value_t = 2, value_name = "RUNS")]
    fade_runs: u32,
}

#[derive(Clone, Copy, ValueEnum)]
enum MethodArg {
    Auto,
    Exact,
    Heuristic,
}

/// Paths counted per edge site at most (the count stops there).
const PATH_CAP: u64 = 1_000_000;

fn step(started: Instant, what: &str) {
    eprintln!("plan: [{:5.1} s] {what}", started.elapsed().as_secs_f64());
}

pub fn run(args: PlanArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let text = braid_conf::read_text(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let net = network::parse(&text).with_context(|| args.file.display().to_string())?;
    let price_text = braid_conf::read_text(&args.prices)
        .with_context(|| format!("cannot read {}", args.prices.display()))?;
    let catalogue =
        prices::parse_csv(&price_text).with_context(|| args.prices.display().to_string())?;
    check_args(&args)?;
    check_reach(&args, &net, &catalogue)?;
    let problem = Problem::new(&net, &catalogue, args.sunk)
        .with_context(|| args.file.display().to_string())?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;

    step(started, "min cuts and paths today");
    let today_design = problem.today();
    let today = problem.evaluate(&today_design);
    let today_paths = multiplicity(&net, &edges_today(&net), PATH_CAP);
    let growth = path_growth(&args, &net, started);
    let (least_cost, most_capacity) = plan_designs(&args, &problem, &today, started)?;

    // The topologies, for braid sim and for planning again.
    let mut topologies: Vec<(&str, &Design)> = vec![("today", &today_design)];
    if let Some((_, p)) = &least_cost {
        topologies.push(("least-cost", &p.design));
    }
    if let Some((_, p)) = &most_capacity {
        topologies.push(("most-capacity", &p.design));
    }
    let designs: Vec<&Design> = topologies.iter().map(|(_, d)| *d).collect();
    let the_fade = fade(&problem, &designs);
    write_topologies(&args, &problem, &topologies, the_fade.as_ref())?;
    let fade_rows = match &the_fade {
        Some(_) if args.fade_runs > 0 => Some(simulate_fade(
            &args.out,
            &topologies,
            args.fade_runs,
            started,
        )?),
        Some(_) => None,
        None => {
            step(
                started,
                "no rain fade: no link of today's network is in every design compared",
            );
            None
        }
    };
    let written = topologies.len();
    let faded = the_fade.is_some();
    drop(topologies);

    let fit = fit_prices(&catalogue).map_err(|e| e.to_string());

    let r = Report {
        title: title(&args.file),
        problem: &problem,
        today,
        today_paths,
        growth: growth.lines,
        growth_skipped: growth.skipped,
        cross_from_line_of_sight: growth.cross_from_line_of_sight,
        path_cap: PATH_CAP,
        fit,
        least_cost,
        most_capacity,
        fade: the_fade.zip(fade_rows).map(|(f, (columns, rows))| {
            let pair = &net.pairs[f.pair];
            (
                format!("{}-{}", net.sites[pair.a].id, net.sites[pair.b].id),
                columns,
                rows,
            )
        }),
    };
    step(started, "writing the report");
    write(&args.out, "report.html", &report::html(&r))?;
    write(&args.out, "summary.json", &summary_json(&r))?;
    print!("{}", report::text(&r));
    println!(
        "wrote {}: report.html, summary.json, {written} topologies{}",
        args.out.display(),
        if faded {
            " and their fade scenarios"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// The numbers on the command line, each within what braid plans for.
fn check_args(args: &PlanArgs) -> Result<()> {
    if let Some(t) = args.target_capacity {
        if !(t.is_finite() && t > 0.0 && t <= 1e9) {
            bail!("--target-capacity {t}: a capacity in Mbit/s above 0 and at most 1,000,000,000");
        }
    }
    if let Some(b) = args.budget {
        if !(b.is_finite() && (0.0..=1e12).contains(&b)) {
            bail!("--budget {b}: an amount from 0 to 1,000,000,000,000");
        }
    }
    if args.fade_runs > 20 {
        bail!("--fade-runs {}: at most 20 runs per mode", args.fade_runs);
    }
    if let Some(t) = args.time_limit {
        if !(t.is_finite() && t > 0.0 && t <= 86_400.0) {
            bail!("--time-limit {t}: seconds per goal, more than 0 and at most 86400");
        }
        if matches!(args.method, MethodArg::Heuristic) {
            bail!("--time-limit limits the MILP; --method heuristic runs none");
        }
    }
    if args.sunk && args.target_capacity.is_none() && args.budget.is_none() {
        bail!("--sunk needs --target-capacity or --budget: keeping today's network costs nothing, so there is no default to compare with");
    }
    if let Some(&n) = args.additions.iter().find(|&&n| n == 0 || n > 1000) {
        bail!("--additions {n}: each number of links to add is from 1 to 1000");
    }
    Ok(())
}

/// A link longer than any model reaches can only be kept as it is: say so
/// before planning around it.
fn check_reach(
    args: &PlanArgs,
    net: &network::Network,
    catalogue: &prices::Catalogue,
) -> Result<()> {
    let reach = catalogue.longest_reach_m();
    if let Some(p) = net
        .pairs
        .iter()
        .position(|p| p.distance_m > reach && !p.exists())
    {
        let pair = &net.pairs[p];
        bail!(
            "{}: line of sight {}-{} is {:.1} km, longer than any model in {} reaches ({:.1} km)",
            args.file.display(),
            net.sites[pair.a].id,
            net.sites[pair.b].id,
            pair.distance_m / 1000.0,
            args.prices.display(),
            reach / 1000.0
        );
    }
    Ok(())
}

/// Path multiplicity after adding links at random: the lines of the
/// charts, the additions skipped and why, and whether every cross link
/// came from a line-of-sight pair.
struct PathGrowth {
    lines: Vec<Growth>,
    skipped: Vec<String>,
    cross_from_line_of_sight: bool,
}

/// Each of `--additions` links added as parallel, cross, and both.
fn path_growth(args: &PlanArgs, net: &network::Network, started: Instant) -> PathGrowth {
    let mut growth = PathGrowth {
        lines: Vec::new(),
        skipped: Vec::new(),
        cross_from_line_of_sight: true,
    };
    for &n in &args.additions {
        for kind in [Addition::Parallel, Addition::Cross, Addition::Both] {
            step(
                started,
                &format!("paths with {n} {} links added", kind_word(kind)),
            );
            // A small network may have fewer free pairs than asked for:
            // that chart goes without the line, and says so.
            let grown = match add_links(net, kind, n, args.seed) {
                Ok(g) => g,
                Err(e) => {
                    step(started, &format!("  skipped: {e}"));
                    growth.skipped.push(format!("{n} {}: {e}", kind_word(kind)));
                    continue;
                }
            };
            if kind != Addition::Parallel {
                growth.cross_from_line_of_sight &= grown.cross_from_line_of_sight;
            }
            growth.lines.push(Growth {
                kind,
                added: n,
                per_edge: multiplicity(net, &grown.edges, PATH_CAP),
            });
        }
    }
    growth
}

/// A plan and what it was asked for (the target capacity or the budget).
type Planned = Option<(f64, Plan)>;

/// A plan at a target capacity and a plan at a budget, each when asked
/// for (both by default: today's capacity and today's cost).
fn plan_designs(
    args: &PlanArgs,
    problem: &Problem,
    today: &Evaluation,
    started: Instant,
) -> Result<(Planned, Planned)> {
    let method = match args.method {
        MethodArg::Auto => Method::Auto,
        MethodArg::Exact => Method::Exact,
        MethodArg::Heuristic => Method::Heuristic,
    };
    let (target, budget) = match (args.target_capacity, args.budget) {
        (None, None) => (Some(today.network_mbps), Some(today.cost)),
        other => other,
    };
    let solve = |goal: Goal, what: &str| -> Result<Plan> {
        step(started, what);
        let mut progress = |line: &str| step(started, &format!("  {line}"));
        Ok(match args.time_limit {
            Some(time_limit_s) => optimize_exact_within(
                problem,
                goal,
                ExactLimits {
                    time_limit_s,
                    max_iterations: EXACT_MAX_ITERATIONS,
                },
                &mut progress,
            )?,
            None => optimize(problem, goal, method, &mut progress)?,
        })
    };
    let least_cost = match target {
        Some(t) => Some((
            t,
            solve(
                Goal::MinCost { network_mbps: t },
                &format!("least cost at {} Mbit/s", braid_plan::units::thousands(t)),
            )?,
        )),
        None => None,
    };
    let most_capacity = match budget {
        Some(b) => Some((
            b,
            solve(
                Goal::MaxCapacity { budget: b },
                &format!("most capacity for ${}", braid_plan::units::thousands(b)),
            )?,
        )),
        None => None,
    };
    Ok((least_cost, most_capacity))
}

/// Writes each design as NetJSON and, when there is a fade, its rain-fade
/// scenario.
fn write_topologies(
    args: &PlanArgs,
    problem: &Problem,
    topologies: &[(&str, &Design)],
    the_fade: Option<&Fade>,
) -> Result<()> {
    for (name, design) in topologies {
        let file = format!("{name}.json");
        write(
            &args.out,
            &file,
            &topology_json(problem, design, &format!("{} ({name})", title(&args.file))),
        )?;
        if let Some(f) = the_fade {
            write(
                &args.out,
                &format!("fade-{name}.toml"),
                &fade_scenario(
                    problem.net,
                    f,
                    &file,
                    &format!("fade-{name}"),
                    args.fade_runs.max(1),
                ),
            )?;
        }
    }
    Ok(())
}

fn kind_word(kind: Addition) -> &'static str {
    match kind {
        Addition::Parallel => "parallel",
        Addition::Cross => "cross",
        Addition::Both => "parallel and cross",
    }
}

fn title(file: &Path) -> String {
    file.file_name().map_or_else(
        || file.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    )
}

fn write(dir: &Path, name: &str, text: &str) -> Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Runs each topology's fade scenario; one row per flow and mode with the
/// delivered fraction on each topology.
fn simulate_fade(
    out: &Path,
    topologies: &[(&str, &Design)],
    runs: u32,
    started: Instant,
) -> Result<(Vec<String>, Vec<FadeRow>)> {
    let mut rows: Vec<FadeRow> = Vec::new();
    let columns: Vec<String> = topologies.iter().map(|(n, _)| n.to_string()).collect();
    for (i, (name, _)) in topologies.iter().enumerate() {
        step(
            started,
            &format!(
                "rain fade in the simulator: {name} ({} runs per mode)",
                runs
            ),
        );
        let file = format!("fade-{name}.toml");
        let scenario = Scenario::load(&out.join(&file)).with_context(|| {
            format!(
                "{}: the fade scenario braid plan wrote",
                out.join(&file).display()
            )
        })?;
        let report = crate::sim::execute(&scenario, scenario.seed, runs)?;
        for v in &report.variants {
            for f in &v.summary {
                let delivered = 1.0 - f.loss_ratio;
                match rows
                    .iter_mut()
                    .find(|r| r.flow == f.name && r.mode == f.mode)
                {
                    Some(r) => r.delivered[i] = delivered,
                    None => {
                        let mut d = vec![f64::NAN; topologies.len()];
                        d[i] = delivered;
                        rows.push(FadeRow {
                            flow: f.name.clone(),
                            mode: f.mode.clone(),
                            delivered: d,
                        });
                    }
                }
            }
        }
    }
    Ok((columns, rows))
}

fn summary_json(r: &Report) -> String {
    let plan = |p: &Option<(f64, Plan)>, key: &str| {
        p.as_ref().map(|(x, plan)| {
            json!({
                key: x,
                "network_mbps": plan.eval.network_mbps,
                "cost": plan.eval.cost,
                "radios": plan.eval.radios,
                "exact": plan.exact,
                "note": plan.note,
                // The proven bound: least cost, dollars no design meeting
                // the goal goes below; most capacity, Mbit/s none within
                // the budget goes above; and the plan's gap to it.
                "bound": plan.bound.map(|b| json!({
                    "value": b.value,
                    "gap": b.gap,
                    "source": match b.source {
                        BoundSource::Milp => "milp",
                        BoundSource::Relaxation => "lp_relaxation",
                        BoundSource::RelaxationCutShort => "lp_relaxation_cut_short",
                    },
                })),
                "per_edge_mbps": plan.eval.per_edge_mbps,
                "changes": changes(r.problem, &plan.design).iter().map(|c| json!({
                    "pair": c.pair,
                    "distance_m": c.distance_m,
                    "action": c.action,
                    "today": c.today,
                    "proposed": c.proposed,
                    "capacity_mbps": [c.capacity_mbps.0, c.capacity_mbps.1],
                    "buy": c.buy,
                })).collect::<Vec<_>>(),
            })
        })
    };
    let edges: Vec<&str> = r
        .today_paths
        .iter()
        .map(|e| r.problem.net.sites[e.site].id.as_str())
        .collect();
    let doc = json!({
        "version": 1,
        "network": r.title,
        "sunk": r.problem.sunk,
        "today": {
            "network_mbps": r.today.network_mbps,
            "cost": r.today.cost,
            "radios": r.today.radios,
            "edge_sites": edges,
            "per_edge_mbps": r.today.per_edge_mbps,
        },
        "least_cost": plan(&r.least_cost, "target_mbps"),
        "most_capacity": plan(&r.most_capacity, "budget"),
        "fade": r.fade.as_ref().map(|(pair, columns, rows)| json!({
            "pair": pair,
            "topologies": columns,
            "flows": rows.iter().map(|f| json!({"flow": f.flow, "mode": f.mode, "delivered": f.delivered})).collect::<Vec<_>>(),
        })),
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
