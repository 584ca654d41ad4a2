//! The daemon's interfaces as the kernel's link notifications tell them
//! (`crate::carrier`): an interface down or without carrier takes its
//! neighbors down at once; a configured interface that does not exist (at
//! start, or since it went away) is opened when it appears (a USB radio
//! plugged in, a VLAN or bridge made after boot); one that goes away
//! (unplugged, deleted, renamed) is closed, its neighbors down, until it
//! comes back. An event each time, never a poll: without notifications
//! (their socket refused) the interfaces are looked at every
//! [`RESCAN_EVERY`] instead.
//!
//! Each interface keeps its position in the config whether it is open or
//! not: the node's `Interface(i)`, its poll tokens, the address book's
//! places and the kernel's per-interface programs never see the
//! numbering move. [`Links`] holds what following them takes (the
//! notifications' socket, why an interface could not be opened); the
//! ports themselves are the data plane's.

use std::time::Duration;

use braid_proto::node::Interface;
use braid_proto::time::Instant;
use mio::{Interest, Registry};
use tracing::{error, info, warn};

use super::checks;
use super::dataplane::DataPlane;
use super::error::DaemonError;
use super::tokens;
use crate::carrier::{self, CarrierWatch, Change, LinkState};
use crate::config::Config;
use crate::underlay::{Port, UnderlayError};

/// Without link notifications, how often the configured interfaces are
/// looked at (for each, its index by name and its flags): the only way
/// then to see one appear or go. Bounded: a few system calls per
/// interface every 5 s, and only when the notification socket could not
/// be opened.
const RESCAN_EVERY: Duration = Duration::from_secs(5);

/// Following the configured interfaces as they come and go.
pub(super) struct Links {
    /// The kernel's link notifications (`None`: unavailable, then failed
    /// sends and silence take neighbors down, and interfaces are looked
    /// at every [`RESCAN_EVERY`]).
    pub carrier: Option<CarrierWatch>,
    /// Without link notifications: when the interfaces are next looked at.
    next_rescan: Instant,
    /// Why a configured interface that exists could not be opened, as
    /// last logged (said once per reason).
    open_errors: Vec<Option<String>>,
}

impl Links {
    /// Follows `interfaces` interfaces from `now`, with the kernel's
    /// notifications when they can be had (listening before the
    /// interfaces are opened: one that appears meanwhile is either opened
    /// then or notified).
    pub fn open(interfaces: usize, now: Instant) -> Links {
        let carrier = CarrierWatch::open()
            .inspect_err(|e| warn!(error = %e, "no link notifications: carrier loss is seen only by failed sends and silence, and missing interfaces are looked for every 5 s"))
            .ok();
        Links {
            carrier,
            next_rescan: now + RESCAN_EVERY,
            open_errors: vec![None; interfaces],
        }
    }

    /// Reads the kernel's link notifications and follows them. When the
    /// kernel dropped some (its queue overflowed), every configured
    /// interface is looked at afterwards.
    pub fn read_carrier(&mut self, data: &mut DataPlane, registry: &Registry) {
        let Some(watch) = &mut self.carrier else {
            return;
        };
        let mut states = Vec::new();
        let r = watch.read(|s| states.push(s));
        data.counters.carrier_malformed += r.malformed;
        self.follow_links(data, registry, &states);
        if r.overrun {
            self.rescan_links(data, registry);
        }
    }

    /// Without link notifications, looks at the interfaces when it is
    /// time to.
    pub fn rescan_if_due(&mut self, now: Instant, data: &mut DataPlane, registry: &Registry) {
        if self.carrier.is_none() && now >= self.next_rescan {
            self.next_rescan = now + RESCAN_EVERY;
            self.rescan_links(data, registry);
        }
    }

    /// Looks at every configured interface (notifications lost, or not to
    /// be had) and follows what the kernel says of each now.
    fn rescan_links(&mut self, data: &mut DataPlane, registry: &Registry) {
        let states = carrier::rescan(&open_indexes(data), &data.config.interfaces);
        self.follow_links(data, registry, &states);
    }

    /// Follows link states, in order: interfaces that appeared are
    /// opened and those gone closed at once; each open interface's
    /// carrier follows the last word about it (down or without carrier:
    /// its neighbors down, and nobody back until the kernel says it is up
    /// again).
    fn follow_links(&mut self, data: &mut DataPlane, registry: &Registry, states: &[LinkState]) {
        let now = data.now();
        let mut open = open_indexes(data);
        let mut usable: Vec<Option<bool>> = vec![None; data.ports.len()];
        for s in states {
            let Some((i, change)) = carrier::change(&open, &data.config.interfaces, s) else {
                continue;
            };
            match change {
                Change::Usable(u) => {
                    usable[i] = Some(u);
                    continue;
                }
                Change::Gone => close_port(data, registry, i, now),
                Change::Appeared => self.open_port(data, registry, i, now),
                Change::Replaced => {
                    close_port(data, registry, i, now);
                    self.open_port(data, registry, i, now);
                }
            }
            // Opening looked at its flags itself.
            usable[i] = None;
            open = open_indexes(data);
        }
        for (i, u) in usable.into_iter().enumerate() {
            match u {
                Some(false) => {
                    let gone = data
                        .node
                        .interface_down(now, Interface(i as u16), &mut data.rng);
                    data.note_interface_down(i, gone, "carrier lost");
                }
                Some(true) => data.node.interface_up(Interface(i as u16)),
                None => {}
            }
        }
    }

    /// Opens configured interface `i`, which exists now: its sockets join
    /// the loop under its tokens, the kernel data path attaches to it,
    /// and the node counts what is heard on it once it is up with carrier.
    /// A failure is said once per reason and leaves it missing (tried
    /// again at its next notification).
    fn open_port(&mut self, data: &mut DataPlane, registry: &Registry, i: usize, now: Instant) {
        if data.ports.get(i).is_none_or(Option::is_some) {
            return;
        }
        let name = data.config.interfaces[i].clone();
        let c = &data.config;
        let mut p = match Port::open(&name, c.port, c.group, c.send_buffer) {
            Ok(p) => p,
            // Gone again already: its removal is on its way.
            Err(UnderlayError::NoInterface { .. }) => return,
            Err(e) => return self.open_failed(data, i, e.to_string()),
        };
        if let Err(e) = register_port(registry, i, &mut p) {
            return self.open_failed(data, i, format!("interface {name}: poll: {e}"));
        }
        self.open_errors[i] = None;
        let usable = p.usable();
        let index = p.index;
        data.outgoing[i].unblock();
        data.ports[i] = Some(p);
        data.counters.interfaces_missing = data.counters.interfaces_missing.saturating_sub(1);
        data.counters.interfaces_appeared += 1;
        let interface = Interface(i as u16);
        if usable {
            data.node.interface_up(interface);
        } else {
            // Nothing heard on it counts until the kernel says it is up
            // with carrier (a notification follows).
            data.node.interface_down(now, interface, &mut data.rng);
        }
        info!(
            index,
            usable, "interface {name} appeared: braid uses it now"
        );
        if let Some(k) = &mut data.kernel {
            if let Err(e) = k.port_opened(i, &data.ports) {
                warn!(error = %e, "interface {name}: the kernel data path could not attach to it; what arrives on it crosses the daemon");
            }
        }
    }

    fn open_failed(&mut self, data: &DataPlane, i: usize, why: String) {
        if self.open_errors[i].as_deref() != Some(why.as_str()) {
            warn!(error = %why, "interface {} appeared but could not be opened: braid tries again at its next change", data.config.interfaces[i]);
            self.open_errors[i] = Some(why);
        }
    }
}

/// The kernel's index of each configured interface braid has open.
fn open_indexes(data: &DataPlane) -> Vec<Option<u32>> {
    data.ports
        .iter()
        .map(|p| p.as_ref().map(|p| p.index))
        .collect()
}

/// Closes configured interface `i`, which went away: its sockets leave
/// the loop, what waited for it is dropped, its neighbors go down, and
/// the kernel data path comes off it.
fn close_port(data: &mut DataPlane, registry: &Registry, i: usize, now: Instant) {
    let Some(mut p) = data.ports.get_mut(i).and_then(Option::take) else {
        return;
    };
    let _ = registry.deregister(&mut p.socket);
    let _ = registry.deregister(&mut p.data);
    // What its socket dropped stays counted.
    data.counters.udp_rx_dropped_closed += p.receive_drops().unwrap_or(0);
    drop(p);
    let node = &mut data.node;
    let dropped = data.outgoing[i].fail_all(|id, bytes| {
        node.on_sent(id);
        node.recycle(bytes);
    });
    data.outgoing[i].unblock();
    data.counters.udp_tx_errors += dropped;
    let gone = data
        .node
        .interface_down(now, Interface(i as u16), &mut data.rng);
    data.note_interface_down(i, gone, "interface gone");
    data.counters.interfaces_gone += 1;
    data.counters.interfaces_missing += 1;
    if let Some(k) = &mut data.kernel {
        k.port_closed(i, &data.ports);
    }
    warn!(
        "interface {} is gone (removed or renamed): its neighbors are down; braid will use it again when it comes back",
        data.config.interfaces[i]
    );
}

/// Opens every configured interface that exists (`None` for one that
/// does not: said, and waited for); any other failure to open one refuses
/// the start.
pub(super) fn open_ports(config: &Config) -> Result<Vec<Option<Port>>, DaemonError> {
    let mut ports = Vec::with_capacity(config.interfaces.len());
    let mut missing = Vec::new();
    for name in &config.interfaces {
        match Port::open(name, config.port, config.group, config.send_buffer) {
            Ok(p) => ports.push(Some(p)),
            Err(UnderlayError::NoInterface { .. }) => {
                missing.push(name.clone());
                ports.push(None);
            }
            Err(e) => return Err(e.into()),
        }
    }
    let (warnings, none) = checks::missing_interface_messages(&missing, ports.len());
    for w in warnings {
        warn!("{w}");
    }
    if let Some(e) = none {
        error!("{e}");
    }
    Ok(ports)
}

/// Registers port `i`'s sockets with the loop, under its tokens.
pub(super) fn register_port(r: &Registry, i: usize, p: &mut Port) -> std::io::Result<()> {
    r.register(&mut p.socket, tokens::port_readable(i), Interest::READABLE)?;
    // Edge-triggered: an event each time the kernel's queue for this
    // interface frees room after a send found it full.
    r.register(&mut p.data, tokens::port_writable(i), Interest::WRITABLE)
}
