/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * braid's kernel data path: tree mode, which adds no byte. A packet
 * entering the mesh is marked (the entry point's id in its IPv4
 * identification, the reserved flag bit set: see datapath.h) and sent to
 * each next hop of the entry point's tree in `trees`; a router forwards a
 * marked packet the same way and delivers it, mark cleared, to the
 * clients it serves.
 */
#ifndef BRAID_DATAPATH_TREES_H
#define BRAID_DATAPATH_TREES_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include "datapath_encap.h"
#include "datapath_maps.h"

// Rewrites the 16-bit word at `off` (the IPv4 header at `ip_off`) from
// `before` to `after`, its checksum with it.
static __always_inline int ip_word(struct __sk_buff *skb, __u32 ip_off, __u32 off,
				   __be16 before, __be16 after)
{
	if (bpf_skb_store_bytes(skb, ip_off + off, &after, 2, 0))
		return -1;
	return bpf_l3_csum_replace(skb, ip_off + __builtin_offsetof(struct iphdr, check), before,
				   after, 2);
}

// Sends a copy of the frame (an Ethernet header in front) to each next
// hop of `t` but the last, which gets the frame itself unless `keep`
// (the caller still needs it). Returns the verdict for the frame: a
// redirect to the last hop, or -1 when it is kept (or no hop was known).
static __always_inline int tree_send(struct __sk_buff *skb, const struct braid_tree *t, int keep)
{
	__u32 n = t->n_hops;
	if (n > BRAID_TREE_HOPS)
		n = BRAID_TREE_HOPS;
	int last = -1;
	for (int i = 0; i < BRAID_TREE_HOPS; i++) {
		if (i >= n)
			break;
		__u16 id = t->hops[i];
		struct braid_neighbor *nb = bpf_map_lookup_elem(&neighbors, &id);
		if (!nb) {
			count(BRAID_PASS_NO_NEIGHBOR);
			continue;
		}
		if (!keep && i + 1 == n) {
			last = i;
			break;
		}
		// A clone goes straight out, with the neighbor's link address
		// from the kernel's tables.
		if (clone_to(skb, nb, 0, BRAID_PASS_NO_NEIGHBOR))
			continue;
		count(BRAID_TREE_COPIES);
	}
	if (last < 0)
		return -1;
	__u16 id = t->hops[last & (BRAID_TREE_HOPS - 1)];
	struct braid_neighbor *nb = bpf_map_lookup_elem(&neighbors, &id);
	if (!nb)
		return -1;
	// bpf_redirect_neigh takes the Ethernet header off and puts the
	// neighbor's on: it only must not look like multicast.
	struct ethhdr e = {.h_proto = bpf_htons(ETH_P_IP)};
	if (bpf_skb_store_bytes(skb, 0, &e, sizeof(e), 0))
		return -1;
	count(BRAID_TREE_COPIES);
	struct bpf_redir_neigh to = {.nh_family = AF_INET, .ipv4_nh = nb->addr_be};
	return bpf_redirect_neigh(nb->ifindex, &to, sizeof(to), 0);
}

// A marked packet from a neighbor (the Ethernet frame at tc ingress):
// copies to this router's next hops on its entry point's tree (TTL
// decremented, as a router does), and the client's own copy, mark
// cleared, to the stack when this router serves it. Without an entry here
// (the databases differ for a moment, or this router's tables lag), or
// with the TTL spent, the mark is cleared and the stack routes it (into
// the mesh again through the TUN device, or an ICMP error).
static __always_inline int tree_rx(struct __sk_buff *skb, struct iphdr *ip)
{
	__u16 entry = bpf_ntohs(ip->id);
	struct braid_tree_key key = {.entry = entry, .dst_be = ip->daddr};
	__be16 frag = ip->frag_off;
	__be16 unmarked = frag & ~bpf_htons(BRAID_TREE_MARK);
	__be16 ttl_word = *(__be16 *)&ip->ttl;
	__u8 ttl = ip->ttl;
	struct braid_tree *t = bpf_map_lookup_elem(&trees, &key);
	int forward = t && t->n_hops > 0 && ttl > 1;
	if (!t || (t->n_hops > 0 && ttl <= 1)) {
		count(t ? BRAID_PASS_TREE_TTL : BRAID_PASS_NOT_ON_TREE);
		if (ip_word(skb, ETH_HLEN, __builtin_offsetof(struct iphdr, frag_off), frag, unmarked))
			return TC_ACT_SHOT;
		return TC_ACT_UNSPEC;
	}
	int deliver = t->deliver;
	if (forward) {
		struct iphdr dec = *ip;
		dec.ttl = ttl - 1;
		__be16 ttl_after = *(__be16 *)&dec.ttl;
		if (ip_word(skb, ETH_HLEN, __builtin_offsetof(struct iphdr, ttl), ttl_word, ttl_after))
			return TC_ACT_SHOT;
		count(BRAID_TREE_FORWARDED);
		int r = tree_send(skb, t, deliver);
		if (!deliver)
			return r < 0 ? TC_ACT_SHOT : r;
		// The client's copy leaves as it came (the stack decrements).
		if (ip_word(skb, ETH_HLEN, __builtin_offsetof(struct iphdr, ttl), ttl_after, ttl_word))
			return TC_ACT_SHOT;
	}
	if (!deliver)
		return TC_ACT_SHOT;
	if (ip_word(skb, ETH_HLEN, __builtin_offsetof(struct iphdr, frag_off), frag, unmarked))
		return TC_ACT_SHOT;
	count(BRAID_TREE_DELIVERED);
	return TC_ACT_UNSPEC;
}

#endif
