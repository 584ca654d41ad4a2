//! Processing time charged to a router's clock (`[node]
//! origin_check_cost`, `origin_sign_cost`): the simulator otherwise
//! handles a datagram in no time. Each origin-signature check and each
//! signature a router makes while it handles a datagram or a timer
//! costs what the scenario says; the router is then busy for that long:
//! what it sends goes out when it is done, and what arrives meanwhile
//! waits its turn. So per-origin signatures show in how long news takes
//! to cross the mesh, as they would on a router's CPU.

use std::time::Duration;

use braid_proto::node::Node;
use braid_proto::time::Instant;

/// Each router's processing clock.
pub(super) struct Processing {
    /// (per check, per signature); `None`: nothing is charged.
    costs: Option<(Duration, Duration)>,
    /// Until when each router is busy.
    busy_until: Vec<Instant>,
    /// Each router's checks and signatures at its last charge.
    done: Vec<(u64, u64)>,
}

impl Processing {
    /// `costs` (per check, per signature) for `nodes` routers; `signs`:
    /// whether they sign their advertisements (else none is charged).
    pub(super) fn new(costs: (Duration, Duration), signs: bool, nodes: usize) -> Self {
        let costs = (costs.0, if signs { costs.1 } else { Duration::ZERO });
        Processing {
            costs: (costs != (Duration::ZERO, Duration::ZERO)).then_some(costs),
            busy_until: vec![Instant::ZERO; nodes],
            done: vec![(0, 0); nodes],
        }
    }

    /// Until when router `i` is busy, if it is at `t`.
    pub(super) fn busy(&self, i: u32, t: Instant) -> Option<Instant> {
        let until = *self.busy_until.get(i as usize)?;
        (self.costs.is_some() && until > t).then_some(until)
    }

    /// Router `i` (`node`) handled something at `t`: what its checks and
    /// signatures since the last charge cost. `Some(done)`: it is busy
    /// until `done`, and sends what it made then.
    pub(super) fn charge(&mut self, i: u32, node: &Node, t: Instant) -> Option<Instant> {
        let (check, sign) = self.costs?;
        let c = node.control().counters();
        let now = (c.origin_checks, c.lsas_originated);
        let before = std::mem::replace(&mut self.done[i as usize], now);
        let work = check * (now.0.saturating_sub(before.0)) as u32
            + sign * (now.1.saturating_sub(before.1)) as u32;
        if work.is_zero() {
            return None;
        }
        let done = t + work;
        self.busy_until[i as usize] = done;
        Some(done)
    }

    /// Router `i` restarted: its counters start again.
    pub(super) fn restarted(&mut self, i: u32) {
        self.done[i as usize] = (0, 0);
    }
}
