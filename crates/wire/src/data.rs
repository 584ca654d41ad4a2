//! The data header: what wraps every packet of user traffic inside braid.
//!
//! Fixed part, 20 bytes, then a compact source route of 2 bytes per transit
//! node, then the encapsulated packet:
//!
//! ```text
//!  0: ver:4 type:4 | 1-3: C U P W mode:4 path:4 rlen:6 rptr:6
//!  4: ingress:16             | 6: egress:16
//!  8: sequence:32
//! 12: data:4 repair:4 | 13: shard | 14: hop limit | 15: class
//! 16: session epoch:32
//! 20: route[0]:16 ... route[rlen-1]:16 | payload
//! ```
//!
//! See `docs/protocol.md` for field semantics and why a source route.

use crate::{first_byte, MessageType, NodeId, Reader, WireError, Writer, NIBBLE_MAX};

/// Length of the fixed part of the data header.
pub const DATA_HEADER_LEN: usize = offset::ROUTE;

/// Where each field of the data header starts (bytes from the start).
pub mod offset {
    /// Version (high nibble) and message type (low nibble).
    pub const VERSION_TYPE: usize = 0;
    /// Flags C U P W (high nibble) and the redundancy mode (low nibble).
    pub const FLAGS_MODE: usize = 1;
    /// The path (high nibble) and the route length's top four bits.
    pub const PATH_RLEN: usize = 2;
    /// The route length's low two bits and the route pointer (low 6 bits).
    pub const RLEN_RPTR: usize = 3;
    /// The ingress node id (16 bits).
    pub const INGRESS: usize = 4;
    /// The egress node id (16 bits).
    pub const EGRESS: usize = 6;
    /// The sequence number (32 bits).
    pub const SEQ: usize = 8;
    /// The group's data (high nibble) and repair (low nibble) counts.
    pub const GROUP_SHAPE: usize = 12;
    /// The shard index.
    pub const SHARD: usize = 13;
    /// The hop limit.
    pub const HOP_LIMIT: usize = 14;
    /// The traffic class.
    pub const CLASS: usize = 15;
    /// The session epoch (32 bits).
    pub const EPOCH: usize = 16;
    /// The source route (2 bytes per transit node), then the payload.
    pub const ROUTE: usize = 20;
}
/// Most transit nodes a source route can list (a route of 64 hops).
pub const MAX_ROUTE_LEN: usize = 63;
const ROUTE_FIELD: u8 = 0x3f;
/// Most shards of one kind (data or repair) in a redundancy group.
pub const MAX_GROUP_SHARDS: u8 = NIBBLE_MAX;

/// Per-packet flags (byte 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DataFlags(u8);

impl DataFlags {
    /// The sender saw congestion; an egress re-order buffer releases at once.
    pub const CONGESTION: DataFlags = DataFlags(0x80);
    /// Urgent class: scheduled ahead of bulk at every binding point.
    pub const URGENT: DataFlags = DataFlags(0x40);
    /// The payload is parity/repair, not a data packet.
    pub const PARITY: DataFlags = DataFlags(0x20);
    /// The route ends short of the egress: its last transit node is a
    /// waypoint, which routes the packet on toward the egress with a
    /// route of its own (a path longer than one route holds). Never set
    /// on a packet without a route.
    pub const WAYPOINT: DataFlags = DataFlags(0x10);
    /// The bits this version defines.
    const KNOWN: u8 = 0xf0;

    /// No flags set.
    pub const fn empty() -> Self {
        DataFlags(0)
    }
    /// The flag bits, as they sit in byte 1 of the header.
    pub const fn bits(self) -> u8 {
        self.0
    }
    /// Keeps only the bits this version defines.
    pub const fn from_bits_truncate(bits: u8) -> Self {
        DataFlags(bits & Self::KNOWN)
    }
    /// Whether every flag set in `other` is set here too.
    pub const fn contains(self, other: DataFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Sets the flags set in `other`.
    pub fn insert(&mut self, other: DataFlags) {
        self.0 |= other.0;
    }
    /// Clears the flags set in `other`.
    pub fn remove(&mut self, other: DataFlags) {
        self.0 &= !other.0;
    }
    /// The flags set in either.
    pub const fn union(self, other: DataFlags) -> Self {
        DataFlags(self.0 | other.0)
    }
}

/// How the ingress protected this packet (WISPR's RAID levels and beyond).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RedundancyMode {
    /// The best path only.
    Single = 0,
    /// Spread across paths (WISPR 0).
    Stripe = 1,
    /// Every packet on several paths (WISPR 1).
    Mirror = 2,
    /// Along the entry point's tree to every access point serving the destination; no
    /// source route.
    Tree = 3,
    /// Groups of data packets plus one XOR parity packet on a dedicated path (WISPR 4).
    Parity = 4,
    /// XOR parity with the parity path rotating (WISPR 5).
    ParityRotating = 5,
    /// Groups of m data packets plus n-m Reed-Solomon repair packets.
    Erasure = 6,
    /// Data packets in no group, and repair packets each combining the
    /// last `span` of them (a sliding-window code; the span leads the
    /// repair's payload).
    Sliding = 7,
}

impl RedundancyMode {
    /// Every mode, indexed by its wire code.
    pub const ALL: [RedundancyMode; 8] = [
        RedundancyMode::Single,
        RedundancyMode::Stripe,
        RedundancyMode::Mirror,
        RedundancyMode::Tree,
        RedundancyMode::Parity,
        RedundancyMode::ParityRotating,
        RedundancyMode::Erasure,
        RedundancyMode::Sliding,
    ];

    fn from_code(v: u8) -> Result<Self, WireError> {
        Self::ALL
            .get(v as usize)
            .copied()
            .ok_or(WireError::InvalidField {
                field: "redundancy mode",
                value: v as u32,
            })
    }
}

/// A packet's place in a parity/erasure group. `data == 0 && repair == 0`
/// means the packet belongs to no group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Group {
    /// Data packets in the group (m).
    pub data: u8,
    /// Parity/repair packets in the group (n - m).
    pub repair: u8,
    /// This packet's shard index: `0..data` for data, `data..data+repair`
    /// for repair packets (at most 29: five bits on the wire).
    pub index: u8,
    /// Interleaving depth, 1-8: the group's data packets are numbered
    /// `base + index * depth` (`depth` groups are filled in turn, so that
    /// a burst of losses on a path hits each of them less). 1 without
    /// interleaving and without a group.
    pub depth: u8,
}

/// Most groups interleaved (three bits on the wire).
pub const MAX_DEPTH: u8 = 8;
/// The shard index's bits in its byte; the interleaving depth minus one
/// is in the three above.
const INDEX_BITS: u8 = 0x1f;

impl Group {
    /// No group: all fields zero, depth 1.
    pub const NONE: Group = Group {
        data: 0,
        repair: 0,
        index: 0,
        depth: 1,
    };

    /// The sequence number of the group's first data packet, from a data
    /// packet's number (`seq - index * depth`; a repair packet carries
    /// the base itself).
    pub fn base_of(&self, seq: u32) -> u32 {
        seq.wrapping_sub(u32::from(self.index) * u32::from(self.depth))
    }

    /// The number of data shard `i` of the group that starts at `base`.
    pub fn data_seq(&self, base: u32, i: u8) -> u32 {
        base.wrapping_add(u32::from(i) * u32::from(self.depth))
    }

    /// Whether the packet belongs to no group.
    pub fn is_none(&self) -> bool {
        self.data == 0 && self.repair == 0
    }

    /// Whether the packet is one of its group's repair packets.
    pub fn is_repair(&self) -> bool {
        !self.is_none() && self.index >= self.data
    }
}

/// Where data packet `seq` (not a repair packet) stands in its session's
/// send order (see [`DataHeader::send_order`]): what a decoder that keeps
/// only sequence numbers (the kernel's) reports.
pub const fn data_send_order(seq: u32) -> u32 {
    seq.wrapping_mul(32)
}

/// The fixed part of a data header, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataHeader {
    /// Per-packet flags (congestion, urgent, parity).
    pub flags: DataFlags,
    /// How the ingress protects the session.
    pub mode: RedundancyMode,
    /// Which of the ingress's paths this copy travels (0..=15).
    pub path: u8,
    /// Index into the source route of the next node to send to.
    pub route_ptr: u8,
    /// The node where the packet entered the mesh.
    pub ingress: NodeId,
    /// The node where the packet leaves the mesh.
    pub egress: NodeId,
    /// Per-session sequence number. For a repair packet: the sequence number
    /// of the first data packet of its group.
    pub seq: u32,
    /// The packet's place in a parity/erasure group ([`Group::NONE`] if in none).
    pub group: Group,
    /// Decremented at every hop; a packet that arrives with 0 is dropped.
    pub hop_limit: u8,
    /// Traffic class: with (ingress, egress) it names the session.
    pub class: u8,
    /// Which start of the session this packet belongs to: drawn at random
    /// each time the ingress opens the session, so an egress tells a
    /// restarted ingress (a new sequence space) from a packet that merely
    /// jumps, and resets its window on a new epoch and nothing else.
    pub epoch: u32,
}

/// The transit nodes of a source route, borrowed from the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route<'a> {
    bytes: &'a [u8],
}

impl<'a> Route<'a> {
    /// Number of transit nodes.
    pub fn len(&self) -> usize {
        self.bytes.len() / 2
    }
    /// Whether the route lists no transit node.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
    /// The transit node at index `i`, if the route is that long.
    pub fn get(&self, i: usize) -> Option<NodeId> {
        let b = self.bytes.get(2 * i..2 * i + 2)?;
        Some(NodeId(u16::from_be_bytes([b[0], b[1]])))
    }
    /// The transit nodes, in route order.
    pub fn iter(&self) -> impl Iterator<Item = NodeId> + 'a {
        self.bytes
            .chunks_exact(2)
            .map(|b| NodeId(u16::from_be_bytes([b[0], b[1]])))
    }
}

/// A parsed data packet: header, route and payload, all borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataPacket<'a> {
    /// The fixed part of the header.
    pub header: DataHeader,
    /// The source route's transit nodes.
    pub route: Route<'a>,
    /// What follows the route: the encapsulated packet, or a repair payload.
    pub payload: &'a [u8],
}

/// What a node does with a data packet it holds (see [`forward_in_place`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forward {
    /// This node is the egress: decapsulate and deliver.
    Deliver,
    /// Send to this neighbor; the header was updated in place.
    To(NodeId),
    /// The hop limit ran out: drop and count.
    HopLimitExceeded,
    /// The packet reached a node its route does not name: drop and count.
    NotOnRoute,
    /// This node is the waypoint its route ends at ([`DataFlags::WAYPOINT`]):
    /// it routes the packet on toward the egress with a route of its own.
    RouteOn,
}

impl DataHeader {
    /// Bytes this header occupies with a route of `route_len` transit nodes.
    pub const fn encoded_len(route_len: usize) -> usize {
        DATA_HEADER_LEN + 2 * route_len
    }

    /// Where this packet stands in its session's send order (wrapping):
    /// data packet `seq` is `32 * seq`; repair packet j of a group comes
    /// right after the group's last data packet, at `32 * last + 1 + j`.
    /// (Interleaved groups send their repair in rounds once the last of
    /// them is full, so a repair packet may leave up to `depth - 1` data
    /// packets later than its order says; the estimator credits such a
    /// packet when it turns up.)
    /// The ingress and the egress both compute it: path reports carry
    /// the latest an egress saw on each path, so the ingress can tell the
    /// packets still in flight from the lost.
    pub fn send_order(&self) -> u32 {
        if self.group.is_repair() {
            let last = self
                .group
                .data_seq(self.seq, self.group.data.saturating_sub(1));
            let j = u32::from(self.group.index.saturating_sub(self.group.data));
            data_send_order(last).wrapping_add(1 + j)
        } else {
            data_send_order(self.seq)
        }
    }

    /// Parses a data packet. Never allocates.
    pub fn parse(buf: &[u8]) -> Result<DataPacket<'_>, WireError> {
        let mut r = Reader::new(buf);
        let first = r.u8()?;
        let ty = crate::peek(&[first])?;
        if ty != MessageType::Data {
            return Err(WireError::WrongType {
                expected: MessageType::Data as u8,
                found: ty as u8,
            });
        }
        // Bytes 1-3: C U P W | mode:4 | path:4 | rlen:6 | rptr:6.
        let b1 = r.u8()?;
        let b2 = r.u8()?;
        let b3 = r.u8()?;
        let flags = DataFlags::from_bits_truncate(b1);
        let mode = RedundancyMode::from_code(b1 & NIBBLE_MAX)?;
        let path = b2 >> 4;
        let route_len = ((b2 & NIBBLE_MAX) << 2) | (b3 >> 6);
        let route_ptr = b3 & ROUTE_FIELD;
        if route_ptr > route_len {
            return Err(WireError::InvalidField {
                field: "route pointer",
                value: route_ptr as u32,
            });
        }
        check_waypoint(flags, route_len as usize)?;
        let ingress = NodeId(r.u16()?);
        let egress = NodeId(r.u16()?);
        let seq = r.u32()?;
        let shape = r.u8()?;
        let shard = r.u8()?;
        let group = Group {
            data: shape >> 4,
            repair: shape & NIBBLE_MAX,
            index: shard & INDEX_BITS,
            depth: (shard >> 5) + 1,
        };
        validate_group(group, flags)?;
        let hop_limit = r.u8()?;
        let class = r.u8()?;
        let epoch = r.u32()?;
        let route = Route {
            bytes: r.take(2 * route_len as usize)?,
        };
        let payload = r.rest();
        Ok(DataPacket {
            header: DataHeader {
                flags,
                mode,
                path,
                route_ptr,
                ingress,
                egress,
                seq,
                group,
                hop_limit,
                class,
                epoch,
            },
            route,
            payload,
        })
    }

    /// Writes this header followed by `route` into `out`; returns the bytes
    /// written (the payload goes right after). Never allocates.
    pub fn emit(&self, route: &[NodeId], out: &mut [u8]) -> Result<usize, WireError> {
        if route.len() > MAX_ROUTE_LEN {
            return Err(WireError::TooLarge {
                field: "source route",
                value: route.len(),
            });
        }
        if self.path > NIBBLE_MAX {
            return Err(WireError::InvalidField {
                field: "path index",
                value: self.path as u32,
            });
        }
        if self.route_ptr as usize > route.len() {
            return Err(WireError::InvalidField {
                field: "route pointer",
                value: self.route_ptr as u32,
            });
        }
        check_waypoint(self.flags, route.len())?;
        if self.group.data > MAX_GROUP_SHARDS || self.group.repair > MAX_GROUP_SHARDS {
            return Err(WireError::InvalidField {
                field: "group shape",
                value: ((self.group.data as u32) << 8) | self.group.repair as u32,
            });
        }
        validate_group(self.group, self.flags)?;
        let mut w = Writer::new(out);
        w.reserve(Self::encoded_len(route.len()))?;
        w.u8(first_byte(MessageType::Data));
        let rlen = route.len() as u8;
        w.u8(self.flags.bits() | self.mode as u8);
        w.u8((self.path << 4) | (rlen >> 2));
        w.u8(((rlen & 0x03) << 6) | self.route_ptr);
        w.u16(self.ingress.0);
        w.u16(self.egress.0);
        w.u32(self.seq);
        w.u8((self.group.data << 4) | self.group.repair);
        w.u8(((self.group.depth - 1) << 5) | self.group.index);
        w.u8(self.hop_limit);
        w.u8(self.class);
        w.u32(self.epoch);
        for hop in route {
            w.u16(hop.0);
        }
        Ok(w.pos())
    }
}

/// A waypoint is the route's last transit node: a route must be there.
fn check_waypoint(flags: DataFlags, route_len: usize) -> Result<(), WireError> {
    if flags.contains(DataFlags::WAYPOINT) && route_len == 0 {
        return Err(WireError::InvalidField {
            field: "waypoint flag without a route",
            value: u32::from(flags.bits()),
        });
    }
    Ok(())
}

fn validate_group(group: Group, flags: DataFlags) -> Result<(), WireError> {
    let parity = flags.contains(DataFlags::PARITY);
    let ok = if group.is_none() {
        group.index == 0 && group.depth == 1 && !parity
    } else {
        group.index < group.data + group.repair
            && (1..=MAX_DEPTH).contains(&group.depth)
            && parity == group.is_repair()
    };
    if ok {
        Ok(())
    } else {
        Err(WireError::InvalidField {
            field: "group shard index",
            value: group.index as u32,
        })
    }
}

/// The neighbor that must have sent this packet to `me`, as its header
/// says: the node before `me` in ingress, route..., egress. `None` when
/// the header does not place `me` where a packet sent by a neighbor
/// arrives (a transit node the route pointer has not just passed, an
/// egress the route is not used up at, or the ingress itself). A driver
/// that knows which neighbor sent a packet (from the underlay address its
/// authenticated control messages come from) refuses one whose claim
/// differs: a neighbor can then inject only packets that claim to come
/// through it. Tree-mode packets carry no route and are not checked here.
pub fn previous_hop(pkt: &DataPacket<'_>, me: NodeId) -> Option<NodeId> {
    let h = &pkt.header;
    let ptr = h.route_ptr as usize;
    let before = |i: usize| match i {
        0 => Some(h.ingress),
        i => pkt.route.get(i - 1),
    };
    if h.egress == me {
        (ptr == pkt.route.len()).then(|| before(ptr)).flatten()
    } else if ptr >= 1 && pkt.route.get(ptr - 1) == Some(me) {
        before(ptr - 1)
    } else {
        None
    }
}

/// What node `me` does with a data packet whose header is `h` and whose
/// source route's transit node `i` is `route(i)`: the forwarding rule, in
/// one place, with the route pointer the packet leaves with (the hop
/// limit goes down by one when it is sent on). The ingress applies it to
/// the header it is about to write, every transit node to the packet it
/// received ([`forward_in_place`]), and the kernel's programs do the same
/// (checked against this under `BPF_PROG_TEST_RUN`).
pub fn forwarding_step(
    h: &DataHeader,
    route: impl Fn(usize) -> Option<NodeId>,
    me: NodeId,
) -> (Forward, u8) {
    if h.egress == me {
        return (Forward::Deliver, h.route_ptr);
    }
    let ptr = h.route_ptr as usize;
    // The node that should hold the packet now: the ingress before the
    // first hop, then the route entry the pointer just passed.
    let expected = if ptr == 0 {
        h.ingress
    } else {
        route(ptr - 1).unwrap_or(NodeId::NONE)
    };
    if expected != me {
        return (Forward::NotOnRoute, h.route_ptr);
    }
    if h.hop_limit == 0 {
        return (Forward::HopLimitExceeded, h.route_ptr);
    }
    match route(ptr) {
        Some(hop) => (Forward::To(hop), (ptr + 1) as u8),
        // The route is used up at a waypoint (never at the ingress: a
        // waypoint's packet has a route).
        None if h.flags.contains(DataFlags::WAYPOINT) && ptr > 0 => (Forward::RouteOn, h.route_ptr),
        None => (Forward::To(h.egress), h.route_ptr),
    }
}

/// Takes the next hop of a data packet held by node `me`, updating the
/// header in place (route pointer and hop limit): [`forwarding_step`] on
/// the parsed packet, written back through a [`DataView`].
pub fn forward_in_place(buf: &mut [u8], me: NodeId) -> Result<Forward, WireError> {
    let pkt = DataHeader::parse(buf)?;
    let (hop_limit, route) = (pkt.header.hop_limit, pkt.route);
    let (step, route_ptr) = forwarding_step(&pkt.header, |i| route.get(i), me);
    if let Forward::To(_) = step {
        let mut view = DataView::new_unchecked(buf);
        view.set_route_ptr(route_ptr);
        view.set_hop_limit(hop_limit - 1);
    }
    Ok(step)
}

/// A data packet in a buffer, its fields read and written in place at
/// their named offsets ([`offset`]), as smoltcp's `Packet<T>`: how code
/// outside this crate touches the bytes of a packet it already parsed
/// (a transit node's route pointer and hop limit, a tree copy's hop
/// limit) without indexing them itself. Reads and writes never panic: a
/// buffer too short for a field reads as 0 and ignores the write
/// ([`DataView::new_checked`] guarantees the fixed header is there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataView<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> DataView<T> {
    /// A view of `buf`, unchecked (parse it first, or use
    /// [`Self::new_checked`]).
    pub fn new_unchecked(buf: T) -> Self {
        DataView { buf }
    }

    /// A view of `buf`, which must hold a data packet that parses.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        DataHeader::parse(buf.as_ref())?;
        Ok(DataView { buf })
    }

    fn byte(&self, at: usize) -> u8 {
        self.buf.as_ref().get(at).copied().unwrap_or(0)
    }

    /// The redundancy mode's code (the low nibble of the flags byte).
    pub fn mode_code(&self) -> u8 {
        self.byte(offset::FLAGS_MODE) & NIBBLE_MAX
    }

    /// The route pointer.
    pub fn route_ptr(&self) -> u8 {
        self.byte(offset::RLEN_RPTR) & ROUTE_FIELD
    }

    /// The hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.byte(offset::HOP_LIMIT)
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buf
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> DataView<T> {
    fn set_byte(&mut self, at: usize, value: u8) {
        if let Some(b) = self.buf.as_mut().get_mut(at) {
            *b = value;
        }
    }

    /// Sets the route pointer (the route's length, in the same bytes,
    /// stays).
    pub fn set_route_ptr(&mut self, ptr: u8) {
        let b = self.byte(offset::RLEN_RPTR);
        self.set_byte(offset::RLEN_RPTR, (b & !ROUTE_FIELD) | (ptr & ROUTE_FIELD));
    }

    /// Sets the hop limit.
    pub fn set_hop_limit(&mut self, hop_limit: u8) {
        self.set_byte(offset::HOP_LIMIT, hop_limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> DataHeader {
        DataHeader {
            flags: DataFlags::URGENT,
            mode: RedundancyMode::Mirror,
            path: 2,
            route_ptr: 0,
            ingress: NodeId(1),
            egress: NodeId(9),
            seq: 0xdead_beef,
            group: Group::NONE,
            hop_limit: 16,
            class: 3,
            epoch: 0x0102_0304,
        }
    }

    #[test]
    fn emit_then_parse_gives_back_header_route_and_payload() {
        let route = [NodeId(4), NodeId(5)];
        let mut buf = [0u8; 64];
        let n = header().emit(&route, &mut buf).unwrap();
        assert_eq!(n, 24);
        buf[n..n + 3].copy_from_slice(b"abc");
        let pkt = DataHeader::parse(&buf[..n + 3]).unwrap();
        assert_eq!(pkt.header, header());
        assert_eq!(pkt.route.iter().collect::<Vec<_>>(), route);
        assert_eq!(pkt.payload, b"abc");
    }

    #[test]
    fn long_routes_up_to_63_transit_nodes() {
        let route: Vec<NodeId> = (100..163).map(NodeId).collect();
        let mut buf = vec![0u8; 256];
        let n = header().emit(&route, &mut buf).unwrap();
        assert_eq!(n, DATA_HEADER_LEN + 2 * 63);
        let pkt = DataHeader::parse(&buf[..n]).unwrap();
        assert_eq!(pkt.route.len(), 63);
        let mut at = NodeId(1);
        let mut hops = 0;
        let mut h = header();
        h.hop_limit = 255;
        h.emit(&route, &mut buf).unwrap();
        while let Forward::To(next) = forward_in_place(&mut buf[..n], at).unwrap() {
            at = next;
            hops += 1;
        }
        assert_eq!((at, hops), (NodeId(9), 64));
    }

    #[test]
    fn known_bytes() {
        // Pre-filled with a pattern, so that a byte the emitter forgets
        // shows.
        let mut buf = [0xa5u8; 20];
        header().emit(&[], &mut buf).unwrap();
        assert_eq!(
            buf,
            [0x10, 0x42, 0x20, 0x00, 0, 1, 0, 9, 0xde, 0xad, 0xbe, 0xef, 0, 0, 16, 3, 1, 2, 3, 4]
        );
    }

    #[test]
    fn forwarding_walks_the_route_then_delivers() {
        let route = [NodeId(4), NodeId(5)];
        let mut buf = [0u8; 32];
        let n = header().emit(&route, &mut buf).unwrap();
        let pkt = &mut buf[..n];
        assert_eq!(forward_in_place(pkt, NodeId(1)), Ok(Forward::To(NodeId(4))));
        // A node the route does not name refuses the packet.
        assert_eq!(forward_in_place(pkt, NodeId(5)), Ok(Forward::NotOnRoute));
        let sender = |pkt: &[u8], me| previous_hop(&DataHeader::parse(pkt).unwrap(), NodeId(me));
        assert_eq!(sender(pkt, 4), Some(NodeId(1)));
        assert_eq!(sender(pkt, 5), None, "the route has not reached 5");
        assert_eq!(sender(pkt, 9), None, "the route is not used up");
        assert_eq!(forward_in_place(pkt, NodeId(4)), Ok(Forward::To(NodeId(5))));
        assert_eq!(sender(pkt, 5), Some(NodeId(4)));
        assert_eq!(forward_in_place(pkt, NodeId(5)), Ok(Forward::To(NodeId(9))));
        assert_eq!(sender(pkt, 9), Some(NodeId(5)));
        assert_eq!(sender(pkt, 1), None, "the ingress is sent nothing");
        assert_eq!(forward_in_place(pkt, NodeId(9)), Ok(Forward::Deliver));
        assert_eq!(DataHeader::parse(pkt).unwrap().header.hop_limit, 13);
    }

    #[test]
    fn a_route_that_ends_at_a_waypoint_is_routed_on_there() {
        let mut h = header();
        h.flags.insert(DataFlags::WAYPOINT);
        let route = [NodeId(4), NodeId(5)];
        let mut buf = [0u8; 32];
        let n = h.emit(&route, &mut buf).unwrap();
        let pkt = &mut buf[..n];
        assert_eq!(forward_in_place(pkt, NodeId(1)), Ok(Forward::To(NodeId(4))));
        assert_eq!(forward_in_place(pkt, NodeId(4)), Ok(Forward::To(NodeId(5))));
        // The last route node routes it on, instead of sending it to the
        // egress; the header is left as it came.
        let before = pkt.to_vec();
        assert_eq!(forward_in_place(pkt, NodeId(5)), Ok(Forward::RouteOn));
        assert_eq!(pkt, &before[..]);
        // The egress still delivers (a waypoint next to it).
        assert_eq!(forward_in_place(pkt, NodeId(9)), Ok(Forward::Deliver));
        // No route, no waypoint: refused both ways.
        assert!(matches!(
            h.emit(&[], &mut buf),
            Err(WireError::InvalidField { .. })
        ));
        let mut plain = [0u8; 20];
        header().emit(&[], &mut plain).unwrap();
        plain[offset::FLAGS_MODE] |= DataFlags::WAYPOINT.bits();
        assert!(matches!(
            DataHeader::parse(&plain),
            Err(WireError::InvalidField { .. })
        ));
    }

    #[test]
    fn hop_limit_stops_forwarding() {
        let mut h = header();
        h.hop_limit = 0;
        let mut buf = [0u8; 20];
        h.emit(&[], &mut buf).unwrap();
        assert_eq!(
            forward_in_place(&mut buf, NodeId(1)),
            Ok(Forward::HopLimitExceeded)
        );
    }

    #[test]
    fn invalid_fields_are_typed_errors() {
        let mut buf = [0u8; 20];
        header().emit(&[], &mut buf).unwrap();
        let mut bad_mode = buf;
        bad_mode[1] = 0x48; // urgent, mode 8
        assert!(matches!(
            DataHeader::parse(&bad_mode),
            Err(WireError::InvalidField {
                field: "redundancy mode",
                ..
            })
        ));
        let mut bad_ptr = buf;
        bad_ptr[3] = 0x42; // rlen 1, rptr 2
        assert!(matches!(
            DataHeader::parse(&bad_ptr),
            Err(WireError::InvalidField {
                field: "route pointer",
                ..
            })
        ));
        let mut parity_without_group = buf;
        parity_without_group[1] |= DataFlags::PARITY.bits();
        assert!(DataHeader::parse(&parity_without_group).is_err());
        assert_eq!(
            DataHeader::parse(&buf[..19]),
            Err(WireError::Truncated { need: 20, have: 19 })
        );
        let mut route_missing = buf;
        route_missing[3] = 0x80; // rlen 2
        assert_eq!(
            DataHeader::parse(&route_missing),
            Err(WireError::Truncated { need: 24, have: 20 })
        );
    }

    #[test]
    fn emit_refuses_what_the_format_cannot_carry() {
        let mut buf = [0u8; 64];
        let long = [NodeId(1); 64];
        assert!(matches!(
            header().emit(&long, &mut buf),
            Err(WireError::TooLarge { .. })
        ));
        assert_eq!(
            header().emit(&[NodeId(2)], &mut buf[..21]),
            Err(WireError::BufferTooSmall { need: 22, have: 21 })
        );
        let mut h = header();
        h.group = Group {
            data: 3,
            repair: 1,
            index: 3,
            depth: 1,
        };
        assert!(
            h.emit(&[], &mut buf).is_err(),
            "repair shard needs PARITY flag"
        );
        h.flags.insert(DataFlags::PARITY);
        assert!(h.emit(&[], &mut buf).is_ok());
    }
}
