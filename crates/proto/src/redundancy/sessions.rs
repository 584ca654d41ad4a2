//! A node's ingress and egress: the sessions it runs, chosen by policy.
//!
//! A session is (ingress node, egress node, traffic class). At the ingress
//! every user packet is classified ([`crate::classify`]); the policy gives
//! the mode for (egress, class), which makes modes selectable per node
//! pair, per direction (each node's policy rules its own outgoing
//! direction) and per class ("duplicate only the traffic that matters,
//! aggregate the rest"). Both sides bound their session tables; what a
//! bound refuses is counted.
//!
//! Session tables never fill for good ([`SessionLimits`]): a session idle
//! for `idle` is dropped, and when a table is full the session idle
//! longest gives way to a new one if it has been idle for `evict_after`;
//! only when every session is busier than that is the new one refused.
//! An ingress session that opens again gets a new epoch and a new first
//! sequence number, so its egress starts a new window at once.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use braid_wire::{DataPacket, NodeId};

use super::dedup::DedupWindow;
use super::egress::{EgressConfig, EgressSession, ProofRefusal};
use super::ingress::{IngressConfig, IngressSession, Outgoing, PacketMeta, SendHints};
use super::mode::Mode;
use super::path::PathState;
use super::sliding_ask::Want;
use crate::classify::{inspect, Classified, Classifier, InspectError, PacketInfo};
use crate::time::Instant;

/// The class of braid's own end-to-end messages (path reports), carried in
/// data packets; the egress hands them to the node, never to a host.
pub const CLASS_CONTROL: u8 = 255;

/// The mode of braid's own end-to-end messages (path reports, echoes)
/// where no policy names their class: a copy on every path. They are
/// small and few (a report per session and interval), and a report's
/// arrival time is how the ingress measures each path's delay and queue
/// (`estimate.rs`, `pacing.rs`): one that waited for its group's repair
/// on a lossy way back would read as a queue on every path.
pub const CONTROL_MODE: Mode = Mode::Mirror(super::mode::MAX_PATHS as u8);

/// Modes by destination and class. The most specific entry wins:
/// (egress, class), then egress, then class, then the default.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The mode where no other entry applies (single by default).
    pub default: Mode,
    /// Modes by traffic class, toward any egress.
    pub classes: BTreeMap<u8, Mode>,
    /// Modes toward particular egresses.
    pub peers: BTreeMap<NodeId, PeerPolicy>,
}

/// Modes toward one egress.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PeerPolicy {
    /// The mode toward this egress for classes not listed here.
    pub default: Option<Mode>,
    /// Modes by traffic class toward this egress.
    pub classes: BTreeMap<u8, Mode>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            default: Mode::Single,
            classes: BTreeMap::new(),
            peers: BTreeMap::new(),
        }
    }
}

impl Policy {
    /// The mode for traffic to `egress` in `class`: the most specific entry's.
    /// braid's own messages ([`CLASS_CONTROL`]) take [`CONTROL_MODE`]
    /// unless an entry names their class.
    pub fn mode_for(&self, egress: NodeId, class: u8) -> Mode {
        let peer = self.peers.get(&egress);
        let named = peer
            .and_then(|p| p.classes.get(&class).copied())
            .or_else(|| self.classes.get(&class).copied());
        if class == CLASS_CONTROL {
            return named.unwrap_or(CONTROL_MODE);
        }
        peer.and_then(|p| p.classes.get(&class).copied())
            .or_else(|| peer.and_then(|p| p.default))
            .or_else(|| self.classes.get(&class).copied())
            .unwrap_or(self.default)
    }
}

/// Bounds of a session table (each side of a node has one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Most sessions (1,024: a router's peers times its classes; an
    /// egress session holds about 1 KiB of dedup window plus what its
    /// re-order buffer and open groups hold).
    pub max: usize,
    /// A session with no packet for this long is dropped (120 s). An
    /// egress must not forget a session whose copies may still be in
    /// flight (its window is what stops them being delivered twice), so
    /// this is far above any path's delay.
    pub idle: Duration,
    /// When the table is full, the session idle longest is dropped for a
    /// new one if it has been idle this long (10 s, again far above any
    /// path's delay); otherwise the new one is refused.
    pub evict_after: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max: 1024,
            idle: Duration::from_secs(120),
            evict_after: Duration::from_secs(10),
        }
    }
}

/// What a session table did to make room or keep tidy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionTableCounters {
    /// Sessions dropped after `idle` without a packet.
    pub expired: u64,
    /// Sessions dropped for a new one while the table was full.
    pub evicted: u64,
    /// New sessions refused: the table was full of busy sessions.
    pub refused: u64,
}

/// Makes room in a full table of sessions keyed by `K`: drops the one
/// idle longest if it has been idle for `evict_after`. Returns whether
/// there is room now.
fn make_room<K: Ord + Copy, S>(
    table: &mut BTreeMap<K, S>,
    limits: &SessionLimits,
    now: Instant,
    last_active: impl Fn(&S) -> Instant,
    counters: &mut SessionTableCounters,
) -> bool {
    if table.len() < limits.max {
        return true;
    }
    let oldest = table
        .iter()
        .min_by_key(|(_, s)| last_active(s))
        .map(|(k, s)| (*k, last_active(s)));
    match oldest {
        Some((k, at)) if now.since(at) >= limits.evict_after => {
            table.remove(&k);
            counters.evicted += 1;
            true
        }
        _ => {
            counters.refused += 1;
            false
        }
    }
}

/// When a session was last active, as expiry and eviction see it: a
/// session lent to another encoder is busy there.
fn active_unless_lent(s: &IngressSession) -> Instant {
    if s.is_lent() {
        Instant(u64::MAX)
    } else {
        s.last_active()
    }
}

/// Drops the sessions idle for `limits.idle` (and for which `quiet`
/// holds: nothing left to send); returns them.
fn expire_idle<K: Ord + Copy, S>(
    table: &mut BTreeMap<K, S>,
    limits: &SessionLimits,
    now: Instant,
    last_active: impl Fn(&S) -> Instant,
    quiet: impl Fn(&S) -> bool,
    counters: &mut SessionTableCounters,
) -> Vec<(K, S)> {
    let idle: Vec<K> = table
        .iter()
        .filter(|(_, s)| now.since(last_active(s)) >= limits.idle && quiet(s))
        .map(|(k, _)| *k)
        .collect();
    counters.expired += idle.len() as u64;
    idle.into_iter()
        .filter_map(|k| table.remove(&k).map(|s| (k, s)))
        .collect()
}

/// Why the ingress did not take a packet (each is counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The packet is not an IP packet the classifier can read.
    #[error("not an IP packet: {0}")]
    NotIp(#[from] InspectError),
    /// A new session was refused: the table holds this many sessions, all busy.
    #[error("session table full ({0} sessions)")]
    TooManySessions(usize),
}

/// Counters of the ingress as a whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IngressTotals {
    /// Packets refused because they could not be read as IP.
    pub not_ip: u64,
    /// What the session table did.
    pub sessions: SessionTableCounters,
}

/// The ingress side of a node.
#[derive(Debug)]
pub struct Ingress {
    me: NodeId,
    config: IngressConfig,
    policy: Policy,
    classifier: Classifier,
    sessions: BTreeMap<(NodeId, u8), IngressSession>,
    limits: SessionLimits,
    seed: u64,
    /// Sessions opened so far: mixed into each new session's epoch and
    /// first number, so that a session that opens again differs.
    opened: u64,
    /// Sessions whose mode in force changed, not yet taken by the node
    /// (at most one entry per session per call).
    mode_changes: Vec<(NodeId, u8, Mode)>,
    totals: IngressTotals,
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Ingress {
    /// `seed` picks each session's epoch and first sequence number (give a
    /// fresh random one per start: the epoch is how an egress tells a
    /// restarted ingress).
    pub fn new(
        me: NodeId,
        config: IngressConfig,
        policy: Policy,
        classifier: Classifier,
        limits: SessionLimits,
        seed: u64,
    ) -> Self {
        Ingress {
            me,
            config,
            policy,
            classifier,
            sessions: BTreeMap::new(),
            limits,
            seed,
            opened: 0,
            mode_changes: Vec::new(),
            totals: IngressTotals::default(),
        }
    }

    /// The sessions whose mode in force changed since the last call
    /// (egress, class, the mode now in force).
    pub fn take_mode_changes(&mut self) -> std::vec::Drain<'_, (NodeId, u8, Mode)> {
        self.mode_changes.drain(..)
    }

    /// Runs `f` on a session and notes whether its mode in force changed.
    fn on_session(
        changes: &mut Vec<(NodeId, u8, Mode)>,
        key: (NodeId, u8),
        s: &mut IngressSession,
        f: impl FnOnce(&mut IngressSession),
    ) {
        let before = s.active_mode();
        f(s);
        if s.active_mode() != before {
            changes.push((key.0, key.1, s.active_mode()));
        }
    }

    /// The ingress's counters.
    pub fn totals(&self) -> IngressTotals {
        self.totals
    }

    /// The session toward `egress` for `class`, if open.
    pub fn session(&self, egress: NodeId, class: u8) -> Option<&IngressSession> {
        self.sessions.get(&(egress, class))
    }

    /// Every open session, by (egress, class).
    pub fn sessions(&self) -> impl Iterator<Item = (&(NodeId, u8), &IngressSession)> {
        self.sessions.iter()
    }

    /// The open sessions toward `egress`, by class.
    pub fn sessions_to(&self, egress: NodeId) -> impl Iterator<Item = &IngressSession> {
        self.sessions
            .range((egress, 0)..=(egress, u8::MAX))
            .map(|(_, s)| s)
    }

    /// Classifies and encodes one user packet toward `egress`, whose
    /// paths are `paths` (what a session that opens for it starts with),
    /// with nothing known of the moment ([`SendHints::default`]).
    pub fn send(
        &mut self,
        now: Instant,
        egress: NodeId,
        packet: &[u8],
        paths: &[PathState],
        out: &mut Vec<Outgoing>,
    ) -> Result<Classified, SendError> {
        let info = inspect(packet).inspect_err(|_| self.totals.not_ip += 1)?;
        let hints = SendHints::default();
        self.send_inspected(now, egress, &info, packet, hints, paths, out)
    }

    /// The class, urgency and flow of a packet already inspected.
    pub fn classify(&self, info: &PacketInfo) -> Classified {
        self.classifier.classify(info)
    }

    /// As [`Self::send`] for a packet already inspected (`info`), with
    /// what the node knows of the moment (`hints`).
    #[allow(clippy::too_many_arguments)]
    pub fn send_inspected(
        &mut self,
        now: Instant,
        egress: NodeId,
        info: &PacketInfo,
        packet: &[u8],
        hints: SendHints,
        paths: &[PathState],
        out: &mut Vec<Outgoing>,
    ) -> Result<Classified, SendError> {
        let c = self.classifier.classify(info);
        self.send_classified(now, egress, c, packet, hints, paths, out)?;
        Ok(c)
    }

    /// Encodes a packet whose class is already known (the node's own
    /// messages, such as path reports, in [`CLASS_CONTROL`]).
    #[allow(clippy::too_many_arguments)]
    pub fn send_classified(
        &mut self,
        now: Instant,
        egress: NodeId,
        c: Classified,
        packet: &[u8],
        hints: SendHints,
        paths: &[PathState],
        out: &mut Vec<Outgoing>,
    ) -> Result<(), SendError> {
        let key = (egress, c.class);
        if !self.sessions.contains_key(&key) {
            let room = make_room(
                &mut self.sessions,
                &self.limits,
                now,
                active_unless_lent,
                &mut self.totals.sessions,
            );
            if !room {
                return Err(SendError::TooManySessions(self.limits.max));
            }
            let mode = self.policy.mode_for(egress, c.class);
            self.opened += 1;
            let mix = splitmix(
                self.seed ^ ((egress.0 as u64) << 8) ^ c.class as u64 ^ (self.opened << 32),
            );
            let (first, epoch) = (mix as u32, (mix >> 32) as u32);
            let mut s =
                IngressSession::new(self.me, egress, c.class, mode, self.config, first, epoch);
            if !paths.is_empty() {
                s.set_paths(now, paths, out);
            }
            self.sessions.insert(key, s);
        }
        let meta = PacketMeta {
            flow_hash: c.flow_hash,
            urgent: c.urgent,
            hints,
        };
        self.sessions
            .get_mut(&key)
            .expect("inserted")
            .encode(now, packet, meta, out);
        Ok(())
    }

    /// The paths toward `egress` changed: every open session toward it
    /// takes them (the node keeps them, and gives them to sessions that
    /// open later).
    pub fn set_paths(
        &mut self,
        now: Instant,
        egress: NodeId,
        paths: &[PathState],
        out: &mut Vec<Outgoing>,
    ) {
        for (&key, s) in self.sessions.range_mut((egress, 0)..=(egress, u8::MAX)) {
            Self::on_session(&mut self.mode_changes, key, s, |s| {
                s.set_paths(now, paths, out)
            });
        }
    }

    /// With late binding: the datagram with `header` (of the session its
    /// egress and class name) left for its first hop on path slot `path`
    /// at `now`. Nothing when no such session is open.
    pub fn on_transmit(
        &mut self,
        now: Instant,
        header: &braid_wire::DataHeader,
        path: usize,
        from_here: bool,
    ) {
        if let Some(s) = self.session_of(header) {
            s.on_transmit(now, header, path, from_here);
        }
    }

    /// With late binding: the datagram with `header`, held for delay
    /// equalisation, went above the binding point at `now`: its path's
    /// delay is measured from here, not from its encoding (the hold is
    /// not the path's).
    pub fn on_released(&mut self, now: Instant, header: &braid_wire::DataHeader) {
        if let Some(s) = self.session_of(header) {
            s.on_released(now, header);
        }
    }

    /// With late binding: the datagram with `header` was dropped before it
    /// left (above the binding point, or its path was gone).
    pub fn on_dropped(&mut self, header: &braid_wire::DataHeader) {
        if let Some(s) = self.session_of(header) {
            s.on_dropped(header);
        }
    }

    /// The open session `header` was encoded by (same epoch).
    fn session_of(&mut self, header: &braid_wire::DataHeader) -> Option<&mut IngressSession> {
        self.sessions
            .get_mut(&(header.egress, header.class))
            .filter(|s| s.epoch() == header.epoch)
    }

    /// An egress's path report for the session (`egress`, `class`).
    /// Returns false when there is no such session.
    pub fn on_path_report(
        &mut self,
        now: Instant,
        egress: NodeId,
        class: u8,
        counts: &[braid_wire::PathCount],
        out: &mut Vec<Outgoing>,
    ) -> bool {
        match self.sessions.get_mut(&(egress, class)) {
            Some(s) => {
                Self::on_session(&mut self.mode_changes, (egress, class), s, |s| {
                    s.on_path_report(now, counts, out)
                });
                true
            }
            None => false,
        }
    }

    /// Replaces the classifier (an operator's reload): later packets are
    /// classified by the new rules; open sessions keep their state.
    pub fn set_classifier(&mut self, classifier: Classifier) {
        self.classifier = classifier;
    }

    /// A new policy; sessions whose mode changes close their open group
    /// first, so nothing is lost or sent twice.
    pub fn set_policy(&mut self, now: Instant, policy: Policy, out: &mut Vec<Outgoing>) {
        for (&(egress, class), s) in &mut self.sessions {
            let mode = policy.mode_for(egress, class);
            if mode != s.mode() {
                Self::on_session(&mut self.mode_changes, (egress, class), s, |s| {
                    s.set_mode(now, mode, out)
                });
            }
        }
        self.policy = policy;
    }

    /// When the earliest open group must be flushed ([`Self::handle_timeout`]).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.sessions
            .values()
            .filter_map(IngressSession::poll_timeout)
            .min()
    }

    /// Flushes every open group whose time has come.
    pub fn handle_timeout(&mut self, now: Instant, out: &mut Vec<Outgoing>) {
        for s in self.sessions.values_mut() {
            s.handle_timeout(now, out);
        }
    }

    /// Drops sessions idle for `limits.idle` (with no group waiting for its
    /// flush timer), and the paths of egresses no session uses any more.
    pub fn expire(&mut self, now: Instant) {
        expire_idle(
            &mut self.sessions,
            &self.limits,
            now,
            active_unless_lent,
            |s| s.poll_timeout().is_none(),
            &mut self.totals.sessions,
        );
    }

    /// Lends session (`egress`, `class`) to another encoder (the kernel
    /// data path; see [`IngressSession::lend`]): (epoch, first number
    /// lent). A lent session neither expires nor gives way to another:
    /// the borrower's owner takes it back.
    pub fn lend(&mut self, egress: NodeId, class: u8, gap: u32) -> Option<(u32, u32)> {
        self.sessions.get_mut(&(egress, class))?.lend(gap)
    }

    /// A repair request from `egress` for `class`: see
    /// [`IngressSession::answer_repair`]. `None` without such a session,
    /// else how many repair packets went.
    pub fn answer_repair(
        &mut self,
        now: Instant,
        (egress, class): (NodeId, u8),
        range: (u32, u32),
        count: u8,
        out: &mut Vec<Outgoing>,
    ) -> Option<usize> {
        let s = self.sessions.get_mut(&(egress, class))?;
        Some(s.answer_repair(now, range, count, out))
    }

    /// The proof a session check from `egress` for `class` gets: see
    /// [`IngressSession::proof`]. `None` without such a session.
    pub fn proof(&mut self, now: Instant, egress: NodeId, class: u8) -> Option<(u32, u32)> {
        self.sessions.get_mut(&(egress, class))?.proof(now)
    }

    /// Takes session (`egress`, `class`) back; the borrower stopped at
    /// `next_seq`, having sent `sent[slot]` packets on each path slot.
    pub fn take_back(&mut self, egress: NodeId, class: u8, next_seq: u32, sent: &[u64]) {
        if let Some(s) = self.sessions.get_mut(&(egress, class)) {
            s.take_back(next_seq, sent);
        }
    }

    /// What the borrower of session (`egress`, `class`) has sent so far:
    /// see [`IngressSession::on_sent_elsewhere`].
    pub fn on_sent_elsewhere(
        &mut self,
        (egress, class): (NodeId, u8),
        next_seq: u32,
        sent: &[u64],
    ) {
        if let Some(s) = self.sessions.get_mut(&(egress, class)) {
            s.on_sent_elsewhere(next_seq, sent);
        }
    }

    /// Whether some session sends toward `egress`.
    pub fn serves(&self, egress: NodeId) -> bool {
        self.sessions
            .range((egress, 0)..=(egress, u8::MAX))
            .next()
            .is_some()
    }
}

/// The egress side of a node.
#[derive(Debug)]
pub struct Egress {
    config: EgressConfig,
    sessions: BTreeMap<(NodeId, u8), EgressSession>,
    limits: SessionLimits,
    counters: SessionTableCounters,
    /// Session checks' nonces: this start's random half, then a count.
    nonce_base: u32,
    nonces: u32,
    /// What another decoder (the kernel data path) holds of sessions:
    /// (ingress, class) to its epoch and highest number.
    external: BTreeMap<(NodeId, u8), (u32, Option<u32>)>,
    /// Proven sessions that other decoder holds: its window to rewrite.
    proven: VecDeque<ProvenWindow>,
    /// Sessions that held a packet not proven yet (a subset of
    /// `sessions`, cleared as [`Self::poll_checks`] finds them proven or
    /// gone): what it looks at, not every session, after each packet.
    unproven: BTreeSet<(NodeId, u8)>,
    /// Sessions (not of the control class) in which a path brought its
    /// first packet since [`Self::take_news`]: their reports go at once
    /// (a subset of `sessions`).
    news: BTreeSet<(NodeId, u8)>,
    /// Sessions whose sliding-window decoder misses packets (a subset of
    /// `sessions`, cleared as [`Self::poll_repairs`] finds them whole or
    /// gone): what it looks at after each packet.
    missing: BTreeSet<(NodeId, u8)>,
}

/// A session whose ingress proved a new epoch or a jump, that another
/// decoder (the kernel data path) holds too: that decoder's window is
/// to be made this one (the same epoch, the epoch replaced, the same
/// numbers seen), so that neither delivers what the other did.
#[derive(Debug, Clone)]
pub struct ProvenWindow {
    /// The session: (ingress, class).
    pub session: (NodeId, u8),
    /// Its epoch now.
    pub epoch: u32,
    /// The epoch it replaced, if any.
    pub retired: Option<u32>,
    /// The numbers taken, as this decoder's window holds them.
    pub window: DedupWindow,
}

/// Proven windows waiting for the driver, at most.
pub const MAX_PROVEN: usize = 64;

/// Repair requests one session makes at one time, at most (each names up
/// to 64 packets).
pub const MAX_REQUESTS_PER_POLL: usize = 4;

impl Egress {
    /// An egress with no sessions yet; `nonce_base` (drawn at random
    /// each start) makes its session checks' nonces unlike any earlier
    /// start's.
    pub fn new(config: EgressConfig, limits: SessionLimits, nonce_base: u32) -> Self {
        Egress {
            config,
            sessions: BTreeMap::new(),
            limits,
            counters: SessionTableCounters::default(),
            nonce_base,
            nonces: 0,
            external: BTreeMap::new(),
            proven: VecDeque::new(),
            unproven: BTreeSet::new(),
            news: BTreeSet::new(),
            missing: BTreeSet::new(),
        }
    }

    /// What another decoder (the kernel data path) holds of sessions,
    /// each (ingress, class) with its epoch and highest number; replaces
    /// what was given before; at most the session table's size.
    pub fn set_external_windows(
        &mut self,
        windows: impl IntoIterator<Item = ((NodeId, u8), (u32, Option<u32>))>,
    ) {
        self.external = windows.into_iter().take(self.limits.max).collect();
    }

    /// The next window another decoder must take over (see
    /// [`ProvenWindow`]).
    pub fn poll_proven(&mut self) -> Option<ProvenWindow> {
        self.proven.pop_front()
    }

    /// The session checks to send now, each (ingress, class, nonce): one
    /// per session that holds packets its ingress has not proven, at
    /// most every [`super::egress::CHECK_INTERVAL`]. Each counts as
    /// sent; one lost is sent again after the interval.
    pub fn poll_checks(&mut self, now: Instant) -> Vec<(NodeId, u8, [u8; 8])> {
        let mut out = Vec::new();
        if self.unproven.is_empty() {
            return out;
        }
        let sessions = &mut self.sessions;
        self.unproven
            .retain(|key| sessions.get(key).is_some_and(EgressSession::holds_unproven));
        for &(ingress, class) in &self.unproven {
            let Some(s) = self.sessions.get_mut(&(ingress, class)) else {
                continue;
            };
            if !s.wants_check(now) {
                continue;
            }
            self.nonces = self.nonces.wrapping_add(1);
            let mut nonce = [0u8; 8];
            nonce[..4].copy_from_slice(&self.nonce_base.to_be_bytes());
            nonce[4..].copy_from_slice(&self.nonces.to_be_bytes());
            s.asked(now, nonce);
            out.push((ingress, class, nonce));
        }
        out
    }

    /// The repair requests to send now, each (ingress, class, request):
    /// at most [`MAX_REQUESTS_PER_POLL`] per session.
    pub fn poll_repairs(&mut self, now: Instant) -> Vec<(NodeId, u8, Want)> {
        let mut out = Vec::new();
        if self.missing.is_empty() {
            return out;
        }
        let sessions = &mut self.sessions;
        self.missing
            .retain(|key| sessions.get(key).is_some_and(EgressSession::misses));
        for &(ingress, class) in &self.missing {
            let Some(s) = self.sessions.get_mut(&(ingress, class)) else {
                continue;
            };
            for _ in 0..MAX_REQUESTS_PER_POLL {
                match s.poll_repair(now) {
                    Some(w) => out.push((ingress, class, w)),
                    None => break,
                }
            }
        }
        out
    }

    /// The proof of the session from `ingress` for `class` (its MAC
    /// checked by the caller): see [`EgressSession::on_proof`].
    pub fn on_proof(
        &mut self,
        now: Instant,
        (ingress, class): (NodeId, u8),
        proven: (u32, u32),
        nonce: [u8; 8],
        deliver: &mut dyn FnMut(&[u8]),
    ) -> Result<(), ProofRefusal> {
        let s = self
            .sessions
            .get_mut(&(ingress, class))
            .ok_or(ProofRefusal::NotAsked)?;
        s.on_proof(now, proven, nonce, deliver)?;
        if self.external.contains_key(&(ingress, class)) {
            if self.proven.len() >= MAX_PROVEN {
                self.proven.pop_front();
            }
            self.proven.push_back(ProvenWindow {
                session: (ingress, class),
                epoch: proven.0,
                retired: s.retired_epoch(),
                window: s.window().clone(),
            });
            self.external
                .insert((ingress, class), (proven.0, s.window().highest()));
        }
        Ok(())
    }

    /// What the session table did (`refused`: packets of a new session
    /// refused because the table was full of busy sessions).
    pub fn table_counters(&self) -> SessionTableCounters {
        self.counters
    }

    /// Whether some session comes from `ingress`.
    pub fn serves(&self, ingress: NodeId) -> bool {
        self.sessions
            .range((ingress, 0)..=(ingress, u8::MAX))
            .next()
            .is_some()
    }

    /// The session from `ingress` for `class`, if open.
    pub fn session(&self, ingress: NodeId, class: u8) -> Option<&EgressSession> {
        self.sessions.get(&(ingress, class))
    }

    /// Every open session, by (ingress, class).
    pub fn sessions(&self) -> impl Iterator<Item = (&(NodeId, u8), &EgressSession)> {
        self.sessions.iter()
    }

    /// Takes a data packet addressed to this node; `deliver` gets every
    /// payload now due. Returns false if refused (table full).
    pub fn receive(
        &mut self,
        now: Instant,
        pkt: &DataPacket<'_>,
        deliver: &mut dyn FnMut(&[u8]),
    ) -> bool {
        let key = (pkt.header.ingress, pkt.header.class);
        if !self.sessions.contains_key(&key) {
            let room = make_room(
                &mut self.sessions,
                &self.limits,
                now,
                EgressSession::last_active,
                &mut self.counters,
            );
            if !room {
                return false;
            }
            let mut session = EgressSession::new(self.config, now);
            if key.1 == CLASS_CONTROL {
                session = session.delivering_unproven();
            }
            if let Some(&(epoch, highest)) = self.external.get(&key) {
                session = session.following(epoch, highest);
            }
            self.sessions.insert(key, session);
        }
        let s = self.sessions.get_mut(&key).expect("inserted");
        s.receive(now, pkt, deliver);
        if s.holds_unproven() {
            self.unproven.insert(key);
        }
        if s.misses() {
            self.missing.insert(key);
        }
        if s.take_new_path() && key.1 != CLASS_CONTROL {
            self.news.insert(key);
        }
        true
    }

    /// Whether some session heard a path for the first time since
    /// [`Self::take_news`] (one test per packet).
    pub fn has_news(&self) -> bool {
        !self.news.is_empty()
    }

    /// The sessions in which a path brought its first packet since the
    /// last call: a report of each is due now.
    pub fn take_news(&mut self) -> BTreeSet<(NodeId, u8)> {
        std::mem::take(&mut self.news)
    }

    /// When some re-order buffer next needs [`Self::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.sessions
            .values()
            .filter_map(EgressSession::poll_timeout)
            .min()
    }

    /// Releases what re-order buffers hold past their timeout as of `now`.
    pub fn handle_timeout(&mut self, now: Instant, deliver: &mut dyn FnMut(&[u8])) {
        for s in self.sessions.values_mut() {
            s.handle_timeout(now, deliver);
        }
    }

    /// Drops sessions idle for `limits.idle`, delivering whatever their
    /// re-order buffers still hold.
    pub fn expire(&mut self, now: Instant, deliver: &mut dyn FnMut(&[u8])) {
        let gone = expire_idle(
            &mut self.sessions,
            &self.limits,
            now,
            EgressSession::last_active,
            |_| true,
            &mut self.counters,
        );
        for (_, mut s) in gone {
            s.flush(deliver);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::tests::ipv4;
    use braid_wire::DataHeader;

    #[test]
    fn voip_is_mirrored_bulk_is_striped_and_each_direction_has_its_own_policy() {
        let a = NodeId(1);
        let b = NodeId(2);
        // A -> B: VoIP mirror:3, the rest stripe. B -> A: single for all.
        let mut pa = Policy {
            default: Mode::Stripe { pin_flows: false },
            ..Policy::default()
        };
        pa.classes.insert(1, Mode::Mirror(3));
        let pb = Policy::default();
        let mut ing_a = Ingress::new(
            a,
            IngressConfig::default(),
            pa,
            Classifier::example(),
            limits(16),
            1,
        );
        let mut ing_b = Ingress::new(
            b,
            IngressConfig::default(),
            pb,
            Classifier::example(),
            limits(16),
            2,
        );
        let paths: Vec<PathState> = (0..3)
            .map(|_| PathState {
                up: true,
                weight: 1,
                loss: 0.0,
            })
            .collect();
        let mut out = Vec::new();
        let t = Instant::ZERO;

        let voip = ipv4([198, 18, 0, 2], 46, 17, 5000, 20000);
        let bulk = ipv4([198, 18, 0, 2], 0, 6, 5000, 443);
        ing_a.send(t, b, &voip, &paths, &mut out).unwrap();
        assert_eq!(out.len(), 3, "VoIP mirrored on three paths");
        assert!(out
            .iter()
            .all(|o| o.header.flags.contains(braid_wire::DataFlags::URGENT)));
        out.clear();
        for _ in 0..3 {
            ing_a.send(t, b, &bulk, &paths, &mut out).unwrap();
        }
        let mut used: Vec<u8> = out.iter().map(|o| o.path).collect();
        used.sort_unstable();
        assert_eq!(used, vec![0, 1, 2], "bulk striped, one copy each");
        out.clear();
        ing_b.send(t, a, &voip, &paths, &mut out).unwrap();
        assert_eq!(out.len(), 1, "the other direction: single");

        // The egress delivers one copy of the mirrored packet.
        let mut eg = Egress::new(EgressConfig::default(), limits(16), 7);
        out.clear();
        ing_a.send(t, b, &voip, &paths, &mut out).unwrap();
        let mut got = 0;
        for o in &out {
            let mut buf = vec![0u8; 64];
            let n = o.header.emit(&[], &mut buf).unwrap();
            buf.truncate(n);
            buf.extend_from_slice(&voip);
            eg.receive(t, &DataHeader::parse(&buf).unwrap(), &mut |_| got += 1);
        }
        assert_eq!(got, 1);
        assert_eq!(eg.session(a, 1).unwrap().counters().duplicates, 2);
    }

    fn limits(max: usize) -> SessionLimits {
        SessionLimits {
            max,
            ..SessionLimits::default()
        }
    }

    /// An ingress of node 1 with the default policy and classifier, at
    /// most `max` sessions.
    fn plain_ingress(max: usize, seed: u64) -> Ingress {
        Ingress::new(
            NodeId(1),
            IngressConfig::default(),
            Policy::default(),
            Classifier::default(),
            limits(max),
            seed,
        )
    }

    fn secs(s: u64) -> Instant {
        Instant::from_millis(s * 1000)
    }

    #[test]
    fn tables_are_bounded_and_garbage_is_counted() {
        let mut ing = plain_ingress(2, 0);
        let mut out = Vec::new();
        let p = ipv4([198, 18, 0, 2], 0, 17, 1, 2);
        for egress in 2..6u16 {
            let _ = ing.send(Instant::ZERO, NodeId(egress), &p, &[], &mut out);
        }
        assert_eq!(ing.totals().sessions.refused, 2);
        assert!(matches!(
            ing.send(Instant::ZERO, NodeId(2), b"junk", &[], &mut out),
            Err(SendError::NotIp(_))
        ));
        assert_eq!(ing.totals().not_ip, 1);
    }

    /// A data packet of session (`ingress`, class 0) with `epoch`.
    fn from(ingress: u16, epoch: u32, seq: u32) -> Vec<u8> {
        let h = DataHeader {
            flags: braid_wire::DataFlags::empty(),
            mode: braid_wire::RedundancyMode::Single,
            path: 0,
            route_ptr: 0,
            ingress: NodeId(ingress),
            egress: NodeId(1),
            seq,
            group: braid_wire::Group::NONE,
            hop_limit: 8,
            class: 0,
            epoch,
        };
        let mut b = vec![0u8; braid_wire::DATA_HEADER_LEN];
        h.emit(&[], &mut b).unwrap();
        b
    }

    /// [`from`] on path `path` of class `class`.
    fn on_path(seq: u32, path: u8, class: u8) -> Vec<u8> {
        let mut b = from(2, 5, seq);
        let mut h = DataHeader::parse(&b).unwrap().header;
        h.path = path;
        h.class = class;
        h.emit(&[], &mut b).unwrap();
        b
    }

    #[test]
    fn a_paths_first_packet_is_news_once_and_never_in_the_control_class() {
        let mut eg = Egress::new(EgressConfig::default(), limits(16), 7);
        let take = |eg: &mut Egress, bytes: Vec<u8>| {
            eg.receive(
                Instant::ZERO,
                &DataHeader::parse(&bytes).unwrap(),
                &mut |_| {},
            );
            eg.take_news()
        };
        let session = BTreeSet::from([(NodeId(2), 0)]);
        assert_eq!(take(&mut eg, on_path(0, 0, 0)), session, "path 0's first");
        assert!(!eg.has_news());
        assert!(take(&mut eg, on_path(1, 0, 0)).is_empty(), "path 0 again");
        // A copy of a packet already delivered still dates its path.
        assert_eq!(take(&mut eg, on_path(1, 3, 0)), session, "path 3's first");
        assert!(take(&mut eg, on_path(2, 3, 0)).is_empty());
        assert!(
            take(&mut eg, on_path(0, 1, CLASS_CONTROL)).is_empty(),
            "the control class is not reported"
        );
    }

    #[test]
    fn bogus_sessions_never_lock_real_ones_out_for_good() {
        // 1,024 bogus (ingress, class) pairs fill the egress's table.
        let mut eg = Egress::new(EgressConfig::default(), SessionLimits::default(), 7);
        for i in 0..1024u16 {
            assert!(eg.receive(
                secs(0),
                &DataHeader::parse(&from(1000 + i, 1, 1)).unwrap(),
                &mut |_| {}
            ));
        }
        let real = from(7, 42, 1);
        let real = DataHeader::parse(&real).unwrap();
        // While every session is recent, a new one is refused, counted.
        assert!(!eg.receive(secs(5), &real, &mut |_| {}));
        assert_eq!(eg.table_counters().refused, 1);
        // Once the bogus ones have been idle for `evict_after`, the real
        // session takes the place of the one idle longest...
        let mut got = 0;
        assert!(eg.receive(secs(11), &real, &mut |_| got += 1));
        assert_eq!((got, eg.table_counters().evicted), (1, 1));
        // ... and after `idle` they are all gone, the busy one kept.
        let later = from(7, 42, 2);
        let later = DataHeader::parse(&later).unwrap();
        assert!(eg.receive(secs(100), &later, &mut |_| {}));
        eg.expire(secs(125), &mut |_| {});
        assert_eq!(eg.sessions().count(), 1);
        assert_eq!(eg.table_counters().expired, 1023);
        assert!(eg.serves(NodeId(7)) && !eg.serves(NodeId(1000)));
    }

    #[test]
    fn an_ingress_session_that_opens_again_has_a_new_epoch() {
        let mut ing = plain_ingress(4, 9);
        let mut out = Vec::new();
        let p = ipv4([198, 18, 0, 2], 0, 17, 1, 2);
        ing.send(secs(0), NodeId(2), &p, &[], &mut out).unwrap();
        let first = ing.session(NodeId(2), 0).unwrap().epoch();
        ing.expire(secs(60));
        assert!(ing.serves(NodeId(2)), "idle for less than `idle`");
        ing.expire(secs(121));
        assert!(!ing.serves(NodeId(2)));
        assert_eq!(ing.totals().sessions.expired, 1);
        ing.send(secs(130), NodeId(2), &p, &[], &mut out).unwrap();
        assert_ne!(ing.session(NodeId(2), 0).unwrap().epoch(), first);
    }

    #[test]
    fn a_lent_session_keeps_its_numbers_apart_and_never_expires() {
        let mut ing = plain_ingress(4, 9);
        let mut out = Vec::new();
        let p = ipv4([198, 18, 0, 2], 0, 17, 1, 2);
        let paths = [PathState {
            up: true,
            weight: 1,
            loss: 0.0,
        }];
        ing.send(secs(0), NodeId(2), &p, &paths, &mut out).unwrap();
        let s = ing.session(NodeId(2), 0).unwrap();
        let (epoch, next) = (s.epoch(), s.next_seq());
        let (lent_epoch, first) = ing.lend(NodeId(2), 0, 3).unwrap();
        assert_eq!((lent_epoch, first), (epoch, next.wrapping_add(3)));
        assert_eq!(ing.lend(NodeId(2), 0, 3), None, "lent already");
        // Three packets still reach this encoder: they get the numbers
        // kept back; the fourth is not encoded (it would take one lent).
        out.clear();
        for _ in 0..4 {
            ing.send(secs(1), NodeId(2), &p, &paths, &mut out).unwrap();
        }
        let seqs: Vec<u32> = out.iter().map(|o| o.header.seq).collect();
        assert_eq!(
            seqs,
            (0..3).map(|i| next.wrapping_add(i)).collect::<Vec<_>>()
        );
        assert_eq!(ing.session(NodeId(2), 0).unwrap().counters().lent_out, 1);
        assert!(ing.session(NodeId(2), 0).unwrap().lent_and_exhausted());
        // Lent, it outlives `idle`; taken back, it goes on from where the
        // borrower stopped, with the same epoch.
        ing.expire(secs(500));
        assert!(ing.serves(NodeId(2)));
        ing.take_back(NodeId(2), 0, first.wrapping_add(100), &[]);
        out.clear();
        ing.send(secs(501), NodeId(2), &p, &paths, &mut out)
            .unwrap();
        assert_eq!(out[0].header.seq, first.wrapping_add(100));
        assert_eq!(out[0].header.epoch, epoch);
        assert!(!ing.session(NodeId(2), 0).unwrap().lent_and_exhausted());
        ing.expire(secs(700));
        assert!(!ing.serves(NodeId(2)));
    }

    #[test]
    fn policy_most_specific_wins() {
        let mut p = Policy::default();
        p.classes.insert(1, Mode::Mirror(2));
        p.peers.insert(
            NodeId(9),
            PeerPolicy {
                default: Some(Mode::Parity(4)),
                classes: BTreeMap::from([(1, Mode::Mirror(3))]),
            },
        );
        assert_eq!(p.mode_for(NodeId(9), 1), Mode::Mirror(3));
        assert_eq!(p.mode_for(NodeId(9), 0), Mode::Parity(4));
        assert_eq!(p.mode_for(NodeId(8), 1), Mode::Mirror(2));
        assert_eq!(p.mode_for(NodeId(8), 0), Mode::Single);
    }
}
