//! Tools the dissector test runs: tshark with braid's dissector (its
//! PDML, parsed), any command bounded in time with its output in the
//! test's scratch directory, and whether a tool is installed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::pdml::{hex, parse_pdml, Packet};

/// The dissector under test.
pub fn dissector() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../dist/wireshark/braid.lua")
}

/// `name` in the test's scratch directory (one per test process, removed
/// when every test passed).
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("braid-dissector-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// How a command ended, and what it wrote.
pub struct Ran {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` to its end, at most `limit` (killed and failed past it),
/// its output through files (no pipe to fill).
pub fn run_bounded(cmd: &mut Command, limit: Duration, what: &str) -> Ran {
    let out = scratch(&format!("{what}.stdout"));
    let err = scratch(&format!("{what}.stderr"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}, killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        ok: status.success(),
        stdout: std::fs::read_to_string(&out).unwrap(),
        stderr: std::fs::read_to_string(&err).unwrap(),
    }
}

/// tshark's PDML of `pcap` with the dissector loaded and `options`
/// (`-o` preferences).
pub fn pdml(pcap: &Path, options: &[String], what: &str) -> Vec<Packet> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"])
        .arg(pcap)
        .arg("-X")
        .arg(format!("lua_script:{}", dissector().display()))
        .args(["-T", "pdml"]);
    for o in options {
        cmd.args(["-o", o]);
    }
    let ran = run_bounded(&mut cmd, Duration::from_secs(300), what);
    assert!(ran.ok, "{what}: tshark failed: {}", ran.stderr);
    // A script that does not load is reported on stderr only.
    let complaints: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| !l.contains("Running as user") && !l.trim().is_empty())
        .collect();
    assert!(complaints.is_empty(), "{what}: tshark said {complaints:?}");
    let packets = parse_pdml(&ran.stdout);
    assert!(!packets.is_empty(), "{what}: no packets in tshark's output");
    packets
}

/// The dissector's preference that gives it key `id` (to check MACs).
pub fn keys_option(id: u8, secret: &[u8]) -> String {
    format!("braid.keys:{id}:{}", hex(secret))
}

/// Whether `tool --version` runs here.
pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
