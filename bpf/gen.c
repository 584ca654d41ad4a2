// SPDX-License-Identifier: Apache-2.0
// braid lab: the forwarding benchmark's packet generator. Run by
// BPF_PROG_TEST_RUN in live-frames mode (BPF_F_TEST_XDP_LIVE_FRAMES, the
// mechanism xdp-trafficgen uses), with the frame to send as the test's
// data and the sending host's interface as its ingress: every frame the
// program returns XDP_TX for leaves through that interface, built and
// sent inside the kernel, with no socket and no stack on the sender's
// side. A sender that costs a fraction of what a router does, so the
// benchmark measures the routers (crates/lab/src/bench.rs).
//
// The kernel recycles a frame's page once the packet is freed and resets
// only its pointers, not its bytes; the routers downstream rewrite the
// same bytes in place (each hop's Ethernet header, the TTL and checksum,
// braid's encapsulation and decapsulation in front of the UDP header).
// So the program writes the frame's first HEAD bytes back from map
// `head` (set by the loader, braid_bpf::gen) before every send: without
// it the TTL ran down and frames left with the next hop's MAC address.
//
// One test run sends a whole trial: the program paces it, from the
// kernel's clock, through map `pace` (set by the loader): it returns
// XDP_TX when the next frame is due (`sent` frames at `interval_ps` each
// since the first run) and XDP_DROP, which sends nothing, otherwise and
// once `total` have left. A call of BPF_PROG_TEST_RUN costs 16-24 ms
// here (set-up and tear-down), so pacing from user space, a call per
// burst, sent bursts the routers' queue could not hold. The loader ends
// the run with a signal. `max_lag` is how many frames the program was
// ever behind. When it falls more than MAX_LAG behind (its CPU was taken
// by something else), it skips the frames it missed rather than send
// them in one burst, and counts them in `skipped`: a sender that skipped
// was the limit of that trial.
//
// Built once, when braid is built (crates/bpf/build.rs), and carried
// inside the braid binary.
//
// The frame must be IPv4 or IPv6 over Ethernet: the program numbers each
// frame (the frames sent so far, mod 2^16) in its IPv4 identification,
// mending the header checksum, as Linux numbers a socket's packets, or in
// the low 16 bits of its IPv6 flow label (no header checksum; the UDP
// checksum does not cover it). Identical frames
// would be taken for copies of one packet by an egress that drops what a
// client sent through two access points (crates/proto/src/node/copies.rs
// hashes the IP header); they were, all but 20 a second.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define HEAD 64
#define MAX_LAG 256

struct head {
	__u8 bytes[HEAD];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct head);
} head SEC(".maps");

struct pace {
	__u64 start_ns; /* 0: the next run starts the clock */
	__u64 interval_ps;
	__u64 total;
	__u64 sent;
	__u64 last_ns; /* when the last frame left */
	__u64 max_lag; /* frames */
	__u64 skipped; /* frames never sent: the program was too far behind */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pace);
} pace SEC(".maps");

// Writes `id` into the IPv4 identification of `frame` (whose head holds
// identification 0) and mends the header checksum (RFC 1624: HC' =
// ~(~HC + ~m + m'), m = 0).
static __always_inline void number(__u8 *frame, __u16 id)
{
	__u32 sum = (__u16)~((frame[24] << 8) | frame[25]);

	sum += 0xffff + id;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	frame[18] = id >> 8;
	frame[19] = id & 0xff;
	frame[24] = (__u8)(~sum >> 8);
	frame[25] = (__u8)~sum;
}

// Writes `id` into the low 16 bits of the IPv6 flow label of `frame`.
static __always_inline void label(__u8 *frame, __u16 id)
{
	frame[16] = id >> 8;
	frame[17] = id & 0xff;
}

SEC("xdp")
int bench_tx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 key = 0;
	struct head *h = bpf_map_lookup_elem(&head, &key);
	struct pace *p = bpf_map_lookup_elem(&pace, &key);
	__u64 now = bpf_ktime_get_ns();
	__u64 elapsed_ps, due, slots, behind;

	if (!h || !p || !p->interval_ps || data + HEAD > data_end)
		return XDP_ABORTED;
	if (!p->start_ns)
		p->start_ns = now;
	slots = p->sent + p->skipped;
	if (slots >= p->total)
		return XDP_DROP;
	elapsed_ps = (now - p->start_ns) * 1000;
	due = elapsed_ps / p->interval_ps + 1;
	if (due > p->total)
		due = p->total;
	if (slots >= due)
		return XDP_DROP;
	behind = due - slots;
	if (behind > p->max_lag)
		p->max_lag = behind;
	if (behind > MAX_LAG)
		p->skipped += behind - 1;
	p->sent++;
	p->last_ns = now;
	__builtin_memcpy(data, h->bytes, HEAD);
	__u8 *f = data;
	if (f[12] == 0x86 && f[13] == 0xdd)
		label(data, (__u16)(p->sent - 1));
	else
		number(data, (__u16)(p->sent - 1));
	return XDP_TX;
}

char _license[] SEC("license") = "GPL";
