//! The ingress encoder of one session (ingress, egress, class): gives each
//! packet its sequence number and decides, by the session's mode, which
//! paths carry a copy and which parity/repair packets go out.
//!
//! Data is never held back ("latency-free"): every data packet leaves the
//! moment it is encoded. Repair packets leave when their group is full, or
//! when the flush timer closes a group that stopped filling; a flushed
//! group's repair packets carry the group's real size, which the egress
//! takes as authoritative. Interleaved erasure fills `depth` groups in
//! turn (a block) and sends their repair in rounds when the block is full,
//! so that a burst of losses on one path hits each group less.
//!
//! The encoder does not know routes: it names a path slot (0..16); the node
//! attaches that slot's source route when it sends.

use std::time::Duration;

use braid_wire::{DataFlags, DataHeader, Group, NodeId, MAX_DEPTH};

use super::adaptive::{self, DataRate};
use super::block::{GroupBuffer, OpenBlock};
use super::capacity::{self, PathCapacity};
use super::coding::{rs_encode, RsCodec};
use super::estimate::{PathEstimate, PathEstimator};
use super::mode::{Mode, MAX_PATHS};
use super::path::PathState;
use super::placement;
use super::predict::PathLoss;
use super::sliding;
use super::urgent::{self, CopyBudget, CopyPath};
use crate::time::Instant;
use sliding_tx::SlidingTx;

mod sliding_tx;

mod lending;
mod types;
pub use types::{IngressConfig, IngressCounters, Outgoing, PacketMeta, Payload, SendHints};

/// The path of `up` the lead rule gives a spread packet (`hints.lead`),
/// unless it is backlogged.
fn lead_path(hints: SendHints, up: &[usize]) -> Option<usize> {
    hints
        .lead
        .map(usize::from)
        .filter(|l| up.contains(l) && hints.backlogged & (1 << l) == 0)
}

/// The encoder of one session.
#[derive(Debug)]
pub struct IngressSession {
    ingress: NodeId,
    egress: NodeId,
    class: u8,
    config: IngressConfig,
    mode: Mode,
    active: Mode,
    seq: u32,
    /// Drawn when the session opens; every packet carries it.
    epoch: u32,
    /// When the last packet was encoded (idle sessions expire).
    last_active: Instant,
    paths: Vec<PathState>,
    /// Per path slot: how fast the path is (`capacity.rs`).
    capacities: Vec<PathCapacity>,
    /// The split between the paths, by slot (`capacity::weights`): what
    /// stripe, the coded modes' placement and the delivery formulas use.
    weights: Vec<u32>,
    wrr: Vec<i64>,
    block: Option<OpenBlock>,
    groups: u64,
    /// One per group of the open block (grown to the deepest block seen).
    buffers: Vec<GroupBuffer>,
    rs: RsCodec,
    /// The sliding-window code's state (`Mode::Sliding`).
    sliding: SlidingTx,
    /// Per path slot: loss, burstiness and rate from the egress's path
    /// reports.
    estimators: Vec<PathEstimator>,
    /// Data packets per second entering the session, measured between
    /// path reports (the adaptive mode's groups must fill in time).
    data_rate: DataRate,
    /// While the session is lent to another encoder: the first number it
    /// was given (numbers from here on are its own).
    lent: Option<u32>,
    /// Data packets the encoder the session is lent to encoded: in
    /// periods that ended, and in this one so far (the data rate counts
    /// them with this encoder's).
    encoded_elsewhere: (u64, u64),
    /// When the last session check was answered.
    proved_at: Option<Instant>,
    /// What urgent packets' copies may still take (`urgent.rs`).
    copy_budget: CopyBudget,
    counters: IngressCounters,
}

/// A session check is answered at most this often per session (its
/// egress asks every 200 ms at most: more is a replay).
pub const PROOF_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

impl IngressSession {
    /// A session from `ingress` to `egress` for traffic class `class`;
    /// sequence numbers start at `first_seq`, and every packet carries
    /// `epoch` (draw both at random each time a session opens: the epoch
    /// tells the egress that this is a new start).
    pub fn new(
        ingress: NodeId,
        egress: NodeId,
        class: u8,
        mode: Mode,
        config: IngressConfig,
        first_seq: u32,
        epoch: u32,
    ) -> Self {
        IngressSession {
            ingress,
            egress,
            class,
            config,
            mode,
            active: if matches!(mode, Mode::Adaptive { .. }) {
                Mode::Single
            } else {
                mode
            },
            seq: first_seq,
            epoch,
            last_active: Instant::ZERO,
            paths: Vec::new(),
            capacities: vec![PathCapacity::default(); MAX_PATHS],
            weights: Vec::new(),
            wrr: Vec::new(),
            block: None,
            groups: 0,
            buffers: Vec::new(),
            rs: RsCodec::default(),
            sliding: SlidingTx::default(),
            estimators: vec![PathEstimator::default(); MAX_PATHS],
            data_rate: DataRate::default(),
            lent: None,
            encoded_elsewhere: (0, 0),
            proved_at: None,
            copy_budget: CopyBudget::new(config.urgent_copies_per_s),
            counters: IngressCounters::default(),
        }
    }

    /// What a session check's proof says as of `now`: the epoch, and the
    /// number the next packet will carry (while lent, the first number
    /// lent: a bound the borrower's packets are at or above). `None`
    /// within [`PROOF_INTERVAL`] of the last proof.
    pub fn proof(&mut self, now: Instant) -> Option<(u32, u32)> {
        if self
            .proved_at
            .is_some_and(|t| now.since(t) < PROOF_INTERVAL)
        {
            return None;
        }
        self.proved_at = Some(now);
        Some((self.epoch, self.lent.unwrap_or(self.seq)))
    }

    /// What the session has counted so far.
    pub fn counters(&self) -> &IngressCounters {
        &self.counters
    }

    /// The configured mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The mode in force (for `adaptive`, the one it chose).
    pub fn active_mode(&self) -> Mode {
        self.active
    }

    /// The next sequence number to be used.
    pub fn next_seq(&self) -> u32 {
        self.seq
    }

    /// The epoch every packet of this session carries.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The session's paths, by slot, as last set.
    pub fn paths(&self) -> &[PathState] {
        &self.paths
    }

    /// When the last packet was encoded.
    pub fn last_active(&self) -> Instant {
        self.last_active
    }

    /// Replaces the mode; the open group is closed first (its repair
    /// packets go out), so no packet is lost or sent twice.
    pub fn set_mode(&mut self, now: Instant, mode: Mode, out: &mut Vec<Outgoing>) {
        self.mode = mode;
        let active = match mode {
            Mode::Adaptive { target } => self.adaptive_choice(target),
            m => m,
        };
        self.activate(now, active, out);
    }

    /// Updates the paths (at most 16: slot i is path index i). For the
    /// adaptive mode this re-evaluates the choice.
    pub fn set_paths(&mut self, now: Instant, paths: &[PathState], out: &mut Vec<Outgoing>) {
        self.paths = paths.iter().take(MAX_PATHS).copied().collect();
        self.wrr.resize(self.paths.len(), 0);
        self.reweigh();
        self.reconsider(now, out);
    }

    fn reweigh(&mut self) {
        if self.weights.len() != self.paths.len() {
            // New paths: the routing weights until a path is found full.
            self.weights = self.paths.iter().map(|p| p.weight.max(1)).collect();
        }
        if let Some(weights) = capacity::weights(&self.capacities[..self.paths.len()]) {
            if capacity::split_moved(&self.weights, &weights) {
                self.weights = weights;
            }
        }
    }

    /// Each path's loss as the adaptive mode sees it: measured from path
    /// reports where there are enough, else as given with the path.
    pub fn path_loss(&self) -> Vec<f64> {
        self.paths
            .iter()
            .zip(&self.estimators)
            .map(|(p, e)| e.estimate().map_or(p.loss, |e| e.random_loss))
            .collect()
    }

    /// What the path reports say of each path slot (`None` until they
    /// say enough).
    pub fn path_estimates(&self) -> Vec<Option<PathEstimate>> {
        self.estimators
            .iter()
            .take(self.paths.len())
            .map(PathEstimator::estimate)
            .collect()
    }

    /// Each path slot's share of the split (its weight over the sum of
    /// the weights of the paths up; 0 for a path down).
    pub fn shares(&self) -> Vec<f64> {
        let up = |i: usize| self.paths.get(i).is_some_and(|p| p.up);
        let sum: f64 = (0..self.weights.len())
            .filter(|&i| up(i))
            .map(|i| f64::from(self.weights[i]))
            .sum();
        (0..self.paths.len())
            .map(|i| match self.weights.get(i) {
                Some(&w) if up(i) && sum > 0.0 => f64::from(w) / sum,
                _ => 0.0,
            })
            .collect()
    }

    /// Each path slot's delay sample from the latest path report (ms;
    /// `None` for a slot it dated nothing on).
    pub fn last_delays(&self) -> Vec<Option<f64>> {
        self.estimators
            .iter()
            .take(self.paths.len())
            .map(PathEstimator::last_delay_ms)
            .collect()
    }

    /// The paths up as the delivery formulas take them: measured loss and
    /// burstiness where the reports say enough, else the given loss taken
    /// as independent.
    fn path_losses(&self) -> Vec<PathLoss> {
        self.paths
            .iter()
            .zip(&self.estimators)
            .zip(&self.weights)
            .filter(|((p, _), _)| p.up)
            .map(|((p, e), &weight)| match e.estimate() {
                Some(m) => PathLoss {
                    weight,
                    loss: m.random_loss,
                    burst: m.burst,
                },
                None => PathLoss {
                    weight,
                    ..PathLoss::independent(p.loss)
                },
            })
            .collect()
    }

    /// The adaptive mode's choice: interleaved only with groups the
    /// session fills within the flush timer at its measured rate.
    fn adaptive_choice(&self, target: f64) -> Mode {
        let max_data = match self.data_rate.per_s {
            Some(r) => (r * self.config.flush_after.as_secs_f64())
                .floor()
                .min(255.0) as u8,
            None => super::mode::MAX_SHARDS,
        };
        adaptive::sent_as(adaptive::choose_within(
            target,
            &self.path_losses(),
            max_data,
        ))
    }

    fn reconsider(&mut self, now: Instant, out: &mut Vec<Outgoing>) {
        if let Mode::Adaptive { target } = self.mode {
            let choice = self.adaptive_choice(target);
            self.activate(now, choice, out);
        }
    }

    /// Takes an egress's path report: per path, packets received since
    /// the session began (wrapping) and the send order of the latest
    /// (`estimate.rs` turns them into loss, burstiness and rate).
    pub fn on_path_report(
        &mut self,
        now: Instant,
        counts: &[braid_wire::PathCount],
        out: &mut Vec<Outgoing>,
    ) {
        self.counters.path_reports += 1;
        let (ended, now_lent) = self.encoded_elsewhere;
        self.data_rate
            .update(now, self.counters.data_packets + ended + now_lent);
        for c in counts {
            let p = c.path as usize;
            if p < MAX_PATHS {
                self.counters.lost_per_path[p] +=
                    self.estimators[p].on_report(now, c.received, c.latest, c.age_ms);
            }
        }
        let reported: Vec<(usize, PathEstimate)> = counts
            .iter()
            .map(|c| c.path as usize)
            .filter(|&p| p < MAX_PATHS)
            .filter_map(|p| Some((p, self.estimators[p].estimate()?)))
            .collect();
        capacity::on_report(&mut self.capacities, &reported);
        self.reweigh();
        self.reconsider(now, out);
    }

    fn activate(&mut self, now: Instant, mode: Mode, out: &mut Vec<Outgoing>) {
        if mode != self.active {
            self.close_block(now, out);
            // From one sliding code to another the window carries on
            // (only the rate or span changes); else its tail is covered
            // first.
            let both_sliding = matches!(
                (self.active, mode),
                (Mode::Sliding { .. }, Mode::Sliding { .. })
            );
            if !both_sliding {
                self.flush_sliding(now, out);
                self.sliding = SlidingTx::default();
            }
            self.active = mode;
            self.counters.mode_changes += 1;
        }
    }

    fn up(&self) -> impl Iterator<Item = usize> + '_ {
        self.paths
            .iter()
            .enumerate()
            .filter(|(_, p)| p.up)
            .map(|(i, _)| i)
    }

    fn header(&self, meta: PacketMeta, path: usize, seq: u32, group: Group) -> DataHeader {
        let mut flags = DataFlags::empty();
        if meta.urgent {
            flags.insert(DataFlags::URGENT);
        }
        if meta.hints.congestion {
            flags.insert(DataFlags::CONGESTION);
        }
        if group.is_repair() {
            flags.insert(DataFlags::PARITY);
        }
        DataHeader {
            flags,
            mode: self.active.wire(),
            path: path as u8,
            route_ptr: 0,
            ingress: self.ingress,
            egress: self.egress,
            seq,
            group,
            hop_limit: self.config.hop_limit,
            class: self.class,
            epoch: self.epoch,
        }
    }

    fn emit(
        &mut self,
        now: Instant,
        out: &mut Vec<Outgoing>,
        path: usize,
        header: DataHeader,
        payload: Payload,
    ) {
        self.counters.sent_per_path[path] += 1;
        if self.config.late_binding {
            self.estimators[path].on_queued(now, header.send_order());
        } else {
            self.estimators[path].on_send(now, header.send_order());
        }
        if matches!(payload, Payload::Repair(_)) {
            self.counters.repair_packets += 1;
        } else {
            self.counters.copies += 1;
        }
        out.push(Outgoing {
            path: path as u8,
            free: false,
            after: Duration::ZERO,
            header,
            payload,
        });
    }

    /// With late binding: the packet with `header` left for its path's
    /// first hop at `now` (`from_here`: its path delay counts from now,
    /// not from its encoding, as a paced node's does).
    /// It left on path slot `path`: a free packet ([`Outgoing::free`])
    /// may leave on another than it was encoded for, and its wait and
    /// count move there.
    pub fn on_transmit(&mut self, now: Instant, header: &DataHeader, path: usize, from_here: bool) {
        let order = header.send_order();
        let planned = header.path as usize;
        if planned != path && planned < MAX_PATHS && path < MAX_PATHS {
            let queued = self.estimators[planned].take_queued(order);
            self.estimators[path].on_queued(queued.unwrap_or(now), order);
            self.counters.sent_per_path[planned] =
                self.counters.sent_per_path[planned].saturating_sub(1);
            self.counters.sent_per_path[path] += 1;
        }
        if let Some(e) = self.estimators.get_mut(path) {
            e.on_transmit(now, order, from_here);
        }
    }

    /// With late binding: the packet with `header`, held for delay
    /// equalisation, went above the binding point at `now`.
    pub fn on_released(&mut self, now: Instant, header: &DataHeader) {
        if let Some(e) = self.estimators.get_mut(header.path as usize) {
            e.on_released(now, header.send_order());
        }
    }

    /// With late binding: the packet with `header` was dropped above the
    /// binding point (it never left).
    pub fn on_dropped(&mut self, header: &DataHeader) {
        if let Some(e) = self.estimators.get_mut(header.path as usize) {
            e.on_dropped(header.send_order());
        }
    }

    /// Path slot `i`'s share of the split (at least 1).
    fn weight(&self, i: usize) -> u32 {
        self.weights.get(i).copied().unwrap_or(1).max(1)
    }

    /// [`Self::stripe_pick`] over the paths of `up` not `backlogged`
    /// (all of `up` if every one is): a path whose queue above the
    /// binding point is long while another's is not is full now, and the
    /// others take its turns until it drains (the split itself learns it
    /// only from the next reports).
    fn pick_open(&mut self, up: &[usize], backlogged: u16) -> usize {
        let mut open = [0usize; MAX_PATHS];
        let mut k = 0;
        for &i in up.iter().filter(|&&i| backlogged & (1 << i) == 0) {
            open[k] = i;
            k += 1;
        }
        if k == 0 {
            self.stripe_pick(up)
        } else {
            self.stripe_pick(&open[..k])
        }
    }

    /// Smooth weighted round robin over `among` (deterministic).
    fn stripe_pick(&mut self, among: &[usize]) -> usize {
        let total: i64 = among.iter().map(|&i| self.weight(i) as i64).sum();
        let mut best = among[0];
        for &i in among {
            self.wrr[i] += self.weight(i) as i64;
            if self.wrr[i] > self.wrr[best] {
                best = i;
            }
        }
        self.wrr[best] -= total;
        best
    }

    /// Encodes one data packet; pushes what to send onto `out` (payload
    /// `Input` means the packet itself).
    pub fn encode(
        &mut self,
        now: Instant,
        packet: &[u8],
        meta: PacketMeta,
        out: &mut Vec<Outgoing>,
    ) {
        self.last_active = now;
        if self.lent_and_exhausted() {
            self.counters.lent_out += 1;
            return;
        }
        // The paths up, on the stack (no allocation per packet).
        let mut up_buf = [0usize; MAX_PATHS];
        let mut n = 0;
        for (slot, i) in up_buf.iter_mut().zip(self.up()) {
            *slot = i;
            n += 1;
        }
        let up = &up_buf[..n];
        if up.is_empty() && self.active != Mode::Tree {
            self.counters.no_path += 1;
            return;
        }
        let seq = self.seq;
        self.counters.data_packets += 1;
        let first_out = out.len();
        match self.active {
            Mode::Single | Mode::Adaptive { .. } => {
                let h = self.header(meta, up[0], seq, Group::NONE);
                self.emit(now, out, up[0], h, Payload::Input);
            }
            Mode::Tree => {
                let h = self.header(meta, 0, seq, Group::NONE);
                self.emit(now, out, 0, h, Payload::Input);
            }
            Mode::Stripe { pin_flows } => self.emit_striped(now, meta, up, pin_flows, out),
            Mode::Sliding { n, m, span } => {
                self.emit_striped(now, meta, up, false, out);
                let due = self
                    .sliding
                    .on_data(now, seq, packet, meta.urgent, (n, m, span));
                for _ in 0..due {
                    self.send_sliding_repair(now, up, meta.hints.backlogged, out);
                }
            }
            Mode::Mirror(k) => {
                for &path in up.iter().take(k as usize) {
                    let h = self.header(meta, path, seq, Group::NONE);
                    self.emit(now, out, path, h, Payload::Input);
                }
            }
            Mode::Parity(_) | Mode::ParityRotating(_) | Mode::Erasure { .. } => {
                self.encode_grouped(now, packet, meta, up, out);
            }
        }
        if meta.urgent {
            self.copy_urgent(now, up, first_out, out);
        }
        self.seq = seq.wrapping_add(1);
    }

    /// Sends the data packet being encoded striped (stripe, and the
    /// sliding code's data): on [`Self::stripe_path`]'s path.
    fn emit_striped(
        &mut self,
        now: Instant,
        meta: PacketMeta,
        up: &[usize],
        pin_flows: bool,
        out: &mut Vec<Outgoing>,
    ) {
        let (path, free) = self.stripe_path(meta, up, pin_flows);
        let h = self.header(meta, path, self.seq, Group::NONE);
        self.emit(now, out, path, h, Payload::Input);
        if let Some(o) = out.last_mut() {
            o.free = free;
        }
    }

    /// The path a striped packet takes, and whether late binding may move
    /// it (a free packet): pinned by its flow's hash; an urgent one on the
    /// path where it arrives first; the lead rule's; else the split's turn
    /// among the paths not backlogged.
    fn stripe_path(&mut self, meta: PacketMeta, up: &[usize], pin_flows: bool) -> (usize, bool) {
        if pin_flows {
            // The hash's top half as a point along the weights: a small
            // change of the split moves only the flows near a boundary
            // to another path.
            let total: u64 = up.iter().map(|&i| self.weight(i) as u64).sum();
            let mut point = ((meta.flow_hash >> 32) * total) >> 32;
            let path = *up
                .iter()
                .find(|&&i| {
                    let w = self.weight(i) as u64;
                    let hit = point < w;
                    point = point.saturating_sub(w);
                    hit
                })
                .expect("point < total");
            return (path, false);
        }
        if let Some(first) = meta
            .urgent
            .then(|| urgent::earliest(up.iter().map(|&i| (i, self.arrival_ms(i)))))
            .flatten()
        {
            return (first, false);
        }
        if let Some(lead) = lead_path(meta.hints, up) {
            return (lead, false);
        }
        (self.pick_open(up, meta.hints.backlogged), true)
    }

    /// The sliding code's next repair, on the split's next path not
    /// backlogged.
    fn send_sliding_repair(
        &mut self,
        now: Instant,
        up: &[usize],
        backlogged: u16,
        out: &mut Vec<Outgoing>,
    ) {
        if let Some(r) = self.sliding.repair(now) {
            self.send_repair(now, up, backlogged, r, out);
        }
    }

    /// Sends one repair packet of the sliding code on the split's next
    /// path not backlogged.
    fn send_repair(
        &mut self,
        now: Instant,
        up: &[usize],
        backlogged: u16,
        r: sliding_tx::Repair,
        out: &mut Vec<Outgoing>,
    ) {
        let path = self.pick_open(up, backlogged);
        let meta = PacketMeta {
            urgent: r.urgent,
            ..PacketMeta::default()
        };
        let h = self.header(meta, path, r.end, sliding::repair_group(r.j));
        self.emit(now, out, path, h, Payload::Repair(r.payload));
    }

    /// An egress asked for `count` more repair packets over data packets
    /// `first..=end` of this session's sliding-window code: sent now, each
    /// on the split's next path not backlogged, urgent (they rebuild what
    /// the egress's re-order buffer waits for). Returns how many went.
    pub fn answer_repair(
        &mut self,
        now: Instant,
        (first, end): (u32, u32),
        count: u8,
        out: &mut Vec<Outgoing>,
    ) -> usize {
        let up: Vec<usize> = self.up().collect();
        let repairs = match self.active {
            Mode::Sliding { .. } if !up.is_empty() => {
                self.sliding.requested(now, first, end, count)
            }
            _ => Vec::new(),
        };
        if repairs.is_empty() {
            self.counters.requests_unanswered += 1;
        }
        let sent = repairs.len();
        for r in repairs {
            self.counters.repair_on_request += 1;
            self.send_repair(now, &up, 0, r, out);
        }
        sent
    }

    /// The sliding code's tail: a full round of repair when data went out
    /// since the last repair.
    fn flush_sliding(&mut self, now: Instant, out: &mut Vec<Outgoing>) {
        let Mode::Sliding { n, m, .. } = self.active else {
            return;
        };
        let up: Vec<usize> = self.up().collect();
        if up.is_empty() {
            return;
        }
        let round = self.sliding.flush((n, m));
        if round > 0 {
            self.counters.groups_flushed += 1;
        }
        for _ in 0..round {
            self.send_sliding_repair(now, &up, 0, out);
        }
    }

    /// Sends the urgent packet just encoded (its copies are `out[first..]`)
    /// again where `urgent.rs` says, each copy with the same header
    /// (group shape included) but its own path slot.
    fn copy_urgent(&mut self, now: Instant, up: &[usize], first: usize, out: &mut Vec<Outgoing>) {
        if self.config.urgent_copies <= 1 || matches!(self.mode, Mode::Single | Mode::Tree) {
            return;
        }
        let Some(original) = out[first..]
            .iter()
            .find(|o| matches!(o.payload, Payload::Input))
            .map(|o| o.header)
        else {
            return;
        };
        let mut copies = [0u32; MAX_PATHS];
        for o in &out[first..] {
            if matches!(o.payload, Payload::Input) {
                if let Some(k) = up.iter().position(|&s| s == o.path as usize) {
                    copies[k] += 1;
                }
            }
        }
        let mut paths = [self.copy_path(0); MAX_PATHS];
        for (k, &slot) in up.iter().enumerate() {
            paths[k] = self.copy_path(slot);
        }
        let plan = urgent::plan(
            &paths[..up.len()],
            &copies,
            self.config.urgent_residual,
            u32::from(self.config.urgent_copies),
        );
        let granted = self.copy_budget.take(now, plan.n);
        self.counters.urgent_copies_refused += (plan.n - granted) as u64;
        for copy in &plan.added[..granted] {
            let slot = paths[copy.path as usize].slot as usize;
            let header = DataHeader {
                path: slot as u8,
                ..original
            };
            self.counters.urgent_copies += 1;
            self.emit(now, out, slot, header, Payload::Input);
            if let Some(o) = out.last_mut() {
                o.after = copy.after;
            }
        }
    }

    /// How long a packet sent now takes on path slot `slot`, by its
    /// reports: its shortest delay plus the queue on it now.
    fn arrival_ms(&self, slot: usize) -> Option<f64> {
        let e = self.estimators.get(slot)?.estimate()?;
        Some(e.min_delay_ms? + e.queue_ms.unwrap_or(0.0))
    }

    /// Path slot `slot` as urgent copies plan for it: every loss the
    /// reports measured (a full queue's drops too: a call loses to them
    /// as much), with the burstiness fitted, and the packets it carries a
    /// second; until they measure it, the loss given with the path but at
    /// least [`urgent::UNMEASURED_LOSS`], independent.
    fn copy_path(&self, slot: usize) -> CopyPath {
        let (loss, per_s) = match self.estimators.get(slot).and_then(PathEstimator::estimate) {
            Some(m) => (
                PathLoss {
                    weight: 1,
                    loss: m.loss,
                    burst: m.burst,
                },
                m.carried_per_s,
            ),
            None => (
                PathLoss::independent(
                    self.paths
                        .get(slot)
                        .map_or(0.0, |p| p.loss)
                        .max(urgent::UNMEASURED_LOSS),
                ),
                0.0,
            ),
        };
        CopyPath {
            slot: slot as u8,
            loss,
            per_s,
        }
    }

    fn encode_grouped(
        &mut self,
        now: Instant,
        packet: &[u8],
        meta: PacketMeta,
        up: &[usize],
        out: &mut Vec<Outgoing>,
    ) {
        // A block holds consecutive numbers only: if the numbering jumped
        // (a session taken back from the kernel), the block closes first.
        if self
            .block
            .as_ref()
            .is_some_and(|b| self.seq != b.base.wrapping_add(b.filled()))
        {
            self.close_block(now, out);
        }
        if self.block.is_none() {
            self.open_block(now, up);
        }
        let b = self.block.as_ref().expect("opened above");
        let depth = u32::from(b.depth);
        let j = (self.seq.wrapping_sub(b.base) % depth) as usize;
        let (index, data, repair) = (b.counts[j], b.data, b.repair);
        // A data shard planned for a backlogged path takes another: under
        // congestion, where it arrives matters more than the plan's spread.
        let full = |i: usize| meta.hints.backlogged & (1 << i) != 0;
        // The lead rule's path comes first (a burst's first data shard).
        let planned = b.planned_slot(j, index as usize, &self.paths);
        let path = match (lead_path(meta.hints, up), planned) {
            (Some(lead), _) => lead,
            (None, Some(slot)) if !full(slot) || up.iter().all(|&i| full(i)) => slot,
            _ => self.pick_open(up, meta.hints.backlogged),
        };
        let group = Group {
            data,
            repair,
            index,
            depth: depth as u8,
        };
        let h = self.header(meta, path, self.seq, group);
        self.emit(now, out, path, h, Payload::Input);
        let buffer = &mut self.buffers[j];
        match self.active {
            Mode::Erasure { .. } => buffer.held.push(packet.to_vec()),
            _ => {
                // A payload too long for the 16-bit length prefix cannot be
                // protected; it still went out above.
                let _ = buffer.xor.add(packet);
            }
        }
        let b = self.block.as_mut().expect("open");
        b.counts[j] += 1;
        b.urgent[j] |= meta.urgent;
        if b.filled() == u32::from(b.data) * depth {
            self.close_block(now, out);
        }
    }

    /// Opens a block of `depth` groups starting at the next number.
    fn open_block(&mut self, now: Instant, up: &[usize]) {
        let (data, repair) = self.active.group_shape();
        let depth = self.active.depth().clamp(1, MAX_DEPTH);
        let weights: Vec<u32> = up.iter().map(|&i| self.weight(i)).collect();
        let mut slots = [0u8; MAX_PATHS];
        for (s, &i) in slots.iter_mut().zip(up) {
            *s = i as u8;
        }
        let first = placement::plan(&self.active, &weights, self.groups);
        let mut plans = [first; MAX_DEPTH as usize];
        for (j, plan) in plans.iter_mut().enumerate().take(depth as usize).skip(1) {
            *plan = placement::plan(&self.active, &weights, self.groups + j as u64);
        }
        self.groups += u64::from(depth);
        if self.buffers.len() < depth as usize {
            self.buffers
                .resize_with(depth as usize, GroupBuffer::default);
        }
        for b in &mut self.buffers {
            b.held.clear();
            b.xor.reset();
        }
        self.block = Some(OpenBlock {
            base: self.seq,
            depth,
            data,
            repair,
            counts: [0; MAX_DEPTH as usize],
            urgent: [false; MAX_DEPTH as usize],
            plans,
            up: slots,
            opened_at: now,
        });
    }

    /// Sends the open block's repair packets and closes it. Repair goes
    /// in rounds (repair 0 of every group, then repair 1, ...), so that
    /// on each path a group's shards stay `depth` packets apart.
    fn close_block(&mut self, now: Instant, out: &mut Vec<Outgoing>) {
        let Some(b) = self.block.take() else {
            return;
        };
        let depth = b.depth as usize;
        self.counters.groups_flushed += b.counts[..depth]
            .iter()
            .filter(|&&c| c > 0 && c < b.data)
            .count() as u64;
        let up: Vec<usize> = self.up().collect();
        if up.is_empty() || b.filled() == 0 {
            return;
        }
        // Each group's repair payloads: the full repair even for a group
        // closed early (a slow session's few packets then go out with
        // strong protection, which the paths have room for at that rate;
        // measured in the lab, TCP's tail packets need it).
        let mut repairs: Vec<Vec<Vec<u8>>> = Vec::with_capacity(depth);
        for j in 0..depth {
            let buffer = &mut self.buffers[j];
            let made = if b.counts[j] == 0 {
                Vec::new()
            } else if matches!(self.active, Mode::Erasure { .. }) {
                let refs: Vec<&[u8]> = buffer.held.iter().map(Vec::as_slice).collect();
                rs_encode(&mut self.rs, &refs, b.repair as usize).unwrap_or_default()
            } else {
                vec![buffer.xor.payload()]
            };
            buffer.held.clear();
            repairs.push(made);
        }
        for r in 0..b.repair as usize {
            for (j, made) in repairs.iter_mut().enumerate() {
                let Some(payload) = made.get_mut(r).map(core::mem::take) else {
                    continue;
                };
                // Repair r goes where the plan put shard `data + r`, or
                // (that path gone) round the paths up.
                let path = b
                    .planned_slot(j, b.data as usize + r, &self.paths)
                    .unwrap_or(up[r % up.len()]);
                let count = b.counts[j];
                let group = Group {
                    data: count,
                    repair: made.len() as u8,
                    index: count + r as u8,
                    depth: b.depth,
                };
                let base = b.base.wrapping_add(j as u32);
                let meta = PacketMeta {
                    urgent: b.urgent[j],
                    ..PacketMeta::default()
                };
                let h = self.header(meta, path, base, group);
                self.emit(now, out, path, h, Payload::Repair(payload));
            }
        }
    }

    /// When the open block must be flushed: `flush_after` per group it
    /// interleaves; for the sliding-window code, `flush_after` after the
    /// last data packet no repair has covered yet.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let block = self
            .block
            .as_ref()
            .map(|b| b.opened_at + self.config.flush_after * u32::from(b.depth));
        let sliding = self.sliding.flush_at(self.config.flush_after);
        match (block, sliding) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Flushes the open group, or the sliding window's tail, if its time
    /// has come.
    pub fn handle_timeout(&mut self, now: Instant, out: &mut Vec<Outgoing>) {
        if self
            .block
            .as_ref()
            .is_some_and(|b| b.opened_at + self.config.flush_after * u32::from(b.depth) <= now)
        {
            self.close_block(now, out);
        }
        if self
            .sliding
            .flush_at(self.config.flush_after)
            .is_some_and(|t| t <= now)
        {
            self.flush_sliding(now, out);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A session from node 1 to node 2 in `mode` over `paths` equal lossless
    /// paths (for tests here and in the egress's).
    pub(crate) fn test_session(mode: Mode, paths: usize) -> IngressSession {
        let mut ing = IngressSession::new(
            NodeId(1),
            NodeId(2),
            0,
            mode,
            IngressConfig::default(),
            0,
            7,
        );
        let path = PathState {
            up: true,
            weight: 1,
            loss: 0.0,
        };
        ing.set_paths(Instant::ZERO, &vec![path; paths], &mut Vec::new());
        ing
    }

    #[test]
    fn a_group_with_an_urgent_packet_sends_urgent_repair() {
        let erasure = Mode::Erasure {
            n: 3,
            m: 2,
            depth: 2,
        };
        let mut ing = test_session(erasure, 2);
        let mut out = Vec::new();
        // Four packets, two groups interleaved: 0 and 2, 1 and 3; only 1
        // is urgent.
        for i in 0..4 {
            let meta = PacketMeta {
                urgent: i == 1,
                ..PacketMeta::default()
            };
            ing.encode(Instant::ZERO, &[i as u8; 10], meta, &mut out);
        }
        let repairs: Vec<(u32, bool)> = out
            .iter()
            .filter(|o| o.header.group.is_repair())
            .map(|o| (o.header.seq, o.header.flags.contains(DataFlags::URGENT)))
            .collect();
        assert_eq!(repairs, [(0, false), (1, true)]);
        // The data packets' numbers follow the interleaving (the urgent
        // one's copy beside it: its paths are not measured yet).
        let mut data: Vec<(u32, u8)> = out
            .iter()
            .filter(|o| !o.header.group.is_repair())
            .map(|o| (o.header.group.base_of(o.header.seq), o.header.group.index))
            .collect();
        assert_eq!(data.len(), 5);
        data.dedup();
        assert_eq!(data, [(0, 0), (1, 0), (0, 1), (1, 1)]);
        let urgent_paths: Vec<u8> = out
            .iter()
            .filter(|o| o.header.seq == 1 && !o.header.group.is_repair())
            .map(|o| o.path)
            .collect();
        assert_eq!(urgent_paths.len(), 2);
        assert_ne!(urgent_paths[0], urgent_paths[1]);
    }

    /// A session of `mode` over two paths that lose a fifth each (as
    /// given: no reports yet), and its config.
    fn lossy_session(mode: Mode, config: IngressConfig) -> IngressSession {
        let mut ing = IngressSession::new(NodeId(1), NodeId(2), 0, mode, config, 0, 7);
        let path = PathState {
            up: true,
            weight: 1,
            loss: 0.2,
        };
        ing.set_paths(Instant::ZERO, &[path; 2], &mut Vec::new());
        ing
    }

    /// The data copies (not repair) of packet `seq` in `out`, per path.
    fn data_copies(out: &[Outgoing], seq: u32) -> [usize; 2] {
        let mut per_path = [0; 2];
        for o in out {
            if o.header.seq == seq && matches!(o.payload, Payload::Input) {
                per_path[o.path as usize] += 1;
            }
        }
        per_path
    }

    #[test]
    fn an_urgent_packet_gets_copies_on_lossy_paths_and_bulk_does_not() {
        let erasure = Mode::Erasure {
            n: 4,
            m: 2,
            depth: 1,
        };
        for mode in [erasure, Mode::Stripe { pin_flows: false }, Mode::Mirror(2)] {
            let mut ing = lossy_session(mode, IngressConfig::default());
            let mut out = Vec::new();
            let urgent = PacketMeta {
                urgent: true,
                ..PacketMeta::default()
            };
            ing.encode(Instant::ZERO, &[1; 10], PacketMeta::default(), &mut out);
            ing.encode(Instant::ZERO, &[2; 10], urgent, &mut out);
            // Bulk: the mode's own copies only.
            let own = if mode == Mode::Mirror(2) { 2 } else { 1 };
            let bulk = data_copies(&out, 0);
            assert_eq!(bulk.iter().sum::<usize>(), own, "{mode}");
            // Urgent: five in all (0.2^5 <= 0.001 < 0.2^4), over both
            // paths, every one the same packet of the same group.
            let copies = data_copies(&out, 1);
            assert_eq!(copies.iter().sum::<usize>(), 5, "{mode}: {copies:?}");
            assert!(copies.iter().all(|&c| c >= 2), "{mode}: {copies:?}");
            let headers: Vec<_> = out.iter().filter(|o| o.header.seq == 1).collect();
            assert!(headers
                .iter()
                .all(|o| o.header.group == headers[0].header.group
                    && o.header.flags.contains(DataFlags::URGENT)));
            let c = ing.counters();
            assert_eq!(c.urgent_copies, 5 - own as u64);
            assert_eq!(c.sent_per_path.iter().sum::<u64>() as usize, out.len());
        }
    }

    #[test]
    fn urgent_copies_stop_at_the_bound_per_second_and_not_for_single_path() {
        let config = IngressConfig {
            urgent_copies_per_s: 8,
            ..IngressConfig::default()
        };
        let mut ing = lossy_session(Mode::Stripe { pin_flows: false }, config);
        let urgent = PacketMeta {
            urgent: true,
            ..PacketMeta::default()
        };
        let mut out = Vec::new();
        for _ in 0..3 {
            ing.encode(Instant::ZERO, &[2; 10], urgent, &mut out);
        }
        // 4 wanted per packet, 8 granted in all.
        assert_eq!(ing.counters().urgent_copies, 8);
        assert_eq!(ing.counters().urgent_copies_refused, 4);
        assert_eq!(out.len(), 3 + 8);
        let mut single = lossy_session(Mode::Single, IngressConfig::default());
        out.clear();
        single.encode(Instant::ZERO, &[2; 10], urgent, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn stripe_leaves_out_a_backlogged_path_unless_all_are() {
        let mut ing = test_session(Mode::Stripe { pin_flows: false }, 3);
        let mut out = Vec::new();
        let mut on_paths = |backlogged: u16, ing: &mut IngressSession| {
            out.clear();
            for i in 0..30u8 {
                let meta = PacketMeta {
                    hints: SendHints {
                        backlogged,
                        ..SendHints::default()
                    },
                    ..PacketMeta::default()
                };
                ing.encode(Instant::ZERO, &[i; 10], meta, &mut out);
            }
            let mut per_path = [0; 3];
            for o in &out {
                per_path[o.path as usize] += 1;
            }
            per_path
        };
        assert_eq!(on_paths(0, &mut ing), [10, 10, 10]);
        assert_eq!(on_paths(0b010, &mut ing), [15, 0, 15]);
        assert_eq!(
            on_paths(0b111, &mut ing),
            [10, 10, 10],
            "all full: the split"
        );
    }

    #[test]
    fn a_free_striped_packet_is_counted_on_the_path_it_left_on() {
        let mut ing = test_session(Mode::Stripe { pin_flows: false }, 2);
        ing.config.late_binding = true;
        let mut out = Vec::new();
        let lead = PacketMeta {
            hints: SendHints {
                lead: Some(1),
                ..SendHints::default()
            },
            ..PacketMeta::default()
        };
        ing.encode(Instant::ZERO, &[1; 10], lead, &mut out);
        ing.encode(Instant::ZERO, &[2; 10], PacketMeta::default(), &mut out);
        let urgent = PacketMeta {
            urgent: true,
            ..PacketMeta::default()
        };
        ing.encode(Instant::ZERO, &[3; 10], urgent, &mut out);
        assert_eq!(out[0].path, 1);
        assert!(!out[0].free, "the lead packet keeps the slowest path");
        assert!(out[1].free);
        // The node tells an urgent one apart; stripe plans it free too.
        assert!(out[2].free);
        let planned = out[1].path as usize;
        let other = 1 - planned;
        let before = ing.counters().sent_per_path;
        let waiting = ing.estimators[planned].waiting();
        ing.on_transmit(Instant::from_millis(5), &out[1].header, other, false);
        let after = ing.counters().sent_per_path;
        assert_eq!(after[planned] + 1, before[planned]);
        assert_eq!(after[other], before[other] + 1);
        assert_eq!(ing.estimators[planned].waiting() + 1, waiting);
        assert_eq!(ing.estimators[other].sent(), 1, "left there");
        assert_eq!(ing.estimators[planned].sent(), 0);
    }

    #[test]
    fn the_lead_path_takes_the_packet_unless_it_is_backlogged_or_down() {
        let hints = |lead: Option<u8>, backlogged: u16| PacketMeta {
            hints: SendHints {
                backlogged,
                lead,
                ..SendHints::default()
            },
            ..PacketMeta::default()
        };
        let erasure = Mode::Erasure {
            n: 3,
            m: 2,
            depth: 1,
        };
        for mode in [Mode::Stripe { pin_flows: false }, erasure] {
            let mut ing = test_session(mode, 3);
            let mut out = Vec::new();
            for i in 0..6u8 {
                ing.encode(Instant::ZERO, &[i; 10], hints(Some(2), 0), &mut out);
            }
            let data: Vec<u8> = (out.iter())
                .filter(|o| o.payload == Payload::Input)
                .map(|o| o.path)
                .collect();
            assert_eq!(data, [2; 6], "{mode:?}: every data packet on the lead");
            out.clear();
            for i in 0..6u8 {
                ing.encode(Instant::ZERO, &[i; 10], hints(Some(2), 0b100), &mut out);
                ing.encode(Instant::ZERO, &[i; 10], hints(Some(7), 0), &mut out);
            }
            let on_lead = (out.iter())
                .filter(|o| o.payload == Payload::Input && o.path == 2)
                .count();
            assert!(
                on_lead <= 4,
                "{mode:?}: backlogged or no such path: the split ({on_lead} of 12)"
            );
        }
    }

    #[test]
    fn a_jump_in_numbering_closes_the_open_block() {
        let erasure = Mode::Erasure {
            n: 6,
            m: 4,
            depth: 2,
        };
        let mut ing = test_session(erasure, 2);
        let mut out = Vec::new();
        ing.encode(Instant::ZERO, &[1; 10], PacketMeta::default(), &mut out);
        // Lent and taken back 100 numbers on: the block of 8 is half open.
        let (_, first) = ing.lend(0).unwrap();
        ing.take_back(first.wrapping_add(100), &[]);
        for i in 0..5 {
            ing.encode(Instant::ZERO, &[i; 10], PacketMeta::default(), &mut out);
        }
        ing.handle_timeout(Instant::ZERO + Duration::from_secs(1), &mut out);
        // Every data packet's group (its number less index x depth) is one
        // that repair was sent for: no group straddles the jump.
        let repaired: Vec<u32> = out
            .iter()
            .filter(|o| o.header.group.is_repair())
            .map(|o| o.header.seq)
            .collect();
        for o in out.iter().filter(|o| !o.header.group.is_repair()) {
            let base = o.header.group.base_of(o.header.seq);
            assert!(repaired.contains(&base), "{:?} has no repair", o.header);
        }
    }
}
