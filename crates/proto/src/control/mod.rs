//! A node's control plane, sans-IO: it sends probes on randomised timers,
//! estimates its links from the probes it hears, originates its own
//! link-state advertisement when its links change (and on a refresh
//! timer), and floods every newer advertisement it receives. Every probe
//! carries a digest of the sender's database; a neighbor whose digest
//! stays different from ours across two of its probes missed a flood (or
//! we did), and we flood again what changed since we last agreed (at most
//! once per `resync_interval`): a lost flood is repaired in seconds, not
//! at the next refresh.
//!
//! Restarts, the way OSPF and IS-IS learned to survive them (each rule in
//! docs/protocol.md with the RFC it follows):
//! * every control header carries the sender's boot index, drawn at
//!   random at each start: a neighbor heard for the first time, or with a
//!   new index, gets a probe at once (so the link comes up both ways in
//!   one round trip) and our whole database (so a restarted router knows
//!   the network within round trips, not a refresh period);
//! * an advertisement older than the one we hold is answered with ours
//!   (RFC 2328 §13 step 8), so a restarted origin that numbers from 1
//!   again hears its old number back and jumps past it at once;
//! * an origin that leaves floods its advertisement with the flush age,
//!   and every database drops it (premature aging, RFC 2328 §14.1).
//!
//! The driver (simulator or daemon) calls:
//! * [`ControlPlane::handle`] with every control datagram received,
//! * [`ControlPlane::handle_timeout`] when [`ControlPlane::poll_timeout`]
//!   says so,
//! * [`ControlPlane::poll_transmit`] until it returns `None`, sending each
//!   datagram to every neighbor (control messages are link-local
//!   broadcasts).
//!
//! Time and randomness come from the caller. Every queue is bounded: probes
//! pending are at most one per stream, floods pending at most one per
//! origin in the database.

mod advertised;
mod area;
mod config;
mod costs;
mod counters;
mod flood;
mod pending_floods;

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use braid_wire::{
    parse_any, ControlHeader, LsaLink, Message, NodeId, Prefix, Probe, ProbeKind, ProbeReport,
    WireError, RATE_SMALL, RATE_UNSPECIFIED,
};
use rand_core::RngCore;

use crate::auth::{AuthConfig, AuthError, Authenticator, Passed};
use crate::linkest::{LinkEstimate, LinkEstimator};
use crate::lsdb::{instance_order, seq_newer, Install, LsaRecord, LsaStore, Lsdb, FLUSH_AGE};
use crate::lsgraph::LsGraph;
use crate::metric::CostFactor;
use crate::origin::OriginRefusal;
use crate::random::uniform;
use crate::time::Instant;

pub use config::{ConfigError, ControlConfig, ProbeConfig};
pub use counters::{ControlCounters, DuplicateSign, Refused};

/// What we know of a neighbor beyond its links: its boot index (a change
/// means it restarted), what its last probe said its database digest was,
/// what ours was then, and when the two last agreed.
#[derive(Debug, Clone, Copy)]
struct NeighborState {
    neighbor: NodeId,
    boot_index: u32,
    theirs: u16,
    ours: u16,
    agreed_at: Option<Instant>,
    /// Its area, once its advertisement was heard.
    area: Option<u16>,
}

/// Where prefixes reachable outside the mesh come from
/// ([`ControlPlane::set_external_prefixes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum External {
    /// A gateway's uplink, checked by probes: its prefixes while healthy.
    Uplink = 0,
    /// Routes taken from the kernel's routing table (another routing
    /// daemon's, static ones).
    Redistributed = 1,
}

impl External {
    const COUNT: usize = 2;
}

/// How a probe's sender relates to what we knew of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heard {
    Known,
    New,
    Restarted,
}

#[derive(Debug, Clone, Copy)]
struct Stream {
    kind: ProbeKind,
    rate: u16,
    seq: u32,
    next_at: Instant,
}

/// The control plane of one node.
#[derive(Debug, Clone)]
pub struct ControlPlane {
    id: NodeId,
    config: ControlConfig,
    links: LinkEstimator,
    lsdb: Lsdb,
    streams: Vec<Stream>,
    /// Bit-rate the last message from `poll_transmit` must be sent at.
    last_tx_rate: Option<u16>,
    /// Drawn at random at start; in every control header we send.
    boot_index: u32,
    /// +1 per control message we send.
    counter: u32,
    own_seq: u32,
    flooded_own: bool,
    advertised: Vec<LsaLink>,
    /// When our last advertisement that was flooded was made (the ones
    /// kept local, before the node has a link, cost nobody anything).
    last_lsa_at: Option<Instant>,
    next_refresh: Instant,
    lsa_wanted: bool,
    /// The clients this node serves as an access point (advertised after
    /// `config.prefixes`; see [`Self::set_clients`]).
    clients: Vec<Prefix>,
    /// Prefixes the driver finds reachable outside the mesh now, by
    /// source (advertised after `config.prefixes`, before the clients;
    /// see [`Self::set_external_prefixes`]).
    external: [Vec<Prefix>; External::COUNT],
    /// Advertise without waiting for `lsa_min_interval`, at most once
    /// per interval: the network holds a newer advertisement of ours than
    /// we do (issue one past it), a new origin key signs, or prefixes
    /// were withdrawn (bad news is not throttled).
    at_once_wanted: bool,
    last_at_once_at: Option<Instant>,
    /// Leaving: our advertisement goes out once more with the flush age.
    leaving: bool,
    pending_probes: VecDeque<usize>,
    /// Origins whose advertisement is waiting to be flooded, by id.
    pending_floods: pending_floods::PendingFloods,
    last_flood_at: Option<Instant>,
    /// A neighbor came up: flood the whole database, at most once per
    /// `lsa_min_interval`. A neighbor that comes up within the interval
    /// after another gets the flood at the interval's end (`full_flood_due`):
    /// the first flood may have gone out before an advertisement it needs
    /// reached us (routers starting together), and the digest repair would
    /// take seconds.
    last_full_flood_at: Option<Instant>,
    full_flood_due: bool,
    /// Per neighbor the link estimator tracks.
    neighbors: Vec<NeighborState>,
    /// The operator's factor on each neighbor's link (only neighbors the
    /// link estimator tracks: bounded as it is; see
    /// [`Self::set_cost_factor`]).
    cost_factors: BTreeMap<NodeId, CostFactor>,
    last_resync_at: Option<Instant>,
    /// Origins whose advertisement we recently sent back to a neighbor
    /// that held an older one, and when: at most one answer per origin per
    /// `lsa_min_interval` (entries older than that are dropped, so the
    /// table is bounded by the origins answered within one interval).
    answered: BTreeMap<NodeId, Instant>,
    /// Flushes received and waiting to be flooded on (bounded: a flush is
    /// taken only for an origin we held).
    flushing: BTreeMap<NodeId, LsaRecord>,
    counters: ControlCounters,
    reports: Vec<ProbeReport>,
    auth: Authenticator,
    /// When we last had to number past a foreign copy of our
    /// advertisement (at most the last three).
    own_jumps: VecDeque<Instant>,
    /// Our area's entries as advertised: its id and, while we lead it,
    /// its summary (`area`).
    area_entries: Vec<Prefix>,
    /// The database version, and when, the entries were last computed for.
    area_checked_version: u64,
    area_checked_at: Option<Instant>,
    /// An area's summary was ever heard (else, in area 0, the network is
    /// flat and there is nothing to compute).
    summaries_heard: bool,
    /// A sign of a duplicate id not yet taken by the node.
    duplicate: Option<DuplicateSign>,
    /// The last sign of a duplicate id, and when.
    duplicate_seen: Option<(DuplicateSign, Instant)>,
}

impl ControlPlane {
    /// A control plane with a link-state store of its own.
    pub fn new(
        id: NodeId,
        config: ControlConfig,
        now: Instant,
        rng: &mut dyn RngCore,
    ) -> Result<Self, ConfigError> {
        Self::with_lsa_store(id, config, now, rng, LsaStore::new())
    }

    /// A control plane whose link-state records are interned in `store`
    /// (shared with other nodes in one process: a simulation).
    pub fn with_lsa_store(
        id: NodeId,
        config: ControlConfig,
        now: Instant,
        rng: &mut dyn RngCore,
        store: LsaStore,
    ) -> Result<Self, ConfigError> {
        config.validate(id)?;
        let mut streams = vec![Stream {
            kind: ProbeKind::Small,
            rate: RATE_SMALL,
            seq: 0,
            next_at: now,
        }];
        for &rate in &config.probes.big_rates {
            streams.push(Stream {
                kind: ProbeKind::Big,
                rate,
                seq: 0,
                next_at: now,
            });
        }
        // First probes go out at a random point of their first interval;
        // the first small probe within a tenth of it, so that a node that
        // starts (or restarts) is heard, and answered, at once.
        for s in &mut streams {
            let mean = stream_interval(&config.probes, s.kind);
            let spread = match s.kind {
                ProbeKind::Small => 0.1,
                ProbeKind::Big => 1.0,
            };
            s.next_at = now + mean.mul_f64(uniform(rng, 0.0, spread));
        }
        let boot_index = rng.next_u32();
        let auth = Authenticator::new(id, config.auth.clone(), boot_index)?;
        Ok(ControlPlane {
            id,
            links: LinkEstimator::new(id, config.links.clone()),
            lsdb: Lsdb::with_store(config.lsdb.clone(), store),
            streams,
            last_tx_rate: None,
            boot_index,
            counter: 0,
            own_seq: 0,
            flooded_own: false,
            advertised: Vec::new(),
            last_lsa_at: None,
            next_refresh: now,
            lsa_wanted: true,
            clients: Vec::new(),
            external: Default::default(),
            at_once_wanted: false,
            last_at_once_at: None,
            leaving: false,
            pending_probes: VecDeque::new(),
            pending_floods: pending_floods::PendingFloods::default(),
            last_flood_at: None,
            last_full_flood_at: None,
            full_flood_due: false,
            neighbors: Vec::new(),
            cost_factors: BTreeMap::new(),
            last_resync_at: None,
            answered: BTreeMap::new(),
            flushing: BTreeMap::new(),
            counters: ControlCounters::default(),
            reports: Vec::new(),
            auth,
            own_jumps: VecDeque::new(),
            area_entries: if config.area == 0 {
                Vec::new()
            } else {
                vec![Prefix::Area {
                    id: config.area,
                    transit: 0,
                }]
            },
            area_checked_version: u64::MAX,
            area_checked_at: None,
            summaries_heard: false,
            duplicate: None,
            duplicate_seen: None,
            config,
        })
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// This start's boot index (in every control header we send).
    pub fn boot_index(&self) -> u32 {
        self.boot_index
    }

    /// The configuration the control plane runs with.
    pub fn config(&self) -> &ControlConfig {
        &self.config
    }

    /// What the control plane has counted so far.
    pub fn counters(&self) -> &ControlCounters {
        &self.counters
    }

    /// The link-state database.
    pub fn lsdb(&self) -> &Lsdb {
        &self.lsdb
    }

    /// The link estimator.
    pub fn links(&self) -> &LinkEstimator {
        &self.links
    }

    /// This node's link estimates as of `now`.
    pub fn link_estimates(&self, now: Instant) -> Vec<LinkEstimate> {
        self.links.estimates(now, self.config.metric)
    }

    /// The network as this node knows it, ready for path computation.
    pub fn graph(&self) -> LsGraph {
        self.lsdb.graph_in(self.config.area)
    }

    /// Handles one control datagram; returns the neighbor that sent it
    /// (`None`: it was our own, heard back, or a challenge). Bad input
    /// (unparsable, unauthenticated, forged, replayed) is counted and
    /// returned as an error; it never changes a table.
    pub fn handle(&mut self, now: Instant, datagram: &[u8]) -> Result<Option<NodeId>, Refused> {
        let result = self.handle_inner(now, datagram);
        match &result {
            // A handshake, not an error: see `ControlCounters::unverified`.
            Err(Refused::Auth(crate::auth::Refusal::UnverifiedIndex)) => {
                self.counters.unverified += 1;
            }
            Err(e) => self.count_rx_error(e.kind()),
            Ok(_) => {}
        }
        self.counters.challenges_sent = self.auth.challenges_sent;
        self.counters.senders_verified = self.auth.senders_verified;
        self.counters.challenges_dropped = self.auth.outbox_full;
        self.counters.challenges_limited = self.auth.challenges_limited;
        self.counters.challenges_received = self.auth.challenges_received;
        result
    }

    fn handle_inner(&mut self, now: Instant, datagram: &[u8]) -> Result<Option<NodeId>, Refused> {
        let msg = parse_any(datagram)?;
        let (m, challenge) = match msg {
            // Data, and path reports and echoes (which travel inside data
            // packets end to end), are not for the link-local control plane.
            Message::Data(_)
            | Message::PathReport(..)
            | Message::Echo(..)
            | Message::SessionCheck(..)
            | Message::RepairRequest(..) => {
                let found = braid_wire::peek(datagram).map_or(0, |t| t as u8);
                return Err(WireError::WrongType {
                    expected: braid_wire::MessageType::Lsa as u8,
                    found,
                }
                .into());
            }
            Message::Probe(m, _) | Message::Lsa(m, _) => (m, None),
            Message::Challenge(m, c) => (m, Some(c)),
        };
        if m.header.sender == self.id {
            if m.header.boot_index == self.boot_index {
                self.counters.rx_own += 1;
                return Ok(None);
            }
            // Another boot with our id: a live second router, or a
            // replay of one of our past boots. With keys, only what passes
            // the neighbor checks is evidence: a replay is refused (and
            // challenged, which no past boot can answer); a live router
            // answers the challenge, and its reply and its later messages
            // are the evidence. Without keys, anything is.
            match self.auth.check(now, &m, challenge.as_ref())? {
                Passed::Challenge => return Ok(None),
                Passed::Message | Passed::Verified(_) => {}
            }
            self.counters.duplicate_id_signs += 1;
            self.duplicate = Some(DuplicateSign::NeighborWithOurId);
            self.duplicate_seen = Some((DuplicateSign::NeighborWithOurId, now));
            return Err(Refused::DuplicateId);
        }
        match self.auth.check(now, &m, challenge.as_ref())? {
            Passed::Message => {}
            Passed::Challenge => return Ok(None),
            Passed::Verified(sender) => {
                // Proven live: a probe at once, so that it hears us (and
                // challenges us, if it has not yet) within a round trip.
                if !self.pending_probes.contains(&0) {
                    self.pending_probes.push_back(0);
                }
                return Ok(Some(sender));
            }
        }
        match msg {
            Message::Data(_)
            | Message::PathReport(..)
            | Message::Echo(..)
            | Message::SessionCheck(..)
            | Message::RepairRequest(..)
            | Message::Challenge(..) => Ok(None),
            Message::Probe(m, probe) => {
                self.counters.rx_probes += 1;
                let sender = m.header.sender;
                let heard = self.heard(sender, m.header.boot_index);
                if heard == Heard::Restarted {
                    self.links.restarted(sender);
                }
                self.links.on_probe(now, sender, &probe);
                if heard != Heard::Known && self.links.knows(sender) {
                    self.neighbor_up(now, sender, m.header.boot_index, heard);
                }
                self.compare_digest(now, sender, probe.digest);
                Ok(Some(sender))
            }
            Message::Lsa(m, bundle) => {
                for lsa in bundle.iter() {
                    self.counters.rx_lsas += 1;
                    if let Err(r) = self.check_origin(&lsa) {
                        // This advertisement only: the rest of the
                        // message is its senders' own business.
                        self.count_rx_error(r.kind());
                        continue;
                    }
                    if lsa.origin == self.id {
                        self.own_heard(now, &lsa);
                        continue;
                    }
                    if !self.keeps_area_of(&lsa) {
                        continue;
                    }
                    match self.lsdb.install(now, &lsa) {
                        Install::New => self.want_flood(lsa.origin),
                        Install::Flushed => {
                            // Our copy is gone; the flush goes on (it
                            // carries the contents its checksum covers).
                            self.counters.flushes_received += 1;
                            let record = LsaRecord::from_parsed(&lsa);
                            self.flushing.insert(lsa.origin, record);
                            self.want_flood(lsa.origin);
                        }
                        Install::Stale => self.answer(now, lsa.origin),
                        _ => {}
                    }
                }
                Ok(Some(m.header.sender))
            }
        }
    }

    /// Whether `lsa` is its origin's (the roster's key signed it), when
    /// this router checks origins. Only an instance that would change the
    /// database is checked: flooding brings each from every neighbor, and
    /// the same instance or an older one is ignored or answered with ours
    /// whoever signed it.
    fn check_origin(&mut self, lsa: &braid_wire::Lsa<'_>) -> Result<(), OriginRefusal> {
        if !self.config.origins.checks() || !self.lsdb.would_change(lsa) {
            return Ok(());
        }
        self.counters.origin_checks += 1;
        self.config.origins.verify(lsa)
    }

    /// Counts a refused datagram by kind (a key is made once per kind).
    fn count_rx_error(&mut self, kind: &'static str) {
        match self.counters.rx_errors.get_mut(kind) {
            Some(n) => *n += 1,
            None => {
                self.counters.rx_errors.insert(kind.to_string(), 1);
            }
        }
    }

    /// Whether `sender` is new, restarted (another boot index) or known.
    fn heard(&self, sender: NodeId, boot_index: u32) -> Heard {
        match self.neighbors.iter().find(|n| n.neighbor == sender) {
            None => Heard::New,
            Some(n) if n.boot_index != boot_index => Heard::Restarted,
            Some(_) => Heard::Known,
        }
    }

    /// A neighbor came up (first heard, or restarted): a probe at once, so
    /// that it hears us and reports us back within one round trip, and our
    /// whole database, so that it knows the network (a restarted router
    /// would otherwise wait for each origin's refresh).
    fn neighbor_up(&mut self, now: Instant, neighbor: NodeId, boot_index: u32, heard: Heard) {
        match self.neighbors.iter_mut().find(|n| n.neighbor == neighbor) {
            Some(n) => {
                n.boot_index = boot_index;
                n.agreed_at = None;
                self.counters.neighbors_restarted += 1;
            }
            None => {
                self.neighbors.push(NeighborState {
                    neighbor,
                    boot_index,
                    theirs: 0,
                    ours: 0,
                    agreed_at: None,
                    area: None,
                });
                self.counters.neighbors_new += 1;
            }
        }
        debug_assert!(heard != Heard::Known);
        if !self.pending_probes.contains(&0) {
            // Stream 0 is the small probes.
            self.pending_probes.push_back(0);
        }
        self.full_flood_due = true;
        self.flood_database_when_allowed(now);
    }

    /// The whole database flooded if a neighbor came up since the last
    /// full flood and `lsa_min_interval` has passed since it.
    fn flood_database_when_allowed(&mut self, now: Instant) {
        let allowed = self
            .last_full_flood_at
            .is_none_or(|t| now.since(t) >= self.config.lsa_min_interval);
        if self.full_flood_due && allowed {
            self.full_flood_due = false;
            self.last_full_flood_at = Some(now);
            self.flood_database();
        }
    }

    /// A neighbor sent an advertisement older than ours (or a flush of
    /// one): send ours back (RFC 2328 §13 step 8), at most once per origin
    /// per `lsa_min_interval`.
    fn answer(&mut self, now: Instant, origin: NodeId) {
        let gap = self.config.lsa_min_interval;
        self.answered.retain(|_, t| now.since(*t) < gap);
        if self.answered.contains_key(&origin) || self.lsdb.get(origin).is_none() {
            return;
        }
        self.answered.insert(origin, now);
        self.counters.stale_answered += 1;
        self.want_flood(origin);
    }

    /// One of our own advertisements came back. Newer than ours (from
    /// before a restart), the same number with other contents, or a flush
    /// of ours: issue one numbered past it at once (the network knows us:
    /// what we issue next must replace that copy everywhere, links or
    /// not). Older: the sender holds a stale copy; send ours back.
    fn own_heard(&mut self, now: Instant, lsa: &braid_wire::Lsa<'_>) {
        use core::cmp::Ordering;
        if self.leaving {
            return;
        }
        let ours = self.lsdb.get(self.id).map(|r| (r.seq, r.checksum));
        let theirs = (lsa.seq, lsa.checksum);
        let flush = Duration::from_secs(lsa.age as u64) >= self.config.lsdb.max_age;
        match ours.map(|o| instance_order(theirs, o)) {
            Some(Ordering::Less) => self.answer(now, self.id),
            Some(Ordering::Equal) if !flush => {}
            _ => {
                // Only a number past every one we issued or jumped to is
                // news: a copy at or below it is one of our past lives'
                // (several neighbors send theirs back after a restart,
                // some before our renumbered one reaches them).
                let past_ours = seq_newer(lsa.seq, self.own_seq);
                self.flooded_own = true;
                self.lsa_wanted = true;
                self.at_once_wanted = true;
                if !past_ours {
                    return;
                }
                self.own_seq = lsa.seq;
                self.counters.own_seq_jumps += 1;
                // One jump follows a restart (the network remembers our
                // last life); more within a minute mean another router
                // issues advertisements with our id.
                let minute = Duration::from_secs(60);
                self.own_jumps.retain(|&t| now.since(t) < minute);
                if self.own_jumps.len() >= 2 {
                    self.counters.duplicate_id_signs += 1;
                    self.duplicate = Some(DuplicateSign::ForeignAdvertisements);
                    self.duplicate_seen = Some((DuplicateSign::ForeignAdvertisements, now));
                }
                if self.own_jumps.len() >= 3 {
                    self.own_jumps.pop_front();
                }
                self.own_jumps.push_back(now);
            }
        }
    }

    /// The node is leaving (an operator's shutdown): our advertisement goes
    /// out once more with the flush age, so every database drops it now
    /// instead of routing through us until it ages out. Drain
    /// [`Self::poll_transmit`] before stopping.
    pub fn leave(&mut self) {
        if self.flooded_own && self.lsdb.get(self.id).is_some() {
            self.leaving = true;
            self.want_flood(self.id);
            // Now, not after the flood gap: the caller is about to stop.
            self.last_flood_at = None;
        }
    }

    /// Runs the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant, rng: &mut dyn RngCore) {
        for i in 0..self.streams.len() {
            let s = self.streams[i];
            if s.next_at <= now {
                if !self.pending_probes.contains(&i) {
                    self.pending_probes.push_back(i);
                }
                let mean = stream_interval(&self.config.probes, s.kind);
                let j = self.config.probes.jitter;
                self.streams[i].next_at = now + mean.mul_f64(uniform(rng, 1.0 - j, 1.0 + j));
            }
        }
        self.links.expire(now);
        let links = &self.links;
        self.neighbors.retain(|n| links.knows(n.neighbor));
        self.cost_factors.retain(|&n, _| links.knows(n));
        self.lsdb.expire(now);
        if self.leaving {
            return;
        }
        self.flood_database_when_allowed(now);
        self.check_area_entries(now);
        let current = self.current_links(now);
        if self.links_changed(&current) {
            self.lsa_wanted = true;
        }
        let at_once = self.at_once_wanted && self.at_once_allowed(now);
        let min_gap_passed = self
            .last_lsa_at
            .is_none_or(|t| now.since(t) >= self.config.lsa_min_interval);
        if at_once || ((self.lsa_wanted || now >= self.next_refresh) && min_gap_passed) {
            if at_once {
                self.last_at_once_at = Some(now);
            }
            self.originate(now, current, rng);
        }
    }

    /// Whether an advertisement wanted at once may skip
    /// `lsa_min_interval` now (once per interval: a neighbor that keeps
    /// sending us "newer" copies of ours, or an uplink that flaps, cannot
    /// make us advertise at its rate).
    fn at_once_allowed(&self, now: Instant) -> bool {
        self.last_at_once_at
            .is_none_or(|t| now.since(t) >= self.config.lsa_min_interval)
    }

    /// The link to `neighbor` failed (the driver says so: a frame not
    /// acknowledged after every retry, or carrier lost). It is unusable
    /// until `until` or [`Self::link_restored`], and the change is
    /// advertised at once: bad news is not throttled by
    /// `lsa_min_interval` (a link can fail at most once per hold).
    pub fn link_failed(
        &mut self,
        now: Instant,
        neighbor: NodeId,
        until: Instant,
        rng: &mut dyn RngCore,
    ) {
        if !self.links.mark_failed(neighbor, until) {
            return;
        }
        self.counters.links_failed += 1;
        let current = self.current_links(now);
        if self.links_changed(&current) {
            self.originate(now, current, rng);
        }
    }

    /// The driver reports a failed link back (carrier regained).
    pub fn link_restored(&mut self, neighbor: NodeId) {
        self.links.clear_failed(neighbor);
    }

    /// When [`Self::handle_timeout`] should next run. Call
    /// [`Self::poll_transmit`] first: it may have messages ready now.
    pub fn poll_timeout(&self) -> Instant {
        let mut t = self.next_refresh;
        for s in &self.streams {
            t = t.min(s.next_at);
        }
        if self.lsa_wanted {
            let gap = self.config.lsa_min_interval;
            let mut at = self.last_lsa_at.map_or(Instant::ZERO, |last| last + gap);
            if self.at_once_wanted {
                at = at.min(
                    self.last_at_once_at
                        .map_or(Instant::ZERO, |last| last + gap),
                );
            }
            t = t.min(at);
        }
        if self.full_flood_due {
            let gap = self.config.lsa_min_interval;
            t = t.min(
                self.last_full_flood_at
                    .map_or(Instant::ZERO, |last| last + gap),
            );
        }
        for e in [
            self.links.next_expiry(),
            self.lsdb.next_expiry(),
            self.links.next_failure_end(),
            self.next_flood(),
        ]
        .into_iter()
        .flatten()
        {
            t = t.min(e);
        }
        t
    }

    /// Writes the next control message into `buf` (grown when a message
    /// needs more room, never shrunk); returns its length, or `None` when
    /// nothing is waiting. Send it to every neighbor.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<usize> {
        loop {
            self.last_tx_rate = None;
            let result = if let Some(result) = self.emit_challenge(buf) {
                result
            } else if let Some(i) = self.pending_probes.pop_front() {
                let rate = self.streams[i].rate;
                if self.streams[i].kind == ProbeKind::Big && rate != RATE_UNSPECIFIED {
                    self.last_tx_rate = Some(rate);
                }
                self.emit_probe(now, i, buf)
                    .inspect(|_| self.counters.tx_probes += 1)
            } else if self.next_flood().is_some_and(|t| t <= now) {
                self.last_flood_at = Some(now);
                match self.emit_floods(now, buf) {
                    Ok(0) => continue,
                    result => result,
                }
            } else {
                return None;
            };
            match result {
                Ok(n) => {
                    self.auth.sign(&mut buf[..n]);
                    return Some(n);
                }
                Err(_) => self.counters.tx_errors += 1,
            }
        }
    }

    /// The bit-rate (100 kbit/s units) the message last returned by
    /// [`Self::poll_transmit`] must be sent at: big probes measure one rate
    /// each. `None`: the radio's own choice (broadcasts at its base rate).
    pub fn last_tx_rate(&self) -> Option<u16> {
        self.last_tx_rate
    }

    fn next_header(&mut self, kind: braid_wire::MessageType) -> ControlHeader {
        self.counter = self.counter.wrapping_add(1);
        let (key_id, mac_len) = self.auth.header_fields();
        ControlHeader {
            boot_index: self.boot_index,
            counter: self.counter,
            key_id,
            mac_len,
            ..ControlHeader::new(kind, self.id)
        }
    }

    /// The next challenge message waiting, written into `buf`.
    fn emit_challenge(&mut self, buf: &mut Vec<u8>) -> Option<Result<usize, WireError>> {
        let c = self.auth.poll_challenge()?;
        let header = self.next_header(braid_wire::MessageType::Challenge);
        fit(buf, braid_wire::Challenge::encoded_len(MAX_MAC));
        Some(c.emit(&header, buf))
    }

    /// The authenticator (keys, verified senders).
    pub fn auth(&self) -> &Authenticator {
        &self.auth
    }

    /// New keys (a reload). Verified neighbors stay verified.
    pub fn set_auth(&mut self, config: AuthConfig) -> Result<(), AuthError> {
        self.auth.set_keys(config.clone())?;
        self.config.auth = config;
        Ok(())
    }

    /// A new origin key or roster (an operator's reload): checked as at
    /// start; a new key signs an advertisement issued at once (so that
    /// routers checking origins take it without waiting for a refresh).
    pub fn set_origins(
        &mut self,
        origins: crate::origin::OriginConfig,
    ) -> Result<(), crate::origin::OriginError> {
        origins.validate(self.id)?;
        if origins.key != self.config.origins.key {
            self.lsa_wanted = true;
            self.at_once_wanted = true;
        }
        self.config.origins = origins;
        Ok(())
    }

    /// Signs a control message this node made outside the control plane
    /// (a path report): its header must carry [`Self::mac_fields`].
    pub fn sign(&self, buf: &mut [u8]) {
        self.auth.sign(buf);
    }

    /// The key id and MAC length a header we send carries.
    pub fn mac_fields(&self) -> (u8, u8) {
        self.auth.header_fields()
    }

    /// The last sign that another router uses our id, and when.
    pub fn duplicate_id_seen(&self) -> Option<(DuplicateSign, Instant)> {
        self.duplicate_seen
    }

    /// A sign that another router uses our id, once per sign seen (the
    /// node turns it into an event).
    pub fn take_duplicate_sign(&mut self) -> Option<DuplicateSign> {
        self.duplicate.take()
    }

    fn emit_probe(
        &mut self,
        now: Instant,
        i: usize,
        buf: &mut Vec<u8>,
    ) -> Result<usize, WireError> {
        let s = self.streams[i];
        self.streams[i].seq = s.seq.wrapping_add(1);
        let header = self.next_header(s.kind.message_type());
        let mut reports = std::mem::take(&mut self.reports);
        self.links.reports(now, &mut reports);
        let interval = stream_interval(&self.config.probes, s.kind).as_millis() as u16;
        let pad_to = match s.kind {
            ProbeKind::Small => 0,
            ProbeKind::Big => self.config.probes.big_probe_bytes,
        };
        fit(buf, Probe::encoded_len(reports.len(), pad_to, MAX_MAC));
        let digest = self.digest();
        let result = Probe::emit(
            &header, s.seq, interval, s.rate, digest, &reports, pad_to, buf,
        );
        self.reports = reports;
        result
    }

    fn current_links(&self, now: Instant) -> Vec<LsaLink> {
        self.link_estimates(now)
            .into_iter()
            .filter(|e| !(e.metric_out.is_infinite() && e.metric_in.is_infinite()))
            .map(|e| {
                let raise = |m| self.raised(e.neighbor, m);
                LsaLink {
                    neighbor: e.neighbor,
                    link_id: 0,
                    metric_out: raise(e.metric_out).units(),
                    metric_in: raise(e.metric_in).units(),
                }
            })
            .collect()
    }

    fn links_changed(&self, current: &[LsaLink]) -> bool {
        if current.len() != self.advertised.len() {
            return true;
        }
        let threshold = self.config.change_threshold;
        let differs = |a: u32, b: u32| {
            let (a, b) = (a as f64, b as f64);
            (a - b).abs() > threshold * a.min(b)
        };
        current.iter().zip(&self.advertised).any(|(c, a)| {
            c.neighbor != a.neighbor
                || differs(c.metric_out, a.metric_out)
                || differs(c.metric_in, a.metric_in)
        })
    }

    fn originate(&mut self, now: Instant, links: Vec<LsaLink>, rng: &mut dyn RngCore) {
        self.own_seq = self.own_seq.wrapping_add(1);
        // The area's entries first (they decide who keeps the
        // advertisement), within the bound on entries.
        let prefixes: Vec<Prefix> = self
            .area_entries
            .iter()
            .chain(&self.config.prefixes)
            .chain(self.external.iter().flatten())
            .chain(&self.clients)
            .take(self.lsdb.config().max_prefixes)
            .copied()
            .collect();
        let mut record = LsaRecord::new(
            self.id,
            self.own_seq,
            links.as_slice().into(),
            prefixes.as_slice().into(),
        );
        record.signature = self
            .config
            .origins
            .sign(self.id, self.own_seq, &links, &prefixes)
            .map(Box::new);
        // Until the node has a link, nobody can hear its advertisement:
        // keep it in the local database (its own prefixes) but do not send
        // it. Once it has flooded one, it floods every later one, so a node
        // that loses its last link withdraws its links everywhere.
        let worth_sending = !links.is_empty() || self.flooded_own;
        if self.lsdb.install_own(now, record) == Install::New && worth_sending {
            self.want_flood(self.id);
            self.flooded_own = true;
            self.last_lsa_at = Some(now);
        }
        self.advertised = links;
        self.lsa_wanted = false;
        self.at_once_wanted = false;
        self.next_refresh = now + self.config.lsa_refresh.mul_f64(uniform(rng, 0.75, 1.0));
        self.counters.lsas_originated += 1;
    }
}

/// Room kept for a MAC trailer (its length is one byte).
const MAX_MAC: usize = 255;

/// Grows `buf` to at least `len` bytes.
fn fit(buf: &mut Vec<u8>, len: usize) {
    if buf.len() < len {
        buf.resize(len, 0);
    }
}

fn stream_interval(p: &ProbeConfig, kind: ProbeKind) -> Duration {
    match kind {
        ProbeKind::Small => p.small_interval,
        ProbeKind::Big => p.big_interval,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// Send times of the small-probe stream of a node over `secs` seconds.
    fn probe_times(seed: u64, secs: u64) -> Vec<u64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut cp =
            ControlPlane::new(NodeId(1), ControlConfig::default(), Instant::ZERO, &mut rng)
                .unwrap();
        let mut buf = Vec::new();
        let mut times = Vec::new();
        let end = Instant::from_millis(secs * 1000);
        loop {
            let t = cp.poll_timeout();
            if t > end {
                return times;
            }
            cp.handle_timeout(t, &mut rng);
            while let Some(n) = cp.poll_transmit(t, &mut buf) {
                if braid_wire::peek(&buf[..n]) == Ok(braid_wire::MessageType::ProbeSmall) {
                    times.push(t.as_micros());
                }
            }
        }
    }

    #[test]
    fn probe_timing_is_jittered_and_never_in_lockstep() {
        let a = probe_times(1, 120);
        let b = probe_times(2, 120);
        // About one per second, each gap within mean × [0.75, 1.25].
        assert!((95..=125).contains(&a.len()), "{} probes", a.len());
        let gaps: Vec<u64> = a.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            gaps.iter().all(|&g| (750_000..=1_250_000).contains(&g)),
            "{gaps:?}"
        );
        let distinct: std::collections::BTreeSet<_> = gaps.iter().collect();
        assert!(distinct.len() > gaps.len() / 2, "gaps vary");
        // Two nodes started together do not probe together.
        let together = a
            .iter()
            .filter(|t| b.iter().any(|u| t.abs_diff(*u) < 10_000))
            .count();
        assert!(
            together < a.len() / 5,
            "{together} of {} probes within 10 ms",
            a.len()
        );
    }

    #[test]
    fn invalid_configs_are_refused() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut bad = ControlConfig::default();
        bad.probes.small_interval = Duration::ZERO;
        assert!(matches!(
            bad.validate(NodeId(1)),
            Err(ConfigError::Interval { .. })
        ));
        let bad = ControlConfig {
            lsa_refresh: Duration::from_secs(50),
            ..ControlConfig::default()
        };
        assert!(matches!(
            bad.validate(NodeId(1)),
            Err(ConfigError::Refresh { .. })
        ));
        let mut bad = ControlConfig::default();
        bad.links.window = 65;
        assert!(ControlPlane::new(NodeId(1), bad, Instant::ZERO, &mut rng).is_err());
        assert!(matches!(
            ControlConfig::default().validate(NodeId::NONE),
            Err(ConfigError::ReservedId(_))
        ));
    }
}
