//! The Grafana dashboard (`dist/grafana/braid.json`) against the metrics
//! the daemon serves: every metric its queries name is a family of the
//! rendered `/metrics` page, every label value a query matches on is one
//! the page carries, and the file is a dashboard Grafana imports (JSON,
//! a `${DS_PROMETHEUS}` input, every panel with a data source and a
//! query).
//!
//! The page is rendered by `metrics::prometheus` for real nodes, not read
//! from the source: four nodes find each other and carry a mirrored
//! stream, so the ingress, the egress and the path report sessions all
//! have samples, and the kernel data path is given a report, so its
//! families are there too. A family only some nodes have (sessions, the
//! kernel) must then be made to appear here before the dashboard may use
//! it, which is what the daemon does on a router that has them.

use std::collections::{BTreeMap, BTreeSet};

use braid_daemon::counters::IoCounters;
use braid_daemon::kernel::KernelReport;
use braid_daemon::metrics::{self, ProcessFacts};
use braid_daemon::routes::RouteCounters;
use braid_daemon::uplink;
use braid_proto::node::{Interface, Node, NodeConfig};
use braid_proto::redundancy::reorder::ReorderConfig;
use braid_proto::redundancy::{Mode, Policy};
use braid_proto::time::Instant;
use braid_wire::{NodeId, Prefix};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

/// The node tests' harnesses (one per kind of driver), shared with them.
#[path = "../../proto/tests/common/mod.rs"]
mod proto_common;

use proto_common::mesh::{host_packet, Driver, Mesh};

const DASHBOARD: &str = include_str!("../../../dist/grafana/braid.json");

/// 1 reaches 4 through 2 or 3 (a diamond, no loss); 1 and 4 serve
/// 198.18.1.0/24 and 198.18.4.0/24; every node mirrors on two paths and
/// re-orders at the egress.
fn diamond() -> Mesh {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let nodes = (1..=4u16)
        .map(|id| {
            let mut config = NodeConfig {
                policy: Policy {
                    default: Mode::Mirror(2),
                    ..Default::default()
                },
                seed: 7 ^ u64::from(id),
                ..NodeConfig::default()
            };
            config.egress.reorder = Some(ReorderConfig::default());
            if id == 1 || id == 4 {
                config.control.prefixes = vec![Prefix::V4 {
                    addr: [198, 18, id as u8, 0],
                    len: 24,
                }];
            }
            Node::new(NodeId(id), config, Instant::ZERO, &mut rng).unwrap()
        })
        .collect();
    let driver = Driver {
        take_deliveries: true,
        ..Driver::default()
    };
    let mut mesh = Mesh::new(nodes, rng, driver);
    for (a, b) in [(0, 1), (1, 3), (0, 2), (2, 3)] {
        mesh.link(a, b, 0.0);
    }
    mesh
}

/// An uplink checker (TCP probes, so no raw socket is needed) whose first
/// round a listener on loopback answered: every uplink family has a
/// sample.
fn answered_uplink(node: &mut Node, now: Instant) -> uplink::Uplink {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = uplink::UplinkConfig {
        prefixes: vec![Prefix::V4 {
            addr: [0; 4],
            len: 0,
        }],
        method: uplink::Method::Tcp(port),
        targets: vec!["127.0.0.1".parse().unwrap()],
        interface: None,
        track: uplink::TrackConfig {
            targets: 1,
            interval: std::time::Duration::from_millis(400),
            timeout: std::time::Duration::from_millis(300),
            reliability: 1,
            down: 3,
            up: 3,
        },
        gateway: None,
    };
    let mut u = uplink::Uplink::open(config, now, 7).unwrap();
    let mut watch = Vec::new();
    u.advance(now, node, &mut watch);
    // Accepted: the probe's handshake is complete.
    let _conn = listener.accept().unwrap();
    if watch.len() == 1 {
        u.connect_ready(Instant(now.0 + 1000), 0, node);
    }
    let t = &u.tracker().targets()[0];
    assert!(t.answered_last && t.last_rtt.is_some(), "{t:?}");
    u
}

/// Every node's `/metrics` page after the diamond carried a stream.
fn pages() -> Vec<String> {
    let mut net = diamond();
    net.run_until(Instant::from_millis(30_000));
    for i in 0..400 {
        let at = Instant(net.now.0 + 20_000);
        net.run_until(at);
        net.nodes[0].send(net.now, &host_packet([198, 18, 4, 9], i));
        net.flush();
    }
    net.run_until(Instant(net.now.0 + 3_000_000));
    // A datagram that is no braid message: a control rx error.
    let now = net.now;
    net.nodes[1].handle_datagram(now, Interface(0), Some(NodeId(1)), &[0xff, 0, 0, 0]);
    let kernel = KernelReport {
        programs: [("rx_forwarded".to_string(), 3), ("pass_control".into(), 1)].into(),
        ..KernelReport::default()
    };
    let process = ProcessFacts {
        started_unix: 1.7e9,
        last_reload: Some((1.7e9 + 60.0, true)),
    };
    let uplink = answered_uplink(&mut net.nodes[0], net.now);
    net.nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            metrics::prometheus(
                n,
                net.now,
                n.neighbors().len(),
                &IoCounters::default(),
                metrics::Parts {
                    kernel: Some(&kernel),
                    uplink: (i == 0).then_some(&uplink),
                    routes: (i == 0).then_some(RouteCounters {
                        redistributed: 2,
                        installed: 3,
                        ..RouteCounters::default()
                    }),
                },
                process,
            )
        })
        .collect()
}

/// A sample's labels, in order.
type Labels = Vec<(String, String)>;

/// A selector's matcher: label, operator, value.
type Matcher = (String, String, String);

/// What the pages say: each family's type, and each family's samples'
/// label values by label name.
#[derive(Default)]
struct Exposition {
    types: BTreeMap<String, String>,
    labels: BTreeMap<(String, String), BTreeSet<String>>,
    samples: Vec<(String, Labels, f64)>,
}

impl Exposition {
    fn read(pages: &[String]) -> Exposition {
        let mut e = Exposition::default();
        for line in pages.iter().flat_map(|p| p.lines()) {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                e.types.insert(name.into(), kind.into());
                continue;
            }
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, parse_labels(rest.strip_suffix('}').unwrap())),
                None => (series, Vec::new()),
            };
            let value = match value {
                "+Inf" => f64::INFINITY,
                v => v.parse().unwrap(),
            };
            for (k, v) in &labels {
                e.labels
                    .entry((name.into(), k.clone()))
                    .or_default()
                    .insert(v.clone());
            }
            e.samples.push((name.into(), labels, value));
        }
        e
    }

    /// The family a series name belongs to: itself, or a histogram's or
    /// summary's (`_bucket`, `_count`, `_sum`).
    fn family_of(&self, name: &str) -> Option<String> {
        if self.types.contains_key(name) {
            return Some(name.into());
        }
        ["_bucket", "_count", "_sum"].iter().find_map(|s| {
            let base = name.strip_suffix(s)?;
            matches!(
                self.types.get(base).map(String::as_str),
                Some("histogram" | "summary")
            )
            .then(|| base.to_string())
        })
    }

    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .find(|(n, l, _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|s| s.2)
    }
}

/// `a="1",b="x"` (the daemon escapes `\`, `"` and newlines).
fn parse_labels(s: &str) -> Labels {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let (k, after) = rest.split_once("=\"").unwrap();
        let mut v = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next().unwrap() {
                (_, '\\') => {
                    let (_, c) = chars.next().unwrap();
                    v.push(if c == 'n' { '\n' } else { c });
                }
                (i, '"') => break i,
                (_, c) => v.push(c),
            }
        };
        out.push((k.to_string(), v));
        rest = after[end + 1..].trim_start_matches(',');
    }
    out
}

/// Every panel, those inside rows included.
fn panels(d: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for p in d["panels"].as_array().expect("panels") {
        out.push(p);
        if let Some(inner) = p["panels"].as_array() {
            out.extend(inner);
        }
    }
    out
}

/// Every PromQL expression: the panels' targets and the template
/// variables' queries.
fn exprs(d: &Value) -> Vec<String> {
    let mut out: Vec<String> = panels(d)
        .iter()
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .map(|t| t["expr"].as_str().expect("a target without expr").into())
        .collect();
    for v in d["templating"]["list"].as_array().unwrap() {
        if let Some(q) = v["query"]["query"].as_str().or(v["query"].as_str()) {
            out.push(q.into());
        }
    }
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// The metric names an expression uses, each with the matchers of its
/// selector (`{...}`, if any) as (label, operator, value).
fn selectors(expr: &str) -> Vec<(String, Vec<Matcher>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(at) = expr[i..].find("braid_") {
        let start = i + at;
        let end = expr[start..]
            .find(|c: char| !is_name_char(c))
            .map_or(expr.len(), |e| start + e);
        i = end;
        if expr[..start].ends_with(is_name_char) {
            continue;
        }
        let name = expr[start..end].to_string();
        let mut matchers = Vec::new();
        if expr[end..].starts_with('{') {
            let close = end + expr[end..].find('}').expect("an unclosed selector");
            for m in expr[end + 1..close].split(',') {
                let m = m.trim();
                if m.is_empty() {
                    continue;
                }
                let op_at = m.find(['=', '!']).expect("a matcher without operator");
                let label = m[..op_at].trim();
                let rest = &m[op_at..];
                let op = ["=~", "!~", "!=", "="]
                    .into_iter()
                    .find(|o| rest.starts_with(o))
                    .unwrap();
                let value = rest[op.len()..].trim().trim_matches('"');
                matchers.push((label.into(), op.into(), value.into()));
            }
            i = close;
        }
        out.push((name, matchers));
    }
    out
}

#[test]
fn every_metric_the_dashboard_queries_is_one_the_daemon_serves() {
    let d: Value = serde_json::from_str(DASHBOARD).expect("braid.json is JSON");
    let page = Exposition::read(&pages());
    let mut used = BTreeSet::new();
    let mut problems = Vec::new();
    for expr in exprs(&d) {
        for (name, matchers) in selectors(&expr) {
            let Some(family) = page.family_of(&name) else {
                problems.push(format!("{name} (in `{expr}`) is not served"));
                continue;
            };
            used.insert(family.clone());
            for (label, op, value) in matchers {
                // Template variables and negative matchers say nothing
                // of what the daemon must serve.
                if value.contains('$') || op.starts_with('!') {
                    continue;
                }
                let served = page.labels.get(&(family.clone(), label.clone()));
                let wanted: Vec<&str> = if op == "=~" {
                    assert!(
                        value
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|'),
                        "only alternations of plain values are checked: {value} in `{expr}`"
                    );
                    value.split('|').collect()
                } else {
                    vec![&value]
                };
                for w in wanted {
                    if !served.is_some_and(|s| s.contains(w)) {
                        problems.push(format!(
                            "{family}{{{label}=\"{w}\"}} (in `{expr}`) is not served; {label} takes {served:?}"
                        ));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The fixture is what makes this test mean anything: it must have
    // made every family the daemon has appear, samples included.
    let source = include_str!("../src/metrics/prometheus.rs");
    for name in page.types.keys() {
        assert!(source.contains(&format!("\"{name}\"")), "{name}");
    }
    for family in page.types.keys() {
        let sampled = page.samples.iter().any(|(n, _, _)| n == family);
        assert!(sampled, "the fixture gave {family} no sample");
    }
    let unused: Vec<_> = page.types.keys().filter(|f| !used.contains(*f)).collect();
    assert!(unused.is_empty(), "families no panel shows: {unused:?}");
}

#[test]
fn the_dashboard_imports_anywhere_and_every_panel_queries_prometheus() {
    let d: Value = serde_json::from_str(DASHBOARD).expect("braid.json is JSON");
    let inputs = d["__inputs"].as_array().expect("__inputs");
    assert!(inputs.iter().any(|i| i["name"] == "DS_PROMETHEUS"
        && i["type"] == "datasource"
        && i["pluginId"] == "prometheus"));
    let schema = d["schemaVersion"].as_u64().expect("schemaVersion");
    assert!(
        (36..=41).contains(&schema),
        "schemaVersion {schema}: not Grafana 10/11"
    );
    assert!(d["uid"].is_string() && d["title"].is_string());
    let node = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "node")
        .expect("a node variable");
    assert_eq!(node["definition"], "label_values(braid_build_info, node)");
    assert_eq!(node["datasource"]["uid"], "${DS_PROMETHEUS}");

    let ds = |v: &Value| v["type"] == "prometheus" && v["uid"] == "${DS_PROMETHEUS}";
    let mut ids = BTreeSet::new();
    let all = panels(&d);
    assert!(all.len() > 10);
    for p in all {
        let title = p["title"].as_str().unwrap_or("?");
        assert!(
            ids.insert(p["id"].as_u64().expect("id")),
            "id of {title} twice"
        );
        assert!(p["gridPos"]["w"].as_u64().is_some(), "{title}: gridPos");
        if p["type"] == "row" {
            continue;
        }
        assert!(ds(&p["datasource"]), "{title}: data source");
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}: no query");
        for t in targets {
            assert!(ds(&t["datasource"]), "{title}: a target's data source");
            let expr = t["expr"].as_str().unwrap_or("");
            assert!(expr.contains("braid_"), "{title}: {expr}");
            assert!(
                expr.contains("$node"),
                "{title}: `{expr}` ignores the node variable"
            );
        }
    }
}

#[test]
fn link_cost_is_in_the_unit_of_etx() {
    let page = Exposition::read(&pages());
    let mut seen = 0;
    for (name, labels, etx) in &page.samples {
        if name != "braid_link_etx" {
            continue;
        }
        let get = |k: &str| labels.iter().find(|(lk, _)| lk == k).unwrap().1.as_str();
        let cost = page
            .value(
                "braid_link_cost",
                &[
                    ("node", get("node")),
                    ("neighbor", get("neighbor")),
                    ("direction", "out"),
                ],
            )
            .unwrap();
        // Lossless links: ETX 1, and the cost of one transmission.
        assert!((etx - 1.0).abs() < 1e-9, "{labels:?} etx {etx}");
        assert!((cost - etx).abs() < 1e-3, "{labels:?} cost {cost}");
        seen += 1;
    }
    assert_eq!(seen, 8, "two links at each end of four");
}
