/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * braid's kernel data path: the egress's duplicate elimination. Each
 * session (ingress, class) has a window in `windows`, made on its first
 * packet, which judges each (epoch, sequence number) as
 * braid_proto::redundancy's dedup window and EgressSession do for a packet
 * without a group.
 */
#ifndef BRAID_DATAPATH_DEDUP_H
#define BRAID_DATAPATH_DEDUP_H

#include <linux/pkt_cls.h>
#include "datapath_maps.h"
#include "datapath_parsing.h"

enum verdict { NEW, DUPLICATE, TOO_OLD, TOO_FAR_AHEAD, OLD_EPOCH, UNPROVEN_EPOCH };

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

// The egress's decision for (epoch, seq) arriving on `path` at `now`:
// the same as EgressSession::receive for a packet without a group
// (dedup.rs's window, egress.rs's epochs), which also notes the newest
// arrival of each path for the path reports. A packet of another epoch,
// or too far ahead, moves nothing: user space holds it and asks the
// ingress (only its proof moves a window, and the daemon writes it
// here). Called with the window's lock held.
static __always_inline enum verdict judge(struct braid_window *w, __u32 epoch, __u32 seq,
					  __u32 path, __u32 mask, __u64 now)
{
	path &= BRAID_MAX_PATH_INDEX - 1;
	if (!w->has_epoch) {
		w->has_epoch = 1;
		w->epoch = epoch;
	} else if (w->epoch != epoch) {
		if (w->has_retired && w->retired == epoch) {
			w->old_epoch += 1;
			return OLD_EPOCH;
		}
		w->unproven += 1;
		return UNPROVEN_EPOCH;
	}
	__u32 half = (mask + 1) / 2;
	__u32 words = (mask + 1) / 64 + 1;
	if (words > BRAID_WINDOW_WORDS)
		words = BRAID_WINDOW_WORDS;
	if (w->started) {
		__u32 ahead = seq - w->highest;
		if (ahead != 0 && ahead < (1u << 31) && ahead > half) {
			w->too_far_ahead += 1;
			w->unproven += 1;
			return TOO_FAR_AHEAD;
		}
	}
	w->received[path] += 1;
	w->last_ns = now;
	// Newer than the path's newest so far, whatever the window then says
	// of it (an arrival is an arrival): serial arithmetic on the send
	// orders (32 per sequence number: wire's data_send_order), as the
	// user-space egress compares them.
	__u32 newer = (seq - w->latest[path]) << 5;
	if (!w->latest_ns[path] || newer - 1 < (1u << 31) - 1) {
		w->latest[path] = seq;
		w->latest_ns[path] = now | 1; // never 0 once set
	}
	if (w->started) {
		__u32 ahead = seq - w->highest;
		if (ahead == 0 || ahead >= (1u << 31)) {
			if (w->highest - seq > mask) {
				w->too_old += 1;
				return TOO_OLD;
			}
			__u32 i = word_of(seq, words);
			if (w->tags[i] == seq >> 6 && (w->bits[i] & (1ULL << (seq & 63)))) {
				w->duplicates += 1;
				return DUPLICATE;
			}
		} else {
			w->highest = seq;
		}
	} else {
		w->started = 1;
		w->highest = seq;
	}
	__u32 i = word_of(seq, words);
	if (w->tags[i] != seq >> 6) {
		w->tags[i] = seq >> 6;
		w->bits[i] = 0;
	}
	w->bits[i] |= 1ULL << (seq & 63);
	w->delivered += 1;
	return NEW;
}

// The window of the session `h` belongs to, made (blank) if it has none
// yet; 0 when the table is full.
static __always_inline struct braid_window *window_of(const struct data_header *h)
{
	struct braid_window_key key = {.ingress = h->ingress, .class_id = h->class_id};
	struct braid_window *w = bpf_map_lookup_elem(&windows, &key);
	if (w)
		return w;
	__u32 zero = 0;
	struct blank_window *b = bpf_map_lookup_elem(&blank, &zero);
	if (!b)
		return 0;
	// BPF_NOEXIST: another CPU may have made it meanwhile.
	bpf_map_update_elem(&windows, &key, b, BPF_NOEXIST);
	w = bpf_map_lookup_elem(&windows, &key);
	if (!w)
		count(BRAID_RX_NO_WINDOW);
	return w;
}

// The egress's verdict on the data packet `h`, judged under its window's
// lock; what it drops is counted. GO_ON for a packet to deliver, else
// the verdict (dropped).
static __always_inline int dedup(const struct braid_settings *s, const struct data_header *h)
{
	struct braid_window *w = window_of(h);
	if (!w)
		return TC_ACT_SHOT;
	// When it was last used (by a packet it took: nothing forged keeps
	// it), for the daemon's idle expiry, and when each path's newest
	// packet arrived, for the path reports: the coarse clock (a tick's
	// resolution, no clock source read) is enough.
	__u64 now = bpf_ktime_get_coarse_ns();
	bpf_spin_lock(&w->lock);
	enum verdict v = judge(w, h->epoch, h->seq, h->path, s->window_mask, now);
	bpf_spin_unlock(&w->lock);
	switch (v) {
	case NEW:
		return GO_ON;
	case DUPLICATE:
		count(BRAID_RX_DUPLICATE);
		return TC_ACT_SHOT;
	case TOO_OLD:
		count(BRAID_RX_TOO_OLD);
		return TC_ACT_SHOT;
	case TOO_FAR_AHEAD:
		// User space holds it and asks the ingress; its proof moves
		// this window (the daemon writes it).
		count(BRAID_RX_TOO_FAR_AHEAD);
		return TC_ACT_UNSPEC;
	case UNPROVEN_EPOCH:
		count(BRAID_PASS_UNPROVEN_EPOCH);
		return TC_ACT_UNSPEC;
	default:
		count(BRAID_RX_OLD_EPOCH);
		return TC_ACT_SHOT;
	}
}

#endif
