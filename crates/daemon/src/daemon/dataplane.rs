//! The daemon's data plane ([`DataPlane`]): the node, and what it reaches
//! the world through: the TUN device and the interfaces' sockets on one
//! side, the node on the other, with the address book, the access
//! interfaces and the kernel data path. Reads a batch, hands it to the
//! node, sends what the node has ready (one sendmmsg per interface), and
//! writes what it delivers. The loop (`mod.rs`), the interfaces' coming
//! and going (`links.rs`) and the management plane (`management.rs`)
//! work on it; it knows none of them.

use std::io::ErrorKind;

use braid_proto::node::{Dest, Interface, Node};
use braid_proto::time::Instant;
use rand_chacha::ChaCha8Rng;
use tracing::{debug, info, warn};

use crate::access::AccessPort;
use crate::batch::{RecvBatch, SendBatch};
use crate::config::Config;
use crate::counters::IoCounters;
use crate::ctl::View;
use crate::kernel::KernelPath;
use crate::key_mismatch::KeyMismatches;
use crate::neighbors::{AddressBook, Noted, Place};
use crate::underlay::Port;
use crate::uplink::Uplink;

/// The node and its I/O.
pub(super) struct DataPlane {
    /// The running config (a reload keeps what needs a restart).
    pub config: Config,
    pub node: Node,
    pub rng: ChaCha8Rng,
    /// Where the node's clock started.
    pub clock: std::time::Instant,
    pub started: Instant,
    pub tun: tun_rs::SyncDevice,
    /// Each configured interface's sockets, by its position in the config
    /// (the node's `Interface(i)`): `None` while the interface does not
    /// exist.
    pub ports: Vec<Option<Port>>,
    /// Received datagrams, a batch at a time, and what waits to be sent
    /// on each port.
    pub recv: RecvBatch,
    pub outgoing: Vec<SendBatch>,
    /// Where each neighbor up is (the node decides who is up).
    pub book: AddressBook,
    /// Addresses whose control messages fail the key check.
    pub key_mismatches: KeyMismatches,
    pub counters: IoCounters,
    /// The kernel data path, when it runs (`crate::kernel`).
    pub kernel: Option<KernelPath>,
    /// Access interfaces (`crate::access`).
    pub access: Vec<AccessPort>,
    /// The uplink checker, on a gateway with `[uplink]`.
    pub uplink: Option<Uplink>,
    /// Routes shared with the kernel's table (`[redistribute]`,
    /// `[install]`).
    pub routes: Option<crate::routes::KernelRoutes>,
}

impl DataPlane {
    /// The node's time now.
    pub fn now(&self) -> Instant {
        Instant(self.clock.elapsed().as_micros() as u64)
    }

    /// What `braid ctl` and the dashboard are answered from.
    pub fn view(&self) -> View<'_> {
        View {
            node: &self.node,
            now: self.now(),
            started: self.started,
            interfaces: &self.config.interfaces,
            book: &self.book,
            key_mismatches: &self.key_mismatches,
            labels: &self.config.labels,
            io: &self.counters,
            kernel: self.kernel.as_ref(),
            access: &self.access,
            uplink: self.uplink.as_ref(),
        }
    }

    /// Takes the kernel's drop counts into the counters: the TUN
    /// device's (`tun_queue_dropped`, `tun_write_dropped`; they stay as
    /// they were when the kernel cannot say) and the receiving sockets'
    /// (`udp_rx_dropped`).
    pub fn read_kernel_drops(&mut self) {
        let open: u64 = self
            .ports
            .iter()
            .flatten()
            .filter_map(|p| p.receive_drops())
            .sum();
        self.counters.udp_rx_dropped = self.counters.udp_rx_dropped_closed + open;
        self.read_tun_drops();
    }

    fn read_tun_drops(&mut self) {
        let drops = self.tun.if_index().and_then(crate::rtnl::device_drops);
        match drops {
            Ok(d) => {
                self.counters.tun_queue_dropped = d.tx_dropped;
                self.counters.tun_write_dropped = d.rx_dropped;
            }
            Err(e) => debug!(error = %e, "the TUN device's drop counts"),
        }
    }

    /// Something the kernel data path follows changed.
    pub fn touch_kernel(&mut self) {
        if let Some(k) = &mut self.kernel {
            k.touch();
        }
    }

    /// Counts and logs an interface that took `gone` neighbors down.
    pub fn note_interface_down(&mut self, i: usize, gone: usize, why: &str) {
        if gone > 0 {
            self.counters.carrier_lost += 1;
            info!(interface = %self.config.interfaces[i], why, neighbors = gone, "interface down");
        }
    }

    /// Reads the TUN device: up to a batch of packets go to the node before
    /// what it sends goes out (one sendmmsg per port for the batch).
    pub fn read_tun(&mut self, buf: &mut [u8]) {
        loop {
            let mut read = 0;
            let now = self.now();
            while read < crate::batch::BATCH {
                match self.tun.recv(buf) {
                    Ok(n) => {
                        self.counters.tun_rx += 1;
                        if link_local_only(&buf[..n]) {
                            self.counters.tun_rx_link_local += 1;
                        } else {
                            if self.config.tun.mss_clamp
                                && crate::mss::clamp(&mut buf[..n], self.config.tun.mtu)
                                    != crate::mss::Clamp::Untouched
                            {
                                self.counters.tcp_mss_clamped += 1;
                            }
                            self.node.send(now, &buf[..n]);
                        }
                        read += 1;
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => {
                        if e.kind() != ErrorKind::WouldBlock {
                            warn!(error = %e, "TUN read failed");
                        }
                        break;
                    }
                }
            }
            self.flush(now);
            if read < crate::batch::BATCH {
                return;
            }
        }
    }

    /// Reads port `i` a batch at a time (recvmmsg): every datagram goes
    /// to the node, then what the node sends goes out in one sendmmsg per
    /// port.
    pub fn read_port(&mut self, i: usize) {
        use std::os::fd::AsRawFd;
        let Some(Some(port)) = self.ports.get(i) else {
            return;
        };
        let fd = port.socket.as_raw_fd();
        loop {
            let n = match self.recv.recv(fd) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    debug!(error = %e, interface = %self.config.interfaces[i], "receive failed");
                    break;
                }
            };
            let now = self.now();
            for k in 0..n {
                let (bytes, from, truncated) = self.recv.get(k);
                self.counters.udp_rx += 1;
                if truncated {
                    self.counters.udp_rx_truncated += 1;
                    continue;
                }
                // Data is checked against the neighbor that sends from
                // here; a control message the node took tells where its
                // sender is.
                let place = Place {
                    port: i,
                    addr: from,
                };
                let known = self.book.sender_at(place);
                let sender = self
                    .node
                    .handle_datagram(now, Interface(i as u16), known, bytes);
                let Some(id) = sender else {
                    let refusal = self.node.last_refusal();
                    if let Some(reason) = refusal.and_then(|r| r.key_mismatch()) {
                        let claimed = braid_wire::ControlMessage::parse(bytes)
                            .ok()
                            .map(|m| m.header.sender);
                        self.key_mismatch(now, place, claimed, reason);
                    }
                    continue;
                };
                self.key_mismatches.passed(i, from.ip());
                match self.book.note(id, place) {
                    Noted::Moved => {
                        info!(neighbor = id.0, interface = %self.config.interfaces[i], %from, "neighbor moved");
                        self.touch_kernel();
                    }
                    Noted::New => self.touch_kernel(),
                    Noted::Same | Noted::Refused => {}
                }
            }
            self.flush(now);
            if n < crate::batch::BATCH {
                break;
            }
        }
    }

    /// A neighbor's control message from `place` was made with another
    /// key (`reason`): the operator learns which neighbor (its address,
    /// and the node id it claims), once a minute per address.
    fn key_mismatch(
        &mut self,
        now: Instant,
        place: Place,
        claimed: Option<braid_wire::NodeId>,
        reason: &'static str,
    ) {
        let ip = place.addr.ip();
        if let Some(m) = self
            .key_mismatches
            .note(now, place.port, ip, claimed, reason)
        {
            warn!(
                interface = %self.config.interfaces[place.port],
                from = %ip,
                says_node = ?m.claimed.map(|n| n.0),
                why = reason,
                failing = m.count,
                "control messages from {ip} fail the key check ({reason}): another [auth] key there? Every router needs the same keys (docs/security.md); `braid ctl status` lists who fails"
            );
        }
    }

    /// Sends everything the node has ready and writes what it delivers.
    ///
    /// Late binding: the node hands out a datagram for a next hop only
    /// while fewer than `late_binding` wait here for that hop, and a
    /// datagram stops waiting (`on_sent`) when the kernel takes it; the
    /// kernel takes no more than the data socket's small send buffer
    /// holds. So when an interface is slower than the traffic offered,
    /// the queue builds in the node, above the binding point, where a
    /// datagram can still move to another path or jump ahead as urgent.
    pub fn flush(&mut self, now: Instant) {
        use std::os::fd::AsRawFd;
        loop {
            while let Some(t) = self.node.poll_transmit(now) {
                match t.dest {
                    Dest::AllNeighbors => {
                        for p in self.ports.iter().flatten() {
                            match p.send_all(&t.bytes) {
                                Ok(_) => self.counters.udp_tx += 1,
                                Err(_) => self.counters.udp_tx_errors += 1,
                            }
                        }
                        self.node.recycle(t.bytes);
                    }
                    Dest::Neighbor(id) => match self.book.get(id) {
                        Some(place) => {
                            if let Err(bytes) =
                                self.outgoing[place.port].push(t.bytes, place.addr, id)
                            {
                                self.counters.udp_tx_queue_full += 1;
                                self.node.on_sent(id);
                                self.node.recycle(bytes);
                            }
                        }
                        None => {
                            self.counters.unknown_neighbor += 1;
                            self.node.on_sent(id);
                            self.node.recycle(t.bytes);
                        }
                    },
                }
            }
            let mut taken = 0;
            let mut down = Vec::new();
            // A closing interface, or one without carrier, takes datagrams
            // and drops them without an error; late binding would then
            // pour everything it holds into it before the kernel's link
            // notification arrives. While the node holds traffic, look
            // at the interface's flags before each send (one ioctl per
            // batch; without a backlog only what arrives meanwhile is
            // lost, as on any link that fails).
            let look = self.node.holds_backlog();
            for (i, (p, batch)) in self.ports.iter().zip(&mut self.outgoing).enumerate() {
                let node = &mut self.node;
                let left = |id, bytes| {
                    node.on_sent(id);
                    node.recycle(bytes);
                };
                if batch.is_empty() || batch.is_blocked() {
                    continue;
                }
                // Its interface went away (closed, its neighbors taken
                // down): what was queued for it meanwhile is dropped.
                let Some(p) = p else {
                    let n = batch.fail_all(left);
                    self.counters.udp_tx_errors += n;
                    taken += n;
                    continue;
                };
                if look && !p.usable() {
                    let n = batch.fail_all(left);
                    self.counters.udp_tx_errors += n;
                    taken += n;
                    down.push(i);
                    continue;
                }
                let r = batch.flush(p.data.as_raw_fd(), left);
                self.counters.udp_tx += r.sent;
                self.counters.udp_tx_errors += r.failed;
                self.counters.udp_tx_blocked += u64::from(r.blocked);
                taken += r.sent + r.failed;
                if r.down {
                    down.push(i);
                }
            }
            // The interface went down under us (carrier or address
            // lost): what waited for it was dropped; its neighbors go
            // down now rather than after `dead_after` silent probes.
            for i in down {
                let gone = self
                    .node
                    .interface_failed(now, Interface(i as u16), &mut self.rng);
                self.note_interface_down(i, gone, "interface down at send");
            }
            // Room freed below the binding point lets the node hand out
            // more; stop when nothing moved.
            if taken == 0 {
                break;
            }
        }
        while let Some(p) = self.node.poll_deliver() {
            match self.tun.send(&p) {
                Ok(_) => self.counters.tun_tx += 1,
                Err(_) => self.counters.tun_tx_errors += 1,
            }
            self.node.recycle(p);
        }
        // The kernel data path follows the node after every batch (cheap
        // when nothing changed): under a steady stream the loop may stay
        // in one reader for long, and a new session is lent to the
        // kernel within its sync interval all the same.
        if let Some(k) = &mut self.kernel {
            k.sync(now, &mut self.node, &self.book, &self.ports);
        }
    }
}

/// Whether a packet the kernel wrote into the TUN device is its own
/// IPv6 link-local chatter (router solicitations, multicast listener
/// reports, duplicate address detection: to a link-local or multicast
/// address, or from the unspecified one), which no other router is meant
/// to get: not offered to the mesh, so it is not counted as a drop for
/// want of an egress.
fn link_local_only(packet: &[u8]) -> bool {
    if packet.len() < 40 || packet[0] >> 4 != 6 {
        return false;
    }
    let src = &packet[8..24];
    let dst = &packet[24..40];
    let link_local = |a: &[u8]| a[0] == 0xfe && a[1] & 0xc0 == 0x80;
    dst[0] == 0xff || link_local(dst) || src.iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::link_local_only;

    fn v6(src: [u8; 16], dst: [u8; 16]) -> Vec<u8> {
        let mut p = vec![0u8; 48];
        p[0] = 0x60;
        p[8..24].copy_from_slice(&src);
        p[24..40].copy_from_slice(&dst);
        p
    }

    #[test]
    fn the_kernels_ipv6_chatter_is_told_from_traffic_for_the_mesh() {
        let global: [u8; 16] = [0x20, 0x01, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2];
        let ll: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let all_routers: [u8; 16] = [0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
        assert!(link_local_only(&v6(ll, all_routers)));
        assert!(
            link_local_only(&v6([0; 16], global)),
            "duplicate address detection"
        );
        assert!(link_local_only(&v6(global, ll)));
        assert!(!link_local_only(&v6(global, global)));
        let mut v4 = vec![0u8; 48];
        v4[0] = 0x45;
        assert!(!link_local_only(&v4));
        assert!(!link_local_only(&[0x60; 10]));
    }
}
