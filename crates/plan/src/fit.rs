//! The price/throughput fit (WISPR figure 6) and the cost of parallel
//! links (figure 7): a least-squares quadratic of price against capacity
//! over the price table, the cost of reaching a capacity with 1..n
//! parallel links priced by that fit, and the same from the real table
//! (the cheapest set of models that together reach a capacity).

use thiserror::Error;

use crate::prices::Catalogue;

/// A quadratic trend of price against capacity:
/// `price = a + b·x + c·x²`, `x` in Mbit/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuadraticFit {
    /// Constant term (dollars).
    pub a: f64,
    /// Linear term (dollars per Mbit/s).
    pub b: f64,
    /// Quadratic term (dollars per (Mbit/s)²).
    pub c: f64,
    /// Coefficient of determination, `1 − SS_res / SS_tot` (1 when every
    /// price is the same and the fit is exact).
    pub r_squared: f64,
    /// How many models the fit is over.
    pub points: usize,
}

impl QuadraticFit {
    /// The fitted price of a link of `capacity_mbps`.
    pub fn price(&self, capacity_mbps: f64) -> f64 {
        self.a + capacity_mbps * (self.b + capacity_mbps * self.c)
    }
}

/// Why a table cannot be fitted.
#[derive(Debug, Error, PartialEq)]
pub enum FitError {
    /// A quadratic needs three different capacities.
    #[error(
        "the price table has {distinct} distinct capacit{} ({points} models); a quadratic fit needs at least 3",
        if *distinct == 1 { "y" } else { "ies" }
    )]
    TooFewCapacities {
        /// Distinct capacities in the table.
        distinct: usize,
        /// Models in the table.
        points: usize,
    },
    /// A capacity or price is not a finite number.
    #[error("model \"{model}\": capacity or price is not a finite number")]
    NotFinite {
        /// The model's name.
        model: String,
    },
    /// The least-squares system could not be solved.
    #[error("the least-squares system is singular; the capacities are too close together to fit a quadratic")]
    Singular,
}

/// Least-squares quadratic of price against capacity over every model.
///
/// Capacities are centred and scaled internally before the 3x3 normal
/// equations are solved (by elimination with partial pivoting), so tables
/// from 10 Mbit/s to 10 Gbit/s are fitted as accurately as small ones.
pub fn fit_prices(catalogue: &Catalogue) -> Result<QuadraticFit, FitError> {
    let points: Vec<(f64, f64)> = catalogue
        .models
        .iter()
        .map(|m| {
            if m.capacity_mbps.is_finite() && m.price.is_finite() {
                Ok((m.capacity_mbps, m.price))
            } else {
                Err(FitError::NotFinite {
                    model: m.name.clone(),
                })
            }
        })
        .collect::<Result<_, _>>()?;
    let n = points.len();
    let mut xs: Vec<f64> = points.iter().map(|p| p.0).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    if xs.len() < 3 {
        return Err(FitError::TooFewCapacities {
            distinct: xs.len(),
            points: n,
        });
    }
    let nf = n as f64;
    let mean = points.iter().map(|p| p.0).sum::<f64>() / nf;
    let spread = points
        .iter()
        .map(|p| (p.0 - mean).abs())
        .fold(0.0, f64::max);
    if spread <= 0.0 || !spread.is_finite() {
        return Err(FitError::Singular);
    }
    // price = p + q·t + r·t², t = (x − mean) / spread in [−1, 1].
    let mut m = [[0.0f64; 4]; 3];
    for &(x, y) in &points {
        let t = (x - mean) / spread;
        let basis = [1.0, t, t * t];
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] += basis[i] * basis[j];
            }
            m[i][3] += basis[i] * y;
        }
    }
    let [p, q, r] = solve3(m).ok_or(FitError::Singular)?;
    // Back to x: t = (x − μ)/s, so
    // price = p − qμ/s + rμ²/s² + (q/s − 2rμ/s²)·x + (r/s²)·x².
    let s = spread;
    let c = r / (s * s);
    let b = q / s - 2.0 * r * mean / (s * s);
    let a = p - q * mean / s + r * mean * mean / (s * s);
    let y_mean = points.iter().map(|p| p.1).sum::<f64>() / nf;
    let (mut ss_res, mut ss_tot) = (0.0, 0.0);
    for &(x, y) in &points {
        let t = (x - mean) / s;
        let fitted = p + t * (q + t * r);
        ss_res += (y - fitted).powi(2);
        ss_tot += (y - y_mean).powi(2);
    }
    let r_squared = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    Ok(QuadraticFit {
        a,
        b,
        c,
        r_squared,
        points: n,
    })
}

/// Solves a 3x3 system given as an augmented matrix (Gaussian elimination
/// with partial pivoting); None when singular.
fn solve3(mut m: [[f64; 4]; 3]) -> Option<[f64; 3]> {
    let scale = m
        .iter()
        .flat_map(|row| row[..3].iter())
        .map(|v| v.abs())
        .fold(0.0, f64::max);
    if !(scale > 0.0 && scale.is_finite()) {
        return None;
    }
    for col in 0..3 {
        let pivot = (col..3).max_by(|&i, &j| m[i][col].abs().total_cmp(&m[j][col].abs()))?;
        if m[pivot][col].abs() <= scale * 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        let top = m[col];
        for row in m.iter_mut().skip(col + 1) {
            let f = row[col] / top[col];
            for (v, t) in row.iter_mut().zip(top).skip(col) {
                *v -= f * t;
            }
        }
    }
    let mut x = [0.0; 3];
    for row in (0..3).rev() {
        let tail: f64 = (row + 1..3).map(|k| m[row][k] * x[k]).sum();
        x[row] = (m[row][3] - tail) / m[row][row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// Cost of carrying `target_mbps` over `links` parallel links of equal
/// capacity, each priced by the fit: `links × price(target / links)`.
/// Zero links carry nothing: infinite cost.
pub fn parallel_cost(fit: &QuadraticFit, target_mbps: f64, links: u32) -> f64 {
    if links == 0 {
        return f64::INFINITY;
    }
    let n = f64::from(links);
    n * fit.price(target_mbps / n)
}

/// Figure 7's target capacities, Mbit/s (1 to 5 Gbit/s).
pub const FIGURE7_TARGETS_MBPS: [f64; 5] = [1000.0, 2000.0, 3000.0, 4000.0, 5000.0];

/// Figure 7's largest number of parallel links.
pub const FIGURE7_MAX_LINKS: u32 = 8;

/// The cost of each target capacity over 1..=n parallel links (figure 7).
#[derive(Debug, Clone, PartialEq)]
pub struct ParallelTable {
    /// The target capacities, Mbit/s.
    pub targets_mbps: Vec<f64>,
    /// The link counts (columns), 1..=n.
    pub links: Vec<u32>,
    /// `cost[t][k]`: target `t` over `links[k]` parallel links.
    pub cost: Vec<Vec<f64>>,
    /// Per target, the link count with the least cost (the smaller count
    /// on a tie).
    pub best_links: Vec<u32>,
}

/// Figure 7 from a fit: targets 1..5 Gbit/s over 1..=8 parallel links.
pub fn parallel_table(fit: &QuadraticFit) -> ParallelTable {
    parallel_table_for(fit, &FIGURE7_TARGETS_MBPS, FIGURE7_MAX_LINKS)
}

/// The cost of each target over 1..=`max_links` parallel links, with the
/// least-cost count per target (no counts when `max_links` is 0).
pub fn parallel_table_for(
    fit: &QuadraticFit,
    targets_mbps: &[f64],
    max_links: u32,
) -> ParallelTable {
    let links: Vec<u32> = (1..=max_links).collect();
    let cost: Vec<Vec<f64>> = targets_mbps
        .iter()
        .map(|&t| links.iter().map(|&k| parallel_cost(fit, t, k)).collect())
        .collect();
    let best_links = cost
        .iter()
        .map(|row| {
            let mut best: Option<(u32, f64)> = None;
            for (&k, &c) in links.iter().zip(row) {
                if best.is_none_or(|(_, b)| c < b) {
                    best = Some((k, c));
                }
            }
            best.map_or(0, |(k, _)| k)
        })
        .collect();
    ParallelTable {
        targets_mbps: targets_mbps.to_vec(),
        links,
        cost,
        best_links,
    }
}

/// The cheapest multiset of at most `max_links` price-table models that
/// reach `distance_m` and together carry at least `target_mbps`: its cost
/// and `(model index, count)` by model index. None when no such set
/// exists (nothing reaches, or the target is out of reach within
/// `max_links`); an empty set at cost 0 for a target of 0 or less.
///
/// Exact: depth-first over the models that are not dominated (another
/// model reaches, carries as much and costs no more), best price per
/// Mbit/s first, pruned by the fractional bound.
pub fn cheapest_bundle(
    catalogue: &Catalogue,
    target_mbps: f64,
    distance_m: f64,
    max_links: u32,
) -> Option<(f64, Vec<(usize, u32)>)> {
    if target_mbps.is_nan() || target_mbps == f64::INFINITY || distance_m.is_nan() {
        return None;
    }
    if target_mbps <= 0.0 {
        return Some((0.0, Vec::new()));
    }
    let usable: Vec<usize> = catalogue
        .reaching(distance_m)
        .into_iter()
        .filter(|&i| {
            let m = &catalogue.models[i];
            m.capacity_mbps.is_finite()
                && m.capacity_mbps > 0.0
                && m.price.is_finite()
                && m.price >= 0.0
        })
        .collect();
    // Drop dominated models (ties: keep the first in the table).
    let mut models: Vec<usize> = usable
        .iter()
        .copied()
        .filter(|&i| {
            let m = &catalogue.models[i];
            !usable.iter().any(|&j| {
                let o = &catalogue.models[j];
                j != i
                    && o.capacity_mbps >= m.capacity_mbps
                    && o.price <= m.price
                    && (o.capacity_mbps > m.capacity_mbps || o.price < m.price || j < i)
            })
        })
        .collect();
    let ratio = |i: usize| catalogue.models[i].price / catalogue.models[i].capacity_mbps;
    models.sort_by(|&i, &j| ratio(i).total_cmp(&ratio(j)).then(i.cmp(&j)));
    let biggest = models
        .iter()
        .map(|&i| catalogue.models[i].capacity_mbps)
        .fold(0.0, f64::max);
    if biggest * f64::from(max_links) < target_mbps {
        return None;
    }
    let caps: Vec<f64> = models
        .iter()
        .map(|&i| catalogue.models[i].capacity_mbps)
        .collect();
    let prices: Vec<f64> = models.iter().map(|&i| catalogue.models[i].price).collect();
    // Largest capacity among models k.. (for the reachability prune).
    let mut max_cap_from = vec![0.0f64; caps.len() + 1];
    for k in (0..caps.len()).rev() {
        max_cap_from[k] = max_cap_from[k + 1].max(caps[k]);
    }
    let mut search = Search {
        caps: &caps,
        prices: &prices,
        max_cap_from: &max_cap_from,
        counts: vec![0; caps.len()],
        best_cost: f64::INFINITY,
        best: None,
    };
    search.go(0, target_mbps, max_links, 0.0);
    let counts = search.best?;
    let mut bundle: Vec<(usize, u32)> = models
        .iter()
        .zip(&counts)
        .filter(|&(_, &n)| n > 0)
        .map(|(&i, &n)| (i, n))
        .collect();
    bundle.sort_unstable();
    Some((search.best_cost, bundle))
}

/// Branch and bound for [`cheapest_bundle`], over models sorted by price
/// per Mbit/s.
struct Search<'a> {
    caps: &'a [f64],
    prices: &'a [f64],
    max_cap_from: &'a [f64],
    counts: Vec<u32>,
    best_cost: f64,
    best: Option<Vec<u32>>,
}

impl Search<'_> {
    fn go(&mut self, k: usize, need: f64, links_left: u32, cost: f64) {
        if need <= 0.0 {
            if cost < self.best_cost {
                self.best_cost = cost;
                self.best = Some(self.counts.clone());
            }
            return;
        }
        if k == self.caps.len() || links_left == 0 {
            return;
        }
        if self.max_cap_from[k] * f64::from(links_left) < need {
            return;
        }
        // Fractional bound: the rest at the best remaining price per Mbit/s.
        if cost + need * self.prices[k] / self.caps[k] >= self.best_cost {
            return;
        }
        let useful = (need / self.caps[k]).ceil();
        let most = if useful >= f64::from(links_left) {
            links_left
        } else {
            useful as u32
        };
        for n in (0..=most).rev() {
            self.counts[k] = n;
            let nf = f64::from(n);
            self.go(
                k + 1,
                need - nf * self.caps[k],
                links_left - n,
                cost + nf * self.prices[k],
            );
        }
        self.counts[k] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prices::Model;

    fn catalogue(rows: &[(f64, f64, f64)]) -> Catalogue {
        Catalogue {
            models: rows
                .iter()
                .enumerate()
                .map(|(i, &(capacity_mbps, price, reach_km))| Model {
                    name: format!("m{i}"),
                    capacity_mbps,
                    price,
                    reach_m: reach_km * 1000.0,
                    channel_mhz: 20,
                })
                .collect(),
        }
    }

    fn close(x: f64, y: f64, tol: f64) -> bool {
        (x - y).abs() <= tol * (1.0 + y.abs())
    }

    #[test]
    fn a_fit_recovers_known_coefficients_on_noiseless_points() {
        let (a, b, c) = (180.0, 0.35, 0.0011);
        let rows: Vec<(f64, f64, f64)> =
            [100.0, 150.0, 300.0, 450.0, 700.0, 1000.0, 1400.0, 2000.0]
                .iter()
                .map(|&x| (x, a + b * x + c * x * x, 10.0))
                .collect();
        let fit = fit_prices(&catalogue(&rows)).unwrap();
        assert!(close(fit.a, a, 1e-9), "{fit:?}");
        assert!(close(fit.b, b, 1e-9), "{fit:?}");
        assert!(close(fit.c, c, 1e-9), "{fit:?}");
        assert!(close(fit.r_squared, 1.0, 1e-12), "{fit:?}");
        assert_eq!(fit.points, 8);
        assert!(close(fit.price(500.0), a + b * 500.0 + c * 250_000.0, 1e-9));
    }

    #[test]
    fn a_fit_is_accurate_at_large_capacities_too() {
        // Capacities in the tens of Gbit/s: unscaled normal equations
        // would square 1e4..1e5 to the 4th power.
        let (a, b, c) = (-50.0, 2.0, 3e-6);
        let rows: Vec<(f64, f64, f64)> = (0..9)
            .map(|i| 10_000.0 + 5_000.0 * f64::from(i))
            .map(|x| (x, a + b * x + c * x * x, 1.0))
            .collect();
        let fit = fit_prices(&catalogue(&rows)).unwrap();
        assert!(close(fit.a, a, 1e-6), "{fit:?}");
        assert!(close(fit.b, b, 1e-9), "{fit:?}");
        assert!(close(fit.c, c, 1e-9), "{fit:?}");
    }

    #[test]
    fn noise_lowers_r_squared_and_the_fit_minimises_squared_error() {
        let noise = [40.0, -60.0, 25.0, -30.0, 80.0, -50.0, 10.0];
        let rows: Vec<(f64, f64, f64)> = [100.0, 200.0, 300.0, 500.0, 800.0, 1000.0, 1400.0]
            .iter()
            .zip(noise)
            .map(|(&x, e)| (x, 150.0 + 0.4 * x + 0.001 * x * x + e, 10.0))
            .collect();
        let cat = catalogue(&rows);
        let fit = fit_prices(&cat).unwrap();
        assert!(fit.r_squared < 1.0 && fit.r_squared > 0.9, "{fit:?}");
        let sse = |a: f64, b: f64, c: f64| -> f64 {
            rows.iter()
                .map(|&(x, y, _)| (y - (a + b * x + c * x * x)).powi(2))
                .sum()
        };
        let best = sse(fit.a, fit.b, fit.c);
        for (da, db, dc) in [(1.0, 0.0, 0.0), (0.0, 1e-3, 0.0), (0.0, 0.0, 1e-6)] {
            assert!(sse(fit.a + da, fit.b + db, fit.c + dc) > best);
            assert!(sse(fit.a - da, fit.b - db, fit.c - dc) > best);
        }
    }

    #[test]
    fn too_few_capacities_is_an_error_that_says_so() {
        let e = fit_prices(&catalogue(&[
            (100.0, 150.0, 5.0),
            (100.0, 170.0, 9.0),
            (450.0, 600.0, 9.0),
        ]))
        .unwrap_err();
        assert_eq!(
            e,
            FitError::TooFewCapacities {
                distinct: 2,
                points: 3
            }
        );
        assert!(
            e.to_string().contains("2 distinct capacities (3 models)"),
            "{e}"
        );
        let e = fit_prices(&catalogue(&[(100.0, 150.0, 5.0)])).unwrap_err();
        assert!(e.to_string().contains("1 distinct capacity"), "{e}");
        let e = fit_prices(&catalogue(&[
            (100.0, f64::NAN, 5.0),
            (200.0, 1.0, 1.0),
            (300.0, 1.0, 1.0),
        ]))
        .unwrap_err();
        assert_eq!(e, FitError::NotFinite { model: "m0".into() });
    }

    #[test]
    fn parallel_links_are_priced_from_the_fit() {
        let fit = QuadraticFit {
            a: 200.0,
            b: 0.2,
            c: 0.001,
            r_squared: 1.0,
            points: 3,
        };
        // 2 x 500 Mbit/s: 2 x (200 + 100 + 250).
        assert!(close(parallel_cost(&fit, 1000.0, 2), 1100.0, 1e-12));
        assert!(close(parallel_cost(&fit, 1000.0, 1), 1400.0, 1e-12));
        assert_eq!(parallel_cost(&fit, 1000.0, 0), f64::INFINITY);
        let t = parallel_table(&fit);
        assert_eq!(t.links, (1..=8).collect::<Vec<_>>());
        assert_eq!(t.targets_mbps, FIGURE7_TARGETS_MBPS.to_vec());
        // n·a + b·T + c·T²/n is least near n = T·sqrt(c/a).
        for (i, &target) in t.targets_mbps.iter().enumerate() {
            let ideal = target * (fit.c / fit.a).sqrt();
            let best = t.best_links[i];
            let expect = if ideal >= 8.0 {
                8
            } else {
                let (lo, hi) = (ideal.floor().max(1.0) as u32, ideal.ceil().max(1.0) as u32);
                if parallel_cost(&fit, target, lo) <= parallel_cost(&fit, target, hi) {
                    lo
                } else {
                    hi
                }
            };
            assert_eq!(best, expect, "target {target}: {:?}", t.cost[i]);
            assert_eq!(t.cost[i].len(), 8);
        }
        assert_eq!(t.best_links, vec![2, 4, 7, 8, 8]);
        assert!(parallel_table_for(&fit, &[1000.0], 0).best_links == vec![0]);
    }

    /// Every multiset of at most `max_links` reaching models, by brute force.
    fn brute(cat: &Catalogue, target: f64, distance: f64, max_links: u32) -> Option<f64> {
        let reach = cat.reaching(distance);
        let mut counts = vec![0u32; reach.len()];
        let mut best: Option<f64> = None;
        loop {
            if counts.iter().sum::<u32>() <= max_links {
                let (mut cap, mut cost) = (0.0, 0.0);
                for (&m, &n) in reach.iter().zip(&counts) {
                    cap += cat.models[m].capacity_mbps * f64::from(n);
                    cost += cat.models[m].price * f64::from(n);
                }
                if cap >= target && best.is_none_or(|b| cost < b) {
                    best = Some(cost);
                }
            }
            // Next counts (odometer over 0..=max_links each).
            let mut i = 0;
            loop {
                if i == counts.len() {
                    return best;
                }
                counts[i] += 1;
                if counts[i] <= max_links {
                    break;
                }
                counts[i] = 0;
                i += 1;
            }
        }
    }

    #[test]
    fn the_cheapest_bundle_equals_brute_force_on_small_catalogues() {
        use rand_chacha::rand_core::{RngCore, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut uniform =
            |lo: f64, hi: f64| lo + (hi - lo) * (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        for case in 0..300 {
            let n = 1 + case % 6;
            let rows: Vec<(f64, f64, f64)> = (0..n)
                .map(|_| {
                    let cap = (uniform(1.0, 15.0).floor()) * 100.0;
                    let price = (100.0 + 0.3 * cap + 0.001 * cap * cap * uniform(0.5, 1.5)).round();
                    (cap, price, uniform(1.0, 30.0).floor())
                })
                .collect();
            let cat = catalogue(&rows);
            let target = uniform(0.0, 40.0).floor() * 100.0;
            let distance = uniform(0.0, 30_000.0);
            let max_links = (uniform(0.0, 6.0)) as u32;
            let got = cheapest_bundle(&cat, target, distance, max_links);
            let want = brute(&cat, target, distance, max_links);
            match (&got, want) {
                (None, None) => {}
                (Some((cost, bundle)), Some(w)) => {
                    assert!((cost - w).abs() < 1e-9, "case {case}: {got:?} vs {w} over {rows:?}, target {target}");
                    let cap: f64 = bundle.iter().map(|&(m, k)| cat.models[m].capacity_mbps * f64::from(k)).sum();
                    let price: f64 = bundle.iter().map(|&(m, k)| cat.models[m].price * f64::from(k)).sum();
                    let count: u32 = bundle.iter().map(|&(_, k)| k).sum();
                    assert!(cap >= target && count <= max_links && (price - cost).abs() < 1e-9);
                    assert!(bundle.iter().all(|&(m, k)| k > 0 && cat.models[m].reach_m >= distance));
                }
                _ => panic!("case {case}: {got:?} vs {want:?} over {rows:?}, target {target}, {distance} m, {max_links} links"),
            }
        }
    }

    #[test]
    fn bundles_prefer_parallel_cheap_links_when_they_are_cheaper() {
        let cat = catalogue(&[
            (450.0, 500.0, 15.0),
            (1400.0, 2900.0, 30.0),
            (1000.0, 1500.0, 5.0),
        ]);
        // 1.3 Gbit/s at 10 km: 3 x 450 ($1500) beats 1 x 1400 ($2900).
        assert_eq!(
            cheapest_bundle(&cat, 1300.0, 10_000.0, 8),
            Some((1500.0, vec![(0, 3)]))
        );
        // Only two links allowed: the 1400.
        assert_eq!(
            cheapest_bundle(&cat, 1300.0, 10_000.0, 2),
            Some((2900.0, vec![(1, 1)]))
        );
        // At 20 km only the 1400 reaches.
        assert_eq!(
            cheapest_bundle(&cat, 3000.0, 20_000.0, 3),
            Some((8700.0, vec![(1, 3)]))
        );
        assert_eq!(cheapest_bundle(&cat, 3000.0, 40_000.0, 8), None);
        assert_eq!(cheapest_bundle(&cat, 3000.0, 1_000.0, 0), None);
        assert_eq!(cheapest_bundle(&cat, 0.0, 1_000.0, 0), Some((0.0, vec![])));
        assert_eq!(cheapest_bundle(&cat, f64::NAN, 1_000.0, 3), None);
        // A large allowance stays fast (the search is pruned).
        let got = cheapest_bundle(&cat, 50_000.0, 1_000.0, 10_000).unwrap();
        assert!(got.0 > 0.0);
    }
}
