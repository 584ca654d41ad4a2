//! What the `braid` binary's test harnesses share: whether this process
//! is root, and a test that cannot run here listed by the runner as
//! skipped, with why (`test NAME [skipped: not root] ... ignored`).
//! `lab.rs`: what the lab's tests share; `wireshark/`: what the
//! Wireshark dissector's test stands on (tests/dissector.rs).

pub mod lab;
pub mod wireshark;

/// Whether this process runs as root (its real uid, from /proc).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// A test, which says on stderr how long it took (from taking `lock`,
/// when it holds one: tests that must not run beside each other); when
/// `missing` says what this machine lacks for it, listed as ignored with
/// "skipped: why" as its kind, never run.
pub fn trial(
    name: impl Into<String>,
    missing: Option<String>,
    lock: Option<&'static std::sync::Mutex<()>>,
    body: impl FnOnce() + Send + 'static,
) -> libtest_mimic::Trial {
    let name = name.into();
    let label = name.clone();
    let trial = libtest_mimic::Trial::test(name, move || {
        let _held = lock.map(|l| l.lock().unwrap_or_else(|e| e.into_inner()));
        let start = std::time::Instant::now();
        body();
        // What each test costs CI (which has 30 minutes for all of them).
        eprintln!("note: {label} took {:.1} s", start.elapsed().as_secs_f64());
        Ok(())
    });
    match missing {
        Some(why) => trial
            .with_ignored_flag(true)
            .with_kind(format!("skipped: {why}")),
        None => trial,
    }
}
