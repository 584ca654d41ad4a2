//! Reading a config file into a [`Config`]: [`Config::parse`] runs one
//! small `check_*` function per field or table, in a fixed order, each
//! noting what is wrong and going on, so every problem is reported at
//! once (the first being the one a check that stopped would have named);
//! [`Config::load`] reads the file, and the key file it may name.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use braid_conf::{LocatedError, Source, Spanned};
use braid_proto::classify::{ClassRule, Classifier, IpPrefix, Match, PortRange};
use braid_proto::node::{GatewayChoice, NodeConfig};
use braid_proto::redundancy::reorder::{ReorderConfig, ReorderTimeout};
use braid_proto::redundancy::{Mode, Policy};
use braid_wire::NodeId;

use super::access::check_access;
use super::fields::{check_prefixes, in_range};
use super::routes::{check_install, check_redistribute};
use super::uplink::check_uplink;
use braid_conf::Findings;

use super::costs::{check_costs, cost_overrides};
use super::errors::{ConfigErrors, ConfigLoadError};
use super::keys::{check_auth, load_keys};
use super::origins::{check_origin, load_origins};
use super::schema::{ConfigFile, InterfaceFile, PolicyFile, ProbesFile, TunFile};
use super::settings::{
    Config, DatapathChoice, KernelDelivery, LogFormat, TunConfig, UnderlayFamily,
    DEFAULT_DEAD_AFTER, DEFAULT_GROUP, DEFAULT_GROUP6, DEFAULT_PORT, DEFAULT_SEND_BUFFER,
    DEFAULT_SOCKET,
};

const LOG_LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];

/// The most `[[policy]]` entries: each is a class, 1 to 254.
const MAX_POLICIES: usize = 254;

impl Config {
    /// Reads and checks a config file's text: the config, or every
    /// problem found in it.
    pub fn parse(file: &str, text: &str) -> Result<Config, ConfigErrors> {
        let src = Source::new(file, text);
        let raw: ConfigFile = src.parse()?;
        let mut found = Findings::new(src);
        let labels = check_labels(&mut found, &raw.labels);
        let node = check_node(&mut found, &raw.node);
        let underlay = check_underlay(&mut found, &raw);
        let group = check_group(&mut found, raw.group.as_ref(), underlay);
        let metrics = check_metrics(&mut found, raw.metrics.as_ref());
        let log = check_log(&mut found, raw.log.as_ref());
        let log_format = check_log_format(&mut found, raw.log_format.as_ref());
        let interfaces = check_interfaces(&mut found, &raw.interfaces);
        let costs = check_costs(&mut found, &raw.costs, node, &interfaces);
        let tun = check_tun(&mut found, &raw.tun);
        let mut node_config = check_node_config(&mut found, &raw, node);
        let mut datapath = node_config.datapath;
        if underlay == UnderlayFamily::Ipv6 {
            datapath.choice = check_datapath_over_ipv6(&mut found, &raw, datapath.choice);
        }
        let access = check_access(&mut found, &raw.access, &interfaces);
        let nc = &mut node_config.node;
        nc.cost_overrides = cost_overrides(&costs, &interfaces);
        if let Some(m) = &raw.client_margin {
            nc.access.margin = *m.get_ref();
        }
        nc.access.hold = check_client_hold(&mut found, &raw.client_hold, nc.access.hold);
        nc.gateways = check_gateway_choice(&mut found, &raw);
        nc.copy_window = check_copy_window(&mut found, &raw, nc.copy_window);
        let (auth, key_file) = check_auth(&mut found, raw.auth.as_ref());
        nc.control.auth = auth;
        let (origin_key_file, roster_file) = check_origin(&mut found, raw.origin.as_ref());
        let lan_interfaces = check_lan_interfaces(&mut found, &raw.lan_interfaces, &interfaces);
        let uplink = check_uplink(&mut found, raw.uplink.as_ref(), &nc.control.prefixes);
        let install = check_install(&mut found, raw.install.as_ref());
        let install_protocol = install
            .as_ref()
            .map_or(crate::routes::DEFAULT_PROTOCOL, |i| i.protocol);
        let redistribute =
            check_redistribute(&mut found, raw.redistribute.as_ref(), install_protocol);
        found.finish(Some(Config {
            costs,
            uplink,
            redistribute,
            install,
            lan_interfaces,
            access,
            dead_after: node_config.dead_after,
            send_buffer: datapath.send_buffer,
            node,
            datapath: datapath.choice,
            kernel_delivery: datapath.delivery,
            port: raw.port.unwrap_or(DEFAULT_PORT),
            underlay,
            group,
            control_socket: raw
                .control_socket
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET)),
            control_group: raw.control_group,
            labels,
            metrics,
            log,
            log_format,
            interfaces,
            tun,
            node_config: node_config.node,
            key_file,
            origin_key_file,
            roster_file,
            source: toml::from_str(text).unwrap_or_default(),
        }))
    }

    /// Reads and checks a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigLoadError> {
        let text = braid_conf::read_text(path).map_err(|e| ConfigLoadError::Read {
            path: path.display().to_string(),
            source: e,
        })?;
        let mut config = Config::parse(&path.display().to_string(), &text)?;
        if let Some(file) = &config.key_file {
            config.node_config.control.auth = load_keys(file)?;
        }
        config.node_config.control.origins = load_origins(
            config.node,
            config.origin_key_file.as_deref(),
            config.roster_file.as_deref(),
        )?;
        Ok(config)
    }
}

/// `[labels]`: names for node ids, 1 to 32 printable characters each.
fn check_labels(
    found: &mut Findings<'_>,
    labels: &BTreeMap<String, Spanned<String>>,
) -> BTreeMap<u16, String> {
    let mut out = BTreeMap::new();
    for (id, name) in labels {
        let field = format!("labels.{id}");
        let n = id.parse().ok().filter(|n| (1..u16::MAX).contains(n));
        if n.is_none() {
            found.refuse(
                Some(name.span()),
                &field,
                format!("\"{id}\" is not a node id (1 to 65534)"),
            );
        }
        let text = name.get_ref().trim();
        if text.is_empty() || text.chars().count() > 32 || text.chars().any(char::is_control) {
            found.refuse(
                Some(name.span()),
                &field,
                "a label is 1 to 32 printable characters",
            );
        } else if let Some(n) = n {
            out.insert(n, text.to_string());
        }
    }
    out
}

fn check_node(found: &mut Findings<'_>, node: &Spanned<u16>) -> NodeId {
    let id = NodeId(*node.get_ref());
    if id.0 == 0 || id == NodeId::NONE || id.0 == u16::MAX {
        found.refuse(Some(node.span()), "node", "node ids are 1 to 65534");
    }
    id
}

/// `underlay`: the IP version of braid's own datagrams between routers.
fn check_underlay(found: &mut Findings<'_>, raw: &ConfigFile) -> UnderlayFamily {
    match raw.underlay.as_ref().map(|v| (v.get_ref().as_str(), v)) {
        None | Some(("ipv4", _)) => UnderlayFamily::Ipv4,
        Some(("ipv6", _)) => UnderlayFamily::Ipv6,
        Some((other, v)) => {
            found.refuse(
                Some(v.span()),
                "underlay",
                format!("\"{other}\" is not one of ipv4, ipv6"),
            );
            UnderlayFamily::Ipv4
        }
    }
}

/// `group`: a link-local multicast group of the underlay's version
/// (224.0.0.0/24, or ff02::/16 over IPv6).
fn check_group(
    found: &mut Findings<'_>,
    group: Option<&Spanned<String>>,
    underlay: UnderlayFamily,
) -> IpAddr {
    let default = match underlay {
        UnderlayFamily::Ipv4 => IpAddr::V4(DEFAULT_GROUP),
        UnderlayFamily::Ipv6 => IpAddr::V6(DEFAULT_GROUP6),
    };
    let Some(g) = group else {
        return default;
    };
    let src = found.src;
    let Some(a) = found.keep(src.value::<IpAddr>(g, "group")) else {
        return default;
    };
    let fits = match (a, underlay) {
        (IpAddr::V4(a), UnderlayFamily::Ipv4) => a.is_multicast() && a.octets()[..3] == [224, 0, 0],
        (IpAddr::V6(a), UnderlayFamily::Ipv6) => a.segments()[0] == 0xff02,
        _ => false,
    };
    if !fits {
        let want = match underlay {
            UnderlayFamily::Ipv4 => "a link-local IPv4 multicast group (224.0.0.0/24)",
            UnderlayFamily::Ipv6 => {
                "a link-local IPv6 multicast group (ff02::/16), as underlay = \"ipv6\""
            }
        };
        found.refuse(Some(g.span()), "group", format!("{a} is not {want}"));
    }
    a
}

/// The data path over an IPv6 underlay: user space (the kernel's
/// programs carry braid's datagrams in IPv4 only). `kernel` is refused;
/// `auto` becomes `user`.
fn check_datapath_over_ipv6(
    found: &mut Findings<'_>,
    raw: &ConfigFile,
    choice: DatapathChoice,
) -> DatapathChoice {
    if choice == DatapathChoice::Kernel {
        let span = raw.datapath.as_ref().map(|v| v.span());
        found.refuse(
            span,
            "datapath",
            "the kernel data path carries braid's datagrams in IPv4 only: with underlay = \"ipv6\" use datapath = \"user\" (or leave it out)",
        );
    }
    DatapathChoice::User
}

fn check_metrics(
    found: &mut Findings<'_>,
    metrics: Option<&Spanned<String>>,
) -> Option<SocketAddr> {
    let metrics = metrics?;
    match metrics.get_ref().parse::<SocketAddr>() {
        Ok(a) => Some(a),
        Err(_) => {
            found.refuse(
                Some(metrics.span()),
                "metrics",
                format!(
                    "\"{}\" is not an address and port: write e.g. \"127.0.0.1:9468\" (this host only) or \"[::]:9468\" (every address)",
                    metrics.get_ref()
                ),
            );
            None
        }
    }
}

fn check_log(found: &mut Findings<'_>, log: Option<&Spanned<String>>) -> String {
    match log {
        None => "warn".to_string(),
        Some(l) if LOG_LEVELS.contains(&l.get_ref().as_str()) => l.get_ref().clone(),
        Some(l) => {
            found.refuse(
                Some(l.span()),
                "log",
                format!(
                    "\"{}\" is not one of {}",
                    l.get_ref(),
                    LOG_LEVELS.join(", ")
                ),
            );
            "warn".to_string()
        }
    }
}

/// `log_format`: "text" (the default) or "json".
fn check_log_format(found: &mut Findings<'_>, format: Option<&Spanned<String>>) -> LogFormat {
    match format.map(|f| f.get_ref().as_str()) {
        None | Some("text") => LogFormat::Text,
        Some("json") => LogFormat::Json,
        Some(other) => {
            found.refuse(
                format.map(|f| f.span()),
                "log_format",
                format!("\"{other}\" is not one of text, json"),
            );
            LogFormat::Text
        }
    }
}

/// `[[interface]]`: at least one, each named once.
fn check_interfaces(found: &mut Findings<'_>, raw: &[InterfaceFile]) -> Vec<String> {
    let mut interfaces: Vec<String> = Vec::new();
    for (i, itf) in raw.iter().enumerate() {
        let name = itf.name.get_ref();
        let field = format!("interface[{i}].name");
        if name.is_empty() || name.len() > 15 || name.contains('/') {
            found.refuse(
                Some(itf.name.span()),
                &field,
                format!("\"{name}\" is not an interface name (1-15 characters)"),
            );
        } else if interfaces.contains(name) {
            found.refuse(Some(itf.name.span()), &field, "listed twice");
        } else {
            interfaces.push(name.clone());
        }
    }
    if raw.is_empty() {
        found.refuse(
            None,
            "interface",
            "no [[interface]]: braid needs at least one interface to reach its neighbors",
        );
    }
    interfaces
}

/// `[tun]`: the device's name, address, MTU and the routes into the mesh.
fn check_tun(found: &mut Findings<'_>, tun: &TunFile) -> TunConfig {
    let src = found.src;
    let name = match &tun.name {
        None => "braid0".into(),
        Some(n) if !n.get_ref().is_empty() && n.get_ref().len() <= 15 => n.get_ref().clone(),
        Some(n) => {
            found.refuse(
                Some(n.span()),
                "tun.name",
                "an interface name is 1-15 characters",
            );
            String::new()
        }
    };
    let address = tun
        .address
        .as_ref()
        .and_then(|a| found.keep(ipv4_prefix(&src, a, "tun.address")));
    let address6 = tun
        .address6
        .as_ref()
        .and_then(|a| found.keep(ipv6_address(&src, a, "tun.address6")));
    let mtu = in_range(
        found,
        tun.mtu.as_ref(),
        "tun.mtu",
        576..=9000,
        "576 to 9000",
    );
    let routes = tun
        .routes
        .iter()
        .enumerate()
        .filter_map(|(i, r)| found.keep(src.value(r, &format!("tun.routes[{i}]"))))
        .collect();
    TunConfig {
        name,
        address,
        address6,
        mtu: mtu.unwrap_or(1400),
        mss_clamp: tun.mss_clamp.unwrap_or(false),
        routes,
    }
}

/// An IPv6 address of this router and its prefix length, like
/// 2001:2:0:1::fe/128 (not multicast, link-local or unspecified).
fn ipv6_address(
    src: &Source<'_>,
    v: &Spanned<String>,
    field: &str,
) -> Result<(Ipv6Addr, u8), LocatedError> {
    let prefix = v.get_ref().trim().split_once('/').and_then(|(a, l)| {
        let addr: Ipv6Addr = a.parse().ok()?;
        let len: u8 = l.parse().ok()?;
        let link_local = addr.segments()[0] & 0xffc0 == 0xfe80;
        let usable = !(addr.is_multicast() || addr.is_unspecified() || link_local);
        (len <= 128 && usable).then_some((addr, len))
    });
    prefix.ok_or_else(|| {
        src.err(
            Some(v.span()),
            field,
            format!(
                "\"{}\" is not an IPv6 address with its prefix length like 2001:2:0:1::fe/128 (not link-local or multicast)",
                v.get_ref()
            ),
        )
    })
}

/// An IPv4 address and prefix length, like 198.18.1.0/24.
fn ipv4_prefix(
    src: &Source<'_>,
    v: &Spanned<String>,
    field: &str,
) -> Result<(Ipv4Addr, u8), LocatedError> {
    let prefix = v.get_ref().trim().split_once('/').and_then(|(a, l)| {
        let addr: Ipv4Addr = a.parse().ok()?;
        let len: u8 = l.parse().ok()?;
        (len <= 32).then_some((addr, len))
    });
    prefix.ok_or_else(|| {
        src.err(
            Some(v.span()),
            field,
            format!(
                "\"{}\" is not an IPv4 prefix like 198.18.1.0/24",
                v.get_ref()
            ),
        )
    })
}

/// Where the data path runs, how the kernel's hands packets on, and each
/// interface's send buffer.
struct DatapathSettings {
    choice: DatapathChoice,
    delivery: KernelDelivery,
    send_buffer: usize,
}

/// What the protocol node is told, and the neighbor timeout's multiple.
struct NodeSettings {
    node: NodeConfig,
    datapath: DatapathSettings,
    dead_after: u32,
}

/// The fields the protocol node is told (and, in the file's order of
/// checks, the data path's between them): prefixes, probes, modes and
/// policies, paths, late binding, re-order and dedup windows.
fn check_node_config(found: &mut Findings<'_>, raw: &ConfigFile, node: NodeId) -> NodeSettings {
    let mut nc = NodeConfig::default();
    nc.control.prefixes = check_prefixes(found, &raw.prefixes, "prefixes");
    // Any 16-bit area (docs/protocol.md, "Areas"): 0 is the flat default.
    nc.control.area = raw.area.as_ref().map_or(0, |a| *a.get_ref());
    check_probe_intervals(found, &raw.probes, &mut nc);
    let default_mode = check_mode(found, raw.mode.as_ref());
    if let Some(p) = in_range(
        found,
        raw.paths.as_ref(),
        "paths",
        1..=8,
        "1 to 8 paths per destination",
    ) {
        nc.max_paths = p;
    }
    check_late_binding(found, raw.late_binding.as_ref(), &mut nc);
    nc.equalise_delay = raw.equalise_delay.unwrap_or(false);
    nc.pace = raw.pace.unwrap_or(false);
    if let Some(c) = in_range(
        found,
        raw.urgent_copies.as_ref(),
        "urgent_copies",
        1..=8,
        "1 to 8 copies of an urgent packet (1: none beyond the mode's)",
    ) {
        nc.ingress.urgent_copies = c;
    }
    check_report_interval(found, raw, &mut nc);
    let datapath = check_datapath(found, raw);
    if let Some(reorder) = check_reorder(found, raw) {
        nc.egress.reorder = Some(reorder);
    }
    if let Some(w) = in_range(
        found,
        raw.dedup_window.as_ref(),
        "dedup_window",
        64..=65536,
        "64 to 65,536 sequence numbers",
    ) {
        nc.egress.dedup_window = w;
    }
    (nc.policy, nc.classifier) = check_policies(found, &raw.policy, default_mode);
    let src = found.src;
    found.keep(
        nc.control
            .validate(node)
            .map_err(|e| src.err(None, "probes", e.to_string())),
    );
    let dead_after = in_range(
        found,
        raw.probes.dead_after.as_ref(),
        "probes.dead_after",
        2..=100,
        "2 to 100 small-probe intervals",
    )
    .unwrap_or(DEFAULT_DEAD_AFTER);
    // Checked above (at most 65.535 s): no overflow in a valid file.
    nc.neighbor_timeout = nc.control.probes.small_interval.checked_mul(dead_after);
    NodeSettings {
        node: nc,
        datapath,
        dead_after,
    }
}

/// `[probes]` intervals (their bounds are the node's own check's).
fn check_probe_intervals(found: &mut Findings<'_>, probes: &ProbesFile, nc: &mut NodeConfig) {
    let src = found.src;
    let p = &mut nc.control.probes;
    let small = src.duration(
        &probes.small_interval,
        "probes.small_interval",
        p.small_interval,
    );
    p.small_interval = found.keep(small).unwrap_or(p.small_interval);
    let big = src.duration(&probes.big_interval, "probes.big_interval", p.big_interval);
    p.big_interval = found.keep(big).unwrap_or(p.big_interval);
}

/// `report_interval`: how often each egress session reports its paths to
/// the ingress (1 s by default; pacing wants 250 ms or less).
fn check_report_interval(found: &mut Findings<'_>, raw: &ConfigFile, nc: &mut NodeConfig) {
    let src = found.src;
    let default = nc.path_report_interval;
    let interval = found
        .keep(src.duration(&raw.report_interval, "report_interval", default))
        .unwrap_or(default);
    if braid_proto::node::PATH_REPORT_INTERVALS.contains(&interval) {
        nc.path_report_interval = interval;
    } else {
        found.refuse(
            raw.report_interval.as_ref().map(|v| v.span()),
            "report_interval",
            braid_proto::node::PATH_REPORT_INTERVALS_TEXT,
        );
    }
}

/// `mode`: the default redundancy mode.
fn check_mode(found: &mut Findings<'_>, mode: Option<&Spanned<String>>) -> Mode {
    let src = found.src;
    mode.and_then(|m| found.keep(src.value(m, "mode")))
        .unwrap_or(Mode::Single)
}

/// `late_binding`: 0 (bind at once) or how many datagrams wait per next
/// hop below the binding point.
fn check_late_binding(found: &mut Findings<'_>, v: Option<&Spanned<usize>>, nc: &mut NodeConfig) {
    match in_range(
        found,
        v,
        "late_binding",
        0..=64,
        "0 (bind at once) to 64 datagrams per next hop",
    ) {
        None => {}
        Some(0) => nc.late_binding = None,
        Some(n) => {
            if let Some(l) = &mut nc.late_binding {
                l.bound = n;
            }
        }
    }
}

/// `datapath`, `kernel_delivery` and `send_buffer`.
fn check_datapath(found: &mut Findings<'_>, raw: &ConfigFile) -> DatapathSettings {
    let choice = match raw.datapath.as_ref().map(|v| (v.get_ref().as_str(), v)) {
        None => DatapathChoice::default(),
        Some(("kernel", _)) => DatapathChoice::Kernel,
        Some(("user", _)) => DatapathChoice::User,
        Some(("auto", _)) => DatapathChoice::Auto,
        Some((other, v)) => {
            found.refuse(
                Some(v.span()),
                "datapath",
                format!("\"{other}\" is not one of kernel, user, auto"),
            );
            DatapathChoice::default()
        }
    };
    let delivery = match raw
        .kernel_delivery
        .as_ref()
        .map(|v| (v.get_ref().as_str(), v))
    {
        None => KernelDelivery::default(),
        Some(("auto", _)) => KernelDelivery::Auto,
        Some(("stack", _)) => KernelDelivery::Stack,
        Some(("route", _)) => KernelDelivery::Route,
        Some((other, v)) => {
            found.refuse(
                Some(v.span()),
                "kernel_delivery",
                format!("\"{other}\" is not one of auto, stack, route"),
            );
            KernelDelivery::default()
        }
    };
    let send_buffer = in_range(
        found,
        raw.send_buffer.as_ref(),
        "send_buffer",
        1..=64 << 20,
        "1 byte to 64 MiB",
    );
    DatapathSettings {
        choice,
        delivery,
        send_buffer: send_buffer.unwrap_or(DEFAULT_SEND_BUFFER),
    }
}

/// `reorder`, `reorder_window` and `reorder_max_wait`: the egress's
/// re-order buffer, when on.
fn check_reorder(found: &mut Findings<'_>, raw: &ConfigFile) -> Option<ReorderConfig> {
    let window = in_range(
        found,
        raw.reorder_window.as_ref(),
        "reorder_window",
        8..=4096,
        "8 to 4,096 packets",
    )
    .unwrap_or(ReorderConfig::default().max_packets);
    let src = found.src;
    let max_wait = found
        .keep(src.duration(
            &raw.reorder_max_wait,
            "reorder_max_wait",
            Duration::from_millis(500),
        ))
        .unwrap_or(Duration::from_millis(500));
    if !(Duration::from_millis(2)..=Duration::from_secs(5)).contains(&max_wait) {
        found.refuse(
            raw.reorder_max_wait.as_ref().map(|v| v.span()),
            "reorder_max_wait",
            "2 ms to 5 s",
        );
    }
    (raw.reorder == Some(true)).then(|| ReorderConfig {
        max_packets: window,
        timeout: ReorderTimeout::Adaptive {
            min: Duration::from_millis(2),
            max: max_wait,
            initial: max_wait.min(Duration::from_millis(200)),
        },
    })
}

/// `[[policy]]`: each entry a class (1, 2, ... in order) with what it
/// matches and its mode; `default` for the traffic none matches.
fn check_policies(
    found: &mut Findings<'_>,
    policies: &[PolicyFile],
    default: Mode,
) -> (Policy, Classifier) {
    let mut policy = Policy {
        default,
        ..Policy::default()
    };
    let mut classifier = Classifier::default();
    if policies.len() > MAX_POLICIES {
        found.refuse(None, "policy", "at most 254 [[policy]] entries");
        return (policy, classifier);
    }
    let src = found.src;
    for (i, rp) in policies.iter().enumerate() {
        let class = (i + 1) as u8;
        let mut matches = Match::default();
        if let Some(to) = &rp.to {
            matches
                .dst
                .extend(found.keep(src.value::<IpPrefix>(to, &format!("policy[{i}].to"))));
        }
        if let Some(ports) = &rp.ports {
            let range = src.value::<PortRange>(ports, &format!("policy[{i}].ports"));
            matches.dst_ports.extend(found.keep(range));
        }
        classifier.rules.push(ClassRule {
            name: rp.name.clone().unwrap_or_else(|| format!("policy-{class}")),
            id: class,
            matches,
            urgent: rp.urgent,
        });
        if let Some(mode) = found.keep(src.value(&rp.mode, &format!("policy[{i}].mode"))) {
            policy.classes.insert(class, mode);
        }
    }
    (policy, classifier)
}

/// `client_hold`: at most 10 minutes.
fn check_client_hold(
    found: &mut Findings<'_>,
    v: &Option<Spanned<String>>,
    default: Duration,
) -> Duration {
    let src = found.src;
    let Some(hold) = found.keep(src.duration(v, "client_hold", default)) else {
        return default;
    };
    if hold > Duration::from_secs(600) {
        found.refuse(
            v.as_ref().map(|v| v.span()),
            "client_hold",
            "at most 10 minutes",
        );
    }
    hold
}

/// `copy_window`: how long an egress remembers the packets it delivered
/// to drop copies that entered the mesh twice; `"0s"` turns it off.
fn check_copy_window(
    found: &mut Findings<'_>,
    raw: &ConfigFile,
    default: Option<Duration>,
) -> Option<Duration> {
    let src = found.src;
    let fallback = default.unwrap_or_default();
    let w = found
        .keep(src.duration(&raw.copy_window, "copy_window", fallback))
        .unwrap_or(fallback);
    if w > Duration::from_secs(1) {
        found.refuse(
            raw.copy_window.as_ref().map(|v| v.span()),
            "copy_window",
            "0s (off) to 1s: copies of one packet arrive within the paths' delay difference",
        );
    }
    (!w.is_zero()).then_some(w)
}

/// `gateway_sticky`, `gateway_spread`, `gateway_flows`,
/// `gateway_flow_idle`: how this router, as an entry point, uses several
/// gateways.
fn check_gateway_choice(found: &mut Findings<'_>, raw: &ConfigFile) -> GatewayChoice {
    let d = GatewayChoice::default();
    let src = found.src;
    let max_flows = in_range(
        found,
        raw.gateway_flows.as_ref(),
        "gateway_flows",
        16..=1_048_576,
        "16 to 1048576 flows",
    )
    .unwrap_or(d.max_flows);
    let flow_idle = found
        .keep(src.duration(&raw.gateway_flow_idle, "gateway_flow_idle", d.flow_idle))
        .unwrap_or(d.flow_idle);
    if !(Duration::from_secs(1)..=Duration::from_secs(86_400)).contains(&flow_idle) {
        found.refuse(
            raw.gateway_flow_idle.as_ref().map(|v| v.span()),
            "gateway_flow_idle",
            "1s to 24h",
        );
    }
    GatewayChoice {
        sticky: raw.gateway_sticky.unwrap_or(d.sticky),
        spread: raw.gateway_spread.unwrap_or(d.spread),
        max_flows,
        flow_idle,
    }
}

/// `lan_interfaces`: LAN ports, none an `[[interface]]` or listed twice.
fn check_lan_interfaces(
    found: &mut Findings<'_>,
    raw: &[Spanned<String>],
    interfaces: &[String],
) -> Vec<String> {
    let mut lan_interfaces: Vec<String> = Vec::new();
    for (i, l) in raw.iter().enumerate() {
        let name = l.get_ref();
        let field = format!("lan_interfaces[{i}]");
        if name.is_empty() || name.len() > 15 {
            found.refuse(
                Some(l.span()),
                &field,
                format!("\"{name}\" is not an interface name (1-15 characters)"),
            );
        } else if interfaces.contains(name) || lan_interfaces.contains(name) {
            found.refuse(
                Some(l.span()),
                &field,
                format!("{name} is listed twice (a LAN port is not an [[interface]])"),
            );
        } else {
            lan_interfaces.push(name.clone());
        }
    }
    lan_interfaces
}
