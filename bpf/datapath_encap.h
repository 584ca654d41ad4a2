/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * braid's kernel data path: the headers in front of a user's packet. For
 * the ingress, which paths a packet takes and, for each copy, the
 * underlay (Ethernet, IPv4, UDP) and braid data header built and written
 * in front of it, the copies cloned out and the last one redirected; GSO
 * packets and unfinished checksums sent through the segmenter first. For
 * transit, the underlay readdressed to the next hop and the route pointer
 * and hop limit updated in place.
 */
#ifndef BRAID_DATAPATH_ENCAP_H
#define BRAID_DATAPATH_ENCAP_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "datapath_consts.h"
#include "datapath_maps.h"

static __always_inline __u16 ip_checksum(struct iphdr *ip)
{
	__u32 sum = 0;
	__u16 *w = (__u16 *)ip;
#pragma unroll
	for (int i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

// Sends a clone of the frame (an Ethernet header in front) to neighbor
// `nb`, with its link address from the kernel's tables (the Ethernet
// header written with `store_flags`). 0 when sent; -1 when not, counted
// under `unresolved` when the kernel knows no route or link address for
// it, under BRAID_TX_ERROR when a helper failed.
static __always_inline int clone_to(struct __sk_buff *skb, const struct braid_neighbor *nb,
				    __u64 store_flags, __u32 unresolved)
{
	struct bpf_fib_lookup fib = {
		.family = AF_INET,
		.ifindex = nb->ifindex,
		.ipv4_src = nb->src_be,
		.ipv4_dst = nb->addr_be,
	};
	int r = bpf_fib_lookup(skb, &fib, sizeof(fib),
			       BPF_FIB_LOOKUP_DIRECT | BPF_FIB_LOOKUP_OUTPUT);
	if (r != BPF_FIB_LKUP_RET_SUCCESS) {
		count(unresolved);
		return -1;
	}
	struct ethhdr e = {.h_proto = bpf_htons(ETH_P_IP)};
	__builtin_memcpy(e.h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(e.h_source, fib.smac, ETH_ALEN);
	if (bpf_skb_store_bytes(skb, 0, &e, sizeof(e), store_flags) ||
	    bpf_clone_redirect(skb, fib.ifindex, 0)) {
		count(BRAID_TX_ERROR);
		return -1;
	}
	return 0;
}

// Sends a bare IP packet through the segmenter veth (`ifindex`), whose
// transmit side cuts GSO packets up and finishes checksums; its far end
// runs the program again on what comes out. Counted under `stat`.
static __always_inline int to_segmenter(struct __sk_buff *skb, __u32 ifindex, __u32 stat)
{
	__be16 proto = skb->protocol;
	if (bpf_skb_change_head(skb, ETH_HLEN, 0)) {
		count(BRAID_TX_ERROR);
		return TC_ACT_SHOT;
	}
	struct ethhdr e = {.h_proto = proto};
	bpf_skb_store_bytes(skb, 0, &e, sizeof(e), 0);
	count(stat);
	return bpf_redirect(ifindex, 0);
}

// Readdresses a transit packet to its next hop `nb`: the underlay from
// us to it, and in the braid header (at RX_BRAID) route pointer `new_ptr`
// and hop limit `hop - 1`. Then redirected to the neighbor.
//
// The UDP checksum is kept right, not zeroed, for every state the skb
// can be in: its pseudo-header part follows the new addresses and its
// payload part the braid header's new bytes (bpf_l4_csum_replace does
// each as the skb's state needs: a CHECKSUM_PARTIAL skb's field holds
// only the pseudo-header sum, which the device or the stack finishes
// later; a zero checksum stays zero). Zeroing it was wrong for a
// CHECKSUM_PARTIAL skb: a device without checksum offload further on
// finished it from the zero, and a daemon behind that link (an egress in
// user space, with re-ordering on) got every packet with a bad checksum.
// The underlay's IPv4 header is written with its own checksum, which
// keeps the skb's CHECKSUM_COMPLETE sum right; the braid header's bytes
// and the UDP checksum change by amounts that cancel in that sum.
static __always_inline int readdress(struct __sk_buff *skb, const struct iphdr *ip,
				     const struct udphdr *udp, const __u8 *b,
				     const struct braid_neighbor *nb, __u32 new_ptr, __u8 hop)
{
	(void)udp;
	struct iphdr under = *ip;
	__be32 old_src = ip->saddr, old_dst = ip->daddr;
	under.saddr = nb->src_be;
	under.daddr = nb->addr_be;
	under.ttl = UNDERLAY_TTL;
	under.check = 0;
	under.check = ip_checksum(&under);
	// The braid header's first 16 bytes (4-byte aligned from the UDP
	// header's start, as the checksum's 16-bit words are), before and
	// after: the route pointer (byte 3) and the hop limit (byte 14).
	__u8 before[16], after[16];
	__builtin_memcpy(before, b, sizeof(before));
	__builtin_memcpy(after, b, sizeof(after));
	after[BRAID_DATA_OFF_RLEN_RPTR] =
		(b[BRAID_DATA_OFF_RLEN_RPTR] & ~ROUTE_FIELD) | (new_ptr & ROUTE_FIELD);
	after[BRAID_DATA_OFF_HOP_LIMIT] = hop - 1;
	__u32 ifindex = nb->ifindex;
	__u32 nh = nb->addr_be;
	const __u32 check = ETH_HLEN + sizeof(struct iphdr) + __builtin_offsetof(struct udphdr, check);
	const __u64 pseudo = BPF_F_PSEUDO_HDR | BPF_F_MARK_MANGLED_0 | sizeof(__be32);
	__s64 diff = bpf_csum_diff((__be32 *)before, sizeof(before), (__be32 *)after,
				   sizeof(after), 0);
	if (diff < 0 ||
	    bpf_skb_store_bytes(skb, ETH_HLEN, &under, sizeof(under), BPF_F_RECOMPUTE_CSUM) ||
	    bpf_l4_csum_replace(skb, check, old_src, under.saddr, pseudo) ||
	    bpf_l4_csum_replace(skb, check, old_dst, under.daddr, pseudo) ||
	    bpf_skb_store_bytes(skb, RX_BRAID, after, sizeof(after), 0) ||
	    bpf_l4_csum_replace(skb, check, 0, diff, BPF_F_MARK_MANGLED_0)) {
		count(BRAID_RX_ERROR);
		return TC_ACT_SHOT;
	}
	struct bpf_redir_neigh to = {.nh_family = AF_INET, .ipv4_nh = nh};
	count(BRAID_RX_FORWARDED);
	return bpf_redirect_neigh(ifindex, &to, sizeof(to), 0);
}

// What the ingress encodes a user packet with (encode, in datapath.c).
struct encoding {
	const struct braid_session *s;
	struct braid_seq *counter;
	__u16 egress;
	__u8 class_id;
	int urgent;
	__u32 seq;
	__u32 l2;                 /* where the user packet starts */
};

// The path a packet sent once takes: stripe picks it from the weighted
// table by the sequence number, or (pinned) by the flow's hash so that a
// flow stays on one path; single takes its only path.
static __always_inline __u32 first_path(const struct braid_session *s, __u64 flow_hash,
					__u32 seq, __u32 n)
{
	__u32 first = 0;
	if (s->mode != BRAID_MODE_STRIPE)
		return first;
	if (s->pinned && s->total_weight) {
		__u64 point = flow_hash % s->total_weight;
		for (int i = 0; i < BRAID_KPATHS; i++) {
			if (i >= n)
				break;
			if (point < s->weight[i]) {
				first = i;
				break;
			}
			point -= s->weight[i];
		}
	} else {
		first = s->stripe[seq % BRAID_STRIPE_SLOTS] % BRAID_KPATHS;
	}
	return first;
}

// How many copies of a packet go out: mirror's k (at least one, at most
// the session's `n` paths); one for the other modes.
static __always_inline __u32 copies_of(const struct braid_session *s, __u32 n)
{
	__u32 copies = 1;
	if (s->mode == BRAID_MODE_MIRROR) {
		copies = s->copies;
		if (copies > n)
			copies = n;
		if (copies == 0)
			copies = 1;
	}
	return copies;
}

// The underlay and braid header of one copy, built on the stack.
#define OUTER_MAX (ETH_HLEN + UNDERLAY_LEN + KERNEL_HEADER)
struct outer {
	__u8 bytes[OUTER_MAX];
};

// Builds copy `kp`'s underlay (to first hop `nb`) and data header (hop
// limit `hop_limit` less the first hop) into `o`; its length.
static __always_inline __u32 build(struct outer *o, const struct encoding *e,
				   const struct braid_kpath *kp, const struct braid_neighbor *nb,
				   __u8 hop_limit, __u32 inner_len)
{
	const struct braid_session *s = e->s;
	__u32 rlen = kp->route_len;
	if (rlen > BRAID_KTRANSIT)
		rlen = BRAID_KTRANSIT;
	__u32 hlen = BRAID_DATA_HEADER_LEN + 2 * rlen;
	__u8 *b = o->bytes + ETH_HLEN + UNDERLAY_LEN;
	b[BRAID_DATA_OFF_VERSION_TYPE] = BRAID_DATA_FIRST_BYTE;
	b[BRAID_DATA_OFF_FLAGS_MODE] = (e->urgent ? BRAID_FLAG_URGENT : 0) | s->mode;
	b[BRAID_DATA_OFF_PATH_RLEN] = (kp->slot << 4) | (rlen >> 2);
	// The ingress hands the packet to its first hop (forward_in_place):
	// the pointer has passed the first route entry, if any.
	b[BRAID_DATA_OFF_RLEN_RPTR] = ((rlen & 3) << 6) | (rlen > 0 ? 1 : 0);
	b[BRAID_DATA_OFF_INGRESS] = me >> 8;
	b[BRAID_DATA_OFF_INGRESS + 1] = me & 0xff;
	b[BRAID_DATA_OFF_EGRESS] = e->egress >> 8;
	b[BRAID_DATA_OFF_EGRESS + 1] = e->egress & 0xff;
	b[BRAID_DATA_OFF_SEQ] = e->seq >> 24;
	b[BRAID_DATA_OFF_SEQ + 1] = e->seq >> 16;
	b[BRAID_DATA_OFF_SEQ + 2] = e->seq >> 8;
	b[BRAID_DATA_OFF_SEQ + 3] = e->seq;
	b[BRAID_DATA_OFF_GROUP_SHAPE] = 0;
	b[BRAID_DATA_OFF_SHARD] = 0;
	b[BRAID_DATA_OFF_HOP_LIMIT] = hop_limit - 1;
	b[BRAID_DATA_OFF_CLASS] = e->class_id;
	b[BRAID_DATA_OFF_EPOCH] = s->epoch >> 24;
	b[BRAID_DATA_OFF_EPOCH + 1] = s->epoch >> 16;
	b[BRAID_DATA_OFF_EPOCH + 2] = s->epoch >> 8;
	b[BRAID_DATA_OFF_EPOCH + 3] = s->epoch;
#pragma unroll
	for (int i = 0; i < BRAID_KTRANSIT; i++) {
		b[BRAID_DATA_OFF_ROUTE + 2 * i] = kp->route[i] >> 8;
		b[BRAID_DATA_OFF_ROUTE + 2 * i + 1] = kp->route[i] & 0xff;
	}
	struct ethhdr eth = {.h_proto = bpf_htons(ETH_P_IP)};
	__builtin_memcpy(o->bytes, &eth, ETH_HLEN);
	__u32 udp_len = sizeof(struct udphdr) + hlen + inner_len;
	struct iphdr ip = {
		.version = 4,
		.ihl = 5,
		.tot_len = bpf_htons(sizeof(struct iphdr) + udp_len),
		.frag_off = bpf_htons(0x4000), // DF, as the daemon's sockets
		.ttl = UNDERLAY_TTL,
		.protocol = IPPROTO_UDP,
		.saddr = nb->src_be,
		.daddr = nb->addr_be,
	};
	ip.check = ip_checksum(&ip);
	__builtin_memcpy(o->bytes + ETH_HLEN, &ip, sizeof(ip));
	struct udphdr udp = {
		.source = bpf_htons(port),
		.dest = bpf_htons(port),
		.len = bpf_htons(udp_len),
	};
	__builtin_memcpy(o->bytes + ETH_HLEN + sizeof(ip), &udp, sizeof(udp));
	return ETH_HLEN + UNDERLAY_LEN + hlen;
}

// Makes `room` more bytes in front of the user packet (behind its
// Ethernet header, if any). For an IPv6 user packet (the first copy's
// room: the later ones find skb->protocol IPv4) the underlay's part is
// made as an IPv4 encapsulation's (bpf_skb_adjust_room's ENCAP_L3_IPV4),
// which sets skb->protocol to IPv4: the neighbor output that
// bpf_redirect_neigh hands the copy to picks its address family by it,
// and drops an IPv6 skb sent to an IPv4 next hop. The rest goes in front
// first (bpf_skb_change_head), so that the mac header stays before the
// network header, which bpf_redirect_neigh requires (on the TUN device
// there is no link-layer header to keep them apart).
static __always_inline long grow_head(struct __sk_buff *skb, __u32 room)
{
	if (skb->protocol == bpf_htons(ETH_P_IP))
		return bpf_skb_change_head(skb, room, 0);
	if (room <= UNDERLAY_LEN)
		return -1;
	if (bpf_skb_change_head(skb, room - UNDERLAY_LEN, 0))
		return -1;
	return bpf_skb_adjust_room(skb, UNDERLAY_LEN, BPF_ADJ_ROOM_MAC,
				   BPF_F_ADJ_ROOM_ENCAP_L3_IPV4 | BPF_F_ADJ_ROOM_ENCAP_L4_UDP);
}

// Sends the packet encoded by `e` on `copies` paths (mirror: the
// session's `order`, by growing header) or on path `first`: each copy's
// headers written in front of the user packet, the last copy redirected
// to its first hop, the others cloned out. The verdict.
static __always_inline int send_copies(struct __sk_buff *skb, const struct braid_settings *st,
				       const struct encoding *e, __u32 first, __u32 copies)
{
	const struct braid_session *s = e->s;
	__u32 inner_len = skb->len - e->l2;
	__u32 have = e->l2; // bytes in front of the user packet now
	struct outer o;
	for (__u32 c = 0; c < BRAID_KPATHS; c++) {
		if (c >= copies)
			break;
		__u32 pi = copies > 1 ? s->order[c] : first;
		pi &= BRAID_KPATHS - 1;
		const struct braid_kpath *kp = &s->paths[pi];
		__u16 hop_id = kp->first_hop;
		struct braid_neighbor *nb = bpf_map_lookup_elem(&neighbors, &hop_id);
		if (!nb) {
			count(BRAID_TX_NO_NEIGHBOR);
			continue;
		}
		__u32 len = build(&o, e, kp, nb, st->hop_limit, inner_len);
		if (len > sizeof(o))
			return TC_ACT_SHOT;
		// Copies go in order of growing header: the room in front only
		// ever grows.
		if (len > have) {
			if (grow_head(skb, len - have)) {
				count(BRAID_TX_ERROR);
				return TC_ACT_SHOT;
			}
			have = len;
		}
		__u32 skip = have - len; // a shorter header than the room: pad
		if (skip) {
			// Only mirror copies after a longer one reach here (never:
			// `order` sorts by length), but keep the packet sound.
			count(BRAID_TX_ERROR);
			return TC_ACT_SHOT;
		}
		__u32 mtu = 0;
		if (bpf_check_mtu(skb, nb->ifindex, &mtu, 0, 0)) {
			count(BRAID_TX_TOO_BIG);
			return TC_ACT_SHOT;
		}
		if (bpf_skb_store_bytes(skb, 0, &o, len, BPF_F_RECOMPUTE_CSUM)) {
			count(BRAID_TX_ERROR);
			return TC_ACT_SHOT;
		}
		__sync_fetch_and_add(&e->counter->sent[pi], 1);
		count(BRAID_TX_COPIES);
		if (c + 1 < copies) {
			// Not the last copy: a clone goes straight out.
			clone_to(skb, nb, BPF_F_RECOMPUTE_CSUM, BRAID_TX_NO_NEIGHBOR);
			continue;
		}
		count(BRAID_TX_ENCAPSULATED);
		struct bpf_redir_neigh to = {.nh_family = AF_INET, .ipv4_nh = nb->addr_be};
		return bpf_redirect_neigh(nb->ifindex, &to, sizeof(to), 0);
	}
	// Every copy's first hop was unknown (or the last one was).
	count(BRAID_TX_ENCAPSULATED);
	return TC_ACT_SHOT;
}

#endif
