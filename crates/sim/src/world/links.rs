//! The link directions of one run, stored by sender: each node's
//! neighbors in the order their links were made, and beside each the
//! index of that direction's model. A broadcast walks its sender's list
//! and a frame's link is found in its sender's list (a handful of
//! neighbors), so no hash of a (sender, receiver) pair is computed per
//! frame and one sender's links sit together in memory.

use crate::link::LinkDir;

/// Every link direction, by (sender, receiver).
pub(super) struct Links {
    dirs: Vec<LinkDir>,
    keys: Vec<(u32, u32)>,
    /// Per node: its neighbors, and beside each the index in `dirs` of
    /// the direction toward it.
    neighbors: Vec<Vec<u32>>,
    toward: Vec<Vec<u32>>,
}

impl Links {
    /// No links among `nodes` nodes.
    pub(super) fn new(nodes: usize) -> Self {
        Links {
            dirs: Vec::new(),
            keys: Vec::new(),
            neighbors: vec![Vec::new(); nodes],
            toward: vec![Vec::new(); nodes],
        }
    }

    /// Adds the direction `(from, to)` with model `dir`; a second link
    /// between the same two replaces the first's model and lists the
    /// neighbor again (as the links were always listed).
    pub(super) fn insert(&mut self, (from, to): (u32, u32), dir: LinkDir) {
        let index = match self.index((from, to)) {
            Some(i) => {
                self.dirs[i] = dir;
                i
            }
            None => {
                self.dirs.push(dir);
                self.keys.push((from, to));
                self.dirs.len() - 1
            }
        };
        self.neighbors[from as usize].push(to);
        self.toward[from as usize].push(index as u32);
    }

    fn index(&self, (from, to): (u32, u32)) -> Option<usize> {
        let list = self.neighbors.get(from as usize)?;
        let at = list.iter().position(|&n| n == to)?;
        Some(self.toward[from as usize][at] as usize)
    }

    /// `i`'s neighbors, in the order their links were made.
    pub(super) fn neighbors(&self, i: u32) -> &[u32] {
        &self.neighbors[i as usize]
    }

    /// `i`'s `j`th neighbor (in [`Links::neighbors`]' order) and the
    /// direction toward it.
    pub(super) fn out(&mut self, i: u32, j: usize) -> (u32, &mut LinkDir) {
        let (i, d) = (i as usize, self.toward[i as usize][j] as usize);
        (self.neighbors[i][j], &mut self.dirs[d])
    }

    pub(super) fn get(&self, key: &(u32, u32)) -> Option<&LinkDir> {
        self.index(*key).map(|i| &self.dirs[i])
    }

    pub(super) fn get_mut(&mut self, key: &(u32, u32)) -> Option<&mut LinkDir> {
        self.index(*key).map(|i| &mut self.dirs[i])
    }

    pub(super) fn contains_key(&self, key: &(u32, u32)) -> bool {
        self.index(*key).is_some()
    }

    /// Every direction's model, in the order they were made.
    pub(super) fn values(&self) -> impl Iterator<Item = &LinkDir> {
        self.dirs.iter()
    }

    /// Every direction with its (sender, receiver).
    pub(super) fn iter(&self) -> impl Iterator<Item = (&(u32, u32), &LinkDir)> {
        self.keys.iter().zip(&self.dirs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::LinkSpec;

    #[test]
    fn directions_are_found_by_sender_and_receiver_and_a_repeat_replaces() {
        let mut links = Links::new(3);
        let spec = |delay_ms| LinkSpec {
            delay: std::time::Duration::from_millis(delay_ms),
            ..LinkSpec::default()
        };
        links.insert((0, 1), LinkDir::new(spec(1)));
        links.insert((1, 0), LinkDir::new(spec(2)));
        links.insert((0, 2), LinkDir::new(spec(3)));
        assert_eq!(links.get(&(1, 0)).unwrap().spec.delay.as_millis(), 2);
        assert!(links.get(&(2, 0)).is_none() && !links.contains_key(&(1, 2)));
        assert_eq!(links.neighbors(0), &[1, 2]);
        links.insert((0, 1), LinkDir::new(spec(4)));
        assert_eq!(links.values().count(), 3, "a repeat is no new direction");
        assert_eq!(links.get(&(0, 1)).unwrap().spec.delay.as_millis(), 4);
        assert_eq!(links.neighbors(0), &[1, 2, 1], "listed again");
        let (to, dir) = links.out(0, 2);
        assert_eq!((to, dir.spec.delay.as_millis()), (1, 4), "the same model");
        let keys: Vec<(u32, u32)> = links.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, vec![(0, 1), (1, 0), (0, 2)]);
    }
}
