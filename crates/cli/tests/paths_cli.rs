//! `braid paths` end to end: the binary, the bundled topology, the JSON it
//! prints, and its exit codes.

use std::path::PathBuf;
use std::process::{Command, Output};

fn topology(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/topologies")
        .join(name)
}

fn braid(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .output()
        .expect("runs")
}

/// `braid paths --topology FILE --from a --to b`.
fn paths_a_to_b(file: &str) -> Output {
    braid(&["paths", "--topology", file, "--from", "a", "--to", "b"])
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

fn write_temp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("braid-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn disjoint_paths_on_the_bundled_topology() {
    let t = topology("wisp-backhaul.json");
    let out = braid(&[
        "paths",
        "--topology",
        t.to_str().unwrap(),
        "--from",
        "gw",
        "--to",
        "clinic",
        "--k",
        "3",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["from"], "gw");
    assert_eq!(v["to"], "clinic");
    assert_eq!(v["disjoint"], "node");
    let paths = v["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 3);
    // gw has three neighbors but every route from silo passes church or
    // ridge: two node-disjoint paths, then one flagged shared.
    let shared: Vec<bool> = paths
        .iter()
        .map(|p| p["shared"].as_bool().unwrap())
        .collect();
    assert_eq!(shared, vec![false, false, true]);
    assert_eq!(
        paths[0]["nodes"],
        serde_json::json!(["gw", "church", "clinic"])
    );
    assert_eq!(paths[0]["cost"], 3.4);
    for p in paths {
        let nodes = p["nodes"].as_array().unwrap();
        assert_eq!(nodes.first().unwrap(), "gw");
        assert_eq!(nodes.last().unwrap(), "clinic");
    }
}

#[test]
fn edge_disjoint_and_tree() {
    let t = topology("wisp-backhaul.json");
    let t = t.to_str().unwrap();
    let out = braid(&[
        "paths",
        "--topology",
        t,
        "--from",
        "gw",
        "--to",
        "clinic",
        "--k",
        "3",
        "--disjoint",
        "edge",
    ]);
    let v = json(&out);
    assert_eq!(v["disjoint"], "edge");
    assert!(v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["shared"] == false));

    let out = braid(&[
        "paths",
        "--topology",
        t,
        "--from",
        "gw",
        "--tree-to",
        "clinic,school,store",
    ]);
    assert!(out.status.success());
    let v = json(&out);
    assert_eq!(v["entry"], "gw");
    let hops = v["next_hops"].as_object().unwrap();
    assert_eq!(hops["church"], serde_json::json!(["clinic", "store"]));
    assert_eq!(hops["water"], serde_json::json!(["school"]));
}

#[test]
fn asymmetric_costs_when_both_directions_are_listed() {
    let f = write_temp(
        "asym.json",
        r#"{"nodes":[{"id":"a"},{"id":"b"},{"id":"c"}],
            "links":[{"source":"a","target":"b","cost":1},{"source":"b","target":"a","cost":5},
                     {"source":"a","target":"c","cost":2},{"source":"c","target":"b","cost":2}]}"#,
    );
    let f = f.to_str().unwrap();
    let there = json(&paths_a_to_b(f));
    assert_eq!(there["paths"][0]["cost"], 1.0);
    let back = json(&braid(&[
        "paths",
        "--topology",
        f,
        "--from",
        "b",
        "--to",
        "a",
    ]));
    assert_eq!(
        back["paths"][0]["nodes"],
        serde_json::json!(["b", "c", "a"])
    );
    assert_eq!(back["paths"][0]["cost"], 4.0);
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    let good = topology("wisp-backhaul.json");
    let good = good.to_str().unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--from".into(),
                "nowhere".into(),
                "--to".into(),
                "gw".into(),
            ],
            "\"nowhere\" is not in the topology",
        ),
        (
            vec!["--from".into(), "gw".into(), "--to".into(), "gw".into()],
            "same node",
        ),
        (
            vec![
                "--from".into(),
                "gw".into(),
                "--to".into(),
                "clinic".into(),
                "--k".into(),
                "99".into(),
            ],
            "k must be",
        ),
    ];
    for (args, needle) in cases {
        let mut all = vec!["paths".to_string(), "--topology".into(), good.into()];
        all.extend(args);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let out = braid(&refs);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{refs:?}: {err}");
        assert!(err.contains(needle), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    }
    for (name, text, needle) in [
        (
            "malformed.json",
            "{\"nodes\": [",
            "malformed NetJSON at line 1",
        ),
        (
            "negative.json",
            r#"{"nodes":[{"id":"a"},{"id":"b"}],"links":[{"source":"a","target":"b","cost":-1}]}"#,
            "cost -1 is negative",
        ),
        (
            "huge.json",
            r#"{"nodes":[{"id":"a"},{"id":"b"}],"links":[{"source":"a","target":"b","cost":1e400}]}"#,
            "malformed NetJSON",
        ),
        (
            "unknown.json",
            r#"{"nodes":[{"id":"a"}],"links":[{"source":"a","target":"q","cost":1}]}"#,
            "unknown node \"q\"",
        ),
    ] {
        let f = write_temp(name, text);
        let out = paths_a_to_b(f.to_str().unwrap());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(needle), "{name}: {err}");
        assert!(err.contains(name), "the error names the file: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    }
    let out = paths_a_to_b("/nonexistent/topology.json");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn unreachable_destination_prints_empty_paths_and_exits_1() {
    let f = write_temp(
        "split.json",
        r#"{"nodes":[{"id":"a"},{"id":"b"}],"links":[]}"#,
    );
    let out = paths_a_to_b(f.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["paths"], serde_json::json!([]));
}

#[test]
fn sim_runs_a_scenario_and_refuses_a_bad_one_with_file_line_field() {
    let s = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/wispr-5.3-braid.toml");
    let out = braid(&["sim", s.to_str().unwrap(), "--runs", "2", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    let summary = &v["variants"][0]["summary"][0];
    assert_eq!(summary["mode"], "mirror:3");
    assert_eq!(summary["runs"], 2);
    assert_eq!(summary["overhead"], 3.0);
    assert_eq!(summary["lost"], 0.0);
    let bad = write_temp(
        "bad.toml",
        "[topology]\nkind = \"line\"\nnodes = 3\n[node]\nmode = \"mirror:99\"\n",
    );
    let out = braid(&["sim", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("bad.toml:5: node.mode: mirror:99"), "{err}");
}

#[test]
fn demo_prints_headlines_and_writes_a_self_contained_report() {
    let out = std::env::temp_dir().join(format!("braid-demo-test-{}", std::process::id()));
    let scenarios = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let run = braid(&[
        "demo",
        "--scenarios",
        scenarios.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("WISPR 5.3"), "{stdout}");
    assert!(stdout.contains("report:"), "{stdout}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("26.6"));
    // Self-contained: no scripts, and the only URLs are SVG namespace names.
    assert!(!html.contains("<script"));
    assert_eq!(
        html.matches("http").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    for f in ["loss-sweep.csv", "failure.json", "wispr-5.3-braid.json"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    // Without the scenario directory the built-in copies are used: a unit
    // test of the demo (`without_the_scenario_directory_...`), not a
    // second run here (about 40 s of CI's time).
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn sim_writes_a_pcap_of_a_link_on_request() {
    let s = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/wispr-5.3-braid.toml");
    let out = std::env::temp_dir().join(format!("braid-pcap-test-{}", std::process::id()));
    let run = braid(&[
        "sim",
        s.to_str().unwrap(),
        "--runs",
        "1",
        "--pcap",
        "s,p0h0",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let pcap = std::fs::read(out.join("s-p0h0.pcap")).unwrap();
    assert_eq!(&pcap[..4], &0xa1b2_c3d4u32.to_le_bytes(), "libpcap magic");
    assert!(pcap.len() > 24 + 100 * 16, "many packets captured");
    let bad = braid(&["sim", s.to_str().unwrap(), "--runs", "1", "--pcap", "s,t"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not linked"));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn sim_out_writes_a_chart_for_a_loss_sweep() {
    let s = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/loss-sweep.toml");
    let out = std::env::temp_dir().join(format!("braid-sweep-test-{}", std::process::id()));
    let run = braid(&[
        "sim",
        s.to_str().unwrap(),
        "--runs",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let svg = std::fs::read_to_string(out.join("delivery.svg")).unwrap();
    // One measured and one theory line per mode in the sweep (8 modes).
    assert_eq!(svg.matches("<polyline").count(), 16);
    let csv = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 7 * 8);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_sim_table_shows_a_tcp_flow_by_its_goodput_and_a_udp_flow_by_its_packets() {
    let s = write_temp(
        "tcp-table.toml",
        "name = \"t\"\nduration = \"4s\"\n[topology]\nkind = \"parallel\"\npaths = 2\nhops = 2\n\
         [link]\nrate = \"10Mbit\"\n\
         [[flows]]\nname = \"bulk\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"t\"\nstart = \"1s\"\nduration = \"2s\"\n\
         [[flows]]\nname = \"voip\"\nfrom = \"s\"\nto = \"t\"\nstart = \"1s\"\ncount = 50\n",
    );
    let out = braid(&["sim", s.to_str().unwrap(), "--runs", "1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let row = |flow: &str| -> Vec<String> {
        text.lines()
            .find(|l| l.split_whitespace().nth(3) == Some(flow))
            .unwrap_or_else(|| panic!("no {flow} row in\n{text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // variant, path loss, mode, flow, sent, lost, deliv%, theory%, delay,
    // p99, overhead, gap, Mbit/s, retx.
    let bulk = row("bulk");
    assert_eq!(&bulk[4..7], ["-", "-", "-"], "{bulk:?}");
    assert!(bulk[12].parse::<f64>().unwrap() > 1.0, "{bulk:?}");
    let voip = row("voip");
    assert_eq!(voip[4], "50", "{voip:?}");
    assert_eq!(&voip[12..14], ["-", "-"], "{voip:?}");
}
