//! Property tests of the graph algorithms (max flow and min cut,
//! node-disjoint paths, simple path counts) on random small multigraphs,
//! each against an independent brute force written here.

use braid_plan::flow::{self, Edge};
use braid_plan::paths;
use proptest::prelude::*;

/// A random multigraph: node count (2..=7) and up to 12 edges between
/// distinct nodes (the same pair may come up more than once: parallel
/// edges), each with an integer capacity of 1..1000 Mbit/s.
fn multigraph() -> impl Strategy<Value = (usize, Vec<Edge>)> {
    (2usize..=7).prop_flat_map(|n| {
        let edge = (0..n, 1..n, 1u32..1000)
            .prop_map(move |(a, shift, c)| (a, (a + shift) % n, f64::from(c)));
        (Just(n), prop::collection::vec(edge, 0..=12))
    })
}

/// A multigraph, a source, and a non-empty set of sinks without it.
fn flow_case() -> impl Strategy<Value = (usize, Vec<Edge>, usize, Vec<usize>)> {
    multigraph().prop_flat_map(|(n, edges)| {
        (0..n).prop_flat_map(move |s| {
            let edges = edges.clone();
            let others: Vec<usize> = (0..n).filter(|&v| v != s).collect();
            proptest::sample::subsequence(others.clone(), 1..=others.len())
                .prop_map(move |sinks| (n, edges.clone(), s, sinks))
        })
    })
}

/// A multigraph and two distinct nodes.
fn pair_case() -> impl Strategy<Value = (usize, Vec<(usize, usize)>, usize, usize)> {
    multigraph().prop_flat_map(|(n, edges)| {
        let plain: Vec<(usize, usize)> = edges.iter().map(|&(a, b, _)| (a, b)).collect();
        (0..n, 1..n).prop_map(move |(s, shift)| (n, plain.clone(), s, (s + shift) % n))
    })
}

/// The minimum over every split of the nodes with `s` on one side and
/// all sinks on the other of the capacity of the edges between the sides.
fn brute_min_cut(n: usize, edges: &[Edge], s: usize, sinks: &[usize]) -> f64 {
    let mut best = f64::INFINITY;
    for mask in 0u32..(1 << n) {
        let on_source = |v: usize| mask & (1 << v) != 0;
        if !on_source(s) || sinks.iter().any(|&k| on_source(k)) {
            continue;
        }
        let crossing: f64 = edges
            .iter()
            .filter(|&&(a, b, _)| on_source(a) != on_source(b))
            .map(|&(_, _, c)| c)
            .sum();
        best = best.min(crossing);
    }
    best
}

/// Every simple path from `s` to `t` as the list of edge indices it uses
/// (parallel edges give different paths), with the nodes it passes.
fn all_paths(edges: &[(usize, usize)], s: usize, t: usize) -> Vec<(Vec<usize>, Vec<usize>)> {
    fn walk(
        edges: &[(usize, usize)],
        t: usize,
        nodes: &mut Vec<usize>,
        used: &mut Vec<usize>,
        out: &mut Vec<(Vec<usize>, Vec<usize>)>,
    ) {
        let here = *nodes.last().expect("a path has a start");
        if here == t {
            out.push((used.clone(), nodes.clone()));
            return;
        }
        for (i, &(a, b)) in edges.iter().enumerate() {
            let next = if a == here {
                b
            } else if b == here {
                a
            } else {
                continue;
            };
            if nodes.contains(&next) {
                continue;
            }
            nodes.push(next);
            used.push(i);
            walk(edges, t, nodes, used, out);
            nodes.pop();
            used.pop();
        }
    }
    let mut out = Vec::new();
    walk(edges, t, &mut vec![s], &mut Vec::new(), &mut out);
    out
}

/// The largest number of paths that pairwise share no edge and no node
/// other than their ends, by exhaustive search.
fn brute_disjoint(edges: &[(usize, usize)], s: usize, t: usize) -> u64 {
    let paths = all_paths(edges, s, t);
    let inner = |p: &(Vec<usize>, Vec<usize>)| -> Vec<usize> {
        p.1.iter().copied().filter(|&v| v != s && v != t).collect()
    };
    let compatible = |x: usize, y: usize| {
        let (px, py) = (&paths[x], &paths[y]);
        px.0.iter().all(|e| !py.0.contains(e)) && inner(px).iter().all(|v| !py.1.contains(v))
    };
    fn grow(
        chosen: &mut Vec<usize>,
        from: usize,
        total: usize,
        compatible: &dyn Fn(usize, usize) -> bool,
        best: &mut usize,
    ) {
        *best = (*best).max(chosen.len());
        if chosen.len() + (total - from) <= *best {
            return;
        }
        for next in from..total {
            if chosen.iter().all(|&c| compatible(c, next)) {
                chosen.push(next);
                grow(chosen, next + 1, total, compatible, best);
                chosen.pop();
            }
        }
    }
    let mut best = 0;
    grow(&mut Vec::new(), 0, paths.len(), &compatible, &mut best);
    best as u64
}

/// Simple paths s to t counted by listing every ordered choice of
/// distinct intermediate nodes (each subset in every order) and
/// multiplying the parallel edges on its hops.
fn brute_count(n: usize, edges: &[(usize, usize)], s: usize, t: usize) -> u64 {
    let mut between = vec![vec![0u64; n]; n];
    for &(a, b) in edges {
        between[a][b] += 1;
        between[b][a] += 1;
    }
    let middle: Vec<usize> = (0..n).filter(|&v| v != s && v != t).collect();
    let mut total = 0u64;
    for mask in 0u32..(1 << middle.len()) {
        let mut order: Vec<usize> = (0..middle.len())
            .filter(|&i| mask & (1 << i) != 0)
            .map(|i| middle[i])
            .collect();
        loop {
            let route: Vec<usize> = std::iter::once(s)
                .chain(order.iter().copied())
                .chain(std::iter::once(t))
                .collect();
            total += route
                .windows(2)
                .map(|w| between[w[0]][w[1]])
                .product::<u64>();
            if !next_permutation(&mut order) {
                break;
            }
        }
    }
    total
}

/// Rearranges into the next permutation in lexicographic order; false
/// (and sorted ascending) after the last.
fn next_permutation(v: &mut [usize]) -> bool {
    let Some(i) = (1..v.len()).rev().find(|&i| v[i - 1] < v[i]) else {
        v.reverse();
        return false;
    };
    let j = (i..v.len())
        .rev()
        .find(|&j| v[j] > v[i - 1])
        .expect("v[i] itself is larger");
    v.swap(i - 1, j);
    v[i..].reverse();
    true
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn max_flow_to_one_sink_is_the_brute_force_min_cut(
        (n, edges, s, sinks) in flow_case()
    ) {
        let t = sinks[0];
        let cut = flow::max_flow(n, &edges, s, &[t]);
        prop_assert_eq!(cut.value_mbps, brute_min_cut(n, &edges, s, &[t]));
        prop_assert!(cut.source_side[s] && !cut.source_side[t]);
        let across: f64 = cut.edges(&edges).iter().map(|&i| edges[i].2).sum();
        prop_assert_eq!(across, cut.value_mbps);
    }

    #[test]
    fn max_flow_to_many_sinks_is_the_brute_force_min_cut(
        (n, edges, s, sinks) in flow_case()
    ) {
        let cut = flow::max_flow(n, &edges, s, &sinks);
        prop_assert_eq!(cut.value_mbps, brute_min_cut(n, &edges, s, &sinks));
        prop_assert!(cut.source_side[s]);
        prop_assert!(sinks.iter().all(|&k| !cut.source_side[k]));
        let across: f64 = cut.edges(&edges).iter().map(|&i| edges[i].2).sum();
        prop_assert_eq!(across, cut.value_mbps);
    }

    #[test]
    fn node_disjoint_paths_match_an_exhaustive_search(
        (n, edges, s, t) in pair_case()
    ) {
        prop_assert_eq!(
            flow::node_disjoint_paths(n, &edges, s, t),
            brute_disjoint(&edges, s, t)
        );
    }

    #[test]
    fn simple_path_counts_match_an_enumeration(
        (n, edges, s, t) in pair_case(),
        cap in 1u64..40,
    ) {
        let exact = brute_count(n, &edges, s, t);
        prop_assert_eq!(
            paths::count_simple_paths(n, &edges, s, t, u64::MAX),
            paths::PathCount { count: exact, capped: false }
        );
        prop_assert_eq!(
            paths::count_simple_paths(n, &edges, s, t, cap),
            paths::PathCount { count: exact.min(cap), capped: exact >= cap }
        );
    }
}

#[test]
fn the_brute_forces_agree_with_hand_counts() {
    // Square 0-1-3, 0-2-3 with a diagonal 1-2 and a doubled 0-1.
    let edges = [(0, 1), (0, 1), (0, 2), (1, 3), (2, 3), (1, 2)];
    // 0-1-3 (x2), 0-2-3, 0-1-2-3 (x2), 0-2-1-3.
    assert_eq!(brute_count(4, &edges, 0, 3), 6);
    assert_eq!(all_paths(&edges, 0, 3).len(), 6);
    assert_eq!(brute_disjoint(&edges, 0, 3), 2);
    let weighted: Vec<Edge> = edges.iter().map(|&(a, b)| (a, b, 10.0)).collect();
    assert_eq!(brute_min_cut(4, &weighted, 0, &[3]), 20.0);
    assert_eq!(brute_min_cut(4, &weighted, 0, &[1, 2]), 30.0);
}
