//! The uplink's probes on the wire: ICMP echo (raw sockets, IPv4 and
//! IPv6), a TCP connect, or a DNS query, sent to each target per round and
//! matched back to the round and the target. Non-blocking; the loop polls
//! the sockets (`crate::daemon`'s uplink tokens). What answers: an echo
//! reply with our identifier and the round's number; a TCP handshake that
//! completes or is refused (a reset proves the path works as well as a
//! SYN-ACK); a DNS response with the round's number as its id, from the
//! target's port, whatever its answer code.
//!
//! Crates weighed: `surge-ping` (ICMP) and `hickory-proto` (DNS) need
//! tokio or bring a whole codec for one fixed 17-byte query; the echo is
//! smoltcp's (its ICMPv4 codec and checksum, which braid already uses),
//! the DNS query and the 8-byte ICMPv6 echo (the kernel writes its
//! checksum) are written here.

use std::io::{self, ErrorKind};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};

use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{Icmpv4Packet, Icmpv4Repr, Ipv4Packet};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// How the uplink is probed (`[uplink] method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// ICMP echo request (ping).
    Icmp,
    /// A TCP connection to this port (opened, then reset).
    Tcp(u16),
    /// A DNS query for the root's name servers to this port (53).
    Dns(u16),
}

impl Method {
    /// The config's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Method::Icmp => "icmp",
            Method::Tcp(_) => "tcp",
            Method::Dns(_) => "dns",
        }
    }
}

/// What the prober counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProbeCounters {
    /// Probes the kernel refused to send (no route, interface down):
    /// counted as unanswered.
    pub send_failed: u64,
    /// Packets read that were not an answer of ours (other pings'
    /// replies, malformed).
    pub foreign: u64,
}

/// An open TCP probe: its socket and the round it is for.
struct Connect {
    socket: Socket,
    seq: u16,
}

/// The uplink's probe sockets.
pub struct Prober {
    method: Method,
    targets: Vec<IpAddr>,
    interface: Option<String>,
    /// ICMP echo identifier (distinguishes our replies from other
    /// pings' on the same host).
    ident: u16,
    /// ICMP (raw) or DNS (UDP) sockets per family, where a target needs
    /// one.
    v4: Option<Socket>,
    v6: Option<Socket>,
    /// Per target, its TCP probe in flight.
    connects: Vec<Option<Connect>>,
    counters: ProbeCounters,
    last_error: Option<String>,
}

impl Prober {
    /// Opens the sockets `method` needs for `targets` (bound to
    /// `interface` when given). ICMP needs raw sockets (CAP_NET_RAW).
    pub fn open(
        method: Method,
        targets: Vec<IpAddr>,
        interface: Option<String>,
        ident: u16,
    ) -> io::Result<Prober> {
        let wants = |v6: bool| targets.iter().any(|t| t.is_ipv6() == v6);
        let open = |v6: bool| -> io::Result<Option<Socket>> {
            if !wants(v6) {
                return Ok(None);
            }
            let domain = if v6 { Domain::IPV6 } else { Domain::IPV4 };
            let socket = match method {
                Method::Icmp => {
                    let proto = if v6 {
                        Protocol::ICMPV6
                    } else {
                        Protocol::ICMPV4
                    };
                    Socket::new(domain, Type::RAW, Some(proto))?
                }
                Method::Dns(_) => Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?,
                Method::Tcp(_) => return Ok(None),
            };
            socket.set_nonblocking(true)?;
            if let Some(name) = &interface {
                socket.bind_device(Some(name.as_bytes()))?;
            }
            Ok(Some(socket))
        };
        Ok(Prober {
            v4: open(false)?,
            v6: open(true)?,
            connects: targets.iter().map(|_| None).collect(),
            method,
            targets,
            interface,
            ident,
            counters: ProbeCounters::default(),
            last_error: None,
        })
    }

    /// The sockets that answers arrive on (ICMP, DNS), to poll for
    /// reading.
    pub fn read_fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.v4.iter().chain(&self.v6).map(|s| s.as_raw_fd())
    }

    /// The counters.
    pub fn counters(&self) -> ProbeCounters {
        self.counters
    }

    /// The last error a send met, for the operator.
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// Sends round `seq`'s probe to every target. For TCP, returns the
    /// targets whose connection must be polled for writing (`(target,
    /// fd)`), and puts those that connected at once in `answered`.
    pub fn send_round(&mut self, seq: u16, answered: &mut Vec<usize>) -> Vec<(usize, RawFd)> {
        let mut watch = Vec::new();
        for i in 0..self.targets.len() {
            let target = self.targets[i];
            let sent = match self.method {
                Method::Icmp => self.send_echo(target, seq),
                Method::Dns(port) => self.send_query(SocketAddr::new(target, port), seq),
                Method::Tcp(port) => match self.connect(i, SocketAddr::new(target, port), seq) {
                    Ok(Some(fd)) => {
                        watch.push((i, fd));
                        Ok(())
                    }
                    Ok(None) => {
                        answered.push(i);
                        Ok(())
                    }
                    Err(e) => Err(e),
                },
            };
            if let Err(e) = sent {
                self.counters.send_failed += 1;
                self.last_error = Some(format!("{}: {e}", self.targets[i]));
            }
        }
        watch
    }

    fn send_echo(&mut self, target: IpAddr, seq: u16) -> io::Result<()> {
        let payload = *b"braid-up";
        let mut buf = [0u8; 16];
        let socket = match target {
            IpAddr::V4(_) => {
                let repr = Icmpv4Repr::EchoRequest {
                    ident: self.ident,
                    seq_no: seq,
                    data: &payload,
                };
                let mut packet = Icmpv4Packet::new_unchecked(&mut buf[..repr.buffer_len()]);
                repr.emit(&mut packet, &ChecksumCapabilities::default());
                self.v4.as_ref()
            }
            IpAddr::V6(_) => {
                // Type 128, code 0, checksum (the kernel's), id, sequence.
                buf[0] = 128;
                buf[4..6].copy_from_slice(&self.ident.to_be_bytes());
                buf[6..8].copy_from_slice(&seq.to_be_bytes());
                buf[8..].copy_from_slice(&payload);
                self.v6.as_ref()
            }
        };
        let socket = socket.ok_or_else(|| io::Error::other("no socket for this family"))?;
        socket.send_to(&buf, &SockAddr::from(SocketAddr::new(target, 0)))?;
        Ok(())
    }

    fn send_query(&mut self, to: SocketAddr, seq: u16) -> io::Result<()> {
        // Header: id, flags (recursion desired), one question; the
        // question: the root (one zero byte), type NS (2), class IN (1).
        let mut q = [0u8; 17];
        q[0..2].copy_from_slice(&seq.to_be_bytes());
        q[2] = 0x01;
        q[5] = 1;
        q[14] = 2;
        q[16] = 1;
        let socket = if to.is_ipv4() { &self.v4 } else { &self.v6 };
        let socket = socket
            .as_ref()
            .ok_or_else(|| io::Error::other("no socket for this family"))?;
        socket.send_to(&q, &SockAddr::from(to))?;
        Ok(())
    }

    /// Starts a TCP connection: `Some(fd)` to poll, `None` when it
    /// completed (or was refused) at once.
    fn connect(&mut self, i: usize, to: SocketAddr, seq: u16) -> io::Result<Option<RawFd>> {
        // A connection still open from the round before is given up.
        self.connects[i] = None;
        let socket = Socket::new(Domain::for_address(to), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_nonblocking(true)?;
        // Closed with a reset: no FIN handshake, no TIME_WAIT left behind
        // per probe.
        socket.set_linger(Some(std::time::Duration::ZERO))?;
        if let Some(name) = &self.interface {
            socket.bind_device(Some(name.as_bytes()))?;
        }
        match socket.connect(&SockAddr::from(to)) {
            Ok(()) => Ok(None),
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => Ok(None),
            Err(e) if e.raw_os_error() == Some(nix::libc::EINPROGRESS) => {
                let fd = socket.as_raw_fd();
                self.connects[i] = Some(Connect { socket, seq });
                Ok(Some(fd))
            }
            Err(e) => Err(e),
        }
    }

    /// Target `i`'s TCP connection is writable: its round, when it was
    /// established or refused (the path works). The connection is closed
    /// either way (closing takes it out of the loop's poll).
    pub fn connect_ready(&mut self, i: usize) -> Option<u16> {
        let c = self.connects.get_mut(i).and_then(Option::take)?;
        let answered = match c.socket.take_error() {
            Ok(None) => c.socket.peer_addr().is_ok(),
            Ok(Some(e)) => e.kind() == ErrorKind::ConnectionRefused,
            Err(_) => false,
        };
        answered.then_some(c.seq)
    }

    /// Closes every TCP probe still waiting: its round ended.
    pub fn close_connects(&mut self) {
        self.connects.iter_mut().for_each(|c| *c = None);
    }

    /// Reads every answer waiting (ICMP, DNS): `(round, target)` each.
    pub fn read(&mut self, answers: &mut Vec<(u16, usize)>) {
        let mut buf = [0u8; 1500];
        for v6 in [false, true] {
            let socket = if v6 { &self.v6 } else { &self.v4 };
            let Some(fd) = socket.as_ref().map(|s| s.as_raw_fd()) else {
                continue;
            };
            // Bounded: a flood of foreign packets cannot hold the loop.
            for _ in 0..256 {
                let (n, from) = match recv_from(fd, &mut buf) {
                    Ok(Some(x)) => x,
                    Ok(None) | Err(_) => break,
                };
                match self.answer(&buf[..n], from, v6) {
                    Some(a) => answers.push(a),
                    None => self.counters.foreign += 1,
                }
            }
        }
    }

    /// The round and target a packet answers, if it is ours.
    fn answer(&self, bytes: &[u8], from: Option<IpAddr>, v6: bool) -> Option<(u16, usize)> {
        let (seq, source) = match (self.method, v6) {
            (Method::Icmp, false) => {
                let ip = Ipv4Packet::new_checked(bytes).ok()?;
                let icmp = Icmpv4Packet::new_checked(ip.payload()).ok()?;
                let repr = Icmpv4Repr::parse(&icmp, &ChecksumCapabilities::default()).ok()?;
                let Icmpv4Repr::EchoReply { ident, seq_no, .. } = repr else {
                    return None;
                };
                if ident != self.ident {
                    return None;
                }
                (seq_no, IpAddr::V4(ip.src_addr()))
            }
            (Method::Icmp, true) => {
                // Echo reply (129) with our identifier.
                if bytes.len() < 8 || bytes[0] != 129 || bytes[4..6] != self.ident.to_be_bytes() {
                    return None;
                }
                (u16::from_be_bytes([bytes[6], bytes[7]]), from?)
            }
            (Method::Dns(_), _) => {
                // A response (QR set) to one of our queries.
                if bytes.len() < 12 || bytes[2] & 0x80 == 0 {
                    return None;
                }
                (u16::from_be_bytes([bytes[0], bytes[1]]), from?)
            }
            (Method::Tcp(_), _) => return None,
        };
        let target = self.targets.iter().position(|t| *t == source)?;
        Some((seq, target))
    }
}

/// One datagram and its source address, or `None` when none is waiting.
fn recv_from(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<(usize, Option<IpAddr>)>> {
    use nix::sys::socket::{recvfrom, SockaddrStorage};
    match recvfrom::<SockaddrStorage>(fd, buf) {
        Ok((n, addr)) => {
            let ip = addr.and_then(|a| {
                if let Some(v4) = a.as_sockaddr_in() {
                    Some(IpAddr::V4(v4.ip()))
                } else {
                    a.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
                }
            });
            Ok(Some((n, ip)))
        }
        Err(nix::errno::Errno::EAGAIN) => Ok(None),
        Err(e) => Err(io::Error::from(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn prober(method: Method, targets: Vec<IpAddr>) -> Prober {
        Prober {
            connects: targets.iter().map(|_| None).collect(),
            method,
            targets,
            interface: None,
            ident: 0x4242,
            v4: None,
            v6: None,
            counters: ProbeCounters::default(),
            last_error: None,
        }
    }

    #[test]
    fn echo_replies_are_matched_by_identifier_source_and_round() {
        let a = Ipv4Addr::new(198, 19, 100, 1);
        let p = prober(
            Method::Icmp,
            vec![IpAddr::V4(Ipv4Addr::new(9, 9, 9, 9)), a.into()],
        );
        let reply = |ident: u16, src: Ipv4Addr| {
            let data = *b"braid-up";
            let icmp = Icmpv4Repr::EchoReply {
                ident,
                seq_no: 77,
                data: &data,
            };
            let mut buf = vec![0u8; 20 + icmp.buffer_len()];
            let mut ip = Ipv4Packet::new_unchecked(&mut buf);
            ip.set_version(4);
            ip.set_header_len(20);
            ip.set_total_len((20 + icmp.buffer_len()) as u16);
            ip.set_src_addr(src);
            let mut pkt = Icmpv4Packet::new_unchecked(&mut buf[20..]);
            icmp.emit(&mut pkt, &ChecksumCapabilities::default());
            buf
        };
        assert_eq!(p.answer(&reply(0x4242, a), None, false), Some((77, 1)));
        assert_eq!(
            p.answer(&reply(0x4243, a), None, false),
            None,
            "another ping"
        );
        let stranger = Ipv4Addr::new(8, 8, 4, 4);
        assert_eq!(p.answer(&reply(0x4242, stranger), None, false), None);
        let mut bad = reply(0x4242, a);
        bad[22] ^= 1;
        assert_eq!(p.answer(&bad, None, false), None, "bad checksum");
        assert_eq!(p.answer(&bad[..10], None, false), None, "short");
    }

    #[test]
    fn icmpv6_and_dns_answers_are_matched_by_source() {
        let t = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
        let p = prober(Method::Icmp, vec![t]);
        let mut echo = [0u8; 16];
        echo[0] = 129;
        echo[4..6].copy_from_slice(&0x4242u16.to_be_bytes());
        echo[6..8].copy_from_slice(&9u16.to_be_bytes());
        assert_eq!(p.answer(&echo, Some(t), true), Some((9, 0)));
        echo[0] = 128;
        assert_eq!(p.answer(&echo, Some(t), true), None, "a request");
        let d = IpAddr::V4(Ipv4Addr::new(198, 19, 100, 53));
        let p = prober(Method::Dns(53), vec![d]);
        let mut resp = [0u8; 17];
        resp[0..2].copy_from_slice(&300u16.to_be_bytes());
        resp[2] = 0x81;
        resp[3] = 0x83; // NXDOMAIN still proves the path
        assert_eq!(p.answer(&resp, Some(d), false), Some((300, 0)));
        resp[2] = 0x01;
        assert_eq!(p.answer(&resp, Some(d), false), None, "a query");
        assert_eq!(p.answer(&resp[..5], Some(d), false), None);
    }
}
