//! Checks how the nodes run: the `[node]` settings, each named
//! `[[variants]]` entry, and the `[radio]` section (with what needs one:
//! rate control, hand-overs, loss per rate).

use std::time::Duration;

use braid_conf::Spanned;
use braid_proto::linkest::MetricKind;

use super::check_sweep::LinkModels;
use super::errors::Checker;
use super::raw::{Raw, RawNode, RawRadio};
use super::spec::{NodeSettings, NodeVariant, MAX_PERSISTENCE};
use crate::radio::{RadioSpec, RateControl};

/// The `[node]` settings and the variants (each None when wrong, in the
/// file's order), problems recorded.
pub(super) fn check_node_and_variants(
    ck: &mut Checker,
    raw: &Raw,
) -> (Option<NodeSettings>, Vec<Option<NodeVariant>>) {
    if let Some(n) = &raw.node.name {
        ck.refuse(
            Some(n.span()),
            "node.name",
            "[node] has no name: a name is for [[variants]]",
        );
    }
    let node = check_node(ck, &raw.node, "node");
    let mut names: Vec<&str> = Vec::new();
    let mut variants = Vec::new();
    for (i, v) in raw.variants.iter().enumerate() {
        let field = format!("variants[{i}]");
        let name = match &v.name {
            None => {
                ck.refuse(None, &format!("{field}.name"), "each variant needs a name");
                None
            }
            Some(name) if names.contains(&name.get_ref().as_str()) => {
                ck.refuse(
                    Some(name.span()),
                    &format!("{field}.name"),
                    format!("two variants are named \"{}\"", name.get_ref()),
                );
                None
            }
            Some(name) => {
                names.push(name.get_ref());
                Some(name.get_ref().clone())
            }
        };
        let settings = check_node(ck, v, &field);
        variants.push(
            name.zip(settings)
                .map(|(name, settings)| NodeVariant { name, settings }),
        );
    }
    if !raw.variants.is_empty() && raw.sweep.as_ref().is_some_and(|s| !s.modes.is_empty()) {
        ck.refuse(
            None,
            "variants",
            "use either [[variants]] or sweep.modes, not both (a variant can set mode)",
        );
    }
    (node, variants)
}

/// One set of node settings (`[node]` or a variant, named `field`).
fn check_node(ck: &mut Checker, raw: &RawNode, field: &str) -> Option<NodeSettings> {
    let before = ck.count();
    let metric = raw.metric.as_ref().and_then(|m| metric(ck, m, field));
    let rate_control = raw
        .rate_control
        .as_ref()
        .and_then(|r| rate_control(ck, r, field));
    let persistence = match &raw.persistence {
        None => None,
        Some(p) if (1..=MAX_PERSISTENCE).contains(p.get_ref()) => Some(*p.get_ref()),
        Some(p) => {
            ck.refuse(
                Some(p.span()),
                &format!("{field}.persistence"),
                format!(
                    "{} hand-overs: 1 to {MAX_PERSISTENCE} (1: 802.11 alone; SrcRR used 40)",
                    p.get_ref()
                ),
            );
            None
        }
    };
    let dead_after = match &raw.dead_after {
        None => Some(None),
        Some(d) if (2..=100).contains(d.get_ref()) => Some(Some(*d.get_ref())),
        Some(d) => {
            ck.refuse(
                Some(d.span()),
                &format!("{field}.dead_after"),
                "2 to 100 small-probe intervals (as the daemon's [probes] dead_after)",
            );
            None
        }
    };
    let bound = match (&raw.binding, raw.bound) {
        (None, None) => None,
        (b, n) => match b.as_ref().map_or("late", |b| b.get_ref().as_str()) {
            "late" => Some(Some(n.unwrap_or(2).max(1))),
            "early" => Some(None),
            other => {
                ck.refuse(
                    b.as_ref().map(|b| b.span()),
                    &format!("{field}.binding"),
                    format!("unknown binding \"{other}\" (late, early)"),
                );
                None
            }
        },
    };
    let mode = ck.optional_mode(&raw.mode, &format!("{field}.mode"));
    let flush = match &raw.flush {
        None => Some(None),
        Some(_) => ck
            .duration(&raw.flush, &format!("{field}.flush"), Duration::ZERO)
            .map(Some),
    };
    let report_interval = match &raw.report_interval {
        None => Some(None),
        Some(v) => ck
            .duration(
                &raw.report_interval,
                &format!("{field}.report_interval"),
                Duration::ZERO,
            )
            .and_then(|d| {
                if braid_proto::node::PATH_REPORT_INTERVALS.contains(&d) {
                    Some(Some(d))
                } else {
                    ck.refuse(
                        Some(v.span()),
                        &format!("{field}.report_interval"),
                        braid_proto::node::PATH_REPORT_INTERVALS_TEXT.to_string(),
                    );
                    None
                }
            }),
    };
    // Processing time charged per origin-signature check and signature.
    let mut cost = |v: &Option<Spanned<String>>, name: &str| match v {
        None => Some(None),
        Some(_) => ck
            .duration(v, &format!("{field}.{name}"), Duration::ZERO)
            .map(Some),
    };
    let check_cost = cost(&raw.origin_check_cost, "origin_check_cost");
    let sign_cost = cost(&raw.origin_sign_cost, "origin_sign_cost");
    let (Some(mode), Some(flush), Some(report_interval), Some(check_cost), Some(sign_cost)) =
        (mode, flush, report_interval, check_cost, sign_cost)
    else {
        return None;
    };
    (ck.count() == before).then(|| NodeSettings {
        mode,
        paths: raw.paths.map(|p| p.clamp(1, 16)),
        flush,
        reorder: raw.reorder,
        equalise_delay: raw.equalise_delay,
        pace: raw.pace,
        report_interval,
        metric,
        damping: raw.damping,
        ignore_tx_failures: raw.ignore_tx_failures,
        dead_after: dead_after.flatten(),
        rate_control,
        persistence,
        bound,
        clients: raw.clients.clone(),
        auth: raw.auth,
        sign_origins: raw.sign_origins,
        origin_check_cost: check_cost,
        origin_sign_cost: sign_cost,
        watch_flooding: raw.watch_flooding,
    })
}

fn metric(ck: &mut Checker, m: &Spanned<String>, field: &str) -> Option<MetricKind> {
    match m.get_ref().as_str() {
        "hop" | "hops" | "hop-count" => Some(MetricKind::HopCount),
        "etx" => Some(MetricKind::Etx),
        "ett" => Some(MetricKind::Ett),
        other => {
            ck.refuse(
                Some(m.span()),
                &format!("{field}.metric"),
                format!("unknown metric \"{other}\" (hop, etx, ett)"),
            );
            None
        }
    }
}

fn rate_control(ck: &mut Checker, r: &Spanned<String>, field: &str) -> Option<RateControl> {
    let found = RateControl::ALL
        .into_iter()
        .find(|c| c.name() == r.get_ref());
    if found.is_none() {
        let names: Vec<&str> = RateControl::ALL.iter().map(|c| c.name()).collect();
        ck.refuse(
            Some(r.span()),
            &format!("{field}.rate_control"),
            format!(
                "unknown rate control \"{}\" ({})",
                r.get_ref(),
                names.join(", ")
            ),
        );
    }
    found
}

/// The `[radio]` section (Some(None) without one); None (recorded) when
/// wrong. Loss per rate on every link must give one value per rate (when
/// the link models are known).
pub(super) fn check_radio(
    ck: &mut Checker,
    raw: Option<&RawRadio>,
    models: Option<LinkModels>,
) -> Option<Option<RadioSpec>> {
    let Some(r) = raw else {
        return Some(None);
    };
    let before = ck.count();
    let mut spec = RadioSpec::default();
    if let Some(rates) = &r.rates {
        let mut bps = Vec::new();
        for (k, text) in rates.get_ref().iter().enumerate() {
            let v = Spanned::new(rates.span(), text.clone());
            bps.extend(ck.rate(&v, &format!("radio.rates[{k}]")));
        }
        if ck.count() == before {
            if bps.is_empty() || bps.windows(2).any(|w| w[0] >= w[1]) || bps.len() > 16 {
                ck.refuse(
                    Some(rates.span()),
                    "radio.rates",
                    "1 to 16 bit-rates, lowest first",
                );
            }
            spec.rates_bps = bps;
        }
    }
    if let Some(q) = r.queue {
        spec.queue = q.max(1);
    }
    if let (true, Some((link, links))) = (ck.count() == before, models) {
        let n = spec.rates_bps.len();
        let all = std::iter::once(("link".to_string(), link)).chain(
            links
                .iter()
                .enumerate()
                .map(|(i, o)| (format!("links[{i}]"), &o.spec)),
        );
        for (field, l) in all {
            if !l.rate_loss.is_empty() && l.rate_loss.len() != n {
                ck.refuse(
                    None,
                    &format!("{field}.rate_loss"),
                    format!("one loss per radio rate: {n} values"),
                );
            }
        }
    }
    (ck.count() == before).then_some(Some(spec))
}

/// Without a `[radio]` section, what only a radio does is refused rather
/// than silently ignored: rate control and hand-overs (in `[node]` or a
/// variant), and loss per rate on a link.
pub(super) fn check_radio_needed(
    ck: &mut Checker,
    node: Option<&NodeSettings>,
    variants: &[Option<NodeVariant>],
    models: Option<LinkModels>,
) {
    let settings = node.map(|n| ("node".to_string(), n)).into_iter().chain(
        variants
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((format!("variants[{i}]"), &v.as_ref()?.settings))),
    );
    for (field, n) in settings {
        let name = if n.rate_control.is_some() {
            "rate_control"
        } else if n.persistence.is_some() {
            "persistence"
        } else {
            continue;
        };
        ck.refuse(
            None,
            &format!("{field}.{name}"),
            format!("{name} needs a [radio] section (it is how radios send)"),
        );
    }
    if let Some((link, links)) = models {
        if !link.rate_loss.is_empty() || links.iter().any(|o| !o.spec.rate_loss.is_empty()) {
            ck.refuse(
                None,
                "link.rate_loss",
                "rate_loss needs a [radio] section naming the rates",
            );
        }
    }
}
