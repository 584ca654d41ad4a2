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
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::RawFd;

use nix::libc;

/// Datagrams per system call.
pub const BATCH: usize = 32;

/// Preallocated room for `BATCH` received datagrams.
pub struct RecvBatch {
    slot: usize,
    bufs: Vec<u8>,
    addrs: Vec<libc::sockaddr_in>,
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

impl RecvBatch {
    /// Room for `BATCH` datagrams of at most `slot` bytes each.
    pub fn new(slot: usize) -> Self {
        // SAFETY: sockaddr_in and mmsghdr are plain C structs for which
        // all-zero bytes are a valid value.
        let zero_addr: libc::sockaddr_in = unsafe { MaybeUninit::zeroed().assume_init() };
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
            h.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_in).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
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
        let a = &self.addrs[i];
        let from = SocketAddr::V4(SocketAddrV4::new(
            Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
            u16::from_be(a.sin_port),
        ));
        let truncated = self.msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        (
            &self.bufs[i * self.slot..i * self.slot + len],
            from,
            truncated,
        )
    }
}

/// Datagrams waiting to be sent on one socket, each to its own address.
pub struct SendBatch {
    datagrams: Vec<(Vec<u8>, SocketAddr)>,
}

impl Default for SendBatch {
    fn default() -> Self {
        SendBatch {
            datagrams: Vec::with_capacity(BATCH),
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

    pub fn push(&mut self, bytes: Vec<u8>, to: SocketAddr) {
        self.datagrams.push((bytes, to));
    }

    /// Sends everything with `sendmmsg`, `BATCH` at a time; returns
    /// (sent, failed). A full socket buffer drops the rest of the batch
    /// (counted as failed): the daemon never blocks on a neighbor.
    pub fn flush(&mut self, fd: RawFd) -> (u64, u64) {
        let (mut sent, mut failed) = (0u64, 0u64);
        for chunk in self.datagrams.chunks(BATCH) {
            // SAFETY: zeroed C structs are valid; each header points into
            // `chunk` and these arrays, which outlive the call.
            let mut addrs: [libc::sockaddr_in; BATCH] =
                unsafe { MaybeUninit::zeroed().assume_init() };
            let mut iovs: [libc::iovec; BATCH] = unsafe { MaybeUninit::zeroed().assume_init() };
            let mut msgs: [libc::mmsghdr; BATCH] = unsafe { MaybeUninit::zeroed().assume_init() };
            let mut n = 0;
            for (bytes, to) in chunk {
                let SocketAddr::V4(v4) = to else {
                    failed += 1;
                    continue;
                };
                addrs[n].sin_family = libc::AF_INET as libc::sa_family_t;
                addrs[n].sin_port = v4.port().to_be();
                addrs[n].sin_addr.s_addr = u32::from(*v4.ip()).to_be();
                iovs[n] = libc::iovec {
                    iov_base: bytes.as_ptr() as *mut libc::c_void,
                    iov_len: bytes.len(),
                };
                n += 1;
            }
            for i in 0..n {
                let h = &mut msgs[i].msg_hdr;
                h.msg_name = (&mut addrs[i] as *mut libc::sockaddr_in).cast();
                h.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
                h.msg_iov = &mut iovs[i];
                h.msg_iovlen = 1;
            }
            let mut done = 0;
            while done < n {
                // SAFETY: as above; the kernel reads msgs[done..n].
                let r = unsafe {
                    libc::sendmmsg(
                        fd,
                        msgs[done..].as_mut_ptr(),
                        (n - done) as u32,
                        libc::MSG_DONTWAIT,
                    )
                };
                if r <= 0 {
                    // Skip the datagram that failed (full buffer, or an
                    // unreachable address) and go on with the rest.
                    failed += 1;
                    done += 1;
                } else {
                    sent += r as u64;
                    done += r as usize;
                }
            }
        }
        self.datagrams.clear();
        (sent, failed)
    }
}
