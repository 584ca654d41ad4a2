//! The lab's commands, `up`, `run`, `down` (`bench` is in `bench.rs`):
//! check that the programs the scenario runs are installed, build a
//! scenario's variant (its plan, carried out, and the routing converged),
//! run its flows with the link events timed from their start, report,
//! and tear down (every process stopped and waited for, the namespaces
//! and the lab's directory removed), also after a failure or Ctrl-C.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use braid_daemon::ctl::{Doc, Stats};
use braid_sim::FlowResult;

use crate::connect::connect_flow;
use crate::exec::{self, Built};
use crate::flows::{flood_flow, iperf_flow, probe_flow, spoof_flow, urgent_flow};
use crate::link::root_qdisc;
use crate::report::{print_table, write_report, LinkDrops, VariantRun};
use crate::scenario::{DaemonLog, FlowKind, Lab, LabVariant, Software};
use crate::{events, plan, programs, routing, teardown};

/// Builds `variant` of `lab` and, when it runs routing daemons, waits
/// until they have converged. The programs it needs are checked first.
pub fn build(lab: &Lab, variant: &LabVariant) -> anyhow::Result<Built> {
    programs::check(lab, std::slice::from_ref(variant), false, &[])?;
    let exe = std::env::current_exe()?;
    let steps = plan::plan(lab, variant, &exe)?;
    let mut built = exec::carry_out(lab, &steps)?;
    if matches!(
        variant.software,
        Software::Braid { .. } | Software::Babeld { .. } | Software::Ospf(_)
    ) {
        routing::wait_converged(lab, &mut built.daemons)?;
    }
    routing::wait_clients(lab)?;
    Ok(built)
}

/// `braid lab up`: builds the first variant (the programs it needs
/// checked first; it runs no flow) and leaves it running.
pub fn up(scenario: &Path, log: DaemonLog) -> anyhow::Result<ExitCode> {
    let mut lab = Lab::load(scenario)?;
    lab.log = log;
    let mut built = build(&lab, &lab.variants[0])?;
    built.keep = true;
    println!(
        "lab {} is up: {} routers. Namespaces: ip netns list | grep braid-{}-. Control sockets and logs: {}. Tear down: braid lab down {}",
        lab.name,
        lab.routers.len(),
        lab.name,
        lab.dir().display(),
        scenario.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `braid lab down`: stops every process `up` started (and whatever else
/// runs in the lab's namespaces) and waits until they have exited,
/// deletes the namespaces, and removes the lab's directory (`keep`: keeps
/// it, without its pid files).
pub fn down(scenario: &Path, keep: bool) -> anyhow::Result<ExitCode> {
    let lab = Lab::load(scenario)?;
    exec::check_capabilities()?;
    teardown::teardown(&lab, keep)?;
    if keep && lab.dir().exists() {
        println!(
            "lab {} is down; its files are kept in {}",
            lab.name,
            lab.dir().display()
        );
    } else {
        println!("lab {} is down", lab.name);
    }
    Ok(ExitCode::SUCCESS)
}

/// `braid lab run`: every variant in turn, then the report (a table, or
/// JSON; and report.json and report.html into `out`).
pub fn run(
    scenario: &Path,
    json: bool,
    out: Option<PathBuf>,
    log: DaemonLog,
    keep: bool,
) -> anyhow::Result<ExitCode> {
    let mut lab = Lab::load(scenario)?;
    lab.log = log;
    lab.keep = keep;
    programs::check(&lab, &lab.variants, true, &[])?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let mut reports = Vec::new();
    for v in &lab.variants {
        reports.push(run_variant(&lab, v, &stop)?);
    }
    let doc = serde_json::json!({
        "lab": lab.name,
        "description": lab.description,
        "variants": reports,
    });
    if let Some(dir) = &out {
        write_report(&lab, &reports, &doc, dir)?;
        eprintln!("report: {}", dir.join("report.html").display());
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_table(&lab, &reports)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Route changes so far, as the routing software counts them: every braid
/// daemon's `route_changes`, or FRR's OSPF adjacencies that left Full.
fn route_changes(lab: &Lab, software: &Software) -> Option<u64> {
    match software {
        Software::Braid { .. } => Some(
            (0..lab.routers.len())
                .filter_map(|i| routing::braid_stats(lab, i))
                .map(|d| d.body.stats.node.route_changes)
                .sum(),
        ),
        Software::Ospf(_) => Some(routing::frr::adjacencies_lost(lab)),
        _ => None,
    }
}

/// What the rate limiters (tbf at both ends of each rate-limited link)
/// have dropped; `None` when the lab has no such link.
fn rate_limit_drops(lab: &Lab) -> Option<u64> {
    let rated: Vec<usize> = (0..lab.links.len())
        .filter(|&j| lab.links[j].rate_bps.is_some())
        .collect();
    (!rated.is_empty()).then(|| {
        rated
            .iter()
            .flat_map(|&j| {
                let l = &lab.links[j];
                [lab.ns(l.a), lab.ns(l.b)].map(|ns| root_qdisc(&ns, &Lab::link_dev(j)).dropped)
            })
            .sum()
    })
}

/// Builds the lab for variant `v`, runs the flows (and the link events,
/// timed from the flows' start), collects every braid daemon's stats, and
/// tears down (the lab's directory kept if a flow failed or it was
/// interrupted).
pub fn run_variant(lab: &Lab, v: &LabVariant, stop: &AtomicBool) -> anyhow::Result<VariantRun> {
    let started = Instant::now();
    eprintln!(
        "lab {} [{}]: building {} routers, {} links",
        lab.name,
        v.name,
        lab.routers.len(),
        lab.links.len()
    );
    let mut built = build(lab, v)?;
    eprintln!(
        "lab {} [{}]: converged in {:.1} s; running {} flows",
        lab.name,
        v.name,
        started.elapsed().as_secs_f64(),
        lab.flows.len()
    );
    let mode = match &v.software {
        Software::Braid { mode, .. } => mode.clone(),
        Software::Babeld { hello } => format!("babeld {}s", hello.as_secs_f64()),
        Software::Ospf(o) => match o.bfd {
            Some((every, mult)) => format!(
                "ospf {}s/{}s + bfd {}ms x{mult}",
                o.hello.as_secs(),
                o.dead.as_secs(),
                every.as_millis()
            ),
            None => format!("ospf {}s/{}s", o.hello.as_secs(), o.dead.as_secs()),
        },
        Software::Kernel => "kernel".to_string(),
        Software::Mptcp => "mptcp".to_string(),
    };
    // Route changes count from here: the flows' start (convergence's are
    // not the scenario's doing).
    let changes_before = route_changes(lab, &v.software);
    let origin = Instant::now() + Duration::from_millis(100);
    let mut queued_at_down = None;
    let results: Vec<anyhow::Result<FlowResult>> = std::thread::scope(|s| {
        let events = s.spawn(|| -> anyhow::Result<Option<u64>> {
            let mut resolved = BTreeMap::new();
            let mut first_down = None;
            for e in &lab.events {
                if let Some(wait) = (origin + e.at).checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let plain = matches!(v.software, Software::Kernel);
                let queued = events::apply_event(lab, e, &mut resolved, plain)?;
                first_down = first_down.or(queued);
            }
            Ok(first_down)
        });
        let handles: Vec<_> = lab
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mode = &mode;
                s.spawn(move || match f.kind {
                    FlowKind::Iperf(t) => iperf_flow(lab, &v.software, mode, i, f, t, origin),
                    FlowKind::Urgent => urgent_flow(lab, mode, i, f, origin + f.start, stop),
                    FlowKind::Flood(d) => flood_flow(lab, f, d, origin + f.start),
                    FlowKind::Spoof => spoof_flow(lab, f, origin + f.start),
                    FlowKind::Probe | FlowKind::Connect => {
                        let run = if f.kind == FlowKind::Probe {
                            probe_flow
                        } else {
                            connect_flow
                        };
                        run(
                            lab,
                            mode,
                            i,
                            f,
                            origin + f.start,
                            Duration::from_secs(2),
                            stop,
                        )
                    }
                })
            })
            .collect();
        let mut out: Vec<anyhow::Result<FlowResult>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("flow thread failed")))
            })
            .collect();
        match events.join() {
            Ok(Ok(q)) => queued_at_down = q,
            Ok(Err(e)) => out.push(Err(e.context("applying a link event"))),
            Err(_) => out.push(Err(anyhow!("event thread failed"))),
        }
        out
    });
    let rate_limited = rate_limit_drops(lab);
    let stats: Vec<Doc<Stats>> = (0..lab.routers.len())
        .filter_map(|i| routing::braid_stats(lab, i))
        .collect();
    let emulator = built.stop_emulators();
    let link_drops = (rate_limited.is_some() || emulator.is_some()).then(|| LinkDrops {
        rate_limited: rate_limited.unwrap_or(0),
        emulator,
    });
    let route_changes = route_changes(lab, &v.software)
        .zip(changes_before)
        .map(|(after, before)| after.saturating_sub(before));
    let flows = results.into_iter().collect::<anyhow::Result<Vec<_>>>();
    let stopped = stop.load(Ordering::Relaxed);
    built.succeeded = flows.is_ok() && !stopped;
    drop(built);
    if stopped {
        bail!("interrupted; the lab was torn down");
    }
    let flows = flows?;
    Ok(VariantRun {
        variant: v.name.clone(),
        mode,
        flows,
        queued_at_down,
        daemons: stats,
        link_drops,
        route_changes,
    })
}
