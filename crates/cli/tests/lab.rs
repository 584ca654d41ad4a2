//! The daemon and the lab with real kernel traffic: network namespaces,
//! veth pairs, TUN devices, braid's eBPF loss program, UDP through the
//! daemons, `braid ctl`, reload and clean teardown. Needs root and network
//! namespaces (CI has both). A harness of its own (libtest-mimic) so that
//! where something is missing, the runner's own output says so: each lab
//! test that cannot run is listed as ignored, with the reason as its kind
//! (`test [skipped: not root] ... ignored`). Kept larger than 1,000 lines
//! as one file: the lab's tests are one suite (`cargo test -p braid-cli
//! --test lab`, as docs/performance.md runs it) under one lock that runs
//! them one at a time (they share this machine's cores with every daemon they start,
//! and would measure each other, or collide, under a runner that runs test
//! binaries in parallel). What the tests share is in `common/lab.rs`; here
//! are the tests, their scenarios and their named steps.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use common::lab::{
    assert_never_stalls, braid, control_refusals, daemon_counters, in_ns, kernel_counter,
    kernel_report, line_starting, lost_series, missing_capability, namespaces_of, node_counter,
    number_after, path_of_stand_ins, pids_of_lab, processes_mentioning, remove_lab_file, run_lab,
    running, with_lab_up, write_lab,
};

/// Lab tests run one at a time: they share this machine's two cores with
/// every daemon they start, and parallel labs would measure each other.
static LAB: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn diamond(name: &str, mode: &str, loss: f64, count: u32) -> String {
    format!(
        "name = \"{name}\"\nmode = \"{mode}\"\npaths = 2\n\
         [[router]]\nname = \"a\"\nhost = true\n[[router]]\nname = \"b\"\n\
         [[router]]\nname = \"c\"\n[[router]]\nname = \"d\"\nhost = true\n\
         [[link]]\na = \"a\"\nb = \"b\"\nloss = {loss}\n[[link]]\na = \"b\"\nb = \"d\"\n\
         [[link]]\na = \"a\"\nb = \"c\"\nloss = {loss}\n[[link]]\na = \"c\"\nb = \"d\"\n\
         [[flow]]\nname = \"probe\"\nfrom = \"a\"\nto = \"d\"\ncount = {count}\ninterval = \"5ms\"\nsize = 200\n"
    )
}

fn udp_crosses_real_daemons_and_mirroring_hides_the_loss_that_single_path_shows() {
    // 10% loss on the first link of each path, applied by the eBPF program.
    let single = run_lab(&write_lab(
        "t1.toml",
        &diamond("tsingle", "single", 0.1, 2000),
    ));
    let mirror = run_lab(&write_lab(
        "t2.toml",
        &diamond("tmirror", "mirror:2", 0.1, 2000),
    ));
    let lost = |r: &serde_json::Value| r["variants"][0]["flows"][0]["lost"].as_u64().unwrap();
    let sent = |r: &serde_json::Value| r["variants"][0]["flows"][0]["sent"].as_u64().unwrap();
    eprintln!(
        "lost of 2000: single {}, mirror:2 {}",
        lost(&single),
        lost(&mirror)
    );
    assert_eq!((sent(&single), sent(&mirror)), (2000, 2000));
    // Single path: about 10% lost (binomial: 200 +- 13), more on a loaded
    // machine (a slow daemon's socket buffers overflow too).
    assert!(lost(&single) >= 120, "{}", lost(&single));
    // Two copies over paths that each lose 10%: about 1% (20 +- 4.5). In
    // two debug-build CI runs mirror:2 lost 58 and 69 (not explained yet;
    // the ingress's counters are printed for that), so the bound is loose.
    eprintln!(
        "mirror ingress counters: {}",
        mirror["variants"][0]["daemons"][0]["stats"]["node"]
    );
    assert!(lost(&mirror) < 100, "{}", lost(&mirror));
    assert!(
        lost(&mirror) * 2 < lost(&single),
        "{} vs {}",
        lost(&mirror),
        lost(&single)
    );
    // Every daemon counted the copies it forwarded.
    let forwarded: u64 = mirror["variants"][0]["daemons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["stats"]["node"]["forwarded"].as_u64().unwrap_or(0))
        .sum();
    assert!(forwarded > 2000, "transit routers forwarded {forwarded}");
    assert!(namespaces_of("tsingle").is_empty() && namespaces_of("tmirror").is_empty());
}

/// A diamond whose second path is a hop longer, 100 ms probes, and a
/// VoIP flow (400 packets every 20 ms) whose active first link is
/// blackholed 2 s in; the variants are the caller's.
fn blackholed_diamond(name: &str) -> String {
    format!(
        "name = \"{name}\"\npaths = 2\nprobe_interval = \"100ms\"\ndead_after = 5\n\
         [[router]]\nname = \"a\"\nhost = true\n[[router]]\nname = \"b\"\n[[router]]\nname = \"c\"\n\
         [[router]]\nname = \"e\"\n[[router]]\nname = \"d\"\nhost = true\n\
         [[link]]\na = \"a\"\nb = \"b\"\n[[link]]\na = \"b\"\nb = \"d\"\n[[link]]\na = \"a\"\nb = \"c\"\n\
         [[link]]\na = \"c\"\nb = \"e\"\n[[link]]\na = \"e\"\nb = \"d\"\n\
         [[flow]]\nname = \"voip\"\nfrom = \"a\"\nto = \"d\"\ncount = 400\ninterval = \"20ms\"\n\
         [[event]]\nat = \"2s\"\nflow = \"voip\"\naction = \"blackhole\"\n"
    )
}

fn a_silently_blackholed_primary_path_costs_single_path_a_short_outage_and_mirror_nothing() {
    let text = blackholed_diamond("tfail")
        + "[[variant]]\nname = \"single\"\nmode = \"single\"\n[[variant]]\nname = \"mirror\"\nmode = \"mirror:2\"\n";
    let r = run_lab(&write_lab("t4.toml", &text));
    let flow = |v: usize| r["variants"][v]["flows"][0].clone();
    let (single, mirror) = (flow(0), flow(1));
    eprintln!("single: {single}\nmirror: {mirror}");
    let lost = |f: &serde_json::Value| f["lost"].as_u64().unwrap();
    let gap = |f: &serde_json::Value| f["max_gap_ms"].as_f64().unwrap();
    // Single path loses what was sent until the failure was noticed
    // (5 probe intervals, then a new path), then recovers.
    assert!(lost(&single) >= 5, "the blackhole hit the active path");
    assert!(gap(&single) < 2000.0, "recovered: gap {} ms", gap(&single));
    // Mirror: the other copy was on the other path all along.
    assert!(lost(&mirror) <= 2, "{}", lost(&mirror));
    assert!(namespaces_of("tfail").is_empty());
}

fn kernel_tcp_crosses_the_daemons_and_mirroring_spares_its_retransmissions() {
    // TCP at most 4 Mbit/s over 10 Mbit/s links: it meets the links' 10%
    // loss, not a full queue. (Unlimited, TCP grows until a queue
    // overflows; under mirror:2 its rate is set by the faster path, the
    // other path's queue then drops most copies, and in about one run of
    // five mirroring retransmitted as much as single path.)
    let text = diamond("ttcp", "single", 0.1, 10).replace(
        "[[flow]]\nname = \"probe\"",
        "[[flow]]\nkind = \"tcp\"\nduration = \"4s\"\nbitrate = \"4Mbit\"\nname = \"probe\"",
    )
    .replace("loss = 0.1\n", "loss = 0.1\nrate = \"10Mbit\"\n")
        + "[[variant]]\nname = \"single\"\nmode = \"single\"\n[[variant]]\nname = \"mirror\"\nmode = \"mirror:2\"\nreorder = true\n";
    let r = run_lab(&write_lab("t5.toml", &text));
    let f = |v: usize| r["variants"][v]["flows"][0].clone();
    eprintln!("single: {}\nmirror: {}", f(0), f(1));
    let (goodput, retx) = (
        |x: &serde_json::Value| x["goodput_mbps"].as_f64().unwrap(),
        |x: &serde_json::Value| x["retransmits"].as_u64().unwrap(),
    );
    // Real TCP (CUBIC) got through both ways (iperf3's own control
    // connection included): single path slowed by its losses, mirror:2
    // mostly near the 4 Mbit/s ceiling that pacing holds (but in about
    // one run of ten a lost retransmission costs it a timeout or two,
    // with back-off, and a good part of 4 s). Single path loses about a
    // fifth of each direction (two links of 10%): in one CI run its
    // timeouts backed off to 0.07 Mbit/s over the 4 s (0.23, then 0.04,
    // 0, 0.02 a second), so it is held only to getting through.
    assert!(goodput(&f(0)) > 0.01 && goodput(&f(1)) > 0.1);
    assert!(goodput(&f(0)) < 4.5 && goodput(&f(1)) < 4.5, "pacing held");
    // Retransmissions per megabyte delivered: 10% loss on the single
    // path (97-162 per MB in five runs), about 1% with two copies over
    // disjoint paths, re-ordered at the egress (12-25 in the same runs).
    // Without re-ordering, a copy rebuilt from the other path arrives out
    // of order, TCP retransmits it spuriously, and one run in five
    // mirroring counted as many retransmissions as single path: the
    // variant re-orders so that what this test compares is the loss TCP
    // sees, with a 2x margin over a 4-13x measured ratio.
    let per_mb = |x: &serde_json::Value| retx(x) as f64 / (goodput(x) * 4.0 / 8.0);
    assert!(
        per_mb(&f(0)) > 2.0 * per_mb(&f(1)),
        "retransmissions per MB: {:.0} vs {:.0}",
        per_mb(&f(0)),
        per_mb(&f(1))
    );
    assert!(namespaces_of("ttcp").is_empty());
}

fn kernel_tcp_keeps_most_of_its_speed_over_two_paths_losing_a_fifth_with_adaptive_coding() {
    // The loss-proof TCP scenario, short: 6 s of CUBIC over two disjoint
    // 10 Mbit/s paths, 20 ms one way, each losing 20% each way, with an
    // EF-marked VoIP stream beside it; plain kernel routing on one path
    // against braid's adaptive coding.
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/lab/loss-proof-tcp.toml"),
    )
    .unwrap()
    .replace("name = \"lossproof\"", "name = \"tlossy\"")
    .replace("duration = \"10s\"", "duration = \"6s\"")
    .replace("count = 500", "count = 300");
    let keep = ["single TCP", "braid adaptive"];
    let mut text: String = text
        .split("[[variant]]")
        .enumerate()
        .filter(|(i, part)| {
            *i == 0
                || keep
                    .iter()
                    .any(|k| part.contains(&format!("name = \"{k}\"\n")))
        })
        .map(|(_, part)| part)
        .collect::<Vec<_>>()
        .join("[[variant]]");
    text.push('\n');
    let r = run_lab(&write_lab("t7.toml", &text));
    let flows = |v: usize| r["variants"][v]["flows"].as_array().unwrap().clone();
    eprintln!("single: {:?}\nadaptive: {:?}", flows(0), flows(1));
    let goodput = |v: usize| flows(v)[0]["goodput_mbps"].as_f64().unwrap();
    // Measured (docs/performance.md): single path 0.16-0.25 Mbit/s,
    // adaptive 7-8.5 (10 s runs; a 6 s run spends more of itself in slow
    // start). What holds in every run by a wide margin: adaptive above
    // 4 Mbit/s and at least ten times single path.
    assert!(goodput(1) > 4.0, "adaptive {:.2} Mbit/s", goodput(1));
    assert!(
        goodput(1) > 10.0 * goodput(0),
        "{:.2} vs {:.2}",
        goodput(1),
        goodput(0)
    );
    // The VoIP stream beside it: single path loses about a fifth; the
    // code leaves (nearly) nothing.
    let lost = |v: usize| flows(v)[1]["lost"].as_u64().unwrap();
    assert!(lost(0) > 30, "single path lost {}", lost(0));
    assert!(lost(1) <= 3, "adaptive lost {}", lost(1));
    // Its urgent packets go as copies (`redundancy/urgent.rs`), so none
    // waits for its group's repair behind bulk. Measured in this test:
    // p99 32.4-32.5 ms in 3 runs; without copies (`urgent_copies = 1`)
    // 44.0 and 62.1, so the bound is 40 ms, tighter than the goal's
    // 20 + 30.
    let p99 = flows(1)[1]["delay_p99_ms"].as_f64().unwrap();
    eprintln!("adaptive VoIP p99 {p99:.1} ms");
    assert!(p99 <= 40.0, "adaptive VoIP p99 {p99:.1} ms");
    assert!(namespaces_of("tlossy").is_empty());
}

fn the_link_emulator_delays_real_traffic_by_what_the_scenario_says() {
    let text = "name = \"tdelay\"\n[[router]]\nname = \"a\"\nhost = true\n[[router]]\nname = \"b\"\nhost = true\n\
         [[link]]\na = \"a\"\nb = \"b\"\ndelay = \"40ms\"\njitter = \"10ms\"\n\
         [[flow]]\nfrom = \"a\"\nto = \"b\"\ncount = 200\ninterval = \"10ms\"\n\
         [[variant]]\nname = \"kernel\"\nsoftware = \"kernel\"\n";
    let r = run_lab(&write_lab("t6.toml", text));
    let f = &r["variants"][0]["flows"][0];
    eprintln!("{f}");
    // 40 ms plus 0-10 ms of jitter, in order: the median between 40 and
    // 52 ms (a little for the kernel and the emulator's wake-up).
    let p50 = f["delay_p50_ms"].as_f64().unwrap();
    assert!((40.0..52.0).contains(&p50), "p50 {p50} ms");
    assert!(f["lost"].as_u64().unwrap() <= 2, "{f}");
    assert!(namespaces_of("tdelay").is_empty());
}

fn ctl_monitor_reload_and_teardown_on_a_running_lab() {
    with_lab_up("tctl", &diamond("tctl", "single", 0.0, 10), |dir| {
        let sock = dir.join("a.sock");
        let s = sock.to_str().unwrap();
        // neighbors: a hears b and c.
        let out = braid(&["ctl", "--json", "--socket", s, "neighbors"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["version"], 1);
        let mut ids: Vec<u64> = doc["neighbors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_u64().unwrap())
            .collect();
        ids.sort();
        assert_eq!(ids, [2, 3]);
        // An unknown command is refused with the list of commands.
        let bad = braid(&["ctl", "--socket", s, "frobnicate"]);
        assert_eq!(bad.status.code(), Some(2));
        // monitor: a reload with a new mode is announced as an event; an
        // invalid config is refused and announced too, and the daemon
        // keeps running.
        let mut mon = Command::new(env!("CARGO_BIN_EXE_braid"))
            .args(["ctl", "--json", "--socket", s, "monitor"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(mon.stdout.take().unwrap()).lines();
        let hello = lines.next().unwrap().unwrap();
        assert!(hello.contains("\"event\":\"hello\""), "{hello}");
        let config = dir.join("a.toml");
        let good = std::fs::read_to_string(&config).unwrap();
        let pid = std::fs::read_to_string(dir.join("a.pid")).unwrap();
        std::fs::write(
            &config,
            good.replace("mode = \"single\"", "mode = \"mirror:2\""),
        )
        .unwrap();
        Command::new("kill")
            .args(["-HUP", pid.trim()])
            .status()
            .unwrap();
        let event = lines.next().unwrap().unwrap();
        assert!(
            event.contains("\"event\":\"mode_change\"") && event.contains("mirror:2"),
            "{event}"
        );
        // The log level changes at once; a new metrics port waits for a
        // restart, and the reload names it alone.
        let louder = good
            .replace("mode = \"single\"", "mode = \"mirror:2\"")
            .replace("log = \"warn\"", "log = \"info\"")
            .replace(
                "metrics = \"127.0.0.1:9468\"",
                "metrics = \"127.0.0.1:9469\"",
            );
        assert_ne!(louder, good, "the lab's config sets log and metrics");
        std::fs::write(&config, louder).unwrap();
        let reply = braid(&["ctl", "--json", "--socket", s, "reload"]);
        let reply: serde_json::Value = serde_json::from_slice(&reply.stdout).unwrap();
        assert_eq!(
            reply["restart_needed"],
            serde_json::json!(["metrics"]),
            "{reply}"
        );
        let log = std::fs::read_to_string(dir.join("a.log")).unwrap();
        assert!(log.contains("log level changed"), "{log}");
        std::fs::write(&config, "node = \"x\"\n").unwrap();
        Command::new("kill")
            .args(["-HUP", pid.trim()])
            .status()
            .unwrap();
        let event = lines.next().unwrap().unwrap();
        assert!(event.contains("\"event\":\"reload_refused\""), "{event}");
        let _ = mon.kill();
        let _ = mon.wait();
        // Metrics and topology on the daemon's HTTP port (in its namespace).
        let get = |path: &str| {
            let out = Command::new("ip")
                .args(["netns", "exec", "braid-tctl-a", "python3", "-c"])
                .arg(format!(
                    "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:9468{path}').read().decode())"
                ))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        let metrics = get("/metrics");
        for n in [2, 3] {
            assert!(
                metrics.contains(&format!("braid_link_etx{{node=\"1\",neighbor=\"{n}\"}}")),
                "{metrics}"
            );
        }
        assert!(metrics.contains("# TYPE braid_node_dropped_total counter"));
        let topo: serde_json::Value = serde_json::from_str(&get("/topology")).unwrap();
        assert_eq!(topo["type"], "NetworkGraph");
        assert_eq!(topo["nodes"].as_array().unwrap().len(), 4);
        assert_eq!(
            topo["links"].as_array().unwrap().len(),
            8,
            "4 links, both ways"
        );
        let out = braid(&["ctl", "--json", "--socket", s, "stats"]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            doc["stats"]["io"]["reloads"], 2,
            "a new mode, then log and metrics"
        );
        assert_eq!(doc["stats"]["io"]["reloads_refused"], 1);
    });
}

/// The operators' tools on a running diamond lab (`stripe`, host a sending
/// to host d throughout): each step below checks one tool.
fn operators_tools_on_a_running_lab() {
    with_lab_up("tops", &diamond("tops", "stripe", 0.0, 10), |dir| {
        let sock = dir.join("a.sock");
        let s = sock.to_str().unwrap();
        let transit = dir.join("b.sock");
        // Traffic from host a to host d (for at most 15 s, while the
        // checks below run): a session with both paths.
        let mut sender = Command::new("ip")
            .args(["netns", "exec", "braid-tops-ah", "python3", "-c"])
            .arg("import socket,time\ns=socket.socket(2,2)\nfor i in range(1500):\n s.sendto(b'x'*100,('198.18.4.2',9)); time.sleep(0.01)")
            .spawn()
            .unwrap();
        let result = std::panic::catch_unwind(|| {
            a_transit_router_shows_every_router_idle(transit.to_str().unwrap());
            the_ingress_reports_its_session_on_both_paths(s);
            ping_and_traceroute_cross_the_mesh(s);
            ctl_errors_say_what_is_wrong_and_reload_is_taken(s);
            the_http_port_serves_build_info_labels_and_refuses_post();
            the_dashboard_draws_the_topology_and_the_session(dir);
            kernel_tcp_crosses_both_ways_and_the_paths_report_no_loss(&sock, dir);
        });
        let _ = sender.kill();
        let _ = sender.wait();
        if let Err(e) = result {
            std::panic::resume_unwind(e);
        }
    });
}

/// A transit router with no traffic of its own still shows where it
/// would send: every known router, idle. (Once it knows all four
/// routers: the lab waits for the hosts' routers only.)
fn a_transit_router_shows_every_router_idle(transit: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let text = loop {
        let out = braid(&["ctl", "--socket", transit, "routes"]);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.lines().count() == 4 && !text.contains("   1      idle")
            || std::time::Instant::now() > deadline
        {
            break text;
        }
        std::thread::yield_now();
    };
    assert!(
        text.contains("198.18.4.0/24") && text.contains("idle (no traffic yet)"),
        "{text}"
    );
    assert_eq!(
        text.lines().count(),
        4,
        "a header and three routers: {text}"
    );
}

/// The ingress (socket `s`) reports its session to d on both paths, and
/// `paths` shows them.
fn the_ingress_reports_its_session_on_both_paths(s: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let sessions = loop {
        let out = braid(&["ctl", "--json", "--socket", s, "sessions"]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let reported = doc["ingress"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["class"] == 0 && i["paths"].as_array().is_some_and(|p| p.len() == 2));
        if reported || std::time::Instant::now() > deadline {
            break doc;
        }
        std::thread::yield_now();
    };
    assert!(
        sessions["ingress"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["egress"] == 4 && i["paths"].as_array().unwrap().len() == 2),
        "no session to d with two reported paths: {sessions}"
    );
    let table = braid(&["ctl", "--socket", s, "paths"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        // Routers by their [labels] names.
        table.contains("primary  cost 2.000") && table.contains("a>b>d") && table.contains("a>c>d"),
        "{table}"
    );
}

/// ping and traceroute through the mesh, as batctl's: each echo answered
/// by the router asked, along the path traffic takes.
fn ping_and_traceroute_cross_the_mesh(s: &str) {
    let out = braid(&["ctl", "--json", "--socket", s, "ping", "4", "3"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (doc["sent"].as_u64(), doc["received"].as_u64()),
        (Some(3), Some(3)),
        "{doc}"
    );
    assert!(
        doc["probes"].as_array().unwrap().iter().all(|p| p["rtt_ms"]
            .as_f64()
            .is_some_and(|ms| ms > 0.0 && ms < 1000.0)),
        "{doc}"
    );
    let out = braid(&["ctl", "--json", "--socket", s, "traceroute", "4"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let hops: Vec<u64> = doc["hops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["node"].as_u64().unwrap())
        .collect();
    assert!(hops == [2, 4] || hops == [3, 4], "{doc}");
    assert!(
        doc["hops"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["rtt_ms"].as_f64().is_some()),
        "{doc}"
    );
    let text = braid(&["ctl", "--socket", s, "ping", "4", "2"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("2 sent, 2 received, round trip min/avg/max"),
        "{text}"
    );
}

/// An unknown router and an unreachable daemon are errors that say so
/// (in JSON with `--json`); a reload through the socket is taken.
fn ctl_errors_say_what_is_wrong_and_reload_is_taken(s: &str) {
    let unknown = braid(&["ctl", "--socket", s, "ping", "9"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr)
        .contains("router 9 is not in the link-state database"));
    // --json errors are JSON documents too.
    let bad = braid(&[
        "ctl",
        "--json",
        "--socket",
        "/nonexistent/braid.sock",
        "status",
    ]);
    assert_eq!(bad.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert!(
        doc["error"]
            .as_str()
            .unwrap()
            .contains("cannot reach a braid daemon"),
        "{doc}"
    );
    // reload through the socket, as SIGHUP.
    let out = braid(&["ctl", "--json", "--socket", s, "reload"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["reloaded"], true, "{doc}");
}

/// Router a's daemon's HTTP port (in its namespace): the status line and
/// body of `method path`.
fn http(method: &str, path: &str) -> String {
    let out = in_ns(
        "braid-tops-a",
        &["python3", "-c", &format!(
            "import http.client\nc=http.client.HTTPConnection('127.0.0.1',9468)\nc.request('{method}','{path}')\nr=c.getresponse()\nprint(r.status)\nprint(r.read().decode())"
        )],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The HTTP port: build info and reload status, labels, 405.
fn the_http_port_serves_build_info_labels_and_refuses_post() {
    let metrics = http("GET", "/metrics");
    assert!(metrics.starts_with("200"), "{metrics}");
    assert!(
        metrics.contains("braid_build_info{node=\"1\",version=\""),
        "{metrics}"
    );
    assert!(
        metrics.contains("braid_config_last_reload_successful{node=\"1\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("braid_io_total{node=\"1\",what=\"ctl_requests\"}"),
        "{metrics}"
    );
    assert!(http("POST", "/metrics").starts_with("405"));
    let topo = http("GET", "/topology");
    assert!(topo.contains("\"label\":\"d\""), "{topo}");
}

/// The dashboard in headless Chromium: the topology (four routers by
/// name, four links) and the session to d are drawn; a screenshot is
/// taken into the lab's directory `dir`.
fn the_dashboard_draws_the_topology_and_the_session(dir: &std::path::Path) {
    let shot = dir.join("dashboard.png");
    let chromium = |extra: &str| {
        in_ns(
            "braid-tops-a",
            &[
                "chromium",
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--virtual-time-budget=4000",
                "--window-size=1300,900",
                extra,
                "http://127.0.0.1:9468/",
            ],
        )
    };
    let dom = chromium("--dump-dom");
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    for id in 1..=4 {
        assert!(
            dom.contains(&format!("<g class=\"node\" data-id=\"{id}\">")),
            "router {id} not drawn"
        );
    }
    for label in ["a", "b", "c", "d"] {
        assert!(
            dom.contains(&format!(">{label}</text></g>")),
            "label {label}"
        );
    }
    // (The page's script holds the same markup with placeholders.)
    let links = dom
        .split("<line class=\"link\" data-pair=\"")
        .skip(1)
        .filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        .count();
    assert_eq!(links, 4, "four links");
    assert!(
        dom.contains("<tr class=\"session\" data-egress=\"4\">"),
        "no session drawn"
    );
    assert!(
        dom.contains("data-path=\"1\""),
        "the session's second path is not drawn"
    );
    let out = chromium(&format!("--screenshot={}", shot.display()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
}

/// iperf3 for 3 s from lab `name`'s host a to its host d (198.18.4.2),
/// as fast as the lab carries it, over lossless links: then the per-path
/// loss every ingress in `sockets` reports (ctl) is none, each path's
/// count and its estimate (packets in flight or overtaken are not lost).
fn full_speed_tcp_reports_no_loss(name: &str, sockets: &[std::path::PathBuf]) {
    let (ah, dh) = (format!("braid-{name}-ah"), format!("braid-{name}-dh"));
    let mut server = Command::new("ip")
        .args([
            "netns",
            "exec",
            &dh,
            "iperf3",
            "-s",
            "-1",
            "-B",
            "198.18.4.2",
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Until the server listens (the event: its socket in the table).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while in_ns(&dh, &["ss", "-Hltn", "sport = :5201"])
        .stdout
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "iperf3 -s never listened"
        );
        std::thread::yield_now();
    }
    let client = in_ns(&ah, &["iperf3", "-c", "198.18.4.2", "-t", "3", "-J"]);
    let report: serde_json::Value = serde_json::from_slice(&client.stdout).unwrap();
    let bits = report["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap_or_else(|| panic!("no goodput in iperf3's report: {report}"));
    assert!(bits > 1e6, "TCP crossed: {bits} bit/s");
    for sock in sockets {
        let out = braid(&[
            "ctl",
            "--json",
            "--socket",
            sock.to_str().unwrap(),
            "sessions",
        ]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for i in doc["ingress"].as_array().unwrap() {
            let sent: u64 = i["counters"]["sent_per_path"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .sum();
            let lost: Vec<u64> = i["counters"]["lost_per_path"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect();
            assert!(
                lost.iter().all(|&l| l == 0),
                "{sent} sent, lost per path {lost:?} on lossless links: {i}"
            );
            let paths = i["paths"].as_array().cloned().unwrap_or_default();
            for p in &paths {
                let loss = p["loss"].as_f64().unwrap_or(0.0);
                assert!(
                    loss == 0.0,
                    "estimated loss {loss} on lossless links: {p}\nthe session: {i}\nthe node: {doc}"
                );
            }
            // The transfer's session is estimated on every path it used:
            // the check above looked at something. (Reports built on the
            // kernel's counts of half a second before dated no packet the
            // ingress still remembered, and there was no estimate.)
            if sent >= 10_000 {
                assert!(
                    paths
                        .iter()
                        .filter(|p| p["packets"].as_u64() > Some(1_000))
                        .count()
                        >= 2,
                    "a striped transfer of {sent} packets without an estimate of both paths: {i}"
                );
            }
        }
    }
    let _ = server.kill();
    let _ = server.wait();
}

/// Kernel TCP as fast as it goes, both ways through the daemons, on
/// lossless links: the per-path loss they report (ctl at the ingress
/// `sock` and at d, metrics) is none (packets in flight or overtaken are
/// not lost).
fn kernel_tcp_crosses_both_ways_and_the_paths_report_no_loss(
    sock: &std::path::Path,
    dir: &std::path::Path,
) {
    full_speed_tcp_reports_no_loss("tops", &[sock.to_path_buf(), dir.join("d.sock")]);
    let metrics = http("GET", "/metrics");
    let lost_lines: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("braid_path_lost_total{"))
        .collect();
    assert!(!lost_lines.is_empty(), "{metrics}");
    // Each path is named by its route as well as its slot: the name
    // stays with the physical path when the slots are re-ordered.
    for route in ["1>2>4", "1>3>4"] {
        assert!(
            lost_lines
                .iter()
                .any(|l| l.contains(&format!("route=\"{route}\""))),
            "{lost_lines:?}"
        );
    }
    assert!(
        lost_lines.iter().all(|l| l.ends_with(" 0")),
        "{lost_lines:?}"
    );
}

/// The shell blocks of docs/operations.md's walk-through marked
/// `<!-- MARK -->`, in order.
fn documented_blocks(mark: &str) -> String {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/operations.md"),
    )
    .unwrap();
    let mut out = String::new();
    let mut lines = doc.lines();
    while let Some(l) = lines.next() {
        // A block may serve several walk-throughs: `<!-- a, b -->`.
        let marks = l
            .trim()
            .strip_prefix("<!-- ")
            .and_then(|m| m.strip_suffix(" -->"))
            .map(|m| m.split(", ").any(|m| m == mark));
        if marks == Some(true) {
            assert_eq!(
                lines.next().map(str::trim),
                Some("```sh"),
                "a block follows {l}"
            );
            for code in lines.by_ref() {
                if code.trim() == "```" {
                    break;
                }
                out.push_str(code);
                out.push('\n');
            }
        }
    }
    out
}

/// Runs the blocks of docs/operations.md marked `mark`, then those
/// marked `{mark} teardown` (whatever the first did), as bash scripts
/// with `braid` from this build on the PATH and `DIR` set to `dir`; both
/// must succeed and leave no namespace `braid-{lab}-*` behind. What the
/// steps printed: standard output, standard error.
fn run_documented(mark: &str, dir: &str, lab: &str) -> (String, String) {
    let steps = documented_blocks(mark);
    let teardown = documented_blocks(&format!("{mark} teardown"));
    assert!(steps.contains("ip netns add"), "{steps}");
    assert!(teardown.contains("ip netns del"), "{teardown}");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_braid"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // Output to files, not pipes: the daemons the steps start in the
    // background keep what they inherit open until the teardown.
    let run = |script: &str, name: &str| {
        let file = |ext: &str| {
            let p = std::env::temp_dir().join(format!("braid-{mark}-{name}.{ext}"));
            (std::fs::File::create(&p).unwrap(), p)
        };
        let ((out, out_path), (err, err_path)) = (file("out"), file("err"));
        let status = Command::new("bash")
            .args(["-c", &format!("set -euo pipefail\n{script}")])
            .env("PATH", &path)
            .env("DIR", dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .status()
            .unwrap();
        let read = |p: PathBuf| std::fs::read(&p).unwrap_or_default();
        Output {
            status,
            stdout: read(out_path),
            stderr: read(err_path),
        }
    };
    let out = run(&steps, "steps");
    let down = run(&teardown, "teardown");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "the {mark} walk-through failed:\n{stdout}\n{stderr}"
    );
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    assert!(
        namespaces_of(lab).is_empty(),
        "the {mark} bench was left behind"
    );
    (stdout, stderr)
}

fn the_getting_started_walkthrough_works_as_written() {
    assert!(documented_blocks("bench").contains("ping"));
    let (stdout, stderr) = run_documented("bench", "/tmp/braid-bench", "bench");
    let daemons: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("braid daemon --config /tmp/braid-bench/"))
        .collect();
    assert!(daemons.is_empty(), "daemons left running: {daemons:?}");
    // What the reader is told to look at says what the doc says it does.
    assert!(
        stdout.contains("3 packets transmitted, 3 received"),
        "{stdout}"
    );
    assert!(stdout.contains("auth          on: key 1 signs"), "{stdout}");
    // Each router's config, checked there, is valid with nothing to warn
    // of; the key and the configs holding it are root's alone.
    for i in [1, 2] {
        let valid = format!("/tmp/braid-bench/r{i}.toml: valid (node {i})\n");
        assert!(stdout.contains(&valid), "{stdout}");
    }
    assert!(!stdout.contains("warning:"), "{stdout}");
    assert!(!stderr.contains("cannot reach"), "the wait loop is quiet");
    assert!(
        stdout.contains("198.18.2.0/24              2 (r2)         2 (r2)"),
        "{stdout}"
    );
    assert!(stdout.contains("braid_neighbors{node=\"1\"} 1"), "{stdout}");
}

fn without_root_the_daemon_says_it_needs_cap_net_admin() {
    // Issue 32: "TUN device braid9: Operation not permitted" said
    // nothing of what to do. The daemon as user nobody (setpriv), in a
    // namespace of its own: refused at the TUN device, with the fix.
    let ns = format!("braid-noroot-{}", std::process::id());
    let _ = Command::new("ip").args(["netns", "del", &ns]).output();
    assert!(Command::new("ip")
        .args(["netns", "add", &ns])
        .status()
        .unwrap()
        .success());
    let dir = std::env::temp_dir().join(format!("braid-noroot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let config = dir.join("r.toml");
    std::fs::write(
        &config,
        format!(
            "node = 9\nlog_format = \"json\"\ncontrol_socket = \"{}\"\n[tun]\nname = \"braid9\"\n[[interface]]\nname = \"lo\"\n",
            dir.join("r.sock").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&config, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns,
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ])
        .arg(env!("CARGO_BIN_EXE_braid"))
        .args(["daemon", "--config", config.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = Command::new("ip").args(["netns", "del", &ns]).output();
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("TUN device braid9")
            && err.contains("run braid as root, or with CAP_NET_ADMIN"),
        "{err}"
    );
    // Issue 32 item 12: with log_format = "json", what the daemon logged
    // before (authentication off, at error level) is one JSON object a
    // line, for a log shipper.
    let logged: Vec<serde_json::Value> = err
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        logged.iter().any(|l| l["level"] == "ERROR"
            && l["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("AUTHENTICATION IS OFF"))
            && l["timestamp"].is_string()),
        "{err}"
    );
}

fn a_bad_config_is_refused_with_file_line_and_field() {
    let dir = std::env::temp_dir().join(format!("braid-daemon-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.toml");
    std::fs::write(
        &p,
        "node = 3\n[[interface]]\nname = \"eth0\"\n[tun]\nmtu = 20\n",
    )
    .unwrap();
    let out = braid(&["daemon", "--check", "--config", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:5: tun.mtu"), "{err}");
    // Type errors name the field and the value forms of TOML, not Rust's
    // types; a table written once where a list of them is meant says so.
    for (text, says) in [
        (
            "node = 3\nport = \"1\"\n[[interface]]\nname = \"eth0\"\n",
            "bad.toml:2: port: expected a whole number from 0 to 65535, found the text \"1\"",
        ),
        (
            "node = 3\n[interface]\nname = \"eth0\"\n",
            "bad.toml:2: interface: a list of tables: write [[interface]]",
        ),
        (
            "node = 3\n[[interface]]\nname = \"eth0\"\n[probes]\ndead_after = [3\n",
            "bad.toml:5: probes.dead_after:",
        ),
    ] {
        std::fs::write(&p, text).unwrap();
        let out = braid(&["daemon", "--check", "--config", p.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
    std::fs::write(&p, "node = 3\n[[interface]]\nname = \"eth0\"\n").unwrap();
    let out = braid(&["daemon", "--check", "--config", p.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Variants of the kernel data path at every router, the ingress too:
/// the first's egress hands what it delivers to the stack; the second's
/// routes it itself, and its ingress encodes at the host's port
/// (`lan_interfaces`).
const KERNEL_VARIANTS: &str = "[[variant]]\nname = \"kernel single\"\nmode = \"single\"\ndatapath = \"kernel\"\nlate_binding = 0\nkernel_delivery = \"stack\"\n\
     [[variant]]\nname = \"kernel mirror\"\nmode = \"mirror:2\"\ndatapath = \"kernel\"\nlate_binding = 0\nkernel_delivery = \"route\"\nlan_encode = true\n";

fn the_kernel_path_hides_loss_with_mirror_as_user_space_does_and_never_delivers_twice() {
    // The user-space test's diamond (10% loss on each path's first link),
    // every router on the kernel path: the same expectations.
    let text = diamond("tkloss", "single", 0.1, 2000) + KERNEL_VARIANTS;
    let r = run_lab(&write_lab("tk1.toml", &text));
    let f = |v: usize| r["variants"][v]["flows"][0].clone();
    eprintln!("kernel single: {}\nkernel mirror: {}", f(0), f(1));
    let lost = |x: &serde_json::Value| x["lost"].as_u64().unwrap();
    let dup = |x: &serde_json::Value| x["duplicates"].as_u64().unwrap_or(0);
    assert!(lost(&f(0)) >= 120, "single: {}", lost(&f(0)));
    assert!(lost(&f(1)) < 100, "mirror: {}", lost(&f(1)));
    assert!(lost(&f(1)) * 2 < lost(&f(0)));
    assert_eq!((dup(&f(0)), dup(&f(1))), (0, 0), "never a packet twice");
    // The kernel did the work: both copies of (nearly) every packet
    // crossed a transit router in the kernel, and none in user space.
    assert!(
        kernel_counter(&r, 1, "rx_forwarded") > 3000,
        "transit in the kernel: {}",
        kernel_counter(&r, 1, "rx_forwarded")
    );
    assert_eq!(
        node_counter(&r, 1, "forwarded"),
        0,
        "no transit in user space"
    );
    assert!(kernel_counter(&r, 1, "tx_copies") > 3500);
    assert!(kernel_counter(&r, 1, "rx_duplicate") > 1000);
    // kernel_delivery: through the TUN device with "stack", straight to
    // the host with "route".
    assert_eq!(kernel_counter(&r, 0, "rx_routed"), 0);
    assert!(
        kernel_counter(&r, 1, "rx_routed") > 1900,
        "routed: {}",
        kernel_counter(&r, 1, "rx_routed")
    );
    assert!(namespaces_of("tkloss").is_empty());
}

fn the_automatic_mode_encoded_in_the_kernel_sees_the_loss_and_leaves_for_a_code() {
    // The automatic mode, the ingress encoding at the host's port in the
    // kernel: the session starts striped (nothing lost), which the
    // kernel encodes, and 3 s in both paths start losing 10%. The
    // egress's reports are measured against the kernel's per-path
    // counts, so the mode sees the loss, leaves stripe for a code, and
    // the session comes back to user space, which encodes it. (Blind to
    // the kernel's packets, the session stayed striped: about 140 of
    // the 1,400 sent after the loss began lost.)
    let text = diamond("tkauto", "adaptive", 0.0, 2000)
        + "[[event]]\nat = \"3s\"\na = \"a\"\nb = \"b\"\naction = \"loss 0.1\"\n\
           [[event]]\nat = \"3s\"\na = \"a\"\nb = \"c\"\naction = \"loss 0.1\"\n\
           [[variant]]\nname = \"kernel adaptive\"\nmode = \"adaptive\"\ndatapath = \"kernel\"\nlate_binding = 0\nkernel_delivery = \"route\"\nlan_encode = true\n";
    let r = run_lab(&write_lab("tkauto.toml", &text));
    let f = r["variants"][0]["flows"][0].clone();
    let a = &r["variants"][0]["daemons"][0]["stats"];
    eprintln!(
        "kernel adaptive: {f}\ningress kernel: {}",
        a["kernel"]["counters"]
    );
    let kernel = |c: &str| a["kernel"]["counters"][c].as_u64().unwrap_or(0);
    assert!(
        kernel("lent") >= 1,
        "the kernel encoded the striped session"
    );
    assert!(kernel("taken_back") >= 1, "and gave it back for a code");
    assert!(
        kernel_counter(&r, 0, "tx_encapsulated") > 100,
        "the kernel encoded packets before the mode changed"
    );
    // 10% of what the kernel striped before the reports told the loss
    // (the estimate needs at least an interval's report after it began:
    // 10-18 lost within the second in three runs here, 33 over two
    // seconds in one CI run, 39 over three in another: at about 65
    // packets a second per path, one interval's 6 or 7 losses do not
    // always make the estimate leave stripe), then only what a code
    // leaves. Blind to the kernel's packets the session stayed striped
    // until the routing's probes showed the loss, or to the end: 31-143
    // lost, 10 of them in the third second in one run (three runs). From
    // the fourth second on, what the code leaves of about 800 packets at
    // 10% loss on both paths: 0 and 3 in two runs, 5 and 2 in two CI runs
    // of 2026-11-29; at most 8 (1%), where staying striped loses about 80.
    let lost = f["lost"].as_u64().unwrap();
    let series = lost_series(&f);
    assert!(lost < 60, "{lost} of 2000 lost: {series:?}");
    assert!(
        series[6..].iter().sum::<u64>() <= 8,
        "still losing from the fourth second after the loss began: {series:?}"
    );
    assert!(namespaces_of("tkauto").is_empty());
}

fn a_blackholed_path_costs_the_kernel_path_what_it_costs_user_space() {
    let text = blackholed_diamond("tkfail") + KERNEL_VARIANTS;
    let r = run_lab(&write_lab("tk2.toml", &text));
    let f = |v: usize| r["variants"][v]["flows"][0].clone();
    eprintln!("kernel single: {}\nkernel mirror: {}", f(0), f(1));
    let lost = |x: &serde_json::Value| x["lost"].as_u64().unwrap();
    let gap = |x: &serde_json::Value| x["max_gap_ms"].as_f64().unwrap();
    // The routes move (the daemon, told by the probes) and the kernel
    // follows: single path loses the outage, then recovers; mirror's
    // other copy was on the other path all along.
    assert!(lost(&f(0)) >= 5, "the blackhole hit the active path");
    assert!(gap(&f(0)) < 2000.0, "recovered: gap {} ms", gap(&f(0)));
    assert!(lost(&f(1)) <= 2, "{}", lost(&f(1)));
    assert!(kernel_counter(&r, 0, "tx_encapsulated") > 300);
    assert!(namespaces_of("tkfail").is_empty());
}

fn kernel_tcp_crosses_the_kernel_path_segments_and_all() {
    // Real TCP through routers on the kernel path: its GSO packets are
    // cut into segments on the way in; mirror:2 spares it most of the
    // 10% loss, as in user space.
    let text = diamond("tktcp", "single", 0.1, 10)
        .replace(
            "[[flow]]\nname = \"probe\"",
            "[[flow]]\nkind = \"tcp\"\nduration = \"4s\"\nbitrate = \"4Mbit\"\nname = \"probe\"",
        )
        .replace("loss = 0.1\n", "loss = 0.1\nrate = \"10Mbit\"\n")
        + KERNEL_VARIANTS;
    let r = run_lab(&write_lab("tk3.toml", &text));
    let f = |v: usize| r["variants"][v]["flows"][0].clone();
    eprintln!("kernel single: {}\nkernel mirror: {}", f(0), f(1));
    let goodput = |x: &serde_json::Value| x["goodput_mbps"].as_f64().unwrap();
    let retx = |x: &serde_json::Value| x["retransmits"].as_u64().unwrap();
    // TCP crossed both variants. Single path meets 10% loss each way and
    // now and then backs off for seconds (0.054 Mbit/s in one full run
    // of about ten; 1.0-1.5 otherwise): it must move data, not a rate.
    assert!(goodput(&f(0)) > 0.01 && goodput(&f(1)) > 0.1);
    let per_mb = |x: &serde_json::Value| retx(x) as f64 / (goodput(x) * 4.0 / 8.0);
    assert!(
        per_mb(&f(0)) > 2.0 * per_mb(&f(1)),
        "retransmissions per MB: {:.0} vs {:.0}",
        per_mb(&f(0)),
        per_mb(&f(1))
    );
    // The kernel encoded the TCP (both ways): at least as many packets
    // as the goodput needs at 1,448 bytes each.
    for v in [0, 1] {
        let encoded = kernel_counter(&r, v, "tx_encapsulated");
        let needed = goodput(&f(v)) * 1e6 / 8.0 * 4.0 / 1448.0;
        assert!(
            encoded as f64 >= needed,
            "variant {v}: TCP encoded in the kernel: {encoded} < {needed:.0}"
        );
    }
    assert!(namespaces_of("tktcp").is_empty());
}

fn ipv6_tcp_crosses_the_kernel_path_encoded_and_routed_in_the_kernel() {
    // The TCP test above, over IPv6: the kernel encodes the hosts' IPv6
    // packets at the ingress (both ways: data and ACKs), transit runs
    // in the kernel, and the second variant's egress routes what it
    // delivers straight to the host.
    let text = diamond("tk6", "single", 0.0, 10)
        .replace(
            "[[flow]]\nname = \"probe\"",
            "[[flow]]\nkind = \"tcp\"\nipv6 = true\nduration = \"4s\"\nbitrate = \"4Mbit\"\nname = \"probe\"",
        )
        .replace("loss = 0\n", "rate = \"10Mbit\"\n")
        + KERNEL_VARIANTS;
    let r = run_lab(&write_lab("tk6.toml", &text));
    let f = |v: usize| r["variants"][v]["flows"][0].clone();
    eprintln!("kernel single: {}\nkernel mirror: {}", f(0), f(1));
    let goodput = |x: &serde_json::Value| x["goodput_mbps"].as_f64().unwrap();
    for v in [0, 1] {
        // 4 Mbit/s offered on clean 10-Mbit/s paths.
        assert!(goodput(&f(v)) > 3.0, "variant {v}: {}", goodput(&f(v)));
        // At least the segments the goodput needs (1,428 bytes of IPv6
        // TCP payload each at most) went through the kernel's encoder as
        // IPv6, at the sending host's router.
        let encoded = kernel_counter(&r, v, "tx_ipv6");
        let needed = goodput(&f(v)) * 1e6 / 8.0 * 4.0 / 1428.0;
        assert!(
            encoded as f64 >= needed,
            "variant {v}: IPv6 encoded in the kernel: {encoded} < {needed:.0}"
        );
        assert_eq!(
            node_counter(&r, v, "forwarded"),
            0,
            "variant {v}: no transit in user space"
        );
    }
    assert!(
        kernel_counter(&r, 1, "rx_routed") as f64 >= goodput(&f(1)) * 1e6 / 8.0 * 4.0 / 1428.0,
        "IPv6 routed from braid_rx: {}",
        kernel_counter(&r, 1, "rx_routed")
    );
    assert!(namespaces_of("tk6").is_empty());
}

/// The kernel data path at the egress and in transit, user space at the
/// ingress (late binding keeps it there): TCP both ways as fast as the
/// lab carries it, over lossless links. The kernel's windows report each
/// path's newest arrival as user space does, so the ingresses count no
/// loss (before they did, a steady stream in flight counted as lost:
/// 4.93% on a 660 Mbit/s link).
fn the_kernel_egress_reports_no_loss_on_lossless_paths_at_full_speed() {
    let text = diamond("tkrate", "stripe", 0.0, 10)
        + "[[variant]]\nname = \"kernel\"\nmode = \"stripe\"\ndatapath = \"kernel\"\n";
    with_lab_up("tkrate", &text, |dir| {
        full_speed_tcp_reports_no_loss("tkrate", &[dir.join("a.sock"), dir.join("d.sock")]);
    });
}

fn kernel_and_user_routers_mix_in_one_mesh() {
    // The ingress a and transit c on the kernel path, transit b and the
    // egress d in user space: mirror:2 works across the mix.
    let text = diamond("tkmix", "mirror:2", 0.1, 2000)
        + "[[variant]]\nname = \"mixed\"\nmode = \"mirror:2\"\ndatapath = \"kernel\"\nlate_binding = 0\nkernel_routers = [\"a\", \"c\"]\n";
    let r = run_lab(&write_lab("tk4.toml", &text));
    let f = r["variants"][0]["flows"][0].clone();
    eprintln!("mixed: {f}");
    let lost = f["lost"].as_u64().unwrap();
    assert!(lost < 100, "{lost}");
    assert_eq!(f["duplicates"].as_u64().unwrap_or(0), 0);
    let daemons = &r["variants"][0]["daemons"];
    let kernel = |i: usize, c: &str| {
        daemons[i]["stats"]["kernel"]["programs"][c]
            .as_u64()
            .unwrap_or(0)
    };
    let node = |i: usize, c: &str| daemons[i]["stats"]["node"][c].as_u64().unwrap_or(0);
    assert!(kernel(0, "tx_copies") > 3500, "a encodes in the kernel");
    // The hosts' UDP crosses a veth with its checksum left to the device:
    // a finishes it (through the segmenter) for b and d, which read bytes.
    assert!(
        kernel(0, "tx_checksummed") > 1900,
        "a finished the checksums"
    );
    assert!(kernel(2, "rx_forwarded") > 1500, "c forwards in the kernel");
    assert!(node(1, "forwarded") > 1500, "b forwards in user space");
    assert!(
        daemons[3]["stats"]["kernel"].is_null(),
        "d runs no kernel path"
    );
    assert!(node(3, "delivered") > 1900, "d delivers in user space");
    assert!(namespaces_of("tkmix").is_empty());
}

fn kernel_transit_keeps_udp_checksums_for_an_egress_that_re_orders() {
    // scenarios/lab/remote-bottleneck.toml on the kernel data path with
    // re-ordering on: the egresses run in user space, so what kernel
    // transit hands them crosses the kernel's UDP stack, which checks the
    // checksum. Transit used to zero it; on the links whose veth finishes
    // checksums it then arrived wrong and every reply was dropped (TCP
    // never started).
    let full = scenario_with(
        "remote-bottleneck.toml",
        &[("name = \"remote\"", "name = \"tkro\"")],
    );
    let head = &full[..full.find("[[variant]]").unwrap()];
    let text = format!(
        "{head}[[variant]]\nname = \"kernel, stripe, re-ordered\"\nmode = \"stripe\"\nreorder = true\ndatapath = \"kernel\"\n"
    );
    let r = run_lab(&write_lab("t15.toml", &text));
    let flows = &r["variants"][0]["flows"];
    eprintln!("bulk: {}\nvoip: {}", flows[0], flows[1]);
    // 18.1 Mbit/s in its run (two 10-Mbit/s paths; the old transit: none).
    assert!(
        flows[0]["goodput_mbps"].as_f64().unwrap() > 8.0,
        "{}",
        flows[0]
    );
    assert!(flows[1]["lost"].as_u64().unwrap() <= 5, "{}", flows[1]);
    let daemons = &r["variants"][0]["daemons"];
    let forwarded = |i: usize| {
        daemons[i]["stats"]["kernel"]["programs"]["rx_forwarded"]
            .as_u64()
            .unwrap_or(0)
    };
    assert!(forwarded(1) + forwarded(2) > 1000, "transit in the kernel");
    assert!(namespaces_of("tkro").is_empty());
}

fn mss_clamping_spares_tcp_its_first_window_through_the_tunnel() {
    // scenarios/lab/unequal-paths.toml, clean and shorter, striped and
    // re-ordered, with and without `[tun] mss_clamp`. Hosts announce an
    // MSS of 1,460; unclamped, their first full segments are refused at
    // the TUN device: router a tells the sending host "fragmentation
    // needed" and the host sends them again smaller (path MTU
    // discovery). Clamped, no segment is too big and no such message
    // comes. The test counts the messages, not the retransmissions: the
    // first window's 7-14 resends are a few among those slow start's
    // overshoot makes (15-94 in all unclamped, 15-41 clamped, in the
    // runs measured), so the totals do not tell the two apart.
    let full = scenario_with(
        "unequal-paths.toml",
        &[
            ("name = \"unequal\"", "name = \"tmss\""),
            ("loss = 0.01\n", ""),
            ("delay = \"50ms\"", "delay = \"10ms\""),
            ("duration = \"10s\"", "duration = \"4s\""),
        ],
    );
    let head = &full[..full.find("[[variant]]").unwrap()];
    let text = format!(
        "{head}[[variant]]\nname = \"plain\"\nmode = \"stripe\"\nreorder = true\n\
         [[variant]]\nname = \"clamped\"\nmode = \"stripe\"\nreorder = true\nmss_clamp = true\n"
    );
    let r = run_lab(&write_lab("t16.toml", &text));
    let clamped_at = |v: usize| -> Vec<u64> {
        (0..4)
            .map(|i| {
                r["variants"][v]["daemons"][i]["stats"]["io"]["tcp_mss_clamped"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    let retx = |v: usize| {
        r["variants"][v]["flows"][0]["retransmits"]
            .as_u64()
            .unwrap()
    };
    let too_big = |v: usize| {
        r["variants"][v]["flows"][0]["unreachable_heard"]
            .as_u64()
            .unwrap()
    };
    let goodput = |v: usize| {
        r["variants"][v]["flows"][0]["goodput_mbps"]
            .as_f64()
            .unwrap()
    };
    eprintln!(
        "plain: {:?}, {} unreachable, {} retransmissions, {:.2} Mbit/s; \
         clamped: {:?}, {}, {}, {:.2}",
        clamped_at(0),
        too_big(0),
        retx(0),
        goodput(0),
        clamped_at(1),
        too_big(1),
        retx(1),
        goodput(1)
    );
    assert_eq!(clamped_at(0), [0, 0, 0, 0], "off by default");
    // The SYNs enter at a, the SYN-ACKs at d (iperf3's control
    // connection and its test's); transit routers see none.
    let c = clamped_at(1);
    assert!(c[0] >= 1 && c[3] >= 1 && c[1] == 0 && c[2] == 0, "{c:?}");
    assert!(goodput(0) > 1.0 && goodput(1) > 1.0);
    assert!(too_big(0) >= 1, "unclamped, no segment was too big");
    assert_eq!(too_big(1), 0, "clamped, a segment was too big");
    assert!(namespaces_of("tmss").is_empty());
}

/// The repository's scenario `name`, with each (from, to) replaced.
fn scenario_with(name: &str, edits: &[(&str, &str)]) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/lab/");
    let mut text = std::fs::read_to_string(format!("{path}{name}")).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{name} has no {from:?}");
        text = text.replace(from, to);
    }
    text
}

fn a_roaming_clients_upstream_copies_leave_the_gateway_at_most_once_in_a_hundred() {
    // scenarios/lab/roam-upstream.toml, shorter: while the client walks,
    // ap1 and ap2 both hear it and both forward its VoIP stream toward
    // gw; gw's egress drops the copies (user path, tree mode, kernel
    // path), and without the copy window (the last variant) they leave.
    let text = scenario_with(
        "roam-upstream.toml",
        &[
            ("name = \"roam-up\"", "name = \"tup\""),
            ("at = \"3s\"", "at = \"2s\""),
            ("duration = \"8s\"", "duration = \"5s\""),
            ("overlap = \"2s\"", "overlap = \"1s\""),
            ("count = 700", "count = 400"),
        ],
    );
    let r = run_lab(&write_lab("tup.toml", &text));
    let flow = |v: usize| r["variants"][v]["flows"][0].clone();
    let share = |v: usize| {
        let f = flow(v);
        eprintln!(
            "{}: {f}{}",
            r["variants"][v]["variant"],
            daemon_counters(&r, v)
        );
        let dup = f["duplicates"].as_u64().unwrap() as f64;
        dup / f["delivered"].as_u64().unwrap().max(1) as f64
    };
    let without = share(3);
    assert!(
        without > 0.1,
        "the walk made too few copies to test: {without}"
    );
    for v in 0..3 {
        assert!(
            share(v) <= 0.01,
            "{}: {}",
            r["variants"][v]["variant"],
            flow(v)
        );
    }
    // Nothing is lost (the stream's first seconds once were, before
    // access points got the database when they came up: the counters in
    // the message say where packets went, should it happen again).
    for v in 0..3 {
        assert_eq!(
            flow(v)["lost"].as_u64(),
            Some(0),
            "{}{}",
            flow(v),
            daemon_counters(&r, v)
        );
    }
    assert!(kernel_counter(&r, 2, "pass_copy_check") >= 100);
}

fn a_gateways_uplink_dies_silently_and_a_roaming_clients_voip_and_new_connections_move_within_two_seconds(
) {
    // scenarios/lab/gateways.toml, shorter (10 s per variant, not 15):
    // the phone roams from ap1 to ap2 in seconds 1-5, gw1's uplink dies
    // silently at 6 s (its ISP drops everything from it), braid's gw1
    // notices by checking and withdraws the way out; static routes keep
    // sending to gw1 (the anchor, in the same run); the kernel data path
    // last.
    let text = scenario_with(
        "gateways.toml",
        &[
            ("name = \"gateways\"", "name = \"tgw\""),
            ("at = \"2s\"", "at = \"1s\""),
            ("duration = \"6s\"", "duration = \"4s\""),
            ("at = \"10s\"", "at = \"6s\""),
            ("count = 750", "count = 500"),
            ("count = 150", "count = 100"),
            ("duration = \"15s\"", "duration = \"10s\""),
        ],
    );
    let r = run_lab(&write_lab("tgw.toml", &text));
    let flow = |v: usize, k: usize| r["variants"][v]["flows"][k].clone();
    for v in 0..3 {
        for k in 0..3 {
            eprintln!("{}: {}", r["variants"][v]["variant"], flow(v, k));
        }
    }
    let n = |v: usize, k: usize, key: &str| flow(v, k)[key].as_u64().unwrap();
    let gap = |v: usize, k: usize| flow(v, k)["max_gap_ms"].as_f64().unwrap();
    // braid, user and kernel data paths: the VoIP stream's longest outage
    // and the longest time without a new connection are under 2 s
    // (1.2-1.5 s here: the uplink check's 3 x 400 ms + 300 ms); nothing
    // else of the stream is lost (the roam costs nothing), and its copies
    // from the two access points do not leave the gateway.
    for v in [0, 2] {
        assert!(
            gap(v, 0) <= 2000.0,
            "{}{}",
            flow(v, 0),
            daemon_counters(&r, v)
        );
        assert!(n(v, 0, "lost") <= 100, "{}", flow(v, 0));
        assert!(
            n(v, 0, "duplicates") * 100 <= n(v, 0, "sent"),
            "{}",
            flow(v, 0)
        );
        assert!(gap(v, 1) <= 2000.0, "{}", flow(v, 1));
        // The transfer through gw2 keeps its rate (20 Mbit/s asked).
        assert!(
            flow(v, 2)["goodput_mbps"].as_f64().unwrap() > 18.0,
            "{}",
            flow(v, 2)
        );
    }
    // Static routes: everything toward gw1 is lost from the cut to the
    // end (4 s), new connections too: what braid's check takes away.
    assert!(gap(1, 0) >= 3500.0, "{}", flow(1, 0));
    assert!(gap(1, 1) >= 3500.0, "{}", flow(1, 1));
    assert!(namespaces_of("tgw").is_empty());
}

fn an_uplink_lost_mid_transfer_costs_plain_linux_its_queue_and_braid_almost_nothing() {
    // scenarios/lab/handoff.toml, shorter: the uplink goes 3 s into 6.
    let text = scenario_with(
        "handoff.toml",
        &[
            ("name = \"handoff\"", "name = \"thand\""),
            ("duration = \"12s\"", "duration = \"6s\""),
            ("at = \"6s\"", "at = \"3s\""),
        ],
    );
    let r = run_lab(&write_lab("t7.toml", &text));
    let f = |v: usize| r["variants"][v]["flows"][0].clone();
    eprintln!("plain Linux: {}\nbraid: {}", f(0), f(1));
    let after = |x: &serde_json::Value| x["retransmits_after_event"].as_u64().unwrap();
    // Plain Linux loses what its uplink's queue held (32-36 retransmitted
    // in this shorter run); braid what the kernel held below its binding
    // point (two datagrams) and what was on the way (2-4 seen).
    assert!(after(&f(0)) >= 20, "{}", after(&f(0)));
    // What the link's queue held when its carrier went: for plain Linux
    // what CUBIC had queued at that moment (16-86 seen; fewest just after
    // it backed off), for braid the couple the daemon lets the kernel
    // hold.
    let queued = |v: usize| r["variants"][v]["queued_at_down"].as_u64().unwrap();
    assert!(
        queued(0) >= 8 && queued(1) <= 4,
        "{} vs {}",
        queued(0),
        queued(1)
    );
    // On failure, what every braid daemon counted (sends that failed,
    // interfaces seen going down, ...).
    assert!(
        after(&f(1)) * 3 < after(&f(0)),
        "{} vs {}; braid's daemons: {}",
        after(&f(1)),
        after(&f(0)),
        r["variants"][1]["daemons"]
    );
    // With the kernel data path (transit and egress in the kernel, the
    // ingress in the daemon: late binding on), the same as braid's.
    eprintln!("braid kernel path: {}\nearly binding: {}", f(2), f(3));
    assert!(queued(2) <= 4, "kernel path: {} queued", queued(2));
    assert!(
        after(&f(2)) * 3 < after(&f(0)),
        "kernel path {} vs plain Linux {}",
        after(&f(2)),
        after(&f(0))
    );
    // Everything carried on over the second uplink.
    for v in [0, 1, 2, 3] {
        assert!(f(v)["goodput_mbps"].as_f64().unwrap() > 3.0, "{}", f(v));
    }
    assert!(namespaces_of("thand").is_empty());
}

fn a_udp_flow_at_nine_tenths_of_two_unequal_paths_arrives_whole() {
    // scenarios/lab/unequal-udp.toml, shorter: 45 Mbit/s over 10 + 40
    // (it settles 5 s: the file says why).
    let text = scenario_with(
        "unequal-udp.toml",
        &[
            ("name = \"unequaludp\"", "name = \"tudp\""),
            ("duration = \"10s\"", "duration = \"5s\""),
        ],
    );
    let r = run_lab(&write_lab("t12.toml", &text));
    let f = |v: usize| r["variants"][v]["flows"][0].clone();
    let n = |v: usize, k: &str| f(v)[k].as_u64().unwrap();
    let drops = |v: usize| r["variants"][v]["link_drops"].clone();
    // Loss this machine made, not the routing: the delay emulators', the
    // daemons' own (their sockets or TUN queues overflowed because they
    // were not scheduled in time) and the receiving iperf3's (its socket).
    let machine = |v: usize| {
        let d = &r["variants"][v];
        let daemons: u64 = d["daemons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let io = &s["stats"]["io"];
                ["udp_rx_dropped", "tun_queue_dropped", "tun_write_dropped"]
                    .iter()
                    .map(|k| io[*k].as_u64().unwrap())
                    .sum::<u64>()
            })
            .sum();
        let e = &d["link_drops"]["emulator"];
        daemons
            + d["flows"][0]["receiver_dropped"].as_u64().unwrap_or(0)
            + ["queue_full", "socket", "send_failed"]
                .iter()
                .map(|k| e[*k].as_u64().unwrap())
                .sum::<u64>()
    };
    for v in 0..3 {
        eprintln!(
            "{}: {}\n  links dropped {}; machine-made {}",
            r["variants"][v]["variant"],
            f(v),
            drops(v),
            machine(v)
        );
    }
    // One path carries at most 40 of the 45 Mbit/s: plain Linux on its
    // one path (either, as its routing finds them) loses 11% or 78%;
    // more than 5% shows the flow exceeds a path, and the rate limiter
    // on its way is where it was lost.
    assert!(n(0, "lost") * 20 > n(0, "sent"), "{}", f(0));
    let rate_limited = |v: usize| drops(v)["rate_limited"].as_u64().unwrap();
    assert!(rate_limited(0) * 20 > n(0, "sent"), "{}", drops(0));
    // braid splits by what each path carries: all of it arrives (0 lost
    // in every run seen here; before the split followed the paths'
    // rates, 57% was lost under stripe and 78% under adaptive). The
    // claim is the split's: at most 1% dropped at the paths' rate limits,
    // and at most 1% lost besides what this machine dropped itself (one
    // CI run lost 2.9% before the emulators asked for larger buffers; a
    // machine dropping more than a tenth cannot show the claim either
    // way). Not lost either: what arrived after iperf3 had closed the
    // test (its end, sent on the 10-ms path, overtakes up to 40 ms of
    // the 50-ms path's datagrams: up to 376 in a run here, 1.7%).
    let late = |v: usize| f(v)["arrived_late"].as_u64().unwrap_or(0);
    for v in [1, 2] {
        let (sent, lost) = (n(v, "sent"), n(v, "lost") - late(v));
        assert!(sent > 10_000, "{}", f(v));
        assert!(rate_limited(v) * 100 <= sent, "{}", drops(v));
        assert!(
            machine(v) * 10 <= sent,
            "this machine dropped {} of {sent} packets itself: too slow for the scenario",
            machine(v)
        );
        assert!(lost <= sent / 100 + machine(v), "{}", f(v));
    }
    assert!(namespaces_of("tudp").is_empty());
}

fn when_a_path_halves_its_rate_the_split_follows_and_voip_loses_nothing() {
    // scenarios/lab/capacity-drop.toml, the automatic mode only: the
    // 40-Mbit/s path falls to 20 Mbit/s 6 s into a 14-s transfer.
    let text = scenario_with(
        "capacity-drop.toml",
        &[
            ("name = \"capdrop\"", "name = \"tdrop\""),
            ("[[variant]]\nname = \"MPTCP\"\nsoftware = \"mptcp\"\n", ""),
            (
                "[[variant]]\nname = \"braid stripe, re-ordered\"\nmode = \"stripe\"\nreorder = true\n",
                "",
            ),
        ],
    );
    let r = run_lab(&write_lab("t13.toml", &text));
    let flows = &r["variants"][0]["flows"];
    eprintln!("bulk: {}\nvoip: {}", flows[0], flows[1]);
    let series: Vec<f64> = flows[0]["goodput_series_mbps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    // Before the drop both paths carried (more than the short path's 10
    // Mbit/s; how much depends on how soon TCP's slow start ended: 28 to
    // 43 in the runs seen).
    assert!(series[..6].iter().any(|&x| x > 15.0), "{series:?}");
    // From 2 s after the drop (seconds 8-13) the sum is 30 Mbit/s: each
    // second 26.9-27.9 in the runs seen (MPTCP 26.9-29.5). A split stuck
    // at the old 1:4 would carry 25 (the long path's 20 Mbit/s as four
    // fifths) every second. 85% is the bound, on the median of those
    // five seconds: one full run here had a single second of 15.8
    // followed by 36.5 (a stall released at once, the machine busy with
    // the whole suite: the same test passed three times alone right
    // after, every second 27.1-27.6), which a mean counts against the
    // split.
    let mut after = series[8..13].to_vec();
    after.sort_by(f64::total_cmp);
    assert!(
        after[2] >= 25.5,
        "{series:?}; the links' own drops: {}",
        r["variants"][0]["link_drops"]
    );
    // VoIP: every packet (0 lost in every run seen), its p99 within 30 ms
    // of the long path's 50 ms (53-54 ms seen; MPTCP's 111).
    assert!(flows[1]["lost"].as_u64().unwrap() <= 1, "{}", flows[1]);
    assert!(
        flows[1]["delay_p99_ms"].as_f64().unwrap() < 80.0,
        "{}",
        flows[1]
    );
    assert!(namespaces_of("tdrop").is_empty());
}

fn pacing_keeps_voip_out_of_a_queue_beyond_the_first_hop() {
    // scenarios/lab/remote-bottleneck.toml, the paced automatic mode
    // only: each path's 10-Mbit/s bottleneck is its second hop, where
    // TCP fills a 100-ms queue unless the ingress paces below it.
    let text = scenario_with(
        "remote-bottleneck.toml",
        &[
            ("name = \"remote\"", "name = \"tpace\""),
            ("[[variant]]\nname = \"MPTCP\"\nsoftware = \"mptcp\"\n", ""),
            (
                "[[variant]]\nname = \"braid stripe, re-ordered\"\nmode = \"stripe\"\nreorder = true\n",
                "",
            ),
            (
                "[[variant]]\nname = \"braid stripe, re-ordered, paced\"\nmode = \"stripe\"\nreorder = true\npace = true\nreport_interval = \"250ms\"\n",
                "",
            ),
            (
                "[[variant]]\nname = \"braid adaptive, re-ordered\"\nmode = \"adaptive\"\nreorder = true\n",
                "",
            ),
        ],
    );
    let r = run_lab(&write_lab("t14.toml", &text));
    let variants = r["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 1, "only the paced variant runs");
    let flows = &variants[0]["flows"];
    eprintln!("bulk: {}\nvoip: {}", flows[0], flows[1]);
    // VoIP's median one-way delay: 23.7-24.0 ms paced in the runs seen
    // (the paths' 20 ms and the hop's serialisation), against 89-141 ms
    // unpaced and 104-108 with MPTCP, where it waits in the second hop's
    // queue. 40 ms is the bound: far from both.
    let p50 = flows[1]["delay_p50_ms"].as_f64().unwrap();
    assert!(p50 < 40.0, "{}", flows[1]);
    assert!(flows[1]["lost"].as_u64().unwrap() <= 1, "{}", flows[1]);
    // The transfer keeps the paths' rate: 16.7-17.0 Mbit/s paced, 16.3-17.2
    // unpaced (of 20).
    let goodput = flows[0]["goodput_mbps"].as_f64().unwrap();
    assert!(goodput > 14.0, "{}", flows[0]);
    assert!(namespaces_of("tpace").is_empty());
}

fn an_unmodified_client_roams_between_access_points_and_smesh_trees_lose_nothing() {
    // scenarios/lab/smesh-roam.toml, shorter: the walk from ap1 to ap2
    // takes 5 s (1 s of overlap) from 2 s into 8.
    let text = scenario_with(
        "smesh-roam.toml",
        &[
            ("name = \"smesh-roam\"", "name = \"troam\""),
            ("at = \"3s\"", "at = \"2s\""),
            ("duration = \"8s\"", "duration = \"5s\""),
            ("overlap = \"2s\"", "overlap = \"1s\""),
            ("count = 700", "count = 400"),
            ("duration = \"14s\"", "duration = \"8s\""),
        ],
    );
    let r = run_lab(&write_lab("t11.toml", &text));
    let flow = |v: usize, f: usize| r["variants"][v]["flows"][f].clone();
    for v in 0..3 {
        eprintln!(
            "{}: {} / {}",
            r["variants"][v]["variant"],
            flow(v, 0),
            flow(v, 1)
        );
    }
    let lost = |v: usize| flow(v, 0)["lost"].as_u64().unwrap();
    // The walk cuts ap1 for real: plain Linux, homed there until the cut,
    // loses what ap1's fading port loses (about 40 in this run).
    assert!(lost(0) >= 10, "plain Linux lost {}", lost(0));
    // SMesh: both access points serve the client while it is in range of
    // both; the gateway's tree reaches each; nothing is lost, and what
    // both delivered reached the client twice.
    assert_eq!(lost(2), 0, "SMesh lost VoIP packets: {}", flow(2, 0));
    assert!(flow(2, 0)["duplicates"].as_u64().unwrap() > 0);
    assert_eq!(flow(2, 0)["sent"].as_u64().unwrap(), 400);
    // The TCP download never stalls: every second of it moved data.
    assert_never_stalls(&flow(2, 1), 7);
    // The same with the kernel data path: the gateway marks (zero bytes
    // added), the transit router copies, the access points deliver.
    assert_eq!(lost(3), 0, "SMesh in the kernel lost: {}", flow(3, 0));
    assert!(flow(3, 0)["duplicates"].as_u64().unwrap() > 0);
    assert!(kernel_counter(&r, 3, "tree_marked") >= 400);
    assert!(kernel_counter(&r, 3, "tree_forwarded") >= 400);
    assert!(kernel_counter(&r, 3, "tree_delivered") >= 400);
    // A router whose database is a flood behind the entry point's while
    // the client changes access points has no entry yet for the new tree:
    // the few marked packets that reach it in that window go to its stack,
    // mark cleared (docs/operations.md), and are not lost (lost(3) is 0
    // above). One full run in eight met 29 of some 14,000 marked.
    let marked = kernel_counter(&r, 3, "tree_marked");
    let missed = kernel_counter(&r, 3, "pass_not_on_tree");
    assert!(
        missed * 100 <= marked,
        "{missed} of {marked} marked packets found no tree entry"
    );
    assert!(namespaces_of("troam").is_empty());
}

fn an_unmodified_ipv6_client_takes_its_address_from_the_access_points_and_roams_without_loss() {
    // scenarios/lab/smesh-roam6.toml, shorter (as the IPv4 test above),
    // SMesh trees only: the client's address and default route come from
    // the access points' router advertisements (the lab waits until every
    // router knows the client at its SLAAC address), its VoIP stream and
    // TCP download run over IPv6.
    let text = scenario_with(
        "smesh-roam6.toml",
        &[
            ("name = \"smesh-roam6\"", "name = \"troam6\""),
            ("at = \"3s\"", "at = \"2s\""),
            ("duration = \"8s\"", "duration = \"5s\""),
            ("overlap = \"2s\"", "overlap = \"1s\""),
            ("count = 700", "count = 400"),
            ("duration = \"14s\"", "duration = \"8s\""),
            (
                "[[variant]]\nname = \"braid single\"\nmode = \"single\"\n",
                "",
            ),
        ],
    );
    let r = run_lab(&write_lab("t11v6.toml", &text));
    let flow = |f: usize| r["variants"][0]["flows"][f].clone();
    eprintln!("{}: {} / {}", r["variants"][0]["variant"], flow(0), flow(1));
    assert_eq!(r["variants"].as_array().unwrap().len(), 1);
    assert_eq!(flow(0)["sent"].as_u64().unwrap(), 400);
    assert_eq!(
        flow(0)["lost"].as_u64().unwrap(),
        0,
        "SMesh lost: {}",
        flow(0)
    );
    assert!(
        flow(0)["duplicates"].as_u64().unwrap() > 0,
        "both served it"
    );
    assert_never_stalls(&flow(1), 7);
    assert!(namespaces_of("troam6").is_empty());
}

fn a_key_rotated_one_router_at_a_time_loses_nothing_and_a_router_that_skips_a_step_is_cut_off() {
    // scenarios/lab/rekey.toml as shipped: nine reloads, one router at a
    // time, VoIP flowing throughout.
    let text = scenario_with("rekey.toml", &[("name = \"rekey\"", "name = \"trekey\"")]);
    let r = run_lab(&write_lab("trekey.toml", &text));
    let flow = r["variants"][0]["flows"][0].clone();
    eprintln!("rotation: {flow}");
    assert_eq!(flow["sent"].as_u64().unwrap(), 600);
    assert_eq!(flow["lost"].as_u64().unwrap(), 0, "{flow}");
    for d in r["variants"][0]["daemons"].as_array().unwrap() {
        let auth = &d["stats"]["auth"];
        assert_eq!(
            auth["signing_key"], 2,
            "every router ends on the new key: {auth}"
        );
        assert_eq!(auth["accepted_keys"], serde_json::json!([2]), "{auth}");
    }
    for kind in ["unknown_key", "bad_mac", "unauthenticated"] {
        assert_eq!(control_refusals(&r, kind), 0, "{kind}");
    }
    // The same with the middle router jumping to the new key alone: its
    // neighbors cannot check it, and the stream stops.
    let step = text.find("# Step 1").unwrap();
    let skipped = format!(
        "{}[[event]]\nat = \"2s\"\nrouter = \"r2\"\naction = \"keys 2\"\n",
        &text[..step]
    )
    .replace("name = \"trekey\"", "name = \"trekeyx\"");
    let r = run_lab(&write_lab("trekeyx.toml", &skipped));
    let flow = r["variants"][0]["flows"][0].clone();
    eprintln!("skipped step: {flow}");
    assert!(flow["lost"].as_u64().unwrap() > 300, "{flow}");
    assert!(control_refusals(&r, "unknown_key") > 20);
    assert!(namespaces_of("trekey").is_empty() && namespaces_of("trekeyx").is_empty());
}

fn a_stranger_flooding_a_router_changes_nothing_costs_little_and_is_counted() {
    // scenarios/lab/flood.toml as shipped: a 5 s flood of r2 (the
    // transit router) from a stranger on the r1-r2 link, VoIP across r2,
    // user-space and kernel data paths.
    let text = scenario_with("flood.toml", &[("name = \"flood\"", "name = \"tflood\"")]);
    let r = run_lab(&write_lab("tflood.toml", &text));
    for (v, variant) in r["variants"].as_array().unwrap().iter().enumerate() {
        let name = variant["variant"].as_str().unwrap();
        let voip = &variant["flows"][0];
        let flood = &variant["flows"][1]["details"];
        eprintln!("{name}: voip {voip}\n{name}: flood {flood}");
        let f = &flood["flooder"];
        let sent = |k: &str| f[k].as_u64().unwrap();
        assert!(sent("garbage") > 10_000, "{name}: the flood was weak: {f}");
        assert!(
            f["heard"].as_u64().unwrap() > 0,
            "{name}: nothing heard to replay"
        );
        // Legitimate traffic keeps flowing: at most 2% lost in all, and
        // nothing after the flood (it ends at 9 s).
        let lost = voip["lost"].as_u64().unwrap();
        assert!(lost <= 15, "{name}: {lost} VoIP packets lost");
        let series: Vec<u64> = voip["lost_series"]
            .as_array()
            .map(|a| a.iter().map(|x| x.as_u64().unwrap()).collect())
            .unwrap_or_default();
        assert!(
            series.iter().skip(10).all(|&n| n == 0),
            "{name}: {series:?}"
        );
        // Memory stays put: the daemon's RSS grows by under 8 MB and stays
        // under 64 MB.
        let before = flood["rss_before_kb"].as_u64().unwrap();
        let max = flood["rss_max_kb"].as_u64().unwrap();
        assert!(
            max < before + 8 * 1024 && max < 64 * 1024,
            "{name}: RSS {before} -> {max} kB"
        );
        // The counters account for the garbage: every flooded datagram
        // is refused once, by reason (or dropped by the kernel for a full
        // socket, counted there).
        let r2 = &variant["daemons"][1]["stats"];
        let errors = &r2["control"]["rx_errors"];
        let kind = |k: &str| errors[k].as_u64().unwrap_or(0);
        // (A garbage datagram that happens to parse as a signed control
        // message is refused by its MAC too: a few at most.)
        // And what the kernel dropped for a full socket is missing here.
        let dropped = flood["udp_receive_buffer_drops"].as_u64().unwrap();
        let near = |got: u64, sent: u64| got + dropped + 10 >= sent && got <= sent + 10;
        assert!(
            near(kind("bad_mac"), sent("forged")),
            "{name}: forgeries {errors} {f}"
        );
        assert!(
            near(kind("replayed") + kind("stale_counter"), sent("replayed")),
            "{name}: replays {errors} {f}"
        );
        let refused: u64 = errors
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_u64().unwrap())
            .sum::<u64>()
            + r2["node"]["unauthenticated"].as_u64().unwrap()
            + kernel_counter(&r, v, "rx_unauthenticated");
        let total =
            f["garbage"].as_u64().unwrap() + sent("forged") + sent("replayed") + sent("data");
        let drops = flood["udp_receive_buffer_drops"].as_u64().unwrap();
        assert!(
            refused + drops >= total && refused <= total + 10,
            "{name}: {refused} refused + {drops} dropped for {total} sent"
        );
        // Nothing a stranger sent reached a table: the forged
        // advertisements (of 64 origins) installed nothing anywhere.
        for d in variant["daemons"].as_array().unwrap() {
            let lsdb = &d["stats"]["lsdb"];
            assert!(lsdb["installed"].as_u64().unwrap() <= 10, "{name}: {lsdb}");
            assert_eq!(lsdb["refused_origins"].as_u64(), Some(0), "{name}: {lsdb}");
        }
    }
    assert!(namespaces_of("tflood").is_empty());
}

fn forged_data_as_a_spoofed_neighbor_costs_at_most_itself_on_both_data_paths() {
    // scenarios/lab/spoof.toml as shipped: a stranger on the r2-r3 link
    // sends 13 forged copies of a VoIP packet as r2 (a new epoch, two
    // close numbers far ahead, ten mixed), on both data paths. Before
    // session checks, the first alone made r3 drop every later packet of
    // the stream (600 of 600 in the next 3 s, measured by the issue's
    // probe).
    let text = scenario_with("spoof.toml", &[("name = \"spoof\"", "name = \"tspoof\"")]);
    let r = run_lab(&write_lab("tspoof.toml", &text));
    for (v, variant) in r["variants"].as_array().unwrap().iter().enumerate() {
        let name = variant["variant"].as_str().unwrap();
        let voip = &variant["flows"][0];
        let spoof = &variant["flows"][1]["details"]["spoofer"];
        eprintln!("{name}: voip {voip}\n{name}: spoofer {spoof}");
        assert_eq!(
            variant["flows"][1]["sent"].as_u64(),
            Some(13),
            "{name}: {spoof}"
        );
        // Nothing real lost, nothing forged delivered (each forged
        // payload is a real packet of the stream: a duplicate).
        assert_eq!(voip["lost"].as_u64(), Some(0), "{name}: {voip}");
        assert_eq!(
            voip["duplicates"].as_u64().unwrap_or(0),
            0,
            "{name}: {voip}"
        );
        // r3 held them and asked r1, which answered; each round drew a
        // check (the kernel passed its share up: counted there too).
        let node = |i: usize, k: &str| {
            variant["daemons"][i]["stats"]["node"][k]
                .as_u64()
                .unwrap_or(0)
        };
        assert!(
            node(2, "session_checks_sent") >= 3,
            "{name}: r3 sent {} checks",
            node(2, "session_checks_sent")
        );
        assert!(
            node(0, "session_checks_answered") >= 3,
            "{name}: r1 answered {}",
            node(0, "session_checks_answered")
        );
        if name.contains("kernel") {
            let passed = kernel_counter(&r, v, "pass_unproven_epoch")
                + kernel_counter(&r, v, "rx_too_far_ahead");
            assert!(passed >= 13, "{name}: the kernel passed up {passed}");
        }
    }
    assert!(namespaces_of("tspoof").is_empty());
}

fn routers_killed_mid_transfer_come_back_and_nothing_is_delivered_twice() {
    // scenarios/lab/crash.toml as shipped: kill -9 the transit router r2
    // at 3 s, the egress r4 at 7 s, each started again at once.
    let text = scenario_with("crash.toml", &[("name = \"crash\"", "name = \"tcrash\"")]);
    let r = run_lab(&write_lab("tcrash.toml", &text));
    let voip = &r["variants"][0]["flows"][0];
    let tcp = &r["variants"][0]["flows"][1];
    eprintln!("voip {voip}\ntcp {tcp}");
    assert_eq!(voip["duplicates"].as_u64(), Some(0), "{voip}");
    // The transit crash costs mirror nothing; the egress's costs the
    // time it takes to start and be verified again by its neighbors.
    assert!(voip["lost"].as_u64().unwrap() <= 50, "{voip}");
    let series = lost_series(voip);
    assert!(
        series.iter().skip(9).all(|&n| n == 0),
        "converged again: {series:?}"
    );
    // TCP completes: it carried data in every second, the last ones too.
    let goodput: Vec<f64> = tcp["goodput_series_mbps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!(
        goodput.len() >= 11 && goodput.iter().all(|&g| g > 0.5),
        "{goodput:?}"
    );
    // The survivors saw each restart as one (a new boot index, proven).
    let restarted: u64 = r["variants"][0]["daemons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            d["stats"]["control"]["neighbors_restarted"]
                .as_u64()
                .unwrap_or(0)
        })
        .sum();
    assert!(restarted >= 2, "{restarted}");
    // A crash and a restart are no sign of a duplicate node id, on the
    // restarted routers or their neighbors (issue 32: `kill -9` and a
    // restart raised "ANOTHER ROUTER USES THIS NODE ID").
    let signs: Vec<u64> = r["variants"][0]["daemons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            d["stats"]["control"]["duplicate_id_signs"]
                .as_u64()
                .unwrap_or(0)
        })
        .collect();
    assert!(
        signs.iter().all(|&n| n == 0),
        "duplicate-id signs per router: {signs:?}"
    );
    assert!(namespaces_of("tcrash").is_empty());
}

fn a_short_soak_samples_every_daemons_memory_and_passes_within_its_bound() {
    // scenarios/lab/soak.toml for 25 s instead of 30 minutes (the long
    // run is recorded in docs/security.md).
    let text = scenario_with("soak.toml", &[("name = \"soak\"", "name = \"tsoak\"")]);
    let path = write_lab("tsoak.toml", &text);
    let out = braid(&["lab", "soak", "--duration", "25s", path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "soak failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    eprintln!("{}", r["samples"]);
    let samples = r["samples"].as_array().unwrap();
    assert!(samples.len() >= 3, "{samples:?}");
    for s in samples {
        assert_eq!(
            s["rss_kb"].as_object().unwrap().len(),
            4,
            "every daemon sampled: {s}"
        );
    }
    let (sent, received) = (r["sent"].as_u64().unwrap(), r["received"].as_u64().unwrap());
    assert!(sent >= 24_000, "{sent}");
    // mirror:2 over two paths losing 5% each: about 0.25% lost.
    assert!(received * 100 >= sent * 99, "{received} of {sent}");
    assert!(r["grew_past_bound"].as_array().unwrap().is_empty());
    assert!(namespaces_of("tsoak").is_empty());
}

fn a_gateway_walkthrough_works_as_written() {
    // docs/operations.md "Gateways": a host behind r2 reaches the
    // upstream through the gateway's default route.
    let (stdout, _) = run_documented("gateway", "/tmp/braid-gw", "gw");
    assert!(
        stdout.contains("3 packets transmitted, 3 received"),
        "{stdout}"
    );
    for (r, i) in [("gw", 1), ("r2", 2)] {
        let valid = format!("/tmp/braid-gw/{r}.toml: valid (node {i})\n");
        assert!(stdout.contains(&valid), "{stdout}");
    }
    assert!(!stdout.contains("warning:"), "{stdout}");
}

fn a_gateway_whose_uplink_dies_silently_hands_its_traffic_over_within_2_s() {
    // docs/operations.md "Uplink health": gw1's ISP drops everything from
    // gw1 while every link stays up; gw1 withdraws its default route and
    // r2 (h2's entry point) moves to gw2, which NATs anew.
    let (stdout, _) = run_documented("uplink", "/tmp/braid-up", "up");
    eprintln!("{stdout}");
    // The anchor, on the same bench built afresh: babeld redistributes
    // each gateway's default route, and nothing sees the line die.
    let (babeld, _) = run_documented("uplink-babeld", "/tmp/braid-up", "up");
    eprintln!("babeld:\n{babeld}");
    let babeld_answered = number_after(&babeld, "ping: ");
    assert!(
        babeld.contains("no new TCP connection within 5 s of the cut"),
        "{babeld}"
    );
    let after = |prefix: &str| number_after(&stdout, prefix);
    // Tried again and again (each try waits 100 ms): one works within 2 s.
    let tcp = after("new TCP connection works ");
    assert!(tcp <= 2.0, "a new TCP connection {tcp} s after the cut");
    // 20 pings a second: at most 2 s of them lost (the outage).
    let answered = after("ping: ");
    let lost = 160.0 - answered;
    assert!(lost <= 40.0, "{lost} pings lost: {} s", lost * 0.05);
    assert!(lost >= 2.0, "the cut lost nothing: was it made? {stdout}");
    assert!(
        answered > babeld_answered,
        "braid {answered} of 160 answered, babeld {babeld_answered}"
    );
    assert!(stdout.contains("UPLINK DOWN"), "{stdout}");
    // r2's default route now leaves the mesh at gw2 (node 3).
    let route = stdout
        .lines()
        .find(|l| l.starts_with("0.0.0.0/0"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(route.split_whitespace().nth(1), Some("3"), "{route}");
}

fn routes_redistributed_from_frr_reach_the_mesh_and_the_meshs_reach_frr() {
    // docs/operations.md "Routes from outside": FRR's staticd at the
    // border router bd holds the route to 198.19.77.0/24; braid takes it
    // into the mesh (r2 routes it, and installs it in its kernel), h2
    // behind r2 reaches it, and FRR sees r2's prefix, which braid
    // installed at bd, as a kernel route.
    let (stdout, _) = run_documented("redistribute", "/tmp/braid-rd", "rd");
    eprintln!("{stdout}");
    let line = |prefix: &str| line_starting(&stdout, prefix);
    // r2's route to the outside network leaves the mesh at bd (node 1).
    let route = line("198.19.77.0/24 ");
    assert_eq!(route.split_whitespace().nth(1), Some("1"), "{route}");
    // In r2's kernel through the TUN device, with braid's protocol (the
    // block lists `proto 177` routes only) and metric.
    let kernel = line("198.19.77.0/24 dev ");
    assert!(kernel.contains("metric 20"), "{kernel}");
    assert!(
        line("3 packets transmitted").contains(" 3 received"),
        "{stdout}"
    );
    assert!(line("Routing entry for ").contains("198.18.2.0/24"));
    assert!(
        stdout.contains("Known via \"kernel\""),
        "FRR does not see braid's route: {stdout}"
    );
    // FRR drops its route: withdrawn from the mesh within the second's
    // synchronisation and an advertisement (at once for a withdrawal),
    // and gone from r2's kernel.
    let after = |prefix: &str| number_after(&stdout, prefix);
    let withdrawn = after("withdrawn at r2 ");
    assert!(withdrawn <= 2.0, "withdrawn {withdrawn} s after");
    let gone = after("gone from r2's kernel ");
    assert!(gone <= 2.0, "gone from r2's kernel {gone} s after");
}

fn a_backup_gateway_carries_nothing_until_the_primary_fails_and_gives_it_back() {
    // docs/operations.md "Choosing among gateways", a primary and a
    // backup: the nearer gw1 at preference 10 carries nothing while gw2
    // (200) serves; everything within 2 s of gw2's line dying; new flows
    // back at gw2 within its 3 good rounds and an advertisement.
    let (stdout, _) = run_documented("preference", "/tmp/braid-up", "up");
    eprintln!("{stdout}");
    let healthy = line_starting(&stdout, "both healthy: ");
    assert!(
        healthy.starts_with("both healthy: 0 of "),
        "traffic on the backup while the primary served: {healthy}"
    );
    assert!(
        number_after(&stdout, "both healthy: 0 of ") >= 50.0,
        "{healthy}"
    );
    let moved = number_after(&stdout, "primary dies: all on the backup from ");
    assert!(moved <= 2.0, "on the backup {moved} s after the cut");
    let back = number_after(&stdout, "primary comes back: all on the primary from ");
    assert!(back <= 3.0, "back on the primary {back} s after its return");
    let lost_back = line_starting(&stdout, "primary comes back: ");
    assert!(lost_back.ends_with(" 0 lost"), "{lost_back}");
}

fn an_ipv6_only_mesh_carries_pings_and_a_tcp_transfer() {
    // docs/operations.md "An IPv6-only mesh": two routers with no IPv4
    // address, braid's datagrams between them over link-local IPv6, hosts
    // on IPv6 prefixes: ping and a TCP transfer cross.
    let (stdout, _) = run_documented("ipv6", "/tmp/braid-v6", "v6");
    eprintln!("{stdout}");
    assert_eq!(
        number_after(&stdout, "IPv4 addresses on the routers: "),
        0.0
    );
    let neighbor = line_starting(&stdout, "2 ");
    assert!(
        neighbor.contains("wan0") && neighbor.contains("[fe80::"),
        "r2 heard over link-local IPv6: {neighbor}"
    );
    let route = line_starting(&stdout, "2001:2:0:2::/64 ");
    assert_eq!(route.split_whitespace().nth(2), Some("2"), "{route}");
    assert!(
        line_starting(&stdout, "3 packets transmitted").contains(" 3 received"),
        "{stdout}"
    );
    let received = stdout
        .lines()
        .find(|l| l.ends_with("receiver"))
        .unwrap_or_else(|| panic!("no iperf3 summary: {stdout}"));
    let mbits: f64 = received
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .find(|w| w[1] == "Mbits/sec" || w[1] == "Gbits/sec")
        .map(|w| w[0].parse::<f64>().unwrap() * if w[1] == "Gbits/sec" { 1000.0 } else { 1.0 })
        .unwrap_or_else(|| panic!("{received}"));
    assert!(mbits > 1.0, "the transfer crossed: {received}");
}

fn a_cost_override_at_one_end_moves_both_directions_off_the_link() {
    // docs/operations.md "Cost overrides": r1 raises its LTE link to r2
    // by 10 at a reload; r2, told nothing, routes to r1 through r3, as
    // r1 does to r2, and r1's links say the factor.
    let (stdout, _) = run_documented("cost", "/tmp/braid-co", "co");
    eprintln!("{stdout}");
    let (before, after) = stdout
        .split_once("after: ")
        .unwrap_or_else(|| panic!("{stdout}"));
    fn next_hop<'a>(text: &'a str, prefix: &str) -> (Option<&'a str>, &'a str) {
        let row = line_starting(text, prefix);
        (row.split_whitespace().nth(2), row)
    }
    for (text, prefix, direct, around) in [
        (before, "198.18.1.0/24 ", "1", "3"),
        (before, "198.18.2.0/24 ", "2", "3"),
    ] {
        let (hop, row) = next_hop(text, prefix);
        assert_eq!(hop, Some(direct), "before: {row}");
        let (hop, row) = next_hop(after, prefix);
        assert_eq!(hop, Some(around), "after: {row}");
    }
    let moved = number_after(&stdout, "after: r2 moved ");
    assert!(moved <= 5.0, "r2 moved {moved} s after the reload");
    let link = line_starting(after, "2 ");
    assert_eq!(link.split_whitespace().last(), Some("10.0"), "{link}");
}

fn flows_stay_on_their_gateway_while_the_topology_changes_ten_times() {
    // docs/operations.md "Choosing among gateways": a TCP transfer NATed
    // at gw1 through ten changes that each make gw2 (or gw1) the nearer;
    // pinned it runs to its end, unpinned (the anchor) it is reset.
    let (stdout, _) = run_documented("sticky", "/tmp/braid-st", "st");
    eprintln!("{stdout}");
    let line = |prefix: &str| line_starting(&stdout, prefix);
    let sticky = line("gateway_sticky = true:");
    let mbps: f64 = sticky
        .split_whitespace()
        .nth(3)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{sticky}"));
    assert!(mbps >= 15.0, "the pinned transfer: {sticky}");
    let kept_line = stdout
        .lines()
        .skip_while(|l| !l.starts_with("gateway_sticky = true:"))
        .nth(1)
        .unwrap_or_default();
    let kept: u64 = kept_line
        .split_whitespace()
        .nth(3)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{kept_line}"));
    assert!(kept > 0, "no change made gw2 the choice: {kept_line}");
    assert!(kept_line.ends_with("moved 0"), "{kept_line}");
    // The anchor: the same changes break the connection unpinned.
    let unpinned = line("gateway_sticky = false:");
    assert!(unpinned.contains("ERROR"), "unpinned survived: {unpinned}");
}

fn braid_with_fast_probes_fails_over_with_fewer_losses_than_ospf_with_bfd() {
    // scenarios/lab/failover.toml with two variants: FRR's OSPF with BFD
    // at 50 ms x 3 (what WISPs run), and braid single path probing every
    // 15 ms, down after 5 unheard (75 ms; the trade-off is in
    // docs/performance.md). The primary path is blackholed at 5 s.
    let mut text = scenario_with(
        "failover.toml",
        &[("name = \"failover\"", "name = \"tfo\"")],
    );
    text.truncate(text.find("[[variant]]").unwrap());
    text.push_str(
        "[[variant]]\nname = \"ospf-bfd\"\nsoftware = \"ospf-bfd\"\nbfd = \"50ms\"\nbfd_multiplier = 3\n\
         [[variant]]\nname = \"braid-fast\"\nmode = \"single\"\nprobe_interval = \"15ms\"\ndead_after = 5\n",
    );
    // 7 s of flow: 5 s before the blackhole, 2 s after (both fail over
    // in well under one).
    let text = text.replace("count = 1500", "count = 350");
    let r = run_lab(&write_lab("tfo.toml", &text));
    let flow = |v: usize| r["variants"][v]["flows"][0].clone();
    let (ospf, braid) = (flow(0), flow(1));
    eprintln!("OSPF+BFD: {ospf}\nbraid: {braid}");
    let lost = |f: &serde_json::Value| f["lost"].as_u64().unwrap();
    // BFD needs 3 x 50 ms to declare the link down: at least a few
    // packets; braid's 75 ms, and its reroute, fewer.
    assert!(
        lost(&ospf) >= 1,
        "OSPF+BFD lost nothing: was the path blackholed? {ospf}"
    );
    assert!(
        lost(&braid) < lost(&ospf),
        "braid {} against OSPF+BFD {}",
        lost(&braid),
        lost(&ospf)
    );
    assert!(namespaces_of("tfo").is_empty());
}

fn a_path_of_69_hops_crosses_real_daemons_through_a_waypoint() {
    // scenarios/lab/chain70.toml: 68 transit nodes, 63 in the route; r64
    // routes every packet on (docs/protocol.md, "Routes longer than 64
    // hops").
    let text = scenario_with("chain70.toml", &[("name = \"chain70\"", "name = \"tc70\"")]);
    let r = run_lab(&write_lab("tc70.toml", &text));
    let v = &r["variants"][0];
    let f = &v["flows"][0];
    eprintln!("{f}");
    let n = |k: &str| f[k].as_u64().unwrap();
    assert_eq!((n("sent"), n("lost"), n("duplicates")), (250, 0, 0), "{f}");
    let routed_on: Vec<u64> = v["daemons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["stats"]["node"]["routed_on"].as_u64().unwrap_or(0))
        .collect();
    // r64 (the 63rd transit node) routed every packet on; r7 is the
    // waypoint of what r70 sends back (its path reports).
    assert!(routed_on[63] >= 250, "{routed_on:?}");
    let elsewhere: u64 = routed_on
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != 63 && i != 6)
        .map(|(_, &x)| x)
        .sum();
    assert_eq!(elsewhere, 0, "{routed_on:?}");
    assert!(namespaces_of("tc70").is_empty());
}

fn two_areas_of_real_daemons_carry_mirrored_copies_across_both_borders() {
    // scenarios/lab/two-areas.toml: areas 1 (r1, r2, r3) and 2 (r5, r6,
    // r7), links across r2-r5 and r3-r6 (docs/protocol.md, "Areas").
    let text = scenario_with(
        "two-areas.toml",
        &[("name = \"two-areas\"", "name = \"tar\"")],
    );
    let r = run_lab(&write_lab("tar.toml", &text));
    let v = &r["variants"][0];
    let daemons = v["daemons"].as_array().unwrap();
    let stat = |i: usize, part: &str, k: &str| daemons[i]["stats"][part][k].as_u64().unwrap_or(0);
    for f in v["flows"].as_array().unwrap() {
        eprintln!("{f}");
        let n = |k: &str| f[k].as_u64().unwrap();
        assert_eq!((n("sent"), n("lost"), n("duplicates")), (250, 0, 0), "{f}");
    }
    let routed_on: Vec<u64> = (0..6).map(|i| stat(i, "node", "routed_on")).collect();
    // Each copy is routed on where it enters the other area: r5 and r6
    // (index 3, 4) the copies of r1's flow, r2 and r3 those of r7's.
    for i in 1..5 {
        assert!(routed_on[i] >= 250, "{routed_on:?}");
    }
    assert_eq!(routed_on[0] + routed_on[5], 0, "{routed_on:?}");
    // The borders hear the other area's routers and keep none but its
    // leader's summary; r1 and r7 hear only their own area.
    let other: Vec<u64> = (0..6)
        .map(|i| stat(i, "control", "lsas_other_area"))
        .collect();
    assert!(other[1..5].iter().all(|&x| x > 0), "{other:?}");
    assert_eq!(other[0] + other[5], 0, "{other:?}");
    assert!(namespaces_of("tar").is_empty());
}

fn an_urgent_packet_waits_behind_the_linux_queue_but_not_behind_braids_bulk() {
    // scenarios/lab/urgent.toml at twice the rate, rounds 1 s apart (the
    // 1,000-packet queue drains in 0.5 s).
    let text = scenario_with(
        "urgent.toml",
        &[
            (
                "name = \"urgent\"\ndescription",
                "name = \"turg\"\ndescription",
            ),
            ("rate = \"10Mbit\"", "rate = \"20Mbit\""),
            ("size = 1300", "size = 1300\ninterval = \"1s\""),
        ],
    );
    let r = run_lab(&write_lab("t8.toml", &text));
    let f = |v: usize| r["variants"][v]["flows"][0].clone();
    eprintln!("plain Linux: {}\nbraid: {}", f(0), f(1));
    let p50 = |x: &serde_json::Value| x["delay_p50_ms"].as_f64().unwrap();
    // Behind 1,000 packets of 1,300 bytes at 20 Mbit/s: about 0.5 s.
    assert!(p50(&f(0)) > 300.0, "{}", p50(&f(0)));
    // braid: behind what its kernel queue holds and the TUN's backlog.
    assert!(p50(&f(1)) > 0.0 && p50(&f(1)) < 50.0, "{}", p50(&f(1)));
    // Every datagram braid lost is counted where it was dropped: above
    // the binding point (its bounds), none at the TUN device. With
    // Linux's default TUN queue (500) the kernel dropped half of each
    // burst and the urgent datagram behind it, in no counter of braid's:
    // the test then failed now and then, with the same figures each time
    // (4,998 of 10,020 delivered, no urgent datagram): 500 a round.
    let daemons = r["variants"][1]["daemons"].as_array().unwrap();
    let sum = |part: &str, names: &[&str]| -> u64 {
        daemons
            .iter()
            .flat_map(|d| {
                names
                    .iter()
                    .map(move |n| d["stats"][part][*n].as_u64().unwrap_or(0))
            })
            .sum()
    };
    let at_tun = sum("io", &["tun_queue_dropped", "tun_write_dropped"]);
    let counted = sum(
        "node",
        &[
            "binding_overflow",
            "binding_full",
            "queue_full",
            "queue_dropped",
            "no_egress",
            "no_path",
        ],
    ) + sum(
        "io",
        &[
            "udp_tx_queue_full",
            "udp_tx_errors",
            "unknown_neighbor",
            "udp_rx_dropped",
        ],
    ) + at_tun;
    assert_eq!(at_tun, 0, "the TUN device dropped some of the burst");
    assert_eq!(
        f(1)["lost"].as_u64().unwrap(),
        counted,
        "every datagram lost is counted: {daemons:?}"
    );
    assert!(namespaces_of("turg").is_empty());
}

fn linux_mptcp_runs_a_subflow_on_each_disjoint_path() {
    // Two 10 Mbit/s paths without loss: one TCP path carries about 10,
    // MPTCP with a subflow on each about 20.
    let text = scenario_with(
        "wispr-fig10.toml",
        &[
            ("name = \"fig10\"", "name = \"tmptcp\""),
            ("loss = 0.05\n", ""),
            ("delay = \"20ms\"", "delay = \"5ms\""),
            ("duration = \"10s\"", "duration = \"4s\""),
        ],
    );
    // And iperf3's UDP test the other way, 1 Mbit/s of 1,000-byte
    // datagrams for 3 s.
    let text = text[..text.find("[[variant]]").unwrap()].to_string()
        + "[[flow]]\nname = \"back\"\nkind = \"iperf3-udp\"\nfrom = \"d\"\nto = \"a\"\nsize = 1000\nduration = \"3s\"\n\
           [[variant]]\nname = \"tcp\"\nsoftware = \"kernel\"\n[[variant]]\nname = \"mptcp\"\nsoftware = \"mptcp\"\n";
    let r = run_lab(&write_lab("t9.toml", &text));
    let flow = |v: usize, i: usize| r["variants"][v]["flows"][i].clone();
    let goodput = |v: usize| flow(v, 0)["goodput_mbps"].as_f64().unwrap();
    eprintln!("tcp {} Mbit/s, mptcp {} Mbit/s", goodput(0), goodput(1));
    assert!(goodput(0) > 5.0 && goodput(0) < 10.5, "{}", goodput(0));
    assert!(
        goodput(1) > 1.4 * goodput(0),
        "{} vs {}",
        goodput(1),
        goodput(0)
    );
    for v in [0, 1] {
        let udp = flow(v, 1);
        let (sent, lost) = (udp["sent"].as_u64().unwrap(), udp["lost"].as_u64().unwrap());
        assert!((350..=400).contains(&sent) && lost * 50 <= sent, "{udp}");
    }
    assert!(namespaces_of("tmptcp").is_empty());
}

fn a_slow_lossy_path_does_not_delay_mirrors_copies_on_the_fast_ones() {
    // scenarios/lab/wispr-5.3.toml, braid only, 150 packets: one path of
    // 500 ms losing 5% (its neighbor takes a second to resolve), two of
    // 10 ms. Every packet arrives by a fast path; none waits for the slow
    // one (it did, up to 0.7 s, when the scheduler kept a flow's copies
    // in one queue behind the copy for the stalled path).
    let text = scenario_with(
        "wispr-5.3.toml",
        &[
            ("name = \"wispr53\"", "name = \"tw53\""),
            ("count = 500", "count = 150"),
        ],
    );
    let text = text[..text.find("[[variant]]").unwrap()].to_string()
        + "[[variant]]\nname = \"mirror\"\nmode = \"mirror:3\"\n";
    let r = run_lab(&write_lab("t10.toml", &text));
    let f = &r["variants"][0]["flows"][0];
    eprintln!("{f}");
    assert_eq!(f["lost"].as_u64().unwrap(), 0, "{f}");
    let p99 = f["delay_p99_ms"].as_f64().unwrap();
    assert!(p99 < 60.0, "p99 {p99} ms");
    assert!(namespaces_of("tw53").is_empty());
}

fn lab_help_lists_every_subcommand_with_a_one_line_description() {
    let out = braid(&["lab", "--help"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let commands: Vec<(String, String)> = text
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let (name, about) = l.trim().split_once(' ').unwrap_or((l.trim(), ""));
            (name.to_string(), about.trim().to_string())
        })
        .collect();
    let names: Vec<&str> = commands.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["up", "run", "down", "soak", "sweep", "bench", "help"],
        "{text}"
    );
    for (name, about) in &commands {
        assert!(
            !about.is_empty() && about.len() <= 80,
            "{name}: not one short line: {about:?}"
        );
        if name == "help" {
            continue;
        }
        // Its own help starts with the same line, then the details.
        let own = braid(&["lab", name, "--help"]);
        let own = String::from_utf8(own.stdout).unwrap();
        assert!(own.starts_with(about.as_str()), "{name}: {own}");
        assert!(own.contains(&format!("Usage: braid lab {name} ")), "{own}");
        if name != "up" {
            assert!(own.contains("--keep"), "{name} has no --keep: {own}");
        }
    }
}

fn a_scenario_whose_programs_are_missing_fails_before_building_and_names_them() {
    // A tcp flow, under babeld and under MPTCP (iperf3 runs under
    // mptcpize). On a PATH with stand-ins for iproute2, sysctl and iperf3
    // only (they fail if run: nothing may run before the check), babeld
    // and mptcpize are missing.
    let path = write_lab(
        "tmiss.toml",
        "name = \"tmiss\"\n[[router]]\nname = \"a\"\nhost = true\n[[router]]\nname = \"b\"\nhost = true\n\
         [[link]]\na = \"a\"\nb = \"b\"\n[[flow]]\nkind = \"tcp\"\nfrom = \"a\"\nto = \"b\"\n\
         [[variant]]\nname = \"babel\"\nsoftware = \"babeld\"\n[[variant]]\nname = \"mptcp\"\nsoftware = \"mptcp\"\n",
    );
    let bin = path_of_stand_ins(&["ip", "sysctl", "iperf3"]);
    let lab = |command: &str| {
        Command::new(env!("CARGO_BIN_EXE_braid"))
            .args(["lab", command, path.to_str().unwrap()])
            .env("PATH", &bin)
            .output()
            .unwrap()
    };
    // `run` checks every variant before it builds the first.
    let out = lab("run");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "braid: error: this scenario needs babeld (Debian package babeld) and mptcpize (Debian package mptcpd), not installed\n"
    );
    // `up` builds the first variant only, and runs no flow.
    let out = lab("up");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "braid: error: this scenario needs babeld (Debian package babeld), not installed\n"
    );
    assert!(namespaces_of("tmiss").is_empty(), "something was built");
    assert!(!std::env::temp_dir().join("braid-lab-tmiss").exists());
    std::fs::remove_dir_all(&bin).unwrap();
    remove_lab_file(&path);
}

fn down_waits_for_every_process_then_removes_the_namespaces_and_the_files() {
    // Four daemons and, on the delayed link, a link emulator.
    let text = diamond("tdown", "single", 0.0, 10).replacen(
        "[[link]]\na = \"b\"\nb = \"d\"\n",
        "[[link]]\na = \"b\"\nb = \"d\"\ndelay = \"5ms\"\n",
        1,
    );
    let path = write_lab("tdown.toml", &text);
    let p = path.to_str().unwrap();
    let dir = std::env::temp_dir().join("braid-lab-tdown");
    let up = || {
        let out = braid(&["lab", "up", p]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pids = pids_of_lab(&dir);
        let names: Vec<&str> = pids.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a.pid", "b.pid", "c.pid", "d.pid", "d1.pid"]);
        assert!(pids.iter().all(|&(_, pid)| running(pid)), "{pids:?}");
        pids
    };
    let pids = up();
    // Something started in a lab namespace by hand goes with it too,
    // even one that ignores SIGTERM (SIGKILL follows 5 s later).
    let mut by_hand = Command::new("ip")
        .args(["netns", "exec", "braid-tdown-ah", "sh", "-c"])
        .arg("trap '' TERM; sleep 600")
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !String::from_utf8_lossy(
        &Command::new("ip")
            .args(["netns", "pids", "braid-tdown-ah"])
            .output()
            .unwrap()
            .stdout,
    )
    .split_whitespace()
    .any(|w| w == by_hand.id().to_string())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "sleep never entered the namespace"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let started = std::time::Instant::now();
    let down = braid(&["lab", "down", p]);
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    let took = started.elapsed();
    // When down returns, every process has exited.
    let left: Vec<_> = pids.iter().filter(|&&(_, pid)| running(pid)).collect();
    assert!(left.is_empty(), "still running after down: {left:?}");
    let status = by_hand
        .try_wait()
        .unwrap()
        .expect("the process in the namespace exited");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "{status}"
    );
    assert!(
        took >= std::time::Duration::from_secs(5) && took < std::time::Duration::from_secs(12),
        "down took {took:?}"
    );
    assert!(namespaces_of("tdown").is_empty());
    assert!(!dir.exists(), "{} left behind", dir.display());
    // --keep: the same, but the logs and configs stay (no pid files: the
    // processes they named are gone). A second down removes them.
    let pids = up();
    let down = braid(&["lab", "down", "--keep", p]);
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    assert!(pids.iter().all(|&(_, pid)| !running(pid)));
    assert!(namespaces_of("tdown").is_empty());
    assert!(dir.join("a.log").exists() && dir.join("a.toml").exists());
    assert!(pids_of_lab(&dir).is_empty(), "pid files kept");
    assert!(braid(&["lab", "down", p]).status.success());
    assert!(!dir.exists());
    remove_lab_file(&path);
}

fn a_run_leaves_nothing_behind_and_an_interrupted_run_keeps_its_logs() {
    let dir = std::env::temp_dir().join("braid-lab-trun");
    let needle = dir.to_str().unwrap().to_string();
    // A run that finishes: nothing left.
    let path = write_lab("trun.toml", &diamond("trun", "single", 0.0, 10));
    run_lab(&path);
    assert!(namespaces_of("trun").is_empty());
    assert!(!dir.exists(), "{} left behind", dir.display());
    assert_eq!(processes_mentioning(&needle), Vec::<String>::new());
    // A run stopped (SIGTERM) once its flow runs: torn down as well, and
    // the logs and configs kept for a post-mortem, which it says.
    let path = write_lab("trun.toml", &diamond("trun", "single", 0.0, 3000));
    let mut lab = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["lab", "run", path.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(lab.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let converged = line.contains("converged");
        said.push(line);
        if converged {
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    Command::new("kill")
        .args(["-TERM", &lab.id().to_string()])
        .status()
        .unwrap();
    said.extend(lines.map_while(Result::ok));
    let status = lab.wait().unwrap();
    let said = said.join("\n");
    assert!(!status.success(), "{said}");
    assert!(said.contains("interrupted"), "{said}");
    assert!(
        said.contains(&format!("kept in {}", dir.display())),
        "{said}"
    );
    assert!(namespaces_of("trun").is_empty());
    assert_eq!(processes_mentioning(&needle), Vec::<String>::new());
    assert!(dir.join("a.log").exists() && dir.join("d.toml").exists());
    assert!(pids_of_lab(&dir).is_empty(), "pid files kept");
    assert!(braid(&["lab", "down", path.to_str().unwrap()])
        .status
        .success());
    assert!(!dir.exists());
    remove_lab_file(&path);
}

/// A test: its name, the tools it needs beyond the lab's (`None`: it
/// needs no lab at all), and its body.
/// The forwarding benchmark's isolated sender (`braid lab bench`'s
/// default) through two plain Linux routers: every frame it is asked for
/// leaves, paced, and arrives whole at both sizes (the routers rewrite the
/// frames' bytes in place, and the generator must write them back before
/// each send: without that, 0.2-10% arrived with their TTL run down or
/// another hop's MAC address), and the routers' CPU time per packet is
/// measured; the machine's backlog is raised while it runs and put back.
/// A trial of 20,000 frames each; the search for the highest rate is
/// the bench's (docs/performance.md).
fn the_benchmarks_isolated_sender_sends_what_it_is_asked_and_every_frame_arrives() {
    let sent = isolated_sender_trials(
        "isolated",
        "",
        "[[variant]]\nname = \"kernel\"\nsoftware = \"kernel\"\n",
    );
    assert!(sent.is_none());
}

/// The same over IPv6 through braid's kernel data path, encoding at the
/// TUN device: the generator's frames carry finished checksums, so the
/// kernel encodes them itself (no segmenter), and every one arrives.
fn the_isolated_sender_over_ipv6_crosses_the_kernel_path_and_every_frame_arrives() {
    let (before, after) = isolated_sender_trials(
        "isolated6",
        "ipv6 = true\n",
        "[[variant]]\nname = \"kernel-path\"\nmode = \"single\"\ndatapath = \"kernel\"\nlate_binding = 0\n",
    )
    .expect("the ingress's counters");
    let count = |k: &serde_json::Value| k["programs"]["tx_ipv6"].as_u64().unwrap_or(0);
    let encoded = count(&after) - count(&before);
    // Counted after a first trial has opened the session (its first
    // packets cross the daemon, which then lends it to the kernel).
    assert!(
        encoded >= 39_000,
        "the kernel encoded the IPv6 frames: {encoded} of 40,000; router a's kernel path before the trials: {}, after: {}",
        before["programs"],
        after
    );
}

/// `kernel_delivery = "auto"` (the default): the egress routes what it
/// delivers while nothing in its kernel would see those packets on the
/// stack's way, hands them to the stack once a firewall chain appears
/// there, and routes again when it is gone.
fn auto_delivery_routes_until_a_firewall_appears_and_again_after() {
    let name = "autodel";
    let text = chain_lab(
        name,
        "",
        "[[variant]]\nname = \"kernel\"\nmode = \"single\"\ndatapath = \"kernel\"\nlate_binding = 0\n",
    );
    let lab = braid_lab::scenario::Lab::load(&write_lab("autodel-scenario.toml", &text))
        .expect("the scenario loads");
    with_lab_up(name, &text, |dir| {
        let egress = 2;
        let kernel = || kernel_report(&dir.join("c.sock"));
        let delivery = || kernel()["delivery"].as_str().unwrap_or("").to_string();
        let routed = || kernel()["programs"]["rx_routed"].as_u64().unwrap_or(0);
        let delivered = || kernel()["programs"]["rx_delivered"].as_u64().unwrap_or(0);
        // The daemon looks at the stack again when nftables announces a
        // change (at its next sweep: 500 ms) and publishes its counters
        // at its sweeps: wait for what it says, 3 s at most (the periodic
        // check alone would take up to 5 s).
        let until = |what: &str, done: &dyn Fn() -> bool| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
            while !done() {
                assert!(std::time::Instant::now() < deadline, "{what}: {}", kernel());
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        };
        let ping = || {
            let to = braid_lab::scenario::Lab::host_addr(egress).to_string();
            let out = in_ns(
                &lab.end_ns(0),
                &["ping", "-c", "5", "-i", "0.2", "-W", "1", &to],
            );
            assert!(
                out.status.success(),
                "ping: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        };
        assert!(delivery().starts_with("route (auto"), "{}", delivery());
        let before = routed();
        ping();
        until("pings routed from braid_rx", &|| routed() >= before + 4);
        // A forward chain at the egress (an operator's firewall): the stack.
        let ns = lab.ns(egress);
        for cmd in [
            "add table inet fwtest",
            "add chain inet fwtest filter_forward { type filter hook forward priority 0; }",
        ] {
            let mut args = vec!["nft"];
            args.extend(cmd.split(' '));
            let out = in_ns(&ns, &args);
            assert!(
                out.status.success(),
                "nft {cmd}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        until("the stack, for the firewall", &|| {
            delivery().starts_with("stack (auto: nftables chain inet fwtest filter_forward")
        });
        let (routed_before, delivered_before) = (routed(), delivered());
        ping();
        until("pings delivered", &|| delivered() >= delivered_before + 4);
        assert_eq!(routed(), routed_before, "none routed past the firewall");
        let out = in_ns(&ns, &["nft", "delete", "table", "inet", "fwtest"]);
        assert!(out.status.success());
        until("route delivery again", &|| {
            delivery().starts_with("route (auto")
        });
    });
}

/// A chain a - b - c with hosts at a and c, one flow from a to c (with
/// `flow_extra` in it) and `variant`.
fn chain_lab(name: &str, flow_extra: &str, variant: &str) -> String {
    format!(
        "name = \"{name}\"\n[[router]]\nname = \"a\"\nhost = true\n[[router]]\nname = \"b\"\n\
         [[router]]\nname = \"c\"\nhost = true\n[[link]]\na = \"a\"\nb = \"b\"\n[[link]]\na = \"b\"\nb = \"c\"\n\
         [[flow]]\nfrom = \"a\"\nto = \"c\"\n{flow_extra}{variant}"
    )
}

/// Builds a chain a - b - c ([`chain_lab`]) with its first variant, runs
/// the isolated sender's trials (20,000 frames of 64 and of 1,400 bytes)
/// from a's host to c's and checks that each was paced as asked and
/// arrived whole; with braid's daemons (`braid lab up`: the lab's
/// in-process builder starts them from this test binary, which is not
/// braid), returns router a's kernel data path report before those
/// trials (after a first unchecked one has opened the session) and after.
fn isolated_sender_trials(
    name: &str,
    flow_extra: &str,
    variant: &str,
) -> Option<(serde_json::Value, serde_json::Value)> {
    let text = chain_lab(name, flow_extra, variant);
    let path = write_lab(&format!("{name}-scenario.toml"), &text);
    let lab = braid_lab::scenario::Lab::load(&path).expect("the scenario loads");
    remove_lab_file(&path);
    let flow = lab.flows[0].clone();
    assert_eq!(
        braid_lab::generator::unavailable(&lab, &flow),
        None,
        "CI has eBPF and two CPUs"
    );
    let backlog = || std::fs::read_to_string("/proc/sys/net/core/netdev_max_backlog").unwrap();
    let backlog_before = backlog();
    let trials = |daemons: &[(usize, std::process::Child)], socket: Option<&std::path::Path>| {
        let mut sender = braid_lab::generator::Isolated::prepare(&lab, &flow, daemons)
            .expect("the sender is set up");
        let stop = std::sync::atomic::AtomicBool::new(false);
        let before = socket.map(|s| {
            sender.trial(64, 2_000, &stop).expect("a first trial runs");
            kernel_report(s)
        });
        for size in [64, 1400] {
            let t = sender.trial(size, 20_000, &stop).expect("a trial runs");
            assert_eq!((t.sent, t.skipped), (20_000, 0), "{size} B: {t:?}");
            assert_eq!(t.delivered, t.sent, "{size} B: every frame arrives: {t:?}");
            assert!(
                (15_000.0..25_000.0).contains(&t.sender_rate),
                "{size} B: paced at the rate asked: {t:?}"
            );
            assert!(
                t.router_cpu_us > 0.0 && t.router_cpu_us < 1_000.0,
                "{size} B: the routers' CPU per packet is measured: {t:?}"
            );
        }
        assert_eq!(backlog().trim(), "10000", "raised while the bench runs");
        // The daemon publishes the kernel's counters at its sweeps (every
        // 500 ms): read until they count the trials' frames, 3 s at most.
        let reports = before.zip(socket).map(|(before, socket)| {
            let seen = |k: &serde_json::Value| k["programs"]["tx_packets"].as_u64().unwrap_or(0);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
            loop {
                let after = kernel_report(socket);
                if seen(&after) >= seen(&before) + 40_000 || std::time::Instant::now() > deadline {
                    break (before, after);
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
        drop(sender);
        assert_eq!(backlog(), backlog_before, "and put back after");
        reports
    };
    if matches!(
        lab.variants[0].software,
        braid_lab::scenario::Software::Braid { .. }
    ) {
        let mut reports = None;
        with_lab_up(name, &text, |dir| {
            reports = trials(&[], Some(&dir.join("a.sock")))
        });
        reports
    } else {
        let mut built = braid_lab::run::build(&lab, &lab.variants[0]).expect("the lab builds");
        let reports = trials(&built.daemons, None);
        built.succeeded = true;
        reports
    }
}

type LabTest = (&'static str, Option<&'static [&'static str]>, fn());

fn main() -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let tests: [LabTest; 52] = [
        ("the_benchmarks_isolated_sender_sends_what_it_is_asked_and_every_frame_arrives", Some(&["ethtool", "nft"]), the_benchmarks_isolated_sender_sends_what_it_is_asked_and_every_frame_arrives),
        ("auto_delivery_routes_until_a_firewall_appears_and_again_after", Some(&["nft", "ping"]), auto_delivery_routes_until_a_firewall_appears_and_again_after),
        ("the_isolated_sender_over_ipv6_crosses_the_kernel_path_and_every_frame_arrives", Some(&["ethtool", "nft"]), the_isolated_sender_over_ipv6_crosses_the_kernel_path_and_every_frame_arrives),
        ("operators_tools_on_a_running_lab", Some(&["chromium", "iperf3"]), operators_tools_on_a_running_lab),
        ("the_getting_started_walkthrough_works_as_written", Some(&["ping"]), the_getting_started_walkthrough_works_as_written),
        ("a_gateway_walkthrough_works_as_written", Some(&["ping"]), a_gateway_walkthrough_works_as_written),
        ("a_gateway_whose_uplink_dies_silently_hands_its_traffic_over_within_2_s", Some(&["ping", "nft", "python3", "babeld"]), a_gateway_whose_uplink_dies_silently_hands_its_traffic_over_within_2_s),
        ("a_roaming_clients_upstream_copies_leave_the_gateway_at_most_once_in_a_hundred", Some(&[]), a_roaming_clients_upstream_copies_leave_the_gateway_at_most_once_in_a_hundred),
        ("routes_redistributed_from_frr_reach_the_mesh_and_the_meshs_reach_frr", Some(&["vtysh"]), routes_redistributed_from_frr_reach_the_mesh_and_the_meshs_reach_frr),
        ("a_cost_override_at_one_end_moves_both_directions_off_the_link", Some(&[]), a_cost_override_at_one_end_moves_both_directions_off_the_link),
        ("an_ipv6_only_mesh_carries_pings_and_a_tcp_transfer", Some(&["ping", "iperf3"]), an_ipv6_only_mesh_carries_pings_and_a_tcp_transfer),
        ("a_backup_gateway_carries_nothing_until_the_primary_fails_and_gives_it_back", Some(&["nft", "python3"]), a_backup_gateway_carries_nothing_until_the_primary_fails_and_gives_it_back),
                ("flows_stay_on_their_gateway_while_the_topology_changes_ten_times", Some(&["iperf3", "nft", "python3"]), flows_stay_on_their_gateway_while_the_topology_changes_ten_times),
        ("kernel_tcp_keeps_most_of_its_speed_over_two_paths_losing_a_fifth_with_adaptive_coding", Some(&["iperf3"]), kernel_tcp_keeps_most_of_its_speed_over_two_paths_losing_a_fifth_with_adaptive_coding),
        ("braid_with_fast_probes_fails_over_with_fewer_losses_than_ospf_with_bfd", Some(&["/usr/lib/frr/ospfd", "/usr/lib/frr/bfdd"]), braid_with_fast_probes_fails_over_with_fewer_losses_than_ospf_with_bfd),
        ("a_short_soak_samples_every_daemons_memory_and_passes_within_its_bound", Some(&[]), a_short_soak_samples_every_daemons_memory_and_passes_within_its_bound),
        ("a_stranger_flooding_a_router_changes_nothing_costs_little_and_is_counted", Some(&[]), a_stranger_flooding_a_router_changes_nothing_costs_little_and_is_counted),
        ("forged_data_as_a_spoofed_neighbor_costs_at_most_itself_on_both_data_paths", Some(&[]), forged_data_as_a_spoofed_neighbor_costs_at_most_itself_on_both_data_paths),
        ("routers_killed_mid_transfer_come_back_and_nothing_is_delivered_twice", Some(&["iperf3"]), routers_killed_mid_transfer_come_back_and_nothing_is_delivered_twice),
        ("a_key_rotated_one_router_at_a_time_loses_nothing_and_a_router_that_skips_a_step_is_cut_off", Some(&[]), a_key_rotated_one_router_at_a_time_loses_nothing_and_a_router_that_skips_a_step_is_cut_off),
        ("an_unmodified_client_roams_between_access_points_and_smesh_trees_lose_nothing", Some(&["iperf3"]), an_unmodified_client_roams_between_access_points_and_smesh_trees_lose_nothing),
        ("an_unmodified_ipv6_client_takes_its_address_from_the_access_points_and_roams_without_loss", Some(&["iperf3"]), an_unmodified_ipv6_client_takes_its_address_from_the_access_points_and_roams_without_loss),
        ("the_kernel_path_hides_loss_with_mirror_as_user_space_does_and_never_delivers_twice", Some(&[]), the_kernel_path_hides_loss_with_mirror_as_user_space_does_and_never_delivers_twice),
        ("the_automatic_mode_encoded_in_the_kernel_sees_the_loss_and_leaves_for_a_code", Some(&[]), the_automatic_mode_encoded_in_the_kernel_sees_the_loss_and_leaves_for_a_code),
        ("a_blackholed_path_costs_the_kernel_path_what_it_costs_user_space", Some(&[]), a_blackholed_path_costs_the_kernel_path_what_it_costs_user_space),
        ("ipv6_tcp_crosses_the_kernel_path_encoded_and_routed_in_the_kernel", Some(&["iperf3"]), ipv6_tcp_crosses_the_kernel_path_encoded_and_routed_in_the_kernel),
        ("kernel_tcp_crosses_the_kernel_path_segments_and_all", Some(&["iperf3"]), kernel_tcp_crosses_the_kernel_path_segments_and_all),
        ("the_kernel_egress_reports_no_loss_on_lossless_paths_at_full_speed", Some(&["iperf3"]), the_kernel_egress_reports_no_loss_on_lossless_paths_at_full_speed),
        ("kernel_and_user_routers_mix_in_one_mesh", Some(&[]), kernel_and_user_routers_mix_in_one_mesh),
        ("udp_crosses_real_daemons_and_mirroring_hides_the_loss_that_single_path_shows", Some(&[]), udp_crosses_real_daemons_and_mirroring_hides_the_loss_that_single_path_shows),
        ("a_silently_blackholed_primary_path_costs_single_path_a_short_outage_and_mirror_nothing", Some(&[]), a_silently_blackholed_primary_path_costs_single_path_a_short_outage_and_mirror_nothing),
        ("kernel_tcp_crosses_the_daemons_and_mirroring_spares_its_retransmissions", Some(&["iperf3"]), kernel_tcp_crosses_the_daemons_and_mirroring_spares_its_retransmissions),
        ("the_link_emulator_delays_real_traffic_by_what_the_scenario_says", Some(&["ethtool"]), the_link_emulator_delays_real_traffic_by_what_the_scenario_says),
        ("ctl_monitor_reload_and_teardown_on_a_running_lab", Some(&[]), ctl_monitor_reload_and_teardown_on_a_running_lab),
        ("an_uplink_lost_mid_transfer_costs_plain_linux_its_queue_and_braid_almost_nothing", Some(&["iperf3", "ethtool"]), an_uplink_lost_mid_transfer_costs_plain_linux_its_queue_and_braid_almost_nothing),
        ("when_a_path_halves_its_rate_the_split_follows_and_voip_loses_nothing", Some(&["iperf3"]), when_a_path_halves_its_rate_the_split_follows_and_voip_loses_nothing),
        ("pacing_keeps_voip_out_of_a_queue_beyond_the_first_hop", Some(&["iperf3"]), pacing_keeps_voip_out_of_a_queue_beyond_the_first_hop),
        ("kernel_transit_keeps_udp_checksums_for_an_egress_that_re_orders", Some(&["iperf3"]), kernel_transit_keeps_udp_checksums_for_an_egress_that_re_orders),
        ("mss_clamping_spares_tcp_its_first_window_through_the_tunnel", Some(&["iperf3"]), mss_clamping_spares_tcp_its_first_window_through_the_tunnel),
        ("a_udp_flow_at_nine_tenths_of_two_unequal_paths_arrives_whole", Some(&["iperf3"]), a_udp_flow_at_nine_tenths_of_two_unequal_paths_arrives_whole),
        ("a_gateways_uplink_dies_silently_and_a_roaming_clients_voip_and_new_connections_move_within_two_seconds", Some(&["iperf3", "nft"]), a_gateways_uplink_dies_silently_and_a_roaming_clients_voip_and_new_connections_move_within_two_seconds),
        ("an_urgent_packet_waits_behind_the_linux_queue_but_not_behind_braids_bulk", Some(&[]), an_urgent_packet_waits_behind_the_linux_queue_but_not_behind_braids_bulk),
        ("a_path_of_69_hops_crosses_real_daemons_through_a_waypoint", Some(&[]), a_path_of_69_hops_crosses_real_daemons_through_a_waypoint),
        ("two_areas_of_real_daemons_carry_mirrored_copies_across_both_borders", Some(&[]), two_areas_of_real_daemons_carry_mirrored_copies_across_both_borders),
        ("linux_mptcp_runs_a_subflow_on_each_disjoint_path", Some(&["iperf3", "mptcpize"]), linux_mptcp_runs_a_subflow_on_each_disjoint_path),
        ("a_slow_lossy_path_does_not_delay_mirrors_copies_on_the_fast_ones", Some(&["ethtool"]), a_slow_lossy_path_does_not_delay_mirrors_copies_on_the_fast_ones),
        ("a_bad_config_is_refused_with_file_line_and_field", None, a_bad_config_is_refused_with_file_line_and_field),
        ("without_root_the_daemon_says_it_needs_cap_net_admin", Some(&["setpriv"]), without_root_the_daemon_says_it_needs_cap_net_admin),
        ("lab_help_lists_every_subcommand_with_a_one_line_description", None, lab_help_lists_every_subcommand_with_a_one_line_description),
        ("a_scenario_whose_programs_are_missing_fails_before_building_and_names_them", None, a_scenario_whose_programs_are_missing_fails_before_building_and_names_them),
        ("down_waits_for_every_process_then_removes_the_namespaces_and_the_files", Some(&["ethtool"]), down_waits_for_every_process_then_removes_the_namespaces_and_the_files),
        ("a_run_leaves_nothing_behind_and_an_interrupted_run_keeps_its_logs", Some(&[]), a_run_leaves_nothing_behind_and_an_interrupted_run_keeps_its_logs),
    ];
    let lab = missing_capability();
    let trials = tests
        .into_iter()
        .map(|(name, tools, body)| {
            let missing = tools.and_then(|tools| {
                lab.clone().or_else(|| {
                    tools
                        .iter()
                        .find(|t| Command::new(t).arg("--version").output().is_err())
                        .map(|t| format!("{t} is not installed (run scripts/setup.sh)"))
                })
            });
            let needs_lab = tools.is_some();
            common::trial(name, missing, needs_lab.then_some(&LAB), body)
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    if !conclusion.has_failed() {
        common::lab::remove_test_dirs();
    }
    conclusion.exit_code()
}
