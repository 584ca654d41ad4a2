//! Batched datagram I/O: `recvmmsg` and `sendmmsg` (Linux), so that a
//! burst of forwarded packets costs two system calls rather than two per
//! packet. The buffers are allocated once; receiving allocates nothing.
//!
//! Crates weighed: `nix` wraps both calls, but its wrappers take their
//! buffers and addresses as per-call iterators and collections (an
//! allocation per call on the hot path); `quinn-udp` batches with GSO/GRO
//! for QUIC's equal-sized segments, not independent datagrams to
//! different neighbors. The calls themselves are the few lines below.

use std::io;
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;

use braid_wire::NodeId;
use nix::libc;

/// Datagrams per system call.
pub const BATCH: usize = 32;

/// Preallocated room for `BATCH` received datagrams.
pub struct RecvBatch {
    slot: usize,
    bufs: Vec<u8>,
    addrs: Vec<libc::sockaddr_storage>,
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

impl RecvBatch {
    /// Room for `BATCH` datagrams of at most `slot` bytes each.
    pub fn new(slot: usize) -> Self {
        // SAFETY: sockaddr_storage and mmsghdr are plain C structs for
        // which all-zero bytes are a valid value.
        let zero_addr: libc::sockaddr_storage = unsafe { MaybeUninit::zeroed().assume_init() };
        let zero_msg: libc::mmsghdr = unsafe { MaybeUninit::zeroed().assume_init() };
        RecvBatch {
            slot,
            bufs: vec![0u8; slot * BATCH],
            addrs: vec![zero_addr; BATCH],
            iovs: vec![
                libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0,
                };
                BATCH
            ],
            msgs: vec![zero_msg; BATCH],
        }
    }

    /// Receives up to `BATCH` datagrams without blocking; returns how many
    /// (0 when none is waiting). Datagrams longer than a slot are cut and
    /// reported with `truncated`.
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        for i in 0..BATCH {
            self.iovs[i] = libc::iovec {
                iov_base: self.bufs[i * self.slot..].as_mut_ptr().cast(),
                iov_len: self.slot,
            };
            let h = &mut self.msgs[i].msg_hdr;
            h.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as u32;
            h.msg_iov = &mut self.iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = std::ptr::null_mut();
            h.msg_controllen = 0;
            h.msg_flags = 0;
            self.msgs[i].msg_len = 0;
        }
        // SAFETY: every header points into buffers owned by self that
        // outlive the call, with their true lengths.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                self.msgs.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock {
                Ok(0)
            } else {
                Err(e)
            };
        }
        Ok(n as usize)
    }

    /// Datagram `i` of the last `recv`: its bytes, its sender, and whether
    /// it was cut to fit the slot.
    pub fn get(&self, i: usize) -> (&[u8], SocketAddr, bool) {
        let len = (self.msgs[i].msg_len as usize).min(self.slot);
        let from = read_addr(&self.addrs[i]);
        let truncated = self.msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        (
            &self.bufs[i * self.slot..i * self.slot + len],
            from,
            truncated,
        )
    }
}

/// The address the kernel wrote (IPv4 or IPv6; anything else reads as
/// 0.0.0.0:0, which no neighbor sends from).
fn read_addr(a: &libc::sockaddr_storage) -> SocketAddr {
    let p: *const libc::sockaddr_storage = a;
    match a.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in,
            // which it is large and aligned enough for.
            let v4 = unsafe { &*p.cast::<libc::sockaddr_in>() };
            SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr)),
                u16::from_be(v4.sin_port),
            ))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, a sockaddr_in6.
            let v6 = unsafe { &*p.cast::<libc::sockaddr_in6>() };
            SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(v6.sin6_addr.s6_addr),
                u16::from_be(v6.sin6_port),
                u32::from_be(v6.sin6_flowinfo),
                v6.sin6_scope_id,
            ))
        }
        _ => SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)),
    }
}

/// Writes `to` for the kernel; returns its length. The socket's family
/// must match (the kernel refuses the one datagram otherwise: dropped).
fn write_addr(to: &SocketAddr, a: &mut libc::sockaddr_storage) -> u32 {
    let p: *mut libc::sockaddr_storage = a;
    match to {
        SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large and aligned enough for a
            // sockaddr_in; every field is written.
            let s = unsafe { &mut *p.cast::<libc::sockaddr_in>() };
            s.sin_family = libc::AF_INET as libc::sa_family_t;
            s.sin_port = v4.port().to_be();
            s.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
            s.sin_zero = [0; 8];
            std::mem::size_of::<libc::sockaddr_in>() as u32
        }
        SocketAddr::V6(v6) => {
            // SAFETY: as above, a sockaddr_in6.
            let s = unsafe { &mut *p.cast::<libc::sockaddr_in6>() };
            s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            s.sin6_port = v6.port().to_be();
            s.sin6_flowinfo = v6.flowinfo().to_be();
            s.sin6_addr.s6_addr = v6.ip().octets();
            s.sin6_scope_id = v6.scope_id();
            std::mem::size_of::<libc::sockaddr_in6>() as u32
        }
    }
}

/// Datagrams waiting for one interface's data socket, each with the
/// neighbor it is for. The kernel takes them in batches (sendmmsg); those
/// it has no room for wait here, in order, until the socket is writable.
pub struct SendBatch {
    datagrams: std::collections::VecDeque<(Vec<u8>, SocketAddr, NodeId)>,
    /// The kernel said "full" (EAGAIN); wait for the writable event.
    blocked: bool,
    /// The system call's arguments, allocated once (as [`RecvBatch`]'s).
    addrs: Vec<libc::sockaddr_storage>,
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

/// What one [`SendBatch::flush`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Flushed {
    /// Taken by the kernel.
    pub sent: u64,
    /// Refused by the kernel for good (dropped).
    pub failed: u64,
    /// The kernel's queue for the interface is full: the rest waits.
    pub blocked: bool,
    /// The interface is down: everything waiting was dropped.
    pub down: bool,
}

/// At most this many datagrams wait for one interface (forwarded ones
/// included, which the node does not hold back); more are dropped
/// (`udp_tx_queue_full`). As deep as Linux's default transmit queue
/// (1,000 packets), not shallower: a transit router takes bursts (a
/// radio's aggregate, a delay line's) that its socket's small send
/// buffer passes on only as the kernel frees it; at 128, transit routers
/// of the lab's unequal paths dropped 9-204 datagrams per 10-s transfer.
pub const MAX_WAITING: usize = 32 * BATCH;

impl Default for SendBatch {
    fn default() -> Self {
        // SAFETY: plain C structs for which all-zero bytes are valid.
        let zero_addr: libc::sockaddr_storage = unsafe { MaybeUninit::zeroed().assume_init() };
        let zero_iov: libc::iovec = unsafe { MaybeUninit::zeroed().assume_init() };
        let zero_msg: libc::mmsghdr = unsafe { MaybeUninit::zeroed().assume_init() };
        SendBatch {
            datagrams: std::collections::VecDeque::with_capacity(BATCH),
            blocked: false,
            addrs: vec![zero_addr; BATCH],
            iovs: vec![zero_iov; BATCH],
            msgs: vec![zero_msg; BATCH],
        }
    }
}

impl SendBatch {
    pub fn is_empty(&self) -> bool {
        self.datagrams.is_empty()
    }

    pub fn len(&self) -> usize {
        self.datagrams.len()
    }

    /// Queues a datagram for `to`; gives it back when the queue is full.
    pub fn push(
        &mut self,
        bytes: Vec<u8>,
        to: SocketAddr,
        neighbor: NodeId,
    ) -> Result<(), Vec<u8>> {
        if self.datagrams.len() >= MAX_WAITING {
            return Err(bytes);
        }
        self.datagrams.push_back((bytes, to, neighbor));
        Ok(())
    }

    /// Waiting for the socket to be writable (the kernel's queue was full).
    pub fn is_blocked(&self) -> bool {
        self.blocked
    }

    /// The socket is writable again.
    pub fn unblock(&mut self) {
        self.blocked = false;
    }

    /// Drops everything waiting (its interface is down); `left` is given
    /// each datagram. Returns how many.
    pub fn fail_all(&mut self, mut left: impl FnMut(NodeId, Vec<u8>)) -> u64 {
        let n = self.datagrams.len() as u64;
        for (bytes, _, id) in self.datagrams.drain(..) {
            left(id, bytes);
        }
        n
    }

    /// Hands what waits to the kernel, a batch per system call, until it
    /// is all taken or the kernel's queue is full. `left` is given the
    /// neighbor and the buffer of every datagram that leaves this queue
    /// (taken or dropped).
    pub fn flush(&mut self, fd: RawFd, mut left: impl FnMut(NodeId, Vec<u8>)) -> Flushed {
        let mut r = Flushed::default();
        while !self.blocked && !self.datagrams.is_empty() {
            let n = self.datagrams.len().min(BATCH);
            for (k, (bytes, to, _)) in self.datagrams.iter().take(n).enumerate() {
                let a = &mut self.addrs[k];
                let len = write_addr(to, a);
                self.iovs[k] = libc::iovec {
                    iov_base: bytes.as_ptr() as *mut libc::c_void,
                    iov_len: bytes.len(),
                };
                let h = &mut self.msgs[k].msg_hdr;
                h.msg_name = (a as *mut libc::sockaddr_storage).cast();
                h.msg_namelen = len;
                h.msg_iov = &mut self.iovs[k];
                h.msg_iovlen = 1;
            }
            // SAFETY: msgs[..n] point into addrs, iovs and the queued
            // datagrams, all alive and unmoved for the call; the kernel
            // only reads them.
            let sent =
                unsafe { libc::sendmmsg(fd, self.msgs.as_mut_ptr(), n as u32, libc::MSG_DONTWAIT) };
            if sent > 0 {
                for _ in 0..sent {
                    if let Some((bytes, _, id)) = self.datagrams.pop_front() {
                        left(id, bytes);
                    }
                }
                r.sent += sent as u64;
                continue;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) => {
                    self.blocked = true;
                    r.blocked = true;
                }
                Some(libc::EINTR) => {}
                Some(libc::ENETDOWN) | Some(libc::ENETUNREACH) | Some(libc::ENODEV) => {
                    r.down = true;
                    r.failed += self.fail_all(&mut left);
                }
                _ => {
                    // This datagram cannot be sent (an unreachable or
                    // non-IPv4 address): drop it, go on with the rest.
                    if let Some((bytes, _, id)) = self.datagrams.pop_front() {
                        left(id, bytes);
                    }
                    r.failed += 1;
                }
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_send_queue_hands_every_datagram_over_and_drops_what_cannot_go() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = rx.local_addr().unwrap();
        let mut q = SendBatch::default();
        // More than one system call's worth, and one for an IPv6 address.
        for i in 0..(BATCH + 8) as u16 {
            q.push(i.to_be_bytes().to_vec(), to, NodeId(i)).unwrap();
        }
        q.push(vec![0xff], "[::1]:9".parse().unwrap(), NodeId(999))
            .unwrap();
        let mut left = Vec::new();
        let r = q.flush(tx.as_raw_fd(), |id, _| left.push(id.0));
        assert_eq!((r.sent, r.failed), ((BATCH + 8) as u64, 1));
        assert_eq!(left.len(), BATCH + 9, "every datagram left the queue once");
        assert!(q.is_empty());
        let mut buf = [0u8; 8];
        for i in 0..(BATCH + 8) as u16 {
            let n = rx.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &i.to_be_bytes(), "in order");
        }
    }

    #[test]
    fn datagrams_over_ipv6_go_and_come_with_their_sender() {
        let rx = std::net::UdpSocket::bind("[::1]:0").unwrap();
        let tx = std::net::UdpSocket::bind("[::1]:0").unwrap();
        let mut q = SendBatch::default();
        for i in 0..3u16 {
            q.push(
                i.to_be_bytes().to_vec(),
                rx.local_addr().unwrap(),
                NodeId(i),
            )
            .unwrap();
        }
        let r = q.flush(tx.as_raw_fd(), |_, _| {});
        assert_eq!((r.sent, r.failed), (3, 0));
        rx.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut batch = RecvBatch::new(64);
        let mut got = Vec::new();
        while got.len() < 3 {
            // Waits (at most 5 s) until a datagram is there.
            rx.peek(&mut [0u8; 1]).unwrap();
            let n = batch.recv(rx.as_raw_fd()).unwrap();
            assert!(n > 0, "peek saw one waiting");
            for k in 0..n {
                let (bytes, from, truncated) = batch.get(k);
                assert!(!truncated);
                assert_eq!(from, tx.local_addr().unwrap());
                got.push(u16::from_be_bytes([bytes[0], bytes[1]]));
            }
        }
        assert_eq!(got, [0, 1, 2]);
    }

    #[test]
    fn a_send_queue_is_bounded() {
        let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let mut q = SendBatch::default();
        for _ in 0..MAX_WAITING {
            q.push(vec![1], to, NodeId(1)).unwrap();
        }
        assert_eq!(q.push(vec![2], to, NodeId(1)), Err(vec![2]));
        assert_eq!(q.len(), MAX_WAITING);
    }
}
