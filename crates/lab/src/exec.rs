//! Carries out a plan on this machine (iproute2, tc, ethtool, processes)
//! and owns what it built: [`Built`] tears it all down when dropped (see
//! `teardown.rs`: the processes are stopped with SIGTERM first, so that
//! daemons remove their TUN devices and sockets, then SIGKILL, and waited
//! for; then the namespaces go, and the lab's directory unless the run
//! failed or `--keep` said otherwise), also after a failure or Ctrl-C.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context};

use crate::delay::EmulatorDrops;
use crate::link::{attach_loss, set_port_loss, LossSlot};
use crate::ns::{in_ns, run};
use crate::scenario::Lab;
use crate::step::Step;
use crate::teardown::{finish_dir, stop_and_delete, teardown};

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
    /// Link emulators, each with the file its output goes to.
    helpers: Vec<(Child, PathBuf)>,
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

impl Built {
    /// Stops the link emulators (the links they carry stop with them) and
    /// returns what they lost, summed; `None` when the lab has none, or
    /// when one did not say (it did not exit when told).
    pub fn stop_emulators(&mut self) -> Option<EmulatorDrops> {
        if self.helpers.is_empty() {
            return None;
        }
        let (mut children, paths): (Vec<Child>, Vec<PathBuf>) = self.helpers.drain(..).unzip();
        let survivors = crate::teardown::stop(&mut children, &[]);
        if !survivors.is_empty() {
            eprintln!(
                "lab {}: link emulators still running after SIGTERM and SIGKILL: {}",
                self.name,
                survivors.join("; ")
            );
        }
        paths.iter().try_fold(EmulatorDrops::default(), |sum, p| {
            let text = std::fs::read_to_string(p).ok()?;
            Some(sum.sum(EmulatorDrops::from_output(&text)?))
        })
    }
}

impl Drop for Built {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let mut children: Vec<Child> = self.daemons.drain(..).map(|(_, c)| c).collect();
        children.extend(self.helpers.drain(..).map(|(c, _)| c));
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

/// Carries out one step.
fn apply(lab: &Lab, step: &Step, built: &mut Built) -> anyhow::Result<()> {
    if let Some((ns, args)) = command_in_ns(step) {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        return in_ns(ns, &refs);
    }
    let dir = lab.dir();
    match step {
        Step::Namespace { ns } => {
            run("ip", &["netns", "add", ns])?;
            built.namespaces.push(ns.clone());
            in_ns(ns, &["ip", "link", "set", "lo", "up"])?;
        }
        Step::Veth { a, b } => run(
            "ip",
            &[
                "-n", &a.0, "link", "add", &a.1, "type", "veth", "peer", "name", &b.1, "netns",
                &b.0,
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
        Step::PortLoss {
            segment,
            ap,
            per_mille,
        } => set_port_loss(lab, *segment, *ap, *per_mille)?,
        Step::Emulator {
            ns,
            a,
            b,
            delay,
            jitter,
            log,
        } => {
            let path = dir.join(format!("{log}.log"));
            let out = std::fs::File::create(&path)?;
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
            built.helpers.push((child, path));
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
        Step::File { name, contents } => std::fs::write(dir.join(name), contents)?,
        Step::Remove { name } => {
            let _ = std::fs::remove_file(dir.join(name));
        }
        // One command inside a namespace: carried out above.
        _ => {}
    }
    Ok(())
}

/// The command a step is inside its namespace, for the steps that are one
/// such command (`ip`, `sysctl`, `tc`).
fn command_in_ns(step: &Step) -> Option<(&str, Vec<String>)> {
    let strings = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    Some(match step {
        Step::Sysctl { ns, key, value } => {
            (ns, strings(&["sysctl", "-qw", &format!("{key}={value}")]))
        }
        Step::Up { ns, dev } => (ns, strings(&["ip", "link", "set", dev, "up"])),
        Step::Addr { ns, dev, addr, len } => (
            ns,
            strings(&["ip", "addr", "add", &cidr(*addr, *len), "dev", dev]),
        ),
        Step::Route {
            ns,
            dst,
            via,
            metric,
            table,
        } => {
            let mut args = strings(&["ip", "route", "add", &cidr(dst.0, dst.1), "via"]);
            args.push(via.to_string());
            if let Some(m) = metric {
                args.extend(["metric".to_string(), m.to_string()]);
            }
            if let Some(t) = table {
                args.extend(["table".to_string(), t.to_string()]);
            }
            (ns, args)
        }
        Step::DefaultRoute { ns, via } => (
            ns,
            strings(&["ip", "route", "add", "default", "via", &via.to_string()]),
        ),
        Step::Rule { ns, from, table } => (
            ns,
            strings(&[
                "ip",
                "rule",
                "add",
                "from",
                &from.to_string(),
                "lookup",
                &table.to_string(),
            ]),
        ),
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
            (
                ns,
                strings(&[
                    "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", &rate, "burst",
                    "32kbit", what, &size,
                ]),
            )
        }
        Step::Bridge { ns, dev } => (
            ns,
            strings(&["ip", "link", "add", dev, "type", "bridge", "stp_state", "0"]),
        ),
        Step::Command { ns, args } => (ns, args.clone()),
        Step::MptcpLimits { ns } => (
            ns,
            strings(&[
                "ip",
                "mptcp",
                "limits",
                "set",
                "subflows",
                "8",
                "add_addr_accepted",
                "8",
            ]),
        ),
        Step::MptcpEndpoint { ns, addr, dev } => (
            ns,
            strings(&[
                "ip",
                "mptcp",
                "endpoint",
                "add",
                &addr.to_string(),
                "dev",
                dev,
                "subflow",
            ]),
        ),
        Step::Namespace { .. }
        | Step::Veth { .. }
        | Step::OffloadsOff { .. }
        | Step::Loss { .. }
        | Step::PortLoss { .. }
        | Step::Emulator { .. }
        | Step::Daemon { .. }
        | Step::File { .. }
        | Step::Remove { .. } => return None,
    })
}
