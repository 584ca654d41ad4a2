//! Where each neighbor is: the interface (port) and the underlay address
//! its control messages came from, so that unicast data to it goes there.
//! Who is up, and for how long, is the protocol node's to decide (its
//! neighbor table and events); this book only follows: an entry is made
//! or moved when the node takes a control message from a neighbor, and
//! removed when the node says the neighbor went down. Pure, bounded (at
//! most as many neighbors as the node tracks).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use braid_wire::NodeId;

/// One neighbor's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    /// The daemon's interface (its position in the config).
    pub port: usize,
    /// The neighbor's underlay address there.
    pub addr: SocketAddr,
}

/// What noting a place changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noted {
    New,
    /// It was elsewhere (another interface or address).
    Moved,
    Same,
    /// The book is full.
    Refused,
}

/// Places remembered per neighbor, on average over the book.
pub const PLACES_PER_NEIGHBOR: usize = 4;

/// The address book.
#[derive(Debug)]
pub struct AddressBook {
    places: BTreeMap<NodeId, Place>,
    /// The other way round: who sends from a place (data is taken only
    /// from a place an authenticated neighbor's control messages come
    /// from). Every place a neighbor was heard at while up, so that a
    /// neighbor on two links is known on both (at most
    /// [`PLACES_PER_NEIGHBOR`] per neighbor on average).
    senders: BTreeMap<(usize, IpAddr), NodeId>,
    max: usize,
}

impl AddressBook {
    pub fn new(max: usize) -> Self {
        AddressBook {
            places: BTreeMap::new(),
            senders: BTreeMap::new(),
            max,
        }
    }

    /// `neighbor`'s control message came from `place`.
    pub fn note(&mut self, neighbor: NodeId, place: Place) -> Noted {
        let full = self.places.len() >= self.max;
        match self.places.get_mut(&neighbor) {
            Some(p) if *p == place => Noted::Same,
            Some(p) => {
                *p = place;
                self.note_sender(neighbor, place);
                Noted::Moved
            }
            None if full => Noted::Refused,
            None => {
                self.places.insert(neighbor, place);
                self.note_sender(neighbor, place);
                Noted::New
            }
        }
    }

    fn note_sender(&mut self, neighbor: NodeId, place: Place) {
        let key = (place.port, place.addr.ip());
        let room = self.senders.len() < self.max.saturating_mul(PLACES_PER_NEIGHBOR);
        if room || self.senders.contains_key(&key) {
            self.senders.insert(key, neighbor);
        }
    }

    /// The neighbor whose control messages come from `place`'s interface
    /// and IP address (any UDP port: the kernel data path forwards with
    /// the port the packet came with).
    pub fn sender_at(&self, place: Place) -> Option<NodeId> {
        self.senders.get(&(place.port, place.addr.ip())).copied()
    }

    /// Every (interface, address) an authenticated neighbor sends from.
    pub fn senders(&self) -> impl Iterator<Item = (usize, IpAddr, NodeId)> + '_ {
        self.senders.iter().map(|(&(port, ip), &id)| (port, ip, id))
    }

    pub fn get(&self, neighbor: NodeId) -> Option<Place> {
        self.places.get(&neighbor).copied()
    }

    /// The node took `neighbor` down.
    pub fn remove(&mut self, neighbor: NodeId) -> Option<Place> {
        let place = self.places.remove(&neighbor)?;
        self.senders.retain(|_, n| *n != neighbor);
        Some(place)
    }

    /// Every neighbor's place, by id.
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, Place)> + '_ {
        self.places.iter().map(|(&id, &p)| (id, p))
    }

    pub fn len(&self) -> usize {
        self.places.len()
    }

    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(port: usize, last: u8) -> Place {
        Place {
            port,
            addr: SocketAddr::from(([198, 19, 0, last], 6868)),
        }
    }

    #[test]
    fn new_moved_same_removed_and_bounded() {
        let mut book = AddressBook::new(2);
        assert_eq!(book.note(NodeId(1), at(0, 1)), Noted::New);
        assert_eq!(book.note(NodeId(1), at(0, 1)), Noted::Same);
        assert_eq!(book.note(NodeId(1), at(1, 1)), Noted::Moved);
        assert_eq!(book.get(NodeId(1)), Some(at(1, 1)));
        assert_eq!(book.sender_at(at(1, 1)), Some(NodeId(1)));
        assert_eq!(
            book.sender_at(at(0, 1)),
            Some(NodeId(1)),
            "a neighbor on two links"
        );
        assert_eq!(book.note(NodeId(2), at(0, 2)), Noted::New);
        assert_eq!(book.note(NodeId(3), at(0, 3)), Noted::Refused);
        assert_eq!(book.remove(NodeId(1)), Some(at(1, 1)));
        assert_eq!(book.sender_at(at(1, 1)), None);
        assert_eq!(book.sender_at(at(0, 1)), None);
        assert_eq!(book.note(NodeId(3), at(0, 3)), Noted::New);
        assert_eq!(book.len(), 2);
    }
}
