//! Plain kernel routing: static routes along fewest-hop paths, the
//! physical limit of this machine for benchmarks, and the "plain Linux"
//! side of the handoff and uplink experiments.

use std::collections::VecDeque;

use crate::scenario::Lab;
use crate::step::Step;

/// Every router reaches every host subnet along a fewest-hop path, with a
/// route of higher metric through every other neighbor no farther from
/// the subnet (never back toward it, so no loops): when an interface goes
/// down, the kernel falls back on the next route at once, as a
/// multi-homed Linux host with a route per uplink.
pub fn static_routes(lab: &Lab) -> Vec<Step> {
    let n = lab.routers.len();
    let neighbors = |u: usize| {
        lab.links
            .iter()
            .enumerate()
            .filter_map(move |(j, l)| match (l.a == u, l.b == u) {
                (true, _) => Some((j, l.b)),
                (_, true) => Some((j, l.a)),
                _ => None,
            })
    };
    let mut steps = Vec::new();
    for dst in (0..n).filter(|&k| lab.routers[k].host) {
        // Hops to dst, breadth-first.
        let mut dist: Vec<Option<usize>> = vec![None; n];
        dist[dst] = Some(0);
        let mut queue = VecDeque::from([dst]);
        while let Some(u) = queue.pop_front() {
            for (_, v) in neighbors(u) {
                if dist[v].is_none() {
                    dist[v] = Some(dist[u].unwrap_or(0) + 1);
                    queue.push_back(v);
                }
            }
        }
        for i in (0..n).filter(|&i| i != dst) {
            let Some(di) = dist[i] else { continue };
            let mut via: Vec<(usize, usize, usize)> = neighbors(i)
                .filter_map(|(j, u)| dist[u].filter(|&du| du <= di).map(|du| (du + 1, j, u)))
                .collect();
            via.sort();
            for (rank, (hops, j, u)) in via.into_iter().enumerate() {
                steps.push(Step::Route {
                    ns: lab.ns(i),
                    dst: Lab::host_net(dst),
                    via: lab.link_addr(j, u),
                    metric: Some((100 * hops + rank) as u32),
                    table: None,
                });
            }
        }
    }
    steps
}

/// For every router, the link and neighbor of a fewest-hop path toward
/// router `dst` (`None` for `dst` itself and routers that cannot reach
/// it). Ties go to the lowest link index.
fn toward(lab: &Lab, dst: usize) -> Vec<Option<(usize, usize)>> {
    let n = lab.routers.len();
    let mut dist: Vec<Option<usize>> = vec![None; n];
    let mut hop: Vec<Option<(usize, usize)>> = vec![None; n];
    dist[dst] = Some(0);
    let mut queue = VecDeque::from([dst]);
    while let Some(u) = queue.pop_front() {
        for (j, l) in lab.links.iter().enumerate() {
            let v = match (l.a == u, l.b == u) {
                (true, _) => l.b,
                (_, true) => l.a,
                _ => continue,
            };
            if dist[v].is_none() {
                dist[v] = Some(dist[u].unwrap_or(0) + 1);
                hop[v] = Some((j, u));
                queue.push_back(v);
            }
        }
    }
    hop
}

/// Plain routing's way out, where the lab has an internet: every router
/// without an uplink takes a default route along a fewest-hop path to
/// the nearest gateway with one (ties to the first in the file), as a
/// static network is set up; it never moves when that uplink fails.
pub fn default_routes(lab: &Lab) -> Vec<Step> {
    let paths: Vec<Vec<Option<(usize, usize)>>> =
        lab.uplinks().into_iter().map(|g| toward(lab, g)).collect();
    let hops = |to: &[Option<(usize, usize)>], mut i: usize| {
        let mut n = 0;
        while let Some((_, u)) = to[i] {
            (i, n) = (u, n + 1);
        }
        n
    };
    (0..lab.routers.len())
        .filter(|&i| !lab.routers[i].uplink)
        .filter_map(|i| {
            let (j, u) = paths
                .iter()
                .filter(|to| to[i].is_some())
                .min_by_key(|to| hops(to, i))?[i]?;
            Some(Step::DefaultRoute {
                ns: lab.ns(i),
                via: lab.link_addr(j, u),
            })
        })
        .collect()
}

/// The static routes that home client `c` on access point `ap`: every
/// other router routes the client's address along a fewest-hop path to
/// `ap`; `ap` itself reaches it on its segment (its connected route), so
/// a host route it held from an earlier home goes. As `ip` argument lists
/// per namespace (replacing what was there: the re-homing a plain
/// network does).
pub fn client_routes(lab: &Lab, c: usize, ap: usize) -> Vec<(String, Vec<String>)> {
    let client = format!("{}/32", lab.client_addr(c));
    let replace = |how: &str, to: &str| {
        ["ip", "route", "replace", &client, how, to]
            .map(String::from)
            .to_vec()
    };
    let mut out = Vec::new();
    for (i, h) in toward(lab, ap).into_iter().enumerate() {
        if i == ap {
            let dev = Lab::access_dev(lab.clients[c].segment);
            out.push((lab.ns(i), replace("dev", &dev)));
        } else if let Some((j, u)) = h {
            out.push((lab.ns(i), replace("via", &lab.link_addr(j, u).to_string())));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diamond_routes_both_ways_with_a_backup_and_never_back() {
        // a - b - d and a - c - d; hosts behind a and d.
        let lab = Lab::parse(
            "d.toml",
            "name = \"d\"\n[[router]]\nname = \"a\"\nhost = true\n[[router]]\nname = \"b\"\n\
             [[router]]\nname = \"c\"\n[[router]]\nname = \"d\"\nhost = true\n\
             [[link]]\na = \"a\"\nb = \"b\"\n[[link]]\na = \"b\"\nb = \"d\"\n\
             [[link]]\na = \"a\"\nb = \"c\"\n[[link]]\na = \"c\"\nb = \"d\"\n",
        )
        .unwrap();
        let steps = static_routes(&lab);
        let routes_at = |ns: &str, dst: u8| -> Vec<(String, u32)> {
            steps
                .iter()
                .filter_map(|s| match s {
                    Step::Route {
                        ns: n,
                        dst: (d, 24),
                        via,
                        metric: Some(m),
                        ..
                    } if n == ns && d.octets()[2] == dst => Some((via.to_string(), *m)),
                    _ => None,
                })
                .collect()
        };
        // From a to d's subnet: via b (link 0) first, via c (link 2) next.
        assert_eq!(
            routes_at("braid-d-a", 4),
            vec![("198.19.0.2".into(), 200), ("198.19.2.2".into(), 201)]
        );
        // b reaches d directly; its only other neighbor (a) is farther.
        assert_eq!(routes_at("braid-d-b", 4), vec![("198.19.1.2".into(), 100)]);
    }
}
