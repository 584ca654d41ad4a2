//! The egress re-order buffer (SrcRR's REORDER): packets that arrive ahead
//! of a gap wait until the gap fills, a timeout passes, or a packet carrying
//! the congestion flag arrives (the gap will not fill: a queue upstream
//! dropped it). Release is always in sequence order.
//!
//! Bounded: it holds at most `max_packets`, and spans at most that many
//! sequence numbers; a packet further ahead makes it give up on the oldest
//! gaps first. A packet behind the release point (its gap was already given
//! up on) is delivered at once and counted as late, never dropped.
//!
//! The timeout is fixed, or adaptive: from the time gaps actually take to
//! fill (the paths' delay spread), as mean + 4 × deviation (like TCP's RTO;
//! at least mean × 1.25, as a constant fill time has no deviation),
//! clamped to [min, max]. SrcRR used a fixed 500 ms, which holds every
//! packet behind a real loss for half a second; on paths whose spread is a
//! few milliseconds, the adaptive timeout releases within a few
//! milliseconds. A gap that was given up on but filled later (a packet
//! counted late) is learned from too, with the whole time it took: the
//! buffer remembers its last [`SKIPS_KEPT`] give-ups. Without that, a
//! timeout learned while the paths' delays were close never grows when
//! a queue builds on one path (every longer fill is given up on, so none
//! is learned), and TCP behind the egress sees every such packet out of
//! order (RACK-TLP grows its re-order window on spurious retransmissions
//! for the same reason, RFC 8985 section 6.2).

use std::collections::VecDeque;
use std::time::Duration;

/// How many recent give-ups the buffer remembers, to learn from packets
/// that come after their gap was given up on.
pub const SKIPS_KEPT: usize = 32;

use crate::time::Instant;

/// How long a gap may hold packets back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReorderTimeout {
    /// Always this long.
    Fixed(Duration),
    /// Learned from observed gap-fill times, within these bounds, starting
    /// at `initial`.
    Adaptive {
        /// Shortest timeout (2 ms by default).
        min: Duration,
        /// Longest timeout (500 ms by default).
        max: Duration,
        /// The timeout before any gap has filled (200 ms by default: long
        /// enough for the delay difference of most paths, learned down in a
        /// few dozen gaps).
        initial: Duration,
    },
}

/// Re-order settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReorderConfig {
    /// Most packets held (and sequence numbers spanned): 1,024 by
    /// default, 230 ms of a 50 Mbit/s session's 1400-byte packets.
    pub max_packets: usize,
    /// How long a gap may hold packets back (adaptive, 2-500 ms, by default).
    pub timeout: ReorderTimeout,
}

impl Default for ReorderConfig {
    fn default() -> Self {
        ReorderConfig {
            max_packets: 1024,
            timeout: ReorderTimeout::Adaptive {
                min: Duration::from_millis(2),
                max: Duration::from_millis(500),
                initial: Duration::from_millis(200),
            },
        }
    }
}

/// Counters of the buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReorderCounters {
    /// Packets that waited for a gap.
    pub held: u64,
    /// Sequence numbers given up on (timeout, congestion flag, or bound).
    pub gaps_skipped: u64,
    /// Packets that arrived after their gap was given up on.
    pub late: u64,
}

/// A re-order buffer over packets of type `P`.
#[derive(Debug, Clone)]
pub struct ReorderBuffer<P> {
    config: ReorderConfig,
    /// The next sequence number to release.
    next: Option<u32>,
    /// `slots[i]` holds sequence number `next + i` (slot 0 is always empty:
    /// it is the gap being waited for).
    slots: VecDeque<Option<(Instant, P)>>,
    count: usize,
    mean_fill_us: f64,
    dev_fill_us: f64,
    /// The last give-ups: (first skipped number, how many, when the
    /// waiting began), oldest first.
    skips: VecDeque<(u32, u32, Instant)>,
    counters: ReorderCounters,
}

impl<P> ReorderBuffer<P> {
    /// An empty buffer.
    pub fn new(config: ReorderConfig) -> Self {
        let initial = match config.timeout {
            ReorderTimeout::Fixed(d) => d,
            ReorderTimeout::Adaptive { initial, .. } => initial,
        };
        ReorderBuffer {
            config: ReorderConfig {
                max_packets: config.max_packets.max(1),
                ..config
            },
            next: None,
            slots: VecDeque::new(),
            count: 0,
            mean_fill_us: initial.as_micros() as f64 / 5.0,
            dev_fill_us: initial.as_micros() as f64 / 5.0,
            skips: VecDeque::with_capacity(SKIPS_KEPT),
            counters: ReorderCounters::default(),
        }
    }

    /// What the buffer has counted so far.
    pub fn counters(&self) -> ReorderCounters {
        self.counters
    }

    /// Packets held now.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no packet is held.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The timeout in force now.
    pub fn timeout(&self) -> Duration {
        match self.config.timeout {
            ReorderTimeout::Fixed(d) => d,
            ReorderTimeout::Adaptive { min, max, .. } => {
                // At least a quarter above the mean: where gaps always
                // take the same time the deviation falls to nothing, and
                // the timeout must not fall onto the fill time itself.
                let us = self.mean_fill_us + (4.0 * self.dev_fill_us).max(self.mean_fill_us / 4.0);
                Duration::from_micros(us.max(0.0) as u64).clamp(min, max)
            }
        }
    }

    /// Takes packet `seq` (already deduplicated); calls `release` with
    /// every packet now due, in order.
    pub fn push(
        &mut self,
        now: Instant,
        seq: u32,
        congestion: bool,
        packet: P,
        mut release: impl FnMut(P),
    ) {
        let next = *self.next.get_or_insert(seq);
        let offset = seq.wrapping_sub(next);
        if offset >= 1 << 31 {
            self.counters.late += 1;
            self.learn_late(now, seq);
            release(packet);
            return;
        }
        if offset == 0 {
            // The gap (or the expected packet) is here.
            if self.count > 0 {
                let waited = self.oldest_arrival().map(|t| now.since(t));
                if let Some(w) = waited {
                    self.learn(w);
                }
            }
            release(packet);
            self.advance(1);
            self.release_ready(&mut release);
        } else {
            // Make room: give up on the oldest gaps while full or too far
            // ahead; with nothing held, just move the window up.
            while self.count >= self.config.max_packets
                || (self.count > 0 && offset_now(self.next, seq) >= self.config.max_packets)
            {
                self.skip_gap(&mut release);
            }
            let ahead = offset_now(self.next, seq);
            if ahead >= self.config.max_packets {
                let by = ahead + 1 - self.config.max_packets;
                self.counters.gaps_skipped += by as u64;
                self.advance(by);
            }
            let offset = offset_now(self.next, seq);
            if offset == 0 {
                release(packet);
                self.advance(1);
                self.release_ready(&mut release);
            } else {
                if self.slots.len() <= offset {
                    self.slots.resize_with(offset + 1, || None);
                }
                if self.slots[offset].is_none() {
                    self.slots[offset] = Some((now, packet));
                    self.count += 1;
                    self.counters.held += 1;
                }
            }
        }
        if congestion {
            while self.count > 0 {
                self.skip_gap(&mut release);
            }
        }
    }

    /// When the oldest waiting packet's gap times out.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.oldest_arrival().map(|t| t + self.timeout())
    }

    /// Gives up on gaps whose packets have waited out the timeout.
    pub fn handle_timeout(&mut self, now: Instant, mut release: impl FnMut(P)) {
        while let Some(deadline) = self.poll_timeout() {
            if deadline > now {
                break;
            }
            self.skip_gap(&mut release);
        }
    }

    /// Releases everything held, in order (session teardown, mode change).
    pub fn flush(&mut self, mut release: impl FnMut(P)) {
        while self.count > 0 {
            self.skip_gap(&mut release);
        }
    }

    fn oldest_arrival(&self) -> Option<Instant> {
        self.slots.iter().flatten().map(|(t, _)| *t).min()
    }

    fn advance(&mut self, by: usize) {
        let present = by.min(self.slots.len());
        self.slots.drain(..present);
        self.next = self.next.map(|n| n.wrapping_add(by as u32));
    }

    /// Releases the packets at the head of the buffer that are in order.
    fn release_ready(&mut self, release: &mut impl FnMut(P)) {
        while let Some(Some(_)) = self.slots.front() {
            let (_, p) = self.slots.pop_front().flatten().expect("checked");
            self.count -= 1;
            self.next = self.next.map(|n| n.wrapping_add(1));
            release(p);
        }
    }

    /// Gives up on the gap at the head: skips to the first held packet and
    /// releases the run that follows it.
    fn skip_gap(&mut self, release: &mut impl FnMut(P)) {
        let Some(first) = self.slots.iter().position(Option::is_some) else {
            return;
        };
        self.counters.gaps_skipped += first as u64;
        if let (Some(next), Some(since)) = (self.next, self.oldest_arrival()) {
            if self.skips.len() == SKIPS_KEPT {
                self.skips.pop_front();
            }
            self.skips.push_back((next, first as u32, since));
        }
        self.advance(first);
        self.release_ready(release);
    }

    /// A packet came after its gap was given up on: if the give-up is one
    /// of those remembered, learn the whole time the gap took to fill.
    fn learn_late(&mut self, now: Instant, seq: u32) {
        let Some(&(_, _, since)) = self
            .skips
            .iter()
            .rev()
            .find(|(first, count, _)| seq.wrapping_sub(*first) < *count)
        else {
            return;
        };
        self.learn(now.since(since));
    }

    fn learn(&mut self, waited: Duration) {
        let w = waited.as_micros() as f64;
        let err = w - self.mean_fill_us;
        self.mean_fill_us += err / 8.0;
        self.dev_fill_us += (err.abs() - self.dev_fill_us) / 4.0;
    }
}

fn offset_now(next: Option<u32>, seq: u32) -> usize {
    next.map_or(0, |n| seq.wrapping_sub(n) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fixed(ms: u64, max: usize) -> ReorderConfig {
        ReorderConfig {
            max_packets: max,
            timeout: ReorderTimeout::Fixed(Duration::from_millis(ms)),
        }
    }

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    #[test]
    fn holds_until_the_gap_fills_then_releases_in_order() {
        let mut r = ReorderBuffer::new(fixed(500, 16));
        let mut out = Vec::new();
        r.push(ms(0), 10, false, 10, |p| out.push(p));
        r.push(ms(1), 12, false, 12, |p| out.push(p));
        r.push(ms(2), 13, false, 13, |p| out.push(p));
        assert_eq!(out, vec![10]);
        r.push(ms(3), 11, false, 11, |p| out.push(p));
        assert_eq!(out, vec![10, 11, 12, 13]);
        assert!(r.is_empty());
    }

    #[test]
    fn timeout_and_congestion_give_up_on_gaps() {
        let mut r = ReorderBuffer::new(fixed(500, 16));
        let mut out = Vec::new();
        r.push(ms(0), 0, false, 0, |p| out.push(p));
        r.push(ms(10), 2, false, 2, |p| out.push(p));
        assert_eq!(r.poll_timeout(), Some(ms(510)));
        r.handle_timeout(ms(509), |p| out.push(p));
        assert_eq!(out, vec![0]);
        r.handle_timeout(ms(510), |p| out.push(p));
        assert_eq!(out, vec![0, 2]);
        // 1 arrives after its gap was given up on: delivered, counted late.
        r.push(ms(600), 1, false, 1, |p| out.push(p));
        assert_eq!(out, vec![0, 2, 1]);
        assert_eq!(r.counters().late, 1);
        // A congestion-flagged packet releases everything held.
        r.push(ms(700), 5, false, 5, |p| out.push(p));
        r.push(ms(701), 7, true, 7, |p| out.push(p));
        assert_eq!(out, vec![0, 2, 1, 5, 7]);
        assert_eq!(r.counters().gaps_skipped, 1 + 2 + 1);
    }

    #[test]
    fn a_far_jump_moves_the_window_without_walking_it() {
        let mut r = ReorderBuffer::new(fixed(500, 8));
        let mut out = Vec::new();
        r.push(ms(0), 0, false, 0u32, |p| out.push(p));
        r.push(ms(1), 2_000_000_000, false, 1, |p| out.push(p));
        assert_eq!(out, vec![0]);
        assert_eq!(r.len(), 1);
        r.flush(|p| out.push(p));
        assert_eq!(out, vec![0, 1]);
    }

    #[test]
    fn adaptive_timeout_learns_the_delay_spread() {
        let config = ReorderConfig {
            max_packets: 64,
            timeout: ReorderTimeout::Adaptive {
                min: Duration::from_millis(1),
                max: Duration::from_millis(500),
                initial: Duration::from_millis(100),
            },
        };
        let mut r = ReorderBuffer::new(config);
        let mut sink = |_p: u32| {};
        // Every other packet comes 3 ms late.
        for i in 0..200u32 {
            let t = i as u64 * 10;
            r.push(ms(t), 2 * i + 1, false, 0, &mut sink);
            r.push(ms(t + 3), 2 * i, false, 0, &mut sink);
        }
        let t = r.timeout();
        assert!(
            t >= Duration::from_millis(3) && t <= Duration::from_millis(8),
            "{t:?}"
        );
    }

    #[test]
    fn gaps_that_fill_after_the_timeout_grow_it() {
        let config = ReorderConfig {
            max_packets: 1024,
            timeout: ReorderTimeout::Adaptive {
                min: Duration::from_millis(1),
                max: Duration::from_millis(500),
                initial: Duration::from_millis(10),
            },
        };
        let mut r = ReorderBuffer::new(config);
        let mut now = 0;
        let mut out = Vec::new();
        // Two paths 3 ms apart, then a queue builds on the slow one: its
        // packets (the even numbers) come 40 ms after their successors.
        let mut feed = |r: &mut ReorderBuffer<u32>, from: u32, late_ms: u64, now: &mut u64| {
            for i in from..from + 100 {
                *now += 1;
                r.handle_timeout(ms(*now), |p| out.push(p));
                r.push(ms(*now), 2 * i + 1, false, 2 * i + 1, |p| out.push(p));
                let due = *now + late_ms;
                // The even packet arrives `late_ms` later: deliver it then.
                while *now < due {
                    *now += 1;
                    r.handle_timeout(ms(*now), |p| out.push(p));
                }
                r.push(ms(*now), 2 * i, false, 2 * i, |p| out.push(p));
            }
        };
        feed(&mut r, 0, 3, &mut now);
        let short = r.timeout();
        assert!(short < Duration::from_millis(10), "{short:?}");
        feed(&mut r, 100, 40, &mut now);
        let late_while_learning = r.counters().late;
        assert!(late_while_learning > 0, "the short timeout gave up on some");
        assert!(
            r.timeout() >= Duration::from_millis(40),
            "{:?}",
            r.timeout()
        );
        feed(&mut r, 200, 40, &mut now);
        assert_eq!(
            r.counters().late,
            late_while_learning,
            "once learned, no gap is given up on"
        );
    }

    proptest! {
        /// Any arrival order of distinct numbers: everything comes out
        /// exactly once; what was released in time is in order; the buffer
        /// never exceeds its bound; nothing waits past the timeout.
        #[test]
        fn releases_everything_once_in_order_within_bound_and_timeout(
            start: u32,
            order in Just((0u32..120).collect::<Vec<_>>()).prop_shuffle(),
            gaps in prop::collection::vec(0u64..30, 120),
            max in 1usize..40,
        ) {
            let timeout = 50;
            let mut r = ReorderBuffer::new(fixed(timeout, max));
            let mut out: Vec<(u32, u64)> = Vec::new();
            let mut now = 0;
            let mut arrived = std::collections::HashMap::new();
            for (i, &k) in order.iter().enumerate() {
                now += gaps[i];
                r.handle_timeout(ms(now), |p: u32| out.push((p, now)));
                let seq = start.wrapping_add(k);
                arrived.insert(seq, now);
                r.push(ms(now), seq, false, seq, |p| out.push((p, now)));
                prop_assert!(r.len() <= max);
                if let Some(d) = r.poll_timeout() {
                    prop_assert!(d.as_micros() / 1000 <= now + timeout);
                }
            }
            r.flush(|p| out.push((p, now)));
            let mut got: Vec<u32> = out.iter().map(|&(p, _)| p.wrapping_sub(start)).collect();
            got.sort_unstable();
            prop_assert_eq!(got, (0..120).collect::<Vec<_>>());
            // Every packet left within the timeout of its arrival (checked at
            // the next event, as a driver would).
            for &(p, at) in &out {
                prop_assert!(at >= arrived[&p]);
            }
            // Released in order apart from packets counted late.
            let late = r.counters().late as usize;
            let inversions = out.windows(2).filter(|w| w[1].0.wrapping_sub(start) < w[0].0.wrapping_sub(start)).count();
            prop_assert!(inversions <= late, "{} inversions, {} late", inversions, late);
        }
    }
}
