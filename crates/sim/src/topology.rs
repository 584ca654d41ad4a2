//! The topologies a scenario names and how each run builds one: a line, a
//! grid, parallel paths, random geometric and city meshes, a WISP, or
//! named links (written in the scenario or read from NetJSON); their node
//! names, links and (for the city mesh) link lengths; and their split into
//! routing areas.

use braid_proto::generate::random_geometric;
use rand_chacha::rand_core::RngCore;
use rand_chacha::ChaCha8Rng;

/// A topology generator.
#[derive(Debug, Clone, PartialEq)]
pub enum TopologySpec {
    /// n1 - n2 - ... - nN.
    Line { nodes: usize },
    /// A width × height grid.
    Grid { width: usize, height: usize },
    /// `paths` node-disjoint paths of `hops` hops between `s` and `t`.
    Parallel { paths: usize, hops: usize },
    /// A random geometric mesh (placement from the run's seed).
    Geometric { nodes: usize, degree: f64 },
    /// A WISP: a gateway `gw`, a random tree of relay towers `r1..`, edge
    /// sites `e1..` hanging off relays, and `cross` extra relay-to-relay
    /// links (Mendocino-like by default: 64 nodes, 41 edges).
    Wisp {
        nodes: usize,
        edges: usize,
        cross: usize,
    },
    /// A CityMesh-like rooftop mesh: a random geometric mesh whose links
    /// lose more the longer they are, up to `max_loss` at the edge of range.
    CityMesh {
        nodes: usize,
        degree: f64,
        max_loss: f64,
    },
    /// A NetJSON NetworkGraph: its node ids and links (costs are not used:
    /// the simulated link models decide each link's fate). Also the
    /// `links` topology: named links written in the scenario.
    NetJson {
        names: Vec<String>,
        edges: Vec<(u32, u32)>,
    },
}

impl TopologySpec {
    /// The node names this topology will have.
    pub fn node_names(&self) -> Vec<String> {
        match *self {
            TopologySpec::Line { nodes } | TopologySpec::Geometric { nodes, .. } => {
                (1..=nodes).map(|i| format!("n{i}")).collect()
            }
            TopologySpec::Grid { width, height } => {
                (1..=width * height).map(|i| format!("n{i}")).collect()
            }
            TopologySpec::Parallel { paths, hops } => {
                let mut names = vec!["s".to_string(), "t".to_string()];
                for p in 0..paths {
                    for h in 0..hops.saturating_sub(1) {
                        names.push(format!("p{p}h{h}"));
                    }
                }
                names
            }
            TopologySpec::NetJson { ref names, .. } => names.clone(),
            TopologySpec::CityMesh { nodes, .. } => (1..=nodes).map(|i| format!("n{i}")).collect(),
            TopologySpec::Wisp { nodes, edges, .. } => {
                let relays = nodes.saturating_sub(1 + edges);
                std::iter::once("gw".to_string())
                    .chain((1..=relays).map(|i| format!("r{i}")))
                    .chain((1..=edges).map(|i| format!("e{i}")))
                    .collect()
            }
        }
    }
}

/// Splits `nodes` nodes linked by `links` into `areas` routing areas
/// (numbered from 1), as an operator would draw them on a map: regions
/// of similar size grown from spread-out seeds. The first seed is node
/// 0, each next one the node farthest (in hops) from the seeds so far
/// (lowest index on a tie). Then the regions grow together, the smallest
/// first (lowest area on a tie), each by the oldest node of its frontier
/// not yet taken: every area is connected and none is much larger than
/// another unless the topology hems it in. A node no seed reaches joins
/// area 1. Deterministic.
pub fn partition(nodes: usize, links: &[(u32, u32)], areas: usize) -> Vec<u16> {
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, VecDeque};
    let mut adjacent = vec![Vec::new(); nodes];
    for &(a, b) in links {
        adjacent[a as usize].push(b);
        adjacent[b as usize].push(a);
    }
    // Spread-out seeds: farthest-point, by breadth-first distances.
    let mut nearest = vec![u32::MAX; nodes];
    let mut seeds: Vec<u32> = Vec::new();
    let mut next = (nodes > 0).then_some(0u32);
    while let Some(seed) = next {
        if seeds.len() >= areas.min(u16::MAX as usize) {
            break;
        }
        seeds.push(seed);
        nearest[seed as usize] = 0;
        let mut queue = VecDeque::from([seed]);
        while let Some(v) = queue.pop_front() {
            let d = nearest[v as usize];
            for &w in &adjacent[v as usize] {
                if d + 1 < nearest[w as usize] {
                    nearest[w as usize] = d + 1;
                    queue.push_back(w);
                }
            }
        }
        next = (0..nodes)
            .filter(|&v| nearest[v] != u32::MAX && nearest[v] > 0)
            .max_by_key(|&v| (nearest[v], Reverse(v)))
            .map(|v| v as u32);
    }
    // Balanced growth: the smallest region takes the next node.
    let mut owner = vec![0u16; nodes];
    let mut frontier: Vec<VecDeque<u32>> = Vec::new();
    let mut size = vec![0usize; seeds.len()];
    let mut turn = BinaryHeap::new();
    for (k, &seed) in seeds.iter().enumerate() {
        owner[seed as usize] = k as u16 + 1;
        size[k] = 1;
        frontier.push(adjacent[seed as usize].iter().copied().collect());
        turn.push(Reverse((1usize, k)));
    }
    while let Some(Reverse((n, k))) = turn.pop() {
        if n != size[k] {
            continue;
        }
        while let Some(v) = frontier[k].pop_front() {
            if owner[v as usize] == 0 {
                owner[v as usize] = k as u16 + 1;
                size[k] += 1;
                frontier[k].extend(adjacent[v as usize].iter().copied());
                turn.push(Reverse((size[k], k)));
                break;
            }
        }
    }
    owner.iter().map(|&a| a.max(1)).collect()
}

/// Node names, links, and for the city mesh each link's length (1 = the
/// edge of radio range).
pub type Generated = (Vec<String>, Vec<(u32, u32)>, Vec<Option<f64>>);

impl TopologySpec {
    /// The topology of one run: its node names, its links, and for the
    /// city mesh each link's length (placements come from `rng`).
    pub fn generate(&self, rng: &mut ChaCha8Rng) -> Generated {
        let spec = self;
        let (names, edges) = match *spec {
            TopologySpec::CityMesh { nodes, degree, .. } => {
                let mesh = random_geometric(nodes, degree, rng);
                let mut edges = Vec::new();
                let mut loss = Vec::new();
                let g = &mesh.graph;
                for a in 0..g.arc_count() as u32 {
                    let arc = g.arc(a);
                    if arc.from < arc.to {
                        let (p, q) = (
                            mesh.positions[arc.from as usize],
                            mesh.positions[arc.to as usize],
                        );
                        let d = ((p.0 - q.0).powi(2) + (p.1 - q.1).powi(2)).sqrt() / mesh.radius;
                        edges.push((arc.from, arc.to));
                        loss.push(Some(d));
                    }
                }
                return ((1..=nodes).map(|i| format!("n{i}")).collect(), edges, loss);
            }
            TopologySpec::Wisp {
                nodes,
                edges,
                cross,
            } => {
                let names = spec.node_names();
                let relays = nodes - 1 - edges;
                let pick = |rng: &mut ChaCha8Rng, n: usize| (rng.next_u64() % n as u64) as u32;
                let mut links: Vec<(u32, u32)> = Vec::new();
                // Relay i (index i) attaches to the gateway or an earlier relay.
                for i in 1..=relays as u32 {
                    links.push((pick(rng, i as usize), i));
                }
                // Edge sites hang off a relay (or the gateway when there are none).
                for e in 0..edges as u32 {
                    let at = if relays == 0 {
                        0
                    } else {
                        1 + pick(rng, relays)
                    };
                    links.push((at, 1 + relays as u32 + e));
                }
                // Cross links between relays (or the gateway) not yet linked.
                let mut added = 0;
                for _ in 0..cross * 20 {
                    if added == cross || relays < 2 {
                        break;
                    }
                    let (a, b) = (pick(rng, relays + 1), pick(rng, relays + 1));
                    let (a, b) = (a.min(b), a.max(b));
                    if a != b && !links.contains(&(a, b)) && !links.contains(&(b, a)) {
                        links.push((a, b));
                        added += 1;
                    }
                }
                (names, links)
            }
            _ => plain(spec, rng),
        };
        let n = edges.len();
        (names, edges, vec![None; n])
    }
}

/// The topologies whose links need no lengths.
fn plain(spec: &TopologySpec, rng: &mut ChaCha8Rng) -> (Vec<String>, Vec<(u32, u32)>) {
    match *spec {
        TopologySpec::Line { nodes } => (
            (1..=nodes).map(|i| format!("n{i}")).collect(),
            (1..nodes as u32).map(|i| (i - 1, i)).collect(),
        ),
        TopologySpec::Grid { width, height } => {
            let names = (0..width * height).map(|i| format!("n{}", i + 1)).collect();
            let mut edges = Vec::new();
            for y in 0..height {
                for x in 0..width {
                    let i = (y * width + x) as u32;
                    if x + 1 < width {
                        edges.push((i, i + 1));
                    }
                    if y + 1 < height {
                        edges.push((i, i + width as u32));
                    }
                }
            }
            (names, edges)
        }
        TopologySpec::Parallel { paths, hops } => {
            let mut names = vec!["s".to_string(), "t".to_string()];
            let mut edges = Vec::new();
            for p in 0..paths {
                let mut prev = 0u32;
                for h in 0..hops.saturating_sub(1) {
                    names.push(format!("p{p}h{h}"));
                    let me = names.len() as u32 - 1;
                    edges.push((prev, me));
                    prev = me;
                }
                edges.push((prev, 1));
            }
            (names, edges)
        }
        TopologySpec::NetJson {
            ref names,
            ref edges,
        } => (names.clone(), edges.clone()),
        TopologySpec::CityMesh { .. } | TopologySpec::Wisp { .. } => {
            unreachable!("generated by `generate`")
        }
        TopologySpec::Geometric { nodes, degree } => {
            let mesh = random_geometric(nodes, degree, rng);
            let g = &mesh.graph;
            let mut edges: Vec<(u32, u32)> = (0..g.arc_count() as u32)
                .map(|a| g.arc(a))
                .filter(|a| a.from < a.to)
                .map(|a| (a.from, a.to))
                .collect();
            edges.sort_unstable();
            edges.dedup();
            ((1..=nodes).map(|i| format!("n{i}")).collect(), edges)
        }
    }
}

#[cfg(test)]
mod partition_tests {
    use super::*;

    #[test]
    fn a_line_splits_into_contiguous_areas() {
        let links: Vec<(u32, u32)> = (0..99).map(|i| (i, i + 1)).collect();
        let areas = partition(100, &links, 4);
        // Every area is a run of the line.
        let mut changes = 0;
        for w in areas.windows(2) {
            if w[0] != w[1] {
                changes += 1;
            }
        }
        assert_eq!(changes, 3, "{areas:?}");
        for a in 1..=4u16 {
            let n = areas.iter().filter(|&&x| x == a).count();
            // Seeds at both ends, the middle and a quarter; the one at an
            // end is hemmed in by its neighbor's.
            assert!((15..=35).contains(&n), "area {a}: {n} nodes");
        }
    }

    #[test]
    fn more_areas_than_nodes_and_islands_are_handled() {
        // Node 2 is an island: no seed reaches it, it stays in area 1.
        assert_eq!(partition(3, &[(0, 1)], 10), vec![1, 2, 1]);
        assert_eq!(partition(3, &[(0, 1), (1, 2)], 10), vec![1, 3, 2]);
        assert_eq!(partition(0, &[], 3), Vec::<u16>::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    fn connected(n: usize, edges: &[(u32, u32)]) -> bool {
        let mut seen = vec![false; n];
        let mut stack = vec![0u32];
        seen[0] = true;
        while let Some(v) = stack.pop() {
            for &(a, b) in edges {
                for (x, y) in [(a, b), (b, a)] {
                    if x == v && !seen[y as usize] {
                        seen[y as usize] = true;
                        stack.push(y);
                    }
                }
            }
        }
        seen.iter().all(|&s| s)
    }

    #[test]
    fn wisp_is_a_connected_tree_plus_cross_links() {
        let spec = TopologySpec::Wisp {
            nodes: 64,
            edges: 41,
            cross: 8,
        };
        let (names, edges, loss) = spec.generate(&mut ChaCha8Rng::seed_from_u64(1));
        assert_eq!(names.len(), 64);
        assert_eq!(
            (names[0].as_str(), names[1].as_str(), names[63].as_str()),
            ("gw", "r1", "e41")
        );
        assert_eq!(
            edges.len(),
            63 + 8,
            "a tree has n-1 links; plus the cross links"
        );
        assert!(connected(64, &edges));
        assert!(loss.iter().all(Option::is_none));
        // Edge sites are leaves.
        for e in 23..64u32 {
            assert_eq!(edges.iter().filter(|&&(a, b)| a == e || b == e).count(), 1);
        }
    }
}
