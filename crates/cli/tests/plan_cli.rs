//! `braid plan` end to end: the synthetic 64-site WISP planned with its
//! price table (table 2's shape, the proposed topologies read back by
//! braid plan and braid's own NetJSON reader, the fade scenarios run by
//! `braid sim`), and bad input refused in one line with exit code 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use braid_plan::instances::{EXAMPLE_NETWORK as SMALL, EXAMPLE_PRICES as PRICES};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn braid(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("braid runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("braid-plan-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn the_synthetic_wisp_is_planned_with_table_2s_shape() {
    let out = scratch("wisp64");
    let o = braid(&[
        "plan",
        "scenarios/plan/wisp64.json",
        "--prices",
        "scenarios/plan/prices.csv",
        "--out",
        out.to_str().unwrap(),
        "--fade-runs",
        "1",
        "--additions",
        "5,20",
        "--time-limit",
        "10",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "braid plan failed: {stderr}");
    assert!(
        stderr.contains("least cost at") && stderr.contains("rain fade"),
        "progress: {stderr}"
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let today = &summary["today"];
    let least = &summary["least_cost"];
    let most = &summary["most_capacity"];
    let f = |v: &Value| v.as_f64().unwrap();
    // Least cost at today's capacity: no more capacity lost, cheaper.
    assert!(f(&least["network_mbps"]) >= f(&today["network_mbps"]) - 1e-6);
    assert!(f(&least["cost"]) < f(&today["cost"]), "{least}");
    // A plan the MILP stopped on says how far it is proven to be from
    // the best: no design costs less than the bound, none within the
    // budget carries more.
    for (plan, worse) in [(least, "cost"), (most, "network_mbps")] {
        let b = &plan["bound"];
        let gap = f(&b["gap"]);
        assert!((0.0..1.0).contains(&gap), "{plan}");
        if plan["exact"] == Value::Bool(false) {
            assert_eq!(b["source"].as_str().unwrap(), "milp", "{b}");
            assert!(gap > 0.0, "{plan}");
            let (value, mine) = (f(&b["value"]), f(&plan[worse]));
            match worse {
                "cost" => assert!(value <= mine + 1e-6, "{b} against {mine}"),
                _ => assert!(value + 1e-6 >= mine, "{b} against {mine}"),
            }
            assert!(plan["note"]
                .as_str()
                .unwrap()
                .contains("of the best possible"));
        }
    }
    // Most capacity at today's cost: within budget, more capacity.
    assert!(f(&most["cost"]) <= f(&today["cost"]) + 1e-6);
    assert!(
        f(&most["network_mbps"]) > f(&today["network_mbps"]),
        "{most}"
    );
    // No edge site is worse off in either plan.
    for plan in [least, most] {
        for (now, then) in today["per_edge_mbps"]
            .as_array()
            .unwrap()
            .iter()
            .zip(plan["per_edge_mbps"].as_array().unwrap())
        {
            assert!(f(then) >= f(now) - 1e-6, "{now} -> {then}");
        }
        assert!(!plan["changes"].as_array().unwrap().is_empty());
    }
    // The report has table 2 beside the paper's, the charts and the fade.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for want in [
        "WISPR table 2",
        "$27,565",
        "Least cost at",
        "Most capacity for",
        "<svg",
        "rain fade",
        "mirror:2",
    ] {
        assert!(html.contains(want), "report lacks {want}");
    }
    // Each topology: braid's NetJSON reader takes it, braid plan reads it
    // back, and braid sim runs its fade scenario as written.
    for name in ["today", "least-cost", "most-capacity"] {
        let text = std::fs::read_to_string(out.join(format!("{name}.json"))).unwrap();
        braid_proto_reads(&text);
        let again = braid_plan::network::parse(&text).unwrap();
        assert_eq!(again.sites.len(), 64);
        let sim = Command::new(env!("CARGO_BIN_EXE_braid"))
            .args(["sim", "--json", "--runs", "1"])
            .arg(out.join(format!("fade-{name}.toml")))
            .output()
            .unwrap();
        assert!(
            sim.status.success(),
            "{}",
            String::from_utf8_lossy(&sim.stderr)
        );
        let r: Value = serde_json::from_slice(&sim.stdout).unwrap();
        assert_eq!(
            r["variants"].as_array().unwrap().len(),
            2,
            "single and mirror:2"
        );
    }
    // The delivery under the fade is in the summary for each topology.
    let fade = &summary["fade"];
    assert_eq!(fade["topologies"].as_array().unwrap().len(), 3);
    for flow in fade["flows"].as_array().unwrap() {
        for d in flow["delivered"].as_array().unwrap() {
            let d = f(d);
            assert!((0.0..=1.0).contains(&d), "{flow}");
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

fn braid_proto_reads(text: &str) {
    // braid's routing NetJSON reader (as `braid paths` and `braid sim`
    // use it) requires a numeric cost on every link and one entry per
    // direction: checked through `braid paths`.
    let dir = scratch("proto");
    let file = dir.join("t.json");
    std::fs::write(&file, text).unwrap();
    let doc: Value = serde_json::from_str(text).unwrap();
    let with_role = |role: &str| {
        doc["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["properties"]["role"] == role)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (gw, edge) = (with_role("gateway"), with_role("edge"));
    let o = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args([
            "paths",
            "--topology",
            file.to_str().unwrap(),
            "--from",
            &gw,
            "--to",
            &edge,
        ])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "braid paths: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs braid plan on a network and price table; returns (exit code,
/// stderr).
fn plan_with(name: &str, net: &str, prices: &str, extra: &[&str]) -> (i32, String) {
    let dir = scratch(name);
    std::fs::write(dir.join("net.json"), net).unwrap();
    std::fs::write(dir.join("prices.csv"), prices).unwrap();
    let mut args = vec![
        "plan".to_string(),
        dir.join("net.json").display().to_string(),
        "--prices".into(),
        dir.join("prices.csv").display().to_string(),
        "--out".into(),
        dir.join("out").display().to_string(),
        "--fade-runs".into(),
        "0".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let o = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(&args)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_small_network_plans_and_bad_input_is_refused_in_one_line() {
    // The default additions (5, 10, 20) are more cross links than this
    // network has free pairs: those lines are skipped, and said so.
    let (code, err) = plan_with("ok", SMALL, PRICES, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("skipped: cannot add 5 cross links"), "{err}");
    let cases: [(&str, String, String, Vec<&str>); 10] = [
        (
            "unknown node in a link",
            SMALL.replace(r#""target":"e2""#, r#""target":"e9""#),
            PRICES.into(),
            vec![],
        ),
        (
            "negative price",
            SMALL.into(),
            PRICES.replace("150", "-150"),
            vec![],
        ),
        (
            "out of reach target",
            SMALL.into(),
            PRICES.into(),
            vec!["--target-capacity", "900000"],
        ),
        (
            "budget too small",
            SMALL.into(),
            PRICES.into(),
            vec!["--budget", "10"],
        ),
        (
            "a link longer than any model reaches",
            SMALL.replace(r#""distance_m":500"#, r#""distance_m":50000"#),
            PRICES.into(),
            vec![],
        ),
        (
            "line of sight longer than any model reaches",
            SMALL.replace(r#""distance_m":3200"#, r#""distance_m":32000"#),
            PRICES.into(),
            vec![],
        ),
        (
            "a negative budget",
            SMALL.into(),
            PRICES.into(),
            vec!["--budget", "-5"],
        ),
        (
            "a model of a channel width the constraints do not count",
            SMALL.into(),
            "model,capacity_mbps,price,max_distance_km,channel_mhz\nm1,100,150,10,20\nm4,450,400,20,20\nx,100,100,10,33\n".into(),
            vec![],
        ),
        (
            "a time limit of nothing",
            SMALL.into(),
            PRICES.into(),
            vec!["--time-limit", "0"],
        ),
        (
            "a time limit for a method with no MILP",
            SMALL.into(),
            PRICES.into(),
            vec!["--time-limit", "5", "--method", "heuristic"],
        ),
    ];
    let wants = [
        "unknown node \"e9\"",
        "price -150 is negative",
        "900,000",
        "$10",
        "no model in the price table reaches 50.0 km",
        "longer than any model",
        "--budget -5",
        "x: channel_mhz 33 has no channel count",
        "--time-limit 0",
        "--method heuristic runs none",
    ];
    for ((what, net, prices, extra), want) in cases.into_iter().zip(wants) {
        let (code, err) = plan_with("bad", &net, &prices, &extra);
        assert_eq!(code, 2, "{what}: {err}");
        let last = err.trim_end().lines().last().unwrap_or("");
        assert!(last.starts_with("braid: error: "), "{what}: {err}");
        assert!(last.contains(want), "{what}: {last:?} should say {want:?}");
    }
}
