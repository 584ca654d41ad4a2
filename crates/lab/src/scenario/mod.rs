//! Lab scenario files: the schema (`[[router]]`, `[[link]]`, `[[flow]]`,
//! `[[event]]`, `[[variant]]`, `[[segment]]`, `[[roam]]`), their checks (a
//! bad file is refused with every problem found, one `FILE:LINE: FIELD:
//! problem` per line), the checked lab, and the names and addresses it
//! derives. Every other module of the lab speaks in these types; this one
//! uses none of theirs.
//!
//! | module | owns |
//! |---|---|
//! | `raw` | the file as serde reads it: values as written, with where |
//! | `model` | the checked lab: [`Lab`] and what it holds |
//! | `parse` | [`Lab::parse`] and [`Lab::load`]: the checks, in order |
//! | `check_topology` | the name, routers, links, segments and clients |
//! | `check_flows` | flows: ends, kinds, timing |
//! | `check_events` | link and router events, roams |
//! | `check_variants` | the mode, and each variant's routing software |
//! | `names` | namespaces, interfaces, addresses, the lab's directory |

mod check_events;
mod check_flows;
mod check_topology;
mod check_variants;
mod model;
mod names;
mod parse;
mod raw;

pub use model::{
    BraidDatapath, Client, Congestion, DaemonLog, EventTarget, FlowKind, IperfFlow, Lab, LabEvent,
    LabFlow, LabLink, LabVariant, LinkAction, Ospf, Roam, Router, Segment, Software, ROAM_STEP,
    URGENT_ROUNDS,
};
/// A lab file refused: every problem found, one `FILE:LINE: FIELD:
/// problem` per line, in the order the file is checked (the one type
/// every braid file is refused with).
pub type LabFileErrors = braid_conf::LocatedErrors;
