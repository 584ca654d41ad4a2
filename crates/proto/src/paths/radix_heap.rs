//! A monotone priority queue for Dijkstra on integer keys (a radix heap).
//!
//! Keys popped never decrease, and every key pushed is at least the last
//! key popped: exactly Dijkstra's access pattern. An item lives in the
//! bucket named by the highest bit in which its key differs from the last
//! key popped; a pop empties the lowest non-empty bucket into lower ones.
//! Each item moves at most 64 times, and in practice once or twice, so a
//! pop is far cheaper than a binary heap's sift-down. Ties pop in a fixed
//! order for a fixed sequence of operations (deterministic, not by index).

#[derive(Debug, Clone)]
pub(crate) struct RadixHeap {
    last: u64,
    len: usize,
    /// For buckets 1..=64, bit `i` set exactly when bucket `i` is not
    /// empty: a pop finds the lowest one in one instruction instead of a
    /// scan. (Bit 0 is set by pushes and never read.)
    occupied: u128,
    buckets: Vec<Vec<(u64, u32)>>,
}

impl RadixHeap {
    pub(crate) fn new() -> Self {
        RadixHeap {
            last: 0,
            len: 0,
            occupied: 0,
            buckets: vec![Vec::new(); 65],
        }
    }

    pub(crate) fn clear(&mut self) {
        for b in &mut self.buckets {
            b.clear();
        }
        self.last = 0;
        self.len = 0;
        self.occupied = 0;
    }

    fn bucket(&self, key: u64) -> usize {
        (64 - (key ^ self.last).leading_zeros()) as usize
    }

    /// Pushes `value` with `key`; `key` must not be below the last key
    /// popped.
    pub(crate) fn push(&mut self, key: u64, value: u32) {
        debug_assert!(key >= self.last, "radix heap keys must be monotone");
        let b = self.bucket(key);
        self.buckets[b].push((key, value));
        self.occupied |= 1 << b;
        self.len += 1;
    }

    pub(crate) fn pop(&mut self) -> Option<(u64, u32)> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        if let Some(item) = self.buckets[0].pop() {
            return Some(item);
        }
        // Bucket 0 is empty and len > 0, so some higher bit is set.
        let i = (self.occupied & !1).trailing_zeros() as usize;
        let mut items = std::mem::take(&mut self.buckets[i]);
        self.occupied &= !(1 << i);
        // The least item is the answer: it becomes `last`, and every
        // other item of bucket i moves to a lower bucket, by the highest
        // bit in which it differs from it.
        let (at, &(key, value)) = items
            .iter()
            .enumerate()
            .min_by_key(|(_, (k, _))| *k)
            .expect("non-empty");
        items.swap_remove(at);
        self.last = key;
        for &(k, v) in &items {
            let b = self.bucket(k);
            self.buckets[b].push((k, v));
            self.occupied |= 1 << b;
        }
        // Give the emptied bucket its allocation back.
        items.clear();
        self.buckets[i] = items;
        Some((key, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Interleaved pushes and pops, as Dijkstra does them, come out in
        /// key order.
        #[test]
        fn pops_in_key_order(ops in prop::collection::vec((any::<bool>(), 0u64..1000), 1..300)) {
            let mut heap = RadixHeap::new();
            let mut model: Vec<u64> = Vec::new();
            let mut last = 0;
            for (i, (push, delta)) in ops.into_iter().enumerate() {
                if push || model.is_empty() {
                    heap.push(last + delta, i as u32);
                    model.push(last + delta);
                } else {
                    model.sort_unstable();
                    let want = model.remove(0);
                    let (k, _) = heap.pop().unwrap();
                    prop_assert_eq!(k, want);
                    last = k;
                }
            }
            model.sort_unstable();
            for want in model {
                prop_assert_eq!(heap.pop().unwrap().0, want);
            }
            prop_assert!(heap.pop().is_none());
        }
    }
}
