//! What the node decided, in the kernel data path's terms: the
//! classifier as a rule table, an ingress session (mode, epoch, paths) as
//! a session entry. Pure; a setting the kernel cannot express is an
//! [`Unsupported`] naming why, and the daemon keeps that part in user
//! space.

use braid_proto::classify::{Classifier, PortRange};
use braid_proto::redundancy::{Mode, PathState};
use braid_wire::{NodeId, Prefix as WirePrefix};
use thiserror::Error;

use crate::maps::{
    KPath, PortRange as KPortRange, Rule, Ruleset, Session, KPATHS, KTRANSIT, RULES, RULE_PORTS,
    RULE_PREFIXES, STRIPE_SLOTS,
};

/// Why the kernel cannot do something the node does.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Unsupported {
    #[error("{0} class rules (the kernel evaluates at most {RULES})")]
    TooManyRules(usize),
    #[error("class rule {rule}: more than {RULE_PREFIXES} IPv4 destination prefixes")]
    TooManyPrefixes { rule: String },
    #[error("class rule {rule}: more than {RULE_PORTS} port ranges in a list")]
    TooManyPorts { rule: String },
    #[error("mode {0} is coded or adaptive: user space encodes it")]
    Mode(String),
    #[error("no path")]
    NoPath,
    #[error("{0} paths (the kernel sends on at most {KPATHS})")]
    TooManyPaths(usize),
    #[error("a path of {0} transit nodes (the kernel carries at most {KTRANSIT})")]
    RouteTooLong(usize),
}

/// The classifier as the kernel's rule table (IPv4 packets only: the
/// kernel takes no other).
pub fn ruleset(c: &Classifier) -> Result<Ruleset, Unsupported> {
    if c.rules.len() > RULES {
        return Err(Unsupported::TooManyRules(c.rules.len()));
    }
    let mut set = Ruleset {
        count: c.rules.len() as u32,
        ..Ruleset::default()
    };
    for (slot, r) in set.rules.iter_mut().zip(&c.rules) {
        let m = &r.matches;
        let mut k = Rule {
            class_id: r.id,
            urgent: match r.urgent {
                None => 0,
                Some(false) => 1,
                Some(true) => 2,
            },
            ..Rule::default()
        };
        let v4: Vec<([u8; 4], u8)> = m
            .dst
            .iter()
            .filter_map(|&p| match WirePrefix::from(p) {
                WirePrefix::V4 { addr, len } => Some((addr, len)),
                _ => None,
            })
            .collect();
        if v4.len() > RULE_PREFIXES {
            return Err(Unsupported::TooManyPrefixes {
                rule: r.name.clone(),
            });
        }
        // Only IPv6 prefixes: no IPv4 packet can match the rule.
        k.never = u8::from(!m.dst.is_empty() && v4.is_empty());
        k.n_prefixes = v4.len() as u8;
        for (i, (addr, len)) in v4.iter().enumerate() {
            let mask = prefix_mask(*len);
            k.mask_be[i] = mask.to_be();
            k.prefix_be[i] = (u32::from_be_bytes(*addr) & mask).to_be();
        }
        k.dscp = if m.dscp.is_empty() {
            u64::MAX
        } else {
            m.dscp
                .iter()
                .filter(|&&d| d < 64)
                .fold(0, |acc, &d| acc | 1 << d)
        };
        if m.protocols.is_empty() {
            k.protocols = [u64::MAX; 4];
        } else {
            for &p in &m.protocols {
                k.protocols[(p >> 6) as usize] |= 1 << (p & 63);
            }
        }
        let ports = |list: &[PortRange], out: &mut [KPortRange; RULE_PORTS]| {
            if list.len() > RULE_PORTS {
                return Err(Unsupported::TooManyPorts {
                    rule: r.name.clone(),
                });
            }
            for (o, p) in out.iter_mut().zip(list) {
                *o = KPortRange { lo: p.0, hi: p.1 };
            }
            Ok(list.len() as u8)
        };
        k.n_src_ports = ports(&m.src_ports, &mut k.src_ports)?;
        k.n_dst_ports = ports(&m.dst_ports, &mut k.dst_ports)?;
        *slot = k;
    }
    Ok(set)
}

/// The network mask of an IPv4 prefix of `len` bits (host order).
pub fn prefix_mask(len: u8) -> u32 {
    match len {
        0 => 0,
        l => u32::MAX << (32 - u32::from(l.min(32))),
    }
}

/// One path as the ingress knows it: its slot (the header's path index),
/// its transit nodes, its state.
#[derive(Debug, Clone)]
pub struct IngressPath<'a> {
    pub slot: u8,
    pub transit: &'a [NodeId],
    pub state: PathState,
}

/// An ingress session toward `egress` as the kernel encodes it: `mode`
/// (the mode in force), `epoch`, and the session's paths, of which the
/// ones up are used as the user-space encoder uses them (single: the
/// first; stripe: all, by weight; mirror:k: the first k).
pub fn session(
    egress: NodeId,
    mode: Mode,
    epoch: u32,
    paths: &[IngressPath<'_>],
) -> Result<Session, Unsupported> {
    let up: Vec<&IngressPath<'_>> = paths.iter().filter(|p| p.state.up).collect();
    let (code, wanted, pinned) = match mode {
        Mode::Single => (0, 1, false),
        Mode::Stripe { pin_flows } => (1, up.len(), pin_flows),
        Mode::Mirror(k) => (2, (k as usize).min(up.len()), false),
        other => return Err(Unsupported::Mode(other.to_string())),
    };
    if up.is_empty() {
        return Err(Unsupported::NoPath);
    }
    if wanted > KPATHS {
        return Err(Unsupported::TooManyPaths(wanted));
    }
    let used = &up[..wanted.max(1)];
    let mut s = Session {
        mode: code,
        n_paths: used.len() as u8,
        copies: if code == 2 { used.len() as u8 } else { 1 },
        pinned: u8::from(pinned),
        epoch,
        ..Session::default()
    };
    let mut total: u64 = 0;
    for (i, p) in used.iter().enumerate() {
        if p.transit.len() > KTRANSIT {
            return Err(Unsupported::RouteTooLong(p.transit.len()));
        }
        let mut route = [0u16; KTRANSIT];
        for (r, n) in route.iter_mut().zip(p.transit) {
            *r = n.0;
        }
        s.paths[i] = KPath {
            first_hop: p.transit.first().copied().unwrap_or(egress).0,
            slot: p.slot,
            route_len: p.transit.len() as u8,
            route,
        };
        let w = p.state.weight.max(1);
        s.weight[i] = w;
        total += u64::from(w);
    }
    s.total_weight = u32::try_from(total).unwrap_or(0);
    if pinned && s.total_weight == 0 {
        return Err(Unsupported::TooManyPaths(used.len()));
    }
    let weights: Vec<u32> = s.weight[..used.len()].to_vec();
    s.stripe = stripe_table(&weights);
    // Mirror copies go out shortest header first (the room in front of
    // the packet then only grows).
    let mut order: Vec<u8> = (0..used.len() as u8).collect();
    order.sort_by_key(|&i| s.paths[i as usize].route_len);
    for (o, i) in s.order.iter_mut().zip(order) {
        *o = i;
    }
    Ok(s)
}

/// Stripe's schedule: the first [`STRIPE_SLOTS`] picks of the smooth
/// weighted round robin the user-space encoder runs, by path index.
pub fn stripe_table(weights: &[u32]) -> [u8; STRIPE_SLOTS] {
    let mut table = [0u8; STRIPE_SLOTS];
    if weights.is_empty() {
        return table;
    }
    let total: i64 = weights.iter().map(|&w| i64::from(w.max(1))).sum();
    let mut current = vec![0i64; weights.len()];
    for slot in table.iter_mut() {
        let mut best = 0;
        for (i, &w) in weights.iter().enumerate() {
            current[i] += i64::from(w.max(1));
            if current[i] > current[best] {
                best = i;
            }
        }
        current[best] -= total;
        *slot = best as u8;
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_proto::classify::{ClassRule, Match};

    fn path(slot: u8, transit: &[NodeId], weight: u32) -> IngressPath<'_> {
        IngressPath {
            slot,
            transit,
            state: PathState {
                up: true,
                weight,
                loss: 0.0,
            },
        }
    }

    #[test]
    fn stripe_table_keeps_the_weights_proportions() {
        let t = stripe_table(&[3, 1]);
        let zeros = t.iter().filter(|&&p| p == 0).count();
        assert_eq!(zeros, 48);
        assert_eq!(&t[..4], &[0, 0, 1, 0]);
        assert!(stripe_table(&[5]).iter().all(|&p| p == 0));
    }

    #[test]
    fn sessions_the_kernel_cannot_encode_are_refused_with_the_reason() {
        let r = [NodeId(2)];
        let paths = [path(0, &r, 1)];
        assert!(matches!(
            session(NodeId(9), Mode::Parity(4), 1, &paths),
            Err(Unsupported::Mode(_))
        ));
        assert_eq!(
            session(NodeId(9), Mode::Single, 1, &[]).unwrap_err(),
            Unsupported::NoPath
        );
        let long: Vec<NodeId> = (1..=16).map(NodeId).collect();
        assert_eq!(
            session(NodeId(99), Mode::Single, 1, &[path(0, &long, 1)]).unwrap_err(),
            Unsupported::RouteTooLong(16)
        );
        let r5: Vec<[NodeId; 1]> = (1..=5).map(|i| [NodeId(i)]).collect();
        let five: Vec<IngressPath<'_>> = r5
            .iter()
            .enumerate()
            .map(|(i, r)| path(i as u8, r, 1))
            .collect();
        assert_eq!(
            session(NodeId(9), Mode::Stripe { pin_flows: false }, 1, &five).unwrap_err(),
            Unsupported::TooManyPaths(5)
        );
        // Mirror:2 of five paths uses two: fine.
        let s = session(NodeId(9), Mode::Mirror(2), 1, &five).unwrap();
        assert_eq!((s.n_paths, s.copies), (2, 2));
    }

    #[test]
    fn mirror_order_is_by_header_length_and_down_paths_are_skipped() {
        let long = [NodeId(2), NodeId(3)];
        let short = [NodeId(4)];
        let mut paths = vec![path(0, &[], 1), path(1, &long, 1), path(2, &short, 1)];
        paths[0].state.up = false;
        let s = session(NodeId(9), Mode::Mirror(3), 7, &paths).unwrap();
        assert_eq!(s.n_paths, 2);
        assert_eq!((s.paths[0].slot, s.paths[1].slot), (1, 2));
        assert_eq!(&s.order[..2], &[1, 0]);
        assert_eq!(s.paths[0].first_hop, 2);
        assert_eq!(s.epoch, 7);
        let direct = session(NodeId(9), Mode::Single, 7, &[path(0, &[], 1)]).unwrap();
        assert_eq!(direct.paths[0].first_hop, 9);
    }

    #[test]
    fn rules_beyond_the_kernel_are_refused_with_the_rule() {
        let mut c = Classifier::example();
        assert!(ruleset(&c).is_ok());
        c.rules[0].matches.dst_ports = (1..=5).map(|p| PortRange(p, p)).collect();
        assert!(matches!(ruleset(&c), Err(Unsupported::TooManyPorts { .. })));
        let many = Classifier {
            rules: (1..=17)
                .map(|i| ClassRule {
                    name: format!("c{i}"),
                    id: i,
                    matches: Match::default(),
                    urgent: None,
                })
                .collect(),
        };
        assert_eq!(ruleset(&many).unwrap_err(), Unsupported::TooManyRules(17));
    }
}
