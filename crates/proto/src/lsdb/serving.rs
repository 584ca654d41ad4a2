//! Which origins serve a destination, looked up per packet: an index of
//! the database's prefixes and clients, built from it when it changed
//! since the last lookup (its version), so that a packet costs a
//! few hash lookups instead of a scan of every origin's advertisement.
//!
//! The index answers exactly as the scan (`Lsdb::best_origins_by_scan`,
//! kept for the tests and the bench that compare the two) would: the
//! longest prefix that covers the destination wins, then the highest
//! client quality, then the highest gateway preference, among the origins
//! of the asking router's area with a two-way link, the router itself,
//! and another area's members as its leader's summary lists them; and the
//! access points listing a client, among the origins with a two-way link
//! and the router itself. The index is one per area (the asking router's
//! own advertisement is merged in at lookup, so every router of an area,
//! and every entry point a tree asks for, shares it); the last
//! [`AREAS_KEPT`] areas asked for are kept. Per prefix (network and
//! length) it keeps the best rank seen and the origins tied on it; a
//! lookup tries the lengths present, longest first. Its size is bounded by
//! the database's own bounds (origins times prefixes per origin), and it
//! is built at most once per change of the database and area.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use braid_wire::{NodeId, Prefix, DEFAULT_PREFERENCE};

use crate::area::area_in;

/// Areas whose index is kept at once (a router asks for its own; tree
/// mode asks for its entry points', nearly always of the same area).
pub const AREAS_KEPT: usize = 4;

/// A network: the address with every bit past the prefix length cleared
/// (IPv4 in the first four bytes).
type Network = [u8; 16];

/// The origins serving one prefix best (a run of [`Family::origins`]),
/// and their rank below the length: (client quality, gateway
/// preference). Eight bytes, beside the 16 of the network it is found
/// by.
#[derive(Debug, Clone, Copy)]
struct Served {
    rank: (u8, u8),
    count: u16,
    first: u32,
}

/// A run of [`Family::listed`]: the access points listing one client.
#[derive(Debug, Clone, Copy)]
struct Listed {
    count: u16,
    first: u32,
}

/// One IP family's index.
#[derive(Debug, Default)]
struct Family {
    /// Prefixes by length, longest first.
    by_len: Vec<(u8, HashMap<Network, Served>)>,
    /// The origins of every prefix's run, each run sorted.
    origins: Vec<NodeId>,
    /// Another area's members, as its leader's summary lists them: the
    /// prefixes of each (for `Lsdb::serves`).
    members: HashMap<NodeId, Vec<(Network, u8)>>,
    /// Per client address, the access points listing it.
    clients: HashMap<Network, Listed>,
    /// The access points of every client's run and the quality each
    /// gives, each run sorted by origin.
    listed: Vec<(NodeId, u8)>,
}

/// One IP family's index while it is built.
#[derive(Debug, Default)]
struct Building {
    /// Every offer: (length, network, rank, origin).
    offers: Vec<Offer>,
    members: HashMap<NodeId, Vec<(Network, u8)>>,
    /// Every client entry: (address, origin, its place among the
    /// origin's entries, quality): an origin's first entry counts.
    clients: Vec<(Network, NodeId, usize, u8)>,
}

/// An origin offering a prefix: (length, network, rank, origin).
type Offer = (u8, Network, (u8, u8), NodeId);

/// The index of one database, for the routers of one area.
#[derive(Debug)]
pub(super) struct ServingIndex {
    version: u64,
    area: u16,
    v4: Family,
    v6: Family,
    /// The origins without a two-way link, sorted: left out of the index
    /// (an asking router among them is merged in at lookup).
    unlinked: Vec<NodeId>,
}

/// The database's indexes, built when first needed after a change (a
/// lookup needs only `&Lsdb`: the data path reads the database it shares
/// with the control plane). Cloning a database starts its copy without.
#[derive(Debug, Default)]
pub(super) struct IndexCache(Mutex<Vec<Arc<ServingIndex>>>);

impl Clone for IndexCache {
    fn clone(&self) -> Self {
        IndexCache::default()
    }
}

impl IndexCache {
    /// The index of the database at `version` for the routers of
    /// `area`, built now from its `records` (each origin, its prefixes
    /// and whether it has a two-way link) if the database changed since
    /// or that area was not asked for.
    pub(super) fn get<'a, R>(
        &self,
        version: u64,
        area: u16,
        records: impl FnOnce() -> R,
    ) -> Arc<ServingIndex>
    where
        R: Iterator<Item = (NodeId, &'a [Prefix], bool)>,
    {
        // A poisoned lock only means a lookup panicked; the indexes inside
        // are whole (each is replaced, never edited).
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|i| i.version == version);
        if let Some(i) = held.iter().find(|i| i.area == area) {
            return i.clone();
        }
        let built = Arc::new(ServingIndex::build(version, area, records()));
        if held.len() == AREAS_KEPT {
            held.remove(0);
        }
        held.push(built.clone());
        built
    }
}

/// `addr`'s first `len` bits, the rest cleared; `None` when `len` is
/// longer than the family's addresses (such a prefix covers nothing).
pub(super) fn network(addr: &[u8], len: u8, host: u8) -> Option<Network> {
    if len > host {
        return None;
    }
    let mut net = [0u8; 16];
    for (i, (n, a)) in net.iter_mut().zip(addr).enumerate() {
        let keep = u32::from(len).saturating_sub(8 * i as u32).min(8);
        *n = if keep == 0 {
            0
        } else {
            a & (0xffu8 << (8 - keep))
        };
    }
    Some(net)
}

impl Building {
    fn offer(&mut self, net: Network, len: u8, rank: (u8, u8), origin: NodeId) {
        self.offers.push((len, net, rank, origin));
    }

    /// The index: per prefix the best rank and the origins tied on it,
    /// per client its access points, each run in one array (runs of at
    /// most 65,535: more origins than that cannot be held).
    fn finish(mut self) -> Family {
        let mut f = Family {
            members: self.members,
            ..Family::default()
        };
        // Per prefix, the best rank first, then the origins in order.
        self.offers
            .sort_unstable_by(|a, b| (a.0, a.1, b.2, a.3).cmp(&(b.0, b.1, a.2, b.3)));
        let mut i = 0;
        while i < self.offers.len() {
            let (len, net, rank, _) = self.offers[i];
            let first = f.origins.len();
            let mut j = i;
            while j < self.offers.len() && self.offers[j].0 == len && self.offers[j].1 == net {
                let o = self.offers[j].3;
                let new = f.origins.len() == first || f.origins.last() != Some(&o);
                if self.offers[j].2 == rank
                    && new
                    && f.origins.len() - first < usize::from(u16::MAX)
                {
                    f.origins.push(o);
                }
                j += 1;
            }
            let served = Served {
                rank,
                count: (f.origins.len() - first) as u16,
                first: first as u32,
            };
            match f.by_len.iter_mut().find(|(l, _)| *l == len) {
                Some((_, m)) => {
                    m.insert(net, served);
                }
                None => f.by_len.push((len, HashMap::from([(net, served)]))),
            }
            i = j;
        }
        f.by_len
            .sort_unstable_by_key(|&(len, _)| std::cmp::Reverse(len));
        self.clients.sort_unstable();
        let mut i = 0;
        while i < self.clients.len() {
            let addr = self.clients[i].0;
            let first = f.listed.len();
            let mut j = i;
            while j < self.clients.len() && self.clients[j].0 == addr {
                let (_, o, _, q) = self.clients[j];
                let new = f.listed.len() == first || f.listed.last().is_some_and(|l| l.0 != o);
                if new && f.listed.len() - first < usize::from(u16::MAX) {
                    f.listed.push((o, q));
                }
                j += 1;
            }
            let run = Listed {
                count: (f.listed.len() - first) as u16,
                first: first as u32,
            };
            f.clients.insert(addr, run);
            i = j;
        }
        f
    }
}

impl Family {
    /// The longest prefix covering `dst`: its length, rank and origins.
    fn best(&self, dst: &[u8; 16], host: u8) -> Option<(u8, (u8, u8), &[NodeId])> {
        self.by_len.iter().find_map(|(len, m)| {
            let net = network(dst, *len, host)?;
            let s = m.get(&net)?;
            let first = s.first as usize;
            Some((
                *len,
                s.rank,
                &self.origins[first..first + usize::from(s.count)],
            ))
        })
    }

    /// The access points listing client `dst`, sorted.
    fn clients_of(&self, dst: &[u8; 16]) -> &[(NodeId, u8)] {
        self.clients.get(dst).map_or(&[], |r| {
            let first = r.first as usize;
            &self.listed[first..first + usize::from(r.count)]
        })
    }
}

/// How well an advertisement of these prefixes serves `dst` (an IPv4
/// address in the first four bytes when `v4`), if at all: (length of its
/// longest covering prefix, client quality for a client entry, gateway
/// preference for a prefix), compared in that order.
pub(super) fn rank_for(prefixes: &[Prefix], dst: &[u8; 16], v4: bool) -> Option<(u8, u8, u8)> {
    let preference = gateway_of(prefixes).0;
    prefixes
        .iter()
        .filter_map(|p| {
            let (addr, len, quality, pref): (&[u8], u8, u8, u8) = match p {
                Prefix::V4 { addr, len } if v4 => (addr, *len, 0, preference),
                Prefix::V6 { addr, len } if !v4 => (addr, *len, 0, preference),
                Prefix::Client4 { addr, quality } if v4 => (addr, 32, *quality, 0),
                Prefix::Client6 { addr, quality } if !v4 => (addr, 128, *quality, 0),
                _ => return None,
            };
            covers(addr, len, dst).then_some((len, quality, pref))
        })
        .max()
}

/// The length of `p` (an IP prefix of `v4`'s family) if it covers `dst`.
pub(super) fn prefix_len_covering(p: &Prefix, dst: &[u8; 16], v4: bool) -> Option<u8> {
    let (addr, len): (&[u8], u8) = match p {
        Prefix::V4 { addr, len } if v4 => (addr, *len),
        Prefix::V6 { addr, len } if !v4 => (addr, *len),
        _ => return None,
    };
    covers(addr, len, dst).then_some(len)
}

/// Whether the first `len` bits of `addr` are those of `dst`.
fn covers(addr: &[u8], len: u8, dst: &[u8; 16]) -> bool {
    let full = (len / 8) as usize;
    let rest = len % 8;
    let (Some(a), Some(d)) = (addr.get(..full), dst.get(..full)) else {
        return false;
    };
    a == d
        && (rest == 0 || {
            let mask = 0xffu8 << (8 - rest);
            matches!((addr.get(full), dst.get(full)), (Some(a), Some(d)) if a & mask == d & mask)
        })
}

/// An advertisement's gateway preference and capacity: its first
/// [`Prefix::Gateway`] entry, or the default preference and 0.
pub(super) fn gateway_of(prefixes: &[Prefix]) -> (u8, u32) {
    prefixes
        .iter()
        .find_map(Prefix::gateway)
        .unwrap_or((DEFAULT_PREFERENCE, 0))
}

/// The quality these prefixes list client `dst` with (the first entry
/// for it).
pub(super) fn client_quality(prefixes: &[Prefix], dst: &[u8; 16], v4: bool) -> Option<u8> {
    prefixes.iter().find_map(|p| match p.client() {
        Some((addr, is_v4, q)) if is_v4 == v4 && addr == *dst => Some(q),
        _ => None,
    })
}

impl ServingIndex {
    fn build<'a>(
        version: u64,
        area: u16,
        records: impl Iterator<Item = (NodeId, &'a [Prefix], bool)>,
    ) -> Self {
        let (mut v4, mut v6) = (Building::default(), Building::default());
        let mut unlinked = Vec::new();
        for (origin, prefixes, two_way) in records {
            if !two_way {
                unlinked.push(origin);
            }
            if two_way {
                for (place, p) in prefixes.iter().enumerate() {
                    let Some((addr, is_v4, q)) = p.client() else {
                        continue;
                    };
                    let family = if is_v4 { &mut v4 } else { &mut v6 };
                    family.clients.push((addr, origin, place, q));
                }
            }
            if area_in(prefixes) != area {
                for p in prefixes {
                    let Some((node, prefix)) = p.member() else {
                        continue;
                    };
                    let (family, net, len) = match prefix {
                        Prefix::V4 { addr, len } => (&mut v4, network(&addr, len, 32), len),
                        Prefix::V6 { addr, len } => (&mut v6, network(&addr, len, 128), len),
                        _ => continue,
                    };
                    let Some(net) = net else { continue };
                    family.offer(net, len, (0, DEFAULT_PREFERENCE), NodeId(node));
                    let kept = family.members.entry(NodeId(node)).or_default();
                    if !kept.contains(&(net, len)) {
                        kept.push((net, len));
                    }
                }
                continue;
            }
            if !two_way {
                continue;
            }
            let preference = gateway_of(prefixes).0;
            for p in prefixes {
                let (family, addr, len, host, rank): (_, &[u8], u8, u8, (u8, u8)) = match p {
                    Prefix::V4 { addr, len } => (&mut v4, addr, *len, 32, (0, preference)),
                    Prefix::V6 { addr, len } => (&mut v6, addr, *len, 128, (0, preference)),
                    Prefix::Client4 { addr, quality } => (&mut v4, addr, 32, 32, (*quality, 0)),
                    Prefix::Client6 { addr, quality } => (&mut v6, addr, 128, 128, (*quality, 0)),
                    _ => continue,
                };
                if let Some(net) = network(addr, len, host) {
                    family.offer(net, len, rank, origin);
                }
            }
        }
        ServingIndex {
            version,
            area,
            v4: v4.finish(),
            v6: v6.finish(),
            unlinked: {
                unlinked.sort_unstable();
                unlinked
            },
        }
    }

    /// Whether `origin` was held without a two-way link when the index
    /// was built.
    pub(super) fn is_unlinked(&self, origin: NodeId) -> bool {
        self.unlinked.binary_search(&origin).is_ok()
    }

    fn family(&self, v4: bool) -> (&Family, u8) {
        if v4 {
            (&self.v4, 32)
        } else {
            (&self.v6, 128)
        }
    }

    /// As [`super::Lsdb::best_origins`], for `me` of this index's area;
    /// `unlinked` is `me`'s prefixes when it has no two-way link (the
    /// index left it out; the asking router counts all the same).
    pub(super) fn best_origins(
        &self,
        dst: &[u8; 16],
        v4: bool,
        me: NodeId,
        unlinked: Option<&[Prefix]>,
        out: &mut Vec<NodeId>,
    ) -> Option<u8> {
        out.clear();
        let (family, host) = self.family(v4);
        let found = family
            .best(dst, host)
            .map(|(len, rank, origins)| ((len, rank.0, rank.1), origins));
        let mine = unlinked.and_then(|p| rank_for(p, dst, v4));
        match (found, mine) {
            (Some((rank, origins)), m) if m.is_none_or(|m| m <= rank) => {
                out.extend_from_slice(origins);
                if m == Some(rank) {
                    if let Err(at) = out.binary_search(&me) {
                        out.insert(at, me);
                    }
                }
                Some(rank.0)
            }
            (_, Some(m)) => {
                out.push(me);
                Some(m.0)
            }
            _ => None,
        }
    }

    /// As [`super::Lsdb::clients_served`]; `unlinked` as for
    /// [`Self::best_origins`].
    pub(super) fn clients_served(
        &self,
        dst: &[u8; 16],
        v4: bool,
        me: NodeId,
        unlinked: Option<&[Prefix]>,
        out: &mut Vec<(NodeId, u8)>,
    ) {
        out.clear();
        let (family, _) = self.family(v4);
        out.extend_from_slice(family.clients_of(dst));
        let mine = unlinked.and_then(|p| client_quality(p, dst, v4));
        if let Some(q) = mine {
            if let Err(at) = out.binary_search_by_key(&me, |&(o, _)| o) {
                out.insert(at, (me, q));
            }
        }
    }

    /// The longest prefix of another area's member `node` that covers
    /// `dst`, as its leader's summary lists them.
    pub(super) fn member_serves(&self, node: NodeId, dst: &[u8; 16], v4: bool) -> Option<u8> {
        let (family, host) = self.family(v4);
        family
            .members
            .get(&node)?
            .iter()
            .filter(|&&(net, len)| network(dst, len, host) == Some(net))
            .map(|&(_, len)| len)
            .max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsdb::tests::link;
    use crate::lsdb::{Lsdb, LsdbConfig};
    use crate::time::Instant;
    use braid_wire::{ControlHeader, ControlMessage, Lsa, LsaLink, MessageType};
    use proptest::prelude::*;

    /// Addresses drawn from a small space, so that prefixes overlap.
    fn v4(a: u8, b: u8) -> [u8; 4] {
        [198, 18, a, b]
    }

    fn v6(a: u8) -> [u8; 16] {
        let mut x = [0u8; 16];
        x[0] = 0xfd;
        x[15] = a;
        x
    }

    /// One entry of an advertisement, from small numbers.
    fn prefix(kind: u8, a: u8, b: u8, len: u8, q: u8, node: u16) -> Prefix {
        let v4len = [0, 8, 16, 20, 24, 30, 32][len as usize % 7];
        let v6len = [0, 64, 120, 124, 128][len as usize % 5];
        match kind % 9 {
            0 | 1 => Prefix::V4 {
                addr: v4(a % 4, b % 8),
                len: v4len,
            },
            2 => Prefix::V6 {
                addr: v6(b % 8),
                len: v6len,
            },
            3 => Prefix::Client4 {
                addr: v4(a % 4, b % 8),
                quality: q % 4 + 1,
            },
            4 => Prefix::Client6 {
                addr: v6(b % 8),
                quality: q % 4 + 1,
            },
            5 => Prefix::Gateway {
                preference: q % 3 * 100,
                capacity_kbps: 0,
            },
            6 => Prefix::Area {
                id: u16::from(a % 2),
                transit: 0,
            },
            7 => Prefix::Member4 {
                node,
                addr: v4(a % 4, b % 8),
                len: v4len,
            },
            _ => Prefix::Member6 {
                node,
                addr: v6(b % 8),
                len: v6len,
            },
        }
    }

    type Origin = (Vec<(u16, bool)>, Vec<(u8, u8, u8, u8, u8, u16)>);

    fn database(origins: &[Origin]) -> Lsdb {
        let mut db = Lsdb::new(LsdbConfig::default());
        let mut buf = vec![0u8; 8192];
        for (i, (links, prefixes)) in origins.iter().enumerate() {
            let origin = i as u16 + 1;
            let links: Vec<LsaLink> = links
                .iter()
                .map(|&(to, _)| link(to % origins.len() as u16 + 1, 1000, 1000))
                .filter(|l| l.neighbor.0 != origin)
                .collect();
            let mut seen = Vec::new();
            let links: Vec<LsaLink> = links
                .into_iter()
                .filter(|l| {
                    let new = !seen.contains(&l.neighbor);
                    seen.push(l.neighbor);
                    new
                })
                .collect();
            let prefixes: Vec<Prefix> = prefixes
                .iter()
                .map(|&(k, a, b, l, q, n)| prefix(k, a, b, l, q, n % 20 + 1))
                .collect();
            let header = ControlHeader::new(MessageType::Lsa, NodeId(99));
            let n = Lsa::emit(&header, NodeId(origin), 0, 1, &links, &prefixes, &mut buf).unwrap();
            let msg = ControlMessage::parse(&buf[..n]).unwrap();
            db.install(Instant::ZERO, &Lsa::parse(&msg).unwrap());
        }
        db
    }

    /// The scan [`Lsdb::serves`] made for another area's member.
    fn member_serves_by_scan(
        db: &Lsdb,
        me: NodeId,
        node: NodeId,
        dst: &[u8; 16],
        v4: bool,
    ) -> Option<u8> {
        let my_area = db.get(me).map_or(0, |r| area_in(&r.prefixes));
        db.records()
            .filter(|r| area_in(&r.prefixes) != my_area)
            .flat_map(|r| r.prefixes.iter().filter_map(Prefix::member))
            .filter(|&(n, _)| n == node.0)
            .filter_map(|(_, p)| crate::lsdb::prefix_len_covering(&p, dst, v4))
            .max()
    }

    fn destinations() -> Vec<([u8; 16], bool)> {
        let mut d = Vec::new();
        for a in 0..5u8 {
            for b in 0..9u8 {
                let mut x = [0u8; 16];
                x[..4].copy_from_slice(&v4(a, b));
                d.push((x, true));
            }
        }
        for b in 0..9u8 {
            d.push((v6(b), false));
        }
        d
    }

    #[test]
    fn a_higher_preference_or_quality_wins_on_the_same_prefix() {
        // Three routers linked to each other; 1 and 2 serve 198.18.0.0/16,
        // 2 as the preferred gateway; 1 and 3 list the client
        // 198.18.0.9, 3 at the better quality.
        let origins: Vec<Origin> = vec![
            (vec![(1, true), (2, true)], vec![(0, 0, 0, 2, 0, 0)]),
            (
                vec![(0, true), (2, true)],
                vec![(0, 0, 0, 2, 0, 0), (5, 0, 0, 0, 2, 0)],
            ),
            (vec![(0, true), (1, true)], vec![(3, 0, 1, 0, 3, 0)]),
        ];
        let mut origins = origins;
        origins[0].1.push((3, 0, 1, 0, 0, 0));
        let db = database(&origins);
        let mut dst = [0u8; 16];
        dst[..4].copy_from_slice(&v4(0, 5));
        let mut out = Vec::new();
        assert_eq!(db.best_origins(&dst, true, NodeId(3), &mut out), Some(16));
        assert_eq!(out, vec![NodeId(2)], "the preferred gateway");
        dst[..4].copy_from_slice(&v4(0, 1));
        assert_eq!(db.best_origins(&dst, true, NodeId(3), &mut out), Some(32));
        assert_eq!(out, vec![NodeId(3)], "the better quality");
        assert_eq!(
            db.best_origins_by_scan(&dst, true, NodeId(3), &mut out),
            Some(32)
        );
        assert_eq!(out, vec![NodeId(3)]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The index answers every lookup as the scan of every record did:
        /// the same origins, the same length, the same access points, for
        /// every router as `me` (of either area, with a two-way link or
        /// without); and after a change, as the changed database's scan.
        #[test]
        fn the_index_answers_as_the_scan(
            origins in prop::collection::vec(
                (
                    prop::collection::vec((0u16..12, any::<bool>()), 0..4),
                    prop::collection::vec((any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>(), any::<u16>()), 0..6),
                ),
                1..12,
            ),
            change in 0usize..12,
        ) {
            let mut db = database(&origins);
            for round in 0..2 {
                for me in 1..=origins.len() as u16 + 1 {
                    let me = NodeId(me);
                    for (dst, is_v4) in destinations() {
                        let (mut fast, mut slow) = (vec![NodeId(7)], vec![NodeId(8)]);
                        let a = db.best_origins(&dst, is_v4, me, &mut fast);
                        let b = db.best_origins_by_scan(&dst, is_v4, me, &mut slow);
                        prop_assert_eq!((a, &fast), (b, &slow), "round {}, me {:?}, dst {:?}", round, me, dst);
                        let (mut fast, mut slow) = (vec![(NodeId(7), 1)], vec![]);
                        db.clients_served(&dst, is_v4, me, &mut fast);
                        db.clients_served_by_scan(&dst, is_v4, me, &mut slow);
                        prop_assert_eq!(&fast, &slow, "clients: round {}, me {:?}, dst {:?}", round, me, dst);
                        for node in 1..=21u16 {
                            let node = NodeId(node);
                            if db.get(node).is_some_and(|r| area_in(&r.prefixes) == db.get(me).map_or(0, |m| area_in(&m.prefixes))) {
                                continue;
                            }
                            prop_assert_eq!(
                                db.serves(node, &dst, is_v4, me),
                                member_serves_by_scan(&db, me, node, &dst, is_v4)
                            );
                        }
                    }
                }
                // One origin's advertisement changes (its prefixes dropped):
                // the index must follow.
                let mut changed = origins.clone();
                let i = change % changed.len();
                changed[i].1.clear();
                let mut buf = vec![0u8; 8192];
                let header = ControlHeader::new(MessageType::Lsa, NodeId(99));
                let n = Lsa::emit(&header, NodeId(i as u16 + 1), 0, 2, &[], &[], &mut buf).unwrap();
                let msg = ControlMessage::parse(&buf[..n]).unwrap();
                db.install(Instant::ZERO, &Lsa::parse(&msg).unwrap());
            }
        }
    }
}
