//! The checked lab: [`Lab`] and everything it holds (routers, links,
//! flows, events, variants, segments, clients, roams), in the lab's own
//! terms, indexes in place of names. Only the checks (`parse.rs`) build
//! one; the names and addresses a lab derives are in `names.rs`.

use std::time::Duration;

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
    Ospf(Ospf),
    /// Linux MPTCP at the ends over kernel static routes: every TCP
    /// flow's sender has one address per disjoint path, pinned to that
    /// path by policy routes, and one MPTCP subflow per address (iperf3
    /// under mptcpize). UDP flows take the static routes.
    Mptcp,
}

/// How a FRR variant runs OSPF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ospf {
    /// OSPF hello interval (whole seconds: OSPFv2's field).
    pub hello: Duration,
    /// Dead interval (whole seconds).
    pub dead: Duration,
    /// BFD on every OSPF interface: its transmit and receive interval,
    /// and detection multiplier.
    pub bfd: Option<(Duration, u8)>,
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
    /// The daemons' `equalise_delay` (their default when `None`).
    pub equalise_delay: Option<bool>,
    /// The daemons' `[tun] mss_clamp` (their default when `None`).
    pub mss_clamp: Option<bool>,
    /// The daemons' `pace` (their default when `None`).
    pub pace: Option<bool>,
    /// The daemons' `urgent_copies` (their default when `None`).
    pub urgent_copies: Option<u8>,
    /// The daemons' `copy_window` (their default when `None`).
    pub copy_window: Option<Duration>,
    /// The daemons' `report_interval` (their default when `None`).
    pub report_interval: Option<Duration>,
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
    pub(super) fn events(&self, segment: usize) -> Vec<LabEvent> {
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
    /// The link's rate limit (both ends' tbf) becomes this many bit/s
    /// (`rate 20Mbit`): a radio link that falls to a slower modulation.
    Rate(u64),
    /// An access point's port on its segment loses this share (per
    /// mille) of the frames each way (a roaming client's distance); on a
    /// link (`loss 0.1`), the link's loss each way becomes this, in
    /// bursts as its `burst` says (a radio link starting to fade).
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
    /// A gateway's ISP drops everything from it (`uplink cut`): every
    /// link stays up and ARP is answered, as behind a modem whose line
    /// died; `uplink restore` ends it.
    UplinkCut,
    UplinkRestore,
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
    /// A gateway: an ISP of its own beyond it (NAT at the gateway), and
    /// through it the lab's internet (`names.rs`: "The internet").
    pub uplink: bool,
    /// Its braid routing area (docs/protocol.md, "Areas"; 0: the flat
    /// default).
    pub area: u16,
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
    /// A spoofer on the link between `from` and `to` (two routers), as
    /// `from`: it hears one data packet `from` sends toward `to` and
    /// sends forged copies of it (a new epoch, numbers far ahead:
    /// `spoof.rs`).
    Spoof,
    /// `count` new TCP connections, `interval` apart, each carrying its
    /// number and time: whether a new connection works (the receiver's
    /// listener hears it), and how soon, while routes change.
    Connect,
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
    /// Every congestion control a flow can name.
    pub const ALL: [Congestion; 3] = [Congestion::Cubic, Congestion::Reno, Congestion::Bbr];

    /// The congestion control Linux calls `name`.
    pub fn parse(name: &str) -> Option<Congestion> {
        Congestion::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// The name Linux gives this congestion control.
    pub fn as_str(self) -> &'static str {
        match self {
            Congestion::Cubic => "cubic",
            Congestion::Reno => "reno",
            Congestion::Bbr => "bbr",
        }
    }
}

/// Rounds of an urgent flow.
pub const URGENT_ROUNDS: u32 = 10;
