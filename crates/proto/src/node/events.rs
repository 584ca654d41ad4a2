//! What happened in a node, for its driver: neighbors coming and going,
//! routes and modes changing, input refused. The driver drains them with
//! [`super::Node::poll_event`] (the daemon logs them and tells its
//! monitors; the simulator counts them) instead of re-parsing datagrams
//! or diffing counters. The queue is bounded: when the driver does not
//! drain it, the newest events are dropped and counted.

use std::collections::VecDeque;

use braid_wire::NodeId;

pub use super::interface::Interface;
use super::refusal::Refusal;
use crate::redundancy::Mode;

/// Why a neighbor went down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownReason {
    /// Nothing heard from it for `NodeConfig::neighbor_timeout`.
    Unheard,
    /// The driver lost the link to it ([`super::Node::link_down`]: carrier
    /// or association lost).
    LinkDown,
    /// The interface it was heard on went down
    /// ([`super::Node::interface_down`]).
    InterfaceDown,
}

impl DownReason {
    /// A short stable name (logs, monitor events).
    pub fn as_str(self) -> &'static str {
        match self {
            DownReason::Unheard => "unheard",
            DownReason::LinkDown => "link down",
            DownReason::InterfaceDown => "interface down",
        }
    }
}

/// Something the driver may want to know.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NodeEvent {
    /// A neighbor was heard for the first time, or again after it went
    /// down.
    NeighborUp {
        /// The neighbor that came up.
        neighbor: NodeId,
        /// The interface it was heard on.
        interface: Interface,
    },
    /// A neighbor heard before was heard on another interface.
    NeighborMoved {
        /// The neighbor that moved.
        neighbor: NodeId,
        /// The interface it is heard on now.
        interface: Interface,
    },
    /// A neighbor went down: routes have moved off it.
    NeighborDown {
        /// The neighbor that went down.
        neighbor: NodeId,
        /// Why it went down.
        why: DownReason,
    },
    /// The paths toward `egress` changed (see `Node::paths_to`).
    RouteChange {
        /// The destination whose paths changed.
        egress: NodeId,
    },
    /// The mode in force for a session changed (a policy reload, or the
    /// adaptive mode's choice).
    ModeChange {
        /// The session's egress.
        egress: NodeId,
        /// The session's traffic class.
        class: u8,
        /// The mode now in force.
        mode: Mode,
    },
    /// A datagram was refused, and counted under the counter its reason
    /// names ([`Refusal::counter`]).
    Refused {
        /// Why.
        reason: Refusal,
    },
    /// An echo reply came back (`Node::send_echo`): from `from`, with the
    /// request's sequence number and stamp.
    EchoReply {
        /// The router that answered.
        from: NodeId,
        /// The request's sequence number.
        seq: u32,
        /// The request's stamp, as the requester wrote it.
        stamp: u64,
    },
    /// Another router uses this node's id (see [`crate::control::DuplicateSign`]):
    /// the two fight over the link-state database until one is renumbered.
    DuplicateId {
        /// How it showed itself.
        sign: crate::control::DuplicateSign,
        /// Where (for a neighbor with our id: the interface it was heard on).
        interface: Interface,
    },
}

impl NodeEvent {
    /// A short stable name of the event's kind (counters, monitor events).
    pub fn kind(&self) -> &'static str {
        match self {
            NodeEvent::NeighborUp { .. } => "neighbor_up",
            NodeEvent::NeighborMoved { .. } => "neighbor_moved",
            NodeEvent::NeighborDown { .. } => "neighbor_down",
            NodeEvent::RouteChange { .. } => "route_change",
            NodeEvent::ModeChange { .. } => "mode_change",
            NodeEvent::Refused { .. } => "refused",
            NodeEvent::DuplicateId { .. } => "duplicate_id",
            NodeEvent::EchoReply { .. } => "echo_reply",
        }
    }
}

/// Most events held for the driver.
pub const MAX_EVENTS: usize = 1024;

/// The bounded queue of events.
#[derive(Debug, Default)]
pub(super) struct EventQueue {
    queue: VecDeque<NodeEvent>,
    dropped: u64,
}

impl EventQueue {
    pub(super) fn push(&mut self, e: NodeEvent) {
        if self.queue.len() >= MAX_EVENTS {
            self.dropped += 1;
        } else {
            self.queue.push_back(e);
        }
    }

    pub(super) fn pop(&mut self) -> Option<NodeEvent> {
        self.queue.pop_front()
    }

    /// Events dropped because the queue was full.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_keeps_order_and_drops_beyond_its_bound() {
        let mut q = EventQueue::default();
        for i in 0..MAX_EVENTS + 5 {
            q.push(NodeEvent::RouteChange {
                egress: NodeId(i as u16),
            });
        }
        assert_eq!(q.dropped(), 5);
        assert_eq!(q.pop(), Some(NodeEvent::RouteChange { egress: NodeId(0) }));
        let rest = std::iter::from_fn(|| q.pop()).count();
        assert_eq!(rest, MAX_EVENTS - 1);
    }
}
