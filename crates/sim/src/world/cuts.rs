//! Links cut on flows' paths (`[[path_cuts]]`): at each flow's turn of
//! a cut, the link in the middle of the flow's ingress's first path,
//! among the path's links inside the ingress's area, goes down both ways
//! for the cut's length (what was cut is kept in `cut_records.rs`).

use braid_proto::time::Instant;

use super::cut_records::Made;
use super::{Event, World};

impl World {
    /// Path cut `cut` takes flow `fi`'s turn: the middle link of its path
    /// inside the ingress's area goes down, from now for the cut's length.
    pub(super) fn on_path_cut(&mut self, t: Instant, cut: u32, fi: u32) {
        let Some(spec) = self.path_cuts.specs.get(cut as usize) else {
            return;
        };
        let until = t + spec.lasts;
        let fi = fi as usize;
        let link = self.link_to_cut(fi);
        if let Some((a, b)) = link {
            let mut carrier = false;
            for dir in [(a, b), (b, a)] {
                if let Some(l) = self.medium.links.get_mut(&dir) {
                    l.spec.down.push((t, until));
                    carrier |= l.spec.carrier;
                }
            }
            if carrier {
                self.queue.push(t, Event::Carrier { a, b, up: false });
                self.queue.push(until, Event::Carrier { a, b, up: true });
            }
        }
        self.path_cuts.made.push(Made {
            flow: fi,
            link,
            at: t,
            until,
        });
    }

    /// The middle link of flow `fi`'s first path whose two ends are in
    /// the ingress's area.
    fn link_to_cut(&self, fi: usize) -> Option<(u32, u32)> {
        let (from, to) = (self.flows[fi].from, self.flows[fi].to);
        let transit = self.nodes[from as usize]
            .paths_to(self.ids.id(to))?
            .first()?;
        let hops: Vec<u32> = std::iter::once(from)
            .chain(transit.iter().filter_map(|&n| self.ids.index(n)))
            .chain(std::iter::once(to))
            .collect();
        let area = |i: u32| self.configs[i as usize].control.area;
        let inside: Vec<(u32, u32)> = hops
            .windows(2)
            .map(|w| (w[0], w[1]))
            .filter(|&(a, b)| area(a) == area(from) && area(b) == area(from))
            .filter(|l| self.medium.links.contains_key(l))
            .collect();
        inside.get(inside.len() / 2).copied()
    }
}
