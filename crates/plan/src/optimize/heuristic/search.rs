//! The heuristic's search state and its moves on a design: shortfalls and
//! fits, the changes that raise capacity across a cut or make a pair
//! cheaper, path changes (the cheapest upgrades opening a path), and the
//! greedy step, pruning, re-building and drop-and-repair rounds.

use crate::design::{Design, Problem};
use crate::flow::{self, Cut, FlowGraph};

use super::super::goal::{EPS_COST, EPS_MBPS};
use super::pair::{frontier, one_radio_less, one_radio_step, Bundle, Change};

/// Heuristic steps (units added) at most per augmentation.
const MAX_STEPS: usize = 10_000;
/// Improvement rounds at most.
pub(super) const MAX_ROUNDS: usize = 12;
/// Max-flow computations the heuristic's local search may spend.
pub(super) const FLOW_BUDGET: u64 = 150_000;
/// Step sizes tried for path changes at most.
const MAX_DELTAS: usize = 8;

/// A pair upgrade: capacity added, cost added, the pair's new counts.
type Upgrade = (f64, f64, Vec<u32>);

/// The heuristic's state over one problem: each pair's frontier, the
/// step sizes of path changes, and what it has spent and done so far.
pub(super) struct Search<'p, 'a> {
    pub(super) pb: &'p Problem<'a>,
    n: usize,
    g: usize,
    sinks: Vec<usize>,
    /// Per pair, the bundles no other bundle beats on cost, capacity,
    /// spectrum and radios, cheapest first.
    frontier: Vec<Vec<Bundle>>,
    /// Step sizes for path changes: the choices' capacities.
    pub(super) deltas: Vec<f64>,
    pub(super) flows: u64,
    /// Local search stops past this many max flows.
    pub(super) flow_limit: u64,
    pub(super) added: usize,
    pub(super) improved: usize,
}

impl<'p, 'a> Search<'p, 'a> {
    pub(super) fn new(pb: &'p Problem<'a>) -> Self {
        let frontier = (0..pb.choices.len()).map(|p| frontier(pb, p)).collect();
        let mut deltas: Vec<f64> = pb
            .choices
            .iter()
            .flatten()
            .map(|c| c.capacity_mbps)
            .filter(|c| c.is_finite() && *c > 0.0)
            .collect();
        deltas.sort_by(f64::total_cmp);
        deltas.dedup_by(|a, b| (*a - *b).abs() < EPS_MBPS);
        if deltas.len() > MAX_DELTAS {
            let k = deltas.len();
            deltas = (0..MAX_DELTAS)
                .map(|i| deltas[i * (k - 1) / (MAX_DELTAS - 1)])
                .collect();
        }
        Search {
            pb,
            n: pb.net.sites.len(),
            g: pb.net.gateway,
            sinks: pb.net.edges(),
            frontier,
            deltas,
            flows: 0,
            flow_limit: FLOW_BUDGET,
            added: 0,
            improved: 0,
        }
    }

    pub(super) fn cost(&self, d: &Design) -> f64 {
        (0..d.counts.len())
            .map(|p| self.pair_cost(p, &d.counts[p]))
            .sum()
    }

    fn pair_cost(&self, p: usize, counts: &[u32]) -> f64 {
        self.pb.choices[p]
            .iter()
            .zip(counts)
            .map(|(c, &k)| c.price * f64::from(k))
            .sum()
    }

    fn pair_cap(&self, p: usize, counts: &[u32]) -> f64 {
        self.pb.choices[p]
            .iter()
            .zip(counts)
            .map(|(c, &k)| c.capacity_mbps * f64::from(k))
            .sum()
    }

    /// Applies a change; returns the pair's old counts.
    fn apply(d: &mut Design, ch: &Change) -> Vec<u32> {
        std::mem::replace(&mut d.counts[ch.pair], ch.counts.clone())
    }

    fn flow(&mut self, edges: &[flow::Edge], sinks: &[usize]) -> Cut {
        self.flows += 1;
        flow::max_flow(self.n, edges, self.g, sinks)
    }

    /// A design's graph, for several max flows from the gateway.
    fn graph(&self, d: &Design) -> FlowGraph {
        FlowGraph::new(self.n, &self.pb.edges(d), &self.sinks)
    }

    fn flow_in(&mut self, graph: &mut FlowGraph, sinks: &[usize]) -> Cut {
        self.flows += 1;
        graph.max_flow(self.g, sinks)
    }

    pub(super) fn network(&mut self, d: &Design) -> Cut {
        let edges = self.pb.edges(d);
        let sinks = self.sinks.clone();
        self.flow(&edges, &sinks)
    }

    /// Shortfalls: which constraints are short (None: the network), by
    /// how much in total, and their cuts.
    fn shortfall(&mut self, d: &Design, target: f64) -> (f64, Vec<Option<usize>>, Vec<Vec<bool>>) {
        let mut graph = self.graph(d);
        let mut total = 0.0;
        let mut which = Vec::new();
        let mut cuts = Vec::new();
        for i in 0..self.pb.required.len() {
            let (k, need) = self.pb.required[i];
            let cut = self.flow_in(&mut graph, &[k]);
            if cut.value_mbps + EPS_MBPS < need {
                total += need - cut.value_mbps;
                which.push(Some(i));
                cuts.push(cut.source_side);
            }
        }
        if target > EPS_MBPS {
            let sinks = self.sinks.clone();
            let cut = self.flow_in(&mut graph, &sinks);
            if cut.value_mbps + EPS_MBPS < target {
                total += target - cut.value_mbps;
                which.push(None);
                cuts.push(cut.source_side);
            }
        }
        (total, which, cuts)
    }

    /// The shortfall over the given constraints only.
    fn shortfall_of(&mut self, d: &Design, target: f64, which: &[Option<usize>]) -> f64 {
        let mut graph = self.graph(d);
        let mut total = 0.0;
        for w in which {
            let (sinks, need) = match *w {
                Some(i) => (vec![self.pb.required[i].0], self.pb.required[i].1),
                None => (self.sinks.clone(), target),
            };
            let v = self.flow_in(&mut graph, &sinks).value_mbps;
            total += (need - v).max(0.0);
        }
        total
    }

    /// True when `d` keeps every limit and every capacity; `changed`: the
    /// one pair changed since `d` was last known to keep the limits (only
    /// the limits near it are checked), None: check them all.
    fn fits(&mut self, d: &Design, target: f64, changed: Option<usize>) -> bool {
        let within = match changed {
            Some(p) => self.pb.keeps_limits_near(d, &[p]),
            None => self.pb.violation(d).is_none(),
        };
        if !within {
            return false;
        }
        let mut graph = self.graph(d);
        if target > EPS_MBPS {
            let sinks = self.sinks.clone();
            if self.flow_in(&mut graph, &sinks).value_mbps + EPS_MBPS < target {
                return false;
            }
        }
        for i in 0..self.pb.required.len() {
            let (k, need) = self.pb.required[i];
            if self.flow_in(&mut graph, &[k]).value_mbps + EPS_MBPS < need {
                return false;
            }
        }
        true
    }

    /// Changes that raise capacity on the pairs crossing any of `cuts`
    /// (not pair `banned`): one radio more, one radio upgraded, or the
    /// pair re-built as a faster bundle.
    fn raising(&self, d: &Design, cuts: &[Vec<bool>], banned: Option<usize>) -> Vec<Change> {
        let mut out: Vec<Change> = Vec::new();
        for (p, pair) in self.pb.net.pairs.iter().enumerate() {
            let crosses = cuts.iter().any(|side| {
                side.get(pair.a).copied().unwrap_or(false)
                    != side.get(pair.b).copied().unwrap_or(false)
            });
            if !crosses || banned == Some(p) {
                continue;
            }
            let cs = &self.pb.choices[p];
            let now = &d.counts[p];
            // The one-radio changes are distinct by construction; a
            // bundle is skipped when it is one of them.
            for c in 0..cs.len() {
                if now[c] < cs[c].max_count {
                    let mut v = now.clone();
                    v[c] += 1;
                    out.push(Change { pair: p, counts: v });
                }
                if now[c] > 0 {
                    for to in 0..cs.len() {
                        if cs[to].capacity_mbps > cs[c].capacity_mbps && now[to] < cs[to].max_count
                        {
                            let mut v = now.clone();
                            v[c] -= 1;
                            v[to] += 1;
                            out.push(Change { pair: p, counts: v });
                        }
                    }
                }
            }
            let cap = self.pair_cap(p, now);
            for b in &self.frontier[p] {
                let unit = match one_radio_step(now, &b.counts) {
                    Some((None, _)) => true,
                    Some((Some(from), to)) => cs[to].capacity_mbps > cs[from].capacity_mbps,
                    None => false,
                };
                if b.cap > cap + EPS_MBPS && !unit {
                    out.push(Change {
                        pair: p,
                        counts: b.counts.clone(),
                    });
                }
            }
        }
        out
    }

    /// Changes that make one pair cheaper: one radio less, one radio
    /// swapped for a cheaper choice, or the pair re-built as a cheaper
    /// bundle; biggest saving first.
    fn lowering(&self, d: &Design) -> Vec<(f64, Change)> {
        let mut out: Vec<(f64, Change)> = Vec::new();
        for (p, cs) in self.pb.choices.iter().enumerate() {
            let now = &d.counts[p];
            let cost = self.pair_cost(p, now);
            let push = |counts: Vec<u32>, out: &mut Vec<(f64, Change)>| {
                let saving = cost - self.pair_cost(p, &counts);
                if saving > EPS_COST {
                    out.push((saving, Change { pair: p, counts }));
                }
            };
            // The one-radio changes are distinct by construction; a
            // bundle is skipped when it is one of them.
            for c in 0..cs.len() {
                if now[c] == 0 {
                    continue;
                }
                let mut v = now.clone();
                v[c] -= 1;
                push(v, &mut out);
                for to in 0..cs.len() {
                    if to != c && now[to] < cs[to].max_count {
                        let mut v = now.clone();
                        v[c] -= 1;
                        v[to] += 1;
                        push(v, &mut out);
                    }
                }
            }
            for b in &self.frontier[p] {
                let unit = matches!(one_radio_step(now, &b.counts), Some((Some(_), _)))
                    || one_radio_less(now, &b.counts);
                if b.cost + EPS_COST < cost && !unit {
                    push(b.counts.clone(), &mut out);
                }
            }
        }
        out.sort_by(|a, b| b.0.total_cmp(&a.0));
        out
    }

    /// Adds capacity until the shortfall against `target` (and every edge
    /// site's need) is gone, spending at most `limit` in all and leaving
    /// pair `banned` alone. True when nothing is short at the end.
    pub(super) fn repair(
        &mut self,
        d: &mut Design,
        target: f64,
        limit: f64,
        banned: Option<usize>,
    ) -> bool {
        for _ in 0..MAX_STEPS {
            let (short, which, cuts) = self.shortfall(d, target);
            if short <= EPS_MBPS {
                return true;
            }
            let mut sets: Vec<Vec<Change>> = self
                .raising(d, &cuts, banned)
                .into_iter()
                .map(|ch| vec![ch])
                .collect();
            let sinks: Vec<Vec<usize>> = which
                .iter()
                .map(|w| match *w {
                    Some(i) => vec![self.pb.required[i].0],
                    None => self.sinks.clone(),
                })
                .collect();
            sets.extend(self.paths(d, &sinks, short, banned));
            let aim = Aim::Short {
                target,
                which,
                short,
            };
            if !self.step(d, sets, &aim, limit, true) {
                return false;
            }
        }
        false
    }

    /// Adds capacity bridging the network min cut while the budget allows.
    pub(super) fn grow(&mut self, d: &mut Design, budget: f64) {
        for _ in 0..MAX_STEPS {
            let cut = self.network(d);
            let mut sets: Vec<Vec<Change>> = self
                .raising(d, std::slice::from_ref(&cut.source_side), None)
                .into_iter()
                .map(|ch| vec![ch])
                .collect();
            let sinks = vec![self.sinks.clone()];
            sets.extend(self.paths(d, &sinks, f64::INFINITY, None));
            let aim = Aim::Network {
                now: cut.value_mbps,
            };
            if !self.step(d, sets, &aim, budget, false) {
                return;
            }
        }
    }

    /// What a change set gains toward the aim.
    fn gain(&mut self, d: &Design, aim: &Aim) -> f64 {
        match aim {
            Aim::Short {
                target,
                which,
                short,
            } => short - self.shortfall_of(d, *target, which),
            Aim::Network { now } => self.network(d).value_mbps - now,
        }
    }

    /// Applies the best of the change sets (gain per dollar, within the
    /// cost limit, keeping every limit); with `proxy`, capacity added
    /// across the cut counts when no set raises the flow. False when
    /// none qualifies.
    fn step(
        &mut self,
        d: &mut Design,
        sets: Vec<Vec<Change>>,
        aim: &Aim,
        limit: f64,
        proxy: bool,
    ) -> bool {
        let cost = self.cost(d);
        let cap_at = match aim {
            Aim::Short { short, .. } => *short,
            Aim::Network { .. } => f64::INFINITY,
        };
        let mut best: Option<(Key, Vec<Change>)> = None;
        for set in sets {
            let mut dc = 0.0;
            let mut dcap = 0.0;
            for ch in &set {
                let p = ch.pair;
                dc += self.pair_cost(p, &ch.counts) - self.pair_cost(p, &d.counts[p]);
                dcap += self.pair_cap(p, &ch.counts) - self.pair_cap(p, &d.counts[p]);
            }
            if cost + dc > limit + EPS_COST {
                continue;
            }
            let olds: Vec<(usize, Vec<u32>)> =
                set.iter().map(|ch| (ch.pair, Self::apply(d, ch))).collect();
            let pairs: Vec<usize> = set.iter().map(|ch| ch.pair).collect();
            let gain = if self.pb.keeps_limits_near(d, &pairs) {
                Some(self.gain(d, aim))
            } else {
                None
            };
            for (p, old) in olds.into_iter().rev() {
                d.counts[p] = old;
            }
            let Some(gain) = gain else { continue };
            if !proxy && gain <= EPS_MBPS {
                continue;
            }
            let key = key(gain.min(cap_at), dcap.min(cap_at), dc);
            if best.as_ref().is_none_or(|(k, _)| key > *k) {
                best = Some((key, set));
            }
        }
        let Some((_, set)) = best else { return false };
        for ch in &set {
            Self::apply(d, ch);
        }
        self.added += set.len();
        true
    }

    /// Path changes: for each sink set and each step size δ (the choices'
    /// capacities, and `short`), the cheapest set of pair upgrades that
    /// opens a path carrying δ more from the gateway, on top of today's
    /// max flow (a shortest path where a pair costs nothing when its
    /// residual capacity carries δ, else its cheapest upgrade that does).
    /// Series links that only help together come in one change set.
    fn paths(
        &mut self,
        d: &Design,
        sinks_list: &[Vec<usize>],
        short: f64,
        banned: Option<usize>,
    ) -> Vec<Vec<Change>> {
        let pairs = &self.pb.net.pairs;
        let edges: Vec<flow::Edge> = (0..pairs.len())
            .map(|p| (pairs[p].a, pairs[p].b, self.pair_cap(p, &d.counts[p])))
            .collect();
        let mut deltas = self.deltas.clone();
        if short.is_finite() && short > EPS_MBPS {
            deltas.push(short);
        }
        let mut upgrades: Vec<Option<Vec<Upgrade>>> = vec![None; pairs.len()];
        let mut scratch = d.clone();
        let mut out: Vec<Vec<Change>> = Vec::new();
        for sinks in sinks_list {
            self.flows += 1;
            let (_, f) = flow::flows_on(self.n, &edges, self.g, sinks);
            for &delta in &deltas {
                let Some(path) = self.cheapest_path(
                    &mut scratch,
                    &edges,
                    &f,
                    sinks,
                    delta,
                    &[banned],
                    &mut upgrades,
                ) else {
                    continue;
                };
                // Upgrades fine alone may break a limit together (two at
                // one site): then try without each of them in turn.
                let mut found = vec![path];
                if !self.keeps_limits(&mut scratch, &found[0]) {
                    let first = found.remove(0);
                    for ch in &first {
                        let without = [banned, Some(ch.pair)];
                        if let Some(other) = self.cheapest_path(
                            &mut scratch,
                            &edges,
                            &f,
                            sinks,
                            delta,
                            &without,
                            &mut upgrades,
                        ) {
                            found.push(other);
                        }
                    }
                }
                for path in found {
                    if !path.is_empty() && !out.iter().any(|o| same(o, &path)) {
                        out.push(path);
                    }
                }
            }
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn cheapest_path(
        &self,
        scratch: &mut Design,
        edges: &[flow::Edge],
        f: &[f64],
        sinks: &[usize],
        delta: f64,
        banned: &[Option<usize>],
        upgrades: &mut [Option<Vec<Upgrade>>],
    ) -> Option<Vec<Change>> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let n = self.n;
        let mut at: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (p, e) in edges.iter().enumerate() {
            if e.0 < n && e.1 < n {
                at[e.0].push(p);
                at[e.1].push(p);
            }
        }
        let mut is_sink = vec![false; n];
        for &k in sinks {
            if k < n && k != self.g {
                is_sink[k] = true;
            }
        }
        let mut dist = vec![f64::INFINITY; n];
        // How each site was reached: the pair, and its upgrade if any.
        let mut prev: Vec<Option<(usize, Option<Vec<u32>>)>> = vec![None; n];
        let mut done = vec![false; n];
        let mut heap = BinaryHeap::new();
        if self.g >= n {
            return None;
        }
        dist[self.g] = 0.0;
        heap.push(Reverse((0u64, self.g)));
        let mut reached = None;
        while let Some(Reverse((_, u))) = heap.pop() {
            if done[u] {
                continue;
            }
            done[u] = true;
            if is_sink[u] {
                reached = Some(u);
                break;
            }
            for &p in &at[u] {
                let (a, b, cap) = edges[p];
                let v = if a == u { b } else { a };
                if done[v] {
                    continue;
                }
                // Net flow a->b is f[p]; residual from u toward v.
                let residual = if a == u { cap - f[p] } else { cap + f[p] };
                let need = delta - residual;
                let (w, change) = if need <= EPS_MBPS {
                    (0.0, None)
                } else {
                    if banned.contains(&Some(p)) {
                        continue;
                    }
                    let options =
                        upgrades[p].get_or_insert_with(|| self.upgrade_options(scratch, p));
                    match options.iter().find(|o| o.0 + EPS_MBPS >= need) {
                        Some(o) => (o.1.max(0.0) + 1e-6, Some(o.2.clone())),
                        None => continue,
                    }
                };
                let nd = dist[u] + w;
                if nd < dist[v] {
                    dist[v] = nd;
                    prev[v] = Some((p, change));
                    heap.push(Reverse((nd.to_bits(), v)));
                }
            }
        }
        let mut v = reached?;
        let mut out = Vec::new();
        for _ in 0..n {
            if v == self.g {
                return Some(out);
            }
            let (p, change) = prev[v].clone()?;
            if let Some(counts) = change {
                out.push(Change { pair: p, counts });
            }
            v = if edges[p].0 == v {
                edges[p].1
            } else {
                edges[p].0
            };
        }
        None
    }

    /// True when the changes together keep every limit (`scratch` is the
    /// design, left as it was).
    fn keeps_limits(&self, scratch: &mut Design, set: &[Change]) -> bool {
        let olds: Vec<(usize, Vec<u32>)> = set
            .iter()
            .map(|ch| (ch.pair, Self::apply(scratch, ch)))
            .collect();
        let pairs: Vec<usize> = set.iter().map(|ch| ch.pair).collect();
        let ok = self.pb.keeps_limits_near(scratch, &pairs);
        for (p, old) in olds.into_iter().rev() {
            scratch.counts[p] = old;
        }
        ok
    }

    /// Pair `p`'s upgrades that keep every limit applied alone: capacity
    /// added, cost, counts; cheapest first.
    fn upgrade_options(&self, scratch: &mut Design, p: usize) -> Vec<Upgrade> {
        let cap = self.pair_cap(p, &scratch.counts[p]);
        let cost = self.pair_cost(p, &scratch.counts[p]);
        let everything = vec![vec![true; self.n]];
        let mut side = everything;
        // Any cut p crosses: the raising changes of p alone.
        side[0][self.pb.net.pairs[p].b] = false;
        let mut out = Vec::new();
        for ch in self.raising(scratch, &side, None) {
            if ch.pair != p {
                continue;
            }
            let old = Self::apply(scratch, &ch);
            let ok = self.pb.keeps_limits_near(scratch, &[p]);
            scratch.counts[p] = old;
            if ok {
                let dcap = self.pair_cap(p, &ch.counts) - cap;
                let dc = self.pair_cost(p, &ch.counts) - cost;
                out.push((dcap, dc, ch.counts));
            }
        }
        out.sort_by(|a, b| a.1.total_cmp(&b.1).then(b.0.total_cmp(&a.0)));
        out
    }

    /// Makes pairs cheaper while the design fits; true when anything
    /// changed.
    pub(super) fn prune(&mut self, d: &mut Design, target: f64) -> bool {
        let mut any = false;
        for _ in 0..MAX_ROUNDS {
            let mut changed = false;
            for (_, ch) in self.lowering(d) {
                if self.flows > self.flow_limit {
                    break;
                }
                // Earlier changes this pass may have touched the pair.
                let p = ch.pair;
                let cheaper =
                    self.pair_cost(p, &ch.counts) + EPS_COST < self.pair_cost(p, &d.counts[p]);
                if !cheaper {
                    continue;
                }
                let old = Self::apply(d, &ch);
                if self.fits(d, target, Some(p)) {
                    changed = true;
                    self.improved += 1;
                } else {
                    d.counts[p] = old;
                }
            }
            if !changed {
                break;
            }
            any = true;
        }
        any
    }

    /// Re-builds each pair as the cheapest bundle with at least its
    /// capacity that keeps the limits; true when anything changed.
    pub(super) fn rebuild(&mut self, d: &mut Design) -> bool {
        let mut any = false;
        for p in 0..d.counts.len() {
            let cap = self.pair_cap(p, &d.counts[p]);
            let cost = self.pair_cost(p, &d.counts[p]);
            if cap <= 0.0 {
                continue;
            }
            let options: Vec<Vec<u32>> = self.frontier[p]
                .iter()
                .filter(|b| b.cap + EPS_MBPS >= cap && b.cost + EPS_COST < cost)
                .map(|b| b.counts.clone())
                .collect();
            for counts in options {
                let old = std::mem::replace(&mut d.counts[p], counts);
                if self.pb.keeps_limits_near(d, &[p]) {
                    any = true;
                    self.improved += 1;
                    break;
                }
                d.counts[p] = old;
            }
        }
        any
    }

    /// Makes one pair cheaper (one radio less, a cheaper choice, a
    /// cheaper bundle) and repairs the shortfall on other pairs; kept when
    /// the whole is cheaper. True when anything changed.
    pub(super) fn drop_repair(&mut self, d: &mut Design, target: f64) -> bool {
        let mut any = false;
        for (_, ch) in self.lowering(d) {
            if self.flows > self.flow_limit {
                break;
            }
            let p = ch.pair;
            let cost = self.cost(d);
            // Earlier changes may have made this one moot.
            if self.pair_cost(p, &ch.counts) + EPS_COST >= self.pair_cost(p, &d.counts[p]) {
                continue;
            }
            let mut t = d.clone();
            Self::apply(&mut t, &ch);
            let before = (self.added, self.improved);
            let better = self.repair(&mut t, target, cost - EPS_COST, Some(p)) && {
                self.prune(&mut t, target);
                self.cost(&t) + EPS_COST < cost && self.fits(&t, target, None)
            };
            (self.added, self.improved) = before;
            if better {
                *d = t;
                any = true;
                self.improved += 1;
            }
        }
        any
    }
}

/// What a step aims at: closing shortfalls, or raising the network cut.
enum Aim {
    Short {
        target: f64,
        which: Vec<Option<usize>>,
        short: f64,
    },
    Network {
        now: f64,
    },
}

/// The same changes (pairs and counts), in any order.
fn same(a: &[Change], b: &[Change]) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|x| b.iter().any(|y| y.pair == x.pair && y.counts == x.counts))
}

/// How a change ranks: changes that raise the flow first, then capacity
/// per dollar (the flow's gain, else the capacity added across the cut),
/// free or paying changes above priced ones, then the cheaper.
type Key = (bool, f64, f64);

fn key(gain: f64, dcap: f64, dc: f64) -> Key {
    let real = gain > EPS_MBPS;
    let worth = if real { gain } else { dcap };
    (real, ratio(worth, dc), -dc)
}

/// Gain per dollar; free or paying moves rank above any priced one.
fn ratio(gain: f64, cost: f64) -> f64 {
    if cost <= EPS_COST {
        1e12 * gain - cost
    } else {
        gain / cost
    }
}
