//! Which neighbors are up, on which interface, and since when each was
//! last heard: the node's neighbor table. A neighbor is up from its first
//! control message the node takes until it goes silent for the neighbor
//! timeout (when one is set), its link goes down, or its interface does.
//! Messages that arrive on an interface the driver said is down do not
//! bring anyone up (they were queued before it went). Pure: the node
//! turns what it returns into link state and events.

use std::collections::BTreeMap;
use std::time::Duration;

use braid_wire::NodeId;

use super::interface::Interface;
use crate::time::Instant;

/// What hearing a neighbor changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    /// It was not up: it is now.
    Up,
    /// It was up on another interface.
    Moved,
    /// Nothing but when it was last heard.
    Again,
    /// Not taken: the table is full, or the interface is down.
    Ignored,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    interface: Interface,
    last_heard: Instant,
}

/// The table, bounded by `max` neighbors.
#[derive(Debug)]
pub struct NeighborTable {
    up: BTreeMap<NodeId, Entry>,
    down_interfaces: Vec<Interface>,
    max: usize,
    refused: u64,
}

impl NeighborTable {
    /// An empty table that takes at most `max` neighbors.
    pub fn new(max: usize) -> Self {
        NeighborTable {
            up: BTreeMap::new(),
            down_interfaces: Vec::new(),
            max,
            refused: 0,
        }
    }

    /// `neighbor` sent a control message that arrived on `interface`.
    pub fn heard(&mut self, now: Instant, neighbor: NodeId, interface: Interface) -> Heard {
        if self.down_interfaces.contains(&interface) {
            return Heard::Ignored;
        }
        let full = self.up.len() >= self.max;
        match self.up.get_mut(&neighbor) {
            Some(e) => {
                e.last_heard = now;
                if e.interface == interface {
                    Heard::Again
                } else {
                    e.interface = interface;
                    Heard::Moved
                }
            }
            None if full => {
                self.refused += 1;
                Heard::Ignored
            }
            None => {
                self.up.insert(
                    neighbor,
                    Entry {
                        interface,
                        last_heard: now,
                    },
                );
                Heard::Up
            }
        }
    }

    /// Takes `neighbor` down; true when it was up.
    pub fn remove(&mut self, neighbor: NodeId) -> bool {
        self.up.remove(&neighbor).is_some()
    }

    /// The neighbors not heard for `timeout` or longer, taken down.
    pub fn expire(&mut self, now: Instant, timeout: Duration) -> Vec<NodeId> {
        let gone: Vec<NodeId> = self
            .up
            .iter()
            .filter(|(_, e)| now.since(e.last_heard) >= timeout)
            .map(|(&n, _)| n)
            .collect();
        for n in &gone {
            self.up.remove(n);
        }
        gone
    }

    /// When the next neighbor would be unheard for `timeout`.
    pub fn next_expiry(&self, timeout: Duration) -> Option<Instant> {
        self.up
            .values()
            .map(|e| e.last_heard)
            .min()
            .map(|t| t + timeout)
    }

    /// `interface` went down: the neighbors on it, taken down; until
    /// [`Self::interface_up`], nothing heard on it counts.
    pub fn interface_down(&mut self, interface: Interface) -> Vec<NodeId> {
        if !self.down_interfaces.contains(&interface) {
            self.down_interfaces.push(interface);
        }
        self.remove_on(interface)
    }

    /// The neighbors on `interface`, taken down (they come back when
    /// heard).
    pub fn remove_on(&mut self, interface: Interface) -> Vec<NodeId> {
        let gone: Vec<NodeId> = self
            .up
            .iter()
            .filter(|(_, e)| e.interface == interface)
            .map(|(&n, _)| n)
            .collect();
        for n in &gone {
            self.up.remove(n);
        }
        gone
    }

    /// `interface` is usable again.
    pub fn interface_up(&mut self, interface: Interface) {
        self.down_interfaces.retain(|&i| i != interface);
    }

    /// The neighbors up: (id, interface, last heard), by id.
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, Interface, Instant)> + '_ {
        self.up.iter().map(|(&n, e)| (n, e.interface, e.last_heard))
    }

    /// Neighbors up now.
    pub fn len(&self) -> usize {
        self.up.len()
    }

    /// Whether no neighbor is up.
    pub fn is_empty(&self) -> bool {
        self.up.is_empty()
    }

    /// Neighbors not taken because the table was full.
    pub fn refused(&self) -> u64 {
        self.refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn up_again_moved_and_silent_neighbors_expire() {
        let mut n = NeighborTable::new(8);
        let (a, b) = (NodeId(1), NodeId(2));
        assert_eq!(n.heard(t(0), a, Interface(0)), Heard::Up);
        assert_eq!(n.heard(t(100), a, Interface(0)), Heard::Again);
        assert_eq!(n.heard(t(200), a, Interface(1)), Heard::Moved);
        assert_eq!(n.heard(t(300), b, Interface(1)), Heard::Up);
        let timeout = Duration::from_secs(1);
        assert_eq!(n.next_expiry(timeout), Some(t(1200)));
        assert!(n.expire(t(1199), timeout).is_empty());
        assert_eq!(n.expire(t(1200), timeout), vec![a]);
        assert_eq!(n.len(), 1);
        assert!(n.remove(b) && !n.remove(b));
        assert!(n.is_empty());
    }

    #[test]
    fn a_down_interface_takes_its_neighbors_and_brings_nobody_back() {
        let mut n = NeighborTable::new(8);
        n.heard(t(0), NodeId(1), Interface(0));
        n.heard(t(0), NodeId(2), Interface(1));
        n.heard(t(0), NodeId(3), Interface(0));
        assert_eq!(n.interface_down(Interface(0)), vec![NodeId(1), NodeId(3)]);
        // A message queued before the interface went arrives after.
        assert_eq!(n.heard(t(10), NodeId(1), Interface(0)), Heard::Ignored);
        n.interface_up(Interface(0));
        assert_eq!(n.heard(t(20), NodeId(1), Interface(0)), Heard::Up);
        let up: Vec<NodeId> = n.iter().map(|(id, _, _)| id).collect();
        assert_eq!(up, vec![NodeId(1), NodeId(2)]);
    }

    #[test]
    fn bounded() {
        let mut n = NeighborTable::new(2);
        n.heard(t(0), NodeId(1), Interface(0));
        n.heard(t(0), NodeId(2), Interface(0));
        assert_eq!(n.heard(t(0), NodeId(3), Interface(0)), Heard::Ignored);
        assert_eq!((n.len(), n.refused()), (2, 1));
    }
}
