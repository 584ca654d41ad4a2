//! Link models, one per direction: loss (Bernoulli; Gilbert-Elliott with
//! netem's `loss gemodel p r 1-h 1-k` semantics; a time-based
//! Gilbert-Elliott), delay and jitter, a rate with a finite drop-tail
//! queue, and intervals during which the link is down.
//!
//! netem's Gilbert-Elliott, per packet: the packet is lost with probability
//! `1-k` in the Good state and `1-h` in the Bad state, judged in the state
//! it arrives in; then Good moves to Bad with probability `p` and Bad to
//! Good with probability `r`. Mean loss = πG(1-k) + πB(1-h), πB = p/(p+r);
//! mean burst length 1/r packets.
//!
//! Link-layer retries: a unicast frame is tried up to `1 + retries` times
//! (802.11 used 7 retries, WISP links often 1), each attempt lost
//! independently by the models above and occupying the transmitter; a
//! broadcast frame is tried once. A frame lost on every attempt is a
//! transmission failure the sender's driver sees.

use std::collections::VecDeque;
use std::time::Duration;

use braid_proto::random::unit_f64;
use braid_proto::time::Instant;
use rand_core::RngCore;
use serde::Serialize;

/// How a link direction loses packets.
#[derive(Debug, Clone, PartialEq)]
pub enum LossModel {
    None,
    Bernoulli(f64),
    /// Probabilities in [0, 1]: `p` Good→Bad, `r` Bad→Good, loss in Bad
    /// (`1-h`) and in Good (`1-k`).
    GilbertElliott {
        p: f64,
        r: f64,
        loss_bad: f64,
        loss_good: f64,
    },
    /// Good and Bad periods of exponentially distributed length.
    GilbertElliottTime {
        good_mean: Duration,
        bad_mean: Duration,
        loss_good: f64,
        loss_bad: f64,
    },
}

impl LossModel {
    /// Gilbert-Elliott for a mean loss and mean burst length (packets):
    /// r = 1/B, p = L / (B (1 - L)), all loss in Bad.
    pub fn bursty(loss: f64, burst: f64) -> LossModel {
        let burst = burst.max(1.0);
        let r = 1.0 / burst;
        let p = loss / (burst * (1.0 - loss).max(1e-9));
        LossModel::GilbertElliott {
            p: p.min(1.0),
            r,
            loss_bad: 1.0,
            loss_good: 0.0,
        }
    }

    /// The same kind of loss with long-run ratio `loss`: Bernoulli stays
    /// Bernoulli; Gilbert-Elliott with all its loss in Bad keeps its mean
    /// burst. `None` for models whose mean cannot be set alone (loss in
    /// Good as well, or periods in time).
    pub fn with_mean_loss(&self, loss: f64) -> Option<LossModel> {
        match *self {
            LossModel::None | LossModel::Bernoulli(_) if loss <= 0.0 => Some(LossModel::None),
            LossModel::None | LossModel::Bernoulli(_) => Some(LossModel::Bernoulli(loss)),
            LossModel::GilbertElliott {
                r,
                loss_bad,
                loss_good,
                ..
            } if loss_bad == 1.0 && loss_good == 0.0 && r > 0.0 => {
                Some(LossModel::bursty(loss, 1.0 / r))
            }
            _ => None,
        }
    }

    /// The mean run of lost packets: `1 / (1 - loss)` for independent
    /// loss, `1 / r` for Gilbert-Elliott with all its loss in Bad; `None`
    /// where the model has no such simple figure.
    pub fn mean_burst(&self) -> Option<f64> {
        match *self {
            LossModel::None => Some(1.0),
            LossModel::Bernoulli(p) => Some(1.0 / (1.0 - p).max(1e-9)),
            LossModel::GilbertElliott {
                r,
                loss_bad,
                loss_good,
                ..
            } if loss_bad == 1.0 && loss_good == 0.0 && r > 0.0 => Some(1.0 / r),
            _ => None,
        }
    }

    /// The long-run loss ratio.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli(p) => p,
            LossModel::GilbertElliott {
                p,
                r,
                loss_bad,
                loss_good,
            } => {
                if p + r == 0.0 {
                    return loss_good;
                }
                let bad = p / (p + r);
                bad * loss_bad + (1.0 - bad) * loss_good
            }
            LossModel::GilbertElliottTime {
                good_mean,
                bad_mean,
                loss_good,
                loss_bad,
            } => {
                let (g, b) = (good_mean.as_secs_f64(), bad_mean.as_secs_f64());
                if g + b == 0.0 {
                    return loss_good;
                }
                (g * loss_good + b * loss_bad) / (g + b)
            }
        }
    }
}

/// One direction of a link.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    pub loss: LossModel,
    pub delay: Duration,
    /// Each packet's delay varies uniformly by up to ± this much.
    pub jitter: Duration,
    /// Bit rate; `None` is unlimited.
    pub rate_bps: Option<u64>,
    /// Packets the queue holds before the link (drop-tail).
    pub queue: usize,
    /// Intervals during which the link carries nothing.
    pub down: Vec<(Instant, Instant)>,
    /// Time-varying extra loss (a rain fade): points (time, loss), linear
    /// in between, 0 before the first and after the last point. Applied
    /// on top of `loss`, independently.
    pub fade: Vec<(Instant, f64)>,
    /// Link-layer retries of a unicast frame.
    pub retries: u32,
    /// On radio links: the loss at each of the radio's bit-rates (see
    /// [`crate::radio`]), on top of `loss`.
    pub rate_loss: Vec<f64>,
    /// When the link goes down, both ends' drivers see it (a radio losing
    /// its association); otherwise the failure is silent (a blackhole
    /// that only the probes reveal).
    pub carrier: bool,
}

impl Default for LinkSpec {
    fn default() -> Self {
        LinkSpec {
            loss: LossModel::None,
            delay: Duration::from_millis(1),
            jitter: Duration::ZERO,
            rate_bps: None,
            queue: 100,
            down: Vec::new(),
            fade: Vec::new(),
            retries: 0,
            rate_loss: Vec::new(),
            carrier: false,
        }
    }
}

/// What became of a packet offered to a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Arrives(Instant),
    Lost,
    QueueFull,
    Down,
}

/// What became of a frame, and when it left the transmitter (when the
/// driver's queue has room again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub fate: Fate,
    pub departure: Instant,
    /// A unicast frame lost on every attempt: the sender's driver knows.
    pub failed: bool,
}

/// Counts of one link direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LinkStats {
    pub offered: u64,
    pub delivered: u64,
    pub lost: u64,
    pub queue_drops: u64,
    pub down_drops: u64,
    pub bytes: u64,
    /// Transmission attempts beyond the first (link-layer retries).
    pub retries: u64,
}

/// A link direction in motion: its model and its state.
#[derive(Debug, Clone)]
pub struct LinkDir {
    pub spec: LinkSpec,
    bad: bool,
    next_switch: Instant,
    departures: VecDeque<Instant>,
    last_departure: Instant,
    pub stats: LinkStats,
}

impl LinkDir {
    pub fn new(spec: LinkSpec) -> Self {
        LinkDir {
            spec,
            bad: false,
            next_switch: Instant::ZERO,
            departures: VecDeque::new(),
            last_departure: Instant::ZERO,
            stats: LinkStats::default(),
        }
    }

    pub fn is_down(&self, t: Instant) -> bool {
        self.spec.down.iter().any(|&(a, b)| a <= t && t < b)
    }

    /// Whether the link goes down after `now` and by `t`: a frame still
    /// queued then is lost with the link.
    fn goes_down_by(&self, now: Instant, t: Instant) -> bool {
        self.spec.down.iter().any(|&(a, _)| now < a && a <= t)
    }

    /// Tries a frame once (broadcast) or up to `1 + retries` times
    /// (unicast), each attempt also lost with probability `extra_loss`
    /// (a radio's per-rate loss). Returns (attempts, delivered).
    pub fn attempts(
        &mut self,
        now: Instant,
        extra_loss: f64,
        unicast: bool,
        rng: &mut dyn RngCore,
    ) -> (u32, bool) {
        let tries = if unicast { 1 + self.spec.retries } else { 1 };
        for n in 1..=tries {
            let lost = self.lose(now, rng) || (extra_loss > 0.0 && unit_f64(rng) < extra_loss);
            if !lost {
                self.stats.retries += n as u64 - 1;
                return (n, true);
            }
        }
        self.stats.retries += tries as u64 - 1;
        (tries, false)
    }

    /// Counts a frame offered and what became of it, and gives its
    /// arrival time (delay and jitter after `departure`).
    pub fn settle(
        &mut self,
        now: Instant,
        departure: Instant,
        len: usize,
        delivered: bool,
        rng: &mut dyn RngCore,
    ) -> Fate {
        self.stats.offered += 1;
        if self.is_down(now) || self.goes_down_by(now, departure) {
            self.stats.down_drops += 1;
            return Fate::Down;
        }
        if !delivered {
            self.stats.lost += 1;
            return Fate::Lost;
        }
        let jitter = if self.spec.jitter.is_zero() {
            0.0
        } else {
            (unit_f64(rng) * 2.0 - 1.0) * self.spec.jitter.as_micros() as f64
        };
        let delay = (self.spec.delay.as_micros() as f64 + jitter).max(0.0) as u64;
        self.stats.delivered += 1;
        self.stats.bytes += len as u64;
        Fate::Arrives(departure + Duration::from_micros(delay))
    }

    /// The fade's extra loss at `t`.
    pub fn fade_at(&self, t: Instant) -> f64 {
        let f = &self.spec.fade;
        let i = f.partition_point(|&(at, _)| at <= t);
        if i == 0 || i == f.len() {
            return 0.0;
        }
        let ((t0, l0), (t1, l1)) = (f[i - 1], f[i]);
        let span = t1.since(t0).as_secs_f64();
        if span == 0.0 {
            return l1;
        }
        l0 + (l1 - l0) * t.since(t0).as_secs_f64() / span
    }

    fn lose(&mut self, now: Instant, rng: &mut dyn RngCore) -> bool {
        let base = self.lose_base(now, rng);
        base || (!self.spec.fade.is_empty() && unit_f64(rng) < self.fade_at(now))
    }

    fn lose_base(&mut self, now: Instant, rng: &mut dyn RngCore) -> bool {
        match self.spec.loss {
            LossModel::None => false,
            LossModel::Bernoulli(p) => unit_f64(rng) < p,
            LossModel::GilbertElliott {
                p,
                r,
                loss_bad,
                loss_good,
            } => {
                let lost = unit_f64(rng) < if self.bad { loss_bad } else { loss_good };
                let flip = unit_f64(rng) < if self.bad { r } else { p };
                if flip {
                    self.bad = !self.bad;
                }
                lost
            }
            LossModel::GilbertElliottTime {
                good_mean,
                bad_mean,
                loss_good,
                loss_bad,
            } => {
                while self.next_switch <= now {
                    // Enter the other state (the first time: start in
                    // Good) and stay an exponentially distributed time.
                    if self.next_switch > Instant::ZERO {
                        self.bad = !self.bad;
                    }
                    let mean = if self.bad { bad_mean } else { good_mean };
                    let stay = -mean.as_secs_f64() * (1.0 - unit_f64(rng)).ln();
                    self.next_switch = self.next_switch + Duration::from_secs_f64(stay.max(1e-6));
                }
                unit_f64(rng) < if self.bad { loss_bad } else { loss_good }
            }
        }
    }

    /// Offers a packet of `len` bytes at `now` (a wired link: its own
    /// transmitter, rate and drop-tail queue), as a broadcast.
    pub fn send(&mut self, now: Instant, len: usize, rng: &mut dyn RngCore) -> Fate {
        self.transmit(now, len, false, rng).fate
    }

    /// Offers a frame; `unicast` frames get the link-layer retries.
    pub fn transmit(
        &mut self,
        now: Instant,
        len: usize,
        unicast: bool,
        rng: &mut dyn RngCore,
    ) -> Outcome {
        let immediate = |fate| Outcome {
            fate,
            departure: now,
            failed: false,
        };
        if self.is_down(now) {
            self.stats.offered += 1;
            self.stats.down_drops += 1;
            return immediate(Fate::Down);
        }
        let departure = match self.spec.rate_bps {
            Some(bps) if bps > 0 => {
                while self.departures.front().is_some_and(|&d| d <= now) {
                    self.departures.pop_front();
                }
                if self.departures.len() >= self.spec.queue.max(1) {
                    self.stats.offered += 1;
                    self.stats.queue_drops += 1;
                    return immediate(Fate::QueueFull);
                }
                None
            }
            _ => Some(now),
        };
        let (attempts, delivered) = self.attempts(now, 0.0, unicast, rng);
        let departure = departure.unwrap_or_else(|| {
            let bps = self.spec.rate_bps.unwrap_or(1).max(1);
            let start = self.last_departure.max(now);
            let bits = (len as u64 * 8).saturating_mul(attempts as u64);
            let d = start + Duration::from_nanos(bits.saturating_mul(1_000_000_000) / bps);
            self.last_departure = d;
            self.departures.push_back(d);
            d
        });
        let fate = self.settle(now, departure, len, delivered, rng);
        Outcome {
            fate,
            departure,
            failed: unicast && fate == Fate::Lost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn loss_ratio(model: LossModel, n: usize) -> (f64, f64) {
        let mut link = LinkDir::new(LinkSpec {
            loss: model,
            ..LinkSpec::default()
        });
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut lost = 0;
        let mut bursts = 0;
        let mut prev = false;
        for i in 0..n {
            let l = link.send(Instant::from_millis(i as u64), 100, &mut rng) == Fate::Lost;
            lost += l as usize;
            if l && !prev {
                bursts += 1;
            }
            prev = l;
        }
        (lost as f64 / n as f64, lost as f64 / bursts.max(1) as f64)
    }

    #[test]
    fn gilbert_elliott_matches_netem_mean_loss_and_burst_length() {
        let model = LossModel::bursty(0.05, 4.0);
        assert!((model.mean_loss() - 0.05).abs() < 1e-9);
        let (loss, burst) = loss_ratio(model, 400_000);
        assert!((loss - 0.05).abs() < 0.003, "loss {loss}");
        assert!((burst - 4.0).abs() < 0.3, "burst {burst}");
        let (loss, burst) = loss_ratio(LossModel::Bernoulli(0.05), 400_000);
        assert!((loss - 0.05).abs() < 0.002 && burst < 1.2);
    }

    #[test]
    fn time_based_gilbert_elliott_mean() {
        let m = LossModel::GilbertElliottTime {
            good_mean: Duration::from_millis(900),
            bad_mean: Duration::from_millis(100),
            loss_good: 0.0,
            loss_bad: 0.5,
        };
        assert!((m.mean_loss() - 0.05).abs() < 1e-9);
        let (loss, _) = loss_ratio(m, 200_000);
        assert!((loss - 0.05).abs() < 0.01, "loss {loss}");
    }

    #[test]
    fn a_rain_fade_ramps_loss_up_and_down() {
        let s = |x: u64| Instant::from_millis(x * 1000);
        let spec = LinkSpec {
            fade: vec![(s(10), 0.0), (s(20), 0.5), (s(30), 0.0)],
            ..LinkSpec::default()
        };
        let link = LinkDir::new(spec.clone());
        assert_eq!(link.fade_at(s(5)), 0.0);
        assert!((link.fade_at(s(15)) - 0.25).abs() < 1e-9);
        assert!((link.fade_at(s(20)) - 0.5).abs() < 1e-9);
        assert_eq!(link.fade_at(s(35)), 0.0);
        let mut link = LinkDir::new(spec);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let lost_at = |link: &mut LinkDir, rng: &mut ChaCha8Rng, t: u64| {
            (0..4000)
                .filter(|_| link.send(s(t), 100, rng) == Fate::Lost)
                .count() as f64
                / 4000.0
        };
        assert!(lost_at(&mut link, &mut rng, 5) == 0.0);
        assert!((lost_at(&mut link, &mut rng, 20) - 0.5).abs() < 0.03);
    }

    /// The queue against queueing theory: Poisson arrivals of equal
    /// packets into a rate-limited link are an M/D/1 queue, whose mean
    /// wait before service is `rho * S / (2 (1 - rho))` (Pollaczek-
    /// Khinchine; S the service time).
    #[test]
    fn the_queue_waits_as_m_d_1_says() {
        for rho in [0.3, 0.5, 0.8] {
            let spec = LinkSpec {
                rate_bps: Some(8_000_000), // 1,000-byte packets: 1 ms each
                queue: 100_000,
                delay: Duration::ZERO,
                ..LinkSpec::default()
            };
            let mut link = LinkDir::new(spec);
            let mut rng = ChaCha8Rng::seed_from_u64(7);
            let service_us = 1000.0;
            let mean_gap_us = service_us / rho;
            let (mut now_us, mut waited, n) = (0.0f64, 0.0, 200_000);
            for _ in 0..n {
                now_us += -mean_gap_us * (1.0 - unit_f64(&mut rng)).ln();
                let at = Instant(now_us as u64);
                match link.send(at, 1000, &mut rng) {
                    Fate::Arrives(t) => waited += t.since(at).as_secs_f64() * 1e6 - service_us,
                    other => panic!("{other:?}"),
                }
            }
            let measured = waited / n as f64;
            let theory = rho * service_us / (2.0 * (1.0 - rho));
            assert!(
                (measured - theory).abs() < 0.05 * theory + 5.0,
                "rho {rho}: waited {measured:.1} us, M/D/1 {theory:.1} us"
            );
        }
    }

    /// Link-layer retries against the geometric law: a unicast frame
    /// tried up to 1 + r times over Bernoulli loss p is delivered with
    /// probability 1 - p^(r+1), after (1 - p^(r+1)) / (1 - p) attempts on
    /// average.
    #[test]
    fn retries_deliver_as_the_geometric_law_says() {
        let (p, r) = (0.3, 3u32);
        let mut link = LinkDir::new(LinkSpec {
            loss: LossModel::Bernoulli(p),
            retries: r,
            ..LinkSpec::default()
        });
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 200_000;
        let (mut delivered, mut attempts) = (0u32, 0u64);
        for i in 0..n {
            let (a, ok) = link.attempts(Instant::from_millis(i), 0.0, true, &mut rng);
            attempts += u64::from(a);
            delivered += u32::from(ok);
        }
        let want_delivered = 1.0 - p.powi(r as i32 + 1);
        let want_attempts = want_delivered / (1.0 - p);
        let got_delivered = f64::from(delivered) / n as f64;
        let got_attempts = attempts as f64 / n as f64;
        // Five standard deviations of a binomial proportion.
        let sd = (want_delivered * (1.0 - want_delivered) / n as f64).sqrt();
        assert!(
            (got_delivered - want_delivered).abs() < 5.0 * sd,
            "{got_delivered} {want_delivered}"
        );
        assert!(
            (got_attempts - want_attempts).abs() < 0.01,
            "{got_attempts} {want_attempts}"
        );
    }

    #[test]
    fn rate_and_queue_delay_and_drop() {
        let spec = LinkSpec {
            rate_bps: Some(8_000_000), // 1 byte per µs
            queue: 3,
            delay: Duration::from_millis(10),
            ..LinkSpec::default()
        };
        let mut link = LinkDir::new(spec);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let t0 = Instant::ZERO;
        assert_eq!(
            link.send(t0, 1000, &mut rng),
            Fate::Arrives(Instant(1000 + 10_000))
        );
        assert_eq!(
            link.send(t0, 1000, &mut rng),
            Fate::Arrives(Instant(2000 + 10_000))
        );
        assert_eq!(
            link.send(t0, 1000, &mut rng),
            Fate::Arrives(Instant(3000 + 10_000))
        );
        assert_eq!(link.send(t0, 1000, &mut rng), Fate::QueueFull);
        // After the first departs, there is room again.
        assert!(matches!(
            link.send(Instant(1500), 1000, &mut rng),
            Fate::Arrives(_)
        ));
        let down = LinkSpec {
            down: vec![(Instant(0), Instant(100))],
            ..LinkSpec::default()
        };
        let mut link = LinkDir::new(down);
        assert_eq!(link.send(Instant(50), 10, &mut rng), Fate::Down);
        assert!(matches!(
            link.send(Instant(100), 10, &mut rng),
            Fate::Arrives(_)
        ));
    }
}
