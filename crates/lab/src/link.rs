//! Link loss for kernels without netem: braid's eBPF loss program on a
//! link's receiving side (Bernoulli or netem's Gilbert-Elliott), its
//! parameters, and the programs this process holds attached (a link's
//! own, a blackhole's ahead of it, a roaming client's distance), attached,
//! replaced and detached. Rate is tbf (a plan step; its counters are read
//! here); delay is the emulator process (`delay.rs`); the events that use
//! these programs while flows run are `events.rs`'s.
//!
//! The eBPF program is compiled once, when braid is built (`braid-bpf`),
//! and carried in the binary. Its four probabilities are read-only
//! globals the loader sets; it is attached (a TCX link held by this
//! process) first on the receiving side, ahead of a braid daemon's own
//! programs there, so that what a link loses never reaches the router.
//! Nothing is compiled at run time.

use std::sync::Mutex;

use anyhow::{anyhow, bail, Context};

use crate::scenario::Lab;

/// Why this braid carries no loss program (built without clang), if so.
pub fn loss_program_missing() -> Option<&'static str> {
    braid_bpf::missing()
}

/// A device's root qdisc as `tc -s qdisc` counts it (a rate-limited
/// link's tbf).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QdiscCounters {
    /// Packets waiting.
    pub backlog: u64,
    /// Packets dropped since the qdisc was made (its queue was full).
    pub dropped: u64,
}

/// `dev`'s root qdisc in namespace `ns` (zeros when it has none or `tc`
/// says nothing).
pub fn root_qdisc(ns: &str, dev: &str) -> QdiscCounters {
    let out = std::process::Command::new("ip")
        .args([
            "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", dev, "root",
        ])
        .output();
    out.map(|o| parse_qdisc(&String::from_utf8_lossy(&o.stdout)))
        .unwrap_or_default()
}

/// `tc -s qdisc show`'s text: "... (dropped 6, overlimits ...) backlog
/// 0b 3p ...".
fn parse_qdisc(text: &str) -> QdiscCounters {
    let words: Vec<&str> = text.split_whitespace().collect();
    let after = |key: &str, skip: usize| {
        let at = words.iter().position(|w| *w == key)?;
        words.get(at + skip)
    };
    QdiscCounters {
        backlog: after("backlog", 2)
            .and_then(|w| w.strip_suffix('p')?.parse().ok())
            .unwrap_or(0),
        dropped: after("(dropped", 1)
            .and_then(|w| w.trim_end_matches(',').parse().ok())
            .unwrap_or(0),
    }
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
    attach_loss_at_once(&[(ns, dev)], params, slot)
}

/// Attaches the loss program with `params` on every `(ns, dev)` of `ends`
/// at one moment: each end's program is loaded (and verified, some
/// milliseconds each) first, and they are attached only when all are
/// loaded. A link's blackhole thus starts both ways together: attached
/// one end after the other, the first end stopped hearing the second
/// (its probes, BFD) tens of milliseconds before the traffic it sends
/// was dropped, and every failover measured looked that much shorter.
pub fn attach_loss_at_once(
    ends: &[(&str, &str)],
    params: LossParams,
    slot: LossSlot,
) -> anyhow::Result<()> {
    if let Some(why) = loss_program_missing() {
        bail!("this braid has no eBPF loss program ({why}): install clang and libbpf-dev (scripts/setup.sh) and rebuild");
    }
    let all_loaded = std::sync::Barrier::new(ends.len());
    let attached: Vec<anyhow::Result<braid_bpf::loss::Loss>> = std::thread::scope(|s| {
        let threads: Vec<_> = ends
            .iter()
            .map(|&(ns, dev)| {
                let all_loaded = &all_loaded;
                s.spawn(move || {
                    // This thread enters the namespace; the program's
                    // link, made here, stays on the interface there.
                    let loaded = (|| -> anyhow::Result<braid_bpf::loss::Loss> {
                        let path = format!("/run/netns/{ns}");
                        let f = std::fs::File::open(&path)
                            .with_context(|| format!("namespace {ns}"))?;
                        nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET)
                            .with_context(|| format!("entering namespace {ns}"))?;
                        Ok(braid_bpf::loss::Loss::load(&params.globals())?)
                    })();
                    // Every thread waits here, loaded or failed, so none
                    // waits for ever.
                    all_loaded.wait();
                    let mut loss = loaded?;
                    loss.attach(dev)?;
                    Ok(loss)
                })
            })
            .collect();
        threads
            .into_iter()
            .zip(ends)
            .map(|(t, (ns, dev))| {
                t.join()
                    .map_err(|_| anyhow!("attaching the loss program panicked"))
                    .and_then(|r| r)
                    .with_context(|| format!("loss program on {dev} in {ns}"))
            })
            .collect()
    });
    // Kept even when another end failed: each is registered, so that
    // what did attach is detached with the rest.
    let mut registry = ATTACHED
        .lock()
        .map_err(|_| anyhow!("loss registry poisoned"))?;
    let mut first_error = None;
    for (r, (ns, dev)) in attached.into_iter().zip(ends) {
        match r {
            Ok(loss) => registry.push((ns.to_string(), dev.to_string(), slot, loss)),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qdisc_counters_from_tc_text() {
        let text = "qdisc tbf 8001: root refcnt 2 rate 10Mbit burst 4Kb lat 100ms \n Sent 123456 bytes 95 pkt (dropped 632, overlimits 40 requeues 0) \n backlog 3028b 2p requeues 0\n";
        assert_eq!(
            parse_qdisc(text),
            QdiscCounters {
                backlog: 2,
                dropped: 632
            }
        );
        assert_eq!(parse_qdisc(""), QdiscCounters::default());
    }

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
