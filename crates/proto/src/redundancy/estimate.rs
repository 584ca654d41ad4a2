//! An ingress's estimate of one path from the egress's path reports: how
//! much it loses, how bursty the losses are, and how fast it delivers.
//!
//! Loss: a report says how many packets arrived on the path and the send
//! order of the latest; the packets sent after that one are in flight, not
//! lost, so between two reports the path lost what was sent up to the
//! latest arrival minus what arrived. Packets missing at one report are
//! held as pending, not counted lost, until the next: what arrives by then
//! (a packet overtaken on its own path, or, in a report without the send
//! order, from an egress that keeps none, a packet that was merely in
//! flight) is taken back from them, and only the rest is
//! lost, so the lost total (`braid_path_lost_total`) never counts a
//! packet that arrived. Counts that come back later still are credited
//! against later losses.
//!
//! Burstiness: losses of a Gilbert chain are correlated packet to packet
//! by a factor λ, which widens the spread of loss counts over the report
//! intervals beyond the binomial's; λ is fitted by moments (the variance
//! of a sum of n correlated indicators is `n p (1-p) f(n, λ)`), and the
//! mean burst is `1 / ((1 - λ)(1 - p))`. It needs a few intervals; until
//! then the loss is taken as independent.
//!
//! Delay: the ingress remembers when it sent each packet; a report says
//! how long before it the latest arrival came (`age`), so the report's
//! arrival minus the latest packet's send time minus that age is the
//! packet's way out on the path plus the report's way back. Clocks are
//! not compared (they need not agree); the way back is the same route
//! for every path of a session, so differences between paths and the
//! spread over time are the paths' own. Taken as a path's one-way delay,
//! it counts the report's way back too: an upper bound.
//!
//! Loss of the path's own: the intervals whose delay sample shows a
//! queue on the path ([`QUEUED_MS`] above the shortest) lose what a full
//! queue drops, which no repair helps (TCP must see it to slow down);
//! `random_loss` and the burst fit leave them out (what the adaptive mode
//! reads), `loss` and the lost counts keep every packet.
//!
//! Rate and queue: what the path delivered and carried (lost packets
//! included) per second over the last [`RECENT`] intervals (what it
//! carries now, not the window's mean), and
//! how much longer than the window's shortest its delay was over them: the
//! queue building on the path (`capacity.rs` reads both).
//!
//! Sent means handed to the path's first hop. With late binding a packet
//! is numbered when it is encoded but leaves later, and urgent packets
//! leave before bulk ones numbered earlier: the node says when each
//! leaves ([`PathEstimator::on_transmit`]), the estimator keeps the send
//! orders in the order they left, and the packets in flight after the
//! latest arrival are those that left after it. Packets that wait (or
//! were dropped) above the binding point are neither in flight nor lost
//! on the path. Their delay still counts from when they were encoded, so
//! a queue at the ingress shows as the path's queue.
//!
//! Everything is bounded: the send orders of the last [`ORDERS_KEPT`]
//! packets sent and of as many waiting, a mark every [`MARK_EVERY`]
//! packets for the last [`MARKS_KEPT`] marks (what counts a report whose
//! latest arrival is older than every order kept), and the last
//! [`WINDOW`] intervals.

use std::collections::VecDeque;

use braid_wire::control::LATEST_MASK;

use crate::time::Instant;

/// Send orders kept per path: a report whose latest arrival has more
/// packets sent after it is counted by the marks ([`MARK_EVERY`]) and
/// dates no delay.
pub const ORDERS_KEPT: usize = 4096;
/// Every this many packets sent on a path, one is marked with how many
/// were sent up to it: what dates a report whose latest arrival is older
/// than every order kept (a fast path with a deep queue, or counts read
/// late from another decoder).
pub const MARK_EVERY: u64 = 64;
/// Marks kept per path: [`MARK_EVERY`] times this many packets back.
pub const MARKS_KEPT: usize = 1024;
/// How far back before a packet's send order the same order is looked
/// for (copies of one packet on one path leave close together).
const TWICE_WITHIN: usize = 256;
/// Report intervals an estimate covers.
pub const WINDOW: usize = 32;
/// Report intervals the recent rate and queue cover (the last one: a
/// second at the default report interval).
pub const RECENT: usize = 1;
/// Packets an estimate needs before it is given.
pub const MIN_PACKETS: u64 = 100;
/// Queueing delay (ms above the path's shortest) from which an interval's
/// losses are taken as a full queue's drops, not the path's own: a queue
/// that holds tens of ms (a rate limiter's, a radio's buffer), above what
/// a lossy radio's link-layer retries add to the packets that get through
/// (a few ms), so that a radio's bad spell still counts as its loss.
pub const QUEUED_MS: f64 = 20.0;
/// Intervals the burst fit needs.
pub const MIN_INTERVALS: usize = 8;

/// What a path's reports say.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PathEstimate {
    /// Packets lost over packets sent, in the window.
    pub loss: f64,
    /// The same over the window's intervals without a queue on the path
    /// ([`QUEUED_MS`]): the loss that is the path's own, not a full
    /// queue's drops (what repair can answer; `loss` when too few such
    /// intervals).
    pub random_loss: f64,
    /// Mean run of lost packets among the `random_loss` (`1 / (1 -
    /// random_loss)` for independent loss).
    pub burst: f64,
    /// Packets per second the path delivered over the window.
    pub delivered_per_s: f64,
    /// Packets sent in the window (what the estimate rests on).
    pub packets: u64,
    /// Mean delay out on the path and the report's way back, in ms, over
    /// the window's reports that dated their latest arrival (`None`
    /// without any).
    pub delay_ms: Option<f64>,
    /// Standard deviation of that delay over the window, in ms (`None`
    /// with fewer than two).
    pub delay_spread_ms: Option<f64>,
    /// The window's shortest delay sample, in ms: the path without a
    /// queue (`None` without any).
    pub min_delay_ms: Option<f64>,
    /// Packets per second the path delivered over the last [`RECENT`]
    /// intervals.
    pub recent_per_s: f64,
    /// Packets per second the path carried over the last [`RECENT`]
    /// intervals, lost ones included (those sent up to the latest
    /// arrival).
    pub carried_per_s: f64,
    /// The last [`RECENT`] intervals' mean delay above the window's
    /// shortest, in ms: the queue on the path now (`None` without delay
    /// samples there).
    pub queue_ms: Option<f64>,
}

#[derive(Debug, Clone, Copy)]
struct Mark {
    sent: u64,
    received: u32,
    at: Instant,
}

#[derive(Debug, Clone, Copy)]
struct Interval {
    sent: u64,
    lost: u64,
    delivered: u64,
    seconds: f64,
    /// The report's delay sample (see the module comment), ms.
    delay_ms: Option<f64>,
}

/// One path's estimator.
#[derive(Debug, Clone, Default)]
pub struct PathEstimator {
    /// Send order and time encoded of the packets sent last, in the order
    /// they left.
    orders: VecDeque<(u32, Instant)>,
    /// Send order and time encoded of the packets encoded for the path
    /// that have not left yet (late binding), oldest first.
    waiting: VecDeque<(u32, Instant)>,
    /// Every [`MARK_EVERY`]th packet to leave: its send order and the
    /// packets sent up to it, oldest first.
    marks: Marks,
    /// While another encoder (the kernel data path) is lent the session:
    /// an order every packet it had sent on the path is below, and the
    /// packets sent on the path up to it, its and this one's, oldest
    /// first ([`Self::on_sent_elsewhere`]).
    elsewhere: Marks,
    /// Packets the other encoder sent on the path in periods that ended
    /// ([`Self::on_elsewhere_ended`]), and the order every one of them
    /// is below.
    folded: u64,
    folded_before: Option<u32>,
    sent: u64,
    last: Option<Mark>,
    /// Packets that arrived beyond what was counted sent (reported late):
    /// set against later losses.
    credit: u64,
    /// Packets missing at the last report, not yet counted lost: the next
    /// report confirms them or takes them back.
    pending: u64,
    lost: u64,
    intervals: VecDeque<Interval>,
    /// The latest report's delay sample, ms (the first report's too,
    /// which opens no interval).
    last_delay_ms: Option<f64>,
    /// What the intervals say, computed when a report changes them
    /// (read per urgent packet and per path by the scheduler).
    estimate: Option<PathEstimate>,
}

impl PathEstimator {
    /// A packet with this send order went out on the path at `now`.
    pub fn on_send(&mut self, now: Instant, order: u32) {
        self.left(order & LATEST_MASK, now);
    }

    /// A packet with this send order was encoded for the path at `now` and
    /// waits above the binding point: [`Self::on_transmit`] when it
    /// leaves, [`Self::on_dropped`] if it never does.
    pub fn on_queued(&mut self, now: Instant, order: u32) {
        if self.waiting.len() == ORDERS_KEPT {
            // The oldest waiting is taken as gone; if it leaves after
            // all, it is counted then.
            self.waiting.pop_front();
        }
        self.waiting.push_back((order & LATEST_MASK, now));
    }

    /// The packet with this send order left for the path's first hop at
    /// `now` (queued before with [`Self::on_queued`]). Its delay counts
    /// from when it was queued, or from `now` if `from_here` (a paced
    /// node: the wait above the binding point is not the path's queue).
    pub fn on_transmit(&mut self, now: Instant, order: u32, from_here: bool) {
        let order = order & LATEST_MASK;
        let queued = self.take_waiting(order);
        let at = if from_here {
            now
        } else {
            queued.unwrap_or(now)
        };
        self.left(order, at);
    }

    /// The packet with this send order, queued, was held back by the
    /// ingress (delay equalisation) until `now`: its delay counts from
    /// here, so that the hold is neither the path's delay nor its queue.
    pub fn on_released(&mut self, now: Instant, order: u32) {
        let order = order & LATEST_MASK;
        if let Some(w) = self.waiting.iter_mut().find(|(o, _)| *o == order) {
            w.1 = now;
        }
    }

    /// The packet with this send order, queued, was dropped before it left.
    pub fn on_dropped(&mut self, order: u32) {
        self.take_waiting(order & LATEST_MASK);
    }

    /// Another encoder lent the session (the kernel data path) has sent
    /// `count` packets on the path in this period, every one of them with
    /// a send order below `order_bound`. Kept like the marks, and read
    /// the same way: a report whose latest arrival is at or after
    /// `order_bound` had at least these many sent up to it.
    pub fn on_sent_elsewhere(&mut self, order_bound: u32, count: u64) {
        let sent = self.sent + self.folded + count;
        self.elsewhere.push(order_bound & LATEST_MASK, sent);
    }

    /// The other encoder's period ended having sent `count` packets on
    /// the path, every one with a send order below `order_bound` (this
    /// encoder's next): from there on they are counted as this one's.
    pub fn on_elsewhere_ended(&mut self, order_bound: u32, count: u64) {
        self.folded += count;
        self.folded_before = Some(order_bound & LATEST_MASK);
    }

    /// The packet with this send order, queued, leaves on another path:
    /// when it was queued (`None`: not waiting here).
    pub fn take_queued(&mut self, order: u32) -> Option<Instant> {
        self.take_waiting(order & LATEST_MASK)
    }

    /// Packets encoded for the path that have not left yet.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    fn take_waiting(&mut self, order: u32) -> Option<Instant> {
        let i = self.waiting.iter().position(|&(o, _)| o == order)?;
        self.waiting.remove(i).map(|(_, at)| at)
    }

    fn left(&mut self, order: u32, encoded_at: Instant) {
        if self.orders.len() == ORDERS_KEPT {
            self.orders.pop_front();
        }
        self.orders.push_back((order, encoded_at));
        self.sent += 1;
        if self.sent.is_multiple_of(MARK_EVERY) {
            self.marks.push(order, self.sent);
        }
    }

    /// Packets lost on the path so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Packets sent on the path so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Takes a report of the path (`received` since the session began,
    /// wrapping; the latest arrival's send order if known, and how many
    /// ms before the report it arrived); returns the packets newly found
    /// lost (those pending since the last report that did not arrive).
    pub fn on_report(
        &mut self,
        now: Instant,
        received: u32,
        latest: Option<u32>,
        age_ms: u16,
    ) -> u64 {
        self.last_delay_ms = None;
        let Some((sent, sent_at)) = self.sent_up_to(latest) else {
            return 0;
        };
        // A sample below nothing is not the path's (its packet is not the
        // one dated): none is taken.
        let delay_ms = sent_at
            .map(|at| now.since(at).as_secs_f64() * 1e3 - f64::from(age_ms))
            .filter(|d| *d >= 0.0);
        self.last_delay_ms = delay_ms;
        // A count by a mark may fall below the last report's (its latest
        // arrival barely moved): what was sent never goes back.
        let sent = self.last.map_or(sent, |l| sent.max(l.sent));
        let mark = Mark {
            sent,
            received,
            at: now,
        };
        let Some(before) = self.last.replace(mark) else {
            // What arrived beyond what was sent up to the latest (left
            // after it, arrived before the report) is owed from the start.
            self.credit = u64::from(received).saturating_sub(sent);
            return 0;
        };
        let d_sent = sent.saturating_sub(before.sent);
        let d_received = u64::from(received.wrapping_sub(before.received));
        let missing = d_sent as i128 - d_received as i128 - self.credit as i128;
        let mut back = 0;
        let lost = if missing >= 0 {
            self.credit = 0;
            missing as u64
        } else {
            // Arrivals beyond what was sent up to the latest: packets
            // missed before, now here. First those still pending.
            let late = (-missing) as u64;
            back = late.min(self.pending);
            self.pending -= back;
            self.credit = late - back;
            0
        };
        if back > 0 {
            // They were not lost in the interval that missed them.
            if let Some(i) = self.intervals.back_mut() {
                i.lost = i.lost.saturating_sub(back);
            }
        }
        let confirmed = std::mem::replace(&mut self.pending, lost);
        self.lost += confirmed;
        if d_sent > 0 {
            if self.intervals.len() == WINDOW {
                self.intervals.pop_front();
            }
            self.intervals.push_back(Interval {
                sent: d_sent,
                lost: lost.min(d_sent),
                delivered: d_received,
                seconds: now.since(before.at).as_secs_f64(),
                delay_ms,
            });
        }
        if d_sent > 0 || back > 0 {
            self.estimate = self.compute_estimate();
        }
        confirmed
    }

    /// Packets sent up to and including the one with send order `latest`
    /// (all sent when unknown), and when that one was sent; `None` when
    /// it is no longer remembered.
    fn sent_up_to(&self, latest: Option<u32>) -> Option<(u64, Option<Instant>)> {
        // What another encoder sent in periods that ended, counted where
        // every one of them came before the latest arrival.
        let folded = match (latest, self.folded_before) {
            (Some(l), Some(b)) if after(l, b) || l == b => self.folded,
            (Some(_), Some(_)) => 0,
            _ => self.folded,
        };
        let own = self
            .own_sent_up_to(latest)
            .map(|(sent, at)| (sent + folded, at));
        let Some(latest) = latest else {
            return own;
        };
        // While another encoder sends, its marks count its packets and
        // these: a lower bound, as the others are; the higher one holds.
        match (own, self.elsewhere.at_or_before(latest)) {
            (Some((sent, _)), Some(e)) if e > sent => Some((e, None)),
            (None, Some(e)) => Some((e, None)),
            (own, _) => own,
        }
    }

    /// [`Self::sent_up_to`] by what this encoder sent.
    fn own_sent_up_to(&self, latest: Option<u32>) -> Option<(u64, Option<Instant>)> {
        let Some(latest) = latest else {
            return Some((self.sent, None));
        };
        // The packets that left after the latest arrival are in flight.
        // If it is not among those kept (older, or never recorded), those
        // numbered after it are.
        if let Some(i) = self.orders.iter().rposition(|&(o, _)| o == latest) {
            let in_flight = self.orders.len() - 1 - i;
            // The same packet sent twice on this path (an urgent packet's
            // spaced copies, `urgent.rs`): which copy arrived is not
            // known, so neither dates the path (the later one's time made
            // the path look faster than it is, down to nothing, and every
            // sample after it a queue: a paced path's rate then fell to
            // nothing under bursty loss).
            let twice = self
                .orders
                .range(i.saturating_sub(TWICE_WITHIN)..i)
                .any(|&(o, _)| o == latest);
            let sent_at = (!twice).then_some(self.orders[i].1);
            return Some((self.sent - in_flight as u64, sent_at));
        }
        let in_flight = self
            .orders
            .iter()
            .rev()
            .take_while(|&&(o, _)| after(o, latest))
            .count();
        if in_flight == ORDERS_KEPT {
            // The latest arrival is older than every order kept. The
            // newest mark at or before it says how many were sent up to
            // the mark: up to [`MARK_EVERY`] fewer than up to the latest.
            // Those the report then finds arrived beyond what was sent
            // are credited against the next interval's, which counts
            // them sent: a lossless path loses nothing, a lossy path's
            // losses are counted an interval late. Older than every mark
            // too: nothing to compare with.
            return Some((self.marks.at_or_before(latest)?, None));
        }
        // The packet itself, if the one before those in flight is it.
        let sent_at = self
            .orders
            .iter()
            .rev()
            .nth(in_flight)
            .filter(|&&(o, _)| o == latest)
            .map(|&(_, at)| at);
        Some((self.sent - in_flight as u64, sent_at))
    }

    /// The delay sample of the latest report (the packet's way out and
    /// the report's way back, ms; `None` when the report dated no packet
    /// sent on the path that is still remembered).
    pub fn last_delay_ms(&self) -> Option<f64> {
        self.last_delay_ms
    }

    /// The estimate over the window; `None` until it rests on
    /// [`MIN_PACKETS`] packets. Computed when a report comes in: reading
    /// it costs nothing.
    pub fn estimate(&self) -> Option<PathEstimate> {
        self.estimate
    }

    fn compute_estimate(&self) -> Option<PathEstimate> {
        let sent: u64 = self.intervals.iter().map(|i| i.sent).sum();
        if sent < MIN_PACKETS {
            return None;
        }
        let lost: u64 = self.intervals.iter().map(|i| i.lost).sum();
        let delivered: u64 = self.intervals.iter().map(|i| i.delivered).sum();
        let seconds: f64 = self.intervals.iter().map(|i| i.seconds).sum();
        let p = lost as f64 / sent as f64;
        let delays: Vec<f64> = self.intervals.iter().filter_map(|i| i.delay_ms).collect();
        let n = delays.len() as f64;
        let mean = (n > 0.0).then(|| delays.iter().sum::<f64>() / n);
        let spread = mean
            .filter(|_| n >= 2.0)
            .map(|m| (delays.iter().map(|d| (d - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
        let min_delay = delays.iter().copied().reduce(f64::min);
        let recent: Vec<&Interval> = self.intervals.iter().rev().take(RECENT).collect();
        let recent_seconds: f64 = recent.iter().map(|i| i.seconds).sum();
        let recent_delivered: u64 = recent.iter().map(|i| i.delivered).sum();
        let recent_sent: u64 = recent.iter().map(|i| i.sent).sum();
        let recent_delays: Vec<f64> = recent.iter().filter_map(|i| i.delay_ms).collect();
        let queue_ms = min_delay
            .filter(|_| !recent_delays.is_empty())
            .map(|m| recent_delays.iter().sum::<f64>() / recent_delays.len() as f64 - m);
        let per_s = |packets: u64, seconds: f64| {
            if seconds > 0.0 {
                packets as f64 / seconds
            } else {
                0.0
            }
        };
        // The intervals whose delay was not held up by a queue on the
        // path: their losses are the path's own (a radio's, a cable's),
        // not a full queue's drops, which repair cannot help (and which
        // TCP must see, to slow down).
        let calm: Vec<&Interval> = self
            .intervals
            .iter()
            .filter(|i| !(i.delay_ms.zip(min_delay)).is_some_and(|(d, m)| d - m >= QUEUED_MS))
            .collect();
        let calm_sent: u64 = calm.iter().map(|i| i.sent).sum();
        let (random_loss, burst) = if calm_sent >= MIN_PACKETS {
            let q = calm.iter().map(|i| i.lost).sum::<u64>() as f64 / calm_sent as f64;
            (q, burst(&calm, q))
        } else {
            let all: Vec<&Interval> = self.intervals.iter().collect();
            (p, burst(&all, p))
        };
        Some(PathEstimate {
            loss: p,
            random_loss,
            burst,
            delivered_per_s: per_s(delivered, seconds),
            packets: sent,
            delay_ms: mean,
            delay_spread_ms: spread,
            min_delay_ms: min_delay,
            recent_per_s: per_s(recent_delivered, recent_seconds),
            carried_per_s: per_s(recent_sent, recent_seconds),
            queue_ms,
        })
    }
}

/// Send orders with the packets sent up to each, the last [`MARKS_KEPT`],
/// oldest first: the marks of this encoder's packets, or the reads of
/// another's counts.
#[derive(Debug, Clone, Default)]
struct Marks(VecDeque<(u32, u64)>);

impl Marks {
    fn push(&mut self, order: u32, sent: u64) {
        if self.0.len() == MARKS_KEPT {
            self.0.pop_front();
        } else if self.0.is_empty() {
            // At once (16 KiB), not by doubling on the data path.
            self.0.reserve_exact(MARKS_KEPT);
        }
        self.0.push_back((order, sent));
    }

    /// The packets sent up to the newest mark at or before `latest`.
    fn at_or_before(&self, latest: u32) -> Option<u64> {
        self.0
            .iter()
            .rev()
            .find(|&&(o, _)| !after(o, latest))
            .map(|&(_, sent)| sent)
    }
}

/// Whether send order `o` comes after `latest` (send orders wrap at
/// [`LATEST_MASK`]; half of that range counts as after).
fn after(o: u32, latest: u32) -> bool {
    const HALF: u32 = 1 << 22;
    let d = o.wrapping_sub(latest) & LATEST_MASK;
    d != 0 && d < HALF
}

/// The mean loss burst that explains how the loss counts of `intervals`
/// spread around their ratio `p` (see the module comment).
fn burst(intervals: &[&Interval], p: f64) -> f64 {
    let independent = 1.0 / (1.0 - p.min(0.999_999));
    let k = intervals.len();
    if p <= 0.0 || p >= 1.0 || k < MIN_INTERVALS {
        return independent;
    }
    let spread: f64 = intervals
        .iter()
        .map(|i| (i.lost as f64 - p * i.sent as f64).powi(2))
        .sum::<f64>()
        * k as f64
        / (k - 1) as f64;
    let expected = |lambda: f64| {
        p * (1.0 - p)
            * intervals
                .iter()
                .map(|i| i.sent as f64 * spread_factor(i.sent as f64, lambda))
                .sum::<f64>()
    };
    if spread <= expected(0.0) {
        return independent;
    }
    let (mut lo, mut hi) = (0.0, 0.9999);
    if spread >= expected(hi) {
        lo = hi;
    } else {
        for _ in 0..60 {
            let mid = (lo + hi) / 2.0;
            if expected(mid) < spread {
                lo = mid;
            } else {
                hi = mid;
            }
        }
    }
    1.0 / ((1.0 - lo) * (1.0 - p))
}
/// `Var(sum of n indicators) / (n p (1 - p))` when their correlation at
/// lag j is `lambda^j`.
fn spread_factor(n: f64, lambda: f64) -> f64 {
    if n <= 1.0 || lambda <= 0.0 {
        return 1.0;
    }
    let l = lambda;
    1.0 + 2.0 * l / (1.0 - l) - 2.0 * l * (1.0 - l.powf(n)) / (n * (1.0 - l).powi(2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    impl PathEstimator {
        /// Losses the estimate's intervals hold.
        fn estimate_lost(&self) -> u64 {
            self.intervals.iter().map(|i| i.lost).sum()
        }
    }

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn packets_in_flight_are_not_lost() {
        let mut e = PathEstimator::default();
        for s in 0..10u32 {
            e.on_send(at(0), s * 32);
        }
        // 6 arrived (0..5), 4 in flight.
        assert_eq!(e.on_report(at(0), 6, Some(5 * 32), 0), 0);
        for s in 10..20u32 {
            e.on_send(at(0), s * 32);
        }
        // 6..=15 arrived: 10 more, 4 in flight again.
        assert_eq!(e.on_report(at(250), 16, Some(15 * 32), 0), 0);
        // 16 and 18 missing, 17 and 19 arrived: pending...
        assert_eq!(e.on_report(at(500), 18, Some(19 * 32), 0), 0);
        assert_eq!(e.estimate_lost(), 2, "the estimate sees them at once");
        // ...and lost when the next report has not got them either.
        assert_eq!(e.on_report(at(750), 18, Some(19 * 32), 0), 2);
        assert_eq!(e.lost(), 2);
    }

    #[test]
    fn a_report_older_than_every_order_kept_is_counted_by_the_marks() {
        // A fast path: 20,000 packets a report, the latest arrival 5,000
        // packets before the newest sent (more than the orders kept).
        let mut e = PathEstimator::default();
        let order = |i: u64| (i * 2) as u32 & LATEST_MASK;
        let mut sent = 0u64;
        let report = |e: &mut PathEstimator, sent: &mut u64, lose: u64, t: u64| {
            for _ in 0..20_000 {
                e.on_send(at(t), order(*sent));
                *sent += 1;
            }
            let latest = *sent - 5_001;
            let received = latest + 1 - lose;
            e.on_report(at(t + 10), received as u32, Some(order(latest)), 0)
        };
        for k in 0..5 {
            assert_eq!(report(&mut e, &mut sent, 0, k * 1_000), 0);
        }
        let est = e.estimate().expect("an estimate");
        assert_eq!((est.loss, e.lost()), (0.0, 0), "lossless: nothing lost");
        assert!(est.packets >= 60_000 && est.delay_ms.is_none(), "{est:?}");
        // 100 lost (counted an interval late, up to a mark's worth).
        let mut lost = 0;
        for k in 5..9 {
            lost += report(&mut e, &mut sent, 100, k * 1_000);
        }
        assert!((100 - MARK_EVERY..=100).contains(&lost), "{lost}");
        // Older than every mark: nothing to count by.
        let mut old = PathEstimator::default();
        for i in 0..(MARK_EVERY * MARKS_KEPT as u64 + 10_000) {
            old.on_send(at(0), order(i));
        }
        assert_eq!(old.on_report(at(5), 1, Some(order(0)), 0), 0);
        assert!(old.last.is_none());
    }

    proptest::proptest! {
        /// A lossless path at any rate and depth of queue: whatever the
        /// reports date (an order kept, a mark, nothing), nothing is lost.
        #[test]
        fn a_lossless_path_loses_nothing_however_deep_its_queue(
            steps in proptest::collection::vec((1u64..30_000, 0u64..20_000), 2..20),
        ) {
            let mut e = PathEstimator::default();
            let mut sent = 0u64;
            for (i, &(burst, in_flight)) in steps.iter().enumerate() {
                for _ in 0..burst {
                    e.on_send(at(i as u64 * 100), (sent * 3) as u32 & LATEST_MASK);
                    sent += 1;
                }
                let arrived = sent.saturating_sub(in_flight);
                if arrived == 0 {
                    continue;
                }
                let latest = ((arrived - 1) * 3) as u32 & LATEST_MASK;
                let t = at(i as u64 * 100 + 50);
                proptest::prop_assert_eq!(e.on_report(t, arrived as u32, Some(latest), 0), 0);
            }
            proptest::prop_assert_eq!(e.lost(), 0);
            if let Some(est) = e.estimate() {
                proptest::prop_assert_eq!(est.loss, 0.0);
            }
        }
    }

    #[test]
    fn packets_sent_elsewhere_show_the_paths_loss() {
        // One packet of this encoder's, then another encoder's 10,000 (every
        // tenth lost), known by its counts read every 100.
        let mut e = PathEstimator::default();
        let order = |seq: u32| seq * 32;
        e.on_send(at(0), order(0));
        e.on_report(at(0), 1, Some(order(0)), 0);
        let (mut received, mut lost) = (1u32, 0u64);
        for seq in 1..=10_000u32 {
            if seq.is_multiple_of(10) {
                lost += 1;
            } else {
                received += 1;
            }
            if seq.is_multiple_of(100) {
                e.on_sent_elsewhere(order(seq), u64::from(seq));
            }
            if seq % 1_000 == 999 {
                e.on_report(at(u64::from(seq)), received, Some(order(seq)), 0);
            }
        }
        let est = e.estimate().expect("measured");
        assert!((0.08..=0.12).contains(&est.loss), "{est:?}");
        assert!(e.lost() > 0 && e.lost() <= lost, "{} of {lost}", e.lost());
        assert_eq!(est.delay_ms, None, "no packet of the other's is dated");
    }

    proptest::proptest! {
        /// A session lent to another encoder and taken back, in turns:
        /// the other's packets are known only by its counts, read now and
        /// then. No report counts a packet lost that arrived, and once
        /// everything has arrived or been lost, what is lost (confirmed
        /// or pending) is what the path lost.
        #[test]
        fn packets_sent_elsewhere_are_measured_and_none_lost_that_arrived(
            phases in proptest::collection::vec(
                (proptest::bool::ANY, 1u64..3_000, 0u64..200, 0u64..400, 1u64..6),
                1..8,
            ),
            lose_every in 0u64..50, // 0 and 1: none lost
        ) {
            let mut e = PathEstimator::default();
            let order = |seq: u64| (seq * 32) as u32 & LATEST_MASK;
            // Per packet (seq): whether it arrives. Sent in seq order.
            let mut fate: Vec<bool> = Vec::new();
            let (mut kernel_count, mut t) = (0u64, 0u64);
            let mut lent = false;
            let mut reported = 1;
            // A first packet, arrived and reported: what the losses
            // count from.
            fate.push(true);
            e.on_send(at(0), order(0));
            e.on_report(at(0), 1, Some(order(0)), 0);
            for &(elsewhere, n, in_flight, margin, reads) in &phases {
                if lent && !elsewhere {
                    e.on_elsewhere_ended(order(fate.len() as u64), kernel_count);
                    kernel_count = 0;
                }
                lent = elsewhere;
                for r in 0..reads {
                    for _ in 0..n / reads {
                        let seq = fate.len() as u64;
                        fate.push(lose_every < 2 || !seq.is_multiple_of(lose_every));
                        if elsewhere {
                            kernel_count += 1;
                        } else {
                            e.on_send(at(t), order(seq));
                        }
                    }
                    if elsewhere {
                        // A read: its bound the last number taken, or
                        // a margin above it.
                        let bound = order((fate.len() as u64).saturating_sub(1) + margin);
                        e.on_sent_elsewhere(bound, kernel_count);
                    }
                    // A report: what arrived of all but the last
                    // `in_flight` (what arrived stays arrived).
                    let upto = ((fate.len() as u64).saturating_sub(in_flight) as usize).max(reported);
                    reported = upto;
                    if let Some(latest) = (0..upto).rev().find(|&i| fate[i]) {
                        let received = fate[..upto].iter().filter(|&&f| f).count();
                        let truly_lost = fate[..latest].iter().filter(|&&f| !f).count() as u64;
                        t += 100;
                        e.on_report(at(t), received as u32, Some(order(latest as u64)), 0);
                        proptest::prop_assert!(e.lost() <= truly_lost, "{} > {}", e.lost(), truly_lost);
                    }
                    let _ = r;
                }
            }
            if lent {
                e.on_elsewhere_ended(order(fate.len() as u64), kernel_count);
            }
            // One last packet of this encoder's, arrived, and two reports.
            let last = fate.len() as u64;
            fate.push(true);
            e.on_send(at(t), order(last));
            let received = fate.iter().filter(|&&f| f).count() as u32;
            let truly_lost = fate.iter().filter(|&&f| !f).count() as u64;
            e.on_report(at(t + 100), received, Some(order(last)), 0);
            e.on_report(at(t + 200), received, Some(order(last)), 0);
            proptest::prop_assert_eq!(e.lost() + e.pending, truly_lost);
        }
    }

    #[test]
    fn a_held_packets_delay_counts_from_its_release_not_its_encoding() {
        let mut e = PathEstimator::default();
        // Encoded at 0, held 40 ms for delay equalisation, released and
        // sent at 41; it arrived 20 ms later, and the report (10 ms back)
        // came 5 ms after that.
        e.on_queued(at(0), 0);
        e.on_released(at(40), 0);
        e.on_transmit(at(41), 0, false);
        e.on_report(at(76), 1, Some(0), 5);
        assert_eq!(
            e.last_delay_ms(),
            Some(31.0),
            "30 ms out and back, and the 1 ms above the binding point"
        );
        // One never held counts from its encoding, as before.
        let mut plain = PathEstimator::default();
        plain.on_queued(at(0), 0);
        plain.on_transmit(at(41), 0, false);
        plain.on_report(at(76), 1, Some(0), 5);
        assert_eq!(plain.last_delay_ms(), Some(71.0));
        // A paced node's counts from when it left the binding point.
        let mut paced = PathEstimator::default();
        paced.on_queued(at(0), 0);
        paced.on_transmit(at(41), 0, true);
        paced.on_report(at(76), 1, Some(0), 5);
        assert_eq!(paced.last_delay_ms(), Some(30.0));
    }

    #[test]
    fn the_delay_is_the_way_out_plus_the_reports_way_back() {
        // Packet i leaves at i ms and arrives 20 ms later; the egress
        // reports every 50 ms and its report takes 10 ms back.
        let mut e = PathEstimator::default();
        let mut sent = 0u32;
        for k in 1..=8u64 {
            let report_at = 50 * k + 25;
            // Sent until the report reaches the ingress, 10 ms later.
            while u64::from(sent) < report_at + 10 {
                e.on_send(at(u64::from(sent)), sent * 32);
                sent += 1;
            }
            let latest = (report_at - 20) as u32;
            let age = report_at - (u64::from(latest) + 20);
            e.on_report(
                at(report_at + 10),
                latest + 1,
                Some(latest * 32),
                age as u16,
            );
        }
        let est = e.estimate().unwrap();
        assert!((est.delay_ms.unwrap() - 30.0).abs() < 1e-6, "{est:?}");
        assert!(est.delay_spread_ms.unwrap() < 1e-6, "{est:?}");
        // Reports that do not date their latest arrival say nothing of it.
        let mut blind = PathEstimator::default();
        for s in 0..200u32 {
            blind.on_send(at(u64::from(s)), s * 32);
            if s % 50 == 49 {
                blind.on_report(at(u64::from(s) + 30), s + 1, None, 0);
            }
        }
        assert_eq!(blind.estimate().unwrap().delay_ms, None);
    }

    #[test]
    fn a_packet_sent_twice_on_its_path_dates_nothing_and_no_sample_is_below_zero() {
        let mut e = PathEstimator::default();
        e.on_send(at(0), 32);
        e.on_send(at(0), 64);
        // An urgent packet's spaced copy, 30 ms after the first.
        e.on_send(at(30), 64);
        e.on_report(at(45), 2, Some(64), 0);
        assert_eq!(e.last_delay_ms(), None, "which copy arrived is not known");
        e.on_send(at(50), 96);
        e.on_report(at(95), 3, Some(96), 5);
        assert_eq!(e.last_delay_ms(), Some(40.0));
        // A report whose age says the packet arrived before it left.
        e.on_send(at(100), 128);
        e.on_report(at(110), 4, Some(128), 30);
        assert_eq!(e.last_delay_ms(), None);
    }

    #[test]
    fn without_send_orders_late_arrivals_are_credited() {
        let mut e = PathEstimator::default();
        for s in 0..10u32 {
            e.on_send(at(0), s);
        }
        e.on_report(at(0), 10, None, 0);
        for s in 10..20u32 {
            e.on_send(at(0), s);
        }
        // 4 still in flight: pending, not lost...
        assert_eq!(e.on_report(at(100), 16, None, 0), 0);
        // ...and taken back when they arrive.
        assert_eq!(e.on_report(at(200), 20, None, 0), 0);
        for s in 20..30u32 {
            e.on_send(at(0), s);
        }
        assert_eq!(e.on_report(at(300), 26, None, 0), 0);
        assert_eq!(e.lost(), 0, "nothing was lost: 4 are in flight");
        // Those 4 never arrive: lost at the next report.
        assert_eq!(e.on_report(at(400), 26, None, 0), 4);
        assert_eq!(e.lost(), 4);
    }

    #[test]
    fn a_packet_overtaken_on_its_path_is_not_counted_lost() {
        let mut e = PathEstimator::default();
        for s in 0..20u32 {
            e.on_send(at(0), s);
        }
        e.on_report(at(10), 10, Some(9), 0);
        // Packet 14 arrived before 12 and 13: the report counts 12 and
        // 13 missing up to 14...
        assert_eq!(e.on_report(at(20), 13, Some(14), 0), 0);
        // ...and they arrive by the next one.
        assert_eq!(e.on_report(at(30), 20, Some(19), 0), 0);
        assert_eq!(e.lost(), 0);
        assert_eq!(e.estimate_lost(), 0, "the loss estimate took them back too");
    }

    proptest::proptest! {
        /// A path that loses nothing is reported to lose nothing, at any
        /// rate and any queueing: packets leave in order and arrive in
        /// order after a delay that grows and shrinks (a queue), the
        /// egress reports what arrived and its newest arrival's send order
        /// and age, and the report takes its own time back.
        #[test]
        fn a_lossless_path_loses_nothing_at_any_rate(
            gaps_us in proptest::collection::vec(1u64..2_000, 200..3_000),
            queue_us in proptest::collection::vec(0u64..50_000, 1..40),
            base_ms in 1u64..200,
            back_ms in 0u64..100,
            report_ms in 20u64..1_000,
        ) {
            let mut e = PathEstimator::default();
            let (mut sent_at, mut arrived_at) = (0u64, 0u64);
            let mut arrivals = Vec::new();
            for (i, gap) in gaps_us.iter().enumerate() {
                sent_at += gap;
                let queue = queue_us[i * queue_us.len() / gaps_us.len()];
                // In order: never before the one sent before it.
                arrived_at = arrived_at.max(sent_at + base_ms * 1_000 + queue);
                arrivals.push((sent_at, arrived_at));
            }
            let end = arrived_at + 2 * report_ms * 1_000;
            let (mut next, mut report) = (0usize, report_ms * 1_000);
            while report <= end {
                let reach = report + back_ms * 1_000;
                // Everything sent before the report reaches the ingress.
                while next < arrivals.len() && arrivals[next].0 <= reach {
                    e.on_send(Instant(arrivals[next].0), (next as u32) * 32);
                    next += 1;
                }
                let arrived: Vec<usize> = (0..next).filter(|&i| arrivals[i].1 <= report).collect();
                // An egress reports a path once something arrived on it.
                if let Some(&newest) = arrived.last() {
                    let age = ((report - arrivals[newest].1) / 1_000) as u16;
                    let order = newest as u32 * 32;
                    e.on_report(Instant(reach), arrived.len() as u32, Some(order), age);
                }
                report += report_ms * 1_000;
            }
            proptest::prop_assert_eq!(e.lost(), 0);
            if let Some(est) = e.estimate() {
                proptest::prop_assert_eq!(est.loss, 0.0);
            }
        }
    }

    proptest::proptest! {
        /// Late binding: packets wait above the binding point (a queue
        /// served at a fixed rate) and urgent ones leave at once, ahead of
        /// bulk packets numbered before them. The path loses nothing, and
        /// the estimate says so: what waits is neither in flight nor lost.
        #[test]
        fn urgent_packets_overtaking_queued_ones_cost_no_loss(
            gaps_us in proptest::collection::vec(1u64..2_000, 200..2_000),
            urgent_every in 2usize..20,
            service_us in 100u64..3_000,
            base_ms in 1u64..100,
            report_ms in 20u64..1_000,
        ) {
            let mut e = PathEstimator::default();
            // (encoded, left, arrived) per packet, numbered in encode order.
            let mut times = Vec::new();
            let (mut t, mut bulk_free) = (0u64, 0u64);
            for (i, gap) in gaps_us.iter().enumerate() {
                t += gap;
                let left = if i % urgent_every == 0 {
                    t
                } else {
                    bulk_free = bulk_free.max(t) + service_us;
                    bulk_free
                };
                times.push((t, left, left + base_ms * 1_000));
            }
            let mut events: Vec<(u64, bool, usize)> = times
                .iter()
                .enumerate()
                .flat_map(|(i, &(enc, left, _))| [(enc, false, i), (left, true, i)])
                .collect();
            events.sort();
            let end = times.iter().map(|x| x.2).max().unwrap_or(0) + 2 * report_ms * 1_000;
            let (mut next, mut report) = (0usize, report_ms * 1_000);
            while report <= end {
                while next < events.len() && events[next].0 <= report {
                    let (at, leaves, i) = events[next];
                    if leaves {
                        e.on_transmit(Instant(at), i as u32 * 32, false);
                    } else {
                        e.on_queued(Instant(at), i as u32 * 32);
                    }
                    next += 1;
                }
                // The egress: how many arrived, the highest number among
                // them and when it came.
                let arrived: Vec<usize> = (0..times.len()).filter(|&i| times[i].2 <= report).collect();
                if let Some(&top) = arrived.iter().max() {
                    let age = ((report - times[top].2) / 1_000) as u16;
                    e.on_report(Instant(report), arrived.len() as u32, Some(top as u32 * 32), age);
                }
                report += report_ms * 1_000;
            }
            proptest::prop_assert_eq!(e.lost(), 0);
            proptest::prop_assert_eq!(e.waiting(), 0);
        }
    }

    #[test]
    fn a_packet_dropped_before_it_left_is_not_the_paths_loss() {
        let mut e = PathEstimator::default();
        for i in 0..200u32 {
            e.on_queued(Instant::from_millis(u64::from(i)), i * 32);
        }
        // Every tenth is dropped above the binding point; the rest leave
        // and arrive.
        let mut arrived = 0;
        for i in 0..200u32 {
            if i % 10 == 3 {
                e.on_dropped(i * 32);
            } else {
                e.on_transmit(Instant::from_millis(u64::from(i)), i * 32, false);
                arrived += 1;
            }
            if i % 50 == 49 {
                let latest = if i % 10 == 3 { i - 1 } else { i };
                e.on_report(
                    Instant::from_millis(u64::from(i) + 5),
                    arrived,
                    Some(latest * 32),
                    0,
                );
            }
        }
        assert_eq!(e.lost(), 0);
        assert_eq!(e.sent(), 180);
        assert_eq!(e.waiting(), 0);
    }

    #[test]
    fn the_spread_factor_matches_a_direct_sum() {
        for (n, l) in [(10.0, 0.5), (50.0, 0.9), (3.0, 0.2)] {
            let direct = 1.0
                + 2.0
                    * (1..n as usize)
                        .map(|j| (1.0 - j as f64 / n) * f64::powi(l, j as i32))
                        .sum::<f64>();
            assert!((spread_factor(n, l) - direct).abs() < 1e-9);
        }
    }
}
