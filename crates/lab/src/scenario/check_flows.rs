//! The checks of a lab's flows: their ends (routers with hosts, or
//! clients; a flood's two routers joined by a link), their kind and its
//! parameters, and when they run (one tcp or iperf3-udp flow at a time
//! per sending host).

use std::time::Duration;

use braid_conf::{LocatedError, Source, Spanned};

use super::check_topology::Routers;
use super::model::{Client, Congestion, FlowKind, IperfFlow, LabFlow, LabLink, URGENT_ROUNDS};
use super::raw::RawLabFlow;
use braid_conf::Findings;

const MAX_FLOW_PACKETS: u32 = 100_000;
/// How long any flow may take, and how late it may start.
const MAX_FLOW_TIME: Duration = Duration::from_secs(600);
/// What iperf3 may take to finish after its duration.
const IPERF_GRACE: Duration = Duration::from_secs(20);

/// What a flow may name as its ends: a router (its host), a client
/// (numbered after the routers), or, where a router has an uplink, the
/// internet (numbered after the clients).
pub(super) struct Ends<'a> {
    pub(super) routers: &'a Routers,
    pub(super) links: &'a [LabLink],
    pub(super) clients: &'a [Client],
}

impl Ends<'_> {
    /// The internet's end number, if the lab has one.
    fn internet(&self) -> Option<usize> {
        self.routers
            .list
            .iter()
            .any(|r| r.uplink)
            .then_some(self.routers.list.len() + self.clients.len())
    }
}

impl Ends<'_> {
    fn find(&self, src: &Source, v: &Spanned<String>, field: &str) -> Result<usize, LocatedError> {
        self.routers
            .named(v.get_ref())
            .or_else(|| {
                self.clients
                    .iter()
                    .position(|c| &c.name == v.get_ref())
                    .map(|c| self.routers.list.len() + c)
            })
            .or_else(|| self.internet().filter(|_| v.get_ref() == "internet"))
            .ok_or_else(|| {
                let internet = if self.internet().is_some() {
                    ", or internet"
                } else {
                    " (the internet is there once a router has uplink = true)"
                };
                src.err(
                    Some(v.span()),
                    field,
                    format!("no router or client named \"{}\"{internet}", v.get_ref()),
                )
            })
    }
}

/// Every flow.
pub(super) fn check_flows(p: &mut Findings, ends: &Ends, raw: &[RawLabFlow]) -> Vec<LabFlow> {
    let mut flows = Vec::new();
    for (i, f) in raw.iter().enumerate() {
        if let Some(flow) = check_flow(p, ends, &flows, i, f) {
            flows.push(flow);
        }
    }
    flows
}

/// One flow; `earlier` are the flows checked before it.
fn check_flow(
    p: &mut Findings,
    ends: &Ends,
    earlier: &[LabFlow],
    i: usize,
    f: &RawLabFlow,
) -> Option<LabFlow> {
    let src = p.src;
    let field = |k: &str| format!("flow[{i}].{k}");
    let kind_name = f.kind.as_ref().map(|k| k.get_ref().as_str());
    let urgent = kind_name == Some("urgent");
    p.clean(|p| {
        let from = p.keep(ends.find(&src, &f.from, &field("from")));
        let to = p.keep(ends.find(&src, &f.to, &field("to")));
        if let (Some(from), Some(to)) = (from, to) {
            check_flow_ends(p, ends, i, f, (from, to));
        }
        let count = p.keep(check_count(&src, &f.count, &field("count")));
        let size = p.keep(check_size(&src, &f.size, &field("size")));
        let kind = p.keep(check_kind(&src, f, i));
        // An urgent flow's rounds are seconds apart unless it says.
        let default_interval = if urgent {
            Duration::from_secs(2)
        } else {
            Duration::from_millis(20)
        };
        let interval = p.keep(src.duration(&f.interval, &field("interval"), default_interval));
        let rounds = if urgent { Some(URGENT_ROUNDS) } else { count };
        if let (Some(interval), Some(rounds)) = (interval, rounds) {
            let lasts = interval.checked_mul(rounds);
            if interval < Duration::from_micros(10) || lasts.is_none_or(|l| l > MAX_FLOW_TIME) {
                p.note(src.err(
                    f.interval.as_ref().map(|s| s.span()),
                    &field("interval"),
                    "at least 10 µs, and the flow must end within 10 minutes",
                ));
            }
        }
        // Each connection attempt is a thread for up to 2 s (handshake,
        // then its hello): 10 ms apart keeps at most 200 at once.
        if let (Some(FlowKind::Connect), Some(interval)) = (&kind, interval) {
            if interval < Duration::from_millis(10) {
                p.note(src.err(
                    f.interval.as_ref().map(|s| s.span()),
                    &field("interval"),
                    "a connect flow's attempts are at least 10 ms apart",
                ));
            }
        }
        let start = p.keep(check_start(&src, &f.start, &field("start")));
        if let (Some(kind), Some(start), Some(from)) = (&kind, start, from) {
            if overlaps(earlier, kind, start, from) {
                p.note(src.err(
                    Some(f.from.span()),
                    &field("from"),
                    "one tcp or iperf3-udp flow at a time per sending host (retransmissions are its kernel's count): start the next one 20 s after the last one's duration",
                ));
            }
        }
        let ipv6 = f.ipv6.as_ref().is_some_and(|v| *v.get_ref());
        if ipv6 && urgent {
            p.note(src.err(
                f.ipv6.as_ref().map(|v| v.span()),
                &field("ipv6"),
                "udp, tcp and iperf3-udp flows only (urgent marks IPv4's DSCP)",
            ));
        }
        // Only a udp flow takes a DSCP: checked once the kind is.
        let dscp = kind
            .as_ref()
            .and_then(|k| p.keep(check_dscp(&src, &f.dscp, *k == FlowKind::Probe, &field("dscp"))));
        Some(LabFlow {
            ipv6,
            dscp: dscp?,
            kind: kind?,
            name: f
                .name
                .clone()
                .unwrap_or_else(|| format!("{}->{}", f.from.get_ref(), f.to.get_ref())),
            from: from?,
            to: to?,
            count: count?,
            interval: interval?,
            size: size?,
            start: start?,
        })
    })
    .flatten()
}

/// A flood's ends are two routers a link joins; any other flow's ends are
/// routers with hosts, or clients.
fn check_flow_ends(
    p: &mut Findings,
    ends: &Ends,
    i: usize,
    f: &RawLabFlow,
    (from, to): (usize, usize),
) {
    let src = p.src;
    let router_count = ends.routers.list.len();
    let on_link = f
        .kind
        .as_ref()
        .is_some_and(|k| matches!(k.get_ref().as_str(), "flood" | "spoof"));
    if on_link {
        let joined = ends
            .links
            .iter()
            .any(|l| (l.a, l.b) == (from, to) || (l.a, l.b) == (to, from));
        if from >= router_count || to >= router_count || !joined {
            p.note(src.err(
                Some(f.to.span()),
                &format!("flow[{i}]"),
                "a flood or spoof runs on the link between two routers (from: where the stranger stands, or whom it spoofs; to: the router attacked)",
            ));
        }
        return;
    }
    if ends.internet() == Some(from) {
        p.note(src.err(
            Some(f.from.span()),
            &format!("flow[{i}].from"),
            "the internet is a flow's `to` only (its hosts reach it through NAT at the gateways, which lets nothing in)",
        ));
    }
    let kind = f.kind.as_ref().map_or("udp", |k| k.get_ref().as_str());
    let ipv6 = f.ipv6.as_ref().is_some_and(|v| *v.get_ref());
    if ends.internet() == Some(to)
        && (ipv6 || !matches!(kind, "udp" | "tcp" | "iperf3-udp" | "connect"))
    {
        p.note(src.err(
            Some(f.to.span()),
            &format!("flow[{i}].to"),
            "a flow to the internet is udp, tcp, iperf3-udp or connect, over IPv4",
        ));
    }
    for (end, v) in [(from, &f.from), (to, &f.to)] {
        if end < router_count && !ends.routers.list[end].host {
            p.note(src.err(
                Some(v.span()),
                &format!("flow[{i}]"),
                format!("router \"{}\" has no host (set host = true)", v.get_ref()),
            ));
        }
    }
}

/// Packets of a udp or urgent flow: 1 to [`MAX_FLOW_PACKETS`]; 500 by
/// default.
fn check_count(src: &Source, v: &Option<Spanned<u32>>, field: &str) -> Result<u32, LocatedError> {
    v.as_ref().map_or(Ok(500), |c| {
        let n = *c.get_ref();
        if (1..=MAX_FLOW_PACKETS).contains(&n) {
            Ok(n)
        } else {
            Err(src.err(Some(c.span()), field, format!("1 to {MAX_FLOW_PACKETS}")))
        }
    })
}

/// Datagram size: 16 to 1400 bytes; 160 by default.
fn check_size(
    src: &Source,
    v: &Option<Spanned<usize>>,
    field: &str,
) -> Result<usize, LocatedError> {
    v.as_ref().map_or(Ok(160), |s| {
        let n = *s.get_ref();
        if (16..=1400).contains(&n) {
            Ok(n)
        } else {
            Err(src.err(Some(s.span()), field, "16 to 1400 bytes"))
        }
    })
}

/// When a flow starts after the flows' start: at most 10 minutes.
fn check_start(
    src: &Source,
    v: &Option<Spanned<String>>,
    field: &str,
) -> Result<Duration, LocatedError> {
    let start = src.duration(v, field, Duration::ZERO)?;
    if start > MAX_FLOW_TIME {
        return Err(src.err(v.as_ref().map(|s| s.span()), field, "at most 10 minutes"));
    }
    Ok(start)
}

/// A udp flow's DSCP, 0-63; no other kind takes one.
fn check_dscp(
    src: &Source,
    v: &Option<Spanned<u8>>,
    probe: bool,
    field: &str,
) -> Result<u8, LocatedError> {
    match v {
        None => Ok(0),
        Some(d) if *d.get_ref() > 63 || !probe => Err(src.err(
            Some(d.span()),
            field,
            "a udp flow's DSCP, 0-63 (46: EF, what VoIP is marked)",
        )),
        Some(d) => Ok(*d.get_ref()),
    }
}

/// What a flow sends: its `kind`, with the fields that kind takes.
fn check_kind(src: &Source, f: &RawLabFlow, i: usize) -> Result<FlowKind, LocatedError> {
    Ok(match f.kind.as_ref().map(|k| k.get_ref().as_str()) {
        None | Some("udp") => FlowKind::Probe,
        Some("urgent") => FlowKind::Urgent,
        Some("spoof") => FlowKind::Spoof,
        Some("connect") => FlowKind::Connect,
        Some("flood") => FlowKind::Flood(check_duration(
            src,
            f,
            i,
            (Duration::from_secs(5), Duration::from_secs(60)),
            "a flood lasts 1 s to 60 s",
        )?),
        Some(kind @ ("tcp" | "iperf3-udp")) => FlowKind::Iperf(IperfFlow {
            duration: check_duration(
                src,
                f,
                i,
                (Duration::from_secs(10), MAX_FLOW_TIME),
                "1 s to 10 minutes",
            )?,
            bitrate: f
                .bitrate
                .as_ref()
                .map(|r| src.rate(r, &format!("flow[{i}].bitrate")))
                .transpose()?,
            congestion: check_congestion(src, &f.congestion, &format!("flow[{i}].congestion"))?,
            udp: kind == "iperf3-udp",
        }),
        Some(other) => {
            return Err(src.err(
                f.kind.as_ref().map(|k| k.span()),
                &format!("flow[{i}].kind"),
                format!("\"{other}\" is not udp, tcp, iperf3-udp, connect, urgent, flood or spoof"),
            ))
        }
    })
}

/// A flow's `duration`: `default` when absent, at most `max`.
fn check_duration(
    src: &Source,
    f: &RawLabFlow,
    i: usize,
    (default, max): (Duration, Duration),
    bounds: &str,
) -> Result<Duration, LocatedError> {
    let field = format!("flow[{i}].duration");
    let d = src.duration(&f.duration, &field, default)?;
    if d.is_zero() || d > max {
        return Err(src.err(f.duration.as_ref().map(|d| d.span()), &field, bounds));
    }
    Ok(d)
}

/// A tcp flow's congestion control; cubic by default.
fn check_congestion(
    src: &Source,
    v: &Option<Spanned<String>>,
    field: &str,
) -> Result<Congestion, LocatedError> {
    let Some(name) = v.as_ref() else {
        return Ok(Congestion::Cubic);
    };
    Congestion::parse(name.get_ref()).ok_or_else(|| {
        src.err(
            Some(name.span()),
            field,
            format!("\"{}\" is not cubic, reno or bbr", name.get_ref()),
        )
    })
}

/// An iperf flow's span, with the time iperf3 may take to finish.
fn iperf_span(kind: &FlowKind, start: Duration) -> Option<(Duration, Duration)> {
    match kind {
        FlowKind::Iperf(t) => Some((start, start + t.duration + IPERF_GRACE)),
        _ => None,
    }
}

/// Whether an iperf flow from `from` would run while an earlier one from
/// the same host does.
fn overlaps(earlier: &[LabFlow], kind: &FlowKind, start: Duration, from: usize) -> bool {
    let Some((a0, a1)) = iperf_span(kind, start) else {
        return false;
    };
    earlier.iter().any(|o| {
        o.from == from && iperf_span(&o.kind, o.start).is_some_and(|(b0, b1)| a0 < b1 && b0 < a1)
    })
}
