//! What a node is told (its configuration, with defaults) and the plain
//! types it hands its driver: datagrams to send and the counters of its
//! data path.

use std::time::Duration;

use braid_wire::NodeId;

use super::costs::CostOverrides;

use crate::access::AccessConfig;
use crate::classify::Classifier;
use crate::control::ControlConfig;
use crate::paths::{DampingConfig, Disjointness};
use crate::redundancy::{EgressConfig, IngressConfig, Policy, SessionLimits};
use crate::scheduler::SchedulerConfig;

/// The path report intervals a node may be given (`path_report_interval`):
/// from fast enough for pacing's rate loop (several a second) to one so
/// slow the estimates barely follow.
pub const PATH_REPORT_INTERVALS: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(50)..=Duration::from_secs(10);
/// [`PATH_REPORT_INTERVALS`] as an operator reads it, for errors.
pub const PATH_REPORT_INTERVALS_TEXT: &str = "50 ms to 10 s";

/// Everything a node is configured with.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeConfig {
    /// Probing, link state and flooding.
    pub control: ControlConfig,
    /// The encoder of each session this node is the ingress of.
    pub ingress: IngressConfig,
    /// The decoder of each session this node is the egress of.
    pub egress: EgressConfig,
    /// Which mode each session gets, by egress and class.
    pub policy: Policy,
    /// Which class each user packet belongs to.
    pub classifier: Classifier,
    /// Paths kept per egress (k).
    pub max_paths: usize,
    /// Node- or edge-disjoint paths.
    pub disjoint: Disjointness,
    /// When a better path replaces the current one (SrcRR's damping).
    pub damping: DampingConfig,
    /// Bounds of the session tables (each side: ingress, egress).
    pub sessions: SessionLimits,
    /// How often each egress session reports per-path counts to its ingress.
    pub path_report_interval: Duration,
    /// Bound of the transmit and deliver queues toward the driver.
    pub max_queue: usize,
    /// After the link state changes, routes are recomputed at most this
    /// often (SPF throttling): a burst of LSAs costs one computation.
    pub route_delay: Duration,
    /// Picks sessions' epochs and first sequence numbers (use a fresh
    /// random value per start).
    pub seed: u64,
    /// Late binding: at most this many datagrams per next hop in the
    /// driver, the rest above the binding point. `None`: early binding
    /// (everything goes to the driver at once).
    pub late_binding: Option<LateBinding>,
    /// Delay equalisation (`redundancy/equalise.rs`): with late binding,
    /// bulk datagrams of the modes that spread packets wait for the
    /// difference of their path's delay to the slowest path's, so that
    /// TCP sees one round trip. Worth it only where the egress re-orders
    /// (without that, arrivals made equal interleave the paths' packets
    /// finely, and TCP sees more re-ordering, not less). Off by default:
    /// it costs CUBIC senders more than it gains them (docs/performance.md).
    pub equalise_delay: bool,
    /// Pacing below capacity (`redundancy/pacing.rs`): with late binding,
    /// each path toward an egress is paced just below what it carried
    /// once a report shows its queue building, so that the queue forms
    /// above the binding point (urgent first) and not at the path's
    /// bottleneck. Its rate loop is as fast as the path reports: give it
    /// a `path_report_interval` of 250 ms or less. Off by default.
    pub pace: bool,
    /// Ignore link-layer transmission failures (SrcRR IGNORE-FAIL): the
    /// probes' long-term measure decides. Otherwise a failed link is
    /// treated as down for `tx_failure_hold`.
    pub ignore_tx_failures: bool,
    /// How long a link whose frames failed every retry stays unusable
    /// (when failures are not ignored).
    pub tx_failure_hold: Duration,
    /// A neighbor not heard for this long is taken down and routes move
    /// off it at once (the daemon: `dead_after` small-probe intervals).
    /// `None`: only the probes' link estimates (and the driver's
    /// [`super::Node::link_down`]) retire a silent neighbor.
    pub neighbor_timeout: Option<Duration>,
    /// As an access point: which of the clients it hears it serves.
    pub access: AccessConfig,
    /// As an entry point: which of several gateways a flow goes to, and
    /// whether it stays there.
    pub gateways: super::GatewayChoice,
    /// As an egress: a user packet the same as one delivered within this
    /// long is a copy that entered the mesh twice and is dropped (none:
    /// off; see `copies.rs`).
    pub copy_window: Option<Duration>,
    /// The operator's cost factors on links, per neighbor and per
    /// interface (advertised: see [`CostFactor`]).
    pub cost_overrides: CostOverrides,
}

/// Late-binding settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LateBinding {
    /// Datagrams per next hop below the binding point (the seed: 2).
    pub bound: usize,
    /// Limits of each egress's queue above the binding point.
    pub scheduler: SchedulerConfig,
}

impl LateBinding {
    /// The default datagrams per next hop below the binding point (the
    /// seed's 2).
    pub const DEFAULT_BOUND: usize = 2;
}

impl Default for LateBinding {
    fn default() -> Self {
        LateBinding {
            bound: Self::DEFAULT_BOUND,
            scheduler: SchedulerConfig {
                // The scheduler's own binding holds one packet per path;
                // the bound toward the driver is `bound`.
                bound_per_path: 1,
                max_packets: 1024,
                max_bytes: 1 << 20,
                flow_buckets: 32,
                quantum: 1514,
            },
        }
    }
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            control: ControlConfig::default(),
            ingress: IngressConfig::default(),
            egress: EgressConfig::default(),
            policy: Policy::default(),
            classifier: Classifier::default(),
            max_paths: 3,
            disjoint: Disjointness::Node,
            damping: DampingConfig::default(),
            sessions: SessionLimits::default(),
            path_report_interval: Duration::from_secs(1),
            max_queue: 4096,
            route_delay: Duration::from_millis(200),
            seed: 0,
            late_binding: Some(LateBinding::default()),
            equalise_delay: false,
            pace: false,
            ignore_tx_failures: true,
            tx_failure_hold: Duration::from_secs(10),
            neighbor_timeout: None,
            access: AccessConfig::default(),
            gateways: super::GatewayChoice::default(),
            copy_window: Some(Duration::from_millis(50)),
            cost_overrides: CostOverrides::default(),
        }
    }
}

/// Where a datagram goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    /// Every neighbor (control messages are link-local broadcasts).
    AllNeighbors,
    /// One neighbor (data).
    Neighbor(NodeId),
}

/// A datagram for the driver to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// To whom.
    pub dest: Dest,
    /// The whole datagram (the underlay's payload).
    pub bytes: Vec<u8>,
    /// Bit-rate to send at, 100 kbit/s units (big probes measure one rate
    /// each); `None`: the radio's own choice.
    pub rate: Option<u16>,
}

/// Counters of the node's data path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeCounters {
    /// User packets handed to `send`.
    pub user_in: u64,
    /// User packets whose destination no node serves.
    pub no_egress: u64,
    /// User packets whose destination has no path (and, at a waypoint,
    /// packets to route on whose egress it cannot reach).
    pub no_path: u64,
    /// Packets whose path has more hops than the hop limit lets them
    /// make (255 at most; at an ingress, or at a waypoint whose own path
    /// is longer than the hops the packet has left).
    #[serde(default)]
    pub route_too_long: u64,
    /// User packets that were not IP.
    pub not_ip: u64,
    /// User packets delivered to local hosts.
    pub delivered: u64,
    /// Data packets this node passed on toward their egress.
    pub forwarded: u64,
    /// Of those, packets whose route ended here at a waypoint and that
    /// this node routed on (a path longer than one route holds).
    #[serde(default)]
    pub routed_on: u64,
    /// Data packets dropped because their hop limit ran out.
    pub hop_limit_exceeded: u64,
    /// Data packets that reached a node their route does not name.
    pub not_on_route: u64,
    /// Tree-mode copies this node sent (one per next hop of the entry
    /// point's tree; the entry point's own included).
    pub tree_copies: u64,
    /// Tree-mode packets that reached a node off their entry point's tree
    /// (databases that differ while the network converges).
    pub not_on_tree: u64,
    /// Times the tree tables filled up and started afresh.
    pub tree_overflows: u64,
    /// Data datagrams that failed to parse.
    pub malformed: u64,
    /// With authentication on: data datagrams from an underlay address no
    /// authenticated neighbor uses, and path reports whose MAC failed.
    pub unauthenticated: u64,
    /// Data datagrams whose route names another node than the neighbor
    /// that sent them as the one before us.
    pub wrong_previous_hop: u64,
    /// Dropped because the transmit or deliver queue was full.
    pub queue_full: u64,
    /// Path reports this node sent as an egress.
    pub path_reports_sent: u64,
    /// Path reports this node received as an ingress.
    pub path_reports_received: u64,
    /// Echo requests this node answered (`braid ctl ping` from another
    /// router).
    #[serde(default)]
    pub echoes_answered: u64,
    /// Session checks answered with a proof (this node the ingress).
    #[serde(default)]
    pub session_checks_answered: u64,
    /// Session checks sent (this node the egress: it held packets of an
    /// epoch, or numbers, its ingress had not proven yet).
    #[serde(default)]
    pub session_checks_sent: u64,
    /// Repair requests sent (this node the egress: its sliding-window
    /// decoder missed packets the repair sent with them did not rebuild).
    #[serde(default)]
    pub repair_requests_sent: u64,
    /// Repair requests answered with at least one repair packet (this
    /// node the ingress).
    #[serde(default)]
    pub repair_requests_answered: u64,
    /// Repair requests for a session this node holds that got nothing
    /// (the packets had left its window, or the bound was reached).
    #[serde(default)]
    pub repair_requests_unanswered: u64,
    /// Times the paths toward some egress changed.
    pub route_changes: u64,
    /// Link-layer failures the driver reported.
    pub tx_failures: u64,
    /// Dropped above the binding point to stay within its bounds.
    pub binding_overflow: u64,
    /// Bulk user packets dropped before encoding because the queue above
    /// the binding point toward their egress was full and their flow the
    /// longest in it (`Scheduler::would_drop`): dropped unnumbered, they
    /// leave no gap for the egress to wait on, as `binding_overflow`'s do.
    #[serde(default)]
    pub binding_full: u64,
    /// Bulk user packets dropped before encoding because the queue above
    /// the binding point toward their egress had stood too long
    /// (`node/admission.rs`: CoDel at the queue's entry).
    #[serde(default)]
    pub queue_dropped: u64,
    /// Bulk datagrams held for delay equalisation (`hold.rs`).
    #[serde(default)]
    pub held: u64,
    /// Of those, released before their time because the hold was full.
    #[serde(default)]
    pub held_early: u64,
    /// Copies of a session's first packets sent on every path while some
    /// path's delay was not known (delay equalisation, the lead rule).
    #[serde(default)]
    pub probe_copies: u64,
    /// User packets this egress did not deliver: copies of one delivered
    /// within `copy_window` that entered the mesh twice (a client heard by
    /// two access points; `copies.rs`).
    #[serde(default)]
    pub copies_dropped: u64,
    /// Events dropped because the driver did not drain them.
    pub events_dropped: u64,
    /// Neighbors not taken because the neighbor table was full.
    pub neighbors_refused: u64,
}
