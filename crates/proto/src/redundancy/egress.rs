//! The egress decoder of one session: delivers each packet at most once,
//! rebuilds lost packets from parity/repair as soon as enough of their
//! group has arrived, optionally re-orders, and counts what every path
//! brought.
//!
//! Order of decisions for an arriving packet:
//! 0. epoch: the first packet's epoch is the session's. A packet of
//!    another epoch may mean that the ingress opened the session anew (it
//!    restarted, or its session expired), or that someone forged it: it
//!    is held (at most [`MAX_HELD`]), and the session asks its ingress in
//!    a signed session check (`braid_wire::SessionCheck`) with a fresh
//!    nonce. Only the ingress's proof (its epoch and next number, the
//!    nonce, its MAC checked by the node) changes the epoch: then the
//!    window, the open groups and the re-order buffer start over (what the
//!    buffer held is delivered first) and the held packets of the proven
//!    epoch go through, the others are dropped. A packet of the epoch
//!    just replaced is a late copy from before: dropped, counted. Nothing
//!    else ever resets the window;
//! 1. data: the dedup window decides new / duplicate / too old / too far
//!    ahead (see `dedup.rs`: no packet moves it more than half a window).
//!    A packet too far ahead is held and checked like a new epoch: the
//!    proof's next number moves the window ([`DedupWindow::advance_to`]).
//!    A new packet is delivered at once (or through the re-order buffer)
//!    and, when it belongs to a group, kept until the group is settled;
//! 2. repair: kept with its group; its header's group shape is
//!    authoritative (a flushed group is smaller than planned);
//! 3. the group is rebuilt when the missing data packets are no more than
//!    the repair packets at hand (XOR: one; Reed-Solomon: n-m), and every
//!    rebuilt packet passes the dedup window like any other.
//!
//! So forged data packets, whatever their epoch or number and however
//! many, cost only themselves (and a check each [`CHECK_INTERVAL`] at
//! most): the real packets around them are delivered as before.
//! Sessions of the control class deliver a packet that waits for a proof
//! at once as well (each node message there is signed on its own: the
//! proof itself travels in that class).
//!
//! Bounded: at most `max_groups` open groups per session (the oldest is
//! dropped, counted), the dedup window, the re-order buffer, and
//! [`MAX_HELD`] packets waiting for a proof, for at most [`CHECK_TIMEOUT`].

use std::collections::VecDeque;
use std::time::Duration;

use braid_wire::{DataHeader, DataPacket, Group, PathCount, RedundancyMode};

use super::coding::{rs_rebuild, xor_rebuild, RsCodec};
use super::dedup::{DedupWindow, Verdict};
use super::mode::MAX_PATHS;
use super::reorder::{ReorderBuffer, ReorderConfig, ReorderCounters};
use super::sliding::{Arrival, SlidingDecoder};
use super::sliding_ask::{AskCounters, Want};
use crate::time::Instant;

/// Packets a session holds while it waits for its ingress's proof.
pub const MAX_HELD: usize = 32;
/// A session asks its ingress again at most this often.
pub const CHECK_INTERVAL: Duration = Duration::from_millis(200);
/// Held packets, and a check not answered, are given up after this.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// Egress settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EgressConfig {
    /// Sequence numbers the dedup window spans (rounded up to a power of
    /// two).
    pub dedup_window: u32,
    /// Re-order before delivery (off by default: most traffic is better
    /// served by delivering at once; TCP over striped paths wants it on).
    pub reorder: Option<ReorderConfig>,
    /// Groups kept open per session while waiting for repair.
    pub max_groups: usize,
}

impl Default for EgressConfig {
    fn default() -> Self {
        EgressConfig {
            dedup_window: 8192,
            reorder: None,
            max_groups: 32,
        }
    }
}

/// What one path brought to this egress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathCounters {
    /// Packets (data and repair) that arrived by this path.
    pub received: u64,
    /// Data packets whose first copy came by this path.
    pub delivered: u64,
    /// Copies that arrived after the packet was already delivered.
    pub duplicates: u64,
    /// Repair packets from this path that rebuilt a lost packet.
    pub repairs_used: u64,
}

/// Counters of one egress session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EgressCounters {
    /// Data packets delivered, rebuilt ones included; each at most once.
    pub delivered: u64,
    /// Copies of data packets already delivered: dropped.
    pub duplicates: u64,
    /// Older than the dedup window: dropped (see `dedup`).
    pub too_old: u64,
    /// More than half a window ahead and unconfirmed: dropped (see
    /// `dedup`).
    pub too_far_ahead: u64,
    /// Lost data packets rebuilt from parity/repair and delivered.
    pub rebuilt: u64,
    /// Groups whose rebuild failed (malformed repair): dropped, counted.
    pub rebuild_failed: u64,
    /// Repair packets that arrived, every copy counted.
    pub repair_received: u64,
    /// Groups dropped unsettled to keep within `max_groups`.
    pub groups_evicted: u64,
    /// Times the ingress opened the session anew (a new epoch): the
    /// window started over.
    pub epoch_changes: u64,
    /// Packets of the epoch just replaced (late copies from before the
    /// ingress restarted): dropped.
    pub old_epoch: u64,
    /// Packets of an epoch, or numbers too far ahead, that the ingress
    /// had not proven when they arrived: held for its proof (or, in the
    /// control class, delivered but not moving the window).
    pub unproven: u64,
    /// Of those, dropped: the proof named another epoch or numbers (a
    /// forgery), none came in time, or the hold was full.
    pub unproven_dropped: u64,
    /// Session checks sent to the ingress.
    pub checks_sent: u64,
    /// Proofs taken: each moved the epoch or the window, or confirmed
    /// them.
    pub proofs: u64,
    /// Windows moved more than half their span by a proof (the ingress's
    /// numbers jumped: a long run of lost packets).
    pub jumps: u64,
    /// What each path brought, by path index.
    pub per_path: [PathCounters; MAX_PATHS],
}

#[derive(Debug)]
struct RxGroup {
    base: u32,
    mode: RedundancyMode,
    /// Planned data count (from data headers) until a repair packet says
    /// the real one.
    data: u8,
    repair_count: u8,
    /// Interleaving depth: data shard i is number `base + i * depth`.
    depth: u8,
    shape_known: bool,
    slots: Vec<Option<Vec<u8>>>,
    repairs: Vec<(u8, u8, Vec<u8>)>,
    settled: bool,
}

/// What a session waits for its ingress to prove.
#[derive(Debug)]
struct Unproven {
    /// Packets held meanwhile: header and payload.
    held: VecDeque<(DataHeader, Vec<u8>)>,
    /// When the first of them arrived.
    since: Instant,
    /// The check sent, if any: its nonce, and when.
    asked: Option<([u8; 8], Instant)>,
}

/// Why a proof changed nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProofRefusal {
    /// No session asked (it never did, or the proof came late, or twice):
    /// a replay, or a check given up.
    NotAsked,
    /// Its nonce is not the one the session sent.
    WrongNonce,
}

/// The decoder of one session.
#[derive(Debug)]
pub struct EgressSession {
    config: EgressConfig,
    /// Deliver what waits for a proof as well (the control class).
    deliver_unproven: bool,
    unproven: Option<Unproven>,
    /// The epoch of the session's packets, once one has arrived, and the
    /// one it replaced.
    epoch: Option<u32>,
    retired_epoch: Option<u32>,
    dedup: DedupWindow,
    reorder: Option<ReorderBuffer<Vec<u8>>>,
    groups: VecDeque<RxGroup>,
    rs: RsCodec,
    /// The sliding-window code's decoder, once a packet of that mode came.
    sliding: Option<Box<SlidingDecoder>>,
    /// When the last packet arrived (idle sessions expire: `sessions.rs`).
    last_active: Instant,
    /// Per path, the send order of the latest packet that arrived on it
    /// ([`braid_wire::DataHeader::send_order`]), for path reports.
    latest: [Option<u32>; MAX_PATHS],
    /// When that latest packet arrived.
    latest_at: [Instant; MAX_PATHS],
    /// A path brought its first packet since [`Self::take_new_path`]
    /// last looked: the ingress learns that path's delay from a report
    /// sent at once, not a report interval later.
    new_path: bool,
    counters: EgressCounters,
}

impl EgressSession {
    /// A session that has had no packet yet, as of `now`.
    pub fn new(config: EgressConfig, now: Instant) -> Self {
        EgressSession {
            deliver_unproven: false,
            unproven: None,
            epoch: None,
            retired_epoch: None,
            dedup: DedupWindow::new(config.dedup_window),
            reorder: config.reorder.map(ReorderBuffer::new),
            groups: VecDeque::new(),
            rs: RsCodec::default(),
            sliding: None,
            last_active: now,
            latest: [None; MAX_PATHS],
            latest_at: [Instant::ZERO; MAX_PATHS],
            new_path: false,
            counters: EgressCounters::default(),
            config,
        }
    }

    /// Whether a path brought its first packet of the session since the
    /// last call (the flag is cleared).
    pub fn take_new_path(&mut self) -> bool {
        std::mem::take(&mut self.new_path)
    }

    /// When the last packet arrived.
    pub fn last_active(&self) -> Instant {
        self.last_active
    }

    /// The epoch of the session's packets (`None` before the first).
    pub fn epoch(&self) -> Option<u32> {
        self.epoch
    }

    /// The epoch replaced last, if any.
    pub fn retired_epoch(&self) -> Option<u32> {
        self.retired_epoch
    }

    /// The dedup window.
    pub fn window(&self) -> &DedupWindow {
        &self.dedup
    }

    /// A session another decoder (the kernel data path) already holds
    /// at `epoch`, its highest number `highest`: this one starts there,
    /// so that what that decoder passes up as unproven is checked here,
    /// not taken as a first packet.
    pub fn following(mut self, epoch: u32, highest: Option<u32>) -> Self {
        self.epoch = Some(epoch);
        if let Some(h) = highest {
            self.dedup.advance_to(h.wrapping_add(1));
        }
        self
    }

    /// A session of the control class: what waits for a proof is
    /// delivered at once too (node messages are signed one by one).
    pub fn delivering_unproven(mut self) -> Self {
        self.deliver_unproven = true;
        self
    }

    /// Starts the session over at `epoch` (proven), after delivering what
    /// the re-order buffer held.
    fn start_epoch(&mut self, epoch: u32, deliver: &mut dyn FnMut(&[u8])) {
        self.counters.epoch_changes += 1;
        self.retired_epoch = self.epoch;
        self.epoch = Some(epoch);
        self.dedup = DedupWindow::new(self.config.dedup_window);
        self.groups.clear();
        self.sliding = None;
        self.latest = [None; MAX_PATHS];
        if let Some(r) = &mut self.reorder {
            r.flush(|p| held(p, deliver));
            *r = ReorderBuffer::new(self.config.reorder.expect("reorder configured"));
        }
    }

    /// A packet the ingress has not proven (another epoch, or numbers
    /// too far ahead): held for the proof, or dropped when the hold is
    /// full; delivered at once too in the control class.
    fn hold(
        &mut self,
        now: Instant,
        h: &DataHeader,
        payload: &[u8],
        deliver: &mut dyn FnMut(&[u8]),
    ) {
        self.counters.unproven += 1;
        if self.deliver_unproven && !h.group.is_repair() {
            deliver(payload);
        }
        let u = self.unproven.get_or_insert_with(|| Unproven {
            held: VecDeque::new(),
            since: now,
            asked: None,
        });
        if self.deliver_unproven {
            return;
        }
        if u.held.len() >= MAX_HELD {
            self.counters.unproven_dropped += 1;
            return;
        }
        u.held.push_back((*h, payload.to_vec()));
    }

    /// Whether something waits for the ingress's proof.
    pub fn holds_unproven(&self) -> bool {
        self.unproven.is_some()
    }

    /// Whether the session wants to ask its ingress now: something waits
    /// for a proof and it did not ask within [`CHECK_INTERVAL`].
    pub fn wants_check(&self, now: Instant) -> bool {
        self.unproven.as_ref().is_some_and(|u| {
            u.asked
                .is_none_or(|(_, at)| now.since(at) >= CHECK_INTERVAL)
        })
    }

    /// The check is sent with `nonce` at `now`.
    pub fn asked(&mut self, now: Instant, nonce: [u8; 8]) {
        if let Some(u) = &mut self.unproven {
            u.asked = Some((nonce, now));
            self.counters.checks_sent += 1;
        }
    }

    /// The ingress's proof: the session's epoch is `epoch`, and its next
    /// packet will carry `next_seq`. Moves the epoch or the window as it
    /// says, then passes the held packets again (those of another epoch,
    /// or still too far ahead, are dropped: forged).
    pub fn on_proof(
        &mut self,
        now: Instant,
        (epoch, next_seq): (u32, u32),
        nonce: [u8; 8],
        deliver: &mut dyn FnMut(&[u8]),
    ) -> Result<(), ProofRefusal> {
        let Some(u) = &self.unproven else {
            return Err(ProofRefusal::NotAsked);
        };
        match u.asked {
            None => return Err(ProofRefusal::NotAsked),
            Some((n, _)) if n != nonce => return Err(ProofRefusal::WrongNonce),
            Some(_) => {}
        }
        let held = self.unproven.take().map(|u| u.held).unwrap_or_default();
        self.counters.proofs += 1;
        if self.epoch != Some(epoch) {
            self.start_epoch(epoch, deliver);
        }
        if self.dedup.check(next_seq.wrapping_sub(1)) == Verdict::TooFarAhead {
            self.counters.jumps += 1;
        }
        self.dedup.advance_to(next_seq);
        for (h, payload) in held {
            if h.epoch != epoch || self.dedup.check(h.seq) == Verdict::TooFarAhead {
                self.counters.unproven_dropped += 1;
                continue;
            }
            self.take(now, &h, &payload, deliver);
        }
        // What the held packets themselves left unproven (none, unless
        // forged ones came with them) is dropped with them.
        if let Some(u) = self.unproven.take() {
            self.counters.unproven_dropped += u.held.len() as u64;
        }
        Ok(())
    }

    /// Gives up a check not answered within [`CHECK_TIMEOUT`]: what it
    /// held is dropped.
    fn give_up_check(&mut self, now: Instant) {
        if self
            .unproven
            .as_ref()
            .is_some_and(|u| now.since(u.since) >= CHECK_TIMEOUT)
        {
            let u = self.unproven.take().expect("checked");
            self.counters.unproven_dropped += u.held.len() as u64;
        }
    }

    /// What the session has counted so far.
    pub fn counters(&self) -> &EgressCounters {
        &self.counters
    }

    /// The re-order buffer's counters (`None` when re-ordering is off).
    pub fn reorder_counters(&self) -> Option<ReorderCounters> {
        self.reorder.as_ref().map(ReorderBuffer::counters)
    }

    /// How long the re-order buffer lets a gap hold packets back now
    /// (`None` when re-ordering is off).
    pub fn reorder_timeout(&self) -> Option<std::time::Duration> {
        self.reorder.as_ref().map(ReorderBuffer::timeout)
    }

    /// Bytes of state held now (window, open groups, re-order buffer).
    pub fn memory(&self) -> usize {
        let groups: usize = self
            .groups
            .iter()
            .map(|g| {
                g.slots.iter().flatten().map(Vec::capacity).sum::<usize>()
                    + g.repairs.iter().map(|r| r.2.capacity()).sum::<usize>()
                    + core::mem::size_of::<RxGroup>()
            })
            .sum();
        self.dedup.memory()
            + groups
            + self.sliding.as_ref().map_or(0, |d| d.memory())
            + core::mem::size_of::<Self>()
    }

    /// Takes one arriving packet; calls `deliver` with every payload now
    /// due (zero, one or several: rebuilt packets, re-ordered runs).
    pub fn receive(&mut self, now: Instant, pkt: &DataPacket<'_>, deliver: &mut dyn FnMut(&[u8])) {
        self.take(now, &pkt.header, pkt.payload, deliver);
    }

    fn take(
        &mut self,
        now: Instant,
        h: &DataHeader,
        payload: &[u8],
        deliver: &mut dyn FnMut(&[u8]),
    ) {
        let path = (h.path as usize).min(MAX_PATHS - 1);
        match self.epoch {
            None => self.epoch = Some(h.epoch),
            Some(e) if e == h.epoch => {}
            _ if self.retired_epoch == Some(h.epoch) => {
                self.counters.old_epoch += 1;
                return;
            }
            Some(_) => return self.hold(now, h, payload, deliver),
        }
        // (A repair packet carries its group's first number.)
        if self.dedup.check(h.seq) == Verdict::TooFarAhead {
            self.counters.too_far_ahead += 1;
            return self.hold(now, h, payload, deliver);
        }
        self.last_active = now;
        self.new_path |= self.counters.per_path[path].received == 0;
        self.counters.per_path[path].received += 1;
        let order = h.send_order();
        let latest = &mut self.latest[path];
        if latest.is_none_or(|l| (order.wrapping_sub(l) as i32) > 0) {
            *latest = Some(order);
            self.latest_at[path] = now;
        }
        let congestion = h.flags.contains(braid_wire::DataFlags::CONGESTION);
        if h.mode == RedundancyMode::Sliding && h.group.is_repair() {
            self.counters.repair_received += 1;
            let sliding = self.sliding.get_or_insert_with(Default::default);
            let at = Arrival {
                now,
                in_order: !h.flags.contains(braid_wire::DataFlags::URGENT),
            };
            match sliding.on_repair(at, h.seq, h.group.index, payload) {
                Ok(rebuilt) => self.deliver_rebuilt(now, path, rebuilt, deliver),
                Err(_) => self.counters.rebuild_failed += 1,
            }
            return;
        }
        if h.group.is_repair() {
            self.counters.repair_received += 1;
            let gi = self.group_for(h.seq, h.mode, h.group);
            let g = &mut self.groups[gi];
            if !g.settled && !g.repairs.iter().any(|r| r.0 == h.group.index) {
                g.data = h.group.data;
                g.repair_count = h.group.repair;
                g.shape_known = true;
                g.repairs
                    .push((h.group.index, path as u8, payload.to_vec()));
            }
            self.try_rebuild(now, gi, deliver);
            return;
        }
        match self.dedup.insert(h.seq) {
            Verdict::Duplicate => {
                self.counters.duplicates += 1;
                self.counters.per_path[path].duplicates += 1;
                return;
            }
            Verdict::TooOld => {
                self.counters.too_old += 1;
                return;
            }
            Verdict::TooFarAhead => {
                self.counters.too_far_ahead += 1;
                return;
            }
            Verdict::New => {}
        }
        self.counters.delivered += 1;
        self.counters.per_path[path].delivered += 1;
        let urgent = h.flags.contains(braid_wire::DataFlags::URGENT);
        Self::release(
            &mut self.reorder,
            now,
            h.seq,
            congestion,
            urgent,
            payload,
            deliver,
        );
        if h.mode == RedundancyMode::Sliding {
            let sliding = self.sliding.get_or_insert_with(Default::default);
            let at = Arrival {
                now,
                in_order: !urgent,
            };
            let rebuilt = sliding.on_data(at, h.seq, payload);
            self.deliver_rebuilt(now, path, rebuilt, deliver);
        } else {
            if let Some(sliding) = &mut self.sliding {
                sliding.other_mode(h.seq);
            }
            if !h.group.is_none() {
                let base = h.group.base_of(h.seq);
                let gi = self.group_for(base, h.mode, h.group);
                let g = &mut self.groups[gi];
                if !g.settled {
                    if let Some(slot) = g.slots.get_mut(h.group.index as usize) {
                        *slot = Some(payload.to_vec());
                    }
                }
                self.try_rebuild(now, gi, deliver);
            }
        }
    }

    /// Delivers `payload` (number `seq`) through the re-order buffer if
    /// there is one. An urgent packet (VoIP, say) is never held: it is
    /// delivered at once, and the buffer gets an empty stand-in for its
    /// number so that later packets do not wait for it.
    fn release(
        reorder: &mut Option<ReorderBuffer<Vec<u8>>>,
        now: Instant,
        seq: u32,
        congestion: bool,
        urgent: bool,
        payload: &[u8],
        deliver: &mut dyn FnMut(&[u8]),
    ) {
        match reorder {
            Some(r) if urgent => {
                deliver(payload);
                r.push(now, seq, congestion, Vec::new(), |p| held(p, deliver));
            }
            Some(r) => r.push(now, seq, congestion, payload.to_vec(), |p| held(p, deliver)),
            None => deliver(payload),
        }
    }

    /// The index of the group starting at `base`, opened if new (with
    /// the shape and depth `group` gives).
    fn group_for(&mut self, base: u32, mode: RedundancyMode, group: Group) -> usize {
        if let Some(i) = self
            .groups
            .iter()
            .position(|g| g.base == base && g.depth == group.depth)
        {
            return i;
        }
        if self.groups.len() >= self.config.max_groups.max(1) {
            let old = self.groups.pop_front().expect("non-empty");
            if !old.settled {
                self.counters.groups_evicted += 1;
            }
        }
        self.groups.push_back(RxGroup {
            base,
            mode,
            data: group.data,
            repair_count: 0,
            depth: group.depth,
            shape_known: false,
            slots: vec![None; super::mode::MAX_SHARDS as usize],
            repairs: Vec::new(),
            settled: false,
        });
        self.groups.len() - 1
    }

    fn try_rebuild(&mut self, now: Instant, gi: usize, deliver: &mut dyn FnMut(&[u8])) {
        let g = &mut self.groups[gi];
        let rs = &mut self.rs;
        if g.settled {
            return;
        }
        let m = g.data as usize;
        let missing: Vec<usize> = (0..m).filter(|&i| g.slots[i].is_none()).collect();
        if missing.is_empty() {
            if g.shape_known || m > 0 {
                Self::settle(g);
            }
            return;
        }
        if !g.shape_known || missing.len() > g.repairs.len() {
            return;
        }
        let rebuilt: Result<Vec<(usize, Vec<u8>)>, _> = match g.mode {
            RedundancyMode::Erasure => {
                let present: Vec<(usize, &[u8])> = (0..m)
                    .filter_map(|i| g.slots[i].as_deref().map(|s| (i, s)))
                    .collect();
                let repairs: Vec<(usize, &[u8])> = g
                    .repairs
                    .iter()
                    .map(|(idx, _, p)| (*idx as usize - m, p.as_slice()))
                    .collect();
                rs_rebuild(rs, m, g.repair_count as usize, &present, &repairs)
            }
            _ => {
                let others = (0..m).filter_map(|i| g.slots[i].as_deref());
                xor_rebuild(&g.repairs[0].2, others).map(|p| vec![(missing[0], p)])
            }
        };
        let repair_path = g.repairs[0].1 as usize;
        let (base, depth) = (g.base, g.depth);
        Self::settle(g);
        let rebuilt = match rebuilt {
            Ok(r) => r,
            Err(_) => {
                self.counters.rebuild_failed += 1;
                return;
            }
        };
        let rebuilt = rebuilt
            .into_iter()
            .map(|(i, payload)| (base.wrapping_add(i as u32 * u32::from(depth)), payload))
            .collect();
        self.deliver_rebuilt(now, repair_path, rebuilt, deliver);
    }

    /// Delivers the packets a code rebuilt, `(number, payload)`, each
    /// through the dedup window (one that came meanwhile is not delivered
    /// again); `repair_path` brought the repair that completed them.
    fn deliver_rebuilt(
        &mut self,
        now: Instant,
        repair_path: usize,
        rebuilt: Vec<(u32, Vec<u8>)>,
        deliver: &mut dyn FnMut(&[u8]),
    ) {
        for (seq, payload) in rebuilt {
            if self.dedup.insert(seq) == Verdict::New {
                self.counters.rebuilt += 1;
                self.counters.delivered += 1;
                self.counters.per_path[repair_path].repairs_used += 1;
                // Its header is lost with it: a rebuilt packet is urgent
                // when its DSCP is one the classifier takes as urgent.
                let urgent = crate::classify::inspect(&payload)
                    .is_ok_and(|i| crate::classify::URGENT_DSCP.contains(&i.dscp));
                Self::release(
                    &mut self.reorder,
                    now,
                    seq,
                    false,
                    urgent,
                    &payload,
                    deliver,
                );
            }
        }
    }

    fn settle(g: &mut RxGroup) {
        g.settled = true;
        g.slots.iter_mut().for_each(|s| *s = None);
        g.repairs.clear();
    }

    /// What to tell the ingress as of `now`: packets received per path so
    /// far, the latest one's send order and how long ago it arrived (for
    /// [`braid_wire::PathReport`]), for every path that brought any.
    pub fn path_counts(&self, now: Instant) -> Vec<PathCount> {
        self.counters
            .per_path
            .iter()
            .zip(&self.latest)
            .enumerate()
            .filter(|(_, (c, _))| c.received > 0)
            .map(|(p, (c, latest))| PathCount {
                path: p as u8,
                received: c.received as u32,
                latest: latest.map(|l| l & braid_wire::control::LATEST_MASK),
                age_ms: now
                    .since(self.latest_at[p])
                    .as_millis()
                    .min(u128::from(u16::MAX)) as u16,
            })
            .collect()
    }

    /// When the re-order buffer, or a check, next needs
    /// [`Self::handle_timeout`] (or the node a check sent again, or a
    /// repair request).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let reorder = self.reorder.as_ref().and_then(ReorderBuffer::poll_timeout);
        // A check to send again, or to give up.
        let check = self.unproven.as_ref().map(|u| {
            let again = u.asked.map_or(u.since, |(_, at)| at + CHECK_INTERVAL);
            again.min(u.since + CHECK_TIMEOUT)
        });
        let ask = self.sliding.as_ref().and_then(|d| d.next_ask());
        [reorder, check, ask].into_iter().flatten().min()
    }

    /// Whether the sliding-window decoder misses packets: a repair
    /// request may come due ([`Self::poll_repair`]).
    pub fn misses(&self) -> bool {
        self.sliding.as_ref().is_some_and(|d| d.misses())
    }

    /// The repair request due at `now`, if any (`sliding_ask.rs`).
    pub fn poll_repair(&mut self, now: Instant) -> Option<Want> {
        self.sliding.as_mut()?.want(now)
    }

    /// What the sliding-window decoder's asking counted (`None` before
    /// the session's first packet of that code).
    pub fn ask_counters(&self) -> Option<AskCounters> {
        self.sliding.as_ref().map(|d| d.ask_counters())
    }

    /// Releases what the re-order buffer holds past its timeout as of
    /// `now`, and gives up a check not answered in time.
    pub fn handle_timeout(&mut self, now: Instant, deliver: &mut dyn FnMut(&[u8])) {
        if let Some(r) = &mut self.reorder {
            r.handle_timeout(now, |p| held(p, deliver));
        }
        self.give_up_check(now);
    }

    /// Releases everything the re-order buffer holds.
    pub fn flush(&mut self, deliver: &mut dyn FnMut(&[u8])) {
        if let Some(r) = &mut self.reorder {
            r.flush(|p| held(p, deliver));
        }
    }
}

/// A packet the re-order buffer releases: delivered, unless it is the
/// empty stand-in of an urgent packet delivered before (user packets are
/// IP packets, never empty).
fn held(p: Vec<u8>, deliver: &mut dyn FnMut(&[u8])) {
    if !p.is_empty() {
        deliver(&p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_wire::{DataFlags, Group, NodeId};

    fn packet(epoch: u32, seq: u32) -> Vec<u8> {
        packet_flagged(epoch, seq, DataFlags::empty())
    }

    fn packet_flagged(epoch: u32, seq: u32, flags: DataFlags) -> Vec<u8> {
        let h = DataHeader {
            flags,
            mode: RedundancyMode::Single,
            path: 0,
            route_ptr: 0,
            ingress: NodeId(1),
            egress: NodeId(2),
            seq,
            group: Group::NONE,
            hop_limit: 8,
            class: 0,
            epoch,
        };
        let mut b = vec![0u8; braid_wire::DATA_HEADER_LEN];
        let n = h.emit(&[], &mut b).unwrap();
        b.truncate(n);
        b.extend_from_slice(&seq.to_be_bytes());
        b
    }

    /// Feeds `(epoch, seq)` packets; returns the sequence numbers
    /// delivered.
    fn feed(eg: &mut EgressSession, packets: impl IntoIterator<Item = (u32, u32)>) -> Vec<u32> {
        let mut got = Vec::new();
        for (epoch, seq) in packets {
            let p = packet(epoch, seq);
            eg.receive(Instant::ZERO, &DataHeader::parse(&p).unwrap(), &mut |b| {
                got.push(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            });
        }
        got
    }

    /// Asks (as the node does when the session wants a check) and
    /// returns the nonce sent.
    fn ask(eg: &mut EgressSession, now: Instant) -> [u8; 8] {
        assert!(eg.wants_check(now), "a check is wanted");
        let nonce = [(now.as_micros() % 251) as u8 + 1; 8];
        eg.asked(now, nonce);
        assert!(!eg.wants_check(now), "one check per interval");
        nonce
    }

    fn proof(eg: &mut EgressSession, proven: (u32, u32), nonce: [u8; 8]) -> Vec<u32> {
        let mut got = Vec::new();
        eg.on_proof(Instant::ZERO, proven, nonce, &mut |b| {
            got.push(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        })
        .unwrap();
        got
    }

    #[test]
    fn a_restarted_ingress_is_followed_once_it_proves_its_new_epoch() {
        let mut eg = EgressSession::new(EgressConfig::default(), Instant::ZERO);
        assert_eq!(feed(&mut eg, (1000..1100).map(|s| (7, s))).len(), 100);
        assert!(!eg.wants_check(Instant::ZERO));
        // The ingress restarts with a new epoch and, by bad luck, a first
        // number just behind its old highest (inside the old window: the
        // numbers alone would say "duplicate"): held until it proves it.
        assert!(feed(&mut eg, (1050..1070).map(|s| (9, s))).is_empty());
        let nonce = ask(&mut eg, Instant::ZERO);
        assert_eq!(
            eg.on_proof(Instant::ZERO, (9, 1070), [0; 8], &mut |_| {}),
            Err(ProofRefusal::WrongNonce)
        );
        assert_eq!(
            proof(&mut eg, (9, 1070), nonce),
            (1050..1070).collect::<Vec<_>>()
        );
        assert_eq!(eg.epoch(), Some(9));
        // Then every packet goes through at once; the same proof again
        // (a replay) changes nothing.
        let got = feed(&mut eg, (1070..1250).map(|s| (9, s)));
        assert_eq!(got, (1070..1250).collect::<Vec<_>>());
        assert_eq!(
            eg.on_proof(Instant::ZERO, (9, 1070), nonce, &mut |_| {}),
            Err(ProofRefusal::NotAsked)
        );
        // Late copies of the old epoch are dropped, not delivered again.
        assert!(feed(&mut eg, (1090..1100).map(|s| (7, s))).is_empty());
        let c = eg.counters();
        assert_eq!(
            (
                c.epoch_changes,
                c.old_epoch,
                c.too_old,
                c.unproven,
                c.proofs
            ),
            (1, 10, 0, 20, 1)
        );
    }

    #[test]
    fn forged_epochs_and_numbers_cost_only_themselves() {
        let mut eg = EgressSession::new(EgressConfig::default(), Instant::ZERO);
        feed(&mut eg, (0..100).map(|s| (7, s)));
        // Between the real packets: forged ones of a new epoch, and runs
        // of two close numbers far ahead (what once made a jump).
        let mut packets = Vec::new();
        for s in 100..400u32 {
            if s % 50 == 0 {
                packets.push((0xdead_beef, s));
                packets.push((7, s + 1_000_000));
                packets.push((7, s + 1_000_001));
            }
            packets.push((7, s));
        }
        let got = feed(&mut eg, packets);
        assert_eq!(got, (100..400).collect::<Vec<_>>());
        // The ingress's proof names the real epoch and number: what was
        // held is dropped, nothing moves.
        let nonce = ask(&mut eg, Instant::ZERO);
        assert!(proof(&mut eg, (7, 400), nonce).is_empty());
        assert_eq!(eg.epoch(), Some(7));
        assert_eq!(feed(&mut eg, (400..410).map(|s| (7, s))).len(), 10);
        let c = eg.counters();
        assert_eq!(
            (c.epoch_changes, c.unproven, c.unproven_dropped, c.jumps),
            (0, 18, 18, 0)
        );
        // Unanswered (a forgery for a session its ingress does not
        // hold), the hold is given up after the timeout.
        feed(&mut eg, [(0xdead, 5)]);
        assert!(eg.wants_check(Instant::ZERO));
        eg.handle_timeout(Instant::ZERO + CHECK_TIMEOUT, &mut |_| {});
        assert!(!eg.wants_check(Instant::ZERO + CHECK_TIMEOUT));
        assert_eq!(eg.counters().unproven_dropped, 19);
    }

    #[test]
    fn a_proven_jump_moves_the_window_and_delivers_what_was_held() {
        let mut eg = EgressSession::new(EgressConfig::default(), Instant::ZERO);
        feed(&mut eg, (0..100).map(|s| (7, s)));
        // 60,000 packets lost in a row (an outage): the next ones are too
        // far ahead, held; the proof moves the window.
        assert!(feed(&mut eg, (60_100..60_110).map(|s| (7, s))).is_empty());
        let nonce = ask(&mut eg, Instant::ZERO);
        assert_eq!(
            proof(&mut eg, (7, 60_112), nonce),
            (60_100..60_110).collect::<Vec<_>>()
        );
        assert_eq!(feed(&mut eg, [(7, 60_111), (7, 50)]), vec![60_111]);
        assert_eq!(eg.counters().jumps, 1);
    }

    #[test]
    fn a_far_future_number_costs_itself_only() {
        let mut eg = EgressSession::new(EgressConfig::default(), Instant::ZERO);
        feed(&mut eg, (0..100).map(|s| (7, s)));
        // One forged or corrupted number per 64 packets: each is dropped,
        // and every real packet still gets through.
        let mut packets = Vec::new();
        for s in 100..1000u32 {
            if s % 64 == 0 {
                packets.push((7, s + 2_000_000_000));
            }
            packets.push((7, s));
        }
        let got = feed(&mut eg, packets);
        assert_eq!(got, (100..1000).collect::<Vec<_>>());
        let c = eg.counters();
        assert_eq!((c.too_far_ahead, c.too_old, c.epoch_changes), (14, 0, 0));
    }

    #[test]
    fn an_urgent_packet_is_never_held_and_never_holds_others_back() {
        use super::super::reorder::ReorderTimeout;
        let config = EgressConfig {
            reorder: Some(ReorderConfig {
                timeout: ReorderTimeout::Fixed(std::time::Duration::from_secs(1)),
                ..ReorderConfig::default()
            }),
            ..EgressConfig::default()
        };
        let mut eg = EgressSession::new(config, Instant::ZERO);
        let mut got = Vec::new();
        let mut take = |eg: &mut EgressSession, seq: u32, flags: DataFlags| {
            let p = packet_flagged(7, seq, flags);
            eg.receive(Instant::ZERO, &DataHeader::parse(&p).unwrap(), &mut |b| {
                got.push(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            });
        };
        take(&mut eg, 0, DataFlags::empty());
        // 1 is missing: 2 waits, but urgent 3 goes at once.
        take(&mut eg, 2, DataFlags::empty());
        take(&mut eg, 3, DataFlags::URGENT);
        // 1 fills the gap: 2 follows, and nothing waits for 3.
        take(&mut eg, 1, DataFlags::empty());
        take(&mut eg, 4, DataFlags::empty());
        assert_eq!(got, [0, 3, 1, 2, 4]);
        assert_eq!(eg.counters().delivered, 5);
    }

    #[test]
    fn a_rebuilt_urgent_packet_is_not_held_either() {
        use super::super::ingress::Payload;
        use super::super::mode::Mode;
        use super::super::reorder::ReorderTimeout;
        // IPv4 packets whose last byte says which they are; DSCP as given.
        let ip = |n: u8, dscp: u8| {
            let mut p = vec![0u8; 21];
            p[0] = 0x45;
            p[1] = dscp << 2;
            p[3] = 21;
            p[9] = 17;
            p[20] = n;
            p
        };
        let inputs = [ip(0, 0), ip(1, 0), ip(2, 0), ip(3, 0), ip(4, 0), ip(5, 46)];
        let erasure = Mode::Erasure {
            n: 3,
            m: 2,
            depth: 1,
        };
        let mut ing = super::super::ingress::tests::test_session(erasure, 1);
        let mut out = Vec::new();
        let mut wire = Vec::new();
        for input in &inputs {
            ing.encode(Instant::ZERO, input, Default::default(), &mut out);
            for o in out.drain(..) {
                let payload = match o.payload {
                    Payload::Input => input.clone(),
                    Payload::Repair(r) => r,
                };
                let mut buf = vec![0u8; 64 + payload.len()];
                let n = o.header.emit(&[], &mut buf).unwrap();
                buf.truncate(n);
                buf.extend_from_slice(&payload);
                wire.push((o.header, buf));
            }
        }
        let config = EgressConfig {
            reorder: Some(ReorderConfig {
                timeout: ReorderTimeout::Fixed(std::time::Duration::from_secs(1)),
                ..ReorderConfig::default()
            }),
            ..EgressConfig::default()
        };
        let mut eg = EgressSession::new(config, Instant::ZERO);
        let mut got = Vec::new();
        // Packet 2 and its group's repair are lost (a gap that stays);
        // packet 5 (EF) is lost and rebuilt from its group's repair.
        for (h, bytes) in &wire {
            let repair = h.group.is_repair();
            let lost = h.seq == 2 || (!repair && h.seq == 5);
            if !lost {
                eg.receive(
                    Instant::ZERO,
                    &DataHeader::parse(bytes).unwrap(),
                    &mut |b| got.push(b[20]),
                );
            }
        }
        assert_eq!(eg.counters().rebuilt, 1);
        // 3 and 4 wait behind the gap; the rebuilt urgent packet does not.
        assert_eq!(got, [0, 1, 5]);
    }
}
