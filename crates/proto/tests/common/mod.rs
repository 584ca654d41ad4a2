//! Shared by the integration tests that drive several nodes or sessions
//! by hand: one harness per kind of driver.
//!
//! | module | drives |
//! | --- | --- |
//! | [`mesh`] | whole `Node`s over links (node_scenario, trust, hot_path_alloc) |
//! | [`control_medium`] | `ControlPlane`s alone on a broadcast medium (control_plane) |
//! | [`sessions`] | ingress and egress sessions, packet by packet (loss_models, redundancy_properties) |
//!
//! Here too: [`next_due`], the timer order every harness fires in, and
//! [`nodes`], the nodes most mesh tests start from.
#![allow(dead_code)] // not every test binary uses every helper

pub mod control_medium;
pub mod mesh;
pub mod sessions;

use braid_proto::time::Instant;

/// The item whose timer is due first (ties: the lowest index), if it is
/// due by `until`; `now` moves to that time, or to `until` when none is.
pub fn next_due<T>(
    items: &[T],
    now: &mut Instant,
    until: Instant,
    timeout: impl Fn(&T) -> Instant,
) -> Option<usize> {
    let (i, t) = items
        .iter()
        .enumerate()
        .map(|(i, x)| (i, timeout(x)))
        .min_by_key(|&(i, t)| (t, i))?;
    if t > until {
        *now = until;
        return None;
    }
    *now = (*now).max(t);
    Some(i)
}

/// Nodes 1..=`count` with `mode` as their default; the first serves
/// 198.18.1.0/24 and the last 198.18.`count`.0/24.
#[allow(dead_code)] // not every test binary builds nodes
pub fn nodes(
    count: u16,
    mode: braid_proto::redundancy::Mode,
    seed: u64,
    rng: &mut rand_chacha::ChaCha8Rng,
) -> Vec<braid_proto::node::Node> {
    nodes_with(count, mode, seed, rng, |_| {})
}

/// [`nodes`], each config changed by `tweak` first.
#[allow(dead_code)] // not every test binary builds nodes
pub fn nodes_with(
    count: u16,
    mode: braid_proto::redundancy::Mode,
    seed: u64,
    rng: &mut rand_chacha::ChaCha8Rng,
    tweak: impl Fn(&mut braid_proto::node::NodeConfig),
) -> Vec<braid_proto::node::Node> {
    use braid_proto::node::{Node, NodeConfig};
    use braid_wire::{NodeId, Prefix};
    (1..=count)
        .map(|id| {
            let mut config = NodeConfig {
                policy: braid_proto::redundancy::Policy {
                    default: mode,
                    ..Default::default()
                },
                classifier: braid_proto::classify::Classifier::default(),
                seed: seed ^ id as u64,
                ..NodeConfig::default()
            };
            if id == 1 || id == count {
                config.control.prefixes = vec![Prefix::V4 {
                    addr: [198, 18, id as u8, 0],
                    len: 24,
                }];
            }
            tweak(&mut config);
            Node::new(NodeId(id), config, Instant::ZERO, rng).unwrap()
        })
        .collect()
}
