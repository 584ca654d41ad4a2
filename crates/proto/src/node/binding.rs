//! Late binding (seed 003): what the ingress encodes waits above the
//! binding point in its egress's [`Scheduler`], queued by class and flow,
//! and is bound to one of the egress's paths only when that path's first
//! hop holds fewer than `bound` datagrams in the driver (the driver tells
//! the node each departure with [`Node::on_sent`]). When a path breaks,
//! what waits for it moves to the others; only the at most `bound`
//! datagrams in the driver can be lost with it. Also here: giving a
//! datagram its path's source route, which both bindings share.

use braid_wire::data::{forward_in_place, Forward};
use braid_wire::{DataFlags, DataHeader, NodeId, RedundancyMode};

use super::config::{Dest, Transmit};
use super::routes::RouteSet;
use super::Node;
use crate::redundancy::{Outgoing, Payload};
use crate::scheduler::Scheduler;

/// A datagram above the binding point: everything but its path.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) header: DataHeader,
    pub(super) body: Vec<u8>,
}

/// How a datagram from the ingress is to be queued.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct FlowKey {
    pub(super) hash: u64,
    pub(super) urgent: bool,
}

impl Node {
    /// Turns the ingress's output into datagrams: with late binding, each
    /// waits above the binding point for its path; otherwise it gets its
    /// path's source route and goes to the driver now.
    pub(super) fn emit_all(&mut self, out: &mut Vec<Outgoing>, input: &[u8], key: FlowKey) {
        for o in out.drain(..) {
            let body: &[u8] = match &o.payload {
                Payload::Input => input,
                Payload::Repair(r) => r,
            };
            if o.header.mode == RedundancyMode::Tree {
                // No path to bind to: a copy per branch of the tree.
                self.emit_tree(o.header, body);
                continue;
            }
            let Some(late) = self.config.late_binding else {
                if let Some(t) = self.route_datagram(o.header, o.path as usize, body) {
                    self.push_out(t);
                }
                continue;
            };
            let egress = o.header.egress;
            let Some(set) = self.routes.get_mut(&egress) else {
                self.counters.no_path += 1;
                continue;
            };
            let paths = set.damping.current().map_or(0, Vec::len);
            let waiting = set.waiting.get_or_insert_with(|| {
                let mut s = Scheduler::new(late.scheduler, crate::redundancy::mode::MAX_PATHS);
                for p in paths..s.paths() {
                    s.set_path_up(p, false);
                }
                s
            });
            let urgent = key.urgent || o.header.flags.contains(DataFlags::URGENT);
            let dropped = waiting.enqueue(
                Pending {
                    header: o.header,
                    body: self.pool.copy_of(body),
                },
                body.len(),
                key.hash ^ o.header.class as u64,
                urgent,
                1 << o.path,
            );
            self.counters.binding_overflow += dropped.len() as u64;
            for d in dropped {
                self.pool.give(d.body);
            }
            if let Err(at) = self.backlog.binary_search(&egress) {
                self.backlog.insert(at, egress);
            }
        }
    }

    /// The paths toward `egress` were renumbered (`count` of them now):
    /// what was bound to one goes back above the binding point.
    pub(super) fn renumber_waiting(&mut self, egress: NodeId, count: usize) {
        let Some(waiting) = self
            .routes
            .get_mut(&egress)
            .and_then(|s| s.waiting.as_mut())
        else {
            return;
        };
        for p in 0..waiting.paths() {
            for pending in waiting.set_path_up(p, false) {
                let len = pending.body.len();
                let urgent = pending.header.flags.contains(DataFlags::URGENT);
                let class = pending.header.class as u64;
                let dropped = waiting.enqueue(pending, len, class, urgent, 1 << p);
                self.counters.binding_overflow += dropped.len() as u64;
            }
        }
        for p in 0..count.min(waiting.paths()) {
            waiting.set_path_up(p, true);
        }
    }

    /// Gives a datagram its path's source route and sends it to the first
    /// hop. Returns the first hop, or `None` when the path is gone.
    fn route_datagram(
        &mut self,
        mut header: DataHeader,
        path: usize,
        body: &[u8],
    ) -> Option<Transmit> {
        let paths = self
            .routes
            .get(&header.egress)
            .and_then(|r| r.damping.current());
        let Some(route) = paths.and_then(|p| p.get(path)) else {
            self.counters.no_path += 1;
            return None;
        };
        header.path = path as u8;
        let mut buf = self.pool.take();
        buf.resize(DataHeader::encoded_len(route.len()) + body.len(), 0);
        let Ok(n) = header.emit(route, &mut buf) else {
            self.counters.malformed += 1;
            self.pool.give(buf);
            return None;
        };
        buf[n..].copy_from_slice(body);
        match forward_in_place(&mut buf, self.id) {
            Ok(Forward::To(next)) => Some(Transmit {
                dest: Dest::Neighbor(next),
                bytes: buf,
                rate: None,
            }),
            _ => {
                self.counters.not_on_route += 1;
                self.pool.give(buf);
                None
            }
        }
    }

    /// Late binding: the next datagram whose path's first hop has room in
    /// the driver.
    pub(super) fn pull_bound(&mut self) -> Option<Transmit> {
        let bound = self.config.late_binding?.bound.max(1);
        let mut after: Option<NodeId> = None;
        loop {
            let next = after.map_or(0, |e| self.backlog.partition_point(|&x| x <= e));
            let egress = self.backlog.get(next).copied()?;
            after = Some(egress);
            let (pulled, idle) = match self.routes.get_mut(&egress) {
                Some(RouteSet {
                    damping,
                    waiting: Some(waiting),
                }) => {
                    let mut pulled = None;
                    for (p, transit) in damping.current().into_iter().flatten().enumerate() {
                        let hop = transit.first().copied().unwrap_or(egress);
                        if self.in_driver.get(&hop).copied().unwrap_or(0) >= bound {
                            continue;
                        }
                        if let Some(pending) = waiting.pull(p) {
                            pulled = Some((p, pending));
                            break;
                        }
                    }
                    let idle = pulled.is_none()
                        && waiting.queued() == 0
                        && (0..waiting.paths()).all(|p| waiting.bound(p) == 0);
                    (pulled, idle)
                }
                _ => (None, true),
            };
            if idle {
                if let Ok(at) = self.backlog.binary_search(&egress) {
                    self.backlog.remove(at);
                }
            }
            if let Some((p, pending)) = pulled {
                let t = self.route_datagram(pending.header, p, &pending.body);
                self.pool.give(pending.body);
                if let Some(t) = t {
                    return Some(t);
                }
                // Counted by `route_datagram`; try this egress again.
                after = None;
            }
        }
    }

    /// Whether traffic waits above the binding point (late binding): the
    /// driver then hands the node's datagrams to the kernel only as fast
    /// as the kernel takes them, and anything the kernel takes but drops
    /// (an interface losing its carrier) drains what waits.
    pub fn holds_backlog(&self) -> bool {
        !self.backlog.is_empty()
    }

    /// The driver's report that a unicast datagram to `neighbor` left its
    /// queue (sent, or dropped): room for the next one (late binding).
    pub fn on_sent(&mut self, neighbor: NodeId) {
        // Entries stay at zero (one per next hop in use; gone ones are
        // dropped with idle routes) so that the hot path does not
        // allocate.
        if let Some(n) = self.in_driver.get_mut(&neighbor) {
            *n = n.saturating_sub(1);
        }
    }

    /// Counts a unicast datagram handed to the driver (late binding).
    pub(super) fn count_in_driver(&mut self, t: &Transmit) {
        if let (Some(_), Dest::Neighbor(n)) = (self.config.late_binding, t.dest) {
            *self.in_driver.entry(n).or_default() += 1;
        }
    }
}
