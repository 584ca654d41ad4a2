//! Routing that survives restarts, in the simulator (real nodes, seeded):
//! a router that reboots while a link dies converges as fast as the link
//! change alone, an ingress that reboots loses only the time it was down,
//! and a seeded campaign of random restarts and link flaps on a mesh
//! never leaves a flow dark for longer than the disruption plus a second,
//! never delivers a packet twice and never loops one.

mod common;

use braid_proto::time::Instant;
use braid_sim::{FlowResult, RunResult, Scenario, World};
use common::{runs, scenario};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn voip(r: &RunResult) -> &FlowResult {
    &r.flows[0]
}

#[test]
fn a_router_restart_with_a_link_change_converges_as_fast_as_the_link_change_alone() {
    let link = runs(&scenario("restart-link.toml"));
    let router = runs(&scenario("restart-router.toml"));
    for (l, r) in link.iter().zip(&router) {
        let (l, r) = (voip(l), voip(r));
        eprintln!(
            "link alone: {} lost, gap {} ms; with n3 restarting: {} lost, gap {} ms",
            l.lost, l.max_gap_ms, r.lost, r.max_gap_ms
        );
        // Before the fix: gaps of 31.5-75 s, 1,576-3,750 packets lost.
        assert!(
            r.max_gap_ms <= l.max_gap_ms + 1000.0,
            "restart gap {} ms against {} ms for the link change alone",
            r.max_gap_ms,
            l.max_gap_ms
        );
        assert_eq!(r.duplicates, 0);
    }
}

#[test]
fn an_ingress_that_restarts_for_a_second_loses_that_second_plus_at_most_one() {
    for run in runs(&scenario("restart-ingress.toml")) {
        let f = voip(&run);
        eprintln!(
            "ingress restart: {} lost, gap {} ms, {} duplicates",
            f.lost, f.max_gap_ms, f.duplicates
        );
        // Down 1 s at 50 packets/s; before the fix: 647-907 lost, gaps of
        // 13-18 s (the restarted ingress learnt the egress only at its
        // next refresh).
        assert!(f.lost <= 100, "{} lost", f.lost);
        assert!(f.max_gap_ms <= 2000.0, "gap {} ms", f.max_gap_ms);
        assert_eq!(f.duplicates, 0);
    }
}

/// One disruption of the campaign.
#[derive(Debug, Clone)]
enum Disruption {
    /// A router is down for `secs` and comes back with empty state.
    Restart { node: String, secs: f64 },
    /// A link carries nothing for `secs`; with `carrier` both ends' drivers
    /// see it go (a radio's association), else only probes reveal it.
    Flap {
        a: String,
        b: String,
        secs: f64,
        carrier: bool,
    },
}

impl Disruption {
    fn secs(&self) -> f64 {
        match self {
            Disruption::Restart { secs, .. } | Disruption::Flap { secs, .. } => *secs,
        }
    }
}

/// A `w` x `h` grid (the simulator's `grid` topology: n1..n(w*h), row by
/// row), with `flows` CBR flows between random pairs and a disruption every
/// 20 s from 40 s, all drawn from `seed`.
fn campaign(
    seed: u64,
    w: usize,
    h: usize,
    flows: usize,
    events: usize,
) -> (String, Vec<(f64, Disruption)>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut pick = |n: usize| (rng.next_u32() as usize) % n;
    let name = |r: usize, c: usize| format!("n{}", r * w + c + 1);
    let mut links = Vec::new();
    for r in 0..h {
        for c in 0..w {
            if c + 1 < w {
                links.push((name(r, c), name(r, c + 1)));
            }
            if r + 1 < h {
                links.push((name(r, c), name(r + 1, c)));
            }
        }
    }
    let nodes = w * h;
    let start = 30.0;
    let mut text = format!(
        "name = \"campaign-{seed}\"\nduration = \"{}s\"\nseed = {seed}\n\
         [topology]\nkind = \"grid\"\nwidth = {w}\nheight = {h}\n\
         [link]\ndelay = \"2ms\"\n[node]\npaths = 2\n",
        40 + 20 * events + 10
    );
    let count = ((20 * events + 20) as f64 / 0.02) as u64;
    for i in 0..flows {
        let from = pick(nodes);
        let to = (from + 1 + pick(nodes - 1)) % nodes;
        let mode = if i % 2 == 0 { "single" } else { "mirror:2" };
        text += &format!(
            "[[flows]]\nname = \"f{i}\"\nfrom = \"n{}\"\nto = \"n{}\"\nsize = 160\n\
             interval = \"20ms\"\ncount = {count}\nstart = \"{start}s\"\nmode = \"{mode}\"\n",
            from + 1,
            to + 1
        );
    }
    let mut plan = Vec::new();
    for k in 0..events {
        let at = 40.0 + 20.0 * k as f64;
        let tenths = |lo: u32, hi: u32, p: &mut dyn FnMut(usize) -> usize| {
            (lo + p((hi - lo) as usize + 1) as u32) as f64 / 10.0
        };
        let d = match pick(3) {
            0 => Disruption::Restart {
                node: format!("n{}", pick(nodes) + 1),
                secs: tenths(5, 30, &mut pick),
            },
            kind => {
                let (a, b) = links[pick(links.len())].clone();
                Disruption::Flap {
                    a,
                    b,
                    secs: tenths(10, 60, &mut pick),
                    carrier: kind == 2,
                }
            }
        };
        match &d {
            Disruption::Restart { node, secs } => {
                text += &format!(
                    "[[nodes]]\nname = \"{node}\"\ndown = [[\"{at}s\", \"{}s\"]]\n",
                    at + secs
                )
            }
            Disruption::Flap {
                a,
                b,
                secs,
                carrier,
            } => {
                text += &format!(
                    "[[links]]\nbetween = [\"{a}\", \"{b}\"]\ndown = [[\"{at}s\", \"{}s\"]]\ncarrier = {carrier}\n",
                    at + secs
                )
            }
        }
        plan.push((at, d));
    }
    (text, plan)
}

#[test]
fn a_campaign_of_random_restarts_and_link_flaps_never_leaves_a_flow_dark_for_long() {
    // The same link flapping twice would need two [[links]] entries for
    // one pair, which a scenario refuses: such draws are skipped.
    let mut checked = 0;
    for seed in 1..=6u64 {
        let (text, plan) = campaign(seed, 4, 4, 4, 10);
        let Ok(s) = Scenario::parse(&format!("campaign-{seed}"), &text) else {
            continue;
        };
        let mut world = match World::new(&s, seed) {
            Ok(w) => w,
            Err(_) => continue,
        };
        world.run_until(Instant::ZERO + s.duration, |_| {});
        let result = world.result(&s, seed);
        let looped: u64 = world
            .nodes()
            .iter()
            .map(|n| n.counters().hop_limit_exceeded)
            .sum();
        assert_eq!(looped, 0, "seed {seed}: a packet looped");
        for f in &result.flows {
            assert_eq!(
                f.duplicates, 0,
                "seed {seed}: {} delivered a packet twice",
                f.name
            );
            for o in &f.outages {
                // Each outage falls in a disruption (its last packet came
                // at most a packet or so before it began) and ends within
                // a second of the disruption's end.
                let cause = plan
                    .iter()
                    .find(|(at, d)| o.from_s >= at - 0.1 && o.from_s <= at + d.secs());
                let Some((at, d)) = cause else {
                    panic!(
                        "seed {seed}: {} dark for {} ms from {} s, no disruption then: {plan:?}",
                        f.name, o.ms, o.from_s
                    );
                };
                let back = o.from_s + o.ms / 1000.0;
                assert!(
                    back <= at + d.secs() + 1.0,
                    "seed {seed}: {} dark from {:.2} s to {back:.2} s after {d:?} at {at} s",
                    f.name,
                    o.from_s
                );
            }
        }
        let outages: Vec<String> = result
            .flows
            .iter()
            .flat_map(|f| {
                f.outages
                    .iter()
                    .map(move |o| format!("{}@{:.1}s:{:.0}ms", f.name, o.from_s, o.ms))
            })
            .collect();
        eprintln!(
            "seed {seed}: {} disruptions, outages {outages:?}",
            plan.len()
        );
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} campaigns ran");
}
