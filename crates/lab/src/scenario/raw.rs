//! A lab file as serde reads it (`[[router]]`, `[[link]]`, `[[flow]]`,
//! `[[event]]`, `[[variant]]`, `[[segment]]`, `[[roam]]`): every value
//! still as written, with where it was written, for the checks to turn
//! into a [`super::model::Lab`] or into located problems. Unknown fields
//! are refused here.

use braid_conf::Spanned;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLab {
    pub(super) name: Spanned<String>,
    pub(super) description: Option<String>,
    pub(super) mode: Option<Spanned<String>>,
    pub(super) paths: Option<usize>,
    pub(super) probe_interval: Option<Spanned<String>>,
    pub(super) dead_after: Option<u32>,
    pub(super) settle: Option<Spanned<String>>,
    pub(super) auth: Option<bool>,
    #[serde(rename = "router")]
    pub(super) routers: Vec<RawRouter>,
    #[serde(default, rename = "link")]
    pub(super) links: Vec<RawLabLink>,
    #[serde(default, rename = "flow")]
    pub(super) flows: Vec<RawLabFlow>,
    #[serde(default, rename = "event")]
    pub(super) events: Vec<RawEvent>,
    #[serde(default, rename = "variant")]
    pub(super) variants: Vec<RawVariant>,
    #[serde(default, rename = "segment")]
    pub(super) segments: Vec<RawSegment>,
    #[serde(default, rename = "roam")]
    pub(super) roams: Vec<RawRoam>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSegment {
    pub(super) name: Spanned<String>,
    pub(super) access_points: Vec<Spanned<String>>,
    pub(super) clients: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRoam {
    pub(super) client: Spanned<String>,
    pub(super) from: Spanned<String>,
    pub(super) to: Spanned<String>,
    pub(super) at: Spanned<String>,
    pub(super) duration: Spanned<String>,
    pub(super) overlap: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEvent {
    pub(super) at: Spanned<String>,
    pub(super) a: Option<Spanned<String>>,
    pub(super) b: Option<Spanned<String>>,
    pub(super) flow: Option<Spanned<String>>,
    pub(super) router: Option<Spanned<String>>,
    pub(super) action: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVariant {
    pub(super) name: Spanned<String>,
    pub(super) software: Option<Spanned<String>>,
    pub(super) mode: Option<Spanned<String>>,
    pub(super) hello: Option<Spanned<String>>,
    pub(super) dead: Option<Spanned<String>>,
    pub(super) bfd: Option<Spanned<String>>,
    pub(super) bfd_multiplier: Option<Spanned<u8>>,
    pub(super) datapath: Option<Spanned<String>>,
    pub(super) late_binding: Option<usize>,
    pub(super) kernel_routers: Option<Vec<Spanned<String>>>,
    pub(super) kernel_delivery: Option<Spanned<String>>,
    pub(super) client_margin: Option<u8>,
    pub(super) lan_encode: Option<bool>,
    pub(super) probe_interval: Option<Spanned<String>>,
    pub(super) dead_after: Option<u32>,
    pub(super) reorder: Option<bool>,
    pub(super) reorder_max_wait: Option<Spanned<String>>,
    pub(super) equalise_delay: Option<bool>,
    pub(super) mss_clamp: Option<bool>,
    pub(super) pace: Option<bool>,
    pub(super) urgent_copies: Option<u8>,
    pub(super) copy_window: Option<Spanned<String>>,
    pub(super) report_interval: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRouter {
    pub(super) name: Spanned<String>,
    #[serde(default)]
    pub(super) host: bool,
    #[serde(default)]
    pub(super) uplink: bool,
    #[serde(default)]
    pub(super) area: u16,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLabLink {
    pub(super) a: Spanned<String>,
    pub(super) b: Spanned<String>,
    pub(super) loss: Option<Spanned<f64>>,
    pub(super) burst: Option<Spanned<f64>>,
    pub(super) rate: Option<Spanned<String>>,
    pub(super) queue: Option<Spanned<u32>>,
    pub(super) delay: Option<Spanned<String>>,
    pub(super) jitter: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLabFlow {
    pub(super) name: Option<String>,
    pub(super) kind: Option<Spanned<String>>,
    pub(super) duration: Option<Spanned<String>>,
    pub(super) bitrate: Option<Spanned<String>>,
    pub(super) congestion: Option<Spanned<String>>,
    pub(super) from: Spanned<String>,
    pub(super) to: Spanned<String>,
    pub(super) count: Option<Spanned<u32>>,
    pub(super) interval: Option<Spanned<String>>,
    pub(super) size: Option<Spanned<usize>>,
    pub(super) start: Option<Spanned<String>>,
    pub(super) ipv6: Option<Spanned<bool>>,
    pub(super) dscp: Option<Spanned<u8>>,
}
