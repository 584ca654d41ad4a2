//! Path computation on a 1,000-node random geometric mesh (average degree
//! about 8): Dijkstra to every node, and k = 5 node-disjoint paths from one
//! node to every other node. Figures go in docs/performance.md.

use std::hint::black_box;

use braid_proto::generate::random_geometric;
use braid_proto::paths::{DisjointPaths, Disjointness, ShortestPathTree};
use criterion::{criterion_group, criterion_main, Criterion};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn paths(c: &mut Criterion) {
    let mesh = random_geometric(1000, 8.0, &mut ChaCha8Rng::seed_from_u64(1));
    let g = &mesh.graph;
    let mut dp = DisjointPaths::new(g, 0).unwrap();
    let (mut reachable, mut found, mut disjoint) = (0, 0, 0);
    for t in 1..g.node_count() as u32 {
        let p = dp.to(t, 5, Disjointness::Node).unwrap();
        reachable += usize::from(!p.is_empty());
        found += p.len();
        disjoint += p.iter().filter(|p| !p.shared).count();
    }
    eprintln!(
        "mesh: {} nodes, {} links, average degree {:.2}; from node 0: {} reachable, {} paths (k=5), {} of them node-disjoint",
        g.node_count(),
        g.link_count(),
        g.arc_count() as f64 / g.node_count() as f64,
        reachable,
        found,
        disjoint
    );
    let mut group = c.benchmark_group("mesh1000");
    group.sample_size(20);
    group.bench_function("dijkstra_to_all", |b| {
        b.iter(|| black_box(ShortestPathTree::compute(g, black_box(0))))
    });
    for (name, mode) in [
        ("disjoint_k5_node_to_all", Disjointness::Node),
        ("disjoint_k5_edge_to_all", Disjointness::Edge),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut dp = DisjointPaths::new(g, 0).unwrap();
                let mut found = 0usize;
                for t in 1..g.node_count() as u32 {
                    found += dp.to(t, 5, mode).unwrap().len();
                }
                black_box(found)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, paths);
criterion_main!(benches);
