//! Control messages: link probes and link-state advertisements.
//!
//! Every control message is a 16-byte control header, a body whose length
//! the header gives, and a MAC trailer whose length the header also gives
//! (zero while the control plane is unauthenticated). The header carries a
//! key id, the sender's boot index and a packet counter (RFC 8967's index
//! and PC), so authenticating the control plane changes no message layout:
//!
//! ```text
//!  0: ver:4 type:4 | 1: flags | 2: body length:16
//!  4: sender:16               | 6: key id | 7: MAC length
//!  8: boot index:32
//! 12: packet counter:32
//! 16: body (body length bytes) | MAC (MAC length bytes)
//! ```
//!
//! | module | owns |
//! |---|---|
//! | [`offset`] | where every field of every control message starts |
//! | `header` | the control header, a message split into its parts, the frame emitter |
//! | `probe` | small and big link probes and their reports (types 1, 2) |
//! | `lsa` | link-state advertisements and LSA bundles (type 3) |
//! | `prefix` | what an LSA's origin serves: prefixes and clients |
//! | `path_report` | an egress's per-path receive counts (type 4) |
//! | `challenge` | challenge requests and replies (type 5) |
//! | `echo` | echo requests and replies (type 6) |
//! | `session_check` | session check requests and proofs (type 7) |
//! | `repair_request` | an egress asking for more sliding-window repair (type 8) |

mod challenge;
mod echo;
mod header;
mod lsa;
pub mod offset;
mod path_report;
mod prefix;
mod probe;
mod repair_request;
mod session_check;

pub use challenge::{Challenge, ChallengeKind};
pub use echo::{Echo, EchoKind};
pub use header::{split_mac, ControlFlags, ControlHeader, ControlMessage, CONTROL_HEADER_LEN};
pub use lsa::{Lsa, LsaBundle, LsaEntry, LsaLink, ORIGIN_SIGNATURE_LEN};
pub use path_report::{PathCount, PathReport, LATEST_MASK};
pub use prefix::{Prefix, CLIENT_QUALITY_MAX, DEFAULT_PREFERENCE};
pub use probe::{Probe, ProbeKind, ProbeReport, RATE_SMALL, RATE_UNSPECIFIED};
pub use repair_request::{RepairRequest, MAX_REQUEST_COUNT, MAX_REQUEST_SPAN};
pub use session_check::{SessionCheck, SessionCheckKind};
