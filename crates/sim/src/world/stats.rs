//! What one router of a run holds and sends: its link-state database and
//! its control traffic ([`RouterStats`]).

use super::World;
use crate::results::RouterStats;

impl World {
    /// What one router holds and sends ([`RouterStats`]).
    pub(super) fn router_stats(&self) -> RouterStats {
        let sizes: Vec<usize> = self
            .nodes
            .iter()
            .map(|n| n.control().lsdb().len())
            .collect();
        let n = sizes.len().max(1) as f64;
        let secs = self.now.as_micros() as f64 / 1e6;
        RouterStats {
            database_mean: sizes.iter().sum::<usize>() as f64 / n,
            database_max: sizes.iter().copied().max().unwrap_or(0),
            control_bytes_per_s: if secs > 0.0 {
                self.control_bytes as f64 / n / secs
            } else {
                0.0
            },
        }
    }
}
