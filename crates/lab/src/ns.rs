//! Running things inside a lab's network namespaces: a command (with
//! iproute2's `ip netns exec`), and a socket opened there. The leaf
//! every part of the lab that touches a namespace uses; it knows nothing
//! of scenarios.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::process::Command;

use anyhow::{bail, Context};

/// Runs `cmd args` and returns what it printed; an error names the
/// command and what it printed on stderr.
pub fn output(cmd: &str, args: &[&str]) -> anyhow::Result<String> {
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
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `cmd args`; an error names the command and what it printed.
pub fn run(cmd: &str, args: &[&str]) -> anyhow::Result<()> {
    output(cmd, args).map(drop)
}

/// Runs a command inside network namespace `ns`.
pub fn in_ns(ns: &str, args: &[&str]) -> anyhow::Result<()> {
    read_in_ns(ns, args).map(drop)
}

/// Runs a command inside network namespace `ns` and returns what it
/// printed.
pub fn read_in_ns(ns: &str, args: &[&str]) -> anyhow::Result<String> {
    let mut all = vec!["netns", "exec", ns];
    all.extend_from_slice(args);
    output("ip", &all)
}

/// Opens a UDP socket inside network namespace `ns` (the socket stays
/// there; the thread returns to its own namespace).
pub fn socket_in(ns: &str, bind: impl Into<SocketAddr>) -> anyhow::Result<UdpSocket> {
    let bind = bind.into();
    made_in(ns, || UdpSocket::bind(bind))
}

/// Runs `make` (which opens a socket) inside network namespace `ns`: what
/// it opens stays there, the thread returns to its own namespace.
pub fn made_in<T>(ns: &str, make: impl FnOnce() -> std::io::Result<T>) -> anyhow::Result<T> {
    let here = std::fs::File::open("/proc/thread-self/ns/net")?;
    let there = std::fs::File::open(format!("/var/run/netns/{ns}"))
        .with_context(|| format!("namespace {ns}"))?;
    nix::sched::setns(there.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)?;
    let made = make();
    nix::sched::setns(here.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)?;
    Ok(made?)
}
