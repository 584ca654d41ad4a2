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
//! numbering move.

use std::time::Duration;

use braid_proto::node::Interface;
use braid_proto::time::Instant;
use tracing::{info, warn};

use super::{register_port, Daemon};
use crate::carrier::{self, Change, LinkState};
use crate::underlay::{Port, UnderlayError};

/// Without link notifications, how often the configured interfaces are
/// looked at (for each, its index by name and its flags): the only way
/// then to see one appear or go. Bounded: a few system calls per
/// interface every 5 s, and only when the notification socket could not
/// be opened.
pub(super) const RESCAN_EVERY: Duration = Duration::from_secs(5);

impl Daemon {
    /// Reads the kernel's link notifications and follows them. When the
    /// kernel dropped some (its queue overflowed), every configured
    /// interface is looked at afterwards.
    pub(super) fn read_carrier(&mut self) {
        let Some(watch) = &mut self.carrier else {
            return;
        };
        let mut states = Vec::new();
        let r = watch.read(|s| states.push(s));
        self.counters.carrier_malformed += r.malformed;
        self.follow_links(&states);
        if r.overrun {
            self.rescan_links();
        }
    }

    /// Looks at every configured interface (notifications lost, or not to
    /// be had) and follows what the kernel says of each now.
    pub(super) fn rescan_links(&mut self) {
        let states = carrier::rescan(&self.open_indexes(), &self.config.interfaces);
        self.follow_links(&states);
    }

    /// The kernel's index of each configured interface braid has open.
    fn open_indexes(&self) -> Vec<Option<u32>> {
        self.ports
            .iter()
            .map(|p| p.as_ref().map(|p| p.index))
            .collect()
    }

    /// Follows link states, in order: interfaces that appeared are
    /// opened and those gone closed at once; each open interface's
    /// carrier follows the last word about it (down or without carrier:
    /// its neighbors down, and nobody back until the kernel says it is up
    /// again).
    fn follow_links(&mut self, states: &[LinkState]) {
        let now = self.now();
        let mut open = self.open_indexes();
        let mut usable: Vec<Option<bool>> = vec![None; self.ports.len()];
        for s in states {
            let Some((i, change)) = carrier::change(&open, &self.config.interfaces, s) else {
                continue;
            };
            match change {
                Change::Usable(u) => {
                    usable[i] = Some(u);
                    continue;
                }
                Change::Gone => self.close_port(i, now),
                Change::Appeared => self.open_port(i, now),
                Change::Replaced => {
                    self.close_port(i, now);
                    self.open_port(i, now);
                }
            }
            // Opening looked at its flags itself.
            usable[i] = None;
            open = self.open_indexes();
        }
        for (i, u) in usable.into_iter().enumerate() {
            match u {
                Some(false) => {
                    let gone = self
                        .node
                        .interface_down(now, Interface(i as u16), &mut self.rng);
                    self.note_interface_down(i, gone, "carrier lost");
                }
                Some(true) => self.node.interface_up(Interface(i as u16)),
                None => {}
            }
        }
    }

    /// Opens configured interface `i`, which exists now: its sockets join
    /// the loop under its tokens, the kernel data path attaches to it,
    /// and the node counts what is heard on it once it is up with carrier.
    /// A failure is said once per reason and leaves it missing (tried
    /// again at its next notification).
    fn open_port(&mut self, i: usize, now: Instant) {
        if self.ports.get(i).is_none_or(Option::is_some) {
            return;
        }
        let name = self.config.interfaces[i].clone();
        let c = &self.config;
        let mut p = match Port::open(&name, c.port, c.group, c.send_buffer) {
            Ok(p) => p,
            // Gone again already: its removal is on its way.
            Err(UnderlayError::NoInterface { .. }) => return,
            Err(e) => return self.open_failed(i, e.to_string()),
        };
        if let Err(e) = register_port(self.poll.registry(), i, &mut p) {
            return self.open_failed(i, format!("interface {name}: poll: {e}"));
        }
        self.open_errors[i] = None;
        let usable = p.usable();
        let index = p.index;
        self.outgoing[i].unblock();
        self.ports[i] = Some(p);
        self.counters.interfaces_missing = self.counters.interfaces_missing.saturating_sub(1);
        self.counters.interfaces_appeared += 1;
        let interface = Interface(i as u16);
        if usable {
            self.node.interface_up(interface);
        } else {
            // Nothing heard on it counts until the kernel says it is up
            // with carrier (a notification follows).
            self.node.interface_down(now, interface, &mut self.rng);
        }
        info!(
            index,
            usable, "interface {name} appeared: braid uses it now"
        );
        if let Some(k) = &mut self.kernel {
            if let Err(e) = k.port_opened(i, &self.ports) {
                warn!(error = %e, "interface {name}: the kernel data path could not attach to it; what arrives on it crosses the daemon");
            }
        }
    }

    fn open_failed(&mut self, i: usize, why: String) {
        if self.open_errors[i].as_deref() != Some(why.as_str()) {
            warn!(error = %why, "interface {} appeared but could not be opened: braid tries again at its next change", self.config.interfaces[i]);
            self.open_errors[i] = Some(why);
        }
    }

    /// Closes configured interface `i`, which went away: its sockets
    /// leave the loop, what waited for it is dropped, its neighbors go
    /// down, and the kernel data path comes off it.
    fn close_port(&mut self, i: usize, now: Instant) {
        let Some(mut p) = self.ports.get_mut(i).and_then(Option::take) else {
            return;
        };
        let r = self.poll.registry();
        let _ = r.deregister(&mut p.socket);
        let _ = r.deregister(&mut p.data);
        drop(p);
        let node = &mut self.node;
        let dropped = self.outgoing[i].fail_all(|id, bytes| {
            node.on_sent(id);
            node.recycle(bytes);
        });
        self.outgoing[i].unblock();
        self.counters.udp_tx_errors += dropped;
        let gone = self
            .node
            .interface_down(now, Interface(i as u16), &mut self.rng);
        self.note_interface_down(i, gone, "interface gone");
        self.counters.interfaces_gone += 1;
        self.counters.interfaces_missing += 1;
        if let Some(k) = &mut self.kernel {
            k.port_closed(i, &self.ports);
        }
        warn!(
            "interface {} is gone (removed or renamed): its neighbors are down; braid will use it again when it comes back",
            self.config.interfaces[i]
        );
    }

    /// Counts and logs an interface that took `gone` neighbors down.
    pub(super) fn note_interface_down(&mut self, i: usize, gone: usize, why: &str) {
        if gone > 0 {
            self.counters.carrier_lost += 1;
            info!(interface = %self.config.interfaces[i], why, neighbors = gone, "interface down");
        }
    }
}
