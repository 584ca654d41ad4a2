//! Running a scenario with all its variants and runs, and summarizing:
//! the one place the CLI and the demo get their numbers from.

use braid_conf::LocatedError;
use braid_proto::redundancy::adaptive::choose;
use braid_proto::redundancy::predict::{delivery_ratio, PathLoss};
use braid_proto::redundancy::Mode;
use braid_proto::time::Instant;
use serde::Serialize;

use crate::results::RunResult;
use crate::scenario::{Scenario, ScenarioError};
use crate::topology::TopologySpec;
use crate::world::{run_once, World};

/// One flow, averaged over runs.
#[derive(Debug, Clone, Serialize)]
pub struct FlowSummary {
    pub name: String,
    pub mode: String,
    /// A TCP transfer (goodput and retransmissions are its figures; the
    /// packet counts and delays are a UDP flow's).
    pub tcp: bool,
    /// When the flow starts, seconds into the scenario.
    pub start_s: f64,
    /// Constant-rate flows: packets lost among those sent in each second
    /// of the flow, mean over the runs.
    pub lost_series: Vec<f64>,
    /// The lowest and highest loss ratio among the runs.
    pub loss_ratio_range: (f64, f64),
    /// The lowest and highest goodput among the runs, Mbit/s.
    pub goodput_range_mbps: (f64, f64),
    pub runs: usize,
    pub sent: f64,
    pub lost: f64,
    pub loss_ratio: f64,
    /// Expected delivery ratio from the mode's formula, for sweeps over
    /// path loss (each path's end-to-end loss and burst; see
    /// `redundancy::predict`).
    pub theory_delivery: Option<f64>,
    pub duplicates: f64,
    pub delay_mean_ms: f64,
    pub delay_p99_ms: f64,
    pub overhead: f64,
    /// Longest time between two packets delivered in a row, mean over runs.
    pub max_gap_ms: f64,
    /// Goodput in Mbit/s (in order, for TCP), mean over runs.
    pub goodput_mbps: f64,
    /// TCP: segments sent again, mean over runs.
    pub retransmits: f64,
}

/// One variant of a scenario (one point of its sweep).
#[derive(Debug, Clone, Serialize)]
pub struct VariantReport {
    /// The `[[variants]]` entry's name.
    pub name: Option<String>,
    pub path_loss: Option<f64>,
    pub mode: Option<String>,
    pub summary: Vec<FlowSummary>,
    pub runs: Vec<RunResult>,
}

/// A whole scenario.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioReport {
    /// The capture asked for (first run of the first variant), as a pcap
    /// file's bytes.
    #[serde(skip)]
    pub pcap: Option<Vec<u8>>,
    pub scenario: String,
    pub description: String,
    pub variants: Vec<VariantReport>,
    pub events: u64,
    pub packet_hops: u64,
}

/// Theory for a flow of `mode` over a parallel topology, from each path's
/// end-to-end loss and burst as the variant's links give them
/// ([`Scenario::parallel_path_loss`]).
fn theory(s: &Scenario, mode: Mode) -> Option<f64> {
    let TopologySpec::Parallel { paths, .. } = s.topology else {
        return None;
    };
    // Routing ranks paths by cost, the least lossy first: a mode that
    // uses k of them uses the k best (paths that lose alike: any order).
    let mut states: Vec<PathLoss> = (0..paths).filter_map(|p| s.parallel_path_loss(p)).collect();
    states.sort_by(|a, b| a.loss.total_cmp(&b.loss));
    states.truncate(s.paths);
    let mode = match mode {
        Mode::Adaptive { target } => choose(target, &states),
        m => m,
    };
    Some(delivery_ratio(&mode, &states))
}

fn summarize(s: &Scenario, path_loss: Option<f64>, runs: &[RunResult]) -> Vec<FlowSummary> {
    let n = runs.len() as f64;
    let flows = runs.first().map_or(0, |r| r.flows.len());
    (0..flows)
        .map(|i| {
            let avg = |f: &dyn Fn(&RunResult) -> f64| runs.iter().map(f).sum::<f64>() / n;
            let range = |f: &dyn Fn(&RunResult) -> f64| {
                runs.iter()
                    .map(f)
                    .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)))
            };
            let mode = s.flows[i].mode.unwrap_or(s.mode);
            FlowSummary {
                name: runs[0].flows[i].name.clone(),
                mode: runs[0].flows[i].mode.clone(),
                tcp: s.flows[i].tcp_bytes.is_some(),
                start_s: s.flows[i].start.as_secs_f64(),
                loss_ratio_range: range(&|r| r.flows[i].loss_ratio),
                goodput_range_mbps: range(&|r| r.flows[i].goodput_mbps),
                lost_series: {
                    let len = runs
                        .iter()
                        .map(|r| r.flows[i].lost_series.len())
                        .max()
                        .unwrap_or(0);
                    (0..len)
                        .map(|t| {
                            avg(&|r| r.flows[i].lost_series.get(t).copied().unwrap_or(0) as f64)
                        })
                        .collect()
                },
                runs: runs.len(),
                sent: avg(&|r| r.flows[i].sent as f64),
                lost: avg(&|r| r.flows[i].lost as f64),
                loss_ratio: avg(&|r| r.flows[i].loss_ratio),
                theory_delivery: path_loss.and_then(|_| theory(s, mode)),
                duplicates: avg(&|r| r.flows[i].duplicates as f64),
                delay_mean_ms: avg(&|r| r.flows[i].delay_mean_ms),
                delay_p99_ms: avg(&|r| r.flows[i].delay_p99_ms),
                overhead: avg(&|r| r.flows[i].overhead),
                max_gap_ms: avg(&|r| r.flows[i].max_gap_ms),
                goodput_mbps: avg(&|r| r.flows[i].goodput_mbps),
                retransmits: avg(&|r| r.flows[i].retransmits as f64),
            }
        })
        .collect()
}

/// Runs every variant of `scenario`, `runs` runs each from `seed`.
/// `progress(variant, run, simulated time)` is called as it goes.
pub fn run_scenario(
    scenario: &Scenario,
    seed: u64,
    runs: u32,
    progress: impl FnMut(usize, u32, Instant),
) -> Result<ScenarioReport, ScenarioError> {
    run_scenario_capturing(scenario, seed, runs, None, progress)
}

/// As [`run_scenario`], capturing the link between the two named nodes
/// during the first run of the first variant.
pub fn run_scenario_capturing(
    scenario: &Scenario,
    seed: u64,
    runs: u32,
    capture: Option<(&str, &str)>,
    mut progress: impl FnMut(usize, u32, Instant),
) -> Result<ScenarioReport, ScenarioError> {
    let mut variants = Vec::new();
    let (mut events, mut hops) = (0, 0);
    let mut pcap = None;
    for (vi, v) in scenario.variants().into_iter().enumerate() {
        let mut results = Vec::with_capacity(runs as usize);
        for r in 0..runs.max(1) {
            let run_seed = seed + r as u64;
            let result = match capture.filter(|_| vi == 0 && r == 0) {
                Some((a, b)) => {
                    let mut w = World::new(&v.scenario, run_seed)?;
                    w.capture(a, b).map_err(|message| {
                        ScenarioError::from(LocatedError {
                            file: scenario.name.clone(),
                            line: 0,
                            field: "--pcap".into(),
                            message,
                        })
                    })?;
                    w.run_until(Instant::ZERO + v.scenario.duration, |t| progress(vi, r, t));
                    pcap = w.pcap().map(|c| c.bytes().to_vec());
                    w.result(&v.scenario, run_seed)
                }
                None => run_once(&v.scenario, run_seed, |t| progress(vi, r, t))?,
            };
            events += result.events;
            hops += result.packet_hops;
            results.push(result);
        }
        variants.push(VariantReport {
            name: v.name.clone(),
            path_loss: v.path_loss,
            mode: v.mode.map(|m| m.to_string()),
            summary: summarize(&v.scenario, v.path_loss, &results),
            runs: results,
        });
    }
    Ok(ScenarioReport {
        pcap,
        scenario: scenario.name.clone(),
        description: scenario.description.clone(),
        variants,
        events,
        packet_hops: hops,
    })
}
