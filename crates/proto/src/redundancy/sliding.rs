//! The sliding-window code (`sliding:N,M[,SPAN]`): every repair packet is
//! a random linear combination over GF(256) of the last `span` data
//! packets, and N-M of them follow every M data packets. A burst of
//! losses is rebuilt as soon as as many repair packets as it took have
//! arrived after it: no block has to fill first, so the repair of a
//! burst comes within a few packets, not a block of interleaved groups
//! later (the idea of RFC 8681's sliding-window codes and of Tetrys; the
//! coding here is ours, the field arithmetic the `reed-solomon-erasure`
//! crate's).
//!
//! This file owns the coding only: the encoder's window of recent data
//! packets ([`SlidingEncoder`]) and the decoder's equations
//! ([`SlidingDecoder`]). When repair is sent and on which path is
//! `ingress.rs`'s; delivery is `egress.rs`'s.
//!
//! Inside the code every packet is `[length:16][payload][zero padding]`
//! as in `coding.rs`, so a rebuilt packet comes back with its length. A
//! repair packet's payload is `[span:8][combination]`; the combination is
//! as long as the longest packet it covers plus two bytes. Its data
//! header carries the number of the last data packet it covers as its
//! sequence number and `repair j of j+1` as its group (j counts the
//! repair packets sent after that data packet), so the coefficients
//! follow from the header: [`coefficient`].
//!
//! The decoder keeps the equations it cannot solve yet in reduced row
//! echelon form: every unknown packet is the pivot of at most one
//! equation and appears in no other, so an equation left with one
//! unknown is that packet. Bounded: [`RING`] recent packets, at most
//! [`MAX_ROWS`] equations, each over at most [`MAX_SPAN`] packets.
//!
//! What the decoder still misses after the repair sent with the data, it
//! asks for (`sliding_ask.rs` says when); the encoder keeps its last
//! [`KEPT`] packets for [`KEEP_FOR`] to answer ([`SlidingEncoder::repair_over`]).

use std::collections::VecDeque;
use std::time::Duration;

use reed_solomon_erasure::galois_8::{div, mul_slice_xor};

use super::coding::{CodingError, LEN_PREFIX};
use super::sliding_ask::{AskCounters, Asker, Want};
use crate::time::Instant;

/// Most data packets one repair packet covers.
pub const MAX_SPAN: u8 = 64;
/// The span when the mode's text gives none.
pub const DEFAULT_SPAN: u8 = 32;
/// Data packets the decoder remembers (known or wanted), by number.
pub const RING: u32 = 4 * MAX_SPAN as u32;
/// Equations the decoder keeps unsolved; the oldest goes first.
pub const MAX_ROWS: usize = 2 * MAX_SPAN as usize;
/// A packet this far behind the newest number is given up: equations
/// over it are dropped (it stays below [`RING`], so that a packet it
/// names is never mistaken for the newer one in its slot).
const HORIZON: u32 = RING - MAX_SPAN as u32;
/// Most repair packets after one data packet (their numbers j, 0-14,
/// are the header's shard index).
pub const MAX_REPAIRS_AFTER: u8 = braid_wire::data::MAX_GROUP_SHARDS;

/// The group field of repair `j` after a data packet: no data, the
/// index j (`DataHeader::send_order` then puts it right after that data
/// packet).
pub fn repair_group(j: u8) -> braid_wire::Group {
    braid_wire::Group {
        data: 0,
        repair: braid_wire::data::MAX_GROUP_SHARDS,
        index: j,
        depth: 1,
    }
}

/// Bytes a repair payload carries before its combination.
pub const REPAIR_PREFIX: usize = 1;

/// The coefficient of data packet `seq` in repair `j` sent after data
/// packet `end` (never zero). Both ends compute it from the header.
pub fn coefficient(end: u32, j: u8, seq: u32) -> u8 {
    let mut x = (u64::from(end) << 32) ^ (u64::from(j) << 24) ^ u64::from(seq) ^ 0x9e37_79b9;
    // splitmix64's finaliser: every input bit reaches every output bit.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    1 + (x % 255) as u8
}

/// Whether packet `seq` is neither known nor an equation's pivot (sorted
/// `pivots`): only a new equation over it can solve it.
fn is_free(known: &[Option<(u32, Vec<u8>)>], pivots: &[u32], seq: u32) -> bool {
    let is_known = matches!(&known[(seq % RING) as usize], Some((s, _)) if *s == seq);
    !is_known && pivots.binary_search(&seq).is_err()
}

fn add_scaled(coef: u8, src: &[u8], acc: &mut Vec<u8>) {
    if acc.len() < src.len() {
        acc.resize(src.len(), 0);
    }
    mul_slice_xor(coef, src, &mut acc[..src.len()]);
}

/// `[length:16][payload]`: a packet as the code sees it (padding is
/// implicit: zeros).
fn prefixed(payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(LEN_PREFIX + payload.len());
    v.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// A solved packet's payload, from `[length:16][payload][padding]`.
fn unshard(shard: &[u8]) -> Option<Vec<u8>> {
    let (len, body) = shard.split_first_chunk::<LEN_PREFIX>()?;
    let len = u16::from_be_bytes(*len) as usize;
    body.get(..len).map(<[u8]>::to_vec)
}

/// A data packet leaves the encoder's window this long after it was
/// sent, however few came after it. A packet the egress could not
/// rebuild by then is one TCP resends under a new number; kept in the
/// window, it would stay an unknown in every later equation, and each
/// one left so takes an equation that a new loss needs. Found in the
/// simulator: with no limit, TCP at 25% loss per path sent a few packets
/// per retransmission timeout, the window never slid past the packets
/// lost, and the transfer collapsed (0.01 Mbit/s; erasure:4,2 0.40).
pub const MAX_AGE: Duration = Duration::from_millis(100);

/// Data packets the encoder keeps to answer repair requests: as many as
/// the decoder tracks missing ones.
pub const KEPT: usize = super::sliding_ask::MAX_MISSING;
/// How long the encoder keeps a data packet to answer repair requests:
/// longer than [`MAX_AGE`] (a request takes a round trip and the wait
/// before asking), not so long that TCP has resent it long ago.
pub const KEEP_FOR: Duration = Duration::from_millis(300);

const _: () = assert!(MAX_SPAN as u32 == braid_wire::MAX_REQUEST_SPAN);

/// The encoder's side: the last [`KEPT`] data packets sent within
/// [`KEEP_FOR`]; its repair covers the last `span` of them sent within
/// [`MAX_AGE`].
#[derive(Debug, Default)]
pub struct SlidingEncoder {
    /// `(number, when sent, [length][payload])`, oldest first,
    /// consecutive numbers.
    window: VecDeque<(u32, Instant, Vec<u8>)>,
    /// The span of the latest packet pushed (its mode's).
    span: u8,
}

impl SlidingEncoder {
    /// Forgets every packet (the numbering jumped, or the mode changed).
    pub fn reset(&mut self) {
        self.window.clear();
    }

    /// Data packet `seq` was sent at `now` under a mode of span `span`
    /// (what the next repair covers). Fails, keeping nothing, for a
    /// payload over 65535 bytes (it still goes out, unprotected).
    pub fn push(
        &mut self,
        now: Instant,
        seq: u32,
        payload: &[u8],
        span: u8,
    ) -> Result<(), CodingError> {
        if payload.len() > u16::MAX as usize {
            return Err(CodingError::TooLong(payload.len()));
        }
        if self
            .window
            .back()
            .is_some_and(|(last, _, _)| seq != last.wrapping_add(1))
        {
            self.window.clear();
        }
        self.window.push_back((seq, now, prefixed(payload)));
        self.span = span.clamp(1, MAX_SPAN);
        while self.window.len() > KEPT
            || self
                .window
                .front()
                .is_some_and(|(_, sent, _)| now.since(*sent) > KEEP_FOR)
        {
            self.window.pop_front();
        }
        Ok(())
    }

    /// The number of the last data packet in the window.
    pub fn last(&self) -> Option<u32> {
        self.window.back().map(|(s, _, _)| *s)
    }

    /// Repair `j` after the last data packet, made at `now`, over the
    /// last `span` packets sent within [`MAX_AGE`]: its payload (`None`
    /// when there is none).
    pub fn repair(&mut self, now: Instant, j: u8) -> Option<Vec<u8>> {
        let fresh = self
            .window
            .iter()
            .rev()
            .take(usize::from(self.span))
            .take_while(|(_, sent, _)| now.since(*sent) <= MAX_AGE)
            .count();
        let (end, _, _) = self.window.back()?;
        let end = *end;
        let first = end.wrapping_sub(fresh.checked_sub(1)? as u32);
        self.repair_over(first, end, j)
    }

    /// Repair `j` over data packets `first..=end` (at most [`MAX_SPAN`]),
    /// wherever they are in the window: `None` when one of them is no
    /// longer kept. Answers a repair request.
    pub fn repair_over(&self, first: u32, end: u32, j: u8) -> Option<Vec<u8>> {
        let span = end.wrapping_sub(first).wrapping_add(1);
        if span == 0 || span > u32::from(MAX_SPAN) {
            return None;
        }
        let (front, _, _) = self.window.front()?;
        let at = first.wrapping_sub(*front) as usize;
        if at >= self.window.len() {
            return None;
        }
        let covered = self.window.range(at..).take(span as usize);
        if covered.len() < span as usize {
            return None;
        }
        let size = covered.clone().map(|(_, _, p)| p.len()).max()?;
        let mut out = Vec::with_capacity(REPAIR_PREFIX + size);
        out.push(span as u8);
        let mut acc = vec![0u8; size];
        for (seq, _, p) in covered {
            add_scaled(coefficient(end, j, *seq), p, &mut acc);
        }
        out.extend_from_slice(&acc);
        Some(out)
    }
}

/// One equation: `sum coef(seq) * packet(seq) = value` over the unknown
/// packets `terms` (ascending by number from the pivot; the pivot's
/// coefficient is 1).
#[derive(Debug, Clone)]
struct Row {
    terms: Vec<(u32, u8)>,
    value: Vec<u8>,
}

impl Row {
    fn pivot(&self) -> u32 {
        self.terms[0].0
    }

    fn coef(&self, seq: u32) -> Option<u8> {
        self.terms.iter().find(|t| t.0 == seq).map(|t| t.1)
    }

    /// `self -= c * other` (subtraction is addition in GF(256)).
    fn eliminate(&mut self, c: u8, other: &Row) {
        for &(s, oc) in &other.terms {
            let add = reed_solomon_erasure::galois_8::mul(c, oc);
            match self.terms.iter().position(|t| t.0 == s) {
                Some(i) => {
                    self.terms[i].1 ^= add;
                    if self.terms[i].1 == 0 {
                        self.terms.remove(i);
                    }
                }
                None => self.terms.push((s, add)),
            }
        }
        add_scaled(c, &other.value, &mut self.value);
    }

    /// Orders the terms from the oldest number (wrapping, relative to
    /// `newest`) and scales the pivot's coefficient to 1.
    fn normalise(&mut self, newest: u32) {
        self.terms
            .sort_by_key(|t| core::cmp::Reverse(newest.wrapping_sub(t.0)));
        let c = self.terms[0].1;
        if c != 1 {
            for t in &mut self.terms {
                t.1 = div(t.1, c);
            }
            let mut scaled = vec![0u8; self.value.len()];
            mul_slice_xor(div(1, c), &self.value, &mut scaled);
            self.value = scaled;
        }
    }
}

/// When and how a packet came to the decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// When.
    pub now: Instant,
    /// Whether it left the ingress in its number's order: not an urgent
    /// packet, which leaves ahead of bulk numbered before it (those are
    /// not missing because it came first).
    pub in_order: bool,
}

/// What the decoder counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlidingCounters {
    /// Repair packets that covered nothing missing: dropped at once.
    pub useless: u64,
    /// Equations dropped: too old, or beyond [`MAX_ROWS`].
    pub rows_dropped: u64,
    /// Repair packets refused: malformed (span, size, length).
    pub malformed: u64,
}

/// The decoder's side: recent data packets and the equations that will
/// rebuild the missing ones.
#[derive(Debug)]
pub struct SlidingDecoder {
    /// By `number % RING`: the packet with that number, `[length][payload]`.
    known: Vec<Option<(u32, Vec<u8>)>>,
    /// The highest number seen (data or covered by a repair).
    newest: Option<u32>,
    rows: Vec<Row>,
    counters: SlidingCounters,
    /// The packets missing, and when to ask for them.
    asker: Asker,
    /// The highest number that came in order: every number below it not
    /// known is missing.
    marked: Option<u32>,
    /// When the next request is due, as of the last change.
    next_ask: Option<Instant>,
    /// The equations' pivots, sorted (scratch: no allocation per call).
    pivots: Vec<u32>,
}

impl Default for SlidingDecoder {
    fn default() -> Self {
        SlidingDecoder {
            known: vec![None; RING as usize],
            newest: None,
            rows: Vec::new(),
            counters: SlidingCounters::default(),
            asker: Asker::default(),
            marked: None,
            next_ask: None,
            pivots: Vec::new(),
        }
    }
}

impl SlidingDecoder {
    /// What it counted.
    pub fn counters(&self) -> SlidingCounters {
        self.counters
    }

    /// Bytes held.
    pub fn memory(&self) -> usize {
        self.known
            .iter()
            .flatten()
            .map(|(_, p)| p.capacity())
            .sum::<usize>()
            + self
                .rows
                .iter()
                .map(|r| r.value.capacity() + 8 * r.terms.capacity())
                .sum::<usize>()
            + 8 * self.known.len()
    }

    fn is_known(&self, seq: u32) -> bool {
        matches!(&self.known[(seq % RING) as usize], Some((s, _)) if *s == seq)
    }

    /// Whether `seq` is older than the packets kept.
    fn too_old(&self, seq: u32) -> bool {
        self.newest
            .is_some_and(|n| n.wrapping_sub(seq) as i32 >= HORIZON as i32)
    }

    /// What the asking counted.
    pub fn ask_counters(&self) -> AskCounters {
        self.asker.counters()
    }

    /// When [`Self::want`] next has a request.
    pub fn next_ask(&self) -> Option<Instant> {
        self.next_ask
    }

    /// Sorts the equations' pivots into the scratch list.
    fn sort_pivots(&mut self) {
        self.pivots.clear();
        self.pivots.extend(self.rows.iter().map(Row::pivot));
        self.pivots.sort_unstable();
    }

    /// Recomputes when the next request is due (after every change).
    fn refresh_ask(&mut self) {
        if self.asker.missing() == 0 {
            self.next_ask = None;
            return;
        }
        self.sort_pivots();
        let (known, pivots) = (&self.known, &self.pivots);
        self.next_ask = self.asker.next_due(|seq| is_free(known, pivots, seq));
    }

    /// Whether packets are missing (a request may come due).
    pub fn misses(&self) -> bool {
        self.asker.missing() > 0
    }

    /// The repair request due at `now`, if any (`sliding_ask.rs`): for
    /// packets not known that no equation has as its pivot.
    pub fn want(&mut self, now: Instant) -> Option<Want> {
        let newest = self.newest?;
        self.sort_pivots();
        let (known, pivots) = (&self.known, &self.pivots);
        let free = |seq: u32| is_free(known, pivots, seq);
        let rows = &self.rows;
        let extent = |first: u32, end: u32| {
            rows.iter()
                .filter(|r| r.pivot().wrapping_sub(first) <= end.wrapping_sub(first))
                .flat_map(|r| r.terms.iter().map(|t| t.0))
                .max_by_key(|s| s.wrapping_sub(first))
                .unwrap_or(end)
        };
        let want = self.asker.want(now, newest, free, extent);
        self.refresh_ask();
        want
    }

    /// Data packet `seq` came in another mode (the adaptive mode left the
    /// code for a while): nothing before it is asked for any more, and
    /// the numbers up to it are not missing.
    pub fn other_mode(&mut self, seq: u32) {
        self.asker.clear();
        self.next_ask = None;
        if self.newest.is_none_or(|n| (seq.wrapping_sub(n) as i32) > 0) {
            self.newest = Some(seq);
        }
    }

    /// Number `seq` came: the newest, and when it came in order, the
    /// numbers between the last that came in order and it that are not
    /// known went missing.
    fn advance(&mut self, at: Arrival, seq: u32) {
        if at.in_order {
            if let Some(m) = self.marked {
                let jump = seq.wrapping_sub(m);
                if (jump as i32) > 1 {
                    let from = jump.min(super::sliding_ask::MAX_MISSING as u32 + 1);
                    for back in (1..from).rev() {
                        let missing = seq.wrapping_sub(back);
                        if !self.is_known(missing) {
                            self.asker.went_missing(at.now, missing);
                        }
                    }
                }
            }
            if self.marked.is_none_or(|m| (seq.wrapping_sub(m) as i32) > 0) {
                self.marked = Some(seq);
            }
        }
        if self.newest.is_none_or(|n| (seq.wrapping_sub(n) as i32) > 0) {
            self.newest = Some(seq);
            self.asker.forget_older(seq, HORIZON);
            let before = self.rows.len();
            self.rows.retain(|r| {
                !r.terms
                    .iter()
                    .any(|t| seq.wrapping_sub(t.0) as i32 >= HORIZON as i32)
            });
            self.counters.rows_dropped += (before - self.rows.len()) as u64;
        }
    }

    /// Data packet `seq` came (`at`; or was rebuilt elsewhere); returns
    /// the packets it lets the decoder rebuild: `(number, payload)`.
    pub fn on_data(&mut self, at: Arrival, seq: u32, payload: &[u8]) -> Vec<(u32, Vec<u8>)> {
        let rebuilt = self.take_data(at, seq, payload);
        self.refresh_ask();
        rebuilt
    }

    fn take_data(&mut self, at: Arrival, seq: u32, payload: &[u8]) -> Vec<(u32, Vec<u8>)> {
        let now = at.now;
        let mut rebuilt = Vec::new();
        if payload.len() > u16::MAX as usize || self.is_known(seq) {
            return rebuilt;
        }
        self.advance(at, seq);
        if self.too_old(seq) {
            return rebuilt;
        }
        let mut solved = Vec::new();
        self.absorb(seq, prefixed(payload), &mut solved);
        self.settle(solved, &mut rebuilt);
        self.asker.came(now, seq);
        self.came(now, &rebuilt);
        rebuilt
    }

    fn came(&mut self, now: Instant, rebuilt: &[(u32, Vec<u8>)]) {
        for (seq, _) in rebuilt {
            self.asker.came(now, *seq);
        }
    }

    /// Stores a packet now known and takes it out of every equation; an
    /// equation that loses its pivot goes in again. What that solves is
    /// queued on `solved`.
    fn absorb(&mut self, seq: u32, shard: Vec<u8>, solved: &mut Vec<(u32, Vec<u8>)>) {
        let mut reinsert = Vec::new();
        let mut i = 0;
        while i < self.rows.len() {
            let Some(c) = self.rows[i].coef(seq) else {
                i += 1;
                continue;
            };
            let was_pivot = self.rows[i].pivot() == seq;
            let row = &mut self.rows[i];
            row.terms.retain(|t| t.0 != seq);
            add_scaled(c, &shard, &mut row.value);
            if row.terms.is_empty() {
                // Every packet it held is known: nothing left to learn.
                self.rows.remove(i);
            } else if was_pivot {
                reinsert.push(self.rows.remove(i));
            } else {
                i += 1;
            }
        }
        self.known[(seq % RING) as usize] = Some((seq, shard));
        self.collect_solved(solved);
        for row in reinsert {
            self.insert(row, solved);
        }
    }

    /// Takes in every packet solved (and what each solves in turn);
    /// every one new is pushed on `rebuilt`.
    fn settle(&mut self, mut solved: Vec<(u32, Vec<u8>)>, rebuilt: &mut Vec<(u32, Vec<u8>)>) {
        while let Some((seq, mut shard)) = solved.pop() {
            if self.is_known(seq) {
                continue;
            }
            let Some(payload) = unshard(&shard) else {
                self.counters.malformed += 1;
                continue;
            };
            shard.truncate(LEN_PREFIX + payload.len());
            rebuilt.push((seq, payload));
            self.absorb(seq, shard, &mut solved);
        }
    }

    /// Rows with one unknown left are that packet: taken out and queued.
    fn collect_solved(&mut self, solved: &mut Vec<(u32, Vec<u8>)>) {
        let mut i = 0;
        while i < self.rows.len() {
            if self.rows[i].terms.len() == 1 {
                let row = self.rows.remove(i);
                solved.push((row.pivot(), row.value));
            } else {
                i += 1;
            }
        }
    }

    /// Inserts an equation with no known packet in it, keeping the reduced
    /// form; what it solves is queued.
    fn insert(&mut self, mut row: Row, solved: &mut Vec<(u32, Vec<u8>)>) {
        let newest = self.newest.unwrap_or(0);
        for other in &self.rows {
            if let Some(c) = row.coef(other.pivot()) {
                row.eliminate(c, other);
            }
        }
        if row.terms.is_empty() {
            self.counters.useless += 1;
            return;
        }
        row.normalise(newest);
        let pivot = row.pivot();
        for other in &mut self.rows {
            if let Some(c) = other.coef(pivot) {
                other.eliminate(c, &row);
            }
        }
        // Elimination keeps each row's pivot (the new pivot is in no
        // other row's pivot column), but may leave a row with one term.
        if self.rows.len() >= MAX_ROWS {
            let oldest = (0..self.rows.len())
                .max_by_key(|&i| newest.wrapping_sub(self.rows[i].pivot()))
                .expect("rows");
            self.rows.remove(oldest);
            self.counters.rows_dropped += 1;
        }
        self.rows.push(row);
        self.collect_solved(solved);
    }

    /// Repair `j` sent after data packet `end`, with its payload, came
    /// (`at`); returns the packets it rebuilds: `(number, payload)`.
    pub fn on_repair(
        &mut self,
        at: Arrival,
        end: u32,
        j: u8,
        payload: &[u8],
    ) -> Result<Vec<(u32, Vec<u8>)>, CodingError> {
        let rebuilt = self.take_repair(at, end, j, payload);
        self.refresh_ask();
        rebuilt
    }

    fn take_repair(
        &mut self,
        at: Arrival,
        end: u32,
        j: u8,
        payload: &[u8],
    ) -> Result<Vec<(u32, Vec<u8>)>, CodingError> {
        let mut rebuilt = Vec::new();
        let Some((&span, value)) = payload.split_first() else {
            self.counters.malformed += 1;
            return Err(CodingError::BadShard(payload.len()));
        };
        if span == 0 || span > MAX_SPAN || value.len() < LEN_PREFIX {
            self.counters.malformed += 1;
            return Err(CodingError::BadShard(payload.len()));
        }
        let now = at.now;
        let beyond = self
            .marked
            .is_some_and(|m| (end.wrapping_sub(m) as i32) > 0);
        self.advance(at, end);
        if at.in_order && beyond && !self.is_known(end) {
            self.asker.went_missing(now, end);
        }
        let first = end.wrapping_sub(u32::from(span) - 1);
        if self.too_old(first) {
            self.counters.rows_dropped += 1;
            return Ok(rebuilt);
        }
        // The packets it covers that are not known: none (the common
        // case on a path that lost nothing) costs no field arithmetic.
        let terms: Vec<(u32, u8)> = (0..u32::from(span))
            .map(|k| first.wrapping_add(k))
            .filter(|&seq| !self.is_known(seq))
            .map(|seq| (seq, coefficient(end, j, seq)))
            .collect();
        if terms.is_empty() {
            self.counters.useless += 1;
            return Ok(rebuilt);
        }
        let mut row = Row {
            terms,
            value: value.to_vec(),
        };
        for k in 0..u32::from(span) {
            let seq = first.wrapping_add(k);
            if let Some((s, shard)) = &self.known[(seq % RING) as usize] {
                if *s != seq {
                    continue;
                }
                if shard.len() > row.value.len() {
                    self.counters.malformed += 1;
                    return Err(CodingError::BadShard(payload.len()));
                }
                mul_slice_xor(
                    coefficient(end, j, seq),
                    shard,
                    &mut row.value[..shard.len()],
                );
            }
        }
        let mut solved = Vec::new();
        self.insert(row, &mut solved);
        self.settle(solved, &mut rebuilt);
        self.came(now, &rebuilt);
        Ok(rebuilt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T0: Arrival = Arrival {
        now: Instant::ZERO,
        in_order: true,
    };

    fn packet(i: u32) -> Vec<u8> {
        let mut p = i.to_be_bytes().to_vec();
        p.extend(std::iter::repeat_n(i as u8, (i as usize * 13) % 97));
        p
    }

    #[test]
    fn a_burst_is_rebuilt_by_the_repair_after_it_in_any_order() {
        let mut enc = SlidingEncoder::default();
        let mut dec = SlidingDecoder::default();
        let start = u32::MAX - 10; // across the wrap
        let mut repairs = Vec::new();
        for k in 0..40u32 {
            let seq = start.wrapping_add(k);
            enc.push(Instant::ZERO, seq, &packet(seq), 16).unwrap();
            if (20..25).contains(&k) {
                continue; // a burst of five
            }
            assert!(dec.on_data(T0, seq, &packet(seq)).is_empty());
            if k >= 24 {
                repairs.push((seq, enc.repair(Instant::ZERO, 0).unwrap()));
            }
        }
        let mut rebuilt = Vec::new();
        // Repairs arrive newest first: four equations solve nothing.
        for (end, r) in repairs.iter().rev().take(5) {
            rebuilt.extend(dec.on_repair(T0, *end, 0, r).unwrap());
        }
        rebuilt.sort();
        let want: Vec<(u32, Vec<u8>)> = (20..25)
            .map(|k| start.wrapping_add(k))
            .map(|s| (s, packet(s)))
            .collect();
        let mut want = want;
        want.sort();
        assert_eq!(rebuilt, want);
        // What is known is not rebuilt again.
        for (end, r) in &repairs {
            assert!(dec.on_repair(T0, *end, 0, r).unwrap().is_empty());
        }
    }

    #[test]
    fn packets_older_than_the_age_bound_leave_the_window() {
        let mut enc = SlidingEncoder::default();
        let t0 = Instant::ZERO;
        enc.push(t0, 0, &packet(0), 32).unwrap();
        enc.push(t0 + MAX_AGE, 1, &packet(1), 32).unwrap();
        // At MAX_AGE both are in; just past it the first has left.
        assert_eq!(enc.repair(t0 + MAX_AGE, 0).unwrap()[0], 2);
        let later = t0 + MAX_AGE + Duration::from_millis(1);
        let r = enc.repair(later, 1).unwrap();
        assert_eq!(r[0], 1);
        // What is left decodes packet 1 alone.
        let mut dec = SlidingDecoder::default();
        assert_eq!(dec.on_repair(T0, 1, 1, &r).unwrap(), vec![(1, packet(1))]);
        // Past the bound for every packet: no repair at all.
        assert!(enc.repair(later + MAX_AGE, 2).is_none());
    }

    #[test]
    fn a_packet_arriving_late_solves_what_waited_on_it() {
        let mut enc = SlidingEncoder::default();
        let mut dec = SlidingDecoder::default();
        for seq in 0..4 {
            enc.push(Instant::ZERO, seq, &packet(seq), 8).unwrap();
        }
        // 1 and 2 missing, one equation: nothing yet.
        dec.on_data(T0, 0, &packet(0));
        dec.on_data(T0, 3, &packet(3));
        assert!(dec
            .on_repair(T0, 3, 0, &enc.repair(Instant::ZERO, 0).unwrap())
            .unwrap()
            .is_empty());
        // 2 arrives late: 1 is the equation's only unknown left.
        assert_eq!(dec.on_data(T0, 2, &packet(2)), vec![(1, packet(1))]);
    }

    #[test]
    fn a_request_comes_due_only_for_a_packet_no_equation_solves() {
        let mut enc = SlidingEncoder::default();
        let mut dec = SlidingDecoder::default();
        for seq in 0..5 {
            enc.push(Instant::ZERO, seq, &packet(seq), 8).unwrap();
        }
        // 1 and 2 lost; one repair over 0..=3: an equation whose pivot
        // is 1, with 2 in it.
        let repair = enc.repair_over(0, 3, 0).unwrap();
        dec.on_data(T0, 0, &packet(0));
        dec.on_data(T0, 3, &packet(3));
        dec.on_repair(T0, 3, 0, &repair).unwrap();
        dec.on_data(T0, 4, &packet(4));
        let due = dec.next_ask().unwrap();
        let w = dec.want(due).unwrap();
        assert_eq!((w.first, w.end), (2, 2), "only 2 is asked for");
        // Nothing else is due now: the timer is later (no busy loop).
        assert!(dec.want(due).is_none());
        assert!(dec.next_ask().is_some_and(|t| t > due));
        // The answer solves 2, and with it 1.
        let answer = enc.repair_over(2, 2, 14).unwrap();
        let mut got = dec.on_repair(T0, 2, 14, &answer).unwrap();
        got.sort();
        assert_eq!(got, vec![(1, packet(1)), (2, packet(2))]);
        assert_eq!(dec.next_ask(), None);
    }

    proptest! {
        #[test]
        fn what_the_repair_rebuilds_is_exactly_what_was_lost(
            lost in prop::collection::vec(prop::bool::weighted(0.3), 80),
            span in 1u8..=MAX_SPAN,
            every in 1u32..4,
        ) {
            let mut enc = SlidingEncoder::default();
            let mut dec = SlidingDecoder::default();
            let mut got = Vec::new();
            for seq in 0..80u32 {
                enc.push(Instant::ZERO, seq, &packet(seq), span).unwrap();
                if !lost[seq as usize] {
                    got.extend(dec.on_data(T0, seq, &packet(seq)));
                }
                if seq % every == 0 {
                    got.extend(dec.on_repair(T0, seq, 0, &enc.repair(Instant::ZERO, 0).unwrap()).unwrap());
                }
            }
            prop_assert!(dec.rows.len() <= MAX_ROWS);
            let mut seen = std::collections::HashSet::new();
            for (s, p) in got {
                prop_assert!(lost[s as usize], "rebuilt {} which arrived", s);
                prop_assert!(seen.insert(s), "rebuilt {} twice", s);
                prop_assert_eq!(p, packet(s));
            }
        }

        #[test]
        fn repairs_of_any_bytes_are_refused_or_taken_without_panic(
            repairs in prop::collection::vec((any::<u32>(), any::<u8>(), prop::collection::vec(any::<u8>(), 0..300)), 0..40),
            data in prop::collection::vec((0u32..400, 0usize..200), 0..40),
        ) {
            let mut dec = SlidingDecoder::default();
            for ((end, j, bytes), (seq, len)) in repairs.iter().zip(data.iter().cycle()) {
                let _ = dec.on_repair(T0, *end % 400, *j, bytes);
                let _ = dec.on_data(T0, *seq, &vec![7u8; *len]);
            }
            prop_assert!(dec.rows.len() <= MAX_ROWS);
            prop_assert!(dec.rows.iter().all(|r| r.terms.len() <= HORIZON as usize));
        }
    }
}
