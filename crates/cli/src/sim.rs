//! `braid sim`: runs a scenario (all its variants and runs) and reports.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use braid_sim::{run_scenario_capturing, Scenario, ScenarioReport};
use clap::Args;

#[derive(Args)]
pub struct SimArgs {
    /// Scenario file (TOML); see docs/simulator.md and scenarios/.
    file: PathBuf,
    /// Seed of the first run (default: the scenario's).
    #[arg(long)]
    seed: Option<u64>,
    /// Runs per variant, seeds seed, seed+1, ... (default: the scenario's).
    #[arg(long)]
    runs: Option<u32>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write results.json, flows.csv and (for path-loss sweeps)
    /// delivery.svg into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Capture the link between two nodes during the first run, as a pcap
    /// file (into --out, else the current directory).
    #[arg(long, value_name = "A,B", value_delimiter = ',', num_args = 1)]
    pcap: Option<Vec<String>>,
    /// Run only the scenario's `[[variant]]` of this name (to time one).
    #[arg(long, value_name = "NAME")]
    variant: Option<String>,
}

/// Runs a scenario, with progress on stderr when it is a terminal.
pub fn execute(scenario: &Scenario, seed: u64, runs: u32) -> Result<ScenarioReport> {
    execute_capturing(scenario, seed, runs, None)
}

/// As [`execute`], capturing one link during the first run.
pub fn execute_capturing(
    scenario: &Scenario,
    seed: u64,
    runs: u32,
    capture: Option<(&str, &str)>,
) -> Result<ScenarioReport> {
    let tty = std::io::stderr().is_terminal();
    let variants = scenario.variants().len();
    let total = scenario.duration.as_secs().max(1);
    let report = run_scenario_capturing(scenario, seed, runs, capture, |v, r, t| {
        if tty {
            eprint!(
                "\r{}: variant {}/{} run {}/{} {:>4}/{} s ",
                scenario.name,
                v + 1,
                variants,
                r + 1,
                runs,
                t.as_micros() / 1_000_000,
                total
            );
            let _ = std::io::stderr().flush();
        }
    })?;
    if tty {
        eprint!("\r{:70}\r", "");
    }
    Ok(report)
}

/// A text field as CSV carries it (RFC 4180): quoted when it holds a
/// comma, a quote or a line break (a mode such as `erasure:12,6` does),
/// its quotes doubled. (Three text columns: the `csv` crate would add a
/// dependency for this alone.)
fn csv_text(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The report as CSV, one row per variant and flow.
pub fn csv(report: &ScenarioReport) -> String {
    let mut out = String::from("variant,path_loss,mode,flow,runs,sent,lost,loss_ratio,theory_delivery,duplicates,delay_mean_ms,delay_p99_ms,overhead,max_gap_ms,goodput_mbps,retransmits\n");
    for v in &report.variants {
        for f in &v.summary {
            out += &format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                csv_text(v.name.as_deref().unwrap_or("")),
                v.path_loss.map_or(String::new(), |l| l.to_string()),
                csv_text(&f.mode.to_string()),
                csv_text(&f.name),
                f.runs,
                f.sent,
                f.lost,
                f.loss_ratio,
                f.theory_delivery.map_or(String::new(), |t| t.to_string()),
                f.duplicates,
                f.delay_mean_ms,
                f.delay_p99_ms,
                f.overhead,
                f.max_gap_ms,
                f.goodput_mbps,
                f.retransmits
            );
        }
    }
    out
}

/// The report as a text table.
pub fn table(report: &ScenarioReport) -> String {
    let mut out = format!("{}\n", report.scenario);
    if !report.description.is_empty() {
        out += &format!("{}\n", report.description);
    }
    out += &format!(
        "{:<22} {:>9} {:<18} {:<10} {:>7} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8} {:>9} {:>8} {:>6}\n",
        "variant",
        "path loss",
        "mode",
        "flow",
        "sent",
        "lost",
        "deliv%",
        "theory%",
        "delay ms",
        "p99 ms",
        "overhead",
        "gap ms",
        "Mbit/s",
        "retx"
    );
    for v in &report.variants {
        for f in &v.summary {
            // A TCP flow's figures are its goodput and retransmissions; a
            // UDP flow's its packets, delivery and delay: the others are
            // shown as "-", not as numbers that mean nothing.
            let udp = |text: String| if f.tcp { "-".to_string() } else { text };
            let tcp = |text: String| if f.tcp { text } else { "-".to_string() };
            out += &format!(
                "{:<22} {:>9} {:<18} {:<10} {:>7} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8.2} {:>9} {:>8} {:>6}\n",
                v.name.as_deref().unwrap_or("-"),
                v.path_loss.map_or("-".into(), |l| format!("{:.0}%", l * 100.0)),
                f.mode,
                f.name,
                udp(format!("{:.0}", f.sent)),
                udp(format!("{:.1}", f.lost)),
                udp(format!("{:.2}", (1.0 - f.loss_ratio) * 100.0)),
                f.theory_delivery.map_or("-".into(), |t| format!("{:.2}", t * 100.0)),
                udp(format!("{:.1}", f.delay_mean_ms)),
                udp(format!("{:.1}", f.delay_p99_ms)),
                f.overhead,
                udp(format!("{:.0}", f.max_gap_ms)),
                tcp(format!("{:.2}", f.goodput_mbps)),
                tcp(format!("{:.1}", f.retransmits))
            );
        }
    }
    // Flooding times, where watched: per variant, each run.
    for v in &report.variants {
        for r in &v.runs {
            if let Some(f) = &r.flooding {
                out += &format!(
                    "{}: flooding (seed {}): {} of {} advertisements reached every router, in {:.1} ms median, {:.1} ms p99, {:.1} ms at most\n",
                    v.name.as_deref().unwrap_or("run"),
                    r.seed,
                    f.complete,
                    f.issued,
                    f.p50_ms,
                    f.p99_ms,
                    f.max_ms
                );
            }
        }
    }
    // Links cut on flows' paths: per variant, each run.
    for v in &report.variants {
        for r in v.runs.iter().filter(|r| !r.cuts.is_empty()) {
            let cut = r.cuts.iter().filter(|c| c.link.is_some()).count();
            let mut outages: Vec<f64> = r
                .cuts
                .iter()
                .filter(|c| c.link.is_some())
                .filter_map(|c| c.outage_ms)
                .collect();
            outages.sort_by(f64::total_cmp);
            let at = |q: f64| braid_sim::quantile(&outages, q).unwrap_or(0.0);
            out += &format!(
                "{}: path cuts (seed {}): {} flows cut ({} had no link inside their ingress's area, {} delivered nothing more); delivering nothing after the cut: {:.0} ms median, {:.0} ms p90, {:.0} ms at most\n",
                v.name.as_deref().unwrap_or("run"),
                r.seed,
                cut,
                r.cuts.len() - cut,
                cut - outages.len(),
                at(0.5),
                at(0.9),
                at(1.0)
            );
        }
    }
    // What one router holds and sends: per variant, over its runs.
    for v in &report.variants {
        let runs = v.runs.len().max(1) as f64;
        let mean = |f: fn(&braid_sim::RouterStats) -> f64| {
            v.runs.iter().map(|r| f(&r.routers)).sum::<f64>() / runs
        };
        let max = v
            .runs
            .iter()
            .map(|r| r.routers.database_max)
            .max()
            .unwrap_or(0);
        out += &format!(
            "{}: per router: {:.0} advertisements held (at most {max}), {:.0} control bytes/s sent\n",
            v.name.as_deref().unwrap_or("run"),
            mean(|p| p.database_mean),
            mean(|p| p.control_bytes_per_s)
        );
    }
    out += &format!(
        "{} events, {} packet-hops simulated\n",
        report.events, report.packet_hops
    );
    out
}

pub fn run(args: SimArgs) -> Result<ExitCode> {
    let mut scenario = Scenario::load(&args.file)?;
    if let Some(name) = &args.variant {
        let names: Vec<String> = scenario
            .node_variants
            .iter()
            .map(|v| v.name.clone())
            .collect();
        scenario.node_variants.retain(|v| &v.name == name);
        if scenario.node_variants.is_empty() {
            anyhow::bail!(
                "{}: no [[variant]] named {name:?}; it has: {}",
                args.file.display(),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            );
        }
    }
    let seed = args.seed.unwrap_or(scenario.seed);
    let runs = args.runs.unwrap_or(scenario.runs).max(1);
    let capture = match &args.pcap {
        Some(ends) if ends.len() == 2 => Some((ends[0].as_str(), ends[1].as_str())),
        Some(_) => anyhow::bail!("--pcap takes two node names: --pcap A,B"),
        None => None,
    };
    let report = execute_capturing(&scenario, seed, runs, capture)?;
    if let (Some((a, b)), Some(bytes)) = (capture, &report.pcap) {
        let dir = args.out.clone().unwrap_or_else(|| PathBuf::from("."));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let file = dir.join(format!("{a}-{b}.pcap"));
        std::fs::write(&file, bytes).with_context(|| format!("cannot write {}", file.display()))?;
        eprintln!("capture of {a} <-> {b}: {}", file.display());
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        std::fs::write(
            dir.join("results.json"),
            serde_json::to_string_pretty(&report)?,
        )?;
        std::fs::write(dir.join("flows.csv"), csv(&report))?;
        let tcp = scenario.flows.iter().any(|f| f.tcp_bytes.is_some());
        let chart = if tcp {
            braid_sim::html::goodput_chart(&report).map(|svg| ("goodput.svg", svg))
        } else {
            braid_sim::html::delivery_chart(&report).map(|svg| ("delivery.svg", svg))
        };
        if let Some((name, svg)) = chart {
            std::fs::write(dir.join(name), svg)?;
        }
    }
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", table(&report));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::csv_text;

    #[test]
    fn csv_text_quotes_what_would_split_a_row() {
        assert_eq!(csv_text("adaptive:0.999"), "adaptive:0.999");
        assert_eq!(csv_text("erasure:12,6"), "\"erasure:12,6\"");
        assert_eq!(csv_text("a \"b\""), "\"a \"\"b\"\"\"");
    }
}
