//! The bundled scenarios run, reproduce what the papers measured within
//! reason, and are deterministic.

use std::path::PathBuf;

use braid_proto::time::Instant;
use braid_sim::{run_once, RunResult, Scenario};

fn scenario(name: &str) -> Scenario {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name);
    Scenario::load(&p).unwrap()
}

fn runs(s: &Scenario) -> Vec<RunResult> {
    (0..s.runs as u64)
        .map(|i| run_once(s, s.seed + i, |_| {}).unwrap())
        .collect()
}

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
