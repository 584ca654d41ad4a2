//! The underlay: UDP sockets (over IPv4, or over IPv6 where
//! `underlay = "ipv6"`) bound to each interface that carry everything
//! between braid nodes. One, on the braid port, receives
//! everything and sends control messages to a link-local
//! multicast group (every neighbor on that link hears them, which is also
//! how neighbors are discovered); data goes unicast to the neighbor's
//! address, learned from the source of its control messages.
//!
//! Data leaves by a second socket per interface whose send buffer is
//! small (`send_buffer`): what the kernel holds for an interface (socket
//! buffer, qdisc, driver) is below braid's binding point, so it is kept to
//! a couple of datagrams and the rest waits in the node, where it can
//! still move to another path (late binding). Control messages keep a
//! large buffer so that a full data queue never drops them.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use mio::net::UdpSocket;
use socket2::{Domain, InterfaceIndexOrAddress, Protocol, Socket, Type};
use thiserror::Error;

/// Why an interface could not be used.
#[derive(Debug, Error)]
pub enum UnderlayError {
    #[error("interface {name}: not found")]
    NoInterface { name: String },
    #[error("interface {name}: {what}: {source}")]
    Io {
        name: String,
        what: &'static str,
        source: io::Error,
    },
}

/// One interface's sockets.
#[derive(Debug)]
pub struct Port {
    pub name: String,
    pub index: u32,
    /// Receives everything; sends control messages to the group.
    pub socket: UdpSocket,
    /// Sends data to neighbors (from an ephemeral port).
    pub data: UdpSocket,
    group: SocketAddr,
}

impl Port {
    /// Opens the socket of interface `name`: bound to the device and to
    /// `port`, a member of `group` there, multicast kept on the link
    /// (TTL 1) and not looped back to ourselves.
    /// The data socket's send buffer is `send_buffer` bytes (Linux
    /// doubles it for its bookkeeping, and has a floor of about two
    /// full-size datagrams).
    pub fn open(
        name: &str,
        port: u16,
        group: IpAddr,
        send_buffer: usize,
    ) -> Result<Port, UnderlayError> {
        let index =
            nix::net::if_::if_nametoindex(name).map_err(|_| UnderlayError::NoInterface {
                name: name.to_string(),
            })?;
        let io = |what| {
            move |source| UnderlayError::Io {
                name: name.to_string(),
                what,
                source,
            }
        };
        // Bound to the device, so a link-local address (IPv6: every
        // interface has one) needs no scope of its own.
        let (domain, any) = match group {
            IpAddr::V4(_) => (Domain::IPV4, IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            IpAddr::V6(_) => (Domain::IPV6, IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
        };
        let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP)).map_err(io("socket"))?;
        if group.is_ipv6() {
            s.set_only_v6(true).map_err(io("IPV6_V6ONLY"))?;
        }
        s.set_reuse_address(true).map_err(io("SO_REUSEADDR"))?;
        s.bind_device(Some(name.as_bytes()))
            .map_err(io("SO_BINDTODEVICE"))?;
        s.bind(&SocketAddr::new(any, port).into())
            .map_err(io("bind"))?;
        match group {
            IpAddr::V4(g) => {
                s.join_multicast_v4_n(&g, &InterfaceIndexOrAddress::Index(index))
                    .map_err(io("join multicast group"))?;
                s.set_multicast_loop_v4(false)
                    .map_err(io("IP_MULTICAST_LOOP"))?;
                s.set_multicast_ttl_v4(1).map_err(io("IP_MULTICAST_TTL"))?;
            }
            IpAddr::V6(g) => {
                s.join_multicast_v6(&g, index)
                    .map_err(io("join multicast group"))?;
                s.set_multicast_loop_v6(false)
                    .map_err(io("IPV6_MULTICAST_LOOP"))?;
                s.set_multicast_hops_v6(1)
                    .map_err(io("IPV6_MULTICAST_HOPS"))?;
                s.set_multicast_if_v6(index)
                    .map_err(io("IPV6_MULTICAST_IF"))?;
            }
        }
        // Room for bursts: a flood wave or a burst of data between polls.
        let _ = s.set_recv_buffer_size(4 << 20);
        let _ = s.set_send_buffer_size(4 << 20);
        s.set_nonblocking(true).map_err(io("O_NONBLOCK"))?;
        let socket = UdpSocket::from_std(s.into());
        let d = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP)).map_err(io("socket"))?;
        if group.is_ipv6() {
            d.set_only_v6(true).map_err(io("IPV6_V6ONLY"))?;
        }
        d.bind_device(Some(name.as_bytes()))
            .map_err(io("SO_BINDTODEVICE"))?;
        d.bind(&SocketAddr::new(any, 0).into())
            .map_err(io("bind"))?;
        d.set_send_buffer_size(send_buffer)
            .map_err(io("SO_SNDBUF"))?;
        d.set_nonblocking(true).map_err(io("O_NONBLOCK"))?;
        let group = match group {
            IpAddr::V4(g) => SocketAddr::V4(SocketAddrV4::new(g, port)),
            IpAddr::V6(g) => SocketAddr::V6(SocketAddrV6::new(g, port, 0, index)),
        };
        Ok(Port {
            name: name.to_string(),
            index,
            socket,
            data: UdpSocket::from_std(d.into()),
            group,
        })
    }

    /// Sends to every neighbor on this link.
    pub fn send_all(&self, bytes: &[u8]) -> io::Result<usize> {
        self.socket.send_to(bytes, self.group)
    }

    /// Whether the interface can carry data now: up and running (its
    /// operational state up, which needs carrier), as `SIOCGIFFLAGS` says.
    /// Asked before each send: while an interface is closing or has just
    /// lost carrier, the kernel still takes datagrams and drops them
    /// without a word (its queue is already the no-op one), so a send
    /// that succeeds proves nothing, and late binding would pour
    /// everything held above the binding point into it; the link
    /// notification comes only after. Both flags clear before the
    /// kernel's queue goes. (An error to ask counts as usable: sends then
    /// report what is wrong.)
    /// Datagrams the kernel dropped at the receiving socket because its
    /// buffer was full (braid read too slowly), since it was opened.
    pub fn receive_drops(&self) -> Option<u64> {
        socket_drops(&self.socket)
    }

    pub fn usable(&self) -> bool {
        use nix::libc;
        use std::os::fd::AsRawFd;
        // SAFETY: an all-zero ifreq is valid; the name is at most 15
        // bytes (checked when the config was read) plus the zero.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (d, s) in req
            .ifr_name
            .iter_mut()
            .zip(self.name.bytes().take(libc::IFNAMSIZ - 1))
        {
            *d = s as libc::c_char;
        }
        // SAFETY: SIOCGIFFLAGS reads the name and writes the flags into
        // `req`, which lives across the call.
        let r = unsafe { libc::ioctl(self.data.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) };
        if r < 0 {
            return true;
        }
        // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
        let flags = unsafe { req.ifr_ifru.ifru_flags } as libc::c_int;
        let need = libc::IFF_UP | libc::IFF_RUNNING;
        flags & need == need
    }
}

/// What the kernel dropped at `socket` because its receive buffer was
/// full: `SO_MEMINFO`'s drop count (`None` when the kernel does not say).
pub fn socket_drops(socket: &impl std::os::fd::AsRawFd) -> Option<u64> {
    use nix::libc;
    // asm-generic/socket.h (libc does not name it on every target).
    const SO_MEMINFO: libc::c_int = 55;
    let mut info = [0u32; libc::SK_MEMINFO_DROPS as usize + 1];
    let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `info`, which
    // lives across the call, and the length it wrote into `len`.
    let r = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_MEMINFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    let whole = len as usize >= std::mem::size_of_val(&info);
    (r == 0 && whole).then(|| u64::from(info[libc::SK_MEMINFO_DROPS as usize]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket nobody reads, with the smallest receive buffer, sent 200
    /// datagrams on loopback: the kernel keeps a few and counts the rest
    /// as dropped, and `socket_drops` reads that count.
    #[test]
    fn drops_at_a_full_receive_buffer_are_read_from_the_kernel() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        socket2::SockRef::from(&rx).set_recv_buffer_size(1).unwrap();
        assert_eq!(socket_drops(&rx), Some(0));
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = rx.local_addr().unwrap();
        for _ in 0..200 {
            tx.send_to(&[0u8; 1000], to).unwrap();
        }
        // Loopback delivers within the send: the count is final.
        let drops = socket_drops(&rx).unwrap();
        let mut kept = 0;
        rx.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 2048];
        while rx.recv(&mut buf).is_ok() {
            kept += 1;
        }
        assert_eq!(drops + kept, 200, "{drops} dropped, {kept} kept");
        assert!(drops > 100, "{drops}");
    }
}
