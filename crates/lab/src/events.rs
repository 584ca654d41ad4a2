//! What a scenario's events do while its flows run: on a link (a silent
//! blackhole from the loss program, carrier down and up, what its queues
//! held, a new rate), on an access point's port (a roaming client's loss), on a
//! client's routes (plain routing's re-homing) and on a router (new keys,
//! a crash and restart).

use std::collections::BTreeMap;

use anyhow::bail;

use crate::link::{
    attach_loss_at_once, detach_loss, root_qdisc, set_port_loss, LossParams, LossSlot,
};
use crate::ns::in_ns;
use crate::routing;
use crate::scenario::{EventTarget, Lab, LabEvent, LinkAction};

/// Applies an event: a port's loss, a client's re-homing (plain routing
/// only, `plain`), a router's keys or crash, or a link's (see
/// [`link_event`]).
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
            set_port_loss(lab, segment, ap, per_mille)?
        }
        (EventTarget::Client(c), LinkAction::Rehome(ap)) => {
            if plain {
                rehome(lab, c, ap)?
            }
        }
        (EventTarget::Router(r), LinkAction::Keys { first, second }) => {
            let ids: Vec<u8> = std::iter::once(first).chain(second).collect();
            for i in routers(lab, r) {
                if routing::braid::rekey(lab, i, &ids)? {
                    eprintln!(
                        "lab {}: {} takes keys {ids:?}",
                        lab.name, lab.routers[i].name
                    );
                }
            }
        }
        (EventTarget::Router(r), LinkAction::Crash) => {
            for i in routers(lab, r) {
                if routing::braid::crash_and_restart(lab, i)? {
                    eprintln!(
                        "lab {}: {} killed (-9) and started again",
                        lab.name, lab.routers[i].name
                    );
                }
            }
        }
        (
            EventTarget::Router(Some(r)),
            action @ (LinkAction::UplinkCut | LinkAction::UplinkRestore),
        ) => uplink_event(lab, r, action == LinkAction::UplinkCut)?,
        (EventTarget::Port { .. } | EventTarget::Client(_) | EventTarget::Router(_), _)
        | (
            _,
            LinkAction::Rehome(_)
            | LinkAction::Keys { .. }
            | LinkAction::Crash
            | LinkAction::UplinkCut
            | LinkAction::UplinkRestore,
        ) => {
            bail!("event {:?} on {:?} means nothing", e.action, e.target)
        }
        (EventTarget::Link(_) | EventTarget::FirstHopOf(_), _) => {
            return link_event(lab, e, resolved)
        }
    }
    Ok(None)
}

/// Gateway `r`'s uplink cut silently, or restored: its ISP drops every IP
/// packet that arrives from it (an nftables table of its own, deleted to
/// restore). ARP is still answered and every link stays up, as behind a
/// modem whose line died; the gateway learns of it only by checking.
fn uplink_event(lab: &Lab, r: usize, cut: bool) -> anyhow::Result<()> {
    let k = lab
        .uplinks()
        .iter()
        .position(|&g| g == r)
        .ok_or_else(|| anyhow::anyhow!("{} has no uplink", lab.routers[r].name))?;
    let isp = lab.isp_ns(k);
    if cut {
        in_ns(&isp, &["nft", "add", "table", "ip", "cut"])?;
        in_ns(
            &isp,
            &[
                "nft",
                "add chain ip cut pre { type filter hook prerouting priority raw; }",
            ],
        )?;
        in_ns(&isp, &["nft", "add rule ip cut pre iifname \"eth0\" drop"])?;
    } else {
        in_ns(&isp, &["nft", "delete", "table", "ip", "cut"])?;
    }
    eprintln!(
        "lab {}: {}'s uplink {}",
        lab.name,
        lab.routers[r].name,
        if cut { "cut" } else { "restored" }
    );
    Ok(())
}

/// The routers a router event names: one, or every one.
fn routers(lab: &Lab, r: Option<usize>) -> Vec<usize> {
    match r {
        Some(i) => vec![i],
        None => (0..lab.routers.len()).collect(),
    }
}

/// Plain routing re-homes client `c` to access point `ap` (as a plain
/// network does when the old one fails).
fn rehome(lab: &Lab, c: usize, ap: usize) -> anyhow::Result<()> {
    eprintln!(
        "lab {}: {} re-homed to {}",
        lab.name, lab.clients[c].name, lab.routers[ap].name
    );
    for (ns, args) in routing::kernel::client_routes(lab, c, ap) {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        in_ns(&ns, &refs)?;
    }
    Ok(())
}

/// A link's event: a blackhole attaches the loss program built to drop
/// everything, ahead of any other filter, on both ends' ingress; a
/// restore removes it; down and up set both ends' interfaces (down
/// returns what the link's queues held); a rate changes both ends' tbf;
/// a loss replaces the link's own loss program on both ends.
fn link_event(
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
        EventTarget::Port { .. } | EventTarget::Client(_) | EventTarget::Router(_) => {
            bail!("event {:?} on {:?} is not a link's", e.action, e.target)
        }
    };
    eprintln!("lab {}: {:?} link bl{link}", lab.name, e.action);
    let l = &lab.links[link];
    let dev = Lab::link_dev(link);
    let ends = [lab.ns(l.a), lab.ns(l.b)];
    if let LinkAction::Loss(per_mille) = e.action {
        // The link's own loss program replaced, both ways at one moment
        // (none from 0 on), its bursts as the scenario gave them.
        for ns in &ends {
            detach_loss(ns, &dev, LossSlot::Link);
        }
        if per_mille > 0 {
            let params = LossParams::gilbert_elliott(f64::from(per_mille) / 1000.0, l.burst);
            attach_loss_at_once(
                &[(&ends[0], &dev), (&ends[1], &dev)],
                params.sparing_arp(),
                LossSlot::Link,
            )?;
        }
        return Ok(None);
    }
    if e.action == LinkAction::Blackhole {
        // Ahead of any loss program already there (a lossy link); both
        // ways at one moment.
        attach_loss_at_once(
            &[(&ends[0], &dev), (&ends[1], &dev)],
            LossParams::blackhole(),
            LossSlot::Blackhole,
        )?;
    }
    for ns in ends {
        match e.action {
            LinkAction::Blackhole => {}
            LinkAction::Restore => detach_loss(&ns, &dev, LossSlot::Blackhole),
            LinkAction::Down => {}
            LinkAction::Up => in_ns(&ns, &["ip", "link", "set", &dev, "up"])?,
            LinkAction::Rate(bps) => in_ns(
                &ns,
                &[
                    "tc",
                    "qdisc",
                    "change",
                    "dev",
                    &dev,
                    "root",
                    "tbf",
                    "rate",
                    &format!("{bps}bit"),
                    "burst",
                    "32kbit",
                    "latency",
                    "100ms",
                ],
            )?,
            LinkAction::Loss(_)
            | LinkAction::Rehome(_)
            | LinkAction::Keys { .. }
            | LinkAction::Crash
            | LinkAction::UplinkCut
            | LinkAction::UplinkRestore => {}
        }
    }
    if e.action != LinkAction::Down {
        return Ok(None);
    }
    let mut queued = 0;
    for ns in [lab.ns(l.a), lab.ns(l.b)] {
        queued += root_qdisc(&ns, &dev).backlog;
        in_ns(&ns, &["ip", "link", "set", &dev, "down"])?;
    }
    eprintln!(
        "lab {}: {queued} packets were queued for bl{link} when it went down",
        lab.name
    );
    Ok(Some(queued))
}
