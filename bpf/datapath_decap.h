/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * braid's kernel data path: delivery at the egress. A data packet that
 * passes its session's dedup window loses its underlay and braid header
 * and goes into the TUN device's receive side, as if user space had
 * written it there, or (BRAID_ROUTE_DELIVERED) straight to its next hop.
 */
#ifndef BRAID_DATAPATH_DECAP_H
#define BRAID_DATAPATH_DECAP_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include "datapath_dedup.h"

// The same for an IPv6 packet: hop limit decremented (IPv6 has no header
// checksum); a hop limit of 1, no route other than the TUN device, too
// big, or no resolved neighbor returns -1 (through the TUN device, where
// the stack answers with ICMPv6 where it must).
static __always_inline int route_delivered6(struct __sk_buff *skb, struct braid_settings *s,
					    struct ipv6hdr *ip6, void *end)
{
	if ((void *)(ip6 + 1) > end || ip6->hop_limit <= 1)
		return -1;
	struct bpf_fib_lookup fib = {
		.family = AF_INET6,
		.l4_protocol = ip6->nexthdr,
		.tot_len = bpf_ntohs(ip6->payload_len) + sizeof(struct ipv6hdr),
		.ifindex = s->tun_ifindex,
	};
	fib.flowinfo = *(__be32 *)ip6 & bpf_htonl(0x0fffffff);
	__builtin_memcpy(fib.ipv6_src, &ip6->saddr, 16);
	__builtin_memcpy(fib.ipv6_dst, &ip6->daddr, 16);
	if (bpf_fib_lookup(skb, &fib, sizeof(fib), 0) != BPF_FIB_LKUP_RET_SUCCESS ||
	    fib.ifindex == s->tun_ifindex)
		return -1;
	ip6->hop_limit--;
	struct bpf_redir_neigh to = {.nh_family = AF_INET6};
	__builtin_memcpy(to.ipv6_nh, fib.ipv6_dst, 16);
	count(BRAID_RX_ROUTED);
	return bpf_redirect_neigh(fib.ifindex, &to, sizeof(to), 0);
}

// A delivered IPv4 packet (behind the Ethernet header) sent straight to
// its next hop when the kernel's routing table has one on another
// interface: what the stack would do with it after the TUN device (TTL
// decremented, the neighbor table's link address), without the second
// pass through the stack. Anything else (this router's own address, the
// TUN device, IP options, TTL 1, too big, an unresolved neighbor, no
// route) returns -1: it goes through the TUN device as before. Skips the
// FORWARD chain of netfilter, as transit does.
static __always_inline int route_delivered(struct __sk_buff *skb, struct braid_settings *s)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u8 *first = data + ETH_HLEN;
	if ((void *)(first + 1) > end)
		return -1;
	if ((*first >> 4) == 6)
		return route_delivered6(skb, s, (struct ipv6hdr *)first, end);
	struct iphdr *ip = (void *)first;
	if ((void *)(ip + 1) > end || ip->version != 4 || ip->ihl != 5 || ip->ttl <= 1)
		return -1;
	struct bpf_fib_lookup fib = {
		.family = AF_INET,
		.tos = ip->tos,
		.l4_protocol = ip->protocol,
		.tot_len = bpf_ntohs(ip->tot_len),
		.ipv4_src = ip->saddr,
		.ipv4_dst = ip->daddr,
		.ifindex = s->tun_ifindex,
	};
	if (bpf_fib_lookup(skb, &fib, sizeof(fib), 0) != BPF_FIB_LKUP_RET_SUCCESS ||
	    fib.ifindex == s->tun_ifindex)
		return -1;
	// The TTL as ip_decrease_ttl does it, checksum updated with it.
	__be16 before = *(__be16 *)&ip->ttl;
	ip->ttl--;
	__be16 after = *(__be16 *)&ip->ttl;
	bpf_l3_csum_replace(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, check), before, after, 2);
	struct bpf_redir_neigh to = {.nh_family = AF_INET, .ipv4_nh = fib.ipv4_dst};
	count(BRAID_RX_ROUTED);
	return bpf_redirect_neigh(fib.ifindex, &to, sizeof(to), 0);
}

// The egress's step for the data packet `h` (its header at RX_BRAID):
// dedup, then the user's packet delivered.
static __always_inline int deliver(struct __sk_buff *skb, struct braid_settings *s,
				   const struct data_header *h)
{
	int v = dedup(s, h);
	if (v != GO_ON)
		return v;
	__u32 header_len = h->header_len;
	// Strip the underlay and the braid header: what is left is the user's
	// packet behind the Ethernet header, handed to the TUN device's
	// receive side (the same place user space would write it).
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u32 inner = RX_BRAID + (header_len & 0xff);
	__u8 *first = data + inner;
	if ((void *)(first + 1) > end) {
		count(BRAID_RX_NOT_IP);
		return TC_ACT_SHOT;
	}
	__u64 flags = 0;
	__u8 version = *first >> 4;
	if (version == 6)
		flags = BPF_F_ADJ_ROOM_DECAP_L3_IPV6;
	else if (version != 4) {
		count(BRAID_RX_NOT_IP);
		return TC_ACT_SHOT;
	}
	__s32 strip = UNDERLAY_LEN + (header_len & 0xff);
	if (bpf_skb_adjust_room(skb, -strip, BPF_ADJ_ROOM_MAC, flags)) {
		count(BRAID_RX_ERROR);
		return TC_ACT_SHOT;
	}
	count(BRAID_RX_DELIVERED);
	if (s->flags & BRAID_ROUTE_DELIVERED) {
		int r = route_delivered(skb, s);
		if (r >= 0)
			return r;
	}
	return bpf_redirect(s->tun_ifindex, BPF_F_INGRESS);
}

#endif
