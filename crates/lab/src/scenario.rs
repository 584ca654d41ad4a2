//! Lab scenario files: the schema (`[[router]]`, `[[link]]`, `[[flow]]`,
//! `[[event]]`, `[[variant]]`), their checks (a bad file is refused with
//! `FILE:LINE: FIELD: problem`), and the names and addresses a checked lab
//! derives from them. Addresses (all from the benchmarking range
//! 198.18.0.0/15): router i (from 1) serves 198.18.i.0/24, its host is
//! 198.18.i.2 behind 198.18.i.1; link j (from 0) is 198.19.j.1/24 -
//! 198.19.j.2/24.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use braid_conf::{LocatedError, Source, Spanned};
use serde::Deserialize;

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
    auth: Option<bool>,
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
    #[serde(default, rename = "segment")]
    segments: Vec<RawSegment>,
    #[serde(default, rename = "roam")]
    roams: Vec<RawRoam>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSegment {
    name: Spanned<String>,
    access_points: Vec<Spanned<String>>,
    clients: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoam {
    client: Spanned<String>,
    from: Spanned<String>,
    to: Spanned<String>,
    at: Spanned<String>,
    duration: Spanned<String>,
    overlap: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEvent {
    at: Spanned<String>,
    a: Option<Spanned<String>>,
    b: Option<Spanned<String>>,
    flow: Option<Spanned<String>>,
    router: Option<Spanned<String>>,
    action: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: Spanned<String>,
    software: Option<Spanned<String>>,
    mode: Option<Spanned<String>>,
    hello: Option<Spanned<String>>,
    dead: Option<Spanned<String>>,
    bfd: Option<Spanned<String>>,
    bfd_multiplier: Option<Spanned<u8>>,
    datapath: Option<Spanned<String>>,
    late_binding: Option<usize>,
    kernel_routers: Option<Vec<Spanned<String>>>,
    kernel_delivery: Option<Spanned<String>>,
    client_margin: Option<u8>,
    lan_encode: Option<bool>,
    probe_interval: Option<Spanned<String>>,
    dead_after: Option<u32>,
    reorder: Option<bool>,
    reorder_max_wait: Option<Spanned<String>>,
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
    start: Option<Spanned<String>>,
    ipv6: Option<Spanned<bool>>,
    dscp: Option<Spanned<u8>>,
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
    /// Shared media (a radio's range): access points and clients on one
    /// L2 segment.
    pub segments: Vec<Segment>,
    /// Unmodified clients (a plain Linux stack in a namespace of its own,
    /// no routing software); flows name them as ends.
    pub clients: Vec<Client>,
    /// Clients moving from one access point to another (expanded into
    /// `events` on the access points' ports).
    pub roams: Vec<Roam>,
    /// The braid daemons' log level (not part of the file: `--log`).
    pub log: DaemonLog,
    /// Keep the lab's directory (logs, configs) after tearing down (not
    /// part of the file: `--keep`).
    pub keep: bool,
    /// The braid daemons sign and check their control messages with the
    /// lab's key 1 (`auth = false` in the file: unauthenticated).
    pub auth: bool,
}

/// A braid daemon's log level, as its config's `log` field spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DaemonLog {
    Error,
    #[default]
    Warn,
    Info,
    Debug,
    Trace,
}

impl std::str::FromStr for DaemonLog {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "error" => DaemonLog::Error,
            "warn" => DaemonLog::Warn,
            "info" => DaemonLog::Info,
            "debug" => DaemonLog::Debug,
            "trace" => DaemonLog::Trace,
            other => {
                return Err(format!(
                    "\"{other}\" is not error, warn, info, debug or trace"
                ))
            }
        })
    }
}

impl DaemonLog {
    /// The level as the daemon's config spells it.
    pub fn as_str(self) -> &'static str {
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
        /// Where each router's data path runs.
        datapath: BraidDatapath,
    },
    /// Plain Linux forwarding along static shortest-path routes: the
    /// physical limit of this machine, for benchmarks.
    Kernel,
    /// babeld (the Debian package) with this hello interval.
    Babeld { hello: Duration },
    /// FRR's OSPF (and BFD) as WISPs run it (`routing/frr.rs`).
    Ospf(crate::routing::frr::Ospf),
    /// Linux MPTCP at the ends over kernel static routes: every TCP
    /// flow's sender has one address per disjoint path, pinned to that
    /// path by policy routes, and one MPTCP subflow per address (iperf3
    /// under mptcpize). UDP flows take the static routes.
    Mptcp,
}

/// Where the braid routers' data path runs in a variant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BraidDatapath {
    /// Routers (by index) whose daemons run `datapath = "kernel"`; the
    /// others run `datapath = "user"` (the lab's default: what the user
    /// path does is what most tests check).
    pub kernel: Vec<usize>,
    /// The daemons' `late_binding` (their default when `None`); 0 lets
    /// the kernel encode at the ingress.
    pub late_binding: Option<usize>,
    /// The kernel routers' `kernel_delivery` ("stack" or "route"; their
    /// default when `None`).
    pub kernel_delivery: Option<&'static str>,
    /// The access points' `client_margin` (their default when `None`; 0:
    /// only the best access point serves a client).
    pub client_margin: Option<u8>,
    /// The kernel routers encode at their host's port (`lan_interfaces`).
    pub lan_encode: bool,
    /// This variant's small-probe interval and `dead_after` (the lab's
    /// when `None`).
    pub probe_interval: Option<Duration>,
    pub dead_after: Option<u32>,
    /// The daemons' `reorder` and `reorder_max_wait` (their defaults when
    /// `None`).
    pub reorder: Option<bool>,
    pub reorder_max_wait: Option<Duration>,
}

impl BraidDatapath {
    /// The `datapath` field for router `i`'s config.
    pub fn of(&self, i: usize) -> &'static str {
        if self.kernel.contains(&i) {
            "kernel"
        } else {
            "user"
        }
    }
}

#[derive(Debug, Clone)]
pub struct LabVariant {
    pub name: String,
    pub software: Software,
}

/// A shared L2 segment (in the lab: a bridge that floods every frame to
/// every port, as a radio reaches everyone in range).
#[derive(Debug, Clone)]
pub struct Segment {
    pub name: String,
    /// The routers serving it as access points, in the file's order.
    pub access_points: Vec<usize>,
}

/// An unmodified client on a segment.
#[derive(Debug, Clone)]
pub struct Client {
    pub name: String,
    pub segment: usize,
}

/// A client moving from access point `from` to `to`, from `at` (after
/// the flows start) for `duration`: first the loss on `to`'s port ramps
/// down from 100% (out of range until then) to 0, then both are heard
/// without loss for `overlap`, then the loss on `from`'s port ramps up
/// from 0 to 100%, where it stays (a full cut). Each ramp takes half of
/// what `overlap` leaves of `duration`.
#[derive(Debug, Clone)]
pub struct Roam {
    pub client: usize,
    pub from: usize,
    pub to: usize,
    pub at: Duration,
    pub duration: Duration,
    pub overlap: Duration,
}

/// How often a roam's losses step.
pub const ROAM_STEP: Duration = Duration::from_millis(250);

impl Roam {
    /// The port losses and the re-homing that carry it out, on segment
    /// `segment`: every [`ROAM_STEP`] of each ramp a new loss; at the end
    /// `from` is cut and a plain network re-homes the client.
    fn events(&self, segment: usize) -> Vec<LabEvent> {
        let ramp = (self.duration - self.overlap) / 2;
        let steps = (ramp.as_millis() / ROAM_STEP.as_millis()).max(1) as u32;
        let mut out = Vec::new();
        let mut step = |start: Duration, ap: usize, loss: &dyn Fn(u32) -> u16| {
            for k in 0..=steps {
                out.push(LabEvent {
                    at: start + ramp * k / steps,
                    target: EventTarget::Port { segment, ap },
                    action: LinkAction::Loss(loss(k)),
                });
            }
        };
        step(self.at, self.to, &|k| (1000 - 1000 * k / steps) as u16);
        step(self.at + ramp + self.overlap, self.from, &|k| {
            (1000 * k / steps) as u16
        });
        out.push(LabEvent {
            at: self.at + self.duration,
            target: EventTarget::Client(self.client),
            action: LinkAction::Rehome(self.to),
        });
        out
    }
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
    /// An access point's port on its segment loses this share (per
    /// mille) of the frames each way (a roaming client's distance).
    Loss(u16),
    /// Plain routing: the client's routes move to this access point (the
    /// re-homing a plain network does when the old one fails).
    Rehome(usize),
    /// A braid router's `[auth]` keys become the lab's keys with these ids
    /// (the first signs), and its daemon reloads (`keys 1,2`).
    Keys {
        first: u8,
        second: Option<u8>,
    },
    /// A braid router's daemon is killed (SIGKILL) and started again at
    /// once (`crash`).
    Crash,
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
    /// Access point `ap`'s port on segment `segment`.
    Port {
        segment: usize,
        ap: usize,
    },
    /// A client (its routes, for `Rehome`).
    Client(usize),
    /// A router (`None`: every router), for `Keys`.
    Router(Option<usize>),
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
    /// When it starts, after the flows' start (the lab's events are timed
    /// from there too).
    pub start: Duration,
    /// Over IPv6 between the ends' IPv6 addresses (udp and tcp flows).
    pub ipv6: bool,
    /// A udp flow's DSCP (0-63), in its datagrams' TOS or traffic class.
    pub dscp: u8,
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
    /// A stranger on the link between `from` and `to` (two routers)
    /// floods `to`'s braid port for this long: garbage, forged control
    /// messages, replays of what it heard, data it has no right to send.
    Flood(Duration),
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
    /// The name Linux gives this congestion control.
    pub fn as_str(self) -> &'static str {
        match self {
            Congestion::Cubic => "cubic",
            Congestion::Reno => "reno",
            Congestion::Bbr => "bbr",
        }
    }
}

const MAX_ROUTERS: usize = 250;

/// Rounds of an urgent flow.
pub const URGENT_ROUNDS: u32 = 10;
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
        let mut segments = Vec::new();
        let mut clients: Vec<Client> = Vec::new();
        if raw.segments.len() > 50 {
            return Err(src.err(None, "segment", "at most 50 segments"));
        }
        for (s_ix, seg) in raw.segments.iter().enumerate() {
            let field = |f: &str| format!("segment[{s_ix}].{f}");
            let n = seg.name.get_ref();
            if n.is_empty() || n.len() > 8 || !n.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(src.err(
                    Some(seg.name.span()),
                    &field("name"),
                    "1-8 letters or digits",
                ));
            }
            let mut aps = Vec::new();
            for a in &seg.access_points {
                let r = find(a, &field("access_points"))?;
                if aps.contains(&r) {
                    return Err(src.err(Some(a.span()), &field("access_points"), "listed twice"));
                }
                aps.push(r);
            }
            if aps.is_empty() || aps.len() > 50 {
                return Err(src.err(
                    Some(seg.name.span()),
                    &field("access_points"),
                    "1 to 50 access points",
                ));
            }
            if seg.clients.is_empty() || seg.clients.len() > 100 {
                return Err(src.err(Some(seg.name.span()), &field("clients"), "1 to 100 clients"));
            }
            for c in &seg.clients {
                let cn = c.get_ref();
                let taken = index.contains_key(cn)
                    || clients.iter().any(|x| &x.name == cn)
                    || routers.iter().any(|r| format!("{}h", r.name) == *cn);
                if cn.is_empty() || cn.len() > 8 || !cn.chars().all(|x| x.is_ascii_alphanumeric()) {
                    return Err(src.err(
                        Some(c.span()),
                        &field("clients"),
                        "1-8 letters or digits",
                    ));
                }
                if taken {
                    return Err(src.err(
                        Some(c.span()),
                        &field("clients"),
                        format!("\"{cn}\" is already the name of a router, a host or a client"),
                    ));
                }
                clients.push(Client {
                    name: cn.clone(),
                    segment: s_ix,
                });
            }
            segments.push(Segment {
                name: n.clone(),
                access_points: aps,
            });
        }
        let router_count = routers.len();
        // A flow's end: a router's host, or a client (numbered after the
        // routers).
        let find_end = |v: &Spanned<String>, field: &str| {
            index
                .get(v.get_ref())
                .copied()
                .or_else(|| {
                    clients
                        .iter()
                        .position(|c| &c.name == v.get_ref())
                        .map(|c| router_count + c)
                })
                .ok_or_else(|| {
                    src.err(
                        Some(v.span()),
                        field,
                        format!("no router or client named \"{}\"", v.get_ref()),
                    )
                })
        };
        let mut flows = Vec::new();
        for (i, f) in raw.flows.iter().enumerate() {
            let (from, to) = (
                find_end(&f.from, &format!("flow[{i}].from"))?,
                find_end(&f.to, &format!("flow[{i}].to"))?,
            );
            let flood = f.kind.as_ref().is_some_and(|k| k.get_ref() == "flood");
            if flood {
                let joined = links
                    .iter()
                    .any(|l| (l.a, l.b) == (from, to) || (l.a, l.b) == (to, from));
                if from >= router_count || to >= router_count || !joined {
                    return Err(src.err(
                        Some(f.to.span()),
                        &format!("flow[{i}]"),
                        "a flood runs on the link between two routers (from: where the stranger stands, to: the router flooded)",
                    ));
                }
            }
            for (end, v) in [(from, &f.from), (to, &f.to)] {
                if flood {
                    break;
                }
                if end < router_count && !routers[end].host {
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
            // A flow's `duration`: `default` when absent, at most `max`.
            let duration = |default: Duration, max: Duration, bounds: &str| {
                let d = src.duration(&f.duration, &format!("flow[{i}].duration"), default)?;
                if d.is_zero() || d > max {
                    return Err(src.err(
                        f.duration.as_ref().map(|d| d.span()),
                        &format!("flow[{i}].duration"),
                        bounds,
                    ));
                }
                Ok(d)
            };
            let kind = match f.kind.as_ref().map(|k| k.get_ref().as_str()) {
                None | Some("udp") => FlowKind::Probe,
                Some("urgent") => FlowKind::Urgent,
                Some("flood") => FlowKind::Flood(duration(
                    Duration::from_secs(5),
                    Duration::from_secs(60),
                    "a flood lasts 1 s to 60 s",
                )?),
                Some(kind @ ("tcp" | "iperf3-udp")) => {
                    let d = duration(
                        Duration::from_secs(10),
                        Duration::from_secs(600),
                        "1 s to 10 minutes",
                    )?;
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
                        format!("\"{other}\" is not udp, tcp, iperf3-udp, urgent or flood"),
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
            let start = src.duration(&f.start, &format!("flow[{i}].start"), Duration::ZERO)?;
            if start > Duration::from_secs(600) {
                return Err(src.err(
                    f.start.as_ref().map(|s| s.span()),
                    &format!("flow[{i}].start"),
                    "at most 10 minutes",
                ));
            }
            // An iperf flow's span, with the 20 s iperf3 may take to finish.
            let span = |k: &FlowKind, start: Duration| match k {
                FlowKind::Iperf(t) => Some((start, start + t.duration + Duration::from_secs(20))),
                _ => None,
            };
            if let Some((a0, a1)) = span(&kind, start) {
                let overlaps = flows.iter().any(|o: &LabFlow| {
                    o.from == from
                        && span(&o.kind, o.start).is_some_and(|(b0, b1)| a0 < b1 && b0 < a1)
                });
                if overlaps {
                    return Err(src.err(
                        Some(f.from.span()),
                        &format!("flow[{i}].from"),
                        "one tcp or iperf3-udp flow at a time per sending host (retransmissions are its kernel's count): start the next one 20 s after the last one's duration",
                    ));
                }
            }
            let ipv6 = f.ipv6.as_ref().is_some_and(|v| *v.get_ref());
            if ipv6 && kind == FlowKind::Urgent {
                return Err(src.err(
                    f.ipv6.as_ref().map(|v| v.span()),
                    &format!("flow[{i}].ipv6"),
                    "udp, tcp and iperf3-udp flows only (urgent marks IPv4's DSCP)",
                ));
            }
            let dscp = match &f.dscp {
                None => 0,
                Some(d) if *d.get_ref() > 63 || kind != FlowKind::Probe => {
                    return Err(src.err(
                        Some(d.span()),
                        &format!("flow[{i}].dscp"),
                        "a udp flow's DSCP, 0-63 (46: EF, what VoIP is marked)",
                    ))
                }
                Some(d) => *d.get_ref(),
            };
            flows.push(LabFlow {
                ipv6,
                dscp,
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
                start,
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
            let at = src.duration(
                &Some(e.at.clone()),
                &format!("event[{i}].at"),
                Duration::ZERO,
            )?;
            if let Some(r) = &e.router {
                let target = if r.get_ref() == "*" {
                    EventTarget::Router(None)
                } else {
                    EventTarget::Router(Some(find(r, &format!("event[{i}].router"))?))
                };
                let words: Vec<&str> = e.action.get_ref().split_whitespace().collect();
                let ids: Option<Vec<u8>> = match words.as_slice() {
                    ["keys", list] => list.split(',').map(|x| x.parse().ok()).collect(),
                    _ => None,
                };
                let action = match ids.as_deref() {
                    _ if e.action.get_ref() == "crash" => LinkAction::Crash,
                    Some([first]) => LinkAction::Keys {
                        first: *first,
                        second: None,
                    },
                    Some([first, second]) if first != second => LinkAction::Keys {
                        first: *first,
                        second: Some(*second),
                    },
                    _ => {
                        return Err(src.err(
                            Some(e.action.span()),
                            &format!("event[{i}].action"),
                            "a router's event is \"crash\" (kill -9, start again), \"keys ID\" or \"keys ID,ID\" (two different key ids, 0-255; the first signs)",
                        ))
                    }
                };
                if e.a.is_some() || e.b.is_some() || e.flow.is_some() {
                    return Err(src.err(
                        Some(r.span()),
                        &format!("event[{i}]"),
                        "name a router, a link or a flow, not several",
                    ));
                }
                events.push(LabEvent { at, target, action });
                continue;
            }
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
            events.push(LabEvent { at, target, action });
        }
        let mut roams = Vec::new();
        for (i, r) in raw.roams.iter().enumerate() {
            let field = |f: &str| format!("roam[{i}].{f}");
            let client = clients
                .iter()
                .position(|c| &c.name == r.client.get_ref())
                .ok_or_else(|| {
                    src.err(
                        Some(r.client.span()),
                        &field("client"),
                        format!("no client named \"{}\"", r.client.get_ref()),
                    )
                })?;
            let segment = clients[client].segment;
            let ap = |v: &Spanned<String>, f: &str| {
                let at = find(v, &field(f))?;
                if segments[segment].access_points.contains(&at) {
                    Ok(at)
                } else {
                    Err(src.err(
                        Some(v.span()),
                        &field(f),
                        format!(
                            "\"{}\" is not an access point of segment {}",
                            v.get_ref(),
                            segments[segment].name
                        ),
                    ))
                }
            };
            let (from, to) = (ap(&r.from, "from")?, ap(&r.to, "to")?);
            if from == to {
                return Err(src.err(
                    Some(r.to.span()),
                    &field("to"),
                    "a roam goes to another access point",
                ));
            }
            let at = src.duration(&Some(r.at.clone()), &field("at"), Duration::ZERO)?;
            let duration = src.duration(
                &Some(r.duration.clone()),
                &field("duration"),
                Duration::ZERO,
            )?;
            if duration < ROAM_STEP || duration > Duration::from_secs(300) {
                return Err(src.err(
                    Some(r.duration.span()),
                    &field("duration"),
                    "250 ms to 5 minutes",
                ));
            }
            let overlap = src.duration(&r.overlap, &field("overlap"), Duration::ZERO)?;
            if overlap >= duration {
                return Err(src.err(
                    r.overlap.as_ref().map(|v| v.span()),
                    &field("overlap"),
                    "shorter than the roam's duration",
                ));
            }
            let roam = Roam {
                client,
                from,
                to,
                at,
                duration,
                overlap,
            };
            events.extend(roam.events(segment));
            roams.push(roam);
        }
        // Events in time order (a roam's steps among the others).
        events.sort_by_key(|e| e.at);
        let mut variants = Vec::new();
        for (i, v) in raw.variants.iter().enumerate() {
            let software = match v.software.as_ref().map(|s| s.get_ref().as_str()) {
                None | Some("braid") => Software::Braid {
                    mode: match &v.mode {
                        None => mode.clone(),
                        Some(_) => mode_of(&v.mode, &format!("variant[{i}].mode"))?,
                    },
                    datapath: {
                        let all: Vec<usize> = (0..routers.len()).collect();
                        let kernel = match v
                            .datapath
                            .as_ref()
                            .map(|d| (d.get_ref().as_str(), d.span()))
                        {
                            None | Some(("user", _)) => Vec::new(),
                            Some(("kernel", _)) => match &v.kernel_routers {
                                None => all,
                                Some(names) => names
                                    .iter()
                                    .map(|n| {
                                        routers
                                            .iter()
                                            .position(|r| r.name == *n.get_ref())
                                            .ok_or_else(|| {
                                                src.err(
                                                    Some(n.span()),
                                                    &format!("variant[{i}].kernel_routers"),
                                                    format!("no router named \"{}\"", n.get_ref()),
                                                )
                                            })
                                    })
                                    .collect::<Result<_, _>>()?,
                            },
                            Some((other, span)) => {
                                return Err(src.err(
                                    Some(span),
                                    &format!("variant[{i}].datapath"),
                                    format!("\"{other}\" is not user or kernel"),
                                ))
                            }
                        };
                        if v.late_binding.is_some_and(|l| l > 64) {
                            return Err(src.err(
                                None,
                                &format!("variant[{i}].late_binding"),
                                "0 (bind at once) to 64 datagrams per next hop",
                            ));
                        }
                        let kernel_delivery = match v
                            .kernel_delivery
                            .as_ref()
                            .map(|d| (d.get_ref().as_str(), d.span()))
                        {
                            None => None,
                            Some(("stack", _)) => Some("stack"),
                            Some(("route", _)) => Some("route"),
                            Some((other, span)) => {
                                return Err(src.err(
                                    Some(span),
                                    &format!("variant[{i}].kernel_delivery"),
                                    format!("\"{other}\" is not stack or route"),
                                ))
                            }
                        };
                        BraidDatapath {
                            kernel,
                            late_binding: v.late_binding,
                            kernel_delivery,
                            client_margin: v.client_margin,
                            lan_encode: v.lan_encode.unwrap_or(false),
                            probe_interval: v
                                .probe_interval
                                .as_ref()
                                .map(|_| {
                                    src.duration(
                                        &v.probe_interval,
                                        &format!("variant[{i}].probe_interval"),
                                        Duration::ZERO,
                                    )
                                })
                                .transpose()?,
                            dead_after: v.dead_after,
                            reorder: v.reorder,
                            reorder_max_wait: v
                                .reorder_max_wait
                                .as_ref()
                                .map(|_| {
                                    src.duration(
                                        &v.reorder_max_wait,
                                        &format!("variant[{i}].reorder_max_wait"),
                                        Duration::ZERO,
                                    )
                                })
                                .transpose()?,
                        }
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
                Some(kind @ ("ospf" | "ospf-bfd")) => {
                    let field = |f: &str| format!("variant[{i}].{f}");
                    let hello = src.duration(&v.hello, &field("hello"), Duration::from_secs(1))?;
                    let dead = src.duration(&v.dead, &field("dead"), hello * 4)?;
                    if hello < Duration::from_secs(1) || dead < hello {
                        return Err(src.err(
                            v.hello.as_ref().map(|h| h.span()),
                            &field("hello"),
                            "OSPF's hello is whole seconds (at least 1 s) and its dead interval at least the hello",
                        ));
                    }
                    let bfd = (kind == "ospf-bfd")
                        .then(|| {
                            let every =
                                src.duration(&v.bfd, &field("bfd"), Duration::from_millis(50))?;
                            let mult = v.bfd_multiplier.as_ref().map_or(3, |m| *m.get_ref());
                            if every < Duration::from_millis(10) || !(2..=255).contains(&mult) {
                                return Err(src.err(
                                    v.bfd.as_ref().map(|b| b.span()),
                                    &field("bfd"),
                                    "BFD's interval is at least 10 ms and its multiplier 2-255",
                                ));
                            }
                            Ok((every, mult))
                        })
                        .transpose()?;
                    Software::Ospf(crate::routing::frr::Ospf { hello, dead, bfd })
                }
                Some(other) => {
                    return Err(src.err(
                        v.software.as_ref().map(|s| s.span()),
                        &format!("variant[{i}].software"),
                        format!(
                            "\"{other}\" is not braid, babeld, ospf, ospf-bfd, kernel or mptcp"
                        ),
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
                software: Software::Braid {
                    mode: mode.clone(),
                    datapath: BraidDatapath::default(),
                },
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
            keep: false,
            auth: raw.auth.unwrap_or(true),
            routers,
            links,
            flows,
            events,
            variants,
            segments,
            clients,
            roams,
        })
    }

    /// Reads and checks a lab file.
    pub fn load(path: &Path) -> anyhow::Result<Lab> {
        let text = braid_conf::read_text(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Ok(Lab::parse(&path.display().to_string(), &text)?)
    }

    /// Router `router`'s network namespace.
    pub fn ns(&self, router: usize) -> String {
        format!("braid-{}-{}", self.name, self.routers[router].name)
    }

    /// The namespace of the end host behind router `router`.
    pub fn host_ns(&self, router: usize) -> String {
        format!("braid-{}-{}h", self.name, self.routers[router].name)
    }

    /// Whether flow end `end` is a client (its index among the clients).
    pub fn client_of(&self, end: usize) -> Option<usize> {
        end.checked_sub(self.routers.len())
    }

    /// The namespace a flow end's sockets live in: a router's host, or a
    /// client.
    pub fn end_ns(&self, end: usize) -> String {
        match self.client_of(end) {
            Some(c) => self.client_ns(c),
            None => self.host_ns(end),
        }
    }

    /// A flow end's address.
    pub fn end_addr(&self, end: usize) -> Ipv4Addr {
        match self.client_of(end) {
            Some(c) => self.client_addr(c),
            None => Self::host_addr(end),
        }
    }

    /// A flow end's address for flow `f` (IPv6 when it says so).
    pub fn flow_addr(&self, f: &LabFlow, end: usize) -> IpAddr {
        match (f.ipv6, self.client_of(end)) {
            (false, _) => IpAddr::V4(self.end_addr(end)),
            (true, Some(c)) => IpAddr::V6(self.client_addr6(c)),
            (true, None) => IpAddr::V6(Self::host_addr6(end)),
        }
    }

    /// Whether any flow runs over IPv6: then every end and router gets
    /// IPv6 addresses in 2001:2::/48 (RFC 5180's benchmarking range), the
    /// access points advertise their segment's /64 and clients take an
    /// address in it by SLAAC.
    pub fn ipv6(&self) -> bool {
        self.flows.iter().any(|f| f.ipv6)
    }

    /// The lab's IPv6 range, routed into the mesh at every router.
    pub const IPV6_RANGE: &'static str = "2001:2::/48";

    /// The address of the host behind router `router`: 2001:2:0:(router+1)::2.
    pub fn host_addr6(router: usize) -> Ipv6Addr {
        Ipv6Addr::new(0x2001, 2, 0, router as u16 + 1, 0, 0, 0, 2)
    }

    /// Router `router`'s address on its host's /64 (the host's gateway).
    pub fn gateway_addr6(router: usize) -> Ipv6Addr {
        Ipv6Addr::new(0x2001, 2, 0, router as u16 + 1, 0, 0, 0, 1)
    }

    /// Segment `s`'s /64: 2001:2:0:(200+s)::/64.
    pub fn segment_net6(s: usize) -> Ipv6Addr {
        Ipv6Addr::new(0x2001, 2, 0, 200 + s as u16, 0, 0, 0, 0)
    }

    /// Access point `ap`'s own IPv6 address on segment `s`.
    pub fn access_addr6(&self, s: usize, ap: usize) -> Ipv6Addr {
        let v4 = self.access_addr(s, ap).octets();
        Ipv6Addr::new(0x2001, 2, 0, 200 + s as u16, 0, 0, 0, v4[3] as u16)
    }

    /// Client `c`'s link address: 02:00:00:00:(s):(k), k-th client of
    /// segment s (set by the lab, so that its SLAAC address is known).
    pub fn client_mac(&self, c: usize) -> [u8; 6] {
        let s = self.clients[c].segment;
        let k = self.clients[..c].iter().filter(|x| x.segment == s).count();
        [2, 0, 0, 0, s as u8, k as u8]
    }

    /// Client `c`'s IPv6 address: the one it takes by SLAAC (modified
    /// EUI-64 of its link address) in its segment's /64.
    pub fn client_addr6(&self, c: usize) -> Ipv6Addr {
        let m = self.client_mac(c);
        let mut o = Self::segment_net6(self.clients[c].segment).octets();
        o[8..].copy_from_slice(&[m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]]);
        Ipv6Addr::from(o)
    }

    /// A flow end's name (a router's, or a client's).
    pub fn end_name(&self, end: usize) -> &str {
        match self.client_of(end) {
            Some(c) => &self.clients[c].name,
            None => &self.routers[end].name,
        }
    }

    /// Client `c`'s namespace.
    pub fn client_ns(&self, c: usize) -> String {
        format!("braid-{}-{}", self.name, self.clients[c].name)
    }

    /// Client `c`'s address: 198.18.(200+s).(100+k) for the k-th client
    /// of segment s.
    pub fn client_addr(&self, c: usize) -> Ipv4Addr {
        let s = self.clients[c].segment;
        let k = self.clients[..c].iter().filter(|x| x.segment == s).count();
        Ipv4Addr::new(198, 18, 200 + s as u8, 100 + k as u8)
    }

    /// Segment `s`'s subnet: 198.18.(200+s).0/24.
    pub fn segment_net(s: usize) -> (Ipv4Addr, u8) {
        (Ipv4Addr::new(198, 18, 200 + s as u8, 0), 24)
    }

    /// The clients' gateway on segment `s` (every access point's).
    pub fn segment_gateway(s: usize) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, 200 + s as u8, 1)
    }

    /// Access point `ap`'s own address on segment `s`.
    pub fn access_addr(&self, s: usize, ap: usize) -> Ipv4Addr {
        let k = self.segments[s]
            .access_points
            .iter()
            .position(|&a| a == ap)
            .unwrap_or(0);
        Ipv4Addr::new(198, 18, 200 + s as u8, 2 + k as u8)
    }

    /// Segment `s`'s namespace (its bridge).
    pub fn segment_ns(&self, s: usize) -> String {
        format!("braid-{}-seg-{}", self.name, self.segments[s].name)
    }

    /// A router's access interface on segment `s`.
    pub fn access_dev(s: usize) -> String {
        format!("acc{s}")
    }

    /// Access point `ap`'s port on segment `s`'s bridge.
    pub fn port_dev(ap: usize) -> String {
        format!("p{ap}")
    }

    /// Client `c`'s port on its segment's bridge.
    pub fn client_port_dev(c: usize) -> String {
        format!("c{c}")
    }

    /// The segments router `i` is an access point of, with their index.
    pub fn access_segments(&self, i: usize) -> Vec<usize> {
        (0..self.segments.len())
            .filter(|&s| self.segments[s].access_points.contains(&i))
            .collect()
    }

    /// The access point a plain network routes client `c` to at start:
    /// the first roam's `from`, else its segment's first access point.
    pub fn home_of(&self, c: usize) -> usize {
        self.roams.iter().find(|r| r.client == c).map_or(
            self.segments[self.clients[c].segment].access_points[0],
            |r| r.from,
        )
    }

    /// The namespace of link `j`'s delay emulator.
    pub fn emulator_ns(&self, j: usize) -> String {
        format!("braid-{}-d{j}", self.name)
    }

    /// The interface of link `j` (the same name at both ends).
    pub fn link_dev(j: usize) -> String {
        format!("bl{j}")
    }

    /// The interfaces of router `i`, one per link, in link order.
    pub fn interfaces_of(&self, i: usize) -> Vec<String> {
        self.links
            .iter()
            .enumerate()
            .filter(|(_, l)| l.a == i || l.b == i)
            .map(|(j, _)| Self::link_dev(j))
            .collect()
    }

    /// The control socket of router `i`'s braid daemon.
    pub fn socket(&self, i: usize) -> PathBuf {
        self.dir().join(format!("{}.sock", self.routers[i].name))
    }

    /// Where the lab keeps its files: configs, logs, pid files, control
    /// sockets. Removed when the lab is torn down (kept after a failure
    /// or with `--keep`).
    pub fn dir(&self) -> PathBuf {
        std::env::temp_dir().join(format!("braid-lab-{}", self.name))
    }

    /// The address of the host behind router `router`.
    pub fn host_addr(router: usize) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, router as u8 + 1, 2)
    }

    /// Router `router`'s address on its host's subnet (the host's
    /// gateway).
    pub fn gateway_addr(router: usize) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, router as u8 + 1, 1)
    }

    /// The IPv6 /64 router `router` serves.
    pub fn host_net6(router: usize) -> Ipv6Addr {
        Ipv6Addr::new(0x2001, 2, 0, router as u16 + 1, 0, 0, 0, 0)
    }

    /// The subnet router `router` serves.
    pub fn host_net(router: usize) -> (Ipv4Addr, u8) {
        (Ipv4Addr::new(198, 18, router as u8 + 1, 0), 24)
    }

    /// The sending host's address for its MPTCP subflow over path `k`.
    pub fn subflow_addr(router: usize, k: usize) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, router as u8 + 1, 10 + k as u8)
    }

    /// Router `router`'s address on link `j`.
    pub fn link_addr(&self, j: usize, router: usize) -> Ipv4Addr {
        let side = if self.links[j].a == router { 1 } else { 2 };
        Ipv4Addr::new(198, 19, j as u8, side)
    }
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
                GOOD.replace("software = \"kernel\"", "software = \"olsr\""),
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
