//! The programs besides braid that a scenario runs, and the check that
//! they are installed, made before anything is built: a missing one is
//! named with its Debian package in one line, instead of surfacing
//! later as whatever its absence breaks (an iperf3 server under a
//! missing `mptcpize` never listens, a routing daemon never starts).
//!
//! Programs from Debian's essential packages (coreutils' `cat`, `mkdir`,
//! `chown`) are taken as installed.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::routing::frr::FRR_DIR;
use crate::scenario::{FlowKind, Lab, LabVariant, LinkAction, Software};

/// A program the lab runs: a name looked up on `PATH` (as `ip netns
/// exec` and the lab itself look it up), or an absolute path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    pub name: String,
    /// The Debian package it comes in.
    pub package: &'static str,
}

impl Program {
    fn new(name: impl Into<String>, package: &'static str) -> Program {
        Program {
            name: name.into(),
            package,
        }
    }
}

/// What `braid lab bench` runs besides a variant's needs: ethtool (the
/// hosts' checksum offload off, NAPI on for the generator) and nft.
pub fn bench_extra() -> Vec<Program> {
    vec![
        Program::new("ethtool", "ethtool"),
        // The isolated sender's count at the receiving host.
        Program::new("nft", "nftables"),
    ]
}

/// The programs building `lab` for each of `variants` needs and, with
/// `flows`, running its flows and events too (`up` runs none), each once,
/// in the order they are first met.
pub fn needed(lab: &Lab, variants: &[LabVariant], flows: bool) -> Vec<Program> {
    let mut out: Vec<Program> = Vec::new();
    let mut add = |p: Program| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    // Namespaces, veth pairs, addresses, routes, bridges, MPTCP
    // endpoints; the routers' forwarding sysctls.
    add(Program::new("ip", "iproute2"));
    add(Program::new("sysctl", "procps"));
    // tbf on rate-limited links; the backlog a `down` event reports.
    if lab.links.iter().any(|l| l.rate_bps.is_some())
        || (flows && lab.events.iter().any(|e| e.action == LinkAction::Down))
    {
        add(Program::new("tc", "iproute2"));
    }
    // Offloads off at both ends of a delayed link (the emulator copies
    // frames raw).
    if lab
        .links
        .iter()
        .any(|l| !l.delay.is_zero() || !l.jitter.is_zero())
    {
        add(Program::new("ethtool", "ethtool"));
    }
    // NAT at the gateways with an uplink; a cut uplink.
    if lab.has_internet() {
        add(Program::new("nft", "nftables"));
    }
    let iperf = flows
        && lab
            .flows
            .iter()
            .any(|f| matches!(f.kind, FlowKind::Iperf(_)));
    if iperf {
        add(Program::new("iperf3", "iperf3"));
    }
    for v in variants {
        match &v.software {
            Software::Braid { .. } | Software::Kernel => {}
            Software::Babeld { .. } => add(Program::new("babeld", "babeld")),
            Software::Ospf(_) => {
                for d in ["zebra", "ospfd", "bfdd"] {
                    add(Program::new(
                        Path::new(FRR_DIR).join(d).display().to_string(),
                        "frr",
                    ));
                }
            }
            Software::Mptcp => {
                if iperf {
                    add(Program::new("mptcpize", "mptcpd"));
                }
            }
        }
    }
    out
}

/// Where `name` is installed, looked up in `path` (a `PATH` value) when
/// it has no '/': an executable file.
pub fn find(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return executable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(name))
        .find(|p| executable(p))
}

/// Those of `programs` not installed (looked up in `path`).
pub fn missing(programs: &[Program], path: Option<&OsStr>) -> Vec<Program> {
    programs
        .iter()
        .filter(|p| find(&p.name, path).is_none())
        .cloned()
        .collect()
}

/// The one line that names what is missing: "this scenario needs
/// mptcpize (Debian package mptcpd), not installed".
pub fn message(missing: &[Program]) -> String {
    let named: Vec<String> = missing
        .iter()
        .map(|p| format!("{} (Debian package {})", p.name, p.package))
        .collect();
    let list = match named.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    };
    format!("this scenario needs {list}, not installed")
}

/// Fails, naming each missing program and its package, unless every
/// program `lab` needs for `variants` (with `flows`: and its flows; and
/// `extra`) is installed on this process's `PATH`.
pub fn check(
    lab: &Lab,
    variants: &[LabVariant],
    flows: bool,
    extra: &[Program],
) -> anyhow::Result<()> {
    let mut need = needed(lab, variants, flows);
    for p in extra {
        if !need.contains(p) {
            need.push(p.clone());
        }
    }
    let path = std::env::var_os("PATH");
    let gone = missing(&need, path.as_deref());
    if gone.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("{}", message(&gone))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::plan;
    use crate::step::Step;

    const BASE: &str = "name = \"t\"\n[[router]]\nname = \"a\"\nhost = true\n[[router]]\nname = \"b\"\nhost = true\n\
         [[link]]\na = \"a\"\nb = \"b\"\n";

    fn names(lab: &Lab) -> Vec<String> {
        needed(lab, &lab.variants, true)
            .into_iter()
            .map(|p| p.name)
            .collect()
    }

    #[test]
    fn a_plain_braid_scenario_needs_iproute2_and_sysctl_only() {
        let lab = Lab::parse(
            "t.toml",
            &format!("{BASE}[[flow]]\nfrom = \"a\"\nto = \"b\"\n"),
        )
        .unwrap();
        assert_eq!(names(&lab), ["ip", "sysctl"]);
    }

    #[test]
    fn links_flows_and_variants_add_what_they_run() {
        let text = BASE.replace(
            "b = \"b\"\n",
            "b = \"b\"\nrate = \"10Mbit\"\ndelay = \"10ms\"\n",
        ) + "[[flow]]\nname = \"t\"\nkind = \"tcp\"\nfrom = \"a\"\nto = \"b\"\n\
             [[variant]]\nname = \"mptcp\"\nsoftware = \"mptcp\"\n\
             [[variant]]\nname = \"babel\"\nsoftware = \"babeld\"\n\
             [[variant]]\nname = \"ospf\"\nsoftware = \"ospf\"\n";
        let lab = Lab::parse("t.toml", &text).unwrap();
        let all = needed(&lab, &lab.variants, true);
        let pkg = |n: &str| all.iter().find(|p| p.name == n).map(|p| p.package);
        assert_eq!(pkg("tc"), Some("iproute2"));
        assert_eq!(pkg("ethtool"), Some("ethtool"));
        assert_eq!(pkg("iperf3"), Some("iperf3"));
        assert_eq!(pkg("mptcpize"), Some("mptcpd"));
        assert_eq!(pkg("babeld"), Some("babeld"));
        for d in ["zebra", "ospfd", "bfdd"] {
            assert_eq!(pkg(&format!("/usr/lib/frr/{d}")), Some("frr"), "{all:?}");
        }
        // Only the variants asked about: the first (MPTCP) needs no FRR.
        let first = needed(&lab, &lab.variants[..1], true);
        assert!(first.iter().any(|p| p.name == "mptcpize"));
        assert!(!first
            .iter()
            .any(|p| p.package == "frr" || p.name == "babeld"));
        // Building alone (`up`) runs no flows: no iperf3, no mptcpize.
        let build: Vec<String> = needed(&lab, &lab.variants[..1], false)
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(build, ["ip", "sysctl", "tc", "ethtool"]);
        // MPTCP without a tcp or iperf3-udp flow runs no mptcpize (nor
        // iperf3).
        let udp = Lab::parse(
            "t.toml",
            &format!(
                "{BASE}[[flow]]\nfrom = \"a\"\nto = \"b\"\n[[variant]]\nname = \"m\"\nsoftware = \"mptcp\"\n"
            ),
        )
        .unwrap();
        assert_eq!(names(&udp), ["ip", "sysctl"]);
        // A link taken down reports its queue from tc.
        let down = Lab::parse(
            "t.toml",
            &format!("{BASE}[[flow]]\nfrom = \"a\"\nto = \"b\"\n[[event]]\nat = \"1s\"\na = \"a\"\nb = \"b\"\naction = \"down\"\n"),
        )
        .unwrap();
        assert_eq!(names(&down), ["ip", "sysctl", "tc"]);
        assert_eq!(needed(&down, &down.variants, false).len(), 2);
    }

    /// Every program a shipped scenario's plan runs (commands in a
    /// namespace, daemons other than braid, the steps the executor turns
    /// into commands) is among what `needed` says that variant needs.
    #[test]
    fn needed_covers_every_program_the_shipped_plans_run() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/lab");
        let exe = Path::new("/usr/bin/braid");
        let essential = ["cat", "mkdir", "chown"];
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|x| x != "toml") {
                continue;
            }
            let lab = Lab::load(&path).unwrap();
            for v in &lab.variants {
                let Ok(steps) = plan(&lab, v, exe) else {
                    // FRR not installed here: plan() says so itself.
                    continue;
                };
                let need: Vec<String> = needed(&lab, std::slice::from_ref(v), false)
                    .into_iter()
                    .map(|p| p.name)
                    .collect();
                for s in &steps {
                    let run: Vec<String> = match s {
                        Step::Command { args, .. } => vec![args[0].clone()],
                        Step::Daemon { program, .. } if program != exe => {
                            vec![program.display().to_string()]
                        }
                        Step::Sysctl { .. } => vec!["sysctl".into()],
                        Step::OffloadsOff { .. } => vec!["ethtool".into()],
                        Step::Rate { .. } => vec!["tc".into()],
                        _ => vec![],
                    };
                    for p in run {
                        assert!(
                            need.contains(&p) || essential.contains(&p.as_str()),
                            "{} [{}] runs {p}, which needed() leaves out: {need:?}",
                            path.display(),
                            v.name
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 100, "{checked}");
    }

    #[test]
    fn what_is_missing_is_named_with_its_package_in_one_line() {
        let dir = std::env::temp_dir().join(format!("braid-programs-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ip = dir.join("ip");
        std::fs::write(&ip, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&ip, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Not executable: not installed.
        std::fs::write(dir.join("iperf3"), "").unwrap();
        let need = [
            Program::new("ip", "iproute2"),
            Program::new("iperf3", "iperf3"),
            Program::new("mptcpize", "mptcpd"),
            Program::new("/nonexistent/frr/zebra", "frr"),
        ];
        let gone = missing(&need, Some(dir.as_os_str()));
        assert_eq!(find("ip", Some(dir.as_os_str())), Some(ip));
        assert_eq!(
            message(&gone),
            "this scenario needs iperf3 (Debian package iperf3), mptcpize (Debian package mptcpd) and /nonexistent/frr/zebra (Debian package frr), not installed"
        );
        assert_eq!(
            message(&gone[1..2]),
            "this scenario needs mptcpize (Debian package mptcpd), not installed"
        );
        // No PATH: only absolute paths can be found.
        assert_eq!(missing(&need[..1], None).len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
