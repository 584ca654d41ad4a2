//! What the node hands its driver, waiting to be polled: datagrams to
//! send, packets to deliver to local hosts, events; and the buffers they
//! travel in. Every queue is bounded (`max_queue` datagrams and packets,
//! [`super::events::MAX_EVENTS`] events): what does not fit is dropped,
//! its buffer recycled, and counted.

use std::collections::VecDeque;

use super::config::Transmit;
use super::events::{EventQueue, NodeEvent};
use super::pool::BufferPool;

/// The node's queues toward its driver.
#[derive(Debug)]
pub struct Outbox {
    max_queue: usize,
    transmit: VecDeque<Transmit>,
    delivered: VecDeque<Vec<u8>>,
    events: EventQueue,
    /// Buffers the driver gave back, reused for the next datagrams.
    pub pool: BufferPool,
    /// Datagrams and packets dropped because their queue was full.
    full: u64,
    /// Packets delivered to local hosts.
    delivered_count: u64,
}

impl Outbox {
    /// Empty queues of at most `max_queue` datagrams and packets each.
    pub fn new(max_queue: usize) -> Self {
        Outbox {
            max_queue,
            transmit: VecDeque::new(),
            delivered: VecDeque::new(),
            events: EventQueue::default(),
            pool: BufferPool::default(),
            full: 0,
            delivered_count: 0,
        }
    }

    /// Queues a datagram to send.
    pub fn send(&mut self, t: Transmit) {
        if self.transmit.len() >= self.max_queue {
            self.full += 1;
            self.pool.give(t.bytes);
            return;
        }
        self.transmit.push_back(t);
    }

    /// Queues a packet for a local host.
    pub fn deliver(&mut self, p: Vec<u8>) {
        if self.delivered.len() >= self.max_queue {
            self.full += 1;
            self.pool.give(p);
            return;
        }
        self.delivered_count += 1;
        self.delivered.push_back(p);
    }

    /// Queues an event.
    pub fn event(&mut self, e: NodeEvent) {
        self.events.push(e);
    }

    /// The next datagram to send.
    pub fn next_transmit(&mut self) -> Option<Transmit> {
        self.transmit.pop_front()
    }

    /// The next packet for a local host.
    pub fn next_delivered(&mut self) -> Option<Vec<u8>> {
        self.delivered.pop_front()
    }

    /// The next event.
    pub fn next_event(&mut self) -> Option<NodeEvent> {
        self.events.pop()
    }

    /// Dropped because a queue was full.
    pub fn full(&self) -> u64 {
        self.full
    }

    /// Packets delivered to local hosts so far.
    pub fn delivered(&self) -> u64 {
        self.delivered_count
    }

    /// Events dropped because the driver did not drain them.
    pub fn events_dropped(&self) -> u64 {
        self.events.dropped()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Dest;
    use braid_wire::NodeId;

    #[test]
    fn queues_are_bounded_and_what_does_not_fit_is_counted() {
        let mut out = Outbox::new(2);
        for i in 0..3u8 {
            out.send(Transmit {
                dest: Dest::Neighbor(NodeId(1)),
                bytes: vec![i],
                rate: None,
            });
            out.deliver(vec![i]);
        }
        assert_eq!(out.full(), 2);
        assert_eq!(out.delivered(), 2);
        assert_eq!(out.next_transmit().map(|t| t.bytes), Some(vec![0]));
        assert_eq!(out.next_delivered(), Some(vec![0]));
        assert_eq!(out.next_delivered(), Some(vec![1]));
        assert_eq!(out.next_delivered(), None);
    }
}
