//! The braid daemon: the same protocol [`braid_proto::node::Node`] the
//! simulator runs, driven by real I/O on a router.
//!
//! | module | owns |
//! |---|---|
//! | [`config`] | the TOML config: fields, defaults, located errors |
//! | [`underlay`] | two UDP sockets per interface: multicast control, unicast data with a small send buffer |
//! | [`carrier`] | the kernel's link notifications: an interface down or without carrier takes its neighbors down |
//! | [`batch`] | recvmmsg with buffers allocated once; each interface's send queue (sendmmsg) |
//! | [`clients`] | control-socket and metrics clients, served without blocking the loop |
//! | [`daemon`] | the loop: TUN, sockets, timers, neighbor table, reload, shutdown |
//! | [`ctl`] | the control socket's JSON documents and monitor events |
//! | [`metrics`] | Prometheus metrics and the NetJSON topology on the opt-in HTTP port |

pub mod batch;
pub mod carrier;
pub mod clients;
pub mod config;
pub mod ctl;
pub mod daemon;
pub mod metrics;
pub mod underlay;
