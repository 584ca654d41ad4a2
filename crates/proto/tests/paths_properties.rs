//! Path computation checked against brute force on small random graphs.

use braid_proto::graph::{Graph, GraphBuilder, NodeIx};
use braid_proto::metric::Metric;
use braid_proto::paths::{entry_tree, shortest_path, DisjointPaths, Disjointness, Path};
use proptest::prelude::*;

/// Up to 7 nodes, random links with random (possibly asymmetric) costs;
/// about one link in five usable one way only, so that some nodes reach
/// others they cannot be reached from (the source among them).
fn small_graph() -> impl Strategy<Value = Graph> {
    (3usize..=7).prop_flat_map(|n| {
        prop::collection::vec(
            (
                0..n as u32,
                0..n as u32,
                1u32..20,
                prop::option::of(1u32..20),
                0u8..5,
            ),
            0..14,
        )
        .prop_map(move |links| {
            let mut b = GraphBuilder::new(n);
            for (x, y, c, back, one_way) in links {
                if x != y {
                    let there = Some(Metric::from_units(c));
                    let back = if one_way == 0 {
                        None
                    } else {
                        back.map(Metric::from_units).or(there)
                    };
                    b.add_link(x, y, there, back);
                }
            }
            b.build()
        })
    })
}

/// Every simple path from s to t, as arc lists.
fn all_simple_paths(g: &Graph, s: NodeIx, t: NodeIx) -> Vec<Path> {
    fn walk(
        g: &Graph,
        v: NodeIx,
        t: NodeIx,
        seen: &mut Vec<NodeIx>,
        arcs: &mut Vec<u32>,
        out: &mut Vec<Vec<u32>>,
    ) {
        if v == t {
            out.push(arcs.clone());
            return;
        }
        for a in g.out_arcs(v) {
            let to = g.arc(a).to;
            if !seen.contains(&to) {
                seen.push(to);
                arcs.push(a);
                walk(g, to, t, seen, arcs, out);
                arcs.pop();
                seen.pop();
            }
        }
    }
    let mut out = Vec::new();
    walk(g, s, t, &mut vec![s], &mut Vec::new(), &mut out);
    out.into_iter()
        .map(|arcs| {
            let mut nodes = vec![s];
            let mut cost = 0;
            for &a in &arcs {
                nodes.push(g.arc(a).to);
                cost += g.arc(a).cost.units() as u64;
            }
            Path {
                nodes,
                arcs,
                cost,
                shared: false,
            }
        })
        .collect()
}

/// The largest disjoint set of at most k paths, and its least total cost.
fn brute_force(g: &Graph, paths: &[Path], k: usize, mode: Disjointness) -> (usize, u64) {
    fn rec(
        g: &Graph,
        paths: &[Path],
        from: usize,
        chosen: &mut Vec<usize>,
        k: usize,
        mode: Disjointness,
        best: &mut (usize, u64),
    ) {
        let cost: u64 = chosen.iter().map(|&i| paths[i].cost).sum();
        if chosen.len() > best.0 || (chosen.len() == best.0 && cost < best.1) {
            *best = (chosen.len(), cost);
        }
        if chosen.len() == k {
            return;
        }
        for i in from..paths.len() {
            if chosen
                .iter()
                .all(|&j| !paths[i].shares_with(g, &paths[j], mode))
            {
                chosen.push(i);
                rec(g, paths, i + 1, chosen, k, mode, best);
                chosen.pop();
            }
        }
    }
    let mut best = (0, 0);
    rec(g, paths, 0, &mut Vec::new(), k, mode, &mut best);
    best
}

/// How much `q` shares with `before`: per link it takes, the paths of
/// `before` that take it too, and (node mode) per node it passes through,
/// the paths of `before` that pass through it.
fn shares(g: &Graph, q: &Path, before: &[Path], mode: Disjointness) -> usize {
    let link = |a: &u32| g.arc(*a).link;
    let links: usize = q
        .arcs
        .iter()
        .map(|a| {
            before
                .iter()
                .filter(|b| b.arcs.iter().any(|x| link(x) == link(a)))
                .count()
        })
        .sum();
    let nodes: usize = match mode {
        Disjointness::Node => q
            .transit()
            .iter()
            .map(|v| before.iter().filter(|b| b.transit().contains(v)).count())
            .sum(),
        Disjointness::Edge => 0,
    };
    links + nodes
}

fn mode() -> impl Strategy<Value = Disjointness> {
    prop_oneof![Just(Disjointness::Node), Just(Disjointness::Edge)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn disjoint_paths_are_the_largest_cheapest_disjoint_set(g in small_graph(), k in 1usize..=4, mode in mode()) {
        let n = g.node_count() as NodeIx;
        let (s, t) = (0, n - 1);
        let all = all_simple_paths(&g, s, t);
        let (size, cost) = brute_force(&g, &all, k, mode);
        let got = DisjointPaths::new(&g, s).unwrap().to(t, k, mode).unwrap();
        let core: Vec<&Path> = got.iter().filter(|p| !p.shared).collect();
        prop_assert_eq!(core.len(), size, "size of the disjoint set");
        prop_assert_eq!(core.iter().map(|p| p.cost).sum::<u64>(), cost, "total cost");
        for (i, a) in core.iter().enumerate() {
            for b in &core[i + 1..] {
                prop_assert!(!a.shares_with(&g, b, mode));
            }
        }
        // Every path is a real simple path from s to t with its true cost.
        for p in &got {
            prop_assert!(all.iter().any(|q| q.arcs == p.arcs && q.cost == p.cost));
        }
        // Extras only when the disjoint set fell short; never a repeat.
        prop_assert!(got.len() <= k);
        prop_assert!(got.iter().all(|p| !p.shared) || size < k);
        for (i, a) in got.iter().enumerate() {
            prop_assert!(got[i + 1..].iter().all(|b| b.arcs != a.arcs));
        }
        // Each extra is the least shared with the paths before it, then
        // the cheapest: no simple path does better (a repeat that does
        // as well ends the extras).
        for (i, p) in got.iter().enumerate().filter(|(_, p)| p.shared) {
            let before = &got[..i];
            let best = all.iter().map(|q| (shares(&g, q, before, mode), q.cost)).min();
            prop_assert_eq!(Some((shares(&g, p, before, mode), p.cost)), best, "extra {}", i);
        }
        // The same input gives the same answer.
        let again = DisjointPaths::new(&g, s).unwrap().to(t, k, mode).unwrap();
        prop_assert_eq!(got, again);
    }

    #[test]
    fn shortest_path_is_optimal(g in small_graph()) {
        let n = g.node_count() as NodeIx;
        for t in 1..n {
            let best = all_simple_paths(&g, 0, t).iter().map(|p| p.cost).min();
            prop_assert_eq!(shortest_path(&g, 0, t).map(|p| p.cost), best);
        }
    }

    #[test]
    fn entry_tree_reaches_every_reachable_destination_along_shortest_paths(
        g in small_graph(), dests in prop::collection::vec(0u32..7, 1..4)
    ) {
        let n = g.node_count() as NodeIx;
        let dests: Vec<NodeIx> = dests.into_iter().filter(|&d| d < n).collect();
        let tree = entry_tree(&g, 0, &dests);
        for &d in &dests {
            match shortest_path(&g, 0, d) {
                None => prop_assert!(tree.unreachable.contains(&d)),
                Some(best) => {
                    // Walk the tree from the entry; find d at shortest cost.
                    let mut frontier = vec![(0u32, 0u64)];
                    let mut found = None;
                    let mut steps = 0;
                    while let Some((v, c)) = frontier.pop() {
                        steps += 1;
                        prop_assert!(steps < 100, "tree has a cycle");
                        if v == d { found = Some(c); }
                        for &w in tree.next_hops.get(&v).into_iter().flatten() {
                            let a = g.find_arc(v, w).expect("next hop is a neighbor");
                            frontier.push((w, c + g.arc(a).cost.units() as u64));
                        }
                    }
                    prop_assert_eq!(found, Some(best.cost));
                }
            }
        }
    }
}

/// On meshes large enough for the extras' estimates to matter (the walk
/// back from the target stops at its budget, the landmarks sit far from
/// most pairs), every extra is still exactly the least shared and then the
/// cheapest: its shares and cost equal a plain Dijkstra's on the same
/// penalised costs.
#[test]
fn extras_on_meshes_match_a_plain_dijkstra() {
    use braid_proto::generate::random_geometric;
    use braid_proto::paths::ShortestPathTree;
    use rand_chacha::rand_core::SeedableRng;
    let mut checked = 0;
    for (seed, one_way) in [(0, false), (1, false), (2, false), (3, true), (4, true)] {
        let mesh = random_geometric(300, 5.0, &mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
        // With `one_way`, every fourth link loses its way back: some
        // nodes then reach targets others cannot, and the landmarks'
        // "cannot reach" answers matter.
        let g = &if one_way {
            every_nth_link_one_way(&mesh.graph, 4)
        } else {
            mesh.graph.clone()
        };
        let penalty = g.total_cost() + 1;
        for mode in [Disjointness::Node, Disjointness::Edge] {
            let source = seed as NodeIx;
            let mut dp = DisjointPaths::new(g, source).unwrap();
            for t in (0..g.node_count() as NodeIx).filter(|&t| t != source && t % 3 == 0) {
                let got = dp.to(t, 5, mode).unwrap();
                for (i, p) in got.iter().enumerate().filter(|(_, p)| p.shared) {
                    let before = &got[..i];
                    let cost = |a: u32| {
                        let arc = g.arc(a);
                        let mut shared = before
                            .iter()
                            .filter(|b| b.arcs.iter().any(|&x| g.arc(x).link == arc.link));
                        let mut n = shared.by_ref().count() as u64;
                        if mode == Disjointness::Node && arc.to != t {
                            n += before
                                .iter()
                                .filter(|b| b.transit().contains(&arc.to))
                                .count() as u64;
                        }
                        arc.cost.units() as u64 + penalty * n
                    };
                    let best =
                        ShortestPathTree::compute_with(g, source, Some(t), cost).dist[t as usize];
                    let have: u64 = p.arcs.iter().map(|&a| cost(a)).sum();
                    assert_eq!(
                        have, best,
                        "seed {seed} (one way: {one_way}), {mode:?}, target {t}, extra {i}"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} extras checked");
}

/// The largest disjoint set of up to `k` paths from `s` to `t` and its
/// least total cost, by the textbook: successive shortest paths on an
/// explicit split graph (in(v) -> out(v) of capacity 1 in node mode, k in
/// edge mode; every arc capacity 1), each path found by Bellman-Ford on
/// the residual costs, no potentials. Slow, and independent of the code
/// it checks.
fn min_cost_flow(g: &Graph, s: NodeIx, t: NodeIx, k: usize, mode: Disjointness) -> (usize, u64) {
    // Residual arcs as (from, to, capacity left, cost), each paired with
    // its reverse at index ^ 1.
    let mut arcs: Vec<(usize, usize, i64, i64)> = Vec::new();
    let add = |arcs: &mut Vec<_>, x: usize, y: usize, cap: i64, cost: i64| {
        arcs.push((x, y, cap, cost));
        arcs.push((y, x, 0, -cost));
    };
    let (node_in, node_out) = (|v: NodeIx| 2 * v as usize, |v: NodeIx| 2 * v as usize + 1);
    for v in 0..g.node_count() as NodeIx {
        if v != s && v != t {
            let cap = if mode == Disjointness::Node {
                1
            } else {
                k as i64
            };
            add(&mut arcs, node_in(v), node_out(v), cap, 0);
        }
        for a in g.out_arcs(v) {
            let arc = g.arc(a);
            add(
                &mut arcs,
                node_out(v),
                node_in(arc.to),
                1,
                arc.cost.units() as i64,
            );
        }
    }
    let states = 2 * g.node_count();
    let (src, sink) = (node_out(s), node_in(t));
    let (mut flow, mut total) = (0, 0i64);
    while flow < k {
        let mut dist = vec![i64::MAX; states];
        let mut via = vec![usize::MAX; states];
        dist[src] = 0;
        for _ in 0..states {
            let mut changed = false;
            for (i, &(x, y, cap, cost)) in arcs.iter().enumerate() {
                if cap > 0 && dist[x] != i64::MAX && dist[x] + cost < dist[y] {
                    dist[y] = dist[x] + cost;
                    via[y] = i;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        if dist[sink] == i64::MAX {
            break;
        }
        let mut y = sink;
        while y != src {
            let i = via[y];
            arcs[i].2 -= 1;
            arcs[i ^ 1].2 += 1;
            y = arcs[i].0;
        }
        flow += 1;
        total += dist[sink];
    }
    (flow, total as u64)
}

/// On meshes of 120 nodes (some with one-way links), for sources and
/// targets all over them, the disjoint set is as large and as cheap as
/// the textbook min-cost flow's: the searches from both ends, their
/// meeting and the capped potentials are checked where paths are long and
/// rounds many, which small graphs do not reach.
#[test]
fn disjoint_sets_on_meshes_match_a_textbook_min_cost_flow() {
    use braid_proto::generate::random_geometric;
    use rand_chacha::rand_core::SeedableRng;
    let mut checked = 0;
    for (seed, degree, one_way) in [(10, 6.0, false), (11, 9.0, false), (12, 7.0, true)] {
        let mesh = random_geometric(
            120,
            degree,
            &mut rand_chacha::ChaCha8Rng::seed_from_u64(seed),
        );
        let g = &if one_way {
            every_nth_link_one_way(&mesh.graph, 4)
        } else {
            mesh.graph.clone()
        };
        for mode in [Disjointness::Node, Disjointness::Edge] {
            for source in [0, 41, 97] {
                let mut dp = DisjointPaths::new(g, source).unwrap();
                for t in (0..g.node_count() as NodeIx).filter(|&t| t != source && t % 7 == 0) {
                    let got = dp.to(t, 6, mode).unwrap();
                    let core: Vec<&Path> = got.iter().filter(|p| !p.shared).collect();
                    let have = (core.len(), core.iter().map(|p| p.cost).sum::<u64>());
                    let want = min_cost_flow(g, source, t, 6, mode);
                    assert_eq!(
                        have, want,
                        "seed {seed}, {mode:?}, {source} -> {t}: (paths, total cost)"
                    );
                    checked += usize::from(want.0 >= 3);
                }
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} requests with three or more disjoint paths"
    );
}

/// `g` with every `n`th link usable from its lower-numbered end only.
fn every_nth_link_one_way(g: &Graph, n: u32) -> Graph {
    let mut b = GraphBuilder::new(g.node_count());
    for v in 0..g.node_count() as NodeIx {
        for a in g.out_arcs(v) {
            let arc = g.arc(a);
            if arc.from > arc.to {
                continue; // added with its other direction
            }
            let back = g.find_arc(arc.to, arc.from).map(|r| g.arc(r).cost);
            let back = if arc.link.is_multiple_of(n) {
                None
            } else {
                back
            };
            b.add_link(arc.from, arc.to, Some(arc.cost), back);
        }
    }
    b.build()
}
