//! What both directions are described by: the settings they run with
//! (`[redistribute]`, `[install]`, their defaults) and a route of the
//! kernel's table as read (`crate::rtnl` fills it). Depends on nothing of
//! the daemon's.

use braid_wire::Prefix;

/// The protocol number braid installs its routes with by default (unused
/// by the kernel, iproute2's list and FRR).
pub const DEFAULT_PROTOCOL: u8 = 177;
/// The metric of the routes braid installs by default: above a connected
/// or static route (0), below the kernel's default for IPv6 (1024).
pub const DEFAULT_METRIC: u32 = 20;

/// `[redistribute]` as the daemon runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedistributeConfig {
    pub table: u32,
    /// Route protocol numbers taken.
    pub protocols: Vec<u8>,
    /// Only routes within one of these (every route when empty).
    pub within: Vec<Prefix>,
}

/// `[install]` as the daemon runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstallConfig {
    pub table: u32,
    pub protocol: u8,
    pub metric: u32,
}

/// One route of the kernel's table, as far as the choice needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelRoute {
    pub prefix: Prefix,
    pub table: u32,
    pub protocol: u8,
    /// The device it leaves by (none for a multipath route or a
    /// blackhole).
    pub oif: Option<u32>,
    /// A unicast route (not local, broadcast, blackhole, ...).
    pub unicast: bool,
}
