//! Real TCP in simulated time: each end of a TCP flow is an `smoltcp`
//! interface (a well-kept user-space TCP/IP stack) on an in-memory IP
//! device. Its clock is the simulator's; its IP packets enter braid at the
//! host's node like any host's packets. Goodput therefore comes from a
//! real TCP state machine (congestion control, retransmission timers),
//! not from a formula.

use std::collections::VecDeque;

use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};
use smoltcp::socket::tcp;
use smoltcp::time::Instant as TcpInstant;
use smoltcp::wire::{HardwareAddress, IpAddress, IpCidr, Ipv4Address};

use braid_proto::time::Instant;

const MTU: usize = 1400;
const BUFFER: usize = 256 * 1024;

/// An IP "wire" made of two queues: what the stack sends, what it receives.
#[derive(Debug, Default)]
struct Queues {
    to_stack: VecDeque<Vec<u8>>,
    from_stack: VecDeque<Vec<u8>>,
}

struct Rx(Vec<u8>);
struct Tx<'a>(&'a mut VecDeque<Vec<u8>>);

impl phy::RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl phy::TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut buf = vec![0u8; len];
        let r = f(&mut buf);
        self.0.push_back(buf);
        r
    }
}

impl Device for Queues {
    type RxToken<'a> = Rx;
    type TxToken<'a> = Tx<'a>;

    fn receive(&mut self, _t: TcpInstant) -> Option<(Rx, Tx<'_>)> {
        let p = self.to_stack.pop_front()?;
        Some((Rx(p), Tx(&mut self.from_stack)))
    }

    fn transmit(&mut self, _t: TcpInstant) -> Option<Tx<'_>> {
        Some(Tx(&mut self.from_stack))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ip;
        c.max_transmission_unit = MTU;
        c
    }
}

fn at(t: Instant) -> TcpInstant {
    TcpInstant::from_micros(t.as_micros() as i64)
}

/// One end of a TCP connection.
pub struct TcpHost {
    iface: Interface,
    sockets: SocketSet<'static>,
    handle: SocketHandle,
    dev: Queues,
    /// Sender: bytes still to send; receiver: unused.
    to_send: u64,
    /// Receiver: bytes received in order.
    pub received: u64,
    sender: bool,
}

fn ipv4(a: [u8; 4]) -> Ipv4Address {
    Ipv4Address::new(a[0], a[1], a[2], a[3])
}

impl TcpHost {
    fn interface(me: [u8; 4], now: Instant) -> (Interface, Queues) {
        let mut dev = Queues::default();
        let mut iface = Interface::new(Config::new(HardwareAddress::Ip), &mut dev, at(now));
        iface.update_ip_addrs(|addrs| {
            let _ = addrs.push(IpCidr::new(IpAddress::Ipv4(ipv4(me)), 32));
        });
        // Everything else is behind braid: a default route to "the mesh".
        let _ = iface.routes_mut().add_default_ipv4_route(ipv4(me));
        (iface, dev)
    }

    fn socket() -> tcp::Socket<'static> {
        tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; BUFFER]),
            tcp::SocketBuffer::new(vec![0; BUFFER]),
        )
    }

    /// The sending end: connects from `me:port` to `peer:port` and sends
    /// `bytes` bytes.
    pub fn sender(me: [u8; 4], peer: [u8; 4], port: u16, bytes: u64, now: Instant) -> TcpHost {
        Self::new(me, now, bytes, |s, iface| {
            let _ = s.connect(iface.context(), (IpAddress::Ipv4(ipv4(peer)), port), port);
        })
    }

    /// The receiving end: listens on `port`.
    pub fn receiver(me: [u8; 4], port: u16, now: Instant) -> TcpHost {
        Self::new(me, now, 0, |s, _| {
            let _ = s.listen(port);
        })
    }

    /// A host at `me` whose one socket `open` connects or listens; a
    /// sender when it has `to_send` bytes.
    fn new(
        me: [u8; 4],
        now: Instant,
        to_send: u64,
        open: impl FnOnce(&mut tcp::Socket<'static>, &mut Interface),
    ) -> TcpHost {
        let (mut iface, dev) = Self::interface(me, now);
        let mut s = Self::socket();
        open(&mut s, &mut iface);
        let mut sockets = SocketSet::new(Vec::new());
        let handle = sockets.add(s);
        TcpHost {
            iface,
            sockets,
            handle,
            dev,
            to_send,
            received: 0,
            sender: to_send > 0,
        }
    }

    /// An IP packet for this host.
    pub fn deliver(&mut self, packet: &[u8]) {
        self.dev.to_stack.push_back(packet.to_vec());
    }

    /// Runs the stack at `now`; returns the IP packets it sends.
    pub fn poll(&mut self, now: Instant) -> Vec<Vec<u8>> {
        let chunk = [0x5au8; 16 * 1024];
        loop {
            let _ = self.iface.poll(at(now), &mut self.dev, &mut self.sockets);
            let s = self.sockets.get_mut::<tcp::Socket>(self.handle);
            let mut progressed = false;
            if self.sender {
                while self.to_send > 0 && s.can_send() {
                    let n = (self.to_send as usize).min(chunk.len());
                    match s.send_slice(&chunk[..n]) {
                        Ok(0) | Err(_) => break,
                        Ok(sent) => {
                            self.to_send -= sent as u64;
                            progressed = true;
                        }
                    }
                }
            } else {
                while s.can_recv() {
                    match s.recv(|b| (b.len(), b.len())) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            self.received += n as u64;
                            progressed = true;
                        }
                    }
                }
            }
            if !progressed {
                break;
            }
        }
        self.dev.from_stack.drain(..).collect()
    }

    /// When the stack next needs [`Self::poll`] (retransmission and other
    /// timers), if ever.
    pub fn poll_at(&mut self, now: Instant) -> Option<Instant> {
        self.iface
            .poll_delay(at(now), &self.sockets)
            .map(|d| Instant(now.as_micros() + d.total_micros()))
    }
}
