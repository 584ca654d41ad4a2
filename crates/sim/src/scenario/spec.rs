//! A checked scenario: its topology, link models, node settings, flows,
//! sweeps, variants, failures and strangers, every default filled in; and
//! how it expands into the variants a run compares.

use std::time::Duration;

use braid_proto::linkest::MetricKind;
use braid_proto::redundancy::Mode;

use crate::link::{LinkSpec, LossModel};
use crate::radio::{RadioSpec, RateControl};
use crate::topology::TopologySpec;

/// A per-link override.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkOverride {
    pub a: String,
    pub b: String,
    pub spec: LinkSpec,
}

/// One traffic flow: constant bit rate UDP from a host behind `from` to a
/// host behind `to`.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec {
    pub name: String,
    pub from: String,
    pub to: String,
    pub size: usize,
    pub interval: Duration,
    pub count: u64,
    pub start: Duration,
    /// This flow's redundancy mode (its own class at the ingress).
    pub mode: Option<Mode>,
    /// `Some(bytes)`: a TCP transfer of that many bytes (real TCP, smoltcp)
    /// instead of constant bit rate UDP.
    pub tcp_bytes: Option<u64>,
    /// A TCP flow stops after this long; its goodput is measured over it.
    pub duration: Option<Duration>,
}

/// A parsed, checked scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub duration: Duration,
    pub seed: u64,
    pub runs: u32,
    pub topology: TopologySpec,
    pub link: LinkSpec,
    pub links: Vec<LinkOverride>,
    pub mode: Mode,
    pub paths: usize,
    /// A parity/repair group not full after this long is closed.
    pub flush: Duration,
    /// Re-order at the egress.
    pub reorder: bool,
    /// Delay equalisation at the ingress (with late binding; off by
    /// default).
    pub equalise_delay: bool,
    /// Pacing below capacity at the ingress (with late binding; off by
    /// default).
    pub pace: bool,
    /// How often egress sessions report their paths (`None`: the node's
    /// default, 1 s).
    pub report_interval: Option<Duration>,
    pub metric: MetricKind,
    pub damping: bool,
    pub ignore_tx_failures: bool,
    /// A neighbor unheard for this many small-probe intervals is taken
    /// down and routes move at once (the daemon's `[probes] dead_after`,
    /// 10 there); `None`: only the probes' link estimates retire it.
    pub dead_after: Option<u32>,
    /// How radios pick a unicast frame's bit-rate.
    pub rate_control: RateControl,
    /// Times a frame that fails all its link-layer attempts is handed to
    /// the radio (1: 802.11 alone; SrcRR's PERSISTENCE: 40).
    pub persistence: u32,
    /// Late binding's bound per next hop; `None`: early binding.
    pub bound: Option<usize>,
    /// Nodes that run no braid: unmodified clients (a plain IP stack) of
    /// the access points they have links to (SMesh, seed 000).
    pub clients: Vec<String>,
    pub radio: Option<RadioSpec>,
    /// Named node settings to compare (each its own variant).
    pub node_variants: Vec<NodeVariant>,
    pub flows: Vec<FlowSpec>,
    pub sweep: Sweep,
    /// Nodes that fail (and restart with empty state) at given times.
    pub node_failures: Vec<NodeFailure>,
    /// Every node signs and checks its control messages with the
    /// simulation's key (`[node] auth = true`).
    pub auth: bool,
    /// Every node signs its advertisements with a key of its own and
    /// checks every origin's against a roster of all of them (`[node]
    /// sign_origins = true`).
    pub sign_origins: bool,
    /// Processing time charged to a router per origin-signature check
    /// and per signature it makes (`[node] origin_check_cost`,
    /// `origin_sign_cost`; zero: none).
    pub origin_check_cost: Duration,
    pub origin_sign_cost: Duration,
    /// Time how long advertisements take to reach every router (`[node]
    /// watch_flooding = true`).
    pub watch_flooding: bool,
    /// Hostile strangers in range of some nodes.
    pub strangers: Vec<StrangerSpec>,
    /// Routing areas the nodes are split into (`[topology] areas`; 0:
    /// one flat area): regions of the topology grown from spread-out
    /// seeds (`crate::topology::partition`), numbered from 1.
    pub areas: usize,
    /// Routers' braid node ids spread over the whole 16-bit space
    /// (`[topology] ids = "sparse"`), not their indices.
    pub sparse_ids: bool,
    /// Links cut on flows' paths during the run (`[[path_cuts]]`).
    pub path_cuts: Vec<PathCut>,
}

/// For each of the scenario's first `flows` flows (random flows first, in
/// order), flow k's at `at + k * every`, the link in the middle of its
/// ingress's first path among those inside the ingress's area goes down
/// for `lasts`: what a link failure on a path in use costs
/// (`RunResult::cuts`). `every` apart, one cut's recovery does not meet
/// the next's.
#[derive(Debug, Clone, PartialEq)]
pub struct PathCut {
    pub flows: usize,
    pub at: Duration,
    pub lasts: Duration,
    pub every: Duration,
}

/// A stranger in range of `near` (no braid node: it has no key), sending
/// each of them `rate` datagrams a second from `from` until `until`:
/// garbage, advertisements forged under another key (or unsigned),
/// replays of the control messages it heard them receive, and data
/// claiming routes through them.
#[derive(Debug, Clone, PartialEq)]
pub struct StrangerSpec {
    pub near: Vec<String>,
    pub rate: u32,
    pub from: Duration,
    pub until: Duration,
}

/// A node that is down from `from` until `until`, then restarts afresh.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeFailure {
    pub name: String,
    pub from: Duration,
    pub until: Duration,
}

/// Parameters a scenario runs over: every combination is one variant.
/// Node settings a variant changes; `None` keeps the scenario's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeSettings {
    pub mode: Option<Mode>,
    pub paths: Option<usize>,
    pub flush: Option<Duration>,
    pub reorder: Option<bool>,
    pub equalise_delay: Option<bool>,
    pub pace: Option<bool>,
    pub report_interval: Option<Duration>,
    pub metric: Option<MetricKind>,
    pub damping: Option<bool>,
    pub ignore_tx_failures: Option<bool>,
    pub dead_after: Option<u32>,
    pub rate_control: Option<RateControl>,
    pub persistence: Option<u32>,
    pub bound: Option<Option<usize>>,
    pub clients: Option<Vec<String>>,
    pub auth: Option<bool>,
    pub sign_origins: Option<bool>,
    pub origin_check_cost: Option<Duration>,
    pub origin_sign_cost: Option<Duration>,
    pub watch_flooding: Option<bool>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NodeVariant {
    pub name: String,
    pub settings: NodeSettings,
}

impl Scenario {
    /// Applies node settings (a variant's, or the `[node]` table's).
    fn apply(&mut self, n: &NodeSettings) {
        if let Some(m) = n.mode {
            self.mode = m;
            for f in &mut self.flows {
                f.mode = Some(m);
            }
        }
        self.paths = n.paths.unwrap_or(self.paths);
        self.flush = n.flush.unwrap_or(self.flush);
        self.reorder = n.reorder.unwrap_or(self.reorder);
        self.equalise_delay = n.equalise_delay.unwrap_or(self.equalise_delay);
        self.pace = n.pace.unwrap_or(self.pace);
        self.report_interval = n.report_interval.or(self.report_interval);
        self.metric = n.metric.unwrap_or(self.metric);
        self.damping = n.damping.unwrap_or(self.damping);
        self.ignore_tx_failures = n.ignore_tx_failures.unwrap_or(self.ignore_tx_failures);
        self.dead_after = n.dead_after.or(self.dead_after);
        self.rate_control = n.rate_control.unwrap_or(self.rate_control);
        self.persistence = n.persistence.unwrap_or(self.persistence);
        self.bound = n.bound.unwrap_or(self.bound);
        if let Some(c) = &n.clients {
            self.clients = c.clone();
        }
        self.auth = n.auth.unwrap_or(self.auth);
        self.sign_origins = n.sign_origins.unwrap_or(self.sign_origins);
        self.origin_check_cost = n.origin_check_cost.unwrap_or(self.origin_check_cost);
        self.origin_sign_cost = n.origin_sign_cost.unwrap_or(self.origin_sign_cost);
        self.watch_flooding = n.watch_flooding.unwrap_or(self.watch_flooding);
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sweep {
    /// Loss of the first hop of every path of a `parallel` topology: the
    /// first hop keeps everything else it has (its `[[links]]` override,
    /// or `[link]`), including the mean burst of a Gilbert-Elliott model;
    /// the other hops keep theirs, so a path's end-to-end loss is what
    /// all its hops lose together.
    pub path_loss: Vec<f64>,
    /// Per path, the share of the swept loss its first hop loses (paths
    /// not listed: 1), so that paths differ: `[1.0, 0.5, 0.0]` sweeps
    /// the first path, the second at half its loss, the third lossless.
    pub path_scale: Vec<f64>,
    /// Each replaces the mode of every flow.
    pub modes: Vec<Mode>,
}

/// One point of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub path_loss: Option<f64>,
    pub mode: Option<Mode>,
    /// The name of the `[[variants]]` entry.
    pub name: Option<String>,
    pub scenario: Scenario,
}

impl Scenario {
    /// The scenario's variants: itself when it sweeps nothing.
    pub fn variants(&self) -> Vec<Variant> {
        let losses: Vec<Option<f64>> = if self.sweep.path_loss.is_empty() {
            vec![None]
        } else {
            self.sweep.path_loss.iter().copied().map(Some).collect()
        };
        let modes: Vec<Option<Mode>> = if self.sweep.modes.is_empty() {
            vec![None]
        } else {
            self.sweep.modes.iter().copied().map(Some).collect()
        };
        let named: Vec<Option<&NodeVariant>> = if self.node_variants.is_empty() {
            vec![None]
        } else {
            self.node_variants.iter().map(Some).collect()
        };
        let mut out = Vec::new();
        for nv in named {
            for &mode in &modes {
                for &loss in &losses {
                    let mut s = self.clone();
                    s.sweep = Sweep::default();
                    s.node_variants = Vec::new();
                    if let Some(nv) = nv {
                        s.apply(&nv.settings);
                    }
                    if let Some(m) = mode {
                        s.mode = m;
                        for f in &mut s.flows {
                            f.mode = Some(m);
                        }
                    }
                    if let (Some(l), TopologySpec::Parallel { paths, .. }) = (loss, &self.topology)
                    {
                        for p in 0..*paths {
                            let l = l * self.sweep.path_scale.get(p).copied().unwrap_or(1.0);
                            let mut spec = self.hop_spec("s", &format!("p{p}h0"));
                            // Parsing refused the models this cannot rescale.
                            spec.loss = spec
                                .loss
                                .with_mean_loss(l)
                                .unwrap_or(LossModel::Bernoulli(l));
                            s.links.push(LinkOverride {
                                a: "s".into(),
                                b: format!("p{p}h0"),
                                spec,
                            });
                        }
                    }
                    out.push(Variant {
                        path_loss: loss,
                        mode,
                        name: nv.map(|v| v.name.clone()),
                        scenario: s,
                    });
                }
            }
        }
        out
    }
}

impl Scenario {
    /// The model of the link between `a` and `b` (either way round): the
    /// last `[[links]]` override of it, else `[link]`.
    pub fn hop_spec(&self, a: &str, b: &str) -> LinkSpec {
        self.links
            .iter()
            .rev()
            .find(|o| (o.a == a && o.b == b) || (o.a == b && o.b == a))
            .map_or_else(|| self.link.clone(), |o| o.spec.clone())
    }

    /// Path `p` of a `parallel` topology as the delivery formulas take
    /// it: the loss of all its hops together (independent of each other),
    /// with the mean burst of its lossiest hop (exact when one hop loses;
    /// an approximation when several bursty hops add up). `None` for
    /// other topologies.
    pub fn parallel_path_loss(
        &self,
        p: usize,
    ) -> Option<braid_proto::redundancy::predict::PathLoss> {
        let TopologySpec::Parallel { hops, .. } = self.topology else {
            return None;
        };
        let names: Vec<String> = std::iter::once("s".to_string())
            .chain((0..hops.saturating_sub(1)).map(|h| format!("p{p}h{h}")))
            .chain(std::iter::once("t".to_string()))
            .collect();
        let mut delivered = 1.0;
        let (mut worst, mut burst) = (0.0, 1.0);
        for pair in names.windows(2) {
            let model = self.hop_spec(&pair[0], &pair[1]).loss;
            let loss = model.mean_loss();
            delivered *= 1.0 - loss;
            if loss > worst {
                worst = loss;
                burst = model.mean_burst().unwrap_or(1.0);
            }
        }
        Some(braid_proto::redundancy::predict::PathLoss {
            weight: 1,
            loss: 1.0 - delivered,
            burst,
        })
    }
}

/// Most routing areas a scenario may split its nodes into.
pub const MAX_AREAS: usize = 4096;

/// Most times one frame is handed to a radio (`persistence`).
pub const MAX_PERSISTENCE: u32 = 64;

/// Most nodes a simulated topology may have (the file's counts are
/// checked against it before anything is built).
pub const MAX_SIM_NODES: usize = 10_000;
