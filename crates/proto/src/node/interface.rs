//! How a node names its driver's interfaces (a leaf: the events, the
//! neighbor table and the cost overrides all speak of them).

/// An interface of the driver's, by its own number (the daemon: the
/// position of the interface in its config; the simulator: the link's
/// position among the node's links). The node only tells interfaces
/// apart; it never looks inside the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Interface(pub u16);
