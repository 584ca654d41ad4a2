//! `braid demo`: the README's main job. Runs the default experiments in
//! the simulator, prints the headline results next to what the papers
//! measured, and writes a self-contained HTML report.
//!
//! The scenarios are files in `scenarios/` that anyone can edit; when that
//! directory is absent (the binary run elsewhere), the copies built into
//! the binary are used.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant as WallClock;

use anyhow::{Context, Result};
use braid_sim::html::{
    bar_chart, delivery_chart, escape, goodput_chart, line_chart, page, table, Bar, Reference,
    Series,
};
use braid_sim::{Scenario, ScenarioReport};
use clap::Args;

use crate::sim::{csv, execute};

#[derive(Args)]
pub struct DemoArgs {
    /// Directory of the scenario files.
    #[arg(long, default_value = "scenarios", value_name = "DIR")]
    scenarios: PathBuf,
    /// Where the report goes.
    #[arg(long, default_value = "out/demo", value_name = "DIR")]
    out: PathBuf,
}

/// Built-in copies of the demo's scenarios (and the topology one uses).
const BUILT_IN: &[(&str, &str)] = &[
    (
        "wispr-5.3-single-path.toml",
        include_str!("../../../scenarios/wispr-5.3-single-path.toml"),
    ),
    (
        "wispr-5.3-braid.toml",
        include_str!("../../../scenarios/wispr-5.3-braid.toml"),
    ),
    (
        "loss-sweep.toml",
        include_str!("../../../scenarios/loss-sweep.toml"),
    ),
    (
        "failure.toml",
        include_str!("../../../scenarios/failure.toml"),
    ),
    (
        "rain-fade.toml",
        include_str!("../../../scenarios/rain-fade.toml"),
    ),
    (
        "tcp-goodput.toml",
        include_str!("../../../scenarios/tcp-goodput.toml"),
    ),
    (
        "srcrr-citymesh.toml",
        include_str!("../../../scenarios/srcrr-citymesh.toml"),
    ),
    (
        "handoff.toml",
        include_str!("../../../scenarios/handoff.toml"),
    ),
    (
        "topologies/wisp-backhaul.json",
        include_str!("../../../scenarios/topologies/wisp-backhaul.json"),
    ),
];

/// The scenario directory to use: `dir` if it holds the demo's scenarios,
/// else the built-in copies written under `out/scenarios` (so the report
/// sits beside the exact inputs it was made from).
fn scenario_dir(dir: &Path, out: &Path) -> Result<PathBuf> {
    if BUILT_IN.iter().all(|(name, _)| dir.join(name).exists()) {
        return Ok(dir.to_path_buf());
    }
    let copy = out.join("scenarios");
    for (name, text) in BUILT_IN {
        let path = copy.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    eprintln!(
        "braid demo: {} does not hold all the demo's scenarios; using the built-in copies, written to {}",
        dir.display(),
        copy.display()
    );
    Ok(copy)
}

fn load(dir: &Path, name: &str) -> Result<Scenario> {
    debug_assert!(
        BUILT_IN.iter().any(|(n, _)| *n == name),
        "{name} is run by the demo but has no built-in copy"
    );
    Ok(Scenario::load(&dir.join(name))?)
}

fn run(dir: &Path, name: &str, out: &Path) -> Result<ScenarioReport> {
    let s = load(dir, name)?;
    let report = execute(&s, s.seed, s.runs)?;
    let stem = name.trim_end_matches(".toml");
    std::fs::write(
        out.join(format!("{stem}.json")),
        serde_json::to_string_pretty(&report)?,
    )?;
    std::fs::write(out.join(format!("{stem}.csv")), csv(&report))?;
    Ok(report)
}

/// Per variant: mode, packets lost (first flow, mean over runs), and the
/// longest delivery gap.
fn loss_and_outage_rows(report: &ScenarioReport) -> Vec<Vec<String>> {
    report
        .variants
        .iter()
        .map(|v| {
            let f = &v.summary[0];
            vec![
                f.mode.clone(),
                format!("{:.1}", f.lost),
                format!("{:.2}", f.max_gap_ms / 1000.0),
            ]
        })
        .collect()
}

/// The median of the pairs' goodput in each run (each run is its own
/// placement of the nodes, so pairs are not averaged across runs), in
/// KB/s as SrcRR reports it; as a bar: the mean of the runs' medians with
/// their lowest and highest.
fn median_kbytes(v: &braid_sim::VariantReport) -> Bar {
    let medians: Vec<f64> = v
        .runs
        .iter()
        .map(|r| {
            let mut g: Vec<f64> = r.flows.iter().map(|f| f.goodput_mbps * 1e6 / 8e3).collect();
            g.sort_by(f64::total_cmp);
            match g.len() {
                0 => 0.0,
                n if n % 2 == 1 => g[n / 2],
                n => (g[n / 2 - 1] + g[n / 2]) / 2.0,
            }
        })
        .collect();
    let mean = medians.iter().sum::<f64>() / medians.len().max(1) as f64;
    let lo = medians.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = medians.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Bar {
        label: v.name.clone().unwrap_or_default(),
        value: mean,
        range: (medians.len() > 1).then_some((lo, hi)),
    }
}

/// The variants ranked by their figure, best first, as a sentence; the
/// factor between the best and the worst. Derived from the data, so the
/// text never claims an order the table does not show.
fn ranking(bars: &[Bar]) -> String {
    let mut sorted: Vec<&Bar> = bars.iter().collect();
    sorted.sort_by(|a, b| b.value.total_cmp(&a.value));
    let (Some(best), Some(worst)) = (sorted.first(), sorted.last()) else {
        return String::new();
    };
    let order = sorted
        .iter()
        .map(|b| format!("{} ({:.0} KB/s)", b.label, b.value))
        .collect::<Vec<_>>()
        .join(", then ");
    format!(
        "By median goodput: {order}. Best to worst: {}.",
        factor(best.value, worst.value)
    )
}

/// A "model limits" box: what the model behind an experiment leaves out.
fn limits(text: &str) -> String {
    format!(
        "<div class=\"limits\"><b>Model limits.</b> {}</div>",
        escape(text)
    )
}

/// `a / b` as a factor ("3.2x"), or why there is none.
fn factor(a: f64, b: f64) -> String {
    if b >= 0.05 {
        format!("{:.1}x", a / b)
    } else {
        format!("unbounded ({b:.1} KB/s below)")
    }
}

/// What each bar adds to the one before it (a cumulative ablation, as
/// SrcRR's figure 6), and the last over the first, from the data.
fn steps(bars: &[Bar]) -> String {
    let (Some(first), Some(last)) = (bars.first(), bars.last()) else {
        return String::new();
    };
    let each = bars
        .windows(2)
        .map(|w| {
            let change = if w[1].value > w[0].value * 1.1 {
                "raises"
            } else if w[1].value < w[0].value / 1.1 {
                "lowers"
            } else {
                "keeps"
            };
            format!(
                "{} {change} the median ({:.0} to {:.0} KB/s)",
                w[1].label, w[0].value, w[1].value
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    format!(
        "{each}. The last over the first: {} (SrcRR measured 5.5x, 20 to 110 KB/s).",
        factor(last.value, first.value)
    )
}

/// Packets lost in each second against scenario time, one line per
/// variant (its first flow, mean over the runs): what a failure or a fade
/// does over time.
fn lost_over_time(report: &ScenarioReport, title: &str) -> String {
    let series: Vec<Series> = report
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let f = &v.summary[0];
            Series {
                label: v.name.clone().unwrap_or_else(|| f.mode.clone()),
                points: f
                    .lost_series
                    .iter()
                    .enumerate()
                    .map(|(t, &l)| (f.start_s + t as f64, l))
                    .collect(),
                dashed: false,
                scatter: false,
                color: i,
                spread: Vec::new(),
            }
        })
        .collect();
    let points = series.iter().flat_map(|s| s.points.iter());
    let (x_lo, x_hi, y_hi) = points.fold((f64::MAX, f64::MIN, 1.0f64), |(a, b, c), p| {
        (a.min(p.0), b.max(p.0), c.max(p.1))
    });
    if x_lo > x_hi {
        return String::new();
    }
    line_chart(
        title,
        "time (s)",
        "packets lost per second",
        (x_lo, x_hi),
        (0.0, y_hi),
        &series,
    )
}

fn pct(v: f64) -> String {
    format!("{:.2}%", v * 100.0)
}

/// WISPR section 5.3: one lossy, slow path versus disjoint paths.
fn wispr_5_3(dir: &Path, out: &Path) -> Result<Experiment> {
    let mut headlines: Vec<[String; 3]> = Vec::new();
    let single = run(dir, "wispr-5.3-single-path.toml", out)?;
    let braid = run(dir, "wispr-5.3-braid.toml", out)?;
    let (a, b) = (
        &single.variants[0].summary[0],
        &braid.variants[0].summary[0],
    );
    headlines.push([
        "WISPR 5.3: UDP over one path, 5% loss, 500 ms".into(),
        "26.6 of 500 lost, 530 ms".into(),
        format!("{:.1} of 500 lost, {:.0} ms", a.lost, a.delay_mean_ms),
    ]);
    headlines.push([
        "WISPR 5.3: over disjoint paths (braid mirror:3)".into(),
        "0 lost, 18 ms".into(),
        format!("{:.1} lost, {:.0} ms", b.lost, b.delay_mean_ms),
    ]);
    let section = format!(
        "<h2>1. WISPR section 5.3: one lossy, slow path versus disjoint paths</h2><p>{}</p>{}{}",
        escape("10 runs of 500 UDP packets (160 bytes every 20 ms). The baseline has only the impaired path; braid mirrors over it and two good disjoint paths."),
        table(
            &["", "packets lost (of 500)", "average delay", "p99 delay"],
            &[
                vec!["WISPR paper: one path".into(), "26.6".into(), "530 ms".into(), "-".into()],
                vec!["braid sim: one path".into(), format!("{:.1}", a.lost), format!("{:.1} ms", a.delay_mean_ms), format!("{:.1} ms", a.delay_p99_ms)],
                vec!["WISPR paper: WISPR over disjoint paths".into(), "0".into(), "18 ms".into(), "-".into()],
                vec![format!("braid sim: {}", b.mode), format!("{:.1}", b.lost), format!("{:.1} ms", b.delay_mean_ms), format!("{:.1} ms", b.delay_p99_ms)],
            ]
        ),
        limits("Loss is independent (Bernoulli) on the impaired path and none on the others; links are wired-like (fixed delay, no radio contention or rate changes); no TCP. WISPR measured on its testbed's real links.")
    );
    Ok(Experiment { headlines, section })
}

/// Delivered fraction against per-path loss, per mode.
fn loss_sweep(dir: &Path, out: &Path) -> Result<Experiment> {
    let mut headlines: Vec<[String; 3]> = Vec::new();
    let sweep = run(dir, "loss-sweep.toml", out)?;
    let mut modes: Vec<String> = Vec::new();
    for v in &sweep.variants {
        if let Some(m) = &v.mode {
            if !modes.contains(m) {
                modes.push(m.clone());
            }
        }
    }
    let mut over_rows = Vec::new();
    for m in &modes {
        let mut row = vec![m.clone()];
        for v in sweep.variants.iter().filter(|v| v.mode.as_ref() == Some(m)) {
            row.push(format!(
                "{} ({:.2}x)",
                pct(1.0 - v.summary[0].loss_ratio),
                v.summary[0].overhead
            ));
        }
        over_rows.push(row);
    }
    let losses: Vec<String> = sweep
        .variants
        .iter()
        .filter(|v| v.mode.as_ref() == modes.first())
        .map(|v| format!("{:.0}% loss", v.path_loss.unwrap_or(0.0) * 100.0))
        .collect();
    let mut header = vec!["mode"];
    header.extend(losses.iter().map(String::as_str));
    let at20: Vec<String> = sweep
        .variants
        .iter()
        .filter(|v| v.path_loss.is_some_and(|l| (l - 0.2).abs() < 1e-9))
        .map(|v| {
            format!(
                "{} {:.1}%",
                v.summary[0].mode,
                100.0 * (1.0 - v.summary[0].loss_ratio)
            )
        })
        .collect();
    headlines.push([
        "Loss sweep: delivered at 20% loss per path, 3 disjoint paths".into(),
        "WISPR 1 (mirror) stays usable at 15-20%".into(),
        at20.join(", "),
    ]);
    let section = format!(
        "<h2>2. Delivered fraction versus per-path loss</h2><p>{}</p>{}{}{}",
        escape("Three disjoint paths, every one losing the given fraction of packets (Bernoulli), 2 runs of 2000 packets per point. Solid: measured; dashed: the mode's formula for independent losses (the same formulas the adaptive mode decides by). Cells: delivered fraction (packets sent per data packet). With the same loss on every path, single and stripe coincide, and so do parity and parity-rotating; their lines lie on top of each other."),
        delivery_chart(&sweep).unwrap_or_default(),
        table(&header, &over_rows),
        limits("Every path loses the same fraction, independently of the past (bursty loss: braid sim scenarios/loss-proof-tcp.toml, [link] burst); traffic is far below the paths' capacity, so no queue drops; no radio.")
    );
    Ok(Experiment { headlines, section })
}

/// TCP goodput against per-path loss (WISPR figure 10).
fn tcp_goodput(dir: &Path, out: &Path) -> Result<Experiment> {
    let mut headlines: Vec<[String; 3]> = Vec::new();
    let tcp = run(dir, "tcp-goodput.toml", out)?;
    let goodput = |mode: &str, loss: f64| {
        tcp.variants
            .iter()
            .find(|v| {
                v.mode.as_deref() == Some(mode)
                    && v.path_loss.is_some_and(|l| (l - loss).abs() < 1e-9)
            })
            .map_or(0.0, |v| v.summary[0].goodput_mbps)
    };
    headlines.push([
        "TCP goodput at 10% loss per path (2 x 10 Mbit/s)".into(),
        "WISPR fig. 10: TCP collapses, WISPR 1 holds".into(),
        format!(
            "single {:.2}, stripe {:.2}, mirror:2 {:.2} Mbit/s",
            goodput("single", 0.1),
            goodput("stripe", 0.1),
            goodput("mirror:2", 0.1)
        ),
    ]);
    let mut rows = Vec::new();
    for m in ["single", "stripe", "mirror:2"] {
        let mut row = vec![m.to_string()];
        for l in [0.0, 0.05, 0.1, 0.15, 0.2] {
            row.push(format!("{:.2}", goodput(m, l)));
        }
        rows.push(row);
    }
    let section = format!(
        "<h2>3. TCP goodput versus per-path loss (the experiment of WISPR's figure 10)</h2><p>{}</p>{}{}{}",
        escape("Real TCP (smoltcp, CUBIC) at both hosts in simulated time, over two disjoint 10 Mbit/s paths whose first link loses the given fraction in each direction (data and ACKs), 2 runs of 20 s each. Absolute goodput under loss is lower than Linux would reach (smoltcp has no SACK); the comparison between modes is the point. WISPR gives its figure 10 as a chart without values; what it says of it: single-path TCP decays quickly as loss rises, MPTCP holds until 15-20%, and mirroring (WISPR 1) stays stable at high loss. The same comparison with real kernel TCP and Linux MPTCP is braid lab sweep scenarios/lab/loss-proof-tcp.toml (docs/performance.md)."),
        goodput_chart(&tcp).unwrap_or_default(),
        table(&["mode", "0%", "5%", "10%", "15%", "20%"], &rows),
        limits("TCP is smoltcp (CUBIC, no SACK-based recovery): under loss it reaches less than Linux, and far less under the coded modes (docs/performance.md compares it with kernel TCP in the lab); loss is independent; paths are wired-like rate limiters with a drop-tail queue.")
    );
    Ok(Experiment { headlines, section })
}

/// SrcRR on a city mesh: its mechanisms added one at a time.
fn srcrr(dir: &Path, out: &Path) -> Result<Experiment> {
    let mut headlines: Vec<[String; 3]> = Vec::new();
    let srcrr = run(dir, "srcrr-citymesh.toml", out)?;
    let bars: Vec<Bar> = srcrr.variants.iter().map(median_kbytes).collect();
    headlines.push([
        "SrcRR: median TCP over 14 pairs, 31-node city mesh".into(),
        "20 KB/s (DSR+ETX) to 110 KB/s (SrcRR)".into(),
        bars.iter()
            .map(|b| format!("{} {:.0}", b.label, b.value))
            .collect::<Vec<_>>()
            .join(", ")
            + " KB/s",
    ]);
    let rows: Vec<Vec<String>> = srcrr
        .variants
        .iter()
        .zip(&bars)
        .map(|(v, b)| {
            let runs = v.runs.len().max(1) as f64;
            let flows: Vec<&braid_sim::FlowResult> =
                v.runs.iter().flat_map(|r| r.flows.iter()).collect();
            let n = flows.len().max(1) as f64;
            vec![
                b.label.clone(),
                match b.range {
                    Some((lo, hi)) => format!("{:.1} ({lo:.1}-{hi:.1})", b.value),
                    None => format!("{:.1}", b.value),
                },
                format!(
                    "{:.1}",
                    flows.iter().map(|f| f.goodput_mbps * 125.0).sum::<f64>() / n
                ),
                format!(
                    "{:.0}",
                    flows
                        .iter()
                        .filter(|f| f.goodput_mbps * 125.0 < 1.0)
                        .count() as f64
                        / runs
                ),
                format!(
                    "{:.0}",
                    flows.iter().map(|f| f.retransmits as f64).sum::<f64>() / runs
                ),
            ]
        })
        .collect();
    let paper = [
        Reference {
            label: "SrcRR paper: DSR+ETX 20".into(),
            value: 20.0,
        },
        Reference {
            label: "full SrcRR 110".into(),
            value: 110.0,
        },
    ];
    let section = format!(
        "<h2>4. SrcRR: choosing routes on a city mesh of multi-rate radios</h2><p>{}</p>{}{}<p>{}</p>{}",
        escape(&format!("31 nodes placed at random ({} placements), radios at 1/2/5.5/11 Mbit/s whose loss grows with link length and rate, 7 link-layer retries, one transmitter per node (50-frame queue) on a shared medium, transient bursts (about 300 ms at 90% loss every 20 s per link). After 3 minutes of idle probing (as SrcRR did), 14 node pairs, one at a time, 15 s of bulk TCP each. The bars add SrcRR's mechanisms one at a time in the order of its section 4, as its figure 6 does: the baseline is DSR with ETX as SrcRR ran it (the Prism firmware's rate selection, a route error on the first link-layer failure, no damping, no re-ordering, 802.11's 8 attempts per frame); then IGNORE-FAIL, RATE-CTL (each node sends at the rate its big probes say is best), PERSISTENCE (40 hand-overs of a failed frame), DAMPING, REORDER, and ETT. Bars: the mean over placements of the median goodput of the 14 pairs, whiskers the lowest and highest placement; dashed lines: SrcRR's measured medians.", srcrr.variants.first().map_or(0, |v| v.runs.len()))),
        bar_chart("median TCP goodput over 14 pairs", "KB/s", &bars, &paper),
        table(
            &["variant", "median KB/s (placements' range)", "mean KB/s", "pairs under 1 KB/s (per placement)", "TCP retransmissions (per placement)"],
            &rows
        ),
        escape(&(steps(&bars) + " " + &ranking(&bars))),
        limits("No collisions or hidden terminals (carrier sense is perfect), so ETX's probe losses under load (SrcRR section 3.2) do not happen; loss per rate is a fixed curve of link length with shadowing, not measured CityMesh links; TCP is smoltcp, which does not recover by SACK, so every loss costs it more than Linux 2.4's TCP; a frame handed over again occupies the radio at once (no interleaving with the device's queue, so PERSISTENCE re-orders nothing here). docs/simulator.md \"SrcRR\" says what this reproduces of the paper and what not."),
    );
    Ok(Experiment { headlines, section })
}

/// A client moving between access points.
fn handoff(dir: &Path, out: &Path) -> Result<Experiment> {
    let mut headlines: Vec<[String; 3]> = Vec::new();
    let handoff = run(dir, "handoff.toml", out)?;
    let rows: Vec<Vec<String>> = handoff
        .variants
        .iter()
        .map(|v| {
            let (up, down, tcp) = (&v.summary[0], &v.summary[1], &v.summary[2]);
            vec![
                v.name.clone().unwrap_or_default(),
                format!("{:.1}", up.lost),
                format!("{:.1}", down.lost),
                format!("{:.1} ms", up.delay_p99_ms),
                format!("{:.1}", tcp.retransmits),
                format!("{:.2} Mbit/s", tcp.goodput_mbps),
            ]
        })
        .collect();
    headlines.push([
        "Handoff: client moves ap1 -> ap2 during VoIP + TCP upload".into(),
        "late binding: 26.3 -> 0-1 lost; 135 -> 8 ms; SMesh: no loss".into(),
        rows.iter()
            .map(|r| {
                format!(
                    "{}: {} VoIP lost up, {} down, {} TCP retx, p99 {}",
                    r[0], r[1], r[2], r[4], r[3]
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
    ]);
    let section = format!(
        "<h2>5. Handoff between access points</h2><p>{}</p>{}{}<p>{}</p>{}",
        escape("A client moves from ap1 to ap2 (in range of both from 25 s, leaves ap1 at 30 s) during a VoIP call (160 B / 20 ms each way) and a bulk TCP upload over 5 Mbit/s access links whose drivers hold 50 frames; 5 runs. In the first three variants the client runs braid (a laptop or a vehicle's router): early binding, late binding, and copies through both access points (mirror:2). In the last the client is unmodified (a plain IP stack): it sends through the access point it hears best, and the gateway's tree delivers every packet for it through each access point that serves it (SMesh, seed 000). The late-binding paper (figure 4) lost 26.3 packets on average with the 50-packet driver buffer and 0-1 with late binding, and delayed an urgent packet 135 ms behind bulk versus under 8 ms (figure 7); SMesh reports handoffs without loss toward the client."),
        lost_over_time(&handoff, "VoIP packets lost per second from the client (it moves at 25-30 s)"),
        table(&["", "VoIP up lost (of 2000)", "VoIP down lost (of 2000)", "VoIP up p99 delay", "TCP retransmissions", "TCP goodput"], &rows),
        escape("What the trees do and do not do: toward the unmodified client nothing is lost, as in SMesh; from it, what its own radio queue holds when its access point goes is lost, as with early binding, because an unmodified client has no binding point of its own. The real-kernel version of this comparison (plain Linux, braid single path, SMesh trees in user space and in the kernel) is scenarios/lab/smesh-roam.toml."),
        limits("The move is scripted (in range of both access points from 25 s, out of ap1's at 30 s), not a fading signal; access links are wired-like with a 50-frame driver queue and no contention between clients; the unmodified client is a plain IP stack whose access point choice follows the script.")
    );
    Ok(Experiment { headlines, section })
}

/// A link on the active path fails.
fn failure(dir: &Path, out: &Path) -> Result<Experiment> {
    let mut headlines: Vec<[String; 3]> = Vec::new();
    let failure = run(dir, "failure.toml", out)?;
    let rows = loss_and_outage_rows(&failure);
    headlines.push([
        "Failure of the active path's link".into(),
        "babeld 1.12 in braid's lab: 2.2-12.4 s outage (1 s and 4 s hellos; docs/performance.md)"
            .into(),
        rows.iter()
            .map(|r| format!("{}: {} lost, {} s outage", r[0], r[1], r[2]))
            .collect::<Vec<_>>()
            .join("; "),
    ]);
    let section = format!(
        "<h2>6. A link on the active path fails</h2><p>{}</p>{}{}{}",
        escape("VoIP (160 B / 20 ms) over two disjoint paths; the active path's first link dies at 40 s. Outage: the longest time between two packets delivered in a row."),
        lost_over_time(&failure, "VoIP packets lost per second (the link dies at 40 s)"),
        table(&["mode", "packets lost (of 1500)", "outage (longest gap, s)"], &rows),
        limits("The link dies at once and silently (no fade before it), so only missing probes tell; links are wired-like with fixed delay; one flow, so no congestion.")
    );
    Ok(Experiment { headlines, section })
}

/// Rain fade on the bundled WISP backhaul (NetJSON topology).
fn rain_fade(dir: &Path, out: &Path) -> Result<Experiment> {
    let mut headlines: Vec<[String; 3]> = Vec::new();
    let fade = run(dir, "rain-fade.toml", out)?;
    let rows = loss_and_outage_rows(&fade);
    headlines.push([
        "Rain fade on a backhaul link (0 -> 60% -> 0 loss)".into(),
        "WISPR: adapt to weather".into(),
        rows.iter()
            .map(|r| format!("{}: {} lost", r[0], r[1]))
            .collect::<Vec<_>>()
            .join("; "),
    ]);
    let section = format!(
        "<h2>Rain fade on the WISP backhaul</h2><p>{}</p>{}{}{}",
        escape("scenarios/topologies/wisp-backhaul.json; the church-clinic link's loss ramps from 0 to 60% and back over 30 s. VoIP (160 B / 20 ms, 2000 packets) from the gateway to the clinic, 3 runs."),
        lost_over_time(&fade, "VoIP packets lost per second through the fade"),
        table(&["mode", "packets lost (of 2000)", "outage (longest gap, s)"], &rows),
        limits("Rain is modelled as random (Bernoulli) loss rising and falling linearly; a real fade lowers the signal, so a radio also drops its bit-rate, which this model does not; no rate adaptation or queueing effects.")
    );
    Ok(Experiment { headlines, section })
}

/// One experiment's rows of the headline table and its section of the
/// report.
struct Experiment {
    headlines: Vec<[String; 3]>,
    section: String,
}

pub fn run_demo(args: DemoArgs) -> Result<ExitCode> {
    let started = WallClock::now();
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let dir = &scenario_dir(&args.scenarios, &args.out)?;
    let out = &args.out;
    let experiments = [
        wispr_5_3(dir, out)?,
        loss_sweep(dir, out)?,
        tcp_goodput(dir, out)?,
        srcrr(dir, out)?,
        handoff(dir, out)?,
        failure(dir, out)?,
        rain_fade(dir, out)?,
    ];
    let mut headline: Vec<[String; 3]> = Vec::new();
    let mut sections = Vec::new();
    for e in experiments {
        headline.extend(e.headlines);
        sections.push(e.section);
    }

    let report = page(
        "braid demo",
        &escape(&format!("Simulated with real braid nodes; every number comes from the scenario files in {}. Generated in {:.1} s.", dir.display(), started.elapsed().as_secs_f64())),
        &sections,
    );
    let html = args.out.join("report.html");
    std::fs::write(&html, report)?;

    let w0 = headline.iter().map(|r| r[0].len()).max().unwrap_or(0);
    let w1 = headline.iter().map(|r| r[1].len()).max().unwrap_or(0);
    println!(
        "{:w0$}  {:w1$}  braid (simulated)",
        "experiment", "paper / peer"
    );
    for r in &headline {
        println!("{:w0$}  {:w1$}  {}", r[0], r[1], r[2]);
    }
    println!(
        "\nreport: {} ({:.1} s)",
        html.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ranking_sentence_follows_the_figures() {
        let bars = vec![
            Bar::new("hop count", 24.0),
            Bar::new("ETT", 33.0),
            Bar::new("ETX", 21.0),
        ];
        let s = ranking(&bars);
        assert!(
            s.starts_with(
                "By median goodput: ETT (33 KB/s), then hop count (24 KB/s), then ETX (21 KB/s)."
            ),
            "{s}"
        );
        assert!(s.contains("Best to worst: 1.6x"), "{s}");
        assert_eq!(ranking(&[]), "");
    }

    #[test]
    fn the_ablation_sentence_says_what_each_step_did_from_the_figures() {
        let bars = vec![
            Bar::new("baseline", 0.0),
            Bar::new("+ A", 19.0),
            Bar::new("+ B", 15.0),
            Bar::new("+ C", 15.5),
        ];
        let s = steps(&bars);
        assert!(s.starts_with("+ A raises the median (0 to 19 KB/s); + B lowers the median (19 to 15 KB/s); + C keeps the median (15 to 16 KB/s)."), "{s}");
        assert!(
            s.contains("The last over the first: unbounded (0.0 KB/s below)"),
            "{s}"
        );
        let s = steps(&[Bar::new("a", 20.0), Bar::new("b", 110.0)]);
        assert!(s.contains("The last over the first: 5.5x"), "{s}");
    }

    #[test]
    fn without_the_scenario_directory_the_built_in_copies_are_written_and_load() {
        let out = std::env::temp_dir().join(format!("braid-demo-copies-{}", std::process::id()));
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        // The repository's directory holds them all: it is used as it is.
        assert_eq!(scenario_dir(&repo, &out).unwrap(), repo);
        assert!(!out.exists(), "nothing written");
        // Elsewhere the copies are written beside the report, byte for
        // byte the repository's files, and every scenario loads.
        let copy = scenario_dir(Path::new("/nonexistent"), &out).unwrap();
        assert_eq!(copy, out.join("scenarios"));
        for (name, text) in BUILT_IN {
            assert_eq!(&std::fs::read_to_string(copy.join(name)).unwrap(), text);
            assert_eq!(&std::fs::read_to_string(repo.join(name)).unwrap(), text);
            if name.ends_with(".toml") {
                load(&copy, name).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
        std::fs::remove_dir_all(&out).unwrap();
    }
}
