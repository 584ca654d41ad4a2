//! Which bulk user packets the ingress drops before encoding, so that its
//! queue above the binding point stays short: CoDel (RFC 8289) run at the
//! queue's entry. Each datagram that leaves the binding point says how
//! long it waited there ([`EntryCodel::on_sojourn`]); once every
//! datagram for an egress has waited [`TARGET`] or more for [`INTERVAL`],
//! arriving bulk packets toward it are dropped, one, then the next after
//! `INTERVAL / sqrt(n)`, until a datagram leaves having waited less.
//!
//! Beyond CoDel's gentle drops, a wait of [`MAX_WAIT`] or more drops every
//! arriving bulk packet until a datagram leaves having waited less (a
//! tail drop in time, as a router's full buffer): a sender in slow start
//! outruns one drop per interval, and the queue would otherwise grow to
//! the scheduler's own bound (1 MiB), whose drops are of encoded
//! datagrams, rebuilt at the egress and so never heard of by the sender
//! (measured: TCP's round trip 370-400 ms through a paced remote
//! bottleneck with CoDel alone, against 160-200 with this limit).
//!
//! Why at the entry and not where packets leave, as CoDel does in a
//! router: a datagram above the binding point is already encoded, and
//! one dropped there is rebuilt at the egress from its group's repair,
//! so the TCP sender never learns of it and fills the queue again. A
//! user packet dropped before encoding is a loss its sender sees, as at
//! a router's full queue.
//!
//! Why it matters beyond TCP's own delay: a coded group that holds an
//! urgent packet (VoIP in the same session as a transfer) also holds
//! bulk packets, and a lost urgent packet is rebuilt only once enough of
//! its group has arrived: every bulk packet of the group that waits here
//! holds the urgent one up too.
//!
//! Urgent packets are never dropped here (the scheduler sends them
//! first; they do not build the queue).
//!
//! It runs where the node paces (`pace`): pacing is what makes a queue
//! stand here on purpose. Elsewhere a queue above the binding point
//! stands only while a path fades or fails, and dropping then would lose
//! packets of senders that do not slow down (a UDP stream through a
//! radio link's 300-ms fade lost 66 of 5,000 to it in the simulator,
//! against none), which braid promises not to; the scheduler's own
//! bounds (1,024 datagrams, 1 MiB) hold such a backlog.

use std::time::Duration;

use crate::time::Instant;

/// The wait above the binding point that counts as a standing queue:
/// above a driver's batching and a pacer's spacing (a few ms), well below
/// a round trip of the mesh.
pub const TARGET: Duration = Duration::from_millis(10);
/// How long the wait must stay above [`TARGET`] before the first drop,
/// and the spacing of the drops that follow (divided by the square root
/// of their count): about a round trip, so that a sender has answered
/// one drop before the next.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// The wait above the binding point from which every arriving bulk
/// packet is dropped.
pub const MAX_WAIT: Duration = Duration::from_millis(150);

/// One egress's entry CoDel.
#[derive(Debug, Clone, Default)]
pub struct EntryCodel {
    /// Since when every datagram leaving has waited [`TARGET`] or more.
    above_since: Option<Instant>,
    /// Dropping: when the next drop is due.
    next_drop: Option<Instant>,
    /// Drops in this dropping spell (carried into the next one if it
    /// comes soon, as CoDel does).
    count: u32,
    /// When the last dropping spell ended.
    ended: Option<Instant>,
    /// How long the last datagram to leave had waited.
    last_wait: Duration,
}

impl EntryCodel {
    /// A datagram left the binding point at `now` after waiting `sojourn`.
    pub fn on_sojourn(&mut self, now: Instant, sojourn: Duration) {
        self.last_wait = sojourn;
        if sojourn < TARGET {
            self.above_since = None;
            if self.next_drop.take().is_some() {
                self.ended = Some(now);
            }
        } else if self.above_since.is_none() {
            self.above_since = Some(now);
        }
    }

    /// The queue toward the egress emptied at `now`: no standing queue.
    pub fn on_empty(&mut self, now: Instant) {
        self.on_sojourn(now, Duration::ZERO);
    }

    /// Whether a bulk user packet arriving at `now` may be encoded (false:
    /// drop it).
    pub fn admit(&mut self, now: Instant) -> bool {
        let Some(since) = self.above_since else {
            return true;
        };
        if self.last_wait >= MAX_WAIT {
            return false;
        }
        match self.next_drop {
            None => {
                if now.since(since) < INTERVAL {
                    return true;
                }
                // A spell soon after the last one goes on from its count.
                let recent = self.ended.is_some_and(|e| now.since(e) < INTERVAL * 16);
                self.count = if recent && self.count > 2 {
                    self.count - 2
                } else {
                    1
                };
                self.next_drop = Some(now + spacing(self.count));
                false
            }
            Some(due) if now >= due => {
                self.count += 1;
                self.next_drop = Some(now + spacing(self.count));
                false
            }
            Some(_) => true,
        }
    }
}

/// The wait before the drop after the `count`th.
fn spacing(count: u32) -> Duration {
    INTERVAL.div_f64(f64::from(count.max(1)).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    #[test]
    fn a_short_wait_drops_nothing() {
        let mut c = EntryCodel::default();
        for t in 0..1000 {
            c.on_sojourn(ms(t), Duration::from_millis(9));
            assert!(c.admit(ms(t)));
        }
    }

    #[test]
    fn a_standing_queue_drops_once_per_interval_then_faster_and_stops_when_it_drains() {
        let mut c = EntryCodel::default();
        let mut drops = Vec::new();
        for t in 0..400 {
            c.on_sojourn(ms(t), Duration::from_millis(30));
            if !c.admit(ms(t)) {
                drops.push(t);
            }
        }
        // Above target from 0: the first drop at 100, the next an
        // interval later, then 100/sqrt(2) after that, 100/sqrt(3), ...
        assert_eq!(drops[0], 100);
        assert_eq!(drops[1], 200);
        assert_eq!(drops[2], 271);
        assert!(drops.len() >= 5, "{drops:?}");
        // The queue drains: no more drops.
        c.on_sojourn(ms(400), Duration::from_millis(2));
        for t in 400..600 {
            assert!(c.admit(ms(t)));
        }
        // A new spell soon after goes on from the count, less two.
        for t in 600..800 {
            c.on_sojourn(ms(t), Duration::from_millis(30));
            if !c.admit(ms(t)) {
                drops.push(t);
            }
        }
        let second: Vec<_> = drops.iter().filter(|&&t| t >= 600).collect();
        assert_eq!(*second[0], 700);
        let gap = second[1] - second[0];
        assert!(gap < 71, "spaced as a later drop: {gap} ms");
    }

    #[test]
    fn a_wait_beyond_the_limit_drops_everything_until_one_leaves_sooner() {
        let mut c = EntryCodel::default();
        c.on_sojourn(ms(0), MAX_WAIT);
        assert!((0..50).all(|_| !c.admit(ms(1))), "before any interval");
        c.on_sojourn(ms(2), MAX_WAIT - Duration::from_millis(1));
        assert!(c.admit(ms(2)), "below the limit, within the interval");
    }

    #[test]
    fn an_emptied_queue_ends_the_spell() {
        let mut c = EntryCodel::default();
        c.on_sojourn(ms(0), Duration::from_millis(50));
        c.on_empty(ms(50));
        assert!(c.admit(ms(500)), "nothing stood since 50 ms");
    }

    proptest! {
        #[test]
        fn a_short_wait_is_never_dropped_and_two_drops_never_coincide(
            events in proptest::collection::vec((0u64..50, 0u64..200, any::<bool>()), 1..500)
        ) {
            let mut c = EntryCodel::default();
            let mut t = 0;
            let mut last_drop: Option<u64> = None;
            for (step, sojourn, twice) in events {
                t += step;
                c.on_sojourn(ms(t), Duration::from_millis(sojourn));
                let first = c.admit(ms(t));
                if sojourn >= 150 {
                    prop_assert!(!first, "a wait of {sojourn} ms let a packet in");
                    continue;
                }
                if sojourn < 10 {
                    prop_assert!(first, "a short wait at {t} ms was dropped");
                }
                if !first {
                    prop_assert!(last_drop != Some(t));
                    last_drop = Some(t);
                }
                if twice && !first {
                    prop_assert!(c.admit(ms(t)), "two drops at {t} ms");
                }
            }
        }
    }
}
