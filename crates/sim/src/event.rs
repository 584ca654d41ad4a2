//! The event queue: events ordered by (time, sequence of insertion), so
//! that two events at the same time always run in the order they were
//! scheduled and the same seed gives the same run, byte for byte.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use braid_proto::time::Instant;

/// A queue of events of type `E`.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    slots: Vec<Option<E>>,
    free: Vec<usize>,
    seq: u64,
    processed: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            seq: 0,
            processed: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn push(&mut self, at: Instant, event: E) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(event);
                i
            }
            None => {
                self.slots.push(Some(event));
                self.slots.len() - 1
            }
        };
        self.heap.push(Reverse((at.as_micros(), self.seq, slot)));
        self.seq += 1;
    }

    /// The next event, if it is due by `until`.
    pub fn pop_until(&mut self, until: Instant) -> Option<(Instant, E)> {
        let &Reverse((t, _, slot)) = self.heap.peek()?;
        if t > until.as_micros() {
            return None;
        }
        self.heap.pop();
        self.processed += 1;
        let e = self.slots[slot].take().expect("slot holds its event");
        self.free.push(slot);
        Some((Instant::from_micros(t), e))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_order_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(Instant(5), "b");
        q.push(Instant(1), "a");
        q.push(Instant(5), "c");
        q.push(Instant(9), "d");
        let mut out = Vec::new();
        while let Some((_, e)) = q.pop_until(Instant(8)) {
            out.push(e);
        }
        assert_eq!(out, vec!["a", "b", "c"]);
        assert_eq!(q.len(), 1);
    }
}
