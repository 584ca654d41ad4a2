//! `ControlPlane`s alone driven by hand: a tiny deterministic broadcast
//! medium with seeded loss, frames arriving at once. The harness of the
//! control plane's scenario tests (control_plane).

use std::collections::BTreeMap;

use braid_proto::control::{ControlConfig, ControlPlane};
use braid_proto::paths::shortest_path;
use braid_proto::random::unit_f64;
use braid_proto::time::Instant;
use braid_wire::NodeId;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Nodes on a broadcast medium; `loss[(a, b)]` is the chance a frame from
/// a is lost at b. Frames arrive at once (no delay): ordering comes only
/// from the nodes' timers.
pub struct Medium {
    pub nodes: Vec<ControlPlane>,
    pub loss: BTreeMap<(usize, usize), f64>,
    pub rng: ChaCha8Rng,
    pub now: Instant,
    /// Frames delivered so far.
    pub delivered: u64,
}

impl Medium {
    pub fn new(n: usize, links: &[(usize, usize, f64)], seed: u64) -> Self {
        Self::with_config(n, links, seed, ControlConfig::default())
    }

    pub fn with_config(
        n: usize,
        links: &[(usize, usize, f64)],
        seed: u64,
        config: ControlConfig,
    ) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let nodes = (0..n)
            .map(|i| {
                ControlPlane::new(
                    NodeId(i as u16 + 1),
                    config.clone(),
                    Instant::ZERO,
                    &mut rng,
                )
                .unwrap()
            })
            .collect();
        let mut m = Medium {
            nodes,
            loss: BTreeMap::new(),
            rng,
            now: Instant::ZERO,
            delivered: 0,
        };
        for &(a, b, p) in links {
            m.set_loss(a, b, p);
        }
        m
    }

    pub fn set_loss(&mut self, a: usize, b: usize, p: f64) {
        self.loss.insert((a, b), p);
        self.loss.insert((b, a), p);
    }

    /// Runs every node's timers and deliveries until `until`.
    pub fn run_until(&mut self, until: Instant) {
        let mut buf = vec![0u8; 2048];
        while let Some(i) = super::next_due(&self.nodes, &mut self.now, until, |n| n.poll_timeout())
        {
            self.nodes[i].handle_timeout(self.now, &mut self.rng);
            // Drain every node's output until the medium is quiet.
            loop {
                let mut sent = false;
                for from in 0..self.nodes.len() {
                    while let Some(len) = self.nodes[from].poll_transmit(self.now, &mut buf) {
                        sent = true;
                        for to in 0..self.nodes.len() {
                            let Some(&p) = self.loss.get(&(from, to)) else {
                                continue;
                            };
                            if unit_f64(&mut self.rng) >= p {
                                self.nodes[to].handle(self.now, &buf[..len]).unwrap();
                                self.delivered += 1;
                            }
                        }
                    }
                }
                if !sent {
                    break;
                }
            }
        }
    }

    pub fn path(&self, at: usize, from: u16, to: u16) -> Option<Vec<u16>> {
        let g = self.nodes[at].graph();
        let (s, t) = (g.index_of(NodeId(from))?, g.index_of(NodeId(to))?);
        shortest_path(&g.graph, s, t).map(|p| p.nodes.iter().map(|&v| g.id_of(v).0).collect())
    }
}
