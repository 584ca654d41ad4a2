/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * braid's kernel data path: the layout of every map it shares with the
 * daemon. crates/bpf/src/maps.rs mirrors each struct byte for byte (its
 * tests check the sizes against the sizes below); change both together.
 * All multi-byte fields are host order except where named `_be`.
 */
#ifndef BRAID_DATAPATH_H
#define BRAID_DATAPATH_H

#include <linux/types.h>
#include <linux/bpf.h>

/* The flags of `settings` (BRAID_TRANSIT, BRAID_EGRESS, BRAID_INGRESS,
 * BRAID_FINISH_CHECKSUMS, BRAID_ROUTE_DELIVERED, BRAID_TREES,
 * BRAID_TREE_ENTRY, BRAID_AUTHENTICATED), the limits of what a kernel
 * session carries (a session beyond them stays on the user-space path:
 * the daemon decides) and the maps' sizes are generated when braid is
 * built from crates/bpf/src/constants.rs, where each is explained. */
#include "braid_limits.h"

/* Two slots, keys 0 and 1 (double-buffered): the daemon writes the slot
 * not in use, then names it in `settings_slot` (see datapath_maps.h). */
struct braid_settings {
	__u32 flags;
	__u32 window_mask;        /* dedup window size - 1 (63 ... 8191) */
	__u32 tun_ifindex;        /* where delivered packets enter the host */
	__u32 segmenter_ifindex;  /* veth whose transmit segments GSO packets */
	__u8 hop_limit;           /* the ingress's data header hop limit */
	__u8 pad[7];
};

/* neighbors: node id -> where it is. */
struct braid_neighbor {
	__u32 ifindex;
	__u32 addr_be;            /* its underlay IPv4 address */
	__u32 src_be;             /* ours on that interface */
	__u32 pad;
};

/* senders: (interface, underlay IPv4 source) -> the authenticated
 * neighbor that sends from there (learnt by the daemon from control
 * messages whose MAC checked). With BRAID_AUTHENTICATED, braid_rx drops
 * data from anywhere else, and data whose route names another node
 * before this one. */
struct braid_sender_key {
	__u32 ifindex;
	__u32 addr_be;
};

struct braid_sender {
	__u16 id;
	__u16 pad;
};

/* prefixes (LPM trie): IPv4 destination -> egress node. */
struct braid_prefix_key {
	__u32 prefixlen;
	__u32 addr_be;
};

/* prefixes6 (LPM trie): IPv6 destination -> egress node (braid_prefix). */
struct braid_prefix6_key {
	__u32 prefixlen;
	__u32 addr_be[4];
};

/* copy_sources6 key: an IPv6 client's address. */
struct braid_addr6 {
	__u32 addr_be[4];
};

struct braid_prefix {
	__u16 egress;
	__u16 pad;
};

struct braid_port_range {
	__u16 lo;
	__u16 hi;
};

/* A class rule, as braid_proto::classify::ClassRule: every non-empty
 * list must match; empty lists match anything. The destination prefixes
 * are kept per IP family: a rule that lists prefixes of one family only
 * matches no packet of the other (`never`, `never6`). */
struct braid_rule {
	__u8 class_id;
	__u8 urgent;              /* 0: by DSCP (EF, CS6), 1: no, 2: yes */
	__u8 n_prefixes;          /* 0: any destination */
	__u8 n_src_ports;         /* 0: any */
	__u8 n_dst_ports;         /* 0: any */
	__u8 never;               /* lists only IPv6 prefixes: no IPv4 match */
	__u8 n_prefixes6;         /* IPv6 destination prefixes */
	__u8 never6;              /* lists only IPv4 prefixes: no IPv6 match */
	__u64 dscp;               /* bit d set: DSCP d matches (all ones: any) */
	__u64 protocols[4];       /* bit p set: protocol p matches */
	__u32 prefix_be[BRAID_RULE_PREFIXES];
	__u32 mask_be[BRAID_RULE_PREFIXES];
	struct braid_port_range src_ports[BRAID_RULE_PORTS];
	struct braid_port_range dst_ports[BRAID_RULE_PORTS];
	__u32 prefix6_be[BRAID_RULE_PREFIXES][4];
	__u32 mask6_be[BRAID_RULE_PREFIXES][4];
};

/* One entry, key 0: the whole classifier, replaced at once. */
struct braid_ruleset {
	__u32 count;
	__u32 pad;
	struct braid_rule rules[BRAID_RULES];
};

struct braid_session_key {
	__u16 egress;
	__u8 class_id;
	__u8 pad;
};

struct braid_kpath {
	__u16 first_hop;          /* the neighbor the copy goes to */
	__u8 slot;                /* the path index in the header */
	__u8 route_len;           /* transit nodes */
	__u16 route[BRAID_KTRANSIT];
};

/* sessions: (egress, class) -> how the kernel encodes it. Replaced whole
 * on every change (a hash map without preallocation: readers see the
 * old entry or the new one, never a mix). */
struct braid_session {
	__u8 mode;                /* wire code: 0 single, 1 stripe, 2 mirror */
	__u8 n_paths;
	__u8 copies;              /* mirror: k (at most n_paths) */
	__u8 pinned;              /* stripe: flows stay on one path */
	__u32 epoch;
	__u32 total_weight;       /* stripe:pinned: sum of weight[] */
	__u32 weight[BRAID_KPATHS];
	__u8 stripe[BRAID_STRIPE_SLOTS]; /* path (0..n_paths) per seq % 64 */
	__u8 order[BRAID_KPATHS]; /* mirror: paths by header length */
	struct braid_kpath paths[BRAID_KPATHS];
};

/* seqs: (egress, class) -> the session's counter and what it sent.
 * Written by the daemon once when the kernel takes the session; then
 * only the kernel adds (atomically). */
struct braid_seq {
	__u32 next;
	__u32 pad;
	__u64 packets;
	__u64 last_ns;
	__u64 sent[BRAID_KPATHS];
};

/* Tree mode in the kernel adds no byte (seed 000): inside the mesh a
 * packet is the user's own IPv4 packet, its identification field holding
 * the entry point's node id and the reserved flag bit (RFC 791: "must be
 * zero"; docs/protocol.md says why not the TOS cost bit) set. The access
 * point clears the bit before the packet leaves the mesh (BRAID_TREE_MARK;
 * BRAID_TREE_HOPS next hops per tree entry). */

/* trees: (entry point, destination client) -> this router's part of the
 * entry point's tree: a copy to each next hop, and whether this router
 * serves the client (delivers a copy to it). Replaced whole. */
struct braid_tree_key {
	__u16 entry;
	__u16 pad;
	__u32 dst_be;
};

struct braid_tree {
	__u8 n_hops;
	__u8 deliver;
	__u16 hops[BRAID_TREE_HOPS]; /* neighbor node ids (see `neighbors`) */
	__u16 pad;
};

struct braid_window_key {
	__u16 ingress;
	__u8 class_id;
	__u8 pad;
};

/* windows: (ingress, class) -> the egress's dedup state, the same
 * semantics as braid_proto::redundancy::dedup and egress (epochs). Up to
 * BRAID_MAX_WINDOW numbers, in words of 64 tagged with the block (seq /
 * 64) they hold; a window of W numbers touches at most W/64 + 1 blocks,
 * so with BRAID_WINDOW_WORDS = that many words no two blocks in the
 * window share one, and a word holding another block is clear: the
 * window slides without clearing anything. */
struct braid_window {
	struct bpf_spin_lock lock;
	__u32 epoch;
	__u32 retired;
	__u32 highest;
	/* Packets of another epoch, or numbers too far ahead, passed up to
	 * user space, which holds them and asks the ingress for its proof
	 * (docs/protocol.md "Sessions and restarts"); on the proof, the
	 * daemon rewrites this window. */
	__u32 unproven;
	__u8 has_epoch;
	__u8 has_retired;
	__u8 started;
	__u8 pad;
	__u64 last_ns;
	__u64 delivered;
	__u64 duplicates;
	__u64 too_old;
	__u64 too_far_ahead;
	__u64 old_epoch;
	__u64 epoch_changes;
	__u32 received[BRAID_MAX_PATH_INDEX];
	/* Per path, the sequence number of the newest packet of the current
	 * epoch that arrived on it, and when (the coarse clock; 0: none yet):
	 * the path reports' `latest` and `age` (docs/protocol.md). */
	__u32 latest[BRAID_MAX_PATH_INDEX];
	__u64 latest_ns[BRAID_MAX_PATH_INDEX];
	__u32 tags[BRAID_WINDOW_WORDS + 1];
	__u64 bits[BRAID_WINDOW_WORDS];
};

/* stats (per-CPU array): what the programs did, by index. */
enum braid_stat {
	/* braid_rx: datagrams on the braid port of an interface */
	BRAID_RX_DATA,            /* data packets looked at */
	BRAID_RX_FORWARDED,       /* transit: sent on to the next hop */
	BRAID_RX_DELIVERED,       /* egress: first copy, delivered */
	BRAID_RX_DUPLICATE,       /* egress: copy already delivered, dropped */
	BRAID_RX_TOO_OLD,         /* egress: older than the window, dropped */
	BRAID_RX_TOO_FAR_AHEAD,   /* egress: too far ahead, to user space (its proof) */
	BRAID_RX_OLD_EPOCH,       /* egress: late copy of a replaced epoch */
	BRAID_RX_NO_WINDOW,       /* egress: window table full, dropped */
	BRAID_RX_NOT_IP,          /* egress: payload not IP, dropped */
	BRAID_RX_GSO,             /* a GSO datagram: dropped (see docs) */
	BRAID_RX_ERROR,           /* a helper failed: dropped */
	BRAID_PASS_CONTROL,       /* control message: to user space */
	BRAID_PASS_MALFORMED,     /* header does not parse: to user space */
	BRAID_PASS_NOT_ON_ROUTE,  /* to user space (which counts it) */
	BRAID_PASS_HOP_LIMIT_EXCEEDED,     /* to user space (which counts it) */
	BRAID_PASS_NO_NEIGHBOR,   /* next hop unknown here: to user space */
	BRAID_PASS_USER_MODE,     /* egress: a mode the kernel leaves to user space */
	/* braid_tx: user packets leaving the host into the mesh */
	BRAID_TX_PACKETS,         /* IP packets looked at */
	BRAID_TX_ENCAPSULATED,    /* packets encoded by the kernel */
	BRAID_TX_COPIES,          /* copies sent (mirror: k per packet) */
	BRAID_TX_SEGMENTED,       /* GSO packets sent through the segmenter */
	BRAID_TX_NO_PATH,         /* kernel session without a path: dropped */
	BRAID_TX_TOO_BIG,         /* larger than the interface MTU: dropped */
	BRAID_TX_NO_NEIGHBOR,     /* first hop unknown: copy dropped */
	BRAID_TX_ERROR,           /* a helper failed: dropped */
	BRAID_PASS_NO_SESSION,    /* no kernel session: to user space */
	BRAID_PASS_NOT_IP,        /* neither IPv4 nor IPv6: to user space */
	BRAID_TX_CHECKSUMMED,     /* unfinished checksum: through the segmenter */
	BRAID_RX_ROUTED,          /* egress: delivered straight to its next hop */
	/* tree mode (zero-byte marking) */
	BRAID_TREE_MARKED,        /* entry: packets marked and sent on the tree */
	BRAID_TREE_FORWARDED,     /* marked packets this router sent on */
	BRAID_TREE_COPIES,        /* copies sent (one per next hop) */
	BRAID_TREE_DELIVERED,     /* access point: mark cleared, to the client */
	BRAID_PASS_NOT_ON_TREE,   /* marked, no entry here: mark cleared, to the stack */
	BRAID_PASS_FRAGMENT,      /* entry: a fragment, never marked: to user space */
	BRAID_PASS_TREE_TTL,      /* TTL ran out: mark cleared, to the stack (ICMP) */
	/* authentication (BRAID_AUTHENTICATED) */
	BRAID_RX_UNAUTHENTICATED,        /* data from no authenticated neighbor: dropped */
	BRAID_RX_WRONG_PREVIOUS_HOP,       /* route names another node before us: dropped */
	/* egress: another epoch than the window's, not proven: to user space */
	BRAID_PASS_UNPROVEN_EPOCH,
	/* egress: from a client of an access point, to user space (its copy filter) */
	BRAID_PASS_COPY_CHECK,
	/* ingress: IPv6 packets encoded by the kernel (of tx_encapsulated) */
	BRAID_TX_IPV6,
	/* transit: the route ends here at a waypoint: to user space, which routes it on */
	BRAID_PASS_WAYPOINT,
	BRAID_STATS
};

#endif
