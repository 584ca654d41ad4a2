//! The checks of a lab's topology: its name, its routers (and their
//! indexes by name, for every section that names one), its links, and
//! its segments with their clients.

use std::collections::BTreeMap;
use std::time::Duration;

use braid_conf::{LocatedError, Source, Spanned};

use super::model::{Client, LabLink, Router, Segment};
use super::raw::{RawLabLink, RawRouter, RawSegment};
use braid_conf::Findings;

const MAX_ROUTERS: usize = 250;
const MAX_LINKS: usize = 250;
const MAX_SEGMENTS: usize = 50;
const MAX_ACCESS_POINTS: usize = 50;
const MAX_CLIENTS: usize = 100;
/// The longest delay and jitter the link emulator takes.
const MAX_DELAY: Duration = Duration::from_secs(10);

/// A router's, a segment's or a client's name: 1-8 letters or digits (it
/// is part of namespace and interface names).
fn short_name(n: &str) -> bool {
    !n.is_empty() && n.len() <= 8 && n.chars().all(|c| c.is_ascii_alphanumeric())
}

/// The lab's name: 1-12 letters, digits or '-'.
pub(super) fn check_name(src: &Source, name: &Spanned<String>) -> Result<String, LocatedError> {
    let n = name.get_ref();
    if n.is_empty() || n.len() > 12 || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(src.err(
            Some(name.span()),
            "name",
            "1-12 letters, digits or '-' (it names the namespaces)",
        ));
    }
    Ok(n.clone())
}

/// The checked routers, and their indexes by name.
#[derive(Debug, Default)]
pub(super) struct Routers {
    pub(super) list: Vec<Router>,
    index: BTreeMap<String, usize>,
}

impl Routers {
    /// The router a field names.
    pub(super) fn find(
        &self,
        src: &Source,
        v: &Spanned<String>,
        field: &str,
    ) -> Result<usize, LocatedError> {
        self.index.get(v.get_ref()).copied().ok_or_else(|| {
            src.err(
                Some(v.span()),
                field,
                format!("no router named \"{}\"", v.get_ref()),
            )
        })
    }

    /// The router named `name`, if there is one.
    pub(super) fn named(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }
}

/// 1 to [`MAX_ROUTERS`] routers, each with a short name of its own.
/// Gateways with an uplink of their own (each has its addresses in
/// 198.19.250-253: `names.rs`).
const MAX_UPLINKS: usize = 4;

pub(super) fn check_routers(p: &mut Findings, raw: &[RawRouter]) -> Routers {
    let src = p.src;
    if raw.is_empty() || raw.len() > MAX_ROUTERS {
        p.note(src.err(None, "router", format!("1 to {MAX_ROUTERS} [[router]]s")));
    }
    let mut routers = Routers::default();
    for (i, r) in raw.iter().enumerate() {
        let (n, field) = (r.name.get_ref(), format!("router[{i}].name"));
        if !short_name(n) {
            p.note(src.err(Some(r.name.span()), &field, "1-8 letters or digits"));
        } else if routers.index.insert(n.clone(), i).is_some() {
            p.note(src.err(Some(r.name.span()), &field, "listed twice"));
        }
        routers.list.push(Router {
            name: n.clone(),
            host: r.host,
            uplink: r.uplink,
            area: r.area,
        });
    }
    if routers.list.iter().filter(|r| r.uplink).count() > MAX_UPLINKS {
        p.note(src.err(
            None,
            "router",
            format!("at most {MAX_UPLINKS} routers with an uplink"),
        ));
    }
    routers
}

/// Every link, and at most [`MAX_LINKS`] of them.
pub(super) fn check_links(p: &mut Findings, routers: &Routers, raw: &[RawLabLink]) -> Vec<LabLink> {
    let links = raw
        .iter()
        .enumerate()
        .filter_map(|(j, l)| check_link(p, routers, j, l))
        .collect();
    if raw.len() > MAX_LINKS {
        p.note(p.src.err(None, "link", "at most 250 links"));
    }
    links
}

/// A link: two routers, and its impairments.
fn check_link(p: &mut Findings, routers: &Routers, j: usize, l: &RawLabLink) -> Option<LabLink> {
    let src = p.src;
    let field = |f: &str| format!("link[{j}].{f}");
    p.clean(|p| {
        let a = p.keep(routers.find(&src, &l.a, &field("a")));
        let b = p.keep(routers.find(&src, &l.b, &field("b")));
        if a.is_some() && a == b {
            p.note(src.err(Some(l.b.span()), &field("b"), "a link joins two routers"));
        }
        let loss = p.keep(check_loss(&src, &l.loss, &field("loss")));
        let burst = p.keep(check_burst(&src, &l.burst, &field("burst")));
        let rate_bps = p.keep(
            l.rate
                .as_ref()
                .map(|r| src.rate(r, &field("rate")))
                .transpose(),
        );
        // The queue is the rate limiter's: checked once the rate is.
        let queue =
            rate_bps.and_then(|rate| p.keep(check_queue(&src, &l.queue, rate, &field("queue"))));
        let delay = p.keep(src.duration(&l.delay, &field("delay"), Duration::ZERO));
        let jitter = p.keep(src.duration(&l.jitter, &field("jitter"), Duration::ZERO));
        if let (Some(d), Some(jt)) = (delay, jitter) {
            if d > MAX_DELAY || jt > MAX_DELAY {
                p.note(src.err(
                    l.delay.as_ref().map(|d| d.span()),
                    &field("delay"),
                    "at most 10 s",
                ));
            }
        }
        Some(LabLink {
            a: a?,
            b: b?,
            loss: loss?,
            burst: burst?,
            rate_bps: rate_bps?,
            queue: queue?,
            delay: delay?,
            jitter: jitter?,
        })
    })
    .flatten()
}

/// A link's mean loss: a ratio in [0, 1); none by default.
fn check_loss(src: &Source, v: &Option<Spanned<f64>>, field: &str) -> Result<f64, LocatedError> {
    v.as_ref().map_or(Ok(0.0), |v| {
        let x = *v.get_ref();
        if (0.0..1.0).contains(&x) {
            Ok(x)
        } else {
            Err(src.err(Some(v.span()), field, "a ratio in [0, 1)"))
        }
    })
}

/// A link's mean loss burst: at least one packet; one by default.
fn check_burst(src: &Source, v: &Option<Spanned<f64>>, field: &str) -> Result<f64, LocatedError> {
    v.as_ref().map_or(Ok(1.0), |v| {
        let x = *v.get_ref();
        if x >= 1.0 && x.is_finite() {
            Ok(x)
        } else {
            Err(src.err(
                Some(v.span()),
                field,
                "mean burst length in packets, at least 1",
            ))
        }
    })
}

/// A rate limiter's queue: 1 to 100,000 packets, on a link with a rate.
fn check_queue(
    src: &Source,
    v: &Option<Spanned<u32>>,
    rate_bps: Option<u64>,
    field: &str,
) -> Result<Option<u32>, LocatedError> {
    match v {
        None => Ok(None),
        Some(q) if rate_bps.is_some() && (1..=100_000).contains(q.get_ref()) => {
            Ok(Some(*q.get_ref()))
        }
        Some(q) => Err(src.err(
            Some(q.span()),
            field,
            "1 to 100,000 packets, on a link with a rate",
        )),
    }
}

/// The segments, and the clients on them (numbered across segments, in
/// the file's order).
#[derive(Debug, Default)]
pub(super) struct Segments {
    pub(super) segments: Vec<Segment>,
    pub(super) clients: Vec<Client>,
}

/// Every segment, and at most [`MAX_SEGMENTS`] of them.
pub(super) fn check_segments(p: &mut Findings, routers: &Routers, raw: &[RawSegment]) -> Segments {
    if raw.len() > MAX_SEGMENTS {
        p.note(p.src.err(None, "segment", "at most 50 segments"));
    }
    let mut out = Segments::default();
    for (s, seg) in raw.iter().enumerate() {
        let segment = check_segment(p, routers, s, seg, &mut out.clients);
        out.segments.extend(segment);
    }
    out
}

/// A segment: a short name, its access points (routers, each once) and
/// its clients (added to `clients`).
fn check_segment(
    p: &mut Findings,
    routers: &Routers,
    s: usize,
    seg: &RawSegment,
    clients: &mut Vec<Client>,
) -> Option<Segment> {
    let src = p.src;
    let field = |f: &str| format!("segment[{s}].{f}");
    p.clean(|p| {
        let n = seg.name.get_ref();
        if !short_name(n) {
            p.note(src.err(
                Some(seg.name.span()),
                &field("name"),
                "1-8 letters or digits",
            ));
        }
        let mut aps = Vec::new();
        for a in &seg.access_points {
            match p.keep(routers.find(&src, a, &field("access_points"))) {
                Some(r) if aps.contains(&r) => {
                    p.note(src.err(Some(a.span()), &field("access_points"), "listed twice"))
                }
                Some(r) => aps.push(r),
                None => {}
            }
        }
        if seg.access_points.is_empty() || seg.access_points.len() > MAX_ACCESS_POINTS {
            p.note(src.err(
                Some(seg.name.span()),
                &field("access_points"),
                "1 to 50 access points",
            ));
        }
        if seg.clients.is_empty() || seg.clients.len() > MAX_CLIENTS {
            p.note(src.err(Some(seg.name.span()), &field("clients"), "1 to 100 clients"));
        }
        for c in &seg.clients {
            if let Some(name) = p.keep(check_client(&src, routers, clients, c, &field("clients"))) {
                clients.push(Client { name, segment: s });
            }
        }
        Segment {
            name: n.clone(),
            access_points: aps,
        }
    })
}

/// A client's name: short, and not a router's, a host's or another
/// client's.
fn check_client(
    src: &Source,
    routers: &Routers,
    clients: &[Client],
    c: &Spanned<String>,
    field: &str,
) -> Result<String, LocatedError> {
    let cn = c.get_ref();
    if !short_name(cn) {
        return Err(src.err(Some(c.span()), field, "1-8 letters or digits"));
    }
    let taken = routers.named(cn).is_some()
        || clients.iter().any(|x| &x.name == cn)
        || routers.list.iter().any(|r| format!("{}h", r.name) == *cn);
    if taken {
        return Err(src.err(
            Some(c.span()),
            field,
            format!("\"{cn}\" is already the name of a router, a host or a client"),
        ));
    }
    Ok(cn.clone())
}
