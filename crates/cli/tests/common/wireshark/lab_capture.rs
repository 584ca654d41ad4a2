//! A lab run captured inside a router's namespace by dumpcap, torn down
//! however the test ends; and whether this machine can run one.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::tshark::have;
use crate::common::lab::namespaces_of;

/// Runs the lab `lab_name` of `file` to its end (`braid lab run`, its
/// log in `log`) while dumpcap captures every interface of router
/// `router`'s namespace into `pcap`, from the namespace's start; asserts
/// that nothing was left from before, that the lab and the capture ended
/// well, and that the lab left no namespace.
pub fn run_captured(lab_name: &str, file: &Path, router: &str, pcap: &Path, log: &Path) {
    let _ = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["lab", "down"])
        .arg(file)
        .output();
    assert!(
        namespaces_of(lab_name).is_empty(),
        "{:?} left from before",
        namespaces_of(lab_name)
    );
    let lab = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["lab", "run", "--json"])
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut run = LabRun {
        lab,
        dumpcap: None,
        file: file.to_path_buf(),
    };
    // Router a's namespace is the lab's first step: capture on all its
    // interfaces (the links come up after), as pcap, from then on.
    let ns = format!("braid-{lab_name}-{router}");
    let deadline = Instant::now() + Duration::from_secs(60);
    // Usable, not just named: `ip netns add` makes the file before it
    // mounts the namespace on it, and entering it in between fails.
    let usable = |ns: &str| {
        Command::new("ip")
            .args(["netns", "exec", ns, "true"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    while !usable(&ns) {
        assert!(
            !matches!(run.lab.try_wait(), Ok(Some(_))),
            "the lab ended before its namespaces: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        assert!(Instant::now() < deadline, "no namespace {ns} after 60 s");
    }
    let mut dumpcap = Command::new("ip")
        .args([
            "netns", "exec", &ns, "dumpcap", "-q", "-P", "-i", "any", "-w",
        ])
        .arg(pcap)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = dumpcap.stderr.take().unwrap();
    run.dumpcap = Some(dumpcap);
    // dumpcap says when it captures.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut said = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) if line.contains("Capturing on") => break,
            Ok(line) => said.push(line),
            Err(_) => panic!("dumpcap did not start capturing: {said:?}"),
        }
    }
    // The lab runs its flows and the crash, reports and tears down.
    assert!(
        wait_for(&mut run.lab, Duration::from_secs(240)),
        "the lab did not end within 240 s"
    );
    let status = run.lab.wait().unwrap();
    assert!(
        status.success(),
        "lab run failed: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
    let mut d = run.dumpcap.take().unwrap();
    signal(&d, "-TERM");
    assert!(
        wait_for(&mut d, Duration::from_secs(20)),
        "dumpcap did not stop"
    );
    drop(run);
    assert!(
        namespaces_of(lab_name).is_empty(),
        "namespaces left: {:?}",
        namespaces_of(lab_name)
    );
}

/// Sends `sig` (as kill(1) takes it) to `child`.
fn signal(child: &Child, sig: &str) {
    let _ = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .stderr(Stdio::null())
        .status();
}

/// Waits for `child` at most `limit`; whether it ended.
fn wait_for(child: &mut Child, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// The lab run and the capture, stopped (the lab torn down) however the
/// test ends.
struct LabRun {
    lab: Child,
    dumpcap: Option<Child>,
    file: PathBuf,
}

impl Drop for LabRun {
    fn drop(&mut self) {
        if !matches!(self.lab.try_wait(), Ok(Some(_))) {
            // `braid lab run` tears down on SIGTERM.
            signal(&self.lab, "-TERM");
            if !wait_for(&mut self.lab, Duration::from_secs(60)) {
                let _ = self.lab.kill();
                let _ = self.lab.wait();
            }
        }
        if let Some(d) = &mut self.dumpcap {
            signal(d, "-TERM");
            if !wait_for(d, Duration::from_secs(10)) {
                let _ = d.kill();
                let _ = d.wait();
            }
        }
        let _ = Command::new(env!("CARGO_BIN_EXE_braid"))
            .args(["lab", "down"])
            .arg(&self.file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Why the lab capture cannot run here, if it cannot.
pub fn lab_missing() -> Option<String> {
    if !crate::common::is_root() {
        return Some("not root".into());
    }
    let probe = format!("braid-dissector-captest-{}", std::process::id());
    let ok = Command::new("ip")
        .args(["netns", "add", &probe])
        .status()
        .is_ok_and(|s| s.success());
    let _ = Command::new("ip").args(["netns", "del", &probe]).status();
    if !ok {
        return Some("cannot create network namespaces".into());
    }
    if !have("dumpcap") {
        return Some("dumpcap is not installed (run scripts/setup.sh)".into());
    }
    if Command::new("tc").arg("-V").output().is_err() {
        return Some("tc is not installed (run scripts/setup.sh)".into());
    }
    None
}
