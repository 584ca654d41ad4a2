//! The operator's cost factors on links, by neighbor and by interface,
//! and which one a link takes (the control plane advertises it:
//! [`crate::control::ControlPlane::set_cost_factor`]).

use std::collections::BTreeMap;

use braid_wire::NodeId;

use super::interface::Interface;
use crate::metric::CostFactor;

/// The operator's cost factors: a link to a neighbor listed in
/// `neighbors` takes its factor; otherwise a link heard on an interface
/// listed in `interfaces` takes that interface's. Applied to what the
/// node advertises for the link as soon as the neighbor is next heard
/// (within a probe interval of a change).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostOverrides {
    /// By neighbor.
    pub neighbors: BTreeMap<NodeId, CostFactor>,
    /// By the driver's interface.
    pub interfaces: BTreeMap<Interface, CostFactor>,
}

impl CostOverrides {
    /// The factor on the link to `neighbor`, heard on `interface`.
    pub fn factor(&self, neighbor: NodeId, interface: Interface) -> Option<CostFactor> {
        self.neighbors
            .get(&neighbor)
            .or_else(|| self.interfaces.get(&interface))
            .copied()
    }
}
