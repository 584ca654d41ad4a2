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
//! A path's copies leave back to back, so under bursty loss they are lost
//! together: on a path of loss `p` whose losses follow a Gilbert chain,
//! `c` copies are all lost with probability `p · q^(c-1)`, with `q` the
//! chance a packet is lost right after a lost one (`p` itself when the
//! loss is independent, up to 1 for long bursts). Paths lose
//! independently of each other. Copies go, one at a time, where they cut
//! the chance that every copy is lost the most: first on paths that carry
//! none yet, then a second on the least lossy, and so on, until that
//! chance is at or below the target or the bound is reached.

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

/// What the copy plan knows of one path up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CopyPath {
    /// The path slot.
    pub slot: u8,
    /// Its loss and burstiness.
    pub loss: PathLoss,
}

/// The chance that `copies` copies sent back to back on `path` are all
/// lost (1 for none).
fn all_lost(path: &PathLoss, copies: u32) -> f64 {
    if copies == 0 {
        return 1.0;
    }
    let (p, after_loss) = path.first_and_after_loss();
    p * after_loss.powi(copies as i32 - 1)
}

/// Adds copies to `copies` (per path of `paths`, those the mode sent
/// already) until the chance that every copy is lost is at most `residual`,
/// or they number `max_total`. Returns the copies added, one path index
/// (into `paths`) per copy, in the order they were chosen.
pub fn plan(
    paths: &[CopyPath],
    copies: &mut [u32; MAX_PATHS],
    residual: f64,
    max_total: u32,
) -> ([u8; MAX_PATHS], usize) {
    let mut added = [0u8; MAX_PATHS];
    let mut n = 0;
    let n_paths = paths.len().min(MAX_PATHS);
    let chance = |copies: &[u32; MAX_PATHS]| -> f64 {
        paths[..n_paths]
            .iter()
            .zip(copies.iter())
            .map(|(p, &c)| all_lost(&p.loss, c))
            .product()
    };
    let mut total: u32 = copies[..n_paths].iter().sum();
    let mut lost = chance(copies);
    while lost > residual && total < max_total && n < MAX_PATHS {
        // The path whose next copy multiplies the chance by the least.
        let mut best: Option<(usize, f64)> = None;
        for (i, p) in paths[..n_paths].iter().enumerate() {
            let before = all_lost(&p.loss, copies[i]);
            let after = all_lost(&p.loss, copies[i] + 1);
            let factor = if before > 0.0 { after / before } else { 1.0 };
            // Equal factors (independent loss): the path with fewer
            // copies, so that they spread.
            let better = best.is_none_or(|(b, f)| {
                factor < f * (1.0 - 1e-9) || (factor <= f * (1.0 + 1e-9) && copies[i] < copies[b])
            });
            if better {
                best = Some((i, factor));
            }
        }
        // A copy that changes nothing (every path loses everything, or
        // its losses come in endless bursts) is not sent.
        let Some((i, factor)) = best.filter(|&(_, f)| f < 1.0) else {
            break;
        };
        copies[i] += 1;
        added[n] = i as u8;
        n += 1;
        total += 1;
        lost *= factor;
    }
    (added, n)
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

    fn path(slot: u8, loss: f64, burst: f64) -> CopyPath {
        CopyPath {
            slot,
            loss: PathLoss {
                weight: 1,
                loss,
                burst,
            },
        }
    }

    #[test]
    fn clean_paths_get_no_copy() {
        let paths = [path(0, 0.0, 1.0), path(1, 0.0, 1.0)];
        let mut copies = [0; MAX_PATHS];
        copies[0] = 1;
        assert_eq!(plan(&paths, &mut copies, 0.001, 6).1, 0);
    }

    #[test]
    fn two_paths_losing_a_fifth_take_five_copies_spread_over_both() {
        // 0.2^5 = 0.00032 <= 0.001 < 0.2^4 = 0.0016.
        let paths = [path(0, 0.2, 1.25), path(1, 0.2, 1.25)];
        let mut copies = [0; MAX_PATHS];
        copies[1] = 1;
        let (added, n) = plan(&paths, &mut copies, 0.001, 6);
        assert_eq!(n, 4);
        // The first added goes where there was none.
        assert_eq!(added[0], 0);
        assert_eq!(copies[0] + copies[1], 5);
        assert!(copies[0].abs_diff(copies[1]) <= 1);
    }

    #[test]
    fn the_bound_holds_where_the_target_cannot_be_met() {
        let paths = [path(0, 0.5, 2.0), path(1, 0.5, 2.0)];
        let mut copies = [0; MAX_PATHS];
        copies[0] = 1;
        let (_, n) = plan(&paths, &mut copies, 0.001, 6);
        assert_eq!(n, 5);
    }

    #[test]
    fn bursty_loss_puts_copies_on_the_other_path_first() {
        // Path 0 loses in long bursts: a second copy there is lost with
        // the first nine times in ten; path 1's independent loss is the
        // better place even at a higher loss.
        let paths = [path(0, 0.1, 10.0), path(1, 0.3, 1.0 / 0.7)];
        let mut copies = [0; MAX_PATHS];
        copies[0] = 1;
        let (added, n) = plan(&paths, &mut copies, 0.001, 3);
        assert_eq!(n, 2);
        assert_eq!(&added[..2], &[1, 1]);
    }

    #[test]
    fn a_path_that_loses_everything_gets_nothing() {
        let paths = [path(0, 1.0, 1.0), path(1, 1.0, 1.0)];
        let mut copies = [0; MAX_PATHS];
        copies[0] = 1;
        assert_eq!(plan(&paths, &mut copies, 0.001, 6).1, 0);
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
        /// The plan stops as soon as the target is met, never exceeds the
        /// bound, and the chance it reaches is what its copies give.
        #[test]
        fn the_plan_meets_the_target_with_the_fewest_copies_it_needs(
            losses in proptest::collection::vec((0.0f64..1.0, 1.0f64..30.0), 1..5),
            first in 0usize..4,
            max_total in 1u32..10,
        ) {
            let paths: Vec<CopyPath> = losses
                .iter()
                .enumerate()
                .map(|(i, &(l, b))| path(i as u8, l, b))
                .collect();
            let mut copies = [0; MAX_PATHS];
            copies[first % paths.len()] = 1;
            let (added, n) = plan(&paths, &mut copies, 0.001, max_total);
            let total: u32 = copies.iter().sum();
            prop_assert_eq!(total as usize, 1 + n);
            prop_assert!(total <= max_total.max(1));
            let chance = |c: &[u32; MAX_PATHS]| -> f64 {
                paths.iter().zip(c).map(|(p, &k)| all_lost(&p.loss, k)).product()
            };
            if n > 0 {
                // One copy fewer (the last chosen) had not met the target.
                let mut fewer = copies;
                fewer[added[n - 1] as usize] -= 1;
                prop_assert!(chance(&fewer) > 0.001);
            }
            if chance(&copies) > 0.001 && total < max_total {
                // Short of the target below the bound: no copy helps.
                for (i, p) in paths.iter().enumerate() {
                    prop_assert!(all_lost(&p.loss, copies[i] + 1) >= all_lost(&p.loss, copies[i]));
                }
            }
        }
    }
}
