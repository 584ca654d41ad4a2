//! Radios for simulated wireless meshes (802.11b-like, as on CityMesh):
//! several bit-rates with their own loss per link, link-layer retries, one
//! transmitter per node with a bounded queue, and a shared medium.
//!
//! * A unicast frame goes at the rate the variant's [`RateControl`]
//!   picks: the link's best rate (highest `rate × (1 - loss)`, an ideal
//!   controller), the rate the sender's own big probes say is best
//!   (SrcRR's RATE-CTL), or the Prism 2.5 firmware's choice (start at the
//!   top rate, one rate down after each frame that fails all its
//!   attempts, back to the top after 10 s without a failure: SrcRR
//!   section 3.3). Broadcasts go at the base (lowest) rate, big probes at
//!   the rate they measure.
//! * A frame that fails all its attempts may be handed to the radio again
//!   (SrcRR's PERSISTENCE: up to 40 hand-overs), each at the rate the
//!   controller then picks.
//! * Each attempt occupies the medium for its air time: DIFS, the mean
//!   random backoff (the contention window doubles at every retry), the
//!   PLCP preamble, the frame at its rate, and for unicast SIFS and the ACK.
//! * Carrier sense without collisions: while a node transmits, its
//!   neighbors defer (their transmitters are busy until it ends). Hidden
//!   terminals and capture are not modelled.
//!
//! CityMesh-like loss per rate: a link of normalized length `d` (1 = edge
//! of range) has a margin `q = 1 - d` plus per-direction shadowing; at
//! rate k it loses `1 / (1 + e^((q - θk) / w))`, with thresholds θ rising
//! with the rate. Many links are marginal at some rate (SrcRR section 3.3:
//! outdoor loss is dominated by multi-path, not by a clean S/N cliff).

use std::collections::VecDeque;
use std::time::Duration;

use braid_proto::random::unit_f64;
use braid_proto::time::Instant;
use rand_core::RngCore;

/// 802.11b timing, microseconds.
const SLOT_US: u64 = 20;
const DIFS_US: u64 = 50;
const SIFS_US: u64 = 10;
const PREAMBLE_US: u64 = 192;
/// An ACK: preamble plus 14 bytes at 1 Mbit/s.
const ACK_US: u64 = PREAMBLE_US + 112;
const CW_MIN: u64 = 31;
const CW_MAX: u64 = 1023;

/// The radios of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct RadioSpec {
    /// Bit-rates, lowest (the base rate) first.
    pub rates_bps: Vec<u64>,
    /// Frames each node's transmitter queue holds (the driver's buffer).
    pub queue: usize,
}

impl Default for RadioSpec {
    fn default() -> Self {
        RadioSpec {
            rates_bps: vec![1_000_000, 2_000_000, 5_500_000, 11_000_000],
            queue: 50,
        }
    }
}

impl RadioSpec {
    /// The air time of a frame of `len` bytes at `rate_bps`, tried
    /// `attempts` times.
    pub fn airtime(&self, len: usize, rate_bps: u64, attempts: u32, unicast: bool) -> Duration {
        let frame_us = (len as u64 * 8).saturating_mul(1_000_000) / rate_bps.max(1);
        let mut total = 0u64;
        for i in 0..attempts.max(1) {
            let cw = (CW_MIN << i.min(10)).min(CW_MAX);
            total += DIFS_US + cw * SLOT_US / 2 + PREAMBLE_US + frame_us;
            if unicast {
                total += SIFS_US + ACK_US;
            }
        }
        Duration::from_micros(total)
    }

    /// The rate index for `rate` (100 kbit/s units): the highest rate not
    /// above it, or the base rate.
    pub fn index_of(&self, rate: u16) -> usize {
        let bps = rate as u64 * 100_000;
        self.rates_bps.iter().rposition(|&r| r <= bps).unwrap_or(0)
    }

    /// The rate index with the highest expected throughput on a link
    /// losing `rate_loss[k]` at rate k.
    pub fn best_rate(&self, rate_loss: &[f64]) -> usize {
        let mut best = (0, 0.0);
        for (k, &r) in self.rates_bps.iter().enumerate() {
            let goodput = r as f64 * (1.0 - rate_loss.get(k).copied().unwrap_or(0.0));
            if goodput > best.1 {
                best = (k, goodput);
            }
        }
        best.0
    }

    /// CityMesh-like loss at every rate for a link of normalized length
    /// `d`, with this direction's shadowing drawn from `rng`.
    pub fn citymesh_loss(&self, d: f64, rng: &mut dyn RngCore) -> Vec<f64> {
        // Shadowing: a sum of uniforms, roughly normal with sd 0.08.
        let shadow = (0..4).map(|_| unit_f64(rng) - 0.5).sum::<f64>() * 0.14;
        let q = 1.0 - d + shadow;
        let n = self.rates_bps.len().max(1);
        (0..n)
            .map(|k| {
                // Thresholds from 0.05 (base rate) to 0.55 (top rate).
                let theta = 0.05 + 0.5 * k as f64 / (n - 1).max(1) as f64;
                let loss = 1.0 / (1.0 + ((q - theta) / 0.07).exp());
                loss.clamp(0.0, 0.98)
            })
            .collect()
    }
}

/// How a sender picks the bit-rate of its unicast frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateControl {
    /// The link's best rate, known exactly (an oracle: what a good
    /// controller such as minstrel converges to).
    #[default]
    Ideal,
    /// The rate with the highest `rate × delivery` of the sender's big
    /// probes as the neighbor reports them (SrcRR's RATE-CTL).
    Probes,
    /// The Prism 2.5 firmware (SrcRR section 3.3): see [`FirmwareRate`].
    Firmware,
}

impl RateControl {
    /// Every rate control, in the order the docs list them.
    pub const ALL: [RateControl; 3] = [
        RateControl::Ideal,
        RateControl::Probes,
        RateControl::Firmware,
    ];

    /// The name a scenario gives it.
    pub fn name(self) -> &'static str {
        match self {
            RateControl::Ideal => "ideal",
            RateControl::Probes => "probes",
            RateControl::Firmware => "firmware",
        }
    }
}

/// How long the Prism firmware stays at a lowered rate without a failure
/// before it returns to the top rate.
pub const FIRMWARE_RETURN: Duration = Duration::from_secs(10);

/// The Prism 2.5 firmware's rate for one neighbor: it starts at the top
/// rate; a frame that fails all its attempts takes it one rate down; ten
/// seconds without a failure take it back to the top.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FirmwareRate {
    /// Rates below the top (0: at the top rate).
    down: usize,
    last_failure: Option<Instant>,
}

impl FirmwareRate {
    /// The rate index to send at, of `rates` rates.
    pub fn rate(&mut self, now: Instant, rates: usize) -> usize {
        if self
            .last_failure
            .is_some_and(|t| now.since(t) >= FIRMWARE_RETURN)
        {
            self.down = 0;
            self.last_failure = None;
        }
        rates.saturating_sub(1 + self.down)
    }

    /// A frame failed all its attempts at `now`.
    pub fn failed(&mut self, now: Instant, rates: usize) {
        self.down = (self.down + 1).min(rates.saturating_sub(1));
        self.last_failure = Some(now);
    }
}

/// One node's transmitter.
#[derive(Debug, Clone, Default)]
pub struct Radio {
    /// When the medium is free for this node (its own frames and its
    /// neighbors' transmissions).
    free_at: Instant,
    /// When each queued frame leaves.
    departures: VecDeque<Instant>,
}

impl Radio {
    /// Queues a frame of `airtime`; returns when it leaves, or `None` when
    /// the queue is full.
    pub fn reserve(&mut self, now: Instant, airtime: Duration, queue: usize) -> Option<Instant> {
        while self.departures.front().is_some_and(|&d| d <= now) {
            self.departures.pop_front();
        }
        if self.departures.len() >= queue.max(1) {
            return None;
        }
        let end = self.free_at.max(now) + airtime;
        self.free_at = end;
        self.departures.push_back(end);
        Some(end)
    }

    /// A neighbor transmits until `until`: this node defers.
    pub fn defer_until(&mut self, until: Instant) {
        self.free_at = self.free_at.max(until);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn airtime_grows_with_retries_and_shrinks_with_rate() {
        let r = RadioSpec::default();
        let one = r.airtime(1500, 11_000_000, 1, true);
        // 1500 B at 11 Mbit/s is 1090.9 µs of payload, plus overheads.
        assert_eq!(one, Duration::from_micros(1090 + 50 + 310 + 192 + 10 + 304));
        let slow = r.airtime(1500, 1_000_000, 1, true);
        assert!(slow > one * 5);
        let three = r.airtime(1500, 11_000_000, 3, true);
        assert!(three > one * 3, "backoff doubles at each retry");
        assert!(r.airtime(1500, 11_000_000, 1, false) < one, "no ACK");
    }

    #[test]
    fn best_rate_weighs_loss_against_speed() {
        let r = RadioSpec::default();
        assert_eq!(r.best_rate(&[0.0, 0.0, 0.0, 0.0]), 3);
        assert_eq!(r.best_rate(&[0.0, 0.0, 0.1, 0.6]), 2);
        assert_eq!(r.best_rate(&[0.1, 0.6, 0.9, 0.98]), 0);
        assert_eq!(r.best_rate(&[0.1, 0.5, 0.9, 0.98]), 1);
        assert_eq!(r.index_of(55), 2);
        assert_eq!(r.index_of(60), 2);
        assert_eq!(r.index_of(5), 0);
    }

    #[test]
    fn citymesh_loss_rises_with_rate_and_length() {
        let r = RadioSpec::default();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (mut short, mut long) = (vec![0.0; 4], vec![0.0; 4]);
        for _ in 0..200 {
            for (k, l) in r.citymesh_loss(0.2, &mut rng).iter().enumerate() {
                short[k] += l / 200.0;
            }
            for (k, l) in r.citymesh_loss(0.9, &mut rng).iter().enumerate() {
                long[k] += l / 200.0;
            }
        }
        assert!(short.windows(2).all(|w| w[0] <= w[1]), "{short:?}");
        assert!(long.windows(2).all(|w| w[0] <= w[1]), "{long:?}");
        assert!(short[0] < 0.01 && short[3] < 0.2, "{short:?}");
        assert!(long[0] > 0.1 && long[3] > 0.9, "{long:?}");
    }

    #[test]
    fn the_firmware_steps_down_on_failure_and_returns_after_ten_quiet_seconds() {
        let mut f = FirmwareRate::default();
        let t = |s: u64| Instant::from_millis(s * 1000);
        assert_eq!(f.rate(t(0), 4), 3, "starts at the top rate");
        f.failed(t(1), 4);
        assert_eq!(f.rate(t(1), 4), 2);
        for s in 2..6 {
            f.failed(t(s), 4);
        }
        assert_eq!(f.rate(t(6), 4), 0, "never below the base rate");
        assert_eq!(f.rate(t(14), 4), 0, "9 s after the last failure");
        assert_eq!(f.rate(t(15), 4), 3, "10 s without a failure: the top again");
        assert_eq!(f.rate(t(16), 1), 0);
    }

    #[test]
    fn the_queue_is_bounded_and_neighbors_defer() {
        let mut a = Radio::default();
        let t = Instant::ZERO;
        let ms = Duration::from_millis(1);
        assert_eq!(a.reserve(t, ms, 2), Some(Instant::from_millis(1)));
        assert_eq!(a.reserve(t, ms, 2), Some(Instant::from_millis(2)));
        assert_eq!(a.reserve(t, ms, 2), None);
        let mut b = Radio::default();
        b.defer_until(Instant::from_millis(2));
        assert_eq!(b.reserve(t, ms, 2), Some(Instant::from_millis(3)));
    }
}
