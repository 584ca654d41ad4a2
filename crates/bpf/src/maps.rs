//! The kernel data path's map layouts, byte for byte as `bpf/datapath.h`
//! declares them (the tests check every size against the object's own
//! map definitions). Plain data: what each field means is said there.

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
/// The IPv4 reserved flag bit (in the host-order fragment field) that
/// marks a tree-mode packet inside the mesh.
pub const TREE_MARK: u16 = 0x8000;
/// Take data only from the (interface, address) pairs in `senders`, and
/// only as their route says (authentication is on).
pub const AUTHENTICATED: u32 = 1 << 7;
/// Entries of `senders`.
pub const MAX_SENDERS: usize = 4096;
/// Next hops per tree entry at most.
pub const TREE_HOPS: usize = 8;

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
/// Words of a kernel dedup window (see datapath.h).
pub const WINDOW_WORDS: usize = 129;

/// `settings`, the slot `settings_slot` names (0 or 1).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    pub flags: u32,
    pub window_mask: u32,
    pub tun_ifindex: u32,
    pub segmenter_ifindex: u32,
    pub hop_limit: u8,
    pub pad: [u8; 7],
}

/// `neighbors`: node id -> where it is.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Neighbor {
    pub ifindex: u32,
    /// Its underlay address, network order (as the packet has it).
    pub addr_be: u32,
    /// Ours on that interface, network order.
    pub src_be: u32,
    pub pad: u32,
}

/// `senders` key: where an authenticated neighbor's datagrams come from.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SenderKey {
    pub ifindex: u32,
    /// Its underlay address, network order.
    pub addr_be: u32,
}

/// `senders` value.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sender {
    pub id: u16,
    pub pad: u16,
}

/// `prefixes` key (an LPM trie key's data part).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrefixAddr {
    pub addr_be: u32,
}

/// `prefixes` value.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Prefix {
    pub egress: u16,
    pub pad: u16,
}

/// An inclusive port range.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortRange {
    pub lo: u16,
    pub hi: u16,
}

/// One class rule for IPv4 packets.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rule {
    pub class_id: u8,
    /// 0: by DSCP (EF, CS6), 1: no, 2: yes.
    pub urgent: u8,
    pub n_prefixes: u8,
    pub n_src_ports: u8,
    pub n_dst_ports: u8,
    /// The rule lists only IPv6 prefixes: it matches no IPv4 packet.
    pub never: u8,
    pub pad: [u8; 2],
    pub dscp: u64,
    pub protocols: [u64; 4],
    pub prefix_be: [u32; RULE_PREFIXES],
    pub mask_be: [u32; RULE_PREFIXES],
    pub src_ports: [PortRange; RULE_PORTS],
    pub dst_ports: [PortRange; RULE_PORTS],
}

/// `ruleset`, key 0: the whole classifier.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ruleset {
    pub count: u32,
    pub pad: u32,
    pub rules: [Rule; RULES],
}

impl Default for Ruleset {
    fn default() -> Self {
        Ruleset {
            count: 0,
            pad: 0,
            rules: [Rule::default(); RULES],
        }
    }
}

/// `sessions` and `seqs` key: (egress, class).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionKey {
    pub egress: u16,
    pub class_id: u8,
    pub pad: u8,
}

/// One path of a kernel session.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KPath {
    pub first_hop: u16,
    pub slot: u8,
    pub route_len: u8,
    pub route: [u16; KTRANSIT],
}

/// `sessions`: how the kernel encodes one session.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Session {
    pub mode: u8,
    pub n_paths: u8,
    pub copies: u8,
    pub pinned: u8,
    pub epoch: u32,
    pub total_weight: u32,
    pub weight: [u32; KPATHS],
    pub stripe: [u8; STRIPE_SLOTS],
    pub order: [u8; KPATHS],
    pub paths: [KPath; KPATHS],
}

impl Default for Session {
    fn default() -> Self {
        Session {
            mode: 0,
            n_paths: 0,
            copies: 0,
            pinned: 0,
            epoch: 0,
            total_weight: 0,
            weight: [0; KPATHS],
            stripe: [0; STRIPE_SLOTS],
            order: [0; KPATHS],
            paths: [KPath::default(); KPATHS],
        }
    }
}

/// `seqs`: a kernel session's counter and what it sent.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seq {
    pub next: u32,
    pub pad: u32,
    pub packets: u64,
    pub last_ns: u64,
    pub sent: [u64; KPATHS],
}

/// `trees` key: (entry point, destination client).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TreeKey {
    pub entry: u16,
    pub pad: u16,
    /// The client's address, network order.
    pub dst_be: u32,
}

/// `trees`: this router's part of an entry point's tree toward a client.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tree {
    pub n_hops: u8,
    pub deliver: u8,
    pub hops: [u16; TREE_HOPS],
    pub pad: u16,
}

/// `windows` key: (ingress, class).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WindowKey {
    pub ingress: u16,
    pub class_id: u8,
    pub pad: u8,
}

/// `windows`: an egress session's dedup state.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub lock: u32,
    pub epoch: u32,
    pub retired: u32,
    pub highest: u32,
    pub jump: u32,
    pub has_epoch: u8,
    pub has_retired: u8,
    pub started: u8,
    pub has_jump: u8,
    pub last_ns: u64,
    pub delivered: u64,
    pub duplicates: u64,
    pub too_old: u64,
    pub too_far_ahead: u64,
    pub old_epoch: u64,
    pub epoch_changes: u64,
    pub received: [u32; 16],
    pub tags: [u32; WINDOW_WORDS + 1],
    pub bits: [u64; WINDOW_WORDS],
}

/// What the programs count (the `stats` map's indices), by name.
pub const STATS: [&str; 38] = [
    "rx_data",
    "rx_forwarded",
    "rx_delivered",
    "rx_duplicate",
    "rx_too_old",
    "rx_too_far_ahead",
    "rx_old_epoch",
    "rx_no_window",
    "rx_not_ip",
    "rx_gso",
    "rx_error",
    "pass_control",
    "pass_malformed",
    "pass_not_on_route",
    "pass_hop_limit",
    "pass_no_neighbor",
    "pass_user_mode",
    "tx_packets",
    "tx_encapsulated",
    "tx_copies",
    "tx_segmented",
    "tx_no_path",
    "tx_too_big",
    "tx_no_neighbor",
    "tx_error",
    "pass_no_session",
    "pass_not_v4",
    "tx_checksummed",
    "rx_routed",
    "tree_marked",
    "tree_forwarded",
    "tree_copies",
    "tree_delivered",
    "pass_not_on_tree",
    "pass_fragment",
    "pass_tree_ttl",
    "rx_stranger",
    "rx_wrong_hop",
];

/// Index of the counter named `name` in [`STATS`].
pub fn stat(name: &str) -> Option<usize> {
    STATS.iter().position(|s| *s == name)
}

// SAFETY: every type above is `repr(C)`, `Copy`, made of integers and
// arrays of integers only, with explicit padding fields: any bit pattern
// is a valid value and none has uninitialised bytes.
unsafe impl aya::Pod for Settings {}
unsafe impl aya::Pod for Neighbor {}
unsafe impl aya::Pod for SenderKey {}
unsafe impl aya::Pod for Sender {}
unsafe impl aya::Pod for PrefixAddr {}
unsafe impl aya::Pod for Prefix {}
unsafe impl aya::Pod for Ruleset {}
unsafe impl aya::Pod for SessionKey {}
unsafe impl aya::Pod for Session {}
unsafe impl aya::Pod for Seq {}
unsafe impl aya::Pod for WindowKey {}
unsafe impl aya::Pod for Window {}
unsafe impl aya::Pod for TreeKey {}
unsafe impl aya::Pod for Tree {}
