//! Asking a running lab's routers what they route: a braid daemon over
//! its control socket (in the typed documents the daemon writes), other
//! routing software from the kernel's table; a flow's active path, and
//! what a router holds (for the report when a lab does not converge).

use std::process::Command;

use anyhow::anyhow;
use braid_daemon::ctl::{self, Doc, Routes, Stats};

use crate::scenario::{Lab, LabFlow};

/// Router `i`'s braid daemon's routes and database; `None` when the
/// router runs none (babeld, or plain kernel routing).
pub(super) fn braid_routes(lab: &Lab, i: usize) -> Option<anyhow::Result<Routes>> {
    let sock = lab.socket(i);
    sock.exists()
        .then(|| Ok(ctl::query::<Routes>(&sock, "routes")?.body))
}

/// Router `i`'s braid daemon's counters (what the report keeps of each
/// daemon); `None` when it runs none or does not answer, which is said
/// on standard error (the report then lacks that daemon).
pub fn braid_stats(lab: &Lab, i: usize) -> Option<Doc<Stats>> {
    let sock = lab.socket(i);
    if !sock.exists() {
        return None;
    }
    ctl::query::<Stats>(&sock, "stats")
        .map_err(|e| {
            eprintln!(
                "lab {}: {}'s counters are left out of the report: {e:#}",
                lab.name, lab.routers[i].name
            )
        })
        .ok()
}

/// The link the sender's router of flow `f` sends its packets on now:
/// braid's first path, or the kernel's route (babeld, kernel).
pub fn first_link_of(lab: &Lab, f: &LabFlow) -> anyhow::Result<usize> {
    let i = f.from;
    let next: usize = if let Some(r) = braid_routes(lab, i) {
        let hop = r?
            .routes
            .iter()
            .find(|x| x.egress as usize == f.to + 1)
            .and_then(|x| x.paths.first()?.get(1).copied())
            .ok_or_else(|| {
                anyhow!(
                    "{} has no path to {}",
                    lab.routers[i].name,
                    lab.end_name(f.to)
                )
            })?;
        hop as usize - 1
    } else {
        let out = Command::new("ip")
            .args([
                "-n",
                &lab.ns(i),
                "route",
                "get",
                &lab.end_addr(f.to).to_string(),
            ])
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let dev = text
            .split_whitespace()
            .skip_while(|w| *w != "dev")
            .nth(1)
            .ok_or_else(|| anyhow!("no route from {}: {text}", lab.routers[i].name))?;
        let j: usize = dev.trim_start_matches("bl").parse()?;
        let l = &lab.links[j];
        if l.a == i {
            l.b
        } else {
            l.a
        }
    };
    lab.links
        .iter()
        .position(|l| (l.a, l.b) == (i, next) || (l.a, l.b) == (next, i))
        .ok_or_else(|| anyhow!("no link from {} to router {next}", lab.routers[i].name))
}

/// Router `i`'s routes toward the hosts, as text: braid's paths from its
/// daemon, else the kernel's routes.
pub(super) fn route_text(lab: &Lab, i: usize) -> String {
    if let Some(r) = braid_routes(lab, i) {
        // The paths in use only: costs move with every probe, and the
        // routes toward routers without traffic are shown, not used.
        return r
            .map(|r| {
                let used: Vec<_> = r
                    .routes
                    .iter()
                    .filter(|x| x.in_use)
                    .map(|x| (x.egress, &x.paths))
                    .collect();
                serde_json::to_string(&used).unwrap_or_default()
            })
            .unwrap_or_default();
    }
    Command::new("ip")
        .args(["-n", &lab.ns(i), "route", "show", "root", "198.18.0.0/16"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Whether router `i` can reach router `k`'s host subnet; if not, why
/// (for the report when a lab does not converge).
pub(super) fn routes_to(lab: &Lab, i: usize, k: usize) -> Result<(), String> {
    let (from, to) = (&lab.routers[i].name, &lab.routers[k].name);
    if let Some(r) = braid_routes(lab, i) {
        let r = r.map_err(|e| format!("{from}'s daemon did not answer: {e}"))?;
        // Its advertisement, or (of another area) its leader's summary
        // listing what it serves (docs/protocol.md, "Areas").
        let member = format!(" at member {}", k + 1);
        let knows = r.origins.iter().any(|o| {
            (o.origin as usize == k + 1 && !o.prefixes.is_empty())
                || o.prefixes.iter().any(|p| p.ends_with(&member))
        });
        // What it does hold is in the report's `control_state`.
        return if knows {
            Ok(())
        } else {
            Err(format!("{from} has no route to {to}"))
        };
    }
    let (net, len) = Lab::host_net(k);
    if kernel_routes(lab, i, &format!("{net}/{len}")) {
        Ok(())
    } else {
        Err(format!("{from} has no kernel route to {to}"))
    }
}

/// Whether router `i` has a way to the internet (a gateway announcing
/// it, or its own uplink); if not, why.
pub(super) fn routes_out(lab: &Lab, i: usize) -> Result<(), String> {
    let name = &lab.routers[i].name;
    if lab.routers[i].uplink {
        return Ok(());
    }
    if let Some(r) = braid_routes(lab, i) {
        let r = r.map_err(|e| format!("{name}'s daemon did not answer: {e}"))?;
        let out = r
            .origins
            .iter()
            .any(|o| o.prefixes.iter().any(|p| p.starts_with("0.0.0.0/0")));
        return if out {
            Ok(())
        } else {
            Err(format!("{name} has no gateway to the internet"))
        };
    }
    if kernel_routes(lab, i, "default") {
        Ok(())
    } else {
        Err(format!("{name} has no default route"))
    }
}

/// Whether router `i`'s kernel has a route to `dst` (`ip route show`).
fn kernel_routes(lab: &Lab, i: usize, dst: &str) -> bool {
    Command::new("ip")
        .args(["-n", &lab.ns(i), "route", "show", dst])
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}

/// The lab's links that router `i`'s braid daemon does not hold in both
/// ends' advertisements (empty for other routing software).
pub(super) fn topology_missing(lab: &Lab, i: usize) -> Vec<String> {
    let Some(Ok(r)) = braid_routes(lab, i) else {
        return Vec::new();
    };
    let lists = |from: usize, to: usize| {
        r.origins
            .iter()
            .any(|o| o.origin as usize == from + 1 && o.links.contains(&(to as u16 + 1)))
    };
    // A router of an area holds its own area's advertisements only
    // (docs/protocol.md, "Areas"): the links between two of its routers.
    let area = lab.routers[i].area;
    lab.links
        .iter()
        .filter(|l| lab.routers[l.a].area == area && lab.routers[l.b].area == area)
        .filter(|l| !(lists(l.a, l.b) && lists(l.b, l.a)))
        .map(|l| {
            format!(
                "{} does not know {}-{}",
                lab.routers[i].name, lab.routers[l.a].name, lab.routers[l.b].name
            )
        })
        .collect()
}

/// What router `i`'s braid daemon holds and has counted of its control
/// plane (for the report when a lab does not converge); empty for other
/// routing software.
pub(super) fn control_state(lab: &Lab, i: usize) -> String {
    let origins = match braid_routes(lab, i) {
        None => return String::new(),
        Some(Err(e)) => return format!("did not answer: {e}"),
        Some(Ok(r)) => r
            .origins
            .iter()
            .map(|o| format!("{}(seq {})", o.origin, o.seq))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let stats = braid_stats(lab, i)
        .map(|s| {
            let s = s.body.stats;
            format!(
                "control {} lsdb {} io {}",
                serde_json::to_string(&s.control).unwrap_or_default(),
                serde_json::to_string(&s.lsdb).unwrap_or_default(),
                serde_json::to_string(&s.io).unwrap_or_default()
            )
        })
        .unwrap_or_default();
    format!("origins {origins}; {stats}")
}

/// The last `lines` lines of router `i`'s routing daemon log.
pub fn log_tail(lab: &Lab, i: usize, lines: usize) -> String {
    let text = std::fs::read_to_string(lab.dir().join(format!("{}.log", lab.routers[i].name)))
        .unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
