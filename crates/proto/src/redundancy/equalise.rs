//! Delay equalisation: the one place that decides how a session's bulk
//! packets are kept from arriving ahead of its slowest path's: how long a
//! bulk packet waits at the ingress before it leaves on a path faster
//! than the slowest of its egress's paths (the node's hold line,
//! `node/hold.rs`, does the waiting), and, without holds, which packets
//! must take the slowest path (the lead rule, at the end).
//!
//! A session that spreads its packets over paths of different delays
//! (stripe, and the coded modes' data) delivers them in order only as
//! fast as the slowest path: the egress's re-order buffer holds what the
//! fast path brought until the slow path's packets fill the gaps. TCP
//! behind it then sees its packets' round trip as the slow path's, except
//! for the packets that found no gap before them (the first of a burst,
//! any sent while only the fast path was used): those come back at the
//! fast path's round trip. One such sample is enough: Linux keeps the
//! lowest round trip it saw as the path's (`min_rtt`), CUBIC's HyStart
//! leaves slow start when a round's samples rise above it by an eighth
//! (so it leaves at a few dozen packets, far below what the paths carry),
//! and BBR sizes its window as twice the bandwidth times that round trip
//! (so it caps itself at what the fast path's round trip allows). MPTCP
//! has no such problem: each subflow has its own round trip.
//!
//! So each path's packets wait at the ingress for the difference between
//! the slowest path's delay and theirs: every packet then arrives about
//! as late as the slow path's, TCP sees one round trip, and the egress's
//! buffer holds only what the paths' queues and jitter add. Urgent
//! packets (VoIP) never wait: they take the path that gets them there
//! first (ECF and BLEST make the same choice per packet for MPTCP; with a
//! single TCP flow inside a tunnel, equal arrival times are what keep it
//! from seeing re-ordering).
//!
//! How long: a path's delay is the lowest of its last [`SAMPLES_KEPT`]
//! samples (each path report gives one per path: the packet's way out
//! plus the report's way back), the path without a queue; each path
//! waits for the difference between the slowest path's delay and its
//! own. Only the paths' base delays are equalised, not their queues: a
//! TCP sender's queue swings over seconds (CUBIC's sawtooth), faster
//! than reports can follow, and holds sized from the last reports' queues
//! were always stale (measured: after a path's capacity halved, the split
//! carried 23 of 30 Mbit/s with such holds, 27.5 with base delays only);
//! what the queues add is left to the egress's re-order buffer, which
//! learns it. A held packet's delay is measured from its release, so the
//! hold is neither read as the path's delay nor as its queue. A difference
//! below [`MIN_HOLD_MS`] is noise and holds nothing; no hold exceeds
//! [`MAX_HOLD_MS`] (a path that much slower is better left to the
//! re-order buffer's timeout than to hold every packet of the fast one
//! that long).
//!
//! **The lead rule** (on wherever the node re-orders as an egress, held
//! or not): a packet on a fast path is delivered behind any packet sent
//! before it on the slowest path, since the egress's re-order buffer
//! waits for that one. So only a packet sent when none went on the
//! slowest path a moment before ([`LEAD_WITHIN`]) can come back early:
//! the first of each burst, a SYN. The rule sends exactly those on the
//! slowest path ([`PathDelays::lead`]); the rest are split as the mode
//! splits them, and nothing waits at the ingress. Measured beside holds
//! (docs/performance.md, "The lead rule, ..."): as fast a start; with
//! CUBIC, unequal clean paths carried 40 Mbit/s with the rule and 30.5
//! with holds.

use std::collections::VecDeque;
use std::time::Duration;

use braid_wire::RedundancyMode;

use crate::time::Instant;

/// Delay samples kept per path (one per path report: 16 s by default).
pub const SAMPLES_KEPT: usize = 16;
/// A lag below this holds nothing (ms).
pub const MIN_HOLD_MS: f64 = 2.0;
/// The longest hold (ms).
pub const MAX_HOLD_MS: f64 = 250.0;
/// The lead rule (below, [`PathDelays::lead`]): a packet sent within this
/// long of one on the slowest path arrives behind it at the egress. Less
/// than the round-trip rise at which CUBIC's HyStart ends slow start (an
/// eighth of the round trip, at least 4 ms).
pub const LEAD_WITHIN: Duration = Duration::from_millis(2);

/// Whether packets of `mode` are spread over paths, so that their
/// arrival order depends on the paths' delays (single and tree use one
/// way; mirror's copies race, and the first to arrive is taken).
pub fn spreads(mode: RedundancyMode) -> bool {
    matches!(
        mode,
        RedundancyMode::Stripe
            | RedundancyMode::Parity
            | RedundancyMode::ParityRotating
            | RedundancyMode::Erasure
            | RedundancyMode::Sliding
    )
}

/// The holds that equalise paths of these delays (ms; `None`: not known
/// yet, and that path holds nothing).
pub fn holds(delays: &[Option<f64>]) -> Vec<Duration> {
    let slowest = delays.iter().flatten().copied().fold(f64::NAN, f64::max);
    delays
        .iter()
        .map(|d| match d {
            Some(d) if slowest - d >= MIN_HOLD_MS => {
                Duration::from_secs_f64((slowest - d).min(MAX_HOLD_MS) / 1e3)
            }
            _ => Duration::ZERO,
        })
        .collect()
}

/// Packets sent as a copy on every path while some path's delay is not
/// known yet ([`PathDelays::take_probe`]), per set of paths: the first
/// reports date every path with the first of them (an egress reports a
/// path's first packet at once), and a few more stand in for one that
/// was lost.
pub const PROBE_COPIES: u8 = 3;

/// The delays of an egress's paths, and the holds they call for.
#[derive(Debug, Clone, Default)]
pub struct PathDelays {
    samples: Vec<VecDeque<f64>>,
    holds: Vec<Duration>,
    /// Packets sent on every path since these paths were taken.
    probes: u8,
    /// The path every other lags by [`MIN_HOLD_MS`] or more, once every
    /// path is dated.
    slowest: Option<usize>,
    /// When a packet last went on it.
    led_at: Option<Instant>,
}

impl PathDelays {
    /// Delays of `paths` paths, none known yet.
    pub fn new(paths: usize) -> Self {
        PathDelays {
            samples: vec![VecDeque::new(); paths],
            holds: vec![Duration::ZERO; paths],
            probes: 0,
            slowest: None,
            led_at: None,
        }
    }

    /// Whether the next packet should go on every path, to date the paths
    /// whose delay is not known yet (counted: at most [`PROBE_COPIES`]
    /// per set of paths; none when there is only one path, or every
    /// path's delay is known).
    pub fn take_probe(&mut self) -> bool {
        let unknown = self.samples.len() > 1 && self.samples.iter().any(VecDeque::is_empty);
        let take = unknown && self.probes < PROBE_COPIES;
        self.probes += u8::from(take);
        take
    }

    /// The same delays for paths renumbered: new path i was old path
    /// `old[i]` (`None`: a new path, not known yet).
    pub fn renumbered(&self, old: &[Option<usize>]) -> PathDelays {
        let samples: Vec<VecDeque<f64>> = old
            .iter()
            .map(|o| {
                o.and_then(|j| self.samples.get(j))
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        let mut d = PathDelays {
            samples,
            ..PathDelays::default()
        };
        d.derive();
        d
    }

    /// One path report's delay sample of each path (ms; `None`: none for
    /// that path, or not a finite, non-negative number).
    pub fn note(&mut self, samples: &[Option<f64>]) {
        for (p, d) in samples.iter().enumerate() {
            let (Some(d), Some(kept)) = (d, self.samples.get_mut(p)) else {
                continue;
            };
            if !(d.is_finite() && *d >= 0.0) {
                continue;
            }
            if kept.len() == SAMPLES_KEPT {
                kept.pop_front();
            }
            kept.push_back(*d);
        }
        self.derive();
    }

    /// The holds and the slowest path, from the samples.
    fn derive(&mut self) {
        let delays = self.delays();
        self.holds = holds(&delays);
        let dated: Vec<(usize, f64)> = (delays.iter().enumerate())
            .filter_map(|(p, d)| Some((p, (*d)?)))
            .collect();
        let slowest = dated
            .iter()
            .copied()
            .reduce(|a, b| if b.1 > a.1 { b } else { a });
        self.slowest = slowest
            .filter(|&(s, d)| {
                dated.len() == delays.len()
                    && dated.len() > 1
                    && dated.iter().all(|&(p, e)| p == s || d - e >= MIN_HOLD_MS)
            })
            .map(|(s, _)| s);
    }

    /// The lead rule: the path a bulk packet of a mode that spreads
    /// packets should take now, if any. A packet on a faster path arrives
    /// at the egress ahead of the session's others unless one sent about
    /// as late ([`LEAD_WITHIN`]) is on the slowest path: the egress's
    /// re-order buffer then holds it until that one arrives. Delivered at
    /// once, it would come back to the sender at the fast path's round
    /// trip, which CUBIC and BBR keep as the connection's shortest, while
    /// the others come back at the slowest's (see the module's comment).
    /// So the first packet of each burst (a SYN, the first after an idle
    /// moment) goes on the slowest path, and the rest are split as the
    /// mode splits them. `None`: no path is slower than the others, or a
    /// packet went on the slowest a moment ago.
    pub fn lead(&self, now: Instant) -> Option<usize> {
        let slowest = self.slowest?;
        match self.led_at {
            Some(t) if now.since(t) <= LEAD_WITHIN => None,
            _ => Some(slowest),
        }
    }

    /// A bulk packet of a spreading mode went on `path` at `now`.
    pub fn note_sent(&mut self, now: Instant, path: usize) {
        if self.slowest == Some(path) {
            self.led_at = Some(now);
        }
    }

    /// Each path's delay: the lowest of its samples kept (`None` without
    /// any).
    pub fn delays(&self) -> Vec<Option<f64>> {
        self.samples
            .iter()
            .map(|s| s.iter().copied().reduce(f64::min))
            .collect()
    }

    /// How long a bulk packet for path `path` waits (zero for a path not
    /// known).
    pub fn hold(&self, path: usize) -> Duration {
        self.holds.get(path).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_fast_path_waits_for_the_difference_and_the_slowest_not_at_all() {
        let mut d = PathDelays::new(3);
        assert_eq!(d.hold(0), Duration::ZERO);
        d.note(&[Some(21.0), Some(101.0), None]);
        d.note(&[None, Some(140.0), None]); // queued: the lowest counts
        assert_eq!(d.hold(0), Duration::from_millis(80));
        assert_eq!(d.hold(1), Duration::ZERO);
        assert_eq!(d.hold(2), Duration::ZERO, "not known: holds nothing");
        assert_eq!(d.hold(7), Duration::ZERO, "no such path");
        d.note(&[None, None, Some(100.5)]);
        assert_eq!(d.hold(2), Duration::ZERO, "half a millisecond is noise");
    }

    #[test]
    fn paths_not_all_dated_are_probed_a_few_times_and_no_more() {
        let mut d = PathDelays::new(2);
        let probes = (0..10).filter(|_| d.take_probe()).count();
        assert_eq!(probes, PROBE_COPIES as usize, "bounded");
        let mut d = PathDelays::new(2);
        assert!(d.take_probe());
        d.note(&[Some(10.0), None]);
        assert!(d.take_probe(), "path 1 is not dated yet");
        d.note(&[None, Some(50.0)]);
        assert!(!d.take_probe(), "every path dated");
        // A new path after a route change is probed afresh; one path
        // alone never is.
        let mut d = d.renumbered(&[Some(1), None]);
        assert!(d.take_probe());
        assert!(!PathDelays::new(1).take_probe());
    }

    #[test]
    fn queues_are_not_equalised_but_old_samples_age_out() {
        let mut d = PathDelays::new(2);
        d.note(&[Some(10.0), Some(50.0)]);
        // A standing queue on the fast path changes nothing while its
        // queueless sample is kept...
        for _ in 0..SAMPLES_KEPT - 1 {
            d.note(&[Some(60.0), Some(50.0)]);
        }
        assert_eq!(d.hold(0), Duration::from_millis(40));
        // ...and a path that slowed down for good is followed once it
        // ages out.
        d.note(&[Some(45.0), Some(50.0)]);
        assert_eq!(d.hold(0), Duration::from_millis(5));
    }

    #[test]
    fn bad_samples_are_ignored_and_holds_are_capped() {
        let mut d = PathDelays::new(2);
        d.note(&[Some(f64::NAN), None]);
        d.note(&[Some(-3.0), None]);
        assert_eq!(d.delays()[0], None);
        d.note(&[Some(1.0), Some(900.0)]);
        assert_eq!(d.hold(0), Duration::from_millis(MAX_HOLD_MS as u64));
    }

    #[test]
    fn the_slowest_path_leads_unless_a_packet_went_on_it_a_moment_ago() {
        let at = |ms: u64| Instant::ZERO + Duration::from_millis(ms);
        let mut d = PathDelays::new(3);
        d.note(&[Some(21.0), Some(62.0), None]);
        assert_eq!(d.lead(at(0)), None, "path 2 not dated: it may be slower");
        d.note(&[None, None, Some(40.0)]);
        assert_eq!(d.lead(at(0)), Some(1));
        d.note_sent(at(10), 0);
        assert_eq!(d.lead(at(10)), Some(1), "a faster path leads nothing");
        d.note_sent(at(10), 1);
        assert_eq!(d.lead(at(10)), None);
        assert_eq!(d.lead(at(10) + LEAD_WITHIN), None);
        assert_eq!(d.lead(at(13)), Some(1), "idle: the next burst leads again");
        let mut even = PathDelays::new(2);
        even.note(&[Some(20.0), Some(21.5)]);
        assert_eq!(even.lead(at(0)), None, "within noise: no path is slower");
        let mut alone = PathDelays::new(1);
        alone.note(&[Some(20.0)]);
        assert_eq!(alone.lead(at(0)), None);
        let d = d.renumbered(&[Some(1), Some(0)]);
        assert_eq!(d.lead(at(20)), Some(0), "renumbered with its path");
    }

    #[test]
    fn renumbered_paths_keep_their_samples_and_new_ones_start_unknown() {
        let mut d = PathDelays::new(2);
        d.note(&[Some(10.0), Some(50.0)]);
        let r = d.renumbered(&[Some(1), None, Some(0)]);
        assert_eq!(r.delays(), vec![Some(50.0), None, Some(10.0)]);
        assert_eq!(r.hold(2), Duration::from_millis(40));
        assert_eq!(r.hold(1), Duration::ZERO);
    }

    proptest! {
        /// With the holds added, every known path is as slow as the
        /// slowest (within the noise floor and the cap), and no path is
        /// made slower than the slowest.
        #[test]
        fn holds_equalise_within_the_floor(delays in proptest::collection::vec(proptest::option::of(0.0f64..400.0), 1..16)) {
            let h = holds(&delays);
            let slowest = delays.iter().flatten().copied().fold(f64::NAN, f64::max);
            for (d, h) in delays.iter().zip(&h) {
                let h = h.as_secs_f64() * 1e3;
                match d {
                    None => prop_assert_eq!(h, 0.0),
                    Some(d) => {
                        prop_assert!(d + h <= slowest + 1e-6);
                        let short = slowest - (d + h);
                        prop_assert!(short < MIN_HOLD_MS || (h - MAX_HOLD_MS).abs() < 1e-6, "{d} + {h} vs {slowest}");
                    }
                }
            }
        }
    }
}
