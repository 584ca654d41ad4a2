//! `braid lab bench`: the forwarding benchmark. Per variant, on the
//! scenario's first flow: the highest rate of 64- and 1,400-byte UDP
//! delivered with under 0.1% loss (doubling, then halving the interval
//! between the last pass and the first failure), the whole machine's CPU
//! time per packet at that rate, one-way latency at a light load, and
//! the seed's figures 4 and 5 (000: CPU load and loss against offered
//! rate of VoIP-sized, 160-byte packets), written as charts with `--out`.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};

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
    let r = probe_flow(
        lab,
        "",
        0,
        &f,
        Instant::now() + Duration::from_millis(50),
        Duration::from_millis(300),
        stop,
    )?;
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
    max_pps: u64,
    cpu_us_per_packet: f64,
}

/// The highest rate with under 0.1% loss: doubling from 5,000 packets/s,
/// then six halvings of the interval between the last pass and the
/// first failure (steps of 1,250 packets/s between 80,000 and 160,000).
fn max_rate(
    lab: &Lab,
    flow: &LabFlow,
    size: usize,
    stop: &AtomicBool,
) -> anyhow::Result<(u64, f64)> {
    let ok = |loss: f64| loss < 0.001;
    let (mut lo, mut lo_cpu) = (0u64, 0.0);
    let mut rate = 5_000u64;
    let hi = loop {
        let Trial {
            loss, cpu_us: cpu, ..
        } = trial(lab, flow, size, rate, stop)?;
        eprintln!("  {size} B at {rate} pps: loss {:.3}%", loss * 100.0);
        if !ok(loss) || rate >= 1_600_000 {
            break rate;
        }
        (lo, lo_cpu) = (rate, cpu);
        rate *= 2;
    };
    let mut hi = hi;
    for _ in 0..6 {
        let mid = (lo + hi) / 2;
        if mid <= lo {
            break;
        }
        let Trial {
            loss, cpu_us: cpu, ..
        } = trial(lab, flow, size, mid, stop)?;
        eprintln!("  {size} B at {mid} pps: loss {:.3}%", loss * 100.0);
        if ok(loss) {
            (lo, lo_cpu) = (mid, cpu);
        } else {
            hi = mid;
        }
    }
    Ok((lo, lo_cpu))
}

/// `braid lab bench`: per variant, the forwarding rate, CPU per packet,
/// one-way latency between the first flow's hosts, and the VoIP sweep;
/// with `out`, report.json and report.html (tables, the sweep's charts)
/// written there.
pub fn bench(
    scenario: &Path,
    json: bool,
    out: Option<&Path>,
    keep: bool,
) -> anyhow::Result<ExitCode> {
    let mut lab = Lab::load(scenario)?;
    lab.keep = keep;
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
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let mut rows = Vec::new();
    let mut latency = Vec::new();
    let mut voip = Vec::new();
    for v in &lab.variants {
        eprintln!("lab {} [{}]: building", lab.name, v.name);
        let mut built = build(&lab, v)?;
        // The end hosts stand for LAN clients behind physical NICs, whose
        // packets reach a router with their checksums finished; a veth
        // leaves them to the device (to be finished by whoever reads the
        // bytes, which the kernel path does through its segmenter).
        for host in [flow.from, flow.to] {
            in_ns(&lab.end_ns(host), &["ethtool", "-K", "eth0", "tx", "off"])
                .context("finishing the hosts' checksums (Debian package ethtool)")?;
        }
        // Latency at a light load: 2,000 packets of 64 B at 1,000/s.
        let light = LabFlow {
            count: 2000,
            interval: Duration::from_millis(1),
            size: 64,
            ..flow.clone()
        };
        let r = probe_flow(
            &lab,
            "",
            0,
            &light,
            Instant::now() + Duration::from_millis(50),
            Duration::from_millis(300),
            &stop,
        )?;
        latency.push(serde_json::json!({
            "variant": v.name, "p50_ms": r.delay_p50_ms, "p99_ms": r.delay_p99_ms, "lost": r.lost,
        }));
        for size in [64, 1400] {
            let (pps, cpu) = max_rate(&lab, &flow, size, &stop)?;
            rows.push(BenchRow {
                variant: v.name.clone(),
                size,
                max_pps: pps,
                cpu_us_per_packet: cpu,
            });
        }
        for rate in VOIP_RATES {
            let t = trial(&lab, &flow, 160, rate, &stop)?;
            eprintln!(
                "  160 B at {rate} pps: loss {:.3}%, CPU load {:.0}%",
                t.loss * 100.0,
                t.load * 100.0
            );
            voip.push(VoipPoint {
                variant: v.name.clone(),
                offered_pps: rate,
                cpu_load: t.load,
                loss: t.loss,
            });
        }
        built.succeeded = !stop.load(Ordering::Relaxed);
        drop(built);
        if stop.load(Ordering::Relaxed) {
            bail!("interrupted; the lab was torn down");
        }
    }
    let report = serde_json::json!({
        "lab": lab.name, "rates": rows, "latency": latency, "voip": voip,
    });
    if let Some(dir) = out {
        std::fs::create_dir_all(dir)?;
        std::fs::write(
            dir.join("report.json"),
            serde_json::to_string_pretty(&report)?,
        )?;
        std::fs::write(dir.join("report.html"), html(&lab, &rows, &voip))?;
        eprintln!("wrote {}/report.json and report.html", dir.display());
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("lab {} ({})", lab.name, lab.description);
        println!(
            "{:<16} {:>6} {:>12} {:>16}",
            "variant", "bytes", "max pps", "CPU us/packet"
        );
        for r in &rows {
            println!(
                "{:<16} {:>6} {:>12} {:>16.2}",
                r.variant, r.size, r.max_pps, r.cpu_us_per_packet
            );
        }
        println!(
            "{:<16} {:>10} {:>10}   (64 B at 1,000 packets/s)",
            "variant", "p50 ms", "p99 ms"
        );
        for l in &latency {
            println!(
                "{:<16} {:>10.3} {:>10.3}",
                l["variant"].as_str().unwrap_or(""),
                l["p50_ms"].as_f64().unwrap_or(0.0),
                l["p99_ms"].as_f64().unwrap_or(0.0)
            );
        }
        println!(
            "{:<16} {:>10} {:>10} {:>8}   (160 B: the seed's figures 4 and 5)",
            "variant", "offered", "CPU load", "loss"
        );
        for p in &voip {
            println!(
                "{:<16} {:>10} {:>9.0}% {:>7.2}%",
                p.variant,
                p.offered_pps,
                p.cpu_load * 100.0,
                p.loss * 100.0
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The benchmark as a page: the rates table and the VoIP sweep's two
/// charts (CPU load and loss against offered rate, one line per variant).
fn html(lab: &Lab, rows: &[BenchRow], voip: &[VoipPoint]) -> String {
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
            "CPU µs/packet",
        ],
        &rows
            .iter()
            .map(|r| {
                vec![
                    r.variant.clone(),
                    r.size.to_string(),
                    r.max_pps.to_string(),
                    format!("{:.2}", r.cpu_us_per_packet),
                ]
            })
            .collect::<Vec<_>>(),
    );
    page(
        &format!("lab bench {}", lab.name),
        &format!(
            "{}. The seed (000) measured on a $50 router: user space saturated its CPU at 400 packets/s, its kernel path at 5,000, plain kernel routing at 6,000; loss began at 800, 5,100 and 6,400 packets/s. Here the whole machine (sender and receiver included) on 2 cores.",
            lab.description
        ),
        &[rates, load, loss],
    )
}
