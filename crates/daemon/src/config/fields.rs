//! Checks more than one table's fields share: a number in a range, a
//! list of prefixes (whole networks, IPv4 or IPv6).

use std::ops::RangeInclusive;

use braid_conf::{Findings, Spanned};
use braid_proto::classify::IpPrefix;
use braid_wire::Prefix;

/// A number that must be in `range` when given: `None` when not given or
/// refused (said as `expected`).
pub(super) fn in_range<T: PartialOrd + Copy>(
    found: &mut Findings<'_>,
    v: Option<&Spanned<T>>,
    field: &str,
    range: RangeInclusive<T>,
    expected: &str,
) -> Option<T> {
    let v = v?;
    if range.contains(v.get_ref()) {
        Some(*v.get_ref())
    } else {
        found.refuse(Some(v.span()), field, expected);
        None
    }
}

/// A list of prefixes this router serves (`prefixes`, `[uplink]
/// prefixes`: the field named `name`), IPv4 or IPv6. A prefix with host
/// bits set (198.18.2.1/24) is refused, naming the
/// network meant: a router serves whole prefixes.
pub(super) fn check_prefixes(
    found: &mut Findings<'_>,
    prefixes: &[Spanned<String>],
    name: &str,
) -> Vec<Prefix> {
    let src = found.src;
    let mut out = Vec::new();
    for (i, p) in prefixes.iter().enumerate() {
        let field = format!("{name}[{i}]");
        let Some(prefix) = found.keep(src.value::<IpPrefix>(p, &field)) else {
            continue;
        };
        let network = prefix.network();
        if network != prefix {
            found.refuse(
                Some(p.span()),
                &field,
                format!("\"{prefix}\" has host bits set: a router serves whole prefixes; write \"{network}\""),
            );
            continue;
        }
        out.push(Prefix::from(prefix));
    }
    out
}
