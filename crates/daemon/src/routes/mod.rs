//! Routes shared with the kernel's routing table, both ways
//! (docs/operations.md "Routes from outside"):
//! * **redistribution** (`[redistribute]`): the routes of the named
//!   protocols in one table (another daemon's: FRR's OSPF or BGP, static
//!   ones), within the configured prefixes, are advertised into the mesh
//!   as this router's external prefixes while they stand in the kernel;
//! * **installation** (`[install]`): every prefix another router
//!   advertises is installed as a route on the TUN device with braid's
//!   own protocol number and metric, so that FRR or BIRD sees it (FRR
//!   shows it as a kernel route, and redistributes it with `redistribute
//!   kernel`).
//!
//! Both are synchronised once a second (and at start; installation also
//! at once when the mesh's database changed): the kernel's table
//! is read whole (a netlink dump), which is cheap for the tables a mesh
//! router holds; a full BGP table is no place to redistribute from (an
//! advertisement carries at most `max_prefixes`). A route braid installed
//! (its protocol) or one through its TUN device is never taken back.
//! Installed routes go with the TUN device when the daemon stops.

mod select;
pub mod settings;

use std::time::Duration;

use braid_proto::control::External;
use braid_proto::node::Node;
use braid_proto::time::Instant;
use braid_wire::Prefix;
use tracing::{info, warn};

use crate::rtnl;
pub use select::{installs_wanted, redistributed, MAX_INSTALLED};
pub use settings::{
    InstallConfig, KernelRoute, RedistributeConfig, DEFAULT_METRIC, DEFAULT_PROTOCOL,
};

/// How often both directions are synchronised.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(1);

/// What the synchronisation did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RouteCounters {
    /// Prefixes advertised from the kernel's table now.
    pub redistributed: u64,
    /// Redistributed prefixes that did not fit in the advertisement.
    pub redistributed_over: u64,
    /// Routes installed now.
    pub installed: u64,
    /// Routes the kernel refused to add or remove.
    pub install_failures: u64,
    /// Reads of the kernel's table that failed.
    pub read_failures: u64,
}

/// The synchronisation the loop runs.
pub struct KernelRoutes {
    redistribute: Option<RedistributeConfig>,
    install: Option<InstallConfig>,
    /// The TUN device's index: routes through it are braid's.
    tun_index: u32,
    next_sync: Instant,
    /// The mesh database's digest at the last synchronisation.
    digest: u64,
    advertised: Vec<Prefix>,
    installed: Vec<Prefix>,
    /// Prefixes the kernel refused to install at the last attempt.
    refused: Vec<Prefix>,
    counters: RouteCounters,
}

impl KernelRoutes {
    /// `None` when neither direction is configured.
    pub fn new(
        redistribute: Option<RedistributeConfig>,
        install: Option<InstallConfig>,
        tun_index: u32,
        now: Instant,
    ) -> Option<KernelRoutes> {
        (redistribute.is_some() || install.is_some()).then_some(KernelRoutes {
            redistribute,
            install,
            tun_index,
            next_sync: now,
            digest: 0,
            advertised: Vec::new(),
            installed: Vec::new(),
            refused: Vec::new(),
            counters: RouteCounters::default(),
        })
    }

    /// When [`Self::sync`] should next run.
    pub fn poll_timeout(&self) -> Instant {
        self.next_sync
    }

    /// The counters.
    pub fn counters(&self) -> RouteCounters {
        self.counters
    }

    /// Synchronises both directions if due: once a second, and at once
    /// when the mesh's database changed (a prefix that came or went is
    /// installed or removed without waiting for the second).
    pub fn sync(&mut self, now: Instant, node: &mut Node) {
        let digest = node.control().lsdb().digest();
        let mesh_changed = self.install.is_some() && digest != self.digest;
        if now < self.next_sync && !mesh_changed {
            return;
        }
        self.digest = digest;
        self.next_sync = now + SYNC_INTERVAL;
        let table = match rtnl::dump_routes() {
            Ok(t) => t,
            Err(e) => {
                self.counters.read_failures += 1;
                warn!(error = %e, "reading the kernel's routing table failed");
                return;
            }
        };
        if let Some(r) = &self.redistribute {
            let ours = self.install.map_or(DEFAULT_PROTOCOL, |i| i.protocol);
            let prefixes = redistributed(&table, r, self.tun_index, Some(ours));
            if prefixes != self.advertised {
                info!(
                    prefixes = ?prefixes.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "redistributed kernel routes changed"
                );
                let over = node.set_external_prefixes(External::Redistributed, prefixes.clone());
                if over > 0 {
                    warn!(over, "redistributed routes that do not fit in an advertisement are not advertised");
                }
                self.counters.redistributed = prefixes.len() as u64;
                self.counters.redistributed_over = over as u64;
                self.advertised = prefixes;
            }
        }
        if let Some(i) = self.install {
            let wanted = installs_wanted(node);
            self.install_routes(&i, wanted, &table);
        }
    }

    /// Adds what is wanted and not in the kernel, removes what braid put
    /// there and no longer wants.
    fn install_routes(
        &mut self,
        config: &InstallConfig,
        wanted: Vec<Prefix>,
        table: &[KernelRoute],
    ) {
        let ours = |p: &Prefix| {
            table.iter().any(|r| {
                r.prefix == *p
                    && r.protocol == config.protocol
                    && r.table == config.table
                    && r.oif == Some(self.tun_index)
            })
        };
        let mut refused = Vec::new();
        for p in &wanted {
            if !ours(p) {
                if let Err(e) = rtnl::change_route(true, p, self.tun_index, config) {
                    // Said once per prefix while it stays refused (another
                    // daemon's route with the same metric, most often).
                    if !self.refused.contains(p) {
                        self.counters.install_failures += 1;
                        warn!(prefix = %p, error = %e, "installing a route failed (another route with the same table, prefix and metric? see [install] metric)");
                    }
                    refused.push(*p);
                }
            }
        }
        self.refused = refused;
        // What we installed before (or a previous run did, through a TUN
        // device of the same index) and no longer want.
        let stale: Vec<Prefix> = table
            .iter()
            .filter(|r| {
                r.protocol == config.protocol
                    && r.table == config.table
                    && r.oif == Some(self.tun_index)
                    && !wanted.contains(&r.prefix)
            })
            .map(|r| r.prefix)
            .collect();
        for p in stale {
            if let Err(e) = rtnl::change_route(false, &p, self.tun_index, config) {
                self.counters.install_failures += 1;
                warn!(prefix = %p, error = %e, "removing a route failed");
            }
        }
        if wanted != self.installed {
            info!(routes = wanted.len(), "installed routes changed");
        }
        self.counters.installed = (wanted.len() - self.refused.len()) as u64;
        self.installed = wanted;
    }
}
