/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * braid's kernel data path: reading packets. A braid data header (its
 * fixed part and its source route's entries), checked as
 * wire::data::DataHeader::parse checks it; a user's IPv4 packet, read as
 * braid_proto::classify::inspect reads it (addresses, DSCP, protocol,
 * ports, the flow hash) for the classifier and the encoder.
 */
#ifndef BRAID_DATAPATH_PARSING_H
#define BRAID_DATAPATH_PARSING_H

#include <linux/bpf.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_endian.h>
#include "datapath_consts.h"

static __always_inline __u16 be16_at(const __u8 *p)
{
	return ((__u16)p[0] << 8) | p[1];
}

static __always_inline __u32 be32_at(const __u8 *p)
{
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3];
}

// The fixed part of a data header, as braid_rx reads it.
struct data_header {
	__u8 mode;
	__u8 gdata;               /* the group's data count */
	__u8 grepair;             /* the group's repair count */
	__u8 hop;                 /* the hop limit */
	__u8 class_id;
	__u16 ingress;
	__u16 egress;
	__u32 path;
	__u32 rlen;               /* transit nodes in the route */
	__u32 rptr;               /* the route pointer */
	__u32 seq;
	__u32 epoch;
	__u32 header_len;         /* with the route */
	__u8 waypoint;            /* the route ends at a waypoint, short of the egress */
};

// Reads the data header at `b` (its fixed part within the packet) into
// `h` and makes the checks DataHeader::parse makes: false for anything it
// refuses (user space refuses and counts it), and for a route the packet
// cuts short.
static __always_inline int parse_data_header(const __u8 *b, const void *end,
					     struct data_header *h)
{
	__u8 flags = b[BRAID_DATA_OFF_FLAGS_MODE] & BRAID_DATA_FLAGS;
	h->mode = b[BRAID_DATA_OFF_FLAGS_MODE] & NIBBLE;
	h->path = b[BRAID_DATA_OFF_PATH_RLEN] >> 4;
	h->rlen = ((b[BRAID_DATA_OFF_PATH_RLEN] & NIBBLE) << 2) | (b[BRAID_DATA_OFF_RLEN_RPTR] >> 6);
	h->rptr = b[BRAID_DATA_OFF_RLEN_RPTR] & ROUTE_FIELD;
	h->ingress = be16_at(b + BRAID_DATA_OFF_INGRESS);
	h->egress = be16_at(b + BRAID_DATA_OFF_EGRESS);
	h->seq = be32_at(b + BRAID_DATA_OFF_SEQ);
	h->gdata = b[BRAID_DATA_OFF_GROUP_SHAPE] >> 4;
	h->grepair = b[BRAID_DATA_OFF_GROUP_SHAPE] & NIBBLE;
	__u8 gindex = b[BRAID_DATA_OFF_SHARD] & SHARD_INDEX;
	__u8 gdepth = (b[BRAID_DATA_OFF_SHARD] >> DEPTH_SHIFT) + 1;
	h->hop = b[BRAID_DATA_OFF_HOP_LIMIT];
	h->class_id = b[BRAID_DATA_OFF_CLASS];
	h->epoch = be32_at(b + BRAID_DATA_OFF_EPOCH);
	int parity = (flags & BRAID_FLAG_PARITY) != 0;
	h->waypoint = (flags & BRAID_FLAG_WAYPOINT) != 0;
	int group_ok;
	if (h->gdata == 0 && h->grepair == 0)
		group_ok = gindex == 0 && gdepth == 1 && !parity;
	else
		group_ok = gindex < h->gdata + h->grepair && parity == (gindex >= h->gdata);
	h->header_len = BRAID_DATA_HEADER_LEN + 2 * h->rlen;
	return !(h->mode >= BRAID_MODES || h->rptr > h->rlen || !group_ok ||
		 (h->waypoint && h->rlen == 0) ||
		 (void *)(b + h->header_len) > end);
}

// Entry `i` of the source route of the data header at `b` (masked to the
// route field for the verifier) into `*id`; false when the packet ends
// before it.
static __always_inline int route_entry(const __u8 *b, const void *end, __u32 i, __u16 *id)
{
	const __u8 *at = b + BRAID_DATA_OFF_ROUTE + 2 * (i & ROUTE_FIELD);
	if ((void *)(at + 2) > end)
		return 0;
	*id = be16_at(at);
	return 1;
}

// What the classifier needs from a user packet (classify.rs inspect()).
struct user_packet {
	__u32 dst_be;             /* IPv4 */
	__u32 dst6_be[4];         /* IPv6 */
	__u8 v6;
	__u8 dscp;
	__u8 protocol;            /* IPv6: the first next-header value */
	__u8 pad;
	__u16 src_port;
	__u16 dst_port;
	__u64 flow_hash;
	// TCP or UDP whose checksum field holds only the pseudo-header sum:
	// the sender left the rest to the device (CHECKSUM_PARTIAL), which
	// a receiver reading the bytes (a daemon's socket) never sees done.
	int unfinished_checksum;
};

static __always_inline __u64 fnv_byte(__u64 h, __u8 b)
{
	return (h ^ b) * 0x100000001b3ULL;
}

static __always_inline __u64 fnv_be32(__u64 h, __u32 be)
{
	const __u8 *p = (const __u8 *)&be;
	h = fnv_byte(h, p[0]);
	h = fnv_byte(h, p[1]);
	h = fnv_byte(h, p[2]);
	return fnv_byte(h, p[3]);
}

static __always_inline int ported(__u8 protocol)
{
	return protocol == 6 || protocol == 17 || protocol == 33 || protocol == 132 ||
	       protocol == 136;
}

// Adds the 16-bit halves of a network-order word to a one's complement
// sum (the order of the bytes within each half is the packet's).
static __always_inline __u32 sum_be32(__u32 sum, __u32 be)
{
	return sum + (be & 0xffff) + (be >> 16);
}

// The transport header at `l4` (of a packet that ends at `end`): its
// ports, and whether its checksum field holds just `pseudo` (the
// pseudo-header sum, not yet folded), as the kernel leaves it for the
// device.
static __always_inline void transport(struct user_packet *p, __u8 *l4, void *end, __u32 pseudo)
{
	if ((void *)(l4 + 4) <= end) {
		p->src_port = be16_at(l4);
		p->dst_port = be16_at(l4 + 2);
	}
	__u32 at = p->protocol == 6 ? 16 : p->protocol == 17 ? 6 : 0;
	if (at && (void *)(l4 + (at & 0x1f) + 2) <= end) {
		pseudo = (pseudo & 0xffff) + (pseudo >> 16);
		pseudo = (pseudo & 0xffff) + (pseudo >> 16);
		__u16 check = *(__u16 *)(l4 + (at & 0x1f));
		p->unfinished_checksum = check == (__u16)pseudo;
	}
}

// Reads the IPv4 or IPv6 user packet at `off`; false when it is neither.
// As classify.rs inspect(): IPv6's protocol is its first next header (a
// packet with extension headers has no ports here, as there), the flow
// hash is FNV-1a over source, destination, protocol and ports.
static __always_inline int inspect(struct __sk_buff *skb, __u32 off, struct user_packet *p)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u8 *first = data + off;
	if ((void *)(first + 1) > end)
		return 0;
	p->src_port = 0;
	p->dst_port = 0;
	p->unfinished_checksum = 0;
	p->pad = 0;
	__u64 h = 0xcbf29ce484222325ULL;
	if ((*first >> 4) == 6) {
		struct ipv6hdr *ip6 = (void *)first;
		if ((void *)(ip6 + 1) > end)
			return 0;
		p->v6 = 1;
		p->dst_be = 0;
		p->dscp = ((ip6->priority << 4) | (ip6->flow_lbl[0] >> 4)) >> 2;
		p->protocol = ip6->nexthdr;
		__u32 src[4], dst[4];
		__builtin_memcpy(src, &ip6->saddr, 16);
		__builtin_memcpy(dst, &ip6->daddr, 16);
		__u32 pseudo = bpf_htons(ip6->nexthdr) + ip6->payload_len;
#pragma unroll
		for (int i = 0; i < 4; i++) {
			p->dst6_be[i] = dst[i];
			pseudo = sum_be32(sum_be32(pseudo, src[i]), dst[i]);
			h = fnv_be32(h, src[i]);
		}
#pragma unroll
		for (int i = 0; i < 4; i++)
			h = fnv_be32(h, dst[i]);
		if (ported(ip6->nexthdr))
			transport(p, (__u8 *)(ip6 + 1), end, pseudo);
	} else {
		struct iphdr *ip = (void *)first;
		if ((void *)(ip + 1) > end || ip->version != 4 || ip->ihl < 5)
			return 0;
		p->v6 = 0;
		p->dst_be = ip->daddr;
#pragma unroll
		for (int i = 0; i < 4; i++)
			p->dst6_be[i] = 0;
		p->dscp = ip->tos >> 2;
		p->protocol = ip->protocol;
		if (ported(ip->protocol) && !(ip->frag_off & bpf_htons(0x1fff))) {
			__u32 ihl = (ip->ihl * 4) & 0x3c;
			// The pseudo-header sum (RFC 768, RFC 9293).
			__u32 l4_len = bpf_ntohs(ip->tot_len) - ihl;
			__u32 pseudo = sum_be32(sum_be32(0, ip->saddr), ip->daddr) +
				       bpf_htons(ip->protocol) + bpf_htons(l4_len & 0xffff);
			transport(p, (__u8 *)ip + ihl, end, pseudo);
		}
		h = fnv_be32(h, ip->saddr);
		h = fnv_be32(h, ip->daddr);
	}
	h = fnv_byte(h, p->protocol);
	h = fnv_byte(h, p->src_port >> 8);
	h = fnv_byte(h, p->src_port & 0xff);
	h = fnv_byte(h, p->dst_port >> 8);
	h = fnv_byte(h, p->dst_port & 0xff);
	p->flow_hash = h;
	return 1;
}

#endif
