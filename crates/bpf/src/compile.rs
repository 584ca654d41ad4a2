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
    #[error("class rule {rule}: more than {RULE_PREFIXES} IPv{family} destination prefixes")]
    TooManyPrefixes { rule: String, family: u8 },
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

/// The classifier as the kernel's rule table (IPv4 and IPv6 packets;
/// each rule's destination prefixes kept per family).
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
        let (mut v4, mut v6) = (Vec::new(), Vec::new());
        for &p in &m.dst {
            match WirePrefix::from(p) {
                WirePrefix::V4 { addr, len } => v4.push((addr, len)),
                WirePrefix::V6 { addr, len } => v6.push((addr, len)),
                _ => {}
            }
        }
        for (family, n) in [(4, v4.len()), (6, v6.len())] {
            if n > RULE_PREFIXES {
                return Err(Unsupported::TooManyPrefixes {
                    rule: r.name.clone(),
                    family,
                });
            }
        }
        // Prefixes of one family only: no packet of the other matches.
        k.never = u8::from(!m.dst.is_empty() && v4.is_empty());
        k.never6 = u8::from(!m.dst.is_empty() && v6.is_empty());
        k.n_prefixes = v4.len() as u8;
        for (i, (addr, len)) in v4.iter().enumerate() {
            let mask = prefix_mask(*len);
            k.mask_be[i] = mask.to_be();
            k.prefix_be[i] = (u32::from_be_bytes(*addr) & mask).to_be();
        }
        k.n_prefixes6 = v6.len() as u8;
        for (i, (addr, len)) in v6.iter().enumerate() {
            let mask = prefix6_mask(*len);
            for w in 0..4 {
                let word = u32::from_be_bytes([
                    addr[4 * w],
                    addr[4 * w + 1],
                    addr[4 * w + 2],
                    addr[4 * w + 3],
                ]);
                k.mask6_be[i][w] = mask[w].to_be();
                k.prefix6_be[i][w] = (word & mask[w]).to_be();
            }
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

/// The network mask of an IPv6 prefix of `len` bits, as four words (host
/// order), most significant first.
pub fn prefix6_mask(len: u8) -> [u32; 4] {
    let mut mask = [0u32; 4];
    for (w, m) in mask.iter_mut().enumerate() {
        let bits = u32::from(len.min(128))
            .saturating_sub(32 * w as u32)
            .min(32) as u8;
        *m = prefix_mask(bits);
    }
    mask
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
    fn ipv6_prefixes_are_kept_beside_the_ipv4_ones() {
        let rule = |dst: &[&str]| ClassRule {
            name: "r".into(),
            id: 1,
            matches: Match {
                dst: dst.iter().map(|d| d.parse().unwrap()).collect(),
                ..Match::default()
            },
            urgent: None,
        };
        let c = Classifier {
            rules: vec![
                rule(&["198.19.0.0/16", "2001:db8:9:0:8000::/65"]),
                rule(&["198.19.0.0/16"]),
                rule(&["2001:db8::/32"]),
                rule(&[]),
            ],
        };
        let set = ruleset(&c).unwrap();
        let both = &set.rules[0];
        assert_eq!((both.n_prefixes, both.n_prefixes6), (1, 1));
        assert_eq!((both.never, both.never6), (0, 0));
        assert_eq!(
            both.mask6_be[0],
            [
                u32::MAX.to_be(),
                u32::MAX.to_be(),
                0x8000_0000u32.to_be(),
                0
            ]
        );
        assert_eq!(
            both.prefix6_be[0],
            [
                0x2001_0db8u32.to_be(),
                0x0009_0000u32.to_be(),
                0x8000_0000u32.to_be(),
                0
            ]
        );
        assert_eq!((set.rules[1].never, set.rules[1].never6), (0, 1));
        assert_eq!((set.rules[2].never, set.rules[2].never6), (1, 0));
        assert_eq!((set.rules[3].never, set.rules[3].never6), (0, 0));
        let five: Vec<String> = (0..5).map(|i| format!("2001:db8:{i}::/48")).collect();
        let five: Vec<&str> = five.iter().map(String::as_str).collect();
        assert_eq!(
            ruleset(&Classifier {
                rules: vec![rule(&five)]
            })
            .unwrap_err(),
            Unsupported::TooManyPrefixes {
                rule: "r".into(),
                family: 6
            }
        );
        assert_eq!(prefix6_mask(0), [0; 4]);
        assert_eq!(prefix6_mask(128), [u32::MAX; 4]);
        assert_eq!(prefix6_mask(40), [u32::MAX, 0xff00_0000, 0, 0]);
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
