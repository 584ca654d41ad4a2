//! The synthetic WISP shipped in scenarios/plan/wisp64.json: a network
//! shaped like the one WISPR's section 2 measures (64 sites, a tree of 63
//! point-to-point links to 41 edge sites, the paper's link distance
//! distribution and capacity histogram, a min cut of about 2.5 Gbit/s),
//! with coordinates, spectrum limits and line-of-sight candidates, as
//! NetJSON text the planner reads. Deterministic per seed.

use serde::Serialize;

use crate::network::haversine_m;

/// The seed of the shipped scenarios/plan/wisp64.json.
pub const SYNTHETIC_WISP_SEED: u64 = 5;

/// Relays (backhaul sites) in the synthetic network.
const RELAYS: usize = 22;
/// Edge sites (base stations) in the synthetic network.
const EDGES: usize = 41;
/// Relays hanging off the gateway directly.
const GATEWAY_RELAYS: usize = 4;
/// Most children of a relay; of an edge site.
const MAX_CHILDREN_RELAY: usize = 8;
const MAX_CHILDREN_EDGE: usize = 2;
/// The link distance distribution: lognormal with the paper's median
/// (640.9 m) and a spread giving its mean (about 2.2 km) over 63 links.
const MEDIAN_M: f64 = 640.9;
const SIGMA: f64 = 1.66;
/// Shortest link, metres.
const MIN_DISTANCE_M: f64 = 40.0;
/// The longest link is about the paper's 26.7 km (the lognormal's top
/// stratum would reach 30-40 km).
const LONGEST_M: (f64, f64) = (25_500.0, 28_000.0);
/// The network min cut (gateway to all edge sites) aimed at, Mbit/s.
const TARGET_CUT_MBPS: f64 = 2500.0;
/// Line-of-sight candidates and how far they may be.
const LINE_OF_SIGHT: usize = 25;
const LOS_MAX_M: f64 = 25_000.0;
const LOS_MIN_M: f64 = 150.0;
/// Line-of-sight candidates per site, at most.
const LOS_PER_SITE: usize = 3;
/// Where the gateway is (inland Mendocino County).
const ORIGIN: (f64, f64) = (39.2, -123.6);
/// Radio limit per site written to the plan.
const MAX_LINKS_PER_SITE: u32 = 12;
/// Angular separation written to the plan (and kept between siblings).
const SEPARATION_DEG: f64 = 30.0;

/// A small deterministic generator over ChaCha8.
struct Rng(rand_chacha::ChaCha8Rng);

impl Rng {
    fn new(seed: u64) -> Self {
        use rand_chacha::rand_core::SeedableRng;
        Rng(rand_chacha::ChaCha8Rng::seed_from_u64(seed))
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        use rand_chacha::rand_core::RngCore;
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// Uniform in 0..n (n > 0).
    fn below(&mut self, n: usize) -> usize {
        ((self.unit() * n as f64) as usize).min(n.saturating_sub(1))
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// Inverse of the standard normal CDF (Acklam's rational approximation,
/// relative error below 1.2e-9), for p in (0, 1).
fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(1e-12, 1.0 - 1e-12);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The point `distance_m` from `from` along initial bearing `bearing_deg`
/// on the sphere [`haversine_m`] measures.
fn destination(from: (f64, f64), bearing_deg: f64, distance_m: f64) -> (f64, f64) {
    const EARTH_RADIUS_M: f64 = 6_371_000.0;
    let (p1, l1) = (from.0.to_radians(), from.1.to_radians());
    let t = bearing_deg.to_radians();
    let d = distance_m / EARTH_RADIUS_M;
    let p2 = (p1.sin() * d.cos() + p1.cos() * d.sin() * t.cos()).asin();
    let l2 = l1 + (t.sin() * d.sin() * p1.cos()).atan2(d.cos() - p1.sin() * p2.sin());
    (p2.to_degrees(), l2.to_degrees())
}

/// Initial bearing from `p` toward `q`, degrees in [0, 360) (as the
/// planner computes it).
fn bearing(p: (f64, f64), q: (f64, f64)) -> f64 {
    let (p1, p2) = (p.0.to_radians(), q.0.to_radians());
    let dl = (q.1 - p.1).to_radians();
    let y = dl.sin() * p2.cos();
    let x = p1.cos() * p2.sin() - p1.sin() * p2.cos() * dl.cos();
    (y.atan2(x).to_degrees() + 360.0) % 360.0
}

fn round_to(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Gateway,
    Relay,
    Edge,
}

/// The synthetic network before it is written out.
struct Wisp {
    kind: Vec<Kind>,
    parent: Vec<Option<usize>>,
    children: Vec<Vec<usize>>,
    /// Per non-gateway site: its uplink's distance, capacity, width.
    distance_m: Vec<f64>,
    capacity_mbps: Vec<u32>,
    channel_mhz: Vec<u32>,
    position: Vec<(f64, f64)>,
    /// Line-of-sight candidate pairs (site indices) with their distance.
    sight: Vec<(usize, usize, f64)>,
}

/// The tree: site 0 the gateway, 1..=22 relays, then the edge sites.
fn tree(rng: &mut Rng) -> (Vec<Kind>, Vec<Option<usize>>, Vec<Vec<usize>>) {
    let n = 1 + RELAYS + EDGES;
    let mut kind = vec![Kind::Edge; n];
    kind[0] = Kind::Gateway;
    for k in kind.iter_mut().skip(1).take(RELAYS) {
        *k = Kind::Relay;
    }
    let mut parent: Vec<Option<usize>> = vec![None; n];
    let attach = |c: usize, p: usize, parent: &mut Vec<Option<usize>>| parent[c] = Some(p);
    for r in 1..=RELAYS {
        let p = if r <= GATEWAY_RELAYS {
            0
        } else {
            // A random earlier relay with room (recent ones a little
            // likelier, so the tree has some depth).
            let room: Vec<usize> = (1..r)
                .filter(|&q| {
                    parent.iter().filter(|&&x| x == Some(q)).count() < MAX_CHILDREN_RELAY / 2
                })
                .collect();
            let pick = rng.unit().sqrt();
            room[((pick * room.len() as f64) as usize).min(room.len() - 1)]
        };
        attach(r, p, &mut parent);
    }
    let count =
        |parent: &Vec<Option<usize>>, q: usize| parent.iter().filter(|&&x| x == Some(q)).count();
    let mut next = 1 + RELAYS;
    // One edge site right by the gateway.
    attach(next, 0, &mut parent);
    next += 1;
    // Every relay gets an edge site (leaves are edge sites).
    for r in 1..=RELAYS {
        if count(&parent, r) == 0 {
            attach(next, r, &mut parent);
            next += 1;
        }
    }
    while next < n {
        let p = if rng.unit() < 0.72 {
            let room: Vec<usize> = (1..=RELAYS)
                .filter(|&q| count(&parent, q) < MAX_CHILDREN_RELAY)
                .collect();
            room[rng.below(room.len())]
        } else {
            let room: Vec<usize> = (1 + RELAYS..next)
                .filter(|&q| parent[q] != Some(0) && count(&parent, q) < MAX_CHILDREN_EDGE)
                .collect();
            if room.is_empty() {
                continue;
            }
            room[rng.below(room.len())]
        };
        attach(next, p, &mut parent);
        next += 1;
    }
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (c, p) in parent.iter().enumerate() {
        if let Some(p) = *p {
            children[p].push(c);
        }
    }
    (kind, parent, children)
}

/// Sites in breadth-first order from the gateway, with their depth.
fn bfs(children: &[Vec<usize>]) -> (Vec<usize>, Vec<usize>) {
    let mut order = vec![0];
    let mut depth = vec![0; children.len()];
    let mut i = 0;
    while i < order.len() {
        let v = order[i];
        for &c in &children[v] {
            depth[c] = depth[v] + 1;
            order.push(c);
        }
        i += 1;
    }
    (order, depth)
}

/// 63 link distances: stratified quantiles of the lognormal, each jittered
/// inside the middle of its stratum.
fn distances(rng: &mut Rng, links: usize) -> Vec<f64> {
    let mu = MEDIAN_M.ln();
    let longest = rng.range(LONGEST_M.0, LONGEST_M.1);
    (0..links)
        .map(|i| {
            let q = (i as f64 + rng.range(0.35, 0.65)) / links as f64;
            (mu + SIGMA * normal_quantile(q))
                .exp()
                .clamp(MIN_DISTANCE_M, longest)
        })
        .collect()
}

/// Max flow from `v`'s subtree to the edge sites in it, given uplink
/// capacities below `v` (unbounded when `v` is itself an edge site).
fn subtree_flow(w: &Wisp, v: usize) -> f64 {
    if w.kind[v] == Kind::Edge {
        return f64::INFINITY;
    }
    w.children[v]
        .iter()
        .map(|&c| f64::from(w.capacity_mbps[c]).min(subtree_flow(w, c)))
        .sum()
}

fn edges_below(w: &Wisp, v: usize) -> usize {
    usize::from(w.kind[v] == Kind::Edge)
        + w.children[v]
            .iter()
            .map(|&c| edges_below(w, c))
            .sum::<usize>()
}

/// Capacities like the paper's histogram (mostly 100-450 Mbit/s), then
/// the gateway's links chosen so the network min cut is near the target.
fn capacities(w: &mut Wisp, rng: &mut Rng) {
    let n = w.kind.len();
    for v in 1..n {
        let below = edges_below(w, v);
        let leaf = w.children[v].is_empty();
        let u = rng.unit();
        w.capacity_mbps[v] = if leaf {
            if u < 0.55 {
                100
            } else if u < 0.9 {
                150
            } else {
                300
            }
        } else if below <= 2 {
            if u < 0.5 {
                150
            } else {
                300
            }
        } else if below <= 6 {
            if u < 0.8 {
                300
            } else {
                450
            }
        } else if u < 0.7 {
            450
        } else {
            300
        };
    }
    // Where the branches cannot carry the target between them, upgrade
    // the bottleneck link with the most edge sites below whose ancestors
    // (below the gateway's link) have room.
    const STEPS: [u32; 5] = [100, 150, 300, 450, 700];
    for _ in 0..60 {
        let potential: f64 = w.children[0]
            .iter()
            .map(|&c| {
                subtree_flow(w, c).min(if w.kind[c] == Kind::Edge {
                    450.0
                } else {
                    1400.0
                })
            })
            .sum();
        if potential >= TARGET_CUT_MBPS + 200.0 {
            break;
        }
        let room = |v: usize| -> bool {
            let mut a = w.parent[v];
            while let Some(x) = a {
                if w.parent[x] == Some(0) || x == 0 {
                    return true;
                }
                if f64::from(w.capacity_mbps[x]) <= subtree_flow(w, x) {
                    return false;
                }
                a = w.parent[x];
            }
            true
        };
        let pick = (1..n)
            .filter(|&v| w.parent[v].is_some_and(|p| p != 0))
            .filter(|&v| f64::from(w.capacity_mbps[v]) < subtree_flow(w, v))
            .filter(|&v| STEPS[..STEPS.len() - 1].contains(&w.capacity_mbps[v]))
            .filter(|&v| room(v))
            .max_by_key(|&v| (edges_below(w, v), std::cmp::Reverse(v)));
        let Some(v) = pick else { break };
        let i = STEPS
            .iter()
            .position(|&k| k == w.capacity_mbps[v])
            .unwrap_or(0);
        w.capacity_mbps[v] = STEPS[(i + 1).min(STEPS.len() - 1)];
    }
    // The gateway's links: the combination of options whose cut is
    // nearest the target, wasting little capacity (fewer fast links on a
    // tie).
    let top: Vec<usize> = w.children[0].clone();
    let flows: Vec<f64> = top.iter().map(|&c| subtree_flow(w, c)).collect();
    let options = |c: usize| -> &'static [u32] {
        if w.kind[c] == Kind::Edge {
            &[150, 300, 450]
        } else {
            &[300, 450, 700, 1000, 1400]
        }
    };
    let mut best: Option<(f64, Vec<u32>)> = None;
    let mut pick = vec![0usize; top.len()];
    loop {
        let caps: Vec<u32> = top
            .iter()
            .zip(&pick)
            .map(|(&c, &i)| options(c)[i])
            .collect();
        let cut: f64 = caps
            .iter()
            .zip(&flows)
            .map(|(&k, &f)| f64::from(k).min(f))
            .sum();
        let waste: f64 = caps
            .iter()
            .zip(&flows)
            .map(|(&k, &f)| (f64::from(k) - f).max(0.0))
            .sum();
        let speed: f64 = caps.iter().map(|&k| f64::from(k)).sum();
        let score = (cut - TARGET_CUT_MBPS).abs() + 0.2 * waste + 1e-3 * speed;
        if best.as_ref().is_none_or(|(s, _)| score < *s) {
            best = Some((score, caps));
        }
        // Next combination (odometer).
        let mut i = 0;
        loop {
            if i == top.len() {
                if let Some((_, caps)) = best {
                    for (&c, k) in top.iter().zip(caps) {
                        w.capacity_mbps[c] = k;
                    }
                }
                return finish_widths(w);
            }
            pick[i] += 1;
            if pick[i] < options(top[i]).len() {
                break;
            }
            pick[i] = 0;
            i += 1;
        }
    }
}

fn finish_widths(w: &mut Wisp) {
    for v in 1..w.kind.len() {
        w.channel_mhz[v] = if w.capacity_mbps[v] <= 150 { 20 } else { 40 };
    }
}

/// Gives the longer distances to links nearer the gateway (with noise)
/// and the relays' links.
fn assign_distances(w: &mut Wisp, rng: &mut Rng, depth: &[usize]) {
    let n = w.kind.len();
    let mut ds = distances(rng, n - 1);
    rng.shuffle(&mut ds);
    ds.sort_by(|a, b| b.total_cmp(a));
    let mut sites: Vec<(f64, usize)> = (1..n)
        .map(|v| {
            let relay = if w.kind[v] == Kind::Relay { 0.0 } else { 1.0 };
            (depth[v] as f64 + relay + rng.range(0.0, 2.5), v)
        })
        .collect();
    sites.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for ((_, v), d) in sites.into_iter().zip(ds) {
        w.distance_m[v] = d;
    }
}

/// Places the sites: each child at its uplink's distance from its parent,
/// the antennas at a site at least the separation apart (siblings spread
/// around the direction away from the site's own uplink).
fn place(w: &mut Wisp, rng: &mut Rng, order: &[usize]) {
    w.position[0] = ORIGIN;
    for &v in order {
        let kids = w.children[v].clone();
        let k = kids.len();
        if k == 0 {
            continue;
        }
        let here = w.position[v];
        let bearings: Vec<f64> = match w.parent[v] {
            None => {
                let step = 360.0 / k as f64;
                let start = rng.range(0.0, 360.0);
                (0..k)
                    .map(|i| {
                        start
                            + step * i as f64
                            + rng.range(-0.1, 0.1) * (step - SEPARATION_DEG - 4.0).max(0.0)
                    })
                    .collect()
            }
            Some(p) => {
                let back = bearing(here, w.position[p]);
                let away = back + 180.0;
                let step = if k > 1 {
                    (280.0 / (k - 1) as f64).min(55.0)
                } else {
                    0.0
                };
                let half = step * (k - 1) as f64 / 2.0;
                let slack = (140.0 - half).clamp(0.0, 25.0);
                let centre = away + rng.range(-slack, slack);
                (0..k)
                    .map(|i| centre - half + step * i as f64 + rng.range(-4.0, 4.0))
                    .collect()
            }
        };
        for (&c, b) in kids.iter().zip(bearings) {
            let to = destination(here, (b + 360.0) % 360.0, w.distance_m[c]);
            w.position[c] = (round_to(to.0, 6), round_to(to.1, 6));
        }
    }
    // The distances written are the ones the rounded coordinates give.
    for v in 1..w.kind.len() {
        if let Some(p) = w.parent[v] {
            w.distance_m[v] = round_to(haversine_m(w.position[p], w.position[v]), 1);
        }
    }
}

/// Edge sites that still have a single way to the gateway: those cut off
/// from it by a bridge of the graph.
fn unprotected_edges(w: &Wisp, extra: &[(usize, usize)]) -> usize {
    let n = w.kind.len();
    let mut adj: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    let mut e = 0;
    for v in 1..n {
        if let Some(p) = w.parent[v] {
            adj[p].push((v, e));
            adj[v].push((p, e));
            e += 1;
        }
    }
    for &(a, b) in extra {
        adj[a].push((b, e));
        adj[b].push((a, e));
        e += 1;
    }
    // Bridges by DFS low-links (iterative).
    let mut disc = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut bridge = vec![false; e];
    let mut time = 0;
    let mut stack: Vec<(usize, usize, usize)> = vec![(0, usize::MAX, 0)];
    disc[0] = 0;
    low[0] = 0;
    time += 1;
    while let Some(&mut (v, via, ref mut i)) = stack.last_mut() {
        if *i < adj[v].len() {
            let (u, id) = adj[v][*i];
            *i += 1;
            if id == via {
                continue;
            }
            if disc[u] == usize::MAX {
                disc[u] = time;
                low[u] = time;
                time += 1;
                stack.push((u, id, 0));
            } else {
                low[v] = low[v].min(disc[u]);
            }
        } else {
            stack.pop();
            if let Some(&(p, _, _)) = stack.last() {
                low[p] = low[p].min(low[v]);
                if low[v] > disc[p] {
                    bridge[via] = true;
                }
            }
        }
    }
    let mut seen = vec![false; n];
    seen[0] = true;
    let mut todo = vec![0];
    while let Some(v) = todo.pop() {
        for &(u, id) in &adj[v] {
            if !bridge[id] && !seen[u] {
                seen[u] = true;
                todo.push(u);
            }
        }
    }
    (0..n)
        .filter(|&v| w.kind[v] == Kind::Edge && !seen[v])
        .count()
}

/// Line-of-sight candidates: unlinked pairs within reach, chosen greedily
/// for the edge sites they give a second way to the gateway per km.
fn line_of_sight(w: &mut Wisp) {
    let n = w.kind.len();
    let linked = |a: usize, b: usize| w.parent[a] == Some(b) || w.parent[b] == Some(a);
    let mut candidates: Vec<(usize, usize, f64)> = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            if linked(a, b) {
                continue;
            }
            let d = round_to(haversine_m(w.position[a], w.position[b]), 1);
            if (LOS_MIN_M..=LOS_MAX_M).contains(&d) {
                candidates.push((a, b, d));
            }
        }
    }
    let mut chosen: Vec<(usize, usize)> = Vec::new();
    let mut sight: Vec<(usize, usize, f64)> = Vec::new();
    let mut per_site = vec![0usize; n];
    let mut left = unprotected_edges(w, &chosen);
    while sight.len() < LINE_OF_SIGHT {
        let mut best: Option<(f64, usize)> = None;
        for (i, &(a, b, d)) in candidates.iter().enumerate() {
            if per_site[a] >= LOS_PER_SITE
                || per_site[b] >= LOS_PER_SITE
                || chosen.contains(&(a, b))
            {
                continue;
            }
            chosen.push((a, b));
            let after = unprotected_edges(w, &chosen);
            chosen.pop();
            let gain = (left - after) as f64;
            let edge_end = [a, b].iter().filter(|&&s| w.kind[s] == Kind::Edge).count() as f64;
            let score = (gain + 0.002 * edge_end) / (0.5 + d / 1000.0);
            if best.is_none_or(|(s, _)| score > s) {
                best = Some((score, i));
            }
        }
        let Some((_, i)) = best else { break };
        let (a, b, d) = candidates[i];
        chosen.push((a, b));
        sight.push((a, b, d));
        per_site[a] += 1;
        per_site[b] += 1;
        left = unprotected_edges(w, &chosen);
    }
    w.sight = sight;
}

fn build(seed: u64) -> Wisp {
    let mut rng = Rng::new(seed);
    let (kind, parent, children) = tree(&mut rng);
    let n = kind.len();
    let mut w = Wisp {
        kind,
        parent,
        children,
        distance_m: vec![0.0; n],
        capacity_mbps: vec![0; n],
        channel_mhz: vec![0; n],
        position: vec![ORIGIN; n],
        sight: Vec::new(),
    };
    let (order, depth) = bfs(&w.children);
    assign_distances(&mut w, &mut rng, &depth);
    capacities(&mut w, &mut rng);
    place(&mut w, &mut rng, &order);
    line_of_sight(&mut w);
    w
}

#[derive(Serialize)]
struct DocOut {
    #[serde(rename = "type")]
    kind: &'static str,
    protocol: &'static str,
    version: &'static str,
    metric: &'static str,
    label: String,
    nodes: Vec<NodeOut>,
    links: Vec<LinkOut>,
    plan: PlanOut,
}

#[derive(Serialize)]
struct NodeOut {
    id: String,
    label: String,
    properties: NodeProps,
}

#[derive(Serialize)]
struct NodeProps {
    role: &'static str,
    lat: f64,
    lon: f64,
}

#[derive(Serialize)]
struct LinkOut {
    source: String,
    target: String,
    cost: f64,
    properties: LinkProps,
}

#[derive(Serialize)]
struct LinkProps {
    capacity_mbps: u32,
    distance_m: f64,
    channel_mhz: u32,
}

#[derive(Serialize)]
struct PlanOut {
    channels: std::collections::BTreeMap<&'static str, u32>,
    angular_separation_deg: f64,
    max_links_per_site: u32,
    max_parallel: u32,
    line_of_sight: Vec<SightOut>,
}

#[derive(Serialize)]
struct SightOut {
    source: String,
    target: String,
    distance_m: f64,
}

/// The NetJSON text (pretty-printed, ending in a newline) of a synthetic
/// WISP like WISPR's (seed 002, sections 2.1-2.5): 64 sites (a gateway,
/// 22 relays, 41 edge sites; every leaf an edge site) in a tree of 63
/// links whose distances follow the paper's distribution (median about
/// 640 m, mean about 2.2 km, longest about 27 km, longer links nearer the
/// gateway), capacities mostly 100-450 Mbit/s with faster gateway links
/// giving a network min cut near 2,500 Mbit/s, coordinates around 39.2 N,
/// 123.6 W that match every link's distance with a site's antennas at
/// least 30 degrees apart, 20 or 40 MHz channels, a routing `cost` of 1.0
/// on every link (braid's simulator reads it), and a `plan` member with
/// the 5 GHz channel counts, the 30 degree separation, 12 radios per site
/// and 25 line-of-sight candidates that give edge sites a second way to
/// the gateway. The same seed gives the same text.
pub fn synthetic_wisp(seed: u64) -> String {
    let w = build(seed);
    let n = w.kind.len();
    let (order, _) = bfs(&w.children);
    // Ids by role, numbered in breadth-first order.
    let mut id = vec![String::new(); n];
    let mut label = vec![String::new(); n];
    let (mut relays, mut edges) = (0, 0);
    for &v in &order {
        match w.kind[v] {
            Kind::Gateway => {
                id[v] = "gw".into();
                label[v] = "gateway (fibre uplink)".into();
            }
            Kind::Relay => {
                relays += 1;
                id[v] = format!("r{relays:02}");
                label[v] = format!("relay tower {relays}");
            }
            Kind::Edge => {
                edges += 1;
                id[v] = format!("e{edges:02}");
                label[v] = format!("base station {edges}");
            }
        }
    }
    let nodes = order
        .iter()
        .map(|&v| NodeOut {
            id: id[v].clone(),
            label: label[v].clone(),
            properties: NodeProps {
                role: match w.kind[v] {
                    Kind::Gateway => "gateway",
                    Kind::Relay => "backhaul",
                    Kind::Edge => "edge",
                },
                lat: w.position[v].0,
                lon: w.position[v].1,
            },
        })
        .collect();
    let links = order
        .iter()
        .filter_map(|&v| w.parent[v].map(|p| (p, v)))
        .map(|(p, v)| LinkOut {
            source: id[p].clone(),
            target: id[v].clone(),
            cost: 1.0,
            properties: LinkProps {
                capacity_mbps: w.capacity_mbps[v],
                distance_m: w.distance_m[v],
                channel_mhz: w.channel_mhz[v],
            },
        })
        .collect();
    let line_of_sight = w
        .sight
        .iter()
        .map(|&(a, b, d)| SightOut {
            source: id[a].clone(),
            target: id[b].clone(),
            distance_m: d,
        })
        .collect();
    let doc = DocOut {
        kind: "NetworkGraph",
        protocol: "static",
        version: "0.1",
        metric: "capacity",
        label: format!(
            "Synthetic WISP (seed {seed}): 64 sites, 41 edge sites, a tree of 63 links, shaped like WISPR section 2"
        ),
        nodes,
        links,
        plan: PlanOut {
            channels: [("20", 24), ("40", 11), ("80", 5)].into_iter().collect(),
            angular_separation_deg: SEPARATION_DEG,
            max_links_per_site: MAX_LINKS_PER_SITE,
            max_parallel: 8,
            line_of_sight,
        },
    };
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{parse, Role};

    #[test]
    fn the_normal_quantile_is_accurate() {
        for (p, z) in [
            (0.5, 0.0),
            (0.975, 1.959_963_985),
            (0.01, -2.326_347_874),
            (0.999, 3.090_232_306),
        ] {
            assert!(
                (normal_quantile(p) - z).abs() < 1e-7,
                "{p}: {}",
                normal_quantile(p)
            );
        }
    }

    #[test]
    fn destinations_are_at_the_distance_and_bearing_asked() {
        for (b, d) in [
            (0.0, 500.0),
            (77.0, 26_700.0),
            (200.0, 40.0),
            (321.5, 3_000.0),
        ] {
            let to = destination(ORIGIN, b, d);
            assert!(
                (haversine_m(ORIGIN, to) - d).abs() < 1e-6 * d.max(1.0),
                "{b} {d}"
            );
            let got = bearing(ORIGIN, to);
            let diff = (got - b).abs() % 360.0;
            assert!(diff.min(360.0 - diff) < 1e-6, "{b}: {got}");
        }
    }

    #[test]
    fn every_seed_gives_a_wisp_the_planner_reads() {
        for seed in 0..12 {
            let text = synthetic_wisp(seed);
            assert_eq!(
                text,
                synthetic_wisp(seed),
                "seed {seed} is not deterministic"
            );
            let net = parse(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(net.sites.len(), 64);
            assert_eq!(net.edges().len(), 41);
            let existing: Vec<_> = net.pairs.iter().filter(|p| p.exists()).collect();
            assert_eq!(existing.len(), 63);
            assert_eq!(
                net.pairs.len() - existing.len(),
                LINE_OF_SIGHT,
                "seed {seed}"
            );
            // Every leaf is an edge site.
            for (s, site) in net.sites.iter().enumerate() {
                let degree = existing.iter().filter(|p| p.a == s || p.b == s).count();
                assert!(degree >= 1);
                if degree == 1 && site.role != Role::Gateway {
                    assert_eq!(site.role, Role::Edge, "seed {seed}: leaf {}", site.id);
                }
                assert!(degree <= MAX_LINKS_PER_SITE as usize);
            }
            // Today's antennas at each site are the separation apart.
            for (p, pair) in net.pairs.iter().enumerate().filter(|(_, p)| p.exists()) {
                for s in [pair.a, pair.b] {
                    let close: Vec<usize> = net
                        .sharing_spectrum(s, p)
                        .into_iter()
                        .filter(|&q| net.pairs[q].exists())
                        .collect();
                    assert_eq!(close, vec![p], "seed {seed}: at {}", net.sites[s].id);
                }
                // The distance written is the coordinates' distance.
                let (x, y) = (
                    net.sites[pair.a].position.unwrap(),
                    net.sites[pair.b].position.unwrap(),
                );
                assert!(
                    (haversine_m(x, y) - pair.distance_m).abs() < 0.06,
                    "seed {seed}"
                );
            }
        }
        assert_ne!(synthetic_wisp(1), synthetic_wisp(2));
    }
}
