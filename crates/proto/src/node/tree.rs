//! Tree mode (SMesh, seed 000): a packet follows its entry point's tree
//! to every access point that serves the destination client, copied at
//! each branch; every access point on it delivers. The decision is
//! [`crate::forward::TreeTables`]; [`Trees`] makes the copies, at the
//! entry point and in transit, into the node's [`Outbox`]. No source
//! route, no dedup: each access point receives one copy per tree, and the
//! client may hear it from several (as SMesh's clients do).

use braid_wire::data::DataView;
use braid_wire::{DataHeader, DataPacket, NodeId};

use super::config::{Dest, NodeCounters, Transmit};
use super::outbox::Outbox;
use super::refusal::Refusal;
use crate::classify::{inspect, PacketInfo};
use crate::forward::{TreeDest, TreeTables};
use crate::lsdb::Lsdb;
use crate::lsgraph::LsGraph;

/// Where a tree-mode packet with this payload goes: its IP destination,
/// or the egress its header names when it is not IP (the node's own
/// messages) or an IPv4 fragment (fragments take a single path, as seed
/// 000's do: the kernel never marks them).
pub fn tree_dest(payload: &[u8], egress: NodeId) -> TreeDest {
    let fragment = payload.first().is_some_and(|b| b >> 4 == 4)
        && payload
            .get(6..8)
            .is_some_and(|f| u16::from_be_bytes([f[0], f[1]]) & 0x3fff != 0);
    match inspect(payload) {
        Ok(info) if !fragment => TreeDest::Addr(info.dst, info.v4),
        _ => TreeDest::Node(egress),
    }
}

/// The link-state view a tree lookup needs: the database, and how to
/// build its graph when the tables need one.
pub struct View<'a> {
    /// The database the tables follow.
    pub lsdb: &'a Lsdb,
    /// Builds its graph (only when a tree must be computed).
    pub graph: &'a mut dyn FnMut() -> LsGraph,
}

/// The tree tables and the copies made from them.
#[derive(Debug)]
pub struct Trees {
    /// Per entry point, this node's part of each tree.
    pub tables: TreeTables,
    /// Next hops of the packet at hand (reused).
    hops: Vec<NodeId>,
}

impl Trees {
    /// Empty tables for node `me`.
    pub fn new(me: NodeId) -> Self {
        Trees {
            tables: TreeTables::new(me),
            hops: Vec::new(),
        }
    }

    /// Looks up this node's hop on `entry`'s tree toward `dest` into
    /// `self.hops`; returns whether to deliver here too.
    fn load(
        &mut self,
        view: View<'_>,
        entry: NodeId,
        dest: TreeDest,
        c: &mut NodeCounters,
    ) -> bool {
        let hop = self.tables.hop(view.lsdb, view.graph, entry, dest);
        self.hops.clear();
        self.hops.extend_from_slice(&hop.next_hops);
        let deliver = hop.deliver;
        c.tree_overflows = self.tables.overflows;
        deliver
    }

    /// The entry point `me` sends a tree-mode packet (its header from the
    /// ingress session; `body` the user packet): a copy to each next hop
    /// of its tree. Returns whether `me` serves the destination too (the
    /// caller delivers), or `None` when the tree reaches nobody
    /// (`no_path`).
    pub fn send(
        &mut self,
        view: View<'_>,
        me: NodeId,
        mut header: DataHeader,
        body: &[u8],
        out: &mut Outbox,
        c: &mut NodeCounters,
    ) -> Option<bool> {
        let deliver = self.load(view, me, tree_dest(body, header.egress), c);
        if self.hops.is_empty() && !deliver {
            c.no_path += 1;
            return None;
        }
        header.path = 0;
        header.route_ptr = 0;
        let len = DataHeader::encoded_len(0) + body.len();
        for &next in &self.hops {
            let mut buf = out.pool.take();
            buf.resize(len, 0);
            if header.emit(&[], &mut buf).is_err() {
                c.malformed += 1;
                out.pool.give(buf);
                continue;
            }
            buf[DataHeader::encoded_len(0)..].copy_from_slice(body);
            copy_to(next, buf, out, c);
        }
        Some(deliver)
    }

    /// A tree-mode datagram `pkt` (parsed from `bytes`) from a neighbor:
    /// copies to this node's next hops on the entry point's tree. Returns
    /// whether this node serves the destination (the caller delivers the
    /// payload), or why it refused the packet. A packet this node both
    /// copies and delivers with its hop limit spent is refused
    /// (`hop_limit_exceeded`, no copies) and still delivered.
    pub fn forward(
        &mut self,
        view: View<'_>,
        pkt: &DataPacket<'_>,
        bytes: &[u8],
        out: &mut Outbox,
        c: &mut NodeCounters,
    ) -> Result<bool, (Refusal, bool)> {
        if !pkt.route.is_empty() {
            return Err((Refusal::TreeWithRoute, false));
        }
        let header = pkt.header;
        let dest = tree_dest(pkt.payload, header.egress);
        let deliver = self.load(view, header.ingress, dest, c);
        if self.hops.is_empty() && !deliver {
            return Err((Refusal::NotOnTree, false));
        }
        if !self.hops.is_empty() {
            if header.hop_limit <= 1 {
                return Err((Refusal::HopLimitExceeded, deliver));
            }
            for &next in &self.hops {
                let mut buf = out.pool.copy_of(bytes);
                DataView::new_unchecked(&mut buf[..]).set_hop_limit(header.hop_limit - 1);
                c.forwarded += 1;
                copy_to(next, buf, out, c);
            }
        }
        Ok(deliver)
    }
}

/// For a packet whose best server is `me`: another access point serving
/// its destination whose mode for it is tree mode (`in_tree_mode` says),
/// the nearest; the tree then reaches it and delivers at `me` too.
pub fn other_server_in_tree_mode(
    view: View<'_>,
    trees: &mut Trees,
    me: NodeId,
    info: &PacketInfo,
    in_tree_mode: impl Fn(NodeId, &PacketInfo) -> bool,
) -> Option<NodeId> {
    let mut servers = Vec::new();
    view.lsdb
        .clients_served(&info.dst, info.v4, me, &mut servers);
    let others: Vec<NodeId> = servers
        .into_iter()
        .map(|(s, _)| s)
        .filter(|&s| s != me)
        .collect();
    let other = trees.tables.nearest(view.lsdb, view.graph, me, &others)?;
    in_tree_mode(other, info).then_some(other)
}

/// One copy of a tree-mode datagram to `next`.
fn copy_to(next: NodeId, bytes: Vec<u8>, out: &mut Outbox, c: &mut NodeCounters) {
    c.tree_copies += 1;
    out.send(Transmit {
        dest: Dest::Neighbor(next),
        bytes,
        rate: None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsdb::LsdbConfig;
    use braid_wire::{DataFlags, Group, RedundancyMode};

    fn ipv4(dst: [u8; 4], flags_fragment: u16) -> Vec<u8> {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&28u16.to_be_bytes());
        p[6..8].copy_from_slice(&flags_fragment.to_be_bytes());
        p[9] = 17;
        p[16..20].copy_from_slice(&dst);
        p
    }

    #[test]
    fn a_packet_goes_to_its_ip_destination_unless_a_fragment_or_not_ip() {
        let egress = NodeId(9);
        let mut addr = [0u8; 16];
        addr[..4].copy_from_slice(&[198, 18, 0, 7]);
        assert_eq!(
            tree_dest(&ipv4([198, 18, 0, 7], 0), egress),
            TreeDest::Addr(addr, true)
        );
        // More fragments, or an offset: a single path to the egress.
        assert_eq!(
            tree_dest(&ipv4([198, 18, 0, 7], 0x2000), egress),
            TreeDest::Node(egress)
        );
        assert_eq!(
            tree_dest(&ipv4([198, 18, 0, 7], 0x0010), egress),
            TreeDest::Node(egress)
        );
        // Don't-fragment alone is no fragment.
        assert_eq!(
            tree_dest(&ipv4([198, 18, 0, 7], 0x4000), egress),
            TreeDest::Addr(addr, true)
        );
        assert_eq!(tree_dest(b"node message", egress), TreeDest::Node(egress));
    }

    fn tree_packet(route: &[NodeId]) -> Vec<u8> {
        let header = DataHeader {
            flags: DataFlags::empty(),
            mode: RedundancyMode::Tree,
            path: 0,
            route_ptr: 0,
            ingress: NodeId(1),
            egress: NodeId(9),
            seq: 1,
            group: Group::NONE,
            hop_limit: 8,
            class: 0,
            epoch: 1,
        };
        let mut buf = vec![0u8; DataHeader::encoded_len(route.len()) + 4];
        let n = header.emit(route, &mut buf).unwrap();
        buf[n..].copy_from_slice(b"body");
        buf
    }

    #[test]
    fn a_tree_packet_with_a_route_or_off_the_tree_is_refused_and_copies_nothing() {
        let lsdb = Lsdb::new(LsdbConfig::default());
        let mut graph = || lsdb.graph();
        let mut trees = Trees::new(NodeId(2));
        let (mut out, mut c) = (Outbox::new(8), NodeCounters::default());
        let routed = tree_packet(&[NodeId(2)]);
        let pkt = DataHeader::parse(&routed).unwrap();
        let view = View {
            lsdb: &lsdb,
            graph: &mut graph,
        };
        assert_eq!(
            trees.forward(view, &pkt, &routed, &mut out, &mut c),
            Err((Refusal::TreeWithRoute, false))
        );
        // A database that knows nothing: node 2 is on no tree of node 1.
        let plain = tree_packet(&[]);
        let pkt = DataHeader::parse(&plain).unwrap();
        let view = View {
            lsdb: &lsdb,
            graph: &mut graph,
        };
        assert_eq!(
            trees.forward(view, &pkt, &plain, &mut out, &mut c),
            Err((Refusal::NotOnTree, false))
        );
        assert_eq!((c.tree_copies, c.forwarded), (0, 0));
        assert!(out.next_transmit().is_none());
    }
}
