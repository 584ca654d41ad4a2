//! The braid daemon: the same protocol [`braid_proto::node::Node`] the
//! simulator runs, driven by real I/O on a router.
//!
//! | module | owns |
//! |---|---|
//! | [`config`] | the TOML config: fields, defaults, located errors |
//! | [`underlay`] | one UDP socket per interface: multicast to neighbors, unicast data |
//! | [`batch`] | recvmmsg/sendmmsg with buffers allocated once |
//! | [`daemon`] | the loop: TUN, sockets, timers, neighbor table, reload, shutdown |
//! | [`ctl`] | the control socket's JSON documents and monitor events |
//! | [`metrics`] | Prometheus metrics and the NetJSON topology on the opt-in HTTP port |

pub mod batch;
pub mod config;
pub mod ctl;
pub mod daemon;
pub mod metrics;
pub mod underlay;
