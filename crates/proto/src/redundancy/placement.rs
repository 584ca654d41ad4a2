//! Which path each packet of a parity or erasure group takes: the one
//! decision the encoder (`ingress.rs`) follows and the delivery formulas
//! (`predict.rs`) read, so that what is predicted is what is sent.
//!
//! A group's shards (data first, then repair) are spread by smooth
//! weighted round robin over the paths that carry them, started afresh for
//! each group from a list rotated by the group's number: over `period`
//! groups every path takes every position equally often, and nothing
//! carries over from one group to the next. Parity puts the XOR packet on
//! one path (the last path up, or each path in turn for parity-rotating)
//! and the data on the others; erasure spreads data and repair alike over
//! all paths.

use super::mode::{Mode, MAX_PATHS, MAX_SHARDS};

/// Most packets in a group, data and repair together.
pub const MAX_GROUP: usize = 2 * MAX_SHARDS as usize;

/// Where the shards of one group go: for shard `i`, an index into the list
/// of paths up (not a path slot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupPlan {
    paths: [u8; MAX_GROUP],
    len: u8,
}

impl GroupPlan {
    /// The index (into the paths up) that shard `i` goes on; shards past
    /// the plan (none for a valid mode) go on the first path.
    pub fn shard(&self, i: usize) -> usize {
        if i < self.len as usize {
            self.paths[i] as usize
        } else {
            0
        }
    }

    /// Shards planned: data and repair of a full group.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the plan places nothing (a mode without groups).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The plan of group number `group` under `mode`, over paths up with
/// these stripe weights (in slot order; at least one).
pub fn plan(mode: &Mode, weights: &[u32], group: u64) -> GroupPlan {
    let (data, repair) = mode.group_shape();
    let mut p = GroupPlan {
        paths: [0; MAX_GROUP],
        len: (data + repair).min(MAX_GROUP as u8),
    };
    let u = weights.len().min(MAX_PATHS);
    if u <= 1 || p.len == 0 {
        return p;
    }
    match mode {
        Mode::Parity(_) | Mode::ParityRotating(_) => {
            let (parity, rotation) = if matches!(mode, Mode::Parity(_)) {
                (u - 1, group % (u as u64 - 1))
            } else {
                (
                    (group % u as u64) as usize,
                    (group / u as u64) % (u as u64 - 1),
                )
            };
            // The paths but the parity's, on the stack (one plan per group).
            let mut others = [0usize; MAX_PATHS];
            for (slot, i) in others.iter_mut().zip((0..u).filter(|&i| i != parity)) {
                *slot = i;
            }
            let shards = data as usize;
            spread(
                &others[..u - 1],
                rotation as usize,
                weights,
                &mut p.paths[..shards],
            );
            for slot in &mut p.paths[shards..p.len as usize] {
                *slot = parity as u8;
            }
        }
        Mode::Erasure { .. } => {
            let all: [usize; MAX_PATHS] = core::array::from_fn(|i| i);
            let len = p.len as usize;
            spread(
                &all[..u],
                (group % u as u64) as usize,
                weights,
                &mut p.paths[..len],
            );
        }
        _ => {}
    }
    p
}

/// Groups after which plans repeat, with `paths` paths up.
pub fn period(mode: &Mode, paths: usize) -> u64 {
    let u = paths.max(1) as u64;
    match mode {
        _ if u == 1 => 1,
        Mode::Parity(_) => u - 1,
        Mode::ParityRotating(_) => u * (u - 1),
        Mode::Erasure { .. } => u,
        _ => 1,
    }
}

/// Smooth weighted round robin over `among` rotated left by `rotation`,
/// from a zero state, into `out`.
fn spread(among: &[usize], rotation: usize, weights: &[u32], out: &mut [u8]) {
    let n = among.len().min(MAX_PATHS);
    let (mut order, mut w) = ([0usize; MAX_PATHS], [0i64; MAX_PATHS]);
    for i in 0..n {
        order[i] = among[(i + rotation) % n];
        w[i] = i64::from(weights[order[i]].max(1));
    }
    let total: i64 = w[..n].iter().sum();
    let mut current = [0i64; MAX_PATHS];
    for slot in out {
        let mut best = 0;
        for i in 0..n {
            current[i] += w[i];
            if current[i] > current[best] {
                best = i;
            }
        }
        current[best] -= total;
        *slot = order[best] as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shards(p: &GroupPlan) -> Vec<usize> {
        (0..p.len()).map(|i| p.shard(i)).collect()
    }

    #[test]
    fn erasure_alternates_and_rotates_with_the_group() {
        let m = Mode::Erasure {
            n: 6,
            m: 4,
            depth: 1,
        };
        assert_eq!(shards(&plan(&m, &[1, 1], 0)), [0, 1, 0, 1, 0, 1]);
        assert_eq!(shards(&plan(&m, &[1, 1], 1)), [1, 0, 1, 0, 1, 0]);
        assert_eq!(period(&m, 2), 2);
        // Twice the weight: twice the shards.
        let heavy = shards(&plan(&m, &[2, 1], 0));
        assert_eq!(heavy.iter().filter(|&&p| p == 0).count(), 4);
    }

    #[test]
    fn parity_keeps_its_path_and_rotating_parity_moves() {
        let m = Mode::Parity(4);
        for g in 0..4 {
            let p = shards(&plan(&m, &[1, 1, 1], g));
            assert_eq!(p[3], 2);
            assert!(p[..3].iter().all(|&i| i < 2), "{p:?}");
        }
        let r = Mode::ParityRotating(3);
        let parities: Vec<usize> = (0..3).map(|g| plan(&r, &[1, 1, 1], g).shard(2)).collect();
        assert_eq!(parities, [0, 1, 2]);
        assert_eq!(period(&r, 3), 6);
    }

    #[test]
    fn one_path_takes_everything_and_ungrouped_modes_plan_nothing() {
        let p = plan(
            &Mode::Erasure {
                n: 30,
                m: 15,
                depth: 1,
            },
            &[5],
            7,
        );
        assert_eq!(p.len(), 30);
        assert!(shards(&p).iter().all(|&i| i == 0));
        assert!(plan(&Mode::Mirror(2), &[1, 1], 0).is_empty());
    }
}
