//! What routes a lab's routers, one module per variant: braid daemons
//! (`braid.rs`), babeld (`babeld.rs`), static kernel routes
//! (`kernel.rs`) and Linux MPTCP over them (`mptcp.rs`); each turns a lab
//! into plan steps. Here: what every variant shares once it runs, asking
//! a router what it routes (a braid daemon over its control socket, in
//! the typed documents the daemon writes; the others from the kernel's
//! table), waiting for convergence, and finding a flow's active path.

pub mod babeld;
pub mod braid;
pub mod frr;
pub mod kernel;
pub mod mptcp;

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use braid_daemon::ctl::{self, Doc, Routes, Stats};

use std::net::SocketAddrV4;

use crate::exec::Built;
use crate::flows::socket_in;
use crate::scenario::{Lab, LabFlow};

/// Router `i`'s braid daemon's routes and database; `None` when the
/// router runs none (babeld, or plain kernel routing).
fn braid_routes(lab: &Lab, i: usize) -> Option<anyhow::Result<Routes>> {
    let sock = lab.socket(i);
    sock.exists()
        .then(|| Ok(ctl::query::<Routes>(&sock, "routes")?.body))
}

/// Router `i`'s braid daemon's counters (what the report keeps of each
/// daemon); `None` when it runs none or does not answer.
pub fn braid_stats(lab: &Lab, i: usize) -> Option<Doc<Stats>> {
    let sock = lab.socket(i);
    sock.exists()
        .then(|| ctl::query::<Stats>(&sock, "stats").ok())
        .flatten()
}

/// Waits (at most 30 s) until every router with a host routes to every
/// other router with a host, then until the routes settle.
pub fn wait_converged(lab: &Lab, built: &mut Built) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let ends: Vec<usize> = (0..lab.routers.len())
        .filter(|&i| lab.routers[i].host)
        .collect();
    loop {
        for (i, d) in built.daemons.iter_mut() {
            if let Ok(Some(status)) = d.try_wait() {
                bail!(
                    "the routing daemon of {} exited ({status}):\n{}",
                    lab.routers[*i].name,
                    log_tail(lab, *i, 40)
                );
            }
        }
        let mut missing = Vec::new();
        for &i in &ends {
            for &k in &ends {
                if k != i {
                    if let Err(why) = routes_to(lab, i, k) {
                        missing.push(why);
                    }
                }
            }
        }
        if missing.is_empty() {
            wait_topology(lab, &ends);
            return wait_settled(lab);
        }
        if Instant::now() > deadline {
            let logs: String = (0..lab.routers.len())
                .map(|i| {
                    format!(
                        "\n{}: {}\n{} log:\n{}",
                        lab.routers[i].name,
                        control_state(lab, i),
                        lab.routers[i].name,
                        log_tail(lab, i, 20)
                    )
                })
                .collect();
            bail!(
                "the lab did not converge in 30 s: {}{logs}",
                missing.join("; ")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Brings every client onto its segment as a client joining a network
/// does (it sends: here a datagram to its gateway's discard port, whose
/// ARP request the access points in range hear; with IPv6 it takes an
/// address by SLAAC, whose duplicate address detection they hear), and
/// with braid waits (at most 20 s) until every braid router knows an
/// access point serving it (at each of its addresses).
pub fn wait_clients(lab: &Lab) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    for c in 0..lab.clients.len() {
        let gw = SocketAddrV4::new(Lab::segment_gateway(lab.clients[c].segment), 9);
        // With IPv6 flows, its SLAAC address too (found when the client
        // takes it from the access points' advertisements).
        let mut needles = vec![format!("client {} ", lab.client_addr(c))];
        if lab.ipv6() {
            needles.push(format!("client {} ", lab.client_addr6(c)));
        }
        let socket = socket_in(&lab.client_ns(c), SocketAddrV4::new(lab.client_addr(c), 0))?;
        loop {
            let _ = socket.send_to(b"hello", gw);
            let known = (0..lab.routers.len()).all(|i| match braid_routes(lab, i) {
                None => true,
                Some(r) => r.is_ok_and(|r| {
                    needles.iter().all(|needle| {
                        r.origins
                            .iter()
                            .any(|o| o.prefixes.iter().any(|p| p.starts_with(needle)))
                    })
                }),
            });
            // Its SLAAC address usable: duplicate address detection over
            // (the access points heard it start, and may advertise the
            // client before a socket can bind to the address).
            let usable = !lab.ipv6()
                || socket_in(
                    &lab.client_ns(c),
                    std::net::SocketAddr::new(lab.client_addr6(c).into(), 0),
                )
                .is_ok();
            if known && usable {
                break;
            }
            if Instant::now() > deadline {
                bail!(
                    "no braid router learnt of client {} in 20 s, or its IPv6 address stayed tentative (is an access point of its segment up?)",
                    lab.clients[c].name
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    Ok(())
}

/// Waits (at most 10 s) until every braid router with a host holds the
/// lab's whole topology: every router's advertisement listing each of its
/// links' far ends. A route to every end can exist with one of a
/// diamond's two paths still unknown (a lossy link's first probes lost),
/// and a flow started then would run single path until the other
/// advertisement arrives. A link that stays down past the wait (a very
/// lossy one) is logged, and the flows start anyway.
fn wait_topology(lab: &Lab, ends: &[usize]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let missing: Vec<String> = ends
            .iter()
            .flat_map(|&i| topology_missing(lab, i))
            .collect();
        if missing.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            eprintln!(
                "lab {}: starting with the topology incomplete after 10 s: {}",
                lab.name,
                missing.join("; ")
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The lab's links that router `i`'s braid daemon does not hold in both
/// ends' advertisements (empty for other routing software).
fn topology_missing(lab: &Lab, i: usize) -> Vec<String> {
    let Some(Ok(r)) = braid_routes(lab, i) else {
        return Vec::new();
    };
    let lists = |from: usize, to: usize| {
        r.origins
            .iter()
            .any(|o| o.origin as usize == from + 1 && o.links.contains(&(to as u16 + 1)))
    };
    lab.links
        .iter()
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
fn control_state(lab: &Lab, i: usize) -> String {
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

/// Waits until the routes between ends are unchanged for `settle` (at most
/// 60 s).
fn wait_settled(lab: &Lab) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let ends: Vec<usize> = (0..lab.routers.len())
        .filter(|&i| lab.routers[i].host)
        .collect();
    let snapshot = || -> Vec<String> { ends.iter().map(|&i| route_text(lab, i)).collect() };
    let mut last = snapshot();
    let mut since = Instant::now();
    while since.elapsed() < lab.settle {
        if Instant::now() > deadline {
            bail!(
                "routes did not stay unchanged for {:?} within 60 s",
                lab.settle
            );
        }
        std::thread::sleep(Duration::from_millis(100));
        let now = snapshot();
        if now != last {
            last = now;
            since = Instant::now();
        }
    }
    Ok(())
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
fn route_text(lab: &Lab, i: usize) -> String {
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
fn routes_to(lab: &Lab, i: usize, k: usize) -> Result<(), String> {
    let (from, to) = (&lab.routers[i].name, &lab.routers[k].name);
    if let Some(r) = braid_routes(lab, i) {
        let r = r.map_err(|e| format!("{from}'s daemon did not answer: {e}"))?;
        let knows = r
            .origins
            .iter()
            .any(|o| o.origin as usize == k + 1 && !o.prefixes.is_empty());
        // What it does hold is in the report's `control_state`.
        return if knows {
            Ok(())
        } else {
            Err(format!("{from} has no route to {to}"))
        };
    }
    let (net, len) = Lab::host_net(k);
    let found = Command::new("ip")
        .args(["-n", &lab.ns(i), "route", "show", &format!("{net}/{len}")])
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    if found {
        Ok(())
    } else {
        Err(format!("{from} has no kernel route to {to}"))
    }
}
