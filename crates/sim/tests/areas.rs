//! Routing areas (docs/protocol.md, "Areas"): every router keeps its own
//! area's advertisements and one summary per other area, and packets
//! cross areas through the routers at their borders.

use braid_proto::node::NodeCounters;
use braid_proto::time::Instant;
use braid_sim::{RunResult, Scenario, World};

fn scenario(topology: &str, flows: &str) -> Scenario {
    let text = format!("duration = \"40s\"\n[topology]\n{topology}\n{flows}");
    Scenario::parse("areas.toml", &text).unwrap()
}

/// `s` run for its 40 s (seed 1): the world at the end and its result.
fn run_40s(s: &Scenario) -> (World, RunResult) {
    let mut w = World::new(s, 1).unwrap();
    w.run_until(Instant::from_millis(40_000), |_| {});
    let r = w.result(s, 1);
    (w, r)
}

fn sum(w: &World, f: impl Fn(&NodeCounters) -> u64) -> u64 {
    w.nodes().iter().map(|n| f(&n.counters())).sum()
}

/// Each router's database size, and its area.
fn databases(w: &World) -> Vec<(usize, u16)> {
    w.nodes()
        .iter()
        .map(|n| (n.control().lsdb().len(), n.control().config().area))
        .collect()
}

/// 400 routers (geometric, degree 8, `topology` lines added) and 40
/// random flows of 250 packets from 20 s, run for 40 s.
fn mesh400(topology: &str) -> (World, RunResult) {
    let s = scenario(
        &format!("kind = \"geometric\"\nnodes = 400\ndegree = 8\n{topology}"),
        "[random_flows]\nflows = 40\nsize = 160\ninterval = \"20ms\"\ncount = 250\nstart = \"20s\"\n",
    );
    run_40s(&s)
}

/// The routers' mean database size.
fn mean_database(w: &World) -> f64 {
    let dbs = databases(w);
    dbs.iter().map(|d| d.0).sum::<usize>() as f64 / dbs.len().max(1) as f64
}

#[test]
fn a_line_of_two_areas_carries_a_flow_from_end_to_end() {
    let s = scenario(
        "kind = \"line\"\nnodes = 20\nareas = 2",
        "[[flows]]\nfrom = \"n1\"\nto = \"n20\"\nsize = 200\ninterval = \"20ms\"\ncount = 500\nstart = \"20s\"\n\
         [[flows]]\nfrom = \"n17\"\nto = \"n3\"\nsize = 200\ninterval = \"20ms\"\ncount = 500\nstart = \"20s\"\nmode = \"mirror:2\"\n",
    );
    let (w, r) = run_40s(&s);
    for f in &r.flows {
        eprintln!("{f:?}");
        assert_eq!((f.sent, f.lost, f.duplicates), (500, 0, 0), "{f:?}");
    }
    // The areas are the line's halves; each router holds its half's ten
    // advertisements and the other half's leader's (a router that led
    // for a moment while it knew only itself may still be held: its
    // summary ages out).
    let dbs = databases(&w);
    eprintln!("{dbs:?}");
    for (i, &(len, area)) in dbs.iter().enumerate() {
        assert_eq!(area, if i < 10 { 1 } else { 2 }, "n{}", i + 1);
        assert!((11..=13).contains(&len), "n{}: {len} advertisements", i + 1);
    }
    // Packets to the other half were routed on where they entered it.
    assert!(w.nodes()[10].counters().routed_on >= 500);
    assert!(w.nodes()[9].counters().routed_on >= 500);
    assert_eq!(sum(&w, |c| c.hop_limit_exceeded + c.not_on_route), 0);
}

#[test]
fn random_flows_in_a_mesh_of_four_areas_arrive_as_in_the_flat_mesh() {
    // 400 routers (geometric, degree 8); the same 40 random flows flat
    // and in four areas.
    let run = |areas: &str| {
        let (w, r) = mesh400(areas);
        let delivered: Vec<u64> = r.flows.iter().map(|f| f.delivered).collect();
        (
            delivered,
            mean_database(&w),
            sum(&w, |c| c.hop_limit_exceeded),
        )
    };
    let (flat, flat_db, _) = run("");
    let (areas, areas_db, looped) = run("areas = 4");
    eprintln!("flat {flat:?} (database {flat_db:.0})\nareas {areas:?} (database {areas_db:.0})");
    assert_eq!(areas, flat, "every flow arrives as it does flat");
    assert!(flat.iter().filter(|&&d| d == 250).count() >= 35, "{flat:?}");
    // A quarter of the routers, and a summary per area (or two).
    assert!(areas_db < flat_db * 0.4, "{areas_db} against {flat_db}");
    assert_eq!(looped, 0);
}

#[test]
fn a_leader_that_restarts_hands_over_and_takes_its_area_back_without_a_lasting_outage() {
    // The line of two areas; n11 (id 10) leads the second half and is on
    // the flow's path. It is down from 25 s to 27 s: n12 leads meanwhile,
    // n11 restarts with empty state and leads again. The flow (from 20 s
    // to 40 s) loses what is sent while n11 is down and until the line
    // is whole again, then nothing.
    let s = scenario(
        "kind = \"line\"\nnodes = 20\nareas = 2",
        "[[flows]]\nfrom = \"n1\"\nto = \"n20\"\nsize = 200\ninterval = \"20ms\"\ncount = 1000\nstart = \"20s\"\n\
         [[nodes]]\nname = \"n11\"\ndown = [[\"25s\", \"27s\"]]\n",
    );
    let (w, r) = run_40s(&s);
    let f = &r.flows[0];
    eprintln!("{f:?}");
    assert!(f.lost >= 100, "n11 was down 2 s on the only path: {f:?}");
    // Whole again within a few seconds of the restart: the last 10 s
    // of the flow lose nothing.
    let series = &f.lost_series;
    assert!(series.len() >= 10, "{series:?}");
    assert!(
        series[series.len() - 10..].iter().all(|&l| l == 0),
        "{series:?}"
    );
    assert_eq!(f.duplicates, 0);
    // n11 leads its area again, and the first half holds its summary.
    let leads = |i: usize| {
        w.nodes()[i]
            .control()
            .lsdb()
            .get(w.nodes()[10].id())
            .is_some_and(|r| braid_proto::area::is_summary(&r.prefixes))
    };
    assert!(leads(0) && leads(19));
    assert_eq!(sum(&w, |c| c.hop_limit_exceeded), 0);
}

#[test]
fn routers_with_ids_across_the_whole_16_bit_space_route_in_areas_as_with_dense_ids() {
    // The 400-router mesh of four areas, its routers' ids drawn from
    // 0-65,534 (`[topology] ids = "sparse"`) instead of 0-399: leaders,
    // member runs and every table keyed by id see ids far apart.
    let run = |ids: &str| {
        let (w, r) = mesh400(&format!("areas = 4\n{ids}"));
        let complete = r.flows.iter().filter(|f| f.delivered == 250).count();
        let highest = w.nodes().iter().map(|n| n.id().0).max().unwrap_or(0);
        let dup = r.flows.iter().map(|f| f.duplicates).sum::<u64>();
        (
            complete,
            highest,
            mean_database(&w),
            dup,
            sum(&w, |c| c.hop_limit_exceeded),
        )
    };
    let dense = run("");
    let sparse = run("ids = \"sparse\"");
    eprintln!("dense {dense:?}\nsparse {sparse:?}");
    assert_eq!(dense.1, 399);
    assert!(sparse.1 > 60_000, "ids spread: the highest is {}", sparse.1);
    assert!(
        sparse.0 + 1 >= dense.0,
        "complete flows: {} against {}",
        sparse.0,
        dense.0
    );
    assert!(sparse.0 >= 35, "{} of 40 flows complete", sparse.0);
    // Each router holds about its area, as with dense ids.
    assert!(
        sparse.2 < dense.2 * 1.5 && dense.2 < 200.0,
        "{} against {}",
        sparse.2,
        dense.2
    );
    assert_eq!((sparse.3, sparse.4), (0, 0), "no duplicates, no loops");
}
