//! The kernel data path's map layouts, byte for byte as `bpf/datapath.h`
//! declares them (the tests check every size against the object's own
//! map definitions). Plain data: what each field means is said there.
//! The flags, limits and map sizes are [`crate::constants`]' (re-exported
//! here, where the layouts use them).

use braid_proto::node::Counter;

pub use crate::constants::{
    AUTHENTICATED, EGRESS, FINISH_CHECKSUMS, INGRESS, KPATHS, KTRANSIT, MAX_SENDERS, MAX_TREES,
    MAX_WINDOW, PATH_INDICES, ROUTE_DELIVERED, RULES, RULE_PORTS, RULE_PREFIXES, STRIPE_SLOTS,
    TRANSIT, TREES, TREE_ENTRY, TREE_HOPS, TREE_MARK, WINDOW_WORDS,
};

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

/// `prefixes6` key (an LPM trie key's data part).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Prefix6Addr {
    pub addr_be: [u32; 4],
}

/// `copy_sources6` key: an IPv6 client's address.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Addr6 {
    pub addr_be: [u32; 4],
}

/// `prefixes` and `prefixes6` value.
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

/// One class rule.
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
    pub n_prefixes6: u8,
    /// The rule lists only IPv4 prefixes: it matches no IPv6 packet.
    pub never6: u8,
    pub dscp: u64,
    pub protocols: [u64; 4],
    pub prefix_be: [u32; RULE_PREFIXES],
    pub mask_be: [u32; RULE_PREFIXES],
    pub src_ports: [PortRange; RULE_PORTS],
    pub dst_ports: [PortRange; RULE_PORTS],
    pub prefix6_be: [[u32; 4]; RULE_PREFIXES],
    pub mask6_be: [[u32; 4]; RULE_PREFIXES],
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
    /// Packets of another epoch, or too far ahead, passed up to user
    /// space for its proof.
    pub unproven: u32,
    pub has_epoch: u8,
    pub has_retired: u8,
    pub started: u8,
    pub pad: u8,
    pub last_ns: u64,
    pub delivered: u64,
    pub duplicates: u64,
    pub too_old: u64,
    pub too_far_ahead: u64,
    pub old_epoch: u64,
    pub epoch_changes: u64,
    pub received: [u32; PATH_INDICES],
    /// Per path, the newest packet's sequence number of the current epoch.
    pub latest: [u32; PATH_INDICES],
    /// When it arrived (the programs' coarse clock; 0: none yet).
    pub latest_ns: [u64; PATH_INDICES],
    pub tags: [u32; WINDOW_WORDS + 1],
    pub bits: [u64; WINDOW_WORDS],
}

/// What the programs count (the `stats` map's indices), by name.
pub const STATS: [&str; 42] = [
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
    "pass_hop_limit_exceeded",
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
    "pass_not_ip",
    "tx_checksummed",
    "rx_routed",
    "tree_marked",
    "tree_forwarded",
    "tree_copies",
    "tree_delivered",
    "pass_not_on_tree",
    "pass_fragment",
    "pass_tree_ttl",
    "rx_unauthenticated",
    "rx_wrong_previous_hop",
    "pass_unproven_epoch",
    "pass_copy_check",
    "tx_ipv6",
    "pass_waypoint",
];

/// Index of the counter named `name` in [`STATS`].
pub fn stat(name: &str) -> Option<usize> {
    STATS.iter().position(|s| *s == name)
}

/// The kernel's counters of the refusals the node counts too: each is
/// named for the node's counter ([`Counter::name`]) after `rx_` (dropped
/// in the kernel) or `pass_` (handed to the node, which refuses it and
/// counts it there as well).
pub const REFUSAL_STATS: [(&str, Counter); 6] = [
    ("pass_malformed", Counter::Malformed),
    ("pass_not_on_route", Counter::NotOnRoute),
    ("pass_hop_limit_exceeded", Counter::HopLimitExceeded),
    ("pass_not_on_tree", Counter::NotOnTree),
    ("rx_unauthenticated", Counter::Unauthenticated),
    ("rx_wrong_previous_hop", Counter::WrongPreviousHop),
];

// SAFETY: every type above is `repr(C)`, `Copy`, made of integers and
// arrays of integers only, with explicit padding fields: any bit pattern
// is a valid value and none has uninitialised bytes.
unsafe impl aya::Pod for Settings {}
unsafe impl aya::Pod for Neighbor {}
unsafe impl aya::Pod for SenderKey {}
unsafe impl aya::Pod for Sender {}
unsafe impl aya::Pod for PrefixAddr {}
unsafe impl aya::Pod for Prefix {}
unsafe impl aya::Pod for Prefix6Addr {}
unsafe impl aya::Pod for Addr6 {}
unsafe impl aya::Pod for Ruleset {}
unsafe impl aya::Pod for SessionKey {}
unsafe impl aya::Pod for Session {}
unsafe impl aya::Pod for Seq {}
unsafe impl aya::Pod for WindowKey {}
unsafe impl aya::Pod for Window {}
unsafe impl aya::Pod for TreeKey {}
unsafe impl aya::Pod for Tree {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constants::{
        MAX_COPY_SOURCES, MAX_LOCALS, MAX_NEIGHBORS, MAX_PREFIXES, MAX_SESSIONS, SETTINGS_SLOTS,
    };
    use crate::objects::{missing, DATAPATH};
    use std::mem::size_of;

    #[test]
    fn refusal_counters_carry_the_nodes_names() {
        for (name, counter) in REFUSAL_STATS {
            assert!(stat(name).is_some(), "{name} is a kernel counter");
            let suffix = name
                .strip_prefix("rx_")
                .or_else(|| name.strip_prefix("pass_"))
                .unwrap_or(name);
            assert_eq!(suffix, counter.name(), "{name}");
        }
    }

    /// Every map's key and value size in the object, against the Rust
    /// mirror: a change to datapath.h without maps.rs fails here.
    #[test]
    fn map_layouts_match_the_object() {
        if missing().is_some() {
            eprintln!("skipped: braid was built without its eBPF objects");
            return;
        }
        let obj = aya_obj::Object::parse(DATAPATH).expect("the object parses");
        let size = |name: &str| {
            let m = obj.maps.get(name).unwrap_or_else(|| panic!("map {name}"));
            (m.key_size() as usize, m.value_size() as usize)
        };
        assert_eq!(size("settings"), (4, size_of::<Settings>()));
        assert_eq!(size("settings_slot"), (4, 4));
        assert_eq!(size("neighbors"), (2, size_of::<Neighbor>()));
        assert_eq!(size("locals"), (4, 4));
        assert_eq!(
            size("prefixes"),
            (4 + size_of::<PrefixAddr>(), size_of::<Prefix>())
        );
        assert_eq!(
            size("prefixes6"),
            (4 + size_of::<Prefix6Addr>(), size_of::<Prefix>())
        );
        assert_eq!(size("copy_sources6"), (size_of::<Addr6>(), 1));
        assert_eq!(size("ruleset"), (4, size_of::<Ruleset>()));
        assert_eq!(
            size("sessions"),
            (size_of::<SessionKey>(), size_of::<Session>())
        );
        assert_eq!(size("seqs"), (size_of::<SessionKey>(), size_of::<Seq>()));
        assert_eq!(
            size("windows"),
            (size_of::<WindowKey>(), size_of::<Window>())
        );
        assert_eq!(size("trees"), (size_of::<TreeKey>(), size_of::<Tree>()));
        assert_eq!(
            size("senders"),
            (size_of::<SenderKey>(), size_of::<Sender>())
        );
        let stats = obj.maps.get("stats").expect("stats map");
        assert_eq!(stats.max_entries() as usize, STATS.len());
    }

    /// Every map's number of entries in the object is the constant the
    /// daemon reads (the C maps take them from the generated header).
    #[test]
    fn map_sizes_are_the_constants() {
        if missing().is_some() {
            eprintln!("skipped: braid was built without its eBPF objects");
            return;
        }
        let obj = aya_obj::Object::parse(DATAPATH).expect("the object parses");
        let entries = |name: &str| {
            let m = obj.maps.get(name).unwrap_or_else(|| panic!("map {name}"));
            m.max_entries() as usize
        };
        assert_eq!(entries("settings"), SETTINGS_SLOTS);
        assert_eq!(entries("settings_slot"), 1);
        assert_eq!(entries("neighbors"), MAX_NEIGHBORS);
        assert_eq!(entries("locals"), MAX_LOCALS);
        assert_eq!(entries("copy_sources"), MAX_COPY_SOURCES);
        assert_eq!(entries("copy_sources6"), MAX_COPY_SOURCES);
        assert_eq!(entries("senders"), MAX_SENDERS);
        assert_eq!(entries("prefixes"), MAX_PREFIXES);
        assert_eq!(entries("prefixes6"), MAX_PREFIXES);
        assert_eq!(entries("ruleset"), 1);
        for map in ["sessions", "seqs", "windows"] {
            assert_eq!(entries(map), MAX_SESSIONS, "{map}");
        }
        assert_eq!(entries("trees"), MAX_TREES);
    }
}
