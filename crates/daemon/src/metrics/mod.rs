//! What the opt-in HTTP port serves: the node's state as Prometheus
//! metrics (text exposition format 0.0.4) at `/metrics`, and the live
//! topology as a NetJSON NetworkGraph at `/topology`. Rendered per request
//! from the protocol state, where the counters already live.
//!
//! Crates weighed: `prometheus-client` wants long-lived metric objects
//! updated at every event, a second copy of counters the protocol keeps
//! anyway; hyper/axum want an async runtime and `tiny_http` its own
//! threads, while the node is owned by the daemon's single loop. The
//! exposition format and one HTTP/1.0 response are a few lines here.
//!
//! | module | owns |
//! |---|---|
//! | `prometheus` | the `/metrics` page: [`prometheus`], a function per group of families |
//! | `exposition` | the text format: a family's header, its samples, session labels |
//! | `netjson` | the `/topology` document: [`netjson`] |
//! | `http` | the HTTP/1.0 [`response`] |

mod exposition;
mod http;
mod netjson;
mod prometheus;

pub use http::response;
pub use netjson::{netjson, netjson_value};
pub use prometheus::{prometheus, Parts, ProcessFacts};
