//! Node identifiers: how braid names a router on the wire.

/// A braid node identifier. `0xffff` is reserved ([`NodeId::NONE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct NodeId(pub u16);

impl NodeId {
    /// Reserved: "no node" (for example the egress of a tree-mode packet
    /// addressed to whichever access points serve a client).
    pub const NONE: NodeId = NodeId(0xffff);
}

impl core::fmt::Display for NodeId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "n{}", self.0)
    }
}
