//! Pacing below capacity: how fast the ingress lets datagrams leave on
//! each path toward one egress, so that the queue builds above braid's
//! binding point (where urgent packets go first and a full queue drops
//! bulk, which TCP must see) and not at the path's bottleneck (a rate
//! limiter's or a radio's buffer, where a VoIP packet waits behind every
//! bulk packet before it). CAKE and fq_codel do the same for one link by
//! shaping just below its rate; here the rate is each path's, measured.
//!
//! One [`PathPacer`] per path, driven by the path reports (`estimate.rs`):
//!
//! * **Unpaced until first full.** A path starts without a rate: the
//!   sender's start-up finds the capacity, as it would without braid.
//! * **Full: pace just below what it carries.** Two reports in a row
//!   whose delay samples stand [`FULL_QUEUE_MS`] or more above the path's
//!   lowest recent sample (the path without a queue; over the last
//!   [`SAMPLES_KEPT`] reports) say a queue stood below the binding point
//!   all through the interval between them (one late sample is not
//!   enough: a report rebuilt from its group's repair on a lossy path
//!   comes back late). The path was busy all that interval, so what the
//!   egress says it carried then is its capacity (every session toward
//!   the egress summed, lost packets included: a lossy path's capacity
//!   is what it takes, not what it delivers). The rate becomes that, less
//!   what drains the queue in about [`DRAIN_OVER_MS`] (at most [`DRAIN`]
//!   of it), and never less than half the rate before (a false reading
//!   costs at most half).
//! * **A queue that a cut did not move is not the path's.** A report
//!   that reads full again right after a cut, with a queue no shorter
//!   and not much longer ([`UNMOVED`] to [`GREW`] times the one cut
//!   for) while the path carried
//!   about all it was given (at least [`CARRIED_ALL`] of the rate), cuts
//!   no more: paced below what the path takes, a queue at its
//!   bottleneck drains; one that stays is in the samples, not the path.
//!   Each cut takes at most half, and nothing else stops a run of false
//!   readings from halving the rate to nothing: that is how a paced
//!   transfer stalled for seconds under bursty loss in the lab, until the
//!   samples were mended (an urgent packet's two copies on one path
//!   dated it by the later one: `estimate.rs`; docs/performance.md).
//! * **Drained: back to just below capacity.** The first report without
//!   a queue after that sets the rate to [`DRAIN`] times the capacity
//!   found, if it was lower (the drain is over).
//! * **Probing while held.** A path with datagrams waiting above the
//!   binding point for it when a report comes (the sender wants more
//!   than the rate) and whose queue is below [`PROBE_BELOW_MS`] raises
//!   its rate by [`PROBE_GAIN`] per report, faster from the
//!   [`PROBES_BEFORE_RISE`]th in a row: a capacity that rose is found
//!   (doubled in about seven reports), and a probe that overshoots shows
//!   as a queue in the next reports and is taken back. A path not held
//!   (the sender sends less) keeps its rate: nothing to learn from it.
//!
//! The delay samples of a paced node count from when a datagram left
//! the binding point, not from when it was encoded (`PathEstimator::
//! on_transmit`): the wait for the pacer is braid's queue, not the path's.
//!
//! The rate loop is only as fast as the reports: a probe near capacity
//! overshoots by up to [`PROBE_GAIN`] − 1 of the rate for a report
//! interval or two, so pace with reports every 250 ms or less
//! (`path_report_interval`): at 10 Mbit/s a 5% overshoot for 250 ms
//! queues 12.5 ms at the bottleneck (the modelled path in the tests
//! below averages under 10 ms of queue).
//!
//! The queue that then builds above the binding point is kept short by
//! the ingress's entry CoDel (`node/admission.rs`), which drops bulk user
//! packets before they are encoded, so that TCP senders see it.
//!
//! Urgent datagrams pass the pacer like the others (the scheduler above
//! the binding point gives them first), so one waits at most one bulk
//! datagram's time at the rate (1.1 ms for 1400 bytes at 10 Mbit/s).

use std::collections::VecDeque;
use std::time::Duration;

use crate::time::Instant;

/// Queueing delay (ms above the path's lowest recent sample) from which
/// the path is taken as full: above a router's scheduling jitter and a
/// radio's retries (a few ms), well below a rate limiter's buffer.
pub const FULL_QUEUE_MS: f64 = 5.0;
/// Queueing delay below which a held path probes for more.
pub const PROBE_BELOW_MS: f64 = 2.5;
/// A full path's rate: at most this share of what it carried.
pub const DRAIN: f64 = 0.95;
/// A full path's queue is drained over about this long: the rate is
/// what the path carried times `1 − queue / DRAIN_OVER_MS` (at most
/// [`DRAIN`], at least half), so that the start-up's full buffer (100 ms
/// at the lab's rate limiters) is gone in about a quarter of a second.
pub const DRAIN_OVER_MS: f64 = 250.0;
/// A queue reading from this share of the one the last cut was for ...
pub const UNMOVED: f64 = 0.8;
/// ... to this many times it did not move (one that grows faster is a
/// queue building: cut for).
pub const GREW: f64 = 1.5;
/// A path that carried at least this share of its rate took about all
/// it was given: no bottleneck below the rate.
pub const CARRIED_ALL: f64 = 0.95;
/// A held path's rate rises by this factor per report with a short
/// queue; from the [`PROBES_BEFORE_RISE`]th in a row on, each doubles
/// the rise (1.1, 1.2, then [`PROBE_GAIN_MAX`]): the probes that
/// find nothing (a path paced near its capacity) cost little, and a
/// capacity that doubled is found in seven reports.
pub const PROBE_GAIN: f64 = 1.05;
/// Probes in a row at [`PROBE_GAIN`] before the rise grows.
pub const PROBES_BEFORE_RISE: u32 = 3;
/// The largest rise per report.
pub const PROBE_GAIN_MAX: f64 = 1.25;
/// Delay samples kept per path for its lowest (the path without a
/// queue): 16 s at 250-ms reports.
pub const SAMPLES_KEPT: usize = 64;
/// The lowest rate a path is paced at, bytes per second (64 kbit/s): a
/// path whose reports said it carried nearly nothing still sends.
pub const MIN_RATE: f64 = 8_000.0;
/// Bytes a pacer lets go at once after an idle spell (two full-size
/// datagrams): the driver's batches and the late-binding bound take a
/// few at a time.
pub const BURST_BYTES: f64 = 3_000.0;

/// One path's pacer.
#[derive(Debug, Clone)]
pub struct PathPacer {
    /// Bytes per second; `None` while unpaced.
    rate: Option<f64>,
    /// When the next datagram may leave (paced only).
    next_at: Option<Instant>,
    /// The last delay samples, ms.
    samples: VecDeque<f64>,
    /// The capacity found when the path was last full, bytes per second.
    capacity: Option<f64>,
    /// Bytes and datagrams sent since the last report.
    bytes: u64,
    packets: u64,
    /// Mean bytes per datagram sent (last interval that sent any).
    mean_bytes: f64,
    /// When the last report was taken (reports closer than the gap given
    /// to [`PathPacer::on_report`] are not acted on: several sessions
    /// toward one egress each report every path).
    last_report: Option<Instant>,
    /// The rise of the next probe.
    gain: f64,
    /// Probes in a row.
    in_a_row: u32,
    /// The queue (ms) the last cut was for, while every report since read
    /// full.
    cut_for: Option<f64>,
    /// Reports that found the path full.
    pub cuts: u64,
    /// Reports that read full but whose queue a cut had not moved while
    /// the path took all it was given: not acted on.
    pub unmoved: u64,
    /// Reports that raised the rate.
    pub probes: u64,
}

impl Default for PathPacer {
    fn default() -> Self {
        PathPacer {
            rate: None,
            next_at: None,
            samples: VecDeque::new(),
            capacity: None,
            bytes: 0,
            packets: 0,
            mean_bytes: 1400.0,
            last_report: None,
            gain: PROBE_GAIN,
            in_a_row: 0,
            cut_for: None,
            cuts: 0,
            unmoved: 0,
            probes: 0,
        }
    }
}

impl PathPacer {
    /// The rate, bytes per second (`None`: unpaced).
    pub fn rate(&self) -> Option<f64> {
        self.rate
    }

    /// Whether a datagram may leave now.
    pub fn may_send(&self, now: Instant) -> bool {
        self.next_at.is_none_or(|t| t <= now)
    }

    /// When a datagram may next leave, while paced and not yet (`None`:
    /// now).
    pub fn wait_until(&self, now: Instant) -> Option<Instant> {
        self.next_at.filter(|&t| t > now)
    }

    /// A datagram of `bytes` left at `now`.
    pub fn on_send(&mut self, now: Instant, bytes: usize) {
        self.bytes += bytes as u64;
        self.packets += 1;
        if let Some(rate) = self.rate {
            let credit = Duration::from_secs_f64(BURST_BYTES / rate);
            let earliest =
                Instant::from_micros(now.as_micros().saturating_sub(credit.as_micros() as u64));
            let start = self.next_at.map_or(earliest, |t| t.max(earliest));
            self.next_at = Some(start + Duration::from_secs_f64(bytes as f64 / rate));
        }
    }

    /// A path report at `now`: its delay sample for this path (ms; `None`
    /// when it dated nothing on it), what the path carried over its last
    /// interval, datagrams per second, every session toward the egress
    /// summed (`None` without an estimate), and whether datagrams wait
    /// above the binding point for the path (the sender wants more than
    /// it is given). A report less than `gap` after the last one acted on
    /// is passed over.
    pub fn on_report(
        &mut self,
        now: Instant,
        gap: Duration,
        delay_ms: Option<f64>,
        carried_per_s: Option<f64>,
        held: bool,
    ) {
        if self.last_report.is_some_and(|t| now.since(t) < gap) {
            return;
        }
        self.last_report = Some(now);
        if self.packets > 0 {
            self.mean_bytes = self.bytes as f64 / self.packets as f64;
        }
        self.bytes = 0;
        self.packets = 0;
        let Some(sample) = delay_ms.filter(|d| d.is_finite() && *d >= 0.0) else {
            return;
        };
        if self.samples.len() == SAMPLES_KEPT {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
        let lowest = self.samples.iter().copied().fold(f64::INFINITY, f64::min);
        // The queue that stood over the last two reports.
        let last_two = self.samples.iter().rev().take(2);
        let stood = last_two.copied().fold(f64::INFINITY, f64::min) - lowest;
        let carried = carried_per_s.filter(|c| c.is_finite() && *c > 0.0);
        let took_all = |carried: f64| {
            self.rate
                .is_some_and(|r| carried * self.mean_bytes >= CARRIED_ALL * r)
        };
        let unmoved = self
            .cut_for
            .is_some_and(|q| (UNMOVED * q..=GREW * q).contains(&stood))
            && carried.is_some_and(took_all);
        if stood >= FULL_QUEUE_MS && self.samples.len() >= 2 && unmoved {
            self.unmoved += 1;
            self.probe_reset();
        } else if stood >= FULL_QUEUE_MS && self.samples.len() >= 2 {
            self.cut_for = None;
            if let Some(carried) = carried {
                let capacity = carried * self.mean_bytes;
                let share = (1.0 - stood / DRAIN_OVER_MS).clamp(0.5, DRAIN);
                let floor = self.rate.map_or(MIN_RATE, |r| (r / 2.0).max(MIN_RATE));
                self.rate = Some((capacity * share).max(floor));
                self.capacity = Some(capacity);
                self.cut_for = Some(stood);
                self.cuts += 1;
            }
            self.probe_reset();
        } else if sample - lowest < PROBE_BELOW_MS && held {
            self.cut_for = None;
            if let Some(rate) = self.rate.as_mut() {
                let cruise = self.capacity.map_or(0.0, |c| c * DRAIN);
                *rate = (*rate * self.gain).max(cruise);
                self.probes += 1;
                self.in_a_row += 1;
                if self.in_a_row >= PROBES_BEFORE_RISE {
                    self.gain = (1.0 + (self.gain - 1.0) * 2.0).min(PROBE_GAIN_MAX);
                }
            }
        } else {
            self.cut_for = None;
            self.probe_reset();
        }
        if self.rate.is_none() {
            self.next_at = None;
        }
    }
}

impl PathPacer {
    /// The next probe starts gently again.
    fn probe_reset(&mut self) {
        self.gain = PROBE_GAIN;
        self.in_a_row = 0;
    }
}

/// The pacers of an egress's paths.
#[derive(Debug, Clone, Default)]
pub struct PathPacers {
    paths: Vec<PathPacer>,
}

impl PathPacers {
    /// Pacers for `paths` paths, none paced yet.
    pub fn new(paths: usize) -> Self {
        PathPacers {
            paths: vec![PathPacer::default(); paths],
        }
    }

    /// The same pacers for paths renumbered: new path i was old path
    /// `old[i]` (`None`: a new path, unpaced).
    pub fn renumbered(&self, old: &[Option<usize>]) -> PathPacers {
        PathPacers {
            paths: old
                .iter()
                .map(|o| {
                    o.and_then(|j| self.paths.get(j))
                        .cloned()
                        .unwrap_or_default()
                })
                .collect(),
        }
    }

    /// Path `path`'s pacer (`None`: no such path).
    pub fn get(&self, path: usize) -> Option<&PathPacer> {
        self.paths.get(path)
    }

    /// Path `path`'s pacer, to change.
    pub fn get_mut(&mut self, path: usize) -> Option<&mut PathPacer> {
        self.paths.get_mut(path)
    }

    /// Every path's pacer, in path order.
    pub fn iter(&self) -> impl Iterator<Item = &PathPacer> {
        self.paths.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GAP: Duration = Duration::from_millis(100);

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    /// A path of `capacity` datagrams/s and 20 ms of delay with a buffer
    /// of 100 ms (tail drop), as the lab's rate limiters.
    struct Link {
        capacity: f64,
        queue_pkts: f64,
    }

    impl Link {
        /// An empty path of `capacity` datagrams/s.
        fn new(capacity: f64) -> Self {
            Link {
                capacity,
                queue_pkts: 0.0,
            }
        }

        /// One interval of `seconds` in which `sent` datagrams were given
        /// to the path; returns the report's delay sample (the queue at
        /// its end) and what the path carried per second.
        fn interval(&mut self, sent: f64, seconds: f64) -> (f64, f64) {
            let can = self.capacity * seconds;
            let carried = (self.queue_pkts + sent).min(can);
            self.queue_pkts = (self.queue_pkts + sent - carried).min(self.capacity * 0.1);
            (
                20.0 + self.queue_pkts / self.capacity * 1e3,
                carried / seconds,
            )
        }
    }

    /// A sender that always wants twice the capacity, through the pacer,
    /// for `reports` reports of 250 ms from `from` ms; the rate
    /// (datagrams of 1000 bytes per s) and the queue (ms) after each.
    fn run(p: &mut PathPacer, link: &mut Link, from: u64, reports: u64) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        for r in 0..reports {
            let start = (from + r * 250) * 1000;
            let step = (1e6 / (link.capacity * 2.0)) as u64;
            let (mut sent, mut held) = (0.0, false);
            for t in (start..start + 250_000).step_by(step as usize) {
                let now = Instant::from_micros(t);
                if p.may_send(now) {
                    p.on_send(now, 1000);
                    sent += 1.0;
                } else {
                    held = true;
                }
            }
            let (delay, carried) = link.interval(sent, 0.25);
            let now = ms(from + r * 250 + 250);
            p.on_report(now, GAP, Some(delay), Some(carried), held);
            let rate = p.rate().unwrap_or(f64::INFINITY) / 1000.0;
            out.push((rate, link.queue_pkts / link.capacity * 1e3));
        }
        out
    }

    /// A pacer whose path's first report came before any queue (the
    /// session's first packets).
    fn pacer() -> PathPacer {
        let mut p = PathPacer::default();
        p.on_report(ms(0), GAP, Some(20.0), None, false);
        p
    }

    #[test]
    fn a_full_path_is_paced_just_below_what_it_carried_and_its_queue_stays_short() {
        let mut p = pacer();
        let mut link = Link::new(1000.0);
        let trace = run(&mut p, &mut link, 0, 40);
        assert!(p.rate().is_some(), "the greedy sender filled the path");
        let late = &trace[8..];
        for (rate, _) in late {
            assert!(
                (900.0..=1000.0 * PROBE_GAIN * PROBE_GAIN).contains(rate),
                "rate {rate}/s against 1000/s: {trace:?}"
            );
        }
        // The probe's overshoot shows as a queue of about
        // FULL_QUEUE_MS, taken back by the next report.
        let mean_queue = late.iter().map(|(_, q)| q).sum::<f64>() / late.len() as f64;
        assert!(mean_queue < 10.0, "mean queue {mean_queue} ms: {trace:?}");
        assert!(late.iter().all(|(_, q)| *q < 30.0), "{trace:?}");
    }

    #[test]
    fn a_capacity_that_halves_or_doubles_is_followed_within_two_seconds() {
        let mut p = pacer();
        let mut link = Link::new(1000.0);
        run(&mut p, &mut link, 0, 20);
        link.capacity = 500.0;
        let trace = run(&mut p, &mut link, 5_000, 8);
        let (rate, _) = trace[7];
        assert!((400.0..=600.0).contains(&rate), "halved: {trace:?}");
        link.capacity = 1000.0;
        let trace = run(&mut p, &mut link, 7_000, 8);
        let (rate, _) = trace[7];
        assert!(rate >= 850.0, "doubled: {trace:?}");
    }

    #[test]
    fn an_unheld_path_keeps_its_rate_and_an_unfilled_one_is_not_paced() {
        let mut p = pacer();
        for i in 1..10 {
            p.on_report(ms(i * 250), GAP, Some(22.0), Some(100.0), true);
        }
        assert_eq!(p.rate(), None, "never full: unpaced");
        assert!(p.may_send(ms(0)));
        // 10 ms above the lowest (20 ms).
        p.on_report(ms(2_500), GAP, Some(30.0), Some(100.0), true);
        assert_eq!(p.rate(), None, "one late sample is not a queue");
        p.on_report(ms(2_550), GAP, Some(30.0), Some(100.0), true);
        assert_eq!(p.rate(), None, "within the gap: passed over");
        p.on_report(ms(2_750), GAP, Some(30.0), Some(100.0), true);
        let rate = p.rate().expect("full");
        assert!((rate - 100.0 * 1400.0 * DRAIN).abs() < 1e-6, "{rate}");
        // Not held: no probing however short the queue.
        p.on_report(ms(3_000), GAP, Some(20.0), Some(50.0), false);
        assert_eq!(p.rate(), Some(rate));
        p.on_report(ms(3_250), GAP, Some(20.0), Some(50.0), true);
        assert_eq!(p.rate(), Some(rate * PROBE_GAIN));
    }

    #[test]
    fn a_queue_reading_that_a_cut_does_not_move_cuts_no_more() {
        // Every sample 40 ms above the lowest, whatever the rate (late
        // reports), and the path carries all it is given.
        let mut p = pacer();
        let mut rate_pkts = 1000.0;
        for i in 1..40 {
            p.on_report(ms(i * 250), GAP, Some(60.0), Some(rate_pkts), true);
            if let Some(r) = p.rate() {
                rate_pkts = r / 1400.0;
            }
        }
        let rate = p.rate().expect("paced") / 1400.0;
        assert_eq!(p.cuts, 1, "{rate}");
        assert!(rate >= 1000.0 * 0.5, "{rate}");
        assert!(p.unmoved > 30);
        // A queue that grows while the path carries less than it is given
        // (its capacity fell) is cut for again.
        p.on_report(ms(10_250), GAP, Some(80.0), Some(rate * 0.6), true);
        p.on_report(ms(10_500), GAP, Some(80.0), Some(rate * 0.6), true);
        assert_eq!(p.cuts, 2);
        assert!(p.rate().unwrap() / 1400.0 < rate * 0.7);
    }

    #[test]
    fn pacing_spaces_datagrams_at_the_rate_with_a_small_burst() {
        let mut p = pacer();
        // 1000 bytes per ms (a 10-ms queue: the share is DRAIN).
        let carried = 1e6 / 1400.0 / DRAIN;
        p.on_report(ms(250), GAP, Some(30.0), Some(carried), false);
        p.on_report(ms(500), GAP, Some(30.0), Some(carried), false);
        let rate = p.rate().unwrap();
        assert!((rate - 1e6).abs() < 1.0, "{rate}");
        let mut sent = 0;
        for t in (1_000_000u64..1_100_000).step_by(10) {
            let now = Instant::from_micros(t);
            if p.may_send(now) {
                p.on_send(now, 1000);
                sent += 1;
            } else {
                assert!(p.wait_until(now).is_some_and(|w| w > now));
            }
        }
        // 100 ms at 1000 bytes/ms, plus the burst allowance.
        let burst = (BURST_BYTES / 1000.0) as i32;
        assert!((100..=101 + burst).contains(&sent), "{sent}");
    }

    proptest! {
        #[test]
        fn rates_stay_finite_and_at_least_the_floor(
            reports in proptest::collection::vec(
                (
                    proptest::option::of(-1e3f64..1e4),
                    proptest::option::of(-1.0f64..1e6),
                    any::<bool>(),
                    0usize..2000,
                ),
                1..200,
            )
        ) {
            let mut p = PathPacer::default();
            for (i, (delay, carried, held, bytes)) in reports.into_iter().enumerate() {
                let now = ms(i as u64 * 250);
                if p.may_send(now) {
                    p.on_send(now, bytes);
                }
                p.on_report(now, GAP, delay, carried, held);
                if let Some(r) = p.rate() {
                    prop_assert!(r.is_finite() && r >= MIN_RATE);
                }
            }
        }
    }
}
