/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * braid's kernel data path: following a received data packet's source
 * route. Whether the neighbor that sent it is the node its route puts
 * before this one (wire::data::previous_hop; with authentication on), and
 * the transit step (wire::data::forward_in_place) that sends it on.
 */
#ifndef BRAID_DATAPATH_ROUTE_H
#define BRAID_DATAPATH_ROUTE_H

#include <linux/bpf.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include "datapath_encap.h"
#include "datapath_maps.h"
#include "datapath_parsing.h"

// With BRAID_AUTHENTICATED: only an authenticated neighbor's data (the
// `senders` entry of the interface and underlay source it came from), and
// only as its route says: the node before us is the ingress or the route
// entry before ours. Tree mode carries no route: every node forwards by
// the entry point's tree, so the sender is any node of it. GO_ON, or the
// verdict.
static __always_inline int sent_as_routed(struct __sk_buff *skb, const struct iphdr *ip,
					  const __u8 *b, const void *end,
					  const struct data_header *h)
{
	struct braid_sender_key sk = {.ifindex = skb->ifindex, .addr_be = ip->saddr};
	struct braid_sender *from = bpf_map_lookup_elem(&senders, &sk);
	if (!from) {
		count(BRAID_RX_UNAUTHENTICATED);
		return TC_ACT_SHOT;
	}
	int on_route;
	__u32 at;
	if (h->egress == me) {
		on_route = h->rptr == h->rlen;
		at = h->rptr;
	} else {
		on_route = 0;
		at = h->rptr - 1;
		if (h->rptr >= 1) {
			__u16 mine;
			if (!route_entry(b, end, h->rptr - 1, &mine))
				return TC_ACT_UNSPEC;
			on_route = mine == me;
		}
	}
	if (h->mode != BRAID_MODE_TREE && (on_route || h->egress == me)) {
		__u16 before = h->ingress;
		if (on_route && at >= 1 && !route_entry(b, end, at - 1, &before))
			return TC_ACT_UNSPEC;
		if (!on_route || before != from->id) {
			count(BRAID_RX_WRONG_PREVIOUS_HOP);
			return TC_ACT_SHOT;
		}
	}
	return GO_ON;
}

// forward_in_place for a transit packet (its header at `b`): the node
// that should hold it now is the ingress before the first hop, then the
// route entry just passed; it goes on to the next route entry, or to the
// egress after the last. What user space counts (not on the route, hop
// limit spent), a next hop unknown here and a packet whose route ends
// here at a waypoint go up to it unchanged.
static __always_inline int forward(struct __sk_buff *skb, const struct iphdr *ip,
				   const struct udphdr *udp, const __u8 *b, const void *end,
				   const struct data_header *h)
{
	__u16 expected = h->ingress;
	if (h->rptr > 0 && !route_entry(b, end, h->rptr - 1, &expected))
		return TC_ACT_UNSPEC;
	if (expected != me) {
		count(BRAID_PASS_NOT_ON_ROUTE);
		return TC_ACT_UNSPEC;
	}
	if (h->hop == 0) {
		count(BRAID_PASS_HOP_LIMIT_EXCEEDED);
		return TC_ACT_UNSPEC;
	}
	if (h->rptr == h->rlen && h->waypoint) {
		// This node is the waypoint the route ends at: user space
		// writes the route on (Forward::RouteOn).
		count(BRAID_PASS_WAYPOINT);
		return TC_ACT_UNSPEC;
	}
	__u16 next = h->egress;
	__u32 new_ptr = h->rptr;
	if (h->rptr < h->rlen) {
		if (!route_entry(b, end, h->rptr, &next))
			return TC_ACT_UNSPEC;
		new_ptr = h->rptr + 1;
	}
	struct braid_neighbor *nb = bpf_map_lookup_elem(&neighbors, &next);
	if (!nb) {
		count(BRAID_PASS_NO_NEIGHBOR);
		return TC_ACT_UNSPEC;
	}
	return readdress(skb, ip, udp, b, nb, new_ptr, h->hop);
}

#endif
