//! Route netlink: batches the kernel filled with messages (link
//! notifications, a neighbor table dump) split into their messages and
//! decoded with `netlink-packet-route` (what does not decode is
//! counted), and the requests the daemon makes (a socket that cannot
//! stall the loop; a device's counters). Shared by the carrier watch,
//! the access interfaces' neighbor-table reads and the TUN device's drop
//! count.

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
    let limit = libc::timeval {
        tv_sec: 0,
        tv_usec: 100_000,
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
    Ok(socket)
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
