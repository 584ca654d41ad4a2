//! Checks the link models: `[link]` (every link's) and each `[[links]]`
//! override (loss and bursts, delay, jitter, rate, queue, retries, loss
//! per radio rate, transient fades, down intervals, fade points).

use std::time::Duration;

use braid_conf::Spanned;
use braid_proto::time::Instant;

use super::errors::Checker;
use super::raw::{RawLink, RawLinkOverride};
use super::spec::LinkOverride;
use crate::link::{LinkSpec, LossModel};

/// `raw` over `base` (`field` names it in errors); None (recorded) when
/// anything in it is wrong.
pub(super) fn check_link(
    ck: &mut Checker,
    raw: &RawLink,
    base: &LinkSpec,
    field: &str,
) -> Option<LinkSpec> {
    let before = ck.count();
    let mut spec = base.clone();
    check_loss(ck, raw, base, field, &mut spec);
    if let Some(delay) = ck.duration(&raw.delay, &format!("{field}.delay"), base.delay) {
        spec.delay = delay;
    }
    if let Some(jitter) = ck.duration(&raw.jitter, &format!("{field}.jitter"), base.jitter) {
        spec.jitter = jitter;
    }
    if let Some(r) = &raw.rate {
        if let Some(bps) = ck.rate(r, &format!("{field}.rate")) {
            spec.rate_bps = Some(bps);
        }
    }
    if let Some(q) = raw.queue {
        spec.queue = q;
    }
    if let Some(r) = raw.retries {
        if r > 100 {
            ck.refuse(
                None,
                &format!("{field}.retries"),
                format!(
                    "{r} retries: at most 100 (802.11 uses 7, SrcRR's 40 exceeded TCP's timeout)"
                ),
            );
        }
        spec.retries = r;
    }
    if let Some(rl) = &raw.rate_loss {
        if let Some(bad) = rl.get_ref().iter().find(|l| !(0.0..=1.0).contains(*l)) {
            ck.refuse(
                Some(rl.span()),
                &format!("{field}.rate_loss"),
                format!("{bad} is not a probability in [0, 1]"),
            );
        }
        spec.rate_loss = rl.get_ref().clone();
    }
    check_fades(ck, raw, field, &mut spec);
    (ck.count() == before).then_some(spec)
}

/// `loss` and `burst`: Bernoulli, or Gilbert-Elliott with that mean burst.
fn check_loss(ck: &mut Checker, raw: &RawLink, base: &LinkSpec, field: &str, spec: &mut LinkSpec) {
    let (loss, burst) = (raw.loss, raw.burst);
    let loss_ok = loss.is_none_or(|l| (0.0..=1.0).contains(&l));
    if let Some(l) = loss.filter(|_| !loss_ok) {
        ck.refuse(
            None,
            &format!("{field}.loss"),
            format!("{l} is not a probability in [0, 1]"),
        );
    }
    if loss.is_none() && burst.is_none() {
        return;
    }
    let l = loss.unwrap_or(base.loss.mean_loss());
    let b = burst.unwrap_or(1.0);
    if b < 1.0 {
        ck.refuse(
            None,
            &format!("{field}.burst"),
            "mean burst length must be at least 1 packet",
        );
        return;
    }
    if !loss_ok {
        return;
    }
    // A burst without loss is kept (as a chain that never leaves Good): a
    // loss sweep gives it its loss.
    spec.loss = if l == 0.0 && b == 1.0 {
        LossModel::None
    } else if b == 1.0 {
        LossModel::Bernoulli(l)
    } else {
        LossModel::bursty(l, b)
    };
}

/// Transient fades (`fades_every`, `fades_last`, `fades_loss`): a
/// two-state chain in time over the loss in Good.
fn check_fades(ck: &mut Checker, raw: &RawLink, field: &str, spec: &mut LinkSpec) {
    if raw.fades_every.is_none() && raw.fades_last.is_none() && raw.fades_loss.is_none() {
        return;
    }
    let every = ck.duration(
        &raw.fades_every,
        &format!("{field}.fades_every"),
        Duration::from_secs(30),
    );
    let last = ck.duration(
        &raw.fades_last,
        &format!("{field}.fades_last"),
        Duration::from_millis(500),
    );
    let (Some(every), Some(last)) = (every, last) else {
        return;
    };
    let loss = raw.fades_loss.unwrap_or(0.9);
    if !(0.0..=1.0).contains(&loss) || every.is_zero() || last.is_zero() {
        ck.refuse(
            raw.fades_every.as_ref().map(|s| s.span()),
            &format!("{field}.fades_loss"),
            "transient fades need positive fades_every and fades_last and a loss in [0, 1]",
        );
        return;
    }
    spec.loss = LossModel::GilbertElliottTime {
        good_mean: every,
        bad_mean: last,
        loss_good: spec.loss.mean_loss(),
        loss_bad: loss,
    };
}

/// The `[[links]]` overrides over `base` (`[link]`); None (recorded) when
/// one is wrong. Without a base (`[link]` was wrong) each override is
/// still checked, over the defaults.
pub(super) fn check_link_overrides(
    ck: &mut Checker,
    raw: &[RawLinkOverride],
    base: Option<&LinkSpec>,
) -> Option<Vec<LinkOverride>> {
    let before = ck.count();
    let defaults = LinkSpec::default();
    let mut links = Vec::new();
    for (i, o) in raw.iter().enumerate() {
        let field = format!("links[{i}]");
        let ends = o.between.get_ref();
        if ends.len() != 2 {
            ck.refuse(
                Some(o.between.span()),
                &format!("{field}.between"),
                "name exactly two nodes",
            );
        }
        let spec = check_link(ck, &o.link(), base.unwrap_or(&defaults), &field);
        let down = check_down(ck, &o.down, &field);
        let fade = check_fade_points(ck, &o.fade, &field);
        if let ([a, b], Some(mut spec)) = (ends.as_slice(), spec) {
            spec.carrier = o.carrier.unwrap_or(false);
            spec.down.extend(down);
            spec.fade.extend(fade);
            links.push(LinkOverride {
                a: a.clone(),
                b: b.clone(),
                spec,
            });
        }
    }
    (base.is_some() && ck.count() == before).then_some(links)
}

/// A link's down intervals, `["from", "until"]` each.
fn check_down(
    ck: &mut Checker,
    down: &[Spanned<Vec<String>>],
    field: &str,
) -> Vec<(Instant, Instant)> {
    let mut out = Vec::new();
    for d in down {
        let v = d.get_ref();
        if v.len() != 2 {
            ck.refuse(
                Some(d.span()),
                &format!("{field}.down"),
                "each interval is [\"from\", \"until\"]",
            );
            continue;
        }
        let mut parse = |s: &str| {
            let parsed = humantime::parse_duration(s.trim()).map_err(|e| {
                ck.err(
                    Some(d.span()),
                    &format!("{field}.down"),
                    format!("\"{s}\": {e}"),
                )
            });
            ck.keep(parsed)
        };
        let (a, b) = (parse(&v[0]), parse(&v[1]));
        if let (Some(a), Some(b)) = (a, b) {
            out.push((Instant::ZERO + a, Instant::ZERO + b));
        }
    }
    out
}

/// A link's fade points, `["time", loss]` each, in time order.
fn check_fade_points(
    ck: &mut Checker,
    fade: &[Spanned<(String, f64)>],
    field: &str,
) -> Vec<(Instant, f64)> {
    let mut out = Vec::new();
    let mut last = None;
    for f in fade {
        let (at, loss) = f.get_ref();
        let parsed = humantime::parse_duration(at.trim()).map_err(|e| {
            ck.err(
                Some(f.span()),
                &format!("{field}.fade"),
                format!("\"{at}\": {e}"),
            )
        });
        let at = ck.keep(parsed);
        let in_order = at.is_none_or(|at| last.is_none_or(|l| at >= l));
        if !(0.0..=1.0).contains(loss) || !in_order {
            ck.refuse(
                Some(f.span()),
                &format!("{field}.fade"),
                "points are [\"time\", loss in 0..1], in time order",
            );
            continue;
        }
        if let Some(at) = at {
            last = Some(at);
            out.push((Instant::ZERO + at, *loss));
        }
    }
    out
}
