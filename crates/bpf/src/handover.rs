//! An egress window handed from user space to the kernel after the
//! ingress proved a new epoch or a jump (docs/protocol.md "Sessions and
//! restarts"): the kernel never moves a window that far itself; it
//! passes such packets up, the node holds them and asks the ingress, and
//! on the proof the daemon rewrites the kernel's window to be the node's
//! (the same epoch, the epoch replaced, the same numbers seen), so that
//! neither decoder delivers a packet the other did.

use braid_proto::redundancy::ProvenWindow;

use crate::constants::WINDOW_WORDS;
use crate::maps::Window;

/// `current` (the kernel's window, its counters kept) made `proven`'s,
/// for a kernel window of `mask + 1` numbers. A new epoch replaces the
/// kernel's numbers with the node's; within the same epoch (a jump, or a
/// forged epoch the proof refuted) both decoders' numbers are kept: the
/// kernel took packets the node never saw.
pub fn take_over(current: Window, proven: &ProvenWindow, mask: u32) -> Window {
    let mut w = current;
    let same_epoch = w.has_epoch == 1 && w.epoch == proven.epoch;
    if !same_epoch {
        // A new epoch: numbers start afresh, so do the paths' newest.
        w.epoch_changes += 1;
        w.latest_ns = [0; crate::constants::PATH_INDICES];
        w.latest = [0; crate::constants::PATH_INDICES];
        w.tags = [0; WINDOW_WORDS + 1];
        w.bits = [0; WINDOW_WORDS];
        w.started = 0;
        w.highest = 0;
    }
    w.has_epoch = 1;
    w.epoch = proven.epoch;
    match proven.retired {
        Some(r) => {
            w.has_retired = 1;
            w.retired = r;
        }
        None => {
            w.has_retired = 0;
            w.retired = 0;
        }
    }
    let Some(highest) = proven.window.highest() else {
        return w;
    };
    // The node's highest is the proven one (at least the ingress's next
    // number less one). The kernel keeps its own only when it is ahead of
    // that by less than its window: packets it took after the ingress
    // answered. Any other distance, however far (a jump may be more than
    // 2^31 numbers, the node moving in two steps where the kernel moves
    // in one), is a kernel left behind.
    let kernel_ahead = w.highest.wrapping_sub(highest);
    if w.started == 0 || kernel_ahead > mask {
        if highest.wrapping_sub(w.highest) > mask {
            // None of the kernel's numbers is inside the node's window
            // (a word's tag cannot tell a block from the same block 2^32
            // numbers on, which a jump may reach): the node's alone.
            w.tags = [0; WINDOW_WORDS + 1];
            w.bits = [0; WINDOW_WORDS];
        }
        w.started = 1;
        w.highest = highest;
    }
    // The kernel's layout (datapath.h): words of 64 numbers, each tagged
    // with its block (seq / 64), at block % words; with this many words
    // no two blocks inside the window share one, so a word tagged with
    // another block holds numbers outside it: cleared when retagged.
    let words = ((mask as usize + 1) / 64 + 1).min(WINDOW_WORDS) as u32;
    let span = mask.min(proven.window.size() - 1);
    for back in 0..=span {
        let seq = highest.wrapping_sub(back);
        if !proven.window.seen(seq) || w.highest.wrapping_sub(seq) > mask {
            continue;
        }
        let i = ((seq >> 6) % words) as usize;
        if w.tags[i] != seq >> 6 {
            w.tags[i] = seq >> 6;
            w.bits[i] = 0;
        }
        w.bits[i] |= 1u64 << (seq & 63);
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constants::PATH_INDICES;
    use braid_proto::redundancy::dedup::DedupWindow;
    use braid_wire::NodeId;

    fn blank() -> Window {
        Window {
            lock: 0,
            epoch: 0,
            retired: 0,
            highest: 0,
            unproven: 0,
            has_epoch: 0,
            has_retired: 0,
            started: 0,
            pad: 0,
            last_ns: 0,
            delivered: 0,
            duplicates: 0,
            too_old: 0,
            too_far_ahead: 0,
            old_epoch: 0,
            epoch_changes: 0,
            received: [0; PATH_INDICES],
            latest: [0; PATH_INDICES],
            latest_ns: [0; PATH_INDICES],
            tags: [0; WINDOW_WORDS + 1],
            bits: [0; WINDOW_WORDS],
        }
    }

    /// A kernel window of `epoch` whose highest number is `highest`.
    fn at(epoch: u32, highest: u32) -> Window {
        Window {
            has_epoch: 1,
            epoch,
            started: 1,
            highest,
            ..blank()
        }
    }

    /// Whether the kernel window `w` (of `mask + 1` numbers) holds `seq`.
    fn holds(w: &Window, seq: u32, mask: u32) -> bool {
        let words = ((mask as usize + 1) / 64 + 1).min(WINDOW_WORDS) as u32;
        let i = ((seq >> 6) % words) as usize;
        w.highest.wrapping_sub(seq) <= mask
            && w.tags[i] == seq >> 6
            && w.bits[i] >> (seq & 63) & 1 == 1
    }

    fn proven(epoch: u32, retired: Option<u32>, seen: &[u32], next: u32) -> ProvenWindow {
        let mut window = DedupWindow::new(256);
        window.advance_to(next);
        for &s in seen {
            window.insert(s);
        }
        ProvenWindow {
            session: (NodeId(1), 3),
            epoch,
            retired,
            window,
        }
    }

    #[test]
    fn within_an_epoch_both_decoders_numbers_are_kept() {
        let mask = 255;
        let mut k = at(5, 1000);
        let p = proven(5, None, &[1000], 1001);
        // The kernel took 990..=1000; the node knows only its own.
        for s in 990..=1000u32 {
            k = take_over(k, &proven(5, None, &[s], s + 1), mask);
        }
        let w = take_over(k, &p, mask);
        assert!((990..=1000).all(|s| holds(&w, s, mask)));
        // A jump proven past it: the old numbers stay seen while inside.
        let w = take_over(w, &proven(5, None, &[1100], 1101), mask);
        assert_eq!(w.highest, 1100);
        assert!(holds(&w, 1000, mask) && holds(&w, 1100, mask));
        assert!(!holds(&w, 1050, mask));
        assert_eq!(w.epoch_changes, 0);
    }

    #[test]
    fn a_kernel_behind_by_any_distance_moves_to_the_proven_number() {
        let mask = 255;
        // A jump of more than 2^31 (the node moved in two steps).
        let far = 1000u32.wrapping_add((1 << 31) + 7);
        let w = take_over(at(5, 1000), &proven(5, None, &[far], far + 1), mask);
        assert_eq!(w.highest, far);
        assert!(holds(&w, far, mask) && !holds(&w, 1000, mask));
        // Around the numbers and back (two proven jumps): what the kernel
        // saw on the way out is not taken for seen on the way back.
        let mut k = take_over(at(5, 0), &proven(5, None, &[14], 15), mask);
        assert!(holds(&k, 14, mask));
        k = take_over(k, &proven(5, None, &[0x8000_0055], 0x8000_0056), mask);
        k = take_over(k, &proven(5, None, &[45], 46), mask);
        assert_eq!(k.highest, 45);
        assert!(holds(&k, 45, mask) && !holds(&k, 14, mask));
        // Just over a window behind, and just inside one ahead.
        let w = take_over(at(5, 1000), &proven(5, None, &[1256], 1257), mask);
        assert_eq!(w.highest, 1256);
        let w = take_over(at(5, 1255), &proven(5, None, &[1000], 1001), mask);
        assert_eq!(w.highest, 1255, "the kernel's own, taken since");
        // A kernel more than a window ahead of the proof is one left
        // behind by a jump of nearly 2^32: the node's.
        let w = take_over(at(5, 1256), &proven(5, None, &[1000], 1001), mask);
        assert_eq!(w.highest, 1000);
    }

    #[test]
    fn a_new_epoch_takes_the_nodes_numbers_only() {
        let mask = 255;
        let mut k = at(5, 1000);
        k = take_over(k, &proven(5, None, &[999, 1000], 1001), mask);
        let w = take_over(k, &proven(9, Some(5), &[40, 41], 42), mask);
        assert_eq!((w.epoch, w.retired, w.has_retired), (9, 5, 1));
        assert_eq!((w.highest, w.epoch_changes), (41, 1));
        assert!(holds(&w, 40, mask) && holds(&w, 41, mask));
        assert!(!holds(&w, 1000, mask));
    }
}
