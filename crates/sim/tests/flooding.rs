//! Flooding time in the simulator (`[node] watch_flooding`) and the
//! processing time charged to routers for origin signatures (`[node]
//! origin_check_cost`, `origin_sign_cost`): the figures issue 31 asks
//! for ("signing and verification add under 20% to flooding time") come
//! from these, and they must move the way the costs do.

use braid_sim::{run_once, FloodStats, Scenario};

/// A 60-router geometric mesh, 12 s of link state, one variant's
/// settings in `node`.
fn flooding(node: &str) -> FloodStats {
    let text = format!(
        "name = \"flood\"\nduration = \"12s\"\n\
         [topology]\nkind = \"geometric\"\nnodes = 60\ndegree = 6\n\
         [link]\ndelay = \"1ms\"\n\
         [node]\nauth = true\nwatch_flooding = true\n{node}\
         [[flows]]\nname = \"one\"\nfrom = \"n1\"\nto = \"n2\"\nsize = 160\ninterval = \"100ms\"\ncount = 5\nstart = \"10s\"\n"
    );
    let s = Scenario::parse("flood", &text).unwrap();
    run_once(&s, 3, |_| {}).unwrap().flooding.expect("watched")
}

#[test]
fn flooding_is_timed_and_slows_with_what_checks_cost() {
    let plain = flooding("");
    // Every watched origin issued instances, and most reached everyone.
    assert!(plain.issued >= 8, "{plain:?}");
    assert!(plain.complete * 2 >= plain.issued, "{plain:?}");
    // Across a 1 ms-a-hop mesh of a few hops: milliseconds, not seconds.
    assert!(plain.p50_ms > 1.0 && plain.max_ms < 2000.0, "{plain:?}");
    // Signing charged at no cost changes nothing of the timing's order;
    // at 20 ms a check every hop waits for it: far slower.
    let free = flooding("sign_origins = true\n");
    let slow = flooding(
        "sign_origins = true\norigin_check_cost = \"20ms\"\norigin_sign_cost = \"10ms\"\n",
    );
    assert!(free.complete > 0 && slow.complete > 0, "{free:?} {slow:?}");
    assert!(
        slow.p50_ms > free.p50_ms + 20.0,
        "free {free:?} against 20 ms a check {slow:?}"
    );
    // The same seed, the same figures.
    assert_eq!(
        slow,
        flooding(
            "sign_origins = true\norigin_check_cost = \"20ms\"\norigin_sign_cost = \"10ms\"\n"
        )
    );
}
