//! Checks what happens to the network during a run besides its traffic:
//! nodes that fail and restart (`[[nodes]]`) and hostile strangers in
//! range of some nodes (`[[strangers]]`).

use std::time::Duration;

use super::check_topology::known;
use super::errors::Checker;
use super::raw::{RawNodeEvent, RawStranger};
use super::spec::{NodeFailure, StrangerSpec};

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
