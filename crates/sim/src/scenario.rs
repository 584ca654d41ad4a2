//! Scenario files (TOML): topology, link models, node settings and traffic.
//! Every knob has a default (see `docs/simulator.md`); every error names
//! the file, the line and the field.

use std::path::Path;
use std::time::Duration;

use braid_conf::Source;
use braid_conf::Spanned;
use braid_proto::redundancy::Mode;
use serde::Deserialize;

use braid_proto::linkest::MetricKind;

use crate::link::{LinkSpec, LossModel};
use crate::radio::{RadioSpec, RateControl};

/// Why a scenario cannot run.
/// A problem in a scenario file, where it is.
pub type ScenarioError = braid_conf::LocatedError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Option<String>,
    description: Option<String>,
    duration: Option<Spanned<String>>,
    seed: Option<u64>,
    runs: Option<u32>,
    topology: RawTopology,
    #[serde(default)]
    link: RawLink,
    #[serde(default)]
    links: Vec<RawLinkOverride>,
    #[serde(default)]
    node: RawNode,
    #[serde(default)]
    flows: Vec<RawFlow>,
    sweep: Option<RawSweep>,
    random_flows: Option<RawRandomFlows>,
    #[serde(default)]
    nodes: Vec<RawNodeEvent>,
    radio: Option<RawRadio>,
    #[serde(default)]
    variants: Vec<RawNode>,
    #[serde(default)]
    strangers: Vec<RawStranger>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStranger {
    near: Vec<Spanned<String>>,
    rate: Option<Spanned<u32>>,
    from: Option<Spanned<String>>,
    until: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRadio {
    rates: Option<Spanned<Vec<String>>>,
    queue: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRandomFlows {
    flows: usize,
    kind: Option<Spanned<String>>,
    every: Option<Spanned<String>>,
    duration: Option<Spanned<String>>,
    size: Option<usize>,
    interval: Option<Spanned<String>>,
    count: Option<u64>,
    start: Option<Spanned<String>>,
    mode: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSweep {
    path_loss: Option<Spanned<Vec<f64>>>,
    path_scale: Option<Spanned<Vec<f64>>>,
    #[serde(default)]
    modes: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    kind: Spanned<String>,
    file: Option<Spanned<String>>,
    edges: Option<usize>,
    cross: Option<usize>,
    max_loss: Option<f64>,
    nodes: Option<usize>,
    width: Option<usize>,
    height: Option<usize>,
    degree: Option<f64>,
    paths: Option<usize>,
    hops: Option<usize>,
    links: Option<Spanned<Vec<Vec<String>>>>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct RawLink {
    loss: Option<f64>,
    burst: Option<f64>,
    delay: Option<Spanned<String>>,
    jitter: Option<Spanned<String>>,
    rate: Option<Spanned<String>>,
    queue: Option<usize>,
    retries: Option<u32>,
    rate_loss: Option<Spanned<Vec<f64>>>,
    fades_every: Option<Spanned<String>>,
    fades_last: Option<Spanned<String>>,
    fades_loss: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLinkOverride {
    between: Spanned<Vec<String>>,
    loss: Option<f64>,
    burst: Option<f64>,
    delay: Option<Spanned<String>>,
    jitter: Option<Spanned<String>>,
    rate: Option<Spanned<String>>,
    queue: Option<usize>,
    retries: Option<u32>,
    rate_loss: Option<Spanned<Vec<f64>>>,
    fades_every: Option<Spanned<String>>,
    fades_last: Option<Spanned<String>>,
    fades_loss: Option<f64>,
    carrier: Option<bool>,
    #[serde(default)]
    down: Vec<Spanned<Vec<String>>>,
    #[serde(default)]
    fade: Vec<Spanned<(String, f64)>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNodeEvent {
    name: Spanned<String>,
    #[serde(default)]
    down: Vec<Spanned<Vec<String>>>,
}

impl RawLinkOverride {
    fn link(&self) -> RawLink {
        RawLink {
            loss: self.loss,
            burst: self.burst,
            delay: self.delay.clone(),
            jitter: self.jitter.clone(),
            rate: self.rate.clone(),
            queue: self.queue,
            retries: self.retries,
            rate_loss: self.rate_loss.clone(),
            fades_every: self.fades_every.clone(),
            fades_last: self.fades_last.clone(),
            fades_loss: self.fades_loss,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    /// Variants only: the variant's name.
    name: Option<Spanned<String>>,
    mode: Option<Spanned<String>>,
    paths: Option<usize>,
    flush: Option<Spanned<String>>,
    reorder: Option<bool>,
    metric: Option<Spanned<String>>,
    damping: Option<bool>,
    ignore_tx_failures: Option<bool>,
    rate_control: Option<Spanned<String>>,
    persistence: Option<Spanned<u32>>,
    binding: Option<Spanned<String>>,
    bound: Option<usize>,
    clients: Option<Vec<String>>,
    auth: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    name: Option<String>,
    kind: Option<Spanned<String>>,
    bytes: Option<u64>,
    from: Spanned<String>,
    to: Spanned<String>,
    size: Option<usize>,
    interval: Option<Spanned<String>>,
    count: Option<u64>,
    start: Option<Spanned<String>>,
    mode: Option<Spanned<String>>,
    duration: Option<Spanned<String>>,
    rate: Option<Spanned<String>>,
}

/// A topology generator.
#[derive(Debug, Clone, PartialEq)]
pub enum TopologySpec {
    /// n1 - n2 - ... - nN.
    Line { nodes: usize },
    /// A width × height grid.
    Grid { width: usize, height: usize },
    /// `paths` node-disjoint paths of `hops` hops between `s` and `t`.
    Parallel { paths: usize, hops: usize },
    /// A random geometric mesh (placement from the run's seed).
    Geometric { nodes: usize, degree: f64 },
    /// A WISP: a gateway `gw`, a random tree of relay towers `r1..`, edge
    /// sites `e1..` hanging off relays, and `cross` extra relay-to-relay
    /// links (Mendocino-like by default: 64 nodes, 41 edges).
    Wisp {
        nodes: usize,
        edges: usize,
        cross: usize,
    },
    /// A CityMesh-like rooftop mesh: a random geometric mesh whose links
    /// lose more the longer they are, up to `max_loss` at the edge of range.
    CityMesh {
        nodes: usize,
        degree: f64,
        max_loss: f64,
    },
    /// A NetJSON NetworkGraph: its node ids and links (costs are not used:
    /// the simulated link models decide each link's fate). Also the
    /// `links` topology: named links written in the scenario.
    NetJson {
        names: Vec<String>,
        edges: Vec<(u32, u32)>,
    },
}

impl TopologySpec {
    /// The node names this topology will have.
    pub fn node_names(&self) -> Vec<String> {
        match *self {
            TopologySpec::Line { nodes } | TopologySpec::Geometric { nodes, .. } => {
                (1..=nodes).map(|i| format!("n{i}")).collect()
            }
            TopologySpec::Grid { width, height } => {
                (1..=width * height).map(|i| format!("n{i}")).collect()
            }
            TopologySpec::Parallel { paths, hops } => {
                let mut names = vec!["s".to_string(), "t".to_string()];
                for p in 0..paths {
                    for h in 0..hops.saturating_sub(1) {
                        names.push(format!("p{p}h{h}"));
                    }
                }
                names
            }
            TopologySpec::NetJson { ref names, .. } => names.clone(),
            TopologySpec::CityMesh { nodes, .. } => (1..=nodes).map(|i| format!("n{i}")).collect(),
            TopologySpec::Wisp { nodes, edges, .. } => {
                let relays = nodes.saturating_sub(1 + edges);
                std::iter::once("gw".to_string())
                    .chain((1..=relays).map(|i| format!("r{i}")))
                    .chain((1..=edges).map(|i| format!("e{i}")))
                    .collect()
            }
        }
    }
}

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
    pub metric: MetricKind,
    pub damping: bool,
    pub ignore_tx_failures: bool,
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
    /// Hostile strangers in range of some nodes.
    pub strangers: Vec<StrangerSpec>,
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
    pub metric: Option<MetricKind>,
    pub damping: Option<bool>,
    pub ignore_tx_failures: Option<bool>,
    pub rate_control: Option<RateControl>,
    pub persistence: Option<u32>,
    pub bound: Option<Option<usize>>,
    pub clients: Option<Vec<String>>,
    pub auth: Option<bool>,
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
        self.metric = n.metric.unwrap_or(self.metric);
        self.damping = n.damping.unwrap_or(self.damping);
        self.ignore_tx_failures = n.ignore_tx_failures.unwrap_or(self.ignore_tx_failures);
        self.rate_control = n.rate_control.unwrap_or(self.rate_control);
        self.persistence = n.persistence.unwrap_or(self.persistence);
        self.bound = n.bound.unwrap_or(self.bound);
        if let Some(c) = &n.clients {
            self.clients = c.clone();
        }
        self.auth = n.auth.unwrap_or(self.auth);
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

struct Ctx<'a> {
    src: Source<'a>,
}

impl Ctx<'_> {
    fn err(
        &self,
        span: Option<std::ops::Range<usize>>,
        field: &str,
        message: impl Into<String>,
    ) -> ScenarioError {
        self.src.err(span, field, message)
    }

    fn duration(
        &self,
        v: &Option<Spanned<String>>,
        field: &str,
        default: Duration,
    ) -> Result<Duration, ScenarioError> {
        self.src.duration(v, field, default)
    }

    fn mode(&self, v: &Spanned<String>, field: &str) -> Result<Mode, ScenarioError> {
        self.src.value(v, field)
    }

    fn rate(&self, v: &Spanned<String>, field: &str) -> Result<u64, ScenarioError> {
        self.src.rate(v, field)
    }

    fn link(&self, raw: &RawLink, base: &LinkSpec, field: &str) -> Result<LinkSpec, ScenarioError> {
        let mut spec = base.clone();
        let (loss, burst) = (raw.loss, raw.burst);
        if let Some(l) = loss {
            if !(0.0..=1.0).contains(&l) {
                return Err(self.err(
                    None,
                    &format!("{field}.loss"),
                    format!("{l} is not a probability in [0, 1]"),
                ));
            }
        }
        if loss.is_some() || burst.is_some() {
            let l = loss.unwrap_or(base.loss.mean_loss());
            let b = burst.unwrap_or(1.0);
            if b < 1.0 {
                return Err(self.err(
                    None,
                    &format!("{field}.burst"),
                    "mean burst length must be at least 1 packet",
                ));
            }
            // A burst without loss is kept (as a chain that never leaves
            // Good): a loss sweep gives it its loss.
            spec.loss = if l == 0.0 && b == 1.0 {
                LossModel::None
            } else if b == 1.0 {
                LossModel::Bernoulli(l)
            } else {
                LossModel::bursty(l, b)
            };
        }
        spec.delay = self.duration(&raw.delay, &format!("{field}.delay"), base.delay)?;
        spec.jitter = self.duration(&raw.jitter, &format!("{field}.jitter"), base.jitter)?;
        if let Some(r) = &raw.rate {
            spec.rate_bps = Some(self.rate(r, &format!("{field}.rate"))?);
        }
        if let Some(q) = raw.queue {
            spec.queue = q;
        }
        if let Some(r) = raw.retries {
            if r > 100 {
                return Err(self.err(
                    None,
                    &format!("{field}.retries"),
                    format!("{r} retries: at most 100 (802.11 uses 7, SrcRR's 40 exceeded TCP's timeout)"),
                ));
            }
            spec.retries = r;
        }
        if let Some(rl) = &raw.rate_loss {
            if let Some(bad) = rl.get_ref().iter().find(|l| !(0.0..=1.0).contains(*l)) {
                return Err(self.err(
                    Some(rl.span()),
                    &format!("{field}.rate_loss"),
                    format!("{bad} is not a probability in [0, 1]"),
                ));
            }
            spec.rate_loss = rl.get_ref().clone();
        }
        if raw.fades_every.is_some() || raw.fades_last.is_some() || raw.fades_loss.is_some() {
            let every = self.duration(
                &raw.fades_every,
                &format!("{field}.fades_every"),
                Duration::from_secs(30),
            )?;
            let last = self.duration(
                &raw.fades_last,
                &format!("{field}.fades_last"),
                Duration::from_millis(500),
            )?;
            let loss = raw.fades_loss.unwrap_or(0.9);
            if !(0.0..=1.0).contains(&loss) || every.is_zero() || last.is_zero() {
                return Err(self.err(
                    raw.fades_every.as_ref().map(|s| s.span()),
                    &format!("{field}.fades_loss"),
                    "transient fades need positive fades_every and fades_last and a loss in [0, 1]",
                ));
            }
            spec.loss = LossModel::GilbertElliottTime {
                good_mean: every,
                bad_mean: last,
                loss_good: spec.loss.mean_loss(),
                loss_bad: loss,
            };
        }
        Ok(spec)
    }

    fn node(&self, raw: &RawNode, field: &str) -> Result<NodeSettings, ScenarioError> {
        let metric = match &raw.metric {
            None => None,
            Some(m) => Some(match m.get_ref().as_str() {
                "hop" | "hops" | "hop-count" => MetricKind::HopCount,
                "etx" => MetricKind::Etx,
                "ett" => MetricKind::Ett,
                other => {
                    return Err(self.err(
                        Some(m.span()),
                        &format!("{field}.metric"),
                        format!("unknown metric \"{other}\" (hop, etx, ett)"),
                    ))
                }
            }),
        };
        let rate_control = match &raw.rate_control {
            None => None,
            Some(r) => Some(
                RateControl::ALL
                    .into_iter()
                    .find(|c| c.name() == r.get_ref())
                    .ok_or_else(|| {
                        let names: Vec<&str> = RateControl::ALL.iter().map(|c| c.name()).collect();
                        self.err(
                            Some(r.span()),
                            &format!("{field}.rate_control"),
                            format!(
                                "unknown rate control \"{}\" ({})",
                                r.get_ref(),
                                names.join(", ")
                            ),
                        )
                    })?,
            ),
        };
        let persistence = match &raw.persistence {
            None => None,
            Some(p) if (1..=MAX_PERSISTENCE).contains(p.get_ref()) => Some(*p.get_ref()),
            Some(p) => {
                return Err(self.err(
                    Some(p.span()),
                    &format!("{field}.persistence"),
                    format!(
                        "{} hand-overs: 1 to {MAX_PERSISTENCE} (1: 802.11 alone; SrcRR used 40)",
                        p.get_ref()
                    ),
                ))
            }
        };
        let bound = match (&raw.binding, raw.bound) {
            (None, None) => None,
            (b, n) => {
                let kind = b.as_ref().map_or("late", |b| b.get_ref().as_str());
                match kind {
                    "late" => Some(Some(n.unwrap_or(2).max(1))),
                    "early" => Some(None),
                    other => {
                        return Err(self.err(
                            b.as_ref().map(|b| b.span()),
                            &format!("{field}.binding"),
                            format!("unknown binding \"{other}\" (late, early)"),
                        ))
                    }
                }
            }
        };
        Ok(NodeSettings {
            mode: raw
                .mode
                .as_ref()
                .map(|m| self.mode(m, &format!("{field}.mode")))
                .transpose()?,
            paths: raw.paths.map(|p| p.clamp(1, 16)),
            flush: raw
                .flush
                .as_ref()
                .map(|_| self.duration(&raw.flush, &format!("{field}.flush"), Duration::ZERO))
                .transpose()?,
            reorder: raw.reorder,
            metric,
            damping: raw.damping,
            ignore_tx_failures: raw.ignore_tx_failures,
            rate_control,
            persistence,
            bound,
            clients: raw.clients.clone(),
            auth: raw.auth,
        })
    }
}

/// Most times one frame is handed to a radio (`persistence`).
pub const MAX_PERSISTENCE: u32 = 64;

/// Most nodes a simulated topology may have (the file's counts are
/// checked against it before anything is built).
pub const MAX_SIM_NODES: usize = 10_000;

impl Scenario {
    /// Reads and checks a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = braid_conf::read_text(path).map_err(|e| ScenarioError {
            file: file.clone(),
            line: 0,
            field: "file".into(),
            message: e.to_string(),
        })?;
        Scenario::parse_in(&file, &text, path.parent().unwrap_or(Path::new(".")))
    }

    /// Parses scenario text; `file` names it in errors. Relative paths in
    /// it are taken from the current directory.
    pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_in(file, text, Path::new("."))
    }

    /// Parses scenario text whose relative paths start at `dir`.
    pub fn parse_in(file: &str, text: &str, dir: &Path) -> Result<Scenario, ScenarioError> {
        let cx = Ctx {
            src: Source::new(file, text),
        };
        let raw: Raw = cx.src.parse()?;
        let t = &raw.topology;
        // Every count is bounded, and so is the grid's and the parallel
        // paths' product: a simulated mesh of at most MAX_SIM_NODES nodes.
        for (v, f) in [
            (t.nodes, "nodes"),
            (t.width, "width"),
            (t.height, "height"),
            (t.paths, "paths"),
            (t.hops, "hops"),
            (t.edges, "edges"),
            (
                t.width.zip(t.height).map(|(w, h)| w.saturating_mul(h)),
                "width",
            ),
            (
                t.paths.zip(t.hops).map(|(p, h)| p.saturating_mul(h)),
                "hops",
            ),
        ] {
            if v.is_some_and(|n| n > MAX_SIM_NODES) {
                return Err(cx.err(
                    Some(t.kind.span()),
                    &format!("topology.{f}"),
                    format!("at most {MAX_SIM_NODES} nodes in a simulated topology"),
                ));
            }
        }
        let need = |v: Option<usize>, f: &str| {
            v.filter(|&n| n > 0).ok_or_else(|| {
                cx.err(
                    Some(t.kind.span()),
                    &format!("topology.{f}"),
                    format!(
                        "a {} topology needs {f} (a positive number)",
                        t.kind.get_ref()
                    ),
                )
            })
        };
        let topology =
            match t.kind.get_ref().as_str() {
                "line" => TopologySpec::Line {
                    nodes: need(t.nodes, "nodes")?,
                },
                "grid" => TopologySpec::Grid {
                    width: need(t.width, "width")?,
                    height: need(t.height, "height")?,
                },
                "parallel" => TopologySpec::Parallel {
                    paths: need(t.paths, "paths")?,
                    hops: need(t.hops, "hops")?,
                },
                "geometric" => TopologySpec::Geometric {
                    nodes: need(t.nodes, "nodes")?,
                    degree: t.degree.unwrap_or(8.0),
                },
                "wisp" => {
                    let (nodes, edges) = (t.nodes.unwrap_or(64), t.edges.unwrap_or(41));
                    if nodes < 2 || edges + 1 >= nodes {
                        return Err(cx.err(Some(t.kind.span()), "topology.edges", format!("a WISP of {nodes} nodes has room for at most {} edge sites besides the gateway and one relay", nodes.saturating_sub(2))));
                    }
                    TopologySpec::Wisp { nodes, edges, cross: t.cross.unwrap_or(8) }
                }
                "citymesh" => {
                    let max_loss = t.max_loss.unwrap_or(0.5);
                    if !(0.0..1.0).contains(&max_loss) {
                        return Err(cx.err(Some(t.kind.span()), "topology.max_loss", format!("{max_loss} is not a loss ratio in [0, 1)")));
                    }
                    TopologySpec::CityMesh { nodes: t.nodes.unwrap_or(40), degree: t.degree.unwrap_or(6.0), max_loss }
                }
                "netjson" => {
                    let f = t.file.as_ref().ok_or_else(|| {
                        cx.err(
                            Some(t.kind.span()),
                            "topology.file",
                            "a netjson topology needs file = \"PATH\"",
                        )
                    })?;
                    let path = dir.join(f.get_ref());
                    let text = braid_conf::read_text(&path).map_err(|e| {
                        cx.err(
                            Some(f.span()),
                            "topology.file",
                            format!("{}: {e}", path.display()),
                        )
                    })?;
                    let topo = braid_proto::netjson::parse(&text).map_err(|e| {
                        cx.err(
                            Some(f.span()),
                            "topology.file",
                            format!("{}: {e}", path.display()),
                        )
                    })?;
                    let g = &topo.graph;
                    let mut edges: Vec<(u32, u32)> = (0..g.arc_count() as u32)
                        .map(|a| g.arc(a))
                        .map(|a| (a.from.min(a.to), a.from.max(a.to)))
                        .collect();
                    edges.sort_unstable();
                    edges.dedup();
                    TopologySpec::NetJson {
                        names: topo.names().to_vec(),
                        edges,
                    }
                }
                "links" => {
                    let l = t.links.as_ref().ok_or_else(|| {
                        cx.err(Some(t.kind.span()), "topology.links", "a links topology needs links = [[\"a\", \"b\"], ...]")
                    })?;
                    let mut names: Vec<String> = Vec::new();
                    let mut edges = Vec::new();
                    for pair in l.get_ref() {
                        if pair.len() != 2 || pair[0] == pair[1] {
                            return Err(cx.err(Some(l.span()), "topology.links", "each link names two different nodes"));
                        }
                        let mut ends = [0u32; 2];
                        for (e, name) in ends.iter_mut().zip(pair) {
                            *e = match names.iter().position(|n| n == name) {
                                Some(i) => i as u32,
                                None => {
                                    names.push(name.clone());
                                    names.len() as u32 - 1
                                }
                            };
                        }
                        let e = (ends[0].min(ends[1]), ends[0].max(ends[1]));
                        if edges.contains(&e) {
                            return Err(cx.err(Some(l.span()), "topology.links", format!("{} and {} are linked twice", pair[0], pair[1])));
                        }
                        edges.push(e);
                    }
                    TopologySpec::NetJson { names, edges }
                }
                other => return Err(cx.err(
                    Some(t.kind.span()),
                    "topology.kind",
                    format!(
                        "unknown topology \"{other}\" (line, grid, parallel, geometric, citymesh, wisp, netjson, links)"
                    ),
                )),
            };
        let names = topology.node_names();
        let known = |v: &Spanned<String>, field: &str| -> Result<(), ScenarioError> {
            if names.iter().any(|n| n == v.get_ref()) {
                Ok(())
            } else {
                let some: Vec<&str> = names.iter().take(6).map(String::as_str).collect();
                Err(cx.err(
                    Some(v.span()),
                    field,
                    format!(
                        "no node \"{}\" in this topology (nodes: {}{})",
                        v.get_ref(),
                        some.join(", "),
                        if names.len() > 6 { ", ..." } else { "" }
                    ),
                ))
            }
        };
        for (i, f) in raw.flows.iter().enumerate() {
            known(&f.from, &format!("flows[{i}].from"))?;
            known(&f.to, &format!("flows[{i}].to"))?;
            if f.from.get_ref() == f.to.get_ref() {
                return Err(cx.err(
                    Some(f.to.span()),
                    &format!("flows[{i}].to"),
                    "a flow needs two different nodes",
                ));
            }
        }
        for (i, o) in raw.links.iter().enumerate() {
            for end in o.between.get_ref() {
                if !names.contains(end) {
                    return Err(cx.err(
                        Some(o.between.span()),
                        &format!("links[{i}].between"),
                        format!("no node \"{end}\" in this topology"),
                    ));
                }
            }
        }
        let link = cx.link(&raw.link, &LinkSpec::default(), "link")?;
        let mut links = Vec::new();
        for (i, o) in raw.links.iter().enumerate() {
            let field = format!("links[{i}]");
            let ends = o.between.get_ref();
            if ends.len() != 2 {
                return Err(cx.err(
                    Some(o.between.span()),
                    &format!("{field}.between"),
                    "name exactly two nodes",
                ));
            }
            let mut spec = cx.link(&o.link(), &link, &field)?;
            spec.carrier = o.carrier.unwrap_or(false);
            for d in &o.down {
                let v = d.get_ref();
                if v.len() != 2 {
                    return Err(cx.err(
                        Some(d.span()),
                        &format!("{field}.down"),
                        "each interval is [\"from\", \"until\"]",
                    ));
                }
                let parse = |s: &str| {
                    humantime::parse_duration(s.trim()).map_err(|e| {
                        cx.err(
                            Some(d.span()),
                            &format!("{field}.down"),
                            format!("\"{s}\": {e}"),
                        )
                    })
                };
                let (a, b) = (parse(&v[0])?, parse(&v[1])?);
                spec.down.push((
                    braid_proto::time::Instant::ZERO + a,
                    braid_proto::time::Instant::ZERO + b,
                ));
            }
            let mut last = None;
            for f in &o.fade {
                let (at, loss) = f.get_ref();
                let at = humantime::parse_duration(at.trim()).map_err(|e| {
                    cx.err(
                        Some(f.span()),
                        &format!("{field}.fade"),
                        format!("\"{at}\": {e}"),
                    )
                })?;
                if !(0.0..=1.0).contains(loss) || last.is_some_and(|l| at < l) {
                    return Err(cx.err(
                        Some(f.span()),
                        &format!("{field}.fade"),
                        "points are [\"time\", loss in 0..1], in time order",
                    ));
                }
                last = Some(at);
                spec.fade
                    .push((braid_proto::time::Instant::ZERO + at, *loss));
            }
            links.push(LinkOverride {
                a: ends[0].clone(),
                b: ends[1].clone(),
                spec,
            });
        }
        if let TopologySpec::Parallel { paths, hops } = topology {
            if hops < 2 && paths > 1 {
                return Err(cx.err(
                    Some(t.kind.span()),
                    "topology.hops",
                    "parallel paths need at least 2 hops (two nodes have one link between them)",
                ));
            }
        }
        let mut sweep = Sweep::default();
        if let Some(sw) = &raw.sweep {
            if let Some(pl) = &sw.path_loss {
                if !matches!(topology, TopologySpec::Parallel { .. }) {
                    return Err(cx.err(
                        Some(pl.span()),
                        "sweep.path_loss",
                        "sweeps path loss of a parallel topology only",
                    ));
                }
                if let Some(bad) = pl.get_ref().iter().find(|l| !(0.0..1.0).contains(*l)) {
                    return Err(cx.err(
                        Some(pl.span()),
                        "sweep.path_loss",
                        format!("{bad} is not a loss ratio in [0, 1)"),
                    ));
                }
                // Each path's first hop keeps its model; its mean must be
                // one a sweep can set.
                if let TopologySpec::Parallel { paths, .. } = &topology {
                    for p in 0..*paths {
                        let first = format!("p{p}h0");
                        let spec = links
                            .iter()
                            .rev()
                            .find(|o| (o.a == "s" && o.b == first) || (o.a == first && o.b == "s"))
                            .map_or(&link, |o| &o.spec);
                        if spec.loss.with_mean_loss(0.5).is_none() {
                            return Err(cx.err(
                                Some(pl.span()),
                                "sweep.path_loss",
                                format!(
                                    "the first hop of path {p} (s to {first}) has a loss model \
                                     whose mean a sweep cannot set (Gilbert-Elliott with loss in \
                                     Good, or periods in time); give that link `loss` and `burst`"
                                ),
                            ));
                        }
                    }
                }
                sweep.path_loss = pl.get_ref().clone();
            }
            if let Some(ps) = &sw.path_scale {
                let paths = match &topology {
                    TopologySpec::Parallel { paths, .. } if sw.path_loss.is_some() => *paths,
                    _ => return Err(cx.err(
                        Some(ps.span()),
                        "sweep.path_scale",
                        "scales the path_loss sweep of a parallel topology: give sweep.path_loss",
                    )),
                };
                let scales = ps.get_ref();
                if scales.len() > paths {
                    return Err(cx.err(
                        Some(ps.span()),
                        "sweep.path_scale",
                        format!("{} scales for {paths} paths", scales.len()),
                    ));
                }
                let top = sweep.path_loss.iter().copied().fold(0.0, f64::max);
                if let Some((p, bad)) = scales
                    .iter()
                    .enumerate()
                    .find(|(_, &k)| !(k >= 0.0 && k * top < 1.0))
                {
                    return Err(cx.err(
                        Some(ps.span()),
                        "sweep.path_scale",
                        format!(
                            "path {p}'s scale {bad}: every path's loss (the largest path_loss, \
                             {top}, times its scale) must be a ratio in [0, 1)"
                        ),
                    ));
                }
                sweep.path_scale = scales.clone();
            }
            for (i, m) in sw.modes.iter().enumerate() {
                sweep.modes.push(cx.mode(m, &format!("sweep.modes[{i}]"))?);
            }
        }
        let mut node_failures = Vec::new();
        for (i, n) in raw.nodes.iter().enumerate() {
            known(&n.name, &format!("nodes[{i}].name"))?;
            for d in &n.down {
                let v = d.get_ref();
                let field = format!("nodes[{i}].down");
                if v.len() != 2 {
                    return Err(cx.err(
                        Some(d.span()),
                        &field,
                        "each interval is [\"from\", \"until\"]",
                    ));
                }
                let parse = |s: &str| {
                    humantime::parse_duration(s.trim())
                        .map_err(|e| cx.err(Some(d.span()), &field, format!("\"{s}\": {e}")))
                };
                let (from, until) = (parse(&v[0])?, parse(&v[1])?);
                if until <= from {
                    return Err(cx.err(Some(d.span()), &field, "until must be after from"));
                }
                node_failures.push(NodeFailure {
                    name: n.name.get_ref().clone(),
                    from,
                    until,
                });
            }
        }
        let duration = cx.duration(&raw.duration, "duration", Duration::from_secs(60))?;
        let mut strangers = Vec::new();
        for (i, st) in raw.strangers.iter().enumerate() {
            let field = format!("strangers[{i}]");
            if st.near.is_empty() {
                return Err(cx.err(None, &format!("{field}.near"), "name at least one node"));
            }
            for n in &st.near {
                known(n, &format!("{field}.near"))?;
            }
            let rate = match &st.rate {
                None => 100,
                Some(r) if (1..=100_000).contains(r.get_ref()) => *r.get_ref(),
                Some(r) => {
                    return Err(cx.err(
                        Some(r.span()),
                        &format!("{field}.rate"),
                        "1 to 100,000 datagrams a second",
                    ))
                }
            };
            let from = cx.duration(&st.from, &format!("{field}.from"), Duration::ZERO)?;
            let until = cx.duration(&st.until, &format!("{field}.until"), duration)?;
            if until <= from {
                return Err(cx.err(
                    st.until.as_ref().map(|u| u.span()),
                    &format!("{field}.until"),
                    "until must be after from",
                ));
            }
            strangers.push(StrangerSpec {
                near: st.near.iter().map(|n| n.get_ref().clone()).collect(),
                rate,
                from,
                until,
            });
        }
        if let Some(n) = &raw.node.name {
            return Err(cx.err(
                Some(n.span()),
                "node.name",
                "[node] has no name: a name is for [[variants]]",
            ));
        }
        let node = cx.node(&raw.node, "node")?;
        let mode = node.mode.unwrap_or(Mode::Single);
        let mut node_variants = Vec::new();
        for (i, v) in raw.variants.iter().enumerate() {
            let field = format!("variants[{i}]");
            let Some(name) = &v.name else {
                return Err(cx.err(None, &format!("{field}.name"), "each variant needs a name"));
            };
            if node_variants
                .iter()
                .any(|n: &NodeVariant| &n.name == name.get_ref())
            {
                return Err(cx.err(
                    Some(name.span()),
                    &format!("{field}.name"),
                    format!("two variants are named \"{}\"", name.get_ref()),
                ));
            }
            node_variants.push(NodeVariant {
                name: name.get_ref().clone(),
                settings: cx.node(v, &field)?,
            });
        }
        if !node_variants.is_empty() && raw.sweep.as_ref().is_some_and(|s| !s.modes.is_empty()) {
            return Err(cx.err(
                None,
                "variants",
                "use either [[variants]] or sweep.modes, not both (a variant can set mode)",
            ));
        }
        let radio = match &raw.radio {
            None => None,
            Some(r) => {
                let mut spec = RadioSpec::default();
                if let Some(rates) = &r.rates {
                    let mut bps = Vec::new();
                    for (k, text) in rates.get_ref().iter().enumerate() {
                        let v = Spanned::new(rates.span(), text.clone());
                        bps.push(cx.rate(&v, &format!("radio.rates[{k}]"))?);
                    }
                    if bps.is_empty() || bps.windows(2).any(|w| w[0] >= w[1]) || bps.len() > 16 {
                        return Err(cx.err(
                            Some(rates.span()),
                            "radio.rates",
                            "1 to 16 bit-rates, lowest first",
                        ));
                    }
                    spec.rates_bps = bps;
                }
                if let Some(q) = r.queue {
                    spec.queue = q.max(1);
                }
                let n = spec.rates_bps.len();
                for (field, l) in std::iter::once(("link".to_string(), &link)).chain(
                    links
                        .iter()
                        .enumerate()
                        .map(|(i, o)| (format!("links[{i}]"), &o.spec)),
                ) {
                    if !l.rate_loss.is_empty() && l.rate_loss.len() != n {
                        return Err(cx.err(
                            None,
                            &format!("{field}.rate_loss"),
                            format!("one loss per radio rate: {n} values"),
                        ));
                    }
                }
                Some(spec)
            }
        };
        if radio.is_none() {
            // Rate control and hand-overs are a radio's: without one they
            // would be silently ignored.
            let settings = std::iter::once(("node".to_string(), &node)).chain(
                node_variants
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (format!("variants[{i}]"), &v.settings)),
            );
            for (field, n) in settings {
                let name = if n.rate_control.is_some() {
                    "rate_control"
                } else if n.persistence.is_some() {
                    "persistence"
                } else {
                    continue;
                };
                return Err(cx.err(
                    None,
                    &format!("{field}.{name}"),
                    format!("{name} needs a [radio] section (it is how radios send)"),
                ));
            }
        }
        if radio.is_none()
            && (!link.rate_loss.is_empty() || links.iter().any(|o| !o.spec.rate_loss.is_empty()))
        {
            return Err(cx.err(
                None,
                "link.rate_loss",
                "rate_loss needs a [radio] section naming the rates",
            ));
        }
        let mut flows = Vec::new();
        if let Some(rf) = &raw.random_flows {
            // Pairs from the scenario's seed: every run compares the same pairs.
            use rand_chacha::rand_core::{RngCore, SeedableRng};
            let mut rng =
                rand_chacha::ChaCha8Rng::seed_from_u64(raw.seed.unwrap_or(1) ^ 0x0f10_f10f);
            if names.len() < 2 {
                return Err(cx.err(
                    None,
                    "random_flows",
                    "needs a topology of at least two nodes",
                ));
            }
            let interval = cx.duration(
                &rf.interval,
                "random_flows.interval",
                Duration::from_millis(20),
            )?;
            let start = cx.duration(&rf.start, "random_flows.start", Duration::from_secs(30))?;
            let every = cx.duration(&rf.every, "random_flows.every", Duration::ZERO)?;
            let duration = rf
                .duration
                .as_ref()
                .map(|_| cx.duration(&rf.duration, "random_flows.duration", Duration::ZERO))
                .transpose()?;
            let tcp = match rf.kind.as_ref().map(|k| k.get_ref().as_str()) {
                None | Some("cbr") => false,
                Some("tcp") => true,
                Some(other) => {
                    return Err(cx.err(
                        rf.kind.as_ref().map(|k| k.span()),
                        "random_flows.kind",
                        format!("unknown flow kind \"{other}\" (cbr, tcp)"),
                    ))
                }
            };
            let mode = rf
                .mode
                .as_ref()
                .map(|m| cx.mode(m, "random_flows.mode"))
                .transpose()?;
            for i in 0..rf.flows {
                let a = (rng.next_u64() % names.len() as u64) as usize;
                let mut b = (rng.next_u64() % (names.len() as u64 - 1)) as usize;
                if b >= a {
                    b += 1;
                }
                flows.push(FlowSpec {
                    name: format!("random{i}"),
                    from: names[a].clone(),
                    to: names[b].clone(),
                    size: rf.size.unwrap_or(160).clamp(44, 9000),
                    interval: interval.max(Duration::from_micros(1)),
                    count: rf.count.unwrap_or(500),
                    // Flow i starts `every` after flow i-1 (one at a time,
                    // as SrcRR measured its pairs), or all together.
                    start: start + every * i as u32,
                    mode,
                    tcp_bytes: tcp.then_some(1 << 30),
                    duration,
                });
            }
        }
        let run_for = duration;
        for (i, f) in raw.flows.iter().enumerate() {
            let field = format!("flows[{i}]");
            let kind = f.kind.as_ref().map_or("cbr", |k| k.get_ref().as_str());
            let tcp_bytes = match kind {
                "cbr" | "udp" => None,
                "tcp" => Some(f.bytes.unwrap_or(1 << 30)),
                other => {
                    return Err(cx.err(
                        f.kind.as_ref().map(|k| k.span()),
                        &format!("{field}.kind"),
                        format!("unknown flow kind \"{other}\" (cbr, udp, tcp)"),
                    ))
                }
            };
            let duration = f
                .duration
                .as_ref()
                .map(|_| cx.duration(&f.duration, &format!("{field}.duration"), Duration::ZERO))
                .transpose()?;
            let size = f
                .size
                .unwrap_or(if kind == "udp" { 1400 } else { 160 })
                .clamp(44, 9000);
            let (mut interval, mut count) = (
                cx.duration(
                    &f.interval,
                    &format!("{field}.interval"),
                    Duration::from_millis(20),
                )?,
                f.count.unwrap_or(500),
            );
            if kind == "udp" {
                // iperf3-style UDP at a rate: above the path's capacity,
                // it saturates it.
                let rate = f.rate.as_ref().ok_or_else(|| {
                    cx.err(
                        f.kind.as_ref().map(|k| k.span()),
                        &format!("{field}.rate"),
                        "a udp flow needs rate = \"10Mbit\" (and duration)",
                    )
                })?;
                let bps = cx.rate(rate, &format!("{field}.rate"))?;
                let lasts = duration.unwrap_or(Duration::from_secs(10));
                interval = Duration::from_nanos(
                    ((size as u64 * 8).saturating_mul(1_000_000_000) / bps).max(1),
                );
                count = (lasts.as_nanos() / interval.as_nanos().max(1)) as u64;
                if count > 10_000_000 {
                    return Err(cx.err(
                        Some(rate.span()),
                        &format!("{field}.rate"),
                        "more than 10 million packets: lower the rate or the duration",
                    ));
                }
            } else if f.rate.is_some() {
                return Err(cx.err(
                    f.rate.as_ref().map(|r| r.span()),
                    &format!("{field}.rate"),
                    "rate is for udp flows (cbr flows set size and interval)",
                ));
            }
            let i = flows.len();
            flows.push(FlowSpec {
                name: f.name.clone().unwrap_or_else(|| format!("flow{i}")),
                from: f.from.get_ref().clone(),
                to: f.to.get_ref().clone(),
                size,
                interval,
                count,
                start: cx.duration(&f.start, &format!("{field}.start"), Duration::from_secs(30))?,
                mode: f
                    .mode
                    .as_ref()
                    .map(|m| cx.mode(m, &format!("{field}.mode")))
                    .transpose()?,
                tcp_bytes,
                duration,
            });
            if flows[i].interval.is_zero() {
                return Err(cx.err(
                    f.interval.as_ref().map(|s| s.span()),
                    &format!("{field}.interval"),
                    "must be positive",
                ));
            }
            // A flow must run inside the scenario: one that starts after
            // it would report nothing sent as all delivered, one that
            // outlasts it would be cut and its rate misread.
            let flow = &flows[i];
            // Errors point at the flow (its `from`) when it gives no start.
            let at = f.start.as_ref().map_or_else(|| f.from.span(), |s| s.span());
            if flow.start >= run_for {
                return Err(cx.err(
                    Some(at.clone()),
                    &format!("{field}.start"),
                    format!(
                        "starts at {:?}, not before the scenario's end ({:?}): move it or lengthen `duration`",
                        flow.start, run_for
                    ),
                ));
            }
            let lasts = match (flow.tcp_bytes, flow.duration) {
                (_, Some(d)) => Some((d, "duration")),
                (None, None) => {
                    let count = flow.count.min(u64::from(u32::MAX)) as u32;
                    Some((
                        flow.interval.checked_mul(count).unwrap_or(Duration::MAX),
                        "count",
                    ))
                }
                (Some(_), None) => None,
            };
            if let Some((lasts, what)) = lasts {
                if flow.start.saturating_add(lasts) > run_for {
                    return Err(cx.err(
                        Some(at),
                        &format!("{field}.{what}"),
                        format!(
                            "runs from {:?} to {:?}, past the scenario's end ({:?}): shorten it or lengthen `duration`",
                            flow.start,
                            flow.start.saturating_add(lasts),
                            run_for
                        ),
                    ));
                }
            }
        }
        Ok(Scenario {
            name: raw.name.unwrap_or_else(|| file.to_string()),
            description: raw.description.unwrap_or_default(),
            duration,
            seed: raw.seed.unwrap_or(1),
            runs: raw.runs.unwrap_or(1).max(1),
            topology,
            link,
            links,
            mode,
            paths: node.paths.unwrap_or(3),
            flush: node.flush.unwrap_or(Duration::from_millis(20)),
            reorder: node.reorder.unwrap_or(false),
            metric: node.metric.unwrap_or_default(),
            damping: node.damping.unwrap_or(true),
            ignore_tx_failures: node.ignore_tx_failures.unwrap_or(true),
            rate_control: node.rate_control.unwrap_or_default(),
            persistence: node.persistence.unwrap_or(1),
            bound: node
                .bound
                .unwrap_or(Some(braid_proto::node::LateBinding::DEFAULT_BOUND)),
            clients: node.clients.clone().unwrap_or_default(),
            radio,
            node_variants,
            flows,
            sweep,
            node_failures,
            auth: node.auth.unwrap_or(false),
            strangers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_topology_is_refused_before_it_is_built() {
        // Found by the scenario_text fuzz target: 2.8 billion hops per path
        // allocated until memory ran out.
        let text = "name = \"x\"\n[topology]\nkind = \"parallel\"\npaths = 3\nhops = 2777777777\n";
        let e = Scenario::parse("x.toml", text).unwrap_err();
        assert_eq!(e.field, "topology.hops");
        assert!(e.message.contains("at most 10000 nodes"), "{e}");
        let grid = "name = \"x\"\n[topology]\nkind = \"grid\"\nwidth = 1000\nheight = 1000\n";
        assert_eq!(
            Scenario::parse("x.toml", grid).unwrap_err().field,
            "topology.width"
        );
    }

    const SWEPT: &str = r#"
name = "swept"
duration = "60s"
[topology]
kind = "parallel"
paths = 2
hops = 2
[link]
loss = 0.1
burst = 8
[[links]]
between = ["s", "p0h0"]
delay = "50ms"
down = [["3s", "4s"]]
[[flows]]
from = "s"
to = "t"
[sweep]
path_loss = [0.2]
"#;

    #[test]
    fn a_loss_sweep_keeps_the_first_hops_burst_and_override() {
        // The sweep's loss with [link]'s burst.
        let swept = |v: &Scenario, p: usize| {
            let loss = v.hop_spec("s", &format!("p{p}h0")).loss;
            assert!((loss.mean_loss() - 0.2).abs() < 1e-9, "{loss:?}");
            assert!((loss.mean_burst().unwrap() - 8.0).abs() < 1e-9, "{loss:?}");
        };
        let s = Scenario::parse("t.toml", SWEPT).unwrap();
        let v = &s.variants()[0].scenario;
        swept(v, 0);
        swept(v, 1);
        // Path 0's override keeps its delay and its down interval.
        let first = v.hop_spec("s", "p0h0");
        assert_eq!(first.delay, Duration::from_millis(50));
        assert_eq!(first.down.len(), 1);
        // The other hops keep [link]: end to end, 1 - 0.8 * 0.9 lost.
        let path = v.parallel_path_loss(1).unwrap();
        assert!((path.loss - 0.28).abs() < 1e-9, "{path:?}");
        assert!((path.burst - 8.0).abs() < 1e-9);
        // A burst given without a loss is a sweep's burst too.
        let lossless = Scenario::parse("t.toml", &SWEPT.replace("loss = 0.1\n", "")).unwrap();
        let v = &lossless.variants()[0].scenario;
        swept(v, 1);
        assert_eq!(v.hop_spec("p1h0", "t").loss.mean_loss(), 0.0);
    }

    #[test]
    fn a_sweep_scales_each_paths_loss_and_refuses_bad_scales() {
        let text = SWEPT.replace(
            "path_loss = [0.2]",
            "path_loss = [0.2, 0.4]\npath_scale = [0.5]",
        );
        let s = Scenario::parse("t.toml", &text).unwrap();
        let v = s.variants();
        let first_hop = |i: usize, p: usize| {
            v[i].scenario
                .hop_spec("s", &format!("p{p}h0"))
                .loss
                .mean_loss()
        };
        // Path 0 at half the swept loss, path 1 (not listed) at all of it.
        assert!((first_hop(0, 0) - 0.1).abs() < 1e-9 && (first_hop(0, 1) - 0.2).abs() < 1e-9);
        assert!((first_hop(1, 0) - 0.2).abs() < 1e-9 && (first_hop(1, 1) - 0.4).abs() < 1e-9);
        // The theory reads each path's own loss: 1 - 0.9 x 0.9 and 1 - 0.8 x 0.9.
        assert!((v[0].scenario.parallel_path_loss(0).unwrap().loss - 0.19).abs() < 1e-9);
        assert!((v[0].scenario.parallel_path_loss(1).unwrap().loss - 0.28).abs() < 1e-9);
        for (bad, says) in [
            ("path_scale = [1.0, 1.0, 1.0]", "3 scales for 2 paths"),
            ("path_scale = [3.0]", "path 0's scale 3"),
            ("path_scale = [-1.0]", "path 0's scale -1"),
        ] {
            let text = SWEPT.replace(
                "path_loss = [0.2]",
                &format!("path_loss = [0.2, 0.4]\n{bad}"),
            );
            let err = Scenario::parse("t.toml", &text).unwrap_err();
            assert_eq!(err.field, "sweep.path_scale", "{err}");
            assert!(err.message.contains(says), "{err}");
        }
        let alone = SWEPT.replace("path_loss = [0.2]", "path_scale = [0.5]");
        assert_eq!(
            Scenario::parse("t.toml", &alone).unwrap_err().field,
            "sweep.path_scale"
        );
    }

    #[test]
    fn a_flow_outside_the_run_is_refused() {
        let late = SWEPT.replace("to = \"t\"", "to = \"t\"\nstart = \"70s\"");
        let err = Scenario::parse("t.toml", &late).unwrap_err();
        assert_eq!(err.field, "flows[0].start", "{err}");
        // 500 packets every 20 ms from 55 s: 10 s, past the 60 s end.
        let long = SWEPT.replace("to = \"t\"", "to = \"t\"\nstart = \"55s\"");
        let err = Scenario::parse("t.toml", &long).unwrap_err();
        assert_eq!(err.field, "flows[0].count", "{err}");
        let tcp = SWEPT.replace(
            "to = \"t\"",
            "to = \"t\"\nkind = \"tcp\"\nstart = \"50s\"\nduration = \"20s\"",
        );
        let err = Scenario::parse("t.toml", &tcp).unwrap_err();
        assert_eq!(err.field, "flows[0].duration", "{err}");
        assert!(Scenario::parse("t.toml", SWEPT).is_ok());
    }

    #[test]
    fn a_sweep_refuses_a_first_hop_whose_mean_it_cannot_set() {
        let text = SWEPT.replace("delay = \"50ms\"", "delay = \"50ms\"\nfades_every = \"2s\"");
        let err = Scenario::parse("t.toml", &text).unwrap_err();
        assert_eq!(err.field, "sweep.path_loss", "{err}");
        assert!(err.message.contains("path 0"), "{err}");
    }

    #[test]
    fn a_full_scenario_parses_with_defaults() {
        let s = Scenario::parse(
            "t.toml",
            r#"
name = "demo"
duration = "40s"
[topology]
kind = "parallel"
paths = 3
hops = 2
[link]
loss = 0.05
burst = 3
delay = "10ms"
rate = "10Mbit"
[[links]]
between = ["s", "p0h0"]
loss = 0.2
down = [["30s", "31s"]]
[node]
mode = "mirror:2"
[[flows]]
from = "s"
to = "t"
mode = "parity:4"
"#,
        )
        .unwrap();
        assert_eq!(s.topology, TopologySpec::Parallel { paths: 3, hops: 2 });
        assert!((s.link.loss.mean_loss() - 0.05).abs() < 1e-9);
        assert_eq!(s.link.rate_bps, Some(10_000_000));
        assert_eq!(s.links[0].spec.loss, LossModel::Bernoulli(0.2));
        assert_eq!(s.links[0].spec.down.len(), 1);
        assert_eq!(s.mode, Mode::Mirror(2));
        assert_eq!(s.flows[0].interval, Duration::from_millis(20));
        assert_eq!(s.flows[0].mode, Some(Mode::Parity(4)));
    }

    #[test]
    fn random_flows_are_the_same_pairs_every_time() {
        let text = "seed = 4\n[topology]\nkind = \"grid\"\nwidth = 5\nheight = 5\n[random_flows]\nflows = 30\nmode = \"mirror:2\"\n";
        let a = Scenario::parse("r.toml", text).unwrap();
        let b = Scenario::parse("r.toml", text).unwrap();
        assert_eq!(a.flows, b.flows);
        assert_eq!(a.flows.len(), 30);
        let names = a.topology.node_names();
        for f in &a.flows {
            assert!(names.contains(&f.from) && names.contains(&f.to) && f.from != f.to);
            assert_eq!(f.mode, Some(Mode::Mirror(2)));
        }
        let other = Scenario::parse("r.toml", &text.replace("seed = 4", "seed = 5")).unwrap();
        assert_ne!(a.flows, other.flows, "another seed, other pairs");
    }

    #[test]
    fn radios_variants_and_new_flow_kinds_parse_and_refuse_bad_values() {
        let base = "[topology]\nkind = \"links\"\nlinks = [[\"a\", \"b\"]]\n";
        let ok = Scenario::parse(
            "v.toml",
            &format!("{base}[radio]\nrates = [\"6Mbit\", \"54Mbit\"]\n[link]\nretries = 1\nrate_loss = [0.0, 0.3]\n[[flows]]\nkind = \"udp\"\nfrom = \"a\"\nto = \"b\"\nrate = \"1Mbit\"\nduration = \"2s\"\n[[variants]]\nname = \"x\"\nmetric = \"ett\"\nbinding = \"early\"\n[[variants]]\nname = \"y\"\nbound = 4\n"),
        )
        .unwrap();
        assert_eq!(
            ok.radio.as_ref().unwrap().rates_bps,
            vec![6_000_000, 54_000_000]
        );
        assert_eq!(ok.link.rate_loss, vec![0.0, 0.3]);
        // 1400-byte packets at 1 Mbit/s for 2 s.
        assert_eq!(ok.flows[0].interval, Duration::from_micros(11_200));
        assert_eq!(ok.flows[0].count, 178);
        let v = ok.variants();
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].scenario.metric, v[0].scenario.bound),
            (MetricKind::Ett, None)
        );
        assert_eq!(v[1].scenario.bound, Some(4));
        assert_eq!(v[1].name.as_deref(), Some("y"));
        let e = |text: &str| {
            Scenario::parse("bad.toml", &format!("{base}{text}"))
                .unwrap_err()
                .to_string()
        };
        assert!(
            e("[link]\nrate_loss = [0.1]\n").contains("link.rate_loss: rate_loss needs a [radio]")
        );
        assert!(e("[radio]\n[link]\nrate_loss = [0.1]\n").contains("one loss per radio rate: 4"));
        assert!(e("[radio]\nrates = [\"11Mbit\", \"1Mbit\"]\n")
            .contains("radio.rates: 1 to 16 bit-rates, lowest first"));
        assert!(e("[[flows]]\nkind = \"udp\"\nfrom = \"a\"\nto = \"b\"\n")
            .contains("flows[0].rate: a udp flow needs rate"));
        assert!(e("[node]\nrate_control = \"ideal\"\n")
            .contains("node.rate_control: rate_control needs a [radio] section"));
        assert!(e("[[variants]]\nname = \"p\"\npersistence = 40\n")
            .contains("variants[0].persistence: persistence needs a [radio]"));
        assert!(e("[radio]\n[node]\nrate_control = \"minstrel\"\n")
            .contains("node.rate_control: unknown rate control \"minstrel\""));
        assert!(e("[radio]\n[node]\npersistence = 0\n")
            .contains("node.persistence: 0 hand-overs: 1 to 64"));
        assert!(e("[[variants]]\nmetric = \"etx\"\n")
            .contains("variants[0].name: each variant needs a name"));
        assert!(e("[node]\nmetric = \"speed\"\n")
            .starts_with("bad.toml:5: node.metric: unknown metric"));
        assert!(e("[node]\nbinding = \"soon\"\n").contains("node.binding: unknown binding"));
        assert!(e("[link]\nretries = 1000\n").contains("link.retries"));
        assert!(Scenario::parse(
            "l.toml",
            "[topology]\nkind = \"links\"\nlinks = [[\"a\", \"a\"]]\n"
        )
        .unwrap_err()
        .to_string()
        .contains("two different nodes"));
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let e = |text: &str| Scenario::parse("bad.toml", text).unwrap_err().to_string();
        assert_eq!(
            e("[topology]\nkind = \"line\"\nnodes = 3\n[node]\nmode = \"raid6\"\n"),
            "bad.toml:5: node.mode: unknown redundancy mode \"raid6\" (expected single, stripe, stripe:pinned, mirror:K, tree, parity:X, parity-rotating:X, erasure:N,M[,DEPTH] or adaptive[:TARGET])"
        );
        assert!(e("[topology]\nkind = \"ring\"\n")
            .starts_with("bad.toml:2: topology.kind: unknown topology"));
        assert!(
            e("[topology]\nkind = \"line\"\nnodes = 3\n[link]\ndelay = \"soon\"\n")
                .starts_with("bad.toml:5: link.delay:")
        );
        let unknown = e("[topology]\nkind = \"line\"\nnodes = 3\nspeed = 4\n");
        assert!(
            unknown.starts_with("bad.toml:4: topology.speed: unknown field"),
            "{unknown}"
        );
        assert!(e("[topology]\nkind = \"line\"\n").contains("topology.nodes"));
        assert!(e("[topology\n").starts_with("bad.toml:1:"));
        assert_eq!(
            e("[topology]\nkind = \"line\"\nnodes = 3\n[[flows]]\nfrom = \"n1\"\nto = \"n9\"\n"),
            "bad.toml:6: flows[0].to: no node \"n9\" in this topology (nodes: n1, n2, n3)"
        );
    }
}
