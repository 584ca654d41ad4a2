//! A hostile stranger in the simulator (`[[strangers]]`): no braid node,
//! no key, in radio range of some nodes. It makes the datagrams the world
//! hands those nodes: garbage, advertisements forged under a key the
//! network does not use (unsigned when the network uses none: then they
//! are what an unauthenticated network would take), replays of control
//! messages it heard them receive, and data packets claiming routes
//! through them. Deterministic: its bytes come from its own seeded state.

use std::collections::VecDeque;
use std::time::Duration;

use braid_proto::auth::{AuthConfig, AuthKey, Authenticator};
use braid_wire::{
    ControlHeader, DataFlags, DataHeader, Group, LsaEntry, LsaLink, MessageType, NodeId, Prefix,
    RedundancyMode,
};

/// Control messages kept for replay (the most recent).
pub const HEARD: usize = 64;

/// One stranger.
pub struct Stranger {
    /// The nodes in its range (indexes).
    pub near: Vec<u32>,
    /// Time between two datagrams to each of them.
    pub every: Duration,
    /// When it stops.
    pub until: Duration,
    heard: VecDeque<Vec<u8>>,
    state: u64,
    forger: Option<Authenticator>,
    /// Datagrams sent (to each node in range, once).
    pub sent: u64,
    /// Nodes the topology has (forged origins are drawn among 1.5 times as many).
    nodes: u16,
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
        let forger = auth.then(|| {
            let key = AuthKey::new(1, b"a stranger's guess at the key....").expect("32 bytes");
            Authenticator::new(NodeId::NONE, AuthConfig { keys: vec![key] }, 1).expect("one key")
        });
        Stranger {
            near,
            every: Duration::from_secs(1) / rate.max(1),
            until,
            heard: VecDeque::new(),
            state: seed | 1,
            forger,
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

    /// A control message one of its nodes received (kept for replay).
    pub fn hear(&mut self, bytes: &[u8]) {
        if braid_wire::peek(bytes).is_ok_and(|t| t != MessageType::Data) {
            if self.heard.len() >= HEARD {
                self.heard.pop_front();
            }
            self.heard.push_back(bytes.to_vec());
        }
    }

    /// The next datagram, sent to `to` (a node id).
    pub fn datagram(&mut self, to: NodeId) -> Vec<u8> {
        self.sent += 1;
        match self.sent % 4 {
            0 => {
                let len = 1 + (self.next() % 160) as usize;
                let mut b: Vec<u8> = (0..len).map(|_| self.next() as u8).collect();
                if self.sent.is_multiple_of(8) {
                    b[0] = 0x13; // looks like a version-1 LSA
                }
                b
            }
            1 => self.forged_lsa(to),
            2 if !self.heard.is_empty() => {
                let k = (self.next() as usize) % self.heard.len();
                self.heard[k].clone()
            }
            _ => self.data(to),
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
        let (key_id, mac_len) = self.forger.as_ref().map_or((0, 0), |f| f.header_fields());
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
        if let Some(f) = &self.forger {
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
