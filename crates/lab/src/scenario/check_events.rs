//! The checks of what happens while a lab's flows run: events on links
//! (by their routers, or a flow's active path) and on routers (keys,
//! crashes), and clients' roams between access points.

use std::time::Duration;

use braid_conf::{LocatedError, Source, Spanned};

use super::check_topology::{Routers, Segments};
use super::model::{EventTarget, LabEvent, LabFlow, LabLink, LinkAction, Roam, ROAM_STEP};
use super::raw::{RawEvent, RawRoam};
use braid_conf::Findings;

/// The longest roam.
const MAX_ROAM: Duration = Duration::from_secs(300);

/// Every event.
pub(super) fn check_events(
    p: &mut Findings,
    routers: &Routers,
    links: &[LabLink],
    flows: &[LabFlow],
    raw: &[RawEvent],
) -> Vec<LabEvent> {
    raw.iter()
        .enumerate()
        .filter_map(|(i, e)| {
            p.clean(|p| {
                let src = p.src;
                let at = p.keep(src.duration(
                    &Some(e.at.clone()),
                    &format!("event[{i}].at"),
                    Duration::ZERO,
                ));
                let (target, action) = if e.router.is_some() {
                    router_event(p, routers, i, e)
                } else {
                    let target = p.keep(link_target(&src, routers, links, flows, i, e));
                    let action = p.keep(link_action(&src, i, e));
                    // A rate changes a rate limit: the link must have one.
                    if let (Some(EventTarget::Link(j)), Some(LinkAction::Rate(_))) =
                        (target, action)
                    {
                        if links[j].rate_bps.is_none() {
                            p.note(src.err(
                                Some(e.action.span()),
                                &format!("event[{i}].action"),
                                "a rate event changes a link's rate: give the link a `rate`",
                            ));
                        }
                    }
                    (target, action)
                };
                Some(LabEvent {
                    at: at?,
                    target: target?,
                    action: action?,
                })
            })
            .flatten()
        })
        .collect()
}

/// A router's event (`router` named): its router (or every one, `*`)
/// and action (`crash`, `keys ID[,ID]`), and nothing else named.
fn router_event(
    p: &mut Findings,
    routers: &Routers,
    i: usize,
    e: &RawEvent,
) -> (Option<EventTarget>, Option<LinkAction>) {
    let src = p.src;
    let Some(r) = &e.router else {
        return (None, None);
    };
    let target = if r.get_ref() == "*" {
        Some(EventTarget::Router(None))
    } else {
        p.keep(routers.find(&src, r, &format!("event[{i}].router")))
            .map(|k| EventTarget::Router(Some(k)))
    };
    let action = p.keep(router_action(&src, i, e));
    if let (Some(EventTarget::Router(k)), Some(LinkAction::UplinkCut | LinkAction::UplinkRestore)) =
        (target, action)
    {
        if !k.is_some_and(|k| routers.list[k].uplink) {
            p.note(src.err(
                Some(r.span()),
                &format!("event[{i}].router"),
                "an uplink event names one router with uplink = true",
            ));
        }
    }
    if e.a.is_some() || e.b.is_some() || e.flow.is_some() {
        p.note(src.err(
            Some(r.span()),
            &format!("event[{i}]"),
            "name a router, a link or a flow, not several",
        ));
    }
    (target, action)
}

/// A router event's action: `crash`, or `keys ID` or `keys ID,ID`.
fn router_action(src: &Source, i: usize, e: &RawEvent) -> Result<LinkAction, LocatedError> {
    let words: Vec<&str> = e.action.get_ref().split_whitespace().collect();
    let ids: Option<Vec<u8>> = match words.as_slice() {
        ["keys", list] => list.split(',').map(|x| x.parse().ok()).collect(),
        _ => None,
    };
    Ok(match ids.as_deref() {
        _ if e.action.get_ref() == "crash" => LinkAction::Crash,
        _ if e.action.get_ref() == "uplink cut" => LinkAction::UplinkCut,
        _ if e.action.get_ref() == "uplink restore" => LinkAction::UplinkRestore,
        Some([first]) => LinkAction::Keys {
            first: *first,
            second: None,
        },
        Some([first, second]) if first != second => LinkAction::Keys {
            first: *first,
            second: Some(*second),
        },
        _ => {
            return Err(src.err(
                Some(e.action.span()),
                &format!("event[{i}].action"),
                "a router's event is \"crash\" (kill -9, start again), \"keys ID\" or \"keys ID,ID\" (two different key ids, 0-255; the first signs), \"uplink cut\" or \"uplink restore\" (its ISP drops everything from it, silently; or no longer)",
            ))
        }
    })
}

/// A link event's link: by its two routers, or a flow's active path.
fn link_target(
    src: &Source,
    routers: &Routers,
    links: &[LabLink],
    flows: &[LabFlow],
    i: usize,
    e: &RawEvent,
) -> Result<EventTarget, LocatedError> {
    match (&e.a, &e.b, &e.flow) {
        (Some(ea), Some(eb), None) => {
            let (a, b) = (
                routers.find(src, ea, &format!("event[{i}].a"))?,
                routers.find(src, eb, &format!("event[{i}].b"))?,
            );
            links
                .iter()
                .position(|l| (l.a, l.b) == (a, b) || (l.a, l.b) == (b, a))
                .map(EventTarget::Link)
                .ok_or_else(|| {
                    src.err(
                        Some(eb.span()),
                        &format!("event[{i}]"),
                        "no link joins these routers",
                    )
                })
        }
        (None, None, Some(f)) => flows
            .iter()
            .position(|x| &x.name == f.get_ref())
            .map(EventTarget::FirstHopOf)
            .ok_or_else(|| {
                src.err(
                    Some(f.span()),
                    &format!("event[{i}].flow"),
                    format!("no flow named \"{}\"", f.get_ref()),
                )
            }),
        _ => Err(src.err(
            Some(e.action.span()),
            &format!("event[{i}]"),
            "name either a link (a and b) or a flow (its active path's first link)",
        )),
    }
}

/// A link event's action.
fn link_action(src: &Source, i: usize, e: &RawEvent) -> Result<LinkAction, LocatedError> {
    let field = format!("event[{i}].action");
    Ok(match e.action.get_ref().as_str() {
        "blackhole" => LinkAction::Blackhole,
        "restore" => LinkAction::Restore,
        "down" => LinkAction::Down,
        "up" => LinkAction::Up,
        rate if rate.starts_with("rate ") => {
            let value = Spanned::new(e.action.span(), rate["rate ".len()..].to_string());
            LinkAction::Rate(src.rate(&value, &field)?)
        }
        loss if loss.starts_with("loss ") => {
            let p = loss["loss ".len()..].trim();
            match p.parse::<f64>() {
                Ok(p) if (0.0..1.0).contains(&p) => LinkAction::Loss((p * 1000.0).round() as u16),
                _ => {
                    return Err(src.err(
                        Some(e.action.span()),
                        &field,
                        format!("\"{p}\" is not a loss from 0 up to (not including) 1, e.g. \"loss 0.1\""),
                    ))
                }
            }
        }
        other => {
            return Err(src.err(
                Some(e.action.span()),
                &field,
                format!("\"{other}\" is not blackhole, restore, down, up, rate RATE (e.g. \"rate 20Mbit\") or loss P (e.g. \"loss 0.1\")"),
            ))
        }
    })
}

/// Every roam.
pub(super) fn check_roams(
    p: &mut Findings,
    routers: &Routers,
    segments: &Segments,
    raw: &[RawRoam],
) -> Vec<Roam> {
    raw.iter()
        .enumerate()
        .filter_map(|(i, r)| {
            p.clean(|p| check_roam(p, routers, segments, i, r))
                .flatten()
        })
        .collect()
}

/// A roam: a client, from one of its segment's access points to another,
/// when, for how long, and how long both hear it.
fn check_roam(
    p: &mut Findings,
    routers: &Routers,
    segments: &Segments,
    i: usize,
    r: &RawRoam,
) -> Option<Roam> {
    let src = p.src;
    let field = |f: &str| format!("roam[{i}].{f}");
    let client = p.keep(
        segments
            .clients
            .iter()
            .position(|c| &c.name == r.client.get_ref())
            .ok_or_else(|| {
                src.err(
                    Some(r.client.span()),
                    &field("client"),
                    format!("no client named \"{}\"", r.client.get_ref()),
                )
            }),
    );
    // Its access points are its segment's: checked once the client is.
    let aps = client.and_then(|c| {
        let segment = &segments.segments[segments.clients[c].segment];
        let ap = |v, f: &str| {
            let at = routers.find(&src, v, &field(f))?;
            if segment.access_points.contains(&at) {
                Ok(at)
            } else {
                Err(src.err(
                    Some(v.span()),
                    &field(f),
                    format!(
                        "\"{}\" is not an access point of segment {}",
                        v.get_ref(),
                        segment.name
                    ),
                ))
            }
        };
        let from = p.keep(ap(&r.from, "from"));
        let to = p.keep(ap(&r.to, "to"));
        if from.is_some() && from == to {
            p.note(src.err(
                Some(r.to.span()),
                &field("to"),
                "a roam goes to another access point",
            ));
        }
        Some((from?, to?))
    });
    let at = p.keep(src.duration(&Some(r.at.clone()), &field("at"), Duration::ZERO));
    let duration = p.keep(check_roam_duration(&src, r, &field("duration")));
    let overlap = duration.and_then(|d| {
        let overlap = p.keep(src.duration(&r.overlap, &field("overlap"), Duration::ZERO))?;
        if overlap >= d {
            p.note(src.err(
                r.overlap.as_ref().map(|v| v.span()),
                &field("overlap"),
                "shorter than the roam's duration",
            ));
        }
        Some(overlap)
    });
    let (from, to) = aps?;
    Some(Roam {
        client: client?,
        from,
        to,
        at: at?,
        duration: duration?,
        overlap: overlap?,
    })
}

/// A roam's duration: 250 ms (a loss step) to 5 minutes.
fn check_roam_duration(src: &Source, r: &RawRoam, field: &str) -> Result<Duration, LocatedError> {
    let duration = src.duration(&Some(r.duration.clone()), field, Duration::ZERO)?;
    if duration < ROAM_STEP || duration > MAX_ROAM {
        return Err(src.err(Some(r.duration.span()), field, "250 ms to 5 minutes"));
    }
    Ok(duration)
}
