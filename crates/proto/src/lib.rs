//! braid's sans-IO core.
//!
//! Everything here is a pure state machine or a pure function: it takes the
//! current time ([`time::Instant`]), bytes and events, and returns what to
//! send and when to wake up. Nothing reads a clock, a socket or a global
//! random number generator; randomness is passed in as an `RngCore`. The
//! simulator, the daemon and the tests drive the very same code.
//!
//! | module | owns |
//! |---|---|
//! | [`time`] | the caller's clock, as the core sees it |
//! | [`random`] | helpers over the caller's random number generator |
//! | [`metric`] | link and path costs (fixed point, never zero) |
//! | [`graph`] | the directed multigraph paths are computed on |
//! | [`paths`] | Dijkstra, k disjoint paths, SMesh trees, route damping |
//! | [`netjson`] | reading a NetJSON NetworkGraph into a graph |
//! | [`generate`] | seeded topology generators (random geometric mesh, ...) |
//! | [`linkest`] | per-neighbor probe windows, ETX and ETT |
//! | [`lsdb`] | the link-state database: flooding, aging, bounds |
//! | [`auth`] | control-plane keys, MACs, replay windows and challenges |
//! | [`control`] | a node's control plane: probing, LSA origination, flooding |
//! | [`classify`] | a user packet's class, urgency and flow |
//! | [`redundancy`] | the modes, the ingress encoder, the egress decoder, session tables |
//! | [`scheduler`] | the late-binding scheduler (per-flow queues above the binding point) |
//! | [`forward`] | tree mode's per-entry-point tables and the choice of egress |
//! | [`access`] | an access point's clients: which it hears and serves |
//! | [`node`] | the whole node, the one object a driver drives (its contract) |

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod access;
pub mod area;
pub mod auth;
pub mod classify;
pub mod control;
pub mod forward;
pub mod generate;
pub mod graph;
pub mod linkest;
pub mod lsdb;
pub mod lsgraph;
pub mod metric;
pub mod netjson;
pub mod node;
pub mod origin;
pub mod paths;
pub mod random;
pub mod redundancy;
pub mod scheduler;
pub mod time;
