//! Checks what happens to the network during a run besides its traffic:
//! nodes that fail and restart (`[[nodes]]`), hostile strangers in
//! range of some nodes (`[[strangers]]`) and links cut on flows' paths
//! (`[[path_cuts]]`).

use std::time::Duration;

use super::check_topology::known;
use super::errors::Checker;
use super::raw::{RawNodeEvent, RawPathCut, RawStranger};
use super::spec::{NodeFailure, PathCut, StrangerSpec};

/// The node failures; None (recorded) when one is wrong. Node names are
/// checked when the topology is known.
pub(super) fn check_node_failures(
    ck: &mut Checker,
    raw: &[RawNodeEvent],
    names: Option<&[String]>,
) -> Option<Vec<NodeFailure>> {
    let before = ck.count();
    let mut failures = Vec::new();
    for (i, n) in raw.iter().enumerate() {
        if let Some(names) = names {
            known(ck, names, &n.name, &format!("nodes[{i}].name"));
        }
        let field = format!("nodes[{i}].down");
        for d in &n.down {
            let v = d.get_ref();
            if v.len() != 2 {
                ck.refuse(
                    Some(d.span()),
                    &field,
                    "each interval is [\"from\", \"until\"]",
                );
                continue;
            }
            let mut parse = |s: &str| {
                let parsed = humantime::parse_duration(s.trim())
                    .map_err(|e| ck.err(Some(d.span()), &field, format!("\"{s}\": {e}")));
                ck.keep(parsed)
            };
            let (Some(from), Some(until)) = (parse(&v[0]), parse(&v[1])) else {
                continue;
            };
            if until <= from {
                ck.refuse(Some(d.span()), &field, "until must be after from");
                continue;
            }
            failures.push(NodeFailure {
                name: n.name.get_ref().clone(),
                from,
                until,
            });
        }
    }
    (ck.count() == before).then_some(failures)
}

/// The strangers; None when one is wrong (recorded) or depends on what is
/// (a stranger without `until` lasts the scenario's `duration`).
pub(super) fn check_strangers(
    ck: &mut Checker,
    raw: &[RawStranger],
    names: Option<&[String]>,
    duration: Option<Duration>,
) -> Option<Vec<StrangerSpec>> {
    let before = ck.count();
    let mut complete = true;
    let mut strangers = Vec::new();
    for (i, st) in raw.iter().enumerate() {
        let field = format!("strangers[{i}]");
        if st.near.is_empty() {
            ck.refuse(None, &format!("{field}.near"), "name at least one node");
        }
        if let Some(names) = names {
            for n in &st.near {
                known(ck, names, n, &format!("{field}.near"));
            }
        }
        let rate = match &st.rate {
            None => Some(100),
            Some(r) if (1..=100_000).contains(r.get_ref()) => Some(*r.get_ref()),
            Some(r) => {
                ck.refuse(
                    Some(r.span()),
                    &format!("{field}.rate"),
                    "1 to 100,000 datagrams a second",
                );
                None
            }
        };
        let from = ck.duration(&st.from, &format!("{field}.from"), Duration::ZERO);
        let until = match (&st.until, duration) {
            (None, None) => None,
            (_, lasts) => ck.duration(
                &st.until,
                &format!("{field}.until"),
                lasts.unwrap_or_default(),
            ),
        };
        let (Some(rate), Some(from), Some(until)) = (rate, from, until) else {
            complete = false;
            continue;
        };
        if until <= from {
            ck.refuse(
                st.until.as_ref().map(|u| u.span()),
                &format!("{field}.until"),
                "until must be after from",
            );
            continue;
        }
        strangers.push(StrangerSpec {
            near: st.near.iter().map(|n| n.get_ref().clone()).collect(),
            rate,
            from,
            until,
        });
    }
    (complete && ck.count() == before).then_some(strangers)
}

/// The path cuts; None (recorded) when one is wrong: `at` is required,
/// `for` is 5 s unless given, and neither may be 0; `every` is 0 (every
/// flow's cut at once) unless given; `flows` is at least 1 (all flows
/// unless given). A cut past the scenario's end never happens.
pub(super) fn check_path_cuts(
    ck: &mut Checker,
    raw: &[RawPathCut],
    duration: Option<Duration>,
) -> Option<Vec<PathCut>> {
    let before = ck.count();
    let mut cuts = Vec::new();
    for (i, c) in raw.iter().enumerate() {
        let field = format!("path_cuts[{i}]");
        if c.at.is_none() {
            ck.refuse(None, &format!("{field}.at"), "say when the links are cut");
            continue;
        }
        let flows = match &c.flows {
            None => usize::MAX,
            Some(n) if *n.get_ref() >= 1 => *n.get_ref(),
            Some(n) => {
                ck.refuse(Some(n.span()), &format!("{field}.flows"), "at least 1");
                continue;
            }
        };
        let at = ck.duration(&c.at, &format!("{field}.at"), Duration::ZERO);
        let lasts = ck.duration(&c.lasts, &format!("{field}.for"), Duration::from_secs(5));
        let every = ck.duration(&c.every, &format!("{field}.every"), Duration::ZERO);
        let (Some(at), Some(lasts), Some(every)) = (at, lasts, every) else {
            continue;
        };
        if at.is_zero() || lasts.is_zero() {
            ck.refuse(
                c.at.as_ref().map(|a| a.span()),
                &field,
                "at and for must be more than 0",
            );
            continue;
        }
        if duration.is_some_and(|d| at + lasts > d) {
            ck.refuse(
                c.at.as_ref().map(|a| a.span()),
                &field,
                "the first cut must end within the scenario's duration",
            );
            continue;
        }
        cuts.push(PathCut {
            flows,
            at,
            lasts,
            every,
        });
    }
    (ck.count() == before).then_some(cuts)
}
