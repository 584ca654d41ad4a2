//! Carries out a plan on this machine (iproute2, tc, ethtool, processes)
//! and owns what it built: [`Built`] tears it all down when dropped (the
//! processes are stopped with SIGTERM first, so that daemons remove their
//! TUN devices and sockets, then SIGKILL, and waited for; then the
//! namespaces go, and the lab's directory unless the run failed or
//! `--keep` said otherwise), also after a failure or Ctrl-C; [`teardown`]
//! does the same for what a lab of the same name left behind (`down`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::link::{attach_loss, detach_all_in, set_port_loss, LossSlot};
use crate::plan::Step;
use crate::scenario::Lab;

/// Runs `cmd args`; an error names the command and what it printed.
pub fn run(cmd: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .with_context(|| format!("cannot run {cmd}"))?;
    if !out.status.success() {
        bail!(
            "{cmd} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Runs a command inside network namespace `ns`.
pub fn in_ns(ns: &str, args: &[&str]) -> anyhow::Result<()> {
    let mut all = vec!["netns", "exec", ns];
    all.extend_from_slice(args);
    run("ip", &all)
}

/// What the lab needs from this machine, or what is missing: root, and
/// iproute2 (what a scenario's variants need besides is checked by
/// [`crate::programs::check`]).
pub fn check_capabilities() -> anyhow::Result<()> {
    if !is_root() {
        bail!("the lab needs root (network namespaces, veth, tc)");
    }
    if Command::new("ip").arg("-V").output().is_err() {
        bail!("the lab needs `ip` (Debian package iproute2)");
    }
    Ok(())
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// How long stopping a lab waits for its processes to exit after
/// SIGTERM, and then again after SIGKILL.
pub const TERM_WAIT: Duration = Duration::from_secs(5);
pub const KILL_WAIT: Duration = Duration::from_secs(5);

/// Everything built for a running lab; dropping it tears it all down:
/// every process stopped and waited for, the namespaces deleted, and the
/// lab's directory removed when the run succeeded (kept, and said so,
/// after a failure or with `--keep`).
pub struct Built {
    /// The lab's name (for messages).
    name: String,
    namespaces: Vec<String>,
    /// The routing daemons, by router (in plan order).
    pub daemons: Vec<(usize, Child)>,
    /// Link emulators.
    helpers: Vec<Child>,
    /// Leave everything running (`braid lab up`).
    pub keep: bool,
    /// Keep the lab's directory after tearing down (`--keep`).
    keep_files: bool,
    /// The run succeeded: only then is the lab's directory removed. Left
    /// false, a failure (an error, a panic, Ctrl-C) keeps the logs.
    pub succeeded: bool,
    /// The lab's directory (pid files of processes that are not children).
    dir: PathBuf,
}

impl Drop for Built {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let mut children: Vec<Child> = self.daemons.drain(..).map(|(_, c)| c).collect();
        children.append(&mut self.helpers);
        let survivors = stop_and_delete(&self.dir, &self.namespaces, &mut children);
        let why = if !survivors.is_empty() {
            eprintln!(
                "lab {}: still running after SIGTERM and SIGKILL: {}",
                self.name,
                survivors.join("; ")
            );
            "processes did not exit"
        } else if self.keep_files {
            "--keep"
        } else if !self.succeeded {
            "the run failed or was interrupted"
        } else {
            ""
        };
        if let Some(kept) = finish_dir(&self.dir, why.is_empty(), survivors.is_empty()) {
            let why = if why.is_empty() {
                "it could not be removed"
            } else {
                why
            };
            eprintln!(
                "lab {}: its files (logs, configs) are kept in {} ({why}); braid lab down removes them",
                self.name,
                kept.display()
            );
        }
    }
}

/// Removes the lab's directory `dir` (`remove`), or keeps it: then
/// without its pid files when every process is gone (`stopped`: they name
/// no process any more). Returns the directory when it is kept.
fn finish_dir(dir: &Path, remove: bool, stopped: bool) -> Option<PathBuf> {
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
fn stop_and_delete(dir: &Path, namespaces: &[String], children: &mut [Child]) -> Vec<String> {
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

/// Carries out `steps` for `lab` (after removing what a previous lab of
/// the same name left). On an error, what was built so far is torn down.
pub fn carry_out(lab: &Lab, steps: &[Step]) -> anyhow::Result<Built> {
    check_capabilities()?;
    // A fresh start: what a previous lab of this name left goes, its
    // kept files too.
    teardown(lab, false)?;
    let dir = lab.dir();
    std::fs::create_dir_all(&dir)?;
    let mut built = Built {
        name: lab.name.clone(),
        namespaces: Vec::new(),
        daemons: Vec::new(),
        helpers: Vec::new(),
        keep: false,
        keep_files: lab.keep,
        succeeded: false,
        dir: lab.dir(),
    };
    for step in steps {
        apply(lab, step, &mut built)?;
    }
    Ok(built)
}

fn cidr(addr: std::net::Ipv4Addr, len: u8) -> String {
    format!("{addr}/{len}")
}

fn apply(lab: &Lab, step: &Step, built: &mut Built) -> anyhow::Result<()> {
    let dir = lab.dir();
    match step {
        Step::Namespace { ns } => {
            run("ip", &["netns", "add", ns])?;
            built.namespaces.push(ns.clone());
            in_ns(ns, &["ip", "link", "set", "lo", "up"])?;
        }
        Step::Sysctl { ns, key, value } => {
            in_ns(ns, &["sysctl", "-qw", &format!("{key}={value}")])?;
        }
        Step::Veth { a, b } => run(
            "ip",
            &[
                "-n", &a.0, "link", "add", &a.1, "type", "veth", "peer", "name", &b.1, "netns",
                &b.0,
            ],
        )?,
        Step::Up { ns, dev } => in_ns(ns, &["ip", "link", "set", dev, "up"])?,
        Step::Addr { ns, dev, addr, len } => {
            in_ns(ns, &["ip", "addr", "add", &cidr(*addr, *len), "dev", dev])?
        }
        Step::Route {
            ns,
            dst,
            via,
            metric,
            table,
        } => {
            let (dst, via) = (cidr(dst.0, dst.1), via.to_string());
            let mut args = vec!["ip", "route", "add", &dst, "via", &via];
            let (metric, table) = (metric.map(|m| m.to_string()), table.map(|t| t.to_string()));
            if let Some(m) = &metric {
                args.extend(["metric", m]);
            }
            if let Some(t) = &table {
                args.extend(["table", t]);
            }
            in_ns(ns, &args)?;
        }
        Step::DefaultRoute { ns, via } => in_ns(
            ns,
            &["ip", "route", "add", "default", "via", &via.to_string()],
        )?,
        Step::Rule { ns, from, table } => in_ns(
            ns,
            &[
                "ip",
                "rule",
                "add",
                "from",
                &from.to_string(),
                "lookup",
                &table.to_string(),
            ],
        )?,
        Step::OffloadsOff { ns, dev } => in_ns(
            ns,
            &[
                "ethtool", "-K", dev, "gro", "off", "gso", "off", "tso", "off", "tx", "off",
            ],
        )
        .context("turning offloads off (Debian package ethtool)")?,
        Step::Loss { ns, dev, params } => attach_loss(ns, dev, *params, LossSlot::Link)?,
        Step::Rate {
            ns,
            dev,
            bps,
            queue,
        } => {
            let rate = format!("{bps}bit");
            let (what, size) = match queue {
                Some(packets) => ("limit", (*packets as usize * 1500).to_string()),
                None => ("latency", "100ms".to_string()),
            };
            in_ns(
                ns,
                &[
                    "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", &rate, "burst",
                    "32kbit", what, &size,
                ],
            )?;
        }
        Step::Emulator {
            ns,
            a,
            b,
            delay,
            jitter,
            log,
        } => {
            let out = std::fs::File::create(dir.join(format!("{log}.log")))?;
            let child = Command::new("ip")
                .args(["netns", "exec", ns])
                .arg(std::env::current_exe()?)
                .args(["lab-delay", "--a", a, "--b", b, "--delay"])
                .arg(format!("{}us", delay.as_micros()))
                .arg("--jitter")
                .arg(format!("{}us", jitter.as_micros()))
                .stdin(Stdio::null())
                .stdout(out.try_clone()?)
                .stderr(out)
                .spawn()
                .context("starting the link emulator")?;
            std::fs::write(dir.join(format!("{log}.pid")), child.id().to_string())?;
            built.helpers.push(child);
        }
        Step::File { name, contents } => std::fs::write(dir.join(name), contents)?,
        Step::Remove { name } => {
            let _ = std::fs::remove_file(dir.join(name));
        }
        Step::Daemon {
            router,
            program,
            args,
        } => {
            let name = &lab.routers[*router].name;
            let log = std::fs::File::create(dir.join(format!("{name}.log")))?;
            let child = Command::new("ip")
                .args(["netns", "exec", &lab.ns(*router)])
                .arg(program)
                .args(args)
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()
                .with_context(|| {
                    format!("starting {} in {}", program.display(), lab.ns(*router))
                })?;
            std::fs::write(dir.join(format!("{name}.pid")), child.id().to_string())?;
            built.daemons.push((*router, child));
        }
        Step::Bridge { ns, dev } => in_ns(
            ns,
            &["ip", "link", "add", dev, "type", "bridge", "stp_state", "0"],
        )?,
        Step::Command { ns, args } => {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            in_ns(ns, &refs)?
        }
        Step::PortLoss {
            segment,
            ap,
            per_mille,
        } => set_port_loss(lab, *segment, *ap, *per_mille)?,
        Step::MptcpLimits { ns } => in_ns(
            ns,
            &[
                "ip",
                "mptcp",
                "limits",
                "set",
                "subflows",
                "8",
                "add_addr_accepted",
                "8",
            ],
        )?,
        Step::MptcpEndpoint { ns, addr, dev } => in_ns(
            ns,
            &[
                "ip",
                "mptcp",
                "endpoint",
                "add",
                &addr.to_string(),
                "dev",
                dev,
                "subflow",
            ],
        )?,
    }
    Ok(())
}
