//! Duplicate suppression over 32-bit sequence numbers.
//!
//! A window of `W` bits (a power of two) remembers which of the last `W`
//! sequence numbers below the highest seen have been delivered. Sequence
//! numbers compare with wrap-around (serial) arithmetic, so the window
//! slides across 2^32 without a seam.
//!
//! * A number above the highest seen, by at most half the window, is new:
//!   the window slides up to it.
//! * A number further ahead never moves the window: it is dropped and
//!   counted ([`Verdict::TooFarAhead`]) however many follow it. Only
//!   [`DedupWindow::advance_to`] moves it that far, which the egress calls
//!   when the ingress has proven (in a signed session check: `egress.rs`)
//!   that its numbers really are there. Forged or corrupted numbers,
//!   any number of them, therefore cost only themselves; a real jump (more
//!   than half a window of packets lost in a row) costs a round trip to
//!   the ingress, its packets held meanwhile.
//! * A number inside the window is new exactly when its bit is clear.
//! * A number older than the window cannot be told apart from a duplicate.
//!   It is **dropped and counted** ([`Verdict::TooOld`]): delivering it
//!   could deliver a packet twice, and at-most-once is the egress's
//!   promise. Size the window to cover the paths' delay spread (the
//!   default 8192 packets is 0.9 s at 100 Mbit/s of 1400-byte packets).
//!
//! A session whose ingress restarts starts a new window: the egress tells
//! a restart by the session epoch in the data header, never by the
//! numbers (see `egress.rs`).
//!
//! Memory: `W / 8` bytes (1 KiB by default) per session.

/// What the window says of one sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not seen before: deliver it (the window now remembers it).
    New,
    /// Seen before: drop it.
    Duplicate,
    /// Older than the window: dropped, counted.
    TooOld,
    /// More than half a window ahead: dropped, counted (see
    /// [`DedupWindow::advance_to`]).
    TooFarAhead,
}

/// The dedup window of one session.
#[derive(Debug, Clone)]
pub struct DedupWindow {
    bits: Vec<u64>,
    mask: u32,
    highest: u32,
    started: bool,
}

impl DedupWindow {
    /// A window over `size` sequence numbers, rounded up to a power of two
    /// of at least 64.
    pub fn new(size: u32) -> Self {
        let size = size.clamp(64, 1 << 24).next_power_of_two();
        DedupWindow {
            bits: vec![0; (size / 64) as usize],
            mask: size - 1,
            highest: 0,
            started: false,
        }
    }

    /// How far one packet alone may move the window: half of it, so that
    /// after any such move the packets just below the old highest are
    /// still inside it.
    pub fn max_advance(&self) -> u32 {
        self.size() / 2
    }

    /// Sequence numbers the window spans (a power of two).
    pub fn size(&self) -> u32 {
        self.mask + 1
    }

    /// The highest number taken, once one was.
    pub fn highest(&self) -> Option<u32> {
        self.started.then_some(self.highest)
    }

    /// Whether `seq`, inside the window, was taken (false outside it).
    pub fn seen(&self, seq: u32) -> bool {
        self.started && self.highest.wrapping_sub(seq) <= self.mask && {
            let (w, b) = self.bit(seq);
            self.bits[w] & b != 0
        }
    }

    /// Bytes of state this window holds.
    pub fn memory(&self) -> usize {
        self.bits.len() * 8 + core::mem::size_of::<Self>()
    }

    fn bit(&self, seq: u32) -> (usize, u64) {
        let i = seq & self.mask;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    /// Whether `seq` would be new, without recording it.
    pub fn check(&self, seq: u32) -> Verdict {
        if !self.started {
            return Verdict::New;
        }
        let ahead = seq.wrapping_sub(self.highest);
        if ahead != 0 && ahead < 1 << 31 {
            return if ahead <= self.max_advance() {
                Verdict::New
            } else {
                Verdict::TooFarAhead
            };
        }
        let behind = self.highest.wrapping_sub(seq);
        if behind > self.mask {
            return Verdict::TooOld;
        }
        let (w, b) = self.bit(seq);
        if self.bits[w] & b != 0 {
            Verdict::Duplicate
        } else {
            Verdict::New
        }
    }

    /// Checks `seq` and, when new, records it.
    pub fn insert(&mut self, seq: u32) -> Verdict {
        let verdict = self.check(seq);
        if verdict != Verdict::New {
            return verdict;
        }
        if !self.started {
            self.started = true;
            self.highest = seq;
        } else {
            let ahead = seq.wrapping_sub(self.highest);
            if ahead != 0 && ahead < 1 << 31 {
                self.slide(ahead);
                self.highest = seq;
            }
        }
        let (w, b) = self.bit(seq);
        self.bits[w] |= b;
        verdict
    }

    /// Moves the window up so that the numbers just below `next` fit it:
    /// the highest becomes `next - 1` (none of the numbers it slides over
    /// seen), unless it is there already. A window with no number yet
    /// starts there. Called when the ingress proved that its next packet
    /// carries `next`.
    pub fn advance_to(&mut self, next: u32) {
        let top = next.wrapping_sub(1);
        if !self.started {
            self.started = true;
            self.highest = top;
            self.bits.fill(0);
            return;
        }
        let ahead = top.wrapping_sub(self.highest);
        if ahead != 0 && ahead < 1 << 31 {
            self.slide(ahead);
            self.highest = top;
        }
    }

    /// Forgets the numbers that fall out as the window moves up by `by`.
    fn slide(&mut self, by: u32) {
        if by > self.mask {
            self.bits.fill(0);
            return;
        }
        // Clear the slots of highest+1 ..= highest+by.
        let mut seq = self.highest.wrapping_add(1);
        let mut left = by;
        while left > 0 {
            let i = seq & self.mask;
            if i.is_multiple_of(64) && left >= 64 {
                self.bits[(i / 64) as usize] = 0;
                seq = seq.wrapping_add(64);
                left -= 64;
            } else {
                let (w, b) = self.bit(seq);
                self.bits[w] &= !b;
                seq = seq.wrapping_add(1);
                left -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn first_copy_new_second_duplicate_old_too_old_across_wrap() {
        let mut w = DedupWindow::new(64);
        let start = u32::MAX - 10;
        assert_eq!(w.insert(start), Verdict::New);
        assert_eq!(w.insert(start), Verdict::Duplicate);
        for i in 1..40u32 {
            assert_eq!(w.insert(start.wrapping_add(i)), Verdict::New);
        }
        assert_eq!(w.insert(start.wrapping_add(5)), Verdict::Duplicate);
        // 28 is past the wrap to 0.
        assert_eq!(w.insert(start.wrapping_add(28)), Verdict::Duplicate);
        assert_eq!(w.insert(start.wrapping_add(70)), Verdict::New);
        assert_eq!(w.insert(start.wrapping_add(100)), Verdict::New);
        assert_eq!(w.insert(start.wrapping_add(130)), Verdict::New);
        assert_eq!(w.insert(start.wrapping_add(200)), Verdict::TooFarAhead);
        assert_eq!(w.insert(start.wrapping_add(160)), Verdict::New);
        assert_eq!(w.insert(start.wrapping_add(90)), Verdict::TooOld);
        assert_eq!(
            w.insert(start.wrapping_add(150)),
            Verdict::New,
            "inside the window, never seen"
        );
    }

    #[test]
    fn far_numbers_cost_only_themselves_and_a_proven_jump_moves_the_window() {
        let mut w = DedupWindow::new(8192);
        for s in 1000..1100u32 {
            assert_eq!(w.insert(s), Verdict::New);
        }
        // Forged (or corrupted) numbers far ahead, even two in a row close
        // together: dropped, and the packets after them are not.
        assert_eq!(w.insert(2_000_000_000), Verdict::TooFarAhead);
        assert_eq!(w.insert(2_000_000_001), Verdict::TooFarAhead);
        for s in 1100..1200u32 {
            assert_eq!(w.insert(s), Verdict::New, "{s}");
        }
        // One every few packets changes nothing either.
        for s in 1200..1400u32 {
            if s % 4 == 0 {
                let forged = w.insert(s.wrapping_mul(2_654_435_761));
                assert!(matches!(forged, Verdict::TooFarAhead | Verdict::TooOld));
            }
            assert_eq!(w.insert(s), Verdict::New, "{s}");
        }
        // A real jump (the ingress lost 50,000 packets in a row): refused
        // until proven; then the packets before the proven number are new
        // once, and what came before the jump is too old.
        assert_eq!(w.insert(51_400), Verdict::TooFarAhead);
        assert_eq!(w.insert(51_401), Verdict::TooFarAhead);
        w.advance_to(51_402);
        assert_eq!(w.insert(51_401), Verdict::New);
        assert_eq!(w.insert(51_401), Verdict::Duplicate);
        assert_eq!(w.insert(51_400), Verdict::New, "its late copy");
        assert_eq!(w.insert(51_402), Verdict::New);
        assert_eq!(w.insert(1399), Verdict::TooOld);
        // A proof behind the window changes nothing.
        w.advance_to(50_000);
        assert_eq!(w.insert(51_402), Verdict::Duplicate);
        // A window with nothing yet starts below the proven number.
        let mut fresh = DedupWindow::new(64);
        fresh.advance_to(500);
        assert_eq!(fresh.insert(499), Verdict::New);
        assert_eq!(fresh.insert(400), Verdict::TooOld);
        assert_eq!(fresh.insert(600), Verdict::TooFarAhead);
    }

    proptest! {
        /// Against a model that remembers everything: never New twice, and
        /// always New for a first copy inside the window.
        #[test]
        fn matches_a_perfect_memory_inside_the_window(
            start: u32,
            steps in prop::collection::vec(-100i64..100, 1..2000),
        ) {
            let mut w = DedupWindow::new(256);
            let mut seen: HashSet<u32> = HashSet::new();
            let mut highest: Option<u32> = None;
            let mut cur = start;
            for step in steps {
                cur = (cur as i64 + step).rem_euclid(1 << 32) as u32;
                let verdict = w.insert(cur);
                let first = !seen.contains(&cur);
                let inside = highest.is_none_or(|h| {
                    let ahead = cur.wrapping_sub(h);
                    (ahead < 1 << 31) || h.wrapping_sub(cur) < 256
                });
                match verdict {
                    Verdict::New => {
                        prop_assert!(first, "delivered {cur} twice");
                        seen.insert(cur);
                        highest = Some(match highest {
                            Some(h) if cur.wrapping_sub(h) >= 1 << 31 => h,
                            _ => cur,
                        });
                    }
                    Verdict::Duplicate => prop_assert!(!first),
                    Verdict::TooOld => prop_assert!(!inside),
                    // Steps of at most 100 never go past half of 256.
                    Verdict::TooFarAhead => prop_assert!(false, "{cur} too far ahead"),
                }
                if first && inside {
                    prop_assert_eq!(verdict, Verdict::New);
                }
            }
        }

        /// Far numbers (forged or corrupted), ahead or behind, alone or in
        /// runs of close ones, never get in and never cost a real packet:
        /// with some between every two real ones, every real packet is
        /// still new exactly once.
        #[test]
        fn far_numbers_cost_nothing_but_themselves(
            start: u32,
            far in prop::collection::vec((any::<bool>(), 129u32..(1 << 30), 1u32..4), 1..500),
        ) {
            let mut w = DedupWindow::new(256);
            let mut cur = start;
            prop_assert_eq!(w.insert(cur), Verdict::New);
            for (ahead, distance, run) in far {
                for k in 0..run {
                    let forged = if ahead {
                        cur.wrapping_add(distance + k)
                    } else {
                        cur.wrapping_sub(distance + 256 + k)
                    };
                    prop_assert_ne!(w.insert(forged), Verdict::New, "{} got in", forged);
                }
                cur = cur.wrapping_add(1);
                prop_assert_eq!(w.insert(cur), Verdict::New, "{} was refused", cur);
                prop_assert_eq!(w.insert(cur), Verdict::Duplicate);
            }
        }
    }
}
