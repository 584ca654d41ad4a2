//! Which node is which in a run: the names a scenario uses resolved to
//! the world's indices ([`Index`]), and each index's braid node id
//! ([`NodeIds`]): the index itself (dense, the default), or ids spread
//! over the whole 16-bit space (`[topology] ids = "sparse"`), as a
//! community mesh whose routers pick their own ids has them.

use std::collections::HashMap;

use braid_conf::LocatedError;
use braid_wire::NodeId;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::scenario::{Scenario, ScenarioError};

/// The highest id a router may have (`0xffff` is [`NodeId::NONE`]).
const HIGHEST: u16 = 0xfffe;

/// Each index's braid node id, and back.
#[derive(Debug, Clone)]
pub(super) struct NodeIds {
    /// Index → id; `None`: dense (the id is the index).
    of: Option<Vec<NodeId>>,
    /// Id → index, when sparse.
    index: HashMap<NodeId, u32>,
}

impl NodeIds {
    /// Ids for `count` routers: their indices, or when `sparse` distinct
    /// ids drawn from 0 to 65,534 by a generator of its own seeded from
    /// `seed` (the run's other draws are those of a dense run).
    pub(super) fn new(count: usize, sparse: bool, seed: u64) -> NodeIds {
        if !sparse {
            return NodeIds {
                of: None,
                index: HashMap::new(),
            };
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5ba7_5e1d);
        // The first `count` of a partial Fisher-Yates shuffle of every id.
        let mut all: Vec<u16> = (0..=HIGHEST).collect();
        let count = count.min(all.len());
        for k in 0..count {
            let j = k + (rng.next_u64() % (all.len() - k) as u64) as usize;
            all.swap(k, j);
        }
        let of: Vec<NodeId> = all[..count].iter().map(|&id| NodeId(id)).collect();
        let index = of
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i as u32))
            .collect();
        NodeIds {
            of: Some(of),
            index,
        }
    }

    /// Router `i`'s id.
    pub(super) fn id(&self, i: u32) -> NodeId {
        match &self.of {
            Some(of) => of[i as usize],
            None => NodeId(i as u16),
        }
    }

    /// The index of the router whose id is `id` (`None`: no router has it).
    pub(super) fn index(&self, id: NodeId) -> Option<u32> {
        match &self.of {
            Some(_) => self.index.get(&id).copied(),
            None => Some(u32::from(id.0)),
        }
    }
}

/// A run's node names and their indices, to resolve the names a scenario
/// uses.
pub(super) struct Index<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) names: &'a [String],
    pub(super) of: HashMap<&'a str, u32>,
}

impl Index<'_> {
    /// Node `name`'s index; an error naming `field` when it has none.
    pub(super) fn find(&self, field: impl Into<String>, name: &str) -> Result<u32, ScenarioError> {
        self.of.get(name).copied().ok_or_else(|| {
            self.error(
                field,
                format!(
                    "no node \"{name}\" in this topology (nodes: {})",
                    self.names
                        .iter()
                        .take(8)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
    }

    pub(super) fn error(&self, field: impl Into<String>, message: String) -> ScenarioError {
        ScenarioError::from(LocatedError {
            file: self.scenario.name.clone(),
            line: 0,
            field: field.into(),
            message,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_ids_are_the_indices_and_sparse_ones_distinct_and_spread() {
        let dense = NodeIds::new(100, false, 1);
        assert_eq!(dense.id(7), NodeId(7));
        assert_eq!(dense.index(NodeId(7)), Some(7));
        let sparse = NodeIds::new(1000, true, 1);
        let ids: Vec<NodeId> = (0..1000).map(|i| sparse.id(i)).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 1000, "distinct");
        assert!(sorted.iter().all(|id| *id != NodeId::NONE));
        // Spread: a thousand draws from 65,535 ids reach both ends.
        assert!(sorted[0].0 < 1000 && sorted[999].0 > 64_000, "{sorted:?}");
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(sparse.index(id), Some(i as u32));
        }
        assert_eq!(
            ids,
            (0..1000)
                .map(|i| NodeIds::new(1000, true, 1).id(i))
                .collect::<Vec<_>>()
        );
        assert_ne!(
            NodeIds::new(1000, true, 2).id(0),
            NodeIds::new(1000, true, 1).id(0)
        );
    }
}
