//! Which egress a flow entering the mesh here goes to when several serve
//! its destination equally well (gateways, most often): the nearest, or,
//! with spreading on, one chosen per flow in proportion to the gateways'
//! advertised capacities; and the flow then stays with it (pinned) while
//! that egress still serves the destination as specifically as it did and
//! is reachable, whatever the topology or the preferences do since, so
//! that connections NATed at a gateway survive another becoming nearer or
//! preferred. A flow moves only when its egress stops serving (its uplink
//! failed and it withdrew the prefix, it left, or its links went).
//!
//! Flows are told apart by their 5-tuple's hash (`PacketInfo::flow_hash`:
//! two flows that share one share a pin, which is harmless). The table is
//! bounded (`max_flows`; when full, a new flow is not pinned and
//! counted), and pins idle for `flow_idle` expire (swept at most once a
//! second).

use std::collections::HashMap;
use std::time::Duration;

use braid_wire::NodeId;

use crate::time::Instant;

/// How an entry point uses several gateways.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatewayChoice {
    /// Flows stay with the egress they started with (see the module).
    pub sticky: bool,
    /// Flows are spread across equally preferred egresses in proportion
    /// to their advertised capacities (rendezvous hashing: a gateway that
    /// comes or goes moves only its share), instead of all to the
    /// nearest.
    pub spread: bool,
    /// Most flows pinned at once.
    pub max_flows: usize,
    /// A pin unused this long is forgotten.
    pub flow_idle: Duration,
}

impl Default for GatewayChoice {
    fn default() -> Self {
        GatewayChoice {
            sticky: true,
            spread: false,
            max_flows: 16_384,
            flow_idle: Duration::from_secs(300),
        }
    }
}

/// What the pins did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GatewayCounters {
    /// Flows pinned to their first egress.
    pub flows_pinned: u64,
    /// Packets kept on their flow's egress where the choice now would be
    /// another (a topology or preference change the flow was spared).
    pub packets_kept: u64,
    /// Flows moved because their egress stopped serving.
    pub flows_moved: u64,
    /// Pins forgotten after `flow_idle`.
    pub flows_expired: u64,
    /// New flows not pinned: the table was full.
    pub flows_unpinned: u64,
}

#[derive(Debug, Clone, Copy)]
struct Pin {
    egress: NodeId,
    /// The prefix length it served the destination at.
    len: u8,
    last: Instant,
}

/// The pinned flows.
#[derive(Debug, Clone, Default)]
pub struct FlowPins {
    pins: HashMap<u64, Pin>,
    next_sweep: Instant,
    counters: GatewayCounters,
    /// The choice for a new flow as the latest packet found it.
    latest_choice: Option<NodeId>,
}

impl FlowPins {
    /// The counters.
    pub fn counters(&self) -> GatewayCounters {
        self.counters
    }

    /// Flows pinned now.
    pub fn pinned(&self) -> usize {
        self.pins.len()
    }

    /// How many flows are pinned to each egress, by egress.
    pub fn pinned_by_egress(&self) -> std::collections::BTreeMap<NodeId, usize> {
        let mut by = std::collections::BTreeMap::new();
        for p in self.pins.values() {
            *by.entry(p.egress).or_default() += 1;
        }
        by
    }

    /// The egress a new flow would have been given when the latest packet
    /// was forwarded (the nearest, or with spreading that packet's share):
    /// what pinned flows are kept from. `None` before any packet, when
    /// nothing served the latest one's destination, or when neither
    /// pinning nor spreading is on (no choice among gateways is made).
    pub fn latest_choice(&self) -> Option<NodeId> {
        self.latest_choice
    }

    /// Notes the choice a new flow would get now ([`Self::latest_choice`]).
    pub fn note_choice(&mut self, choice: Option<NodeId>) {
        self.latest_choice = choice;
    }

    /// The egress flow `flow` is pinned to, if any.
    pub fn peek(&self, flow: u64) -> Option<NodeId> {
        self.pins.get(&flow).map(|p| p.egress)
    }

    /// The egress for flow `flow` at `now`: its pinned one if `kept` (the
    /// prefix length it serves the destination at now, if it serves it
    /// and is reachable) is the length it was pinned at, else `best` (the
    /// choice now, with its prefix length), pinned. `None` when nothing
    /// serves the destination.
    pub fn egress(
        &mut self,
        config: &GatewayChoice,
        now: Instant,
        flow: u64,
        kept: Option<u8>,
        best: Option<(NodeId, u8)>,
    ) -> Option<NodeId> {
        self.sweep(config, now);
        if let Some(pin) = self.pins.get_mut(&flow) {
            if kept == Some(pin.len) {
                pin.last = now;
                let egress = pin.egress;
                if best.is_some_and(|(b, _)| b != egress) {
                    self.counters.packets_kept += 1;
                }
                return Some(egress);
            }
            self.pins.remove(&flow);
            self.counters.flows_moved += 1;
        }
        let (egress, len) = best?;
        if self.pins.len() < config.max_flows {
            self.pins.insert(
                flow,
                Pin {
                    egress,
                    len,
                    last: now,
                },
            );
            self.counters.flows_pinned += 1;
        } else {
            self.counters.flows_unpinned += 1;
        }
        Some(egress)
    }

    fn sweep(&mut self, config: &GatewayChoice, now: Instant) {
        if now < self.next_sweep {
            return;
        }
        self.next_sweep = now + Duration::from_secs(1);
        let before = self.pins.len();
        self.pins
            .retain(|_, p| now.since(p.last) < config.flow_idle);
        self.counters.flows_expired += (before - self.pins.len()) as u64;
    }
}

/// Among `origins` (sorted, at least one), the one flow `flow` goes to
/// when spreading: rendezvous hashing weighted by `capacity` (kbit/s; an
/// origin that says none counts as the least that any says, or 1), so
/// that each gets flows in proportion to its capacity and one coming or
/// going moves only its own share.
pub fn spread(origins: &[NodeId], flow: u64, capacity: impl Fn(NodeId) -> u32) -> Option<NodeId> {
    let said: Vec<u32> = origins.iter().map(|&o| capacity(o)).collect();
    let floor = said.iter().copied().filter(|&c| c > 0).min().unwrap_or(1);
    origins
        .iter()
        .zip(&said)
        .map(|(&o, &c)| {
            let weight = f64::from(if c == 0 { floor } else { c });
            // A uniform draw in (0, 1) per (flow, origin); the highest
            // weight / -ln(u) wins (Resch's weighted rendezvous hash).
            let h = mix(flow ^ (u64::from(o.0) << 48) ^ u64::from(o.0));
            let u = ((h >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            (o, weight / -u.ln())
        })
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(o, _)| o)
}

/// SplitMix64's finaliser: a well-spread 64-bit hash of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Instant {
        Instant::from_millis(s * 1000)
    }

    #[test]
    fn a_flow_keeps_its_egress_until_it_stops_serving() {
        let config = GatewayChoice::default();
        let mut pins = FlowPins::default();
        let (a, b) = (NodeId(1), NodeId(2));
        let e = pins.egress(&config, at(0), 7, None, Some((a, 0)));
        assert_eq!(e, Some(a));
        // b is now nearer: the flow stays with a, a new flow takes b.
        let e = pins.egress(&config, at(1), 7, Some(0), Some((b, 0)));
        assert_eq!(e, Some(a));
        let e = pins.egress(&config, at(1), 8, Some(0), Some((b, 0)));
        assert_eq!(e, Some(b));
        let by: Vec<_> = pins.pinned_by_egress().into_iter().collect();
        assert_eq!(by, vec![(a, 1), (b, 1)]);
        // a withdrew the prefix: the flow moves, and stays moved.
        let e = pins.egress(&config, at(2), 7, None, Some((b, 0)));
        assert_eq!(e, Some(b));
        let e = pins.egress(&config, at(3), 7, Some(0), Some((a, 0)));
        assert_eq!(e, Some(b));
        // A more specific prefix appeared at another origin: the pin
        // (made at /0) yields to it.
        let e = pins.egress(&config, at(4), 7, Some(0), Some((a, 24)));
        assert_eq!(e, Some(b), "b still serves at /0");
        let e = pins.egress(&config, at(4), 9, None, Some((a, 24)));
        assert_eq!(e, Some(a));
        let c = pins.counters();
        assert_eq!((c.flows_pinned, c.flows_moved, c.packets_kept), (4, 1, 3));
    }

    #[test]
    fn the_table_is_bounded_and_idle_pins_expire() {
        let config = GatewayChoice {
            max_flows: 2,
            flow_idle: Duration::from_secs(10),
            ..GatewayChoice::default()
        };
        let mut pins = FlowPins::default();
        for flow in 0..5 {
            pins.egress(&config, at(0), flow, Some(0), Some((NodeId(1), 0)));
        }
        assert_eq!(pins.pinned(), 2);
        assert_eq!(pins.counters().flows_unpinned, 3);
        pins.egress(&config, at(5), 0, Some(0), Some((NodeId(1), 0)));
        pins.egress(&config, at(12), 9, Some(0), Some((NodeId(1), 0)));
        assert_eq!(pins.counters().flows_expired, 1, "flow 1 idle since 0");
        assert_eq!(pins.pinned(), 2, "flow 0 (used at 5) and flow 9");
    }

    #[test]
    fn spreading_follows_capacity_and_moves_only_the_share_of_a_gateway_that_goes() {
        let cap = |o: NodeId| match o.0 {
            1 => 30_000,
            2 => 10_000,
            _ => 0,
        };
        let both = [NodeId(1), NodeId(2)];
        let flows: Vec<u64> = (0..20_000u64).map(mix).collect();
        let to1 = flows
            .iter()
            .filter(|&&f| spread(&both, f, cap) == Some(NodeId(1)))
            .count();
        let share = to1 as f64 / flows.len() as f64;
        assert!((0.73..0.77).contains(&share), "{share}: 3/4 expected");
        // A third gateway that says no capacity counts as the least (10).
        let three = [NodeId(1), NodeId(2), NodeId(3)];
        let moved = flows
            .iter()
            .filter(|&&f| {
                let now = spread(&three, f, cap);
                now != spread(&both, f, cap) && now != Some(NodeId(3))
            })
            .count();
        assert_eq!(moved, 0, "only flows to the new gateway move");
        let to3 = flows
            .iter()
            .filter(|&&f| spread(&three, f, cap) == Some(NodeId(3)))
            .count() as f64
            / flows.len() as f64;
        assert!((0.18..0.22).contains(&to3), "{to3}: 1/5 expected");
        assert_eq!(spread(&[NodeId(4)], 1, |_| 0), Some(NodeId(4)));
        assert_eq!(spread(&[], 1, |_| 0), None);
    }
}
