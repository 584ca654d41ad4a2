//! The kernel's neighbor table (an rtnetlink `RTM_GETNEIGH` dump, IPv4
//! and IPv6): the neighbors an access interface has resolved, with their
//! link addresses. A client the access point's own traffic reached is in
//! it whatever the client sent.

use std::io;
use std::net::IpAddr;

use netlink_packet_core::{NetlinkPayload, NLM_F_DUMP};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::RouteNetlinkMessage;

/// The dump's replies are read in batches of this many bytes.
const BUF: usize = 32 * 1024;
/// At most this many entries are taken from one dump (a table larger
/// than the clients an access point tracks is cut).
pub const MAX_ENTRIES: usize = 4096;

/// The resolved neighbors (reachable, stale, being probed, or permanent)
/// on interface `ifindex`: address and link address. Waits at most 100 ms
/// for each batch of the answer (`crate::rtnl::request_socket`).
pub fn dump(ifindex: u32) -> io::Result<Vec<(IpAddr, [u8; 6])>> {
    let socket = crate::rtnl::request_socket()?;
    crate::rtnl::send(
        &socket,
        NLM_F_DUMP,
        RouteNetlinkMessage::GetNeighbour(NeighbourMessage::default()),
    )?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; BUF];
    loop {
        let n = socket.recv(&mut &mut buf[..], 0)?;
        if n == 0 || decode(&buf[..n], ifindex, &mut out) {
            return Ok(out);
        }
    }
}

/// Adds the entries of one batch on `ifindex` to `out`; whether the dump
/// is over (its end, an error, or `out` full).
fn decode(bytes: &[u8], ifindex: u32, out: &mut Vec<(IpAddr, [u8; 6])>) -> bool {
    let mut done = false;
    crate::rtnl::each_message(bytes, |payload| match payload {
        NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewNeighbour(m)) => {
            if let Some(entry) = entry(&m, ifindex) {
                if out.len() < MAX_ENTRIES {
                    out.push(entry);
                }
            }
        }
        NetlinkPayload::Done(_) | NetlinkPayload::Error(_) => done = true,
        _ => {}
    });
    done || out.len() >= MAX_ENTRIES
}

fn entry(m: &NeighbourMessage, ifindex: u32) -> Option<(IpAddr, [u8; 6])> {
    use NeighbourState as S;
    let resolved = matches!(
        m.header.state,
        S::Reachable | S::Stale | S::Delay | S::Probe | S::Permanent
    );
    if m.header.ifindex != ifindex || !resolved {
        return None;
    }
    let mut addr = None;
    let mut mac = None;
    for a in &m.attributes {
        match a {
            NeighbourAttribute::Destination(NeighbourAddress::Inet(v)) => {
                addr = Some(IpAddr::V4(*v))
            }
            NeighbourAttribute::Destination(NeighbourAddress::Inet6(v)) => {
                addr = Some(IpAddr::V6(*v))
            }
            NeighbourAttribute::LinkLocalAddress(l) => mac = <[u8; 6]>::try_from(l.as_slice()).ok(),
            _ => {}
        }
    }
    Some((addr?, mac?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::{NetlinkHeader, NetlinkMessage};
    use netlink_packet_route::AddressFamily;

    fn message(ifindex: u32, state: NeighbourState, addr: IpAddr, mac: &[u8]) -> Vec<u8> {
        let mut m = NeighbourMessage::default();
        m.header.ifindex = ifindex;
        m.header.state = state;
        m.header.family = match addr {
            IpAddr::V4(_) => AddressFamily::Inet,
            IpAddr::V6(_) => AddressFamily::Inet6,
        };
        m.attributes
            .push(NeighbourAttribute::Destination(match addr {
                IpAddr::V4(v) => NeighbourAddress::Inet(v),
                IpAddr::V6(v) => NeighbourAddress::Inet6(v),
            }));
        m.attributes
            .push(NeighbourAttribute::LinkLocalAddress(mac.to_vec()));
        let mut n = NetlinkMessage::new(
            NetlinkHeader::default(),
            NetlinkPayload::from(RouteNetlinkMessage::NewNeighbour(m)),
        );
        n.finalize();
        let mut buf = vec![0; n.buffer_len()];
        n.serialize(&mut buf);
        buf
    }

    #[test]
    fn resolved_entries_of_the_interface_are_taken_and_the_rest_is_not() {
        let mac = [2, 0, 0, 0, 0, 7];
        let v4: IpAddr = "198.18.9.7".parse().unwrap();
        let v6: IpAddr = "2001:2:0:9::7".parse().unwrap();
        let mut batch = message(3, NeighbourState::Reachable, v4, &mac);
        batch.extend(message(3, NeighbourState::Stale, v6, &mac));
        batch.extend(message(4, NeighbourState::Reachable, v4, &mac)); // another interface
        batch.extend(message(3, NeighbourState::Incomplete, v6, &mac));
        batch.extend(message(3, NeighbourState::Failed, v4, &mac));
        batch.extend(message(3, NeighbourState::Reachable, v6, &[1, 2, 3])); // not Ethernet
        let mut out = Vec::new();
        assert!(!decode(&batch, 3, &mut out), "no end of the dump yet");
        assert_eq!(out, vec![(v4, mac), (v6, mac)]);
        // A truncated batch: what decoded is kept, nothing panics.
        let mut cut = Vec::new();
        decode(&batch[..batch.len() / 2 + 5], 3, &mut cut);
        assert!(cut.len() <= 2);
    }

    #[test]
    fn a_dump_of_this_namespace_runs() {
        // Loopback has no neighbors; the dump itself must work (any user
        // may read the table).
        assert!(dump(1).unwrap().is_empty());
    }
}
