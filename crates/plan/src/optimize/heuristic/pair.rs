//! One pair's equipment as the heuristic moves it: a change (the pair's
//! new counts), the bundles no other beats (the frontier), and whether
//! two counts differ by one radio.

use crate::design::{Equipment, Problem};

use super::super::bounds::kept_today;
use super::super::goal::EPS_MBPS;

/// Bundles explored per pair re-build at most.
const BUNDLE_NODES: usize = 100_000;

/// One way to equip a pair on its own (its own limits kept).
#[derive(Debug, Clone)]
pub(super) struct Bundle {
    pub(super) counts: Vec<u32>,
    pub(super) cost: f64,
    pub(super) cap: f64,
}

/// A change to one pair: its new counts.
#[derive(Debug, Clone)]
pub(super) struct Change {
    pub(super) pair: usize,
    pub(super) counts: Vec<u32>,
}

/// When `to` is `from` with one radio added (`(None, c)`) or one radio
/// of choice `a` swapped for one of `c` (`(Some(a), c)`).
pub(super) fn one_radio_step(from: &[u32], to: &[u32]) -> Option<(Option<usize>, usize)> {
    let mut up = None;
    let mut down = None;
    for (c, (&x, &y)) in from.iter().zip(to).enumerate() {
        match i64::from(y) - i64::from(x) {
            0 => {}
            1 if up.is_none() => up = Some(c),
            -1 if down.is_none() => down = Some(c),
            _ => return None,
        }
    }
    up.map(|u| (down, u))
}

/// When `to` is `from` with one radio fewer.
pub(super) fn one_radio_less(from: &[u32], to: &[u32]) -> bool {
    let mut down = 0;
    for (&x, &y) in from.iter().zip(to) {
        match i64::from(y) - i64::from(x) {
            0 => {}
            -1 => down += 1,
            _ => return false,
        }
    }
    down == 1
}

/// The bundles of pair `p` that keep its own limits (counts, parallel
/// radios, spectrum of its own) and that no other beats on cost,
/// capacity, spectrum and radios together; cheapest first.
pub(super) fn frontier(pb: &Problem, p: usize) -> Vec<Bundle> {
    let cs = &pb.choices[p];
    let m = pb.net.constraints.max_parallel;
    let most = m.max(kept_today(pb, p));
    let mut all: Vec<(Bundle, f64, u32)> = Vec::new();
    let mut counts = vec![0u32; cs.len()];
    let mut nodes = 0usize;
    #[allow(clippy::too_many_arguments)]
    fn walk(
        cs: &[crate::design::Choice],
        i: usize,
        counts: &mut Vec<u32>,
        radios: u32,
        most: u32,
        m: u32,
        nodes: &mut usize,
        all: &mut Vec<(Bundle, f64, u32)>,
    ) {
        *nodes += 1;
        if *nodes > BUNDLE_NODES {
            return;
        }
        if i == cs.len() {
            let kept: u32 = cs
                .iter()
                .zip(counts.iter())
                .filter(|(c, _)| matches!(c.equipment, Equipment::Existing { .. }))
                .map(|(_, &k)| k)
                .sum();
            let share: f64 = cs
                .iter()
                .zip(counts.iter())
                .map(|(c, &k)| c.band_share * f64::from(k))
                .sum();
            if radios > m.max(kept) || share > 1.0 + 1e-9 {
                return;
            }
            let cost = cs
                .iter()
                .zip(counts.iter())
                .map(|(c, &k)| c.price * f64::from(k))
                .sum();
            let cap = cs
                .iter()
                .zip(counts.iter())
                .map(|(c, &k)| c.capacity_mbps * f64::from(k))
                .sum();
            all.push((
                Bundle {
                    counts: counts.clone(),
                    cost,
                    cap,
                },
                share,
                radios,
            ));
            return;
        }
        let top = cs[i].max_count.min(most.saturating_sub(radios));
        for k in 0..=top {
            counts[i] = k;
            walk(cs, i + 1, counts, radios + k, most, m, nodes, all);
        }
        counts[i] = 0;
    }
    walk(cs, 0, &mut counts, 0, most, m, &mut nodes, &mut all);
    all.sort_by(|a, b| {
        a.0.cost
            .total_cmp(&b.0.cost)
            .then(b.0.cap.total_cmp(&a.0.cap))
            .then(a.1.total_cmp(&b.1))
            .then(a.2.cmp(&b.2))
    });
    let mut kept: Vec<(Bundle, f64, u32)> = Vec::new();
    for (b, share, radios) in all {
        let beaten = kept
            .iter()
            .any(|(k, ks, kr)| k.cap + EPS_MBPS >= b.cap && *ks <= share + 1e-12 && *kr <= radios);
        if !beaten {
            kept.push((b, share, radios));
        }
    }
    kept.into_iter().map(|k| k.0).collect()
}
