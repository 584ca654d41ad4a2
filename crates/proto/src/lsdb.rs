//! The link-state database: one advertisement per origin, installed when
//! newer than what we hold, aged out when its origin stops refreshing it,
//! and turned into a [`Graph`] for path computation.
//!
//! Sequence numbers compare in serial-number arithmetic (RFC 1982), so they
//! may wrap. An advertisement's age travels with it: a receiver expires it
//! `max_age` after its origin issued it, however many hops it crossed.
//! Every table is bounded: origins, links and prefixes per origin.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use braid_wire::{Lsa, LsaLink, NodeId, Prefix};

use crate::graph::{Graph, GraphBuilder, NodeIx};
use crate::metric::Metric;
use crate::time::Instant;

/// Database limits and timers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LsdbConfig {
    /// Most origins held; advertisements from more are refused and counted.
    pub max_origins: usize,
    /// Most links one advertisement may list.
    pub max_links: usize,
    /// Most prefixes one advertisement may list.
    pub max_prefixes: usize,
    /// An advertisement this old is dropped (its origin refreshes well
    /// before: see `ControlConfig::lsa_refresh`). 90 s: two refreshes in a
    /// row may be lost before an origin's links vanish from the network.
    pub max_age: Duration,
}

impl Default for LsdbConfig {
    fn default() -> Self {
        LsdbConfig {
            max_origins: 4096,
            max_links: 512,
            max_prefixes: 256,
            max_age: Duration::from_secs(90),
        }
    }
}

/// What happened to an advertisement offered to the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Install {
    /// Newer than what we held (or first seen): installed; flood it on.
    New,
    /// The same sequence number as held: ignored.
    Duplicate,
    /// Older than what we hold: ignored.
    Stale,
    /// Already at or past the maximum age: ignored.
    TooOld,
    /// Refused by a bound; the reason is counted.
    Refused(Refusal),
}

/// Which bound refused an advertisement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    TooManyOrigins,
    TooManyLinks,
    TooManyPrefixes,
}

/// Counters of everything the database was offered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LsdbCounters {
    pub installed: u64,
    pub duplicate: u64,
    pub stale: u64,
    pub too_old: u64,
    pub refused_origins: u64,
    pub refused_links: u64,
    pub refused_prefixes: u64,
    pub expired: u64,
}

/// One origin's advertisement as held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LsaRecord {
    pub origin: NodeId,
    pub seq: u32,
    pub links: Vec<LsaLink>,
    pub prefixes: Vec<Prefix>,
    /// When the origin issued it, on our clock (receipt time minus age).
    pub issued_at: Instant,
}

impl LsaRecord {
    /// Age in whole seconds as of `now`, for re-flooding.
    pub fn age(&self, now: Instant) -> u16 {
        now.since(self.issued_at).as_secs().min(u16::MAX as u64) as u16
    }
}

/// Whether `a` is newer than `b` in serial-number arithmetic.
pub fn seq_newer(a: u32, b: u32) -> bool {
    a != b && a.wrapping_sub(b) < 1 << 31
}

/// The database.
#[derive(Debug, Clone)]
pub struct Lsdb {
    config: LsdbConfig,
    records: BTreeMap<NodeId, LsaRecord>,
    /// (issued at, origin) of every record: the oldest expires first.
    by_age: BTreeSet<(Instant, NodeId)>,
    /// Moves when the network the database describes changes (an origin
    /// appears or expires, or its links or prefixes change), not on a
    /// refresh that repeats what was known.
    version: u64,
    counters: LsdbCounters,
}

impl Lsdb {
    pub fn new(config: LsdbConfig) -> Self {
        Lsdb {
            config,
            records: BTreeMap::new(),
            by_age: BTreeSet::new(),
            version: 0,
            counters: LsdbCounters::default(),
        }
    }

    pub fn config(&self) -> &LsdbConfig {
        &self.config
    }

    pub fn counters(&self) -> LsdbCounters {
        self.counters
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn get(&self, origin: NodeId) -> Option<&LsaRecord> {
        self.records.get(&origin)
    }

    pub fn records(&self) -> impl Iterator<Item = &LsaRecord> {
        self.records.values()
    }

    /// Offers a received advertisement.
    pub fn install(&mut self, now: Instant, lsa: &Lsa<'_>) -> Install {
        let outcome = self.check(
            lsa.origin,
            lsa.seq,
            lsa.age,
            lsa.link_count(),
            lsa.prefix_count(),
        );
        if outcome == Install::New {
            let issued_at = Instant(now.0.saturating_sub(lsa.age as u64 * 1_000_000));
            self.put(LsaRecord {
                origin: lsa.origin,
                seq: lsa.seq,
                links: lsa.links().collect(),
                prefixes: lsa.prefixes().collect(),
                issued_at,
            });
        }
        outcome
    }

    /// Installs a record this node made itself (its own advertisement).
    pub fn install_own(&mut self, record: LsaRecord) -> Install {
        let outcome = self.check(
            record.origin,
            record.seq,
            0,
            record.links.len(),
            record.prefixes.len(),
        );
        if outcome == Install::New {
            self.put(record);
        }
        outcome
    }

    fn put(&mut self, record: LsaRecord) {
        let changed = match self.records.get(&record.origin) {
            Some(old) => old.links != record.links || old.prefixes != record.prefixes,
            None => true,
        };
        if changed {
            self.version += 1;
        }
        // Remove the old entry before adding the new: both may have been
        // issued at the same instant.
        if let Some(old) = self.records.get(&record.origin) {
            self.by_age.remove(&(old.issued_at, old.origin));
        }
        self.by_age.insert((record.issued_at, record.origin));
        self.records.insert(record.origin, record);
    }

    /// The topology version: equal versions describe the same network.
    pub fn version(&self) -> u64 {
        self.version
    }

    fn check(
        &mut self,
        origin: NodeId,
        seq: u32,
        age: u16,
        links: usize,
        prefixes: usize,
    ) -> Install {
        let c = &mut self.counters;
        if Duration::from_secs(age as u64) >= self.config.max_age {
            c.too_old += 1;
            Install::TooOld
        } else if links > self.config.max_links {
            c.refused_links += 1;
            Install::Refused(Refusal::TooManyLinks)
        } else if prefixes > self.config.max_prefixes {
            c.refused_prefixes += 1;
            Install::Refused(Refusal::TooManyPrefixes)
        } else {
            match self.records.get(&origin) {
                Some(held) if held.seq == seq => {
                    c.duplicate += 1;
                    Install::Duplicate
                }
                Some(held) if !seq_newer(seq, held.seq) => {
                    c.stale += 1;
                    Install::Stale
                }
                None if self.records.len() >= self.config.max_origins => {
                    c.refused_origins += 1;
                    Install::Refused(Refusal::TooManyOrigins)
                }
                _ => {
                    c.installed += 1;
                    Install::New
                }
            }
        }
    }

    /// The origins that advertise `prefix` (the access points serving a
    /// client: during a handoff, more than one), sorted.
    pub fn origins_serving(&self, prefix: &Prefix) -> Vec<NodeId> {
        self.records
            .values()
            .filter(|r| r.prefixes.contains(prefix))
            .map(|r| r.origin)
            .collect()
    }

    /// The origin serving the longest prefix that covers `dst` (an IPv4
    /// address in the first four bytes when `v4`); ties go to the lowest
    /// node id. `None` when no origin serves it.
    pub fn egress_for(&self, dst: &[u8; 16], v4: bool) -> Option<NodeId> {
        let covers = |p: &Prefix| -> Option<u8> {
            let (addr, len): (&[u8], u8) = match p {
                Prefix::V4 { addr, len } if v4 => (addr, *len),
                Prefix::V6 { addr, len } if !v4 => (addr, *len),
                _ => return None,
            };
            let full = (len / 8) as usize;
            let rest = len % 8;
            let head = addr[..full] == dst[..full];
            let tail = rest == 0 || {
                let mask = 0xffu8 << (8 - rest);
                addr[full] & mask == dst[full] & mask
            };
            (head && tail).then_some(len)
        };
        self.records
            .values()
            .flat_map(|r| {
                r.prefixes
                    .iter()
                    .filter_map(move |p| covers(p).map(|len| (len, r.origin)))
            })
            .max_by_key(|&(len, origin)| (len, core::cmp::Reverse(origin)))
            .map(|(_, origin)| origin)
    }

    /// Drops advertisements that reached the maximum age; returns how many.
    pub fn expire(&mut self, now: Instant) -> usize {
        let max_age = self.config.max_age;
        let mut gone = 0;
        while let Some(&(issued, origin)) = self.by_age.first() {
            if now.since(issued) < max_age {
                break;
            }
            self.by_age.pop_first();
            self.records.remove(&origin);
            self.version += 1;
            gone += 1;
        }
        self.counters.expired += gone as u64;
        gone
    }

    /// When the oldest advertisement will expire.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.by_age.first().map(|&(t, _)| t + self.config.max_age)
    }

    /// Builds the graph of everything known. Each link's direction takes
    /// the cost its tail measured (`metric_out` in the tail's
    /// advertisement) and falls back on the head's `metric_in` when the
    /// tail has not advertised. `overrides` replace a direction's cost (an
    /// operator's setting). Nodes are sorted by id, so the graph and every
    /// path computed on it are the same for the same database.
    pub fn graph(&self, overrides: &BTreeMap<(NodeId, NodeId), Metric>) -> LsGraph {
        let mut ids: Vec<NodeId> = self.records.keys().copied().collect();
        for r in self.records.values() {
            ids.extend(r.links.iter().map(|l| l.neighbor));
        }
        ids.sort_unstable();
        ids.dedup();
        // Per physical link (lower id, higher id, link id): the two costs,
        // each with whether it came from the tail itself.
        type Dir = Option<(Metric, bool)>;
        let mut links: BTreeMap<(NodeId, NodeId, u8), (Dir, Dir)> = BTreeMap::new();
        let set = |slot: &mut Dir, m: u32, own: bool| {
            let better = match slot {
                None => true,
                Some((_, held_own)) => own && !*held_own,
            };
            if better {
                *slot = Some((Metric::from_units(m), own));
            }
        };
        for r in self.records.values() {
            for l in &r.links {
                if l.neighbor == r.origin {
                    continue;
                }
                let (lo, hi) = (r.origin.min(l.neighbor), r.origin.max(l.neighbor));
                let entry = links.entry((lo, hi, l.link_id)).or_insert((None, None));
                let (fwd, back) = if r.origin == lo {
                    (&mut entry.0, &mut entry.1)
                } else {
                    (&mut entry.1, &mut entry.0)
                };
                set(fwd, l.metric_out, true);
                // The far end's own advertisement is authoritative for its
                // direction: if it has one that does not list this link,
                // the link is gone that way (a stale LSA of a dead node must
                // not keep links toward it alive).
                if !self.records.contains_key(&l.neighbor) {
                    set(back, l.metric_in, false);
                }
            }
        }
        let index = |id: NodeId| ids.binary_search(&id).expect("collected above") as NodeIx;
        let mut b = GraphBuilder::new(ids.len());
        for ((lo, hi, _), (up, down)) in links {
            let cost = |from: NodeId, to: NodeId, d: Dir| {
                overrides.get(&(from, to)).copied().or(d.map(|(m, _)| m))
            };
            b.add_link(index(lo), index(hi), cost(lo, hi, up), cost(hi, lo, down));
        }
        LsGraph {
            graph: b.build(),
            ids,
        }
    }
}

/// A graph built from the database, with its node ids.
#[derive(Debug, Clone)]
pub struct LsGraph {
    pub graph: Graph,
    /// Node id of each graph index, sorted.
    pub ids: Vec<NodeId>,
}

impl LsGraph {
    pub fn index_of(&self, id: NodeId) -> Option<NodeIx> {
        self.ids.binary_search(&id).ok().map(|i| i as NodeIx)
    }

    pub fn id_of(&self, v: NodeIx) -> NodeId {
        self.ids[v as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_wire::{ControlHeader, ControlMessage, MessageType};

    fn offer(
        db: &mut Lsdb,
        now: Instant,
        origin: u16,
        seq: u32,
        age: u16,
        links: &[LsaLink],
    ) -> Install {
        let header = ControlHeader {
            msg_type: MessageType::Lsa,
            sender: NodeId(99),
            key_id: 0,
            mac_len: 0,
            replay: 0,
        };
        let mut buf = vec![0u8; 4096];
        let n = Lsa::emit(&header, NodeId(origin), age, seq, links, &[], &mut buf).unwrap();
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        db.install(now, &Lsa::parse(&msg).unwrap())
    }

    fn sixty_seconds() -> LsdbConfig {
        LsdbConfig {
            max_age: Duration::from_secs(60),
            ..LsdbConfig::default()
        }
    }

    fn link(to: u16, out: u32, inn: u32) -> LsaLink {
        LsaLink {
            neighbor: NodeId(to),
            link_id: 0,
            metric_out: out,
            metric_in: inn,
        }
    }

    #[test]
    fn newer_installs_duplicates_and_stale_are_ignored_and_seq_wraps() {
        let mut db = Lsdb::new(LsdbConfig::default());
        let t = Instant::ZERO;
        assert_eq!(offer(&mut db, t, 1, 5, 0, &[]), Install::New);
        assert_eq!(offer(&mut db, t, 1, 5, 0, &[]), Install::Duplicate);
        assert_eq!(offer(&mut db, t, 1, 4, 0, &[]), Install::Stale);
        assert_eq!(offer(&mut db, t, 1, 6, 0, &[]), Install::New);
        assert_eq!(offer(&mut db, t, 2, u32::MAX, 0, &[]), Install::New);
        assert_eq!(
            offer(&mut db, t, 2, 0, 0, &[]),
            Install::New,
            "0 follows u32::MAX"
        );
        assert_eq!(offer(&mut db, t, 2, u32::MAX, 0, &[]), Install::Stale);
        let c = db.counters();
        assert_eq!((c.installed, c.duplicate, c.stale), (4, 1, 2));
    }

    #[test]
    fn advertisements_age_out_counting_the_age_they_arrived_with() {
        let mut db = Lsdb::new(sixty_seconds());
        let t = Instant::from_millis(100_000);
        assert_eq!(offer(&mut db, t, 1, 1, 50, &[]), Install::New);
        assert_eq!(offer(&mut db, t, 2, 1, 0, &[]), Install::New);
        assert_eq!(offer(&mut db, t, 3, 1, 60, &[]), Install::TooOld);
        assert_eq!(db.get(NodeId(1)).unwrap().age(t), 50);
        assert_eq!(db.next_expiry(), Some(t + Duration::from_secs(10)));
        assert_eq!(db.expire(t + Duration::from_secs(10)), 1);
        assert!(db.get(NodeId(1)).is_none() && db.get(NodeId(2)).is_some());
        // A newer LSA from 2 replaces its place in the expiry order.
        assert_eq!(
            offer(&mut db, t + Duration::from_secs(30), 2, 2, 0, &[]),
            Install::New
        );
        assert_eq!(db.next_expiry(), Some(t + Duration::from_secs(90)));
        assert_eq!(db.expire(t + Duration::from_secs(89)), 0);
        assert_eq!(db.expire(t + Duration::from_secs(90)), 1);
        assert!(db.is_empty() && db.next_expiry().is_none());
    }

    #[test]
    fn version_moves_with_the_network_not_with_refreshes() {
        let mut db = Lsdb::new(sixty_seconds());
        let t = Instant::ZERO;
        offer(&mut db, t, 1, 1, 0, &[link(2, 1000, 1000)]);
        let v = db.version();
        offer(&mut db, t, 1, 2, 0, &[link(2, 1000, 1000)]);
        assert_eq!(db.version(), v, "a refresh with the same links");
        offer(&mut db, t, 1, 3, 0, &[link(2, 1500, 1000)]);
        assert!(db.version() > v, "a metric changed");
        let v = db.version();
        db.expire(t + Duration::from_secs(61));
        assert!(db.version() > v, "an origin expired");
    }

    #[test]
    fn bounded() {
        let config = LsdbConfig {
            max_origins: 2,
            max_links: 1,
            ..LsdbConfig::default()
        };
        let mut db = Lsdb::new(config);
        let t = Instant::ZERO;
        assert_eq!(offer(&mut db, t, 1, 1, 0, &[]), Install::New);
        assert_eq!(offer(&mut db, t, 2, 1, 0, &[]), Install::New);
        assert_eq!(
            offer(&mut db, t, 3, 1, 0, &[]),
            Install::Refused(Refusal::TooManyOrigins)
        );
        assert_eq!(
            offer(&mut db, t, 1, 2, 0, &[]),
            Install::New,
            "known origins still update"
        );
        assert_eq!(
            offer(&mut db, t, 1, 3, 0, &[link(2, 1, 1), link(3, 1, 1)]),
            Install::Refused(Refusal::TooManyLinks)
        );
        assert_eq!(db.len(), 2);
    }

    #[test]
    fn graph_uses_each_tails_own_measurement_and_overrides() {
        let mut db = Lsdb::new(LsdbConfig::default());
        let t = Instant::ZERO;
        // 1 says 1->2 costs 1000, 2->1 costs 5000; 2 says 2->1 costs 2000.
        offer(
            &mut db,
            t,
            1,
            1,
            0,
            &[link(2, 1000, 5000), link(3, 1500, 1500)],
        );
        offer(&mut db, t, 2, 1, 0, &[link(1, 2000, 1000)]);
        let g = db.graph(&BTreeMap::new());
        assert_eq!(g.ids, vec![NodeId(1), NodeId(2), NodeId(3)]);
        let cost = |g: &LsGraph, a: u16, b: u16| {
            let (a, b) = (
                g.index_of(NodeId(a)).unwrap(),
                g.index_of(NodeId(b)).unwrap(),
            );
            g.graph.arc(g.graph.find_arc(a, b).unwrap()).cost.units()
        };
        assert_eq!(cost(&g, 1, 2), 1000);
        assert_eq!(cost(&g, 2, 1), 2000, "2's own view wins over 1's metric_in");
        assert_eq!(cost(&g, 3, 1), 1500, "3 never advertised: 1's metric_in");
        assert_eq!(g.graph.link_count(), 2);
        let mut overrides = BTreeMap::new();
        overrides.insert((NodeId(1), NodeId(2)), Metric::from_units(9000));
        assert_eq!(cost(&db.graph(&overrides), 1, 2), 9000);
        // 2 stops listing 1 (its link died): 1's stale metric_in does not
        // keep the direction 2 -> 1 alive.
        offer(&mut db, t, 2, 2, 0, &[]);
        let g = db.graph(&BTreeMap::new());
        assert!(g
            .graph
            .find_arc(
                g.index_of(NodeId(2)).unwrap(),
                g.index_of(NodeId(1)).unwrap()
            )
            .is_none());
        assert!(g
            .graph
            .find_arc(
                g.index_of(NodeId(1)).unwrap(),
                g.index_of(NodeId(2)).unwrap()
            )
            .is_some());
        // An infinite metric removes that direction.
        offer(&mut db, t, 2, 3, 0, &[link(1, u32::MAX, 1000)]);
        let g = db.graph(&BTreeMap::new());
        assert!(g
            .graph
            .find_arc(
                g.index_of(NodeId(2)).unwrap(),
                g.index_of(NodeId(1)).unwrap()
            )
            .is_none());
    }

    proptest::proptest! {
        /// Serial-number order: of two different numbers exactly one is
        /// newer, unless they are exactly half the space apart; stepping
        /// forward is always newer, across the wrap too.
        #[test]
        fn serial_order(a: u32, b: u32, step in 1u32..(1 << 31)) {
            if a != b && a.wrapping_sub(b) != 1 << 31 {
                proptest::prop_assert!(seq_newer(a, b) != seq_newer(b, a));
            }
            proptest::prop_assert!(!seq_newer(a, a));
            proptest::prop_assert!(seq_newer(a.wrapping_add(step), a));
        }
    }
}
