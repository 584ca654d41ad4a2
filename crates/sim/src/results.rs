//! What one run of a scenario measured: per flow (delivery, duplicates,
//! delay, outages, goodput, retransmissions) and per link. The world
//! fills these in; reports summarise them; the lab fills the same types
//! from real traffic.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::link::LinkStats;

/// Results of one flow in one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FlowResult {
    pub name: String,
    pub mode: String,
    pub sent: u64,
    pub delivered: u64,
    pub duplicates: u64,
    pub lost: u64,
    pub loss_ratio: f64,
    pub delay_mean_ms: f64,
    pub delay_p50_ms: f64,
    pub delay_p99_ms: f64,
    /// Packets the ingress sent per data packet (copies and repair).
    pub overhead: f64,
    /// Longest time between two packets delivered in a row (an outage).
    pub max_gap_ms: f64,
    /// Constant-rate flows: every gap between two packets delivered in a
    /// row longer than five packet intervals (and 100 ms), in order; at
    /// most [`MAX_OUTAGES`] (the first ones).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outages: Vec<Outage>,
    /// Bytes received (in order, for TCP) per second of the flow, Mbit/s.
    pub goodput_mbps: f64,
    /// TCP: segments the sender sent again.
    pub retransmits: u64,
    /// Lab TCP flows with link events: segments sent again in the 2 s
    /// after the first event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits_after_event: Option<u64>,
    /// Lab TCP flows: ICMP "destination unreachable" messages the sending
    /// host received during the flow (its `Icmp: InDestUnreachs`); where
    /// every route exists, "fragmentation needed": packets too big for
    /// the path, each one lost and sent again smaller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable_heard: Option<u64>,
    /// Lab TCP flows: goodput in each second of the flow, Mbit/s, as the
    /// receiver counted it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub goodput_series_mbps: Vec<f64>,
    /// Lab TCP flows: the sender's mean smoothed round-trip time, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    /// Lab constant-rate flows: packets lost among those sent in each
    /// second of the flow (when a loss happened).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost_series: Vec<u64>,
    /// Lab constant-rate flows: the one-way delay at each of
    /// [`CDF_QUANTILES`], ms (a CDF).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delay_cdf_ms: Vec<f64>,
    /// Lab iperf3 UDP flows: datagrams that reached the receiving host
    /// after its iperf3 had closed the test (the host's `Udp: NoPorts`,
    /// read until it stays still): in flight on a slower path when the
    /// sender's end of the test overtook them on a faster one (the
    /// host's count: at most the flow's `lost`). iperf3 counts them in
    /// `lost`.
    #[serde(skip_serializing_if = "is_zero")]
    pub arrived_late: u64,
    /// Lab iperf3 UDP flows: datagrams the receiving host's kernel
    /// dropped because the receiver's socket buffer was full (its
    /// `Udp: RcvbufErrors`: the receiving program not scheduled in time).
    /// iperf3 counts them in `lost`.
    #[serde(skip_serializing_if = "is_zero")]
    pub receiver_dropped: u64,
    /// Lab flows that measure something else (a flood: what it sent, the
    /// flooded daemon's memory), as the flow's runner reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

/// The quantiles a delay CDF is given at.
pub const CDF_QUANTILES: [f64; 13] = [
    0.0, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0,
];

/// The delays (µs, sorted) at [`CDF_QUANTILES`], ms; empty without delays.
pub fn delay_cdf(sorted_us: &[u64]) -> Vec<f64> {
    CDF_QUANTILES
        .iter()
        .filter_map(|&q| quantile(sorted_us, q))
        .map(|us| us as f64 / 1000.0)
        .collect()
}

/// The `q` quantile (0 to 1) of `sorted` (ascending), the nearest rank
/// rounded; `None` when it is empty.
pub fn quantile<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let last = sorted.len().checked_sub(1)?;
    sorted
        .get((last as f64 * q.clamp(0.0, 1.0)).round() as usize)
        .copied()
}

/// Most outages recorded per flow.
pub const MAX_OUTAGES: usize = 64;

/// A time a flow delivered nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Outage {
    /// When the last packet before the gap arrived, seconds into the run.
    pub from_s: f64,
    /// How long until the next one arrived.
    pub ms: f64,
}

/// Results of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunResult {
    pub seed: u64,
    pub flows: Vec<FlowResult>,
    pub events: u64,
    /// Packets carried across one link.
    pub packet_hops: u64,
    /// What the nodes reported, by kind (`NodeEvent::kind`), over all
    /// nodes: neighbors up and down, route and mode changes, datagrams
    /// refused.
    pub node_events: BTreeMap<String, u64>,
    pub link_bytes: u64,
    pub links: BTreeMap<String, LinkStats>,
    /// Datagrams hostile strangers sent (`[[strangers]]`), every node in
    /// range counted once.
    #[serde(skip_serializing_if = "is_zero")]
    pub injected: u64,
    /// How long advertisements took to reach every router (`[node]
    /// watch_flooding = true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flooding: Option<FloodStats>,
    /// What one router holds and sends, at the end of the run.
    pub routers: RouterStats,
    /// Links cut on flows' paths (`[[path_cuts]]`), one per flow cut.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<CutResult>,
}

/// A link cut on a flow's path (`[[path_cuts]]`): which (`None` when the
/// flow's path had no link inside its ingress's area, or it had no path),
/// when, and the longest time the flow then delivered nothing (0: never
/// longer than its outage threshold, the larger of 100 ms and five
/// intervals; `None`: nothing from the cut to the flow's end).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CutResult {
    pub flow: usize,
    pub link: Option<String>,
    pub at_s: f64,
    pub outage_ms: Option<f64>,
}

/// Per router: its link-state database at the end of the run (mean and
/// largest number of advertisements held) and the control traffic it
/// broadcast (probes and floods), bytes per second of the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RouterStats {
    pub database_mean: f64,
    pub database_max: usize,
    pub control_bytes_per_s: f64,
}

/// Flooding times: of the watched origins' advertisement instances, how
/// many were issued, how many reached every other router (the others
/// were superseded first), and the time from issue to the last router
/// among those, ms.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FloodStats {
    pub issued: u64,
    pub complete: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Mean, median and 99th percentile of one-way delays given in
/// microseconds, in milliseconds (zeros when there are none). Sorts
/// `delays_us`. The simulator and the lab report delays through this.
pub fn delay_stats(delays_us: &mut [u64]) -> (f64, f64, f64) {
    if delays_us.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    delays_us.sort_unstable();
    let pct = |q: f64| quantile(delays_us, q).unwrap_or(0) as f64 / 1000.0;
    let mean = delays_us.iter().sum::<u64>() as f64 / delays_us.len() as f64 / 1000.0;
    (mean, pct(0.5), pct(0.99))
}
