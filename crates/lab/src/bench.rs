//! `braid lab bench`: the forwarding benchmark. Per variant, on the
//! scenario's first flow: the highest rate of UDP of each size delivered
//! with under 0.1% loss (doubling, then halving the interval between the
//! last pass and the first failure) and the CPU time per packet at that
//! rate, sent by the kernel's generator on its own CPU with the routers
//! measured on another (`generator`), or from a socket with the whole
//! machine measured; over several runs, mean and spread; one-way latency
//! at a light load, and
//! the seed's figures 4 and 5 (000: CPU load and loss against offered
//! rate of VoIP-sized, 160-byte packets), written as charts with `--out`.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};

use braid_sim::FlowResult;

use crate::flows::probe_flow;
use crate::ns::in_ns;
use crate::run::build;
use crate::scenario::{Lab, LabFlow};

/// Busy and total CPU time of the whole machine so far, in clock ticks.
fn cpu_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let v: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// What one trial measured.
#[derive(Debug, Clone, Copy)]
struct Trial {
    loss: f64,
    /// The machine's busy CPU time per delivered packet, microseconds.
    cpu_us: f64,
    /// The machine's CPU load while the packets flowed, 0-1 (all cores).
    load: f64,
}

/// `f`'s UDP probes from this process's socket, starting 50 ms from
/// now, stragglers waited for 300 ms.
fn probe(lab: &Lab, f: &LabFlow, stop: &AtomicBool) -> anyhow::Result<FlowResult> {
    probe_flow(
        lab,
        "",
        0,
        f,
        Instant::now() + Duration::from_millis(50),
        Duration::from_millis(300),
        stop,
    )
}

/// One benchmark trial: `rate` packets/s of `size` bytes for one second.
fn trial(
    lab: &Lab,
    flow: &LabFlow,
    size: usize,
    rate: u64,
    stop: &AtomicBool,
) -> anyhow::Result<Trial> {
    let f = LabFlow {
        count: rate as u32,
        interval: Duration::from_nanos(1_000_000_000 / rate),
        size,
        ..flow.clone()
    };
    let (busy0, total0) = cpu_ticks();
    let r = probe(lab, &f, stop)?;
    let (busy1, total1) = cpu_ticks();
    let tick_us = 1e6 / 100.0; // USER_HZ
    let cpu_us = (busy1 - busy0) as f64 * tick_us / r.delivered.max(1) as f64;
    let load = (busy1 - busy0) as f64 / (total1 - total0).max(1) as f64;
    Ok(Trial {
        loss: r.loss_ratio,
        cpu_us,
        load,
    })
}

/// The offered rates of the VoIP sweep (packets/s; a full-duplex 64 kbit/s
/// call of 160-byte packets is 100 of them through a router).
const VOIP_RATES: [u64; 10] = [
    1_000, 5_000, 10_000, 20_000, 40_000, 60_000, 80_000, 100_000, 120_000, 140_000,
];

/// One point of the VoIP sweep.
#[derive(Debug, serde::Serialize)]
struct VoipPoint {
    variant: String,
    offered_pps: u64,
    cpu_load: f64,
    loss: f64,
}

#[derive(Debug, serde::Serialize)]
struct BenchRow {
    variant: String,
    size: usize,
    /// Which run (0-based, `--runs`).
    run: usize,
    max_pps: u64,
    /// CPU time per delivered packet at `max_pps`: the routers' CPU's with
    /// the isolated sender, the whole machine's with the socket sender.
    cpu_us_per_packet: f64,
    /// CPU time per delivered packet at the plan's common rate (the same
    /// for every variant, so that batching at a higher rate does not make
    /// a faster variant look cheaper); `None` where the variant's highest
    /// rate is below it.
    cpu_us_at_common_rate: Option<f64>,
    /// Whether the isolated sender fell behind its schedule (skipped
    /// frames) in the failed trial just above `max_pps`: then the sender,
    /// not the routers, may have been the limit (`None` with the socket
    /// sender).
    sender_limited: Option<bool>,
}

/// How the benchmark sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// The kernel generator on its own CPU, the routers on another
    /// (crates/lab/src/generator.rs); the socket sender where it cannot be
    /// used, said so.
    Isolated,
    /// A UDP socket of this process: sender, routers and receiver share
    /// the machine's CPUs (the benchmark before issue 34).
    Socket,
}

/// What one max-rate trial saw: loss, CPU per packet, whether the
/// isolated sender fell behind.
type Probe<'a> = dyn FnMut(usize, u64) -> anyhow::Result<(f64, f64, Option<bool>)> + 'a;

/// The highest rate with under 0.1% loss: doubling from 5,000 packets/s,
/// then six halvings of the interval between the last pass and the
/// first failure (steps of 1,250 packets/s between 80,000 and 160,000).
fn max_rate(size: usize, trial: &mut Probe<'_>) -> anyhow::Result<(u64, f64, Option<bool>)> {
    let ok = |loss: f64| loss < 0.001;
    let (mut lo, mut lo_cpu) = (0u64, 0.0);
    // Whether the sender fell behind in the failed trial of the lowest
    // rate: the one that set the figure.
    let mut limited: Option<bool> = None;
    let mut run = |rate: u64| -> anyhow::Result<(bool, f64, Option<bool>)> {
        let (loss, cpu, lagged) = trial(size, rate)?;
        let lag = if lagged == Some(true) {
            ", the sender fell behind"
        } else {
            ""
        };
        eprintln!("  {size} B at {rate} pps: loss {:.3}%{lag}", loss * 100.0);
        Ok((ok(loss), cpu, lagged))
    };
    let mut rate = 5_000u64;
    let mut hi = loop {
        let (passed, cpu, lagged) = run(rate)?;
        if !passed || rate >= 1_600_000 {
            if !passed {
                limited = lagged;
            }
            break rate;
        }
        (lo, lo_cpu) = (rate, cpu);
        rate *= 2;
    };
    for _ in 0..6 {
        let mid = (lo + hi) / 2;
        if mid <= lo {
            break;
        }
        let (passed, cpu, lagged) = run(mid)?;
        if passed {
            (lo, lo_cpu) = (mid, cpu);
        } else {
            (hi, limited) = (mid, lagged);
        }
    }
    Ok((lo, lo_cpu, limited))
}

/// What `braid lab bench` is asked to do besides its scenario.
#[derive(Debug, Clone)]
pub struct BenchPlan {
    pub sender: Sender,
    /// UDP payload sizes of the max-rate search.
    pub sizes: Vec<usize>,
    /// Runs of the max-rate search per variant (the latency and VoIP
    /// sweeps run in the first only).
    pub runs: usize,
    /// The rate, packets/s, of the trial that measures every variant's
    /// CPU per packet alike.
    pub common_rate: u64,
}

/// `braid lab bench`: per variant, the forwarding rate, CPU per packet,
/// one-way latency between the first flow's hosts, and the VoIP sweep;
/// with `out`, report.json and report.html (tables, the sweep's charts)
/// written there.
pub fn bench(
    scenario: &Path,
    plan: &BenchPlan,
    json: bool,
    out: Option<&Path>,
    keep: bool,
) -> anyhow::Result<ExitCode> {
    let mut lab = Lab::load(scenario)?;
    lab.keep = keep;
    if plan.runs == 0 || plan.sizes.is_empty() {
        bail!("a benchmark needs one run or more and one size or more");
    }
    if let Some(bad) = plan.sizes.iter().find(|&&s| !(22..=1472).contains(&s)) {
        bail!("--sizes: {bad} bytes of UDP payload; between 22 (a 64-byte frame) and 1472 (a 1500-byte MTU)");
    }
    // Its probes are sent from this process; ethtool finishes the hosts'
    // checksums.
    crate::programs::check(&lab, &lab.variants, false, &crate::programs::bench_extra())?;
    let flow = lab
        .flows
        .first()
        .ok_or_else(|| {
            anyhow!("a benchmark needs a [[flow]]: its ends are the sender and the receiver")
        })?
        .clone();
    let isolated = match plan.sender {
        Sender::Socket => false,
        Sender::Isolated => match crate::generator::unavailable(&lab, &flow) {
            None => true,
            Some(why) => {
                eprintln!("lab {}: the isolated sender cannot be used here ({why}); sending from a socket, sender and routers sharing the CPUs", lab.name);
                false
            }
        },
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let mut rows = Vec::new();
    let mut latency = Vec::new();
    let mut voip = Vec::new();
    for run in 0..plan.runs {
        for v in &lab.variants {
            eprintln!(
                "lab {} [{}]: building (run {} of {})",
                lab.name,
                v.name,
                run + 1,
                plan.runs
            );
            let mut built = build(&lab, v)?;
            // The end hosts stand for LAN clients behind physical NICs, whose
            // packets reach a router with their checksums finished; a veth
            // leaves them to the device (to be finished by whoever reads the
            // bytes, which the kernel path does through its segmenter).
            for host in [flow.from, flow.to] {
                in_ns(&lab.end_ns(host), &["ethtool", "-K", "eth0", "tx", "off"])
                    .context("finishing the hosts' checksums (Debian package ethtool)")?;
            }
            if run == 0 {
                latency.push(light_latency(&lab, &flow, &v.name, &stop)?);
                voip.extend(voip_sweep(&lab, &flow, &v.name, &stop)?);
            }
            // Last: the isolated sender's drop rule ends the hosts' socket traffic.
            let mut gen = if isolated {
                Some(crate::generator::Isolated::prepare(
                    &lab,
                    &flow,
                    &built.daemons,
                )?)
            } else {
                None
            };
            let mut probe = |size: usize, rate: u64| -> anyhow::Result<(f64, f64, Option<bool>)> {
                match gen.as_mut() {
                    Some(g) => Ok(judge(&g.trial(size, rate, &stop)?)),
                    None => {
                        let t = trial(&lab, &flow, size, rate, &stop)?;
                        Ok((t.loss, t.cpu_us, None))
                    }
                }
            };
            for &size in &plan.sizes {
                let (pps, cpu, sender_limited) = max_rate(size, &mut probe)?;
                let at_common = if pps >= plan.common_rate {
                    let (loss, cpu, _) = probe(size, plan.common_rate)?;
                    eprintln!(
                        "  {size} B at {} pps (the common rate): loss {:.3}%, {cpu:.2} us/packet",
                        plan.common_rate,
                        loss * 100.0
                    );
                    Some(cpu)
                } else {
                    None
                };
                rows.push(BenchRow {
                    variant: v.name.clone(),
                    size,
                    run,
                    max_pps: pps,
                    cpu_us_per_packet: cpu,
                    cpu_us_at_common_rate: at_common,
                    sender_limited,
                });
            }
            built.succeeded = !stop.load(Ordering::Relaxed);
            drop(built);
            if stop.load(Ordering::Relaxed) {
                bail!("interrupted; the lab was torn down");
            }
        }
    }
    let summary = summarise(&rows);
    let sender = if isolated { "isolated" } else { "socket" };
    let report = serde_json::json!({
        "lab": lab.name, "sender": sender, "rates": rows, "summary": summary,
        "latency": latency, "voip": voip,
    });
    if let Some(dir) = out {
        std::fs::create_dir_all(dir)?;
        std::fs::write(
            dir.join("report.json"),
            serde_json::to_string_pretty(&report)?,
        )?;
        std::fs::write(
            dir.join("report.html"),
            html(&lab, &summary, &voip, isolated),
        )?;
        eprintln!("wrote {}/report.json and report.html", dir.display());
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&lab, &summary, &latency, &voip, isolated, plan.common_rate);
    }
    Ok(ExitCode::SUCCESS)
}

/// The VoIP sweep (the seed's figures 4 and 5): loss and the machine's
/// CPU load at each of [`VOIP_RATES`] of 160-byte packets.
fn voip_sweep(
    lab: &Lab,
    flow: &LabFlow,
    variant: &str,
    stop: &AtomicBool,
) -> anyhow::Result<Vec<VoipPoint>> {
    let mut points = Vec::new();
    for rate in VOIP_RATES {
        let t = trial(lab, flow, 160, rate, stop)?;
        eprintln!(
            "  160 B at {rate} pps: loss {:.3}%, CPU load {:.0}%",
            t.loss * 100.0,
            t.load * 100.0
        );
        points.push(VoipPoint {
            variant: variant.to_string(),
            offered_pps: rate,
            cpu_load: t.load,
            loss: t.loss,
        });
    }
    Ok(points)
}

/// An isolated sender's trial as the search takes it: the loss, the
/// routers' CPU per packet, whether the sender fell behind. The loss is
/// the routers', of what was sent; a sender that sent under 99% of what
/// was asked fails the trial, what it did not send counted as lost.
fn judge(t: &crate::generator::IsolatedTrial) -> (f64, f64, Option<bool>) {
    let loss = if t.sent * 100 < t.asked * 99 {
        1.0 - t.delivered as f64 / t.asked.max(1) as f64
    } else {
        1.0 - t.delivered as f64 / t.sent.max(1) as f64
    };
    eprintln!(
        "    sent {} at {:.0} pps (at most {} behind, {} skipped), {} arrived; routers' CPU {:.0}% busy",
        t.sent,
        t.sender_rate,
        t.sender_lag,
        t.skipped,
        t.delivered,
        t.router_load * 100.0
    );
    (
        loss,
        t.router_cpu_us,
        Some(t.skipped > 0 || t.sent < t.asked),
    )
}

/// One-way latency at a light load: 2,000 packets of 64 B at 1,000/s.
fn light_latency(
    lab: &Lab,
    flow: &LabFlow,
    variant: &str,
    stop: &AtomicBool,
) -> anyhow::Result<serde_json::Value> {
    let light = LabFlow {
        count: 2000,
        interval: Duration::from_millis(1),
        size: 64,
        ..flow.clone()
    };
    let r = probe(lab, &light, stop)?;
    Ok(serde_json::json!({
        "variant": variant, "p50_ms": r.delay_p50_ms, "p99_ms": r.delay_p99_ms, "lost": r.lost,
    }))
}

/// A variant's figures at one size over its runs: mean, lowest, highest.
#[derive(Debug, serde::Serialize)]
struct Summary {
    variant: String,
    size: usize,
    runs: usize,
    max_pps: [f64; 3],
    cpu_us_per_packet: [f64; 3],
    /// At the common rate, over the runs that reached it.
    cpu_us_at_common_rate: Option<[f64; 3]>,
    /// Whether the sender fell behind in a failed trial of any run.
    sender_limited: Option<bool>,
}

fn spread(values: impl Iterator<Item = f64> + Clone) -> [f64; 3] {
    let n = values.clone().count().max(1) as f64;
    [
        values.clone().sum::<f64>() / n,
        values.clone().fold(f64::INFINITY, f64::min),
        values.fold(f64::NEG_INFINITY, f64::max),
    ]
}

/// The rows grouped by variant and size, in the order first met.
fn summarise(rows: &[BenchRow]) -> Vec<Summary> {
    let mut keys: Vec<(&str, usize)> = Vec::new();
    for r in rows {
        if !keys.contains(&(r.variant.as_str(), r.size)) {
            keys.push((r.variant.as_str(), r.size));
        }
    }
    keys.into_iter()
        .map(|(variant, size)| {
            let of: Vec<&BenchRow> = rows
                .iter()
                .filter(|r| r.variant == variant && r.size == size)
                .collect();
            Summary {
                variant: variant.to_string(),
                size,
                runs: of.len(),
                max_pps: spread(of.iter().map(|r| r.max_pps as f64)),
                cpu_us_per_packet: spread(of.iter().map(|r| r.cpu_us_per_packet)),
                cpu_us_at_common_rate: {
                    let at = of.iter().filter_map(|r| r.cpu_us_at_common_rate);
                    (at.clone().count() > 0).then(|| spread(at))
                },
                sender_limited: of
                    .iter()
                    .filter_map(|r| r.sender_limited)
                    .reduce(|a, b| a || b),
            }
        })
        .collect()
}

/// "mean (lowest-highest)", or the one figure of a single run.
fn figure(s: &[f64; 3], runs: usize, decimals: usize) -> String {
    if runs < 2 {
        return format!("{:.*}", decimals, s[0]);
    }
    format!(
        "{:.*} ({:.*}-{:.*})",
        decimals, s[0], decimals, s[1], decimals, s[2]
    )
}

/// CPU per packet at the common rate, or "-" where no run reached it.
fn common_figure(s: &Summary) -> String {
    s.cpu_us_at_common_rate
        .as_ref()
        .map_or("-".into(), |c| figure(c, s.runs, 2))
}

/// The sender column: whether the isolated sender kept up.
fn sender_note(limited: Option<bool>) -> &'static str {
    match limited {
        None => "-",
        Some(false) => "kept up",
        Some(true) => "fell behind",
    }
}

fn print_text(
    lab: &Lab,
    summary: &[Summary],
    latency: &[serde_json::Value],
    voip: &[VoipPoint],
    isolated: bool,
    common_rate: u64,
) {
    println!("lab {} ({})", lab.name, lab.description);
    println!(
        "CPU: {} CPU's busy time per delivered packet, us, at the highest rate and at {common_rate} packets/s",
        if isolated { "the routers'" } else { "the whole machine's" }
    );
    println!(
        "{:<28} {:>6} {:>28} {:>22} {:>22} {:>12}",
        "variant", "bytes", "max pps", "CPU at max", "CPU at common rate", "sender"
    );
    for s in summary {
        println!(
            "{:<28} {:>6} {:>28} {:>22} {:>22} {:>12}",
            s.variant,
            s.size,
            figure(&s.max_pps, s.runs, 0),
            figure(&s.cpu_us_per_packet, s.runs, 2),
            common_figure(s),
            sender_note(s.sender_limited),
        );
    }
    println!(
        "{:<28} {:>10} {:>10}   (64 B at 1,000 packets/s)",
        "variant", "p50 ms", "p99 ms"
    );
    for l in latency {
        println!(
            "{:<28} {:>10.3} {:>10.3}",
            l["variant"].as_str().unwrap_or(""),
            l["p50_ms"].as_f64().unwrap_or(0.0),
            l["p99_ms"].as_f64().unwrap_or(0.0)
        );
    }
    println!(
        "{:<28} {:>10} {:>10} {:>8}   (160 B: the seed's figures 4 and 5)",
        "variant", "offered", "CPU load", "loss"
    );
    for p in voip {
        println!(
            "{:<28} {:>10} {:>9.0}% {:>7.2}%",
            p.variant,
            p.offered_pps,
            p.cpu_load * 100.0,
            p.loss * 100.0
        );
    }
}

/// The benchmark as a page: the rates table and the VoIP sweep's two
/// charts (CPU load and loss against offered rate, one line per variant).
fn html(lab: &Lab, summary: &[Summary], voip: &[VoipPoint], isolated: bool) -> String {
    use braid_sim::html::{line_chart, page, table, Series};
    let variants: Vec<&str> = lab.variants.iter().map(|v| v.name.as_str()).collect();
    let series = |f: &dyn Fn(&VoipPoint) -> f64| -> Vec<Series> {
        variants
            .iter()
            .enumerate()
            .map(|(i, v)| Series {
                label: v.to_string(),
                points: voip
                    .iter()
                    .filter(|p| p.variant == *v)
                    .map(|p| (p.offered_pps as f64, f(p)))
                    .collect(),
                dashed: false,
                scatter: false,
                color: i,
                spread: Vec::new(),
            })
            .collect()
    };
    let max_x = VOIP_RATES[VOIP_RATES.len() - 1] as f64;
    let load = line_chart(
        "CPU load against offered rate, 160-byte packets (seed 000, figure 4)",
        "offered packets/s (100 per full-duplex VoIP call)",
        "machine CPU load %",
        (0.0, max_x),
        (0.0, 100.0),
        &series(&|p| p.cpu_load * 100.0),
    );
    let max_loss = voip.iter().map(|p| p.loss * 100.0).fold(1.0, f64::max);
    let loss = line_chart(
        "Loss against offered rate, 160-byte packets (seed 000, figure 5)",
        "offered packets/s (100 per full-duplex VoIP call)",
        "loss %",
        (0.0, max_x),
        (0.0, max_loss),
        &series(&|p| p.loss * 100.0),
    );
    let rates = table(
        &[
            "variant",
            "bytes",
            "max packets/s (<0.1% loss)",
            if isolated {
                "routers' CPU µs/packet at max"
            } else {
                "machine CPU µs/packet at max"
            },
            "at the common rate",
            "sender",
        ],
        &summary
            .iter()
            .map(|s| {
                vec![
                    s.variant.clone(),
                    s.size.to_string(),
                    figure(&s.max_pps, s.runs, 0),
                    figure(&s.cpu_us_per_packet, s.runs, 2),
                    common_figure(s),
                    sender_note(s.sender_limited).to_string(),
                ]
            })
            .collect::<Vec<_>>(),
    );
    page(
        &format!("lab bench {}", lab.name),
        &format!(
            "{}. The seed (000) measured on a $50 router: user space saturated its CPU at 400 packets/s, its kernel path at 5,000, plain kernel routing at 6,000; loss began at 800, 5,100 and 6,400 packets/s. Here: {}.",
            lab.description,
            if isolated {
                "the max rates from the kernel's generator on one CPU, the routers' CPU time on another; the VoIP sweep from a socket, CPU load of the whole machine"
            } else {
                "the whole machine (sender and receiver included)"
            }
        ),
        &[rates, load, loss],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::IsolatedTrial;

    fn trial(asked: u64, sent: u64, delivered: u64, skipped: u64) -> IsolatedTrial {
        IsolatedTrial {
            asked,
            sent,
            delivered,
            router_cpu_us: 1.5,
            router_load: 0.5,
            sender_rate: sent as f64,
            sender_lag: skipped,
            skipped,
        }
    }

    #[test]
    fn a_trial_is_judged_by_the_routers_loss_unless_the_sender_fell_short() {
        // Every frame sent arrived, a few hundred skipped: the routers lost
        // nothing, the sender is said to have fallen behind.
        let (loss, cpu, lagged) = judge(&trial(100_000, 99_600, 99_600, 400));
        assert_eq!((loss, cpu, lagged), (0.0, 1.5, Some(true)));
        // The routers lost 0.2% of what was sent.
        let (loss, _, lagged) = judge(&trial(100_000, 100_000, 99_800, 0));
        assert!((loss - 0.002).abs() < 1e-9, "{loss}");
        assert_eq!(lagged, Some(false));
        // Under 99% sent: what was not sent counts as lost.
        let (loss, _, _) = judge(&trial(100_000, 90_000, 90_000, 10_000));
        assert!((loss - 0.1).abs() < 1e-9, "{loss}");
    }

    #[test]
    fn the_search_finds_the_last_rate_that_passes_and_who_limited_it() {
        // Routers that carry 100,000/s; a sender that falls behind above
        // 150,000/s only.
        let mut asked = Vec::new();
        let mut probe = |_: usize, rate: u64| -> anyhow::Result<(f64, f64, Option<bool>)> {
            asked.push(rate);
            let loss = if rate > 100_000 { 0.01 } else { 0.0 };
            Ok((loss, 1e6 / rate as f64, Some(rate > 150_000)))
        };
        let (pps, cpu, limited) = max_rate(64, &mut probe).unwrap();
        assert!((97_500..=100_000).contains(&pps), "{pps}");
        assert!((cpu - 1e6 / pps as f64).abs() < 1e-9);
        assert_eq!(
            limited,
            Some(false),
            "the failure just above was the routers'"
        );
        assert!(asked.len() <= 12, "doubling then six halvings: {asked:?}");
        // A sender that falls behind where the routers would still carry.
        let mut probe = |_: usize, rate: u64| -> anyhow::Result<(f64, f64, Option<bool>)> {
            let behind = rate > 60_000;
            Ok((if behind { 0.01 } else { 0.0 }, 1.0, Some(behind)))
        };
        let (pps, _, limited) = max_rate(64, &mut probe).unwrap();
        assert!((57_500..=60_000).contains(&pps), "{pps}");
        assert_eq!(limited, Some(true));
    }
}
