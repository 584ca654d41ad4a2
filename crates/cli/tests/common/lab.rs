//! What the lab's tests share (`crates/cli/tests/lab.rs`; a lab test
//! elsewhere may use it too): running `braid` and commands in a lab's
//! namespaces, whether this machine can build a lab, scenario files and
//! the reports of `braid lab run`, the counters in them, and the lab's
//! processes (its pid files, what still runs).
// Each test binary that declares `mod common` compiles this file; those
// that build no lab use none of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the `braid` binary under test with `args`.
pub fn braid(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .output()
        .expect("runs")
}

/// Why this machine cannot run the lab, if it cannot.
pub fn missing_capability() -> Option<String> {
    if !super::is_root() {
        return Some("not root".into());
    }
    let probe = format!(
        "braid-captest-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    )
    .replace(['(', ')'], "");
    let probe = probe.as_str();
    let ok = Command::new("ip")
        .args(["netns", "add", probe])
        .status()
        .is_ok_and(|s| s.success());
    let _ = Command::new("ip").args(["netns", "del", probe]).status();
    if !ok {
        return Some("cannot create network namespaces".into());
    }
    if Command::new("tc").arg("-V").output().is_err() {
        return Some("tc is not installed (run scripts/setup.sh)".into());
    }
    braid_lab::link::loss_program_missing().map(|why| format!("no eBPF loss program: {why}"))
}

/// This run's directory for the lab files its tests write.
fn test_dir() -> PathBuf {
    std::env::temp_dir().join(format!("braid-lab-test-{}", std::process::id()))
}

/// Removes this run's directories (after a run in which every test
/// passed: a failed one keeps them for a post-mortem).
pub fn remove_test_dirs() {
    let _ = std::fs::remove_dir_all(test_dir());
    let path = std::env::temp_dir().join(format!("braid-lab-test-path-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(path);
}

/// Writes a lab scenario file `name` with `text` into this run's
/// directory for them; its path.
pub fn write_lab(name: &str, text: &str) -> PathBuf {
    let dir = test_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The namespaces of lab `lab` that exist on this machine (none once
/// it is torn down).
pub fn namespaces_of(lab: &str) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("braid-{lab}-")))
        .map(String::from)
        .collect()
}

/// Runs a lab with `--json` and `--out`: the printed report, checked
/// against the report.json and report.html written beside it.
pub fn run_lab(path: &std::path::Path) -> serde_json::Value {
    let out_dir = path.with_extension("out");
    let out = braid(&[
        "lab",
        "run",
        "--json",
        "--log",
        "info",
        "--out",
        out_dir.to_str().unwrap(),
        path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "lab run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(printed, written);
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("<table>"), "{html}");
    printed
}

/// Runs `args` inside a lab namespace.
pub fn in_ns(ns: &str, args: &[&str]) -> Output {
    Command::new("ip")
        .args(["netns", "exec", ns])
        .args(args)
        .output()
        .expect("ip netns exec runs")
}

/// The kernel data path's counter `name`, summed over every daemon of
/// variant `v` of a report.
pub fn kernel_counter(r: &serde_json::Value, v: usize, name: &str) -> u64 {
    r["variants"][v]["daemons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["stats"]["kernel"]["programs"][name].as_u64().unwrap_or(0))
        .sum()
}

/// The first line of a walk-through's output that starts with `prefix`
/// (the test fails, showing the output, when there is none).
pub fn line_starting<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} in {out}"))
}

/// The number right after `prefix` on the line that starts with it
/// (`new TCP connection works 1.4 s after the cut` gives 1.4).
pub fn number_after(out: &str, prefix: &str) -> f64 {
    let line = line_starting(out, prefix);
    line[prefix.len()..]
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no number after {prefix:?}: {line}"))
}

/// Every daemon's non-zero node, I/O and gateway counters in variant `v`
/// of a report, a line per daemon (`node 3: user_in=400 no_egress=12`):
/// what a failed assertion prints so that a failure seen once (in CI)
/// says where the packets went.
pub fn daemon_counters(r: &serde_json::Value, v: usize) -> String {
    let mut out = String::new();
    for d in r["variants"][v]["daemons"].as_array().into_iter().flatten() {
        out.push_str(&format!("\nnode {}:", d["node"]));
        for group in ["node", "io", "gateways"] {
            let Some(fields) = d["stats"][group].as_object() else {
                continue;
            };
            for (name, value) in fields {
                if value.as_u64().is_some_and(|n| n > 0) {
                    out.push_str(&format!(" {name}={value}"));
                }
            }
        }
    }
    out
}

/// A flow's packets lost in each second of its run.
pub fn lost_series(flow: &serde_json::Value) -> Vec<u64> {
    flow["lost_series"]
        .as_array()
        .unwrap_or_else(|| panic!("no lost_series: {flow}"))
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// A TCP flow moved more than 1 Mbit/s in each of at least `seconds`
/// seconds (it never stalled).
pub fn assert_never_stalls(flow: &serde_json::Value, seconds: usize) {
    let secs: Vec<f64> = flow["goodput_series_mbps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!(secs.len() >= seconds, "{secs:?}");
    assert!(secs.iter().all(|&g| g > 1.0), "a stall: {secs:?}");
}

/// The user-space node's counter `name`, summed over variant `v`'s daemons.
pub fn node_counter(r: &serde_json::Value, v: usize, name: &str) -> u64 {
    r["variants"][v]["daemons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["stats"]["node"][name].as_u64().unwrap_or(0))
        .sum()
}

/// Control messages of `kind` the daemons of a report's first variant
/// refused, summed.
pub fn control_refusals(r: &serde_json::Value, kind: &str) -> u64 {
    r["variants"][0]["daemons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            d["stats"]["control"]["rx_errors"][kind]
                .as_u64()
                .unwrap_or(0)
        })
        .sum()
}

/// A directory for `PATH` holding, for each of `names`, a stand-in that
/// fails if run.
pub fn path_of_stand_ins(names: &[&str]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("braid-lab-test-path-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for n in names {
        let p = dir.join(n);
        std::fs::write(&p, "#!/bin/sh\nexit 1\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

/// Brings lab `name` up from scenario `text` (`braid lab up`: its first
/// variant), runs `body` with the lab's directory (control sockets, logs),
/// then brings it down, also when `body` panics, and checks that no
/// namespace is left; `body`'s panic goes on after that.
pub fn with_lab_up(name: &str, text: &str, body: impl FnOnce(&std::path::Path)) {
    let path = write_lab(&format!("{name}.toml"), text);
    let p = path.to_str().unwrap();
    let up = braid(&["lab", "up", p]);
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let dir = std::env::temp_dir().join(format!("braid-lab-{name}"));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&dir)));
    let down = braid(&["lab", "down", p]);
    assert!(down.status.success());
    assert!(namespaces_of(name).is_empty(), "namespaces left behind");
    remove_lab_file(&path);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// What a running daemon's kernel data path reports (`braid ctl --json
/// stats`, its `kernel` part), from its control socket.
pub fn kernel_report(socket: &std::path::Path) -> serde_json::Value {
    let out = braid(&[
        "ctl",
        "--json",
        "--socket",
        socket.to_str().unwrap(),
        "stats",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stats as JSON");
    v.get("stats").unwrap_or(&v)["kernel"].clone()
}

/// Removes a scenario file `write_lab` wrote and the report directory
/// `run_lab` wrote beside it (their directory stays: other tests, which
/// may run at the same time, write theirs there).
pub fn remove_lab_file(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_dir_all(path.with_extension("out"));
}

/// The pids the lab's pid files name.
pub fn pids_of_lab(dir: &std::path::Path) -> Vec<(String, i32)> {
    let mut pids: Vec<(String, i32)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pid"))
        .map(|p| {
            let pid = std::fs::read_to_string(&p).unwrap().trim().parse().unwrap();
            (p.file_name().unwrap().to_string_lossy().into_owned(), pid)
        })
        .collect();
    pids.sort();
    pids
}

/// Whether process `pid` is running (not gone, not a zombie).
pub fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    })
}

/// Running processes whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| running(pid))
        .filter_map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            cmd.contains(needle).then(|| format!("{pid}: {cmd}"))
        })
        .collect()
}
