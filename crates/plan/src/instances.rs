//! Seeded random small planning instances: a network and a price table
//! small enough that every design can be enumerated, used by the
//! optimiser's tests, its gap measurement (`examples/gap.rs`) and
//! benchmarks. The same seed and size always give the same instance.
//!
//! An instance: a gateway and `sites - 1` other sites scattered over about
//! 10 km; a spanning tree of links plus a few extra links (the existing
//! network, one or two radios of 50-300 Mbit/s per link), a few more pairs
//! with line of sight and no link yet; every non-gateway site is an edge
//! site with probability 0.6 (at least one is). The price table has 2-4
//! models of 100-1400 Mbit/s, roughly quadratic prices (seed 002, section
//! 2.3) with some noise, reaches of 3-15 km, 20 or 40 MHz channels.
//!
//! Also one fixed four-site example ([`EXAMPLE_NETWORK`]) that tests
//! share where a hand-checked answer is wanted.
//! Spectrum is scarce (2-4 channels of 20 MHz, half as many of 40 MHz, at
//! least what today's radios use), at most 2 parallel radios per pair, and
//! in half the instances a per-site radio limit a little above today's.

use std::collections::{BTreeMap, BTreeSet};

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use crate::network::{haversine_m, Constraints, Network, Pair, Radio, Role, Site};
use crate::prices::{Catalogue, Model};

/// Sites an instance has at most (more is clamped to this).
pub const MAX_SITES: usize = 1000;

/// A random instance with `sites` sites (clamped to 2..=[`MAX_SITES`]),
/// deterministic per `seed`. Today's network always keeps its own limits,
/// so [`crate::design::Problem::new`] accepts it.
pub fn small(seed: u64, sites: usize) -> (Network, Catalogue) {
    let n = sites.clamp(2, MAX_SITES);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (positions, sites) = random_sites(&mut rng, n);
    let dist = |a: usize, b: usize| haversine_m(positions[a], positions[b]).max(1.0);
    let (existing, sight) = random_links(&mut rng, n, &dist);
    let pairs = priced_pairs(&mut rng, &existing, &sight, &dist);
    let catalogue = random_catalogue(&mut rng);
    let mut net = Network {
        label: Some(format!("random instance {seed} ({n} sites)")),
        sites,
        pairs,
        gateway: 0,
        constraints: Constraints {
            channels: BTreeMap::from([(20, 24), (40, 11)]),
            separation_deg: 30.0,
            max_links_per_site: None,
            max_parallel: 2,
        },
    };
    scarce_spectrum(&mut rng, &mut net);
    (net, catalogue)
}

/// A price with roughly quadratic growth in capacity, times `noise`.
fn price_of(cap: f64, noise: f64) -> f64 {
    (100.0 + 0.5 * cap + 0.0015 * cap * cap) * noise
}

/// The gateway and `n - 1` sites scattered around it, each an edge site
/// with probability 0.6 (at least one is).
fn random_sites(rng: &mut ChaCha8Rng, n: usize) -> (Vec<(f64, f64)>, Vec<Site>) {
    let positions: Vec<(f64, f64)> = (0..n)
        .map(|i| {
            if i == 0 {
                (39.30, -123.70)
            } else {
                (
                    39.30 + uniform(rng, -0.045, 0.045),
                    -123.70 + uniform(rng, -0.06, 0.06),
                )
            }
        })
        .collect();
    let mut roles: Vec<Role> = (0..n)
        .map(|i| {
            if i == 0 {
                Role::Gateway
            } else if uniform(rng, 0.0, 1.0) < 0.6 {
                Role::Edge
            } else {
                Role::Backhaul
            }
        })
        .collect();
    if !roles.contains(&Role::Edge) {
        roles[n - 1] = Role::Edge;
    }
    let sites: Vec<Site> = (0..n)
        .map(|i| Site {
            id: if i == 0 {
                "gw".to_string()
            } else {
                format!("s{i}")
            },
            label: None,
            role: roles[i],
            position: Some(positions[i]),
            max_links: None,
        })
        .collect();
    (positions, sites)
}

/// Pairs of site indices.
type SitePairs = Vec<(usize, usize)>;

/// The existing network (a tree, each site joining its nearest earlier
/// site or a random one, and a few extra links) and the line-of-sight
/// pairs with no link yet.
fn random_links(
    rng: &mut ChaCha8Rng,
    n: usize,
    dist: &dyn Fn(usize, usize) -> f64,
) -> (SitePairs, SitePairs) {
    let mut linked: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut existing: Vec<(usize, usize)> = Vec::new();
    for i in 1..n {
        let j = if uniform(rng, 0.0, 1.0) < 0.7 {
            (0..i)
                .min_by(|&a, &b| dist(i, a).total_cmp(&dist(i, b)))
                .unwrap_or(0)
        } else {
            below(rng, i)
        };
        linked.insert((j.min(i), j.max(i)));
        existing.push((j, i));
    }
    let extra = below(rng, n / 3 + 1);
    let mut sight: Vec<(usize, usize)> = Vec::new();
    let wanted_sight = 1 + below(rng, n.div_ceil(2));
    // Bounded draws: small networks may run out of unlinked pairs.
    for draw in 0..(20 * n) {
        if existing.len() >= n - 1 + extra && sight.len() >= wanted_sight {
            break;
        }
        let a = below(rng, n);
        let b = below(rng, n);
        if a == b || linked.contains(&(a.min(b), a.max(b))) {
            continue;
        }
        linked.insert((a.min(b), a.max(b)));
        if existing.len() < n - 1 + extra && draw % 2 == 0 {
            existing.push((a, b));
        } else if sight.len() < wanted_sight {
            sight.push((a, b));
        } else {
            existing.push((a, b));
        }
    }
    (existing, sight)
}

/// The pairs: one or two priced radios of 50-300 Mbit/s on each existing
/// link, none on the line-of-sight pairs.
fn priced_pairs(
    rng: &mut ChaCha8Rng,
    existing: &[(usize, usize)],
    sight: &[(usize, usize)],
    dist: &dyn Fn(usize, usize) -> f64,
) -> Vec<Pair> {
    let mut pairs: Vec<Pair> = Vec::new();
    for &(a, b) in existing {
        let cap = 50.0 * (1 + below(rng, 6)) as f64;
        let price = price_of(cap, uniform(rng, 0.85, 1.15)).round();
        let radio = Radio {
            model: None,
            capacity_mbps: cap,
            channel_mhz: 20,
            price: Some(price),
        };
        let count = if uniform(rng, 0.0, 1.0) < 0.2 { 2 } else { 1 };
        pairs.push(Pair {
            a,
            b,
            distance_m: dist(a, b).round(),
            radios: vec![radio; count],
            routing_cost: None,
        });
    }
    for &(a, b) in sight {
        pairs.push(Pair {
            a,
            b,
            distance_m: dist(a, b).round(),
            radios: Vec::new(),
            routing_cost: None,
        });
    }
    pairs
}

/// A price table of 2-4 models picked from a menu of capacities.
fn random_catalogue(rng: &mut ChaCha8Rng) -> Catalogue {
    let menu = [100.0, 200.0, 300.0, 450.0, 650.0, 1000.0, 1400.0];
    let mut picks: Vec<usize> = (0..menu.len()).collect();
    let models = 2 + below(rng, 3);
    for i in 0..models {
        let j = i + below(rng, menu.len() - i);
        picks.swap(i, j);
    }
    picks.truncate(models);
    picks.sort_unstable();
    Catalogue {
        models: picks
            .iter()
            .enumerate()
            .map(|(i, &m)| {
                let cap = menu[m];
                Model {
                    name: format!("M{}", i + 1),
                    capacity_mbps: cap,
                    price: price_of(cap, uniform(rng, 0.8, 1.2)).round(),
                    reach_m: (uniform(rng, 3.0, 15.0) * 10.0).round() * 100.0,
                    channel_mhz: if cap >= 450.0 && uniform(rng, 0.0, 1.0) < 0.5 {
                        40
                    } else {
                        20
                    },
                }
            })
            .collect(),
    }
}

/// Spectrum: a few channels, never fewer than today's radios use in any
/// antenna direction (all today's radios are 20 MHz); in half the
/// instances a per-site radio limit a little above today's.
fn scarce_spectrum(rng: &mut ChaCha8Rng, net: &mut Network) {
    let mut needed = 1u32;
    let mut most_radios = 0u32;
    for s in 0..net.sites.len() {
        let at: Vec<usize> = (0..net.pairs.len())
            .filter(|&p| net.pairs[p].a == s || net.pairs[p].b == s)
            .collect();
        let radios = |ps: &[usize]| -> u32 {
            ps.iter()
                .map(|&p| net.pairs[p].radios.len() as u32)
                .sum::<u32>()
        };
        most_radios = most_radios.max(radios(&at));
        for &p in &at {
            needed = needed.max(radios(&net.sharing_spectrum(s, p)));
        }
    }
    let ch20 = needed.max(2 + below(rng, 3) as u32);
    net.constraints.channels = BTreeMap::from([(20, ch20), (40, (ch20 / 2).max(1))]);
    if uniform(rng, 0.0, 1.0) < 0.5 {
        net.constraints.max_links_per_site = Some(most_radios + 1 + below(rng, 2) as u32);
    }
}

/// A whole number in `0..n` (`n` > 0; 0 when `n` is 0).
fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (rng.next_u64() % n as u64) as usize
    }
}

/// A number in `lo..hi`.
fn uniform(rng: &mut ChaCha8Rng, lo: f64, hi: f64) -> f64 {
    let unit = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    lo + (hi - lo) * unit
}

/// A four-site example for tests: a gateway, a relay and two edge sites
/// in a tree, and one line-of-sight pair (gw-e1) for a new link.
pub const EXAMPLE_NETWORK: &str = r#"{"type":"NetworkGraph","nodes":[
  {"id":"gw","properties":{"role":"gateway"}},
  {"id":"r"},
  {"id":"e1","properties":{"role":"edge"}},
  {"id":"e2","properties":{"role":"edge"}}],
 "links":[{"source":"gw","target":"r","properties":{"capacity_mbps":400,"distance_m":3000}},
          {"source":"r","target":"e1","properties":{"capacity_mbps":100,"distance_m":500}},
          {"source":"r","target":"e2","properties":{"capacity_mbps":100,"distance_m":800}}],
 "plan":{"line_of_sight":[{"source":"gw","target":"e1","distance_m":3200}]}}"#;

/// The example's price table: a 100 Mbit/s model reaching 10 km and a
/// 450 Mbit/s one reaching 20 km.
pub const EXAMPLE_PRICES: &str =
    "model,capacity_mbps,price,max_distance_km\nm1,100,150,10\nm4,450,400,20\n";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::Problem;

    #[test]
    fn instances_are_deterministic_connected_and_within_their_limits() {
        for seed in 0..200 {
            for sites in [2, 3, 5, 8, 12, 30] {
                let (net, cat) = small(seed, sites);
                assert_eq!((net.clone(), cat.clone()), small(seed, sites));
                assert_eq!(net.sites.len(), sites);
                assert!(!net.edges().is_empty());
                assert!((2..=4).contains(&cat.models.len()));
                let problem = Problem::new(&net, &cat, seed % 2 == 0)
                    .unwrap_or_else(|e| panic!("seed {seed}, {sites} sites: {e}"));
                // Connected: every edge site has capacity today.
                assert!(problem.required.iter().all(|&(_, r)| r > 0.0));
            }
        }
        assert_ne!(small(1, 8), small(2, 8));
    }

    #[test]
    fn odd_sizes_are_clamped() {
        assert_eq!(small(3, 0).0.sites.len(), 2);
        assert_eq!(small(3, 1).0.sites.len(), 2);
    }
}
