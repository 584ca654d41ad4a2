//! The kernel's tables of this router's surroundings, kept in step with
//! the node and the host: neighbors and our own addresses, where
//! authenticated neighbors send from, the IPv4 and IPv6 prefixes' egresses, and
//! tree mode's table. Each is mirrored as last written, so that a sync
//! writes only what changed; a write the kernel refuses is counted.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr};

use braid_bpf::compile;
use braid_bpf::maps::{self, Neighbor, SenderKey, Tree, TreeKey};
use braid_bpf::Datapath;
use braid_proto::forward::TreeDest;
use braid_proto::node::Node;
use braid_wire::NodeId;
use tracing::warn;

use super::host::{addresses, be, ip};
use super::report::KernelCounters;
use crate::neighbors::AddressBook;
use crate::underlay::Port;

/// The tables as written to the kernel.
#[derive(Debug, Default)]
pub(super) struct Tables {
    neighbors: BTreeMap<NodeId, Neighbor>,
    /// Where authenticated neighbors send from, as written to `senders`.
    senders: BTreeMap<SenderKey, u16>,
    /// Neighbor entries the kernel keeps resolved for mirror copies.
    managed: BTreeSet<(String, Ipv4Addr)>,
    locals: BTreeSet<u32>,
    prefixes: BTreeMap<(u32, u8), u16>,
    prefixes6: BTreeMap<([u8; 16], u8), u16>,
    /// Clients whose packets the egress leaves to user space.
    copy_sources: BTreeMap<u32, ()>,
    copy_sources6: BTreeMap<[u8; 16], ()>,
    /// Tree mode's table as written.
    trees: BTreeMap<TreeKey, Tree>,
}

impl Tables {
    /// Where authenticated neighbors send from (the book's senders): with
    /// authentication on, `braid_rx` takes data only from there, as its
    /// route says.
    pub(super) fn sync_senders(
        &mut self,
        dp: &mut Datapath,
        book: &AddressBook,
        ports: &[Option<Port>],
        counters: &mut KernelCounters,
    ) {
        let mut want: BTreeMap<SenderKey, u16> = BTreeMap::new();
        for (port, addr, id) in book.senders() {
            let (Some(Some(p)), std::net::IpAddr::V4(a)) = (ports.get(port), addr) else {
                continue;
            };
            if want.len() < maps::MAX_SENDERS {
                want.insert(
                    SenderKey {
                        ifindex: p.index,
                        addr_be: be(a),
                    },
                    id.0,
                );
            }
        }
        for (key, &id) in &want {
            if self.senders.get(key) != Some(&id) && dp.set_sender(*key, id).is_err() {
                counters.map_errors += 1;
            }
        }
        for key in self.senders.keys().filter(|k| !want.contains_key(k)) {
            if dp.remove_sender(*key).is_err() {
                counters.map_errors += 1;
            }
        }
        self.senders = want;
    }

    /// Neighbors (where each is: interface, its address and ours) and
    /// our own addresses, as the address book and the interfaces say; the
    /// neighbor entries mirror and tree copies need kept resolved.
    pub(super) fn sync_neighbors(
        &mut self,
        dp: &mut Datapath,
        book: &AddressBook,
        ports: &[Option<Port>],
        flags: u32,
        counters: &mut KernelCounters,
    ) {
        let mut want: BTreeMap<NodeId, Neighbor> = BTreeMap::new();
        let addrs_of = addresses();
        let none = Vec::new();
        for (id, place) in book.iter() {
            let (Some(Some(port)), SocketAddr::V4(a)) = (ports.get(place.port), place.addr) else {
                continue;
            };
            let ours = addrs_of.get(&port.name).unwrap_or(&none);
            // Our address on the neighbor's subnet, else the first.
            let on_link = ours.iter().find(|(o, len)| {
                let mask = compile::prefix_mask(*len);
                u32::from(*o) & mask == u32::from(*a.ip()) & mask
            });
            let Some((src, _)) = on_link.or(ours.first()) else {
                continue;
            };
            want.insert(
                id,
                Neighbor {
                    ifindex: port.index,
                    addr_be: be(*a.ip()),
                    src_be: be(*src),
                    pad: 0,
                },
            );
        }
        for (&id, n) in &want {
            if self.neighbors.get(&id) != Some(n) && dp.set_neighbor(id.0, *n).is_err() {
                counters.map_errors += 1;
            }
        }
        for id in self.neighbors.keys().filter(|id| !want.contains_key(id)) {
            if dp.remove_neighbor(id.0).is_err() {
                counters.map_errors += 1;
            }
        }
        // Mirror and tree copies need the neighbors' link addresses
        // resolved before the first packet: the kernel keeps these
        // entries resolved.
        if flags & (maps::INGRESS | maps::TREES) != 0 {
            let mut managed = BTreeSet::new();
            for (id, n) in &want {
                let Some(Some(port)) = book.get(*id).and_then(|place| ports.get(place.port)) else {
                    continue;
                };
                let name = port.name.clone();
                let addr = Ipv4Addr::from(n.addr_be.to_ne_bytes());
                if !self.managed.contains(&(name.clone(), addr)) {
                    let a = addr.to_string();
                    if let Err(e) = ip(&["neigh", "replace", &a, "dev", &name, "managed"]) {
                        warn!(error = %e, neighbor = id.0, "no managed neighbor entry: mirror copies to it wait for its link address");
                    }
                }
                managed.insert((name, addr));
            }
            // Entries of neighbors gone (or moved) go with them: the set
            // never holds more than the neighbor table.
            for (dev, addr) in self.managed.difference(&managed) {
                let _ = ip(&["neigh", "del", &addr.to_string(), "dev", dev]);
            }
            self.managed = managed;
        }
        self.neighbors = want;
        // Our own addresses: what the kernel answers for.
        let locals: BTreeSet<u32> = ports
            .iter()
            .flatten()
            .flat_map(|p| {
                let index = p.index;
                addrs_of
                    .get(&p.name)
                    .into_iter()
                    .flatten()
                    .map(move |(a, _)| (be(*a), index))
            })
            .map(|(a, i)| {
                if !self.locals.contains(&a) && dp.set_local(a, i).is_err() {
                    counters.map_errors += 1;
                }
                a
            })
            .collect();
        for a in self.locals.difference(&locals) {
            let _ = dp.remove_local(*a);
        }
        self.locals = locals;
    }

    /// The IPv4 and IPv6 prefixes and their egresses, as the node routes
    /// them.
    pub(super) fn sync_prefixes(
        &mut self,
        dp: &mut Datapath,
        node: &mut Node,
        counters: &mut KernelCounters,
    ) {
        let want = node
            .prefix_table(true)
            .into_iter()
            .map(|(a, l, o)| ((u32::from_ne_bytes([a[0], a[1], a[2], a[3]]), l), o.0))
            .collect();
        counters.map_errors += sync_map(dp, &mut self.prefixes, want, |dp, (a, l), o| match o {
            Some(o) => dp.set_prefix(a, l, o).is_ok(),
            None => dp.remove_prefix(a, l).is_ok(),
        });
        let want6 = node
            .prefix_table(false)
            .into_iter()
            .map(|(a, l, o)| ((a, l), o.0))
            .collect();
        counters.map_errors += sync_map(dp, &mut self.prefixes6, want6, |dp, (a, l), o| match o {
            Some(o) => dp.set_prefix6(a, l, o).is_ok(),
            None => dp.remove_prefix6(a, l).is_ok(),
        });
    }

    /// The clients (IPv4 and IPv6 addresses access points advertise) whose
    /// packets this egress leaves to user space while the node drops
    /// copies (`copy_window`): a client heard by two access points enters
    /// the mesh twice, once at each, and only the node's copy filter sees
    /// both sessions. Each family holds at most
    /// [`braid_bpf::constants::MAX_COPY_SOURCES`].
    pub(super) fn sync_copy_sources(
        &mut self,
        dp: &mut Datapath,
        node: &Node,
        counters: &mut KernelCounters,
    ) {
        let (mut want, mut want6) = (BTreeMap::new(), BTreeMap::new());
        let limit = braid_bpf::constants::MAX_COPY_SOURCES;
        if node.config().copy_window.is_some() {
            for r in node.control().lsdb().records() {
                for p in r.prefixes.iter() {
                    match *p {
                        braid_wire::Prefix::Client4 { addr, .. } if want.len() < limit => {
                            want.insert(u32::from_ne_bytes(addr), ());
                        }
                        braid_wire::Prefix::Client6 { addr, .. } if want6.len() < limit => {
                            want6.insert(addr, ());
                        }
                        _ => {}
                    }
                }
            }
        }
        counters.map_errors += sync_map(dp, &mut self.copy_sources, want, |dp, a, on| {
            dp.set_copy_source(a, on.is_some()).is_ok()
        });
        counters.map_errors += sync_map(dp, &mut self.copy_sources6, want6, |dp, a, on| {
            dp.set_copy_source6(a, on.is_some()).is_ok()
        });
    }

    /// Tree mode's table: for every entry point (this router, and every
    /// origin that serves a prefix or a client: where traffic enters the
    /// mesh) and every client advertised, this router's part of the entry
    /// point's tree, as the node computes it. Entries with nothing to do
    /// here are left out (a packet that comes anyway goes to the stack),
    /// and so are entries with more next hops than the kernel holds.
    pub(super) fn sync_trees(
        &mut self,
        dp: &mut Datapath,
        node: &mut Node,
        flags: u32,
        counters: &mut KernelCounters,
    ) {
        let me = node.id();
        let mut entries = BTreeSet::new();
        let mut clients = BTreeSet::new();
        for r in node.control().lsdb().records() {
            if !r.prefixes.is_empty() {
                entries.insert(r.origin);
            }
            for p in r.prefixes.iter() {
                if let braid_wire::Prefix::Client4 { addr, .. } = p {
                    clients.insert(*addr);
                }
            }
        }
        if flags & maps::TREE_ENTRY != 0 {
            entries.insert(me);
        } else {
            entries.remove(&me);
        }
        let mut want: BTreeMap<TreeKey, Tree> = BTreeMap::new();
        'all: for &entry in &entries {
            for &client in &clients {
                let mut dst = [0u8; 16];
                dst[..4].copy_from_slice(&client);
                let hop = node.tree_hop(entry, TreeDest::Addr(dst, true));
                if (hop.next_hops.is_empty() && !hop.deliver)
                    || hop.next_hops.len() > maps::TREE_HOPS
                {
                    continue;
                }
                if want.len() >= maps::MAX_TREES {
                    counters.map_errors += 1;
                    break 'all;
                }
                let mut t = Tree {
                    n_hops: hop.next_hops.len() as u8,
                    deliver: u8::from(hop.deliver),
                    ..Tree::default()
                };
                for (slot, n) in t.hops.iter_mut().zip(&hop.next_hops) {
                    *slot = n.0;
                }
                let key = TreeKey {
                    entry: entry.0,
                    pad: 0,
                    dst_be: u32::from_ne_bytes(client),
                };
                want.insert(key, t);
            }
        }
        for (k, t) in &want {
            if self.trees.get(k) != Some(t) && dp.set_tree(*k, *t).is_err() {
                counters.map_errors += 1;
            }
        }
        for k in self.trees.keys().filter(|k| !want.contains_key(k)) {
            let _ = dp.remove_tree(*k);
        }
        self.trees = want;
    }

    /// Entries in tree mode's table.
    pub(super) fn tree_entries(&self) -> usize {
        self.trees.len()
    }

    /// Removes the neighbor entries kept resolved (at shutdown).
    pub(super) fn forget_managed(&mut self) {
        for (dev, addr) in std::mem::take(&mut self.managed) {
            let a = addr.to_string();
            let _ = ip(&["neigh", "del", &a, "dev", &dev]);
        }
    }
}

/// Brings a kernel map, mirrored in `written` as last written, to `want`:
/// `write(dp, key, Some(value))` for what is new or changed and
/// `write(dp, key, None)` for what is gone (false: the kernel refused).
/// Returns the writes refused (a removal refused is not counted: the
/// entry is gone already, or goes with the map).
fn sync_map<K: Ord + Copy, V: PartialEq + Copy>(
    dp: &mut Datapath,
    written: &mut BTreeMap<K, V>,
    want: BTreeMap<K, V>,
    mut write: impl FnMut(&mut Datapath, K, Option<V>) -> bool,
) -> u64 {
    let mut refused = 0;
    for (&k, &v) in &want {
        if written.get(&k) != Some(&v) && !write(dp, k, Some(v)) {
            refused += 1;
        }
    }
    for &k in written.keys().filter(|k| !want.contains_key(k)) {
        let _ = write(dp, k, None);
    }
    *written = want;
    refused
}
