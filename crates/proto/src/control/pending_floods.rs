//! The origins whose advertisement waits to be flooded (the set
//! `flood.rs` fills and empties), kept apart so that the control plane's
//! state can hold it without depending on the flooding code.

use fixedbitset::FixedBitSet;

/// The origins whose advertisement waits to be flooded, by id, and how
/// many: every poll asks whether any waits, which reads the count (a scan
/// of the set was a tenth of a 10,000-router simulation's time).
#[derive(Debug, Clone, Default)]
pub(super) struct PendingFloods {
    set: FixedBitSet,
    count: usize,
}

impl PendingFloods {
    pub(super) fn insert(&mut self, i: usize) {
        if i >= self.set.len() {
            self.set.grow(i + 1);
        }
        if !self.set.put(i) {
            self.count += 1;
        }
    }

    pub(super) fn remove(&mut self, i: usize) {
        if self.set.contains(i) {
            self.set.set(i, false);
            self.count -= 1;
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The waiting origins' ids, lowest first.
    pub(super) fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.set.ones()
    }
}

#[cfg(test)]
mod tests {
    use super::PendingFloods;

    #[test]
    fn the_count_follows_the_set_through_repeats_and_absent_removals() {
        let mut p = PendingFloods::default();
        assert!(p.is_empty());
        p.insert(9_999);
        p.insert(3);
        p.insert(3);
        assert_eq!(p.ones().collect::<Vec<_>>(), vec![3, 9_999]);
        p.remove(3);
        p.remove(3);
        p.remove(65_000); // beyond the set: nothing waits there
        assert!(!p.is_empty(), "9,999 still waits");
        p.remove(9_999);
        assert!(p.is_empty());
        assert_eq!(p.ones().count(), 0);
    }
}
