//! Copies of urgent packets: how many an urgent packet (VoIP, say) gets
//! beyond what its session's mode sends, and on which paths, so that it
//! arrives with the session's target probability without waiting for
//! anything.
//!
//! An urgent packet rides in its session's coded groups like any other,
//! but a group's repair leaves only once the group is full, and the rest
//! of the group is bulk that waits above the binding point: a lost VoIP
//! packet rebuilt from it comes tens of milliseconds late, which for a
//! call is as good as lost. Copies sent at once, urgent like the packet,
//! arrive on time. They cost little: urgent traffic is a small share (a
//! call is 50 packets of 200 bytes a second), and the copies are bounded
//! per packet and per second ([`CopyBudget`]).
//!
//! A striped session's urgent packet itself takes the path where it
//! arrives first ([`earliest`]), not the split's turn: a call gains
//! nothing from a long fast path.
//!
//! Copies on one path are lost together when the path loses in bursts:
//! on a path of loss `p` whose losses follow a Gilbert chain, a packet
//! `d` packets after a lost one is lost with probability
//! `p + (1 - p) λ^d` (`λ` the chain's memory; 0 for independent loss).
//! A second copy on a path therefore leaves [`SPACING`] after the one
//! before it when that makes it much likelier to get through (the packets
//! the path carries in between, from its measured rate, part them), and
//! at once otherwise; no copy leaves more than [`MAX_SPREAD`] after the
//! packet, so that a call's delay stays within a path's delay plus 30 ms.
//! Paths lose independently of each other. Copies go, one at a time,
//! where they cut the chance that every copy is lost the most: first on
//! paths that carry none yet, then a second on the least lossy, and so
//! on, until that chance is at or below the target or the bound is
//! reached.

use std::time::Duration;

use super::mode::MAX_PATHS;
use super::predict::PathLoss;
use crate::time::Instant;

/// The loss a path is taken to have until its reports measure it (the
/// first second or two of a session; a link's probes may not have seen
/// its loss yet either): enough that an urgent packet goes twice, on two
/// paths where there are two, which costs a call one packet more per
/// packet for that while.
pub const UNMEASURED_LOSS: f64 = 0.01;

/// How long after the copy before it on its path a spaced copy leaves.
pub const SPACING: Duration = Duration::from_millis(10);

/// The latest a copy leaves after its packet.
pub const MAX_SPREAD: Duration = Duration::from_millis(20);

/// A spaced copy is sent only if spacing cuts the chance it is lost with
/// the one before to this share or less of the chance at once.
const SPACING_WORTH: f64 = 0.9;

/// What the copy plan knows of one path up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CopyPath {
    /// The path slot.
    pub slot: u8,
    /// Its loss and burstiness.
    pub loss: PathLoss,
    /// Packets it carries a second (what parts spaced copies; 0: unknown,
    /// taken as nothing in between).
    pub per_s: f64,
}

/// One copy the plan adds: the path (an index into the plan's paths) and
/// how long after the packet it leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Copy {
    /// The path, as an index into the plan's paths.
    pub path: u8,
    /// How long after the packet it leaves.
    pub after: Duration,
}

/// What the plan added, and the chance that every copy is lost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// The copies added, in the order they were chosen (the first `n`).
    pub added: [Copy; MAX_PATHS],
    /// How many were added.
    pub n: usize,
    /// The chance that every copy, the mode's and these, is lost.
    pub chance: f64,
}

/// Adds copies to those the mode sent already (`copies`, per path of
/// `paths`, all at once) until the chance that every copy is lost is at
/// most `residual`, or they number `max_total`.
pub fn plan(paths: &[CopyPath], copies: &[u32; MAX_PATHS], residual: f64, max_total: u32) -> Plan {
    let n_paths = paths.len().min(MAX_PATHS);
    let mut count = *copies;
    // Per path: the chance all its copies are lost, when its last leaves.
    let mut lost = [1.0f64; MAX_PATHS];
    let mut last = [Duration::ZERO; MAX_PATHS];
    for (i, p) in paths[..n_paths].iter().enumerate() {
        if count[i] > 0 {
            let at_once = p.loss.lost_after(1.0);
            lost[i] = p.loss.ratio() * at_once.powi(count[i] as i32 - 1);
        }
    }
    let mut plan = Plan {
        added: [Copy::default(); MAX_PATHS],
        n: 0,
        chance: lost[..n_paths].iter().product(),
    };
    let mut total: u32 = count[..n_paths].iter().sum();
    while plan.chance > residual && total < max_total && plan.n < MAX_PATHS {
        // The path whose next copy multiplies the chance by the least.
        let mut best: Option<(usize, f64, Duration)> = None;
        for (i, p) in paths[..n_paths].iter().enumerate() {
            let (factor, after) = next_copy(p, count[i], last[i]);
            // Equal factors (independent loss): the path with fewer
            // copies, so that they spread.
            let better = best.is_none_or(|(b, f, _)| {
                factor < f * (1.0 - 1e-9) || (factor <= f * (1.0 + 1e-9) && count[i] < count[b])
            });
            if better {
                best = Some((i, factor, after));
            }
        }
        // A copy that changes nothing (every path loses everything, or
        // its losses come in endless bursts) is not sent.
        let Some((i, factor, after)) = best.filter(|&(_, f, _)| f < 1.0) else {
            break;
        };
        count[i] += 1;
        lost[i] *= factor;
        last[i] = after;
        plan.added[plan.n] = Copy {
            path: i as u8,
            after,
        };
        plan.n += 1;
        total += 1;
        plan.chance *= factor;
    }
    plan
}

/// What one more copy on `path` (which carries `count`, the last leaving
/// `last` after the packet) multiplies the chance that all are lost by,
/// and when it leaves.
fn next_copy(path: &CopyPath, count: u32, last: Duration) -> (f64, Duration) {
    if count == 0 {
        return (path.loss.ratio(), Duration::ZERO);
    }
    let at_once = path.loss.lost_after(1.0);
    let spaced_at = (last + SPACING).min(MAX_SPREAD);
    let between = (spaced_at - last).as_secs_f64() * path.per_s;
    let spaced = path.loss.lost_after(1.0 + between);
    if spaced_at > last && spaced <= SPACING_WORTH * at_once {
        (spaced, spaced_at)
    } else {
        (at_once, last)
    }
}

/// The path an urgent packet of a striped session takes: the one where
/// it arrives first, of `(path, arrival ms)` (`None` when a path's
/// arrival is not known: then the split decides, as for bulk).
pub fn earliest(arrivals: impl Iterator<Item = (usize, Option<f64>)>) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (path, at) in arrivals {
        let at = at?;
        if best.is_none_or(|(_, b)| at < b) {
            best = Some((path, at));
        }
    }
    best.map(|(path, _)| path)
}

/// The copies a session may add per second beyond its packets (a token
/// bucket): an urgent class that carries bulk (marked EF by mistake, or
/// to jump the queue) is not multiplied.
#[derive(Debug, Clone, Copy)]
pub struct CopyBudget {
    per_s: u32,
    tokens: f64,
    at: Option<Instant>,
}

impl CopyBudget {
    /// Copies a burst may take at once.
    pub const BURST: f64 = 64.0;

    /// A budget of `per_s` copies a second (0: none).
    pub fn new(per_s: u32) -> Self {
        CopyBudget {
            per_s,
            tokens: Self::BURST.min(f64::from(per_s)),
            at: None,
        }
    }

    /// Takes up to `want` copies at `now`; returns how many it may send.
    pub fn take(&mut self, now: Instant, want: usize) -> usize {
        if let Some(at) = self.at {
            let elapsed: Duration = now.since(at);
            let cap = Self::BURST.min(f64::from(self.per_s));
            self.tokens = (self.tokens + elapsed.as_secs_f64() * f64::from(self.per_s)).min(cap);
        }
        self.at = Some(now);
        let granted = (self.tokens.floor() as usize).min(want);
        self.tokens -= granted as f64;
        granted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn path(slot: u8, loss: f64, burst: f64, per_s: f64) -> CopyPath {
        CopyPath {
            slot,
            loss: PathLoss {
                weight: 1,
                loss,
                burst,
            },
            per_s,
        }
    }

    fn on(slot: usize) -> [u32; MAX_PATHS] {
        let mut copies = [0; MAX_PATHS];
        copies[slot] = 1;
        copies
    }

    #[test]
    fn clean_paths_get_no_copy() {
        let paths = [path(0, 0.0, 1.0, 800.0), path(1, 0.0, 1.0, 800.0)];
        assert_eq!(plan(&paths, &on(0), 0.001, 6).n, 0);
    }

    #[test]
    fn two_paths_losing_a_fifth_independently_take_five_copies_at_once() {
        // 0.2^5 = 0.00032 <= 0.001 < 0.2^4 = 0.0016; spacing gains
        // nothing where losses are independent.
        let paths = [path(0, 0.2, 1.25, 800.0), path(1, 0.2, 1.25, 800.0)];
        let p = plan(&paths, &on(1), 0.001, 6);
        assert_eq!(p.n, 4);
        // The first added goes where there was none.
        assert_eq!(p.added[0].path, 0);
        let on_0 = p.added[..4].iter().filter(|c| c.path == 0).count();
        assert!((2..=3).contains(&on_0), "{p:?}");
        assert!(p.added[..4].iter().all(|c| c.after.is_zero()), "{p:?}");
        assert!((p.chance - 0.2f64.powi(5)).abs() < 1e-12);
    }

    #[test]
    fn bursty_paths_space_their_copies_within_the_spread() {
        // Bursts of 5 at 20%: back to back a second copy is lost with the
        // first 80% of the time; 10 ms of 800 packets a second apart,
        // about a quarter.
        let paths = [path(0, 0.2, 5.0, 800.0), path(1, 0.2, 5.0, 800.0)];
        let p = plan(&paths, &on(0), 0.001, 6);
        assert!(p.chance <= 0.001, "{p:?}");
        assert!(p.n <= 5);
        assert!(p.added[..p.n].iter().any(|c| c.after == SPACING));
        assert!(p.added[..p.n].iter().all(|c| c.after <= MAX_SPREAD));
        // Unknown rate: nothing parts them, and back to back copies meet
        // no target within the bound.
        let blind = [path(0, 0.2, 5.0, 0.0), path(1, 0.2, 5.0, 0.0)];
        let b = plan(&blind, &on(0), 0.001, 6);
        assert_eq!(b.n, 5);
        assert!(b.chance > 0.001);
        assert!(b.added[..b.n].iter().all(|c| c.after.is_zero()));
    }

    #[test]
    fn the_bound_holds_where_the_target_cannot_be_met() {
        let paths = [path(0, 0.5, 2.0, 0.0), path(1, 0.5, 2.0, 0.0)];
        assert_eq!(plan(&paths, &on(0), 0.001, 6).n, 5);
    }

    #[test]
    fn bursty_loss_puts_copies_on_the_other_path_first() {
        // Path 0 loses in long bursts and carries nothing to part copies:
        // a second copy there is lost with the first nine times in ten;
        // path 1's independent loss is the better place even at a higher
        // loss.
        let paths = [path(0, 0.1, 10.0, 0.0), path(1, 0.3, 1.0 / 0.7, 0.0)];
        let p = plan(&paths, &on(0), 0.001, 3);
        assert_eq!(p.n, 2);
        assert_eq!((p.added[0].path, p.added[1].path), (1, 1));
    }

    #[test]
    fn an_urgent_packet_takes_the_earliest_path_once_every_one_is_known() {
        let known = [(0, Some(52.0)), (3, Some(11.5)), (5, Some(30.0))];
        assert_eq!(earliest(known.into_iter()), Some(3));
        let one_unknown = [(0, Some(52.0)), (3, None), (5, Some(30.0))];
        assert_eq!(earliest(one_unknown.into_iter()), None);
        assert_eq!(earliest(std::iter::empty()), None);
    }

    #[test]
    fn a_path_that_loses_everything_gets_nothing() {
        let paths = [path(0, 1.0, 1.0, 0.0), path(1, 1.0, 1.0, 0.0)];
        assert_eq!(plan(&paths, &on(0), 0.001, 6).n, 0);
    }

    #[test]
    fn the_budget_refills_with_time_and_caps_a_burst() {
        let mut b = CopyBudget::new(100);
        let t = Instant::ZERO;
        assert_eq!(b.take(t, 100), 64);
        assert_eq!(b.take(t, 1), 0);
        assert_eq!(b.take(t + Duration::from_millis(100), 100), 10);
        assert_eq!(b.take(t + Duration::from_secs(10), 100), 64);
        assert_eq!(CopyBudget::new(0).take(t, 5), 0);
    }

    proptest! {
        /// The plan stops as soon as the target is met (one copy fewer
        /// had not met it), never exceeds the bound or the spread, and
        /// each copy it adds lowers the chance that every copy is lost.
        #[test]
        fn the_plan_meets_the_target_with_the_fewest_copies_it_needs(
            losses in proptest::collection::vec((0.0f64..1.0, 1.0f64..30.0, 0.0f64..2000.0), 1..5),
            first in 0usize..4,
            max_total in 1u32..10,
        ) {
            let paths: Vec<CopyPath> = losses
                .iter()
                .enumerate()
                .map(|(i, &(l, b, r))| path(i as u8, l, b, r))
                .collect();
            let copies = on(first % paths.len());
            let p = plan(&paths, &copies, 0.001, max_total);
            prop_assert!((p.n as u32) < max_total.max(1));
            prop_assert!(p.added[..p.n].iter().all(|c| c.after <= MAX_SPREAD));
            if p.n > 0 {
                let fewer = plan(&paths, &copies, 0.001, p.n as u32);
                prop_assert_eq!(fewer.n, p.n - 1);
                prop_assert!(fewer.chance > 0.001);
                prop_assert!(p.chance < fewer.chance);
            }
            // Short of the target below the bound: no copy helps.
            let none_helps = paths
                .iter()
                .all(|q| q.loss.ratio() >= 1.0 || q.loss.lost_after(1e9) >= 1.0);
            prop_assert!(p.chance <= 0.001 || 1 + p.n as u32 == max_total.max(1) || none_helps);
        }
    }
}
