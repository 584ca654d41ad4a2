// SPDX-License-Identifier: Apache-2.0
// braid lab: packet loss on a link's receiving side, for kernels without
// netem. Gilbert-Elliott with netem's exact semantics (`loss gemodel p r
// 1-h 1-k`, see ../shared/NOTES.md): per packet, in Good move to Bad with
// probability p, in Bad move to Good with probability r; the packet is
// lost with probability 1-k if it arrived in Good, 1-h if in Bad.
// Bernoulli loss L is p = L, r = 1 - L, 1-h = 1, 1-k = 0.
//
// The four probabilities are compile-time constants scaled to 2^32
// (braid lab compiles one object per parameter set), so the program needs
// no map writes from user space. Map `state`: [0] = 1 while in Bad,
// [1] = packets seen, [2] = packets dropped.
//
// Build: clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu \
//   -DP_GB=... -DP_BG=... -DLOSS_G=... -DLOSS_B=... -c loss.c -o loss.o
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#ifndef P_GB
#define P_GB 0
#endif
#ifndef P_BG
#define P_BG 4294967295u
#endif
#ifndef LOSS_G
#define LOSS_G 0
#endif
#ifndef LOSS_B
#define LOSS_B 4294967295u
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} state SEC(".maps");

static __always_inline int chance(__u64 threshold)
{
	// threshold / 2^32; 0xffffffff means always.
	if (threshold >= 0xffffffffu)
		return 1;
	return (__u64)bpf_get_prandom_u32() < threshold;
}

SEC("classifier")
int ge_loss(struct __sk_buff *skb)
{
	__u32 k_state = 0, k_seen = 1, k_dropped = 2;
	__u64 *bad = bpf_map_lookup_elem(&state, &k_state);
	__u64 *seen = bpf_map_lookup_elem(&state, &k_seen);
	__u64 *dropped = bpf_map_lookup_elem(&state, &k_dropped);
	if (!bad || !seen || !dropped)
		return TC_ACT_OK;
	__sync_fetch_and_add(seen, 1);
	int arrived_bad = *bad != 0;
	if (arrived_bad) {
		if (chance(P_BG))
			*bad = 0;
	} else {
		if (chance(P_GB))
			*bad = 1;
	}
	if (chance(arrived_bad ? LOSS_B : LOSS_G)) {
		__sync_fetch_and_add(dropped, 1);
		return TC_ACT_SHOT;
	}
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
