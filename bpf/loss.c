// SPDX-License-Identifier: Apache-2.0
// braid lab: packet loss on a link's receiving side, for kernels without
// netem. Gilbert-Elliott with netem's exact semantics (`loss gemodel p r
// 1-h 1-k`, see ../shared/NOTES.md): per packet, in Good move to Bad with
// probability p, in Bad move to Good with probability r; the packet is
// lost with probability 1-k if it arrived in Good, 1-h if in Bad.
// Bernoulli loss L is p = L, r = 1 - L, 1-h = 1, 1-k = 0.
//
// Built once, when braid is built (crates/bpf/build.rs), and carried
// inside the braid binary. The four probabilities, scaled to 2^32
// (0xffffffff or more: always), are read-only globals the loader sets
// (braid_bpf::loss, which attaches the program first on the link's
// receiving side, ahead of braid's own programs there; `spare_arp` 0 or
// 1). Map `state`:
// [0] = 1 while in Bad, [1] = packets seen, [2] = packets dropped.
//
// With `spare_arp` set (the lab's lossy point-to-point links), only IP
// packets are seen and lost: ARP passes untouched. Kernel neighbour
// resolution over a link that loses ARP stalls whatever waits for it for
// a second or more per lost request (measured in the loss-proof sweeps:
// VoIP p99 of 1-2 s even on plain kernel routing), a stall 802.11's
// link-layer retries hide on a backhaul link and no routing protocol
// sees. Unset (the "air" of an access point's port, link failures),
// every frame is lost alike: there an access point learns its clients
// from their ARP.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

const volatile __u64 p_gb = 0;
const volatile __u64 p_bg = 0xffffffffu;
const volatile __u64 loss_good = 0;
const volatile __u64 loss_bad = 0xffffffffu;
const volatile __u64 spare_arp = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} state SEC(".maps");

static __always_inline int chance(__u64 threshold)
{
	// threshold / 2^32; 0xffffffff (or more) means always.
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
	if (spare_arp && skb->protocol != bpf_htons(ETH_P_IP) &&
	    skb->protocol != bpf_htons(ETH_P_IPV6))
		return TC_ACT_UNSPEC;
	__sync_fetch_and_add(seen, 1);
	int arrived_bad = *bad != 0;
	if (arrived_bad) {
		if (chance(p_bg))
			*bad = 0;
	} else {
		if (chance(p_gb))
			*bad = 1;
	}
	if (chance(arrived_bad ? loss_bad : loss_good)) {
		__sync_fetch_and_add(dropped, 1);
		return TC_ACT_SHOT;
	}
	// Not lost: on to whatever comes next on this hook (TCX_NEXT), the
	// kernel data path included.
	return TC_ACT_UNSPEC;
}

char _license[] SEC("license") = "GPL";
