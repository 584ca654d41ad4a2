//! The dashboard page (`dashboard.html`) in headless Chromium, fed two
//! state documents in turn instead of a daemon's (its `fetch` replaced):
//! a link and a router that go away are drawn down, not dropped (issue
//! 32: they disappeared); a path's delay that the kernel path does not
//! measure says so instead of "- ms"; classes go by their policy names;
//! a route change says which path changed; sessions show their packet
//! rate. Needs Chromium; without it the runner lists the test as
//! ignored, and why.

use std::process::Command;

use serde_json::{json, Value};

fn state(with_link_to_3: bool, delivered: u64) -> Value {
    let mut links = vec![
        json!({"source": "1", "target": "2", "cost": 1.0}),
        json!({"source": "2", "target": "1", "cost": 1.0}),
    ];
    let mut nodes = vec![
        json!({"id": "1", "label": "a"}),
        json!({"id": "2", "label": "b"}),
    ];
    if with_link_to_3 {
        links.push(json!({"source": "2", "target": "3", "cost": 1.5}));
        links.push(json!({"source": "3", "target": "2", "cost": 1.5}));
        nodes.push(json!({"id": "3", "label": "c"}));
    }
    json!({
        "version": 1, "node": 1, "label": "a", "mode": "single",
        "status": {"uptime_ms": 5000, "neighbors": 1, "origins_known": 3,
            "authentication": {"enabled": true, "signing_key": 1}},
        "links": {"links": [{"neighbor": 2, "interface": "wan0", "address": "198.19.0.2:6868",
            "etx": 1.0, "df": 1.0, "dr": 1.0}]},
        "routes": {"routes": []},
        "sessions": {"classes": {"1": "voip"}, "ingress": [{
            "egress": 2, "class": 1, "mode": "mirror:2", "active_mode": "mirror:2",
            "datapath": "kernel", "counters": {"data_packets": delivered},
            "paths": [{"path": 0, "route": "1>2", "loss": 0.0, "delay_ms": null,
                "carried_per_s": 50.0}]}],
            "egress": []},
        "topology": {"type": "NetworkGraph", "nodes": nodes, "links": links},
        "events": [{"version": 1, "event": "route_change", "time_ms": 4000,
            "unix_ms": 1795000000000u64,
            "changed": [{"egress": 3, "from": [1, 2, 3], "to": null}], "routes": []}]
    })
}

fn main() -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let name = "the_dashboard_draws_what_went_down_and_says_what_it_cannot_measure";
    let trial = libtest_mimic::Trial::test(name, || {
        the_dashboard_draws_what_went_down();
        Ok(())
    });
    let has_chromium = Command::new("chromium").arg("--version").output().is_ok();
    let trial = if has_chromium {
        trial
    } else {
        trial
            .with_ignored_flag(true)
            .with_kind("skipped: chromium is not installed (scripts/setup.sh)")
    };
    libtest_mimic::run(&args, vec![trial]).exit_code()
}

fn the_dashboard_draws_what_went_down() {
    // The first poll sees router c and its link, every later one not;
    // the session sends 200 packets between polls.
    let states: Vec<Value> = (0..8).map(|i| state(i == 0, 100 + 200 * i)).collect();
    let states = Value::from(states);
    let fake = format!(
        "<script>let polls = 0; const states = {states};\n\
         window.fetch = async () => ({{ json: async () => states[Math.min(polls++, states.length - 1)] }});</script>"
    );
    let page = braid_daemon::dashboard::PAGE.replacen("<script>", &format!("{fake}\n<script>"), 1);
    let dir = std::env::temp_dir().join(format!("braid-dashboard-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("page.html");
    std::fs::write(&file, page).unwrap();
    let out = Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=3500",
            "--dump-dom",
        ])
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("chromium runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    // The link to c, and c, are drawn down; the link a-b is up.
    assert!(
        dom.contains("<line class=\"link down\" data-pair=\"2-3\""),
        "{dom}"
    );
    assert!(dom.contains("down since"), "{dom}");
    assert!(
        dom.contains("<g class=\"node down\" data-id=\"3\">"),
        "{dom}"
    );
    assert!(
        dom.contains("<line class=\"link\" data-pair=\"1-2\""),
        "{dom}"
    );
    // What the kernel path does not measure is said, not "- ms".
    assert!(
        dom.contains("delay not measured on the kernel path"),
        "{dom}"
    );
    assert!(!dom.contains("- ms"), "{dom}");
    // The class by its name, the route change by what it changed, and
    // the session's packets per second (200 more between polls a second
    // apart).
    assert!(dom.contains("1 (voip)"), "{dom}");
    assert!(dom.contains("c: a → b → c ⇒ none"), "{dom}");
    let rate: f64 = dom
        .split("<td>mirror:2</td><td>mirror:2</td><td>")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("a packet rate: {dom}"));
    assert!((100.0..=400.0).contains(&rate), "{rate} packets/s");
}
