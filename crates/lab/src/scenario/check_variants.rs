//! The checks of what routes a lab: braid's mode (the file's default),
//! and each variant's routing software with its settings (braid's data
//! path, babeld's hello, FRR's OSPF and BFD timers).

use std::time::Duration;

use braid_conf::{LocatedError, Source, Spanned};

use super::check_topology::Routers;
use super::model::{BraidDatapath, LabVariant, Ospf, Software};
use super::raw::RawVariant;
use braid_conf::Findings;

/// The most datagrams per next hop a variant's `late_binding` holds.
const MAX_LATE_BINDING: usize = 64;

/// A braid mode (`single`, `mirror:2`, ...); `single` when absent.
pub(super) fn check_mode(
    src: &Source,
    m: &Option<Spanned<String>>,
    field: &str,
) -> Result<String, LocatedError> {
    match m {
        None => Ok("single".to_string()),
        Some(m) => src
            .value::<braid_proto::redundancy::Mode>(m, field)
            .map(|_| m.get_ref().clone()),
    }
}

/// Every variant; one (braid, `mode`) when the file has none.
pub(super) fn check_variants(
    p: &mut Findings,
    routers: &Routers,
    mode: &str,
    raw: &[RawVariant],
) -> Vec<LabVariant> {
    let mut variants: Vec<LabVariant> = raw
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let software = p
                .clean(|p| check_software(p, routers, mode, i, v))
                .flatten()?;
            Some(LabVariant {
                name: v.name.get_ref().clone(),
                software,
            })
        })
        .collect();
    if raw.is_empty() {
        variants.push(LabVariant {
            name: mode.to_string(),
            software: Software::Braid {
                mode: mode.to_string(),
                datapath: BraidDatapath::default(),
            },
        });
    }
    variants
}

/// A variant's routing software and its settings.
fn check_software(
    p: &mut Findings,
    routers: &Routers,
    mode: &str,
    i: usize,
    v: &RawVariant,
) -> Option<Software> {
    let src = p.src;
    let field = |f: &str| format!("variant[{i}].{f}");
    match v.software.as_ref().map(|s| s.get_ref().as_str()) {
        None | Some("braid") => {
            let mode = match &v.mode {
                None => Some(mode.to_string()),
                Some(_) => p.keep(check_mode(&src, &v.mode, &field("mode"))),
            };
            let datapath = check_datapath(p, routers, i, v);
            Some(Software::Braid {
                mode: mode?,
                datapath: datapath?,
            })
        }
        Some("kernel") => Some(Software::Kernel),
        Some("mptcp") => Some(Software::Mptcp),
        Some("babeld") => p
            .keep(src.duration(&v.hello, &field("hello"), Duration::from_secs(4)))
            .map(|hello| Software::Babeld { hello }),
        Some(kind @ ("ospf" | "ospf-bfd")) => p
            .keep(check_ospf(&src, i, v, kind == "ospf-bfd"))
            .map(Software::Ospf),
        Some(other) => {
            p.note(src.err(
                v.software.as_ref().map(|s| s.span()),
                &field("software"),
                format!("\"{other}\" is not braid, babeld, ospf, ospf-bfd, kernel or mptcp"),
            ));
            None
        }
    }
}

/// Where a braid variant's data path runs (`datapath`,
/// `kernel_routers`), and its daemons' other settings.
fn check_datapath(
    p: &mut Findings,
    routers: &Routers,
    i: usize,
    v: &RawVariant,
) -> Option<BraidDatapath> {
    let src = p.src;
    let field = |f: &str| format!("variant[{i}].{f}");
    let kernel = match v
        .datapath
        .as_ref()
        .map(|d| (d.get_ref().as_str(), d.span()))
    {
        None | Some(("user", _)) => Some(Vec::new()),
        Some(("kernel", _)) => match &v.kernel_routers {
            None => Some((0..routers.list.len()).collect()),
            Some(names) => {
                let found: Vec<Option<usize>> = names
                    .iter()
                    .map(|n| p.keep(kernel_router(&src, routers, n, &field("kernel_routers"))))
                    .collect();
                found.into_iter().collect()
            }
        },
        Some((other, span)) => {
            p.note(src.err(
                Some(span),
                &field("datapath"),
                format!("\"{other}\" is not user or kernel"),
            ));
            None
        }
    };
    if v.late_binding.is_some_and(|l| l > MAX_LATE_BINDING) {
        p.note(src.err(
            None,
            &field("late_binding"),
            "0 (bind at once) to 64 datagrams per next hop",
        ));
    }
    let kernel_delivery = p.keep(check_kernel_delivery(&src, v, &field("kernel_delivery")));
    let probe_interval = p.keep(optional_duration(
        &src,
        &v.probe_interval,
        &field("probe_interval"),
    ));
    let reorder_max_wait = p.keep(optional_duration(
        &src,
        &v.reorder_max_wait,
        &field("reorder_max_wait"),
    ));
    let report_interval = p.keep(optional_duration(
        &src,
        &v.report_interval,
        &field("report_interval"),
    ));
    let copy_window = p.keep(optional_duration(
        &src,
        &v.copy_window,
        &field("copy_window"),
    ));
    Some(BraidDatapath {
        kernel: kernel?,
        late_binding: v.late_binding,
        kernel_delivery: kernel_delivery?,
        client_margin: v.client_margin,
        lan_encode: v.lan_encode.unwrap_or(false),
        probe_interval: probe_interval?,
        dead_after: v.dead_after,
        reorder: v.reorder,
        reorder_max_wait: reorder_max_wait?,
        equalise_delay: v.equalise_delay,
        mss_clamp: v.mss_clamp,
        pace: v.pace,
        urgent_copies: v.urgent_copies,
        copy_window: copy_window?,
        report_interval: report_interval?,
    })
}

/// A router `kernel_routers` names (by its position among the routers).
fn kernel_router(
    src: &Source,
    routers: &Routers,
    n: &Spanned<String>,
    field: &str,
) -> Result<usize, LocatedError> {
    routers
        .list
        .iter()
        .position(|r| r.name == *n.get_ref())
        .ok_or_else(|| {
            src.err(
                Some(n.span()),
                field,
                format!("no router named \"{}\"", n.get_ref()),
            )
        })
}

/// The kernel routers' `kernel_delivery`: auto, stack or route (their
/// default, auto, when absent).
fn check_kernel_delivery(
    src: &Source,
    v: &RawVariant,
    field: &str,
) -> Result<Option<&'static str>, LocatedError> {
    match v
        .kernel_delivery
        .as_ref()
        .map(|d| (d.get_ref().as_str(), d.span()))
    {
        None => Ok(None),
        Some(("auto", _)) => Ok(Some("auto")),
        Some(("stack", _)) => Ok(Some("stack")),
        Some(("route", _)) => Ok(Some("route")),
        Some((other, span)) => Err(src.err(
            Some(span),
            field,
            format!("\"{other}\" is not auto, stack or route"),
        )),
    }
}

/// A duration that is `None` (the lab's or the daemon's) when absent.
fn optional_duration(
    src: &Source,
    v: &Option<Spanned<String>>,
    field: &str,
) -> Result<Option<Duration>, LocatedError> {
    v.as_ref()
        .map(|_| src.duration(v, field, Duration::ZERO))
        .transpose()
}

/// FRR's OSPF timers (whole seconds) and, with `bfd`, BFD's.
fn check_ospf(src: &Source, i: usize, v: &RawVariant, bfd: bool) -> Result<Ospf, LocatedError> {
    let field = |f: &str| format!("variant[{i}].{f}");
    let hello = src.duration(&v.hello, &field("hello"), Duration::from_secs(1))?;
    let dead = src.duration(&v.dead, &field("dead"), hello.saturating_mul(4))?;
    if hello < Duration::from_secs(1) || dead < hello {
        return Err(src.err(
            v.hello.as_ref().map(|h| h.span()),
            &field("hello"),
            "OSPF's hello is whole seconds (at least 1 s) and its dead interval at least the hello",
        ));
    }
    let bfd = bfd
        .then(|| {
            let every = src.duration(&v.bfd, &field("bfd"), Duration::from_millis(50))?;
            let mult = v.bfd_multiplier.as_ref().map_or(3, |m| *m.get_ref());
            if every < Duration::from_millis(10) || !(2..=255).contains(&mult) {
                return Err(src.err(
                    v.bfd.as_ref().map(|b| b.span()),
                    &field("bfd"),
                    "BFD's interval is at least 10 ms and its multiplier 2-255",
                ));
            }
            Ok((every, mult))
        })
        .transpose()?;
    Ok(Ospf { hello, dead, bfd })
}
