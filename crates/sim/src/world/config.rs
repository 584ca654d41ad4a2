//! Each simulated node's configuration from the scenario: the classes and
//! modes of the flows it sends, paths, metric and damping, late binding,
//! probes at every radio rate, the network's key, and the host address it
//! serves.

use std::time::Duration;

use braid_proto::classify::{ClassRule, Classifier, Match, PortRange};
use braid_proto::linkest::MetricKind;
use braid_proto::node::{LateBinding, NodeConfig};
use braid_proto::paths::{DampingConfig, Margin};
use braid_proto::redundancy::Policy;
use braid_wire::Prefix;

use super::traffic::{flow_class, host_addr, FLOW_PORT_BASE};
use crate::scenario::Scenario;

/// The key of a simulated network with `[node] auth = true`.
fn sim_key() -> braid_proto::auth::AuthConfig {
    let key = braid_proto::auth::AuthKey::new(1, b"the simulated network's key, 32B")
        .expect("a 32-byte secret");
    braid_proto::auth::AuthConfig { keys: vec![key] }
}

/// Node `i`'s origin key in a simulation that signs origins (from its
/// index: deterministic, as everything in a run).
pub(super) fn origin_key(i: u32) -> braid_proto::origin::OriginKey {
    let mut secret = [0x5au8; braid_proto::origin::KEY_LEN];
    secret[..4].copy_from_slice(&i.to_be_bytes());
    braid_proto::origin::OriginKey::from_secret(&secret).expect("32 bytes")
}

/// The roster of nodes `0..count` (each with [`origin_key`], under its id).
pub(super) fn origin_roster(
    ids: &super::ids::NodeIds,
    count: u32,
) -> std::sync::Arc<braid_proto::origin::Roster> {
    let roster =
        braid_proto::origin::Roster::new((0..count).map(|i| (ids.id(i), origin_key(i).public())))
            .expect("one key per node");
    std::sync::Arc::new(roster)
}

/// Every flow's class rule (by destination port) and the policy giving
/// each flow with a mode of its own that mode.
pub(super) fn flow_rules(scenario: &Scenario) -> (Classifier, Policy) {
    let mut classifier = Classifier::default();
    let mut policy = Policy {
        default: scenario.mode,
        ..Policy::default()
    };
    for (i, f) in scenario.flows.iter().enumerate() {
        let port = FLOW_PORT_BASE + i as u16;
        let class = flow_class(i);
        classifier.rules.push(ClassRule {
            name: f.name.clone(),
            id: class,
            matches: Match {
                dst_ports: vec![PortRange(port, port)],
                ..Match::default()
            },
            urgent: None,
        });
        if let Some(m) = f.mode {
            policy.classes.insert(class, m);
        }
    }
    (classifier, policy)
}

/// Node `i`'s configuration for the run with `seed`. `own`: the flows it
/// sends (only a flow's ingress classifies its packets: the rules match
/// its destination port, which reverse traffic does not carry, so each
/// node gets the rules and modes of its own flows, not every node every
/// flow's: 100 flows x 10,000 nodes of copies). An `unmodified` client
/// advertises nothing (it runs no braid); its access points advertise it.
pub(super) fn node_config(
    scenario: &Scenario,
    seed: u64,
    i: u32,
    (classifier, policy): (&Classifier, &Policy),
    own: &[usize],
    unmodified: bool,
    roster: Option<&std::sync::Arc<braid_proto::origin::Roster>>,
) -> NodeConfig {
    let mut node_policy = policy.clone();
    node_policy
        .classes
        .retain(|c, _| own.iter().any(|&k| flow_class(k) == *c));
    let node_classifier = Classifier {
        rules: own.iter().map(|&k| classifier.rules[k].clone()).collect(),
    };
    let mut config = NodeConfig {
        policy: node_policy,
        classifier: node_classifier,
        max_paths: scenario.paths,
        seed: seed ^ ((i as u64) << 20),
        ignore_tx_failures: scenario.ignore_tx_failures,
        late_binding: scenario.bound.map(|bound| LateBinding {
            bound,
            ..LateBinding::default()
        }),
        ..NodeConfig::default()
    };
    config.control.metric = scenario.metric;
    config.neighbor_timeout = scenario
        .dead_after
        .and_then(|n| config.control.probes.small_interval.checked_mul(n));
    if scenario.auth {
        config.control.auth = sim_key();
    }
    if let Some(roster) = roster {
        config.control.origins = braid_proto::origin::OriginConfig {
            key: Some(origin_key(i)),
            roster: Some(roster.clone()),
        };
    }
    if !scenario.damping {
        config.damping = DampingConfig {
            margin: Margin::Absolute(0),
            hold: Duration::ZERO,
        };
    } else if scenario.metric == MetricKind::Ett {
        // One expected transmission is ETX's margin; for air time the
        // same idea is relative.
        config.damping.margin = Margin::Percent(10);
    }
    if let Some(radio) = &scenario.radio {
        // Big probes at every rate, so that ETT sees each one.
        config.control.probes.big_rates = radio
            .rates_bps
            .iter()
            .map(|&r| (r / 100_000).clamp(1, u16::MAX as u64 - 1) as u16)
            .collect();
    }
    config.ingress.flush_after = scenario.flush;
    config.equalise_delay = scenario.equalise_delay;
    config.pace = scenario.pace;
    if let Some(interval) = scenario.report_interval {
        config.path_report_interval = interval;
    }
    if scenario.reorder {
        config.egress.reorder = Some(braid_proto::redundancy::reorder::ReorderConfig::default());
    }
    config.control.prefixes = if unmodified {
        Vec::new()
    } else {
        vec![Prefix::V4 {
            addr: host_addr(i),
            len: 32,
        }]
    };
    config
}
