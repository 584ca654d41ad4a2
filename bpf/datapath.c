// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
// braid's kernel data path (tc programs; docs/ARCHITECTURE.md says why tc
// and not XDP). The daemon is its control plane: it loads this object
// (built with braid, carried inside it), attaches the programs and keeps
// the maps of datapath.h in step with the node.
//
//   braid_rx     tc ingress of every braid interface. A data packet whose
//                next hop is another router is forwarded here (route
//                pointer, hop limit, underlay addresses, redirect to the
//                neighbor). At its egress a packet of a mode the kernel
//                does (single, stripe, mirror; no group) passes the
//                session's dedup window and is delivered into the TUN
//                device as if user space had written it there. Anything
//                else (control messages, coded modes, what does not parse)
//                goes on to the stack and the daemon's socket, unchanged.
//   braid_tx     tc egress of the TUN device: a user packet of a session
//                the daemon handed to the kernel is encoded (sequence,
//                header, path or paths) and sent to its first hop; any
//                other goes on to the TUN device and the daemon. GSO
//                packets go through the segmenter veth first.
//   braid_lan_rx tc ingress of a LAN port (where hosts' packets enter this
//                router): the same encoder, before the stack routes the
//                packet into the TUN device.
//   braid_tx_l2  tc ingress of the segmenter veth's far end: the same for
//                the segments, which carry an Ethernet header.
//   braid_tree_tx  tc egress of the TUN device, first: a user packet to a
//                client whose entry is in `trees` for this router is
//                marked (entry point id in the IPv4 identification, the
//                reserved flag bit) and sent to each next hop of this
//                router's tree. braid_rx forwards marked packets by the
//                entry point's tree and delivers to the clients this
//                router serves, mark cleared.
//
// This file holds the programs; what they do is split by concern into
// headers, as katran's balancer_kern.c is:
//
//   datapath.h           the maps' layouts, shared with the daemon
//                        (crates/bpf/src/maps.rs mirrors them)
//   braid_wire.h         generated: the data header's offsets and codes
//                        (braid-wire)
//   braid_limits.h       generated: flags, limits, map sizes
//                        (crates/bpf/src/constants.rs)
//   datapath_consts.h    the programs' own numbers, the header's bit
//                        layout, the loader's globals
//   datapath_maps.h      the maps, the settings in force, the counters
//   datapath_parsing.h   reading a data header and a user's packet
//   datapath_classify.h  the classifier
//   datapath_dedup.h     the egress's dedup windows
//   datapath_decap.h     delivery at the egress
//   datapath_encap.h     the ingress's copies and headers, transit's
//                        readdressing, the segmenter
//   datapath_route.h     the source route: sender check, transit step
//   datapath_trees.h     tree mode
//
// Verdicts are counted in `stats` (enum braid_stat). What a program does
// not take it passes on with TC_ACT_UNSPEC (TCX_NEXT): the programs
// attached after it, and then the stack, see the packet unchanged.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "datapath.h"
#include "datapath_consts.h"
#include "datapath_maps.h"
#include "datapath_parsing.h"
#include "datapath_classify.h"
#include "datapath_dedup.h"
#include "datapath_decap.h"
#include "datapath_encap.h"
#include "datapath_route.h"
#include "datapath_trees.h"

// Whether the user's packet at `inner` comes from a client an access
// point advertises (`copy_sources`, `copy_sources6`): its copies may enter
// the mesh at two access points, and only user space sees both sessions.
static __always_inline int from_a_client(struct __sk_buff *skb, __u32 inner)
{
	__u32 want = inner + sizeof(struct ipv6hdr);
	if (want > skb->len)
		want = skb->len;
	if ((long)skb->data_end - (long)skb->data < want)
		bpf_skb_pull_data(skb, want);
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u8 *ip = data + (inner & 0xfff);
	if ((void *)(ip + 20) > end)
		return 0;
	if ((*ip >> 4) == 6) {
		struct braid_addr6 src;
		if ((void *)(ip + sizeof(struct ipv6hdr)) > end)
			return 0;
		__builtin_memcpy(&src, ip + __builtin_offsetof(struct ipv6hdr, saddr), 16);
		return bpf_map_lookup_elem(&copy_sources6, &src) != 0;
	}
	if ((*ip >> 4) != 4)
		return 0;
	__u32 src;
	__builtin_memcpy(&src, ip + 12, 4);
	return bpf_map_lookup_elem(&copy_sources, &src) != 0;
}

SEC("classifier")
int braid_rx(struct __sk_buff *skb)
{
	struct braid_settings *s = get_settings();
	if (!s || !(s->flags & (BRAID_TRANSIT | BRAID_EGRESS | BRAID_TREES)))
		return TC_ACT_UNSPEC;
	// Make the headers we read (at most the largest braid header) linear.
	__u32 want = RX_BRAID + MAX_HEADER;
	if (want > skb->len)
		want = skb->len;
	if ((long)skb->data_end - (long)skb->data < want)
		bpf_skb_pull_data(skb, want);
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_UNSPEC;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl != 5)
		return TC_ACT_UNSPEC;
	if ((ip->frag_off & bpf_htons(BRAID_TREE_MARK)) && (s->flags & BRAID_TREES))
		return tree_rx(skb, ip);
	if (ip->protocol != IPPROTO_UDP || !(s->flags & (BRAID_TRANSIT | BRAID_EGRESS)))
		return TC_ACT_UNSPEC;
	if (ip->frag_off & bpf_htons(0x3fff))
		return TC_ACT_UNSPEC; // a fragment: the stack reassembles it
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(port))
		return TC_ACT_UNSPEC;
	__u8 *b = (void *)(udp + 1);
	if ((void *)(b + 1) > end || b[BRAID_DATA_OFF_VERSION_TYPE] != BRAID_DATA_FIRST_BYTE) {
		count(BRAID_PASS_CONTROL);
		return TC_ACT_UNSPEC;
	}
	__u32 dst = ip->daddr;
	if (!bpf_map_lookup_elem(&locals, &dst))
		return TC_ACT_UNSPEC; // not addressed to this router
	count(BRAID_RX_DATA);
	if ((void *)(b + BRAID_DATA_HEADER_LEN) > end) {
		count(BRAID_PASS_MALFORMED);
		return TC_ACT_UNSPEC;
	}
	if (skb->gso_segs > 1) {
		// Several datagrams in one: seen only with UDP GRO forwarding on
		// (off by default; docs/operations.md).
		count(BRAID_RX_GSO);
		return TC_ACT_SHOT;
	}
	struct data_header h;
	if (!parse_data_header(b, end, &h)) {
		count(BRAID_PASS_MALFORMED);
		return TC_ACT_UNSPEC;
	}
	if (s->flags & BRAID_AUTHENTICATED) {
		int v = sent_as_routed(skb, ip, b, end, &h);
		if (v != GO_ON)
			return v;
	}
	if (h.egress == me) {
		if (!(s->flags & BRAID_EGRESS))
			return TC_ACT_UNSPEC;
		if (h.class_id == CLASS_CONTROL || h.gdata || h.grepair || h.mode > BRAID_MODE_MIRROR) {
			count(BRAID_PASS_USER_MODE);
			return TC_ACT_UNSPEC;
		}
		if (from_a_client(skb, RX_BRAID + (h.header_len & 0xff))) {
			count(BRAID_PASS_COPY_CHECK);
			return TC_ACT_UNSPEC;
		}
		return deliver(skb, s, &h);
	}
	if (!(s->flags & BRAID_TRANSIT))
		return TC_ACT_UNSPEC;
	return forward(skb, ip, udp, b, end, &h);
}

// Encodes a user packet that starts at `l2` bytes into the skb (0: the
// TUN device's bare IP packet; ETH_HLEN: a segment from the segmenter, or
// a LAN port's frame) when its session is the kernel's: a verdict, or -1
// for a packet the kernel leaves to the stack and user space.
static __always_inline int encode(struct __sk_buff *skb, __u32 l2)
{
	struct braid_settings *st = get_settings();
	if (!st || !(st->flags & BRAID_INGRESS))
		return -1;
	if (skb->protocol != bpf_htons(ETH_P_IP) && skb->protocol != bpf_htons(ETH_P_IPV6)) {
		count(BRAID_PASS_NOT_IP);
		return -1;
	}
	__u32 want = l2 + 64;
	if (want > skb->len)
		want = skb->len;
	if ((long)skb->data_end - (long)skb->data < want)
		bpf_skb_pull_data(skb, want);
	struct user_packet p;
	if (!inspect(skb, l2, &p)) {
		count(BRAID_PASS_NOT_IP);
		return -1;
	}
	count(BRAID_TX_PACKETS);
	struct braid_prefix *pfx;
	if (p.v6) {
		struct braid_prefix6_key pk = {.prefixlen = 128};
		__builtin_memcpy(pk.addr_be, p.dst6_be, 16);
		pfx = bpf_map_lookup_elem(&prefixes6, &pk);
	} else {
		struct braid_prefix_key pk = {.prefixlen = 32, .addr_be = p.dst_be};
		pfx = bpf_map_lookup_elem(&prefixes, &pk);
	}
	if (!pfx || pfx->egress == me) {
		count(BRAID_PASS_NO_SESSION);
		return -1;
	}
	struct encoding e = {.egress = pfx->egress, .l2 = l2};
	classify(&p, &e.class_id, &e.urgent);
	struct braid_session_key key = {.egress = e.egress, .class_id = e.class_id};
	struct braid_session *s = bpf_map_lookup_elem(&sessions, &key);
	struct braid_seq *counter = bpf_map_lookup_elem(&seqs, &key);
	if (!s || !counter) {
		count(BRAID_PASS_NO_SESSION);
		return -1;
	}
	// Several packets in one (TSO, GRO) each need their own sequence
	// number; a packet whose checksum the device was to finish would
	// reach a daemon with it unfinished. The segmenter veth (no checksum
	// offload, one segment per packet) cuts up the first and finishes
	// the second; its far end (braid_tx_l2) encodes what comes out.
	// Only where a braid interface is virtual (veth, tap): a physical
	// one's device or the stack before it finishes them anyway.
	int unfinished = p.unfinished_checksum && !l2 && st->segmenter_ifindex &&
			 (st->flags & BRAID_FINISH_CHECKSUMS);
	if (skb->gso_segs > 1 || unfinished) {
		if (!st->segmenter_ifindex || l2) {
			count(BRAID_TX_ERROR);
			return TC_ACT_SHOT;
		}
		return to_segmenter(skb, st->segmenter_ifindex,
				    skb->gso_segs > 1 ? BRAID_TX_SEGMENTED : BRAID_TX_CHECKSUMMED);
	}
	if (skb->gso_size) // one segment marked GSO: drop the marking
		bpf_skb_change_tail(skb, skb->len, 0);
	__u32 n = s->n_paths;
	if (n == 0 || n > BRAID_KPATHS) {
		count(BRAID_TX_NO_PATH);
		return TC_ACT_SHOT;
	}
	e.s = s;
	e.counter = counter;
	e.seq = __sync_fetch_and_add(&counter->next, 1);
	__sync_fetch_and_add(&counter->packets, 1);
	counter->last_ns = bpf_ktime_get_coarse_ns(); // idle expiry only
	if (p.v6)
		count(BRAID_TX_IPV6);
	return send_copies(skb, st, &e, first_path(s, p.flow_hash, e.seq, n), copies_of(s, n));
}

SEC("classifier")
int braid_tx(struct __sk_buff *skb)
{
	int r = encode(skb, 0);
	return r < 0 ? TC_ACT_UNSPEC : r;
}

// tc ingress of a LAN port (where hosts' packets enter this router): a
// user packet of a session lent to the kernel is encoded here, before the
// stack routes it into the TUN device (one pass through the stack less;
// no FORWARD chain, as transit); anything else, and GSO packets (the
// segmenter is on the TUN device's path), goes on to the stack unchanged.
SEC("classifier")
int braid_lan_rx(struct __sk_buff *skb)
{
	if (skb->gso_segs > 1)
		return TC_ACT_UNSPEC;
	int r = encode(skb, ETH_HLEN);
	return r < 0 ? TC_ACT_UNSPEC : r;
}

SEC("classifier")
int braid_tx_l2(struct __sk_buff *skb)
{
	int r = encode(skb, ETH_HLEN);
	if (r >= 0)
		return r;
	// Not the kernel's: on to the TUN device and the daemon, as it came.
	struct braid_settings *st = get_settings();
	if (!st || !st->tun_ifindex)
		return TC_ACT_SHOT;
	return bpf_redirect(st->tun_ifindex, 0);
}

// A user packet entering the mesh here (tc egress of the TUN device: a
// bare IPv4 packet) toward a client this router has a tree entry for:
// marked and sent to each next hop of this router's own tree. Fragments
// are never marked (the identification is theirs; they go to user space,
// which sends them on one path); a client this router serves itself, and
// anything without an entry, go on unchanged (braid_tx, user space).
//
// On the TUN device the packet is bare IP; a test run (which always
// builds an Ethernet frame) gives it behind an Ethernet header: a packet
// that starts with an IPv4 header whose length is the packet's is bare.
SEC("classifier")
int braid_tree_tx(struct __sk_buff *skb)
{
	struct braid_settings *s = get_settings();
	if (!s || !(s->flags & BRAID_TREE_ENTRY) || skb->protocol != bpf_htons(ETH_P_IP))
		return TC_ACT_UNSPEC;
	__u32 want = ETH_HLEN + sizeof(struct iphdr);
	if (want > skb->len)
		want = skb->len;
	if ((long)skb->data_end - (long)skb->data < want)
		bpf_skb_pull_data(skb, want);
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct iphdr *bare = data;
	__u32 l2 = ETH_HLEN;
	if ((void *)(bare + 1) <= end && bare->version == 4 && bare->ihl == 5 &&
	    bpf_ntohs(bare->tot_len) == skb->len)
		l2 = 0;
	struct iphdr *ip = data + l2;
	if ((void *)(ip + 1) > end || ip->version != 4 || ip->ihl != 5)
		return TC_ACT_UNSPEC;
	struct braid_tree_key key = {.entry = me, .dst_be = ip->daddr};
	struct braid_tree *t = bpf_map_lookup_elem(&trees, &key);
	if (!t || t->deliver || t->n_hops == 0)
		return TC_ACT_UNSPEC;
	if (ip->frag_off & bpf_htons(0x3fff)) {
		count(BRAID_PASS_FRAGMENT);
		return TC_ACT_UNSPEC;
	}
	if (skb->gso_segs > 1) {
		// Several packets in one (TSO, GRO): a device that cuts it up
		// numbers the segments' identifications on from ours, and the
		// routers after it would read other entry points. Cut up first
		// by the segmenter veth, each segment marked on its far end
		// (this program again); without one, the daemon's.
		if (l2 || !s->segmenter_ifindex)
			return TC_ACT_UNSPEC;
		return to_segmenter(skb, s->segmenter_ifindex, BRAID_TX_SEGMENTED);
	}
	__be16 id_before = ip->id, id_after = bpf_htons(me);
	__be16 frag_before = ip->frag_off;
	__be16 frag_after = frag_before | bpf_htons(BRAID_TREE_MARK);
	if (ip_word(skb, l2, __builtin_offsetof(struct iphdr, id), id_before, id_after) ||
	    ip_word(skb, l2, __builtin_offsetof(struct iphdr, frag_off), frag_before, frag_after))
		return TC_ACT_SHOT;
	// An Ethernet header in front, for the copies and the neighbor
	// redirect.
	if (!l2 && bpf_skb_change_head(skb, ETH_HLEN, 0)) {
		count(BRAID_TX_ERROR);
		return TC_ACT_SHOT;
	}
	count(BRAID_TREE_MARKED);
	int r = tree_send(skb, t, 0);
	return r < 0 ? TC_ACT_SHOT : r;
}

char _license[] SEC("license") = "GPL";
