/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * braid's kernel data path: the numbers its programs use that are not a
 * map's layout. The data header's offsets, lengths, flag bits and mode
 * codes come from braid-wire (braid_wire.h, generated when braid is
 * built); the bits within the header's bytes are written out here, tied
 * to braid-wire's limits by static assertions. Also the two globals the
 * loader sets (`me`, `port`).
 */
#ifndef BRAID_DATAPATH_CONSTS_H
#define BRAID_DATAPATH_CONSTS_H

#include <linux/types.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include "braid_wire.h"
#include "datapath.h"

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif
// Linux 6.3's adjust_room flag (headers older than the kernel lack it).
#ifndef BPF_F_ADJ_ROOM_DECAP_L3_IPV6
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV6 (1ULL << 8)
#endif

// Set by the daemon at load time.
const volatile __u16 me = 0;
const volatile __u16 port = 0;

// A step of a program that lets the packet through returns GO_ON: the
// program goes on to its next step. Anything else is the program's verdict.
#define GO_ON (-2)

// The bits within the data header's bytes (docs/protocol.md; wire::data's
// DataHeader::parse and emit): byte 1 is the flags (BRAID_DATA_FLAGS) and
// the mode (low nibble); byte 2 the path (high nibble) and the route
// length's top four bits; byte 3 the route length's low two bits (top)
// and the route pointer (low six); byte 12 the group's data and repair
// counts (a nibble each); byte 13 the interleaving depth minus one (top
// three bits) and the shard index (low five).
#define NIBBLE 0x0f
#define ROUTE_FIELD 0x3f
#define SHARD_INDEX 0x1f
#define DEPTH_SHIFT 5
_Static_assert(ROUTE_FIELD == BRAID_MAX_ROUTE_LEN, "the route fields hold 0 ... a whole route");
_Static_assert(BRAID_MODES <= NIBBLE + 1, "every mode code fits its nibble");
_Static_assert(BRAID_MAX_GROUP_SHARDS == NIBBLE, "a group's counts fill their nibbles");
_Static_assert(2 * BRAID_MAX_GROUP_SHARDS <= SHARD_INDEX + 1, "every shard index fits its bits");
_Static_assert((0xff >> DEPTH_SHIFT) + 1 == BRAID_MAX_DEPTH, "the depth fills the top bits");
_Static_assert(BRAID_MAX_PATH_INDEX == NIBBLE + 1, "a window counts every path index");

// The control class (braid_proto::redundancy::CLASS_CONTROL): path
// reports and echoes inside data packets, always for user space.
#define CLASS_CONTROL 255
#define UNDERLAY_LEN (sizeof(struct iphdr) + sizeof(struct udphdr))
#define MAX_HEADER (BRAID_DATA_HEADER_LEN + 2 * BRAID_MAX_ROUTE_LEN)
#define KERNEL_HEADER (BRAID_DATA_HEADER_LEN + 2 * BRAID_KTRANSIT)
#define UNDERLAY_TTL 64
// Where the braid header starts in a received frame: Ethernet, IPv4
// without options, UDP.
#define RX_BRAID (ETH_HLEN + UNDERLAY_LEN)

#endif
