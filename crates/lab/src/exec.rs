//! Carries out a plan on this machine (iproute2, tc, ethtool, processes)
//! and owns what it built: [`Built`] tears it all down when dropped (the
//! daemons are stopped with SIGTERM first, so they remove their TUN
//! devices and sockets), also after a failure or Ctrl-C; [`teardown`]
//! removes what a lab of the same name left behind.

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

/// What the lab needs from this machine, or what is missing.
pub fn check_capabilities() -> anyhow::Result<()> {
    if !is_root() {
        bail!("the lab needs root (network namespaces, veth, tc)");
    }
    for tool in ["ip", "tc"] {
        if Command::new(tool).arg("-V").output().is_err() {
            bail!("the lab needs `{tool}` (Debian package iproute2)");
        }
    }
    Ok(())
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Everything built for a running lab; dropping it tears it all down.
pub struct Built {
    namespaces: Vec<String>,
    /// The routing daemons, by router (in plan order).
    pub daemons: Vec<(usize, Child)>,
    /// Link emulators (killed with the lab).
    helpers: Vec<Child>,
    /// Leave everything running (`braid lab up`).
    pub keep: bool,
    /// The lab's directory (pid files of processes that are not children).
    dir: std::path::PathBuf,
}

impl Drop for Built {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        for (_, d) in &mut self.daemons {
            // SIGTERM lets the daemon remove its TUN and socket.
            let _ = Command::new("kill")
                .arg(d.id().to_string())
                .stderr(Stdio::null())
                .status();
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        for (_, d) in &mut self.daemons {
            while Instant::now() < deadline {
                if let Ok(Some(_)) = d.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = d.kill();
            let _ = d.wait();
        }
        for h in &mut self.helpers {
            let _ = h.kill();
            let _ = h.wait();
        }
        stop_by_pid_files(&self.dir);
        for ns in &self.namespaces {
            detach_all_in(ns);
            let _ = run("ip", &["netns", "del", ns]);
        }
    }
}

/// Removes whatever a lab of this name left (namespaces; daemons die with
/// their namespace's interfaces and are signalled by pid file).
pub fn teardown(lab: &Lab) {
    stop_by_pid_files(&lab.dir());
    teardown_namespaces(lab);
}

/// Stops every process a pid file in `dir` (or a directory in it) names:
/// SIGTERM, and SIGKILL to those still there after 2 s. Daemons started
/// again after a crash, and daemons that put themselves in the background
/// (FRR's), are not the lab's children: their pid files are how they are
/// found. A process deleting its namespace does not stop it.
pub fn stop_by_pid_files(dir: &std::path::Path) {
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
    let pids: Vec<i32> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "pid"))
        .filter_map(|p| std::fs::read_to_string(p).ok()?.trim().parse().ok())
        .filter(|&pid: &i32| pid > 1)
        .collect();
    let alive = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    for &pid in &pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for &pid in pids.iter().filter(|&&p| alive(p)) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

fn teardown_namespaces(lab: &Lab) {
    if let Ok(out) = Command::new("ip").args(["netns", "list"]).output() {
        let prefix = format!("braid-{}-", lab.name);
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let ns = line.split_whitespace().next().unwrap_or("");
            if ns.starts_with(&prefix) {
                let _ = run("ip", &["netns", "del", ns]);
            }
        }
    }
}

/// Carries out `steps` for `lab` (after removing what a previous lab of
/// the same name left). On an error, what was built so far is torn down.
pub fn carry_out(lab: &Lab, steps: &[Step]) -> anyhow::Result<Built> {
    check_capabilities()?;
    teardown(lab);
    let dir = lab.dir();
    std::fs::create_dir_all(&dir)?;
    let mut built = Built {
        namespaces: Vec::new(),
        daemons: Vec::new(),
        helpers: Vec::new(),
        keep: false,
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
