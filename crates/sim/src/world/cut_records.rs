//! What the path cuts (`[[path_cuts]]`, made in `cuts.rs`) cut: per flow
//! cut, the link and when; and for the run's result, how long the flow
//! then delivered nothing (the time to route around a failure on a path
//! in use).

use braid_proto::time::Instant;

use super::traffic::Flow;
use crate::results::CutResult;
use crate::scenario::PathCut;

/// The scenario's cuts, and what they cut.
#[derive(Debug, Default)]
pub(super) struct PathCuts {
    pub(super) specs: Vec<PathCut>,
    pub(super) made: Vec<Made>,
}

/// One flow's cut: the link (`None`: its path had no link inside the
/// ingress's area, or it had no path) and when.
#[derive(Debug, Clone, Copy)]
pub(super) struct Made {
    pub(super) flow: usize,
    pub(super) link: Option<(u32, u32)>,
    pub(super) at: Instant,
    pub(super) until: Instant,
}

impl PathCuts {
    pub(super) fn new(specs: &[PathCut]) -> Self {
        PathCuts {
            specs: specs.to_vec(),
            made: Vec::new(),
        }
    }

    /// Per flow cut: the link, and the longest outage of the flow that
    /// began before the link came back and ended after it went (0: none
    /// longer than a flow's outage threshold; `None`: the flow delivered
    /// nothing from the cut to its end).
    pub(super) fn results(&self, flows: &[Flow], names: &[String]) -> Vec<CutResult> {
        let secs = |t: Instant| t.as_micros() as f64 / 1e6;
        self.made
            .iter()
            .map(|m| {
                let (at, until) = (secs(m.at), secs(m.until));
                let flow = &flows[m.flow];
                let outage_ms = flow
                    .last_arrival()
                    .is_some_and(|last| last > m.at)
                    .then(|| {
                        flow.outages()
                            .iter()
                            .filter(|o| o.from_s < until && o.from_s + o.ms / 1e3 > at)
                            .map(|o| o.ms)
                            .fold(0.0, f64::max)
                    });
                CutResult {
                    flow: m.flow,
                    link: m
                        .link
                        .map(|(a, b)| format!("{}-{}", names[a as usize], names[b as usize])),
                    at_s: at,
                    outage_ms,
                }
            })
            .collect()
    }
}
