//! The adaptive mode's choice: among single, mirror, XOR parity and
//! Reed-Solomon codes of every group size the header carries, the one with
//! the least overhead (packets sent per data packet; among equals the
//! smallest group, which rebuilds soonest) whose predicted delivery
//! (`predict.rs`, from each path's measured loss and burstiness) meets the
//! target.
//!
//! Overhead is bounded by the paths up: never more than mirroring on every
//! path, so the repair never asks more of the paths than they carry
//! together. When no candidate meets the target, the one that delivers the
//! most wins, with the least overhead among those that deliver as much.

use super::mode::{Mode, MAX_PATHS, MAX_SHARDS};
use super::predict::{delivery_ratio, PathLoss};

/// Data packets per group the candidates use.
const GROUP_DATA: [u8; 10] = [2, 3, 4, 5, 6, 8, 10, 12, 14, 15];

/// The candidates with `paths_up` paths up, cheapest first.
pub fn candidates(paths_up: usize) -> Vec<Mode> {
    let u = paths_up.clamp(1, MAX_PATHS);
    let mut c = vec![Mode::Single];
    for x in 3..=MAX_SHARDS + 1 {
        c.push(Mode::Parity(x));
    }
    for m in GROUP_DATA {
        for r in 1..=MAX_SHARDS {
            c.push(Mode::Erasure { n: m + r, m });
        }
    }
    for k in 2..=u as u8 {
        c.push(Mode::Mirror(k));
    }
    let bound = u as f64 + 1e-9;
    c.retain(|m| m.overhead(u) <= bound);
    let size = |m: &Mode| {
        let (d, r) = m.group_shape();
        d + r
    };
    c.sort_by(|a, b| {
        a.overhead(u)
            .total_cmp(&b.overhead(u))
            .then(size(a).cmp(&size(b)))
    });
    c
}

/// The cheapest candidate meeting `target` (a delivery ratio) over the
/// paths up, else the most reliable.
pub fn choose(target: f64, paths: &[PathLoss]) -> Mode {
    if paths.is_empty() {
        return Mode::Single;
    }
    let mut best = (Mode::Single, -1.0);
    for c in candidates(paths.len()) {
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

    fn same(loss: f64, n: usize) -> Vec<PathLoss> {
        vec![PathLoss::independent(loss); n]
    }

    #[test]
    fn picks_the_cheapest_mode_that_meets_the_target() {
        assert_eq!(choose(0.999, &same(0.0, 2)), Mode::Single);
        let light = choose(0.999, &same(0.01, 3));
        assert!(
            matches!(light, Mode::Parity(_) | Mode::Erasure { .. }),
            "{light}"
        );
        let heavy = choose(0.999, &same(0.1, 3));
        assert!(delivery_ratio(&heavy, &same(0.1, 3)) >= 0.999, "{heavy}");
        assert!(heavy.overhead(3) > light.overhead(3));
        // No cheaper candidate meets it.
        for c in candidates(3) {
            if c.overhead(3) < heavy.overhead(3) - 1e-9 {
                assert!(delivery_ratio(&c, &same(0.1, 3)) < 0.999, "{c}");
            }
        }
    }

    #[test]
    fn a_fifth_lost_on_two_paths_takes_a_code_near_rate_one_half() {
        let paths = same(0.2, 2);
        let m = choose(0.999, &paths);
        assert!(matches!(m, Mode::Erasure { .. }), "{m}");
        assert!(m.overhead(2) < 1.8, "{m}");
        // Mirroring both paths leaves 4%: far off the target.
        assert!(delivery_ratio(&Mode::Mirror(2), &paths) < 0.97);
    }

    #[test]
    fn an_unreachable_target_takes_the_most_reliable_within_the_paths() {
        let p = same(0.5, 2);
        let best = choose(0.999_999, &p);
        let top = candidates(2)
            .iter()
            .map(|c| delivery_ratio(c, &p))
            .fold(0.0, f64::max);
        assert_eq!(delivery_ratio(&best, &p), top);
        assert!(top < 0.999_999);
        assert!(candidates(2).iter().all(|c| c.overhead(2) <= 2.0));
    }
}
