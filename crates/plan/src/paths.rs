//! Path counts per edge site, and their growth as links are added (seed
//! 002, section 2.4, figure 8): how many simple paths and how many
//! node-disjoint paths each edge site has to the gateway over today's
//! radios, and over today's radios plus random "parallel" links (a site
//! and its upstream neighbour), "cross" links (sites not adjacent today)
//! or both; and the CDFs the report charts them with.
//!
//! Counting simple paths is exponential in the worst case, so every count
//! is bounded twice: by a cap on the count and by a budget of search steps.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thiserror::Error;

use crate::flow;
use crate::network::Network;

/// Search steps (edges followed) one [`count_simple_paths`] may take
/// before it stops and reports a lower bound.
pub const STEP_BUDGET: u64 = 20_000_000;

/// A number of paths, possibly cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathCount {
    /// The paths counted. Exact when `capped` is false; otherwise a lower
    /// bound (the cap itself, or what was counted when the step budget
    /// ran out).
    pub count: u64,
    /// True when counting stopped early: the count reached the cap, or
    /// the search used up [`STEP_BUDGET`].
    pub capped: bool,
}

/// The number of simple paths from `s` to `t` in the undirected
/// multigraph on nodes `0..n` with these edges. Parallel edges are
/// distinct paths: a path through hops with 2 and 3 parallel edges counts
/// 6. Stops once the count reaches `cap` (then `count == cap` and
/// `capped`), or after [`STEP_BUDGET`] search steps (then `count` is what
/// was found so far and `capped`). Self-loops and edges naming nodes
/// outside `0..n` are ignored; a node has no path to itself (0).
pub fn count_simple_paths(
    n: usize,
    edges: &[(usize, usize)],
    s: usize,
    t: usize,
    cap: u64,
) -> PathCount {
    count_simple_paths_within(n, edges, s, t, cap, STEP_BUDGET)
}

/// [`count_simple_paths`] with the step budget (edges followed) as a
/// parameter: a smaller one trades exact counts for a faster answer.
pub fn count_simple_paths_within(
    n: usize,
    edges: &[(usize, usize)],
    s: usize,
    t: usize,
    cap: u64,
    budget: u64,
) -> PathCount {
    if cap == 0 {
        return PathCount {
            count: 0,
            capped: true,
        };
    }
    let exact = |count| PathCount {
        count,
        capped: false,
    };
    if s >= n || t >= n || s == t {
        return exact(0);
    }
    let neighbours = distinct_neighbours(n, edges);
    // Nodes that cannot reach t at all are never worth entering.
    let useful = reachable(&neighbours, t);
    if !useful[s] {
        return exact(0);
    }
    let mut on_path = vec![false; n];
    on_path[s] = true;
    // (node, next neighbour to try, parallel-edge product so far)
    let mut stack: Vec<(usize, usize, u64)> = vec![(s, 0, 1)];
    let mut count = 0u64;
    let mut steps = 0u64;
    while let Some(top) = stack.last_mut() {
        let (v, next, product) = *top;
        let Some(&(w, multiplicity)) = neighbours[v].get(next) else {
            on_path[v] = false;
            stack.pop();
            continue;
        };
        top.1 += 1;
        if on_path[w] || !useful[w] {
            continue;
        }
        steps += 1;
        if steps > budget {
            return PathCount {
                count,
                capped: true,
            };
        }
        let product = product.saturating_mul(multiplicity);
        if w == t {
            count = count.saturating_add(product);
            if count >= cap {
                return PathCount {
                    count: cap,
                    capped: true,
                };
            }
            continue;
        }
        on_path[w] = true;
        stack.push((w, 0, product));
    }
    exact(count)
}

/// Per node, its distinct neighbours (ascending) with the number of
/// parallel edges to each.
fn distinct_neighbours(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<(usize, u64)>> {
    let mut maps: Vec<BTreeMap<usize, u64>> = vec![BTreeMap::new(); n];
    for &(a, b) in edges {
        if a < n && b < n && a != b {
            *maps[a].entry(b).or_insert(0) += 1;
            *maps[b].entry(a).or_insert(0) += 1;
        }
    }
    maps.into_iter().map(|m| m.into_iter().collect()).collect()
}

/// Nodes reachable from `from` (`from` included).
fn reachable(neighbours: &[Vec<(usize, u64)>], from: usize) -> Vec<bool> {
    let mut seen = vec![false; neighbours.len()];
    let Some(first) = seen.get_mut(from) else {
        return seen;
    };
    *first = true;
    let mut stack = vec![from];
    while let Some(v) = stack.pop() {
        for &(w, _) in &neighbours[v] {
            if !seen[w] {
                seen[w] = true;
                stack.push(w);
            }
        }
    }
    seen
}

/// Today's links as edges: one per radio, so a pair with two radios is
/// two parallel edges.
pub fn edges_today(net: &Network) -> Vec<(usize, usize)> {
    net.pairs
        .iter()
        .flat_map(|p| std::iter::repeat_n((p.a, p.b), p.radios.len()))
        .collect()
}

/// One edge site's paths to the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgePaths {
    /// The edge site (index into [`Network::sites`]).
    pub site: usize,
    /// Simple paths to the gateway.
    pub paths: PathCount,
    /// Internally node-disjoint paths to the gateway (parallel edges on
    /// one pair are separate paths).
    pub disjoint: u64,
}

/// Paths from every edge site (in [`Network::edges`] order) to the
/// gateway over `edges` (today's, from [`edges_today`], or grown by
/// [`add_links`]), simple path counts capped at `cap`.
pub fn multiplicity(net: &Network, edges: &[(usize, usize)], cap: u64) -> Vec<EdgePaths> {
    let n = net.sites.len();
    let g = net.gateway;
    let inside: Vec<(usize, usize)> = edges
        .iter()
        .copied()
        .filter(|&(a, b)| a < n && b < n)
        .collect();
    net.edges()
        .into_iter()
        .map(|site| EdgePaths {
            site,
            paths: count_simple_paths(n, &inside, site, g, cap),
            disjoint: if g < n {
                flow::node_disjoint_paths(n, &inside, site, g)
            } else {
                0
            },
        })
        .collect()
}

/// Which links [`add_links`] adds (figure 8's three panels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addition {
    /// A randomly chosen site and its upstream neighbour (its parent in a
    /// breadth-first tree from the gateway over today's links).
    Parallel,
    /// A random pair of sites that are not adjacent today.
    Cross,
    /// As many parallel links as cross links.
    Both,
}

impl Addition {
    /// The word the report uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Addition::Parallel => "parallel",
            Addition::Cross => "cross",
            Addition::Both => "both",
        }
    }
}

/// Today's links plus the added ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Growth {
    /// Today's edges ([`edges_today`]) followed by the added ones.
    pub edges: Vec<(usize, usize)>,
    /// The parallel links added: (site, its upstream neighbour).
    pub parallel: Vec<(usize, usize)>,
    /// The cross links added: (lower index, higher index).
    pub cross: Vec<(usize, usize)>,
    /// True when the cross links were drawn from the network's
    /// line-of-sight pairs; false when there were fewer of those than
    /// links wanted and they were drawn from every non-adjacent pair
    /// (then some may be pairs no radio could actually link). Also false
    /// when no cross links were added.
    pub cross_from_line_of_sight: bool,
}

/// Why links could not be added.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum GrowthError {
    /// Fewer site pairs are not adjacent today than cross links wanted.
    #[error("cannot add {wanted} cross links: only {available} site pairs are not adjacent today")]
    TooFewCrossPairs {
        /// Cross links asked for.
        wanted: usize,
        /// Site pairs not adjacent today.
        available: usize,
    },
    /// No site other than the gateway is linked to the gateway today, so
    /// no parallel link has an upstream end.
    #[error("cannot add {wanted} parallel links: no site is linked to the gateway today")]
    NoUpstream {
        /// Parallel links asked for.
        wanted: usize,
    },
}

/// Today's edges plus `n` added links of `kind` (`n` parallel and `n`
/// cross for [`Addition::Both`]), drawn with a ChaCha8 generator seeded
/// with `seed`: the same inputs always give the same links.
///
/// Parallel: a site chosen uniformly among those linked (directly or not)
/// to the gateway today, joined again to its upstream neighbour: its
/// parent in a breadth-first tree from the gateway over today's links,
/// the lowest-index neighbour one hop nearer the gateway. A site may be
/// chosen more than once.
///
/// Cross: distinct pairs not adjacent today, drawn from the network's
/// line-of-sight pairs when there are at least `n` of them, otherwise
/// from every non-adjacent pair of sites.
pub fn add_links(
    net: &Network,
    kind: Addition,
    n: usize,
    seed: u64,
) -> Result<Growth, GrowthError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let today = edges_today(net);
    let (parallel_wanted, cross_wanted) = match kind {
        Addition::Parallel => (n, 0),
        Addition::Cross => (0, n),
        Addition::Both => (n, n),
    };
    let parallel = parallel_links(net, &today, parallel_wanted, &mut rng)?;
    let (cross, cross_from_line_of_sight) = cross_links(net, &today, cross_wanted, &mut rng)?;
    let mut edges = today;
    edges.extend_from_slice(&parallel);
    edges.extend_from_slice(&cross);
    Ok(Growth {
        edges,
        parallel,
        cross,
        cross_from_line_of_sight,
    })
}

/// Each site's upstream neighbour: its parent in a breadth-first tree
/// from the gateway over `edges` (the lowest-index neighbour one hop
/// nearer); None for the gateway and for sites it does not reach.
pub fn upstream(net: &Network, edges: &[(usize, usize)]) -> Vec<Option<usize>> {
    let n = net.sites.len();
    let neighbours = distinct_neighbours(n, edges);
    let mut hops: Vec<Option<usize>> = vec![None; n];
    let mut parent = vec![None; n];
    let g = net.gateway;
    let Some(first) = hops.get_mut(g) else {
        return parent;
    };
    *first = Some(0);
    let mut queue = VecDeque::from([g]);
    while let Some(v) = queue.pop_front() {
        let here = hops[v].unwrap_or(0);
        for &(w, _) in &neighbours[v] {
            if hops[w].is_none() {
                hops[w] = Some(here + 1);
                queue.push_back(w);
            }
        }
    }
    for v in 0..n {
        if v == g {
            continue;
        }
        if let Some(h) = hops[v] {
            parent[v] = neighbours[v]
                .iter()
                .map(|&(w, _)| w)
                .find(|&w| hops[w].is_some_and(|hw| hw + 1 == h));
        }
    }
    parent
}

fn parallel_links(
    net: &Network,
    today: &[(usize, usize)],
    wanted: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<(usize, usize)>, GrowthError> {
    if wanted == 0 {
        return Ok(Vec::new());
    }
    let candidates: Vec<(usize, usize)> = upstream(net, today)
        .into_iter()
        .enumerate()
        .filter_map(|(site, up)| up.map(|u| (site, u)))
        .collect();
    if candidates.is_empty() {
        return Err(GrowthError::NoUpstream { wanted });
    }
    Ok((0..wanted)
        .map(|_| candidates[below(rng, candidates.len())])
        .collect())
}

fn cross_links(
    net: &Network,
    today: &[(usize, usize)],
    wanted: usize,
    rng: &mut ChaCha8Rng,
) -> Result<(Vec<(usize, usize)>, bool), GrowthError> {
    if wanted == 0 {
        return Ok((Vec::new(), false));
    }
    let n = net.sites.len();
    let adjacent: BTreeSet<(usize, usize)> = today
        .iter()
        .filter(|&&(a, b)| a != b && a < n && b < n)
        .map(|&(a, b)| (a.min(b), a.max(b)))
        .collect();
    let sight: Vec<(usize, usize)> = net
        .pairs
        .iter()
        .filter(|p| !p.exists() && p.a != p.b && p.a < n && p.b < n)
        .map(|p| (p.a.min(p.b), p.a.max(p.b)))
        .filter(|pair| !adjacent.contains(pair))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if sight.len() >= wanted {
        let picked = sample_distinct(rng, sight.len(), wanted)
            .into_iter()
            .map(|i| sight[i])
            .collect();
        return Ok((picked, true));
    }
    let pairs = NonAdjacentPairs::new(n, &adjacent);
    let available = pairs.len();
    if available < wanted as u64 {
        return Err(GrowthError::TooFewCrossPairs {
            wanted,
            available: usize::try_from(available).unwrap_or(usize::MAX),
        });
    }
    let picked = sample_distinct_u64(rng, available, wanted)
        .into_iter()
        .filter_map(|rank| pairs.nth(rank))
        .collect();
    Ok((picked, false))
}

/// Every pair i < j of `0..n` that is not adjacent, in lexicographic
/// order, indexed by rank without listing them (a network of thousands of
/// sites has millions of pairs).
struct NonAdjacentPairs {
    n: usize,
    /// Per i, its adjacent j > i, ascending.
    higher: Vec<Vec<usize>>,
    /// Per i, the number of non-adjacent pairs with a first end below i.
    before: Vec<u64>,
}

impl NonAdjacentPairs {
    fn new(n: usize, adjacent: &BTreeSet<(usize, usize)>) -> Self {
        let mut higher = vec![Vec::new(); n];
        for &(a, b) in adjacent {
            higher[a].push(b);
        }
        let mut before = Vec::with_capacity(n + 1);
        let mut total = 0u64;
        for (i, h) in higher.iter().enumerate() {
            before.push(total);
            total += (n - 1 - i) as u64 - h.len() as u64;
        }
        before.push(total);
        NonAdjacentPairs { n, higher, before }
    }

    fn len(&self) -> u64 {
        self.before.last().copied().unwrap_or(0)
    }

    /// The pair of this rank.
    fn nth(&self, rank: u64) -> Option<(usize, usize)> {
        // The last i whose first rank is at most `rank`.
        let i = self.before.partition_point(|&b| b <= rank).checked_sub(1)?;
        if i >= self.n {
            return None;
        }
        let mut k = rank - self.before[i];
        // Walk the j > i, skipping adjacent ones: the k-th free one.
        let mut j = i + 1;
        for &adj in &self.higher[i] {
            let free_before_adj = (adj - j) as u64;
            if k < free_before_adj {
                break;
            }
            k -= free_before_adj;
            j = adj + 1;
        }
        let j = j + usize::try_from(k).ok()?;
        (j < self.n).then_some((i, j))
    }
}

/// `count` distinct indices below `len`, in draw order (a partial
/// Fisher-Yates shuffle).
fn sample_distinct(rng: &mut ChaCha8Rng, len: usize, count: usize) -> Vec<usize> {
    sample_distinct_u64(rng, len as u64, count)
        .into_iter()
        .filter_map(|i| usize::try_from(i).ok())
        .collect()
}

/// `count` distinct numbers below `len`, in draw order: a partial
/// Fisher-Yates shuffle of `0..len` that stores only the swapped places.
fn sample_distinct_u64(rng: &mut ChaCha8Rng, len: u64, count: usize) -> Vec<u64> {
    let mut swapped: HashMap<u64, u64> = HashMap::new();
    let mut out = Vec::with_capacity(count);
    for k in 0..(count as u64).min(len) {
        let r = k + below_u64(rng, len - k);
        let at_r = swapped.get(&r).copied().unwrap_or(r);
        let at_k = swapped.get(&k).copied().unwrap_or(k);
        swapped.insert(r, at_k);
        out.push(at_r);
    }
    out
}

fn below(rng: &mut ChaCha8Rng, bound: usize) -> usize {
    usize::try_from(below_u64(rng, bound as u64)).unwrap_or(0)
}

/// A uniform number below `bound` (0 when `bound` is 0), by rejection;
/// after 64 rejections (odds below 2^-64) it takes the remainder.
fn below_u64(rng: &mut ChaCha8Rng, bound: u64) -> u64 {
    if bound == 0 {
        return 0;
    }
    // The largest multiple of `bound`: draws below it are uniform mod bound.
    let zone = u64::MAX - u64::MAX % bound;
    let mut x = rng.next_u64();
    for _ in 0..64 {
        if x < zone {
            break;
        }
        x = rng.next_u64();
    }
    x % bound
}

/// The empirical CDF: each distinct value, ascending, with the fraction
/// of values at most it. NaNs are left out (of the values and the
/// fractions' denominator).
pub fn cdf(values: &[f64]) -> Vec<(f64, f64)> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    let total = sorted.len() as f64;
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (i, &v) in sorted.iter().enumerate() {
        let fraction = (i + 1) as f64 / total;
        match out.last_mut() {
            Some(last) if last.0 == v => last.1 = fraction,
            _ => out.push((v, fraction)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{Constraints, Pair, Radio, Role, Site};

    const NO_CAP: u64 = u64::MAX;

    #[test]
    fn a_chain_has_one_path_and_parallel_hops_multiply() {
        assert_eq!(
            count_simple_paths(3, &[(0, 1), (1, 2)], 0, 2, NO_CAP),
            PathCount {
                count: 1,
                capped: false
            }
        );
        // 2 edges on the first hop, 3 on the second.
        let edges = [(0, 1), (1, 0), (1, 2), (2, 1), (1, 2)];
        assert_eq!(count_simple_paths(3, &edges, 0, 2, NO_CAP).count, 6);
    }

    #[test]
    fn a_square_with_a_diagonal_has_its_known_paths() {
        // 0-1-3, 0-2-3, 0-1-2-3, 0-2-1-3 (diagonal 1-2): 4 paths.
        let edges = [(0, 1), (0, 2), (1, 3), (2, 3), (1, 2)];
        assert_eq!(count_simple_paths(4, &edges, 0, 3, NO_CAP).count, 4);
        // Complete graph on 5 nodes: sum over k of 3!/(3-k)! = 1+3+6+6 = 16.
        let k5: Vec<(usize, usize)> = (0..5)
            .flat_map(|a| ((a + 1)..5).map(move |b| (a, b)))
            .collect();
        assert_eq!(count_simple_paths(5, &k5, 0, 4, NO_CAP).count, 16);
    }

    #[test]
    fn unreachable_self_and_bad_nodes_have_no_paths() {
        let edges = [(0, 1), (2, 3), (1, 1), (0, 9)];
        assert_eq!(count_simple_paths(4, &edges, 0, 3, NO_CAP).count, 0);
        assert_eq!(count_simple_paths(4, &edges, 0, 0, NO_CAP).count, 0);
        assert_eq!(count_simple_paths(4, &edges, 0, 7, NO_CAP).count, 0);
        assert_eq!(count_simple_paths(4, &edges, 0, 1, NO_CAP).count, 1);
    }

    #[test]
    fn counting_stops_at_the_cap() {
        let k5: Vec<(usize, usize)> = (0..5)
            .flat_map(|a| ((a + 1)..5).map(move |b| (a, b)))
            .collect();
        assert_eq!(
            count_simple_paths(5, &k5, 0, 4, 10),
            PathCount {
                count: 10,
                capped: true
            }
        );
        assert_eq!(
            count_simple_paths(5, &k5, 0, 4, 16),
            PathCount {
                count: 16,
                capped: true
            }
        );
        assert!(!count_simple_paths(5, &k5, 0, 4, 17).capped);
    }

    #[test]
    fn counting_stops_when_the_step_budget_runs_out() {
        let k5: Vec<(usize, usize)> = (0..5)
            .flat_map(|a| ((a + 1)..5).map(move |b| (a, b)))
            .collect();
        let short = count_simple_paths_within(5, &k5, 0, 4, NO_CAP, 5);
        assert!(short.capped);
        assert!(short.count < 16);
        // A dense graph far beyond any count finishes within the budget.
        let k14: Vec<(usize, usize)> = (0..14)
            .flat_map(|a| ((a + 1)..14).map(move |b| (a, b)))
            .collect();
        let dense = count_simple_paths(14, &k14, 0, 13, NO_CAP);
        assert!(dense.capped);
        assert!(dense.count > 1_000_000);
    }

    fn site(id: &str, role: Role) -> Site {
        Site {
            id: id.to_string(),
            label: None,
            role,
            position: None,
            max_links: None,
        }
    }

    fn pair(a: usize, b: usize, radios: usize) -> Pair {
        Pair {
            a,
            b,
            distance_m: 1000.0,
            radios: vec![
                Radio {
                    model: None,
                    capacity_mbps: 100.0,
                    channel_mhz: 20,
                    price: None,
                };
                radios
            ],
            routing_cost: None,
        }
    }

    /// gw(0) - r1(1) - e2(2); gw - r3(3) - e4(4); r1 - r3 (two radios);
    /// e2 - e4 and gw - e2 line of sight.
    fn small() -> Network {
        Network {
            label: None,
            sites: vec![
                site("gw", Role::Gateway),
                site("r1", Role::Backhaul),
                site("e2", Role::Edge),
                site("r3", Role::Backhaul),
                site("e4", Role::Edge),
            ],
            pairs: vec![
                pair(0, 1, 1),
                pair(1, 2, 1),
                pair(0, 3, 1),
                pair(3, 4, 1),
                pair(1, 3, 2),
                pair(2, 4, 0),
                pair(0, 2, 0),
            ],
            gateway: 0,
            constraints: Constraints::default(),
        }
    }

    #[test]
    fn todays_edges_have_one_per_radio() {
        let mut e = edges_today(&small());
        e.sort();
        assert_eq!(e, vec![(0, 1), (0, 3), (1, 2), (1, 3), (1, 3), (3, 4)]);
    }

    #[test]
    fn edge_sites_get_paths_and_disjoint_paths() {
        let net = small();
        let m = multiplicity(&net, &edges_today(&net), NO_CAP);
        // e2: 2-1-0, and 2-1-3-0 twice (the two radios on r1-r3).
        assert_eq!(m[0].site, 2);
        assert_eq!(m[0].paths.count, 3);
        assert_eq!(m[0].disjoint, 1);
        assert_eq!(m[1].site, 4);
        assert_eq!(m[1].paths.count, 3);
        assert_eq!(m[1].disjoint, 1);
    }

    #[test]
    fn parallel_links_go_to_the_upstream_neighbour() {
        let net = small();
        let ups = upstream(&net, &edges_today(&net));
        assert_eq!(ups, vec![None, Some(0), Some(1), Some(0), Some(3)]);
        for seed in 0..20 {
            let g = add_links(&net, Addition::Parallel, 7, seed).unwrap();
            assert_eq!(g.parallel.len(), 7);
            assert!(g.cross.is_empty());
            assert_eq!(g.edges.len(), 6 + 7);
            for &(s, u) in &g.parallel {
                assert_eq!(ups[s], Some(u), "site {s}");
            }
        }
    }

    #[test]
    fn upstream_ties_go_to_the_lowest_index() {
        // gw(0) - 2 - 1 and gw - 3 - 1: site 1 is two hops from both.
        let mut net = small();
        net.pairs = vec![pair(0, 2, 1), pair(2, 1, 1), pair(0, 3, 1), pair(3, 1, 1)];
        net.pairs.push(pair(3, 4, 1));
        let ups = upstream(&net, &edges_today(&net));
        assert_eq!(ups[1], Some(2));
    }

    #[test]
    fn cross_links_come_from_line_of_sight_when_enough() {
        let net = small();
        let g = add_links(&net, Addition::Cross, 2, 3).unwrap();
        assert!(g.cross_from_line_of_sight);
        let mut cross = g.cross.clone();
        cross.sort();
        assert_eq!(cross, vec![(0, 2), (2, 4)]);
        assert!(g.parallel.is_empty());
        assert_eq!(g.edges.len(), 6 + 2);
    }

    #[test]
    fn cross_links_fall_back_to_any_non_adjacent_pair() {
        let net = small();
        // 10 pairs, 5 adjacent today: 5 free, only 2 of them in sight.
        let g = add_links(&net, Addition::Cross, 3, 1).unwrap();
        assert!(!g.cross_from_line_of_sight);
        assert_eq!(g.cross.len(), 3);
        let free = [(0, 2), (0, 4), (1, 4), (2, 3), (2, 4)];
        assert!(g.cross.iter().all(|p| free.contains(p)), "{:?}", g.cross);
        let all = add_links(&net, Addition::Cross, 5, 1).unwrap();
        let mut cross = all.cross.clone();
        cross.sort();
        assert_eq!(cross, free);
    }

    #[test]
    fn too_many_cross_links_is_an_error_naming_the_numbers() {
        let net = small();
        let err = add_links(&net, Addition::Cross, 6, 1).unwrap_err();
        assert_eq!(
            err,
            GrowthError::TooFewCrossPairs {
                wanted: 6,
                available: 5
            }
        );
        assert!(err.to_string().contains('6') && err.to_string().contains('5'));
    }

    #[test]
    fn growth_is_deterministic_per_seed_and_both_adds_both() {
        let net = small();
        let a = add_links(&net, Addition::Both, 3, 42).unwrap();
        let b = add_links(&net, Addition::Both, 3, 42).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.parallel.len(), 3);
        assert_eq!(a.cross.len(), 3);
        assert_eq!(a.edges.len(), 6 + 6);
        let differ = (0..20)
            .map(|s| add_links(&net, Addition::Both, 3, s).unwrap())
            .any(|g| g != a);
        assert!(differ, "every seed gave the same links");
    }

    #[test]
    fn no_upstream_is_an_error() {
        let mut net = small();
        net.pairs.retain(|p| !p.exists());
        assert_eq!(
            add_links(&net, Addition::Parallel, 1, 0),
            Err(GrowthError::NoUpstream { wanted: 1 })
        );
        assert_eq!(
            add_links(&net, Addition::Parallel, 0, 0).map(|g| g.edges.len()),
            Ok(0)
        );
    }

    #[test]
    fn non_adjacent_pairs_are_ranked_in_order() {
        let adjacent = BTreeSet::from([(0, 1), (0, 3), (1, 2), (2, 3)]);
        let pairs = NonAdjacentPairs::new(5, &adjacent);
        let listed: Vec<_> = (0..pairs.len()).filter_map(|r| pairs.nth(r)).collect();
        let expected: Vec<_> = (0..5)
            .flat_map(|a| ((a + 1)..5).map(move |b| (a, b)))
            .filter(|p| !adjacent.contains(p))
            .collect();
        assert_eq!(listed, expected);
        assert_eq!(pairs.nth(pairs.len()), None);
    }

    #[test]
    fn the_cdf_steps_at_each_distinct_value() {
        assert_eq!(
            cdf(&[3.0, 1.0, 3.0, f64::NAN, 2.0]),
            vec![(1.0, 0.25), (2.0, 0.5), (3.0, 1.0)]
        );
        assert!(cdf(&[]).is_empty());
    }
}
