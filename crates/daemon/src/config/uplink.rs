//! `[uplink]`: the prefixes a gateway serves through its uplink, which it
//! advertises only while probes beyond the uplink are answered
//! (`crate::uplink`), and the rules the table meets: at least one prefix
//! and one target, none listed twice, no prefix also in `prefixes` (it
//! would stay advertised through a dead uplink), a timeout no longer than
//! the interval, a port only for the methods that have one.

use std::net::IpAddr;
use std::time::Duration;

use braid_conf::{Findings, Spanned};
use braid_wire::Prefix;

use super::fields::{check_prefixes, in_range};
use super::schema::UplinkFile;
use crate::uplink::{Method, TrackConfig, UplinkConfig, MAX_TARGETS};

/// Round interval by default: with `down` 3 and the timeout, a silent
/// failure is acted on within 1.5 s (3 × 400 ms + 300 ms), inside the
/// 2 s an operator's VoIP call survives; a probe per target every 400 ms
/// is nothing on any uplink.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(400);
/// How long a round waits for answers by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(300);
/// Failed rounds in a row that take the uplink down, by default.
pub const DEFAULT_DOWN: u32 = 3;
/// Passed rounds in a row that bring it back, by default.
pub const DEFAULT_UP: u32 = 3;

/// Checks `[uplink]`; `fixed`: the prefixes always advertised.
pub(super) fn check_uplink(
    found: &mut Findings<'_>,
    raw: Option<&UplinkFile>,
    fixed: &[Prefix],
) -> Option<UplinkConfig> {
    let raw = raw?;
    let src = found.src;
    let prefixes = check_prefixes(found, &raw.prefixes, "uplink.prefixes");
    if raw.prefixes.is_empty() {
        found.refuse(
            None,
            "uplink.prefixes",
            "name what this gateway serves through its uplink (\"0.0.0.0/0\", \"::/0\"): \
             it is advertised only while the uplink answers",
        );
    }
    for (i, p) in prefixes.iter().enumerate() {
        let field = format!("uplink.prefixes[{i}]");
        let span = raw.prefixes.get(i).map(|v| v.span());
        if fixed.contains(p) {
            found.refuse(
                span,
                &field,
                format!("{p} is in `prefixes` too, which are advertised whatever the uplink does: list it in one place"),
            );
        } else if prefixes[..i].contains(p) {
            found.refuse(span, &field, format!("{p} is listed twice"));
        }
    }
    let targets = check_targets(found, &raw.targets);
    let method = check_method(found, raw.method.as_ref(), raw.port.as_ref());
    let interface = raw.interface.as_ref().and_then(|v| {
        let name = v.get_ref();
        if name.is_empty() || name.len() > 15 {
            found.refuse(
                Some(v.span()),
                "uplink.interface",
                format!("\"{name}\" is not an interface name (1-15 characters)"),
            );
            None
        } else {
            Some(name.clone())
        }
    });
    let interval = found
        .keep(src.duration(&raw.interval, "uplink.interval", DEFAULT_INTERVAL))
        .unwrap_or(DEFAULT_INTERVAL);
    if !(Duration::from_millis(100)..=Duration::from_secs(60)).contains(&interval) {
        found.refuse(
            raw.interval.as_ref().map(|v| v.span()),
            "uplink.interval",
            "100ms to 60s",
        );
    }
    let timeout_default = DEFAULT_TIMEOUT.min(interval);
    let timeout = found
        .keep(src.duration(&raw.timeout, "uplink.timeout", timeout_default))
        .unwrap_or(timeout_default);
    if timeout < Duration::from_millis(10) || timeout > interval {
        found.refuse(
            raw.timeout.as_ref().map(|v| v.span()),
            "uplink.timeout",
            format!(
                "10ms up to the interval ({}): a round ends before the next starts",
                humantime::format_duration(interval)
            ),
        );
    }
    let n = targets.len().max(1);
    let reliability = in_range(
        found,
        raw.reliability.as_ref(),
        "uplink.reliability",
        1..=n,
        &format!("1 to the number of targets ({n}): how many must answer for a round to pass"),
    )
    .unwrap_or(1);
    let down = in_range(found, raw.down.as_ref(), "uplink.down", 1..=100, "1 to 100")
        .unwrap_or(DEFAULT_DOWN);
    let up =
        in_range(found, raw.up.as_ref(), "uplink.up", 1..=100, "1 to 100").unwrap_or(DEFAULT_UP);
    let capacity = raw.capacity.as_ref().and_then(|v| {
        let bits = found.keep(src.rate(v, "uplink.capacity"))?;
        let kbps = bits / 1000;
        if kbps == 0 || kbps > u64::from(u32::MAX) {
            found.refuse(
                Some(v.span()),
                "uplink.capacity",
                "1kbit to 4294Gbit (advertised in kbit/s)",
            );
            return None;
        }
        Some(kbps as u32)
    });
    let preference = raw.preference.as_ref().map(|p| *p.get_ref());
    let gateway = (preference.is_some() || capacity.is_some()).then(|| Prefix::Gateway {
        preference: preference.unwrap_or(braid_wire::DEFAULT_PREFERENCE),
        capacity_kbps: capacity.unwrap_or(0),
    });
    Some(UplinkConfig {
        gateway,
        prefixes,
        method,
        track: TrackConfig {
            targets: targets.len(),
            interval,
            timeout,
            reliability,
            down,
            up,
        },
        targets,
        interface,
    })
}

/// `uplink.targets`: 1 to [`MAX_TARGETS`] addresses, none twice.
fn check_targets(found: &mut Findings<'_>, raw: &[Spanned<String>]) -> Vec<IpAddr> {
    let src = found.src;
    if raw.is_empty() || raw.len() > MAX_TARGETS {
        found.refuse(
            raw.get(MAX_TARGETS).map(|v| v.span()),
            "uplink.targets",
            format!(
                "1 to {MAX_TARGETS} addresses beyond the uplink to probe (hosts that answer \
                 while the Internet is reachable: the ISP's resolver, a public one)"
            ),
        );
    }
    let mut out: Vec<IpAddr> = Vec::new();
    for (i, v) in raw.iter().take(MAX_TARGETS).enumerate() {
        let field = format!("uplink.targets[{i}]");
        let Some(addr) = found.keep(src.value::<IpAddr>(v, &field)) else {
            continue;
        };
        if out.contains(&addr) {
            found.refuse(Some(v.span()), &field, format!("{addr} is listed twice"));
        } else if addr.is_unspecified() || addr.is_multicast() {
            found.refuse(
                Some(v.span()),
                &field,
                format!("{addr} is not a host to probe"),
            );
        } else {
            out.push(addr);
        }
    }
    out
}

/// `uplink.method` and `uplink.port`.
fn check_method(
    found: &mut Findings<'_>,
    method: Option<&Spanned<String>>,
    port: Option<&Spanned<u16>>,
) -> Method {
    let word = method.map_or("icmp", |m| m.get_ref().as_str());
    let port_or = |found: &mut Findings<'_>, default: u16| match port {
        Some(p) if *p.get_ref() == 0 => {
            found.refuse(Some(p.span()), "uplink.port", "1 to 65535");
            default
        }
        Some(p) => *p.get_ref(),
        None => default,
    };
    match word {
        "icmp" => {
            if let Some(p) = port {
                found.refuse(
                    Some(p.span()),
                    "uplink.port",
                    "ICMP echo has no port: set method = \"tcp\" or \"dns\" to probe one",
                );
            }
            Method::Icmp
        }
        "tcp" => Method::Tcp(port_or(found, 443)),
        "dns" => Method::Dns(port_or(found, 53)),
        other => {
            found.refuse(
                method.map(|m| m.span()),
                "uplink.method",
                format!("\"{other}\": one of \"icmp\" (echo), \"tcp\" (a connection to `port`, 443 by default), \"dns\" (a query to `port`, 53)"),
            );
            Method::Icmp
        }
    }
}
