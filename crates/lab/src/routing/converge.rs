//! Waiting for a lab's routing once it is built: every router with a host
//! reaching every other, the whole topology known everywhere, the routes
//! settled,
//! and every client known to the braid routers (after it joins its
//! segment as a client does).

use std::net::SocketAddrV4;
use std::process::Child;
use std::time::{Duration, Instant};

use anyhow::bail;

use super::query::{
    braid_routes, control_state, log_tail, route_text, routes_out, routes_to, topology_missing,
};
use crate::ns::socket_in;
use crate::scenario::Lab;

/// Waits (at most 30 s) until every router with a host routes to every
/// other router with a host and, where the lab has an internet, every
/// router has a way out (a gateway whose uplink check passed), then until
/// the routes settle.
pub fn wait_converged(lab: &Lab, daemons: &mut [(usize, Child)]) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let ends: Vec<usize> = (0..lab.routers.len())
        .filter(|&i| lab.routers[i].host)
        .collect();
    loop {
        for (i, d) in daemons.iter_mut() {
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
        if lab.has_internet() {
            missing.extend((0..lab.routers.len()).filter_map(|i| routes_out(lab, i).err()));
        }
        if missing.is_empty() {
            let all: Vec<usize> = (0..lab.routers.len()).collect();
            wait_topology(lab, &all);
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

/// Waits (at most 10 s) until every braid router in `routers` holds the
/// lab's whole topology: every router's advertisement listing each of its
/// links' far ends. A route to every end can exist with one of a
/// diamond's two paths still unknown (a lossy link's first probes lost),
/// and a flow started then would run single path until the other
/// advertisement arrives; an access point, where a client's flows
/// enter, must hold the advertisements of the routers they go to. A link that stays down past the wait (a very
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
