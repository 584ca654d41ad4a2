//! Paths longer than one route holds (64 hops) continue at waypoints
//! (docs/protocol.md, "Routes longer than 64 hops"): every packet
//! arrives, once, and no packet loops while the network converges.

use braid_proto::node::NodeCounters;
use braid_proto::time::Instant;
use braid_sim::{Scenario, World};

/// Two node-disjoint paths of `hops` hops between `s` and `t` (the
/// simulator's `parallel` topology), a flow of 1,000 packets every 20 ms
/// from 30 s, in `mode`; `extra` is appended.
fn two_long_paths(hops: usize, mode: &str, extra: &str) -> Scenario {
    let text = format!(
        "duration = \"60s\"\n[topology]\nkind = \"parallel\"\npaths = 2\nhops = {hops}\n\
         [node]\nmode = \"{mode}\"\n\
         [[flows]]\nfrom = \"s\"\nto = \"t\"\nsize = 200\ninterval = \"20ms\"\ncount = 1000\nstart = \"30s\"\n{extra}"
    );
    Scenario::parse("long.toml", &text).unwrap()
}

/// The counters of the node named `name` (node i of the topology is id
/// i + 1; `s`, `t`, then `p{path}h{hop}`).
fn counters(w: &World, s: &Scenario, name: &str) -> NodeCounters {
    let i = s
        .topology
        .node_names()
        .iter()
        .position(|n| n == name)
        .unwrap_or_else(|| panic!("no node {name}"));
    w.nodes()[i].counters()
}

/// What every node counted, summed.
fn sum(w: &World, f: impl Fn(&NodeCounters) -> u64) -> u64 {
    w.nodes().iter().map(|n| f(&n.counters())).sum()
}

#[test]
fn mirrored_copies_cross_two_paths_of_150_hops_through_their_waypoints() {
    let s = two_long_paths(150, "mirror:2", "");
    let mut w = World::new(&s, 1).unwrap();
    w.run_until(Instant::from_millis(60_000), |_| {});
    let r = w.result(&s, 1);
    let f = &r.flows[0];
    eprintln!("{f:?}");
    assert_eq!((f.sent, f.lost, f.duplicates), (1000, 0, 0), "{f:?}");
    // Each path's 149 transit nodes: the route holds the first 63, so
    // the 63rd and the 125th route each copy on.
    for path in 0..2 {
        for hop in [62, 124] {
            let c = counters(&w, &s, &format!("p{path}h{hop}"));
            assert!(
                c.routed_on >= 1000,
                "p{path}h{hop} routed on {} of 1,000 copies",
                c.routed_on
            );
        }
        let c = counters(&w, &s, &format!("p{path}h100"));
        assert_eq!(c.routed_on, 0, "p{path}h100 is no waypoint");
    }
    assert_eq!(sum(&w, |c| c.hop_limit_exceeded + c.not_on_route), 0);
}

#[test]
fn a_link_cut_past_the_first_waypoint_reroutes_without_a_loop() {
    // Single path over two paths of 100 hops; the 81st link of the
    // first (the one in use: the lower ids) is cut at 40 s. The ingress
    // and the waypoint at hop 63 both learn it and turn to the other
    // path; while they converge no packet may loop.
    let cut = "[[links]]\nbetween = [\"p0h79\", \"p0h80\"]\ndown = [[\"40s\", \"60s\"]]\n";
    let s = two_long_paths(100, "single", cut);
    let mut w = World::new(&s, 1).unwrap();
    w.run_until(Instant::from_millis(39_000), |_| {});
    let before = counters(&w, &s, "p0h62").routed_on;
    assert!(before > 0, "the first path, through its waypoint, in use");
    w.run_until(Instant::from_millis(60_000), |_| {});
    let r = w.result(&s, 1);
    let f = &r.flows[0];
    eprintln!("{f:?}");
    // Lost: what was on the way and what left before the cut was heard
    // of (the probes' dead time); everything after arrives.
    assert!(f.lost < 200, "{f:?}");
    assert_eq!(f.duplicates, 0);
    assert!(
        counters(&w, &s, "p1h62").routed_on > 0,
        "the second path's waypoint carries the flow after the cut"
    );
    assert_eq!(
        sum(&w, |c| c.hop_limit_exceeded),
        0,
        "a packet looped until its hop limit ran out"
    );
}

#[test]
fn a_path_longer_than_the_hop_limit_is_refused_at_the_ingress_and_counted() {
    // 300 hops: more than the 255 an 8-bit hop limit can count.
    let text = "duration = \"40s\"\n[topology]\nkind = \"line\"\nnodes = 301\n\
                [[flows]]\nfrom = \"n1\"\nto = \"n301\"\ncount = 50\nstart = \"35s\"\n";
    let s = Scenario::parse("too-long.toml", text).unwrap();
    let mut w = World::new(&s, 1).unwrap();
    w.run_until(Instant::from_millis(40_000), |_| {});
    let r = w.result(&s, 1);
    assert_eq!(r.flows[0].lost, r.flows[0].sent, "{:?}", r.flows[0]);
    let ingress = counters(&w, &s, "n1");
    assert!(ingress.route_too_long >= 40, "{ingress:?}");
    assert_eq!(sum(&w, |c| c.forwarded), 0, "nothing left the ingress");
}

#[test]
fn random_flows_across_a_long_grid_arrive_whole_in_every_mode() {
    // A grid 140 wide and 3 high: many pairs are more than 64 hops
    // apart, with many equal paths between them (ties the ingress and
    // the waypoints must break alike enough to arrive).
    for mode in ["single", "mirror:2", "erasure:6,4"] {
        let text = format!(
            "duration = \"45s\"\nseed = 3\n[topology]\nkind = \"grid\"\nwidth = 140\nheight = 3\n\
             [random_flows]\nflows = 12\nmode = \"{mode}\"\nsize = 200\ninterval = \"20ms\"\ncount = 250\nstart = \"35s\"\n"
        );
        let s = Scenario::parse("grid.toml", &text).unwrap();
        let mut w = World::new(&s, 3).unwrap();
        w.run_until(Instant::from_millis(45_000), |_| {});
        let r = w.result(&s, 3);
        for f in &r.flows {
            assert_eq!((f.lost, f.duplicates), (0, 0), "{mode}: {f:?}");
        }
        assert!(
            sum(&w, |c| c.routed_on) > 0,
            "{mode}: no flow went past a waypoint"
        );
        assert_eq!(sum(&w, |c| c.hop_limit_exceeded + c.not_on_route), 0);
    }
}
