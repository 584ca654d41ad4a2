//! The braid daemon: the same protocol [`braid_proto::node::Node`] the
//! simulator runs, driven by real I/O on a router.
//!
//! | module | owns |
//! |---|---|
//! | [`access`] | access interfaces: the anycast gateway (IPv4, and IPv6 with router advertisements), clients found (ARP, DHCP, neighbor discovery, neighbor table) and probed (ARP, neighbor solicitation), their quality told to the node |
//! | [`config`] | the TOML config: its schema, the checked config and its defaults, the checks (every problem at once, each located), access interfaces, keys |
//! | [`underlay`] | two UDP sockets per interface: multicast control, unicast data with a small send buffer |
//! | [`carrier`] | the kernel's link notifications: an interface down or without carrier takes its neighbors down; a configured interface that appears is opened, one that goes away closed |
//! | [`rtnl`] | route netlink: batches split into decoded messages (carrier watch, neighbor tables), requests (a device's drop counts, the routing tables read, routes added and removed) |
//! | [`routes`] | routes shared with the kernel's table: other daemons' routes redistributed into the mesh, the mesh's prefixes installed with braid's protocol number |
//! | [`key_mismatch`] | neighbors whose control messages fail the key check: where, why, when the operator is warned |
//! | [`logging`] | the daemon's log: text or JSON lines, a level a reload changes |
//! | [`mss`] | TCP MSS clamping of SYNs read from the TUN device (`[tun] mss_clamp`) |
//! | [`uplink`] | a gateway's uplink checked by probes (ICMP, TCP, DNS): its prefixes advertised only while it answers |
//! | [`batch`] | recvmmsg with buffers allocated once; each interface's send queue (sendmmsg) |
//! | [`clients`] | control-socket and metrics clients, served without blocking the loop |
//! | [`daemon`] | the loop and what it opened; its data plane (TUN, sockets), its interfaces as they come and go (links), and management plane (signals, reload, ctl, metrics, monitors) |
//! | [`kernel`] | the kernel data path's control plane: what runs in the kernel, its maps kept in step with the node |
//! | [`neighbors`] | where each neighbor is (interface and address), following the node's events |
//! | [`counters`] | what the I/O layer counted |
//! | [`dashboard`] | the live dashboard on the metrics port: one self-contained page and the state document it polls |
//! | [`ctl`] | the control socket's typed JSON documents, monitor events, and the client's side |
//! | [`metrics`] | Prometheus metrics and the NetJSON topology on the opt-in HTTP port |

pub mod access;
pub mod batch;
pub mod carrier;
pub mod clients;
pub mod config;
pub mod counters;
pub mod ctl;
pub mod daemon;
pub mod dashboard;
pub mod kernel;
pub mod key_mismatch;
pub mod logging;
pub mod metrics;
pub mod mss;
pub mod neighbors;
pub mod routes;
pub mod rtnl;
pub mod underlay;
pub mod uplink;
