//! What a lab run reports: a table on stdout, or JSON, and with `--out`
//! report.json and a self-contained report.html (tables and SVG charts),
//! per variant and flow; plus every braid daemon's counters.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use braid_daemon::ctl::{Doc, Stats};
use braid_sim::{html, FlowResult};

use crate::delay::EmulatorDrops;
use crate::scenario::Lab;

/// A TCP flow's retransmissions after the lab's first event, or "-".
pub fn after_event(f: &FlowResult) -> String {
    f.retransmits_after_event
        .map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// Writes report.json and a self-contained report.html: the flows' table
/// and bar charts of what was lost, the delay and (TCP) the goodput, per
/// variant and flow.
pub fn write_report(
    lab: &Lab,
    reports: &[VariantRun],
    doc: &serde_json::Value,
    dir: &Path,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(dir.join("report.json"), serde_json::to_string_pretty(doc)?)?;
    let mut sections = vec![flows_table(reports)];
    sections.extend(bar_charts(reports));
    sections.extend(delay_cdf(reports));
    sections.extend(goodput_over_time(reports));
    let intro = format!(
        "{} routers, {} links; {}. Real daemons and kernel sockets in network namespaces (braid lab).",
        lab.routers.len(),
        lab.links.len(),
        html::escape(&lab.description)
    );
    std::fs::write(
        dir.join("report.html"),
        html::page(&format!("lab {}", lab.name), &intro, &sections),
    )?;
    Ok(())
}

/// A flow's name in the charts: its variant's and its own.
fn label(r: &VariantRun, f: &FlowResult) -> String {
    format!("{} / {}", r.variant, f.name)
}

/// The report's table: a row per variant and flow.
fn flows_table(reports: &[VariantRun]) -> String {
    let rows: Vec<Vec<String>> = reports
        .iter()
        .flat_map(|r| {
            r.flows.iter().map(move |f| {
                vec![
                    r.variant.clone(),
                    f.name.clone(),
                    f.mode.clone(),
                    f.sent.to_string(),
                    match f.arrived_late {
                        0 => f.lost.to_string(),
                        late => format!("{} ({late} late)", f.lost),
                    },
                    format!("{:.2}", f.delay_mean_ms),
                    format!("{:.2}", f.delay_p99_ms),
                    format!("{:.1}", f.max_gap_ms),
                    format!("{:.2}", f.goodput_mbps),
                    f.rtt_ms.map_or("-".into(), |r| format!("{r:.2}")),
                    f.retransmits.to_string(),
                    after_event(f),
                ]
            })
        })
        .collect();
    html::table(
        &[
            "variant",
            "flow",
            "mode",
            "sent",
            "lost",
            "mean delay ms",
            "p99 ms",
            "longest gap ms",
            "TCP Mbit/s",
            "TCP RTT ms",
            "TCP retx",
            "retx in 2 s after the first event",
        ],
        &rows,
    )
}

/// Bar charts of the udp flows' losses, delays and gaps and the TCP
/// flows' goodput and retransmissions (a chart where some flow has a bar).
fn bar_charts(reports: &[VariantRun]) -> Vec<String> {
    let bars = |value: &dyn Fn(&FlowResult) -> f64, udp: bool| -> Vec<html::Bar> {
        reports
            .iter()
            .flat_map(|r| r.flows.iter().map(move |f| (r, f)))
            .filter(|(_, f)| (f.sent > 0) == udp)
            .map(|(r, f)| html::Bar::new(label(r, f), value(f)))
            .collect()
    };
    let mut sections = Vec::new();
    for (title, unit, v, udp) in [
        (
            "Packets lost",
            "",
            &(|f: &FlowResult| f.lost as f64) as &dyn Fn(&FlowResult) -> f64,
            true,
        ),
        (
            "Mean one-way delay",
            "ms",
            &|f: &FlowResult| f.delay_mean_ms,
            true,
        ),
        (
            "Longest gap between delivered packets",
            "ms",
            &|f: &FlowResult| f.max_gap_ms,
            true,
        ),
        (
            "TCP goodput",
            "Mbit/s",
            &|f: &FlowResult| f.goodput_mbps,
            false,
        ),
        (
            "TCP retransmissions",
            "",
            &|f: &FlowResult| f.retransmits as f64,
            false,
        ),
    ] {
        let b = bars(v, udp);
        if !b.is_empty() {
            sections.push(format!(
                "<h2>{}</h2>{}",
                html::escape(title),
                html::bar_chart(title, unit, &b, &[])
            ));
        }
    }
    sections
}

/// A line per variant and flow that has points.
fn lines(
    reports: &[VariantRun],
    points: &dyn Fn(&FlowResult) -> Vec<(f64, f64)>,
) -> Vec<html::Series> {
    reports
        .iter()
        .flat_map(|r| r.flows.iter().map(move |f| (r, f)))
        .map(|(r, f)| (label(r, f), points(f)))
        .filter(|(_, p)| !p.is_empty())
        .enumerate()
        .map(|(k, (label, points))| html::Series {
            label,
            points,
            color: k,
            dashed: false,
            scatter: false,
            spread: Vec::new(),
        })
        .collect()
}

/// The largest x (or y) of any point: where an axis ends.
fn largest(series: &[html::Series], axis: fn(&(f64, f64)) -> f64) -> f64 {
    series
        .iter()
        .flat_map(|s| s.points.iter().map(axis))
        .fold(0.0, f64::max)
        .max(1e-3)
}

/// One-way delay CDFs of the constant-rate flows (seed 000's figure 10
/// shape): a line per variant and flow.
fn delay_cdf(reports: &[VariantRun]) -> Option<String> {
    let cdf = lines(reports, &|f| {
        f.delay_cdf_ms
            .iter()
            .zip(braid_sim::CDF_QUANTILES)
            .map(|(&ms, q)| (ms, q * 100.0))
            .collect()
    });
    if cdf.is_empty() {
        return None;
    }
    let top = largest(&cdf, |p| p.0);
    Some(format!(
        "<h2>One-way delay (CDF)</h2>{}",
        html::line_chart(
            "One-way delay of the constant-rate flows",
            "ms",
            "% of packets delivered within",
            (0.0, top * 1.05),
            (0.0, 100.0),
            &cdf
        )
    ))
}

/// TCP goodput over time: a line per variant and flow (a stall is a dip
/// to zero).
fn goodput_over_time(reports: &[VariantRun]) -> Option<String> {
    let series = lines(reports, &|f| {
        f.goodput_series_mbps
            .iter()
            .enumerate()
            .map(|(s, &g)| (s as f64 + 1.0, g))
            .collect()
    });
    if series.is_empty() {
        return None;
    }
    let secs = series.iter().map(|s| s.points.len()).max().unwrap_or(1) as f64;
    let top = largest(&series, |p| p.1);
    Some(format!(
        "<h2>TCP goodput over time</h2>{}",
        html::line_chart(
            "TCP goodput over time",
            "second of the flow",
            "Mbit/s",
            (1.0, secs.max(2.0)),
            (0.0, top * 1.1),
            &series
        )
    ))
}

/// One variant's results: the flows, and every braid daemon's `stats`.
#[derive(Debug, serde::Serialize)]
pub struct VariantRun {
    pub variant: String,
    pub mode: String,
    pub flows: Vec<FlowResult>,
    /// Packets the link's queues held when the first `down` event took
    /// it (lost with it: what waited below the binding point).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued_at_down: Option<u64>,
    pub daemons: Vec<Doc<Stats>>,
    /// What the emulated links dropped themselves; absent when the lab
    /// has no rate-limited or delayed link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_drops: Option<LinkDrops>,
    /// Route changes at the routers while the flows ran, as their
    /// software counts them: braid daemons' `route_changes` summed; for
    /// FRR, OSPF adjacencies that left Full (each moves routes); absent
    /// for other software.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route_changes: Option<u64>,
}

/// Packets the lab's link emulation dropped while the flows ran, apart
/// from the loss a scenario asks for: what tells a flow's loss at a
/// bottleneck (`rate_limited`: the traffic offered to a link beyond its
/// rate) from loss this machine made (`emulator`: a delay emulator
/// descheduled too long), neither of them the routing's own.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct LinkDrops {
    /// Dropped by the rate limiters (tbf, both ends of every
    /// rate-limited link) because their queues were full.
    pub rate_limited: u64,
    /// Lost in the delay emulators, when the lab has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emulator: Option<EmulatorDrops>,
}

/// The report as a table, one line per variant and flow.
pub fn print_table(lab: &Lab, reports: &[VariantRun]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "lab {} ({})", lab.name, lab.description)?;
    writeln!(
        out,
        "{:<16} {:<16} {:<10} {:>7} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7} {:>6} {:>8}",
        "variant",
        "flow",
        "mode",
        "sent",
        "lost",
        "dup",
        "mean ms",
        "p50 ms",
        "p99 ms",
        "gap ms",
        "Mbit/s",
        "rtt ms",
        "retx",
        "retx@ev"
    )?;
    for r in reports {
        for f in &r.flows {
            writeln!(
                out,
                "{:<16} {:<16} {:<10} {:>7} {:>7} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>9.1} {:>8.2} {:>7} {:>6} {:>8}",
                r.variant,
                f.name,
                f.mode,
                f.sent,
                f.lost,
                f.duplicates,
                f.delay_mean_ms,
                f.delay_p50_ms,
                f.delay_p99_ms,
                f.max_gap_ms,
                f.goodput_mbps,
                f.rtt_ms.map_or("-".into(), |r| format!("{r:.2}")),
                f.retransmits,
                after_event(f)
            )?;
        }
    }
    for r in reports {
        for f in r.flows.iter().filter(|f| f.arrived_late > 0) {
            writeln!(
                out,
                "{} / {}: {} of the {} lost arrived after the receiver had closed the test \
                 (in flight on a slower path when the sender's end overtook them)",
                r.variant, f.name, f.arrived_late, f.lost
            )?;
        }
        for f in r.flows.iter().filter(|f| f.receiver_dropped > 0) {
            writeln!(
                out,
                "{} / {}: {} of the {} lost were dropped by the receiving host for a full \
                 socket buffer (the receiver not scheduled in time)",
                r.variant, f.name, f.receiver_dropped, f.lost
            )?;
        }
        if let Some(d) = r.link_drops {
            let emulator = d.emulator.map_or(String::new(), |e| {
                format!(
                    ", {} in the delay emulators ({} queue full, {} socket, {} send; \
                     {} sent 5 ms or more late, up to {} ms)",
                    e.total(),
                    e.queue_full,
                    e.socket,
                    e.send_failed,
                    e.sent_late,
                    e.max_late_ms
                )
            });
            writeln!(
                out,
                "{}: links dropped {} packets at their rate limits{emulator}",
                r.variant, d.rate_limited
            )?;
        }
        if let Some(q) = r.queued_at_down {
            writeln!(
                out,
                "{}: {q} packets were queued for the link when it went down (lost with it)",
                r.variant
            )?;
        }
    }
    Ok(())
}
