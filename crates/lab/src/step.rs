//! The vocabulary of a lab's plan: [`Step`], one thing to set up on this
//! machine (a namespace, a veth pair, an address, an impairment, a route,
//! a file, a process). The plan (`plan.rs`) and the routing drivers
//! (`routing/`) write steps; `exec.rs` carries them out.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use crate::link::LossParams;

/// One thing to set up. Names of namespaces and interfaces are the lab's
/// (`Lab::ns`, `Lab::link_dev`, ...); files are relative to the lab's
/// directory.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A network namespace, with its loopback up.
    Namespace { ns: String },
    /// A sysctl inside a namespace.
    Sysctl {
        ns: String,
        key: String,
        value: String,
    },
    /// A veth pair: `a.1` in namespace `a.0`, `b.1` in namespace `b.0`.
    Veth {
        a: (String, String),
        b: (String, String),
    },
    /// An interface up.
    Up { ns: String, dev: String },
    /// An address on an interface.
    Addr {
        ns: String,
        dev: String,
        addr: Ipv4Addr,
        len: u8,
    },
    /// A route: `dst/len via via`, with a metric, or in a table.
    Route {
        ns: String,
        dst: (Ipv4Addr, u8),
        via: Ipv4Addr,
        metric: Option<u32>,
        table: Option<u32>,
    },
    /// The default route of a host.
    DefaultRoute { ns: String, via: Ipv4Addr },
    /// A policy rule: traffic from `from` looks up `table`.
    Rule {
        ns: String,
        from: Ipv4Addr,
        table: u32,
    },
    /// Segmentation and checksum offloads off (frames that cross the
    /// delay emulator are copied raw: they must be whole and checksummed).
    OffloadsOff { ns: String, dev: String },
    /// braid's eBPF loss program on an interface's ingress (the receiving
    /// side: a loss the sender's stack never learns of).
    Loss {
        ns: String,
        dev: String,
        params: LossParams,
    },
    /// A rate limit (tbf) on an interface's egress: `queue` full-size
    /// packets, or 100 ms at the rate.
    Rate {
        ns: String,
        dev: String,
        bps: u64,
        queue: Option<u32>,
    },
    /// The delay emulator between interfaces `a` and `b` of namespace
    /// `ns` (`braid lab-delay`), its log in `log`.
    Emulator {
        ns: String,
        a: String,
        b: String,
        delay: Duration,
        jitter: Duration,
        log: String,
    },
    /// A file in the lab's directory (a daemon's config).
    File { name: String, contents: String },
    /// A file in the lab's directory removed, if it is there.
    Remove { name: String },
    /// A router's routing daemon in its namespace; its log and pid file
    /// are named after the router.
    Daemon {
        router: usize,
        program: PathBuf,
        args: Vec<String>,
    },
    /// Linux MPTCP's subflow limits in a host.
    MptcpLimits { ns: String },
    /// An MPTCP endpoint (another subflow's address) in a host.
    MptcpEndpoint {
        ns: String,
        addr: Ipv4Addr,
        dev: String,
    },
    /// A bridge (no spanning tree) in a namespace.
    Bridge { ns: String, dev: String },
    /// A command inside a namespace (`ip ...`, `sysctl ...`).
    Command { ns: String, args: Vec<String> },
    /// Access point `ap`'s port on segment `segment` loses `per_mille` of
    /// the frames each way (braid's eBPF loss program at both ends).
    PortLoss {
        segment: usize,
        ap: usize,
        per_mille: u16,
    },
}

impl Step {
    /// A command inside namespace `ns`.
    pub fn command(ns: &str, args: &[&str]) -> Step {
        Step::Command {
            ns: ns.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }
}

/// The namespaces a plan makes, in order.
pub fn namespaces(steps: &[Step]) -> impl Iterator<Item = &str> {
    steps.iter().filter_map(|s| match s {
        Step::Namespace { ns } => Some(ns.as_str()),
        _ => None,
    })
}
