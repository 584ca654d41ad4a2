//! The daemon's config file (TOML): what it reads, the defaults, and the
//! checks that refuse a bad file with its name, line and field. Every
//! field is documented in docs/operations.md; keep the two in step.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use braid_conf::{LocatedError, Source, Spanned};
use braid_proto::classify::{ClassRule, Classifier, IpPrefix, Match, PortRange};
use braid_proto::node::NodeConfig;
use braid_proto::redundancy::reorder::{ReorderConfig, ReorderTimeout};
use braid_proto::redundancy::{Mode, Policy};
use braid_wire::{NodeId, Prefix};
use serde::{Deserialize, Serialize};

/// UDP port of the underlay, on every interface.
pub const DEFAULT_PORT: u16 = 6868;
/// Link-local multicast group for discovery and flooding (224.0.0.0/24
/// is never forwarded by routers).
pub const DEFAULT_GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 186);
pub const DEFAULT_SOCKET: &str = "/run/braid/braid.sock";
/// Small-probe intervals without a word from a neighbor before it is
/// taken down (its routes move at once). Lower fails over faster; on a
/// link losing a fraction L of probes, a false alarm comes once every
/// 1/L^n probes.
pub const DEFAULT_DEAD_AFTER: u32 = 10;

/// Half of Linux's floor for a socket's send buffer (it doubles what it
/// is given, and keeps at least 4,608 bytes): about two full-size
/// datagrams in the kernel per interface, as the late-binding seed's two
/// packets below the binding point. (4,608 here, doubled, held four.)
pub const DEFAULT_SEND_BUFFER: usize = 2304;

/// Where the data path runs (`datapath`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DatapathChoice {
    /// The kernel (eBPF) where it can; the daemon refuses to start when
    /// the kernel refuses the programs.
    Kernel,
    /// User space only: every packet crosses the daemon.
    User,
    /// The kernel if it takes the programs, else user space (said once).
    #[default]
    Auto,
}

impl DatapathChoice {
    /// The config file's word for it.
    pub fn name(self) -> &'static str {
        match self {
            DatapathChoice::Kernel => "kernel",
            DatapathChoice::User => "user",
            DatapathChoice::Auto => "auto",
        }
    }
}

/// How the kernel data path's egress hands a user packet on
/// (`kernel_delivery`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KernelDelivery {
    /// Into the TUN device's receive side: the stack routes it from there
    /// (netfilter, NAT, policy routing all apply).
    #[default]
    Stack,
    /// Straight to its next hop from the kernel's routing table where it
    /// has one (IPv4, TTL decremented): skips the stack's second pass and
    /// with it netfilter's FORWARD and POSTROUTING (no NAT), as transit
    /// forwarding does.
    Route,
}

/// A checked configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub node: NodeId,
    /// Where the data path runs.
    pub datapath: DatapathChoice,
    /// How the kernel data path's egress hands user packets on.
    pub kernel_delivery: KernelDelivery,
    pub port: u16,
    pub group: Ipv4Addr,
    pub control_socket: PathBuf,
    /// The group that may use the control socket (mode 0660); none: root
    /// only (0600).
    pub control_group: Option<String>,
    /// Names for node ids (`[labels]`).
    pub labels: std::collections::BTreeMap<u16, String>,
    /// Where to serve Prometheus metrics and the NetJSON topology (opt-in).
    pub metrics: Option<SocketAddr>,
    pub log: String,
    pub interfaces: Vec<String>,
    /// A neighbor unheard for this many small-probe intervals is down.
    pub dead_after: u32,
    /// SO_SNDBUF of each interface's data socket, bytes.
    pub send_buffer: usize,
    pub tun: TunConfig,
    /// Access interfaces: where unmodified clients live (`[[access]]`).
    pub access: Vec<AccessInterface>,
    /// LAN ports where the kernel data path encodes at the receive side
    /// (`lan_interfaces`).
    pub lan_interfaces: Vec<String>,
    /// Everything the protocol node is told.
    pub node_config: NodeConfig,
    /// `[auth] key_file`: read by [`Config::load`] into
    /// `node_config.control.auth` (root only).
    pub key_file: Option<PathBuf>,
}

/// The link address every access point gives its access interfaces (the
/// clients' gateway's, the same everywhere: a client keeps its ARP entry
/// across access points). Locally administered.
pub const DEFAULT_GATEWAY_MAC: [u8; 6] = [0x02, 0x62, 0x72, 0x64, 0x00, 0x01];

/// An access interface: an L2 segment (a Wi-Fi AP's interface, a LAN)
/// where unmodified clients live, served by this router as one of
/// possibly several access points.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessInterface {
    pub name: String,
    /// This access point's own address on it, and the clients' subnet
    /// length: the source of its probes, unique per access point.
    pub address: Ipv4Addr,
    pub len: u8,
    /// The clients' default gateway: the same address on every access
    /// point (anycast), answered with `mac`.
    pub gateway: Ipv4Addr,
    pub mac: [u8; 6],
    /// This access point's own IPv6 address in the clients' /64, when it
    /// serves IPv6 clients too: the source of its neighbor solicitations,
    /// unique per access point; the /64 is what its router
    /// advertisements offer (SLAAC), the same on every access point.
    pub address6: Option<Ipv6Addr>,
    /// How often each client is probed (an ARP request, or a neighbor
    /// solicitation).
    pub probe_interval: Duration,
    /// Probes a client's quality is counted over.
    pub probe_window: u32,
}

impl AccessInterface {
    /// Whether `a` is in the clients' subnet.
    pub fn covers(&self, a: Ipv4Addr) -> bool {
        let mask = if self.len == 0 {
            0
        } else {
            u32::MAX << (32 - self.len)
        };
        u32::from(a) & mask == u32::from(self.address) & mask
    }

    /// Whether `a` is in the clients' IPv6 /64 (and is not this access
    /// point's own address there).
    pub fn covers6(&self, a: Ipv6Addr) -> bool {
        self.address6
            .is_some_and(|own| a != own && a.octets()[..8] == own.octets()[..8])
    }

    /// The clients' IPv6 default gateway: the link-local address made from
    /// `mac` (modified EUI-64), so the same on every access point, as the
    /// router advertisements' source.
    pub fn gateway6(&self) -> Ipv6Addr {
        let m = self.mac;
        Ipv6Addr::from([
            0xfe,
            0x80,
            0,
            0,
            0,
            0,
            0,
            0,
            m[0] ^ 0x02,
            m[1],
            m[2],
            0xff,
            0xfe,
            m[3],
            m[4],
            m[5],
        ])
    }
}

/// The TUN device: where traffic enters and leaves the mesh here.
#[derive(Debug, Clone, PartialEq)]
pub struct TunConfig {
    pub name: String,
    /// Address and prefix length given to the device, if any.
    pub address: Option<(Ipv4Addr, u8)>,
    pub mtu: u16,
    /// Prefixes (IPv4 or IPv6) routed into the mesh through the device.
    pub routes: Vec<IpPrefix>,
}

/// The config file as it is written: every field, unchecked, each with
/// where it stands in the file (for errors). [`Config::parse`] reads and
/// checks one; a program that writes a config (the lab) fills one in and
/// serialises it ([`ConfigFile::to_toml`]), so there is one schema.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub node: Spanned<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_socket: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefixes: Vec<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reorder: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reorder_window: Option<Spanned<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reorder_max_wait: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedup_window: Option<Spanned<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths: Option<Spanned<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_binding: Option<Spanned<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_buffer: Option<Spanned<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datapath: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_delivery: Option<Spanned<String>>,
    #[serde(default, rename = "interface", skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<InterfaceFile>,
    #[serde(default)]
    pub tun: TunFile,
    #[serde(default)]
    pub probes: ProbesFile,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy: Vec<PolicyFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub access: Vec<AccessFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lan_interfaces: Vec<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_margin: Option<Spanned<u8>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_hold: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthFile>,
    /// `[labels]`: names for node ids (`1 = "gateway"`), shown on the
    /// dashboard and in the NetJSON topology.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub labels: std::collections::BTreeMap<String, Spanned<String>>,
}

/// `[auth]`: the keys that sign and check every control message, inline
/// or in a file only root can read.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AuthFile {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<KeyFile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_file: Option<Spanned<String>>,
}

/// One key: `{ id = 1, secret = "<32 to 128 hex digits>" }`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KeyFile {
    pub id: Spanned<u8>,
    pub secret: Spanned<String>,
}

/// A key file's contents: `keys = [...]` as in `[auth]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KeysOnly {
    pub keys: Vec<KeyFile>,
}

/// `[[access]]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AccessFile {
    pub interface: Spanned<String>,
    pub address: Spanned<String>,
    pub gateway: Spanned<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address6: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_interval: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_window: Option<Spanned<u32>>,
}

/// `[[interface]]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InterfaceFile {
    pub name: Spanned<String>,
}

/// `[tun]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TunFile {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<Spanned<u16>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Spanned<String>>,
}

/// `[probes]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProbesFile {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub small_interval: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub big_interval: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_after: Option<Spanned<u32>>,
}

/// `[[policy]]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ports: Option<Spanned<String>>,
    pub mode: Spanned<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub urgent: Option<bool>,
}

/// A value for a [`ConfigFile`] made by a program (it stands nowhere in a
/// file).
pub fn value<T>(v: T) -> Spanned<T> {
    Spanned::new(0..0, v)
}

impl ConfigFile {
    /// A file with only the node's id: every other field at its default.
    pub fn new(node: u16) -> Self {
        ConfigFile {
            node: value(node),
            port: None,
            group: None,
            control_socket: None,
            control_group: None,
            labels: Default::default(),
            metrics: None,
            log: None,
            prefixes: Vec::new(),
            mode: None,
            reorder: None,
            reorder_window: None,
            reorder_max_wait: None,
            dedup_window: None,
            paths: None,
            late_binding: None,
            send_buffer: None,
            datapath: None,
            kernel_delivery: None,
            interfaces: Vec::new(),
            tun: TunFile::default(),
            probes: ProbesFile::default(),
            policy: Vec::new(),
            access: Vec::new(),
            lan_interfaces: Vec::new(),
            client_margin: None,
            client_hold: None,
            auth: None,
        }
    }

    /// The file's text (TOML).
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(self)
    }
}

const LOG_LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];

impl Config {
    /// Reads and checks a config file's text.
    pub fn parse(file: &str, text: &str) -> Result<Config, LocatedError> {
        let src = Source::new(file, text);
        let raw: ConfigFile = src.parse()?;
        let node = NodeId(*raw.node.get_ref());
        let mut labels = std::collections::BTreeMap::new();
        for (id, name) in &raw.labels {
            let field = format!("labels.{id}");
            let n: u16 = id
                .parse()
                .ok()
                .filter(|n| (1..u16::MAX).contains(n))
                .ok_or_else(|| {
                    src.err(
                        Some(name.span()),
                        &field,
                        format!("\"{id}\" is not a node id (1 to 65534)"),
                    )
                })?;
            let text = name.get_ref().trim();
            if text.is_empty() || text.chars().count() > 32 || text.chars().any(char::is_control) {
                return Err(src.err(
                    Some(name.span()),
                    &field,
                    "a label is 1 to 32 printable characters",
                ));
            }
            labels.insert(n, text.to_string());
        }
        if node.0 == 0 || node == NodeId::NONE || node.0 == u16::MAX {
            return Err(src.err(Some(raw.node.span()), "node", "node ids are 1 to 65534"));
        }
        let group = match &raw.group {
            None => DEFAULT_GROUP,
            Some(g) => {
                let a: Ipv4Addr = src.value(g, "group")?;
                if !a.is_multicast() || a.octets()[..3] != [224, 0, 0] {
                    return Err(src.err(
                        Some(g.span()),
                        "group",
                        format!("{a} is not a link-local multicast group (224.0.0.0/24)"),
                    ));
                }
                a
            }
        };
        let metrics = raw
            .metrics
            .as_ref()
            .map(|m| src.value::<SocketAddr>(m, "metrics"))
            .transpose()?;
        let log = match &raw.log {
            None => "warn".to_string(),
            Some(l) if LOG_LEVELS.contains(&l.get_ref().as_str()) => l.get_ref().clone(),
            Some(l) => {
                return Err(src.err(
                    Some(l.span()),
                    "log",
                    format!(
                        "\"{}\" is not one of {}",
                        l.get_ref(),
                        LOG_LEVELS.join(", ")
                    ),
                ))
            }
        };
        let mut interfaces: Vec<String> = Vec::new();
        for (i, itf) in raw.interfaces.iter().enumerate() {
            let name = itf.name.get_ref();
            let field = format!("interface[{i}].name");
            if name.is_empty() || name.len() > 15 || name.contains('/') {
                return Err(src.err(
                    Some(itf.name.span()),
                    &field,
                    format!("\"{name}\" is not an interface name (1-15 characters)"),
                ));
            }
            if interfaces.contains(name) {
                return Err(src.err(Some(itf.name.span()), &field, "listed twice"));
            }
            interfaces.push(name.clone());
        }
        if interfaces.is_empty() {
            return Err(src.err(
                None,
                "interface",
                "no [[interface]]: braid needs at least one interface to reach its neighbors",
            ));
        }
        let v4 = |v: &Spanned<String>, field: &str| -> Result<(Ipv4Addr, u8), LocatedError> {
            let bad = || {
                src.err(
                    Some(v.span()),
                    field,
                    format!(
                        "\"{}\" is not an IPv4 prefix like 198.18.1.0/24",
                        v.get_ref()
                    ),
                )
            };
            let (a, l) = v.get_ref().trim().split_once('/').ok_or_else(bad)?;
            let addr: Ipv4Addr = a.parse().map_err(|_| bad())?;
            let len: u8 = l.parse().map_err(|_| bad())?;
            if len > 32 {
                return Err(bad());
            }
            Ok((addr, len))
        };
        let tun = TunConfig {
            name: match &raw.tun.name {
                None => "braid0".into(),
                Some(n) if !n.get_ref().is_empty() && n.get_ref().len() <= 15 => {
                    n.get_ref().clone()
                }
                Some(n) => {
                    return Err(src.err(
                        Some(n.span()),
                        "tun.name",
                        "an interface name is 1-15 characters",
                    ))
                }
            },
            address: raw
                .tun
                .address
                .as_ref()
                .map(|a| v4(a, "tun.address"))
                .transpose()?,
            mtu: match &raw.tun.mtu {
                None => 1400,
                Some(m) if (576..=9000).contains(m.get_ref()) => *m.get_ref(),
                Some(m) => return Err(src.err(Some(m.span()), "tun.mtu", "576 to 9000")),
            },
            routes: raw
                .tun
                .routes
                .iter()
                .enumerate()
                .map(|(i, r)| src.value(r, &format!("tun.routes[{i}]")))
                .collect::<Result<_, _>>()?,
        };

        let mut nc = NodeConfig::default();
        for (i, p) in raw.prefixes.iter().enumerate() {
            let prefix: IpPrefix = src.value(p, &format!("prefixes[{i}]"))?;
            nc.control.prefixes.push(Prefix::from(prefix));
        }
        let probes = &mut nc.control.probes;
        probes.small_interval = src.duration(
            &raw.probes.small_interval,
            "probes.small_interval",
            probes.small_interval,
        )?;
        probes.big_interval = src.duration(
            &raw.probes.big_interval,
            "probes.big_interval",
            probes.big_interval,
        )?;
        let mut policy = Policy {
            default: match &raw.mode {
                None => Mode::Single,
                Some(m) => src.value(m, "mode")?,
            },
            ..Policy::default()
        };
        if let Some(p) = &raw.paths {
            if !(1..=8).contains(p.get_ref()) {
                return Err(src.err(Some(p.span()), "paths", "1 to 8 paths per destination"));
            }
            nc.max_paths = *p.get_ref();
        }
        match raw.late_binding.as_ref().map(|v| (*v.get_ref(), v.span())) {
            None => {}
            Some((0, _)) => nc.late_binding = None,
            Some((n, _)) if n <= 64 => {
                if let Some(l) = &mut nc.late_binding {
                    l.bound = n;
                }
            }
            Some((_, span)) => {
                return Err(src.err(
                    Some(span),
                    "late_binding",
                    "0 (bind at once) to 64 datagrams per next hop",
                ))
            }
        }
        let datapath = match raw
            .datapath
            .as_ref()
            .map(|v| (v.get_ref().as_str(), v.span()))
        {
            None => DatapathChoice::default(),
            Some(("kernel", _)) => DatapathChoice::Kernel,
            Some(("user", _)) => DatapathChoice::User,
            Some(("auto", _)) => DatapathChoice::Auto,
            Some((other, span)) => {
                return Err(src.err(
                    Some(span),
                    "datapath",
                    format!("\"{other}\" is not one of kernel, user, auto"),
                ))
            }
        };
        let kernel_delivery = match raw
            .kernel_delivery
            .as_ref()
            .map(|v| (v.get_ref().as_str(), v.span()))
        {
            None => KernelDelivery::default(),
            Some(("stack", _)) => KernelDelivery::Stack,
            Some(("route", _)) => KernelDelivery::Route,
            Some((other, span)) => {
                return Err(src.err(
                    Some(span),
                    "kernel_delivery",
                    format!("\"{other}\" is not one of stack, route"),
                ))
            }
        };
        let send_buffer = match raw.send_buffer.as_ref().map(|v| (*v.get_ref(), v.span())) {
            None => DEFAULT_SEND_BUFFER,
            Some((n, _)) if (1..=64 << 20).contains(&n) => n,
            Some((_, span)) => return Err(src.err(Some(span), "send_buffer", "1 byte to 64 MiB")),
        };
        let reorder_window = match &raw.reorder_window {
            None => ReorderConfig::default().max_packets,
            Some(w) if (8..=4096).contains(w.get_ref()) => *w.get_ref(),
            Some(w) => return Err(src.err(Some(w.span()), "reorder_window", "8 to 4,096 packets")),
        };
        let reorder_max_wait = src.duration(
            &raw.reorder_max_wait,
            "reorder_max_wait",
            Duration::from_millis(500),
        )?;
        if !(Duration::from_millis(2)..=Duration::from_secs(5)).contains(&reorder_max_wait) {
            return Err(src.err(
                raw.reorder_max_wait.as_ref().map(|v| v.span()),
                "reorder_max_wait",
                "2 ms to 5 s",
            ));
        }
        if raw.reorder == Some(true) {
            nc.egress.reorder = Some(ReorderConfig {
                max_packets: reorder_window,
                timeout: ReorderTimeout::Adaptive {
                    min: Duration::from_millis(2),
                    max: reorder_max_wait,
                    initial: reorder_max_wait.min(Duration::from_millis(50)),
                },
            });
        }
        match &raw.dedup_window {
            None => {}
            Some(w) if (64..=65536).contains(w.get_ref()) => nc.egress.dedup_window = *w.get_ref(),
            Some(w) => {
                return Err(src.err(
                    Some(w.span()),
                    "dedup_window",
                    "64 to 65,536 sequence numbers",
                ))
            }
        }
        let mut classifier = Classifier::default();
        if raw.policy.len() > 254 {
            return Err(src.err(None, "policy", "at most 254 [[policy]] entries"));
        }
        for (i, rp) in raw.policy.iter().enumerate() {
            let class = (i + 1) as u8;
            let mut matches = Match::default();
            if let Some(to) = &rp.to {
                matches.dst.push(src.value(to, &format!("policy[{i}].to"))?);
            }
            if let Some(ports) = &rp.ports {
                let r: PortRange = src.value(ports, &format!("policy[{i}].ports"))?;
                matches.dst_ports.push(r);
            }
            classifier.rules.push(ClassRule {
                name: rp.name.clone().unwrap_or_else(|| format!("policy-{class}")),
                id: class,
                matches,
                urgent: rp.urgent,
            });
            policy
                .classes
                .insert(class, src.value(&rp.mode, &format!("policy[{i}].mode"))?);
        }
        nc.policy = policy;
        nc.classifier = classifier;
        nc.control
            .validate(node)
            .map_err(|e| src.err(None, "probes", e.to_string()))?;
        let dead_after = match &raw.probes.dead_after {
            None => DEFAULT_DEAD_AFTER,
            Some(d) if (2..=100).contains(d.get_ref()) => *d.get_ref(),
            Some(d) => {
                return Err(src.err(
                    Some(d.span()),
                    "probes.dead_after",
                    "2 to 100 small-probe intervals",
                ))
            }
        };
        nc.neighbor_timeout = Some(nc.control.probes.small_interval * dead_after);
        let access = access_interfaces(&src, &raw, &interfaces)?;
        if let Some(m) = &raw.client_margin {
            nc.access.margin = *m.get_ref();
        }
        nc.access.hold = src.duration(&raw.client_hold, "client_hold", nc.access.hold)?;
        if nc.access.hold > Duration::from_secs(600) {
            return Err(src.err(
                raw.client_hold.as_ref().map(|v| v.span()),
                "client_hold",
                "at most 10 minutes",
            ));
        }
        let mut key_file = None;
        if let Some(a) = &raw.auth {
            if let Some(f) = &a.key_file {
                if !a.keys.is_empty() {
                    return Err(src.err(
                        Some(f.span()),
                        "auth.key_file",
                        "give the keys inline (auth.keys) or in a file (auth.key_file), not both",
                    ));
                }
                key_file = Some(PathBuf::from(f.get_ref()));
            } else {
                nc.control.auth = auth_keys(&src, &a.keys, "auth.keys")?;
            }
        }
        let mut lan_interfaces: Vec<String> = Vec::new();
        for (i, l) in raw.lan_interfaces.iter().enumerate() {
            let name = l.get_ref();
            let field = format!("lan_interfaces[{i}]");
            if name.is_empty() || name.len() > 15 {
                return Err(src.err(
                    Some(l.span()),
                    &field,
                    format!("\"{name}\" is not an interface name (1-15 characters)"),
                ));
            }
            if interfaces.contains(name) || lan_interfaces.contains(name) {
                return Err(src.err(
                    Some(l.span()),
                    &field,
                    format!("{name} is listed twice (a LAN port is not an [[interface]])"),
                ));
            }
            lan_interfaces.push(name.clone());
        }
        Ok(Config {
            lan_interfaces,
            access,
            dead_after,
            send_buffer,
            node,
            datapath,
            kernel_delivery,
            port: raw.port.unwrap_or(DEFAULT_PORT),
            group,
            control_socket: raw
                .control_socket
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET)),
            control_group: raw.control_group,
            labels,
            metrics,
            log,
            interfaces,
            tun,
            node_config: nc,
            key_file,
        })
    }

    /// Reads and checks a config file.
    pub fn load(path: &std::path::Path) -> Result<Config, ConfigLoadError> {
        let text = braid_conf::read_text(path).map_err(|e| ConfigLoadError::Read {
            path: path.display().to_string(),
            source: e,
        })?;
        let mut config = Config::parse(&path.display().to_string(), &text)?;
        if let Some(file) = &config.key_file {
            config.node_config.control.auth = load_keys(file)?;
        }
        Ok(config)
    }
}

/// Checks `[auth] keys`: one or two, distinct ids, secrets of 16 to 64
/// bytes written as hex.
fn auth_keys(
    src: &Source<'_>,
    keys: &[KeyFile],
    field: &str,
) -> Result<braid_proto::auth::AuthConfig, LocatedError> {
    use braid_proto::auth::{AuthConfig, AuthKey, MAX_KEYS};
    if keys.is_empty() {
        return Err(src.err(None, field, "no key: give one (or two while rotating)"));
    }
    if keys.len() > MAX_KEYS {
        return Err(src.err(
            Some(keys[MAX_KEYS].id.span()),
            field,
            format!("at most {MAX_KEYS} keys (the one in use and the one being rotated)"),
        ));
    }
    let mut out = AuthConfig::default();
    for (i, k) in keys.iter().enumerate() {
        let here = format!("{field}[{i}]");
        let text = k.secret.get_ref().trim();
        let bytes = hex_bytes(text).ok_or_else(|| {
            src.err(
                Some(k.secret.span()),
                &format!("{here}.secret"),
                "not hex digits (make one with `braid keygen`)",
            )
        })?;
        let key = AuthKey::new(*k.id.get_ref(), &bytes).map_err(|e| {
            src.err(
                Some(k.secret.span()),
                &format!("{here}.secret"),
                e.to_string(),
            )
        })?;
        if out.keys.iter().any(|o| o.id == key.id) {
            return Err(src.err(
                Some(k.id.span()),
                &format!("{here}.id"),
                format!("two keys have id {}", key.id),
            ));
        }
        out.keys.push(key);
    }
    Ok(out)
}

fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// Reads a key file: it must be a regular file that only its owner can
/// read (mode 0600 or 0400) and owned by root or by the user the daemon
/// runs as.
fn load_keys(path: &std::path::Path) -> Result<braid_proto::auth::AuthConfig, ConfigLoadError> {
    use std::os::unix::fs::MetadataExt;
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| ConfigLoadError::Read {
        path: shown.clone(),
        source: e,
    })?;
    let me = nix::unistd::geteuid().as_raw();
    if !meta.is_file() {
        return Err(ConfigLoadError::KeyFile {
            path: shown,
            why: "is not a regular file".to_string(),
        });
    }
    if meta.mode() & 0o077 != 0 {
        return Err(ConfigLoadError::KeyFile {
            path: shown.clone(),
            why: format!(
                "can be read by others (mode {:04o}); run `chmod 600 {shown}`",
                meta.mode() & 0o7777
            ),
        });
    }
    if meta.uid() != 0 && meta.uid() != me {
        return Err(ConfigLoadError::KeyFile {
            path: shown,
            why: format!("belongs to uid {}, not root", meta.uid()),
        });
    }
    let text = braid_conf::read_text(path).map_err(|e| ConfigLoadError::Read {
        path: shown.clone(),
        source: e,
    })?;
    let src = Source::new(&shown, &text);
    let raw: KeysOnly = src.parse()?;
    Ok(auth_keys(&src, &raw.keys, "keys")?)
}

/// Checks `[[access]]`: names, addresses, the gateway in the subnet, no
/// interface both a braid interface and an access interface.
fn access_interfaces(
    src: &Source<'_>,
    raw: &ConfigFile,
    interfaces: &[String],
) -> Result<Vec<AccessInterface>, LocatedError> {
    let mut out: Vec<AccessInterface> = Vec::new();
    for (i, a) in raw.access.iter().enumerate() {
        let field = |f: &str| format!("access[{i}].{f}");
        let name = a.interface.get_ref().clone();
        if name.is_empty() || name.len() > 15 {
            return Err(src.err(
                Some(a.interface.span()),
                &field("interface"),
                format!("\"{name}\" is not an interface name (1-15 characters)"),
            ));
        }
        if interfaces.contains(&name) || out.iter().any(|o| o.name == name) {
            return Err(src.err(
                Some(a.interface.span()),
                &field("interface"),
                format!("{name} is listed twice (an access interface is not an [[interface]])"),
            ));
        }
        let bad_addr = || {
            src.err(
                Some(a.address.span()),
                &field("address"),
                format!(
                    "\"{}\" is not this access point's own address with the clients' prefix length, like 198.18.9.2/24",
                    a.address.get_ref()
                ),
            )
        };
        let (addr, len) = a
            .address
            .get_ref()
            .trim()
            .split_once('/')
            .ok_or_else(bad_addr)?;
        let address: Ipv4Addr = addr.parse().map_err(|_| bad_addr())?;
        let len: u8 = len.parse().map_err(|_| bad_addr())?;
        if !(8..=30).contains(&len) {
            return Err(bad_addr());
        }
        let gateway: Ipv4Addr = a.gateway.get_ref().trim().parse().map_err(|_| {
            src.err(
                Some(a.gateway.span()),
                &field("gateway"),
                format!("\"{}\" is not an IPv4 address", a.gateway.get_ref()),
            )
        })?;
        let mac = match &a.mac {
            None => DEFAULT_GATEWAY_MAC,
            Some(m) => parse_mac(m.get_ref()).ok_or_else(|| {
                src.err(
                    Some(m.span()),
                    &field("mac"),
                    format!(
                        "\"{}\" is not a unicast link address like 02:62:72:64:00:01",
                        m.get_ref()
                    ),
                )
            })?,
        };
        let probe_interval = src.duration(
            &a.probe_interval,
            &field("probe_interval"),
            Duration::from_millis(100),
        )?;
        if !(Duration::from_millis(10)..=Duration::from_secs(10)).contains(&probe_interval) {
            return Err(src.err(
                a.probe_interval.as_ref().map(|v| v.span()),
                &field("probe_interval"),
                "10 ms to 10 s",
            ));
        }
        let probe_window = match &a.probe_window {
            None => 10,
            Some(w) if (1..=64).contains(w.get_ref()) => *w.get_ref(),
            Some(w) => {
                return Err(src.err(Some(w.span()), &field("probe_window"), "1 to 64 probes"))
            }
        };
        let address6 = match &a.address6 {
            None => None,
            Some(v) => {
                let text = v.get_ref().trim();
                let own = text
                    .strip_suffix("/64")
                    .and_then(|a| a.parse::<Ipv6Addr>().ok())
                    .filter(|a| {
                        let o = a.octets();
                        // Global or unique local unicast, not a /64's
                        // first address.
                        let link_local = o[0] == 0xfe && o[1] & 0xc0 == 0x80;
                        !(a.is_multicast()
                            || a.is_unspecified()
                            || a.is_loopback()
                            || link_local
                            || o[8..] == [0; 8])
                    });
                Some(own.ok_or_else(|| {
                    src.err(
                        Some(v.span()),
                        &field("address6"),
                        format!(
                            "\"{text}\" is not this access point's own IPv6 address in the clients' /64, like 2001:2:0:c8::2/64 (SLAAC needs a /64)"
                        ),
                    )
                })?)
            }
        };
        let itf = AccessInterface {
            name,
            address,
            len,
            gateway,
            mac,
            address6,
            probe_interval,
            probe_window,
        };
        if !itf.covers(gateway) || gateway == address {
            return Err(src.err(
                Some(a.gateway.span()),
                &field("gateway"),
                format!(
                    "{gateway} must be another address of {address}/{len}, the clients' subnet"
                ),
            ));
        }
        out.push(itf);
    }
    Ok(out)
}

/// `02:62:72:64:00:01`: six hex bytes, not multicast.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.trim().split(':');
    for b in &mut mac {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    (parts.next().is_none() && mac[0] & 1 == 0).then_some(mac)
}

/// Why a config file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigLoadError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Invalid(#[from] LocatedError),
    #[error("key file {path} {why}")]
    KeyFile { path: String, why: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_config_in_the_operations_guide_is_valid_and_warns_of_nothing() {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/operations.md"),
        )
        .unwrap();
        let at = doc
            .find("Example (a router serving 198.18.1.0/24, mirroring VoIP):")
            .expect("the example is in the guide");
        let block = doc[at..].split("```toml\n").nth(1).unwrap();
        let text = block.split("```").next().unwrap();
        let c = Config::parse("operations.md", text).unwrap();
        // It stripes TCP: its egress must re-order (without, 3,282
        // retransmissions in 5 s on lossless links in an operator's trial).
        assert_eq!(c.node_config.policy.default.to_string(), "stripe");
        assert!(c.node_config.egress.reorder.is_some());
        assert_eq!(crate::daemon::checks::tun_address_warning(&c), None);
    }

    const GOOD: &str = r#"
node = 7
prefixes = ["198.18.7.0/24"]
mode = "mirror:2"

[[interface]]
name = "veth0"

[[interface]]
name = "veth1"

[tun]
address = "198.18.7.1/24"
routes = ["198.18.0.0/15"]

[probes]
small_interval = "200ms"

[[policy]]
to = "198.18.9.0/24"
ports = "5060"
mode = "mirror:3"
urgent = true
"#;

    #[test]
    fn a_good_file_gives_the_node_its_settings() {
        let c = Config::parse("good.toml", GOOD).unwrap();
        assert_eq!(c.node, NodeId(7));
        assert_eq!(c.interfaces, ["veth0", "veth1"]);
        assert_eq!(c.port, DEFAULT_PORT);
        assert_eq!(c.tun.name, "braid0");
        assert_eq!(c.tun.routes, ["198.18.0.0/15".parse().unwrap()]);
        let nc = &c.node_config;
        assert_eq!(nc.control.probes.small_interval, Duration::from_millis(200));
        assert_eq!(
            nc.control.prefixes,
            [Prefix::V4 {
                addr: [198, 18, 7, 0],
                len: 24
            }]
        );
        assert_eq!(nc.policy.default, "mirror:2".parse().unwrap());
        assert_eq!(nc.policy.classes[&1], "mirror:3".parse().unwrap());
        assert_eq!(nc.classifier.rules[0].urgent, Some(true));
        assert_eq!(nc.late_binding.map(|l| l.bound), Some(2));
        assert_eq!(c.send_buffer, DEFAULT_SEND_BUFFER);
        assert_eq!(nc.egress.reorder, None);
        assert_eq!(c.datapath, DatapathChoice::Auto);
        assert_eq!(c.kernel_delivery, KernelDelivery::Stack);
        let route = Config::parse(
            "good.toml",
            &GOOD.replace(
                "node = 7",
                "node = 7\ndatapath = \"kernel\"\nkernel_delivery = \"route\"",
            ),
        )
        .unwrap();
        assert_eq!(
            (route.datapath, route.kernel_delivery),
            (DatapathChoice::Kernel, KernelDelivery::Route)
        );
    }

    #[test]
    fn window_and_binding_fields_reach_the_node() {
        let text = "node = 1\nreorder = true\nreorder_window = 64\nreorder_max_wait = \"30ms\"\n\
                    dedup_window = 1024\nlate_binding = 4\nsend_buffer = 65536\n\
                    [[interface]]\nname = \"a\"\n";
        let c = Config::parse("w.toml", text).unwrap();
        let nc = &c.node_config;
        let r = nc.egress.reorder.unwrap();
        assert_eq!(r.max_packets, 64);
        assert_eq!(
            r.timeout,
            ReorderTimeout::Adaptive {
                min: Duration::from_millis(2),
                max: Duration::from_millis(30),
                initial: Duration::from_millis(30),
            }
        );
        assert_eq!(nc.egress.dedup_window, 1024);
        assert_eq!(nc.late_binding.map(|l| l.bound), Some(4));
        assert_eq!(c.send_buffer, 65536);
        let off = Config::parse(
            "w.toml",
            &text.replace("late_binding = 4", "late_binding = 0"),
        )
        .unwrap();
        assert_eq!(off.node_config.late_binding, None);
    }

    #[test]
    fn bad_files_are_refused_with_line_and_field() {
        let cases = [
            ("node = 0\n[[interface]]\nname = \"a\"\n", 1, "node"),
            ("node = 1\n", 1, "interface"),
            ("node = 1\nbogus = 2\n", 2, "bogus"),
            (
                "node = 1\nmode = \"mirror:x\"\n[[interface]]\nname = \"a\"\n",
                2,
                "mode",
            ),
            (
                "node = 1\n[[interface]]\nname = \"a\"\n[tun]\nroutes = [\"10.0.0.0/33\"]\n",
                5,
                "tun.routes[0]",
            ),
            (
                "node = 1\n[[interface]]\nname = \"a\"\n[probes]\nsmall_interval = \"soon\"\n",
                5,
                "probes.small_interval",
            ),
            (
                "node = 1\ngroup = \"239.1.1.1\"\n[[interface]]\nname = \"a\"\n",
                2,
                "group",
            ),
            (
                "node = 1\n[[interface]]\nname = \"a\"\n[[interface]]\nname = \"a\"\n",
                5,
                "interface[1].name",
            ),
            (
                "node = 1\nlog = \"loud\"\n[[interface]]\nname = \"a\"\n",
                2,
                "log",
            ),
            (
                "node = 1\ndatapath = \"fast\"\n[[interface]]\nname = \"a\"\n",
                2,
                "datapath",
            ),
            (
                "node = 1\nkernel_delivery = \"direct\"\n[[interface]]\nname = \"a\"\n",
                2,
                "kernel_delivery",
            ),
            (
                "node = 1\nreorder_window = 2\n[[interface]]\nname = \"a\"\n",
                2,
                "reorder_window",
            ),
            (
                "node = 1\nreorder_max_wait = \"10s\"\n[[interface]]\nname = \"a\"\n",
                2,
                "reorder_max_wait",
            ),
            (
                "node = 1\ndedup_window = 1\n[[interface]]\nname = \"a\"\n",
                2,
                "dedup_window",
            ),
            (
                "node = 1\nlate_binding = 100\n[[interface]]\nname = \"a\"\n",
                2,
                "late_binding",
            ),
            (
                "node = 1\nsend_buffer = 0\n[[interface]]\nname = \"a\"\n",
                2,
                "send_buffer",
            ),
            (
                "node = 1\nlan_interfaces = [\"a\"]\n[[interface]]\nname = \"a\"\n",
                2,
                "lan_interfaces[0]",
            ),
            (
                "node = 1\n[[interface]]\nname = \"a\"\n[[access]]\ninterface = \"w\"\naddress = \"198.18.9.2/24\"\ngateway = \"198.18.10.1\"\n",
                7,
                "access[0].gateway",
            ),
            (
                "node = 1\n[[interface]]\nname = \"a\"\n[[access]]\ninterface = \"w\"\naddress = \"198.18.9.2\"\ngateway = \"198.18.9.1\"\n",
                6,
                "access[0].address",
            ),
            (
                "node = 1\n[[interface]]\nname = \"a\"\n[[access]]\ninterface = \"w\"\naddress = \"198.18.9.2/24\"\ngateway = \"198.18.9.1\"\nmac = \"03:00:00:00:00:01\"\n",
                8,
                "access[0].mac",
            ),
            (
                "node = 1\n[[interface]]\nname = \"a\"\n[[access]]\ninterface = \"a\"\naddress = \"198.18.9.2/24\"\ngateway = \"198.18.9.1\"\n",
                5,
                "access[0].interface",
            ),
        ];
        for (text, line, field) in cases {
            let e = Config::parse("bad.toml", text).unwrap_err();
            assert_eq!((e.line, e.field.as_str()), (line, field), "{text}: {e}");
        }
    }

    const SECRET: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    #[test]
    fn keys_inline_or_in_a_root_only_file() {
        let base = "node = 1\n[[interface]]\nname = \"a\"\n";
        let c = Config::parse("k.toml", base).unwrap();
        assert!(!c.node_config.control.auth.enabled(), "no [auth]: off");
        let text = format!(
            "{base}[auth]\nkeys = [{{ id = 1, secret = \"{SECRET}\" }}, {{ id = 2, secret = \"{SECRET}\" }}]\n"
        );
        let c = Config::parse("k.toml", &text).unwrap();
        let ids: Vec<u8> = c
            .node_config
            .control
            .auth
            .keys
            .iter()
            .map(|k| k.id)
            .collect();
        assert_eq!(ids, [1, 2]);
        for (section, field, words) in [
            ("keys = [{ id = 1, secret = \"xyz\" }]", "auth.keys[0].secret", "hex"),
            ("keys = [{ id = 1, secret = \"0011\" }]", "auth.keys[0].secret", "16 to 64 bytes"),
            (
                &format!("keys = [{{ id = 1, secret = \"{SECRET}\" }}, {{ id = 1, secret = \"{SECRET}\" }}]"),
                "auth.keys[1].id",
                "two keys",
            ),
            (
                &format!("keys = [{{ id = 1, secret = \"{SECRET}\" }}]\nkey_file = \"/x\""),
                "auth.key_file",
                "not both",
            ),
            ("keys = []", "auth.keys", "no key"),
        ] {
            let e = Config::parse("k.toml", &format!("{base}[auth]\n{section}\n")).unwrap_err();
            assert_eq!(e.field, field, "{section}");
            assert!(e.message.contains(words), "{section}: {}", e.message);
        }
        // A key file: only its owner may read it.
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("braid-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let keys = dir.join("keys.toml");
        std::fs::write(
            &keys,
            format!("keys = [{{ id = 7, secret = \"{SECRET}\" }}]\n"),
        )
        .unwrap();
        let conf = dir.join("braid.toml");
        std::fs::write(
            &conf,
            format!("{base}[auth]\nkey_file = \"{}\"\n", keys.display()),
        )
        .unwrap();
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Config::load(&conf).unwrap_err().to_string();
        assert!(
            e.contains("can be read by others") && e.contains("chmod 600"),
            "{e}"
        );
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600)).unwrap();
        let c = Config::load(&conf).unwrap();
        assert_eq!(c.node_config.control.auth.keys[0].id, 7);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
