//! What happens to a packet between the ingress and the egress: the
//! redundancy modes, the ingress encoder, and the egress decoder (dedup,
//! rebuild, re-order).

pub mod coding;
pub mod dedup;
pub mod mode;
pub mod reorder;

pub use mode::{Mode, ModeError};
pub mod adaptive;
mod block;
pub mod capacity;
pub mod egress;
pub mod equalise;
pub mod estimate;
pub mod ingress;
pub mod pacing;
pub mod path;
pub mod placement;
pub mod predict;
pub mod urgent;

pub use egress::{EgressConfig, EgressCounters, EgressSession, PathCounters};
pub use ingress::{
    IngressConfig, IngressCounters, IngressSession, Outgoing, PacketMeta, Payload, SendHints,
};
pub use path::PathState;
pub mod sessions;
pub mod sliding;
pub mod sliding_ask;
pub mod sliding_predict;

pub use sessions::{
    Egress, Ingress, IngressTotals, PeerPolicy, Policy, ProvenWindow, SendError, SessionLimits,
    SessionTableCounters, CLASS_CONTROL,
};
