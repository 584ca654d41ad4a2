//! What the control plane advertises besides its links and its area:
//! the clients it serves as an access point and the prefixes it finds
//! reachable outside the mesh, within the bound on an advertisement's
//! entries.

use braid_wire::Prefix;

use super::{ControlPlane, External};

impl ControlPlane {
    /// The clients this node serves as an access point, with their
    /// qualities ([`Prefix::Client4`], [`Prefix::Client6`]): advertised in
    /// the next advertisement (within `lsa_min_interval`), after the
    /// configured prefixes. Returns how many did not fit: an advertisement
    /// carries at most `max_prefixes` (of the database's bounds) in all,
    /// its area's entries first.
    pub fn set_clients(&mut self, mut clients: Vec<Prefix>) -> usize {
        let fixed = self.area_entries.len()
            + self.config.prefixes.len()
            + self.external.iter().map(Vec::len).sum::<usize>();
        let room = (self.lsdb.config().max_prefixes).saturating_sub(fixed);
        let over = clients.len().saturating_sub(room);
        clients.truncate(room);
        if clients != self.clients {
            self.clients = clients;
            self.lsa_wanted = true;
        }
        over
    }

    /// The prefixes `source` finds reachable outside the mesh through
    /// this router now: a checked uplink's while it is healthy (none when
    /// it is not), the kernel routes redistributed. A withdrawal is
    /// advertised at once (bad news is not throttled, as a failed link's),
    /// new prefixes within `lsa_min_interval`. Returns how many did not
    /// fit beside the configured prefixes and the other source's (the
    /// clients make room: they are advertised in what is left).
    pub fn set_external_prefixes(&mut self, source: External, mut prefixes: Vec<Prefix>) -> usize {
        let others: usize = self
            .external
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != source as usize)
            .map(|(_, p)| p.len())
            .sum();
        let room = (self.lsdb.config().max_prefixes)
            .saturating_sub(self.area_entries.len() + self.config.prefixes.len() + others);
        let over = prefixes.len().saturating_sub(room);
        prefixes.truncate(room);
        let current = &mut self.external[source as usize];
        if prefixes == *current {
            return over;
        }
        if current.iter().any(|p| !prefixes.contains(p)) {
            self.at_once_wanted = true;
        }
        *current = prefixes;
        self.lsa_wanted = true;
        let clients_room = room - self.external[source as usize].len();
        self.clients.truncate(clients_room);
        over
    }

    /// What `source` has advertised (or is about to).
    pub fn external_prefixes(&self, source: External) -> &[Prefix] {
        &self.external[source as usize]
    }

    /// The clients advertised (or about to be).
    pub fn clients(&self) -> &[Prefix] {
        &self.clients
    }
}
