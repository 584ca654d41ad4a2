//! Checks the traffic: `[random_flows]` (pairs drawn from the scenario's
//! seed) and each `[[flows]]` entry (constant bit rate, iperf3-style UDP
//! at a rate, or TCP), each inside the scenario's run.

use std::time::Duration;

use rand_chacha::rand_core::{RngCore, SeedableRng};

use super::errors::Checker;
use super::raw::{RawFlow, RawRandomFlows};
use super::spec::FlowSpec;

/// The random flows (none without the table); None (recorded) when the
/// table is wrong. Drawn when the topology's node names are known.
pub(super) fn check_random_flows(
    ck: &mut Checker,
    raw: Option<&RawRandomFlows>,
    names: Option<&[String]>,
    seed: u64,
) -> Option<Vec<FlowSpec>> {
    let Some(rf) = raw else {
        return Some(Vec::new());
    };
    let before = ck.count();
    // Pairs from the scenario's seed: every run compares the same pairs.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x0f10_f10f);
    if names.is_some_and(|n| n.len() < 2) {
        ck.refuse(
            None,
            "random_flows",
            "needs a topology of at least two nodes",
        );
    }
    let interval = ck.duration(
        &rf.interval,
        "random_flows.interval",
        Duration::from_millis(20),
    );
    let start = ck.duration(&rf.start, "random_flows.start", Duration::from_secs(30));
    let every = ck.duration(&rf.every, "random_flows.every", Duration::ZERO);
    let duration = ck.optional_duration(&rf.duration, "random_flows.duration");
    let tcp = match rf.kind.as_ref().map(|k| k.get_ref().as_str()) {
        None | Some("cbr") => Some(false),
        Some("tcp") => Some(true),
        Some(other) => {
            ck.refuse(
                rf.kind.as_ref().map(|k| k.span()),
                "random_flows.kind",
                format!("unknown flow kind \"{other}\" (cbr, tcp)"),
            );
            None
        }
    };
    let mode = ck.optional_mode(&rf.mode, "random_flows.mode");
    let (
        Some(names),
        Some(interval),
        Some(start),
        Some(every),
        Some(duration),
        Some(tcp),
        Some(mode),
    ) = (names, interval, start, every, duration, tcp, mode)
    else {
        return None;
    };
    if ck.count() != before {
        return None;
    }
    let mut flows = Vec::new();
    for i in 0..rf.flows {
        let a = (rng.next_u64() % names.len() as u64) as usize;
        let mut b = (rng.next_u64() % (names.len() as u64 - 1)) as usize;
        if b >= a {
            b += 1;
        }
        flows.push(FlowSpec {
            name: format!("random{i}"),
            from: names[a].clone(),
            to: names[b].clone(),
            size: rf.size.unwrap_or(160).clamp(44, 9000),
            interval: interval.max(Duration::from_micros(1)),
            count: rf.count.unwrap_or(500),
            // Flow i starts `every` after flow i-1 (one at a time, as
            // SrcRR measured its pairs), or all together.
            start: start + every * i as u32,
            mode,
            tcp_bytes: tcp.then_some(1 << 30),
            duration,
        });
    }
    Some(flows)
}

/// The listed flows, named `flow{first + i}` when they have no name (the
/// random flows come first); None (recorded) when one is wrong. Each must
/// run inside the scenario's `run_for` (when that is known).
pub(super) fn check_flows(
    ck: &mut Checker,
    raw: &[RawFlow],
    first: usize,
    run_for: Option<Duration>,
) -> Option<Vec<FlowSpec>> {
    let before = ck.count();
    let mut flows = Vec::new();
    for (i, f) in raw.iter().enumerate() {
        let field = format!("flows[{i}]");
        let flow_before = ck.count();
        let Some(flow) = check_flow(ck, f, &field, first + i) else {
            continue;
        };
        if ck.count() != flow_before {
            continue;
        }
        if let Some(run_for) = run_for {
            check_inside_run(ck, f, &flow, &field, run_for);
        }
        flows.push(flow);
    }
    (ck.count() == before).then_some(flows)
}

/// One flow's own fields.
fn check_flow(ck: &mut Checker, f: &RawFlow, field: &str, index: usize) -> Option<FlowSpec> {
    let kind = f.kind.as_ref().map_or("cbr", |k| k.get_ref().as_str());
    let tcp_bytes = match kind {
        "cbr" | "udp" => Some(None),
        "tcp" => Some(Some(f.bytes.unwrap_or(1 << 30))),
        other => {
            ck.refuse(
                f.kind.as_ref().map(|k| k.span()),
                &format!("{field}.kind"),
                format!("unknown flow kind \"{other}\" (cbr, udp, tcp)"),
            );
            None
        }
    };
    let duration = ck.optional_duration(&f.duration, &format!("{field}.duration"));
    let size = f
        .size
        .unwrap_or(if kind == "udp" { 1400 } else { 160 })
        .clamp(44, 9000);
    let mut interval = ck.duration(
        &f.interval,
        &format!("{field}.interval"),
        Duration::from_millis(20),
    );
    let mut count = f.count.unwrap_or(500);
    if kind == "udp" {
        // iperf3-style UDP at a rate: above the path's capacity, it
        // saturates it.
        match (&f.rate, duration) {
            (None, _) => ck.refuse(
                f.kind.as_ref().map(|k| k.span()),
                &format!("{field}.rate"),
                "a udp flow needs rate = \"10Mbit\" (and duration)",
            ),
            (Some(rate), duration) => {
                let bps = ck.rate(rate, &format!("{field}.rate"));
                if let (Some(bps), Some(duration)) = (bps, duration) {
                    let lasts = duration.unwrap_or(Duration::from_secs(10));
                    let every = Duration::from_nanos(
                        ((size as u64 * 8).saturating_mul(1_000_000_000) / bps).max(1),
                    );
                    interval = Some(every);
                    count = (lasts.as_nanos() / every.as_nanos().max(1)) as u64;
                    if count > 10_000_000 {
                        ck.refuse(
                            Some(rate.span()),
                            &format!("{field}.rate"),
                            "more than 10 million packets: lower the rate or the duration",
                        );
                    }
                }
            }
        }
    } else if f.rate.is_some() {
        ck.refuse(
            f.rate.as_ref().map(|r| r.span()),
            &format!("{field}.rate"),
            "rate is for udp flows (cbr flows set size and interval)",
        );
    }
    let start = ck.duration(&f.start, &format!("{field}.start"), Duration::from_secs(30));
    let mode = ck.optional_mode(&f.mode, &format!("{field}.mode"));
    let flow = FlowSpec {
        name: f.name.clone().unwrap_or_else(|| format!("flow{index}")),
        from: f.from.get_ref().clone(),
        to: f.to.get_ref().clone(),
        size,
        interval: interval?,
        count,
        start: start?,
        mode: mode?,
        tcp_bytes: tcp_bytes?,
        duration: duration?,
    };
    if flow.interval.is_zero() {
        ck.refuse(
            f.interval.as_ref().map(|s| s.span()),
            &format!("{field}.interval"),
            "must be positive",
        );
    }
    Some(flow)
}

/// A flow must run inside the scenario: one that starts after it would
/// report nothing sent as all delivered, one that outlasts it would be cut
/// and its rate misread.
fn check_inside_run(
    ck: &mut Checker,
    f: &RawFlow,
    flow: &FlowSpec,
    field: &str,
    run_for: Duration,
) {
    // Errors point at the flow (its `from`) when it gives no start.
    let at = f.start.as_ref().map_or_else(|| f.from.span(), |s| s.span());
    if flow.start >= run_for {
        ck.refuse(
            Some(at),
            &format!("{field}.start"),
            format!(
                "starts at {:?}, not before the scenario's end ({:?}): move it or lengthen `duration`",
                flow.start, run_for
            ),
        );
        return;
    }
    let lasts = match (flow.tcp_bytes, flow.duration) {
        (_, Some(d)) => Some((d, "duration")),
        (None, None) => {
            let count = flow.count.min(u64::from(u32::MAX)) as u32;
            Some((
                flow.interval.checked_mul(count).unwrap_or(Duration::MAX),
                "count",
            ))
        }
        (Some(_), None) => None,
    };
    if let Some((lasts, what)) = lasts {
        if flow.start.saturating_add(lasts) > run_for {
            ck.refuse(
                Some(at),
                &format!("{field}.{what}"),
                format!(
                    "runs from {:?} to {:?}, past the scenario's end ({:?}): shorten it or lengthen `duration`",
                    flow.start,
                    flow.start.saturating_add(lasts),
                    run_for
                ),
            );
        }
    }
}
