//! Link emulation for kernels without netem: loss from braid's eBPF
//! program on a link's receiving side (Bernoulli or netem's
//! Gilbert-Elliott), and the link events a scenario applies while its
//! flows run (a silent blackhole, carrier down and up). Rate is tbf (a
//! plan step); delay is the emulator process (`delay.rs`).
//!
//! The eBPF program is compiled once, when braid is built (`braid-bpf`),
//! and carried in the binary. Its four probabilities are read-only
//! globals the loader sets; it is attached (a TCX link held by this
//! process) first on the receiving side, ahead of a braid daemon's own
//! programs there, so that what a link loses never reaches the router.
//! Nothing is compiled at run time.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Mutex;

use anyhow::{anyhow, bail, Context};

use crate::exec::in_ns;
use crate::routing;
use crate::scenario::{EventTarget, Lab, LabEvent, LinkAction};

/// Why this braid carries no loss program (built without clang), if so.
pub fn loss_program_missing() -> Option<&'static str> {
    braid_bpf::missing()
}

/// The loss program's probabilities, each scaled to 2^32 (0xffffffff:
/// always): Good to Bad, Bad to Good, loss in Good, loss in Bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossParams {
    pub p_gb: u64,
    pub p_bg: u64,
    pub loss_good: u64,
    pub loss_bad: u64,
    /// Lose IP packets only, never ARP (`bpf/loss.c` says why): a lossy
    /// point-to-point link. Off for an access point's air and for
    /// failures, which lose every frame alike.
    pub spare_arp: bool,
}

const ALWAYS: u64 = u32::MAX as u64;

fn scaled(x: f64) -> u64 {
    (x.clamp(0.0, 1.0) * ALWAYS as f64) as u64
}

impl LossParams {
    /// Mean loss `loss` in bursts of `burst` packets on average: Bernoulli
    /// for a burst of 1; else Gilbert-Elliott with r = 1/B and
    /// p = L / (B (1 - L)), Bad losing everything and Good nothing (see
    /// NOTES.md for netem's model).
    pub fn gilbert_elliott(loss: f64, burst: f64) -> Self {
        let (p, r) = if burst <= 1.0 {
            (loss, 1.0 - loss)
        } else {
            (loss / (burst * (1.0 - loss)), 1.0 / burst)
        };
        LossParams {
            p_gb: scaled(p),
            p_bg: scaled(r),
            loss_good: 0,
            loss_bad: ALWAYS,
            spare_arp: false,
        }
    }

    /// The same loss, sparing ARP (a lossy point-to-point link).
    pub fn sparing_arp(self) -> Self {
        LossParams {
            spare_arp: true,
            ..self
        }
    }

    /// Every packet dropped (a silent link failure).
    pub fn blackhole() -> Self {
        LossParams {
            p_gb: 0,
            p_bg: ALWAYS,
            loss_good: ALWAYS,
            loss_bad: ALWAYS,
            spare_arp: false,
        }
    }

    fn globals(&self) -> [(&'static str, u64); 5] {
        [
            ("p_gb", self.p_gb),
            ("p_bg", self.p_bg),
            ("loss_good", self.loss_good),
            ("loss_bad", self.loss_bad),
            ("spare_arp", u64::from(self.spare_arp)),
        ]
    }
}

/// Which loss program an interface carries: the link's own, or a
/// blackhole event's (ahead of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossSlot {
    Link,
    Blackhole,
    /// A roaming client's distance from an access point.
    Roam,
}

/// The loss programs attached by this process, by namespace and
/// interface: each stays attached while it is held here (a TCX link),
/// and goes when removed or when its namespace is deleted.
static ATTACHED: Mutex<Vec<(String, String, LossSlot, braid_bpf::loss::Loss)>> =
    Mutex::new(Vec::new());

/// Attaches the loss program with `params` first on the ingress of `dev`
/// in namespace `ns` (a blackhole goes ahead of the link's own loss).
pub fn attach_loss(ns: &str, dev: &str, params: LossParams, slot: LossSlot) -> anyhow::Result<()> {
    if let Some(why) = loss_program_missing() {
        bail!("this braid has no eBPF loss program ({why}): install clang and libbpf-dev (scripts/setup.sh) and rebuild");
    }
    let path = format!("/run/netns/{ns}");
    let loss = std::thread::scope(|s| {
        s.spawn(|| -> anyhow::Result<braid_bpf::loss::Loss> {
            // This thread enters the namespace; the program's link, made
            // here, stays on the interface there.
            let f = std::fs::File::open(&path).with_context(|| format!("namespace {ns}"))?;
            nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET)
                .with_context(|| format!("entering namespace {ns}"))?;
            let mut loss = braid_bpf::loss::Loss::load(&params.globals())?;
            loss.attach(dev)?;
            Ok(loss)
        })
        .join()
        .map_err(|_| anyhow!("attaching the loss program panicked"))?
    })
    .with_context(|| format!("loss program on {dev} in {ns}"))?;
    ATTACHED
        .lock()
        .map_err(|_| anyhow!("loss registry poisoned"))?
        .push((ns.to_string(), dev.to_string(), slot, loss));
    Ok(())
}

/// Replaces the loss in `slot` on `dev` in `ns`: `per_mille` of the
/// frames (Bernoulli; 1000: every frame, 0: none, the program removed).
/// The new program is attached before the old one goes: no frame passes
/// unimpaired in between.
pub fn set_loss(ns: &str, dev: &str, per_mille: u16, slot: LossSlot) -> anyhow::Result<()> {
    let old: Vec<_> = {
        let mut a = ATTACHED
            .lock()
            .map_err(|_| anyhow!("loss registry poisoned"))?;
        let (old, keep): (Vec<_>, Vec<_>) = a
            .drain(..)
            .partition(|(n, d, s, _)| n == ns && d == dev && *s == slot);
        *a = keep;
        old
    };
    if per_mille > 0 {
        let params = if per_mille >= 1000 {
            LossParams::blackhole()
        } else {
            LossParams::gilbert_elliott(per_mille as f64 / 1000.0, 1.0)
        };
        attach_loss(ns, dev, params, slot)?;
    }
    drop(old);
    Ok(())
}

/// Access point `ap`'s port on `segment` loses `per_mille` of the frames
/// each way: frames from the segment at the access point's interface,
/// frames to it at the port's bridge side.
pub fn set_port_loss(lab: &Lab, segment: usize, ap: usize, per_mille: u16) -> anyhow::Result<()> {
    set_loss(
        &lab.ns(ap),
        &Lab::access_dev(segment),
        per_mille,
        LossSlot::Roam,
    )?;
    set_loss(
        &lab.segment_ns(segment),
        &Lab::port_dev(ap),
        per_mille,
        LossSlot::Roam,
    )
}

/// Detaches the loss programs in `slot` from `dev` in `ns`.
pub fn detach_loss(ns: &str, dev: &str, slot: LossSlot) {
    if let Ok(mut a) = ATTACHED.lock() {
        a.retain(|(n, d, s, _)| !(n == ns && d == dev && *s == slot));
    }
}

/// Detaches every loss program in namespace `ns` (its teardown).
pub fn detach_all_in(ns: &str) {
    if let Ok(mut a) = ATTACHED.lock() {
        a.retain(|(n, _, _, _)| n != ns);
    }
}

/// Applies a link event: a blackhole attaches the loss program built to
/// drop everything, ahead of any other filter, on both ends' ingress; a
/// restore removes it; down and up set both ends' interfaces.
///
/// `resolved` remembers, per flow, the link its `FirstHopOf` event chose,
/// so that the restore undoes that link. Returns, for `down`, the packets
/// the link's queues (the qdiscs at both ends) held the moment before:
/// what the kernel drops with the carrier, the packets below the binding
/// point that a handoff loses.
pub fn apply_event(
    lab: &Lab,
    e: &LabEvent,
    resolved: &mut BTreeMap<usize, usize>,
    plain: bool,
) -> anyhow::Result<Option<u64>> {
    match (e.target, e.action) {
        (EventTarget::Port { segment, ap }, LinkAction::Loss(per_mille)) => {
            set_port_loss(lab, segment, ap, per_mille)?;
            return Ok(None);
        }
        (EventTarget::Client(c), LinkAction::Rehome(ap)) => {
            if plain {
                eprintln!(
                    "lab {}: {} re-homed to {}",
                    lab.name, lab.clients[c].name, lab.routers[ap].name
                );
                for (ns, args) in routing::kernel::client_routes(lab, c, ap) {
                    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
                    in_ns(&ns, &refs)?;
                }
            }
            return Ok(None);
        }
        (EventTarget::Router(r), LinkAction::Keys { first, second }) => {
            let ids: Vec<u8> = std::iter::once(first).chain(second).collect();
            let routers: Vec<usize> = match r {
                Some(i) => vec![i],
                None => (0..lab.routers.len()).collect(),
            };
            for i in routers {
                if routing::braid::rekey(lab, i, &ids)? {
                    eprintln!(
                        "lab {}: {} takes keys {ids:?}",
                        lab.name, lab.routers[i].name
                    );
                }
            }
            return Ok(None);
        }
        (EventTarget::Router(r), LinkAction::Crash) => {
            let routers: Vec<usize> = match r {
                Some(i) => vec![i],
                None => (0..lab.routers.len()).collect(),
            };
            for i in routers {
                if routing::braid::crash_and_restart(lab, i)? {
                    eprintln!(
                        "lab {}: {} killed (-9) and started again",
                        lab.name, lab.routers[i].name
                    );
                }
            }
            return Ok(None);
        }
        (EventTarget::Port { .. } | EventTarget::Client(_) | EventTarget::Router(_), _)
        | (
            _,
            LinkAction::Loss(_)
            | LinkAction::Rehome(_)
            | LinkAction::Keys { .. }
            | LinkAction::Crash,
        ) => {
            bail!("event {:?} on {:?} means nothing", e.action, e.target)
        }
        _ => {}
    }
    let link = match e.target {
        EventTarget::Link(j) => j,
        EventTarget::FirstHopOf(f) => match (e.action, resolved.get(&f)) {
            (LinkAction::Restore | LinkAction::Up, Some(&j)) => j,
            _ => {
                let j = routing::first_link_of(lab, &lab.flows[f])?;
                resolved.insert(f, j);
                j
            }
        },
        EventTarget::Port { .. } | EventTarget::Client(_) | EventTarget::Router(_) => {
            bail!("event {:?} on {:?} is not a link's", e.action, e.target)
        }
    };
    eprintln!("lab {}: {:?} link bl{link}", lab.name, e.action);
    let l = &lab.links[link];
    let dev = Lab::link_dev(link);
    for ns in [lab.ns(l.a), lab.ns(l.b)] {
        match e.action {
            LinkAction::Blackhole => {
                // Ahead of any loss program already there (a lossy link).
                attach_loss(&ns, &dev, LossParams::blackhole(), LossSlot::Blackhole)?
            }
            LinkAction::Restore => detach_loss(&ns, &dev, LossSlot::Blackhole),
            LinkAction::Down => {}
            LinkAction::Up => in_ns(&ns, &["ip", "link", "set", &dev, "up"])?,
            LinkAction::Loss(_)
            | LinkAction::Rehome(_)
            | LinkAction::Keys { .. }
            | LinkAction::Crash => {}
        }
    }
    if e.action != LinkAction::Down {
        return Ok(None);
    }
    let mut queued = 0;
    for ns in [lab.ns(l.a), lab.ns(l.b)] {
        queued += qdisc_backlog(&ns, &dev);
        in_ns(&ns, &["ip", "link", "set", &dev, "down"])?;
    }
    eprintln!(
        "lab {}: {queued} packets were queued for bl{link} when it went down",
        lab.name
    );
    Ok(Some(queued))
}

/// Packets waiting in `dev`'s qdiscs in namespace `ns` (`tc -s qdisc`'s
/// backlog of the root qdisc; 0 when it has none).
fn qdisc_backlog(ns: &str, dev: &str) -> u64 {
    let out = Command::new("ip")
        .args([
            "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", dev, "root",
        ])
        .output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    text.ok()
        .and_then(|t| {
            let words: Vec<&str> = t.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "backlog")?;
            words.get(at + 2)?.strip_suffix('p')?.parse().ok()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netem_parameters_from_loss_and_burst() {
        let b = LossParams::gilbert_elliott(0.2, 1.0);
        assert_eq!((b.p_gb, b.p_bg), (scaled(0.2), scaled(0.8)));
        let ge = LossParams::gilbert_elliott(0.1, 4.0);
        // r = 1/4, p = 0.1 / (4 * 0.9).
        assert_eq!(ge.p_bg, scaled(0.25));
        assert_eq!(ge.p_gb, scaled(0.1 / 3.6));
        assert_eq!((ge.loss_good, ge.loss_bad), (0, ALWAYS));
    }
}
