//! The adaptive mode's choice: from each path's measured loss, the
//! expected delivery ratio of every candidate mode, and the cheapest
//! candidate (fewest packets sent per data packet) that meets the target.
//!
//! Losses are taken as independent between paths and between packets (the
//! measured loss of a path is its links' combined probe loss). Data packets
//! of a group go round-robin over the group's data paths, as the encoder
//! sends them. When no candidate meets the target, the one with the highest
//! delivery ratio wins.

use super::mode::{Mode, MAX_SHARDS};
use super::path::PathState;

/// The candidates, cheapest first.
pub fn candidates(paths_up: usize) -> Vec<Mode> {
    let mut c = vec![Mode::Single];
    for x in [16u8, 12, 8, 6, 4, 3] {
        c.push(Mode::Parity(x));
    }
    for (n, m) in [
        (10u8, 8u8),
        (8, 6),
        (6, 4),
        (5, 3),
        (8, 4),
        (4, 2),
        (6, 3),
        (3, 1),
    ] {
        if m <= MAX_SHARDS {
            c.push(Mode::Erasure { n, m });
        }
    }
    for k in 2..=paths_up.clamp(2, super::mode::MAX_PATHS) as u8 {
        c.push(Mode::Mirror(k));
    }
    c.sort_by(|a, b| a.overhead(paths_up).total_cmp(&b.overhead(paths_up)));
    c
}

/// Expected fraction of data packets delivered under `mode`.
pub fn delivery_ratio(mode: &Mode, paths: &[PathState]) -> f64 {
    let q: Vec<f64> = paths
        .iter()
        .filter(|p| p.up)
        .map(|p| 1.0 - p.loss.clamp(0.0, 1.0))
        .collect();
    if q.is_empty() {
        return 0.0;
    }
    let u = q.len();
    match *mode {
        Mode::Single | Mode::Tree => q[0],
        Mode::Stripe { .. } => {
            let w: Vec<f64> = paths
                .iter()
                .filter(|p| p.up)
                .map(|p| p.weight.max(1) as f64)
                .collect();
            q.iter().zip(&w).map(|(q, w)| q * w).sum::<f64>() / w.iter().sum::<f64>()
        }
        Mode::Mirror(k) => 1.0 - q.iter().take(k as usize).map(|q| 1.0 - q).product::<f64>(),
        Mode::Parity(x) => parity_ratio(&q, x - 1, u - 1),
        Mode::ParityRotating(x) => {
            (0..u).map(|p| parity_ratio(&q, x - 1, p)).sum::<f64>() / u as f64
        }
        Mode::Erasure { n, m } => {
            // Shard i (data first, then repair) goes to path i mod u.
            let shard_q: Vec<f64> = (0..n as usize).map(|i| q[i % u]).collect();
            let mut total = 0.0;
            for j in 0..m as usize {
                let others: Vec<f64> = shard_q
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != j)
                    .map(|(_, &q)| q)
                    .collect();
                total += shard_q[j] + (1.0 - shard_q[j]) * at_least(&others, m as usize);
            }
            total / m as f64
        }
        Mode::Adaptive { .. } => 0.0,
    }
}

/// Data packet j of a parity group on its data path; the parity on path
/// `parity`; the group's data round-robin over the other paths.
fn parity_ratio(q: &[f64], data: u8, parity: usize) -> f64 {
    let u = q.len();
    let data_paths: Vec<usize> = if u == 1 {
        vec![0]
    } else {
        (0..u).filter(|&i| i != parity).collect()
    };
    let dq: Vec<f64> = (0..data as usize)
        .map(|j| q[data_paths[j % data_paths.len()]])
        .collect();
    let qp = q[parity.min(u - 1)];
    let all: f64 = dq.iter().product();
    dq.iter()
        .map(|&qj| qj + (1.0 - qj) * qp * if qj > 0.0 { all / qj } else { 0.0 })
        .sum::<f64>()
        / data as f64
}

/// Probability that at least `m` of independent events with these
/// probabilities happen.
fn at_least(q: &[f64], m: usize) -> f64 {
    // dist[k] = P(exactly k so far)
    let mut dist = vec![0.0; q.len() + 1];
    dist[0] = 1.0;
    for (i, &p) in q.iter().enumerate() {
        for k in (0..=i + 1).rev() {
            let stay = dist[k] * (1.0 - p);
            let come = if k > 0 { dist[k - 1] * p } else { 0.0 };
            dist[k] = stay + come;
        }
    }
    dist[m.min(q.len() + 1)..].iter().sum()
}

/// The cheapest candidate meeting `target`, else the most reliable.
pub fn choose(target: f64, paths: &[PathState]) -> Mode {
    let up = paths.iter().filter(|p| p.up).count();
    let mut best = (Mode::Single, -1.0);
    for c in candidates(up.max(1)) {
        let r = delivery_ratio(&c, paths);
        if r >= target {
            return c;
        }
        if r > best.1 + 1e-12 {
            best = (c, r);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(losses: &[f64]) -> Vec<PathState> {
        losses
            .iter()
            .map(|&loss| PathState {
                up: true,
                weight: 1,
                loss,
            })
            .collect()
    }

    #[test]
    fn formulas_match_simple_cases() {
        let p = paths(&[0.1, 0.1, 0.1]);
        assert!((delivery_ratio(&Mode::Single, &p) - 0.9).abs() < 1e-12);
        assert!((delivery_ratio(&Mode::Mirror(3), &p) - (1.0 - 0.001)).abs() < 1e-12);
        // parity:3 over 3 paths: 2 data on paths 0,1, parity on 2.
        // P(d delivered) = .9 + .1 * .9 * .9
        let want = 0.9 + 0.1 * 0.9 * 0.9;
        assert!((delivery_ratio(&Mode::Parity(3), &p) - want).abs() < 1e-12);
        // erasure 3,1: the data packet or either of two repairs.
        assert!((delivery_ratio(&Mode::Erasure { n: 3, m: 1 }, &p) - 0.999).abs() < 1e-12);
        assert!((at_least(&[0.5, 0.5], 1) - 0.75).abs() < 1e-12);
    }

    #[test]
    fn picks_the_cheapest_mode_that_meets_the_target() {
        assert_eq!(choose(0.999, &paths(&[0.0, 0.0])), Mode::Single);
        let light = choose(0.999, &paths(&[0.01, 0.01, 0.01]));
        assert!(
            matches!(light, Mode::Parity(_) | Mode::Erasure { .. }),
            "{light}"
        );
        let heavy = choose(0.999, &paths(&[0.1, 0.1, 0.1]));
        assert!(
            delivery_ratio(&heavy, &paths(&[0.1, 0.1, 0.1])) >= 0.999,
            "{heavy}"
        );
        assert!(heavy.overhead(3) > light.overhead(3));
        // Unreachable target: the most reliable candidate.
        let p = paths(&[0.5, 0.5]);
        let best = choose(0.999_999, &p);
        let top = candidates(2)
            .iter()
            .map(|c| delivery_ratio(c, &p))
            .fold(0.0, f64::max);
        assert_eq!(delivery_ratio(&best, &p), top);
        assert!(top < 0.999_999);
    }
}
