//! Tree mode (SMesh, seed 000): a packet follows its entry point's tree
//! to every access point that serves the destination client, copied at
//! each branch; every access point on it delivers. The decision is
//! [`crate::forward::TreeTables`]; here the node sends the copies. No
//! source route, no dedup: each access point receives one copy per tree,
//! and the client may hear it from several (as SMesh's clients do).

use braid_wire::data::offset;
use braid_wire::{DataHeader, NodeId, RedundancyMode};

use super::config::{Dest, Transmit};
use super::Node;
use crate::classify::{inspect, PacketInfo};
use crate::forward::TreeDest;
use crate::redundancy::{Mode, CLASS_CONTROL};
use crate::time::Instant;

impl Node {
    /// Where a tree-mode packet with this payload goes: its IP
    /// destination, or the egress its header names when it is not IP (the
    /// node's own messages) or an IPv4 fragment (fragments take a single
    /// path, as seed 000's do: the kernel never marks them).
    fn tree_dest(payload: &[u8], egress: NodeId) -> TreeDest {
        let fragment = payload.first().is_some_and(|b| b >> 4 == 4)
            && payload
                .get(6..8)
                .is_some_and(|f| u16::from_be_bytes([f[0], f[1]]) & 0x3fff != 0);
        match inspect(payload) {
            Ok(info) if !fragment => TreeDest::Addr(info.dst, info.v4),
            _ => TreeDest::Node(egress),
        }
    }

    /// Looks up this node's hop on `entry`'s tree toward `dest` into
    /// `self.tree_hops`; returns whether to deliver here too.
    fn load_tree_hops(&mut self, entry: NodeId, dest: TreeDest) -> bool {
        let control = &self.control;
        let hop = self
            .trees
            .hop(control.lsdb(), &mut || control.graph(), entry, dest);
        self.tree_hops.clear();
        self.tree_hops.extend_from_slice(&hop.next_hops);
        let deliver = hop.deliver;
        self.counters.tree_overflows = self.trees.overflows;
        deliver
    }

    /// One copy of a tree-mode datagram to `next`.
    fn push_tree_copy(&mut self, next: NodeId, bytes: Vec<u8>) {
        self.counters.tree_copies += 1;
        self.push_out(Transmit {
            dest: Dest::Neighbor(next),
            bytes,
            rate: None,
        });
    }

    /// The entry point sends a tree-mode packet (its header from the
    /// ingress session; `body` the user packet): a copy to each next hop
    /// of its tree, and one delivered here when this node serves the
    /// destination too.
    pub(super) fn emit_tree(&mut self, mut header: DataHeader, body: &[u8]) {
        let deliver = self.load_tree_hops(self.id, Self::tree_dest(body, header.egress));
        if self.tree_hops.is_empty() && !deliver {
            self.counters.no_path += 1;
            return;
        }
        header.path = 0;
        header.route_ptr = 0;
        let len = DataHeader::encoded_len(0) + body.len();
        let hops = std::mem::take(&mut self.tree_hops);
        for &next in &hops {
            let mut buf = self.pool.take();
            buf.resize(len, 0);
            if header.emit(&[], &mut buf).is_err() {
                self.counters.malformed += 1;
                self.pool.give(buf);
                continue;
            }
            buf[DataHeader::encoded_len(0)..].copy_from_slice(body);
            self.push_tree_copy(next, buf);
        }
        self.tree_hops = hops;
        if deliver {
            let p = self.pool.copy_of(body);
            self.deliver_local(p);
        }
    }

    /// A tree-mode datagram from a neighbor: copies to this node's next
    /// hops on the entry point's tree, and delivery when this node serves
    /// the destination.
    pub(super) fn handle_tree(&mut self, now: Instant, bytes: &[u8]) {
        let pkt = match DataHeader::parse(bytes) {
            Ok(p) if p.header.mode == RedundancyMode::Tree && p.route.is_empty() => p,
            Ok(_) => {
                self.counters.malformed += 1;
                self.refuse("tree_with_route");
                return;
            }
            Err(e) => {
                self.counters.malformed += 1;
                self.refuse(e.kind());
                return;
            }
        };
        let (header, payload) = (pkt.header, pkt.payload);
        let deliver = self.load_tree_hops(header.ingress, Self::tree_dest(payload, header.egress));
        if self.tree_hops.is_empty() && !deliver {
            self.counters.not_on_tree += 1;
            self.refuse("not_on_tree");
            return;
        }
        if !self.tree_hops.is_empty() {
            if header.hop_limit <= 1 {
                self.counters.hop_limit_exceeded += 1;
                self.refuse("hop_limit_exceeded");
            } else {
                let hops = std::mem::take(&mut self.tree_hops);
                for &next in &hops {
                    let mut buf = self.pool.copy_of(bytes);
                    buf[offset::HOP_LIMIT] = header.hop_limit - 1;
                    self.counters.forwarded += 1;
                    self.push_tree_copy(next, buf);
                }
                self.tree_hops = hops;
            }
        }
        if deliver {
            if header.class == CLASS_CONTROL {
                let p = self.pool.copy_of(payload);
                self.on_node_message(now, &p);
                self.pool.give(p);
            } else {
                let p = self.pool.copy_of(payload);
                self.deliver_local(p);
            }
        }
    }

    /// For a packet whose best server is this node: another access point
    /// serving its destination when the packet's class is in tree mode
    /// (the tree then reaches it and delivers here too), else `None`.
    pub(super) fn other_server_in_tree_mode(&mut self, info: &PacketInfo) -> Option<NodeId> {
        let mut servers = Vec::new();
        self.control
            .lsdb()
            .clients_served(&info.dst, info.v4, self.id, &mut servers);
        let others: Vec<NodeId> = servers
            .into_iter()
            .map(|(s, _)| s)
            .filter(|&s| s != self.id)
            .collect();
        let other = self.nearest_of(&others)?;
        let class = self.config.classifier.classify(info).class;
        (self.config.policy.mode_for(other, class) == Mode::Tree).then_some(other)
    }
}
