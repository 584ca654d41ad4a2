//! The scenario file's schema as serde reads it: every table and field
//! the TOML may have (unknown ones are refused), with the spans errors
//! point at. Checked into a [`super::Scenario`] by the `check_*`
//! functions.

use braid_conf::Spanned;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Raw {
    pub(super) name: Option<String>,
    pub(super) description: Option<String>,
    pub(super) duration: Option<Spanned<String>>,
    pub(super) seed: Option<u64>,
    pub(super) runs: Option<u32>,
    pub(super) topology: RawTopology,
    #[serde(default)]
    pub(super) link: RawLink,
    #[serde(default)]
    pub(super) links: Vec<RawLinkOverride>,
    #[serde(default)]
    pub(super) node: RawNode,
    #[serde(default)]
    pub(super) flows: Vec<RawFlow>,
    pub(super) sweep: Option<RawSweep>,
    pub(super) random_flows: Option<RawRandomFlows>,
    #[serde(default)]
    pub(super) nodes: Vec<RawNodeEvent>,
    pub(super) radio: Option<RawRadio>,
    #[serde(default)]
    pub(super) variants: Vec<RawNode>,
    #[serde(default)]
    pub(super) strangers: Vec<RawStranger>,
    #[serde(default)]
    pub(super) path_cuts: Vec<RawPathCut>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPathCut {
    pub(super) flows: Option<Spanned<usize>>,
    pub(super) at: Option<Spanned<String>>,
    #[serde(rename = "for")]
    pub(super) lasts: Option<Spanned<String>>,
    pub(super) every: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStranger {
    pub(super) near: Vec<Spanned<String>>,
    pub(super) rate: Option<Spanned<u32>>,
    pub(super) from: Option<Spanned<String>>,
    pub(super) until: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRadio {
    pub(super) rates: Option<Spanned<Vec<String>>>,
    pub(super) queue: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRandomFlows {
    pub(super) flows: usize,
    pub(super) kind: Option<Spanned<String>>,
    pub(super) every: Option<Spanned<String>>,
    pub(super) duration: Option<Spanned<String>>,
    pub(super) size: Option<usize>,
    pub(super) interval: Option<Spanned<String>>,
    pub(super) count: Option<u64>,
    pub(super) start: Option<Spanned<String>>,
    pub(super) mode: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSweep {
    pub(super) path_loss: Option<Spanned<Vec<f64>>>,
    pub(super) path_scale: Option<Spanned<Vec<f64>>>,
    #[serde(default)]
    pub(super) modes: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTopology {
    pub(super) kind: Spanned<String>,
    pub(super) file: Option<Spanned<String>>,
    pub(super) edges: Option<usize>,
    pub(super) cross: Option<usize>,
    pub(super) max_loss: Option<f64>,
    pub(super) nodes: Option<usize>,
    pub(super) width: Option<usize>,
    pub(super) height: Option<usize>,
    pub(super) degree: Option<f64>,
    pub(super) paths: Option<usize>,
    pub(super) hops: Option<usize>,
    pub(super) links: Option<Spanned<Vec<Vec<String>>>>,
    pub(super) areas: Option<Spanned<usize>>,
    pub(super) ids: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLink {
    pub(super) loss: Option<f64>,
    pub(super) burst: Option<f64>,
    pub(super) delay: Option<Spanned<String>>,
    pub(super) jitter: Option<Spanned<String>>,
    pub(super) rate: Option<Spanned<String>>,
    pub(super) queue: Option<usize>,
    pub(super) retries: Option<u32>,
    pub(super) rate_loss: Option<Spanned<Vec<f64>>>,
    pub(super) fades_every: Option<Spanned<String>>,
    pub(super) fades_last: Option<Spanned<String>>,
    pub(super) fades_loss: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLinkOverride {
    pub(super) between: Spanned<Vec<String>>,
    pub(super) loss: Option<f64>,
    pub(super) burst: Option<f64>,
    pub(super) delay: Option<Spanned<String>>,
    pub(super) jitter: Option<Spanned<String>>,
    pub(super) rate: Option<Spanned<String>>,
    pub(super) queue: Option<usize>,
    pub(super) retries: Option<u32>,
    pub(super) rate_loss: Option<Spanned<Vec<f64>>>,
    pub(super) fades_every: Option<Spanned<String>>,
    pub(super) fades_last: Option<Spanned<String>>,
    pub(super) fades_loss: Option<f64>,
    pub(super) carrier: Option<bool>,
    #[serde(default)]
    pub(super) down: Vec<Spanned<Vec<String>>>,
    #[serde(default)]
    pub(super) fade: Vec<Spanned<(String, f64)>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNodeEvent {
    pub(super) name: Spanned<String>,
    #[serde(default)]
    pub(super) down: Vec<Spanned<Vec<String>>>,
}

impl RawLinkOverride {
    /// The override's link settings, as `[link]` writes them.
    pub(super) fn link(&self) -> RawLink {
        RawLink {
            loss: self.loss,
            burst: self.burst,
            delay: self.delay.clone(),
            jitter: self.jitter.clone(),
            rate: self.rate.clone(),
            queue: self.queue,
            retries: self.retries,
            rate_loss: self.rate_loss.clone(),
            fades_every: self.fades_every.clone(),
            fades_last: self.fades_last.clone(),
            fades_loss: self.fades_loss,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNode {
    /// Variants only: the variant's name.
    pub(super) name: Option<Spanned<String>>,
    pub(super) mode: Option<Spanned<String>>,
    pub(super) paths: Option<usize>,
    pub(super) flush: Option<Spanned<String>>,
    pub(super) reorder: Option<bool>,
    pub(super) equalise_delay: Option<bool>,
    pub(super) pace: Option<bool>,
    pub(super) report_interval: Option<Spanned<String>>,
    pub(super) metric: Option<Spanned<String>>,
    pub(super) damping: Option<bool>,
    pub(super) ignore_tx_failures: Option<bool>,
    pub(super) dead_after: Option<Spanned<u32>>,
    pub(super) rate_control: Option<Spanned<String>>,
    pub(super) persistence: Option<Spanned<u32>>,
    pub(super) binding: Option<Spanned<String>>,
    pub(super) bound: Option<usize>,
    pub(super) clients: Option<Vec<String>>,
    pub(super) auth: Option<bool>,
    pub(super) sign_origins: Option<bool>,
    pub(super) origin_check_cost: Option<Spanned<String>>,
    pub(super) origin_sign_cost: Option<Spanned<String>>,
    pub(super) watch_flooding: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFlow {
    pub(super) name: Option<String>,
    pub(super) kind: Option<Spanned<String>>,
    pub(super) bytes: Option<u64>,
    pub(super) from: Spanned<String>,
    pub(super) to: Spanned<String>,
    pub(super) size: Option<usize>,
    pub(super) interval: Option<Spanned<String>>,
    pub(super) count: Option<u64>,
    pub(super) start: Option<Spanned<String>>,
    pub(super) mode: Option<Spanned<String>>,
    pub(super) duration: Option<Spanned<String>>,
    pub(super) rate: Option<Spanned<String>>,
}
