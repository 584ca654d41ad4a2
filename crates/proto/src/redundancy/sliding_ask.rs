//! When an egress asks for more of the sliding-window code: the data
//! packets its decoder misses, since when, and the request to send for
//! them (a `RepairRequest`, docs/protocol.md "Repair requests"; the node
//! sends it, the ingress answers it in `ingress/`).
//!
//! A packet is missing once a later number arrived in order (an urgent
//! packet leaves the ingress ahead of bulk numbered before it: that bulk
//! is not missing for it; the decoder says which came in order). Most missing packets
//! come without asking: a packet overtaken on another path, or one
//! rebuilt from the repair sent with the data. How long those take is
//! learned (the longest of late, decaying slowly), and a packet still
//! missing that much later (plus a margin) may be asked for. An answer takes
//! a round trip, learned from the answers; a packet still missing 1.5
//! times that after its request is asked for again, at most [`MAX_ASKS`] times,
//! then given up (TCP resends it).
//!
//! Only a packet no equation the decoder holds can solve is asked for
//! (it is no equation's pivot): one that is waits for the packets its
//! equation also holds, which are asked for in their turn.
//! One request covers the oldest packet due to the last due up to
//! [`MAX_REQUEST_SPAN`] numbers after it (and the newer packets the
//! equations over them hold), and asks for one repair packet for each
//! packet there that no equation solves, and one more.
//! Bounded: at most [`MAX_MISSING`] packets are tracked per session.

use std::collections::VecDeque;
use std::time::Duration;

use braid_wire::{MAX_REQUEST_COUNT, MAX_REQUEST_SPAN};

use crate::time::Instant;

/// Missing packets tracked per session (the oldest go first): as far
/// back as the decoder keeps equations.
pub const MAX_MISSING: usize = 192;
/// Requests for one packet before it is given up.
pub const MAX_ASKS: u8 = 3;
/// The wait for a missing packet to come without asking, before any
/// was measured.
const FIRST_WAIT_MS: f64 = 10.0;
/// Bounds of that wait.
const WAIT_MS: (f64, f64) = (3.0, 100.0);
/// Added to the learned wait before asking.
const MARGIN_MS: f64 = 2.0;
/// The round trip of a request before any was measured.
const FIRST_ANSWER_MS: f64 = 100.0;
/// The shortest time before a packet is asked for again.
const MIN_REASK_MS: f64 = 20.0;

/// A request to send: `count` repair packets over data packets
/// `first..=end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Want {
    /// The oldest packet wanted.
    pub first: u32,
    /// The newest number the repair is to cover.
    pub end: u32,
    /// Repair packets wanted (1-15).
    pub count: u8,
}

/// What the asking counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AskCounters {
    /// Requests made.
    pub requests: u64,
    /// Packets that came (arrived or rebuilt) after being asked for.
    pub answered: u64,
    /// Packets given up after [`MAX_ASKS`] requests, or too old to keep.
    pub given_up: u64,
}

#[derive(Debug, Clone, Copy)]
struct Missing {
    seq: u32,
    since: Instant,
    asked: Option<Instant>,
    asks: u8,
}

/// The missing packets of one session's decoder.
#[derive(Debug)]
pub struct Asker {
    /// Oldest number first.
    missing: VecDeque<Missing>,
    /// How long packets that came unasked took (decaying maximum), ms.
    wait_ms: f64,
    /// How long a request took to bring its packet (smoothed), ms.
    answer_ms: Option<f64>,
    counters: AskCounters,
}

impl Default for Asker {
    fn default() -> Self {
        Asker {
            missing: VecDeque::new(),
            wait_ms: FIRST_WAIT_MS,
            answer_ms: None,
            counters: AskCounters::default(),
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn after(t: Instant, ms: f64) -> Instant {
    t + Duration::from_micros((ms * 1e3) as u64)
}

impl Asker {
    /// What it counted.
    pub fn counters(&self) -> AskCounters {
        self.counters
    }

    /// Packets missing now.
    pub fn missing(&self) -> usize {
        self.missing.len()
    }

    /// How long a missing packet may take to come unasked.
    pub fn ask_after_ms(&self) -> f64 {
        self.wait_ms + MARGIN_MS
    }

    fn reask_after_ms(&self) -> f64 {
        (1.5 * self.answer_ms.unwrap_or(FIRST_ANSWER_MS)).max(MIN_REASK_MS)
    }

    fn due(&self, m: &Missing) -> Instant {
        match m.asked {
            None => after(m.since, self.ask_after_ms()),
            Some(at) => after(at, self.reask_after_ms()),
        }
    }

    /// Forgets every missing packet (they came in another mode).
    pub fn clear(&mut self) {
        self.missing.clear();
    }

    /// Packet `seq` went missing at `now` (a later number came).
    pub fn went_missing(&mut self, now: Instant, seq: u32) {
        if self.missing.len() >= MAX_MISSING {
            self.missing.pop_front();
            self.counters.given_up += 1;
        }
        self.missing.push_back(Missing {
            seq,
            since: now,
            asked: None,
            asks: 0,
        });
    }

    /// Packet `seq` came at `now` (arrived, or was rebuilt): no longer
    /// missing; how long it took is learned.
    pub fn came(&mut self, now: Instant, seq: u32) {
        let Some(i) = self.missing.iter().position(|m| m.seq == seq) else {
            return;
        };
        let m = self.missing.remove(i).expect("found");
        match m.asked {
            Some(at) => {
                self.counters.answered += 1;
                let sample = ms(now.since(at));
                self.answer_ms = Some(match self.answer_ms {
                    Some(a) => a + (sample - a) / 8.0,
                    None => sample,
                });
            }
            None => {
                let sample = ms(now.since(m.since));
                self.wait_ms = if sample > self.wait_ms {
                    sample
                } else {
                    self.wait_ms + (sample - self.wait_ms) / 32.0
                }
                .clamp(WAIT_MS.0, WAIT_MS.1);
            }
        }
    }

    /// Forgets the packets `newest - horizon` or further back (the
    /// decoder gave them up).
    pub fn forget_older(&mut self, newest: u32, horizon: u32) {
        while self
            .missing
            .front()
            .is_some_and(|m| newest.wrapping_sub(m.seq) as i32 >= horizon as i32)
        {
            self.missing.pop_front();
            self.counters.given_up += 1;
        }
    }

    /// When the next request is due: for a packet no equation solves
    /// (`free`; one that an equation has as its pivot is due only once
    /// it is free again, which takes a packet's arrival, not time).
    pub fn next_due(&self, free: impl Fn(u32) -> bool) -> Option<Instant> {
        self.missing
            .iter()
            .filter(|m| free(m.seq))
            .map(|m| self.due(m))
            .min()
    }

    /// The request due at `now`, if any. A packet is due when no
    /// equation the decoder holds has it as its pivot (`free(seq)`: the
    /// repair that came cannot solve it) and it has waited its time;
    /// asked before, when 1.5 times the round trip has passed. The request covers the oldest packet due to the last due
    /// up to [`MAX_REQUEST_SPAN`] after it (not beyond `newest`), and on
    /// to the newest packet in an equation whose pivot is in that range
    /// (`extent(first, end)`); it asks for one repair packet per packet
    /// there no equation solves, and one more. The due packets count as
    /// asked for.
    pub fn want(
        &mut self,
        now: Instant,
        newest: u32,
        free: impl Fn(u32) -> bool,
        extent: impl Fn(u32, u32) -> u32,
    ) -> Option<Want> {
        // Packets asked for often enough are given up once due again.
        let before = self.missing.len();
        let reask = self.reask_after_ms();
        self.missing
            .retain(|m| !(m.asks >= MAX_ASKS && m.asked.is_some_and(|a| after(a, reask) <= now)));
        self.counters.given_up += (before - self.missing.len()) as u64;
        let ask_after = self.ask_after_ms();
        let timed_out = |m: &Missing| match m.asked {
            None => after(m.since, ask_after) <= now,
            Some(at) => after(at, reask) <= now,
        };
        let first = self
            .missing
            .iter()
            .find(|m| timed_out(m) && free(m.seq))?
            .seq;
        let limit = if newest.wrapping_sub(first) < MAX_REQUEST_SPAN {
            newest
        } else {
            first.wrapping_add(MAX_REQUEST_SPAN - 1)
        };
        let within = |s: u32| s.wrapping_sub(first) <= limit.wrapping_sub(first);
        let mut end = first;
        for m in self.missing.iter_mut() {
            if within(m.seq) && timed_out(m) && free(m.seq) {
                end = m.seq;
                m.asked = Some(now);
                m.asks += 1;
            }
        }
        // The repair covers every packet from the first to the last due,
        // and on to the newest packet in an equation over them (what
        // solves those equations solves them): one repair packet per
        // packet there that no equation solves, due or not, and one more
        // (a request's answer can be lost too).
        let further = extent(first, end);
        if within(further) && further.wrapping_sub(first) > end.wrapping_sub(first) {
            end = further;
        }
        let unsolved = (0..=end.wrapping_sub(first))
            .filter(|&k| free(first.wrapping_add(k)))
            .count();
        self.counters.requests += 1;
        let count = (unsolved + 1).min(usize::from(MAX_REQUEST_COUNT)) as u8;
        Some(Want { first, end, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn a_packet_missing_past_the_wait_is_asked_for_then_again_then_given_up() {
        let mut a = Asker::default();
        a.went_missing(at(0), 5);
        a.went_missing(at(0), 6);
        // Not before the first wait (10 ms) and its margin.
        assert_eq!(a.want(at(11), 9, |_| true, |_, e| e), None);
        assert_eq!(a.next_due(|_| true), Some(at(12)));
        let w = a.want(at(12), 9, |_| true, |_, e| e).unwrap();
        assert_eq!(
            w,
            Want {
                first: 5,
                end: 6,
                count: 3
            }
        );
        // Not again before the re-ask.
        assert_eq!(a.want(at(13), 9, |_| true, |_, e| e), None);
        // Asked again after 1.5 times the first round trip (no answer
        // came).
        assert_eq!(a.next_due(|_| true), Some(at(162)));
        // Packet 5 was solved meanwhile by an equation (it is no longer
        // free): only 6 is asked for.
        let again = a.want(at(162), 9, |s| s == 6, |_, e| e).unwrap();
        assert_eq!((again.first, again.count), (6, 2));
        a.want(at(312), 9, |_| true, |_, e| e).unwrap();
        // Three requests each: 6 is given up when its next would be due,
        // then 5.
        assert_eq!(
            a.want(at(462), 9, |_| true, |_, e| e).map(|w| w.first),
            Some(5)
        );
        assert_eq!(a.counters().given_up, 1);
        assert_eq!(a.want(at(612), 9, |_| true, |_, e| e), None);
        assert_eq!(a.counters().given_up, 2);
        assert_eq!(a.missing(), 0);
        assert_eq!(a.counters().requests, 4);
    }

    #[test]
    fn the_wait_and_the_round_trip_are_learned() {
        let mut a = Asker::default();
        // A packet overtaken by 30 ms came unasked: the wait grows to it.
        a.went_missing(at(0), 1);
        a.came(at(30), 1);
        assert!((a.ask_after_ms() - 32.0).abs() < 1e-9);
        // Asked for, it came 40 ms later: asked again only after 60.
        a.went_missing(at(100), 2);
        let w = a.want(at(132), 2, |_| true, |_, e| e).unwrap();
        assert_eq!(w.first, 2);
        a.came(at(172), 2);
        assert_eq!(a.counters().answered, 1);
        a.went_missing(at(200), 3);
        a.want(at(232), 3, |_| true, |_, e| e).unwrap();
        assert_eq!(a.next_due(|_| true), Some(at(292)));
        // Shorter waits pull the learned one down slowly, not at once.
        a.went_missing(at(400), 4);
        a.came(at(401), 4);
        assert!(a.ask_after_ms() > 30.0);
    }

    #[test]
    fn a_packet_an_equation_will_solve_is_not_asked_for() {
        let mut a = Asker::default();
        for s in 10..14 {
            a.went_missing(at(0), s);
        }
        // 10 and 12 are pivots of equations (not free): 11 is the first
        // asked for, 13 the last.
        let w = a
            .want(at(12), 40, |s| s != 10 && s != 12, |_, e| e)
            .unwrap();
        assert_eq!((w.first, w.end, w.count), (11, 13, 3));
    }

    #[test]
    fn a_request_spans_at_most_64_numbers_and_old_packets_are_forgotten() {
        let mut a = Asker::default();
        for s in 0..100u32 {
            a.went_missing(at(0), s.wrapping_sub(50));
        }
        let w = a.want(at(50), 49, |_| true, |_, e| e).unwrap();
        assert_eq!(w.first, 0u32.wrapping_sub(50));
        assert_eq!(w.end, 13);
        assert_eq!(w.count, MAX_REQUEST_COUNT);
        // A packet not due but unsolved within the range counts too.
        let mut b = Asker::default();
        b.went_missing(at(0), 100);
        b.went_missing(at(0), 102);
        b.went_missing(at(11), 101);
        let w = b.want(at(12), 110, |_| true, |_, e| e).unwrap();
        assert_eq!((w.first, w.end, w.count), (100, 102, 4));
        // An equation over 102 and 105: the request reaches 105.
        let w = b.want(at(300), 110, |s| s != 103, |_, _| 105).unwrap();
        assert_eq!((w.first, w.end, w.count), (100, 105, 6));
        a.forget_older(49, 64);
        assert_eq!(a.missing(), 64);
        for s in 0..(MAX_MISSING as u32 + 10) {
            a.went_missing(at(60), 1000 + s);
        }
        assert_eq!(a.missing(), MAX_MISSING);
    }
}
