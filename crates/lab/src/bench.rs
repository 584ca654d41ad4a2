//! `braid lab bench`: the forwarding benchmark. Per variant, on the
//! scenario's first flow: the highest rate of 64- and 1,400-byte UDP
//! delivered with under 0.1% loss (doubling, then halving the interval
//! between the last pass and the first failure), the whole machine's CPU
//! time per packet at that rate, and one-way latency at a light load.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};

use crate::flows::probe_flow;
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

/// One benchmark trial: `rate` packets/s of `size` bytes for one second.
/// Returns the loss ratio and the machine's busy CPU time per delivered
/// packet, in microseconds.
fn trial(
    lab: &Lab,
    flow: &LabFlow,
    size: usize,
    rate: u64,
    stop: &AtomicBool,
) -> anyhow::Result<(f64, f64)> {
    let f = LabFlow {
        count: rate as u32,
        interval: Duration::from_nanos(1_000_000_000 / rate),
        size,
        ..flow.clone()
    };
    let (busy0, _) = cpu_ticks();
    let r = probe_flow(
        lab,
        "",
        0,
        &f,
        Instant::now() + Duration::from_millis(50),
        Duration::from_millis(300),
        stop,
    )?;
    let (busy1, _) = cpu_ticks();
    let tick_us = 1e6 / 100.0; // USER_HZ
    let cpu_us = (busy1 - busy0) as f64 * tick_us / r.delivered.max(1) as f64;
    Ok((r.loss_ratio, cpu_us))
}

#[derive(Debug, serde::Serialize)]
struct BenchRow {
    variant: String,
    size: usize,
    max_pps: u64,
    cpu_us_per_packet: f64,
}

/// The highest rate with under 0.1% loss: doubling from 5,000 packets/s,
/// then four halvings of the interval between the last pass and the
/// first failure.
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
        let (loss, cpu) = trial(lab, flow, size, rate, stop)?;
        eprintln!("  {size} B at {rate} pps: loss {:.3}%", loss * 100.0);
        if !ok(loss) || rate >= 1_600_000 {
            break rate;
        }
        (lo, lo_cpu) = (rate, cpu);
        rate *= 2;
    };
    let mut hi = hi;
    for _ in 0..4 {
        let mid = (lo + hi) / 2;
        if mid <= lo {
            break;
        }
        let (loss, cpu) = trial(lab, flow, size, mid, stop)?;
        eprintln!("  {size} B at {mid} pps: loss {:.3}%", loss * 100.0);
        if ok(loss) {
            (lo, lo_cpu) = (mid, cpu);
        } else {
            hi = mid;
        }
    }
    Ok((lo, lo_cpu))
}

/// `braid lab bench`: per variant, the forwarding rate, CPU per packet
/// and one-way latency between the first flow's hosts.
pub fn bench(scenario: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let lab = Lab::load(scenario)?;
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
    for v in &lab.variants {
        eprintln!("lab {} [{}]: building", lab.name, v.name);
        let built = build(&lab, v)?;
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
        drop(built);
        if stop.load(Ordering::Relaxed) {
            bail!("interrupted; the lab was torn down");
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "lab": lab.name, "rates": rows, "latency": latency })
            )?
        );
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
    }
    Ok(ExitCode::SUCCESS)
}
