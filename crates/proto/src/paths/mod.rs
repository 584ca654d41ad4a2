//! Path computation on a [`Graph`]: shortest paths, k maximally disjoint
//! paths, per-entry-point trees, and route damping.
//!
//! Every function here is deterministic: ties are broken by node and arc
//! index, and the graph's order depends only on its input.

mod damping;
mod dijkstra;
mod disjoint;
mod landmarks;
mod path;
mod radix_heap;
mod shared;
mod tree;

pub use damping::{Damping, DampingConfig, Margin};
pub use dijkstra::{shortest_path, ShortestPathTree};
pub use disjoint::{DisjointPaths, PathError};
pub use path::{Disjointness, Path};
pub use tree::{entry_tree, entry_tree_from, EntryTree};
