#!/usr/bin/env bash
# What UDP segmentation offload (UDP_SEGMENT, "GSO") saves a sender of
# equal-sized datagrams, against sendmmsg of the same batch: CPU time per
# datagram (the sender's system call and the softirq work it sets off on
# its CPU, the receiver's included), 32 datagrams per call, across a veth
# pair between two namespaces, with the veth's UDP segmentation on (the
# batch crosses as one packet) and off (the stack cuts it up before the
# device, as before a wire). Weighed for braid's user path
# (docs/performance.md, "The user path: where its time goes").
# Root; clang or cc; uses 198.18.0.1-2 in namespaces braid-gso-a/b,
# removed on exit.
#   scripts/udp-gso-bench.sh [runs]
set -euo pipefail
runs=${1:-3}
[ "$(id -u)" = 0 ] || { echo "udp-gso-bench: needs root (namespaces)" >&2; exit 1; }
cc=$(command -v cc || command -v clang) || { echo "udp-gso-bench: needs a C compiler" >&2; exit 1; }
dir=$(mktemp -d)
cleanup() {
    ip netns del braid-gso-a 2>/dev/null || true
    ip netns del braid-gso-b 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
cat > "$dir/gso.c" <<'C'
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif
int main(int argc, char **argv) {
    int gso = strcmp(argv[1], "gso") == 0, calls = atoi(argv[2]), size = atoi(argv[3]);
    int s = socket(AF_INET, SOCK_DGRAM, 0), sb = 4 << 20;
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sb, sizeof sb);
    struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons(9999)};
    inet_pton(AF_INET, "198.18.0.2", &d.sin_addr);
    static char buf[32][2048];
    struct iovec iov[32];
    struct mmsghdr m[32];
    memset(m, 0, sizeof m);
    for (int i = 0; i < 32; i++) {
        iov[i].iov_base = buf[i];
        iov[i].iov_len = size;
        m[i].msg_hdr.msg_name = &d;
        m[i].msg_hdr.msg_namelen = sizeof d;
        m[i].msg_hdr.msg_iov = &iov[i];
        m[i].msg_hdr.msg_iovlen = 1;
    }
    char ctl[CMSG_SPACE(sizeof(uint16_t))];
    struct msghdr g = {.msg_name = &d, .msg_namelen = sizeof d, .msg_iov = iov,
                       .msg_iovlen = 32, .msg_control = ctl, .msg_controllen = sizeof ctl};
    struct cmsghdr *c = CMSG_FIRSTHDR(&g);
    c->cmsg_level = SOL_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    *(uint16_t *)CMSG_DATA(c) = size;
    struct timespec a, b;
    long sent = 0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (int i = 0; i < calls; i++) {
        int n = gso ? (sendmsg(s, &g, 0) < 0 ? -1 : 32) : sendmmsg(s, m, 32, 0);
        if (n < 0 && errno != ENOBUFS && errno != EAGAIN) {
            perror(gso ? "sendmsg (UDP_SEGMENT)" : "sendmmsg");
            return 1;
        }
        if (n > 0) sent += n;
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    double us = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
    printf("%.3f\n", us / (sent ? sent : 1));
    return 0;
}
C
"$cc" -O2 -o "$dir/gso" "$dir/gso.c"
ip netns add braid-gso-a
ip netns add braid-gso-b
ip -n braid-gso-a link add va type veth peer name vb netns braid-gso-b
ip -n braid-gso-a addr add 198.18.0.1/24 dev va
ip -n braid-gso-b addr add 198.18.0.2/24 dev vb
ip -n braid-gso-a link set va up
ip -n braid-gso-b link set vb up
# A receiver that never reads: its socket fills and the kernel drops the
# rest, as the same work for both senders.
ip netns exec braid-gso-b python3 -c '
import socket, signal
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.18.0.2", 9999))
signal.pause()' &
receiver=$!
trap 'kill $receiver 2>/dev/null || true; cleanup' EXIT
ip netns exec braid-gso-a ping -c 1 -W 2 -q 198.18.0.2 >/dev/null
cpu=$(( $(nproc) > 1 ? 1 : 0 ))
printf '%-26s %6s %22s %22s\n' "veth UDP segmentation" bytes "sendmmsg us/datagram" "UDP_SEGMENT us/datagram"
for seg in on off; do
    ip netns exec braid-gso-a ethtool -K va tx-udp-segmentation "$seg" >/dev/null
    for size in 1400 200; do
        plain=() gso=()
        for _ in $(seq "$runs"); do
            plain+=("$(ip netns exec braid-gso-a taskset -c $cpu "$dir/gso" plain 30000 "$size")")
            gso+=("$(ip netns exec braid-gso-a taskset -c $cpu "$dir/gso" gso 30000 "$size")")
        done
        printf '%-26s %6s %22s %22s\n' "$seg" "$size" "${plain[*]}" "${gso[*]}"
    done
done
