//! A hostile stranger: no braid node, no key, in radio range of some
//! nodes. [`Forger`] makes what it sends (the simulator's `[[strangers]]`
//! and the lab's flooder both use it): garbage, advertisements forged
//! under a key the network does not use (unsigned when the network uses
//! none: then they are what an unauthenticated network would take),
//! replays of control messages it heard, and data packets claiming routes
//! through their target. Deterministic: its bytes come from its own
//! seeded state. [`Stranger`] is the simulator's: a forger, the nodes in
//! its range and its rate.

use std::collections::VecDeque;
use std::time::Duration;

use braid_proto::auth::{AuthConfig, AuthKey, Authenticator};
use braid_wire::{
    ControlHeader, DataFlags, DataHeader, Group, LsaEntry, LsaLink, MessageType, NodeId, Prefix,
    RedundancyMode,
};

/// Control messages kept for replay (the most recent).
pub const HEARD: usize = 64;

/// What a forged datagram is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Random bytes (one in two of them starting like a braid LSA).
    Garbage,
    /// An advertisement signed with another key (or unsigned).
    Forged,
    /// A control message heard earlier, sent again as it was.
    Replay,
    /// A data packet claiming a route through the target.
    Data,
}

/// Makes a stranger's datagrams, a quarter of each kind in turn (data
/// instead of replays while nothing was heard).
pub struct Forger {
    heard: VecDeque<Vec<u8>>,
    state: u64,
    key: Option<Authenticator>,
    /// Datagrams made.
    pub sent: u64,
    /// Node ids are drawn below this (forged origins below 1.5 times it).
    nodes: u16,
}

/// One stranger in the simulator.
pub struct Stranger {
    /// The nodes in its range (indexes).
    pub near: Vec<u32>,
    /// Time between two datagrams to each of them.
    pub every: Duration,
    /// When it stops.
    pub until: Duration,
    pub forger: Forger,
}

impl Stranger {
    /// A stranger near `near`, in a network of `nodes` nodes that signs
    /// its control messages (`auth`) or not.
    pub fn new(
        near: Vec<u32>,
        rate: u32,
        until: Duration,
        nodes: u16,
        auth: bool,
        seed: u64,
    ) -> Self {
        Stranger {
            near,
            every: Duration::from_secs(1) / rate.max(1),
            until,
            forger: Forger::new(nodes, auth, seed),
        }
    }
}

impl Forger {
    /// A forger for a network of `nodes` node ids, signing its forgeries
    /// with a wrong key when the network signs (`signed`).
    pub fn new(nodes: u16, signed: bool, seed: u64) -> Self {
        let key = signed.then(|| {
            let key = AuthKey::new(1, b"a stranger's guess at the key....").expect("32 bytes");
            Authenticator::new(NodeId::NONE, AuthConfig { keys: vec![key] }, 1).expect("one key")
        });
        Forger {
            heard: VecDeque::new(),
            state: seed | 1,
            key,
            sent: 0,
            nodes: nodes.max(1),
        }
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A control message heard (kept for replay, the last [`HEARD`]).
    pub fn hear(&mut self, bytes: &[u8]) {
        if braid_wire::peek(bytes).is_ok_and(|t| t != MessageType::Data) {
            if self.heard.len() >= HEARD {
                self.heard.pop_front();
            }
            self.heard.push_back(bytes.to_vec());
        }
    }

    /// The next datagram for `to` (a node id), and what it is.
    pub fn datagram(&mut self, to: NodeId) -> (Kind, Vec<u8>) {
        self.sent += 1;
        match self.sent % 4 {
            0 => {
                let len = 1 + (self.next() % 160) as usize;
                let mut b: Vec<u8> = (0..len).map(|_| self.next() as u8).collect();
                if self.sent.is_multiple_of(8) {
                    b[0] = 0x13; // looks like a version-1 LSA
                }
                (Kind::Garbage, b)
            }
            1 => (Kind::Forged, self.forged_lsa(to)),
            2 if !self.heard.is_empty() => {
                let k = (self.next() as usize) % self.heard.len();
                (Kind::Replay, self.heard[k].clone())
            }
            _ => (Kind::Data, self.data(to)),
        }
    }

    /// An advertisement of a random origin (real or not) claiming a cheap
    /// link to `to` and a prefix.
    fn forged_lsa(&mut self, to: NodeId) -> Vec<u8> {
        let origin = NodeId((self.next() % (self.nodes as u64 * 3 / 2 + 1)) as u16);
        let links = [LsaLink {
            neighbor: to,
            link_id: 0,
            metric_out: 1,
            metric_in: 1,
        }];
        let prefixes = [Prefix::V4 {
            addr: [198, 18, (self.next() % 256) as u8, 0],
            len: 24,
        }];
        let seq = self.next() as u32;
        let entry = LsaEntry::new(origin, 0, seq, &links, &prefixes);
        let (key_id, mac_len) = self.key.as_ref().map_or((0, 0), |f| f.header_fields());
        let header = ControlHeader {
            key_id,
            mac_len,
            boot_index: self.next() as u32,
            counter: self.next() as u32,
            ..ControlHeader::new(MessageType::Lsa, origin)
        };
        let mut buf = vec![0u8; 256];
        let n = braid_wire::Lsa::emit_bundle(&header, &[entry], &mut buf).unwrap_or(0);
        buf.truncate(n);
        if let Some(f) = &self.key {
            f.sign(&mut buf);
        }
        buf
    }

    /// A data packet claiming to come from a random ingress straight to
    /// `to` on its way to a random egress.
    fn data(&mut self, to: NodeId) -> Vec<u8> {
        let h = DataHeader {
            flags: DataFlags::empty(),
            mode: RedundancyMode::Single,
            path: 0,
            route_ptr: 1,
            ingress: NodeId((self.next() % self.nodes as u64) as u16),
            egress: NodeId((self.next() % self.nodes as u64) as u16),
            seq: self.next() as u32,
            group: Group::NONE,
            hop_limit: 16,
            class: 1,
            epoch: self.next() as u32,
        };
        let mut buf = vec![0u8; 24 + 60];
        let Ok(n) = h.emit(&[to], &mut buf) else {
            return Vec::new();
        };
        buf.truncate(n);
        let mut inner = vec![0u8; 60];
        inner[0] = 0x45;
        inner[2..4].copy_from_slice(&60u16.to_be_bytes());
        inner[9] = 17;
        inner[16..20].copy_from_slice(&[198, 18, 0, (self.next() % 256) as u8]);
        buf.extend_from_slice(&inner);
        buf
    }
}
