//! Checks the `[sweep]` table: per-path loss (a parallel topology's, on
//! first hops whose loss model a sweep can rescale), per-path scales of
//! it, and the modes every flow is run with in turn.

use super::errors::Checker;
use super::raw::RawSweep;
use super::spec::{LinkOverride, Sweep};
use crate::link::LinkSpec;
use crate::topology::TopologySpec;

/// `[link]` and the `[[links]]` overrides, once both are checked.
pub(super) type LinkModels<'a> = (&'a LinkSpec, &'a [LinkOverride]);

/// The sweep; None (recorded) when any of it is wrong. What depends on
/// the topology or the link models is checked only when they are known.
pub(super) fn check_sweep(
    ck: &mut Checker,
    raw: Option<&RawSweep>,
    topology: Option<&TopologySpec>,
    models: Option<LinkModels>,
) -> Option<Sweep> {
    let before = ck.count();
    let mut sweep = Sweep::default();
    let Some(sw) = raw else {
        return Some(sweep);
    };
    if let (Some(pl), Some(topology)) = (&sw.path_loss, topology) {
        let parallel = matches!(topology, TopologySpec::Parallel { .. });
        if !parallel {
            ck.refuse(
                Some(pl.span()),
                "sweep.path_loss",
                "sweeps path loss of a parallel topology only",
            );
        }
        let losses = pl.get_ref();
        if let Some(bad) = losses.iter().find(|l| !(0.0..1.0).contains(*l)) {
            ck.refuse(
                Some(pl.span()),
                "sweep.path_loss",
                format!("{bad} is not a loss ratio in [0, 1)"),
            );
        }
        if let (true, Some(models)) = (parallel, models) {
            check_first_hops(ck, topology, models, pl.span());
        }
        if ck.count() == before {
            sweep.path_loss = losses.clone();
        }
    }
    if let (Some(ps), Some(topology)) = (&sw.path_scale, topology) {
        check_path_scale(ck, ps, topology, sw.path_loss.is_some(), &mut sweep);
    }
    for (i, m) in sw.modes.iter().enumerate() {
        if let Some(mode) = ck.mode(m, &format!("sweep.modes[{i}]")) {
            sweep.modes.push(mode);
        }
    }
    (ck.count() == before).then_some(sweep)
}

/// Each path's first hop keeps its model; its mean must be one a sweep
/// can set.
fn check_first_hops(
    ck: &mut Checker,
    topology: &TopologySpec,
    (link, links): LinkModels,
    span: std::ops::Range<usize>,
) {
    let TopologySpec::Parallel { paths, .. } = *topology else {
        return;
    };
    for p in 0..paths {
        let first = format!("p{p}h0");
        let spec = links
            .iter()
            .rev()
            .find(|o| (o.a == "s" && o.b == first) || (o.a == first && o.b == "s"))
            .map_or(link, |o| &o.spec);
        if spec.loss.with_mean_loss(0.5).is_none() {
            ck.refuse(
                Some(span.clone()),
                "sweep.path_loss",
                format!(
                    "the first hop of path {p} (s to {first}) has a loss model \
                     whose mean a sweep cannot set (Gilbert-Elliott with loss in \
                     Good, or periods in time); give that link `loss` and `burst`"
                ),
            );
        }
    }
}

/// `path_scale`: at most one scale per path of a parallel topology whose
/// path loss is swept, each keeping every path's loss a ratio in [0, 1).
fn check_path_scale(
    ck: &mut Checker,
    ps: &braid_conf::Spanned<Vec<f64>>,
    topology: &TopologySpec,
    swept: bool,
    sweep: &mut Sweep,
) {
    let paths = match topology {
        TopologySpec::Parallel { paths, .. } if swept => *paths,
        _ => {
            ck.refuse(
                Some(ps.span()),
                "sweep.path_scale",
                "scales the path_loss sweep of a parallel topology: give sweep.path_loss",
            );
            return;
        }
    };
    let before = ck.count();
    let scales = ps.get_ref();
    if scales.len() > paths {
        ck.refuse(
            Some(ps.span()),
            "sweep.path_scale",
            format!("{} scales for {paths} paths", scales.len()),
        );
    }
    let top = sweep.path_loss.iter().copied().fold(0.0, f64::max);
    if let Some((p, bad)) = scales
        .iter()
        .enumerate()
        .find(|(_, &k)| !(k >= 0.0 && k * top < 1.0))
    {
        ck.refuse(
            Some(ps.span()),
            "sweep.path_scale",
            format!(
                "path {p}'s scale {bad}: every path's loss (the largest path_loss, \
                 {top}, times its scale) must be a ratio in [0, 1)"
            ),
        );
    }
    if ck.count() == before {
        sweep.path_scale = scales.clone();
    }
}
