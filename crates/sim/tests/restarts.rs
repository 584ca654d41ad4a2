//! Routing that survives restarts, in the simulator (real nodes, seeded):
//! a router that reboots while a link dies converges as fast as the link
//! change alone, an ingress that reboots loses only the time it was down,
//! and a seeded campaign of faults on a keyed mesh (random restarts with
//! empty state, link flaps silent or with carrier loss, partitions and
//! heals, and hostile strangers forging, replaying and injecting all
//! along) never leaves a flow dark for longer than the disruption plus a
//! second, never delivers a packet twice, never loops one, and never lets
//! a stranger's message into a table.

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
    /// Every link between two columns of the grid carries nothing for
    /// `secs` (silently): the mesh is cut in two, then heals.
    Partition {
        links: Vec<(String, String)>,
        secs: f64,
    },
}

impl Disruption {
    fn secs(&self) -> f64 {
        match self {
            Disruption::Restart { secs, .. }
            | Disruption::Flap { secs, .. }
            | Disruption::Partition { secs, .. } => *secs,
        }
    }
}

/// A `w` x `h` grid (the simulator's `grid` topology: n1..n(w*h), row by
/// row) with authentication on, with `flows` CBR flows between random
/// pairs, a disruption every 20 s from 40 s, and two strangers near
/// random nodes from 20 s to the end (200 datagrams a second each), all
/// drawn from `seed`; even seeds sign origins (`sign_origins`).
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
         [link]\ndelay = \"2ms\"\n[node]\npaths = 2\nauth = true\nsign_origins = {}\n",
        40 + 20 * events + 10,
        // Every other seed with per-origin signatures: the same invariants.
        seed.is_multiple_of(2)
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
    for _ in 0..2 {
        text += &format!(
            "[[strangers]]\nnear = [\"n{}\"]\nrate = 200\nfrom = \"20s\"\n",
            pick(nodes) + 1
        );
    }
    let mut plan = Vec::new();
    let mut used: Vec<(String, String)> = Vec::new();
    for k in 0..events {
        let at = 40.0 + 20.0 * k as f64;
        let tenths = |lo: u32, hi: u32, p: &mut dyn FnMut(usize) -> usize| {
            (lo + p((hi - lo) as usize + 1) as u32) as f64 / 10.0
        };
        let cut = |c: usize| -> Vec<(String, String)> {
            (0..h).map(|r| (name(r, c), name(r, c + 1))).collect()
        };
        let d = match pick(4) {
            0 => Disruption::Restart {
                node: format!("n{}", pick(nodes) + 1),
                secs: tenths(5, 30, &mut pick),
            },
            3 => {
                let links = cut(pick(w - 1));
                if links.iter().any(|l| used.contains(l)) {
                    // One [[links]] entry per pair: a restart instead.
                    Disruption::Restart {
                        node: format!("n{}", pick(nodes) + 1),
                        secs: tenths(5, 30, &mut pick),
                    }
                } else {
                    used.extend(links.iter().cloned());
                    Disruption::Partition {
                        links,
                        secs: tenths(20, 60, &mut pick),
                    }
                }
            }
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
            Disruption::Partition { links, secs } => {
                for (a, b) in links {
                    text += &format!(
                        "[[links]]\nbetween = [\"{a}\", \"{b}\"]\ndown = [[\"{at}s\", \"{}s\"]]\n",
                        at + secs
                    )
                }
            }
        }
        if let Disruption::Flap { a, b, .. } = &d {
            used.push((a.clone(), b.clone()));
        }
        plan.push((at, d));
    }
    (text, plan)
}

#[test]
fn a_campaign_of_faults_and_forgers_keeps_every_invariant() {
    // The same link flapping twice would need two [[links]] entries for
    // one pair, which a scenario refuses: such draws are skipped.
    // BRAID_CAMPAIGN_SEEDS=N runs N seeds (the larger runs documented in
    // docs/security.md); CI runs 6.
    let seeds: u64 = std::env::var("BRAID_CAMPAIGN_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6);
    let mut checked = 0;
    for seed in 1..=seeds {
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
        // No route a node holds names a node twice (a source route that
        // visits a node twice would loop without spending its hop limit
        // first).
        let nodes = world.nodes();
        for n in nodes {
            for (_, paths) in n.routes() {
                for path in paths {
                    let mut seen = std::collections::BTreeSet::new();
                    assert!(
                        path.iter().all(|h| seen.insert(*h)),
                        "seed {seed}: a looping route {path:?}"
                    );
                }
            }
        }
        // Nothing a stranger sent entered a table: every database holds
        // real origins only, each as the origin itself last issued it or
        // older (never a forged newer one), and the strangers were heard.
        let count = nodes.len() as u16;
        for n in nodes {
            for r in n.control().lsdb().records() {
                assert!(
                    r.origin.0 < count,
                    "seed {seed}: a forged origin {:?} at {:?}",
                    r.origin,
                    n.id()
                );
                if let Some(own) = nodes[r.origin.0 as usize].control().lsdb().get(r.origin) {
                    assert!(
                        !braid_proto::lsdb::seq_newer(r.seq, own.seq),
                        "seed {seed}: {:?} holds {:?} at {} past its own {}",
                        n.id(),
                        r.origin,
                        r.seq,
                        own.seq
                    );
                }
            }
            assert!(n.control().lsdb().len() <= count as usize);
            // No id is used twice here: restarts (their old boots'
            // advertisements still flooding) and strangers' replays
            // raise no duplicate-id alarm.
            assert_eq!(
                n.control().counters().duplicate_id_signs,
                0,
                "seed {seed}: {:?} saw a duplicate id ({:?}): {:?}",
                n.id(),
                n.control().duplicate_id_seen(),
                n.control().counters().rx_errors
            );
        }
        let refused: u64 = nodes
            .iter()
            .map(|n| {
                let e = &n.control().counters().rx_errors;
                ["bad_mac", "replayed", "stale_counter"]
                    .iter()
                    .map(|k| e.get(*k).copied().unwrap_or(0))
                    .sum::<u64>()
                    + n.counters().unauthenticated
            })
            .sum();
        assert!(
            result.injected > 1000,
            "seed {seed}: the strangers sent {}",
            result.injected
        );
        // (Counters start afresh when a node restarts: no exact sum here;
        // the fixed scenario below accounts for every datagram.)
        assert!(
            refused > 0,
            "seed {seed}: nothing refused of {} injected",
            result.injected
        );
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

#[test]
fn a_stranger_changes_nothing_in_a_keyed_mesh_and_rewrites_an_open_ones_tables() {
    let text = |auth: bool| {
        format!(
            "name = \"stranger\"\nduration = \"40s\"\n\
             [topology]\nkind = \"grid\"\nwidth = 3\nheight = 3\n\
             [link]\ndelay = \"2ms\"\n[node]\npaths = 2\nauth = {auth}\n\
             [[flows]]\nfrom = \"n1\"\nto = \"n9\"\nsize = 160\ninterval = \"20ms\"\n\
             count = 1500\nstart = \"5s\"\n\
             [[strangers]]\nnear = [\"n5\", \"n2\"]\nrate = 500\nfrom = \"10s\"\n"
        )
    };
    let run = |auth: bool| {
        let s = Scenario::parse("stranger", &text(auth)).unwrap();
        let mut world = World::new(&s, 7).unwrap();
        world.run_until(Instant::ZERO + s.duration, |_| {});
        let r = world.result(&s, 7);
        if auth {
            // Every datagram the stranger sent n2 and n5 was refused, by
            // reason, or was a replay of the node's own message (ignored
            // as its own echo) or of a challenge (counted, not answered
            // twice).
            let taken: u64 = [1usize, 4]
                .iter()
                .map(|&i| {
                    let n = &world.nodes()[i];
                    let c = n.control().counters();
                    // (unverified: replays of non-neighbors', and a few
                    // real first messages before a challenge.)
                    let refused: u64 = c.rx_errors.values().sum::<u64>() + c.unverified;
                    refused + n.counters().unauthenticated + c.rx_own + c.challenges_received
                })
                .sum();
            // Above it by the nodes' own challenges to each other (a
            // replay from a non-neighbor makes a node challenge that
            // sender, at most every 300 ms, and its neighbors count the
            // request).
            assert!(
                taken >= r.injected && taken <= r.injected + r.injected / 50,
                "{taken} accounted for of {} injected",
                r.injected
            );
        }
        let foreign: usize = world
            .nodes()
            .iter()
            .map(|n| {
                n.control()
                    .lsdb()
                    .records()
                    .filter(|r| r.origin.0 >= 9)
                    .count()
            })
            .sum();
        (r, foreign)
    };
    let (keyed, keyed_foreign) = run(true);
    let (open, open_foreign) = run(false);
    eprintln!(
        "keyed: {} of 1500 delivered, {keyed_foreign} forged origins held; open: {} delivered, {open_foreign} forged origins held",
        keyed.flows[0].delivered, open.flows[0].delivered
    );
    assert!(keyed.injected > 10_000);
    assert_eq!(keyed_foreign, 0);
    assert_eq!(
        keyed.flows[0].delivered, 1500,
        "the keyed mesh lost traffic"
    );
    assert_eq!(keyed.flows[0].duplicates, 0);
    // Without keys the same stranger's advertisements are taken.
    assert!(
        open_foreign > 0,
        "the open mesh took no forgery: the test shows nothing"
    );
}
