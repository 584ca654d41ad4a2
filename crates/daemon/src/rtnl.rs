//! Route netlink: batches the kernel filled with messages (link
//! notifications, a neighbor table dump) split into their messages and
//! decoded with `netlink-packet-route` (what does not decode is
//! counted), and the requests the daemon makes (a socket that cannot
//! stall the loop; a device's counters; the routing tables read, routes
//! added and removed). Shared by the carrier watch, the access
//! interfaces' neighbor-table reads, the TUN device's drop count and the
//! routes shared with the kernel (`crate::routes`).

use std::io;
use std::os::fd::AsRawFd;

use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_REQUEST};
use netlink_packet_route::link::{LinkAttribute, LinkMessage};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use nix::libc;

/// A route netlink socket for one request and its answer, in this
/// thread's network namespace, that waits at most 100 ms for each
/// batch of the answer: the daemon's loop asks, and a kernel that never
/// finished answering must not stall it (an answer takes microseconds).
pub fn request_socket() -> io::Result<Socket> {
    let mut socket = Socket::new(NETLINK_ROUTE)?;
    socket.bind_auto()?;
    socket.connect(&SocketAddr::new(0, 0))?;
    set_receive_timeout(&socket, std::time::Duration::from_millis(100))?;
    Ok(socket)
}

/// Makes a blocking receive on a netlink socket give up after `limit`
/// (`WouldBlock`), as SO_RCVTIMEO does.
pub fn set_receive_timeout(socket: &Socket, limit: std::time::Duration) -> io::Result<()> {
    let limit = libc::timeval {
        tv_sec: limit.as_secs() as libc::time_t,
        tv_usec: limit.subsec_micros() as libc::suseconds_t,
    };
    // SAFETY: a valid timeval for the call's duration, on our socket.
    let set = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&limit as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as u32,
        )
    };
    if set < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends `payload` as a request with `flags` (besides `NLM_F_REQUEST`).
pub fn send(socket: &Socket, flags: u16, payload: RouteNetlinkMessage) -> io::Result<()> {
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | flags;
    let mut request = NetlinkMessage::new(header, NetlinkPayload::from(payload));
    request.finalize();
    let mut bytes = vec![0; request.buffer_len()];
    request.serialize(&mut bytes);
    socket.send(&bytes, 0)?;
    Ok(())
}

/// A device's packet counts as the kernel keeps them: what it dropped
/// on each side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceDrops {
    /// Packets the kernel had for the device to send that it dropped
    /// (for a TUN device: routed to it while the queue braid reads from
    /// was full).
    pub tx_dropped: u64,
    /// Packets the device received that the kernel dropped (for a TUN
    /// device: written by braid).
    pub rx_dropped: u64,
}

/// The drop counters of device `ifindex` (an `RTM_GETLINK` request).
pub fn device_drops(ifindex: u32) -> io::Result<DeviceDrops> {
    let socket = request_socket()?;
    let mut m = LinkMessage::default();
    m.header.index = ifindex;
    send(&socket, 0, RouteNetlinkMessage::GetLink(m))?;
    let mut buf = vec![0u8; 16 * 1024];
    let n = socket.recv(&mut &mut buf[..], 0)?;
    let mut found = None;
    let mut refused = None;
    each_message(&buf[..n], |payload| match payload {
        NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(l))
            if l.header.index == ifindex =>
        {
            for a in &l.attributes {
                if let LinkAttribute::Stats64(s) = a {
                    found = Some(DeviceDrops {
                        tx_dropped: s.tx_dropped,
                        rx_dropped: s.rx_dropped,
                    });
                }
            }
        }
        NetlinkPayload::Error(e) => refused = e.code,
        _ => {}
    });
    match (found, refused) {
        (Some(d), _) => Ok(d),
        (None, Some(code)) => Err(io::Error::from_raw_os_error(-code.get())),
        (None, None) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the kernel's answer has no link counters",
        )),
    }
}

/// Hands each message of `bytes` to `each`; returns how many did not
/// decode (a length that overruns the buffer ends the batch).
pub fn each_message(
    mut bytes: &[u8],
    mut each: impl FnMut(NetlinkPayload<RouteNetlinkMessage>),
) -> u64 {
    let mut malformed = 0;
    while bytes.len() >= 16 {
        let len = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        if len < 16 || len > bytes.len() {
            return malformed + 1;
        }
        match NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes[..len]) {
            Ok(m) => each(m.payload),
            Err(_) => malformed += 1,
        }
        // Messages are 4-byte aligned.
        let step = (len + 3) & !3;
        bytes = &bytes[step.min(bytes.len())..];
    }
    malformed
}

/// Every route of the kernel's tables, IPv4 and IPv6 (an `RTM_GETROUTE`
/// dump each), as far as [`crate::routes`] needs them. A route the
/// kernel describes in a way not understood here (no destination of its
/// family) is left out.
pub fn dump_routes() -> io::Result<Vec<crate::routes::settings::KernelRoute>> {
    use netlink_packet_core::NLM_F_DUMP;
    use netlink_packet_route::route::RouteMessage;
    use netlink_packet_route::AddressFamily;
    let mut out = Vec::new();
    for family in [AddressFamily::Inet, AddressFamily::Inet6] {
        let socket = request_socket()?;
        let mut m = RouteMessage::default();
        m.header.address_family = family;
        send(&socket, NLM_F_DUMP, RouteNetlinkMessage::GetRoute(m))?;
        let mut buf = vec![0u8; 64 * 1024];
        // A dump bigger than the bound is cut there: what a mesh router's
        // tables hold is far below it.
        let mut batches = 0;
        'batches: loop {
            batches += 1;
            if batches > 4096 {
                break;
            }
            let n = socket.recv(&mut &mut buf[..], 0)?;
            let mut done = false;
            let mut refused = None;
            each_message(&buf[..n], |payload| match payload {
                NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewRoute(r)) => {
                    if let Some(route) = kernel_route(&r) {
                        out.push(route);
                    }
                }
                NetlinkPayload::Done(_) => done = true,
                NetlinkPayload::Error(e) => refused = e.code,
                _ => {}
            });
            if let Some(code) = refused {
                return Err(io::Error::from_raw_os_error(-code.get()));
            }
            if done || n == 0 {
                break 'batches;
            }
        }
    }
    Ok(out)
}

/// A route message as [`crate::routes::settings::KernelRoute`].
fn kernel_route(
    r: &netlink_packet_route::route::RouteMessage,
) -> Option<crate::routes::settings::KernelRoute> {
    use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteType};
    let len = r.header.destination_prefix_length;
    let mut table = u32::from(r.header.table);
    let mut oif = None;
    let mut prefix = match r.header.address_family {
        netlink_packet_route::AddressFamily::Inet => {
            Some(braid_wire::Prefix::V4 { addr: [0; 4], len })
        }
        netlink_packet_route::AddressFamily::Inet6 => {
            Some(braid_wire::Prefix::V6 { addr: [0; 16], len })
        }
        _ => None,
    }?;
    for a in &r.attributes {
        match a {
            RouteAttribute::Table(t) => table = *t,
            RouteAttribute::Oif(i) => oif = Some(*i),
            RouteAttribute::Destination(RouteAddress::Inet(a)) => {
                prefix = braid_wire::Prefix::V4 {
                    addr: a.octets(),
                    len,
                }
            }
            RouteAttribute::Destination(RouteAddress::Inet6(a)) => {
                prefix = braid_wire::Prefix::V6 {
                    addr: a.octets(),
                    len,
                }
            }
            _ => {}
        }
    }
    Some(crate::routes::settings::KernelRoute {
        prefix,
        table,
        protocol: u8::from(r.header.protocol),
        oif,
        unicast: r.header.kind == RouteType::Unicast,
    })
}

/// Adds (`add`) or removes the route to `prefix` through device
/// `oif`, with `config`'s table, protocol and metric (`RTM_NEWROUTE`,
/// never replacing a route that is there: another daemon's route with
/// the same table, prefix and metric stays, and the add fails with
/// `EEXIST`; `RTM_DELROUTE`); the kernel's answer says whether it did.
pub fn change_route(
    add: bool,
    prefix: &braid_wire::Prefix,
    oif: u32,
    config: &crate::routes::settings::InstallConfig,
) -> io::Result<()> {
    use netlink_packet_core::{NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL};
    use netlink_packet_route::route::{
        RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope,
        RouteType,
    };
    use netlink_packet_route::AddressFamily;
    let mut m = RouteMessage::default();
    let (family, dst, len) = match *prefix {
        braid_wire::Prefix::V4 { addr, len } => {
            (AddressFamily::Inet, RouteAddress::Inet(addr.into()), len)
        }
        braid_wire::Prefix::V6 { addr, len } => {
            (AddressFamily::Inet6, RouteAddress::Inet6(addr.into()), len)
        }
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "only IPv4 and IPv6 prefixes are routes",
            ))
        }
    };
    m.header.address_family = family;
    m.header.destination_prefix_length = len;
    m.header.table = if config.table < 256 {
        config.table as u8
    } else {
        RouteHeader::RT_TABLE_UNSPEC
    };
    m.header.protocol = RouteProtocol::from(config.protocol);
    m.header.scope = RouteScope::Link;
    m.header.kind = RouteType::Unicast;
    m.attributes = vec![
        RouteAttribute::Destination(dst),
        RouteAttribute::Oif(oif),
        RouteAttribute::Priority(config.metric),
        RouteAttribute::Table(config.table),
    ];
    let socket = request_socket()?;
    let (payload, flags) = if add {
        (
            RouteNetlinkMessage::NewRoute(m),
            NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
        )
    } else {
        (RouteNetlinkMessage::DelRoute(m), NLM_F_ACK)
    };
    send(&socket, flags, payload)?;
    let mut buf = vec![0u8; 4096];
    let n = socket.recv(&mut &mut buf[..], 0)?;
    let mut refused = None;
    each_message(&buf[..n], |payload| {
        if let NetlinkPayload::Error(e) = payload {
            refused = e.code;
        }
    });
    match refused {
        Some(code) => Err(io::Error::from_raw_os_error(-code.get())),
        None => Ok(()),
    }
}
