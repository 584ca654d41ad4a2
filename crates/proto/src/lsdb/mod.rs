//! The link-state database: one advertisement per origin, installed when
//! newer than what we hold, aged out when its origin stops refreshing it,
//! and turned into a [`Graph`] for path computation.
//!
//! Which of two advertisements of one origin is newer follows OSPF (RFC
//! 2328 §13.1): the higher sequence number in serial-number arithmetic
//! (RFC 1982, so numbers may wrap), then on equal numbers the higher
//! checksum, then a flush (age [`FLUSH_AGE`]) over the same instance
//! alive. An advertisement's age travels with it: a receiver expires it
//! `max_age` after its origin issued it, however many hops it crossed.
//! The route graph keeps a link only when both ends list it (RFC 2328
//! §16.1's two-way check). Every table is bounded: origins, links and
//! prefixes per origin.
//!
//! Storage is shaped for large networks, where every node holds every
//! origin's advertisement (n² records network-wide). A record's contents are
//! immutable and reference-counted; an [`LsaStore`] interns them, so
//! databases that hold the same advertisement and share a store (the
//! simulator's nodes) hold one copy. Per origin a database keeps only a
//! pointer and the second it was issued, modulo 2^16 (10 bytes), in pages
//! of 64 origins indexed by node id: ages are below `max_age`, at most
//! 65535 s (the wire's age field), so the full second is always the latest
//! one with those low bits. Expiry is tracked per issued second.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use braid_wire::{Lsa, LsaLink, NodeId, Prefix, DEFAULT_PREFERENCE, ORIGIN_SIGNATURE_LEN};

use crate::area::area_in;
use crate::metric::Metric;
use crate::time::Instant;

mod serving;
use serving::{client_quality, gateway_of, network, prefix_len_covering, rank_for};

/// The age that flushes an advertisement (RFC 2328's premature aging): an
/// origin that leaves floods its last advertisement with this age, and
/// every database drops its copy at once instead of at `max_age`. It is
/// the wire's largest age, so it is at or past every node's `max_age`.
pub const FLUSH_AGE: u16 = u16::MAX;

/// Database limits and timers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LsdbConfig {
    /// Most origins held; advertisements from more are refused and counted
    /// (`refused_origins`) and their origins are unreachable until one
    /// held expires. 16,384 by default, a quarter of the id space: a
    /// link-state domain floods every refresh of every origin to every
    /// node, so at 16,384 origins each node already receives about 650
    /// advertisements a second (some 65 KB/s of control traffic on every
    /// link) from refreshes alone, past what a radio mesh should carry;
    /// a larger network is split into domains. The simulator's 10,000-node
    /// mesh fits.
    pub max_origins: usize,
    /// Most links one advertisement may list (512: twice the link
    /// estimator's neighbors, for parallel links); longer ones are refused
    /// whole and counted (`refused_links`).
    pub max_links: usize,
    /// Most prefixes one advertisement may list (1,024: an area leader's
    /// summary takes up to half, in runs of ids; an access point serving
    /// more clients than the rest advertises a covering prefix); longer
    /// ones are refused whole and counted (`refused_prefixes`).
    pub max_prefixes: usize,
    /// An advertisement this old is dropped (its origin refreshes well
    /// before: see `ControlConfig::lsa_refresh`). 90 s: two refreshes in a
    /// row may be lost before an origin's links vanish from the network.
    /// At most 65535 s (ages travel as 16-bit seconds).
    pub max_age: Duration,
}

impl Default for LsdbConfig {
    fn default() -> Self {
        LsdbConfig {
            max_origins: 16384,
            max_links: 512,
            max_prefixes: 1024,
            max_age: Duration::from_secs(90),
        }
    }
}

/// What happened to an advertisement offered to the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Install {
    /// Newer than what we held (or first seen): installed; flood it on.
    New,
    /// The same instance as held (number and checksum): ignored.
    Duplicate,
    /// Older than what we hold (a lower number, or the same number with a
    /// lower checksum): ignored. The sender holds an old copy: answer it
    /// with ours (RFC 2328 §13 step 8).
    Stale,
    /// A flush (age [`FLUSH_AGE`]) of the instance we held or a newer one:
    /// our copy is gone; flood the flush on.
    Flushed,
    /// At or past the maximum age, and nothing held to flush: ignored.
    TooOld,
    /// Refused by a bound; the reason is counted.
    Refused(Refusal),
}

/// Which bound refused an advertisement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A new origin while `max_origins` origins are held.
    TooManyOrigins,
    /// More than `max_links` links.
    TooManyLinks,
    /// More than `max_prefixes` prefixes.
    TooManyPrefixes,
}

/// Counters of everything the database was offered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LsdbCounters {
    /// Advertisements installed: newer than the one held, or of a new origin.
    pub installed: u64,
    /// Advertisements of the very instance held (ignored).
    pub duplicate: u64,
    /// Advertisements older than the one held (ignored).
    pub stale: u64,
    /// Flushes that took out the instance held.
    pub flushed: u64,
    /// Advertisements at or past the maximum age, with nothing held to flush (ignored).
    pub too_old: u64,
    /// Advertisements of a new origin refused: `max_origins` were held.
    pub refused_origins: u64,
    /// Advertisements refused for listing more than `max_links` links.
    pub refused_links: u64,
    /// Advertisements refused for listing more than `max_prefixes` prefixes.
    pub refused_prefixes: u64,
    /// Advertisements dropped on reaching `max_age`.
    pub expired: u64,
}

/// One origin's advertisement: what it says, shared by every database
/// that holds it (when it was issued is each holder's own business).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LsaRecord {
    /// The node that issued the advertisement.
    pub origin: NodeId,
    /// The origin's sequence number.
    pub seq: u32,
    /// The checksum the advertisement carries ([`braid_wire::LsaEntry::checksum`]).
    pub checksum: u32,
    /// The origin's links, as advertised.
    pub links: Box<[LsaLink]>,
    /// The prefixes and clients the origin serves.
    pub prefixes: Box<[Prefix]>,
    /// The origin's signature over its contents (`crate::origin`), when
    /// the network signs origins.
    pub signature: Option<Box<[u8; ORIGIN_SIGNATURE_LEN]>>,
}

impl LsaRecord {
    /// A record of `origin`'s advertisement number `seq`, its checksum
    /// computed.
    pub fn new(origin: NodeId, seq: u32, links: Box<[LsaLink]>, prefixes: Box<[Prefix]>) -> Self {
        let checksum = braid_wire::LsaEntry::checksum_of(origin, seq, &links, &prefixes);
        LsaRecord {
            origin,
            seq,
            checksum,
            links,
            prefixes,
            signature: None,
        }
    }

    /// The record of a received advertisement (its signature kept).
    pub fn from_parsed(lsa: &Lsa<'_>) -> Self {
        LsaRecord {
            origin: lsa.origin,
            seq: lsa.seq,
            checksum: lsa.checksum,
            links: lsa.links().collect(),
            prefixes: lsa.prefixes().collect(),
            signature: lsa.signature.map(|s| Box::new(*s)),
        }
    }

    /// This record as an entry of a message, `age` seconds old.
    pub fn entry(&self, age: u16) -> braid_wire::LsaEntry<'_> {
        braid_wire::LsaEntry {
            origin: self.origin,
            age,
            seq: self.seq,
            checksum: self.checksum,
            links: &self.links,
            prefixes: &self.prefixes,
            signature: self.signature.as_deref(),
        }
    }

    /// Whether this record lists a link to `neighbor` with `link_id`.
    pub fn lists(&self, neighbor: NodeId, link_id: u8) -> bool {
        self.links
            .iter()
            .any(|l| l.neighbor == neighbor && l.link_id == link_id)
    }

    fn matches(&self, lsa: &Lsa<'_>) -> bool {
        self.origin == lsa.origin
            && self.seq == lsa.seq
            && self.checksum == lsa.checksum
            && self.links.len() == lsa.link_count()
            && self.prefixes.len() == lsa.prefix_count()
            && self.links.iter().copied().eq(lsa.links())
            && self.prefixes.iter().copied().eq(lsa.prefixes())
            && self.signature.as_deref() == lsa.signature
    }
}

/// Whether `a` is newer than `b` in serial-number arithmetic.
pub fn seq_newer(a: u32, b: u32) -> bool {
    a != b && a.wrapping_sub(b) < 1 << 31
}

/// How an instance (sequence number, checksum) of one origin's
/// advertisement compares with another (RFC 2328 §13.1, without ages).
pub fn instance_order(a: (u32, u32), b: (u32, u32)) -> core::cmp::Ordering {
    use core::cmp::Ordering;
    if seq_newer(a.0, b.0) {
        Ordering::Greater
    } else if seq_newer(b.0, a.0) {
        Ordering::Less
    } else {
        // Equal numbers, or exactly half the space apart (neither newer):
        // the numbers, then the checksums, decide, the same way
        // everywhere.
        a.cmp(&b)
    }
}

/// Interns advertisement records: an advertisement offered to several
/// databases sharing one store is held once. A cheap handle (clones share
/// the store); it keeps weak references only, so records live exactly as
/// long as some database holds them. Two different advertisements with the
/// same origin and sequence number (an origin restarted and reused a
/// number) are never confused: contents are compared before sharing.
#[derive(Debug, Clone, Default)]
pub struct LsaStore {
    inner: Arc<Mutex<StoreInner>>,
}

#[derive(Debug, Default)]
struct StoreInner {
    records: HashMap<(NodeId, u32), Weak<LsaRecord>>,
    /// Dead entries are swept when the table reaches this size.
    sweep_at: usize,
}

impl LsaStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the store can share (some database holds them).
    pub fn live(&self) -> usize {
        let inner = self.lock();
        inner
            .records
            .values()
            .filter(|w| w.strong_count() > 0)
            .count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, StoreInner> {
        // A panic elsewhere while holding the lock leaves the table
        // consistent (every update is a single insert), so go on.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn intern_parsed(&self, lsa: &Lsa<'_>) -> Arc<LsaRecord> {
        let mut inner = self.lock();
        let key = (lsa.origin, lsa.seq);
        if let Some(held) = inner.records.get(&key).and_then(Weak::upgrade) {
            if held.matches(lsa) {
                return held;
            }
        }
        let record = Arc::new(LsaRecord::from_parsed(lsa));
        inner.insert(key, &record);
        record
    }

    fn intern(&self, record: LsaRecord) -> Arc<LsaRecord> {
        let record = Arc::new(record);
        self.lock().insert((record.origin, record.seq), &record);
        record
    }
}

impl StoreInner {
    fn insert(&mut self, key: (NodeId, u32), record: &Arc<LsaRecord>) {
        if self.records.len() >= self.sweep_at {
            self.records.retain(|_, w| w.strong_count() > 0);
            self.sweep_at = (self.records.len() * 2).max(64);
        }
        self.records.insert(key, Arc::downgrade(record));
    }
}

/// Origins per page of the database's table.
const PAGE: usize = 64;

/// 64 consecutive origin ids: what each advertised, and the second
/// (on our clock) it was issued, modulo 2^16.
#[derive(Debug, Clone)]
struct Page {
    records: [Option<Arc<LsaRecord>>; PAGE],
    issued: [u16; PAGE],
}

impl Page {
    fn new() -> Box<Self> {
        Box::new(Page {
            records: std::array::from_fn(|_| None),
            issued: [0; PAGE],
        })
    }
}

fn slot_of(origin: NodeId) -> (usize, usize) {
    (origin.0 as usize / PAGE, origin.0 as usize % PAGE)
}

fn whole_seconds(t: Instant) -> u32 {
    (t.0 / 1_000_000).min(u32::MAX as u64) as u32
}

fn at_second(s: u32) -> Instant {
    Instant(s as u64 * 1_000_000)
}

/// The full second whose low 16 bits are `low`, latest at or before `now`
/// (exact for anything issued less than 65536 s ago).
fn full_second(low: u16, now: Instant) -> u32 {
    let now_s = whole_seconds(now);
    now_s.saturating_sub((now_s as u16).wrapping_sub(low) as u32)
}

/// The database.
#[derive(Debug, Clone)]
pub struct Lsdb {
    config: LsdbConfig,
    store: LsaStore,
    pages: Vec<Option<Box<Page>>>,
    held: usize,
    /// How many records were issued in each second: the oldest second
    /// tells when the next record expires.
    issued_per_second: BTreeMap<u32, u32>,
    /// Moves when the network the database describes changes (an origin
    /// appears or expires, or its links or prefixes change), not on a
    /// refresh that repeats what was known.
    version: u64,
    /// XOR of [`entry_hash`] over every record held: see [`Self::digest`].
    digest: u64,
    counters: LsdbCounters,
    /// Which origins serve which destinations (`serving.rs`), rebuilt
    /// when `version` moved.
    serving: serving::IndexCache,
}

/// A record's share of the database digest: its origin, sequence number
/// and checksum, mixed (splitmix64's finaliser) so that XORing the shares
/// of different databases rarely cancels out.
fn entry_hash(r: &LsaRecord) -> u64 {
    let key = ((r.origin.0 as u64) << 32 | r.seq as u64) ^ (r.checksum as u64).rotate_left(16);
    let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Lsdb {
    /// A database with a store of its own.
    pub fn new(config: LsdbConfig) -> Self {
        Self::with_store(config, LsaStore::new())
    }

    /// A database whose records are interned in `store`.
    pub fn with_store(config: LsdbConfig, store: LsaStore) -> Self {
        Lsdb {
            config,
            store,
            pages: Vec::new(),
            held: 0,
            issued_per_second: BTreeMap::new(),
            version: 0,
            digest: 0,
            counters: LsdbCounters::default(),
            serving: serving::IndexCache::default(),
        }
    }

    /// The limits and timers the database runs with.
    pub fn config(&self) -> &LsdbConfig {
        &self.config
    }

    /// What the database has been offered so far.
    pub fn counters(&self) -> LsdbCounters {
        self.counters
    }

    /// Origins whose advertisement is held.
    pub fn len(&self) -> usize {
        self.held
    }

    /// Whether no advertisement is held.
    pub fn is_empty(&self) -> bool {
        self.held == 0
    }

    /// The advertisement held for `origin`, if any.
    pub fn get(&self, origin: NodeId) -> Option<&LsaRecord> {
        let (page, i) = slot_of(origin);
        self.pages.get(page)?.as_ref()?.records[i].as_deref()
    }

    /// How old `origin`'s advertisement is as of `now`, in whole seconds
    /// (what re-flooding sends).
    pub fn age(&self, origin: NodeId, now: Instant) -> Option<u16> {
        let (page, i) = slot_of(origin);
        let page = self.pages.get(page)?.as_ref()?;
        page.records[i].as_ref()?;
        let issued = at_second(full_second(page.issued[i], now));
        Some(now.since(issued).as_secs().min(u16::MAX as u64) as u16)
    }

    /// Every record held, by origin id.
    pub fn records(&self) -> impl Iterator<Item = &LsaRecord> {
        self.pages
            .iter()
            .flatten()
            .flat_map(|p| p.records.iter().flatten().map(|r| &**r))
    }

    /// Offers a received advertisement.
    pub fn install(&mut self, now: Instant, lsa: &Lsa<'_>) -> Install {
        let outcome = self.check(
            lsa.origin,
            (lsa.seq, lsa.checksum),
            lsa.age,
            lsa.link_count(),
            lsa.prefix_count(),
        );
        match outcome {
            Install::New => {
                let issued_at = Instant(now.0.saturating_sub(lsa.age as u64 * 1_000_000));
                let record = self.store.intern_parsed(lsa);
                self.put(now, record, issued_at);
            }
            Install::Flushed => self.remove(now, lsa.origin),
            _ => {}
        }
        outcome
    }

    /// Whether installing `lsa` could change the database (a newer
    /// instance, or a flush of what is held): what is not worth checking
    /// an origin's signature for (the same instance, an older one, one
    /// past its age with nothing to flush) changes nothing here.
    pub fn would_change(&self, lsa: &Lsa<'_>) -> bool {
        use core::cmp::Ordering;
        let held = self.get(lsa.origin).map(|r| (r.seq, r.checksum));
        let order = held.map(|h| instance_order((lsa.seq, lsa.checksum), h));
        if Duration::from_secs(lsa.age as u64) >= self.config.max_age {
            matches!(order, Some(Ordering::Equal | Ordering::Greater))
        } else {
            !matches!(order, Some(Ordering::Equal | Ordering::Less))
        }
    }

    /// Installs a record this node made itself (its own advertisement),
    /// issued `now`.
    pub fn install_own(&mut self, now: Instant, record: LsaRecord) -> Install {
        let outcome = self.check(
            record.origin,
            (record.seq, record.checksum),
            0,
            record.links.len(),
            record.prefixes.len(),
        );
        if outcome == Install::New {
            let record = self.store.intern(record);
            self.put(now, record, now);
        }
        outcome
    }

    /// Drops `origin`'s advertisement (flushed, or this node's own when
    /// it leaves).
    pub fn remove(&mut self, now: Instant, origin: NodeId) {
        let (page, i) = slot_of(origin);
        let Some(page) = self.pages.get_mut(page).and_then(Option::as_mut) else {
            return;
        };
        if let Some(old) = page.records[i].take() {
            self.digest ^= entry_hash(&old);
            forget_second(
                &mut self.issued_per_second,
                full_second(page.issued[i], now),
            );
            self.held -= 1;
            self.version += 1;
        }
    }

    fn put(&mut self, now: Instant, record: Arc<LsaRecord>, issued_at: Instant) {
        let (page, i) = slot_of(record.origin);
        if self.pages.len() <= page {
            self.pages.resize_with(page + 1, || None);
        }
        let page = self.pages[page].get_or_insert_with(Page::new);
        let issued = whole_seconds(issued_at);
        let old_issued = full_second(page.issued[i], now);
        page.issued[i] = issued as u16;
        self.digest ^= entry_hash(&record);
        let changed = match page.records[i].replace(record) {
            Some(old) => {
                self.digest ^= entry_hash(&old);
                let new = page.records[i].as_ref().expect("just set");
                forget_second(&mut self.issued_per_second, old_issued);
                old.links != new.links || old.prefixes != new.prefixes
            }
            None => {
                self.held += 1;
                true
            }
        };
        *self.issued_per_second.entry(issued).or_default() += 1;
        if changed {
            self.version += 1;
        }
    }

    /// The topology version: equal versions describe the same network.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// A digest of which advertisements are held (origin, sequence number
    /// and checksum, not age): two databases holding the same ones have
    /// the same digest, whatever order they learnt them in. Kept up to
    /// date on every change, so reading it costs nothing.
    pub fn digest(&self) -> u64 {
        self.digest
    }

    fn check(
        &mut self,
        origin: NodeId,
        instance: (u32, u32),
        age: u16,
        links: usize,
        prefixes: usize,
    ) -> Install {
        use core::cmp::Ordering;
        let held = self.get(origin).map(|r| (r.seq, r.checksum));
        let order = held.map(|h| instance_order(instance, h));
        let c = &mut self.counters;
        if Duration::from_secs(age as u64) >= self.config.max_age {
            // Past the maximum age: a flush of what we hold (or of a newer
            // instance) takes our copy out; an older one is stale; with
            // nothing held there is nothing to flush.
            match order {
                Some(Ordering::Less) => {
                    c.stale += 1;
                    Install::Stale
                }
                Some(_) => {
                    c.flushed += 1;
                    Install::Flushed
                }
                None => {
                    c.too_old += 1;
                    Install::TooOld
                }
            }
        } else if links > self.config.max_links {
            c.refused_links += 1;
            Install::Refused(Refusal::TooManyLinks)
        } else if prefixes > self.config.max_prefixes {
            c.refused_prefixes += 1;
            Install::Refused(Refusal::TooManyPrefixes)
        } else {
            match order {
                Some(Ordering::Equal) => {
                    c.duplicate += 1;
                    Install::Duplicate
                }
                Some(Ordering::Less) => {
                    c.stale += 1;
                    Install::Stale
                }
                None if self.held >= self.config.max_origins => {
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

    /// The access points serving client `dst` (an IPv4 address in the
    /// first four bytes when `v4`): the origins, among `me` and those with
    /// a two-way link, whose advertisement lists it as a client, with the
    /// quality each gives, sorted by origin. During a handoff there are
    /// several; empty when `dst` is not an advertised client. Fills `out`
    /// (cleared first: the data path reuses it).
    pub fn clients_served(
        &self,
        dst: &[u8; 16],
        v4: bool,
        me: NodeId,
        out: &mut Vec<(NodeId, u8)>,
    ) {
        let index = self.serving_index(me);
        index.clients_served(dst, v4, me, self.unlinked(&index, me), out);
    }

    /// [`Self::clients_served`] by a scan of every record, as it was
    /// answered before the index (the reference `serving.rs`'s tests
    /// check it against). Not used by the data path.
    #[doc(hidden)]
    pub fn clients_served_by_scan(
        &self,
        dst: &[u8; 16],
        v4: bool,
        me: NodeId,
        out: &mut Vec<(NodeId, u8)>,
    ) {
        out.clear();
        for r in self.records() {
            if let Some(q) = client_quality(&r.prefixes, dst, v4) {
                if r.origin == me || self.has_two_way_link(r.origin) {
                    out.push((r.origin, q));
                }
            }
        }
    }

    /// Whether `origin` has a link that its neighbor confirms (lists back):
    /// a router that left, or whose neighbors all lost it, has none, and
    /// what it still advertises is not reachable through it.
    pub fn has_two_way_link(&self, origin: NodeId) -> bool {
        self.get(origin).is_some_and(|r| {
            r.links.iter().any(|l| {
                self.get(l.neighbor)
                    .is_some_and(|n| n.lists(origin, l.link_id))
            })
        })
    }

    /// The index of what serves what (`serving.rs`) for the routers of
    /// `me`'s area, as the database stands.
    fn serving_index(&self, me: NodeId) -> std::sync::Arc<serving::ServingIndex> {
        let area = self.get(me).map_or(0, |r| area_in(&r.prefixes));
        self.serving.get(self.version, area, || {
            self.records()
                .map(|r| (r.origin, &r.prefixes[..], self.has_two_way_link(r.origin)))
        })
    }

    /// `me`'s prefixes when it has no two-way link (as `index` found when
    /// it was built): the index leaves such origins out, but the asking
    /// router counts all the same.
    fn unlinked(&self, index: &serving::ServingIndex, me: NodeId) -> Option<&[Prefix]> {
        self.get(me)
            .filter(|_| index.is_unlinked(me))
            .map(|r| &r.prefixes[..])
    }

    /// The origins that serve `dst` (an IPv4 address in the first four
    /// bytes when `v4`) best, among `me` and the origins with a two-way
    /// link (a router that left still advertises its prefixes until its
    /// advertisement ages out): the longest prefix that covers it wins (a
    /// client entry is a host route, /32 or /128), then the highest client
    /// quality, then (for a prefix) the highest gateway preference
    /// ([`Prefix::Gateway`]). Fills `out` (cleared first) with the origins
    /// tied on all three, sorted; the caller breaks the tie (the node takes
    /// the nearest, or spreads flows: see `Node`'s egress choice). Returns
    /// the length of the prefix that matched; `out` is empty and `None`
    /// returned when nothing serves `dst`.
    pub fn best_origins(
        &self,
        dst: &[u8; 16],
        v4: bool,
        me: NodeId,
        out: &mut Vec<NodeId>,
    ) -> Option<u8> {
        let index = self.serving_index(me);
        index.best_origins(dst, v4, me, self.unlinked(&index, me), out)
    }

    /// [`Self::best_origins`] by a scan of every record, as it was
    /// answered before the index: the reference `serving.rs`'s tests
    /// check the index against and the `serving` bench measures it
    /// beside. Not used by the data path.
    #[doc(hidden)]
    pub fn best_origins_by_scan(
        &self,
        dst: &[u8; 16],
        v4: bool,
        me: NodeId,
        out: &mut Vec<NodeId>,
    ) -> Option<u8> {
        out.clear();
        let mut best: Option<(u8, u8, u8)> = None;
        let my_area = self.get(me).map_or(0, |r| area_in(&r.prefixes));
        fn offer(
            best: &mut Option<(u8, u8, u8)>,
            rank: (u8, u8, u8),
            origin: NodeId,
            out: &mut Vec<NodeId>,
        ) {
            if best.is_none_or(|b| rank > b) {
                *best = Some(rank);
                out.clear();
            }
            if *best == Some(rank) && !out.contains(&origin) {
                out.push(origin);
            }
        }
        for r in self.records() {
            if area_in(&r.prefixes) != my_area {
                // Another area's summary: what its members serve.
                for p in r.prefixes.iter() {
                    let Some((node, prefix)) = p.member() else {
                        continue;
                    };
                    if let Some(len) = prefix_len_covering(&prefix, dst, v4) {
                        offer(&mut best, (len, 0, DEFAULT_PREFERENCE), NodeId(node), out);
                    }
                }
                continue;
            }
            let Some(rank) = rank_for(&r.prefixes, dst, v4) else {
                continue;
            };
            if best.is_some_and(|b| rank < b) {
                continue;
            }
            if r.origin != me && !self.has_two_way_link(r.origin) {
                continue;
            }
            offer(&mut best, rank, r.origin, out);
        }
        out.sort_unstable();
        best.map(|b| b.0)
    }

    /// The length of the longest prefix of `origin`'s that covers `dst`,
    /// if `origin` is `me` or has a two-way link (it is reachable): whether
    /// a flow that started with it may stay with it (it still serves the
    /// destination as specifically as it did).
    pub fn serves(&self, origin: NodeId, dst: &[u8; 16], v4: bool, me: NodeId) -> Option<u8> {
        let my_area = self.get(me).map_or(0, |r| area_in(&r.prefixes));
        let Some(r) = self.get(origin).filter(|r| area_in(&r.prefixes) == my_area) else {
            // Of another area: as its leader's summary lists it.
            return self.serving_index(me).member_serves(origin, dst, v4);
        };
        let rank = rank_for(&r.prefixes, dst, v4)?;
        (origin == me || self.has_two_way_link(origin)).then_some(rank.0)
    }

    /// An origin's gateway preference and uplink capacity (kbit/s, 0: not
    /// said): its first [`Prefix::Gateway`] entry, or
    /// [`braid_wire::DEFAULT_PREFERENCE`] and 0 without one (or when the
    /// origin is not known).
    pub fn gateway(&self, origin: NodeId) -> (u8, u32) {
        self.get(origin)
            .map_or((DEFAULT_PREFERENCE, 0), |r| gateway_of(&r.prefixes))
    }

    /// Every prefix of one IP family served (IPv4 when `v4`, else IPv6),
    /// as [`Self::best_origins`] ranks them: (network address, in the
    /// first 4 bytes for IPv4; length; origins; how many serve it) for
    /// the prefixes and clients (as host routes) of `me` and of the
    /// origins with a two-way link; where several serve the same prefix,
    /// those with the best client quality and gateway preference, sorted
    /// (the caller breaks the tie as for `best_origins`), and the count of
    /// all that serve it whatever their rank. A longest-prefix match on
    /// this table answers as `best_origins` does (the kernel data path
    /// looks destinations up in it: `Node::prefix_table`).
    pub fn prefix_table(&self, me: NodeId, v4: bool) -> Vec<([u8; 16], u8, Vec<NodeId>, usize)> {
        type Entry = ((u8, u8), Vec<NodeId>, usize);
        let mut table: BTreeMap<([u8; 16], u8), Entry> = BTreeMap::new();
        let host = if v4 { 32 } else { 128 };
        for r in self.records() {
            if r.origin != me && !self.has_two_way_link(r.origin) {
                continue;
            }
            let preference = gateway_of(&r.prefixes).0;
            for p in r.prefixes.iter() {
                let (addr, len, rank): (&[u8], u8, (u8, u8)) = match p {
                    Prefix::V4 { addr, len } if v4 => (addr, *len, (0, preference)),
                    Prefix::V6 { addr, len } if !v4 => (addr, *len, (0, preference)),
                    Prefix::Client4 { addr, quality } if v4 => (addr, 32, (*quality, 0)),
                    Prefix::Client6 { addr, quality } if !v4 => (addr, 128, (*quality, 0)),
                    _ => continue,
                };
                let len = len.min(host);
                let Some(net) = network(addr, len, host) else {
                    continue;
                };
                let e = table.entry((net, len)).or_insert((rank, Vec::new(), 0));
                if e.1.contains(&r.origin) {
                    continue;
                }
                e.2 += 1;
                if rank > e.0 {
                    (e.0, e.1) = (rank, Vec::new());
                }
                if rank == e.0 {
                    e.1.push(r.origin);
                }
            }
        }
        table
            .into_iter()
            .map(|((a, l), (_, mut origins, all))| {
                origins.sort_unstable();
                (a, l, origins, all)
            })
            .collect()
    }

    /// Drops advertisements that reached the maximum age; returns how many.
    pub fn expire(&mut self, now: Instant) -> usize {
        let due = |s: u32| now.since(at_second(s)) >= self.config.max_age;
        if !self
            .issued_per_second
            .keys()
            .next()
            .is_some_and(|&s| due(s))
        {
            return 0;
        }
        // One pass drops what is due and recounts the rest per second.
        let mut gone = 0;
        let mut per_second = BTreeMap::new();
        for page in self.pages.iter_mut().flatten() {
            for i in 0..PAGE {
                if page.records[i].is_none() {
                    continue;
                }
                let s = full_second(page.issued[i], now);
                if due(s) {
                    if let Some(r) = page.records[i].take() {
                        self.digest ^= entry_hash(&r);
                    }
                    gone += 1;
                } else {
                    *per_second.entry(s).or_insert(0u32) += 1;
                }
            }
        }
        self.issued_per_second = per_second;
        self.held -= gone;
        self.version += gone as u64;
        self.counters.expired += gone as u64;
        gone
    }

    /// When the oldest advertisement will expire.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.issued_per_second
            .keys()
            .next()
            .map(|&s| at_second(s) + self.config.max_age)
    }

    /// What `tail`'s advertised `link` costs from `tail` to its
    /// neighbor, by [`direction_cost`] with what the neighbor's own
    /// advertisement says of it (a view of the database as advertised:
    /// the two-way check is [`Self::graph`]'s).
    pub fn advertised_cost(&self, tail: NodeId, link: &LsaLink) -> Metric {
        let head_in = self
            .get(link.neighbor)
            .and_then(|r| r.links.iter().find(|l| l.neighbor == tail))
            .map(|l| Metric::from_units(l.metric_in));
        direction_cost(Metric::from_units(link.metric_out), head_in)
    }
}

/// What one direction of a link costs: the worse of its two ends' word,
/// the tail's `metric_out` and the head's `metric_in` (the tail's alone
/// while the head does not list the link). An operator's cost factor at
/// either end raises both of that end's figures, so it holds both ways.
pub fn direction_cost(tail_out: Metric, head_in: Option<Metric>) -> Metric {
    head_in.map_or(tail_out, |h| tail_out.max(h))
}

fn forget_second(per_second: &mut BTreeMap<u32, u32>, s: u32) {
    if let Some(n) = per_second.get_mut(&s) {
        *n -= 1;
        if *n == 0 {
            per_second.remove(&s);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lsgraph::LsGraph;
    use braid_wire::{ControlHeader, ControlMessage, MessageType};

    fn offer(
        db: &mut Lsdb,
        now: Instant,
        origin: u16,
        seq: u32,
        age: u16,
        links: &[LsaLink],
    ) -> Install {
        let header = ControlHeader::new(MessageType::Lsa, NodeId(99));
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

    /// A link to `to` with its metrics out and in (also lsgraph.rs's tests).
    pub(crate) fn link(to: u16, out: u32, inn: u32) -> LsaLink {
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
    fn equal_numbers_with_other_contents_are_ordered_by_checksum() {
        // A restarted origin reused number 5 with other links: the two
        // instances are not duplicates; the higher checksum wins
        // everywhere (RFC 2328 §13.1), whichever arrives first.
        let t = Instant::ZERO;
        let (a, b) = ([link(2, 1000, 1000)], [link(3, 1000, 1000)]);
        let sum = |l: &[LsaLink]| LsaRecord::new(NodeId(1), 5, l.into(), Box::new([])).checksum;
        let (high, low) = if sum(&a) > sum(&b) {
            (&a, &b)
        } else {
            (&b, &a)
        };
        for order in [[low, high], [high, low]] {
            let mut db = Lsdb::new(LsdbConfig::default());
            assert_eq!(offer(&mut db, t, 1, 5, 0, order[0]), Install::New);
            let second = offer(&mut db, t, 1, 5, 0, order[1]);
            let expected = if order[1] == high {
                Install::New
            } else {
                Install::Stale
            };
            assert_eq!(second, expected);
            assert_eq!(&*db.get(NodeId(1)).unwrap().links, &high[..]);
            assert_eq!(offer(&mut db, t, 1, 5, 0, high), Install::Duplicate);
        }
    }

    #[test]
    fn a_flush_removes_the_instance_held_or_older_ones_only() {
        let t = Instant::from_millis(10_000);
        let mut db = Lsdb::new(LsdbConfig::default());
        assert_eq!(offer(&mut db, t, 1, 5, 0, &[]), Install::New);
        let digest = db.digest();
        assert_eq!(offer(&mut db, t, 1, 4, FLUSH_AGE, &[]), Install::Stale);
        assert!(
            db.get(NodeId(1)).is_some(),
            "an older flush changes nothing"
        );
        assert_eq!(db.digest(), digest);
        let v = db.version();
        assert_eq!(offer(&mut db, t, 1, 5, FLUSH_AGE, &[]), Install::Flushed);
        assert!(db.is_empty() && db.next_expiry().is_none());
        assert!(db.version() > v);
        assert_eq!(db.digest(), Lsdb::new(LsdbConfig::default()).digest());
        assert_eq!(offer(&mut db, t, 1, 6, FLUSH_AGE, &[]), Install::TooOld);
        assert_eq!(db.counters().flushed, 1);
    }

    #[test]
    fn advertisements_age_out_counting_the_age_they_arrived_with() {
        let mut db = Lsdb::new(sixty_seconds());
        let t = Instant::from_millis(100_000);
        assert_eq!(offer(&mut db, t, 1, 1, 50, &[]), Install::New);
        assert_eq!(offer(&mut db, t, 2, 1, 0, &[]), Install::New);
        assert_eq!(offer(&mut db, t, 3, 1, 60, &[]), Install::TooOld);
        assert_eq!(db.age(NodeId(1), t), Some(50));
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
    fn ages_stay_exact_across_the_16_bit_second_wrap() {
        let mut db = Lsdb::new(sixty_seconds());
        let t = Instant::from_millis(65_530_000);
        assert_eq!(offer(&mut db, t, 1, 1, 20, &[]), Install::New);
        let later = t + Duration::from_secs(10);
        assert_eq!(db.age(NodeId(1), later), Some(30), "issued at 65510 s");
        assert_eq!(db.next_expiry(), Some(Instant::from_millis(65_570_000)));
        assert_eq!(db.expire(Instant::from_millis(65_569_000)), 0);
        assert_eq!(db.expire(Instant::from_millis(65_570_000)), 1);
        assert!(db.is_empty() && db.next_expiry().is_none());
    }

    #[test]
    fn databases_sharing_a_store_hold_one_copy_and_never_confuse_contents() {
        let store = LsaStore::new();
        let mut a = Lsdb::with_store(LsdbConfig::default(), store.clone());
        let mut b = Lsdb::with_store(LsdbConfig::default(), store.clone());
        let t = Instant::from_millis(100_000);
        offer(&mut a, t, 1, 5, 0, &[link(2, 1000, 1000)]);
        offer(&mut b, t, 1, 5, 3, &[link(2, 1000, 1000)]);
        assert!(std::ptr::eq(
            a.get(NodeId(1)).unwrap(),
            b.get(NodeId(1)).unwrap()
        ));
        assert_eq!(store.live(), 1);
        assert_eq!(
            (a.age(NodeId(1), t), b.age(NodeId(1), t)),
            (Some(0), Some(3))
        );
        // Same origin and number, different links (an origin that restarted
        // and reused a number): a separate record.
        let mut c = Lsdb::with_store(LsdbConfig::default(), store.clone());
        offer(&mut c, t, 1, 5, 0, &[link(3, 1000, 1000)]);
        assert_eq!(c.get(NodeId(1)).unwrap().links[0].neighbor, NodeId(3));
        assert_eq!(a.get(NodeId(1)).unwrap().links[0].neighbor, NodeId(2));
        assert_eq!(store.live(), 1, "the latest of the two is the one shared");
        // Records live only while a database holds them.
        offer(&mut a, t, 1, 6, 0, &[]);
        offer(&mut b, t, 1, 6, 0, &[]);
        assert_eq!(store.live(), 2, "seq 6 (shared) and c's seq 5");
        drop(c);
        assert_eq!(store.live(), 1);
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
    fn origins_across_the_whole_id_space_are_held_linked_and_served() {
        // Ids handed out sparsely (by site, by region): the lowest, one in
        // the middle and the highest, in a chain 1 - 32768 - 65534.
        let mut db = Lsdb::new(LsdbConfig::default());
        let t = Instant::ZERO;
        let (lo, mid, hi) = (1u16, 32_768u16, 65_534u16);
        offer(&mut db, t, lo, 1, 0, &[link(mid, 1000, 1000)]);
        offer(
            &mut db,
            t,
            mid,
            1,
            0,
            &[link(lo, 1000, 1000), link(hi, 1000, 1000)],
        );
        let header = ControlHeader::new(MessageType::Lsa, NodeId(99));
        let mut buf = vec![0u8; 512];
        let served = Prefix::V4 {
            addr: [198, 18, 7, 0],
            len: 24,
        };
        let n = Lsa::emit(
            &header,
            NodeId(hi),
            0,
            1,
            &[link(mid, 1000, 1000)],
            &[served],
            &mut buf,
        )
        .unwrap();
        let msg = ControlMessage::parse(&buf[..n]).unwrap();
        assert_eq!(db.install(t, &Lsa::parse(&msg).unwrap()), Install::New);
        assert_eq!(db.len(), 3);
        assert!(db.get(NodeId(hi)).is_some() && db.has_two_way_link(NodeId(hi)));
        let g = db.graph();
        assert_eq!(g.ids, vec![NodeId(lo), NodeId(mid), NodeId(hi)]);
        for (a, b) in [(lo, mid), (mid, hi)] {
            let (a, b) = (
                g.index_of(NodeId(a)).unwrap(),
                g.index_of(NodeId(b)).unwrap(),
            );
            assert!(g.graph.find_arc(a, b).is_some() && g.graph.find_arc(b, a).is_some());
        }
        let mut dst = [0u8; 16];
        dst[..4].copy_from_slice(&[198, 18, 7, 9]);
        let mut out = Vec::new();
        assert_eq!(db.best_origins(&dst, true, NodeId(lo), &mut out), Some(24));
        assert_eq!(out, vec![NodeId(hi)]);
    }

    #[test]
    fn graph_keeps_two_way_links_each_direction_at_the_worse_of_its_ends_word() {
        let mut db = Lsdb::new(LsdbConfig::default());
        let t = Instant::ZERO;
        // 1 says 1->2 costs 1000, 2->1 costs 5000; 2 says 2->1 costs 2000.
        // 1 also lists 3, which never advertised.
        offer(
            &mut db,
            t,
            1,
            1,
            0,
            &[link(2, 1000, 5000), link(3, 1500, 1500)],
        );
        offer(&mut db, t, 2, 1, 0, &[link(1, 2000, 1000)]);
        let g = db.graph();
        assert_eq!(g.ids, vec![NodeId(1), NodeId(2), NodeId(3)]);
        let has_arc = |g: &LsGraph, a: u16, b: u16| {
            let (a, b) = (
                g.index_of(NodeId(a)).unwrap(),
                g.index_of(NodeId(b)).unwrap(),
            );
            g.graph.find_arc(a, b).is_some()
        };
        let cost = |g: &LsGraph, a: u16, b: u16| {
            let (a, b) = (
                g.index_of(NodeId(a)).unwrap(),
                g.index_of(NodeId(b)).unwrap(),
            );
            g.graph.arc(g.graph.find_arc(a, b).unwrap()).cost.units()
        };
        assert_eq!(cost(&g, 1, 2), 1000, "2's metric_in (1000) agrees with 1");
        assert_eq!(cost(&g, 2, 1), 5000, "1 sees 2->1 worse than 2 does");
        assert!(
            !has_arc(&g, 1, 3) && !has_arc(&g, 3, 1),
            "3 never confirmed the link 1 lists"
        );
        assert_eq!(g.graph.link_count(), 1);
        assert!(db.has_two_way_link(NodeId(1)) && !db.has_two_way_link(NodeId(3)));
        // 2 raises both directions (an operator's override there): the
        // raise holds both ways, though 1 says nothing of it.
        offer(&mut db, t, 2, 2, 0, &[link(1, 9000, 9000)]);
        let g = db.graph();
        assert_eq!((cost(&g, 1, 2), cost(&g, 2, 1)), (9000, 9000));
        // An infinite metric removes that direction only.
        offer(&mut db, t, 2, 3, 0, &[link(1, u32::MAX, 1000)]);
        let g = db.graph();
        assert!(!has_arc(&g, 2, 1));
        assert!(has_arc(&g, 1, 2));
        // 2 stops listing 1 (its link died, or 2 restarted and has not
        // heard 1 yet): 1's word alone keeps neither direction alive.
        offer(&mut db, t, 2, 4, 0, &[]);
        let g = db.graph();
        assert!(!has_arc(&g, 2, 1) && !has_arc(&g, 1, 2));
        assert!(!db.has_two_way_link(NodeId(1)));
    }

    #[test]
    fn egress_is_a_reachable_origin_or_this_node() {
        let mut db = Lsdb::new(LsdbConfig::default());
        let t = Instant::ZERO;
        let client = Prefix::V4 {
            addr: [198, 18, 0, 9],
            len: 32,
        };
        let mut buf = vec![0u8; 256];
        let mut put = |db: &mut Lsdb, origin: u16, seq: u32, links: &[LsaLink]| {
            let header = ControlHeader::new(MessageType::Lsa, NodeId(99));
            let n = Lsa::emit(&header, NodeId(origin), 0, seq, links, &[client], &mut buf).unwrap();
            let msg = ControlMessage::parse(&buf[..n]).unwrap();
            db.install(t, &Lsa::parse(&msg).unwrap())
        };
        // Access points 1 and 2 both serve the client; 3 links to 2 only.
        put(&mut db, 1, 1, &[link(3, 1000, 1000)]);
        put(&mut db, 2, 1, &[link(3, 1000, 1000)]);
        offer(&mut db, t, 3, 1, 0, &[link(2, 1000, 1000)]);
        let dst = {
            let mut d = [0u8; 16];
            d[..4].copy_from_slice(&[198, 18, 0, 9]);
            d
        };
        let best = |db: &Lsdb, me: u16| {
            let mut out = Vec::new();
            db.best_origins(&dst, true, NodeId(me), &mut out);
            out
        };
        assert_eq!(best(&db, 3), vec![NodeId(2)], "1 is cut off");
        assert!(best(&db, 1).contains(&NodeId(1)), "itself");
        offer(
            &mut db,
            t,
            3,
            2,
            0,
            &[link(1, 1000, 1000), link(2, 1000, 1000)],
        );
        assert_eq!(
            best(&db, 3),
            vec![NodeId(1), NodeId(2)],
            "tied: the node takes the nearer"
        );
        // The table for the kernel's longest-prefix match says the same.
        assert_eq!(
            db.prefix_table(NodeId(3), true),
            vec![(dst, 32, vec![NodeId(1), NodeId(2)], 2)]
        );
        offer(&mut db, t, 3, 3, 0, &[link(2, 1000, 1000)]);
        assert_eq!(
            db.prefix_table(NodeId(3), true),
            vec![(dst, 32, vec![NodeId(2)], 1)],
            "1 is cut off again"
        );
    }

    #[test]
    fn digest_tells_which_advertisements_are_held_whatever_the_order() {
        let t = Instant::ZERO;
        let (mut x, mut y) = (
            Lsdb::new(LsdbConfig::default()),
            Lsdb::new(LsdbConfig::default()),
        );
        assert_eq!(x.digest(), y.digest());
        offer(&mut x, t, 1, 5, 0, &[]);
        offer(&mut x, t, 2, 7, 0, &[]);
        offer(&mut y, t, 2, 7, 0, &[]);
        assert_ne!(x.digest(), y.digest(), "y lacks origin 1");
        offer(&mut y, t, 1, 4, 0, &[]);
        assert_ne!(x.digest(), y.digest(), "y holds an older one");
        offer(&mut y, t, 1, 5, 0, &[]);
        assert_eq!(x.digest(), y.digest(), "same records, other order");
        // A duplicate changes nothing; a newer one changes it.
        let before = x.digest();
        offer(&mut x, t, 1, 5, 0, &[]);
        assert_eq!(x.digest(), before);
        offer(&mut x, t, 1, 6, 0, &[]);
        assert_ne!(x.digest(), before);
        // Expiry takes a record's share out: x held 1 (issued at 0 s) and
        // 2; once both expire it is back to the empty database's digest.
        let max_age = x.config().max_age;
        assert_eq!(x.expire(t + max_age), 2);
        assert_eq!(x.digest(), Lsdb::new(LsdbConfig::default()).digest());
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

        /// `would_change` (whether an origin's signature is worth
        /// checking) is true of every offer that installs or flushes, in
        /// any order of numbers, contents and flushes.
        #[test]
        fn would_change_foresees_every_install_and_flush(
            offers in proptest::collection::vec((1u16..4, 0u32..6, proptest::bool::ANY, 0u16..3), 1..40)
        ) {
            let mut db = Lsdb::new(LsdbConfig::default());
            let t = Instant::ZERO;
            let header = ControlHeader::new(MessageType::Lsa, NodeId(99));
            for (origin, seq, flush, to) in offers {
                let age = if flush { FLUSH_AGE } else { 0 };
                let links = [link(10 + to, 1000, 1000)];
                let mut buf = vec![0u8; 4096];
                let n = Lsa::emit(&header, NodeId(origin), age, seq, &links, &[], &mut buf).unwrap();
                let msg = ControlMessage::parse(&buf[..n]).unwrap();
                let lsa = Lsa::parse(&msg).unwrap();
                let foreseen = db.would_change(&lsa);
                let outcome = db.install(t, &lsa);
                let changed = matches!(outcome, Install::New | Install::Flushed);
                proptest::prop_assert_eq!(foreseen, changed, "{:?}", outcome);
            }
        }
    }
}
