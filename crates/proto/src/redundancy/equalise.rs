//! Delay equalisation: the one place that decides how long a bulk packet
//! waits at the ingress before it leaves on a path faster than the
//! slowest of its egress's paths (the node's hold line, `node/hold.rs`,
//! does the waiting).
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
//! How long: each path report dates the latest arrival on every path it
//! counts (the packet's way out plus the report's way back, which one
//! report shares among all its paths), so within one report the
//! differences between paths are the differences of their ways out,
//! queues included. Per report, each path's lag behind the slowest path
//! of that report is noted; its hold is the median of its last
//! [`SAMPLES_KEPT`] lags. Queues count: a path whose queue already holds
//! its packets as long as the slower path's delay needs no hold (a TCP
//! sender that keeps a standing queue on the fast path equalises the
//! paths by itself), and one whose queue grows past the other's makes
//! the *other* path's packets wait. The median follows a change within a
//! few reports and ignores one odd sample. A lag below [`MIN_HOLD_MS`]
//! is noise and holds nothing; no hold exceeds [`MAX_HOLD_MS`] (a path
//! that much slower is better left to the re-order buffer's timeout than
//! to hold every packet of the fast one that long).

use std::collections::VecDeque;
use std::time::Duration;

use braid_wire::RedundancyMode;

/// Lags kept per path (one per path report: 5 s by default).
pub const SAMPLES_KEPT: usize = 5;
/// A lag below this holds nothing (ms).
pub const MIN_HOLD_MS: f64 = 2.0;
/// The longest hold (ms).
pub const MAX_HOLD_MS: f64 = 250.0;

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
    )
}

/// Each path's lag behind the slowest of one report's delay samples (ms;
/// `None` for a path without a sample, or a sample that is not a finite,
/// non-negative number).
pub fn lags(samples: &[Option<f64>]) -> Vec<Option<f64>> {
    let ok = |d: &Option<f64>| d.filter(|d| d.is_finite() && *d >= 0.0);
    let slowest = samples.iter().filter_map(ok).fold(f64::NAN, f64::max);
    samples.iter().map(|d| ok(d).map(|d| slowest - d)).collect()
}

/// The hold for a path of these lags (ms): their median, nothing below
/// the noise floor, at most the cap.
fn hold_of(lags: &VecDeque<f64>) -> Duration {
    if lags.is_empty() {
        return Duration::ZERO;
    }
    let mut v: Vec<f64> = lags.iter().copied().collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    if median < MIN_HOLD_MS {
        Duration::ZERO
    } else {
        Duration::from_secs_f64(median.min(MAX_HOLD_MS) / 1e3)
    }
}

/// The lags of an egress's paths, and the holds they call for.
#[derive(Debug, Clone, Default)]
pub struct PathDelays {
    lags: Vec<VecDeque<f64>>,
    holds: Vec<Duration>,
}

impl PathDelays {
    /// Lags of `paths` paths, none known yet.
    pub fn new(paths: usize) -> Self {
        PathDelays {
            lags: vec![VecDeque::new(); paths],
            holds: vec![Duration::ZERO; paths],
        }
    }

    /// The same lags for paths renumbered: new path i was old path
    /// `old[i]` (`None`: a new path, not known yet).
    pub fn renumbered(&self, old: &[Option<usize>]) -> PathDelays {
        let lags: Vec<VecDeque<f64>> = old
            .iter()
            .map(|o| {
                o.and_then(|j| self.lags.get(j))
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        let holds = lags.iter().map(hold_of).collect();
        PathDelays { lags, holds }
    }

    /// One path report's delay sample of each path (ms; `None`: none for
    /// that path). A report that samples fewer than two paths says
    /// nothing of their differences and is ignored.
    pub fn note(&mut self, samples: &[Option<f64>]) {
        let lags = lags(samples);
        if lags.iter().flatten().count() < 2 {
            return;
        }
        for (p, lag) in lags.into_iter().enumerate() {
            let (Some(lag), Some(kept)) = (lag, self.lags.get_mut(p)) else {
                continue;
            };
            if kept.len() == SAMPLES_KEPT {
                kept.pop_front();
            }
            kept.push_back(lag);
            self.holds[p] = hold_of(kept);
        }
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

    fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1e3
    }

    #[test]
    fn the_fast_path_waits_for_the_difference_and_the_slowest_not_at_all() {
        let mut d = PathDelays::new(3);
        assert_eq!(d.hold(0), Duration::ZERO);
        d.note(&[Some(21.0), Some(101.0), None]);
        assert_eq!(d.hold(0), Duration::from_millis(80));
        assert_eq!(d.hold(1), Duration::ZERO);
        assert_eq!(d.hold(2), Duration::ZERO, "not known: holds nothing");
        assert_eq!(d.hold(7), Duration::ZERO, "no such path");
        d.note(&[None, Some(101.0), Some(100.5)]);
        assert_eq!(d.hold(2), Duration::ZERO, "half a millisecond is noise");
    }

    #[test]
    fn a_report_of_one_path_says_nothing() {
        let mut d = PathDelays::new(2);
        d.note(&[Some(10.0), None]);
        d.note(&[Some(f64::NAN), Some(50.0)]);
        d.note(&[Some(-3.0), Some(50.0)]);
        assert_eq!((d.hold(0), d.hold(1)), (Duration::ZERO, Duration::ZERO));
    }

    #[test]
    fn a_standing_queue_on_the_fast_path_needs_no_hold_and_one_past_the_slow_path_holds_the_other()
    {
        let mut d = PathDelays::new(2);
        // 10 ms and 50 ms paths, no queues: the fast one waits 40.
        for _ in 0..SAMPLES_KEPT {
            d.note(&[Some(20.0), Some(60.0)]);
        }
        assert_eq!(d.hold(0), Duration::from_millis(40));
        // A 40-ms queue builds on the fast path: the median follows within
        // a few reports, and nothing waits.
        for _ in 0..SAMPLES_KEPT / 2 + 1 {
            d.note(&[Some(60.0), Some(60.0)]);
        }
        assert_eq!(d.hold(0), Duration::ZERO);
        // It grows to 70 ms: now the slow path's packets wait 30.
        for _ in 0..SAMPLES_KEPT / 2 + 1 {
            d.note(&[Some(90.0), Some(60.0)]);
        }
        assert_eq!(
            (d.hold(0), d.hold(1)),
            (Duration::ZERO, Duration::from_millis(30))
        );
    }

    #[test]
    fn one_odd_report_moves_nothing() {
        let mut d = PathDelays::new(2);
        for _ in 0..3 {
            d.note(&[Some(20.0), Some(60.0)]);
        }
        d.note(&[Some(200.0), Some(60.0)]);
        assert_eq!(d.hold(0), Duration::from_millis(40));
    }

    #[test]
    fn renumbered_paths_keep_their_lags_and_new_ones_start_unknown() {
        let mut d = PathDelays::new(2);
        d.note(&[Some(10.0), Some(50.0)]);
        let r = d.renumbered(&[Some(1), None, Some(0)]);
        assert_eq!(r.hold(2), Duration::from_millis(40));
        assert_eq!(r.hold(0), Duration::ZERO);
        assert_eq!(r.hold(1), Duration::ZERO);
    }

    #[test]
    fn holds_are_capped() {
        let mut d = PathDelays::new(2);
        d.note(&[Some(1.0), Some(900.0)]);
        assert_eq!(ms(d.hold(0)), MAX_HOLD_MS);
    }

    proptest! {
        /// Within one report, with the holds added every sampled path is
        /// as late as the slowest (within the noise floor and the cap),
        /// and none later.
        #[test]
        fn one_reports_holds_equalise_within_the_floor(
            samples in proptest::collection::vec(proptest::option::of(0.0f64..400.0), 2..16)
        ) {
            let mut d = PathDelays::new(samples.len());
            d.note(&samples);
            let sampled = samples.iter().flatten().count();
            let slowest = samples.iter().flatten().copied().fold(f64::NAN, f64::max);
            for (p, s) in samples.iter().enumerate() {
                let h = ms(d.hold(p));
                match s {
                    Some(s) if sampled >= 2 => {
                        prop_assert!(s + h <= slowest + 1e-6);
                        let short = slowest - (s + h);
                        prop_assert!(short < MIN_HOLD_MS || (h - MAX_HOLD_MS).abs() < 1e-6, "{s} + {h} vs {slowest}");
                    }
                    _ => prop_assert_eq!(h, 0.0),
                }
            }
        }
    }
}
