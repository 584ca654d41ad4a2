//! Links cut on flows' paths (`[[path_cuts]]`), in the simulator: each
//! cut takes a link the flow's packets cross (they stop arriving), and a
//! network that takes silent neighbors down (`dead_after`) routes around
//! it before the link comes back, and no later than one that waits for
//! the probes' link estimates.

use braid_sim::{run_once, Scenario};

fn scenario(dead_after: Option<u32>) -> Scenario {
    let node = dead_after.map_or(String::new(), |n| format!("[node]\ndead_after = {n}\n"));
    let text = format!(
        "duration = \"60s\"\nseed = 3\n[topology]\nkind = \"geometric\"\nnodes = 40\ndegree = 8\n\
         [link]\ndelay = \"1ms\"\n{node}\
         [random_flows]\nflows = 4\nsize = 160\ninterval = \"20ms\"\ncount = 2000\nstart = \"15s\"\n\
         [[path_cuts]]\nat = \"20s\"\nevery = \"9s\"\nfor = \"6s\"\n"
    );
    Scenario::parse("cuts.toml", &text).unwrap()
}

#[test]
fn a_cut_on_the_path_stops_the_flow_and_silent_neighbors_taken_down_reroute_it() {
    let slow = run_once(&scenario(None), 3, |_| {}).unwrap();
    let fast = run_once(&scenario(Some(3)), 3, |_| {}).unwrap();
    assert_eq!(slow.cuts.len(), 4);
    assert_eq!(fast.cuts.len(), 4);
    for (i, (s, f)) in slow.cuts.iter().zip(&fast.cuts).enumerate() {
        eprintln!("flow {i}: probes alone {s:?}; dead_after 3 {f:?}");
        assert!(s.link.is_some() && f.link.is_some(), "flow {i} had a path");
        assert_eq!(s.at_s, 20.0 + 9.0 * i as f64);
        // Every cut took a link the flow used: it went dark for a second
        // or more (a flow's packets 20 ms apart), and with neighbors
        // taken down after three silent probe intervals it came back
        // before the link did.
        let (s, f) = (s.outage_ms.unwrap(), f.outage_ms.unwrap());
        assert!(s >= 1_000.0, "flow {i}: {s} ms without dead_after");
        assert!(
            (1_000.0..5_900.0).contains(&f),
            "flow {i}: {f} ms with dead_after 3"
        );
    }
    let total = |r: &braid_sim::RunResult| r.cuts.iter().filter_map(|c| c.outage_ms).sum::<f64>();
    assert!(
        total(&fast) <= total(&slow),
        "{} ms against {} ms",
        total(&fast),
        total(&slow)
    );
}
