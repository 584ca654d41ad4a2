//! The shipped synthetic WISP (scenarios/plan/wisp64.json) and price
//! table (scenarios/plan/prices.csv): reproducible from the generator,
//! shaped like WISPR's section 2, and readable by the planner and by
//! braid's simulator.

use std::path::{Path, PathBuf};

use braid_plan::design::Problem;
use braid_plan::fit::fit_prices;
use braid_plan::network::{parse, Network, Role};
use braid_plan::prices::parse_csv;
use braid_plan::synth::{synthetic_wisp, SYNTHETIC_WISP_SEED};

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/plan")
}

fn read(name: &str) -> String {
    let path = scenarios().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn shipped() -> Network {
    parse(&read("wisp64.json")).unwrap_or_else(|e| panic!("wisp64.json: {e}"))
}

#[test]
fn the_shipped_network_is_the_generators_output() {
    let text = read("wisp64.json");
    assert!(
        text == synthetic_wisp(SYNTHETIC_WISP_SEED),
        "scenarios/plan/wisp64.json differs from synthetic_wisp({SYNTHETIC_WISP_SEED}); \
         regenerate it: cargo run -p braid-plan --example synth_wisp > scenarios/plan/wisp64.json"
    );
}

#[test]
fn the_shipped_network_is_a_tree_of_64_sites_to_41_edge_sites() {
    let net = shipped();
    assert_eq!(net.sites.len(), 64);
    let count = |r: Role| net.sites.iter().filter(|s| s.role == r).count();
    assert_eq!(count(Role::Gateway), 1);
    assert_eq!(count(Role::Edge), 41);
    assert_eq!(count(Role::Backhaul), 22);
    let links: Vec<_> = net.pairs.iter().filter(|p| p.exists()).collect();
    assert_eq!(links.len(), 63);
    assert_eq!(
        net.pairs.len() - links.len(),
        25,
        "line-of-sight candidates"
    );
    // Connected with n - 1 links: a tree.
    let mut seen = vec![false; net.sites.len()];
    let mut todo = vec![net.gateway];
    seen[net.gateway] = true;
    while let Some(v) = todo.pop() {
        for p in &links {
            if p.a == v || p.b == v {
                let u = p.other(v);
                if !seen[u] {
                    seen[u] = true;
                    todo.push(u);
                }
            }
        }
    }
    assert!(seen.iter().all(|&s| s), "not connected");
    // Every leaf is an edge site; every link carries one radio at 20/40 MHz.
    for s in 0..net.sites.len() {
        let degree = links.iter().filter(|p| p.a == s || p.b == s).count();
        if degree == 1 {
            assert_eq!(net.sites[s].role, Role::Edge, "leaf {}", net.sites[s].id);
        }
    }
    for p in &links {
        assert_eq!(p.radios.len(), 1);
        assert!([20, 40].contains(&p.radios[0].channel_mhz));
        assert_eq!(p.routing_cost, Some(1.0));
    }
}

#[test]
fn distances_follow_the_papers_distribution() {
    let net = shipped();
    let mut d: Vec<f64> = net
        .pairs
        .iter()
        .filter(|p| p.exists())
        .map(|p| p.distance_m)
        .collect();
    d.sort_by(f64::total_cmp);
    let median = d[d.len() / 2];
    let mean = d.iter().sum::<f64>() / d.len() as f64;
    let longest = d[d.len() - 1];
    assert!((560.0..=720.0).contains(&median), "median {median}");
    assert!((1800.0..=2600.0).contains(&mean), "mean {mean}");
    assert!(
        (20_000.0..=32_000.0).contains(&longest),
        "longest {longest}"
    );
    // Mostly below 400 Mbit/s, like figure 3.
    let slow = net
        .pairs
        .iter()
        .filter(|p| p.exists() && p.capacity_mbps() < 400.0)
        .count();
    assert!(slow * 10 >= 63 * 6, "{slow} of 63 links below 400 Mbit/s");
}

#[test]
fn the_min_cut_and_todays_cost_are_like_the_papers_base_topology() {
    let net = shipped();
    let catalogue = parse_csv(&read("prices.csv")).unwrap_or_else(|e| panic!("prices.csv: {e}"));
    let problem = Problem::new(&net, &catalogue, false).unwrap_or_else(|e| panic!("{e}"));
    let today = problem.today();
    let cut = problem.network_cut(&today).value_mbps;
    assert!((2000.0..=3000.0).contains(&cut), "network min cut {cut}");
    let cost = problem.evaluate(&today).list_cost;
    // Table 2's base topology: $27,565.
    assert!(
        (27_565.0 * 0.75..=27_565.0 * 1.25).contains(&cost),
        "today's cost {cost}"
    );
    // Some model reaches every line-of-sight pair.
    for p in net.pairs.iter().filter(|p| !p.exists()) {
        assert!(!catalogue.reaching(p.distance_m).is_empty(), "{p:?}");
    }
    assert!(
        catalogue.longest_reach_m() >= net.pairs.iter().map(|p| p.distance_m).fold(0.0, f64::max)
    );
}

#[test]
fn the_price_table_is_roughly_quadratic_like_figure_6() {
    let catalogue = parse_csv(&read("prices.csv")).unwrap_or_else(|e| panic!("prices.csv: {e}"));
    assert!((10..=14).contains(&catalogue.models.len()));
    let fit = fit_prices(&catalogue).unwrap();
    assert!((0.8..=0.95).contains(&fit.r_squared), "{fit:?}");
    assert!(fit.c > 0.0, "{fit:?}");
    let prices = catalogue.models.iter().map(|m| m.price);
    let (lo, hi) = (
        prices.clone().fold(f64::MAX, f64::min),
        prices.fold(0.0, f64::max),
    );
    assert!(
        (100.0..=250.0).contains(&lo) && (2500.0..=3500.0).contains(&hi),
        "{lo}..{hi}"
    );
}

#[test]
fn braids_simulator_reads_the_topology() {
    // braid-sim reads NetJSON with braid_proto::netjson (which needs a
    // numeric cost on every link) when a scenario names the file.
    let scenario = "name = \"wisp64\"\nduration = \"1s\"\n\n[topology]\nkind = \"netjson\"\nfile = \"wisp64.json\"\n";
    let s = braid_sim::Scenario::parse_in("wisp64.toml", scenario, &scenarios())
        .unwrap_or_else(|e| panic!("{e}"));
    let names = s.topology.node_names();
    assert_eq!(names.len(), 64);
    assert!(names.iter().any(|n| n == "gw"));
}
