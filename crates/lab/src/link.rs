//! Link emulation for kernels without netem: loss from braid's eBPF
//! program on a link's receiving side (Bernoulli or netem's
//! Gilbert-Elliott), and the link events a scenario applies while its
//! flows run (a silent blackhole, carrier down and up). Rate is tbf (a
//! plan step); delay is the emulator process (`delay.rs`).
//!
//! The eBPF program is compiled once, when braid is built (`build.rs`),
//! and carried in the binary. Its four probabilities are read-only
//! globals: for each parameter set the lab writes a copy of the object
//! with them set in its `.rodata`, which the loader (tc, through libbpf)
//! loads with the program. Nothing is compiled at run time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context};
use object::{Object, ObjectSection, ObjectSymbol};

use crate::exec::in_ns;
use crate::routing;
use crate::scenario::{EventTarget, Lab, LabEvent, LinkAction};

/// bpf/loss.c as compiled when braid was built (empty when clang was
/// missing then: see [`loss_program_missing`]).
const LOSS_OBJECT: &[u8] = braid_bpf::LOSS;

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
        }
    }

    /// Every packet dropped (a silent link failure).
    pub fn blackhole() -> Self {
        LossParams {
            p_gb: 0,
            p_bg: ALWAYS,
            loss_good: ALWAYS,
            loss_bad: ALWAYS,
        }
    }

    fn globals(&self) -> [(&'static str, u64); 4] {
        [
            ("p_gb", self.p_gb),
            ("p_bg", self.p_bg),
            ("loss_good", self.loss_good),
            ("loss_bad", self.loss_bad),
        ]
    }
}

/// The loss program's object with `params` set, written into `dir` once
/// per parameter set; returns its path.
pub fn loss_object(dir: &Path, params: LossParams) -> anyhow::Result<PathBuf> {
    if let Some(why) = loss_program_missing() {
        bail!("this braid has no eBPF loss program ({why}): install clang and libbpf-dev (scripts/setup.sh) and rebuild");
    }
    let p = params;
    let path = dir.join(format!(
        "loss-{}-{}-{}-{}.o",
        p.p_gb, p.p_bg, p.loss_good, p.loss_bad
    ));
    if !path.exists() {
        let bytes = set_globals(LOSS_OBJECT, &params.globals())?;
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(path)
}

/// A copy of the ELF object `elf` with each named 8-byte read-only global
/// set to its value (little-endian, as the BPF target of this machine).
fn set_globals(elf: &[u8], values: &[(&str, u64)]) -> anyhow::Result<Vec<u8>> {
    // Read through a cache: the parser wants its headers aligned, and
    // bytes embedded in the binary are not.
    let cache = object::ReadCache::new(std::io::Cursor::new(elf));
    let file = object::File::parse(&cache).context("reading the embedded eBPF object")?;
    let mut out = elf.to_vec();
    for &(name, value) in values {
        let sym = file
            .symbols()
            .find(|s| s.name() == Ok(name))
            .ok_or_else(|| anyhow!("the eBPF object has no global {name}"))?;
        let section = sym
            .section_index()
            .and_then(|i| file.section_by_index(i).ok())
            .ok_or_else(|| anyhow!("{name} is in no section"))?;
        let (start, size) = section
            .file_range()
            .ok_or_else(|| anyhow!("{name}'s section has no bytes in the file"))?;
        let at = start + sym.address() - section.address();
        if sym.size() != 8 || at + 8 > start + size {
            bail!("{name} is not an 8-byte global inside its section");
        }
        out[at as usize..at as usize + 8].copy_from_slice(&value.to_le_bytes());
    }
    Ok(out)
}

/// Attaches the loss program with `params` to the ingress of `dev` in
/// namespace `ns` (at priority `pref`, when given: lower runs first).
pub fn attach_loss(
    dir: &Path,
    ns: &str,
    dev: &str,
    params: LossParams,
    pref: Option<u32>,
) -> anyhow::Result<()> {
    let obj = loss_object(dir, params)?.display().to_string();
    // The clsact qdisc may be there already (a second filter on a lossy
    // link); if it cannot be added at all, adding the filter says why.
    let _ = in_ns(ns, &["tc", "qdisc", "add", "dev", dev, "clsact"]);
    let pref = pref.map(|p| p.to_string());
    let mut args = vec!["tc", "filter", "add", "dev", dev, "ingress"];
    if let Some(p) = &pref {
        args.extend(["pref", p]);
    }
    args.extend(["bpf", "da", "obj", &obj, "sec", "classifier"]);
    in_ns(ns, &args)
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
) -> anyhow::Result<Option<u64>> {
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
    };
    eprintln!("lab {}: {:?} link bl{link}", lab.name, e.action);
    let l = &lab.links[link];
    let dev = Lab::link_dev(link);
    for ns in [lab.ns(l.a), lab.ns(l.b)] {
        match e.action {
            LinkAction::Blackhole => {
                // Ahead of any loss filter already there (a lossy link).
                attach_loss(&lab.dir(), &ns, &dev, LossParams::blackhole(), Some(1))?
            }
            LinkAction::Restore => {
                in_ns(
                    &ns,
                    &["tc", "filter", "del", "dev", &dev, "ingress", "pref", "1"],
                )?;
            }
            LinkAction::Down => {}
            LinkAction::Up => in_ns(&ns, &["ip", "link", "set", &dev, "up"])?,
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

    /// The embedded object's globals are set where the loader reads them:
    /// each value lands in `.rodata` at its symbol, and nothing else moves.
    /// (Built without clang, the lab says why it cannot emulate loss.)
    #[test]
    fn the_embedded_object_gets_its_parameters_in_rodata() {
        if let Some(why) = loss_program_missing() {
            let err = loss_object(
                Path::new("/nonexistent"),
                LossParams::gilbert_elliott(0.1, 1.0),
            );
            assert!(err.unwrap_err().to_string().contains(why));
            return;
        }
        let p = LossParams {
            p_gb: 0x0102_0304,
            p_bg: 0x0506_0708,
            loss_good: 9,
            loss_bad: ALWAYS,
        };
        let patched = set_globals(LOSS_OBJECT, &p.globals()).unwrap();
        assert_eq!(patched.len(), LOSS_OBJECT.len());
        let cache = object::ReadCache::new(std::io::Cursor::new(&patched[..]));
        let file = object::File::parse(&cache).unwrap();
        let rodata = file.section_by_name(".rodata").unwrap();
        let data = rodata.data().unwrap();
        for (name, value) in p.globals() {
            let sym = file.symbols().find(|s| s.name() == Ok(name)).unwrap();
            let at = (sym.address() - rodata.address()) as usize;
            assert_eq!(data[at..at + 8], value.to_le_bytes(), "{name}");
        }
        let changed = patched
            .iter()
            .zip(LOSS_OBJECT)
            .filter(|(a, b)| a != b)
            .count();
        assert!(
            changed <= 32,
            "only the four globals' bytes change: {changed}"
        );
    }
}
