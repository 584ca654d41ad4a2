//! How fast each path of a session is, and the stripe weights that follow
//! from it: the one place that decides how an ingress splits traffic
//! between its paths (stripe, the coded modes' placement, the delivery
//! formulas' weights).
//!
//! A path's capacity shows only when the path is full: what it delivers
//! then is what it can carry (BBR's bandwidth sample). Below that, what it
//! delivers is what it was given. So, from each estimate (`estimate.rs`):
//!
//! * A path whose queue is [`FULL_QUEUE_MS`] or more longer than the
//!   shortest queue among the session's paths, in [`FULL_AFTER`] reports
//!   in a row, is **full**: its capacity
//!   is what it delivered recently, and its weight is that. (The queue is
//!   the delay above the path's shortest, `estimate.rs`; what all paths
//!   share, the report's own way back and any queue it meets, is taken
//!   off by comparing the paths: one report carries them all.)
//! * A path that is not full keeps the capacity it was last found to
//!   have: a sender that backed off (TCP after a loss) drains every queue
//!   at once, and the split must not change for it. Only a path not full
//!   for [`PROBE_AFTER`] reports in a row *while another path is full*
//!   (the sender is held by that one: this one has room) raises its
//!   capacity by [`REPROBE_GAIN`] per report, compounding, until it fills
//!   again: a path whose capacity rose, or whose capacity was first
//!   taken while the sender was still speeding up, takes more. (Probing
//!   at every report instead makes the split swing by the gain: the
//!   sender always fills one path, so the other is never full, and the
//!   two take turns.)
//! * A path never found full yet is given [`STARTUP_GAIN`] times what it
//!   carried, and at least an equal share of what all paths carried, so
//!   that at the start a faster path's share doubles per report until it
//!   fills, and the split does not drift on noise while
//!   nothing is full.
//! * The split moves only while some path is full: otherwise nothing
//!   limits the sender, every path carries what it is given, and a split
//!   that moved would follow only the rates' noise (and, on a lossy path,
//!   the bursts: the packets after a burst would then measure the path).
//!   The routing weights stand until a path is first found full.
//! * A path without an estimate (too few packets yet: a new path, or one
//!   the mode did not use) is given the mean of the others' weights.
//!
//! A capacity that drops fills the path's queue, and the next report sets
//! the lower capacity; one that rises is found by the probing. Either is
//! followed within a few report intervals (a second each by default: a
//! drop two reports on, a rise by a quarter per report once probing
//! beside a full path).
//!
//! Rates are what a path carried recently, lost packets included (its
//! packets up to the latest arrival, `estimate.rs`): a path's random loss
//! is answered by the modes' repair, not by giving it less, and a burst of
//! losses must not take the path's share away while it lasts (the next
//! packets would then measure the path only after bursts). Weights are
//! packets per second; only their ratios matter.

use super::estimate::PathEstimate;

/// Queueing delay (ms above the path's shortest delay) from which a path
/// is taken as full. Above the scheduling jitter of a router (a few ms),
/// below the queue a rate limiter or a radio's buffer builds (tens of ms).
pub const FULL_QUEUE_MS: f64 = 5.0;
/// Reports in a row whose queue must be long enough before a path is
/// taken as full: one delay sample per report is noisy (a sample taken
/// just after a burst of losses, say), and one false "full" would set the
/// path's capacity to whatever it carried then.
pub const FULL_AFTER: u32 = 2;
/// How much more than it carried a path never found full is given: it
/// doubles its share per report until it fills (BBR's start-up doubles
/// too), so a 1:4 split is found in two or three reports.
pub const STARTUP_GAIN: f64 = 2.0;
/// How much a path of known capacity that has not been full for a while,
/// beside one that is, raises its capacity per report (compounding):
/// gentler than the first probing, since every probe that finds nothing
/// new overfills the path a little. A quarter, not less: the split moves
/// only by [`SPLIT_HYSTERESIS`] of a share, so a smaller step taken from
/// what the path carried would never move it (with 10%, a 10 + 40 Mbit/s
/// pair stayed at 1:3.1 for a whole transfer, the slow path's queue full).
pub const REPROBE_GAIN: f64 = 1.25;
/// Reports in a row a path with a known capacity must not be full before
/// it probes for more (two seconds at the default report interval).
pub const PROBE_AFTER: u32 = 2;
/// The longest wait between probes: each probe that found no more than
/// [`PROBE_FOUND`] times the capacity it started from doubles the wait
/// (as BBR probes less often where it finds nothing), one that found
/// more sets it back to [`PROBE_AFTER`]. A split found right then costs
/// one overfilled report in this many, not one in three.
pub const PROBE_AFTER_MAX: u32 = 32;
/// What a probe must find, times the capacity it started from, to count
/// as having found more.
pub const PROBE_FOUND: f64 = 1.1;

/// What a session knows of one path's speed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PathCapacity {
    /// Packets per second the path carried when last found full (raised
    /// by anything it carried since): `None` until it is found full.
    capacity: Option<f64>,
    /// The latest estimate's recent delivery rate and whether the path
    /// was full then; `None` before any estimate.
    latest: Option<(f64, bool)>,
    /// Estimates in a row that found the path not full.
    not_full: u32,
    /// Estimates in a row whose queue was long enough for full.
    queued: u32,
    /// Reports not full, beside a full path, before the next probe
    /// (0: [`PROBE_AFTER`]).
    probe_after: u32,
    /// While probing: the capacity the probe started from.
    probed_from: Option<f64>,
}

impl PathCapacity {
    /// Takes the path's latest estimate; `shared_queue_ms` is the
    /// shortest queue among the session's paths in the same report
    /// ([`shared_queue_ms`]).
    pub fn on_estimate(&mut self, e: &PathEstimate, shared_queue_ms: f64) {
        let rate = e.carried_per_s.max(0.0);
        let queued = e
            .queue_ms
            .is_some_and(|q| q - shared_queue_ms >= FULL_QUEUE_MS);
        self.queued = if queued {
            self.queued.saturating_add(1)
        } else {
            0
        };
        let full = self.queued >= FULL_AFTER;
        if let Some(from) = self.probed_from.filter(|_| full) {
            self.probed_from = None;
            let wait = self.probe_after.max(PROBE_AFTER);
            self.probe_after = if rate > from * PROBE_FOUND {
                PROBE_AFTER
            } else {
                (wait * 2).min(PROBE_AFTER_MAX)
            };
        }
        self.capacity = if full {
            Some(rate)
        } else {
            self.capacity.map(|c| c.max(rate))
        };
        self.latest = Some((rate, full));
        self.not_full = if full {
            0
        } else {
            self.not_full.saturating_add(1)
        };
    }

    /// Whether the latest estimate found the path full.
    pub fn is_full(&self) -> bool {
        self.latest.is_some_and(|(_, full)| full)
    }

    /// After [`Self::on_estimate`]: a path of known capacity, not full for
    /// [`PROBE_AFTER`] reports (more after probes that found nothing:
    /// [`PROBE_AFTER_MAX`]) while another path of the session is full
    /// (`beside_full`: the sender is held by that one, so this one has
    /// room), raises its capacity by [`REPROBE_GAIN`], to at most
    /// [`STARTUP_GAIN`] times what it carried. It rises report after
    /// report until it fills; then what it carried full sets it again.
    pub fn probe(&mut self, beside_full: bool) {
        let (Some(c), Some((rate, false))) = (self.capacity, self.latest) else {
            return;
        };
        if beside_full && self.not_full >= self.probe_after.max(PROBE_AFTER) {
            self.probed_from.get_or_insert(c);
            self.capacity = Some((c.max(rate) * REPROBE_GAIN).min(rate * STARTUP_GAIN).max(c));
        }
    }

    /// This path's share of the split, given an equal share of what all
    /// paths delivered (see the module comment); `None` before any
    /// estimate.
    fn weight(&self, equal_share: f64) -> Option<f64> {
        let (rate, full) = self.latest?;
        Some(match self.capacity {
            _ if full => rate,
            None => (rate * STARTUP_GAIN).max(equal_share),
            Some(c) => c,
        })
    }
}

/// Takes a path report's estimates (path slot, estimate) into the
/// capacities of the session's paths: each path's fullness and rate
/// ([`PathCapacity::on_estimate`], against the queue all of them show),
/// then the probing of those with room beside a full one
/// ([`PathCapacity::probe`]).
pub fn on_report(capacities: &mut [PathCapacity], reported: &[(usize, PathEstimate)]) {
    let shared = shared_queue_ms(reported.iter().map(|(_, e)| e));
    for (p, e) in reported {
        if let Some(c) = capacities.get_mut(*p) {
            c.on_estimate(e, shared);
        }
    }
    for (p, _) in reported {
        let beside_full = reported
            .iter()
            .any(|(q, _)| q != p && capacities.get(*q).is_some_and(PathCapacity::is_full));
        if let Some(c) = capacities.get_mut(*p) {
            c.probe(beside_full);
        }
    }
}

/// Shares of the split (a path's weight over the sum) that move by less
/// than this are left alone: a measured rate is noisy, and a split that
/// follows the noise overfills one path after the other (on two equal
/// paths that costs TCP a few percent for nothing).
pub const SPLIT_HYSTERESIS: f64 = 0.1;

/// Whether the split `new` differs from `current` enough to take: the
/// number of paths changed, or some path's share moved by
/// [`SPLIT_HYSTERESIS`] of itself or more.
pub fn split_moved(current: &[u32], new: &[u32]) -> bool {
    if current.len() != new.len() {
        return true;
    }
    let sum = |w: &[u32]| w.iter().map(|&x| f64::from(x.max(1))).sum::<f64>();
    let (a, b) = (sum(current), sum(new));
    current.iter().zip(new).any(|(&x, &y)| {
        let (x, y) = (f64::from(x.max(1)) / a, f64::from(y.max(1)) / b);
        (y - x).abs() >= SPLIT_HYSTERESIS * x
    })
}

/// The queue every path of a report shows: the shortest (0 when none
/// shows one).
pub fn shared_queue_ms<'a>(estimates: impl IntoIterator<Item = &'a PathEstimate>) -> f64 {
    estimates
        .into_iter()
        .filter_map(|e| e.queue_ms)
        .reduce(f64::min)
        .unwrap_or(0.0)
        .max(0.0)
}

/// The stripe weights of paths `capacities` (slot order), when a path is
/// full now; `None` when none is (the split holds: nothing limits the
/// sender, and a split that moved then would follow only the rates'
/// noise). Every weight is at least 1.
pub fn weights(capacities: &[PathCapacity]) -> Option<Vec<u32>> {
    if !capacities
        .iter()
        .any(|c| c.latest.is_some_and(|(_, full)| full))
    {
        return None;
    }
    let measured: Vec<f64> = capacities
        .iter()
        .filter_map(|c| c.latest)
        .map(|l| l.0)
        .collect();
    let equal_share = measured.iter().sum::<f64>() / measured.len() as f64;
    let mut w: Vec<Option<f64>> = capacities.iter().map(|c| c.weight(equal_share)).collect();
    let known: Vec<f64> = w.iter().flatten().copied().collect();
    let mean = known.iter().sum::<f64>() / known.len() as f64;
    for x in w.iter_mut().filter(|x| x.is_none()) {
        *x = Some(mean);
    }
    // Integers with enough resolution: the largest weight maps near 1e6.
    let top = w.iter().flatten().copied().fold(0.0, f64::max);
    let scale = if top > 0.0 { 1e6 / top } else { 1.0 };
    Some(
        w.iter()
            .map(|x| ((x.unwrap_or(0.0) * scale).round() as u32).max(1))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn estimate(rate: f64, queue_ms: f64) -> PathEstimate {
        PathEstimate {
            loss: 0.0,
            random_loss: 0.0,
            burst: 1.0,
            delivered_per_s: rate,
            packets: 1000,
            delay_ms: Some(20.0 + queue_ms),
            delay_spread_ms: None,
            min_delay_ms: Some(20.0),
            recent_per_s: rate,
            carried_per_s: rate,
            queue_ms: Some(queue_ms),
        }
    }

    impl PathCapacity {
        /// As if the other paths showed no queue.
        fn on_estimate_alone(&mut self, e: &PathEstimate) {
            self.on_estimate(e, 0.0);
        }

        /// The same estimate for as many reports as "full" takes.
        fn on_estimates_alone(&mut self, e: &PathEstimate) {
            for _ in 0..FULL_AFTER {
                self.on_estimate(e, 0.0);
            }
        }
    }

    fn ratio(w: &[u32]) -> f64 {
        f64::from(w[1]) / f64::from(w[0])
    }

    #[test]
    fn without_a_full_path_the_split_holds() {
        let mut caps = [PathCapacity::default(); 2];
        assert_eq!(weights(&caps), None);
        caps[0].on_estimate_alone(&estimate(500.0, 0.0));
        caps[1].on_estimate_alone(&estimate(900.0, 0.0));
        assert_eq!(weights(&caps), None);
    }

    #[test]
    fn a_full_path_gets_what_it_carries_and_a_new_one_probes() {
        let mut caps = [PathCapacity::default(); 2];
        caps[0].on_estimates_alone(&estimate(800.0, 40.0));
        caps[1].on_estimate_alone(&estimate(800.0, 0.0));
        let w = weights(&caps).unwrap();
        assert!((ratio(&w) - STARTUP_GAIN).abs() < 1e-3, "{w:?}");
    }

    #[test]
    fn a_path_that_was_full_keeps_its_capacity_while_it_drains() {
        let mut caps = [PathCapacity::default(); 2];
        caps[0].on_estimates_alone(&estimate(800.0, 40.0));
        caps[1].on_estimates_alone(&estimate(3200.0, 30.0));
        // The slow path drains (TCP backed off): its weight stays at what
        // it carried full, not an equal share of the total.
        caps[0].on_estimate_alone(&estimate(400.0, 0.0));
        caps[1].on_estimate_alone(&estimate(1600.0, 0.0));
        // Nothing is full: the split holds.
        assert_eq!(weights(&caps), None);
        // The fast path fills first as the sender speeds up again: the
        // slow one keeps the capacity it had, not an equal share.
        caps[1].on_estimates_alone(&estimate(3200.0, 30.0));
        let w = weights(&caps).unwrap();
        assert!((ratio(&w) - 4.0).abs() < 0.01, "{w:?}");
    }

    #[test]
    fn a_path_whose_capacity_rose_probes_after_a_while() {
        let mut caps = [PathCapacity::default(); 2];
        caps[0].on_estimates_alone(&estimate(800.0, 40.0));
        caps[1].on_estimates_alone(&estimate(800.0, 40.0));
        // Path 1 could carry more now, but path 0 holds the sender.
        let mut want = 1.0;
        for report in 1..=PROBE_AFTER + 2 {
            on_report(
                &mut caps,
                &[(0, estimate(800.0, 40.0)), (1, estimate(800.0, 0.0))],
            );
            let r = ratio(&weights(&caps).unwrap());
            if report >= PROBE_AFTER {
                // Compounding, but never beyond twice what it carried.
                want = (want * REPROBE_GAIN).min(STARTUP_GAIN);
            }
            assert!((r - want).abs() < 1e-3, "report {report}: {r}, want {want}");
        }
    }

    #[test]
    fn a_path_with_room_does_not_probe_while_nothing_is_full() {
        let mut caps = [PathCapacity::default(); 2];
        caps[0].on_estimates_alone(&estimate(800.0, 40.0));
        caps[1].on_estimates_alone(&estimate(800.0, 40.0));
        let before = weights(&caps).unwrap();
        for _ in 0..5 {
            on_report(
                &mut caps,
                &[(0, estimate(800.0, 0.0)), (1, estimate(800.0, 0.0))],
            );
        }
        // The sender holds itself: nothing is full, the split holds, and
        // no capacity rose behind it: once path 0 is full again, path 1
        // probes one step from where it was.
        assert_eq!(weights(&caps), None);
        assert_eq!(ratio(&before), 1.0);
        for _ in 0..FULL_AFTER {
            on_report(
                &mut caps,
                &[(0, estimate(800.0, 40.0)), (1, estimate(800.0, 0.0))],
            );
        }
        let r = ratio(&weights(&caps).unwrap());
        assert!((r - REPROBE_GAIN).abs() < 1e-3, "{r}");
    }

    #[test]
    fn probes_that_find_nothing_come_less_often() {
        let mut caps = [PathCapacity::default(); 2];
        caps[0].on_estimates_alone(&estimate(800.0, 40.0));
        caps[1].on_estimates_alone(&estimate(800.0, 40.0));
        // Two equal paths split right: whichever the split gives more
        // than its 800 fills (its queue grows, the other's drains, as
        // TCP held by the full one slows), and the other, with room
        // beside it, probes. Every probe finds nothing new.
        let mut overfilled = Vec::new();
        let mut w = weights(&caps).unwrap();
        for _ in 0..120 {
            // The split holds while nothing is full.
            w = weights(&caps).unwrap_or(w);
            let r = ratio(&w);
            let (q0, q1) = if r > 1.01 { (0.0, 40.0) } else { (40.0, 0.0) };
            overfilled.push((r - 1.0).abs() > 0.01);
            on_report(
                &mut caps,
                &[(0, estimate(800.0, q0)), (1, estimate(800.0, q1))],
            );
        }
        let count = |from: usize| overfilled[from..].iter().filter(|&&o| o).count();
        assert!(count(0) >= 4, "it probes: {overfilled:?}");
        // Backed off: the last 60 reports hold fewer probes than the first.
        assert!(count(60) * 2 < count(0), "{overfilled:?}");
        assert!(
            count(60) <= 60 / PROBE_AFTER_MAX as usize * 2 + 2,
            "{overfilled:?}"
        );
    }

    #[test]
    fn a_queue_every_path_shows_is_not_a_full_path() {
        let mut caps = [PathCapacity::default(); 2];
        let (slow, fast) = (estimate(800.0, 7.0), estimate(800.0, 6.0));
        let shared = shared_queue_ms([&slow, &fast]);
        assert_eq!(shared, 6.0);
        caps[0].on_estimate(&slow, shared);
        caps[1].on_estimate(&fast, shared);
        assert!(!caps[0].is_full() && !caps[1].is_full());
        let slow = estimate(800.0, 40.0);
        let shared = shared_queue_ms([&slow, &fast]);
        caps[0].on_estimate(&slow, shared);
        assert!(!caps[0].is_full(), "one long queue is not yet full");
        caps[0].on_estimate(&slow, shared);
        assert!(caps[0].is_full());
    }

    #[test]
    fn a_split_moves_only_beyond_the_noise() {
        assert!(!split_moved(&[1000, 1000], &[1040, 980]));
        assert!(split_moved(&[1000, 1000], &[1300, 1000]));
        assert!(split_moved(&[1000, 1000], &[1000, 1000, 1000]));
        assert!(!split_moved(&[10, 40], &[100, 400]));
    }

    #[test]
    fn a_path_without_an_estimate_gets_the_mean_weight() {
        let mut caps = [PathCapacity::default(); 3];
        caps[0].on_estimates_alone(&estimate(1000.0, 10.0));
        caps[1].on_estimates_alone(&estimate(3000.0, 10.0));
        let w = weights(&caps).unwrap();
        assert!(w[2].abs_diff((w[0] + w[1]) / 2) <= 1, "{w:?}");
    }

    /// A fluid model of one sender over paths of fixed capacity: it sends
    /// what the weights split, as fast as the first path to fill allows
    /// (TCP held by its bottleneck) and a little faster each step; a path
    /// given more than it carries queues. From any start the split
    /// reaches the capacities' ratio within a few reports, and stays.
    fn converge(capacity: &[f64], start: &[u32]) -> Vec<u32> {
        let mut caps = vec![PathCapacity::default(); capacity.len()];
        let mut w: Vec<u32> = start.to_vec();
        let mut rate: f64 = capacity.iter().sum::<f64>() * 0.3;
        for _ in 0..40 {
            let total: f64 = w.iter().map(|&x| f64::from(x)).sum();
            // The sender grows until a path is 10% over.
            let limit = capacity
                .iter()
                .zip(&w)
                .map(|(c, &x)| c * 1.1 * total / f64::from(x))
                .fold(f64::INFINITY, f64::min);
            rate = (rate * 1.5).min(limit);
            let reported: Vec<(usize, PathEstimate)> = capacity
                .iter()
                .zip(&w)
                .enumerate()
                .map(|(p, (c, &x))| {
                    let given = rate * f64::from(x) / total;
                    let queue = if given > *c { 50.0 } else { 0.0 };
                    (p, estimate(given.min(*c), queue))
                })
                .collect();
            on_report(&mut caps, &reported);
            w = weights(&caps).unwrap_or(w);
        }
        w
    }

    #[test]
    fn the_split_follows_unequal_capacities() {
        let w = converge(&[800.0, 3200.0], &[1, 1]);
        assert!((ratio(&w) - 4.0).abs() < 0.5, "{w:?}");
    }

    proptest! {
        #[test]
        fn the_split_reaches_the_capacities_ratio_from_any_start(
            c0 in 100.0f64..10_000.0,
            c1 in 100.0f64..10_000.0,
            w0 in 1u32..1000,
            w1 in 1u32..1000,
        ) {
            let w = converge(&[c0, c1], &[w0, w1]);
            let want = c1 / c0;
            // Within the 10% the model's sender overshoots by.
            prop_assert!((ratio(&w) / want - 1.0).abs() < 0.15, "{:?} want {}", w, want);
        }
    }
}
