//! `braid lab soak`: a lab scenario's first variant left running for a
//! long time at a fixed load (its first UDP flow, sent without end), with
//! every braid daemon's memory sampled every 10 s and the stream's loss
//! counted per minute. It fails (exit code 1) when a daemon's memory grew
//! past a bound: its resident size at the end against the largest in the
//! first minute (the warm-up: tables filling, buffers reaching their
//! working size). Progress is printed every minute.

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Serialize;

use crate::flows::{receive_until, rss_kb};
use crate::ns::socket_in;
use crate::run::build;
use crate::scenario::{DaemonLog, FlowKind, Lab};

/// Memory is sampled this often.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// The warm-up whose largest sample is the reference.
pub const WARM_UP: Duration = Duration::from_secs(60);

/// One memory sample: seconds since the load began, kB per router.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub t_s: f64,
    pub rss_kb: BTreeMap<String, u64>,
}

/// What a soak measured.
#[derive(Debug, Clone, Serialize)]
pub struct SoakReport {
    pub lab: String,
    pub variant: String,
    pub seconds: f64,
    pub bound_kb: u64,
    pub flow: String,
    pub sent: u64,
    pub received: u64,
    /// Datagrams sent in each minute that never arrived (the last minute
    /// counted once the stream has drained).
    pub lost_per_minute: Vec<u64>,
    pub samples: Vec<Sample>,
    /// Per router: the reference (largest in the warm-up), the last
    /// sample, and the growth.
    pub growth_kb: BTreeMap<String, i64>,
    /// Routers whose growth exceeded the bound.
    pub grew_past_bound: Vec<String>,
}

/// Per router, the last sample against the largest within the warm-up
/// (the samples' times in seconds); a router missing from a sample (a
/// daemon that died) has no growth figure.
pub fn growth(samples: &[Sample], warm_up: Duration) -> BTreeMap<String, i64> {
    let mut reference: BTreeMap<&str, u64> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.t_s <= warm_up.as_secs_f64()) {
        for (r, &kb) in &s.rss_kb {
            let e = reference.entry(r).or_insert(kb);
            *e = (*e).max(kb);
        }
    }
    let Some(last) = samples.last() else {
        return BTreeMap::new();
    };
    last.rss_kb
        .iter()
        .filter_map(|(r, &kb)| {
            reference
                .get(r.as_str())
                .map(|&base| (r.clone(), kb as i64 - base as i64))
        })
        .collect()
}

/// Runs the soak: `duration` of load, memory bounded by `bound_kb` of
/// growth per daemon.
pub fn soak(
    scenario: &Path,
    duration: Duration,
    bound_kb: u64,
    log: DaemonLog,
    keep: bool,
) -> anyhow::Result<(SoakReport, bool)> {
    if duration < Duration::from_secs(10) || duration > Duration::from_secs(24 * 3600) {
        bail!("a soak lasts 10 s to 24 h");
    }
    let mut lab = Lab::load(scenario)?;
    lab.log = log;
    lab.keep = keep;
    let variant = lab.variants[0].clone();
    let f = lab
        .flows
        .iter()
        .find(|f| f.kind == FlowKind::Probe)
        .cloned()
        .with_context(|| format!("{}: a soak needs a udp flow (its load)", lab.name))?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    eprintln!(
        "soak {} [{}]: building; then {:.0} s of {} ({} B every {:?})",
        lab.name,
        variant.name,
        duration.as_secs_f64(),
        f.name,
        f.size,
        f.interval
    );
    let mut built = build(&lab, &variant)?;
    let port = 9100;
    let rx = socket_in(
        &lab.end_ns(f.to),
        SocketAddr::new(lab.flow_addr(&f, f.to), port),
    )?;
    let _ = socket2::SockRef::from(&rx).set_recv_buffer_size(8 << 20);
    let tx = socket_in(
        &lab.end_ns(f.from),
        SocketAddr::new(lab.flow_addr(&f, f.from), 0),
    )?;
    let dst = SocketAddr::new(lab.flow_addr(&f, f.to), port);
    let minutes = duration.as_secs().div_ceil(60) as usize;
    let per_minute: Arc<Vec<AtomicU64>> =
        Arc::new((0..minutes).map(|_| AtomicU64::new(0)).collect());
    let received = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let end = start + duration;
    let drain = Duration::from_secs(2);
    let receiver = receive(rx, end + drain, f.interval, &per_minute, &received);
    let mut samples = Vec::new();
    let mut sent = 0u64;
    let mut sent_per_minute = vec![0u64; minutes];
    let mut payload = vec![0u8; f.size.max(8)];
    let mut next_sample = start;
    let mut next_report = start + Duration::from_secs(60);
    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= next_sample {
            next_sample += SAMPLE_EVERY;
            samples.push(sample(&lab, now.duration_since(start)));
        }
        if now >= next_report {
            next_report += Duration::from_secs(60);
            let m = (now.duration_since(start).as_secs() / 60) as usize;
            let last = samples.last().map(|s| &s.rss_kb);
            eprintln!(
                "soak {}: minute {m}/{minutes}: {} sent, {} received; RSS kB {:?}",
                lab.name,
                sent,
                received.load(Ordering::Relaxed),
                last
            );
        }
        let due = start + f.interval * sent as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait.min(Duration::from_millis(100)));
            continue;
        }
        payload[..8].copy_from_slice(&sent.to_be_bytes());
        if tx.send_to(&payload, dst).is_ok() {
            let m = (f.interval.as_secs_f64() * sent as f64 / 60.0) as usize;
            if let Some(c) = sent_per_minute.get_mut(m) {
                *c += 1;
            }
        }
        sent += 1;
    }
    let _ = receiver.join();
    let seconds = start.elapsed().as_secs_f64();
    let growth_kb = growth(&samples, WARM_UP);
    let grew_past_bound: Vec<String> = growth_kb
        .iter()
        .filter(|(_, &g)| g > bound_kb as i64)
        .map(|(r, _)| r.clone())
        .collect();
    let lost_per_minute = sent_per_minute
        .iter()
        .zip(per_minute.iter())
        .map(|(&s, r)| s.saturating_sub(r.load(Ordering::Relaxed)))
        .collect();
    let ok = grew_past_bound.is_empty() && !stop.load(Ordering::Relaxed);
    // A failed soak keeps the daemons' logs.
    built.succeeded = ok;
    drop(built);
    Ok((
        SoakReport {
            lab: lab.name.clone(),
            variant: variant.name.clone(),
            seconds,
            bound_kb,
            flow: f.name.clone(),
            sent,
            received: received.load(Ordering::Relaxed),
            lost_per_minute,
            samples,
            growth_kb,
            grew_past_bound,
        },
        ok,
    ))
}

/// Every braid daemon's memory now, `since` the load began.
fn sample(lab: &Lab, since: Duration) -> Sample {
    Sample {
        t_s: since.as_secs_f64(),
        rss_kb: (0..lab.routers.len())
            .filter_map(|i| Some((lab.routers[i].name.clone(), rss_kb(lab, i)?)))
            .collect(),
    }
}

/// The receiving end of the load until `end`: counts each datagram in
/// `received` and in the minute it was sent (from its sequence number
/// and the flow's `interval`).
fn receive(
    rx: UdpSocket,
    end: Instant,
    interval: Duration,
    per_minute: &Arc<Vec<AtomicU64>>,
    received: &Arc<AtomicU64>,
) -> JoinHandle<()> {
    let (per_minute, received) = (per_minute.clone(), received.clone());
    std::thread::spawn(move || {
        receive_until(&rx, end, 8, |datagram| {
            let seq = u64::from_be_bytes(datagram[..8].try_into().unwrap_or_default());
            // The minute it was sent in.
            let m = (interval.as_secs_f64() * seq as f64 / 60.0) as usize;
            if let Some(c) = per_minute.get(m) {
                c.fetch_add(1, Ordering::Relaxed);
            }
            received.fetch_add(1, Ordering::Relaxed);
        });
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: f64, a: u64, b: u64) -> Sample {
        Sample {
            t_s: t,
            rss_kb: [("a".to_string(), a), ("b".to_string(), b)]
                .into_iter()
                .collect(),
        }
    }

    #[test]
    fn growth_is_the_last_sample_against_the_warm_ups_largest() {
        let samples = [
            at(0.0, 100, 500),
            at(30.0, 180, 400),
            at(90.0, 150, 900),
            at(600.0, 170, 2500),
        ];
        let g = growth(&samples, WARM_UP);
        assert_eq!(g["a"], -10, "below its warm-up peak");
        assert_eq!(g["b"], 2000);
        assert!(growth(&[], WARM_UP).is_empty());
        // A router that vanished from the last sample has no figure.
        let mut last = at(700.0, 1, 1);
        last.rss_kb.remove("b");
        let g = growth(&[at(0.0, 10, 10), last], WARM_UP);
        assert_eq!(g.len(), 1);
    }
}
