/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * braid's kernel data path: its maps (layouts in datapath.h, sizes from
 * crates/bpf/src/constants.rs through braid_limits.h; the loader sizes
 * `neighbors`, `sessions`, `seqs` and `windows` to the node's limits) and
 * the two accessors every program uses: the settings in force and the
 * counters.
 */
#ifndef BRAID_DATAPATH_MAPS_H
#define BRAID_DATAPATH_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "datapath.h"

// The settings, double-buffered: the daemon writes the slot not in use,
// then names it in `settings_slot`; a program reads the slot named. Array
// lookups are inlined (a hash lookup per packet at every router was not
// free), and a program never reads a slot while it is written unless two
// writes land within one run of it (writes are seconds apart: start and
// reload). A slot never written is zeros: every program lets everything
// through.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BRAID_SETTINGS_SLOTS);
	__type(key, __u32);
	__type(value, struct braid_settings);
} settings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} settings_slot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BRAID_MAX_NEIGHBORS);
	__type(key, __u16);
	__type(value, struct braid_neighbor);
} neighbors SEC(".maps");

// Our underlay addresses (value: the interface's index).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BRAID_MAX_LOCALS);
	__type(key, __u32);
	__type(value, __u32);
} locals SEC(".maps");

// Clients (IPv4 source addresses, network order) whose packets the
// egress leaves to user space, where copies of a client's packet that
// entered the mesh at two access points are caught (value unused).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BRAID_MAX_COPY_SOURCES);
	__type(key, __u32);
	__type(value, __u8);
} copy_sources SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BRAID_MAX_COPY_SOURCES);
	__type(key, struct braid_addr6);
	__type(value, __u8);
} copy_sources6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BRAID_MAX_SENDERS);
	__type(key, struct braid_sender_key);
	__type(value, struct braid_sender);
} senders SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BRAID_MAX_PREFIXES);
	__type(key, struct braid_prefix_key);
	__type(value, struct braid_prefix);
} prefixes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BRAID_MAX_PREFIXES);
	__type(key, struct braid_prefix6_key);
	__type(value, struct braid_prefix);
} prefixes6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct braid_ruleset);
} ruleset SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BRAID_MAX_SESSIONS);
	__type(key, struct braid_session_key);
	__type(value, struct braid_session);
} sessions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BRAID_MAX_SESSIONS);
	__type(key, struct braid_session_key);
	__type(value, struct braid_seq);
} seqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BRAID_MAX_SESSIONS);
	__type(key, struct braid_window_key);
	__type(value, struct braid_window);
} windows SEC(".maps");

// A zeroed window: the value a new session's window starts from (too big
// for the stack; plain bytes, as a lock may not be read).
struct blank_window {
	__u8 bytes[sizeof(struct braid_window)];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct blank_window);
} blank SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BRAID_MAX_TREES);
	__type(key, struct braid_tree_key);
	__type(value, struct braid_tree);
} trees SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BRAID_STATS);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void count(__u32 what)
{
	__u64 *c = bpf_map_lookup_elem(&stats, &what);
	if (c)
		*c += 1;
}

static __always_inline struct braid_settings *get_settings(void)
{
	__u32 zero = 0;
	__u32 *slot = bpf_map_lookup_elem(&settings_slot, &zero);
	if (!slot)
		return 0;
	__u32 i = *slot & 1;
	return bpf_map_lookup_elem(&settings, &i);
}

#endif
