//! Scenario files (TOML): topology, link models, node settings and
//! traffic. Every knob has a default (see `docs/simulator.md`); every
//! problem names the file, the line and the field, and a file is checked
//! whole: every problem found is reported, one per line, the first being
//! the one found first.
//!
//! | module | owns |
//! |---|---|
//! | `spec` | the checked scenario and its variants |
//! | `raw` | the file's schema as serde reads it |
//! | `parse` | reading a file: deserialize, check in order, assemble |
//! | `check_topology` | `[topology]`, and the node names the file uses |
//! | `check_links` | `[link]` and the `[[links]]` overrides |
//! | `check_sweep` | `[sweep]` |
//! | `check_events` | `[[nodes]]` failures and `[[strangers]]` |
//! | `check_nodes` | `[node]`, `[[variants]]` and `[radio]` |
//! | `check_flows` | `[random_flows]` and `[[flows]]` |
//! | `errors` | [`ScenarioError`] (every problem found) and the checker that collects them |

mod check_events;
mod check_flows;
mod check_links;
mod check_nodes;
mod check_sweep;
mod check_topology;
mod errors;
mod parse;
mod raw;
mod spec;

pub use crate::topology::TopologySpec;
pub use errors::ScenarioError;
pub use spec::{
    FlowSpec, LinkOverride, NodeFailure, NodeSettings, NodeVariant, PathCut, Scenario,
    StrangerSpec, Sweep, Variant, MAX_PERSISTENCE, MAX_SIM_NODES,
};

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use braid_proto::linkest::MetricKind;
    use braid_proto::redundancy::Mode;

    use super::*;
    use crate::link::LossModel;

    #[test]
    fn pacing_and_the_report_interval_are_taken_and_checked() {
        let base = "name = \"x\"\n[topology]\nkind = \"parallel\"\npaths = 2\nhops = 2\n";
        let s = Scenario::parse("x.toml", base).unwrap();
        assert!(!s.pace);
        assert_eq!(s.report_interval, None);
        let text = format!("{base}[node]\npace = true\nreport_interval = \"250ms\"\n");
        let s = Scenario::parse("x.toml", &text).unwrap();
        assert!(s.pace);
        assert_eq!(s.report_interval, Some(Duration::from_millis(250)));
        let bad = format!("{base}[node]\nreport_interval = \"5ms\"\n");
        let e = Scenario::parse("x.toml", &bad).unwrap_err();
        assert_eq!(e.field, "node.report_interval");
        assert!(e.message.contains("50 ms to 10 s"), "{e}");
    }

    #[test]
    fn a_huge_topology_is_refused_before_it_is_built() {
        // Found by the scenario_text fuzz target: 2.8 billion hops per path
        // allocated until memory ran out.
        let text = "name = \"x\"\n[topology]\nkind = \"parallel\"\npaths = 3\nhops = 2777777777\n";
        let e = Scenario::parse("x.toml", text).unwrap_err();
        assert_eq!(e.field, "topology.hops");
        assert!(e.message.contains("at most 10000 nodes"), "{e}");
        let grid = "name = \"x\"\n[topology]\nkind = \"grid\"\nwidth = 1000\nheight = 1000\n";
        assert_eq!(
            Scenario::parse("x.toml", grid).unwrap_err().field,
            "topology.width"
        );
    }

    const SWEPT: &str = r#"
name = "swept"
duration = "60s"
[topology]
kind = "parallel"
paths = 2
hops = 2
[link]
loss = 0.1
burst = 8
[[links]]
between = ["s", "p0h0"]
delay = "50ms"
down = [["3s", "4s"]]
[[flows]]
from = "s"
to = "t"
[sweep]
path_loss = [0.2]
"#;

    #[test]
    fn a_loss_sweep_keeps_the_first_hops_burst_and_override() {
        // The sweep's loss with [link]'s burst.
        let swept = |v: &Scenario, p: usize| {
            let loss = v.hop_spec("s", &format!("p{p}h0")).loss;
            assert!((loss.mean_loss() - 0.2).abs() < 1e-9, "{loss:?}");
            assert!((loss.mean_burst().unwrap() - 8.0).abs() < 1e-9, "{loss:?}");
        };
        let s = Scenario::parse("t.toml", SWEPT).unwrap();
        let v = &s.variants()[0].scenario;
        swept(v, 0);
        swept(v, 1);
        // Path 0's override keeps its delay and its down interval.
        let first = v.hop_spec("s", "p0h0");
        assert_eq!(first.delay, Duration::from_millis(50));
        assert_eq!(first.down.len(), 1);
        // The other hops keep [link]: end to end, 1 - 0.8 * 0.9 lost.
        let path = v.parallel_path_loss(1).unwrap();
        assert!((path.loss - 0.28).abs() < 1e-9, "{path:?}");
        assert!((path.burst - 8.0).abs() < 1e-9);
        // A burst given without a loss is a sweep's burst too.
        let lossless = Scenario::parse("t.toml", &SWEPT.replace("loss = 0.1\n", "")).unwrap();
        let v = &lossless.variants()[0].scenario;
        swept(v, 1);
        assert_eq!(v.hop_spec("p1h0", "t").loss.mean_loss(), 0.0);
    }

    #[test]
    fn a_sweep_scales_each_paths_loss_and_refuses_bad_scales() {
        let text = SWEPT.replace(
            "path_loss = [0.2]",
            "path_loss = [0.2, 0.4]\npath_scale = [0.5]",
        );
        let s = Scenario::parse("t.toml", &text).unwrap();
        let v = s.variants();
        let first_hop = |i: usize, p: usize| {
            v[i].scenario
                .hop_spec("s", &format!("p{p}h0"))
                .loss
                .mean_loss()
        };
        // Path 0 at half the swept loss, path 1 (not listed) at all of it.
        assert!((first_hop(0, 0) - 0.1).abs() < 1e-9 && (first_hop(0, 1) - 0.2).abs() < 1e-9);
        assert!((first_hop(1, 0) - 0.2).abs() < 1e-9 && (first_hop(1, 1) - 0.4).abs() < 1e-9);
        // The theory reads each path's own loss: 1 - 0.9 x 0.9 and 1 - 0.8 x 0.9.
        assert!((v[0].scenario.parallel_path_loss(0).unwrap().loss - 0.19).abs() < 1e-9);
        assert!((v[0].scenario.parallel_path_loss(1).unwrap().loss - 0.28).abs() < 1e-9);
        for (bad, says) in [
            ("path_scale = [1.0, 1.0, 1.0]", "3 scales for 2 paths"),
            ("path_scale = [3.0]", "path 0's scale 3"),
            ("path_scale = [-1.0]", "path 0's scale -1"),
        ] {
            let text = SWEPT.replace(
                "path_loss = [0.2]",
                &format!("path_loss = [0.2, 0.4]\n{bad}"),
            );
            let err = Scenario::parse("t.toml", &text).unwrap_err();
            assert_eq!(err.field, "sweep.path_scale", "{err}");
            assert!(err.message.contains(says), "{err}");
        }
        let alone = SWEPT.replace("path_loss = [0.2]", "path_scale = [0.5]");
        assert_eq!(
            Scenario::parse("t.toml", &alone).unwrap_err().field,
            "sweep.path_scale"
        );
    }

    #[test]
    fn a_flow_outside_the_run_is_refused() {
        let late = SWEPT.replace("to = \"t\"", "to = \"t\"\nstart = \"70s\"");
        let err = Scenario::parse("t.toml", &late).unwrap_err();
        assert_eq!(err.field, "flows[0].start", "{err}");
        // 500 packets every 20 ms from 55 s: 10 s, past the 60 s end.
        let long = SWEPT.replace("to = \"t\"", "to = \"t\"\nstart = \"55s\"");
        let err = Scenario::parse("t.toml", &long).unwrap_err();
        assert_eq!(err.field, "flows[0].count", "{err}");
        let tcp = SWEPT.replace(
            "to = \"t\"",
            "to = \"t\"\nkind = \"tcp\"\nstart = \"50s\"\nduration = \"20s\"",
        );
        let err = Scenario::parse("t.toml", &tcp).unwrap_err();
        assert_eq!(err.field, "flows[0].duration", "{err}");
        assert!(Scenario::parse("t.toml", SWEPT).is_ok());
    }

    #[test]
    fn a_sweep_refuses_a_first_hop_whose_mean_it_cannot_set() {
        let text = SWEPT.replace("delay = \"50ms\"", "delay = \"50ms\"\nfades_every = \"2s\"");
        let err = Scenario::parse("t.toml", &text).unwrap_err();
        assert_eq!(err.field, "sweep.path_loss", "{err}");
        assert!(err.message.contains("path 0"), "{err}");
    }

    #[test]
    fn a_full_scenario_parses_with_defaults() {
        let s = Scenario::parse(
            "t.toml",
            r#"
name = "demo"
duration = "40s"
[topology]
kind = "parallel"
paths = 3
hops = 2
[link]
loss = 0.05
burst = 3
delay = "10ms"
rate = "10Mbit"
[[links]]
between = ["s", "p0h0"]
loss = 0.2
down = [["30s", "31s"]]
[node]
mode = "mirror:2"
[[flows]]
from = "s"
to = "t"
mode = "parity:4"
"#,
        )
        .unwrap();
        assert_eq!(s.topology, TopologySpec::Parallel { paths: 3, hops: 2 });
        assert!((s.link.loss.mean_loss() - 0.05).abs() < 1e-9);
        assert_eq!(s.link.rate_bps, Some(10_000_000));
        assert_eq!(s.links[0].spec.loss, LossModel::Bernoulli(0.2));
        assert_eq!(s.links[0].spec.down.len(), 1);
        assert_eq!(s.mode, Mode::Mirror(2));
        assert_eq!(s.flows[0].interval, Duration::from_millis(20));
        assert_eq!(s.flows[0].mode, Some(Mode::Parity(4)));
    }

    #[test]
    fn random_flows_are_the_same_pairs_every_time() {
        let text = "seed = 4\n[topology]\nkind = \"grid\"\nwidth = 5\nheight = 5\n[random_flows]\nflows = 30\nmode = \"mirror:2\"\n";
        let a = Scenario::parse("r.toml", text).unwrap();
        let b = Scenario::parse("r.toml", text).unwrap();
        assert_eq!(a.flows, b.flows);
        assert_eq!(a.flows.len(), 30);
        let names = a.topology.node_names();
        for f in &a.flows {
            assert!(names.contains(&f.from) && names.contains(&f.to) && f.from != f.to);
            assert_eq!(f.mode, Some(Mode::Mirror(2)));
        }
        let other = Scenario::parse("r.toml", &text.replace("seed = 4", "seed = 5")).unwrap();
        assert_ne!(a.flows, other.flows, "another seed, other pairs");
    }

    #[test]
    fn radios_variants_and_new_flow_kinds_parse_and_refuse_bad_values() {
        let base = "[topology]\nkind = \"links\"\nlinks = [[\"a\", \"b\"]]\n";
        let ok = Scenario::parse(
            "v.toml",
            &format!("{base}[radio]\nrates = [\"6Mbit\", \"54Mbit\"]\n[link]\nretries = 1\nrate_loss = [0.0, 0.3]\n[[flows]]\nkind = \"udp\"\nfrom = \"a\"\nto = \"b\"\nrate = \"1Mbit\"\nduration = \"2s\"\n[[variants]]\nname = \"x\"\nmetric = \"ett\"\nbinding = \"early\"\n[[variants]]\nname = \"y\"\nbound = 4\n"),
        )
        .unwrap();
        assert_eq!(
            ok.radio.as_ref().unwrap().rates_bps,
            vec![6_000_000, 54_000_000]
        );
        assert_eq!(ok.link.rate_loss, vec![0.0, 0.3]);
        // 1400-byte packets at 1 Mbit/s for 2 s.
        assert_eq!(ok.flows[0].interval, Duration::from_micros(11_200));
        assert_eq!(ok.flows[0].count, 178);
        let v = ok.variants();
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].scenario.metric, v[0].scenario.bound),
            (MetricKind::Ett, None)
        );
        assert_eq!(v[1].scenario.bound, Some(4));
        assert_eq!(v[1].name.as_deref(), Some("y"));
        let e = |text: &str| {
            Scenario::parse("bad.toml", &format!("{base}{text}"))
                .unwrap_err()
                .to_string()
        };
        assert!(
            e("[link]\nrate_loss = [0.1]\n").contains("link.rate_loss: rate_loss needs a [radio]")
        );
        assert!(e("[radio]\n[link]\nrate_loss = [0.1]\n").contains("one loss per radio rate: 4"));
        assert!(e("[radio]\nrates = [\"11Mbit\", \"1Mbit\"]\n")
            .contains("radio.rates: 1 to 16 bit-rates, lowest first"));
        assert!(e("[[flows]]\nkind = \"udp\"\nfrom = \"a\"\nto = \"b\"\n")
            .contains("flows[0].rate: a udp flow needs rate"));
        assert!(e("[node]\nrate_control = \"ideal\"\n")
            .contains("node.rate_control: rate_control needs a [radio] section"));
        assert!(e("[[variants]]\nname = \"p\"\npersistence = 40\n")
            .contains("variants[0].persistence: persistence needs a [radio]"));
        assert!(e("[radio]\n[node]\nrate_control = \"minstrel\"\n")
            .contains("node.rate_control: unknown rate control \"minstrel\""));
        assert!(e("[radio]\n[node]\npersistence = 0\n")
            .contains("node.persistence: 0 hand-overs: 1 to 64"));
        assert!(e("[[variants]]\nmetric = \"etx\"\n")
            .contains("variants[0].name: each variant needs a name"));
        assert!(e("[node]\nmetric = \"speed\"\n")
            .starts_with("bad.toml:5: node.metric: unknown metric"));
        assert!(e("[node]\nbinding = \"soon\"\n").contains("node.binding: unknown binding"));
        assert!(e("[node]\ndead_after = 1\n")
            .contains("node.dead_after: 2 to 100 small-probe intervals"));
        assert!(e("[[path_cuts]]\nfor = \"5s\"\n")
            .contains("path_cuts[0].at: say when the links are cut"));
        assert!(e("[[path_cuts]]\nat = \"10s\"\nflows = 0\n")
            .contains("path_cuts[0].flows: at least 1"));
        assert!(
            e("[[path_cuts]]\nat = \"10s\"\nevery = \"soon\"\n").contains("path_cuts[0].every:")
        );
        assert!(Scenario::parse(
            "bad.toml",
            &format!("duration = \"20s\"\n{base}[[path_cuts]]\nat = \"18s\"\n")
        )
        .unwrap_err()
        .to_string()
        .contains("path_cuts[0]: the first cut must end within the scenario's duration"));
        assert!(e("[[path_cuts]]\nat = \"10s\"\nwhen = 3\n").contains("unknown field"));
        assert!(e("[link]\nretries = 1000\n").contains("link.retries"));
        assert!(Scenario::parse(
            "l.toml",
            "[topology]\nkind = \"links\"\nlinks = [[\"a\", \"a\"]]\n"
        )
        .unwrap_err()
        .to_string()
        .contains("two different nodes"));
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let e = |text: &str| Scenario::parse("bad.toml", text).unwrap_err().to_string();
        assert_eq!(
            e("[topology]\nkind = \"line\"\nnodes = 3\n[node]\nmode = \"raid6\"\n"),
            "bad.toml:5: node.mode: unknown redundancy mode \"raid6\" (expected single, stripe, stripe:pinned, mirror:K, tree, parity:X, parity-rotating:X, erasure:N,M[,DEPTH], sliding:N,M[,SPAN] or adaptive[:TARGET])"
        );
        assert!(e("[topology]\nkind = \"ring\"\n")
            .starts_with("bad.toml:2: topology.kind: unknown topology"));
        assert!(
            e("[topology]\nkind = \"line\"\nnodes = 3\n[link]\ndelay = \"soon\"\n")
                .starts_with("bad.toml:5: link.delay:")
        );
        let unknown = e("[topology]\nkind = \"line\"\nnodes = 3\nspeed = 4\n");
        assert!(
            unknown.starts_with("bad.toml:4: topology.speed: unknown field"),
            "{unknown}"
        );
        assert!(e("[topology]\nkind = \"line\"\n").contains("topology.nodes"));
        for areas in ["0", "4", "5000"] {
            assert_eq!(
                e(&format!(
                    "[topology]\nkind = \"line\"\nnodes = 3\nareas = {areas}\n"
                )),
                format!(
                    "bad.toml:4: topology.areas: {areas} areas: 1 to 4096 and at most one per node"
                )
            );
        }
        assert!(e("[topology]\nkind = \"line\"\nnodes = 3\nareas = -1\n")
            .starts_with("bad.toml:4: topology.areas:"));
        assert_eq!(
            e("[topology]\nkind = \"line\"\nnodes = 3\nids = \"random\"\n"),
            "bad.toml:4: topology.ids: \"random\": dense (each router's id is its index) or sparse (ids drawn from 0-65,534)"
        );
        assert!(e("[topology\n").starts_with("bad.toml:1:"));
        assert_eq!(
            e("[topology]\nkind = \"line\"\nnodes = 3\n[[flows]]\nfrom = \"n1\"\nto = \"n9\"\n"),
            "bad.toml:6: flows[0].to: no node \"n9\" in this topology (nodes: n1, n2, n3)"
        );
    }

    #[test]
    fn every_problem_is_reported_the_first_first() {
        let text = "[topology]\nkind = \"line\"\nnodes = 3\n[link]\nloss = 2.0\nretries = 1000\n[node]\nmetric = \"speed\"\n[[flows]]\nfrom = \"n1\"\nto = \"n9\"\n";
        let e = Scenario::parse("bad.toml", text).unwrap_err();
        let lines: Vec<String> = e.all().map(|p| p.to_string()).collect();
        assert_eq!(
            lines,
            [
                "bad.toml:11: flows[0].to: no node \"n9\" in this topology (nodes: n1, n2, n3)",
                "bad.toml:1: link.loss: 2 is not a probability in [0, 1]",
                "bad.toml:1: link.retries: 1000 retries: at most 100 (802.11 uses 7, SrcRR's 40 exceeded TCP's timeout)",
                "bad.toml:8: node.metric: unknown metric \"speed\" (hop, etx, ett)",
            ]
        );
        // Shown one per line; read as the first.
        assert_eq!(e.to_string(), lines.join("\n"));
        assert_eq!(e.field, "flows[0].to");
        // What depends on a wrong part is not checked against it: an
        // unknown topology names no nodes, so no flow end is refused.
        let e = Scenario::parse(
            "bad.toml",
            "[topology]\nkind = \"ring\"\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n",
        )
        .unwrap_err();
        assert_eq!(e.all().count(), 1, "{e}");
        assert_eq!(e.field, "topology.kind");
    }
}
