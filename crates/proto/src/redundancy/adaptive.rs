//! The adaptive mode's choice: among single, stripe, mirror, XOR parity
//! and Reed-Solomon codes of every group size the header carries,
//! interleaved 1, 2, 4 or 8 deep, the one whose predicted delivery
//! (`predict.rs`, from each path's measured loss and burstiness) meets the
//! target and that carries the most data (its predicted goodput, from the
//! paths' weights: what `capacity.rs` measured each path to carry); among
//! equals the one with the least overhead (packets sent per data packet),
//! then the shortest block (groups times depth), which rebuilds soonest.
//! So clean paths are striped (no repair where nothing is lost), and a
//! code over every path wins over one clean path when it carries more.
//! Interleaving is tried only when some path's losses come in bursts:
//! under independent loss it changes nothing but the delay.
//!
//! Overhead is bounded by the paths up: never more than mirroring on every
//! path, so the repair never asks more of the paths than they carry
//! together. When no candidate meets the target, the one that delivers the
//! most wins, with the least overhead among those that deliver as much.
//! Interleaved blocks are offered only when the session fills them within
//! the flush timer at its data rate ([`DataRate`], kept here).

use super::mode::{Mode, MAX_PATHS, MAX_SHARDS};
use super::predict::{delivery_ratio, PathLoss};
use crate::time::Instant;

/// A session's data packets per second, from one path report to the
/// next (half the last interval, half the estimate before): the
/// adaptive mode's groups must fill within the flush timer at it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct DataRate {
    last: Option<(Instant, u64)>,
    pub(super) per_s: Option<f64>,
}

impl DataRate {
    pub(super) fn update(&mut self, now: Instant, data_packets: u64) {
        if let Some((at, before)) = self.last {
            let seconds = now.since(at).as_secs_f64();
            if seconds <= 0.0 {
                return;
            }
            let r = data_packets.saturating_sub(before) as f64 / seconds;
            self.per_s = Some(self.per_s.map_or(r, |old| (old + r) / 2.0));
        }
        self.last = Some((now, data_packets));
    }
}

/// Data packets per group the candidates use.
const GROUP_DATA: [u8; 10] = [2, 3, 4, 5, 6, 8, 10, 12, 14, 15];
/// Interleaving depths the candidates use.
const DEPTHS: [u8; 4] = [1, 2, 4, 8];

/// The candidates with `paths_up` paths up, cheapest first, without
/// interleaving.
pub fn candidates(paths_up: usize) -> Vec<Mode> {
    candidates_to_depth(paths_up, 1)
}

/// The candidates with `paths_up` paths up and erasure interleaved up to
/// `max_depth`, cheapest first (then the shortest block).
pub fn candidates_to_depth(paths_up: usize, max_depth: u8) -> Vec<Mode> {
    let u = paths_up.clamp(1, MAX_PATHS);
    let mut c = if u > 1 {
        vec![Mode::Stripe { pin_flows: false }, Mode::Single]
    } else {
        vec![Mode::Single]
    };
    for x in 3..=MAX_SHARDS + 1 {
        c.push(Mode::Parity(x));
    }
    for m in GROUP_DATA {
        for r in 1..=MAX_SHARDS {
            for depth in DEPTHS.into_iter().filter(|&d| d <= max_depth.max(1)) {
                c.push(Mode::Erasure { n: m + r, m, depth });
            }
        }
    }
    for k in 2..=u as u8 {
        c.push(Mode::Mirror(k));
    }
    let bound = u as f64 + 1e-9;
    c.retain(|m| m.overhead(u) <= bound);
    let size = |m: &Mode| {
        let (d, r) = m.group_shape();
        u32::from(d + r)
    };
    let span = |m: &Mode| size(m) * u32::from(m.depth());
    c.sort_by(|a, b| {
        a.overhead(u)
            .total_cmp(&b.overhead(u))
            .then(span(a).cmp(&span(b)))
            .then(size(a).cmp(&size(b)))
    });
    c
}

/// The cheapest candidate meeting `target` (a delivery ratio) over the
/// paths up, else the most reliable.
pub fn choose(target: f64, paths: &[PathLoss]) -> Mode {
    choose_within(target, paths, MAX_SHARDS)
}

/// [`choose`] with interleaving only for groups of at most `max_data`
/// data packets (at least 2): what the session fills before its flush
/// timer closes a group. A block of interleaved groups closed early sends
/// a group's full repair for each of its few packets, at a cost the
/// formulas do not see; without interleaving that costs one group's
/// repair, and a slow session's packets are the better protected for it.
pub fn choose_within(target: f64, paths: &[PathLoss], max_data: u8) -> Mode {
    if paths.is_empty() {
        return Mode::Single;
    }
    let max_depth = if paths.iter().any(PathLoss::bursty) {
        *DEPTHS.last().expect("some")
    } else {
        1
    };
    let max_data = max_data.clamp(GROUP_DATA[0], MAX_SHARDS);
    let mut best = (Mode::Single, -1.0);
    let mut meets: Option<(Mode, f64)> = None;
    for c in candidates_to_depth(paths.len(), max_depth)
        .into_iter()
        .filter(|c| c.depth() == 1 || c.group_shape().0 <= max_data)
    {
        let carries = goodput(&c, paths);
        if meets.is_some_and(|(_, g)| carries <= g * (1.0 + 1e-9)) {
            continue;
        }
        let r = delivery_ratio(&c, paths);
        if r >= target {
            meets = Some((c, carries));
        } else if meets.is_none() && r > best.1 + 1e-12 {
            best = (c, r);
        }
    }
    meets.map_or(best.0, |(m, _)| m)
}

/// What the adaptive mode sends for the mode it chose: a code (XOR
/// parity or Reed-Solomon, interleaved or not) goes out as the
/// sliding-window code of the same rate (`sliding.rs`), the others as
/// they are. The choice is made on the block codes, whose delivery the
/// formulas know exactly; the sliding code of that rate rebuilds what
/// they rebuild at least as well under independent loss, and under
/// bursts without waiting for a block (measured in the lab at 20% loss
/// in bursts of 5: sliding:2,1 carried 8.51 Mbit/s of TCP where the
/// best interleaved block code, erasure:12,4,8, carried 3.48;
/// docs/performance.md).
///
/// A code chosen interleaved (the paths' losses come in bursts) is sent
/// with the longest span, 64: at 20% loss in bursts of 20 on two paths,
/// sliding:2,1 leaves 1.5% with it and 2.2% with the default 32 (the
/// encoder and decoder alone, as in `tests/loss_models.rs`).
pub fn sent_as(chosen: Mode) -> Mode {
    let span = if chosen.depth() > 1 {
        super::sliding::MAX_SPAN
    } else {
        super::sliding::DEFAULT_SPAN
    };
    match chosen {
        Mode::Erasure { n, m, .. } => Mode::Sliding { n, m, span },
        Mode::Parity(x) | Mode::ParityRotating(x) => Mode::Sliding {
            n: x,
            m: x - 1,
            span,
        },
        other => other,
    }
}

/// Data a mode carries over `paths` (in the paths' weights, which are
/// their measured capacities): one path's for single, the slowest mirrored
/// path's for mirror; parity (not rotating) puts its data on every path
/// but the last and the parity on the last (`placement.rs`), so the less
/// of what the others carry and what the last carries parity for; for
/// the modes that spread by weight (stripe, rotating parity, erasure)
/// the sum over the overhead.
pub fn goodput(mode: &Mode, paths: &[PathLoss]) -> f64 {
    let w = |p: &PathLoss| f64::from(p.weight.max(1));
    match *mode {
        Mode::Single | Mode::Tree | Mode::Adaptive { .. } => paths.first().map_or(0.0, w),
        Mode::Mirror(k) => paths
            .iter()
            .take(k as usize)
            .map(w)
            .fold(f64::INFINITY, f64::min),
        Mode::Parity(x) if paths.len() > 1 => {
            let (last, others) = paths.split_last().expect("two or more");
            let data: f64 = others.iter().map(w).sum();
            data.min(f64::from(x.saturating_sub(1).max(1)) * w(last))
        }
        _ => paths.iter().map(w).sum::<f64>() / mode.overhead(paths.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_sent_as_sliding_codes_of_their_rate_and_the_rest_as_chosen() {
        let sliding = |n, m, span| Mode::Sliding { n, m, span };
        let erasure = |n, m, depth| Mode::Erasure { n, m, depth };
        assert_eq!(sent_as(erasure(27, 15, 1)), sliding(27, 15, 32));
        assert_eq!(sent_as(erasure(26, 14, 8)), sliding(26, 14, 64));
        assert_eq!(sent_as(Mode::Parity(4)), sliding(4, 3, 32));
        assert_eq!(sent_as(Mode::ParityRotating(6)), sliding(6, 5, 32));
        for other in [
            Mode::Single,
            Mode::Stripe { pin_flows: false },
            Mode::Mirror(2),
        ] {
            assert_eq!(sent_as(other), other);
        }
        for n in 2..=30u8 {
            for m in 1..n.min(16) {
                if n - m <= 15 {
                    assert!(sent_as(erasure(n, m, 4)).validate().is_ok(), "{n},{m}");
                }
            }
        }
    }

    fn same(loss: f64, n: usize) -> Vec<PathLoss> {
        vec![PathLoss::independent(loss); n]
    }

    #[test]
    fn picks_the_cheapest_mode_that_meets_the_target() {
        assert_eq!(choose(0.999, &same(0.0, 1)), Mode::Single);
        assert_eq!(
            choose(0.999, &same(0.0, 2)),
            Mode::Stripe { pin_flows: false }
        );
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
    fn parity_on_two_paths_carries_one_paths_data() {
        let two = |a, b| {
            vec![
                PathLoss {
                    weight: a,
                    ..PathLoss::independent(0.005)
                },
                PathLoss {
                    weight: b,
                    ..PathLoss::independent(0.005)
                },
            ]
        };
        // Data on the first, parity on the second.
        assert_eq!(goodput(&Mode::Parity(16), &two(10, 40)), 10.0);
        assert_eq!(goodput(&Mode::Parity(16), &two(40, 1)), 15.0);
        // Under light loss on unequal paths, the choice spreads its data.
        let m = choose(0.999, &two(10, 40));
        assert!(!matches!(m, Mode::Parity(_)), "{m}");
        assert!(goodput(&m, &two(10, 40)) > 40.0, "{m}");
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
    fn bursts_take_interleaving_and_independent_loss_does_not() {
        let bursty = vec![
            PathLoss {
                burst: 5.0,
                ..PathLoss::independent(0.2)
            };
            2
        ];
        let m = choose(0.999, &bursty);
        assert!(m.depth() > 1, "{m}");
        assert!(delivery_ratio(&m, &bursty) >= 0.999, "{m}");
        // Without interleaving the same paths cannot be served as cheaply.
        let flat = candidates(2)
            .into_iter()
            .find(|c| delivery_ratio(c, &bursty) >= 0.999);
        assert!(
            flat.is_none_or(|f| f.overhead(2) > m.overhead(2)),
            "{flat:?} {m}"
        );
        assert_eq!(choose(0.999, &same(0.2, 2)).depth(), 1);
    }

    #[test]
    fn a_slow_session_interleaves_only_groups_it_can_fill() {
        let bursty = vec![
            PathLoss {
                burst: 5.0,
                ..PathLoss::independent(0.2)
            };
            2
        ];
        for max_data in [2, 6, 10, 15] {
            let m = choose_within(0.999, &bursty, max_data);
            assert!(m.depth() == 1 || m.group_shape().0 <= max_data, "{m}");
        }
        assert!(choose_within(0.999, &bursty, 15).depth() > 1);
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

    #[test]
    fn clean_paths_are_striped_and_a_code_over_both_beats_one_clean_path() {
        let clean = same(0.0, 3);
        assert_eq!(choose(0.999, &clean), Mode::Stripe { pin_flows: false });
        // One clean path, one losing 10%: a code over both carries more
        // than the clean path alone.
        let mixed = vec![PathLoss::independent(0.0), PathLoss::independent(0.1)];
        let m = choose(0.999, &mixed);
        assert!(delivery_ratio(&m, &mixed) >= 0.999, "{m}");
        assert!(goodput(&m, &mixed) > goodput(&Mode::Single, &mixed), "{m}");
    }

    proptest::proptest! {
        /// The choice meets the target whenever a candidate does, and no
        /// candidate that meets it carries more.
        #[test]
        fn the_choice_carries_the_most_of_those_meeting_the_target(
            losses in proptest::collection::vec((0.0f64..0.3, 1u32..100), 1..4),
        ) {
            let paths: Vec<PathLoss> = losses
                .iter()
                .map(|&(loss, weight)| PathLoss { weight, ..PathLoss::independent(loss) })
                .collect();
            let target = 0.999;
            let chosen = choose(target, &paths);
            let meeting: Vec<Mode> = candidates(paths.len())
                .into_iter()
                .filter(|c| delivery_ratio(c, &paths) >= target)
                .collect();
            if !meeting.is_empty() {
                proptest::prop_assert!(delivery_ratio(&chosen, &paths) >= target, "{}", chosen);
                for c in &meeting {
                    proptest::prop_assert!(
                        goodput(c, &paths) <= goodput(&chosen, &paths) * (1.0 + 1e-6),
                        "{} carries more than {}", c, chosen
                    );
                }
            }
        }
    }
}
