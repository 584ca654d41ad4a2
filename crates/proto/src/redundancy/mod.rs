//! What happens to a packet between the ingress and the egress: the
//! redundancy modes, the ingress encoder, and the egress decoder (dedup,
//! rebuild, re-order).

pub mod dedup;
pub mod reorder;
pub mod coding;
pub mod mode;

pub use mode::{Mode, ModeError};
