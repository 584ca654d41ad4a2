//! The checked configuration the daemon runs with ([`Config`]), its
//! parts and its defaults.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;

use braid_proto::classify::IpPrefix;
use braid_proto::node::NodeConfig;
use braid_wire::NodeId;

use super::access::AccessInterface;

/// UDP port of the underlay, on every interface.
pub const DEFAULT_PORT: u16 = 6868;
/// Link-local multicast group for discovery and flooding (224.0.0.0/24
/// is never forwarded by routers).
pub const DEFAULT_GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 186);
/// The link-local multicast group control messages go to over an IPv6
/// underlay (`underlay = "ipv6"`).
pub const DEFAULT_GROUP6: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x186);

/// The IP version of the underlay: what braid's own datagrams between
/// routers travel in (`underlay`). Hosts' traffic of either version
/// crosses the mesh whatever it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum UnderlayFamily {
    /// UDP over IPv4: every braid interface needs an IPv4 address.
    #[default]
    Ipv4,
    /// UDP over IPv6: the link-local address every interface has is
    /// enough (no IPv4 anywhere); user-space data path only.
    Ipv6,
}
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
    /// `Route` while nothing in the kernel would see the packets on the
    /// stack's way it skips, else `Stack` (`kernel/delivery.rs`).
    #[default]
    Auto,
    /// Into the TUN device's receive side: the stack routes it from there
    /// (netfilter, NAT, policy routing all apply).
    Stack,
    /// Straight to its next hop from the kernel's routing table where it
    /// has one (TTL or hop limit decremented): skips the stack's second pass and
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
    /// The underlay's IP version.
    pub underlay: UnderlayFamily,
    /// Where control messages go: IPv4 224.0.0.0/24 or IPv6 ff02::/16,
    /// the underlay's.
    pub group: IpAddr,
    pub control_socket: PathBuf,
    /// The group that may use the control socket (mode 0660); none: root
    /// only (0600).
    pub control_group: Option<String>,
    /// Names for node ids (`[labels]`).
    pub labels: std::collections::BTreeMap<u16, String>,
    /// Where to serve Prometheus metrics and the NetJSON topology (opt-in).
    pub metrics: Option<SocketAddr>,
    pub log: String,
    /// How log lines are written (`log_format`).
    pub log_format: LogFormat,
    pub interfaces: Vec<String>,
    /// Cost factors on links (`[[cost]]`; also in `node_config`, by
    /// interface position).
    pub costs: Vec<super::CostOverride>,
    /// A neighbor unheard for this many small-probe intervals is down.
    pub dead_after: u32,
    /// SO_SNDBUF of each interface's data socket, bytes.
    pub send_buffer: usize,
    pub tun: TunConfig,
    /// Access interfaces: where unmodified clients live (`[[access]]`).
    pub access: Vec<AccessInterface>,
    /// A gateway's uplink, checked (`[uplink]`).
    pub uplink: Option<crate::uplink::UplinkConfig>,
    /// Kernel routes advertised into the mesh (`[redistribute]`).
    pub redistribute: Option<crate::routes::RedistributeConfig>,
    /// The mesh's prefixes installed into the kernel (`[install]`).
    pub install: Option<crate::routes::InstallConfig>,
    /// LAN ports where the kernel data path encodes at the receive side
    /// (`lan_interfaces`).
    pub lan_interfaces: Vec<String>,
    /// Everything the protocol node is told.
    pub node_config: NodeConfig,
    /// `[auth] key_file`: read by [`Config::load`] into
    /// `node_config.control.auth` (root only).
    pub key_file: Option<PathBuf>,
    /// `[origin] key_file` and `roster_file`: read by [`Config::load`]
    /// into `node_config.control.origins`.
    pub origin_key_file: Option<PathBuf>,
    pub roster_file: Option<PathBuf>,
    /// The file's settings as written (a reload names what changed by
    /// comparing them).
    pub source: toml::Table,
}

/// How the daemon writes its log lines (to standard error).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `fields`
    /// with `message`): for log shippers (journald, Vector, Loki).
    Json,
}

/// The TUN device: where traffic enters and leaves the mesh here.
#[derive(Debug, Clone, PartialEq)]
pub struct TunConfig {
    pub name: String,
    /// Address and prefix length given to the device, if any.
    pub address: Option<(Ipv4Addr, u8)>,
    /// Its IPv6 address and prefix length, if any (alone on an
    /// IPv6-only router, or beside `address`).
    pub address6: Option<(Ipv6Addr, u8)>,
    pub mtu: u16,
    /// Lower the MSS of TCP SYNs entering the mesh here to fit `mtu`
    /// (`crate::mss`).
    pub mss_clamp: bool,
    /// Prefixes (IPv4 or IPv6) routed into the mesh through the device.
    pub routes: Vec<IpPrefix>,
}
