//! Tearing a lab down: every process it started (its children, those its
//! pid files name, whatever else runs inside its namespaces) stopped with
//! SIGTERM, then SIGKILL, and waited for; then its namespaces deleted (with
//! the loss programs held there) and its directory removed, or kept
//! without its pid files. [`teardown`] does it for a lab of a name (`down`,
//! and before a build); `exec.rs`'s `Built` does it for what it built when
//! dropped.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use anyhow::bail;

use crate::link::detach_all_in;
use crate::ns::run;
use crate::scenario::Lab;

/// How long stopping a lab waits for its processes to exit after
/// SIGTERM, and then again after SIGKILL.
pub const TERM_WAIT: Duration = Duration::from_secs(5);
pub const KILL_WAIT: Duration = Duration::from_secs(5);

/// Removes the lab's directory `dir` (`remove`), or keeps it: then
/// without its pid files when every process is gone (`stopped`: they name
/// no process any more). Returns the directory when it is kept.
pub(crate) fn finish_dir(dir: &Path, remove: bool, stopped: bool) -> Option<PathBuf> {
    if !dir.exists() {
        return None;
    }
    if remove {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return None,
            Err(e) => eprintln!("cannot remove {}: {e}", dir.display()),
        }
    } else if stopped {
        for p in pid_files(dir) {
            let _ = std::fs::remove_file(p);
        }
    }
    Some(dir.to_path_buf())
}

/// The namespaces lab `lab` makes, of every kind (routers, hosts, link
/// emulators, segments, clients), that exist on this machine.
pub fn lab_namespaces(lab: &Lab) -> Vec<String> {
    let mut names = Vec::new();
    for i in 0..lab.routers.len() {
        names.push(lab.ns(i));
        names.push(lab.host_ns(i));
    }
    names.extend((0..lab.links.len()).map(|j| lab.emulator_ns(j)));
    names.extend((0..lab.segments.len()).map(|s| lab.segment_ns(s)));
    names.extend((0..lab.clients.len()).map(|c| lab.client_ns(c)));
    names.extend((0..lab.uplinks().len()).map(|k| lab.isp_ns(k)));
    names.push(lab.internet_ns());
    names.retain(|n| Path::new(NETNS_DIR).join(n).exists());
    names
}

/// Where `ip netns` keeps its namespaces.
const NETNS_DIR: &str = "/run/netns";

/// Tears down what a lab of this name left (or `up` built): every
/// process stopped and waited for (the ones its pid files name, and
/// whatever runs inside its namespaces), its namespaces deleted, and its
/// directory removed, or kept with `keep_files` (without pid files).
/// Fails, keeping the directory, naming the processes that did not exit.
pub fn teardown(lab: &Lab, keep_files: bool) -> anyhow::Result<()> {
    let dir = lab.dir();
    let survivors = stop_and_delete(&dir, &lab_namespaces(lab), &mut Vec::new());
    let stopped = survivors.is_empty();
    finish_dir(&dir, stopped && !keep_files, stopped);
    if !stopped {
        bail!(
            "lab {}: still running after SIGTERM and SIGKILL: {}; {} kept",
            lab.name,
            survivors.join("; "),
            dir.display()
        );
    }
    let left = lab_namespaces(lab);
    if !left.is_empty() {
        bail!("lab {}: cannot delete namespaces {left:?}", lab.name);
    }
    Ok(())
}

/// Stops every process of a lab: `children` (ours), the processes its pid
/// files in `dir` name, and whatever runs inside `namespaces`; then
/// deletes the namespaces (with the loss programs this process attached
/// there). Returns the processes still running after SIGKILL, described.
pub(crate) fn stop_and_delete(
    dir: &Path,
    namespaces: &[String],
    children: &mut [Child],
) -> Vec<String> {
    let own: Vec<i32> = children.iter().map(|c| c.id() as i32).collect();
    let mut others = pid_file_processes(dir);
    others.extend(processes_in(namespaces));
    others.sort_unstable();
    others.dedup();
    others.retain(|p| !own.contains(p) && *p != std::process::id() as i32);
    let survivors = stop(children, &others);
    for ns in namespaces {
        detach_all_in(ns);
        let _ = run("ip", &["netns", "del", ns]);
    }
    survivors
}

/// Stops `children` and `pids`: SIGTERM (a braid daemon then removes its
/// TUN device and socket), up to [`TERM_WAIT`] for them all to exit,
/// SIGKILL to the rest, up to [`KILL_WAIT`] more; children are reaped.
/// Returns those still there, described.
pub fn stop(children: &mut [Child], pids: &[i32]) -> Vec<String> {
    use nix::sys::signal::{kill, Signal};
    let signal_all = |children: &mut [Child], sig: Signal| {
        for c in children.iter_mut() {
            if !matches!(c.try_wait(), Ok(Some(_))) {
                let _ = kill(nix::unistd::Pid::from_raw(c.id() as i32), sig);
            }
        }
        for &p in pids {
            if !exited(p) {
                let _ = kill(nix::unistd::Pid::from_raw(p), sig);
            }
        }
    };
    let all_gone = |children: &mut [Child]| {
        children
            .iter_mut()
            .all(|c| matches!(c.try_wait(), Ok(Some(_)) | Err(_)))
            && pids.iter().all(|&p| exited(p))
    };
    let wait = |children: &mut [Child], limit: Duration| {
        let deadline = Instant::now() + limit;
        while !all_gone(children) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    signal_all(children, Signal::SIGTERM);
    wait(children, TERM_WAIT);
    signal_all(children, Signal::SIGKILL);
    wait(children, KILL_WAIT);
    let mut left = Vec::new();
    for c in children.iter_mut() {
        if !matches!(c.try_wait(), Ok(Some(_)) | Err(_)) {
            left.push(describe(c.id() as i32));
        }
    }
    left.extend(pids.iter().filter(|&&p| !exited(p)).map(|&p| describe(p)));
    left
}

/// Whether process `pid` has exited: reaped now if it is a child of ours
/// (a daemon restarted after a crash), else gone or a zombie (its
/// resources released).
fn exited(pid: i32) -> bool {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    match waitpid(nix::unistd::Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
        Ok(WaitStatus::StillAlive) => return false,
        Ok(_) => return true,
        Err(_) => {}
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    })
}

/// "pid 123 (braid daemon --config ...)".
fn describe(pid: i32) -> String {
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .split('\0')
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let cmd: String = cmd.chars().take(120).collect();
    format!("pid {pid} ({cmd})")
}

/// The pid files in `dir` and in the directories in it (FRR's).
fn pid_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                if let Ok(inner) = std::fs::read_dir(&p) {
                    files.extend(inner.flatten().map(|e| e.path()));
                }
            } else {
                files.push(p);
            }
        }
    }
    files.retain(|p| p.extension().is_some_and(|x| x == "pid"));
    files
}

/// The running processes the pid files in `dir` name: daemons started
/// again after a crash, daemons that put themselves in the background
/// (FRR's), processes whose namespace was deleted already. A process is
/// taken for the one its file was written for only if it started before
/// the file was last written (not a later process given a reused pid).
fn pid_file_processes(dir: &Path) -> Vec<i32> {
    pid_files(dir)
        .iter()
        .filter_map(|f| {
            let pid: i32 = std::fs::read_to_string(f).ok()?.trim().parse().ok()?;
            let written = std::fs::metadata(f).ok()?.modified().ok()?;
            let file_age = written.elapsed().unwrap_or_default().as_secs_f64();
            // Started before the file (a second's slack for the clocks'
            // resolution).
            (pid > 1 && !exited(pid) && process_age(pid)? + 1.0 >= file_age).then_some(pid)
        })
        .collect()
}

/// How long ago process `pid` started, seconds.
fn process_age(pid: i32) -> Option<f64> {
    // /proc counts in USER_HZ, 100 on every architecture Linux has.
    const USER_HZ: f64 = 100.0;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22, starttime: the 20th after the command's closing ')'.
    let start: f64 = stat
        .rsplit(')')
        .next()?
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(uptime - start / USER_HZ)
}

/// The processes whose network namespace is one of `namespaces`.
fn processes_in(namespaces: &[String]) -> Vec<i32> {
    use std::os::unix::fs::MetadataExt;
    let ids: Vec<(u64, u64)> = namespaces
        .iter()
        .filter_map(|n| std::fs::metadata(Path::new(NETNS_DIR).join(n)).ok())
        .map(|m| (m.dev(), m.ino()))
        .collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::metadata(format!("/proc/{pid}/ns/net"))
                .is_ok_and(|m| ids.contains(&(m.dev(), m.ino())))
        })
        .collect()
}
