//! Whole `Node`s driven by hand, as a driver drives them: timers fired in
//! order, every datagram moved at once (links without a queue) to the
//! neighbors its link reaches, buffers given back. The harness of the
//! node tests (node_scenario, trust, hot_path_alloc); what differs between
//! them is a [`Driver`]'s habits, not a copy of the loop.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use braid_proto::node::{Dest, Interface, Node, NodeEvent};
use braid_proto::random::unit_f64;
use braid_proto::time::Instant;
use braid_wire::{MessageType, NodeId};
use rand_chacha::ChaCha8Rng;

/// 1 reaches 5 through 2, 3 or 4 (by index: 0 to 4 through 1, 2 or 3).
pub const DIAMOND: [(usize, usize); 6] = [(0, 1), (1, 4), (0, 2), (2, 4), (0, 3), (3, 4)];

/// What the harness does besides moving datagrams.
#[derive(Debug, Clone, Copy, Default)]
pub struct Driver {
    /// Each datagram crossing a link draws from the mesh's random numbers
    /// and is lost with the link's loss (a draw is made at loss 0 too, so
    /// a lossy mesh's runs do not depend on which links lose).
    pub lossy: bool,
    /// Every control datagram sent is kept in [`Mesh::heard`].
    pub record_control: bool,
    /// Each node's delivered packets are taken as soon as its datagrams
    /// have moved, counted in [`Mesh::delivered`] and given back; without
    /// it they wait in the node for the test.
    pub take_deliveries: bool,
}

/// Nodes, indexed from 0, and the directed links between them. A
/// datagram goes over each link from its sender: to every neighbor so
/// linked (`Dest::AllNeighbors`) or to the linked node with the id it
/// names, on the interface numbered by the sender's index.
pub struct Mesh {
    pub nodes: Vec<Node>,
    /// Loss per directed link (both ends' indexes), drawn only by a lossy
    /// driver.
    pub links: BTreeMap<(usize, usize), f64>,
    pub rng: ChaCha8Rng,
    pub now: Instant,
    /// With `record_control`: every control datagram sent, with its
    /// sender's index (what a stranger in range would record to replay).
    pub heard: Vec<(usize, Vec<u8>)>,
    /// With `take_deliveries`: the packets delivered so far.
    pub delivered: u64,
    driver: Driver,
}

impl Mesh {
    /// `nodes` at time zero, without links.
    pub fn new(nodes: Vec<Node>, rng: ChaCha8Rng, driver: Driver) -> Mesh {
        Mesh {
            nodes,
            links: BTreeMap::new(),
            rng,
            now: Instant::ZERO,
            heard: Vec::new(),
            delivered: 0,
            driver,
        }
    }

    /// Links `a` and `b` both ways, each direction losing `loss`.
    pub fn link(&mut self, a: usize, b: usize, loss: f64) {
        self.links.insert((a, b), loss);
        self.links.insert((b, a), loss);
    }

    /// The index of the (first) node with `id`.
    pub fn index(&self, id: NodeId) -> usize {
        self.nodes
            .iter()
            .position(|n| n.id() == id)
            .unwrap_or_else(|| panic!("no node {id:?}"))
    }

    /// Moves datagrams until no node has one to send.
    pub fn flush(&mut self) {
        loop {
            let mut sent = false;
            for from in 0..self.nodes.len() {
                while let Some(t) = self.nodes[from].poll_transmit(self.now) {
                    sent = true;
                    // Links without a queue: every datagram leaves at once.
                    if let Dest::Neighbor(n) = t.dest {
                        self.nodes[from].on_sent(n);
                    }
                    if self.driver.record_control
                        && braid_wire::peek(&t.bytes) != Ok(MessageType::Data)
                    {
                        self.heard.push((from, t.bytes.clone()));
                    }
                    let sender = self.nodes[from].id();
                    for (&(_, to), &loss) in self.links.range((from, 0)..(from + 1, 0)) {
                        let wanted = match t.dest {
                            Dest::AllNeighbors => true,
                            Dest::Neighbor(n) => self.nodes[to].id() == n,
                        };
                        if !wanted || (self.driver.lossy && unit_f64(&mut self.rng) < loss) {
                            continue;
                        }
                        self.nodes[to].handle_datagram(
                            self.now,
                            Interface(from as u16),
                            Some(sender),
                            &t.bytes,
                        );
                    }
                    self.nodes[from].recycle(t.bytes);
                }
                if self.driver.take_deliveries {
                    while let Some(p) = self.nodes[from].poll_deliver() {
                        self.delivered += 1;
                        self.nodes[from].recycle(p);
                    }
                }
            }
            if !sent {
                return;
            }
        }
    }

    /// Fires every timer due by `until`, in order, moving what each sends;
    /// the clock ends at `until`.
    pub fn run_until(&mut self, until: Instant) {
        while let Some(i) = super::next_due(&self.nodes, &mut self.now, until, |n| n.poll_timeout())
        {
            self.nodes[i].handle_timeout(self.now, &mut self.rng);
            self.flush();
        }
    }

    pub fn run_for(&mut self, d: Duration) {
        let until = self.now + d;
        self.run_until(until);
    }

    /// Sends packets `first..first + count` from node 1's host to
    /// 198.18.5.9 (node 5's), one every 20 ms, lets the mesh run `settle`
    /// longer, and returns the numbers of those node 5 delivered.
    pub fn stream(&mut self, first: u32, count: u32, settle: Duration) -> BTreeSet<u32> {
        for i in first..first + count {
            self.run_for(Duration::from_millis(20));
            let now = self.now;
            self.nodes[0].send(now, &host_packet([198, 18, 5, 9], i));
            self.flush();
        }
        self.run_for(settle);
        let mut got = BTreeSet::new();
        while let Some(p) = self.nodes[4].poll_deliver() {
            let n = u32::from_be_bytes([p[28], p[29], p[30], p[31]]);
            assert!(got.insert(n), "packet {n} delivered twice");
        }
        got
    }

    /// The events node `i` has told since last asked.
    pub fn events(&mut self, i: usize) -> Vec<NodeEvent> {
        std::iter::from_fn(|| self.nodes[i].poll_event()).collect()
    }
}

/// A host's UDP packet (60 bytes) from 198.18.1.10 port 4000 to `dst`
/// port 5000, numbered `i` (bytes 28-31).
pub fn host_packet(dst: [u8; 4], i: u32) -> Vec<u8> {
    let mut p = vec![0u8; 60];
    p[0] = 0x45;
    p[9] = 17;
    p[12..16].copy_from_slice(&[198, 18, 1, 10]);
    p[16..20].copy_from_slice(&dst);
    p[20..22].copy_from_slice(&4000u16.to_be_bytes());
    p[22..24].copy_from_slice(&5000u16.to_be_bytes());
    p[28..32].copy_from_slice(&i.to_be_bytes());
    p
}
