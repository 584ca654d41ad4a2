//! `braid lab sweep`: a lab scenario run at several loss ratios, several
//! times each, on the links the file makes lossy; per variant the TCP
//! goodput (mean and spread over the runs), the retransmissions, the udp
//! flows' loss and one-way delay, and the flows' ingress daemon's packets
//! on the wire per packet that entered, beside two ceilings computed from
//! the lossy links' rates: what an erasure channel of that loss carries,
//! and what the cheapest code braid has that meets a 0.1% residual loss
//! carries (`braid_proto::redundancy::adaptive`).

use std::path::Path;
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
use crate::scenario::{DaemonLog, FlowKind, Lab};

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

/// One variant at one loss ratio, over the runs.
#[derive(Debug, Clone, Serialize)]
pub struct PointSummary {
    pub variant: String,
    pub runs: usize,
    pub goodput_mbps: Option<Spread>,
    pub retransmits: Option<Spread>,
    /// Share of the udp flows' packets lost (0-1).
    pub udp_loss: Option<Spread>,
    pub udp_p50_ms: Option<Spread>,
    pub udp_p99_ms: Option<Spread>,
    /// Packets the ingress daemon sent per packet that entered it.
    pub wire_per_packet: Option<Spread>,
}

/// One loss ratio: the ceilings and every variant.
#[derive(Debug, Serialize)]
pub struct SweepPoint {
    pub loss: f64,
    pub burst: f64,
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

/// The lab with every link the file made lossy at `loss` and `burst`.
fn at(lab: &Lab, lossy: &[usize], loss: f64, burst: f64) -> Lab {
    let mut l = lab.clone();
    for &j in lossy {
        l.links[j].loss = loss;
        l.links[j].burst = burst;
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
    PointSummary {
        variant: variant.to_string(),
        runs: rows.len(),
        goodput_mbps: collect(&tcp, &|f| Some(f.goodput_mbps)),
        retransmits: collect(&tcp, &|f| Some(f.retransmits as f64)),
        udp_loss: collect(&udp, &|f| {
            (f.sent > 0).then(|| f.lost as f64 / f.sent as f64)
        }),
        udp_p50_ms: collect(&udp, &|f| (f.sent > 0).then_some(f.delay_p50_ms)),
        udp_p99_ms: collect(&udp, &|f| (f.sent > 0).then_some(f.delay_p99_ms)),
        wire_per_packet: Spread::of(&wire),
    }
}

/// Runs the sweep; prints the table (or JSON) and writes sweep.json and
/// sweep.html into `out`.
#[allow(clippy::too_many_arguments)]
pub fn sweep(
    scenario: &Path,
    losses: &[f64],
    burst: f64,
    runs: usize,
    json: bool,
    out: Option<&Path>,
    log: DaemonLog,
    keep: bool,
) -> anyhow::Result<ExitCode> {
    let mut lab = Lab::load(scenario)?;
    lab.log = log;
    lab.keep = keep;
    if losses.is_empty() || losses.iter().any(|l| !(0.0..1.0).contains(l)) {
        bail!("--loss: loss ratios in [0, 1), e.g. 0,0.05,0.1");
    }
    if burst.is_nan() || burst < 1.0 {
        bail!("--burst: a mean burst of at least 1 packet");
    }
    if runs == 0 || runs > 100 {
        bail!("--runs: 1 to 100");
    }
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
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let total = losses.len() * runs;
    let mut points = Vec::new();
    for (k, &loss) in losses.iter().enumerate() {
        let point_lab = at(&lab, &lossy, loss, burst);
        let mut reports = Vec::new();
        for r in 0..runs {
            eprintln!(
                "sweep {}: [{}/{total}] loss {loss}, burst {burst}, run {}",
                lab.name,
                k * runs + r + 1,
                r + 1
            );
            let mut one = Vec::new();
            for v in &point_lab.variants {
                match run_variant(&point_lab, v, &stop) {
                    Ok(run) => one.push(run),
                    Err(e) if stop.load(Ordering::Relaxed) => return Err(e),
                    // A variant that fails (say, iperf3 could not connect
                    // across a lossy link) is left out of this run.
                    Err(e) => eprintln!("  {}: failed: {e:#}", v.name),
                }
            }
            reports.push(one);
        }
        let (capacity, code, code_ceiling) = ceilings(&lab, &lossy, loss, burst);
        let variants = lab
            .variants
            .iter()
            .map(|v| summarize(&lab, &v.name, &reports))
            .collect();
        points.push(SweepPoint {
            loss,
            burst,
            capacity_mbps: capacity,
            code,
            code_ceiling_mbps: code_ceiling,
            variants,
            reports,
        });
    }
    let doc = serde_json::json!({
        "lab": lab.name,
        "description": lab.description,
        "burst": burst,
        "runs": runs,
        "points": points,
    });
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("sweep.json"), serde_json::to_string_pretty(&doc)?)?;
        std::fs::write(dir.join("sweep.html"), page(&lab, burst, runs, &points))?;
        eprintln!("report: {}", dir.join("sweep.html").display());
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        let mut text = String::new();
        for p in &points {
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
        println!("{text}{}", markdown(&points));
    }
    Ok(ExitCode::SUCCESS)
}

const HEADER: [&str; 8] = [
    "loss",
    "variant",
    "TCP goodput Mbit/s",
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
                    v.variant.clone(),
                    Spread::show(&v.goodput_mbps, 2),
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

fn page(lab: &Lab, burst: f64, runs: usize, points: &[SweepPoint]) -> String {
    let x = |p: &SweepPoint| 100.0 * p.loss;
    let widest = points.iter().map(x).fold(1.0, f64::max);
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
    let chart = html::line_chart(
        &format!("{}: TCP goodput vs loss on each lossy link", lab.name),
        "loss on each lossy link (%)",
        "goodput (Mbit/s; mean, bar: lowest-highest run)",
        (0.0, widest),
        (0.0, top * 1.1),
        &series,
    );
    let ceilings = html::table(
        &[
            "loss",
            "erasure-channel capacity Mbit/s",
            "cheapest code meeting 0.1%",
            "its data rate Mbit/s",
        ],
        &points
            .iter()
            .map(|p| {
                vec![
                    format!("{}", p.loss),
                    p.capacity_mbps.map_or("-".into(), |c| format!("{c:.2}")),
                    p.code.clone(),
                    p.code_ceiling_mbps
                        .map_or("-".into(), |c| format!("{c:.2}")),
                ]
            })
            .collect::<Vec<_>>(),
    );
    let intro = format!(
        "{}; every lossy link at each loss ratio (mean burst {burst} packets), {runs} runs each. Real daemons and kernel TCP in network namespaces (braid lab sweep). Ceilings are before headers.",
        html::escape(&lab.description)
    );
    html::page(
        &format!("lab sweep {}", lab.name),
        &intro,
        &[
            format!("<h2>TCP goodput</h2>{chart}"),
            format!("<h2>Ceilings</h2>{ceilings}"),
            format!(
                "<h2>Every variant</h2>{}",
                html::table(&HEADER, &rows(points))
            ),
        ],
    )
}
