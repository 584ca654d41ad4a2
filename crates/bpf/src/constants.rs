//! Every number the kernel data path's C programs and their Rust loader
//! share: the settings' flag bits, the limits that size the map layouts,
//! and each map's number of entries. Named once, here: `build.rs`
//! includes this file and writes [`C_FLAGS`], [`C_BITS`] and [`C_SIZES`] into
//! `braid_limits.h`, which `bpf/datapath.h` and the maps in
//! `bpf/datapath_maps.h` use; `maps.rs`, `datapath.rs` and the daemon use
//! the same constants. Plain constants only (the build script compiles
//! this file on its own).

/// Forward transit data packets in the kernel.
pub const TRANSIT: u32 = 1 << 0;
/// Deduplicate and deliver at the egress in the kernel.
pub const EGRESS: u32 = 1 << 1;
/// Encode the sessions in `sessions` in the kernel.
pub const INGRESS: u32 = 1 << 2;
/// Finish checksums a sender left to the device before encoding (a braid
/// interface is virtual: it passes them on unfinished).
pub const FINISH_CHECKSUMS: u32 = 1 << 3;
/// At the egress, route a delivered IPv4 packet to its next hop from
/// `braid_rx` (the kernel's FIB) instead of through the TUN device.
pub const ROUTE_DELIVERED: u32 = 1 << 4;
/// Tree mode: forward marked packets by their entry point's tree, deliver
/// to the clients this router serves.
pub const TREES: u32 = 1 << 5;
/// Tree mode: mark what enters the mesh here and send it on this router's
/// tree (`braid_tree_tx`).
pub const TREE_ENTRY: u32 = 1 << 6;
/// Take data only from the (interface, address) pairs in `senders`, and
/// only as their route says (authentication is on).
pub const AUTHENTICATED: u32 = 1 << 7;
/// The IPv4 reserved flag bit (in the host-order fragment field) that
/// marks a tree-mode packet inside the mesh.
pub const TREE_MARK: u16 = 0x8000;

/// Paths a kernel session uses at most.
pub const KPATHS: usize = 4;
/// Transit nodes per path of a kernel session at most.
pub const KTRANSIT: usize = 15;
/// Entries of stripe's weighted round-robin table.
pub const STRIPE_SLOTS: usize = 64;
/// Classifier rules the kernel evaluates at most.
pub const RULES: usize = 16;
/// Destination prefixes per rule at most.
pub const RULE_PREFIXES: usize = 4;
/// Port ranges per list per rule at most.
pub const RULE_PORTS: usize = 4;
/// The largest dedup window the kernel keeps (numbers).
pub const MAX_WINDOW: u32 = 8192;
/// Words of a kernel dedup window: a window of W numbers touches at most
/// W/64 + 1 blocks of 64, so with that many words no two blocks in the
/// window share one (see `bpf/datapath.h`).
pub const WINDOW_WORDS: usize = MAX_WINDOW as usize / 64 + 1;
/// Path indices a window counts receptions of (the data header's 4-bit
/// path field).
pub const PATH_INDICES: usize = 16;
/// Next hops per tree entry at most.
pub const TREE_HOPS: usize = 8;

/// Slots of `settings` (double-buffered: `settings_slot` names the one in
/// use).
pub const SETTINGS_SLOTS: usize = 2;
/// Entries of `neighbors` as compiled; the loader sizes the map to the
/// node's neighbor limit.
pub const MAX_NEIGHBORS: usize = 1024;
/// Entries of `locals` (this router's underlay addresses).
pub const MAX_LOCALS: usize = 256;
/// Entries of `copy_sources`: the clients (IPv4 addresses advertised by
/// access points) whose packets this egress hands to user space, where
/// copies that entered the mesh at two access points are caught.
pub const MAX_COPY_SOURCES: usize = 16384;
/// Entries of `senders`.
pub const MAX_SENDERS: usize = 4096;
/// Entries of `prefixes`.
pub const MAX_PREFIXES: usize = 4096;
/// Entries of `sessions`, `seqs` and `windows` as compiled; the loader
/// sizes them to the node's session limit.
pub const MAX_SESSIONS: usize = 1024;
/// Entries of `trees`: (entry point, client) pairs this router holds.
pub const MAX_TREES: usize = 16384;

/// The flag bits as the C programs name them (written as unsigned
/// literals into `braid_limits.h`).
pub const C_FLAGS: [(&str, u32); 8] = [
    ("BRAID_TRANSIT", TRANSIT),
    ("BRAID_EGRESS", EGRESS),
    ("BRAID_INGRESS", INGRESS),
    ("BRAID_FINISH_CHECKSUMS", FINISH_CHECKSUMS),
    ("BRAID_ROUTE_DELIVERED", ROUTE_DELIVERED),
    ("BRAID_TREES", TREES),
    ("BRAID_TREE_ENTRY", TREE_ENTRY),
    ("BRAID_AUTHENTICATED", AUTHENTICATED),
];

/// The packet bits as the C programs name them (written as hexadecimal
/// integer literals into `braid_limits.h`).
pub const C_BITS: [(&str, u16); 1] = [("BRAID_TREE_MARK", TREE_MARK)];

/// The limits and map sizes as the C programs name them (written as
/// integer literals into `braid_limits.h`).
pub const C_SIZES: [(&str, usize); 18] = [
    ("BRAID_KPATHS", KPATHS),
    ("BRAID_KTRANSIT", KTRANSIT),
    ("BRAID_STRIPE_SLOTS", STRIPE_SLOTS),
    ("BRAID_RULES", RULES),
    ("BRAID_RULE_PREFIXES", RULE_PREFIXES),
    ("BRAID_RULE_PORTS", RULE_PORTS),
    ("BRAID_MAX_WINDOW", MAX_WINDOW as usize),
    ("BRAID_WINDOW_WORDS", WINDOW_WORDS),
    ("BRAID_MAX_PATH_INDEX", PATH_INDICES),
    ("BRAID_TREE_HOPS", TREE_HOPS),
    ("BRAID_SETTINGS_SLOTS", SETTINGS_SLOTS),
    ("BRAID_MAX_NEIGHBORS", MAX_NEIGHBORS),
    ("BRAID_MAX_LOCALS", MAX_LOCALS),
    ("BRAID_MAX_COPY_SOURCES", MAX_COPY_SOURCES),
    ("BRAID_MAX_SENDERS", MAX_SENDERS),
    ("BRAID_MAX_PREFIXES", MAX_PREFIXES),
    ("BRAID_MAX_SESSIONS", MAX_SESSIONS),
    ("BRAID_MAX_TREES", MAX_TREES),
];
