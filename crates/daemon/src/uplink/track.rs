//! Whether a gateway's uplink is healthy, from rounds of probes (sans-IO:
//! the driver sends what a round asks for and reports the answers; this
//! decides). As mwan3's `track_ip`: every `interval` a round probes each
//! target; it passes when at least `reliability` targets answer within
//! `timeout`; `down` failed rounds in a row take a healthy uplink down,
//! `up` passed rounds in a row bring it back. An uplink starts down: its
//! prefixes are advertised once it has passed `up` rounds, never before
//! anything was checked.

use std::time::Duration;

use braid_proto::time::Instant;

/// How rounds are run and judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrackConfig {
    /// How many targets each round probes (1 to [`MAX_TARGETS`]).
    pub targets: usize,
    /// Time between the starts of two rounds.
    pub interval: Duration,
    /// How long a round waits for answers (at most `interval`).
    pub timeout: Duration,
    /// Answers a round needs to pass (1 to `targets`).
    pub reliability: usize,
    /// Failed rounds in a row that take a healthy uplink down.
    pub down: u32,
    /// Passed rounds in a row that bring it back up.
    pub up: u32,
}

/// The most targets an uplink probes.
pub const MAX_TARGETS: usize = 8;

/// What a target did in the rounds so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TargetStats {
    /// Probes sent to it.
    pub sent: u64,
    /// Answers within a round's timeout.
    pub answered: u64,
    /// Its last answer's round trip.
    pub last_rtt: Option<Duration>,
    /// Whether it answered in the last round that ended.
    pub answered_last: bool,
}

/// What the tracker counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrackCounters {
    /// Rounds that ended with enough answers.
    pub rounds_passed: u64,
    /// Rounds that ended without.
    pub rounds_failed: u64,
    /// Answers that fit no open round (late, repeated, or not ours).
    pub stray_answers: u64,
    /// Times the uplink went down / came up.
    pub went_down: u64,
    pub went_up: u64,
}

/// One round in progress.
#[derive(Debug, Clone)]
struct Round {
    seq: u16,
    started: Instant,
    answered: [bool; MAX_TARGETS],
}

/// What [`Tracker::handle_timeout`] asks of the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Step {
    /// Start a round: probe every target, tagged with this number.
    pub probe: Option<u16>,
    /// The open round ended at its timeout (what it still waits for can
    /// go).
    pub ended: bool,
    /// The uplink changed: now healthy (true) or down (false).
    pub changed: Option<bool>,
}

/// The uplink's health, round by round.
#[derive(Debug, Clone)]
pub struct Tracker {
    config: TrackConfig,
    healthy: bool,
    /// Rounds in a row whose verdict differs from `healthy`.
    streak: u32,
    since: Instant,
    next_round: Instant,
    next_seq: u16,
    round: Option<Round>,
    targets: Vec<TargetStats>,
    counters: TrackCounters,
}

impl Tracker {
    /// A tracker whose first round is due at `now`; the uplink is down
    /// until `up` rounds pass.
    pub fn new(config: TrackConfig, now: Instant, first_seq: u16) -> Tracker {
        let n = config.targets.clamp(1, MAX_TARGETS);
        Tracker {
            config: TrackConfig {
                targets: n,
                reliability: config.reliability.clamp(1, n),
                timeout: config.timeout.min(config.interval),
                down: config.down.max(1),
                up: config.up.max(1),
                ..config
            },
            healthy: false,
            streak: 0,
            since: now,
            next_round: now,
            next_seq: first_seq,
            round: None,
            targets: vec![TargetStats::default(); n],
            counters: TrackCounters::default(),
        }
    }

    /// Whether the uplink is healthy now.
    pub fn healthy(&self) -> bool {
        self.healthy
    }

    /// Since when it has been as it is (start, or the last change).
    pub fn since(&self) -> Instant {
        self.since
    }

    /// Each target's record, in the configured order.
    pub fn targets(&self) -> &[TargetStats] {
        &self.targets
    }

    /// The counters.
    pub fn counters(&self) -> TrackCounters {
        self.counters
    }

    /// Rounds in a row that disagree with the current state (how close
    /// the uplink is to changing).
    pub fn streak(&self) -> u32 {
        self.streak
    }

    /// The settings in force (bounds applied).
    pub fn config(&self) -> TrackConfig {
        self.config
    }

    /// When [`Self::handle_timeout`] should next run: the open round's
    /// end, or the next round's start.
    pub fn poll_timeout(&self) -> Instant {
        match &self.round {
            Some(r) => r.started + self.config.timeout,
            None => self.next_round,
        }
    }

    /// Ends the open round if its time is up, and starts the next if it
    /// is due.
    pub fn handle_timeout(&mut self, now: Instant) -> Step {
        let mut step = Step::default();
        if let Some(r) = &self.round {
            let end = r.started + self.config.timeout;
            if now >= end {
                step.ended = true;
                step.changed = self.end_round(end);
            }
        }
        if self.round.is_none() && now >= self.next_round {
            let seq = self.next_seq;
            self.next_seq = self.next_seq.wrapping_add(1);
            self.round = Some(Round {
                seq,
                started: now,
                answered: [false; MAX_TARGETS],
            });
            // Rounds keep their rhythm; a driver that woke late does not
            // start a burst of rounds to catch up.
            let next = self.next_round + self.config.interval;
            self.next_round = if next > now {
                next
            } else {
                now + self.config.interval
            };
            for t in &mut self.targets {
                t.sent += 1;
            }
            step.probe = Some(seq);
        }
        step
    }

    /// Target `target` answered round `seq` at `now`. A round every
    /// target answered ends at once (an uplink coming back is not kept
    /// waiting for the timeout). Returns a change, as
    /// [`Step::changed`].
    pub fn answered(&mut self, now: Instant, seq: u16, target: usize) -> Option<bool> {
        let timeout = self.config.timeout;
        let open = self.round.as_mut().filter(|r| {
            r.seq == seq
                && target < self.targets.len()
                && !r.answered[target]
                && now < r.started + timeout
        });
        let Some(r) = open else {
            self.counters.stray_answers += 1;
            return None;
        };
        r.answered[target] = true;
        let rtt = now.since(r.started);
        let all = r.answered[..self.targets.len()].iter().all(|&a| a);
        let t = &mut self.targets[target];
        t.answered += 1;
        t.last_rtt = Some(rtt);
        if all {
            self.end_round(now)
        } else {
            None
        }
    }

    /// Judges the open round, ended at `at`; returns the new state if it
    /// changed.
    fn end_round(&mut self, at: Instant) -> Option<bool> {
        let r = self.round.take()?;
        let n = self.targets.len();
        for (t, &a) in self.targets.iter_mut().zip(&r.answered[..n]) {
            t.answered_last = a;
        }
        let answers = r.answered[..n].iter().filter(|&&a| a).count();
        let passed = answers >= self.config.reliability;
        if passed {
            self.counters.rounds_passed += 1;
        } else {
            self.counters.rounds_failed += 1;
        }
        if passed == self.healthy {
            self.streak = 0;
            return None;
        }
        self.streak += 1;
        let needed = if self.healthy {
            self.config.down
        } else {
            self.config.up
        };
        if self.streak < needed {
            return None;
        }
        self.healthy = passed;
        self.streak = 0;
        self.since = at;
        if passed {
            self.counters.went_up += 1;
        } else {
            self.counters.went_down += 1;
        }
        Some(passed)
    }

    /// What the worst case takes from a silent failure to the uplink
    /// going down: the failure just after a round passed, then `down`
    /// rounds that fail, the last ending at its timeout.
    pub fn worst_detection(&self) -> Duration {
        self.config.interval * self.config.down + self.config.timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(targets: usize, reliability: usize) -> TrackConfig {
        TrackConfig {
            targets,
            interval: Duration::from_millis(500),
            timeout: Duration::from_millis(300),
            reliability,
            down: 3,
            up: 3,
        }
    }

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    /// Runs the tracker from `from` to `to` ms with targets answering
    /// after `rtt` ms when `answers(round start ms, target)` says so;
    /// returns the changes and when they were seen.
    fn run(
        t: &mut Tracker,
        from: u64,
        to: u64,
        rtt: u64,
        answers: impl Fn(u64, usize) -> bool,
    ) -> Vec<(u64, bool)> {
        let mut changes = Vec::new();
        let mut pending: Vec<(u64, u16, usize)> = Vec::new();
        let mut now = from;
        while now <= to {
            pending.sort();
            let next_answer = pending.first().map(|p| p.0);
            let due = t.poll_timeout().as_micros() / 1000;
            let at = next_answer.map_or(due, |a| a.min(due)).max(now);
            if at > to {
                break;
            }
            now = at;
            if next_answer == Some(now) {
                let (_, seq, target) = pending.remove(0);
                if let Some(c) = t.answered(ms(now), seq, target) {
                    changes.push((now, c));
                }
                continue;
            }
            let step = t.handle_timeout(ms(now));
            if let Some(c) = step.changed {
                changes.push((now, c));
            }
            if let Some(seq) = step.probe {
                for target in 0..t.targets().len() {
                    if answers(now, target) {
                        pending.push((now + rtt, seq, target));
                    }
                }
            }
        }
        changes
    }

    #[test]
    fn an_uplink_starts_down_and_comes_up_after_up_rounds() {
        let mut t = Tracker::new(config(2, 1), ms(0), 7);
        assert!(!t.healthy());
        let changes = run(&mut t, 0, 2100, 20, |_, _| true);
        // Rounds at 0, 500, 1000 each pass on the last answer (20 ms).
        assert_eq!(changes, [(1020, true)]);
        assert!(t.healthy());
        assert_eq!(t.counters().rounds_passed, 5);
        assert_eq!(t.targets()[1].last_rtt, Some(Duration::from_millis(20)));
    }

    #[test]
    fn a_silent_failure_takes_it_down_within_the_worst_case_and_back_with_hysteresis() {
        let mut t = Tracker::new(config(2, 1), ms(0), 0);
        run(&mut t, 0, 2100, 20, |_, _| true);
        assert!(t.healthy());
        // Two failed rounds, then one passes: not a failure.
        let changes = run(&mut t, 2101, 4100, 20, |at, _| at != 2500 && at != 3000);
        assert!(changes.is_empty(), "{changes:?}");
        assert_eq!((t.streak(), t.counters().rounds_failed), (0, 2));
        // Silent from 4101 (just after the round at 4000 passed).
        let changes = run(&mut t, 4101, 7000, 20, |_, _| false);
        let worst = t.worst_detection().as_millis() as u64;
        assert_eq!(worst, 1800);
        // Rounds at 4500, 5000, 5500 fail, the last judged at 5800.
        assert_eq!(changes, [(5800, false)]);
        assert!(5800 - 4101 <= worst);
        assert_eq!(t.counters().went_down, 1);
        assert_eq!(t.since(), ms(5800));
        // One answered round while down is not a recovery.
        let changes = run(&mut t, 7001, 9000, 20, |at, _| at == 7500);
        assert!(changes.is_empty(), "{changes:?}");
        assert!(!t.healthy());
        // Back only after `up` rounds in a row.
        let changes = run(&mut t, 9001, 12000, 20, |_, _| true);
        assert_eq!(changes, [(10520, true)]);
        assert_eq!(t.counters().went_up, 2);
    }

    #[test]
    fn reliability_counts_answers_per_round() {
        // Two of three must answer: one dead target is tolerated, two are
        // not.
        let mut t = Tracker::new(config(3, 2), ms(0), 0);
        run(&mut t, 0, 2000, 10, |_, target| target != 2);
        assert!(t.healthy(), "{:?}", t.counters());
        let c = run(&mut t, 2001, 5000, 10, |_, target| target == 0);
        assert_eq!(c.len(), 1);
        assert!(!t.healthy());
        assert!(t.targets()[0].answered_last && !t.targets()[1].answered_last);
    }

    #[test]
    fn late_repeated_and_foreign_answers_are_counted_and_change_nothing() {
        let mut t = Tracker::new(config(1, 1), ms(0), 100);
        let step = t.handle_timeout(ms(0));
        assert_eq!(step.probe, Some(100));
        assert_eq!(t.answered(ms(5), 99, 0), None, "another round");
        assert_eq!(t.answered(ms(5), 100, 4), None, "no such target");
        // Past the timeout (the round has not been closed yet).
        assert_eq!(t.answered(ms(301), 100, 0), None);
        assert_eq!(t.counters().stray_answers, 3);
        assert_eq!(t.targets()[0].answered, 0);
        let step = t.handle_timeout(ms(300));
        assert_eq!(
            step,
            Step {
                ended: true,
                ..Step::default()
            },
            "judged failed, not started yet"
        );
        assert_eq!(t.counters().rounds_failed, 1);
        // Sequence numbers wrap.
        let mut t = Tracker::new(config(1, 1), ms(0), u16::MAX);
        assert_eq!(t.handle_timeout(ms(0)).probe, Some(u16::MAX));
        t.answered(ms(1), u16::MAX, 0);
        assert_eq!(t.answered(ms(2), u16::MAX, 0), None, "repeated");
        assert_eq!(t.handle_timeout(ms(500)).probe, Some(0));
    }

    #[test]
    fn a_late_driver_gets_one_round_not_a_burst() {
        let mut t = Tracker::new(config(1, 1), ms(0), 0);
        t.handle_timeout(ms(0));
        let step = t.handle_timeout(ms(10_000));
        assert!(step.probe.is_some());
        assert_eq!(t.poll_timeout(), ms(10_300));
        t.handle_timeout(ms(10_300));
        assert_eq!(t.poll_timeout(), ms(10_500), "the next on its rhythm");
    }
}
