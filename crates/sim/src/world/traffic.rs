//! The hosts' side of a run: each flow's packets (constant-bit-rate UDP
//! with a sequence number and a send time, or a TCP connection's two
//! ends), what arrived and when, and the flow's result.
//!
//! Every node serves one host address: node index i has
//! 198.18.(i/256).(i%256) as a /32 (from the benchmarking range). Flow i
//! sends to UDP port 10000+i, which the nodes classify as class i+1, so
//! each flow can have its own redundancy mode.

use std::time::Duration;

use braid_proto::time::Instant;

use crate::results::{delay_stats, FlowResult, Outage, MAX_OUTAGES};
use crate::scenario::FlowSpec;
use crate::tcp::TcpHost;

/// Flow i's packets go to UDP port `FLOW_PORT_BASE + i`.
pub(super) const FLOW_PORT_BASE: u16 = 10_000;
/// Where a UDP packet's payload (sequence number, send time) starts.
const PAYLOAD_OFFSET: usize = 28;

/// The traffic class of flow `i` (flows beyond 254 share the last class).
pub(super) fn flow_class(i: usize) -> u8 {
    (i + 1).min(254) as u8
}

/// The host address node `i` serves.
pub fn host_addr(i: u32) -> [u8; 4] {
    [198, 18 + (i >> 16) as u8, (i >> 8) as u8, i as u8]
}

/// One flow between the hosts of two nodes, and what it measured.
pub(super) struct Flow {
    pub(super) from: u32,
    pub(super) to: u32,
    pub(super) port: u16,
    pub(super) size: usize,
    pub(super) interval: Duration,
    pub(super) count: u64,
    pub(super) sent: u64,
    delivered: Vec<bool>,
    duplicates: u64,
    delays_us: Vec<u64>,
    last_arrival: Option<Instant>,
    max_gap_us: u64,
    outages: Vec<Outage>,
    /// For TCP flows: the two ends, once started, and their next timers.
    pub(super) tcp: Option<Box<TcpPair>>,
    pub(super) tcp_bytes: Option<u64>,
    pub(super) started: Instant,
    /// TCP: the flow stops this long after it starts.
    pub(super) duration: Option<Duration>,
    /// TCP: when it stopped, and the bytes received in order by then.
    pub(super) stopped: Option<(Instant, u64)>,
    /// TCP: segments the sender sent again (seen on the wire).
    retransmits: u64,
    /// TCP: the highest sequence number sent so far (end of segment).
    sent_up_to: Option<u32>,
}

/// A TCP flow's two ends and when each wants to run next.
pub(super) struct TcpPair {
    pub(super) sender: TcpHost,
    pub(super) receiver: TcpHost,
    pub(super) sender_at: Option<Instant>,
    pub(super) receiver_at: Option<Instant>,
}

impl Flow {
    /// Flow `spec` from node `from` to node `to`, sending to `port`.
    pub(super) fn new(spec: &FlowSpec, from: u32, to: u32, port: u16) -> Flow {
        Flow {
            from,
            to,
            port,
            size: spec.size,
            interval: spec.interval,
            count: spec.count,
            sent: 0,
            delivered: vec![false; spec.count as usize],
            duplicates: 0,
            delays_us: Vec::new(),
            last_arrival: None,
            max_gap_us: 0,
            outages: Vec::new(),
            tcp: None,
            tcp_bytes: spec.tcp_bytes,
            started: Instant::ZERO + spec.start,
            duration: spec.duration,
            stopped: None,
            retransmits: 0,
            sent_up_to: None,
        }
    }

    /// The flow's UDP packet number `seq`, sent `now`.
    pub(super) fn packet(&self, seq: u64, now: Instant) -> Vec<u8> {
        let len = self.size.max(PAYLOAD_OFFSET + 16);
        let mut p = vec![0u8; len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        p[8] = 64;
        p[9] = 17;
        p[12..16].copy_from_slice(&host_addr(self.from));
        p[16..20].copy_from_slice(&host_addr(self.to));
        p[20..22].copy_from_slice(&self.port.to_be_bytes());
        p[22..24].copy_from_slice(&self.port.to_be_bytes());
        p[24..26].copy_from_slice(&((len - 20) as u16).to_be_bytes());
        let b = &mut p[PAYLOAD_OFFSET..];
        b[0..4].copy_from_slice(&(seq as u32).to_be_bytes());
        b[8..16].copy_from_slice(&now.as_micros().to_be_bytes());
        p
    }

    /// The flow a UDP packet delivered to a host belongs to: its index,
    /// by destination port (None when too short to be one of them).
    pub(super) fn index_of(p: &[u8]) -> Option<usize> {
        if p.len() < PAYLOAD_OFFSET + 16 {
            return None;
        }
        let port = u16::from_be_bytes([p[22], p[23]]);
        port.checked_sub(FLOW_PORT_BASE).map(usize::from)
    }

    /// Records a packet of this flow arriving at its destination `now`:
    /// its delay, or a duplicate; the gap since the last one, and an
    /// outage when that gap is long.
    pub(super) fn arrived(&mut self, p: &[u8], now: Instant) {
        let b = &p[PAYLOAD_OFFSET..];
        let seq = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let sent_us = u64::from_be_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]);
        match self.delivered.get_mut(seq) {
            Some(d) if *d => self.duplicates += 1,
            Some(d) => {
                *d = true;
                self.delays_us.push(now.as_micros().saturating_sub(sent_us));
                if let Some(last) = self.last_arrival {
                    let gap = now.since(last);
                    self.max_gap_us = self.max_gap_us.max(gap.as_micros() as u64);
                    let outage = (self.interval * 5).max(Duration::from_millis(100));
                    if gap > outage && self.outages.len() < MAX_OUTAGES {
                        self.outages.push(Outage {
                            from_s: last.as_micros() as f64 / 1e6,
                            ms: gap.as_micros() as f64 / 1000.0,
                        });
                    }
                }
                self.last_arrival = Some(now);
            }
            None => {}
        }
    }

    /// Counts a TCP segment that carries data sent before (a
    /// retransmission, as the kernel's TCPRetransSegs counts them).
    pub(super) fn count_retransmit(&mut self, p: &[u8]) {
        let ihl = (p.first().map_or(0, |b| b & 0x0f) as usize) * 4;
        if p.len() < ihl + 20 {
            return;
        }
        let total = u16::from_be_bytes([p[2], p[3]]) as usize;
        let doff = (p[ihl + 12] >> 4) as usize * 4;
        let len = total.saturating_sub(ihl + doff) as u32;
        if len == 0 {
            return;
        }
        let seq = u32::from_be_bytes([p[ihl + 4], p[ihl + 5], p[ihl + 6], p[ihl + 7]]);
        let end = seq.wrapping_add(len);
        match self.sent_up_to {
            Some(top) if (end.wrapping_sub(top) as i32) <= 0 => self.retransmits += 1,
            _ => self.sent_up_to = Some(end),
        }
    }

    /// What the flow measured by `now`; `mode` is the redundancy mode it
    /// ran with, `overhead` what its ingress sent per data packet (asked
    /// only for a UDP flow).
    /// The times the flow delivered nothing for longer than its outage
    /// threshold (the first [`MAX_OUTAGES`]).
    pub(super) fn outages(&self) -> &[Outage] {
        &self.outages
    }

    /// When the flow last delivered a packet.
    pub(super) fn last_arrival(&self) -> Option<Instant> {
        self.last_arrival
    }

    pub(super) fn result(
        &self,
        spec: &FlowSpec,
        mode: String,
        now: Instant,
        overhead: impl FnOnce() -> f64,
    ) -> FlowResult {
        let tcp_state = match (&self.stopped, self.tcp.as_ref()) {
            (Some((at, got)), _) => Some((*at, *got)),
            (None, Some(pair)) => Some((now, pair.receiver.received)),
            (None, None) => None,
        };
        if let (Some(bytes), Some((until, got))) = (self.tcp_bytes, tcp_state) {
            let secs = until.since(self.started).as_secs_f64().max(1e-9);
            return FlowResult {
                name: spec.name.clone(),
                mode,
                sent: if self.duration.is_some() { got } else { bytes },
                delivered: got,
                lost: if self.duration.is_some() {
                    0
                } else {
                    bytes.saturating_sub(got)
                },
                loss_ratio: 0.0,
                retransmits: self.retransmits,
                goodput_mbps: got as f64 * 8.0 / secs / 1e6,
                ..FlowResult::default()
            };
        }
        let delivered = self.delivered.iter().filter(|&&d| d).count() as u64;
        let mut d = self.delays_us.clone();
        let (delay_mean_ms, delay_p50_ms, delay_p99_ms) = delay_stats(&mut d);
        FlowResult {
            name: spec.name.clone(),
            mode,
            sent: self.sent,
            delivered,
            duplicates: self.duplicates,
            lost: self.sent - delivered,
            loss_ratio: if self.sent == 0 {
                0.0
            } else {
                1.0 - delivered as f64 / self.sent as f64
            },
            delay_mean_ms,
            delay_p50_ms,
            delay_p99_ms,
            overhead: overhead(),
            max_gap_ms: self.max_gap_us as f64 / 1000.0,
            outages: self.outages.clone(),
            lost_series: lost_per_second(
                &self.delivered[..(self.sent as usize).min(self.delivered.len())],
                self.interval,
            ),
            goodput_mbps: {
                let secs = (self.interval * self.count.max(1) as u32)
                    .as_secs_f64()
                    .max(1e-9);
                (delivered * self.size as u64) as f64 * 8.0 / secs / 1e6
            },
            ..FlowResult::default()
        }
    }
}

/// Packets lost among those sent in each second of a constant-rate flow
/// (packet `i` leaves `i` intervals after the flow's start).
fn lost_per_second(delivered: &[bool], interval: Duration) -> Vec<u64> {
    let per_second = (1_000_000_000 / interval.as_nanos().max(1)).max(1) as usize;
    delivered
        .chunks(per_second)
        .map(|c| c.iter().filter(|&&d| !d).count() as u64)
        .collect()
}
