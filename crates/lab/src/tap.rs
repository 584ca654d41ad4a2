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

    pub fn send(&self, frame: &[u8]) {
        // SAFETY: frame is valid for its length; the socket is bound.
        unsafe {
            libc::send(self.fd, frame.as_ptr().cast(), frame.len(), 0);
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
