//! A monotone priority queue for Dijkstra on integer keys (a radix heap),
//! with decrease-key.
//!
//! Keys popped never decrease, and every key pushed is at least the last
//! key popped: exactly Dijkstra's access pattern. An item lives in the
//! bucket named by the highest bit in which its key differs from the last
//! key popped; a pop empties the lowest non-empty bucket into lower ones.
//! Each item moves at most 64 times, and in practice once or twice, so a
//! pop is far cheaper than a binary heap's sift-down.
//!
//! Items are small integers (a search's node or state indices, below the
//! capacity given to [`RadixHeap::new`]) and each is in the heap at most
//! once: pushing an item already there lowers its key where the new one is
//! lower (moving it to a lower bucket) and is ignored otherwise. So a
//! search pops no stale entries (they were 40% of the path searches' pops
//! before, docs/performance.md). Ties pop in a fixed order for a fixed
//! sequence of operations (deterministic, not by index).

#[derive(Debug, Clone)]
pub(crate) struct RadixHeap {
    last: u64,
    len: usize,
    /// For buckets 1..=64, bit `i` set exactly when bucket `i` is not
    /// empty: a pop finds the lowest one in one instruction instead of a
    /// scan. (Bit 0 is set by pushes and never read.)
    occupied: u128,
    buckets: Vec<Vec<(u64, u32)>>,
    /// Where each item is: its bucket in the top 8 bits, its index in the
    /// bucket in the low 24; [`ABSENT`] when it is not in the heap.
    place: Vec<u32>,
}

/// `place` of an item not in the heap.
const ABSENT: u32 = u32::MAX;
/// The bits of a place that hold the index in the bucket.
const INDEX: u32 = (1 << 24) - 1;

/// Most items a heap holds (a place's index has 24 bits); users refuse
/// larger inputs before they make one.
pub(crate) const MAX_ITEMS: usize = INDEX as usize;

impl RadixHeap {
    /// An empty heap for the items `0..items`, at most [`MAX_ITEMS`].
    pub(crate) fn new(items: usize) -> Self {
        assert!(items <= MAX_ITEMS, "a radix heap holds up to 2^24 items");
        RadixHeap {
            last: 0,
            len: 0,
            occupied: 0,
            buckets: vec![Vec::new(); 65],
            place: vec![ABSENT; items],
        }
    }

    pub(crate) fn clear(&mut self) {
        for b in &mut self.buckets {
            for &(_, item) in b.iter() {
                self.place[item as usize] = ABSENT;
            }
            b.clear();
        }
        self.last = 0;
        self.len = 0;
        self.occupied = 0;
    }

    fn bucket(&self, key: u64) -> usize {
        (64 - (key ^ self.last).leading_zeros()) as usize
    }

    fn put(&mut self, b: usize, key: u64, item: u32) {
        let bucket = &mut self.buckets[b];
        self.place[item as usize] = (b as u32) << 24 | bucket.len() as u32;
        bucket.push((key, item));
        self.occupied |= 1 << b;
    }

    /// Takes the entry at `place` out of its bucket.
    fn take(&mut self, place: u32) {
        let (b, i) = ((place >> 24) as usize, (place & INDEX) as usize);
        let bucket = &mut self.buckets[b];
        bucket.swap_remove(i);
        if let Some(&(_, moved)) = bucket.get(i) {
            self.place[moved as usize] = place;
        } else if bucket.is_empty() {
            self.occupied &= !(1 << b);
        }
    }

    /// Pushes `item` with `key`, or lowers its key to `key` if it is in
    /// the heap with a higher one. `key` must not be below the last key
    /// popped.
    pub(crate) fn push(&mut self, key: u64, item: u32) {
        debug_assert!(key >= self.last, "radix heap keys must be monotone");
        let place = self.place[item as usize];
        let b = self.bucket(key);
        if place == ABSENT {
            self.put(b, key, item);
            self.len += 1;
            return;
        }
        let (old_b, i) = ((place >> 24) as usize, (place & INDEX) as usize);
        if key >= self.buckets[old_b][i].0 {
            return;
        }
        if b == old_b {
            self.buckets[b][i].0 = key;
        } else {
            self.take(place);
            self.put(b, key, item);
        }
    }

    /// The item with the least key, and its key.
    pub(crate) fn pop(&mut self) -> Option<(u64, u32)> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        if let Some((key, item)) = self.buckets[0].pop() {
            self.place[item as usize] = ABSENT;
            return Some((key, item));
        }
        // Bucket 0 is empty and len > 0, so some higher bit is set.
        let i = (self.occupied & !1).trailing_zeros() as usize;
        let mut items = std::mem::take(&mut self.buckets[i]);
        self.occupied &= !(1 << i);
        // The least item is the answer: it becomes `last`, and every
        // other item of bucket i moves to a lower bucket, by the highest
        // bit in which it differs from it.
        let (at, &(key, item)) = items
            .iter()
            .enumerate()
            .min_by_key(|(_, (k, _))| *k)
            .expect("non-empty");
        items.swap_remove(at);
        self.last = key;
        self.place[item as usize] = ABSENT;
        for &(k, v) in &items {
            let b = self.bucket(k);
            self.put(b, k, v);
        }
        // Give the emptied bucket its allocation back.
        items.clear();
        self.buckets[i] = items;
        Some((key, item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Interleaved pushes (some of items already in, lowering or not
        /// lowering their keys) and pops, as Dijkstra does them, come out
        /// in key order, each item once with its least key pushed.
        #[test]
        fn pops_in_key_order(
            ops in prop::collection::vec((any::<bool>(), 0u32..40, 0u64..1000), 1..300),
        ) {
            let mut heap = RadixHeap::new(40);
            let mut model: std::collections::BTreeMap<u32, u64> = Default::default();
            let mut last = 0;
            let check_pop = |heap: &mut RadixHeap,
                                 model: &mut std::collections::BTreeMap<u32, u64>|
             -> Result<u64, TestCaseError> {
                let least = *model.values().min().unwrap();
                let (k, item) = heap.pop().unwrap();
                prop_assert_eq!(k, least);
                prop_assert_eq!(model.remove(&item), Some(k), "item {} popped with its key", item);
                Ok(k)
            };
            for (push, item, delta) in ops {
                if push || model.is_empty() {
                    let key = last + delta;
                    heap.push(key, item);
                    let kept = model.entry(item).or_insert(key);
                    *kept = (*kept).min(key);
                } else {
                    last = check_pop(&mut heap, &mut model)?;
                }
            }
            while !model.is_empty() {
                last = check_pop(&mut heap, &mut model)?;
            }
            prop_assert!(heap.pop().is_none());
            // Cleared, every item can come in again.
            heap.push(last + 5, 3);
            heap.clear();
            prop_assert!(heap.pop().is_none());
            heap.push(7, 3);
            prop_assert_eq!(heap.pop(), Some((7, 3)));
        }
    }
}
