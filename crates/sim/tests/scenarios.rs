//! The bundled scenarios run, reproduce what the papers measured within
//! reason, and are deterministic.

mod common;

use braid_proto::time::Instant;
use braid_sim::{run_once, RunResult, Scenario};
use common::{runs, scenario};

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = v.collect();
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn wispr_5_3_one_lossy_slow_path_versus_braid_over_disjoint_paths() {
    let single = runs(&scenario("wispr-5.3-single-path.toml"));
    let braid = runs(&scenario("wispr-5.3-braid.toml"));
    let lost = |r: &[RunResult]| mean(r.iter().map(|x| x.flows[0].lost as f64));
    let delay = |r: &[RunResult]| mean(r.iter().map(|x| x.flows[0].delay_mean_ms));
    let (ls, lb, ds, db) = (lost(&single), lost(&braid), delay(&single), delay(&braid));
    eprintln!(
        "single path: {ls:.1} of 500 lost, {ds:.0} ms; braid mirror:3: {lb:.1} lost, {db:.1} ms"
    );
    // 5% of 500 = 25 (WISPR: 26.6); 500 ms + 5 ms.
    assert!((15.0..=35.0).contains(&ls), "single lost {ls}");
    assert!((495.0..=520.0).contains(&ds), "single delay {ds}");
    // Mirror over disjoint paths: the first copy comes by a good path.
    assert!(lb <= 1.0, "braid lost {lb}");
    assert!(db < 15.0, "braid delay {db}");
    assert!(
        braid.iter().all(|r| r.flows[0].duplicates == 0),
        "a host got a packet twice"
    );
}

#[test]
fn same_seed_same_bytes_of_output() {
    let s = scenario("wispr-5.3-braid.toml");
    let a = serde_json::to_string(&run_once(&s, 7, |_| {}).unwrap()).unwrap();
    let b = serde_json::to_string(&run_once(&s, 7, |_| {}).unwrap()).unwrap();
    assert_eq!(a, b);
    let c = serde_json::to_string(&run_once(&s, 8, |_| {}).unwrap()).unwrap();
    assert_ne!(a, c, "another seed gives another run");
}

#[test]
fn progress_is_reported_in_simulated_time() {
    let s = scenario("wispr-5.3-single-path.toml");
    let mut ticks = Vec::new();
    run_once(&s, 1, |t: Instant| ticks.push(t.as_micros() / 1_000_000)).unwrap();
    assert!(ticks.len() >= 40, "{} ticks", ticks.len());
    assert!(ticks.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn loss_sweep_tracks_theory() {
    let s = scenario("loss-sweep.toml");
    let report = braid_sim::run_scenario(&s, s.seed, s.runs, |_, _, _| {}).unwrap();
    assert_eq!(report.variants.len(), 7 * 8);
    for v in &report.variants {
        let f = &v.summary[0];
        let delivered = 1.0 - f.loss_ratio;
        let theory = f.theory_delivery.expect("a path-loss sweep has theory");
        // 2 runs x 2000 packets: within 2 points of the formula.
        assert!(
            (delivered - theory).abs() < 0.02,
            "{} at {:?}: measured {delivered:.4}, theory {theory:.4}",
            f.mode,
            v.path_loss
        );
        assert_eq!(f.duplicates, 0.0);
    }
}

#[test]
fn failure_of_the_active_path() {
    let s = scenario("failure.toml");
    let report = braid_sim::run_scenario(&s, s.seed, s.runs, |_, _, _| {}).unwrap();
    let (single, mirror) = (
        &report.variants[0].summary[0],
        &report.variants[1].summary[0],
    );
    assert_eq!(single.mode, "single");
    assert!(
        single.lost > 0.0 && single.max_gap_ms < 4000.0,
        "single: {} lost, {} ms outage",
        single.lost,
        single.max_gap_ms
    );
    assert_eq!(mirror.lost, 0.0, "mirror lost packets");
    assert!(mirror.max_gap_ms < 100.0);
}

#[test]
fn rain_fade_on_a_netjson_backhaul() {
    let s = scenario("rain-fade.toml");
    assert!(s.topology.node_names().contains(&"clinic".to_string()));
    let report = braid_sim::run_scenario(&s, s.seed, s.runs, |_, _, _| {}).unwrap();
    let (single, mirror) = (
        &report.variants[0].summary[0],
        &report.variants[1].summary[0],
    );
    eprintln!(
        "rain fade: single lost {:.1}, mirror:2 lost {:.1}",
        single.lost, mirror.lost
    );
    // The single path is church-clinic (cheapest) until the fade makes
    // its ETX worse; some packets die before the route moves.
    assert!(single.lost > 5.0, "single lost {}", single.lost);
    assert!(
        mirror.lost < single.lost / 5.0,
        "mirror lost {} vs single {}",
        mirror.lost,
        single.lost
    );
}

#[test]
fn a_node_that_fails_and_restarts_is_routed_around_then_rejoins() {
    let text = r#"
duration = "90s"
[topology]
kind = "parallel"
paths = 2
hops = 2
[[nodes]]
name = "p0h0"
down = [["40s", "60s"]]
[[flows]]
from = "s"
to = "t"
count = 2500
start = "30s"
"#;
    let s = Scenario::parse("inline.toml", text).unwrap();
    let mut w = braid_sim::World::new(&s, 1).unwrap();
    w.run_until(Instant::from_millis(55_000), |_| {});
    // While p0h0 is down, traffic moved to the other path.
    let r = w.result(&s, 1);
    assert!(
        r.flows[0].max_gap_ms < 5_000.0,
        "outage {} ms",
        r.flows[0].max_gap_ms
    );
    w.run_until(Instant::from_millis(90_000), |_| {});
    let r = w.result(&s, 1);
    assert!(r.flows[0].loss_ratio < 0.1, "{:?}", r.flows[0]);
    // The restarted node is back in everyone's link state.
    let s_node = &w.nodes()[0];
    let back = s_node.control().lsdb().get(braid_wire::NodeId(2));
    assert!(
        back.is_some_and(|rec| !rec.links.is_empty()),
        "p0h0 rejoined"
    );
}

#[test]
fn real_tcp_goodput_single_stripe_mirror() {
    let mut s = scenario("tcp-goodput.toml");
    s.sweep.path_loss = vec![0.0, 0.1];
    s.runs = 1;
    let report = braid_sim::run_scenario(&s, s.seed, s.runs, |_, _, _| {}).unwrap();
    let g = |mode: &str, loss: f64| {
        report
            .variants
            .iter()
            .find(|v| v.mode.as_deref() == Some(mode) && v.path_loss == Some(loss))
            .unwrap()
            .summary[0]
            .goodput_mbps
    };
    eprintln!(
        "tcp: single {:.2}/{:.2}, stripe {:.2}/{:.2}, mirror {:.2}/{:.2}",
        g("single", 0.0),
        g("single", 0.1),
        g("stripe", 0.0),
        g("stripe", 0.1),
        g("mirror:2", 0.0),
        g("mirror:2", 0.1)
    );
    // A 10 Mbit/s path carries a few Mbit/s of TCP; striping two adds up.
    assert!((4.0..10.0).contains(&g("single", 0.0)));
    assert!(g("stripe", 0.0) > 1.5 * g("single", 0.0));
    // At 10% loss per path, mirroring keeps TCP alive where one path does not.
    assert!(g("mirror:2", 0.1) > 5.0 * g("single", 0.1));
}

/// Each `[[variants]]` entry of a scenario, run for `seeds` seeds.
fn variant_runs(s: &Scenario, seeds: u64) -> Vec<(String, Vec<RunResult>)> {
    s.variants()
        .into_iter()
        .map(|v| {
            let runs = (0..seeds)
                .map(|i| run_once(&v.scenario, s.seed + i, |_| {}).unwrap())
                .collect();
            (v.name.unwrap_or_default(), runs)
        })
        .collect()
}

#[test]
fn handoff_late_binding_loses_at_most_what_is_bound_and_copies_lose_nothing_and_trees_reach_an_unmodified_client(
) {
    let s = scenario("handoff.toml");
    let v = variant_runs(&s, 2);
    let stat = |i: usize, f: &dyn Fn(&RunResult) -> f64| mean(v[i].1.iter().map(f));
    let voip_lost = |i| stat(i, &|r| r.flows[0].lost as f64);
    let down_lost = |i| stat(i, &|r| r.flows[1].lost as f64);
    let voip_p99 = |i| stat(i, &|r| r.flows[0].delay_p99_ms);
    let retx = |i| stat(i, &|r| r.flows[2].retransmits as f64);
    for (i, (name, _)) in v.iter().enumerate() {
        eprintln!(
            "{name}: voip lost {:.1}, p99 {:.1} ms; tcp retransmits {:.1}",
            voip_lost(i),
            voip_p99(i),
            retx(i)
        );
    }
    assert_eq!(v.len(), 4);
    // Early binding: the 50-packet driver queue toward ap1 dies with the
    // link, and the call waits behind the upload in it.
    assert!(retx(0) >= 20.0, "early binding retransmits {}", retx(0));
    assert!(voip_lost(0) >= 1.0 && voip_p99(0) > 50.0);
    // Late binding: at most 2 packets were below the binding point.
    assert!(voip_lost(1) <= 2.0 && retx(1) <= 4.0, "late binding");
    assert!(voip_p99(1) < 30.0, "the call does not queue behind bulk");
    // Copies through both access points: the move loses nothing.
    assert_eq!(voip_lost(2), 0.0);
    assert_eq!(down_lost(2), 0.0);
    assert!(retx(2) <= retx(1));
    // SMesh trees to an unmodified client: nothing lost toward it; from
    // it, what its own driver queue held when ap1 went (as early binding).
    eprintln!("trees: voip down lost {:.1}", down_lost(3));
    assert_eq!(down_lost(3), 0.0, "the tree reaches both access points");
    assert!(
        voip_lost(3) >= 1.0,
        "an unmodified client has no binding point"
    );
    // Every TCP upload kept going after the move.
    for (_, runs) in &v {
        for r in runs {
            assert!(r.flows[2].goodput_mbps > 3.0, "{}", r.flows[2].goodput_mbps);
        }
    }
}

/// A triangle: a direct link that works only at the base rate, and a
/// two-hop detour at 11 Mbit/s.
const TRIANGLE: &str = r#"
duration = "40s"
[topology]
kind = "links"
links = [["a", "c"], ["a", "b"], ["b", "c"]]
[radio]
[link]
retries = 7
rate_loss = [0.0, 0.0, 0.0, 0.02]
[[links]]
between = ["a", "c"]
retries = 7
rate_loss = [0.05, 0.3, 0.9, 0.98]
[node]
paths = 1
[[flows]]
kind = "tcp"
from = "a"
to = "c"
start = "20s"
duration = "15s"
[[variants]]
name = "hop"
metric = "hop"
[[variants]]
name = "ett"
metric = "ett"
"#;

#[test]
fn ett_takes_the_fast_detour_that_hop_count_misses() {
    let s = Scenario::parse("triangle.toml", TRIANGLE).unwrap();
    let v = variant_runs(&s, 1);
    let goodput = |i: usize| v[i].1[0].flows[0].goodput_mbps;
    let hops = |i: usize| v[i].1[0].links["b->c"].delivered;
    eprintln!(
        "hop count {:.2} Mbit/s, ETT {:.2} Mbit/s",
        goodput(0),
        goodput(1)
    );
    assert!(hops(0) < 100, "hop count takes the direct link");
    assert!(hops(1) > 1000, "ETT takes the detour");
    // 1 Mbit/s with retries against two hops at 11 Mbit/s.
    assert!(goodput(0) < 1.2 && goodput(1) > 1.6 * goodput(0));
}

#[test]
fn transient_failures_move_routes_only_without_ignore_fail() {
    let text = format!(
        "{}\n[link]\nretries = 1\nfades_every = \"2s\"\nfades_last = \"200ms\"\nfades_loss = 1.0\n",
        "duration = \"60s\"\n[topology]\nkind = \"grid\"\nwidth = 3\nheight = 3\n[node]\npaths = 1\n[[flows]]\nfrom = \"n1\"\nto = \"n9\"\ninterval = \"10ms\"\ncount = 3000\nstart = \"20s\"\n[[variants]]\nname = \"react\"\nignore_tx_failures = false\n[[variants]]\nname = \"ignore\"\nignore_tx_failures = true\n"
    );
    let s = Scenario::parse("fades.toml", &text).unwrap();
    // Per variant, summed over three seeds: (links withdrawn, route changes).
    let mut changes = Vec::new();
    for v in s.variants() {
        let (mut withdrawn, mut moved) = (0, 0);
        for seed in 1..=3 {
            let mut w = braid_sim::World::new(&v.scenario, seed).unwrap();
            w.run_until(Instant::ZERO + v.scenario.duration, |_| {});
            let failures: u64 = w.nodes().iter().map(|n| n.counters().tx_failures).sum();
            assert!(failures > 10, "the fades make frames fail");
            moved += w
                .nodes()
                .iter()
                .map(|n| n.counters().route_changes)
                .sum::<u64>();
            withdrawn += w
                .nodes()
                .iter()
                .map(|n| n.control().counters().links_failed)
                .sum::<u64>();
        }
        eprintln!(
            "{:?}: {withdrawn} links withdrawn, {moved} route changes",
            v.name
        );
        changes.push((withdrawn, moved));
    }
    assert!(changes[0].0 > 10, "reacting withdraws the failed links");
    assert_eq!(changes[1].0, 0, "ignore-fail withdraws nothing");
    // Reacting moves routes on every fade; ignoring only on what the
    // probes see (the fades also lose probes).
    assert!(changes[0].1 * 4 > changes[1].1 * 5, "{changes:?}");
}

/// Every simulator scenario shipped in `scenarios/` and `scenarios/bench/`
/// (not the lab's in `scenarios/lab/`) passes the checks a user's file
/// gets.
#[test]
fn every_shipped_scenario_parses() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut checked = 0;
    for d in [dir.clone(), dir.join("bench")] {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                if let Err(e) = Scenario::load(&path) {
                    panic!("{}: {e}", path.display());
                }
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 10,
        "only {checked} scenarios found in {}",
        dir.display()
    );
}

/// One radio link that works at 5.5 Mbit/s and barely at 11: how the
/// bit-rate is chosen and whether a failed frame is handed to the radio
/// again decide what is lost (SrcRR sections 3.3, 4.3 and 4.4).
const ONE_RADIO_LINK: &str = r#"
duration = "80s"
[topology]
kind = "links"
links = [["a", "b"]]
[radio]
[node]
paths = 1
[[flows]]
from = "a"
to = "b"
interval = "10ms"
count = 5000
start = "20s"
[[variants]]
name = "ideal"
rate_control = "ideal"
[[variants]]
name = "probes"
rate_control = "probes"
[[variants]]
name = "firmware"
rate_control = "firmware"
[[variants]]
name = "ideal, persistence 40"
rate_control = "ideal"
persistence = 40
"#;

#[test]
fn rate_control_and_persistence_decide_what_a_lossy_radio_link_loses() {
    let lost = |link: &str| -> Vec<u64> {
        let s = Scenario::parse(
            "one-link.toml",
            &format!("{ONE_RADIO_LINK}[link]\nretries = 7\n{link}"),
        )
        .unwrap();
        variant_runs(&s, 2)
            .iter()
            .map(|(_, runs)| runs.iter().map(|r| r.flows[0].lost).sum::<u64>())
            .collect()
    };
    let steady = lost("rate_loss = [0.0, 0.0, 0.0, 0.97]\n");
    eprintln!("lost of 10000 (ideal, probes, firmware, persistence 40): steady link {steady:?}");
    // The firmware goes back to 11 Mbit/s after every 10 s without a
    // failure, where most frames fail all 8 attempts; the probes find
    // 5.5 Mbit/s, as the ideal controller does.
    assert!(steady[2] >= 5, "{steady:?}");
    assert!(steady[0] + steady[1] <= 2, "{steady:?}");
    // Short deep fades: their failed frames are lost with 8 attempts and
    // not with 320.
    let fades = lost("rate_loss = [0.0, 0.0, 0.0, 0.97]\nfades_every = \"5s\"\nfades_last = \"300ms\"\nfades_loss = 0.9\n");
    eprintln!("with fades: {fades:?}");
    assert!(fades[0] > 20, "the fades make frames fail: {fades:?}");
    assert!(fades[3] * 10 < fades[0], "{fades:?}");
}

/// Paths that lose different shares: the theory follows each path's own
/// loss, and the simulator follows the theory.
#[test]
fn a_sweep_of_unequal_paths_tracks_theory() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/loss-sweep.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.replacen("[sweep]\n", "[sweep]\npath_scale = [1.0, 0.5, 0.0]\n", 1);
    let s = Scenario::parse("unequal.toml", &text).unwrap();
    let report = braid_sim::run_scenario(&s, s.seed, s.runs, |_, _, _| {}).unwrap();
    let mut checked = 0;
    for v in &report.variants {
        let f = &v.summary[0];
        let theory = f.theory_delivery.expect("a path-loss sweep has theory");
        let delivered = 1.0 - f.loss_ratio;
        eprintln!(
            "{} at {:?}: measured {delivered:.4}, theory {theory:.4}",
            f.mode, v.path_loss
        );
        if f.mode == "single" {
            // One path, the one routing holds: the lossless one once its
            // cost is known, the first until then (damping keeps a
            // route that is not clearly worse): between the two.
            let worst = 1.0 - v.path_loss.unwrap();
            assert!(
                delivered >= worst - 0.02 && delivered <= theory,
                "single: {delivered:.4}"
            );
            checked += 1;
            continue;
        }
        // Within 2% of theory, except that stripe may deliver up to 3%
        // more: its split leans a little off the lossiest path at high
        // loss (the theory weighs the paths equally). Measured at 25%:
        // 0.8820 against 0.8750 when path reports took the session's
        // mode, 0.8962 since they are mirrored on every path and all
        // arrive; at 30%, 0.8648-0.8680 against 0.85. (This flow leaves
        // no queue above the binding point, so its striped packets keep
        // the paths the split gives them: bound wherever there was room,
        // it rode the lossless first path alone, 1.0000 at every loss.)
        let above = if f.mode == "stripe" { 0.03 } else { 0.02 };
        assert!(
            delivered > theory - 0.02 && delivered < theory + above,
            "{} at {:?}: measured {delivered:.4}, theory {theory:.4}",
            f.mode,
            v.path_loss
        );
        checked += 1;
    }
    assert_eq!(checked, 7 * 8);
}

/// Two clean paths of unequal rate and delay (10 Mbit/s 10 ms, 40
/// Mbit/s 50 ms): striped and re-ordered TCP adds the paths up, with
/// delay equalisation and without it. Without it, it did not while
/// each striped packet was bound to a path as it was encoded: the
/// egress's re-order buffer gave up on the slow path's gaps and TCP
/// retransmitted what was only late (7.31 Mbit/s with 321
/// retransmissions before the lead rule, `equalise.rs`; 10.55 with 122
/// with it; 7.12 with 360 once the backlog rule also measured against
/// the shortest queue; equalised 18.68, 18.97, 19.08). Bound where
/// there is room as it leaves (`Binder::enqueue_any`): 19.31 with none,
/// equalised 19.08.
#[test]
fn striped_tcp_adds_up_unequal_paths_with_and_without_equalised_delays() {
    let s = scenario("unequal-paths.toml");
    let v = variant_runs(&s, 2);
    let find = |name: &str| {
        let runs = &v.iter().find(|(n, _)| n == name).unwrap().1;
        let goodput = mean(runs.iter().map(|r| r.flows[0].goodput_mbps));
        let retx = mean(runs.iter().map(|r| r.flows[0].retransmits as f64));
        eprintln!("{name}: {goodput:.2} Mbit/s, {retx:.1} retransmissions");
        (goodput, retx)
    };
    let (single, _) = find("single path");
    let (eq, eq_retx) = find("stripe, re-ordered, equalised");
    let (raw, raw_retx) = find("stripe, re-ordered");
    assert!(
        eq > 1.5 * single,
        "equalised {eq:.2} vs one path {single:.2}"
    );
    assert!(
        raw > 1.5 * single,
        "stripe {raw:.2} vs one path {single:.2}"
    );
    // What only late arrivals cost: a few retransmissions at most.
    assert!(
        eq_retx <= 20.0 && raw_retx <= 20.0,
        "retransmissions {eq_retx} and {raw_retx}"
    );
}
