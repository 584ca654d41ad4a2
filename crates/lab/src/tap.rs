//! A raw AF_PACKET socket on one interface (every protocol, whole
//! Ethernet frames): how the link emulator passes frames between two
//! interfaces, and how the flooder hears a link's control messages.

use anyhow::{bail, Context};
use nix::libc;

/// Which frames a tap sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Only frames arriving on the interface (not what is sent out of it,
    /// by us or anyone in the namespace).
    Arriving,
    /// Frames both ways.
    Both,
}

/// The socket, bound to one interface; closed when dropped.
pub struct Tap {
    pub fd: i32,
    pub index: i32,
}

impl Tap {
    pub fn open(name: &str, seen: Seen) -> anyhow::Result<Tap> {
        let index = nix::net::if_::if_nametoindex(name)
            .with_context(|| format!("interface {name}"))? as i32;
        let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
        // SAFETY: plain socket calls with valid arguments; the address is
        // a zero-initialised sockaddr_ll filled below.
        unsafe {
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK, proto);
            if fd < 0 {
                bail!("AF_PACKET socket: {}", std::io::Error::last_os_error());
            }
            let tap = Tap { fd, index };
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto as u16;
            sll.sll_ifindex = index;
            if libc::bind(
                fd,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            ) < 0
            {
                bail!("bind to {name}: {}", std::io::Error::last_os_error());
            }
            if seen == Seen::Arriving {
                let one: libc::c_int = 1;
                libc::setsockopt(
                    fd,
                    libc::SOL_PACKET,
                    libc::PACKET_IGNORE_OUTGOING,
                    (&one as *const libc::c_int).cast(),
                    4,
                );
            }
            Ok(tap)
        }
    }

    /// The next frame, if one is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> Option<usize> {
        // SAFETY: buf is valid for its length.
        let n = unsafe { libc::recv(self.fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        (n > 0).then_some(n as usize)
    }

    /// Sends `frame`; false when the kernel refused it (the frame is
    /// lost).
    pub fn send(&self, frame: &[u8]) -> bool {
        // SAFETY: frame is valid for its length; the socket is bound.
        let n = unsafe { libc::send(self.fd, frame.as_ptr().cast(), frame.len(), 0) };
        n == frame.len() as isize
    }

    /// Asks for a receive buffer of `bytes` (beyond `rmem_max` where the
    /// process may: root), so that a process descheduled for a while
    /// loses no frames. Returns the size the kernel granted.
    pub fn grow_receive_buffer(&self, bytes: usize) -> usize {
        let want = bytes.min(i32::MAX as usize) as libc::c_int;
        // SAFETY: plain setsockopt/getsockopt calls on our open socket
        // with valid int-sized arguments.
        unsafe {
            for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
                let set = libc::setsockopt(
                    self.fd,
                    libc::SOL_SOCKET,
                    opt,
                    (&want as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as u32,
                );
                if set == 0 {
                    break;
                }
            }
            let mut got: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as u32;
            libc::getsockopt(
                self.fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&mut got as *mut libc::c_int).cast(),
                &mut len,
            );
            got.max(0) as usize
        }
    }

    /// Frames the kernel dropped for this socket (its receive buffer
    /// full) since the last call: `PACKET_STATISTICS`, which resets as
    /// it is read.
    pub fn take_dropped(&self) -> u64 {
        let mut stats = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as u32;
        // SAFETY: stats is a valid tpacket_stats and len its size.
        let ok = unsafe {
            libc::getsockopt(
                self.fd,
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut stats as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if ok == 0 {
            u64::from(stats.tp_drops)
        } else {
            0
        }
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        // SAFETY: the fd is ours and open.
        unsafe {
            libc::close(self.fd);
        }
    }
}
