//! How long an advertisement takes to reach every router (`[node]
//! watch_flooding = true`): for the first [`WATCHED`] origins, when each
//! instance was issued (its origin's database took it) and when the last
//! other router installed it. Instances superseded before they reached
//! everyone are counted but not timed. Bounded: at most
//! [`MAX_INSTANCES`] instances are followed.

use std::collections::BTreeMap;

use braid_proto::node::Node;
use braid_proto::time::Instant;
use braid_wire::NodeId;

use crate::results::FloodStats;

/// Origins watched: the first routers of the scenario.
pub(super) const WATCHED: usize = 64;

/// Instances followed at most.
const MAX_INSTANCES: usize = 4096;

/// One instance followed: when issued, how many other routers hold it
/// (or held it), when the last of them took it.
struct Instance {
    issued: Instant,
    reached: u32,
    last: Instant,
}

pub(super) struct FloodWatch {
    /// Per router, the number of each watched origin's instance it holds.
    held: Vec<[Option<u32>; WATCHED]>,
    /// Per router, its database's version when last looked at (nothing
    /// to look at while it stays).
    seen: Vec<u64>,
    instances: BTreeMap<(u16, u32), Instance>,
    /// The watched origins' ids.
    watched: Vec<NodeId>,
}

impl FloodWatch {
    pub(super) fn new(nodes: usize, ids: &super::ids::NodeIds) -> Self {
        FloodWatch {
            watched: (0..WATCHED.min(nodes) as u32).map(|i| ids.id(i)).collect(),
            held: vec![[None; WATCHED]; nodes],
            seen: vec![u64::MAX; nodes],
            instances: BTreeMap::new(),
        }
    }

    /// Router `i` (`node`) handled something at `t`: what it now holds of
    /// the watched origins.
    pub(super) fn after(&mut self, i: u32, node: &Node, t: Instant) {
        let version = node.control().lsdb().version();
        if std::mem::replace(&mut self.seen[i as usize], version) == version {
            return;
        }
        let watched = WATCHED.min(self.held.len());
        for o in 0..watched {
            let seq = node.control().lsdb().get(self.watched[o]).map(|r| r.seq);
            let held = &mut self.held[i as usize][o];
            if seq == *held {
                continue;
            }
            *held = seq;
            let Some(seq) = seq else { continue };
            let key = (o as u16, seq);
            if o == i as usize {
                if self.instances.len() < MAX_INSTANCES {
                    self.instances.entry(key).or_insert(Instance {
                        issued: t,
                        reached: 0,
                        last: t,
                    });
                }
            } else if let Some(inst) = self.instances.get_mut(&key) {
                inst.reached += 1;
                inst.last = t;
            }
        }
    }

    /// Router `i` restarted with an empty database.
    pub(super) fn restarted(&mut self, i: u32) {
        self.held[i as usize] = [None; WATCHED];
        self.seen[i as usize] = u64::MAX;
    }

    /// The instances issued, and how long those that reached every other
    /// router took: every router that holds the origin's advertisement
    /// now (a router the mesh never connected to the origin does not
    /// count).
    pub(super) fn stats(&self) -> FloodStats {
        let mut reach = [0u32; WATCHED];
        for held in &self.held {
            for (o, h) in held.iter().enumerate() {
                reach[o] += u32::from(h.is_some());
            }
        }
        let mut times: Vec<u64> = self
            .instances
            .iter()
            .filter(|((o, _), i)| i.reached + 1 >= reach[*o as usize])
            .map(|(_, i)| i.last.since(i.issued).as_micros() as u64)
            .collect();
        let complete = times.len() as u64;
        let max_ms = times.iter().max().map_or(0.0, |&m| m as f64 / 1000.0);
        let (mean_ms, p50_ms, p99_ms) = crate::results::delay_stats(&mut times);
        FloodStats {
            issued: self.instances.len() as u64,
            complete,
            mean_ms,
            p50_ms,
            p99_ms,
            max_ms,
        }
    }
}
