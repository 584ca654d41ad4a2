//! `[[cost]]`: the operator's cost factors on links (babeld's `rxcost`,
//! olsrd's `LinkQualityMult`), by neighbor or by interface, and the rules
//! they meet: each names exactly one of a neighbor (another router's id)
//! or one of this router's `[[interface]]`s, once, with a factor of 1 to
//! 1000. The factor is advertised in the link state
//! ([`braid_proto::metric::CostFactor`]), so every router routes with it.

use braid_conf::Findings;
use braid_proto::metric::CostFactor;
use braid_proto::node::{CostOverrides, Interface};
use braid_wire::NodeId;

use super::schema::CostFile;

/// What one `[[cost]]` raises.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum CostTarget {
    /// The link to this neighbor (wins over its interface's factor).
    Neighbor(NodeId),
    /// Every link heard on this interface, by name.
    Interface(String),
}

/// One checked `[[cost]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CostOverride {
    pub target: CostTarget,
    pub factor: CostFactor,
}

/// Checks `[[cost]]` against this router's id and interfaces.
pub(super) fn check_costs(
    found: &mut Findings<'_>,
    raw: &[CostFile],
    node: NodeId,
    interfaces: &[String],
) -> Vec<CostOverride> {
    let mut out: Vec<CostOverride> = Vec::new();
    for (i, c) in raw.iter().enumerate() {
        let field = |k: &str| format!("cost[{i}].{k}");
        let target = match (&c.interface, &c.neighbor) {
            (Some(name), None) => {
                if !interfaces.contains(name.get_ref()) {
                    found.refuse(
                        Some(name.span()),
                        &field("interface"),
                        format!(
                            "\"{}\" is not one of this router's [[interface]]s ({})",
                            name.get_ref(),
                            interfaces.join(", ")
                        ),
                    );
                    continue;
                }
                CostTarget::Interface(name.get_ref().clone())
            }
            (None, Some(id)) => {
                let n = NodeId(*id.get_ref());
                if n.0 == 0 || n == NodeId::NONE || n.0 == u16::MAX {
                    found.refuse(
                        Some(id.span()),
                        &field("neighbor"),
                        "node ids are 1 to 65534",
                    );
                    continue;
                }
                if n == node {
                    found.refuse(
                        Some(id.span()),
                        &field("neighbor"),
                        "this router's own id: a neighbor is another router",
                    );
                    continue;
                }
                CostTarget::Neighbor(n)
            }
            (Some(name), Some(_)) => {
                found.refuse(
                    Some(name.span()),
                    &format!("cost[{i}]"),
                    "both interface and neighbor: a [[cost]] names one of them (write two)",
                );
                continue;
            }
            (None, None) => {
                found.refuse(
                    Some(c.factor.span()),
                    &format!("cost[{i}]"),
                    "neither interface nor neighbor: say which links the factor raises",
                );
                continue;
            }
        };
        let factor = match CostFactor::new(*c.factor.get_ref()) {
            Ok(f) => f,
            Err(e) => {
                found.refuse(Some(c.factor.span()), &field("factor"), e.to_string());
                continue;
            }
        };
        if out.iter().any(|o| o.target == target) {
            let span = match (&c.interface, &c.neighbor) {
                (Some(name), _) => name.span(),
                (_, Some(id)) => id.span(),
                _ => c.factor.span(),
            };
            found.refuse(Some(span), &format!("cost[{i}]"), "listed twice");
            continue;
        }
        out.push(CostOverride { target, factor });
    }
    out
}

/// What the protocol node is told: interfaces by their position among
/// `interfaces` (the running ones: a reload keeps them).
pub fn cost_overrides(costs: &[CostOverride], interfaces: &[String]) -> CostOverrides {
    let mut o = CostOverrides::default();
    for c in costs {
        match &c.target {
            CostTarget::Neighbor(n) => {
                o.neighbors.insert(*n, c.factor);
            }
            CostTarget::Interface(name) => {
                if let Some(i) = interfaces.iter().position(|x| x == name) {
                    o.interfaces.insert(Interface(i as u16), c.factor);
                }
            }
        }
    }
    o
}
