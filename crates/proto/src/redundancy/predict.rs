//! What a mode delivers: the expected fraction of data packets that reach
//! the egress, directly or rebuilt, when each path loses packets as a
//! Gilbert model (a loss ratio and a mean loss burst; independent loss is
//! the special case) and independently of the other paths.
//!
//! Grouped modes are computed from the same placement the encoder uses
//! (`placement.rs`), averaged over the groups of one placement period:
//! for each path, the joint distribution of (data shards lost, shards
//! lost) among the group's shards on it, from the chain's stationary
//! state; the paths' distributions convolved; a group whose losses exceed
//! its repair loses the data shards it lost. Interleaved groups (erasure
//! with a depth) see the chain every `depth` packets. Exact for full
//! groups under the model (for interleaving, as long as every group of a
//! block puts as many shards on each path); a group the flush timer closes
//! early is not modelled. The sliding-window code under independent loss
//! is `sliding_predict.rs`'s; over paths that lose in bursts it is taken
//! as the block code of its rate, a lower bound.

use super::mode::Mode;
use super::placement::{self, MAX_GROUP};
use super::sliding_predict;

/// How much longer than independent loss's a path's mean loss burst must
/// be for its losses to be taken as bursts (half as long again: the burst
/// fit from a few report intervals is noisy).
const BURSTY: f64 = 0.5;

/// How one path loses packets, and its stripe weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathLoss {
    /// Capacity estimate (any unit, the same for all paths).
    pub weight: u32,
    /// Loss ratio in [0, 1].
    pub loss: f64,
    /// Mean length of a run of lost packets. At or below `1 / (1 - loss)`
    /// (what independent loss gives) the loss is taken as independent.
    pub burst: f64,
}

impl PathLoss {
    /// A path losing `loss` of its packets independently.
    pub fn independent(loss: f64) -> Self {
        PathLoss {
            weight: 1,
            loss,
            burst: 1.0,
        }
    }

    /// The loss ratio in [0, 1] (an unreadable one taken as 1).
    pub fn ratio(&self) -> f64 {
        if self.loss.is_nan() {
            1.0
        } else {
            self.loss.clamp(0.0, 1.0)
        }
    }

    /// Whether its losses come in bursts: its mean burst is more than half
    /// as long again as independent loss's.
    pub fn bursty(&self) -> bool {
        let independent = 1.0 / (1.0 - self.ratio().min(0.999));
        self.ratio() > 0.0 && self.burst.is_finite() && self.burst > independent * (1.0 + BURSTY)
    }

    /// The chance a packet sent `lag` packets after a lost one (1: the
    /// next) is lost too: the loss ratio plus what of the chain's memory
    /// is left after `lag` steps.
    pub fn lost_after(&self, lag: f64) -> f64 {
        let (to_bad, to_good) = self.chain();
        let moving = to_bad + to_good;
        if moving <= 0.0 {
            return 1.0;
        }
        let p = to_bad / moving;
        p + (1.0 - p) * (1.0 - moving).max(0.0).powf(lag.max(1.0))
    }

    /// The Gilbert chain: (good to bad, bad to good) per packet; a packet
    /// is lost exactly when sent in the bad state.
    fn chain(&self) -> (f64, f64) {
        let p = self.ratio();
        if p <= 0.0 {
            return (0.0, 1.0);
        }
        if p >= 1.0 {
            return (1.0, 0.0);
        }
        let independent = 1.0 - p;
        let to_good = if self.burst.is_finite() && self.burst > 1.0 {
            (1.0 / self.burst).min(independent)
        } else {
            independent
        };
        (p * to_good / (1.0 - p), to_good)
    }
}

/// The chain seen every `depth` packets: the same loss ratio, the
/// packet-to-packet correlation `λ = 1 - to_bad - to_good` raised to the
/// power `depth` (interleaving `depth` groups puts a group's consecutive
/// shards on a path `depth` packets apart).
fn every((to_bad, to_good): (f64, f64), depth: u8) -> (f64, f64) {
    let moving = to_bad + to_good;
    if depth <= 1 || moving <= 0.0 {
        return (to_bad, to_good);
    }
    let bad = to_bad / moving;
    let apart = 1.0 - (1.0 - moving).powi(i32::from(depth));
    (bad * apart, (1.0 - bad) * apart)
}

/// Expected fraction of data packets delivered under `mode`, over the
/// paths up (in slot order, as the encoder lists them).
pub fn delivery_ratio(mode: &Mode, paths: &[PathLoss]) -> f64 {
    let Some(first) = paths.first() else {
        return 0.0;
    };
    let q = |p: &PathLoss| 1.0 - p.loss.clamp(0.0, 1.0);
    match *mode {
        Mode::Single | Mode::Tree | Mode::Adaptive { .. } => q(first),
        Mode::Stripe { .. } => {
            let w = |p: &PathLoss| f64::from(p.weight.max(1));
            paths.iter().map(|p| q(p) * w(p)).sum::<f64>() / paths.iter().map(w).sum::<f64>()
        }
        Mode::Mirror(k) => {
            1.0 - paths
                .iter()
                .take(k as usize)
                .map(|p| 1.0 - q(p))
                .product::<f64>()
        }
        Mode::Sliding { n, m, span } if !paths.iter().any(PathLoss::bursty) => {
            1.0 - sliding_predict::residual(n, m, span, mean_loss(paths))
        }
        Mode::Sliding { n, m, .. } => delivery_ratio(&sliding_as_block(n, m), paths),
        Mode::Parity(_) | Mode::ParityRotating(_) | Mode::Erasure { .. } => {
            let weights: Vec<u32> = paths.iter().map(|p| p.weight).collect();
            let groups = placement::period(mode, paths.len());
            (0..groups)
                .map(|g| group_delivery(mode, &placement::plan(mode, &weights, g), paths))
                .sum::<f64>()
                / groups as f64
        }
    }
}

/// The loss of a packet the modes that spread by weight send: the paths'
/// losses weighted by their weights.
fn mean_loss(paths: &[PathLoss]) -> f64 {
    let w = |p: &PathLoss| f64::from(p.weight.max(1));
    paths.iter().map(|p| p.ratio() * w(p)).sum::<f64>() / paths.iter().map(w).sum::<f64>()
}

/// The sliding-window code `sliding:n,m` over paths whose losses come in
/// bursts, as the formulas take it: the erasure code of its rate with the
/// largest group the header carries. A lower bound on what it delivers:
/// a repair packet covers its whole span, where a group's covers only the
/// group. (Under independent loss `sliding_predict.rs` says more
/// closely.)
fn sliding_as_block(n: u8, m: u8) -> Mode {
    let k = (1..=super::mode::MAX_SHARDS)
        .rev()
        .find(|&k| {
            u16::from(m) * u16::from(k) <= u16::from(super::mode::MAX_SHARDS)
                && u16::from(n - m) * u16::from(k) <= u16::from(super::mode::MAX_SHARDS)
        })
        .unwrap_or(1);
    Mode::Erasure {
        n: n * k,
        m: m * k,
        depth: 1,
    }
}

/// The residual loss `mode` leaves: `1 - delivery_ratio`.
pub fn residual_loss(mode: &Mode, paths: &[PathLoss]) -> f64 {
    (1.0 - delivery_ratio(mode, paths)).max(0.0)
}

/// Joint distribution `[data lost][shards lost]`.
type Joint = Vec<Vec<f64>>;

fn group_delivery(mode: &Mode, plan: &placement::GroupPlan, paths: &[PathLoss]) -> f64 {
    let (data, repair) = mode.group_shape();
    let (data, repair) = (data as usize, repair as usize);
    let mut total: Joint = vec![vec![1.0]];
    for (index, path) in paths.iter().enumerate() {
        let mut kinds = [false; MAX_GROUP];
        let mut n = 0;
        for i in 0..plan.len() {
            if plan.shard(i) == index {
                kinds[n] = i < data;
                n += 1;
            }
        }
        if n > 0 {
            let chain = every(path.chain(), mode.depth());
            total = convolve(&total, &path_joint(&kinds[..n], chain));
        }
    }
    let mut lost_data = 0.0;
    for (d, row) in total.iter().enumerate() {
        for (t, &pr) in row.iter().enumerate() {
            if t > repair {
                lost_data += d as f64 * pr;
            }
        }
    }
    1.0 - lost_data / data as f64
}

/// Losses among consecutive packets on one path (`true` = a data shard).
fn path_joint(kinds: &[bool], (to_bad, to_good): (f64, f64)) -> Joint {
    let n = kinds.len();
    let data = kinds.iter().filter(|&&k| k).count();
    let stationary_bad = if to_bad + to_good > 0.0 {
        to_bad / (to_bad + to_good)
    } else {
        0.0
    };
    // [state][data lost][lost]; state 0 good, 1 bad.
    let mut now = [
        vec![vec![0.0; n + 1]; data + 1],
        vec![vec![0.0; n + 1]; data + 1],
    ];
    now[0][0][0] = 1.0 - stationary_bad;
    now[1][0][0] = stationary_bad;
    for (i, &is_data) in kinds.iter().enumerate() {
        // The packet is sent in the current state: lost in bad.
        let mut after = [
            vec![vec![0.0; n + 1]; data + 1],
            vec![vec![0.0; n + 1]; data + 1],
        ];
        for d in 0..=data {
            for t in 0..=i {
                let good = now[0][d][t];
                let bad = now[1][d][t];
                if good == 0.0 && bad == 0.0 {
                    continue;
                }
                let (d2, t2) = (d + usize::from(is_data), t + 1);
                // Received in good, then the chain moves.
                after[0][d][t] += good * (1.0 - to_bad);
                after[1][d][t] += good * to_bad;
                // Lost in bad, then the chain moves.
                after[0][d2][t2] += bad * to_good;
                after[1][d2][t2] += bad * (1.0 - to_good);
            }
        }
        now = after;
    }
    (0..=data)
        .map(|d| (0..=n).map(|t| now[0][d][t] + now[1][d][t]).collect())
        .collect()
}

fn convolve(a: &Joint, b: &Joint) -> Joint {
    let (ad, at) = (a.len(), a[0].len());
    let (bd, bt) = (b.len(), b[0].len());
    let mut out = vec![vec![0.0; at + bt - 1]; ad + bd - 1];
    for (d1, row1) in a.iter().enumerate() {
        for (t1, &p1) in row1.iter().enumerate() {
            if p1 == 0.0 {
                continue;
            }
            for (d2, row2) in b.iter().enumerate() {
                for (t2, &p2) in row2.iter().enumerate() {
                    out[d1 + d2][t1 + t2] += p1 * p2;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(loss: f64, n: usize) -> Vec<PathLoss> {
        vec![PathLoss::independent(loss); n]
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn formulas_match_simple_cases() {
        let p = same(0.1, 3);
        assert!(close(delivery_ratio(&Mode::Single, &p), 0.9));
        assert!(close(delivery_ratio(&Mode::Mirror(3), &p), 0.999));
        // parity:3 over 3 paths: 2 data on paths 0 and 1, parity on 2; a
        // lost data packet comes back when the other two arrive.
        let want = 0.9 + 0.1 * 0.9 * 0.9;
        assert!(close(delivery_ratio(&Mode::Parity(3), &p), want));
        // erasure 3,1: the data packet or either of two repairs.
        assert!(close(
            delivery_ratio(
                &Mode::Erasure {
                    n: 3,
                    m: 1,
                    depth: 1
                },
                &p
            ),
            0.999
        ));
    }

    #[test]
    fn one_path_rs_matches_the_binomial_tail() {
        // erasure 6,4 on one path at 20%: data j is lost for good when it
        // and at least 2 of the 5 others are lost.
        let p: f64 = 0.2;
        let c = |n: u64, k: u64| (0..k).fold(1.0, |a, i| a * (n - i) as f64 / (i + 1) as f64);
        let at_least_2_of_5: f64 = (2..=5)
            .map(|k| c(5, k) * p.powi(k as i32) * (1.0 - p).powi(5 - k as i32))
            .sum();
        let want = 1.0 - p * at_least_2_of_5;
        let got = delivery_ratio(
            &Mode::Erasure {
                n: 6,
                m: 4,
                depth: 1,
            },
            &same(p, 1),
        );
        assert!(close(got, want), "{got} {want}");
    }

    #[test]
    fn bursts_hurt_a_code_and_not_a_single_path() {
        let calm = PathLoss::independent(0.2);
        let bursty = PathLoss { burst: 5.0, ..calm };
        let code = Mode::Erasure {
            n: 24,
            m: 12,
            depth: 1,
        };
        let a = residual_loss(&code, &[calm, calm]);
        let b = residual_loss(&code, &[bursty, bursty]);
        assert!(b > 10.0 * a, "{a} {b}");
        assert!(close(
            delivery_ratio(&Mode::Single, &[bursty]),
            delivery_ratio(&Mode::Single, &[calm])
        ));
        // A burst at or under independent loss's is independent loss.
        let under = PathLoss { burst: 1.1, ..calm };
        assert!(close(residual_loss(&code, &[under, under]), a));
    }

    #[test]
    fn interleaving_turns_bursts_toward_independent_loss() {
        let calm = PathLoss::independent(0.2);
        let bursty = PathLoss { burst: 5.0, ..calm };
        let at = |depth| {
            let code = Mode::Erasure {
                n: 18,
                m: 12,
                depth,
            };
            residual_loss(&code, &[bursty, bursty])
        };
        let independent = residual_loss(
            &Mode::Erasure {
                n: 18,
                m: 12,
                depth: 1,
            },
            &[calm, calm],
        );
        // Deeper is better, and never better than independent loss.
        assert!(
            at(1) > at(2) && at(2) > at(4) && at(4) > at(8),
            "{} {} {} {}",
            at(1),
            at(2),
            at(4),
            at(8)
        );
        assert!(at(8) > independent);
        // Two steps of a chain are one step of the chain squared.
        let (b, g) = bursty.chain();
        let lambda = 1.0 - b - g;
        let (b2, g2) = every((b, g), 2);
        assert!(close(1.0 - b2 - g2, lambda * lambda));
        assert!(close(b2 / (b2 + g2), 0.2));
        // Independent loss has nothing to gain.
        assert!(close(
            residual_loss(
                &Mode::Erasure {
                    n: 18,
                    m: 12,
                    depth: 8
                },
                &[calm, calm]
            ),
            independent
        ));
    }

    #[test]
    fn lossless_and_dead_paths_are_the_limits() {
        let code = Mode::Erasure {
            n: 8,
            m: 4,
            depth: 1,
        };
        assert!(close(delivery_ratio(&code, &same(0.0, 2)), 1.0));
        assert!(close(delivery_ratio(&code, &same(1.0, 2)), 0.0));
        // One dead path of two: half the shards arrive, just enough.
        let half = [PathLoss::independent(0.0), PathLoss::independent(1.0)];
        assert!(close(delivery_ratio(&code, &half), 1.0));
        assert_eq!(delivery_ratio(&code, &[]), 0.0);
    }
}
