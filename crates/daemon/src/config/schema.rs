//! The config file's schema: every table and field as it is written,
//! unchecked, each value with where it stands in the file (for errors).
//! Read by the checks (`parse.rs`), and written by programs that make a
//! config (the lab), so there is one schema.

use braid_conf::Spanned;
use serde::{Deserialize, Serialize};

/// The config file as it is written: every field, unchecked, each with
/// where it stands in the file (for errors). [`Config::parse`](super::Config::parse) reads and
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
    pub underlay: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_socket: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_format: Option<Spanned<String>>,
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
    pub area: Option<Spanned<u16>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_binding: Option<Spanned<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub equalise_delay: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pace: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub urgent_copies: Option<Spanned<u8>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_interval: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_buffer: Option<Spanned<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datapath: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_delivery: Option<Spanned<String>>,
    #[serde(default, rename = "interface", skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<InterfaceFile>,
    #[serde(default, rename = "cost", skip_serializing_if = "Vec::is_empty")]
    pub costs: Vec<CostFile>,
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
    pub copy_window: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_sticky: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_spread: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_flows: Option<Spanned<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_flow_idle: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_margin: Option<Spanned<u8>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_hold: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthFile>,
    /// `[origin]`: this router's origin key and the roster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<OriginFile>,
    /// `[uplink]`: prefixes served through an uplink checked by probes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uplink: Option<UplinkFile>,
    /// `[redistribute]`: kernel routes advertised into the mesh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redistribute: Option<RedistributeFile>,
    /// `[install]`: the mesh's prefixes installed into the kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install: Option<InstallFile>,
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

/// `[origin]`: per-origin signatures (docs/security.md).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OriginFile {
    /// This router's secret key (`braid keygen --origin`), owner-only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_file: Option<Spanned<String>>,
    /// Every router's public key: this router checks every origin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roster_file: Option<Spanned<String>>,
}

/// An origin key file: `secret = "<64 hex digits>"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OriginKeyFile {
    pub secret: Spanned<String>,
}

/// A roster: `[[router]]` entries.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RosterFile {
    #[serde(default)]
    pub router: Vec<RosterEntry>,
}

/// One router's public key: `{ node = 3, key = "<64 hex digits>" }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RosterEntry {
    pub node: Spanned<u16>,
    pub key: Spanned<String>,
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

/// `[[cost]]`: a cost factor on the link to one neighbor or on every
/// link heard on one interface (docs/operations.md "Cost overrides").
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CostFile {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neighbor: Option<Spanned<u16>>,
    pub factor: Spanned<f64>,
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
    pub address6: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<Spanned<u16>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mss_clamp: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Spanned<String>>,
}

/// A routing protocol by name (`"ospf"`) or number (`188`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum NameOrNumber {
    Number(u8),
    Name(String),
}

impl NameOrNumber {
    /// As text (a number as its digits).
    pub fn text(&self) -> String {
        match self {
            NameOrNumber::Number(n) => n.to_string(),
            NameOrNumber::Name(s) => s.clone(),
        }
    }
}

/// `[redistribute]` (docs/operations.md "Routes from outside").
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RedistributeFile {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocols: Vec<Spanned<NameOrNumber>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefixes: Vec<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<Spanned<u32>>,
}

/// `[install]` (docs/operations.md "Routes from outside").
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InstallFile {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Spanned<NameOrNumber>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric: Option<Spanned<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<Spanned<u32>>,
}

/// `[uplink]`: a gateway's uplink, checked (docs/operations.md
/// "Uplink health").
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UplinkFile {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefixes: Vec<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<Spanned<u16>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Spanned<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reliability: Option<Spanned<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down: Option<Spanned<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up: Option<Spanned<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preference: Option<Spanned<u8>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Spanned<String>>,
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
            underlay: None,
            control_socket: None,
            control_group: None,
            labels: Default::default(),
            metrics: None,
            log: None,
            log_format: None,
            prefixes: Vec::new(),
            mode: None,
            reorder: None,
            reorder_window: None,
            reorder_max_wait: None,
            dedup_window: None,
            paths: None,
            area: None,
            late_binding: None,
            equalise_delay: None,
            pace: None,
            urgent_copies: None,
            report_interval: None,
            send_buffer: None,
            datapath: None,
            kernel_delivery: None,
            interfaces: Vec::new(),
            costs: Vec::new(),
            tun: TunFile::default(),
            probes: ProbesFile::default(),
            policy: Vec::new(),
            access: Vec::new(),
            lan_interfaces: Vec::new(),
            copy_window: None,
            gateway_sticky: None,
            gateway_spread: None,
            gateway_flows: None,
            gateway_flow_idle: None,
            client_margin: None,
            client_hold: None,
            auth: None,
            origin: None,
            uplink: None,
            redistribute: None,
            install: None,
        }
    }

    /// The file's text (TOML).
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(self)
    }
}
