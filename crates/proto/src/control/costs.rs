//! The operator's cost factors as this node advertises them: which
//! neighbors' links are raised, and by how much (bounded by the link
//! estimator's neighbors; see [`crate::metric::CostFactor`]).

use braid_wire::NodeId;

use super::ControlPlane;
use crate::metric::{CostFactor, Metric};

impl ControlPlane {
    /// The operator's factor on the link to `neighbor` (`None`: its
    /// measured cost): both figures this node advertises for the link are
    /// raised by it, in the next advertisement (within
    /// `lsa_min_interval`). Only for a neighbor the link estimator tracks
    /// (the table is bounded as the estimator's); returns whether it was
    /// taken. A neighbor the estimator forgets loses its factor: the
    /// driver sets it again when the neighbor is back.
    pub fn set_cost_factor(&mut self, neighbor: NodeId, factor: Option<CostFactor>) -> bool {
        let before = match factor {
            Some(f) if self.links.knows(neighbor) => self.cost_factors.insert(neighbor, f),
            Some(_) => return false,
            None => self.cost_factors.remove(&neighbor),
        };
        if before != factor {
            self.lsa_wanted = true;
        }
        true
    }

    /// The operator's factor on the link to `neighbor`, if any.
    pub fn cost_factor(&self, neighbor: NodeId) -> Option<CostFactor> {
        self.cost_factors.get(&neighbor).copied()
    }

    /// `metric` of the link to `neighbor` as advertised: raised by its
    /// factor, if any.
    pub(super) fn raised(&self, neighbor: NodeId, metric: Metric) -> Metric {
        match self.cost_factors.get(&neighbor) {
            Some(f) => f.apply(metric),
            None => metric,
        }
    }
}
