//! `[redistribute]` and `[install]`: which of the kernel's routes this
//! router advertises into the mesh (by routing table, protocol and
//! prefix), and whether the mesh's prefixes are installed into the
//! kernel with braid's own protocol number and metric (so that FRR or
//! BIRD can pick them up), and the rules they meet: known protocol names
//! or numbers, braid's own protocol never redistributed (a loop), whole
//! prefixes as filters.

use braid_conf::{Findings, Spanned};

use super::fields::{check_prefixes, in_range};
use super::schema::{InstallFile, NameOrNumber, RedistributeFile};
use crate::routes::{InstallConfig, RedistributeConfig, DEFAULT_METRIC, DEFAULT_PROTOCOL};

/// The routing protocols' numbers by name (`/etc/iproute2/rt_protos`,
/// and FRR's own: `frr-static` is what FRR's staticd installs).
pub const PROTOCOL_NAMES: &[(&str, u8)] = &[
    ("kernel", 2),
    ("boot", 3),
    ("static", 4),
    ("ra", 9),
    ("zebra", 11),
    ("bird", 12),
    ("dhcp", 16),
    ("keepalived", 18),
    ("babel", 42),
    ("braid", DEFAULT_PROTOCOL),
    ("bgp", 186),
    ("isis", 187),
    ("ospf", 188),
    ("rip", 189),
    ("eigrp", 192),
    ("frr-static", 196),
];

/// A protocol given by name or number.
fn protocol(found: &mut Findings<'_>, v: &Spanned<NameOrNumber>, field: &str) -> Option<u8> {
    if let NameOrNumber::Number(n) = v.get_ref() {
        return Some(*n);
    }
    let text = v.get_ref().text();
    if let Some(&(_, n)) = PROTOCOL_NAMES.iter().find(|(name, _)| *name == text) {
        return Some(n);
    }
    if let Ok(n) = text.parse::<u8>() {
        return Some(n);
    }
    let names: Vec<&str> = PROTOCOL_NAMES.iter().map(|(n, _)| *n).collect();
    found.refuse(
        Some(v.span()),
        field,
        format!(
            "\"{text}\" is not a routing protocol: one of {} or a number 0-255",
            names.join(", ")
        ),
    );
    None
}

/// A routing table's number: 1-4294967295 but the kernel's `local` (255)
/// is no routing table to take routes from or put them in.
fn table(found: &mut Findings<'_>, v: Option<&Spanned<u32>>, field: &str) -> u32 {
    match v {
        Some(t) if *t.get_ref() == 0 || *t.get_ref() == 255 => {
            found.refuse(
                Some(t.span()),
                field,
                "a routing table is 1-4294967295 but 255 (the kernel's local table); main is 254",
            );
            254
        }
        Some(t) => *t.get_ref(),
        None => 254,
    }
}

/// Checks `[redistribute]`; `install_protocol`: the protocol braid's own
/// routes are installed with (never taken back).
pub(super) fn check_redistribute(
    found: &mut Findings<'_>,
    raw: Option<&RedistributeFile>,
    install_protocol: u8,
) -> Option<RedistributeConfig> {
    let raw = raw?;
    if raw.protocols.is_empty() {
        found.refuse(
            None,
            "redistribute.protocols",
            "name the routes to take (\"static\", \"ospf\", \"bgp\", \"frr-static\", ...): \
             every protocol at once would take the kernel's own interface routes too",
        );
    }
    let mut protocols = Vec::new();
    for (i, v) in raw.protocols.iter().enumerate() {
        let field = format!("redistribute.protocols[{i}]");
        let Some(p) = protocol(found, v, &field) else {
            continue;
        };
        if p == install_protocol {
            found.refuse(
                Some(v.span()),
                &field,
                format!("protocol {p} is what braid installs its own routes with ([install] protocol): taking them back would loop"),
            );
        } else if protocols.contains(&p) {
            found.refuse(
                Some(v.span()),
                &field,
                format!("protocol {p} is listed twice"),
            );
        } else {
            protocols.push(p);
        }
    }
    let within = check_prefixes(found, &raw.prefixes, "redistribute.prefixes");
    Some(RedistributeConfig {
        table: table(found, raw.table.as_ref(), "redistribute.table"),
        protocols,
        within,
    })
}

/// Checks `[install]`.
pub(super) fn check_install(
    found: &mut Findings<'_>,
    raw: Option<&InstallFile>,
) -> Option<InstallConfig> {
    let raw = raw?;
    let protocol = match &raw.protocol {
        None => DEFAULT_PROTOCOL,
        Some(v) => {
            let p = protocol(found, v, "install.protocol").unwrap_or(DEFAULT_PROTOCOL);
            if p <= 4 {
                found.refuse(
                    Some(v.span()),
                    "install.protocol",
                    format!("protocol {p} is the kernel's own (0-4): give braid a number of its own, as every routing daemon has (default {DEFAULT_PROTOCOL})"),
                );
            }
            p
        }
    };
    let metric = in_range(
        found,
        raw.metric.as_ref(),
        "install.metric",
        1..=u32::MAX,
        "a route metric is 1-4294967295",
    )
    .unwrap_or(DEFAULT_METRIC);
    Some(InstallConfig {
        table: table(found, raw.table.as_ref(), "install.table"),
        protocol,
        metric,
    })
}
