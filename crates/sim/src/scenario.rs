//! Scenario files (TOML): topology, link models, node settings and traffic.
//! Every knob has a default (see `docs/simulator.md`); every error names
//! the file, the line and the field.

use std::path::Path;
use std::time::Duration;

use braid_proto::redundancy::Mode;
use serde::Deserialize;
use thiserror::Error;
use toml::Spanned;

use crate::link::{LinkSpec, LossModel};

/// Why a scenario cannot run.
#[derive(Debug, Error)]
#[error("{file}:{line}: {field}: {message}")]
pub struct ScenarioError {
    pub file: String,
    pub line: usize,
    pub field: String,
    pub message: String,
}

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
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRandomFlows {
    flows: usize,
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
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    mode: Option<Spanned<String>>,
    paths: Option<usize>,
    flush: Option<Spanned<String>>,
    reorder: Option<bool>,
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
    /// the simulated link models decide each link's fate).
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
    pub flows: Vec<FlowSpec>,
    pub sweep: Sweep,
    /// Nodes that fail (and restart with empty state) at given times.
    pub node_failures: Vec<NodeFailure>,
}

/// A node that is down from `from` until `until`, then restarts afresh.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeFailure {
    pub name: String,
    pub from: Duration,
    pub until: Duration,
}

/// Parameters a scenario runs over: every combination is one variant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sweep {
    /// End-to-end loss of every path of a `parallel` topology (applied on
    /// each path's first hop; the other hops keep the `[link]` model).
    pub path_loss: Vec<f64>,
    /// Each replaces the mode of every flow.
    pub modes: Vec<Mode>,
}

/// One point of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub path_loss: Option<f64>,
    pub mode: Option<Mode>,
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
        let mut out = Vec::new();
        for &mode in &modes {
            for &loss in &losses {
                let mut s = self.clone();
                s.sweep = Sweep::default();
                if let Some(m) = mode {
                    s.mode = m;
                    for f in &mut s.flows {
                        f.mode = Some(m);
                    }
                }
                if let (Some(l), TopologySpec::Parallel { paths, .. }) = (loss, &self.topology) {
                    for p in 0..*paths {
                        let mut spec = self.link.clone();
                        spec.loss = if l == 0.0 {
                            LossModel::None
                        } else {
                            LossModel::Bernoulli(l)
                        };
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
                    scenario: s,
                });
            }
        }
        out
    }
}

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    fn err(
        &self,
        span: Option<std::ops::Range<usize>>,
        field: &str,
        message: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            line: span.map_or(1, |s| self.line_of(s.start)),
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn duration(
        &self,
        v: &Option<Spanned<String>>,
        field: &str,
        default: Duration,
    ) -> Result<Duration, ScenarioError> {
        match v {
            None => Ok(default),
            Some(s) => humantime::parse_duration(s.get_ref().trim()).map_err(|e| {
                self.err(
                    Some(s.span()),
                    field,
                    format!(
                        "\"{}\" is not a duration ({e}); write e.g. \"20ms\" or \"1m 30s\"",
                        s.get_ref()
                    ),
                )
            }),
        }
    }

    fn mode(&self, v: &Spanned<String>, field: &str) -> Result<Mode, ScenarioError> {
        v.get_ref()
            .parse()
            .map_err(|e| self.err(Some(v.span()), field, format!("{e}")))
    }

    fn rate(&self, v: &Spanned<String>, field: &str) -> Result<u64, ScenarioError> {
        let s = v.get_ref().trim().to_ascii_lowercase();
        let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let mult = match unit.trim() {
            "bit" | "bps" | "" => 1.0,
            "kbit" | "kbps" => 1e3,
            "mbit" | "mbps" => 1e6,
            "gbit" | "gbps" => 1e9,
            _ => 0.0,
        };
        match num.trim().parse::<f64>() {
            Ok(n) if mult > 0.0 && n > 0.0 && n.is_finite() => Ok((n * mult) as u64),
            _ => Err(self.err(
                Some(v.span()),
                field,
                format!("\"{}\" is not a rate; write e.g. \"10Mbit\"", v.get_ref()),
            )),
        }
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
            spec.loss = if l == 0.0 {
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
        Ok(spec)
    }
}

impl Scenario {
    /// Reads and checks a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
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
        let cx = Ctx { file, text };
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let message = e.message().to_string();
            let field = message
                .split('`')
                .nth(1)
                .map(str::to_string)
                .unwrap_or_else(|| "(syntax)".into());
            cx.err(e.span(), &field, message)
        })?;
        let t = &raw.topology;
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
                    let text = std::fs::read_to_string(&path).map_err(|e| {
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
                other => return Err(cx.err(
                    Some(t.kind.span()),
                    "topology.kind",
                    format!(
                        "unknown topology \"{other}\" (line, grid, parallel, geometric, citymesh, wisp, netjson)"
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
                sweep.path_loss = pl.get_ref().clone();
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
        let mode = match &raw.node.mode {
            Some(m) => cx.mode(m, "node.mode")?,
            None => Mode::Single,
        };
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
                    start,
                    mode,
                    tcp_bytes: None,
                });
            }
        }
        for (i, f) in raw.flows.iter().enumerate() {
            let field = format!("flows[{i}]");
            let tcp_bytes = match f.kind.as_ref().map(|k| k.get_ref().as_str()) {
                None | Some("cbr") => None,
                Some("tcp") => Some(f.bytes.unwrap_or(1 << 30)),
                Some(other) => {
                    return Err(cx.err(
                        f.kind.as_ref().map(|k| k.span()),
                        &format!("{field}.kind"),
                        format!("unknown flow kind \"{other}\" (cbr, tcp)"),
                    ))
                }
            };
            let i = flows.len();
            flows.push(FlowSpec {
                name: f.name.clone().unwrap_or_else(|| format!("flow{i}")),
                from: f.from.get_ref().clone(),
                to: f.to.get_ref().clone(),
                size: f.size.unwrap_or(160).clamp(44, 9000),
                interval: cx.duration(
                    &f.interval,
                    &format!("{field}.interval"),
                    Duration::from_millis(20),
                )?,
                count: f.count.unwrap_or(500),
                start: cx.duration(&f.start, &format!("{field}.start"), Duration::from_secs(30))?,
                mode: f
                    .mode
                    .as_ref()
                    .map(|m| cx.mode(m, &format!("{field}.mode")))
                    .transpose()?,
                tcp_bytes,
            });
            if flows[i].interval.is_zero() {
                return Err(cx.err(
                    f.interval.as_ref().map(|s| s.span()),
                    &format!("{field}.interval"),
                    "must be positive",
                ));
            }
        }
        Ok(Scenario {
            name: raw.name.unwrap_or_else(|| file.to_string()),
            description: raw.description.unwrap_or_default(),
            duration: cx.duration(&raw.duration, "duration", Duration::from_secs(60))?,
            seed: raw.seed.unwrap_or(1),
            runs: raw.runs.unwrap_or(1).max(1),
            topology,
            link,
            links,
            mode,
            paths: raw.node.paths.unwrap_or(3).clamp(1, 16),
            flush: cx.duration(&raw.node.flush, "node.flush", Duration::from_millis(20))?,
            reorder: raw.node.reorder.unwrap_or(false),
            flows,
            sweep,
            node_failures,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn errors_name_file_line_and_field() {
        let e = |text: &str| Scenario::parse("bad.toml", text).unwrap_err().to_string();
        assert_eq!(
            e("[topology]\nkind = \"line\"\nnodes = 3\n[node]\nmode = \"raid6\"\n"),
            "bad.toml:5: node.mode: unknown redundancy mode \"raid6\" (expected single, stripe, stripe:pinned, mirror:K, tree, parity:X, parity-rotating:X, erasure:N,M or adaptive[:TARGET])"
        );
        assert!(e("[topology]\nkind = \"ring\"\n")
            .starts_with("bad.toml:2: topology.kind: unknown topology"));
        assert!(
            e("[topology]\nkind = \"line\"\nnodes = 3\n[link]\ndelay = \"soon\"\n")
                .starts_with("bad.toml:5: link.delay:")
        );
        let unknown = e("[topology]\nkind = \"line\"\nnodes = 3\nspeed = 4\n");
        assert!(
            unknown.starts_with("bad.toml:4: speed: unknown field"),
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
