//! What routes a lab's routers, one module per variant's software, each
//! turning a lab into plan steps: braid daemons (`braid.rs`), babeld
//! (`babeld.rs`), FRR's OSPF and BFD (`frr.rs`), static kernel routes
//! (`kernel.rs`) and Linux MPTCP over them (`mptcp.rs`). What every
//! variant shares once it runs: asking a router what it routes
//! (`query.rs`) and waiting for convergence (`converge.rs`). Below the
//! plan: these modules write steps and never read a plan.

pub mod babeld;
pub mod braid;
mod converge;
pub mod frr;
pub mod kernel;
pub mod mptcp;
mod query;

pub use converge::{wait_clients, wait_converged};
pub use query::{braid_stats, first_link_of, log_tail};
