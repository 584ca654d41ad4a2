/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * braid's kernel data path: the classifier, as
 * braid_proto::classify::Classifier::classify for IPv4 and IPv6 packets
 * (the rules in `ruleset`, compiled by crates/bpf/src/compile.rs).
 */
#ifndef BRAID_DATAPATH_CLASSIFY_H
#define BRAID_DATAPATH_CLASSIFY_H

#include "datapath_maps.h"
#include "datapath_parsing.h"

static __always_inline int in_ranges(const struct braid_port_range *r, __u8 n, __u16 port_)
{
	if (n == 0)
		return 1;
#pragma unroll
	for (int i = 0; i < BRAID_RULE_PORTS; i++)
		if (i < n && r[i].lo <= port_ && port_ <= r[i].hi)
			return 1;
	return 0;
}

// Whether the IPv6 destination `dst` lies in the rule's prefix `i`.
static __always_inline int in_prefix6(const struct braid_rule *r, int i, const __u32 *dst)
{
	int hit = 1;
#pragma unroll
	for (int w = 0; w < 4; w++)
		if ((dst[w] & r->mask6_be[i][w]) != r->prefix6_be[i][w])
			hit = 0;
	return hit;
}

static __always_inline int rule_matches(const struct braid_rule *r, const struct user_packet *p)
{
	if (p->v6 ? r->never6 : r->never)
		return 0;
	if (!(r->dscp & (1ULL << (p->dscp & 63))))
		return 0;
	if (!(r->protocols[(p->protocol >> 6) & 3] & (1ULL << (p->protocol & 63))))
		return 0;
	if (p->v6 && r->n_prefixes6) {
		int hit = 0;
#pragma unroll
		for (int i = 0; i < BRAID_RULE_PREFIXES; i++)
			if (i < r->n_prefixes6 && in_prefix6(r, i, p->dst6_be))
				hit = 1;
		if (!hit)
			return 0;
	}
	if (!p->v6 && r->n_prefixes) {
		int hit = 0;
#pragma unroll
		for (int i = 0; i < BRAID_RULE_PREFIXES; i++)
			if (i < r->n_prefixes && (p->dst_be & r->mask_be[i]) == r->prefix_be[i])
				hit = 1;
		if (!hit)
			return 0;
	}
	return in_ranges(r->src_ports, r->n_src_ports, p->src_port) &&
	       in_ranges(r->dst_ports, r->n_dst_ports, p->dst_port);
}

// classify(): the first rule that matches decides; none is class 0.
// Urgent unless a rule says otherwise: DSCP EF (46) and CS6 (48).
static __always_inline void classify(const struct user_packet *p, __u8 *class_id, int *urgent)
{
	__u32 zero = 0;
	struct braid_ruleset *rs = bpf_map_lookup_elem(&ruleset, &zero);
	*class_id = 0;
	*urgent = p->dscp == 46 || p->dscp == 48;
	if (!rs)
		return;
	for (int i = 0; i < BRAID_RULES; i++) {
		if (i >= rs->count)
			break;
		const struct braid_rule *r = &rs->rules[i];
		if (rule_matches(r, p)) {
			*class_id = r->class_id;
			if (r->urgent)
				*urgent = r->urgent == 2;
			return;
		}
	}
}

#endif
