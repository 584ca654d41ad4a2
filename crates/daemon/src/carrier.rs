//! Carrier watch: the kernel's link notifications (rtnetlink, the
//! `RTMGRP_LINK` group), so that an underlay interface that goes down or
//! loses its carrier takes its neighbors down at once, whether or not
//! braid was sending on it at that moment. (A failed send also says so,
//! but only when there is something to send, and only if the kernel
//! reports the error to that send rather than dropping the datagram
//! quietly; silence takes `dead_after` probe intervals.) The same
//! notifications say when a configured interface appears (a USB radio
//! plugged in, a VLAN or bridge made after boot) or goes away (unplugged,
//! deleted, renamed): [`change`] tells what a notification means for the
//! daemon's interfaces.
//!
//! Messages are decoded with `netlink-packet-route` (rust-netlink, the
//! crates rtnetlink and tun-rs build on); the socket is `netlink-sys`'s.
//! Only the interface index, its name and its `IFF_UP`/`IFF_RUNNING`
//! flags matter here. The receive buffer is fixed; when the kernel had to
//! drop notifications (`ENOBUFS`), [`CarrierWatch::read`] says so and the
//! caller asks for every interface's state instead ([`rescan`]).

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use nix::libc;

use netlink_packet_core::NetlinkPayload;
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

/// Bytes read per notification batch. A link message is a few hundred
/// bytes to a couple of kilobytes (with its statistics).
const BUF: usize = 32 * 1024;

/// An interface's state as a notification gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkState {
    pub index: u32,
    /// Its name, when the message carries it (a new-link message does).
    pub name: Option<String>,
    /// Administratively up with carrier (`IFF_UP` and `IFF_RUNNING`); an
    /// interface removed is not.
    pub usable: bool,
    /// The interface is gone (a delete-link message).
    pub removed: bool,
}

/// What a link notification means for one of the daemon's configured
/// interfaces (by its position in the config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The interface braid has open went away (removed, or renamed:
    /// it is not the configured one any more): close it.
    Gone,
    /// A configured interface that braid does not have open exists now:
    /// open it.
    Appeared,
    /// The configured name now belongs to another interface than the one
    /// braid has open (the removal was not seen): close, then open.
    Replaced,
    /// The interface braid has open is usable (up with carrier) or not.
    Usable(bool),
}

/// What `s` means for the configured interfaces `names`, of which
/// `open[i]` is the kernel's index of the one braid has open (`None`:
/// missing); `None` when it is about none of them.
pub fn change(open: &[Option<u32>], names: &[String], s: &LinkState) -> Option<(usize, Change)> {
    if let Some(i) = open.iter().position(|o| *o == Some(s.index)) {
        let renamed = s
            .name
            .as_deref()
            .is_some_and(|n| Some(n) != names.get(i).map(String::as_str));
        return Some((
            i,
            if s.removed || renamed {
                Change::Gone
            } else {
                Change::Usable(s.usable)
            },
        ));
    }
    if s.removed {
        return None;
    }
    let name = s.name.as_deref()?;
    let i = names.iter().position(|n| n == name)?;
    match open.get(i)? {
        None => Some((i, Change::Appeared)),
        Some(_) => Some((i, Change::Replaced)),
    }
}

/// What one read found.
#[derive(Debug, Default)]
pub struct Read {
    /// Notifications that did not decode (counted, skipped).
    pub malformed: u64,
    /// The kernel dropped notifications (its queue overflowed): the
    /// caller should look at every interface's state itself.
    pub overrun: bool,
}

/// The notification socket.
pub struct CarrierWatch {
    socket: Socket,
    buf: Vec<u8>,
}

impl CarrierWatch {
    /// Subscribes to link notifications of this network namespace.
    pub fn open() -> io::Result<CarrierWatch> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind(&SocketAddr::new(0, libc::RTMGRP_LINK as u32))?;
        socket.set_non_blocking(true)?;
        Ok(CarrierWatch {
            socket,
            buf: vec![0; BUF],
        })
    }

    /// Reads every notification waiting, calling `state` for each link
    /// message, until the socket is empty.
    pub fn read(&mut self, mut state: impl FnMut(LinkState)) -> Read {
        let mut r = Read::default();
        loop {
            self.buf.clear();
            match self.socket.recv(&mut self.buf, libc::MSG_DONTWAIT) {
                Ok(0) => return r,
                Ok(_) => r.malformed += decode(&self.buf, &mut state),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => r.overrun = true,
                Err(_) => {
                    r.malformed += 1;
                    return r;
                }
            }
        }
    }
}

impl AsRawFd for CarrierWatch {
    fn as_raw_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }
}

/// Decodes the netlink messages of one datagram; returns how many did not
/// decode. Each message says its own length; a length that does not fit
/// ends the datagram.
fn decode(bytes: &[u8], state: &mut impl FnMut(LinkState)) -> u64 {
    crate::rtnl::each_message(bytes, |payload| match payload {
        NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(l)) => {
            let up = l.header.flags.contains(LinkFlags::Up | LinkFlags::Running);
            state(LinkState {
                index: l.header.index,
                name: name_of(&l),
                usable: up,
                removed: false,
            });
        }
        NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelLink(l)) => {
            state(LinkState {
                index: l.header.index,
                name: name_of(&l),
                usable: false,
                removed: true,
            });
        }
        _ => {}
    })
}

fn name_of(l: &LinkMessage) -> Option<String> {
    l.attributes.iter().find_map(|a| match a {
        LinkAttribute::IfName(n) => Some(n.clone()),
        _ => None,
    })
}

/// The states of the configured interfaces `names` as the kernel's
/// interface list gives them now, as notifications would have said them:
/// for when notifications were lost, or are not to be had. `open[i]` is
/// the index of the interface braid has open for `names[i]`; one that is
/// no longer there under that name is said removed.
pub fn rescan(open: &[Option<u32>], names: &[String]) -> Vec<LinkState> {
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let now = nix::net::if_::if_nametoindex(name.as_str()).ok();
        if let Some(Some(index)) = open.get(i) {
            if now != Some(*index) {
                out.push(LinkState {
                    index: *index,
                    name: None,
                    usable: false,
                    removed: true,
                });
            }
        }
        if let Some(index) = now {
            out.push(LinkState {
                index,
                name: Some(name.clone()),
                usable: usable_now(name) == Some(true),
                removed: false,
            });
        }
    }
    out
}

/// Whether the interface `name` is usable now (up with carrier), as the
/// kernel's interface list says; `None` when it is not there.
pub fn usable_now(name: &str) -> Option<bool> {
    let addrs = nix::ifaddrs::getifaddrs().ok()?;
    let mut found = None;
    for a in addrs.filter(|a| a.interface_name == name) {
        use nix::net::if_::InterfaceFlags as F;
        found = Some(a.flags.contains(F::IFF_UP | F::IFF_RUNNING));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::{NetlinkHeader, NetlinkMessage};

    fn link_message(index: u32, flags: LinkFlags, new: bool) -> Vec<u8> {
        named_link_message(index, None, flags, new)
    }

    fn named_link_message(index: u32, name: Option<&str>, flags: LinkFlags, new: bool) -> Vec<u8> {
        let mut l = LinkMessage::default();
        l.header.index = index;
        l.header.flags = flags;
        if let Some(n) = name {
            l.attributes.push(LinkAttribute::IfName(n.to_string()));
        }
        let inner = if new {
            RouteNetlinkMessage::NewLink(l)
        } else {
            RouteNetlinkMessage::DelLink(l)
        };
        let mut m = NetlinkMessage::new(NetlinkHeader::default(), NetlinkPayload::from(inner));
        m.finalize();
        let mut buf = vec![0; m.buffer_len()];
        m.serialize(&mut buf);
        buf
    }

    fn states(bytes: &[u8]) -> (Vec<LinkState>, u64) {
        let mut seen = Vec::new();
        let bad = decode(bytes, &mut |s| seen.push(s));
        (seen, bad)
    }

    #[test]
    fn up_with_carrier_is_usable_and_anything_else_is_not() {
        let mut batch = link_message(3, LinkFlags::Up | LinkFlags::Running, true);
        batch.extend(link_message(4, LinkFlags::Up, true));
        batch.extend(link_message(5, LinkFlags::Running, true));
        batch.extend(link_message(6, LinkFlags::Up | LinkFlags::Running, false));
        let (seen, bad) = states(&batch);
        assert_eq!(bad, 0);
        let usable: Vec<(u32, bool)> = seen.iter().map(|s| (s.index, s.usable)).collect();
        assert_eq!(usable, [(3, true), (4, false), (5, false), (6, false)]);
    }

    #[test]
    fn names_and_removals_are_decoded() {
        let mut batch = named_link_message(7, Some("hp0"), LinkFlags::Up, true);
        batch.extend(named_link_message(
            7,
            Some("hp0"),
            LinkFlags::empty(),
            false,
        ));
        let (seen, bad) = states(&batch);
        assert_eq!(bad, 0);
        let new = LinkState {
            index: 7,
            name: Some("hp0".into()),
            usable: false,
            removed: false,
        };
        assert_eq!(
            seen,
            [
                new.clone(),
                LinkState {
                    removed: true,
                    ..new
                }
            ]
        );
    }

    fn link(index: u32, name: Option<&str>, usable: bool, removed: bool) -> LinkState {
        LinkState {
            index,
            name: name.map(str::to_string),
            usable,
            removed,
        }
    }

    #[test]
    fn a_notification_opens_closes_or_tells_carrier_of_a_configured_interface() {
        let names: Vec<String> = ["wlan0", "wlan1", "vlan9"].map(String::from).to_vec();
        // wlan0 open as index 3; wlan1 and vlan9 missing.
        let open = [Some(3), None, None];
        let ch = |s: LinkState| change(&open, &names, &s);
        // Carrier of the open one, with or without its name.
        assert_eq!(
            ch(link(3, Some("wlan0"), true, false)),
            Some((0, Change::Usable(true)))
        );
        assert_eq!(
            ch(link(3, None, false, false)),
            Some((0, Change::Usable(false)))
        );
        // Removed, or renamed away: gone.
        assert_eq!(
            ch(link(3, Some("wlan0"), false, true)),
            Some((0, Change::Gone))
        );
        assert_eq!(ch(link(3, None, false, true)), Some((0, Change::Gone)));
        assert_eq!(
            ch(link(3, Some("wlx0011"), true, false)),
            Some((0, Change::Gone))
        );
        // A missing one appears (up or not: opened either way).
        assert_eq!(
            ch(link(8, Some("wlan1"), false, false)),
            Some((1, Change::Appeared))
        );
        assert_eq!(
            ch(link(9, Some("vlan9"), true, false)),
            Some((2, Change::Appeared))
        );
        // Renamed to a configured name: appears.
        assert_eq!(
            ch(link(10, Some("vlan9"), true, false)),
            Some((2, Change::Appeared))
        );
        // The configured name on another index than the open one.
        assert_eq!(
            ch(link(11, Some("wlan0"), true, false)),
            Some((0, Change::Replaced))
        );
        // Anything else is none of ours.
        assert_eq!(ch(link(12, Some("eth0"), true, false)), None);
        assert_eq!(ch(link(12, None, true, false)), None);
        assert_eq!(
            ch(link(8, Some("wlan1"), false, true)),
            None,
            "a missing one removed"
        );
    }

    #[test]
    fn garbage_is_counted_never_a_panic() {
        let good = link_message(3, LinkFlags::Up | LinkFlags::Running, true);
        // A length beyond the datagram.
        let mut cut = good.clone();
        cut.truncate(good.len() - 4);
        assert_eq!(states(&cut), (vec![], 1));
        // A length under a header's.
        let mut tiny = good.clone();
        tiny[..4].copy_from_slice(&8u32.to_ne_bytes());
        assert_eq!(states(&tiny), (vec![], 1));
        // A body that does not decode, then a good message.
        let mut bad = good.clone();
        bad.truncate(20);
        bad.extend([0; 4]);
        bad[..4].copy_from_slice(&24u32.to_ne_bytes());
        bad.extend(&good);
        let (seen, n) = states(&bad);
        assert_eq!((seen.len(), n), (1, 1));
        // Arbitrary bytes.
        for seed in 0..200u32 {
            let bytes: Vec<u8> = (0..seed % 97)
                .map(|i| (i.wrapping_mul(2654435761) ^ seed) as u8)
                .collect();
            let _ = states(&bytes);
        }
    }
}
