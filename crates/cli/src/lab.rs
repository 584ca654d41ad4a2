//! `braid lab up|run|down|bench SCENARIO`: builds a lab scenario's
//! topology on this machine as network namespaces joined by veth pairs,
//! routes it (braid daemons, babeld, plain kernel routes, or kernel routes
//! with Linux MPTCP at the ends), puts plain end hosts behind the routers,
//! impairs links (loss from braid's eBPF program on the receiving side,
//! rate from tbf, delay from `braid lab-delay`), runs the scenario's flows
//! with real kernel sockets (UDP probes, urgent bursts, iperf3 TCP and
//! UDP) and link events, reports them in the simulator's format, and
//! tears everything down again, also after a failure or Ctrl-C.
//!
//! Addresses (all from the benchmarking range 198.18.0.0/15): router i
//! (from 1) serves 198.18.i.0/24, its host is 198.18.i.2 behind
//! 198.18.i.1; link j (from 0) is 198.19.j.1/24 - 198.19.j.2/24.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use braid_conf::{LocatedError, Source, Spanned};
use braid_sim::FlowResult;
use clap::{Args, Subcommand};
use serde::Deserialize;

#[derive(Args)]
pub struct LabArgs {
    #[command(subcommand)]
    action: LabAction,
}

#[derive(Subcommand)]
enum LabAction {
    /// Build the topology and start the daemons; leave them running.
    Up {
        scenario: PathBuf,
        /// The braid daemons' log level (error, warn, info, debug, trace);
        /// their logs are written to the lab's directory.
        #[arg(long, default_value = "warn")]
        log: DaemonLog,
    },
    /// Build, run the scenario's flows, report, and tear down.
    Run {
        scenario: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Also write report.json and report.html (tables and SVG charts,
        /// viewable offline) into this directory.
        #[arg(long)]
        out: Option<PathBuf>,
        /// The braid daemons' log level (error, warn, info, debug, trace);
        /// their logs are written to the lab's directory.
        #[arg(long, default_value = "warn")]
        log: DaemonLog,
    },
    /// Tear down what `up` built (namespaces, daemons).
    Down { scenario: PathBuf },
    /// Forwarding benchmark on the scenario's first flow, per variant: the
    /// highest rate of 64- and 1400-byte UDP delivered with under 0.1%
    /// loss, whole-machine CPU per packet there, and one-way latency at
    /// 1,000 packets/s.
    Bench {
        scenario: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

// ------------------------------------------------------------------ scenario

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLab {
    name: Spanned<String>,
    description: Option<String>,
    mode: Option<Spanned<String>>,
    paths: Option<usize>,
    probe_interval: Option<Spanned<String>>,
    dead_after: Option<u32>,
    settle: Option<Spanned<String>>,
    #[serde(rename = "router")]
    routers: Vec<RawRouter>,
    #[serde(default, rename = "link")]
    links: Vec<RawLabLink>,
    #[serde(default, rename = "flow")]
    flows: Vec<RawLabFlow>,
    #[serde(default, rename = "event")]
    events: Vec<RawEvent>,
    #[serde(default, rename = "variant")]
    variants: Vec<RawVariant>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEvent {
    at: Spanned<String>,
    a: Option<Spanned<String>>,
    b: Option<Spanned<String>>,
    flow: Option<Spanned<String>>,
    action: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: Spanned<String>,
    software: Option<Spanned<String>>,
    mode: Option<Spanned<String>>,
    hello: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRouter {
    name: Spanned<String>,
    #[serde(default)]
    host: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLabLink {
    a: Spanned<String>,
    b: Spanned<String>,
    loss: Option<Spanned<f64>>,
    burst: Option<Spanned<f64>>,
    rate: Option<Spanned<String>>,
    queue: Option<Spanned<u32>>,
    delay: Option<Spanned<String>>,
    jitter: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLabFlow {
    name: Option<String>,
    kind: Option<Spanned<String>>,
    duration: Option<Spanned<String>>,
    bitrate: Option<Spanned<String>>,
    congestion: Option<Spanned<String>>,
    from: Spanned<String>,
    to: Spanned<String>,
    count: Option<Spanned<u32>>,
    interval: Option<Spanned<String>>,
    size: Option<Spanned<usize>>,
}

/// A checked lab scenario.
#[derive(Debug, Clone)]
pub struct Lab {
    pub name: String,
    pub description: String,
    pub paths: usize,
    pub probe_interval: Duration,
    /// The daemons' `probes.dead_after` (their default when absent).
    pub dead_after: Option<u32>,
    /// After every end has a route, the routes must stay unchanged this
    /// long before the flows start (protocols settle on their best paths).
    pub settle: Duration,
    pub routers: Vec<Router>,
    pub links: Vec<LabLink>,
    pub flows: Vec<LabFlow>,
    pub events: Vec<LabEvent>,
    /// Runs of the same topology and flows with different routing; one
    /// (braid, `mode`) when the file has no `[[variant]]`.
    pub variants: Vec<LabVariant>,
    /// The braid daemons' log level (not part of the file: `--log`).
    pub log: DaemonLog,
}

/// A braid daemon's log level, as its config's `log` field spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum DaemonLog {
    Error,
    #[default]
    Warn,
    Info,
    Debug,
    Trace,
}

impl DaemonLog {
    fn as_str(self) -> &'static str {
        match self {
            DaemonLog::Error => "error",
            DaemonLog::Warn => "warn",
            DaemonLog::Info => "info",
            DaemonLog::Debug => "debug",
            DaemonLog::Trace => "trace",
        }
    }
}

/// What routes the lab's routers.
#[derive(Debug, Clone, PartialEq)]
pub enum Software {
    Braid {
        mode: String,
    },
    /// Plain Linux forwarding along static shortest-path routes: the
    /// physical limit of this machine, for benchmarks.
    Kernel,
    /// babeld (the Debian package) with this hello interval.
    Babeld {
        hello: Duration,
    },
    /// Linux MPTCP at the ends over kernel static routes: every TCP
    /// flow's sender has one address per disjoint path, pinned to that
    /// path by policy routes, and one MPTCP subflow per address (iperf3
    /// under mptcpize). UDP flows take the static routes.
    Mptcp,
}

#[derive(Debug, Clone)]
pub struct LabVariant {
    pub name: String,
    pub software: Software,
}

/// Something done to a link while the flows run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkAction {
    /// Every packet dropped both ways, with the link still up: no carrier
    /// loss tells anyone (a silent failure, as a fading radio link).
    Blackhole,
    Restore,
    /// Both ends set administratively down: the carrier is lost, the
    /// kernel drops what was queued for the link and removes its routes
    /// through it (a radio that lost its association).
    Down,
    /// Both ends up again (the kernel's static routes through the link
    /// stay gone, as they would).
    Up,
}

#[derive(Debug, Clone)]
pub struct LabEvent {
    /// After the flows start.
    pub at: Duration,
    pub target: EventTarget,
    pub action: LinkAction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventTarget {
    Link(usize),
    /// The first link of this flow's path at the moment of the event, as
    /// the sender's router routes it (its primary path): what a failure
    /// of "the active path" means whichever protocol chose it.
    FirstHopOf(usize),
}

#[derive(Debug, Clone)]
pub struct Router {
    pub name: String,
    pub host: bool,
}

#[derive(Debug, Clone)]
pub struct LabLink {
    pub a: usize,
    pub b: usize,
    /// Mean loss ratio each way, and mean burst length in packets.
    pub loss: f64,
    pub burst: f64,
    pub rate_bps: Option<u64>,
    /// The rate limiter's queue, in full-size (1,500-byte) packets; by
    /// default 100 ms at the rate.
    pub queue: Option<u32>,
    /// One-way delay and jitter each way, by `braid lab-delay` between
    /// the two routers (zero: a plain veth pair).
    pub delay: Duration,
    pub jitter: Duration,
}

#[derive(Debug, Clone)]
pub struct LabFlow {
    pub name: String,
    pub kind: FlowKind,
    pub from: usize,
    pub to: usize,
    pub count: u32,
    pub interval: Duration,
    pub size: usize,
}

/// What a flow sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowKind {
    /// braid's UDP probe: `count` datagrams of `size`, `interval` apart.
    Probe,
    /// Urgent behind bulk (the late-binding seed's figure 7): `count` bulk
    /// datagrams sent back to back after a marker, then one urgent
    /// datagram (DSCP EF); `URGENT_ROUNDS` rounds, `interval` apart.
    Urgent,
    /// An iperf3 test.
    Iperf(IperfFlow),
}

/// An iperf3 test: how long, and how fast (TCP without a `bitrate` finds
/// the bottleneck itself, and fills its queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IperfFlow {
    pub duration: Duration,
    pub bitrate: Option<u64>,
    /// The sender's congestion control (set on the socket, so the lab
    /// does not depend on this machine's default).
    pub congestion: Congestion,
    /// iperf3's UDP test instead of TCP: `bitrate` (1 Mbit/s by default)
    /// in datagrams of the flow's `size`.
    pub udp: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Congestion {
    Cubic,
    Reno,
    Bbr,
}

impl Congestion {
    fn as_str(self) -> &'static str {
        match self {
            Congestion::Cubic => "cubic",
            Congestion::Reno => "reno",
            Congestion::Bbr => "bbr",
        }
    }
}

const MAX_ROUTERS: usize = 250;

/// Rounds of an urgent flow.
const URGENT_ROUNDS: u32 = 10;
const MAX_FLOW_PACKETS: u32 = 100_000;

impl Lab {
    pub fn parse(file: &str, text: &str) -> Result<Lab, LocatedError> {
        let src = Source::new(file, text);
        let raw: RawLab = src.parse()?;
        let name = raw.name.get_ref().clone();
        if name.is_empty()
            || name.len() > 12
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Err(src.err(
                Some(raw.name.span()),
                "name",
                "1-12 letters, digits or '-' (it names the namespaces)",
            ));
        }
        if raw.routers.is_empty() || raw.routers.len() > MAX_ROUTERS {
            return Err(src.err(None, "router", format!("1 to {MAX_ROUTERS} [[router]]s")));
        }
        let mut index = BTreeMap::new();
        let mut routers = Vec::new();
        for (i, r) in raw.routers.iter().enumerate() {
            let n = r.name.get_ref();
            if n.is_empty() || n.len() > 8 || !n.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(src.err(
                    Some(r.name.span()),
                    &format!("router[{i}].name"),
                    "1-8 letters or digits",
                ));
            }
            if index.insert(n.clone(), i).is_some() {
                return Err(src.err(
                    Some(r.name.span()),
                    &format!("router[{i}].name"),
                    "listed twice",
                ));
            }
            routers.push(Router {
                name: n.clone(),
                host: r.host,
            });
        }
        let find = |v: &Spanned<String>, field: &str| {
            index.get(v.get_ref()).copied().ok_or_else(|| {
                src.err(
                    Some(v.span()),
                    field,
                    format!("no router named \"{}\"", v.get_ref()),
                )
            })
        };
        let mut links = Vec::new();
        for (j, l) in raw.links.iter().enumerate() {
            let (a, b) = (
                find(&l.a, &format!("link[{j}].a"))?,
                find(&l.b, &format!("link[{j}].b"))?,
            );
            if a == b {
                return Err(src.err(
                    Some(l.b.span()),
                    &format!("link[{j}].b"),
                    "a link joins two routers",
                ));
            }
            let loss = l.loss.as_ref().map_or(Ok(0.0), |v| {
                let x = *v.get_ref();
                if (0.0..1.0).contains(&x) {
                    Ok(x)
                } else {
                    Err(src.err(
                        Some(v.span()),
                        &format!("link[{j}].loss"),
                        "a ratio in [0, 1)",
                    ))
                }
            })?;
            let burst = l.burst.as_ref().map_or(Ok(1.0), |v| {
                let x = *v.get_ref();
                if x >= 1.0 && x.is_finite() {
                    Ok(x)
                } else {
                    Err(src.err(
                        Some(v.span()),
                        &format!("link[{j}].burst"),
                        "mean burst length in packets, at least 1",
                    ))
                }
            })?;
            let rate_bps = l
                .rate
                .as_ref()
                .map(|r| src.rate(r, &format!("link[{j}].rate")))
                .transpose()?;
            let queue = match &l.queue {
                None => None,
                Some(q) if rate_bps.is_some() && (1..=100_000).contains(q.get_ref()) => {
                    Some(*q.get_ref())
                }
                Some(q) => {
                    return Err(src.err(
                        Some(q.span()),
                        &format!("link[{j}].queue"),
                        "1 to 100,000 packets, on a link with a rate",
                    ))
                }
            };
            let delay = src.duration(&l.delay, &format!("link[{j}].delay"), Duration::ZERO)?;
            let jitter = src.duration(&l.jitter, &format!("link[{j}].jitter"), Duration::ZERO)?;
            if delay > Duration::from_secs(10) || jitter > Duration::from_secs(10) {
                return Err(src.err(
                    l.delay.as_ref().map(|d| d.span()),
                    &format!("link[{j}].delay"),
                    "at most 10 s",
                ));
            }
            links.push(LabLink {
                a,
                b,
                loss,
                burst,
                rate_bps,
                queue,
                delay,
                jitter,
            });
        }
        if links.len() > 250 {
            return Err(src.err(None, "link", "at most 250 links"));
        }
        let mut flows = Vec::new();
        for (i, f) in raw.flows.iter().enumerate() {
            let (from, to) = (
                find(&f.from, &format!("flow[{i}].from"))?,
                find(&f.to, &format!("flow[{i}].to"))?,
            );
            for (end, v) in [(from, &f.from), (to, &f.to)] {
                if !routers[end].host {
                    return Err(src.err(
                        Some(v.span()),
                        &format!("flow[{i}]"),
                        format!("router \"{}\" has no host (set host = true)", v.get_ref()),
                    ));
                }
            }
            let count = f.count.as_ref().map_or(Ok(500), |c| {
                let n = *c.get_ref();
                if (1..=MAX_FLOW_PACKETS).contains(&n) {
                    Ok(n)
                } else {
                    Err(src.err(
                        Some(c.span()),
                        &format!("flow[{i}].count"),
                        format!("1 to {MAX_FLOW_PACKETS}"),
                    ))
                }
            })?;
            let size = f.size.as_ref().map_or(Ok(160), |s| {
                let n = *s.get_ref();
                if (16..=1400).contains(&n) {
                    Ok(n)
                } else {
                    Err(src.err(
                        Some(s.span()),
                        &format!("flow[{i}].size"),
                        "16 to 1400 bytes",
                    ))
                }
            })?;
            let kind = match f.kind.as_ref().map(|k| k.get_ref().as_str()) {
                None | Some("udp") => FlowKind::Probe,
                Some("urgent") => FlowKind::Urgent,
                Some(kind @ ("tcp" | "iperf3-udp")) => {
                    let d = src.duration(
                        &f.duration,
                        &format!("flow[{i}].duration"),
                        Duration::from_secs(10),
                    )?;
                    if d.is_zero() || d > Duration::from_secs(600) {
                        return Err(src.err(
                            f.duration.as_ref().map(|d| d.span()),
                            &format!("flow[{i}].duration"),
                            "1 s to 10 minutes",
                        ));
                    }
                    let bitrate = f
                        .bitrate
                        .as_ref()
                        .map(|r| src.rate(r, &format!("flow[{i}].bitrate")))
                        .transpose()?;
                    let congestion = match f.congestion.as_ref().map(|c| c.get_ref().as_str()) {
                        None | Some("cubic") => Congestion::Cubic,
                        Some("reno") => Congestion::Reno,
                        Some("bbr") => Congestion::Bbr,
                        Some(other) => {
                            return Err(src.err(
                                f.congestion.as_ref().map(|c| c.span()),
                                &format!("flow[{i}].congestion"),
                                format!("\"{other}\" is not cubic, reno or bbr"),
                            ))
                        }
                    };
                    FlowKind::Iperf(IperfFlow {
                        duration: d,
                        bitrate,
                        congestion,
                        udp: kind == "iperf3-udp",
                    })
                }
                Some(other) => {
                    return Err(src.err(
                        f.kind.as_ref().map(|k| k.span()),
                        &format!("flow[{i}].kind"),
                        format!("\"{other}\" is not udp, tcp, iperf3-udp or urgent"),
                    ))
                }
            };
            let urgent = kind == FlowKind::Urgent;
            // An urgent flow's rounds are seconds apart unless it says.
            let interval = src.duration(
                &f.interval,
                &format!("flow[{i}].interval"),
                if urgent {
                    Duration::from_secs(2)
                } else {
                    Duration::from_millis(20)
                },
            )?;
            let lasts = interval * if urgent { URGENT_ROUNDS } else { count };
            if interval < Duration::from_micros(10) || lasts > Duration::from_secs(600) {
                return Err(src.err(
                    f.interval.as_ref().map(|s| s.span()),
                    &format!("flow[{i}].interval"),
                    "at least 10 µs, and the flow must end within 10 minutes",
                ));
            }
            let iperf = |k: &FlowKind| matches!(k, FlowKind::Iperf(_));
            if iperf(&kind)
                && flows
                    .iter()
                    .any(|o: &LabFlow| iperf(&o.kind) && o.from == from)
            {
                return Err(src.err(
                    Some(f.from.span()),
                    &format!("flow[{i}].from"),
                    "one tcp or iperf3-udp flow per sending host (retransmissions are its kernel's count)",
                ));
            }
            flows.push(LabFlow {
                kind,
                name: f
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("{}->{}", f.from.get_ref(), f.to.get_ref())),
                from,
                to,
                count,
                interval,
                size,
            });
        }
        let mode_of = |m: &Option<Spanned<String>>, field: &str| match m {
            None => Ok("single".to_string()),
            Some(m) => src
                .value::<braid_proto::redundancy::Mode>(m, field)
                .map(|_| m.get_ref().clone()),
        };
        let mode = mode_of(&raw.mode, "mode")?;
        let mut events = Vec::new();
        for (i, e) in raw.events.iter().enumerate() {
            let target = match (&e.a, &e.b, &e.flow) {
                (Some(ea), Some(eb), None) => {
                    let (a, b) = (
                        find(ea, &format!("event[{i}].a"))?,
                        find(eb, &format!("event[{i}].b"))?,
                    );
                    EventTarget::Link(
                        links
                            .iter()
                            .position(|l| (l.a, l.b) == (a, b) || (l.a, l.b) == (b, a))
                            .ok_or_else(|| {
                                src.err(
                                    Some(eb.span()),
                                    &format!("event[{i}]"),
                                    "no link joins these routers",
                                )
                            })?,
                    )
                }
                (None, None, Some(f)) => EventTarget::FirstHopOf(
                    flows
                        .iter()
                        .position(|x: &LabFlow| &x.name == f.get_ref())
                        .ok_or_else(|| {
                            src.err(
                                Some(f.span()),
                                &format!("event[{i}].flow"),
                                format!("no flow named \"{}\"", f.get_ref()),
                            )
                        })?,
                ),
                _ => {
                    return Err(src.err(
                        Some(e.action.span()),
                        &format!("event[{i}]"),
                        "name either a link (a and b) or a flow (its active path's first link)",
                    ))
                }
            };
            let action = match e.action.get_ref().as_str() {
                "blackhole" => LinkAction::Blackhole,
                "restore" => LinkAction::Restore,
                "down" => LinkAction::Down,
                "up" => LinkAction::Up,
                other => {
                    return Err(src.err(
                        Some(e.action.span()),
                        &format!("event[{i}].action"),
                        format!("\"{other}\" is not blackhole, restore, down or up"),
                    ))
                }
            };
            let at = src.duration(
                &Some(e.at.clone()),
                &format!("event[{i}].at"),
                Duration::ZERO,
            )?;
            events.push(LabEvent { at, target, action });
        }
        let mut variants = Vec::new();
        for (i, v) in raw.variants.iter().enumerate() {
            let software = match v.software.as_ref().map(|s| s.get_ref().as_str()) {
                None | Some("braid") => Software::Braid {
                    mode: match &v.mode {
                        None => mode.clone(),
                        Some(_) => mode_of(&v.mode, &format!("variant[{i}].mode"))?,
                    },
                },
                Some("kernel") => Software::Kernel,
                Some("mptcp") => Software::Mptcp,
                Some("babeld") => Software::Babeld {
                    hello: src.duration(
                        &v.hello,
                        &format!("variant[{i}].hello"),
                        Duration::from_secs(4),
                    )?,
                },
                Some(other) => {
                    return Err(src.err(
                        v.software.as_ref().map(|s| s.span()),
                        &format!("variant[{i}].software"),
                        format!("\"{other}\" is not braid, babeld, kernel or mptcp"),
                    ))
                }
            };
            variants.push(LabVariant {
                name: v.name.get_ref().clone(),
                software,
            });
        }
        if variants.is_empty() {
            variants.push(LabVariant {
                name: mode.clone(),
                software: Software::Braid { mode: mode.clone() },
            });
        }
        Ok(Lab {
            name,
            description: raw.description.unwrap_or_default(),
            paths: raw.paths.unwrap_or(3).clamp(1, 8),
            probe_interval: src.duration(
                &raw.probe_interval,
                "probe_interval",
                Duration::from_millis(200),
            )?,
            settle: src.duration(&raw.settle, "settle", Duration::from_secs(2))?,
            dead_after: raw.dead_after,
            log: DaemonLog::default(),
            routers,
            links,
            flows,
            events,
            variants,
        })
    }

    pub fn load(path: &Path) -> anyhow::Result<Lab> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Ok(Lab::parse(&path.display().to_string(), &text)?)
    }

    fn ns(&self, router: usize) -> String {
        format!("braid-{}-{}", self.name, self.routers[router].name)
    }

    fn host_ns(&self, router: usize) -> String {
        format!("braid-{}-{}h", self.name, self.routers[router].name)
    }

    /// The control socket of router `i`'s braid daemon.
    fn socket(&self, i: usize) -> PathBuf {
        self.dir().join(format!("{}.sock", self.routers[i].name))
    }

    fn dir(&self) -> PathBuf {
        std::env::temp_dir().join(format!("braid-lab-{}", self.name))
    }

    fn host_addr(router: usize) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, router as u8 + 1, 2)
    }

    /// The sending host's address for its MPTCP subflow over path `k`.
    fn subflow_addr(router: usize, k: usize) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, router as u8 + 1, 10 + k as u8)
    }

    /// Router `router`'s address on link `j`.
    fn link_addr(&self, j: usize, router: usize) -> Ipv4Addr {
        let side = if self.links[j].a == router { 1 } else { 2 };
        Ipv4Addr::new(198, 19, j as u8, side)
    }
}

// ------------------------------------------------------------------ system

fn run(cmd: &str, args: &[&str]) -> anyhow::Result<()> {
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

fn in_ns(ns: &str, args: &[&str]) -> anyhow::Result<()> {
    let mut all = vec!["netns", "exec", ns];
    all.extend_from_slice(args);
    run("ip", &all)
}

/// What the lab needs from this machine, or what is missing.
fn check_capabilities() -> anyhow::Result<()> {
    if !nix_is_root() {
        bail!("the lab needs root (network namespaces, veth, tc)");
    }
    for tool in ["ip", "tc"] {
        if Command::new(tool).arg("-V").output().is_err() {
            bail!("the lab needs `{tool}` (Debian package iproute2)");
        }
    }
    Ok(())
}

fn nix_is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Compiles the loss program for one parameter set (cached).
fn loss_object(link: &LabLink, dir: &Path) -> anyhow::Result<PathBuf> {
    let scale = |x: f64| ((x.clamp(0.0, 1.0)) * 4_294_967_295.0) as u64;
    // Bernoulli for a burst of 1; else Gilbert-Elliott with mean burst B:
    // r = 1/B, p = L / (B (1 - L)); Bad loses everything, Good nothing.
    let (p, r) = if link.burst <= 1.0 {
        (link.loss, 1.0 - link.loss)
    } else {
        (
            link.loss / (link.burst * (1.0 - link.loss)),
            1.0 / link.burst,
        )
    };
    loss_program(dir, [scale(p), scale(r), 0, scale(1.0)])
}

/// Compiles bpf/loss.c for (p, r, loss in Good, loss in Bad), each scaled
/// to 2^32 (cached by parameters).
fn loss_program(dir: &Path, [pgb, pbg, lg, lb]: [u64; 4]) -> anyhow::Result<PathBuf> {
    let obj = dir.join(format!("loss-{pgb}-{pbg}-{lg}-{lb}.o"));
    if obj.exists() {
        return Ok(obj);
    }
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bpf/loss.c");
    let defs = [
        format!("-DP_GB={pgb}u"),
        format!("-DP_BG={pbg}u"),
        format!("-DLOSS_G={lg}u"),
        format!("-DLOSS_B={lb}u"),
    ];
    let mut args = vec![
        "-O2",
        "-g",
        "-target",
        "bpf",
        "-I/usr/include/x86_64-linux-gnu",
    ];
    args.extend(defs.iter().map(String::as_str));
    let (src, out) = (source.display().to_string(), obj.display().to_string());
    args.extend(["-c", &src, "-o", &out]);
    run("clang", &args).context("compiling bpf/loss.c (needs clang and libbpf-dev)")?;
    Ok(obj)
}

/// Everything built for a running lab; dropping it tears it all down.
struct Built {
    namespaces: Vec<String>,
    daemons: Vec<Child>,
    /// Link emulators (killed with the lab).
    helpers: Vec<Child>,
    keep: bool,
}

impl Drop for Built {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        for d in &mut self.daemons {
            // SIGTERM lets the daemon remove its TUN and socket.
            let _ = Command::new("kill")
                .arg(d.id().to_string())
                .stderr(Stdio::null())
                .status();
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        for d in &mut self.daemons {
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
        for ns in &self.namespaces {
            let _ = run("ip", &["netns", "del", ns]);
        }
    }
}

/// Removes whatever a lab of this name left (namespaces; daemons die with
/// their namespace's interfaces and are signalled by pid file).
fn teardown(lab: &Lab) {
    let dir = lab.dir();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "pid") {
                if let Ok(pid) = std::fs::read_to_string(e.path()) {
                    let _ = Command::new("kill")
                        .arg(pid.trim())
                        .stderr(Stdio::null())
                        .status();
                }
            }
        }
    }
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

fn build(lab: &Lab, variant: &LabVariant) -> anyhow::Result<Built> {
    check_capabilities()?;
    teardown(lab);
    let dir = lab.dir();
    std::fs::create_dir_all(&dir)?;
    let mut built = Built {
        namespaces: Vec::new(),
        daemons: Vec::new(),
        helpers: Vec::new(),
        keep: false,
    };
    for i in 0..lab.routers.len() {
        let ns = lab.ns(i);
        run("ip", &["netns", "add", &ns])?;
        built.namespaces.push(ns.clone());
        in_ns(&ns, &["ip", "link", "set", "lo", "up"])?;
        in_ns(&ns, &["sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
        if lab.routers[i].host {
            let h = lab.host_ns(i);
            run("ip", &["netns", "add", &h])?;
            built.namespaces.push(h.clone());
            run(
                "ip",
                &[
                    "-n", &ns, "link", "add", "host0", "type", "veth", "peer", "name", "eth0",
                    "netns", &h,
                ],
            )?;
            let net = i + 1;
            in_ns(
                &ns,
                &[
                    "ip",
                    "addr",
                    "add",
                    &format!("198.18.{net}.1/24"),
                    "dev",
                    "host0",
                ],
            )?;
            in_ns(&ns, &["ip", "link", "set", "host0", "up"])?;
            in_ns(&h, &["ip", "link", "set", "lo", "up"])?;
            in_ns(
                &h,
                &[
                    "ip",
                    "addr",
                    "add",
                    &format!("198.18.{net}.2/24"),
                    "dev",
                    "eth0",
                ],
            )?;
            in_ns(&h, &["ip", "link", "set", "eth0", "up"])?;
            in_ns(
                &h,
                &[
                    "ip",
                    "route",
                    "add",
                    "default",
                    "via",
                    &format!("198.18.{net}.1"),
                ],
            )?;
        }
    }
    for (j, l) in lab.links.iter().enumerate() {
        let dev = format!("bl{j}");
        let (na, nb) = (lab.ns(l.a), lab.ns(l.b));
        if l.delay.is_zero() && l.jitter.is_zero() {
            run(
                "ip",
                &[
                    "link", "add", &dev, "netns", &na, "type", "veth", "peer", "name", &dev,
                    "netns", &nb,
                ],
            )?;
        } else {
            // Each router's end joins the emulator's namespace, which
            // passes frames between its two interfaces after the delay.
            let ne = format!("braid-{}-d{j}", lab.name);
            run("ip", &["netns", "add", &ne])?;
            built.namespaces.push(ne.clone());
            for (ns, side) in [(&na, "ea"), (&nb, "eb")] {
                run(
                    "ip",
                    &[
                        "link", "add", &dev, "netns", ns, "type", "veth", "peer", "name", side,
                        "netns", &ne,
                    ],
                )?;
                in_ns(&ne, &["ip", "link", "set", side, "up"])?;
                // Offloads off: large segments would cross the emulator as
                // one frame and stall TCP, and a checksum left to the
                // hardware would arrive uncomputed (a raw copy is not
                // a kernel-to-kernel veth hand-off).
                for (n, d) in [(ns.as_str(), dev.as_str()), (ne.as_str(), side)] {
                    in_ns(
                        n,
                        &[
                            "ethtool", "-K", d, "gro", "off", "gso", "off", "tso", "off", "tx",
                            "off",
                        ],
                    )
                    .context("turning offloads off (Debian package ethtool)")?;
                }
            }
            let log = std::fs::File::create(dir.join(format!("d{j}.log")))?;
            let child = Command::new("ip")
                .args(["netns", "exec", &ne])
                .arg(std::env::current_exe()?)
                .args(["lab-delay", "--a", "ea", "--b", "eb", "--delay"])
                .arg(format!("{}us", l.delay.as_micros()))
                .arg("--jitter")
                .arg(format!("{}us", l.jitter.as_micros()))
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()
                .context("starting the link emulator")?;
            std::fs::write(dir.join(format!("d{j}.pid")), child.id().to_string())?;
            built.helpers.push(child);
        }
        for (ns, side) in [(&na, 1), (&nb, 2)] {
            in_ns(
                ns,
                &[
                    "ip",
                    "addr",
                    "add",
                    &format!("198.19.{j}.{side}/24"),
                    "dev",
                    &dev,
                ],
            )?;
            in_ns(ns, &["ip", "link", "set", &dev, "up"])?;
            if l.loss > 0.0 {
                let obj = loss_object(l, &dir)?;
                in_ns(ns, &["tc", "qdisc", "add", "dev", &dev, "clsact"])?;
                in_ns(
                    ns,
                    &[
                        "tc",
                        "filter",
                        "add",
                        "dev",
                        &dev,
                        "ingress",
                        "bpf",
                        "da",
                        "obj",
                        &obj.display().to_string(),
                        "sec",
                        "classifier",
                    ],
                )?;
            }
            if let Some(bps) = l.rate_bps {
                let rate = format!("{bps}bit");
                let (what, size) = match l.queue {
                    Some(packets) => ("limit", (packets as usize * 1500).to_string()),
                    None => ("latency", "100ms".to_string()),
                };
                in_ns(
                    ns,
                    &[
                        "tc", "qdisc", "add", "dev", &dev, "root", "tbf", "rate", &rate, "burst",
                        "32kbit", what, &size,
                    ],
                )?;
            }
        }
    }
    if matches!(variant.software, Software::Kernel | Software::Mptcp) {
        static_routes(lab)?;
        if variant.software == Software::Mptcp {
            mptcp_paths(lab)?;
        }
        return Ok(built);
    }
    for i in 0..lab.routers.len() {
        let child = match &variant.software {
            Software::Braid { mode } => start_braid(lab, i, mode)?,
            Software::Babeld { hello } => start_babeld(lab, i, *hello)?,
            Software::Kernel | Software::Mptcp => unreachable!("handled above"),
        };
        std::fs::write(
            dir.join(format!("{}.pid", lab.routers[i].name)),
            child.id().to_string(),
        )?;
        built.daemons.push(child);
    }
    wait_converged(lab, &mut built)?;
    Ok(built)
}

/// Plain kernel routes: every router reaches every host subnet along a
/// fewest-hop path, with a route of higher metric through every other
/// neighbor no farther from the subnet (never back toward it, so no
/// loops): when an interface goes down, the kernel falls back on the next
/// route at once, as a multi-homed Linux host with a route per uplink.
fn static_routes(lab: &Lab) -> anyhow::Result<()> {
    let n = lab.routers.len();
    let neighbors = |u: usize| {
        lab.links
            .iter()
            .enumerate()
            .filter_map(move |(j, l)| match (l.a == u, l.b == u) {
                (true, _) => Some((j, l.b)),
                (_, true) => Some((j, l.a)),
                _ => None,
            })
    };
    for dst in (0..n).filter(|&k| lab.routers[k].host) {
        // Hops to dst, breadth-first.
        let mut dist: Vec<Option<usize>> = vec![None; n];
        dist[dst] = Some(0);
        let mut queue = std::collections::VecDeque::from([dst]);
        while let Some(u) = queue.pop_front() {
            for (_, v) in neighbors(u) {
                if dist[v].is_none() {
                    dist[v] = Some(dist[u].unwrap_or(0) + 1);
                    queue.push_back(v);
                }
            }
        }
        for i in (0..n).filter(|&i| i != dst) {
            let Some(di) = dist[i] else { continue };
            let mut via: Vec<(usize, usize, usize)> = neighbors(i)
                .filter_map(|(j, u)| dist[u].filter(|&du| du <= di).map(|du| (du + 1, j, u)))
                .collect();
            via.sort();
            for (rank, (hops, j, u)) in via.into_iter().enumerate() {
                in_ns(
                    &lab.ns(i),
                    &[
                        "ip",
                        "route",
                        "add",
                        &format!("198.18.{}.0/24", dst + 1),
                        "via",
                        &lab.link_addr(j, u).to_string(),
                        "metric",
                        &(100 * hops + rank).to_string(),
                    ],
                )?;
            }
        }
    }
    Ok(())
}

/// MPTCP's subflows, one per node-disjoint path (fewest hops first, as
/// braid computes them) of every TCP flow: the sender gets an address per
/// path and an MPTCP endpoint for each but the first (which iperf3 binds
/// to); each router along path k sends traffic from that address along
/// the path (a policy rule and a routing table of the flow's and path's
/// own) and the routers on the way back return traffic to it the same
/// way.
fn mptcp_paths(lab: &Lab) -> anyhow::Result<()> {
    use braid_proto::graph::GraphBuilder;
    use braid_proto::metric::Metric;
    use braid_proto::paths::{DisjointPaths, Disjointness};
    let mut g = GraphBuilder::new(lab.routers.len());
    for l in &lab.links {
        g.add_link(l.a as u32, l.b as u32, Some(Metric::ONE), Some(Metric::ONE));
    }
    let graph = g.build();
    for (i, f) in lab.flows.iter().enumerate() {
        if !matches!(f.kind, FlowKind::Iperf(_)) {
            continue;
        }
        let paths = DisjointPaths::new(&graph, f.from as u32)?.to(
            f.to as u32,
            lab.paths,
            Disjointness::Node,
        )?;
        for end in [f.from, f.to] {
            in_ns(
                &lab.host_ns(end),
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
            )?;
        }
        let dst_net = format!("198.18.{}.0/24", f.to + 1);
        for (k, path) in paths.iter().enumerate() {
            let addr = Lab::subflow_addr(f.from, k).to_string();
            let host = lab.host_ns(f.from);
            in_ns(
                &host,
                &["ip", "addr", "add", &format!("{addr}/24"), "dev", "eth0"],
            )?;
            if k > 0 {
                in_ns(
                    &host,
                    &[
                        "ip", "mptcp", "endpoint", "add", &addr, "dev", "eth0", "subflow",
                    ],
                )?;
            }
            let table = (1000 + 8 * i + k).to_string();
            for &a in &path.arcs {
                let arc = graph.arc(a);
                let (u, v, j) = (arc.from as usize, arc.to as usize, arc.link as usize);
                let (ru, rv) = (lab.ns(u), lab.ns(v));
                let (via_v, via_u) = (
                    lab.link_addr(j, v).to_string(),
                    lab.link_addr(j, u).to_string(),
                );
                in_ns(
                    &ru,
                    &[
                        "ip", "route", "add", &dst_net, "via", &via_v, "table", &table,
                    ],
                )?;
                in_ns(&ru, &["ip", "rule", "add", "from", &addr, "lookup", &table])?;
                in_ns(
                    &rv,
                    &["ip", "route", "add", &format!("{addr}/32"), "via", &via_u],
                )?;
            }
        }
    }
    Ok(())
}

/// The interfaces of router `i`, one per link.
fn interfaces_of(lab: &Lab, i: usize) -> Vec<String> {
    lab.links
        .iter()
        .enumerate()
        .filter(|(_, l)| l.a == i || l.b == i)
        .map(|(j, _)| format!("bl{j}"))
        .collect()
}

fn spawn_in(lab: &Lab, i: usize, program: &Path, args: &[&str]) -> anyhow::Result<Child> {
    let log = std::fs::File::create(lab.dir().join(format!("{}.log", lab.routers[i].name)))?;
    Command::new("ip")
        .args(["netns", "exec", &lab.ns(i)])
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {} in {}", program.display(), lab.ns(i)))
}

fn start_braid(lab: &Lab, i: usize, mode: &str) -> anyhow::Result<Child> {
    let dir = lab.dir();
    let ifaces: Vec<String> = interfaces_of(lab, i)
        .iter()
        .map(|n| format!("[[interface]]\nname = \"{n}\"\n"))
        .collect();
    if ifaces.is_empty() {
        bail!("router {} has no link", lab.routers[i].name);
    }
    let prefixes = if lab.routers[i].host {
        format!("prefixes = [\"198.18.{}.0/24\"]\n", i + 1)
    } else {
        String::new()
    };
    let config = format!(
        "node = {}\n{prefixes}mode = \"{mode}\"\npaths = {}\nlog = \"{}\"\ncontrol_socket = \"{}\"\nmetrics = \"127.0.0.1:9468\"\n{}\n[tun]\nroutes = [\"198.18.0.0/16\"]\n\n[probes]\nsmall_interval = \"{}ms\"\n",
        i + 1,
        lab.paths,
        lab.log.as_str(),
        lab.socket(i).display(),
        ifaces.join("\n"),
        lab.probe_interval.as_millis()
    );
    let mut config = config;
    if let Some(n) = lab.dead_after {
        config.push_str(&format!("dead_after = {n}\n"));
    }
    let path = dir.join(format!("{}.toml", lab.routers[i].name));
    std::fs::write(&path, config)?;
    let exe = std::env::current_exe()?;
    spawn_in(
        lab,
        i,
        &exe,
        &["daemon", "--config", &path.display().to_string()],
    )
}

/// babeld in router `i`: announces the host subnets (198.18.0.0/16, /24s)
/// and nothing else, with its pid and state files in the lab's directory
/// (the default paths are shared by every namespace).
fn start_babeld(lab: &Lab, i: usize, hello: Duration) -> anyhow::Result<Child> {
    let dir = lab.dir();
    let name = &lab.routers[i].name;
    let hello_s = format!("{}", hello.as_secs_f64());
    let mut conf = String::new();
    for n in interfaces_of(lab, i) {
        conf.push_str(&format!(
            "interface {n} type wired hello-interval {hello_s}\n"
        ));
    }
    conf.push_str("redistribute ip 198.18.0.0/16 ge 24 le 24 allow\nredistribute local deny\nredistribute deny\n");
    let path = dir.join(format!("{name}.babeld.conf"));
    std::fs::write(&path, conf)?;
    let (pid, state) = (
        dir.join(format!("{name}.babeld.pid")),
        dir.join(format!("{name}.babel-state")),
    );
    let _ = std::fs::remove_file(&pid);
    spawn_in(
        lab,
        i,
        Path::new("babeld"),
        &[
            "-c",
            &path.display().to_string(),
            "-I",
            &pid.display().to_string(),
            "-S",
            &state.display().to_string(),
            "-d",
            "0",
        ],
    )
}

/// Waits (at most 30 s) until every router with a host routes to every
/// other router with a host: braid daemons are asked over their sockets,
/// babeld's routes are read from the kernel.
fn wait_converged(lab: &Lab, built: &mut Built) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let ends: Vec<usize> = (0..lab.routers.len())
        .filter(|&i| lab.routers[i].host)
        .collect();
    loop {
        for (i, d) in built.daemons.iter_mut().enumerate() {
            if let Ok(Some(status)) = d.try_wait() {
                bail!(
                    "the routing daemon of {} exited ({status}):\n{}",
                    lab.routers[i].name,
                    log_tail(lab, i, 40)
                );
            }
        }
        let mut missing = Vec::new();
        for &i in &ends {
            for &k in &ends {
                if k != i {
                    if let Err(why) = routes_to(lab, i, k) {
                        missing.push(why);
                    }
                }
            }
        }
        if missing.is_empty() {
            return wait_settled(lab);
        }
        if Instant::now() > deadline {
            let logs: String = (0..lab.routers.len())
                .map(|i| {
                    format!(
                        "\n{}: {}\n{} log:\n{}",
                        lab.routers[i].name,
                        control_state(lab, i),
                        lab.routers[i].name,
                        log_tail(lab, i, 20)
                    )
                })
                .collect();
            bail!(
                "the lab did not converge in 30 s: {}{logs}",
                missing.join("; ")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What router `i`'s braid daemon holds and has counted of its control
/// plane (for the report when a lab does not converge); empty for other
/// routing software.
fn control_state(lab: &Lab, i: usize) -> String {
    let origins = match ask(lab, i, "routes") {
        None => return String::new(),
        Some(Err(e)) => return format!("did not answer: {e}"),
        Some(Ok(r)) => r["origins"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| format!("{}(seq {})", o["origin"], o["seq"]))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let stats = ask(lab, i, "stats")
        .and_then(Result::ok)
        .map(|s| {
            let s = &s["stats"];
            format!("control {} lsdb {} io {}", s["control"], s["lsdb"], s["io"])
        })
        .unwrap_or_default();
    format!("origins {origins}; {stats}")
}

/// The last `lines` lines of router `i`'s routing daemon log.
fn log_tail(lab: &Lab, i: usize, lines: usize) -> String {
    let text = std::fs::read_to_string(lab.dir().join(format!("{}.log", lab.routers[i].name)))
        .unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Waits until the routes between ends are unchanged for `settle` (at most
/// 60 s).
fn wait_settled(lab: &Lab) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let ends: Vec<usize> = (0..lab.routers.len())
        .filter(|&i| lab.routers[i].host)
        .collect();
    let snapshot = || -> Vec<String> { ends.iter().map(|&i| route_text(lab, i)).collect() };
    let mut last = snapshot();
    let mut since = Instant::now();
    while since.elapsed() < lab.settle {
        if Instant::now() > deadline {
            bail!(
                "routes did not stay unchanged for {:?} within 60 s",
                lab.settle
            );
        }
        std::thread::sleep(Duration::from_millis(100));
        let now = snapshot();
        if now != last {
            last = now;
            since = Instant::now();
        }
    }
    Ok(())
}

/// Asks router `i`'s braid daemon for a `braid ctl` document; `None` when
/// the router runs none (babeld, or plain kernel routing).
fn ask(lab: &Lab, i: usize, command: &str) -> Option<anyhow::Result<serde_json::Value>> {
    let sock = lab.socket(i);
    sock.exists().then(|| {
        let reply = braid_daemon::ctl::request(&sock, command)?;
        Ok(serde_json::from_str(&reply)?)
    })
}

/// The link the sender's router of flow `f` sends its packets on now:
/// braid's first path, or the kernel's route (babeld).
fn first_link_of(lab: &Lab, f: &LabFlow) -> anyhow::Result<usize> {
    let i = f.from;
    let next: usize = if let Some(r) = ask(lab, i, "routes") {
        let r = r?;
        let hop = r["routes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|x| x["egress"].as_u64() == Some(f.to as u64 + 1))
            .and_then(|x| x["paths"][0][1].as_u64())
            .ok_or_else(|| {
                anyhow!(
                    "{} has no path to {}",
                    lab.routers[i].name,
                    lab.routers[f.to].name
                )
            })?;
        hop as usize - 1
    } else {
        let out = Command::new("ip")
            .args([
                "-n",
                &lab.ns(i),
                "route",
                "get",
                &Lab::host_addr(f.to).to_string(),
            ])
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let dev = text
            .split_whitespace()
            .skip_while(|w| *w != "dev")
            .nth(1)
            .ok_or_else(|| anyhow!("no route from {}: {text}", lab.routers[i].name))?;
        let j: usize = dev.trim_start_matches("bl").parse()?;
        let l = &lab.links[j];
        if l.a == i {
            l.b
        } else {
            l.a
        }
    };
    lab.links
        .iter()
        .position(|l| (l.a, l.b) == (i, next) || (l.a, l.b) == (next, i))
        .ok_or_else(|| anyhow!("no link from {} to router {next}", lab.routers[i].name))
}

/// Router `i`'s routes toward the hosts, as text: braid's paths from its
/// daemon, else the kernel's routes.
fn route_text(lab: &Lab, i: usize) -> String {
    if let Some(r) = ask(lab, i, "routes") {
        return r.map(|r| r["routes"].to_string()).unwrap_or_default();
    }
    Command::new("ip")
        .args(["-n", &lab.ns(i), "route", "show", "root", "198.18.0.0/16"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Whether router `i` can reach router `k`'s host subnet; if not, why
/// (for the report when a lab does not converge).
fn routes_to(lab: &Lab, i: usize, k: usize) -> Result<(), String> {
    let (from, to) = (&lab.routers[i].name, &lab.routers[k].name);
    if let Some(r) = ask(lab, i, "routes") {
        let r = r.map_err(|e| format!("{from}'s daemon did not answer: {e}"))?;
        let knows = r["origins"].as_array().into_iter().flatten().any(|o| {
            o["origin"].as_u64() == Some(k as u64 + 1)
                && o["prefixes"].as_array().is_some_and(|p| !p.is_empty())
        });
        // What it does hold is in the report's `control_state`.
        return if knows {
            Ok(())
        } else {
            Err(format!("{from} has no route to {to}"))
        };
    }
    let found = Command::new("ip")
        .args([
            "-n",
            &lab.ns(i),
            "route",
            "show",
            &format!("198.18.{}.0/24", k + 1),
        ])
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    if found {
        Ok(())
    } else {
        Err(format!("{from} has no kernel route to {to}"))
    }
}

/// Applies a link event: a blackhole attaches braid's loss program built
/// to drop everything, ahead of any other filter, on both ends' ingress;
/// a restore removes it.
///
/// Returns, for `down`, the packets the link's queues (the qdiscs at both
/// ends) held the moment before: what the kernel drops with the carrier,
/// the packets below the binding point that a handoff loses.
fn apply_event(
    lab: &Lab,
    e: &LabEvent,
    resolved: &mut BTreeMap<usize, usize>,
) -> anyhow::Result<Option<u64>> {
    let link = match e.target {
        EventTarget::Link(j) => j,
        // A restore (up) after a blackhole (down) of the same flow undoes
        // that link.
        EventTarget::FirstHopOf(f) => match (e.action, resolved.get(&f)) {
            (LinkAction::Restore | LinkAction::Up, Some(&j)) => j,
            _ => {
                let j = first_link_of(lab, &lab.flows[f])?;
                resolved.insert(f, j);
                j
            }
        },
    };
    eprintln!("lab {}: {:?} link bl{link}", lab.name, e.action);
    let l = &lab.links[link];
    let dev = format!("bl{link}");
    for ns in [lab.ns(l.a), lab.ns(l.b)] {
        match e.action {
            LinkAction::Blackhole => {
                let always = u32::MAX as u64;
                let obj = loss_program(&lab.dir(), [0, always, always, always])?;
                // The clsact qdisc may be there already (a lossy link).
                let _ = in_ns(&ns, &["tc", "qdisc", "add", "dev", &dev, "clsact"]);
                in_ns(
                    &ns,
                    &[
                        "tc",
                        "filter",
                        "add",
                        "dev",
                        &dev,
                        "ingress",
                        "pref",
                        "1",
                        "bpf",
                        "da",
                        "obj",
                        &obj.display().to_string(),
                        "sec",
                        "classifier",
                    ],
                )?;
            }
            LinkAction::Restore => {
                in_ns(
                    &ns,
                    &["tc", "filter", "del", "dev", &dev, "ingress", "pref", "1"],
                )?;
            }
            LinkAction::Down => {}
            LinkAction::Up => in_ns(&ns, &["ip", "link", "set", &dev, "up"])?,
        }
    }
    if e.action != LinkAction::Down {
        return Ok(None);
    }
    let mut queued = 0;
    for ns in [lab.ns(l.a), lab.ns(l.b)] {
        queued += qdisc_backlog(&ns, &dev);
        in_ns(&ns, &["ip", "link", "set", &dev, "down"])?;
    }
    eprintln!(
        "lab {}: {queued} packets were queued for bl{link} when it went down",
        lab.name
    );
    Ok(Some(queued))
}

/// Packets waiting in `dev`'s qdiscs in namespace `ns` (`tc -s qdisc`'s
/// backlog of the root qdisc; 0 when it has none).
fn qdisc_backlog(ns: &str, dev: &str) -> u64 {
    let out = Command::new("ip")
        .args([
            "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", dev, "root",
        ])
        .output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    text.ok()
        .and_then(|t| {
            let words: Vec<&str> = t.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "backlog")?;
            words.get(at + 2)?.strip_suffix('p')?.parse().ok()
        })
        .unwrap_or(0)
}

// ------------------------------------------------------------------ traffic

/// Opens a UDP socket inside network namespace `ns` (the socket stays
/// there; the thread returns to its own namespace).
fn socket_in(ns: &str, bind: SocketAddrV4) -> anyhow::Result<UdpSocket> {
    let here = std::fs::File::open("/proc/thread-self/ns/net")?;
    let there = std::fs::File::open(format!("/var/run/netns/{ns}"))
        .with_context(|| format!("namespace {ns}"))?;
    nix::sched::setns(there.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)?;
    let socket = UdpSocket::bind(bind);
    nix::sched::setns(here.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)?;
    Ok(socket?)
}

/// Hands every datagram of at least `min_len` bytes that `rx` receives
/// before `end` to `each`.
fn receive_until(rx: &UdpSocket, end: Instant, min_len: usize, mut each: impl FnMut(&[u8])) {
    let mut buf = [0u8; 2048];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let _ = rx.set_read_timeout(Some(left));
        match rx.recv(&mut buf) {
            Ok(n) if n >= min_len => each(&buf[..n]),
            Ok(_) => {}
            Err(_) => return,
        }
    }
}

/// Runs one urgent flow: each round, a marker, `count` bulk datagrams as
/// fast as the sender's socket takes them, then one urgent datagram with
/// DSCP EF (which braid schedules ahead of bulk; plain Linux queues it
/// behind). The delay figures are the urgent datagram's arrival after the
/// marker's, per round (the seed's measure); sent and lost count every
/// datagram.
fn urgent_flow(
    lab: &Lab,
    mode: &str,
    i: usize,
    f: &LabFlow,
    origin: Instant,
    stop: &AtomicBool,
) -> anyhow::Result<FlowResult> {
    const MARKER: u32 = 0;
    const URGENT: u32 = u32::MAX;
    let port = 9000 + i as u16;
    let dst = SocketAddrV4::new(Lab::host_addr(f.to), port);
    let rx = socket_in(&lab.host_ns(f.to), dst)?;
    let _ = socket2::SockRef::from(&rx).set_recv_buffer_size(8 << 20);
    let bulk = socket_in(
        &lab.host_ns(f.from),
        SocketAddrV4::new(Lab::host_addr(f.from), 0),
    )?;
    let urgent = socket_in(
        &lab.host_ns(f.from),
        SocketAddrV4::new(Lab::host_addr(f.from), 0),
    )?;
    // DSCP EF (46) in the upper six bits of the TOS byte.
    socket2::SockRef::from(&urgent).set_tos_v4(46 << 2)?;
    let (count, interval, size) = (f.count, f.interval, f.size);
    let end = origin + interval * URGENT_ROUNDS + Duration::from_secs(2);
    let receiver = std::thread::spawn(move || {
        // Per round: (marker arrived, urgent arrived), and datagrams seen.
        let mut rounds = vec![(None::<Instant>, None::<Instant>); URGENT_ROUNDS as usize];
        let mut received = 0u64;
        receive_until(&rx, end, 8, |d| {
            let round = u32::from_be_bytes(d[..4].try_into().unwrap_or_default()) as usize;
            let seq = u32::from_be_bytes(d[4..8].try_into().unwrap_or_default());
            if let Some(r) = rounds.get_mut(round) {
                received += 1;
                match seq {
                    MARKER => r.0 = Some(Instant::now()),
                    URGENT => r.1 = Some(Instant::now()),
                    _ => {}
                }
            }
        });
        (rounds, received)
    });
    let mut payload = vec![0u8; size];
    let mut sent = 0u64;
    for round in 0..URGENT_ROUNDS {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(wait) = (origin + interval * round).checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        payload[..4].copy_from_slice(&round.to_be_bytes());
        for seq in (0..=count).chain([URGENT]) {
            payload[4..8].copy_from_slice(&seq.to_be_bytes());
            let socket = if seq == URGENT { &urgent } else { &bulk };
            if socket.send_to(&payload, dst).is_ok() {
                sent += 1;
            }
        }
    }
    let (rounds, received) = receiver
        .join()
        .map_err(|_| anyhow!("receiver thread failed"))?;
    let mut delays: Vec<u64> = rounds
        .iter()
        .filter_map(|(m, u)| {
            Some(
                u.as_ref()?
                    .saturating_duration_since(*m.as_ref()?)
                    .as_micros() as u64,
            )
        })
        .collect();
    let (mean, p50, p99) = braid_sim::delay_stats(&mut delays);
    Ok(FlowResult {
        name: f.name.clone(),
        mode: mode.to_string(),
        sent,
        delivered: received,
        lost: sent.saturating_sub(received),
        loss_ratio: 1.0 - received as f64 / sent.max(1) as f64,
        delay_mean_ms: mean,
        delay_p50_ms: p50,
        delay_p99_ms: p99,
        ..FlowResult::default()
    })
}

/// Runs one UDP probe flow: `count` datagrams of `size` bytes every
/// `interval`, each carrying its number and send time; the receiver notes
/// arrival, one-way delay (both ends share this machine's clock) and
/// duplicates.
fn probe_flow(
    lab: &Lab,
    mode: &str,
    i: usize,
    f: &LabFlow,
    origin: Instant,
    tail: Duration,
    stop: &AtomicBool,
) -> anyhow::Result<FlowResult> {
    let port = 9000 + i as u16;
    let rx = socket_in(
        &lab.host_ns(f.to),
        SocketAddrV4::new(Lab::host_addr(f.to), port),
    )?;
    let tx = socket_in(
        &lab.host_ns(f.from),
        SocketAddrV4::new(Lab::host_addr(f.from), 0),
    )?;
    // Bursts at benchmark rates must not overflow the receiver's socket.
    let _ = socket2::SockRef::from(&rx).set_recv_buffer_size(8 << 20);
    let dst = SocketAddrV4::new(Lab::host_addr(f.to), port);
    let (count, interval, size) = (f.count, f.interval, f.size);
    let receiver = std::thread::spawn(move || {
        let mut got = vec![None::<u64>; count as usize];
        let mut duplicates = 0u64;
        receive_until(&rx, origin + interval * count + tail, 12, |d| {
            let seq = u32::from_be_bytes(d[..4].try_into().unwrap_or_default()) as usize;
            let sent_us = u64::from_be_bytes(d[4..12].try_into().unwrap_or_default());
            let now_us = origin.elapsed().as_micros() as u64;
            match got.get_mut(seq) {
                Some(slot @ None) => *slot = Some(now_us.saturating_sub(sent_us)),
                Some(Some(_)) => duplicates += 1,
                None => {}
            }
        });
        (got, duplicates)
    });
    let mut payload = vec![0u8; size];
    let mut sent = 0u32;
    for seq in 0..count {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let due = origin + interval * seq;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        payload[..4].copy_from_slice(&seq.to_be_bytes());
        payload[4..12].copy_from_slice(&(origin.elapsed().as_micros() as u64).to_be_bytes());
        if tx.send_to(&payload, dst).is_ok() {
            sent += 1;
        }
    }
    let (got, duplicates) = receiver
        .join()
        .map_err(|_| anyhow!("receiver thread failed"))?;
    let mut delays: Vec<u64> = got.iter().flatten().copied().collect();
    let delivered = delays.len() as u64;
    let mut max_gap_us = 0u64;
    let mut last_ok: Option<usize> = None;
    for (s, d) in got.iter().enumerate() {
        if d.is_some() {
            if let Some(l) = last_ok {
                max_gap_us = max_gap_us.max(((s - l) as u64) * interval.as_micros() as u64);
            }
            last_ok = Some(s);
        }
    }
    let (mean, p50, p99) = braid_sim::delay_stats(&mut delays);
    Ok(FlowResult {
        name: f.name.clone(),
        mode: mode.to_string(),
        sent: sent as u64,
        delivered,
        duplicates,
        lost: sent as u64 - delivered.min(sent as u64),
        loss_ratio: if sent == 0 {
            0.0
        } else {
            1.0 - delivered as f64 / sent as f64
        },
        delay_mean_ms: mean,
        delay_p50_ms: p50,
        delay_p99_ms: p99,
        max_gap_ms: max_gap_us as f64 / 1000.0,
        ..FlowResult::default()
    })
}

// ------------------------------------------------------------------ commands

pub fn run_lab(args: LabArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        LabAction::Up { scenario, log } => {
            let mut lab = Lab::load(&scenario)?;
            lab.log = log;
            let mut built = build(&lab, &lab.variants[0])?;
            built.keep = true;
            println!(
                "lab {} is up: {} routers. Namespaces: ip netns list | grep braid-{}-. Control sockets and logs: {}. Tear down: braid lab down {}",
                lab.name,
                lab.routers.len(),
                lab.name,
                lab.dir().display(),
                scenario.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        LabAction::Down { scenario } => {
            let lab = Lab::load(&scenario)?;
            check_capabilities()?;
            teardown(&lab);
            println!("lab {} is down", lab.name);
            Ok(ExitCode::SUCCESS)
        }
        LabAction::Bench { scenario, json } => bench(&scenario, json),
        LabAction::Run {
            scenario,
            json,
            out: out_dir,
            log,
        } => {
            let mut lab = Lab::load(&scenario)?;
            lab.log = log;
            let stop = Arc::new(AtomicBool::new(false));
            for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                signal_hook::flag::register(sig, stop.clone())?;
            }
            let mut reports = Vec::new();
            for v in &lab.variants {
                reports.push(run_variant(&lab, v, &stop)?);
            }
            let doc = serde_json::json!({
                "lab": lab.name,
                "description": lab.description,
                "variants": reports,
            });
            if let Some(dir) = &out_dir {
                write_report(&lab, &reports, &doc, dir)?;
                eprintln!("report: {}", dir.join("report.html").display());
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                let mut out = std::io::stdout().lock();
                writeln!(out, "lab {} ({})", lab.name, lab.description)?;
                writeln!(
                    out,
                    "{:<16} {:<16} {:<10} {:>7} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8} {:>6} {:>8}",
                    "variant",
                    "flow",
                    "mode",
                    "sent",
                    "lost",
                    "dup",
                    "mean ms",
                    "p50 ms",
                    "p99 ms",
                    "gap ms",
                    "Mbit/s",
                    "retx",
                    "retx@ev"
                )?;
                for r in &reports {
                    for f in &r.flows {
                        writeln!(
                            out,
                            "{:<16} {:<16} {:<10} {:>7} {:>7} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>9.1} {:>8.2} {:>6} {:>8}",
                            r.variant,
                            f.name,
                            f.mode,
                            f.sent,
                            f.lost,
                            f.duplicates,
                            f.delay_mean_ms,
                            f.delay_p50_ms,
                            f.delay_p99_ms,
                            f.max_gap_ms,
                            f.goodput_mbps,
                            f.retransmits,
                            after_event(f)
                        )?;
                    }
                }
                for r in &reports {
                    if let Some(q) = r.queued_at_down {
                        writeln!(
                            out,
                            "{}: {q} packets were queued for the link when it went down (lost with it)",
                            r.variant
                        )?;
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Builds the lab for one variant, runs the flows (and the link events,
/// timed from the flows' start), collects every braid daemon's stats, and
/// tears down.
/// A TCP flow's retransmissions after the lab's first event, or "-".
fn after_event(f: &FlowResult) -> String {
    f.retransmits_after_event
        .map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// Writes report.json and a self-contained report.html: the flows' table
/// and bar charts of what was lost, the delay and (TCP) the goodput, per
/// variant and flow.
fn write_report(
    lab: &Lab,
    reports: &[VariantRun],
    doc: &serde_json::Value,
    dir: &Path,
) -> anyhow::Result<()> {
    use braid_sim::html;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(dir.join("report.json"), serde_json::to_string_pretty(doc)?)?;
    let label = |r: &VariantRun, f: &FlowResult| format!("{} / {}", r.variant, f.name);
    let rows: Vec<Vec<String>> = reports
        .iter()
        .flat_map(|r| {
            r.flows.iter().map(move |f| {
                vec![
                    r.variant.clone(),
                    f.name.clone(),
                    f.mode.clone(),
                    f.sent.to_string(),
                    f.lost.to_string(),
                    format!("{:.2}", f.delay_mean_ms),
                    format!("{:.2}", f.delay_p99_ms),
                    format!("{:.1}", f.max_gap_ms),
                    format!("{:.2}", f.goodput_mbps),
                    f.retransmits.to_string(),
                    after_event(f),
                ]
            })
        })
        .collect();
    let mut sections = vec![html::table(
        &[
            "variant",
            "flow",
            "mode",
            "sent",
            "lost",
            "mean delay ms",
            "p99 ms",
            "longest gap ms",
            "TCP Mbit/s",
            "TCP retx",
            "retx in 2 s after the first event",
        ],
        &rows,
    )];
    let bars = |value: &dyn Fn(&FlowResult) -> f64, udp: bool| -> Vec<(String, f64)> {
        reports
            .iter()
            .flat_map(|r| r.flows.iter().map(move |f| (r, f)))
            .filter(|(_, f)| (f.sent > 0) == udp)
            .map(|(r, f)| (label(r, f), value(f)))
            .collect()
    };
    for (title, unit, v, udp) in [
        (
            "Packets lost",
            "",
            &(|f: &FlowResult| f.lost as f64) as &dyn Fn(&FlowResult) -> f64,
            true,
        ),
        (
            "Mean one-way delay",
            "ms",
            &|f: &FlowResult| f.delay_mean_ms,
            true,
        ),
        (
            "Longest gap between delivered packets",
            "ms",
            &|f: &FlowResult| f.max_gap_ms,
            true,
        ),
        (
            "TCP goodput",
            "Mbit/s",
            &|f: &FlowResult| f.goodput_mbps,
            false,
        ),
        (
            "TCP retransmissions",
            "",
            &|f: &FlowResult| f.retransmits as f64,
            false,
        ),
    ] {
        let b = bars(v, udp);
        if !b.is_empty() {
            sections.push(format!(
                "<h2>{}</h2>{}",
                html::escape(title),
                html::bar_chart(title, unit, &b)
            ));
        }
    }
    let intro = format!(
        "{} routers, {} links; {}. Real daemons and kernel sockets in network namespaces (braid lab).",
        lab.routers.len(),
        lab.links.len(),
        html::escape(&lab.description)
    );
    std::fs::write(
        dir.join("report.html"),
        html::page(&format!("lab {}", lab.name), &intro, &sections),
    )?;
    Ok(())
}

/// One variant's results: the flows, and every braid daemon's `stats`.
#[derive(Debug, serde::Serialize)]
struct VariantRun {
    variant: String,
    mode: String,
    flows: Vec<FlowResult>,
    /// Packets the link's queues held when the first `down` event took
    /// it (lost with it: what waited below the binding point).
    #[serde(skip_serializing_if = "Option::is_none")]
    queued_at_down: Option<u64>,
    daemons: Vec<serde_json::Value>,
}

fn run_variant(lab: &Lab, v: &LabVariant, stop: &AtomicBool) -> anyhow::Result<VariantRun> {
    let started = Instant::now();
    eprintln!(
        "lab {} [{}]: building {} routers, {} links",
        lab.name,
        v.name,
        lab.routers.len(),
        lab.links.len()
    );
    let built = build(lab, v)?;
    eprintln!(
        "lab {} [{}]: converged in {:.1} s; running {} flows",
        lab.name,
        v.name,
        started.elapsed().as_secs_f64(),
        lab.flows.len()
    );
    let mode = match &v.software {
        Software::Braid { mode } => mode.clone(),
        Software::Babeld { hello } => format!("babeld {}s", hello.as_secs_f64()),
        Software::Kernel => "kernel".to_string(),
        Software::Mptcp => "mptcp".to_string(),
    };
    let origin = Instant::now() + Duration::from_millis(100);
    let mut queued_at_down = None;
    let results: Vec<anyhow::Result<FlowResult>> = std::thread::scope(|s| {
        let events = s.spawn(|| -> anyhow::Result<Option<u64>> {
            let mut resolved = BTreeMap::new();
            let mut first_down = None;
            for e in &lab.events {
                if let Some(wait) = (origin + e.at).checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let queued = apply_event(lab, e, &mut resolved)?;
                first_down = first_down.or(queued);
            }
            Ok(first_down)
        });
        let handles: Vec<_> = lab
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mode = &mode;
                s.spawn(move || match f.kind {
                    FlowKind::Iperf(t) => iperf_flow(lab, &v.software, mode, i, f, t, origin),
                    FlowKind::Urgent => urgent_flow(lab, mode, i, f, origin, stop),
                    FlowKind::Probe => {
                        probe_flow(lab, mode, i, f, origin, Duration::from_secs(2), stop)
                    }
                })
            })
            .collect();
        let mut out: Vec<anyhow::Result<FlowResult>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("flow thread failed")))
            })
            .collect();
        match events.join() {
            Ok(Ok(q)) => queued_at_down = q,
            Ok(Err(e)) => out.push(Err(e.context("applying a link event"))),
            Err(_) => out.push(Err(anyhow!("event thread failed"))),
        }
        out
    });
    let stats: Vec<serde_json::Value> = (0..lab.routers.len())
        .filter_map(|i| ask(lab, i, "stats")?.ok())
        .collect();
    drop(built);
    if stop.load(Ordering::Relaxed) {
        bail!("interrupted; the lab was torn down");
    }
    let flows = results.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    Ok(VariantRun {
        variant: v.name.clone(),
        mode,
        flows,
        queued_at_down,
        daemons: stats,
    })
}

/// Busy and total CPU time of the whole machine so far, in clock ticks.
fn cpu_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let v: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// One benchmark trial: `rate` packets/s of `size` bytes for one second.
/// Returns the loss ratio and the machine's busy CPU time per delivered
/// packet, in microseconds.
fn trial(
    lab: &Lab,
    flow: &LabFlow,
    size: usize,
    rate: u64,
    stop: &AtomicBool,
) -> anyhow::Result<(f64, f64)> {
    let f = LabFlow {
        count: rate as u32,
        interval: Duration::from_nanos(1_000_000_000 / rate),
        size,
        ..flow.clone()
    };
    let (busy0, _) = cpu_ticks();
    let r = probe_flow(
        lab,
        "",
        0,
        &f,
        Instant::now() + Duration::from_millis(50),
        Duration::from_millis(300),
        stop,
    )?;
    let (busy1, _) = cpu_ticks();
    let tick_us = 1e6 / 100.0; // USER_HZ
    let cpu_us = (busy1 - busy0) as f64 * tick_us / r.delivered.max(1) as f64;
    Ok((r.loss_ratio, cpu_us))
}

#[derive(Debug, serde::Serialize)]
struct BenchRow {
    variant: String,
    size: usize,
    max_pps: u64,
    cpu_us_per_packet: f64,
}

/// The highest rate with under 0.1% loss: doubling from 5,000 packets/s,
/// then four halvings of the interval between the last pass and the
/// first failure.
fn max_rate(
    lab: &Lab,
    flow: &LabFlow,
    size: usize,
    stop: &AtomicBool,
) -> anyhow::Result<(u64, f64)> {
    let ok = |loss: f64| loss < 0.001;
    let (mut lo, mut lo_cpu) = (0u64, 0.0);
    let mut rate = 5_000u64;
    let hi = loop {
        let (loss, cpu) = trial(lab, flow, size, rate, stop)?;
        eprintln!("  {size} B at {rate} pps: loss {:.3}%", loss * 100.0);
        if !ok(loss) || rate >= 1_600_000 {
            break rate;
        }
        (lo, lo_cpu) = (rate, cpu);
        rate *= 2;
    };
    let mut hi = hi;
    for _ in 0..4 {
        let mid = (lo + hi) / 2;
        if mid <= lo {
            break;
        }
        let (loss, cpu) = trial(lab, flow, size, mid, stop)?;
        eprintln!("  {size} B at {mid} pps: loss {:.3}%", loss * 100.0);
        if ok(loss) {
            (lo, lo_cpu) = (mid, cpu);
        } else {
            hi = mid;
        }
    }
    Ok((lo, lo_cpu))
}

/// `braid lab bench`: per variant, the forwarding rate, CPU per packet
/// and one-way latency between the first flow's hosts.
fn bench(scenario: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let lab = Lab::load(scenario)?;
    let flow = lab
        .flows
        .first()
        .ok_or_else(|| {
            anyhow!("a benchmark needs a [[flow]]: its ends are the sender and the receiver")
        })?
        .clone();
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let mut rows = Vec::new();
    let mut latency = Vec::new();
    for v in &lab.variants {
        eprintln!("lab {} [{}]: building", lab.name, v.name);
        let built = build(&lab, v)?;
        // Latency at a light load: 2,000 packets of 64 B at 1,000/s.
        let light = LabFlow {
            count: 2000,
            interval: Duration::from_millis(1),
            size: 64,
            ..flow.clone()
        };
        let r = probe_flow(
            &lab,
            "",
            0,
            &light,
            Instant::now() + Duration::from_millis(50),
            Duration::from_millis(300),
            &stop,
        )?;
        latency.push(serde_json::json!({
            "variant": v.name, "p50_ms": r.delay_p50_ms, "p99_ms": r.delay_p99_ms, "lost": r.lost,
        }));
        for size in [64, 1400] {
            let (pps, cpu) = max_rate(&lab, &flow, size, &stop)?;
            rows.push(BenchRow {
                variant: v.name.clone(),
                size,
                max_pps: pps,
                cpu_us_per_packet: cpu,
            });
        }
        drop(built);
        if stop.load(Ordering::Relaxed) {
            bail!("interrupted; the lab was torn down");
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "lab": lab.name, "rates": rows, "latency": latency })
            )?
        );
    } else {
        println!("lab {} ({})", lab.name, lab.description);
        println!(
            "{:<16} {:>6} {:>12} {:>16}",
            "variant", "bytes", "max pps", "CPU us/packet"
        );
        for r in &rows {
            println!(
                "{:<16} {:>6} {:>12} {:>16.2}",
                r.variant, r.size, r.max_pps, r.cpu_us_per_packet
            );
        }
        println!(
            "{:<16} {:>10} {:>10}   (64 B at 1,000 packets/s)",
            "variant", "p50 ms", "p99 ms"
        );
        for l in &latency {
            println!(
                "{:<16} {:>10.3} {:>10.3}",
                l["variant"].as_str().unwrap_or(""),
                l["p50_ms"].as_f64().unwrap_or(0.0),
                l["p99_ms"].as_f64().unwrap_or(0.0)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// An iperf3 test (real kernel TCP end to end, or iperf3's UDP test):
/// the server in the receiver's namespace, the client in the sender's for
/// `duration`. Goodput as the receiver counted it; for TCP,
/// retransmissions from the sender's kernel (its namespace's counter): in
/// all, and in the 2 s after the lab's first event (the counter read every
/// 100 ms while the client runs); for UDP, datagrams sent and lost.
/// `origin` is when the lab's events are timed from.
#[allow(clippy::too_many_arguments)]
fn iperf_flow(
    lab: &Lab,
    software: &Software,
    mode: &str,
    i: usize,
    f: &LabFlow,
    test: IperfFlow,
    origin: Instant,
) -> anyhow::Result<FlowResult> {
    let port = (5201 + i).to_string();
    let dst = Lab::host_addr(f.to).to_string();
    // Under MPTCP both iperf3s open MPTCP sockets (mptcpize, from the
    // Debian package mptcpd) and the client binds to its first path's
    // address; its endpoints add the other subflows.
    let mptcp = *software == Software::Mptcp;
    let wrap: &[&str] = if mptcp {
        &["mptcpize", "run", "iperf3"]
    } else {
        &["iperf3"]
    };
    let mut server = Command::new("ip")
        .args(["netns", "exec", &lab.host_ns(f.to)])
        .args(wrap)
        .args(["-s", "-B", &dst, "-p", &port, "--forceflush"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting iperf3 (Debian packages iperf3, and mptcpd for MPTCP)")?;
    // iperf3 says "Server listening" once it listens: wait (at most 5 s)
    // for that line, then run the client once. The server's output is
    // read to its end, so that it never blocks on a full pipe.
    let (tx, rx) = std::sync::mpsc::channel();
    if let Some(out) = server.stdout.take() {
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(out)).map_while(Result::ok)
            {
                if line.contains("Server listening") {
                    let _ = tx.send(());
                }
            }
        });
    }
    if rx.recv_timeout(Duration::from_secs(5)).is_err() {
        let _ = server.kill();
        let _ = server.wait();
        bail!(
            "iperf3 server did not start listening in {}",
            lab.host_ns(f.to)
        );
    }
    let secs = format!("{}", test.duration.as_secs_f64());
    // A ceiling is kept by the sender's kernel pacing the socket
    // (SO_MAX_PACING_RATE), not by iperf3 writing 128 KB blocks at line
    // rate when behind (`-b`): those bursts overflow the links' queues.
    // 0: no ceiling.
    let bitrate = test.bitrate.unwrap_or(0).to_string();
    let bind = Lab::subflow_addr(f.from, 0).to_string();
    let mut args = vec!["-c", &dst, "-p", &port, "-t", &secs, "-J"];
    let (udp_rate, udp_len) = (
        test.bitrate.unwrap_or(1_000_000).to_string(),
        f.size.to_string(),
    );
    if test.udp {
        args.extend(["-u", "-b", &udp_rate, "-l", &udp_len]);
    } else {
        args.extend(["--fq-rate", &bitrate, "-C", test.congestion.as_str()]);
    }
    if mptcp {
        args.extend(["-B", bind.as_str()]);
    }
    // Retransmissions from the sending host's kernel (every subflow of
    // an MPTCP connection included); one TCP flow per sending host keeps
    // the count the flow's own.
    let retrans_before = tcp_retransmissions(&lab.host_ns(f.from))?;
    // The counter around the first event: (when to read it, value).
    let mut marks: Vec<(Instant, Option<u64>)> = lab
        .events
        .first()
        .map(|e| {
            let at = origin + e.at;
            vec![(at, None), (at + Duration::from_secs(2), None)]
        })
        .unwrap_or_default();
    // The client is given its duration and 20 s more (a connection cut
    // by a link event can leave iperf3 unable to finish), then stopped.
    let deadline = Instant::now() + test.duration + Duration::from_secs(20);
    let out = Command::new("ip")
        .args(["netns", "exec", &lab.host_ns(f.from)])
        .args(wrap)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running iperf3")
        .and_then(|child| {
            let pid = child.id();
            let snmp = format!("/proc/{pid}/net/snmp");
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || tx.send(child.wait_with_output()));
            loop {
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(out) => break out.context("running iperf3"),
                    Err(_) if Instant::now() > deadline => {
                        let _ = nix::sys::signal::kill(
                            nix::unistd::Pid::from_raw(pid as i32),
                            nix::sys::signal::Signal::SIGKILL,
                        );
                        bail!("iperf3 did not finish by its deadline (duration + 20 s)")
                    }
                    Err(_) => {
                        let now = Instant::now();
                        for (at, value) in &mut marks {
                            if value.is_none() && now >= *at {
                                *value = std::fs::read_to_string(&snmp)
                                    .ok()
                                    .and_then(|t| retrans_segs(&t));
                            }
                        }
                    }
                }
            }
        });
    let _ = server.kill();
    let _ = server.wait();
    let out = out?;
    let retransmits = tcp_retransmissions(&lab.host_ns(f.from))?.saturating_sub(retrans_before);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("iperf3 output: {}", String::from_utf8_lossy(&out.stderr)))?;
    if let Some(e) = doc.get("error") {
        bail!("iperf3: {e}");
    }
    let end = &doc["end"];
    if test.udp {
        // The receiver's count, as the server reported it back.
        let sum = &end["sum"];
        let sent = sum["packets"].as_u64().unwrap_or(0);
        let lost = sum["lost_packets"].as_u64().unwrap_or(0).min(sent);
        return Ok(FlowResult {
            name: f.name.clone(),
            mode: mode.to_string(),
            sent,
            delivered: sent - lost,
            lost,
            loss_ratio: lost as f64 / sent.max(1) as f64,
            goodput_mbps: sum["bits_per_second"].as_f64().unwrap_or(0.0) / 1e6
                * (1.0 - lost as f64 / sent.max(1) as f64),
            ..FlowResult::default()
        });
    }
    let retransmits_after_event = match marks.as_slice() {
        [(_, Some(a)), (_, Some(b))] => Some(b.saturating_sub(*a)),
        _ => None,
    };
    Ok(FlowResult {
        name: f.name.clone(),
        mode: mode.to_string(),
        goodput_mbps: end["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap_or(0.0)
            / 1e6,
        retransmits,
        retransmits_after_event,
        ..FlowResult::default()
    })
}

/// The kernel's count of retransmitted TCP segments in namespace `ns`
/// (`TcpRetransSegs`, /proc/net/snmp).
fn tcp_retransmissions(ns: &str) -> anyhow::Result<u64> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat", "/proc/net/snmp"])
        .output()
        .context("reading /proc/net/snmp")?;
    retrans_segs(&String::from_utf8_lossy(&out.stdout))
        .ok_or_else(|| anyhow!("no Tcp RetransSegs in {ns}'s /proc/net/snmp"))
}

/// `RetransSegs` from the text of /proc/net/snmp.
fn retrans_segs(snmp: &str) -> Option<u64> {
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (tcp.next()?, tcp.next()?);
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(name, _)| *name == "RetransSegs")
        .and_then(|(_, value)| value.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "name = \"t\"\n[[router]]\nname = \"a\"\nhost = true\n[[router]]\nname = \"b\"\nhost = true\n[[link]]\na = \"a\"\nb = \"b\"\nloss = 0.05\nburst = 3\ndelay = \"10ms\"\n[[flow]]\nfrom = \"a\"\nto = \"b\"\n[[event]]\nat = \"1s\"\nflow = \"a->b\"\naction = \"blackhole\"\n[[variant]]\nname = \"k\"\nsoftware = \"kernel\"\n";

    #[test]
    fn a_good_lab_file_reads_with_its_defaults() {
        let lab = Lab::parse("good.toml", GOOD).unwrap();
        assert_eq!(lab.routers.len(), 2);
        assert_eq!(lab.links[0].delay, Duration::from_millis(10));
        assert_eq!((lab.flows[0].count, lab.flows[0].size), (500, 160));
        assert_eq!(lab.events[0].target, EventTarget::FirstHopOf(0));
        assert_eq!(lab.variants[0].software, Software::Kernel);
        assert_eq!(lab.ns(1), "braid-t-b");
    }

    #[test]
    fn bad_lab_files_are_refused_with_line_and_field() {
        let cases = [
            (
                GOOD.replace("name = \"t\"", "name = \"has space\""),
                1,
                "name",
            ),
            (
                GOOD.replace("loss = 0.05", "loss = 1.5"),
                11,
                "link[0].loss",
            ),
            (
                GOOD.replace("b = \"b\"\nloss", "b = \"zz\"\nloss"),
                10,
                "link[0].b",
            ),
            (
                GOOD.replace("to = \"b\"", "to = \"b\"\ncount = 0"),
                17,
                "flow[0].count",
            ),
            (
                GOOD.replace("action = \"blackhole\"", "action = \"explode\""),
                20,
                "event[0].action",
            ),
            (
                GOOD.replace("software = \"kernel\"", "software = \"ospf\""),
                23,
                "variant[0].software",
            ),
            (
                GOOD.replace("delay = \"10ms\"", "delay = \"soon\""),
                13,
                "link[0].delay",
            ),
            (GOOD.replace("[[flow]]", "[[flw]]"), 14, "flw"),
        ];
        for (text, line, field) in cases {
            let e = Lab::parse("bad.toml", &text).unwrap_err();
            assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
        }
    }
}
