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
// Verdicts are counted in `stats` (enum braid_stat). What a program does
// not take it passes on with TC_ACT_UNSPEC (TCX_NEXT): the programs
// attached after it, and then the stack, see the packet unchanged.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "datapath.h"

#ifndef AF_INET
#define AF_INET 2
#endif
// Linux 6.3's adjust_room flag (headers older than the kernel lack it).
#ifndef BPF_F_ADJ_ROOM_DECAP_L3_IPV6
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV6 (1ULL << 8)
#endif

// Set by the daemon at load time.
const volatile __u16 me = 0;
const volatile __u16 port = 0;

#define DATA_FIRST_BYTE 0x10    // version 1, type data
#define DATA_HEADER_LEN 20
#define CLASS_CONTROL 255
#define FLAG_URGENT 0x40
#define FLAG_PARITY 0x20
#define MODE_SINGLE 0
#define MODE_STRIPE 1
#define MODE_MIRROR 2
#define MODE_TREE 3
#define UNDERLAY_LEN (sizeof(struct iphdr) + sizeof(struct udphdr))
#define MAX_HEADER (DATA_HEADER_LEN + 2 * 63)
#define KERNEL_HEADER (DATA_HEADER_LEN + 2 * BRAID_KTRANSIT)
#define UNDERLAY_TTL 64

// The settings, double-buffered: the daemon writes the slot not in use,
// then names it in `settings_slot`; a program reads the slot named. Array
// lookups are inlined (a hash lookup per packet at every router was not
// free), and a program never reads a slot while it is written unless two
// writes land within one run of it (writes are seconds apart: start and
// reload). A slot never written is zeros: every program lets everything
// through.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
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
	__uint(max_entries, 1024);
	__type(key, __u16);
	__type(value, struct braid_neighbor);
} neighbors SEC(".maps");

// Our underlay addresses (value: the interface's index).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} locals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct braid_sender_key);
	__type(value, struct braid_sender);
} senders SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, struct braid_prefix_key);
	__type(value, struct braid_prefix);
} prefixes SEC(".maps");

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
	__uint(max_entries, 1024);
	__type(key, struct braid_session_key);
	__type(value, struct braid_session);
} sessions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct braid_session_key);
	__type(value, struct braid_seq);
} seqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
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
	__uint(max_entries, 16384);
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

static __always_inline __u16 be16_at(const __u8 *p)
{
	return ((__u16)p[0] << 8) | p[1];
}

static __always_inline __u32 be32_at(const __u8 *p)
{
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3];
}

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

// ---------------------------------------------------------------- dedup

enum verdict { NEW, DUPLICATE, TOO_OLD, TOO_FAR_AHEAD, OLD_EPOCH };

static __always_inline void clear_all(struct braid_window *w)
{
	// Word by word (volatile: the compiler would make it a memset, which
	// BPF has not).
	volatile __u64 *bits = w->bits;
#pragma unroll
	for (int i = 0; i < BRAID_WINDOW_WORDS; i++)
		bits[i] = 0;
}

// The word that holds `seq`'s block, in a window of `words` words.
static __always_inline __u32 word_of(__u32 seq, __u32 words)
{
	__u32 i = (seq >> 6) % words;
	// Keep the bound check the verifier needs (the compiler knows i <
	// words <= BRAID_WINDOW_WORDS and would drop it).
	asm volatile("" : "+r"(i));
	if (i >= BRAID_WINDOW_WORDS)
		i = 0;
	return i;
}

// The egress's decision for (epoch, seq) arriving on `path`: the same
// as EgressSession::receive for a packet without a group (dedup.rs's
// window, egress.rs's epochs). Called with the window's lock held.
static __always_inline enum verdict judge(struct braid_window *w, __u32 epoch, __u32 seq,
					  __u32 path, __u32 mask)
{
	w->received[path & (BRAID_MAX_PATH_INDEX - 1)] += 1;
	if (!w->has_epoch) {
		w->has_epoch = 1;
		w->epoch = epoch;
	} else if (w->epoch != epoch) {
		if (w->has_retired && w->retired == epoch) {
			w->old_epoch += 1;
			return OLD_EPOCH;
		}
		// The ingress opened the session anew: the window starts over.
		w->epoch_changes += 1;
		w->has_retired = 1;
		w->retired = w->epoch;
		w->epoch = epoch;
		w->started = 0;
		w->has_jump = 0;
		clear_all(w);
	}
	__u32 half = (mask + 1) / 2;
	__u32 words = (mask + 1) / 64 + 1;
	if (words > BRAID_WINDOW_WORDS)
		words = BRAID_WINDOW_WORDS;
	enum verdict v = NEW;
	if (w->started) {
		__u32 ahead = seq - w->highest;
		if (ahead != 0 && ahead < (1u << 31)) {
			int confirms = 0;
			if (w->has_jump) {
				__u32 d = seq - w->jump;
				__u32 nd = -d;
				confirms = (d < nd ? d : nd) <= half;
			}
			v = (ahead <= half || confirms) ? NEW : TOO_FAR_AHEAD;
		} else if (w->highest - seq > mask) {
			v = TOO_OLD;
		} else {
			__u32 i = word_of(seq, words);
			if (w->tags[i] == seq >> 6 && (w->bits[i] & (1ULL << (seq & 63))))
				v = DUPLICATE;
		}
	}
	if (v == TOO_FAR_AHEAD) {
		w->has_jump = 1;
		w->jump = seq;
		w->too_far_ahead += 1;
		return v;
	}
	if (v == DUPLICATE) {
		w->has_jump = 0;
		w->duplicates += 1;
		return v;
	}
	if (v == TOO_OLD) {
		w->too_old += 1;
		return v;
	}
	if (!w->started) {
		w->started = 1;
		w->highest = seq;
	} else {
		__u32 ahead = seq - w->highest;
		if (ahead != 0 && ahead < (1u << 31)) {
			if (ahead > half)
				clear_all(w); // a confirmed jump: start over here
			w->highest = seq;
		}
	}
	w->has_jump = 0;
	__u32 i = word_of(seq, words);
	if (w->tags[i] != seq >> 6) {
		w->tags[i] = seq >> 6;
		w->bits[i] = 0;
	}
	w->bits[i] |= 1ULL << (seq & 63);
	w->delivered += 1;
	return NEW;
}

// ------------------------------------------------------------- braid_rx

// Where the braid header starts in a frame: Ethernet, IPv4 without
// options, UDP.
#define RX_BRAID (ETH_HLEN + UNDERLAY_LEN)

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
	struct iphdr *ip = data + ETH_HLEN;
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

static __always_inline int deliver(struct __sk_buff *skb, struct braid_settings *s,
				   __u32 ingress, __u32 class_id, __u32 epoch, __u32 seq,
				   __u32 path, __u32 header_len)
{
	struct braid_window_key key = {.ingress = ingress, .class_id = class_id};
	struct braid_window *w = bpf_map_lookup_elem(&windows, &key);
	if (!w) {
		__u32 zero = 0;
		struct blank_window *b = bpf_map_lookup_elem(&blank, &zero);
		if (!b)
			return TC_ACT_SHOT;
		// BPF_NOEXIST: another CPU may have made it meanwhile.
		bpf_map_update_elem(&windows, &key, b, BPF_NOEXIST);
		w = bpf_map_lookup_elem(&windows, &key);
		if (!w) {
			count(BRAID_RX_NO_WINDOW);
			return TC_ACT_SHOT;
		}
	}
	// When it was last used, for the daemon's idle expiry: the coarse
	// clock (a tick's resolution, no clock source read) is enough.
	__u64 now = bpf_ktime_get_coarse_ns();
	bpf_spin_lock(&w->lock);
	enum verdict v = judge(w, epoch, seq, path, s->window_mask);
	w->last_ns = now;
	bpf_spin_unlock(&w->lock);
	switch (v) {
	case NEW:
		break;
	case DUPLICATE:
		count(BRAID_RX_DUPLICATE);
		return TC_ACT_SHOT;
	case TOO_OLD:
		count(BRAID_RX_TOO_OLD);
		return TC_ACT_SHOT;
	case TOO_FAR_AHEAD:
		count(BRAID_RX_TOO_FAR_AHEAD);
		return TC_ACT_SHOT;
	default:
		count(BRAID_RX_OLD_EPOCH);
		return TC_ACT_SHOT;
	}
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

// ------------------------------------------------------------- trees

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
		struct bpf_fib_lookup fib = {
			.family = AF_INET,
			.ifindex = nb->ifindex,
			.ipv4_src = nb->src_be,
			.ipv4_dst = nb->addr_be,
		};
		if (bpf_fib_lookup(skb, &fib, sizeof(fib),
				   BPF_FIB_LOOKUP_DIRECT | BPF_FIB_LOOKUP_OUTPUT) !=
		    BPF_FIB_LKUP_RET_SUCCESS) {
			count(BRAID_PASS_NO_NEIGHBOR);
			continue;
		}
		struct ethhdr e = {.h_proto = bpf_htons(ETH_P_IP)};
		__builtin_memcpy(e.h_dest, fib.dmac, ETH_ALEN);
		__builtin_memcpy(e.h_source, fib.smac, ETH_ALEN);
		if (bpf_skb_store_bytes(skb, 0, &e, sizeof(e), 0) ||
		    bpf_clone_redirect(skb, fib.ifindex, 0)) {
			count(BRAID_TX_ERROR);
			continue;
		}
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
	if ((void *)(b + 1) > end || b[0] != DATA_FIRST_BYTE) {
		count(BRAID_PASS_CONTROL);
		return TC_ACT_UNSPEC;
	}
	__u32 dst = ip->daddr;
	if (!bpf_map_lookup_elem(&locals, &dst))
		return TC_ACT_UNSPEC; // not addressed to this router
	count(BRAID_RX_DATA);
	if ((void *)(b + DATA_HEADER_LEN) > end) {
		count(BRAID_PASS_MALFORMED);
		return TC_ACT_UNSPEC;
	}
	if (skb->gso_segs > 1) {
		// Several datagrams in one: seen only with UDP GRO forwarding on
		// (off by default; docs/operations.md).
		count(BRAID_RX_GSO);
		return TC_ACT_SHOT;
	}
	__u8 flags = b[1] & 0xe0;
	__u8 mode = b[1] & 0x0f;
	__u32 path = b[2] >> 4;
	__u32 rlen = ((b[2] & 0x0f) << 2) | (b[3] >> 6);
	__u32 rptr = b[3] & 0x3f;
	__u16 ingress = be16_at(b + 4);
	__u16 egress = be16_at(b + 6);
	__u32 seq = be32_at(b + 8);
	// Byte 13: interleaving depth minus one (3 bits), shard index (5).
	__u8 gdata = b[12] >> 4, grepair = b[12] & 0x0f, gindex = b[13] & 0x1f;
	__u8 gdepth = (b[13] >> 5) + 1;
	__u8 hop = b[14];
	__u8 class_id = b[15];
	__u32 epoch = be32_at(b + 16);
	// The checks DataHeader::parse makes: anything it refuses, user space
	// refuses and counts.
	int parity = (flags & FLAG_PARITY) != 0;
	int group_ok;
	if (gdata == 0 && grepair == 0)
		group_ok = gindex == 0 && gdepth == 1 && !parity;
	else
		group_ok = gindex < gdata + grepair && parity == (gindex >= gdata);
	__u32 header_len = DATA_HEADER_LEN + 2 * rlen;
	if (mode > 6 || rptr > rlen || !group_ok || (void *)(b + header_len) > end) {
		count(BRAID_PASS_MALFORMED);
		return TC_ACT_UNSPEC;
	}
	if (s->flags & BRAID_AUTHENTICATED) {
		// Only an authenticated neighbor's data, and only as its route
		// says (wire::data::previous_hop): the node before us is the
		// ingress or the route entry before ours.
		struct braid_sender_key sk = {.ifindex = skb->ifindex, .addr_be = ip->saddr};
		struct braid_sender *from = bpf_map_lookup_elem(&senders, &sk);
		if (!from) {
			count(BRAID_RX_STRANGER);
			return TC_ACT_SHOT;
		}
		int on_route;
		__u32 at;
		if (egress == me) {
			on_route = rptr == rlen;
			at = rptr;
		} else {
			on_route = 0;
			at = rptr - 1;
			if (rptr >= 1) {
				__u8 *mine = b + DATA_HEADER_LEN + 2 * ((rptr - 1) & 0x3f);
				if ((void *)(mine + 2) > end)
					return TC_ACT_UNSPEC;
				on_route = be16_at(mine) == me;
			}
		}
		// Tree mode carries no route: every node forwards by the entry
		// point's tree, so the sender is any node of it.
		if (mode != MODE_TREE && (on_route || egress == me)) {
			__u16 before = ingress;
			if (on_route && at >= 1) {
				__u8 *prev = b + DATA_HEADER_LEN + 2 * ((at - 1) & 0x3f);
				if ((void *)(prev + 2) > end)
					return TC_ACT_UNSPEC;
				before = be16_at(prev);
			}
			if (!on_route || before != from->id) {
				count(BRAID_RX_WRONG_HOP);
				return TC_ACT_SHOT;
			}
		}
	}
	if (egress == me) {
		if (!(s->flags & BRAID_EGRESS))
			return TC_ACT_UNSPEC;
		if (class_id == CLASS_CONTROL || gdata || grepair || mode > MODE_MIRROR) {
			count(BRAID_PASS_USER_MODE);
			return TC_ACT_UNSPEC;
		}
		return deliver(skb, s, ingress, class_id, epoch, seq, path, header_len);
	}
	if (!(s->flags & BRAID_TRANSIT))
		return TC_ACT_UNSPEC;
	// forward_in_place: the node that should hold the packet now is the
	// ingress before the first hop, then the route entry just passed.
	__u16 expected = ingress;
	if (rptr > 0) {
		__u8 *at = b + DATA_HEADER_LEN + 2 * ((rptr - 1) & 0x3f);
		if ((void *)(at + 2) > end)
			return TC_ACT_UNSPEC;
		expected = be16_at(at);
	}
	if (expected != me) {
		count(BRAID_PASS_NOT_ON_ROUTE);
		return TC_ACT_UNSPEC;
	}
	if (hop == 0) {
		count(BRAID_PASS_HOP_LIMIT);
		return TC_ACT_UNSPEC;
	}
	__u16 next = egress;
	__u32 new_ptr = rptr;
	if (rptr < rlen) {
		__u8 *at = b + DATA_HEADER_LEN + 2 * (rptr & 0x3f);
		if ((void *)(at + 2) > end)
			return TC_ACT_UNSPEC;
		next = be16_at(at);
		new_ptr = rptr + 1;
	}
	struct braid_neighbor *nb = bpf_map_lookup_elem(&neighbors, &next);
	if (!nb) {
		count(BRAID_PASS_NO_NEIGHBOR);
		return TC_ACT_UNSPEC;
	}
	// New route pointer and hop limit; the underlay from us to the next
	// hop. Written with the checksum kept right for CHECKSUM_COMPLETE.
	// The underlay (IPv4 and UDP, contiguous) in one write, and bytes 3
	// to 14 of the braid header (route pointer ... hop limit) in another.
	struct {
		struct iphdr ip;
		struct udphdr udp;
	} under = {.ip = *ip, .udp = *udp};
	_Static_assert(sizeof(under) == UNDERLAY_LEN, "no padding between the headers");
	under.ip.saddr = nb->src_be;
	under.ip.daddr = nb->addr_be;
	under.ip.ttl = UNDERLAY_TTL;
	under.ip.check = 0;
	under.ip.check = ip_checksum(&under.ip);
	under.udp.check = 0;
	__u8 mid[12];
	__builtin_memcpy(mid, b + 3, sizeof(mid));
	mid[0] = (b[3] & 0xc0) | (new_ptr & 0x3f);
	mid[11] = hop - 1;
	__u32 ifindex = nb->ifindex;
	__u32 nh = nb->addr_be;
	if (bpf_skb_store_bytes(skb, ETH_HLEN, &under, sizeof(under), BPF_F_RECOMPUTE_CSUM) ||
	    bpf_skb_store_bytes(skb, RX_BRAID + 3, mid, sizeof(mid), BPF_F_RECOMPUTE_CSUM)) {
		count(BRAID_RX_ERROR);
		return TC_ACT_SHOT;
	}
	struct bpf_redir_neigh to = {.nh_family = AF_INET, .ipv4_nh = nh};
	count(BRAID_RX_FORWARDED);
	return bpf_redirect_neigh(ifindex, &to, sizeof(to), 0);
}

// ------------------------------------------------------------- braid_tx

// What the classifier needs from a user packet (classify.rs inspect()).
struct user_packet {
	__u32 src_be;
	__u32 dst_be;
	__u8 dscp;
	__u8 protocol;
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

static __always_inline int rule_matches(const struct braid_rule *r, const struct user_packet *p)
{
	if (r->never)
		return 0;
	if (!(r->dscp & (1ULL << (p->dscp & 63))))
		return 0;
	if (!(r->protocols[(p->protocol >> 6) & 3] & (1ULL << (p->protocol & 63))))
		return 0;
	if (r->n_prefixes) {
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

// Reads the IPv4 user packet at `off`; false when it is not one.
static __always_inline int inspect(struct __sk_buff *skb, __u32 off, struct user_packet *p)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct iphdr *ip = data + off;
	if ((void *)(ip + 1) > end || ip->version != 4 || ip->ihl < 5)
		return 0;
	p->src_be = ip->saddr;
	p->dst_be = ip->daddr;
	p->dscp = ip->tos >> 2;
	p->protocol = ip->protocol;
	p->src_port = 0;
	p->dst_port = 0;
	p->unfinished_checksum = 0;
	if (ported(ip->protocol) && !(ip->frag_off & bpf_htons(0x1fff))) {
		__u32 ihl = (ip->ihl * 4) & 0x3c;
		__u8 *l4 = (__u8 *)ip + ihl;
		if ((void *)(l4 + 4) <= end) {
			p->src_port = be16_at(l4);
			p->dst_port = be16_at(l4 + 2);
		}
		__u32 at = ip->protocol == 6 ? 16 : ip->protocol == 17 ? 6 : 0;
		if (at && (void *)(l4 + (at & 0x1f) + 2) <= end) {
			// The pseudo-header sum (RFC 768, RFC 9293), as the
			// kernel leaves it for the device: folded, not inverted.
			__u32 l4_len = bpf_ntohs(ip->tot_len) - ihl;
			__u32 sum = (ip->saddr & 0xffff) + (ip->saddr >> 16) +
				    (ip->daddr & 0xffff) + (ip->daddr >> 16) +
				    bpf_htons(ip->protocol) + bpf_htons(l4_len & 0xffff);
			sum = (sum & 0xffff) + (sum >> 16);
			sum = (sum & 0xffff) + (sum >> 16);
			__u16 check = *(__u16 *)(l4 + (at & 0x1f));
			p->unfinished_checksum = check == (__u16)sum;
		}
	}
	__u64 h = 0xcbf29ce484222325ULL;
	h = fnv_be32(h, p->src_be);
	h = fnv_be32(h, p->dst_be);
	h = fnv_byte(h, p->protocol);
	h = fnv_byte(h, p->src_port >> 8);
	h = fnv_byte(h, p->src_port & 0xff);
	h = fnv_byte(h, p->dst_port >> 8);
	h = fnv_byte(h, p->dst_port & 0xff);
	p->flow_hash = h;
	return 1;
}

// The underlay and braid header of one copy, built on the stack.
#define OUTER_MAX (ETH_HLEN + UNDERLAY_LEN + KERNEL_HEADER)
struct outer {
	__u8 bytes[OUTER_MAX];
};

static __always_inline __u32 build(struct outer *o, const struct braid_session *s,
				   const struct braid_kpath *kp, const struct braid_neighbor *nb,
				   __u16 egress, __u8 class_id, __u32 seq, int urgent,
				   __u8 hop_limit, __u32 inner_len)
{
	__u32 rlen = kp->route_len;
	if (rlen > BRAID_KTRANSIT)
		rlen = BRAID_KTRANSIT;
	__u32 hlen = DATA_HEADER_LEN + 2 * rlen;
	__u8 *b = o->bytes + ETH_HLEN + UNDERLAY_LEN;
	b[0] = DATA_FIRST_BYTE;
	b[1] = (urgent ? FLAG_URGENT : 0) | s->mode;
	b[2] = (kp->slot << 4) | (rlen >> 2);
	// The ingress hands the packet to its first hop (forward_in_place):
	// the pointer has passed the first route entry, if any.
	b[3] = ((rlen & 3) << 6) | (rlen > 0 ? 1 : 0);
	b[4] = me >> 8;
	b[5] = me & 0xff;
	b[6] = egress >> 8;
	b[7] = egress & 0xff;
	b[8] = seq >> 24;
	b[9] = seq >> 16;
	b[10] = seq >> 8;
	b[11] = seq;
	b[12] = 0;
	b[13] = 0;
	b[14] = hop_limit - 1;
	b[15] = class_id;
	b[16] = s->epoch >> 24;
	b[17] = s->epoch >> 16;
	b[18] = s->epoch >> 8;
	b[19] = s->epoch;
#pragma unroll
	for (int i = 0; i < BRAID_KTRANSIT; i++) {
		b[DATA_HEADER_LEN + 2 * i] = kp->route[i] >> 8;
		b[DATA_HEADER_LEN + 2 * i + 1] = kp->route[i] & 0xff;
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

// Encodes a user packet that starts at `l2` bytes into the skb (0: the
// TUN device's bare IP packet; ETH_HLEN: a segment from the segmenter).
static __always_inline int encode(struct __sk_buff *skb, __u32 l2)
{
	struct braid_settings *st = get_settings();
	if (!st || !(st->flags & BRAID_INGRESS))
		return -1;
	if (skb->protocol != bpf_htons(ETH_P_IP)) {
		count(BRAID_PASS_NOT_V4);
		return -1;
	}
	__u32 want = l2 + 64;
	if (want > skb->len)
		want = skb->len;
	if ((long)skb->data_end - (long)skb->data < want)
		bpf_skb_pull_data(skb, want);
	struct user_packet p;
	if (!inspect(skb, l2, &p)) {
		count(BRAID_PASS_NOT_V4);
		return -1;
	}
	count(BRAID_TX_PACKETS);
	struct braid_prefix_key pk = {.prefixlen = 32, .addr_be = p.dst_be};
	struct braid_prefix *pfx = bpf_map_lookup_elem(&prefixes, &pk);
	if (!pfx || pfx->egress == me) {
		count(BRAID_PASS_NO_SESSION);
		return -1;
	}
	__u8 class_id;
	int urgent;
	classify(&p, &class_id, &urgent);
	struct braid_session_key key = {.egress = pfx->egress, .class_id = class_id};
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
		if (bpf_skb_change_head(skb, ETH_HLEN, 0)) {
			count(BRAID_TX_ERROR);
			return TC_ACT_SHOT;
		}
		struct ethhdr e = {.h_proto = bpf_htons(ETH_P_IP)};
		bpf_skb_store_bytes(skb, 0, &e, sizeof(e), 0);
		count(skb->gso_segs > 1 ? BRAID_TX_SEGMENTED : BRAID_TX_CHECKSUMMED);
		return bpf_redirect(st->segmenter_ifindex, 0);
	}
	if (skb->gso_size) // one segment marked GSO: drop the marking
		bpf_skb_change_tail(skb, skb->len, 0);
	__u32 n = s->n_paths;
	if (n == 0 || n > BRAID_KPATHS) {
		count(BRAID_TX_NO_PATH);
		return TC_ACT_SHOT;
	}
	__u32 seq = __sync_fetch_and_add(&counter->next, 1);
	__sync_fetch_and_add(&counter->packets, 1);
	counter->last_ns = bpf_ktime_get_coarse_ns(); // idle expiry only
	__u32 copies = 1;
	__u32 first = 0;
	if (s->mode == MODE_STRIPE) {
		if (s->pinned && s->total_weight) {
			__u64 point = p.flow_hash % s->total_weight;
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
	} else if (s->mode == MODE_MIRROR) {
		copies = s->copies;
		if (copies > n)
			copies = n;
		if (copies == 0)
			copies = 1;
	}
	__u32 inner_len = skb->len - l2;
	__u32 have = l2; // bytes in front of the user packet now
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
		__u32 len = build(&o, s, kp, nb, key.egress, class_id, seq, urgent, st->hop_limit,
				  inner_len);
		if (len > sizeof(o))
			return TC_ACT_SHOT;
		// Copies go in order of growing header: the room in front only
		// ever grows.
		if (len > have) {
			if (bpf_skb_change_head(skb, len - have, 0)) {
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
		__sync_fetch_and_add(&counter->sent[pi], 1);
		count(BRAID_TX_COPIES);
		if (c + 1 < copies) {
			// Not the last copy: a clone goes straight out, with the
			// neighbor's link address from the kernel's tables.
			struct bpf_fib_lookup fib = {
				.family = AF_INET,
				.ifindex = nb->ifindex,
				.ipv4_src = nb->src_be,
				.ipv4_dst = nb->addr_be,
			};
			int r = bpf_fib_lookup(skb, &fib, sizeof(fib),
					       BPF_FIB_LOOKUP_DIRECT | BPF_FIB_LOOKUP_OUTPUT);
			if (r != BPF_FIB_LKUP_RET_SUCCESS) {
				count(BRAID_TX_NO_NEIGHBOR);
				continue;
			}
			struct ethhdr e = {.h_proto = bpf_htons(ETH_P_IP)};
			__builtin_memcpy(e.h_dest, fib.dmac, ETH_ALEN);
			__builtin_memcpy(e.h_source, fib.smac, ETH_ALEN);
			if (bpf_skb_store_bytes(skb, 0, &e, sizeof(e), BPF_F_RECOMPUTE_CSUM) ||
			    bpf_clone_redirect(skb, fib.ifindex, 0)) {
				count(BRAID_TX_ERROR);
				continue;
			}
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
		if (bpf_skb_change_head(skb, ETH_HLEN, 0)) {
			count(BRAID_TX_ERROR);
			return TC_ACT_SHOT;
		}
		struct ethhdr e = {.h_proto = bpf_htons(ETH_P_IP)};
		bpf_skb_store_bytes(skb, 0, &e, sizeof(e), 0);
		count(BRAID_TX_SEGMENTED);
		return bpf_redirect(s->segmenter_ifindex, 0);
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
