//! `braid sim`: runs a scenario in the simulator and reports per flow.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use braid_sim::{run_once, RunResult, Scenario};
use clap::Args;
use serde::Serialize;

#[derive(Args)]
pub struct SimArgs {
    /// Scenario file (TOML); see scenarios/ for examples.
    file: PathBuf,
    /// Seed of the first run (default: the scenario's).
    #[arg(long)]
    seed: Option<u64>,
    /// Number of runs, seeds seed, seed+1, ... (default: the scenario's).
    #[arg(long)]
    runs: Option<u32>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write results.json and flows.csv into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Per flow, averaged over runs.
#[derive(Serialize)]
struct FlowSummary {
    name: String,
    mode: String,
    runs: usize,
    sent: f64,
    lost: f64,
    loss_ratio: f64,
    duplicates: f64,
    delay_mean_ms: f64,
    delay_p99_ms: f64,
    overhead: f64,
}

#[derive(Serialize)]
struct Report<'a> {
    scenario: &'a str,
    description: &'a str,
    summary: Vec<FlowSummary>,
    runs: &'a [RunResult],
}

fn summarize(runs: &[RunResult]) -> Vec<FlowSummary> {
    let n = runs.len() as f64;
    let flows = runs.first().map_or(0, |r| r.flows.len());
    (0..flows)
        .map(|i| {
            let avg = |f: &dyn Fn(&RunResult) -> f64| runs.iter().map(f).sum::<f64>() / n;
            FlowSummary {
                name: runs[0].flows[i].name.clone(),
                mode: runs[0].flows[i].mode.clone(),
                runs: runs.len(),
                sent: avg(&|r| r.flows[i].sent as f64),
                lost: avg(&|r| r.flows[i].lost as f64),
                loss_ratio: avg(&|r| r.flows[i].loss_ratio),
                duplicates: avg(&|r| r.flows[i].duplicates as f64),
                delay_mean_ms: avg(&|r| r.flows[i].delay_mean_ms),
                delay_p99_ms: avg(&|r| r.flows[i].delay_p99_ms),
                overhead: avg(&|r| r.flows[i].overhead),
            }
        })
        .collect()
}

pub fn run(args: SimArgs) -> Result<ExitCode> {
    let scenario = Scenario::load(&args.file)?;
    let seed = args.seed.unwrap_or(scenario.seed);
    let count = args.runs.unwrap_or(scenario.runs).max(1);
    let tty = std::io::stderr().is_terminal();
    let total = scenario.duration.as_secs().max(1);
    let mut runs = Vec::with_capacity(count as usize);
    for i in 0..count as u64 {
        let result = run_once(&scenario, seed + i, |t| {
            if tty {
                let done = t.as_micros() / 1_000_000;
                eprint!(
                    "\r{}: run {}/{}  {:>4}/{} s simulated",
                    scenario.name,
                    i + 1,
                    count,
                    done,
                    total
                );
                let _ = std::io::stderr().flush();
            }
        })?;
        runs.push(result);
    }
    if tty {
        eprintln!();
    }
    let report = Report {
        scenario: &scenario.name,
        description: &scenario.description,
        summary: summarize(&runs),
        runs: &runs,
    };
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        std::fs::write(
            dir.join("results.json"),
            serde_json::to_string_pretty(&report)?,
        )?;
        let mut csv = String::from(
            "flow,mode,runs,sent,lost,loss_ratio,duplicates,delay_mean_ms,delay_p99_ms,overhead\n",
        );
        for f in &report.summary {
            csv += &format!(
                "{},{},{},{},{},{},{},{},{},{}\n",
                f.name,
                f.mode,
                f.runs,
                f.sent,
                f.lost,
                f.loss_ratio,
                f.duplicates,
                f.delay_mean_ms,
                f.delay_p99_ms,
                f.overhead
            );
        }
        std::fs::write(dir.join("flows.csv"), csv)?;
    }
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "{} ({} run{}, seeds {}..{})",
            scenario.name,
            count,
            if count == 1 { "" } else { "s" },
            seed,
            seed + count as u64 - 1
        );
        if !scenario.description.is_empty() {
            println!("{}", scenario.description);
        }
        println!(
            "{:<12} {:<16} {:>8} {:>8} {:>7} {:>10} {:>10} {:>9}",
            "flow", "mode", "sent", "lost", "loss%", "delay ms", "p99 ms", "overhead"
        );
        for f in &report.summary {
            println!(
                "{:<12} {:<16} {:>8.0} {:>8.1} {:>7.2} {:>10.1} {:>10.1} {:>9.2}",
                f.name,
                f.mode,
                f.sent,
                f.lost,
                f.loss_ratio * 100.0,
                f.delay_mean_ms,
                f.delay_p99_ms,
                f.overhead
            );
        }
        let events: u64 = runs.iter().map(|r| r.events).sum();
        let hops: u64 = runs.iter().map(|r| r.packet_hops).sum();
        println!("{events} events, {hops} packet-hops simulated");
    }
    Ok(ExitCode::SUCCESS)
}
