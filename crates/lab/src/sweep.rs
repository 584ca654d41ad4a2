//! `braid lab sweep`: lab scenarios run at several loss ratios and mean
//! loss bursts, under each congestion control asked for, several times
//! each, on the links each file makes lossy; per variant the TCP goodput
//! (the TCP flows' sum per run: mean and spread over the runs), Jain's
//! fairness index between the TCP flows (with two or more), the
//! retransmissions, the udp flows' loss and one-way delay, and the flows'
//! ingress daemon's packets on the wire per packet that entered, beside
//! two ceilings computed from the lossy links' rates: what an erasure
//! channel of that loss carries, and what the cheapest code braid has
//! that meets a 0.1% residual loss carries
//! (`braid_proto::redundancy::adaptive`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context};
use braid_proto::redundancy::adaptive::choose;
use braid_proto::redundancy::predict::{delivery_ratio, PathLoss};
use braid_sim::html;
use serde::Serialize;

use crate::report::VariantRun;
use crate::run::run_variant;
use crate::scenario::{Congestion, DaemonLog, FlowKind, Lab};

/// The residual loss the code ceiling is computed for.
const CEILING_TARGET: f64 = 0.999;

/// The mean, lowest and highest of some runs' figures.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Spread {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    fn of(xs: &[f64]) -> Option<Spread> {
        if xs.is_empty() {
            return None;
        }
        Some(Spread {
            mean: xs.iter().sum::<f64>() / xs.len() as f64,
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    fn show(s: &Option<Spread>, digits: usize) -> String {
        match s {
            Some(s) if s.min == s.max => format!("{:.*}", digits, s.mean),
            Some(s) => format!(
                "{:.*} ({:.*}-{:.*})",
                digits, s.mean, digits, s.min, digits, s.max
            ),
            None => "-".into(),
        }
    }
}

/// Jain's fairness index of `xs` (1: all equal; 1/n: one takes all);
/// `None` for fewer than two, or all zero.
pub fn jain(xs: &[f64]) -> Option<f64> {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    (xs.len() >= 2 && squares > 0.0).then(|| sum * sum / (xs.len() as f64 * squares))
}

/// One variant at one point, over the runs.
#[derive(Debug, Clone, Serialize)]
pub struct PointSummary {
    pub variant: String,
    pub runs: usize,
    /// The TCP flows' goodput, summed per run.
    pub goodput_mbps: Option<Spread>,
    /// Jain's index between the TCP flows' goodputs, per run (two TCP
    /// flows or more).
    pub fairness: Option<Spread>,
    pub retransmits: Option<Spread>,
    /// Share of the udp flows' packets lost (0-1).
    pub udp_loss: Option<Spread>,
    pub udp_p50_ms: Option<Spread>,
    pub udp_p99_ms: Option<Spread>,
    /// Packets the ingress daemon sent per packet that entered it.
    pub wire_per_packet: Option<Spread>,
}

/// One point (loss ratio, burst, congestion control): the ceilings and
/// every variant.
#[derive(Debug, Serialize)]
pub struct SweepPoint {
    pub loss: f64,
    pub burst: f64,
    /// Every TCP flow's congestion control at this point (`None`: each
    /// as the file says).
    pub congestion: Option<&'static str>,
    /// What the lossy links carry after loss (an erasure channel's
    /// capacity), Mbit/s; `None` when a lossy link has no rate.
    pub capacity_mbps: Option<f64>,
    /// The cheapest code meeting 0.1% residual loss, and the data rate it
    /// leaves of the lossy links' rate.
    pub code: String,
    pub code_ceiling_mbps: Option<f64>,
    pub variants: Vec<PointSummary>,
    /// Every run's full report.
    pub reports: Vec<Vec<VariantRun>>,
}

/// The lab with every link the file made lossy at `loss` and `burst`,
/// and every TCP flow under `congestion` (when given).
fn at(lab: &Lab, lossy: &[usize], loss: f64, burst: f64, congestion: Option<Congestion>) -> Lab {
    let mut l = lab.clone();
    for &j in lossy {
        l.links[j].loss = loss;
        l.links[j].burst = burst;
    }
    if let Some(c) = congestion {
        for f in &mut l.flows {
            if let FlowKind::Iperf(t) = &mut f.kind {
                if !t.udp {
                    t.congestion = c;
                }
            }
        }
    }
    l
}

/// The ceilings at `loss`: (capacity, code, code ceiling).
fn ceilings(
    lab: &Lab,
    lossy: &[usize],
    loss: f64,
    burst: f64,
) -> (Option<f64>, String, Option<f64>) {
    let rates: Option<Vec<f64>> = lossy
        .iter()
        .map(|&j| lab.links[j].rate_bps.map(|r| r as f64 / 1e6))
        .collect();
    let paths: Vec<PathLoss> = lossy
        .iter()
        .map(|&j| PathLoss {
            weight: lab.links[j]
                .rate_bps
                .map_or(1, |r| (r / 1000).max(1) as u32),
            loss,
            burst,
        })
        .collect();
    let code = choose(CEILING_TARGET, &paths);
    let (data, repair) = code.group_shape();
    let rate = if data > 0 {
        f64::from(data) / f64::from(data + repair)
    } else {
        1.0 / code.overhead(paths.len())
    };
    let delivered = delivery_ratio(&code, &paths);
    let total = rates.map(|r| r.iter().sum::<f64>());
    (
        total.map(|t| t * (1.0 - loss)),
        code.to_string(),
        total.map(|t| t * rate * delivered.min(1.0)),
    )
}

fn summarize(lab: &Lab, variant: &str, runs: &[Vec<VariantRun>]) -> PointSummary {
    let rows: Vec<&VariantRun> = runs
        .iter()
        .filter_map(|r| r.iter().find(|v| v.variant == variant))
        .collect();
    let flows_of = |kind: fn(&FlowKind) -> bool| -> Vec<usize> {
        lab.flows
            .iter()
            .enumerate()
            .filter(|(_, f)| kind(&f.kind))
            .map(|(i, _)| i)
            .collect()
    };
    // iperf3's flows (TCP, and its UDP tests: their goodput is what
    // arrived).
    let tcp = flows_of(|k| matches!(k, FlowKind::Iperf(_)));
    let udp = flows_of(|k| matches!(k, FlowKind::Probe));
    let collect = |flows: &[usize], f: &dyn Fn(&braid_sim::FlowResult) -> Option<f64>| {
        let xs: Vec<f64> = rows
            .iter()
            .flat_map(|v| flows.iter().filter_map(|&i| v.flows.get(i)).filter_map(f))
            .collect();
        Spread::of(&xs)
    };
    let wire: Vec<f64> = rows
        .iter()
        .filter_map(|v| {
            let io = v
                .daemons
                .iter()
                .map(|d| &d.body.stats.io)
                .max_by_key(|io| io.tun_rx)?;
            (io.tun_rx > 0).then(|| io.udp_tx as f64 / io.tun_rx as f64)
        })
        .collect();
    let per_run = |f: &dyn Fn(&[f64]) -> Option<f64>| {
        let xs: Vec<f64> = rows
            .iter()
            .filter_map(|v| {
                let g: Vec<f64> = tcp
                    .iter()
                    .filter_map(|&i| v.flows.get(i))
                    .map(|f| f.goodput_mbps)
                    .collect();
                (!g.is_empty()).then_some(g)
            })
            .filter_map(|g| f(&g))
            .collect();
        Spread::of(&xs)
    };
    PointSummary {
        variant: variant.to_string(),
        runs: rows.len(),
        goodput_mbps: per_run(&|g| Some(g.iter().sum())),
        fairness: per_run(&jain),
        retransmits: collect(&tcp, &|f| Some(f.retransmits as f64)),
        udp_loss: collect(&udp, &|f| {
            (f.sent > 0).then(|| f.lost as f64 / f.sent as f64)
        }),
        udp_p50_ms: collect(&udp, &|f| (f.sent > 0).then_some(f.delay_p50_ms)),
        udp_p99_ms: collect(&udp, &|f| (f.sent > 0).then_some(f.delay_p99_ms)),
        wire_per_packet: Spread::of(&wire),
    }
}

/// What one `braid lab sweep` runs over, besides its files.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    /// Loss ratios on each lossy link.
    pub losses: Vec<f64>,
    /// Mean loss bursts (1: independent loss).
    pub bursts: Vec<f64>,
    /// Congestion controls every TCP flow runs under in turn (empty:
    /// each flow's own).
    pub congestion: Vec<Congestion>,
    /// Runs per point.
    pub runs: usize,
}

impl SweepPlan {
    /// Refuses what cannot be run, naming the option.
    fn check(&self) -> anyhow::Result<()> {
        if self.losses.is_empty() || self.losses.iter().any(|l| !(0.0..1.0).contains(l)) {
            bail!("--loss: loss ratios in [0, 1), e.g. 0,0.05,0.1");
        }
        if self.bursts.is_empty() || self.bursts.iter().any(|b| b.is_nan() || *b < 1.0) {
            bail!("--burst: mean bursts of at least 1 packet, e.g. 1,5,20");
        }
        if self.runs == 0 || self.runs > 100 {
            bail!("--runs: 1 to 100");
        }
        Ok(())
    }

    /// Every congestion control to run under (`None`: the flows' own).
    fn congestion_points(&self) -> Vec<Option<Congestion>> {
        if self.congestion.is_empty() {
            vec![None]
        } else {
            self.congestion.iter().copied().map(Some).collect()
        }
    }
}

/// Runs the sweep of each file in turn; prints each table (or the JSON)
/// and writes sweep.json and sweep.html into `out` (into a directory per
/// file, named after its lab, when there are several).
pub fn sweep(
    scenarios: &[PathBuf],
    plan: &SweepPlan,
    json: bool,
    out: Option<&Path>,
    log: DaemonLog,
    keep: bool,
) -> anyhow::Result<ExitCode> {
    plan.check()?;
    if scenarios.is_empty() {
        bail!("name at least one lab file to sweep");
    }
    // Every file is checked before the first run.
    let mut labs = Vec::new();
    for scenario in scenarios {
        let mut lab = Lab::load(scenario)?;
        lab.log = log;
        lab.keep = keep;
        let lossy: Vec<usize> = (0..lab.links.len())
            .filter(|&j| lab.links[j].loss > 0.0)
            .collect();
        if lossy.is_empty() {
            bail!(
                "{}: no link has a loss to sweep (give the links to sweep a loss in the file)",
                scenario.display()
            );
        }
        crate::programs::check(&lab, &lab.variants, true, &[])?;
        labs.push((lab, lossy));
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let mut docs = Vec::new();
    for (lab, lossy) in &labs {
        let points = sweep_one(lab, lossy, plan, &stop)?;
        let doc = serde_json::json!({
            "lab": lab.name,
            "description": lab.description,
            "runs": plan.runs,
            "points": points,
        });
        if let Some(dir) = out {
            let dir = if labs.len() > 1 {
                dir.join(&lab.name)
            } else {
                dir.to_path_buf()
            };
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            std::fs::write(dir.join("sweep.json"), serde_json::to_string_pretty(&doc)?)?;
            std::fs::write(dir.join("sweep.html"), page(lab, plan.runs, &points))?;
            eprintln!("report: {}", dir.join("sweep.html").display());
        }
        if !json {
            println!("{}", text(lab, &points, labs.len() > 1));
        }
        docs.push(doc);
    }
    if json {
        let doc = if docs.len() == 1 {
            docs.remove(0)
        } else {
            serde_json::json!({ "sweeps": docs })
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    Ok(ExitCode::SUCCESS)
}

/// Every point of one lab's sweep.
fn sweep_one(
    lab: &Lab,
    lossy: &[usize],
    plan: &SweepPlan,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<Vec<SweepPoint>> {
    let mut grid = Vec::new();
    for congestion in plan.congestion_points() {
        for &burst in &plan.bursts {
            for &loss in &plan.losses {
                grid.push((congestion, burst, loss));
            }
        }
    }
    let total = grid.len() * plan.runs;
    let mut points = Vec::new();
    for (k, &(congestion, burst, loss)) in grid.iter().enumerate() {
        let point_lab = at(lab, lossy, loss, burst, congestion);
        let cc = congestion.map_or("as the file says", Congestion::as_str);
        let mut reports = Vec::new();
        for r in 0..plan.runs {
            eprintln!(
                "sweep {}: [{}/{total}] loss {loss}, burst {burst}, congestion {cc}, run {}",
                lab.name,
                k * plan.runs + r + 1,
                r + 1
            );
            let mut one = Vec::new();
            for v in &point_lab.variants {
                match run_variant(&point_lab, v, stop) {
                    Ok(run) => one.push(run),
                    Err(e) if stop.load(Ordering::Relaxed) => return Err(e),
                    // A variant that fails (say, iperf3 could not connect
                    // across a lossy link) is left out of this run.
                    Err(e) => eprintln!("  {}: failed: {e:#}", v.name),
                }
            }
            reports.push(one);
        }
        let (capacity, code, code_ceiling) = ceilings(lab, lossy, loss, burst);
        let variants = lab
            .variants
            .iter()
            .map(|v| summarize(&point_lab, &v.name, &reports))
            .collect();
        points.push(SweepPoint {
            loss,
            burst,
            congestion: congestion.map(Congestion::as_str),
            capacity_mbps: capacity,
            code,
            code_ceiling_mbps: code_ceiling,
            variants,
            reports,
        });
    }
    Ok(points)
}

/// One lab's sweep as text: the ceilings of each point, then the table.
fn text(lab: &Lab, points: &[SweepPoint], titled: bool) -> String {
    let mut text = String::new();
    if titled {
        text.push_str(&format!("## {} ({})\n", lab.name, lab.description));
    }
    let mut seen = Vec::new();
    for p in points {
        if seen.contains(&(p.loss.to_bits(), p.burst.to_bits())) {
            continue;
        }
        seen.push((p.loss.to_bits(), p.burst.to_bits()));
        text.push_str(&format!(
            "loss {} (burst {}): erasure-channel capacity {} Mbit/s; {} leaves {} Mbit/s\n",
            p.loss,
            p.burst,
            p.capacity_mbps.map_or("-".into(), |c| format!("{c:.2}")),
            p.code,
            p.code_ceiling_mbps
                .map_or("-".into(), |c| format!("{c:.2}"))
        ));
    }
    text.push_str(&markdown(points));
    text
}

const HEADER: [&str; 11] = [
    "loss",
    "burst",
    "TCP",
    "variant",
    "TCP goodput Mbit/s",
    "fairness (Jain)",
    "retransmissions",
    "UDP lost %",
    "UDP p50 ms",
    "UDP p99 ms",
    "wire packets per packet",
];

fn rows(points: &[SweepPoint]) -> Vec<Vec<String>> {
    points
        .iter()
        .flat_map(|p| {
            p.variants.iter().map(move |v| {
                let pct = v.udp_loss.map(|s| Spread {
                    mean: 100.0 * s.mean,
                    min: 100.0 * s.min,
                    max: 100.0 * s.max,
                });
                vec![
                    format!("{}", p.loss),
                    format!("{}", p.burst),
                    p.congestion.unwrap_or("(file)").to_string(),
                    v.variant.clone(),
                    Spread::show(&v.goodput_mbps, 2),
                    Spread::show(&v.fairness, 3),
                    Spread::show(&v.retransmits, 0),
                    Spread::show(&pct, 1),
                    Spread::show(&v.udp_p50_ms, 0),
                    Spread::show(&v.udp_p99_ms, 0),
                    Spread::show(&v.wire_per_packet, 2),
                ]
            })
        })
        .collect()
}

/// The table as Markdown (mean, then the runs' lowest-highest).
fn markdown(points: &[SweepPoint]) -> String {
    let mut s = format!(
        "| {} |\n|{}\n",
        HEADER.join(" | "),
        "---|".repeat(HEADER.len())
    );
    for r in rows(points) {
        s.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    s
}

fn page(lab: &Lab, runs: usize, points: &[SweepPoint]) -> String {
    // A chart per (burst, congestion control): goodput against loss.
    let mut groups: Vec<(f64, Option<&str>)> = Vec::new();
    for p in points {
        if !groups.contains(&(p.burst, p.congestion)) {
            groups.push((p.burst, p.congestion));
        }
    }
    let charts: Vec<String> = groups
        .iter()
        .map(|&(burst, cc)| {
            let group: Vec<&SweepPoint> = points
                .iter()
                .filter(|p| p.burst == burst && p.congestion == cc)
                .collect();
            chart(lab, &group, burst, cc)
        })
        .collect();
    let ceilings = html::table(
        &[
            "loss",
            "burst",
            "erasure-channel capacity Mbit/s",
            "cheapest code meeting 0.1%",
            "its data rate Mbit/s",
        ],
        &points
            .iter()
            .filter(|p| p.congestion == points[0].congestion)
            .map(|p| {
                vec![
                    format!("{}", p.loss),
                    format!("{}", p.burst),
                    p.capacity_mbps.map_or("-".into(), |c| format!("{c:.2}")),
                    p.code.clone(),
                    p.code_ceiling_mbps
                        .map_or("-".into(), |c| format!("{c:.2}")),
                ]
            })
            .collect::<Vec<_>>(),
    );
    let intro = format!(
        "{}; every lossy link at each loss ratio and mean burst, {runs} runs each. Real daemons and kernel TCP in network namespaces (braid lab sweep). Ceilings are before headers.",
        html::escape(&lab.description)
    );
    html::page(
        &format!("lab sweep {}", lab.name),
        &intro,
        &[
            format!("<h2>TCP goodput</h2>{}", charts.join("")),
            format!("<h2>Ceilings</h2>{ceilings}"),
            format!(
                "<h2>Every variant</h2>{}",
                html::table(&HEADER, &rows(points))
            ),
        ],
    )
}

/// The goodput chart of the points of one burst and congestion control,
/// with the ceilings.
fn chart(lab: &Lab, points: &[&SweepPoint], burst: f64, cc: Option<&str>) -> String {
    let x = |p: &SweepPoint| 100.0 * p.loss;
    let widest = points.iter().map(|p| x(p)).fold(1.0, f64::max);
    let mut series = Vec::new();
    for (ci, v) in lab.variants.iter().enumerate() {
        let pts: Vec<(f64, Spread)> = points
            .iter()
            .filter_map(|p| {
                let s = p
                    .variants
                    .iter()
                    .find(|s| s.variant == v.name)?
                    .goodput_mbps?;
                Some((x(p), s))
            })
            .collect();
        if pts.is_empty() {
            continue;
        }
        series.push(html::Series {
            label: v.name.clone(),
            points: pts.iter().map(|(x, s)| (*x, s.mean)).collect(),
            spread: pts.iter().map(|(_, s)| (s.min, s.max)).collect(),
            dashed: false,
            scatter: false,
            color: ci,
        });
    }
    let ceiling = |label: &str, f: fn(&SweepPoint) -> Option<f64>, color: usize| {
        let pts: Vec<(f64, f64)> = points.iter().filter_map(|p| Some((x(p), f(p)?))).collect();
        (!pts.is_empty()).then(|| html::Series {
            label: label.to_string(),
            points: pts,
            spread: Vec::new(),
            dashed: true,
            scatter: false,
            color,
        })
    };
    let n = lab.variants.len();
    series.extend(ceiling("erasure-channel capacity", |p| p.capacity_mbps, n));
    series.extend(ceiling(
        "best code at 0.1% residual",
        |p| p.code_ceiling_mbps,
        n + 1,
    ));
    let top = series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.1)
                .chain(s.spread.iter().map(|s| s.1))
        })
        .fold(1.0, f64::max);
    html::line_chart(
        &format!(
            "{}: TCP goodput vs loss on each lossy link (mean burst {burst}, {})",
            lab.name,
            cc.unwrap_or("each flow's congestion control")
        ),
        "loss on each lossy link (%)",
        "goodput (Mbit/s; mean, bar: lowest-highest run)",
        (0.0, widest),
        (0.0, top * 1.1),
        &series,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jains_index_is_one_for_equal_shares_and_one_nth_for_one_taking_all() {
        assert_eq!(jain(&[10.0, 10.0]), Some(1.0));
        assert_eq!(jain(&[20.0, 0.0]), Some(0.5));
        assert_eq!(
            jain(&[30.0, 0.0, 0.0]).map(|j| (j * 3.0).round()),
            Some(1.0)
        );
        let j = jain(&[30.0, 10.0]).unwrap();
        assert!((j - 0.8).abs() < 1e-9, "{j}");
        assert_eq!(jain(&[5.0]), None);
        assert_eq!(jain(&[0.0, 0.0]), None);
    }

    #[test]
    fn a_plan_that_cannot_run_names_its_option() {
        let good = SweepPlan {
            losses: vec![0.0, 0.1],
            bursts: vec![1.0, 5.0],
            congestion: vec![Congestion::Cubic, Congestion::Bbr],
            runs: 3,
        };
        assert!(good.check().is_ok());
        assert_eq!(good.congestion_points().len(), 2);
        let no_cc = SweepPlan {
            congestion: Vec::new(),
            ..good.clone()
        };
        assert_eq!(no_cc.congestion_points(), vec![None]);
        for (bad, option) in [
            (
                SweepPlan {
                    losses: vec![1.0],
                    ..good.clone()
                },
                "--loss",
            ),
            (
                SweepPlan {
                    bursts: vec![0.5],
                    ..good.clone()
                },
                "--burst",
            ),
            (
                SweepPlan {
                    bursts: Vec::new(),
                    ..good.clone()
                },
                "--burst",
            ),
            (SweepPlan { runs: 0, ..good }, "--runs"),
        ] {
            let e = bad.check().unwrap_err().to_string();
            assert!(e.starts_with(option), "{e}");
        }
    }

    #[test]
    fn a_point_sets_the_lossy_links_and_every_tcp_flows_congestion_control() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../scenarios/lab/unequal-paths.toml"),
        )
        .unwrap();
        let lab = Lab::parse("unequal-paths.toml", &text).unwrap();
        let lossy: Vec<usize> = (0..lab.links.len())
            .filter(|&j| lab.links[j].loss > 0.0)
            .collect();
        assert_eq!(lossy.len(), 2);
        let p = at(&lab, &lossy, 0.2, 5.0, Some(Congestion::Bbr));
        for (j, l) in p.links.iter().enumerate() {
            if lossy.contains(&j) {
                assert_eq!((l.loss, l.burst), (0.2, 5.0));
            } else {
                assert_eq!(l.loss, 0.0);
            }
        }
        let tcp = |lab: &Lab| -> Vec<Congestion> {
            lab.flows
                .iter()
                .filter_map(|f| match &f.kind {
                    FlowKind::Iperf(t) if !t.udp => Some(t.congestion),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(tcp(&p), vec![Congestion::Bbr]);
        assert_eq!(tcp(&lab), vec![Congestion::Cubic]);
        let same = at(&lab, &lossy, 0.0, 1.0, None);
        assert_eq!(
            tcp(&same),
            tcp(&lab),
            "no congestion control given: the file's"
        );
    }
}
