//! The kernel data path's programs, run by the kernel on crafted packets
//! (`BPF_PROG_TEST_RUN`) and held against braid's user-space code: the
//! forwarding step against `forward_in_place`, the egress's verdicts
//! against `EgressSession` (a property test over arbitrary packet
//! sequences), the classifier against `Classifier::classify`, the
//! encoder's headers against `DataHeader::parse`. Needs root (loading
//! eBPF); without it, or without the objects, every test is listed as
//! ignored with the reason.
//!
//! `braid_tx` itself (the TUN device's transmit side) sees bare IP
//! packets, which a test run cannot give a tc program (it always builds
//! an Ethernet frame); its twin `braid_tx_l2` runs the same encoder on
//! the frame, so the encoder is tested through it, and `braid_tx` in the
//! lab (crates/cli/tests/lab.rs).

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

use braid_bpf::compile::{self, IngressPath};
use braid_bpf::maps::{self, Neighbor, Session, SessionKey, Settings, WindowKey};
use braid_bpf::{Datapath, Program};
use braid_proto::classify::{inspect, ClassRule, Classifier, Match, PortRange};
use braid_proto::redundancy::{EgressConfig, EgressSession, Mode, PathState, ProvenWindow};
use braid_proto::time::Instant;
use braid_wire::control::LATEST_MASK;
use braid_wire::data::{data_send_order, forward_in_place, Forward};
use braid_wire::{DataFlags, DataHeader, Group, NodeId, RedundancyMode};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const ME: u16 = 5;
const PORT: u16 = 6868;
const OUR_ADDR: [u8; 4] = [198, 18, 0, 5];
/// TC_ACT_UNSPEC (TCX_NEXT): passed on, to the stack and user space.
const PASS: u32 = u32::MAX;
const TC_ACT_SHOT: u32 = 2;
const TC_ACT_REDIRECT: u32 = 7;

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip runs");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A permanent neighbor entry on d0: `addr` (IPv4 or IPv6) at `mac`.
fn neighbor_on_d0(addr: &str, mac: &str) {
    ip(&[
        "neigh",
        "replace",
        addr,
        "lladdr",
        mac,
        "dev",
        "d0",
        "nud",
        "permanent",
    ]);
}

fn ifindex(name: &str) -> u32 {
    nix::net::if_::if_nametoindex(name).expect("the interface exists")
}

fn be(a: [u8; 4]) -> u32 {
    u32::from_ne_bytes(a)
}

/// A data path for node ME with `flags` on, neighbors 6 and 7 on the
/// veth pair, our address local, the default window.
fn fresh(flags: u32) -> Datapath {
    let mut dp = Datapath::load(ME, PORT, 64, 16).expect("the data path loads");
    let d0 = ifindex("d0");
    dp.set_settings(Settings {
        flags,
        window_mask: 8191,
        tun_ifindex: 1,
        segmenter_ifindex: 0,
        hop_limit: 64,
        pad: [0; 7],
    })
    .unwrap();
    dp.set_local(be(OUR_ADDR), d0).unwrap();
    for n in [6u8, 7] {
        dp.set_neighbor(
            u16::from(n),
            Neighbor {
                ifindex: d0,
                addr_be: be([198, 18, 0, n]),
                src_be: be(OUR_ADDR),
                pad: 0,
            },
        )
        .unwrap();
    }
    dp
}

fn stat(dp: &Datapath, name: &str) -> u64 {
    dp.stats()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no counter {name}"))
        .1
}

/// The Internet checksum of `bytes` (smoltcp's, braid's one): what to
/// write in a header whose checksum field is zero, or zero over a header
/// whose checksum is right.
fn checksum(bytes: &[u8]) -> u16 {
    !smoltcp::wire::checksum::data(bytes)
}

/// An IPv4 header of `total` bytes (don't fragment, time to live 64),
/// checksum filled.
fn ipv4_header(src: [u8; 4], dst: [u8; 4], protocol: u8, dscp: u8, total: usize) -> Vec<u8> {
    let mut h = vec![0u8; 20];
    let mut ip = smoltcp::wire::Ipv4Packet::new_unchecked(&mut h);
    ip.set_version(4);
    ip.set_header_len(20);
    ip.set_dscp(dscp);
    ip.set_total_len(total as u16);
    ip.set_dont_frag(true);
    ip.set_hop_limit(64);
    ip.set_next_header(protocol.into());
    ip.set_src_addr(src.into());
    ip.set_dst_addr(dst.into());
    ip.fill_checksum();
    h
}

/// An Ethernet frame carrying UDP from `src` to `dst` (to the braid port).
fn underlay(src: [u8; 4], dst: [u8; 4], dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 14];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 5]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f.extend(ipv4_header(src, dst, 17, 0, 28 + payload.len()));
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

/// A user packet: IPv4 UDP (or `protocol`) to `dst`.
fn user_packet(dst: [u8; 4], protocol: u8, dscp: u8, sport: u16, dport: u16) -> Vec<u8> {
    let body = b"user payload, forty bytes long, or so..";
    let mut p = ipv4_header([198, 19, 1, 1], dst, protocol, dscp, 28 + body.len());
    p.extend_from_slice(&sport.to_be_bytes());
    p.extend_from_slice(&dport.to_be_bytes());
    p.extend_from_slice(&((8 + body.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(body);
    p
}

/// An IPv6 address in 2001:db8::/32 (documentation) ending in `tail`.
fn v6(tail: [u8; 6]) -> [u8; 16] {
    let mut a = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    a[10..].copy_from_slice(&tail);
    a
}

/// A user packet: IPv6 UDP (or `protocol`, with the same eight bytes) from
/// 2001:db8::1:1 to `dst`, hop limit 64.
fn user_packet6(dst: [u8; 16], protocol: u8, dscp: u8, sport: u16, dport: u16) -> Vec<u8> {
    let body = b"user payload, forty bytes long, or so..";
    let mut p = vec![0u8; 40];
    p[0] = 0x60 | (dscp >> 2);
    p[1] = (dscp & 3) << 6;
    p[4..6].copy_from_slice(&((8 + body.len()) as u16).to_be_bytes());
    p[6] = protocol;
    p[7] = 64;
    p[8..24].copy_from_slice(&v6([0, 0, 0, 0, 1, 1]));
    p[24..40].copy_from_slice(&dst);
    p.extend_from_slice(&sport.to_be_bytes());
    p.extend_from_slice(&dport.to_be_bytes());
    p.extend_from_slice(&((8 + body.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(body);
    p
}

fn header(mode: RedundancyMode, ingress: u16, egress: u16, seq: u32) -> DataHeader {
    DataHeader {
        flags: DataFlags::empty(),
        mode,
        path: 1,
        route_ptr: 0,
        ingress: NodeId(ingress),
        egress: NodeId(egress),
        seq,
        group: Group::NONE,
        hop_limit: 64,
        class: 3,
        epoch: 0xabcd_0001,
    }
}

/// A braid datagram: `h` with `route`, then `payload`.
fn datagram(h: DataHeader, route: &[u16], payload: &[u8]) -> Vec<u8> {
    let route: Vec<NodeId> = route.iter().map(|&n| NodeId(n)).collect();
    let mut b = vec![0u8; DataHeader::encoded_len(route.len()) + payload.len()];
    let n = h.emit(&route, &mut b).unwrap();
    b[n..].copy_from_slice(payload);
    b
}

/// A datagram as node `from` sends it toward ME: emitted, then stepped
/// by `forward_in_place` at every node before ME on its route.
fn arriving(h: DataHeader, route: &[u16], payload: &[u8]) -> Vec<u8> {
    let mut b = datagram(h, route, payload);
    let mut at = h.ingress;
    while at != NodeId(ME) {
        match forward_in_place(&mut b, at).unwrap() {
            Forward::To(next) => at = next,
            other => panic!("the route does not reach ME: {other:?}"),
        }
    }
    b
}

const RX: usize = 14 + 28;

fn run(dp: &mut Datapath, p: Program, frame: &[u8]) -> (u32, Vec<u8>) {
    dp.test_run(p, frame, &[]).expect("the test run runs")
}

// ------------------------------------------------------------- transit

fn transit_follows_the_route_like_user_space() {
    let mut dp = fresh(maps::TRANSIT | maps::EGRESS);
    for (route, egress) in [(&[ME, 6, 8][..], 9), (&[2, ME, 7], 9), (&[ME], 7)] {
        let h = header(RedundancyMode::Mirror, 1, egress, 77);
        let braid = arriving(h, route, b"inner");
        let frame = underlay([198, 18, 0, 1], OUR_ADDR, PORT, &braid);
        let (verdict, out) = run(&mut dp, Program::Rx, &frame);
        assert_eq!(verdict, TC_ACT_REDIRECT, "route {route:?}");
        // The braid bytes as user space would leave them.
        let mut expected = braid.clone();
        let next = match forward_in_place(&mut expected, NodeId(ME)).unwrap() {
            Forward::To(n) => n,
            other => panic!("{other:?}"),
        };
        assert_eq!(&out[RX..], &expected[..], "route {route:?}");
        // The underlay now goes from us to the next hop.
        assert_eq!(&out[14 + 12..14 + 16], &OUR_ADDR);
        assert_eq!(&out[14 + 16..14 + 20], &[198, 18, 0, next.0 as u8]);
        assert_eq!(out[14 + 8], 64, "TTL");
        assert_eq!(checksum(&out[14..34]), 0, "IP checksum");
        assert_eq!(
            &out[14 + 26..14 + 28],
            &[0, 0],
            "no UDP checksum stays none"
        );
        assert_eq!(&out[14 + 22..14 + 24], &PORT.to_be_bytes());
        // With a UDP checksum, it is kept right for the new addresses and
        // header bytes (it was zeroed: a device without checksum offload
        // further on then finished a partial one from zero, and a daemon
        // behind it dropped every packet).
        let mut summed = frame.clone();
        fill_udp_checksum(&mut summed);
        let (verdict, out) = run(&mut dp, Program::Rx, &summed);
        assert_eq!(verdict, TC_ACT_REDIRECT, "route {route:?}");
        assert_eq!(&out[RX..], &expected[..], "route {route:?}");
        assert_ne!(&out[14 + 26..14 + 28], &[0, 0], "route {route:?}");
        assert_eq!(udp_checksum(&out), 0, "UDP checksum, route {route:?}");
    }
    assert_eq!(stat(&dp, "rx_forwarded"), 6);
}

/// The one's complement sum of an IPv4 UDP frame's pseudo header and
/// datagram, complemented: 0 when its checksum is right.
fn udp_checksum(frame: &[u8]) -> u16 {
    let ip = &frame[14..34];
    let udp = &frame[34..];
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&ip[12..20]);
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&(udp.len() as u16).to_be_bytes());
    pseudo.extend_from_slice(udp);
    if pseudo.len() % 2 == 1 {
        pseudo.push(0);
    }
    checksum(&pseudo)
}

/// Fills the UDP checksum of an IPv4 UDP frame whose field is zero.
fn fill_udp_checksum(frame: &mut [u8]) {
    frame[40..42].copy_from_slice(&[0, 0]);
    let sum = match udp_checksum(frame) {
        0 => 0xffff,
        s => s,
    };
    frame[40..42].copy_from_slice(&sum.to_be_bytes());
}

fn transit_passes_up_what_user_space_refuses() {
    let mut dp = fresh(maps::TRANSIT | maps::EGRESS);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("pass_not_on_route", {
            // Node 4 should hold it now, not ME.
            let mut b = datagram(header(RedundancyMode::Single, 1, 9, 1), &[4, 6], b"x");
            forward_in_place(&mut b, NodeId(1)).unwrap();
            b
        }),
        ("pass_hop_limit_exceeded", {
            let mut h = header(RedundancyMode::Single, 1, 9, 1);
            h.hop_limit = 1;
            arriving(h, &[ME, 6], b"x")
        }),
        (
            "pass_no_neighbor",
            arriving(header(RedundancyMode::Single, 1, 9, 1), &[ME, 42], b"x"),
        ),
        ("pass_waypoint", {
            // The route ends here at a waypoint: user space routes it on
            // (Forward::RouteOn), though egress 7 is a neighbor.
            let mut h = header(RedundancyMode::Single, 1, 7, 1);
            h.flags.insert(DataFlags::WAYPOINT);
            let b = arriving(h, &[4, ME], b"x");
            assert_eq!(
                forward_in_place(&mut b.clone(), NodeId(ME)),
                Ok(Forward::RouteOn)
            );
            b
        }),
    ];
    for (counter, braid) in cases {
        let before = stat(&dp, counter);
        let frame = underlay([198, 18, 0, 1], OUR_ADDR, PORT, &braid);
        let (verdict, out) = run(&mut dp, Program::Rx, &frame);
        assert_eq!(verdict, PASS, "{counter}");
        assert_eq!(out, frame, "{counter}: passed up unchanged");
        assert_eq!(stat(&dp, counter), before + 1, "{counter}");
    }
    assert_eq!(stat(&dp, "rx_forwarded"), 0);
}

/// With authentication on, transit and egress take data only from an
/// authenticated neighbor's address on that interface, and only as the
/// route says (the user-space rule, `wire::data::previous_hop`).
fn only_authenticated_neighbors_data_is_taken_and_only_as_routed() {
    let d0 = ifindex("d0");
    // struct __sk_buff: ifindex at 40 (the interface the frame came in on).
    let mut ctx = vec![0u8; 192];
    ctx[40..44].copy_from_slice(&d0.to_ne_bytes());
    let from = |dp: &mut Datapath, src: [u8; 4], braid: &[u8]| {
        let frame = underlay(src, OUR_ADDR, PORT, braid);
        dp.test_run(Program::Rx, &frame, &ctx).unwrap().0
    };
    let mut dp = fresh(maps::TRANSIT | maps::EGRESS | maps::AUTHENTICATED);
    let node1 = maps::SenderKey {
        ifindex: d0,
        addr_be: be([198, 18, 0, 1]),
    };
    dp.set_sender(node1, 1).unwrap();
    dp.set_sender(
        maps::SenderKey {
            ifindex: d0,
            addr_be: be([198, 18, 0, 6]),
        },
        6,
    )
    .unwrap();
    let transit = arriving(header(RedundancyMode::Single, 1, 9, 1), &[ME, 6], b"x");
    assert_eq!(from(&mut dp, [198, 18, 0, 1], &transit), TC_ACT_REDIRECT);
    assert_eq!(stat(&dp, "rx_forwarded"), 1);
    // The same from an address no authenticated neighbor uses.
    assert_eq!(from(&mut dp, [198, 18, 0, 99], &transit), TC_ACT_SHOT);
    assert_eq!(stat(&dp, "rx_unauthenticated"), 1);
    // From neighbor 6, which the route does not put before us.
    assert_eq!(from(&mut dp, [198, 18, 0, 6], &transit), TC_ACT_SHOT);
    assert_eq!(stat(&dp, "rx_wrong_previous_hop"), 1);
    // A route that has 2 before us, sent by node 1.
    let via2 = arriving(header(RedundancyMode::Single, 1, 9, 1), &[2, ME, 6], b"x");
    assert_eq!(from(&mut dp, [198, 18, 0, 1], &via2), TC_ACT_SHOT);
    assert_eq!(stat(&dp, "rx_wrong_previous_hop"), 2);
    // At the egress: from 6, as the route says, delivered; from 1, not.
    let (frame, _) = to_me(RedundancyMode::Single, 1, 5, 3);
    let braid = &frame[RX..];
    assert_eq!(from(&mut dp, [198, 18, 0, 1], braid), TC_ACT_SHOT);
    assert_eq!(stat(&dp, "rx_wrong_previous_hop"), 3);
    assert_eq!(stat(&dp, "rx_delivered"), 0, "refused before the window");
    assert_eq!(from(&mut dp, [198, 18, 0, 6], braid), TC_ACT_REDIRECT);
    assert_eq!(stat(&dp, "rx_delivered"), 1);
    // A tree-mode packet (no route) from an authenticated neighbor is
    // not checked against a route: it goes on as without authentication.
    let mut h = header(RedundancyMode::Tree, 2, ME, 9);
    h.class = 0;
    let tree = datagram(h, &[], b"x");
    let wrong_hops = stat(&dp, "rx_wrong_previous_hop");
    assert_eq!(from(&mut dp, [198, 18, 0, 6], &tree), PASS);
    assert_eq!(stat(&dp, "rx_wrong_previous_hop"), wrong_hops);
    // Once the neighbor's place is forgotten, its data is refused.
    dp.remove_sender(node1).unwrap();
    assert_eq!(from(&mut dp, [198, 18, 0, 1], &transit), TC_ACT_SHOT);
    assert_eq!(stat(&dp, "rx_unauthenticated"), 2);
    // Without authentication the same stranger's packet is forwarded.
    let mut open = fresh(maps::TRANSIT | maps::EGRESS);
    assert_eq!(from(&mut open, [198, 18, 0, 99], &transit), TC_ACT_REDIRECT);
}

fn malformed_and_foreign_packets_pass_up_unchanged() {
    let mut dp = fresh(maps::TRANSIT | maps::EGRESS);
    let good = arriving(
        header(RedundancyMode::Single, 1, 9, 1),
        &[ME, 6],
        b"payload",
    );
    let mut bad_mode = good.clone();
    bad_mode[1] = (bad_mode[1] & 0xf0) | 9;
    let mut bad_pointer = good.clone();
    bad_pointer[3] = (bad_pointer[3] & 0xc0) | 5; // beyond the route's 2
    let mut bad_group = good.clone();
    bad_group[12] = 0x21; // a group of 2+1, shard 0, but ...
    bad_group[13] = 2; // ... shard 2 is repair without the parity flag
    let truncated_route = good[..21].to_vec();
    let truncated_header = good[..12].to_vec();
    let control = {
        let mut c = good.clone();
        c[0] = 0x11;
        c
    };
    let malformed = [
        ("bad mode", bad_mode),
        ("pointer past the route", bad_pointer),
        ("bad group", bad_group),
        ("route cut short", truncated_route),
        ("header cut short", truncated_header),
    ];
    for (what, braid) in malformed {
        assert!(
            DataHeader::parse(&braid).is_err(),
            "{what}: user space refuses it"
        );
        let before = stat(&dp, "pass_malformed");
        let frame = underlay([198, 18, 0, 1], OUR_ADDR, PORT, &braid);
        let (verdict, out) = run(&mut dp, Program::Rx, &frame);
        assert_eq!((verdict, &out), (PASS, &frame), "{what}");
        assert_eq!(stat(&dp, "pass_malformed"), before + 1, "{what}");
    }
    let foreign = [
        (
            "control message",
            underlay([198, 18, 0, 1], OUR_ADDR, PORT, &control),
        ),
        (
            "another port",
            underlay([198, 18, 0, 1], OUR_ADDR, 53, &good),
        ),
        (
            "not our address",
            underlay([198, 18, 0, 1], [198, 18, 0, 99], PORT, &good),
        ),
        ("too short for Ethernet and IP", vec![0u8; 20]),
    ];
    for (what, frame) in foreign {
        let (verdict, out) = run(&mut dp, Program::Rx, &frame);
        assert_eq!((verdict, &out), (PASS, &frame), "{what}");
    }
    assert_eq!(stat(&dp, "rx_forwarded") + stat(&dp, "rx_delivered"), 0);
}

// -------------------------------------------------------------- egress

/// The inner packet a datagram for ME carries.
fn to_me(mode: RedundancyMode, epoch: u32, seq: u32, class: u8) -> (Vec<u8>, Vec<u8>) {
    let inner = user_packet([198, 19, 9, 9], 17, 0, 1000, 2000);
    let mut h = header(mode, 1, ME, seq);
    h.epoch = epoch;
    h.class = class;
    let braid = arriving(h, &[6], &inner);
    (underlay([198, 18, 0, 6], OUR_ADDR, PORT, &braid), inner)
}

fn a_clients_packets_go_to_user_space_where_copies_are_caught() {
    // 198.19.1.1 (user_packet's source) is a client an access point
    // advertises: its packets leave the kernel egress untouched and are
    // counted; another source's are delivered.
    let mut dp = fresh(maps::TRANSIT | maps::EGRESS);
    dp.set_copy_source(u32::from_ne_bytes([198, 19, 1, 1]), true)
        .unwrap();
    let (frame, _) = to_me(RedundancyMode::Single, 1, 1, 0);
    let (verdict, out) = run(&mut dp, Program::Rx, &frame);
    assert_eq!((verdict, &out), (PASS, &frame));
    assert_eq!(stat(&dp, "pass_copy_check"), 1);
    assert_eq!(
        stat(&dp, "rx_delivered"),
        0,
        "not taken by the kernel's window"
    );
    dp.set_copy_source(u32::from_ne_bytes([198, 19, 1, 1]), false)
        .unwrap();
    let (verdict, _) = run(&mut dp, Program::Rx, &frame);
    assert_eq!(verdict, TC_ACT_REDIRECT, "delivered by the kernel again");
    assert_eq!(stat(&dp, "pass_copy_check"), 1);
}

fn egress_delivers_each_packet_once_and_leaves_coded_modes_to_user_space() {
    let mut dp = fresh(maps::TRANSIT | maps::EGRESS);
    let (frame, inner) = to_me(RedundancyMode::Mirror, 1, 100, 3);
    let (verdict, out) = run(&mut dp, Program::Rx, &frame);
    assert_eq!(verdict, TC_ACT_REDIRECT);
    assert_eq!(&out[14..], &inner[..], "the user's packet behind Ethernet");
    let (verdict, _) = run(&mut dp, Program::Rx, &frame);
    assert_eq!(verdict, TC_ACT_SHOT, "the second copy");
    assert_eq!(
        (stat(&dp, "rx_delivered"), stat(&dp, "rx_duplicate")),
        (1, 1)
    );
    // Per-path counts for the path reports.
    let windows = dp.windows();
    assert_eq!(windows.len(), 1);
    assert_eq!(
        windows[0].0,
        WindowKey {
            ingress: 1,
            class_id: 3,
            pad: 0
        }
    );
    assert_eq!(windows[0].1.received[1], 2);
    // What the kernel leaves to user space: the control class, groups.
    for (what, frame) in [
        ("control class", to_me(RedundancyMode::Single, 1, 5, 255).0),
        ("parity mode", {
            let inner = user_packet([198, 19, 9, 9], 17, 0, 1, 2);
            let mut h = header(RedundancyMode::Parity, 1, ME, 9);
            h.group = Group {
                data: 3,
                repair: 1,
                index: 0,
                depth: 1,
            };
            underlay([198, 18, 0, 6], OUR_ADDR, PORT, &arriving(h, &[6], &inner))
        }),
    ] {
        let (verdict, out) = run(&mut dp, Program::Rx, &frame);
        assert_eq!((verdict, &out), (PASS, &frame), "{what}");
    }
    assert_eq!(stat(&dp, "pass_user_mode"), 2);
    // Not IP inside: dropped, counted (user space would write it to the
    // TUN device, which drops it).
    let mut h = header(RedundancyMode::Single, 1, ME, 1);
    h.class = 4;
    let frame = underlay(
        [198, 18, 0, 6],
        OUR_ADDR,
        PORT,
        &arriving(h, &[6], b"\x00junk"),
    );
    assert_eq!(run(&mut dp, Program::Rx, &frame).0, TC_ACT_SHOT);
    assert_eq!(stat(&dp, "rx_not_ip"), 1);
}

fn egress_routes_a_delivered_packet_to_its_next_hop_when_asked() {
    // kernel_delivery = "route": an IPv4 packet the kernel's routing sends
    // out another interface leaves from braid_rx, its TTL one less and its
    // header checksum still right; what it cannot (TTL 1, no route) goes
    // to the TUN device as before.
    neighbor_on_d0("198.18.0.8", "02:00:00:00:00:08");
    let mut dp = fresh(maps::TRANSIT | maps::EGRESS | maps::ROUTE_DELIVERED);
    let arriving_with = |inner: &[u8], seq: u32| {
        let h = header(RedundancyMode::Single, 1, ME, seq);
        underlay([198, 18, 0, 6], OUR_ADDR, PORT, &arriving(h, &[6], inner))
    };
    let inner = user_packet([198, 18, 0, 8], 17, 0, 1000, 2000);
    let (verdict, out) = run(&mut dp, Program::Rx, &arriving_with(&inner, 1));
    assert_eq!(verdict, TC_ACT_REDIRECT);
    assert_eq!(stat(&dp, "rx_routed"), 1);
    let routed = &out[14..];
    assert_eq!(routed.len(), inner.len());
    assert_eq!(routed[8], inner[8] - 1, "TTL");
    assert_eq!(checksum(&routed[..20]), 0, "header checksum");
    assert_eq!(&routed[..8], &inner[..8]);
    assert_eq!(&routed[12..], &inner[12..]);
    // TTL 1 (the stack sends the ICMP error) and no route: to the TUN
    // device, unchanged.
    let mut last_hop = user_packet([198, 18, 0, 8], 17, 0, 1000, 2000);
    last_hop[8] = 1;
    let c = checksum(&{
        let mut h = last_hop[..20].to_vec();
        h[10] = 0;
        h[11] = 0;
        h
    });
    last_hop[10..12].copy_from_slice(&c.to_be_bytes());
    let nowhere = user_packet([203, 0, 113, 9], 17, 0, 1000, 2000);
    for (seq, p) in [(2, last_hop), (3, nowhere)] {
        let (verdict, out) = run(&mut dp, Program::Rx, &arriving_with(&p, seq));
        assert_eq!((verdict, &out[14..]), (TC_ACT_REDIRECT, &p[..]));
    }
    assert_eq!((stat(&dp, "rx_delivered"), stat(&dp, "rx_routed")), (3, 1));
    // IPv6: the hop limit one less (no header checksum); a hop limit of 1
    // and no route go to the TUN device unchanged.
    neighbor_on_d0("2001:db8::8:8", "02:00:00:00:00:08");
    let inner = user_packet6(v6([0, 0, 0, 8, 0, 8]), 17, 0, 1000, 2000);
    let (verdict, out) = run(&mut dp, Program::Rx, &arriving_with(&inner, 4));
    assert_eq!(verdict, TC_ACT_REDIRECT);
    assert_eq!(stat(&dp, "rx_routed"), 2);
    let routed = &out[14..];
    assert_eq!(routed[7], inner[7] - 1, "hop limit");
    assert_eq!(&routed[..7], &inner[..7]);
    assert_eq!(&routed[8..], &inner[8..]);
    let mut last_hop = inner.clone();
    last_hop[7] = 1;
    let nowhere = user_packet6(
        [0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9],
        17,
        0,
        1,
        2,
    );
    for (seq, p) in [(5, last_hop), (6, nowhere)] {
        let (verdict, out) = run(&mut dp, Program::Rx, &arriving_with(&p, seq));
        assert_eq!((verdict, &out[14..]), (TC_ACT_REDIRECT, &p[..]));
    }
    assert_eq!((stat(&dp, "rx_delivered"), stat(&dp, "rx_routed")), (6, 2));
}

fn gso_datagrams_are_dropped_and_counted() {
    let mut dp = fresh(maps::TRANSIT | maps::EGRESS);
    let (frame, _) = to_me(RedundancyMode::Single, 1, 1, 3);
    // struct __sk_buff up to gso_size: gso_segs at 164, gso_size at 176.
    let mut ctx = vec![0u8; 192];
    ctx[164..168].copy_from_slice(&2u32.to_ne_bytes());
    ctx[176..180].copy_from_slice(&100u32.to_ne_bytes());
    let (verdict, _) = dp.test_run(Program::Rx, &frame, &ctx).unwrap();
    assert_eq!(verdict, TC_ACT_SHOT);
    assert_eq!(stat(&dp, "rx_gso"), 1);
}

/// One step of the dedup comparison: a packet (epoch from a few, and a
/// number), or the ingress's proof (of an epoch from the same few, its
/// next number that far past the last packet's).
#[derive(Debug, Clone, Copy)]
enum Step {
    Packet(u32, u32),
    Proof(u32, i64),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    // Numbers near a base that may sit just below the wrap, moving by
    // small steps, back, and now and then far; now and then a proof.
    (any::<u32>(), prop::bool::ANY).prop_flat_map(|(base, near_wrap)| {
        let base = if near_wrap { u32::MAX - 40 } else { base };
        prop::collection::vec(
            (
                prop::sample::select(vec![1u32, 1, 1, 1, 2, 2, 3]),
                prop_oneof![
                    8 => -70i64..70,
                    1 => -20_000i64..20_000,
                    1 => Just(1i64 << 31),
                ],
                prop::bool::weighted(0.08),
            ),
            1..80,
        )
        .prop_map(move |steps| {
            let mut at = base;
            steps
                .into_iter()
                .map(|(epoch, step, proof)| {
                    if proof {
                        return Step::Proof(epoch, step);
                    }
                    at = at.wrapping_add(step as u32);
                    Step::Packet(epoch, at)
                })
                .collect()
        })
    })
}

/// One sequence of packets and proofs through the kernel's window and
/// the node's, each packet's verdicts compared.
fn dedup_agrees(
    dp: &std::cell::RefCell<Datapath>,
    window: u32,
    seq: &[Step],
) -> Result<(), TestCaseError> {
    let key = WindowKey {
        ingress: 1,
        class_id: 3,
        pad: 0,
    };
    let mut dp = dp.borrow_mut();
    for (k, _) in dp.windows() {
        dp.remove_window(k).unwrap();
    }
    let config = EgressConfig {
        dedup_window: window,
        ..EgressConfig::default()
    };
    let mut user = EgressSession::new(config, Instant::ZERO);
    let mut last = 0u32;
    let mut proven = false;
    for (i, &step) in seq.iter().enumerate() {
        let (epoch, n) = match step {
            Step::Packet(epoch, n) => (epoch, n),
            Step::Proof(epoch, ahead) => {
                // What the daemon does on a proof: the node takes
                // it (delivering what it held: packets the kernel
                // passed up), and the kernel's window becomes the
                // node's.
                if !user.wants_check(Instant::ZERO) {
                    continue;
                }
                let nonce = [i as u8; 8];
                user.asked(Instant::ZERO, nonce);
                let next = last.wrapping_add(ahead as u32);
                user.on_proof(Instant::ZERO, (epoch, next), nonce, &mut |_| {})
                    .unwrap();
                let p = ProvenWindow {
                    session: (NodeId(1), 3),
                    epoch,
                    retired: user.retired_epoch(),
                    window: user.window().clone(),
                };
                if let Some(current) = dp.window(key).unwrap() {
                    let w = braid_bpf::handover::take_over(current, &p, window - 1);
                    dp.set_window(key, &w).unwrap();
                }
                proven = true;
                continue;
            }
        };
        last = n;
        let (frame, _) = to_me(RedundancyMode::Mirror, epoch, n, 3);
        let braid = &frame[RX..];
        let pkt = DataHeader::parse(braid).unwrap();
        let mut delivered = false;
        user.receive(Instant::ZERO, &pkt, &mut |_| delivered = true);
        let (verdict, _) = run(&mut dp, Program::Rx, &frame);
        prop_assert_eq!(
            verdict == TC_ACT_REDIRECT,
            delivered,
            "packet {} (epoch {}, seq {:#x}) of {:?}",
            i,
            epoch,
            n,
            seq
        );
    }
    let Some(w) = dp.window(key).unwrap() else {
        // Only proofs, no packet.
        return Ok(());
    };
    let c = user.counters();
    prop_assert_eq!(w.epoch, user.epoch().unwrap());
    if proven {
        // What the node took from its hold is counted there, not
        // in the kernel: the counts part there.
        return Ok(());
    }
    prop_assert_eq!(
        (w.delivered, w.duplicates, w.too_old, w.too_far_ahead),
        (c.delivered, c.duplicates, c.too_old, c.too_far_ahead)
    );
    prop_assert_eq!(
        (w.old_epoch, w.epoch_changes, u64::from(w.unproven)),
        (c.old_epoch, c.epoch_changes, c.unproven)
    );
    // The path reports' counts: arrivals, and the newest arrival
    // of the epoch in force (every packet here is on path 1).
    let reported = user.path_counts(Instant::ZERO);
    let received = reported.first().map_or(0, |r| r.received);
    prop_assert_eq!(w.received[1], received);
    let kernel_latest = (w.latest_ns[1] != 0).then(|| data_send_order(w.latest[1]) & LATEST_MASK);
    prop_assert_eq!(kernel_latest, reported.first().and_then(|r| r.latest));
    Ok(())
}

fn kernel_dedup_gives_the_user_space_verdicts() {
    use Step::{Packet, Proof};
    let dp = std::cell::RefCell::new(fresh(maps::TRANSIT | maps::EGRESS));
    // Found by this test in CI: a proof that moves the window more than
    // 2^31 numbers past the kernel's (the held jump) must move the
    // kernel's too.
    let far_proof = [
        Packet(1, 4294967255),
        Packet(1, 14),
        Packet(1, 83),
        Packet(1, 67),
        Packet(1, 80),
        Packet(1, 75),
        Packet(1, 61),
        Packet(1, 86),
        Packet(1, 74),
        Packet(1, 2147483722),
        Packet(1, 2147483682),
        Packet(1, 2147483741),
        Packet(1, 2147483739),
        Proof(1, -5),
        Packet(1, 91),
        Packet(1, 45),
        Packet(1, 4294967276),
        Packet(1, 15),
        Packet(1, 29),
        Packet(1, 4294967295),
        Proof(1, 0),
        Packet(1, 14),
        Packet(1, 14),
    ];
    for window in [64u32, 8192] {
        dp.borrow_mut()
            .set_settings(Settings {
                flags: maps::TRANSIT | maps::EGRESS,
                window_mask: window - 1,
                tun_ifindex: 1,
                segmenter_ifindex: 0,
                hop_limit: 64,
                pad: [0; 7],
            })
            .unwrap();
        if let Err(e) = dedup_agrees(&dp, window, &far_proof) {
            panic!("window {window}, the far proof: {e}");
        }
        let mut runner = TestRunner::new(Config {
            cases: 64,
            failure_persistence: None,
            ..Config::default()
        });
        let result = runner.run(&steps(), |seq| dedup_agrees(&dp, window, &seq));
        if let Err(e) = result {
            panic!("window {window}: {e}");
        }
    }
}

// ------------------------------------------------------------- ingress

const EGRESS_NODE: u16 = 9;

/// A data path that encodes class `class` toward node 9 (198.19.9.0/24,
/// 2001:db8:9::/48)
/// in `mode` over `paths` (transit lists; the first hop is 6 or 7).
fn ingress(mode: Mode, paths: &[&[NodeId]], weights: &[u32]) -> Datapath {
    let mut dp = fresh(maps::TRANSIT | maps::EGRESS | maps::INGRESS);
    dp.set_prefix(be([198, 19, 9, 0]), 24, EGRESS_NODE).unwrap();
    dp.set_prefix6(V6_NET, 48, EGRESS_NODE).unwrap();
    dp.set_ruleset(&compile::ruleset(&Classifier::example()).unwrap())
        .unwrap();
    let ps: Vec<IngressPath<'_>> = paths
        .iter()
        .enumerate()
        .map(|(i, t)| IngressPath {
            slot: i as u8,
            transit: t,
            state: PathState {
                up: true,
                weight: weights[i],
                loss: 0.0,
            },
        })
        .collect();
    let s = compile::session(NodeId(EGRESS_NODE), mode, 0x5eed, &ps).unwrap();
    // Classifier::example's classes: 0, voip, dns, office.
    for class_id in 0..=3 {
        let key = SessionKey {
            egress: EGRESS_NODE,
            class_id,
            pad: 0,
        };
        dp.start_seq(key, 1000).unwrap();
        dp.set_session(key, &s).unwrap();
    }
    dp
}

/// The user packet as a segment from the segmenter: behind Ethernet (of
/// the packet's IP version).
fn segment(packet: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    let ethertype: u16 = if packet[0] >> 4 == 6 { 0x86dd } else { 0x0800 };
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(packet);
    f
}

/// The IPv6 prefix the ingress tests route to EGRESS_NODE.
const V6_NET: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

/// Parses what the encoder sent: (header, route, payload).
fn sent(out: &[u8]) -> (DataHeader, Vec<u16>, Vec<u8>) {
    assert_eq!(&out[12..14], &[8, 0]);
    assert_eq!(checksum(&out[14..34]), 0, "outer IP checksum");
    assert_eq!(out[14 + 9], 17);
    let udp_len = u16::from_be_bytes([out[14 + 24], out[14 + 25]]) as usize;
    assert_eq!(udp_len, out.len() - 34, "UDP length");
    let pkt = DataHeader::parse(&out[RX..]).expect("a braid header user space reads");
    let route = pkt.route.iter().map(|n| n.0).collect();
    (pkt.header, route, pkt.payload.to_vec())
}

fn ingress_encodes_what_user_space_would_send() {
    let r67 = [NodeId(6), NodeId(8)];
    let mut dp = ingress(Mode::Single, &[&r67], &[1]);
    let voip = user_packet([198, 19, 9, 20], 17, 46, 4000, 5060);
    for n in 0..3u32 {
        let (verdict, out) = run(&mut dp, Program::TxL2, &segment(&voip));
        assert_eq!(verdict, TC_ACT_REDIRECT);
        let (h, route, payload) = sent(&out);
        assert_eq!(payload, voip);
        assert_eq!(route, vec![6, 8]);
        assert_eq!(&out[14 + 16..14 + 20], &[198, 18, 0, 6], "to the first hop");
        assert_eq!(&out[14 + 12..14 + 16], &OUR_ADDR);
        let class = Classifier::example().classify(&inspect(&voip).unwrap());
        let expected = DataHeader {
            flags: DataFlags::URGENT,
            mode: RedundancyMode::Single,
            path: 0,
            route_ptr: 1,
            ingress: NodeId(ME),
            egress: NodeId(EGRESS_NODE),
            seq: 1000 + n,
            group: Group::NONE,
            hop_limit: 63,
            class: class.class,
            epoch: 0x5eed,
        };
        assert_eq!(h, expected);
        // The first hop steps it on exactly as from user space.
        let mut braid = out[RX..].to_vec();
        assert_eq!(
            forward_in_place(&mut braid, NodeId(6)),
            Ok(Forward::To(NodeId(8)))
        );
    }
    let key = SessionKey {
        egress: EGRESS_NODE,
        class_id: 1,
        pad: 0,
    };
    let seq = dp.seq(key).unwrap().unwrap();
    assert_eq!((seq.next, seq.packets, seq.sent[0]), (1003, 3, 3));
    assert_eq!(stat(&dp, "tx_encapsulated"), 3);
}

fn ingress_stripes_by_the_table_and_pins_flows_by_their_hash() {
    let (a, b) = ([NodeId(6)], [NodeId(7)]);
    let mut dp = ingress(Mode::Stripe { pin_flows: false }, &[&a, &b], &[3, 1]);
    let table = compile::stripe_table(&[3, 1]);
    let p = user_packet([198, 19, 9, 20], 6, 0, 4000, 80);
    for n in 0..8u32 {
        let (_, out) = run(&mut dp, Program::TxL2, &segment(&p));
        let (h, route, _) = sent(&out);
        let want = table[((1000 + n) % 64) as usize];
        assert_eq!(h.path, want, "packet {n}");
        assert_eq!(route, vec![[6, 7][want as usize]]);
    }
    let mut dp = ingress(Mode::Stripe { pin_flows: true }, &[&a, &b], &[3, 1]);
    for sport in 1000..1040u16 {
        let p = user_packet([198, 19, 9, 20], 6, 0, sport, 80);
        let hash = inspect(&p).unwrap().flow_hash;
        let want = u8::from(hash % 4 >= 3);
        let (_, out) = run(&mut dp, Program::TxL2, &segment(&p));
        assert_eq!(sent(&out).0.path, want, "source port {sport}");
    }
}

fn ingress_mirror_sends_a_copy_per_path() {
    neighbor_on_d0("198.18.0.6", "02:00:00:00:00:06");
    neighbor_on_d0("198.18.0.7", "02:00:00:00:00:07");
    let long = [NodeId(6), NodeId(8)];
    let short = [NodeId(7)];
    let mut dp = ingress(Mode::Mirror(2), &[&long, &short], &[1, 1]);
    let p = user_packet([198, 19, 9, 20], 17, 0, 4000, 53);
    let (verdict, out) = run(&mut dp, Program::TxL2, &segment(&p));
    assert_eq!(verdict, TC_ACT_REDIRECT);
    // The longer header goes last: the packet left in the buffer.
    let (h, route, payload) = sent(&out);
    assert_eq!((h.path, route, payload), (0, vec![6, 8], p.clone()));
    assert_eq!(h.mode, RedundancyMode::Mirror);
    let stats = dp.stats();
    assert_eq!(stat(&dp, "tx_copies"), 2, "{stats:?}");
    assert_eq!(
        stat(&dp, "tx_no_neighbor") + stat(&dp, "tx_error"),
        0,
        "{stats:?}"
    );
    let key = SessionKey {
        egress: EGRESS_NODE,
        class_id: 2,
        pad: 0,
    };
    let seq = dp.seq(key).unwrap().unwrap();
    assert_eq!((seq.sent[0], seq.sent[1], seq.packets), (1, 1, 1));
}

// ---------------------------------------------------------------- trees

const CLIENT: [u8; 4] = [198, 18, 200, 100];

/// A data path for tree mode: neighbors 6, 7 and 8 on the veth pair,
/// each with a link address the kernel knows (the clones' destination
/// MACs).
fn trees(flags: u32) -> Datapath {
    let mut dp = fresh(flags);
    dp.set_neighbor(
        8,
        Neighbor {
            ifindex: ifindex("d0"),
            addr_be: be([198, 18, 0, 8]),
            src_be: be(OUR_ADDR),
            pad: 0,
        },
    )
    .unwrap();
    for n in [6, 7, 8] {
        neighbor_on_d0(&format!("198.18.0.{n}"), &format!("02:00:00:00:00:0{n}"));
    }
    dp
}

fn tree(hops: &[u16], deliver: bool) -> maps::Tree {
    let mut t = maps::Tree {
        n_hops: hops.len() as u8,
        deliver: u8::from(deliver),
        ..Default::default()
    };
    t.hops[..hops.len()].copy_from_slice(hops);
    t
}

fn tree_key(entry: u16) -> maps::TreeKey {
    maps::TreeKey {
        entry,
        pad: 0,
        dst_be: be(CLIENT),
    }
}

/// A user packet to the client as an Ethernet frame; `entry`: marked by
/// that entry point (identification, reserved flag bit), with `ttl`.
fn to_client(entry: Option<u16>, ttl: u8) -> Vec<u8> {
    let mut p = user_packet(CLIENT, 17, 46, 4000, 5060);
    p[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
    if let Some(e) = entry {
        p[4..6].copy_from_slice(&e.to_be_bytes());
        p[6] |= 0x80;
    }
    p[8] = ttl;
    p[10..12].copy_from_slice(&[0, 0]);
    let c = checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    segment(&p)
}

/// A raw socket on d1 (the veth pair's far end): what the programs'
/// clones sent out of d0. One at a time (the tests share the pair).
struct Tap(
    std::os::fd::OwnedFd,
    #[allow(dead_code)] std::sync::MutexGuard<'static, ()>,
);

static TAP: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Tap {
    fn open() -> Tap {
        let guard = TAP.lock().unwrap_or_else(|e| e.into_inner());
        use std::os::fd::FromRawFd;
        let proto = (0x0003u16).to_be() as i32; // ETH_P_ALL
                                                // SAFETY: plain socket calls; the address is zeroed then filled.
        unsafe {
            let fd = nix::libc::socket(nix::libc::AF_PACKET, nix::libc::SOCK_RAW, proto);
            assert!(fd >= 0, "AF_PACKET socket");
            let fd = std::os::fd::OwnedFd::from_raw_fd(fd);
            let mut sll: nix::libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = nix::libc::AF_PACKET as u16;
            sll.sll_protocol = proto as u16;
            sll.sll_ifindex = ifindex("d1") as i32;
            let r = nix::libc::bind(
                std::os::fd::AsRawFd::as_raw_fd(&fd),
                (&sll as *const nix::libc::sockaddr_ll).cast(),
                std::mem::size_of::<nix::libc::sockaddr_ll>() as u32,
            );
            assert_eq!(r, 0, "bind to d1");
            Tap(fd, guard)
        }
    }

    /// The IPv4 frames to `CLIENT` that arrive within `wait` (each as
    /// (destination MAC's last byte, IPv4 packet)).
    fn frames(&self, wait: std::time::Duration) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        let end = std::time::Instant::now() + wait;
        let mut buf = [0u8; 2048];
        loop {
            let left = end.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return out;
            }
            let mut pfd = nix::libc::pollfd {
                fd: std::os::fd::AsRawFd::as_raw_fd(&self.0),
                events: nix::libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd; the buffer is valid for its length.
            let n = unsafe {
                if nix::libc::poll(&mut pfd, 1, left.as_millis() as i32) <= 0 {
                    return out;
                }
                nix::libc::recv(pfd.fd, buf.as_mut_ptr().cast(), buf.len(), 0)
            };
            if n > 34 && buf[12..14] == [8, 0] && buf[30..34] == CLIENT {
                out.push((buf[5], buf[14..n as usize].to_vec()));
            }
        }
    }
}

fn tree_entry_marks_the_packet_and_sends_a_copy_to_each_next_hop() {
    let mut dp = trees(maps::TREES | maps::TREE_ENTRY);
    dp.set_tree(tree_key(ME), tree(&[6, 7, 8], false)).unwrap();
    let tap = Tap::open();
    let frame = to_client(None, 63);
    let (verdict, out) = run(&mut dp, Program::TreeTx, &frame);
    assert_eq!(verdict, TC_ACT_REDIRECT, "the last copy is the packet");
    let ipv4 = &out[14..];
    assert_eq!(u16::from_be_bytes([ipv4[4], ipv4[5]]), ME, "entry point id");
    assert_eq!(ipv4[6] & 0x80, 0x80, "the mark");
    assert_eq!(ipv4[6] & 0x40, 0x40, "DF kept");
    assert_eq!(ipv4[8], 63, "the entry does not decrement (the stack did)");
    assert_eq!(checksum(&ipv4[..20]), 0, "IPv4 checksum fixed");
    assert_eq!(&ipv4[20..], &frame[34..], "the payload untouched");
    // Zero bytes added: the marked packet is as long as the user's.
    assert_eq!(ipv4.len(), frame.len() - 14);
    // The other two next hops got a clone each, to their link address.
    let mut clones = tap.frames(std::time::Duration::from_millis(500));
    clones.sort();
    assert_eq!(
        clones.iter().map(|c| c.0).collect::<Vec<_>>(),
        vec![6, 7],
        "{clones:?}"
    );
    assert!(clones.iter().all(|c| c.1 == ipv4), "every copy the same");
    assert_eq!(stat(&dp, "tree_marked"), 1);
    assert_eq!(stat(&dp, "tree_copies"), 3);
}

fn tree_entry_leaves_fragments_and_foreign_destinations_alone() {
    let mut dp = trees(maps::TREES | maps::TREE_ENTRY);
    dp.set_tree(tree_key(ME), tree(&[6, 7], false)).unwrap();
    // A fragment (more fragments set): never marked, to user space.
    let mut frag = to_client(None, 64);
    frag[14 + 6] |= 0x20;
    frag[14 + 10..14 + 12].copy_from_slice(&[0, 0]);
    let c = checksum(&frag[14..34]);
    frag[14 + 10..14 + 12].copy_from_slice(&c.to_be_bytes());
    let (verdict, out) = run(&mut dp, Program::TreeTx, &frag);
    assert_eq!((verdict, out), (PASS, frag));
    assert_eq!(stat(&dp, "pass_fragment"), 1);
    // A destination without a tree entry here, and a client this router
    // serves itself: on unchanged.
    let other = segment(&user_packet([198, 18, 200, 101], 17, 0, 1, 2));
    assert_eq!(run(&mut dp, Program::TreeTx, &other), (PASS, other));
    dp.set_tree(tree_key(ME), tree(&[6], true)).unwrap();
    let p = to_client(None, 64);
    assert_eq!(run(&mut dp, Program::TreeTx, &p), (PASS, p));
    // Several packets in one (GSO) are never marked whole: a device that
    // cut them up would number the segments on from the entry point's id.
    // (On the TUN device they go to the segmenter and come back as
    // segments; a test run gives only the framed form, which passes.)
    dp.set_tree(tree_key(ME), tree(&[6], false)).unwrap();
    let gso = to_client(None, 64);
    let mut ctx = vec![0u8; 192];
    ctx[164..168].copy_from_slice(&2u32.to_ne_bytes());
    ctx[176..180].copy_from_slice(&100u32.to_ne_bytes());
    let (verdict, out) = dp.test_run(Program::TreeTx, &gso, &ctx).unwrap();
    assert_eq!((verdict, out), (PASS, gso));
    // Without tree entry marking on: nothing.
    let mut dp = trees(maps::TREES);
    dp.set_tree(tree_key(ME), tree(&[6], false)).unwrap();
    let p = to_client(None, 64);
    assert_eq!(run(&mut dp, Program::TreeTx, &p), (PASS, p));
    assert_eq!(stat(&dp, "tree_marked"), 0);
}

fn a_marked_packet_follows_its_entry_points_table() {
    let mut dp = trees(maps::TREES);
    // One table per entry point: entry 9's tree goes on to 6 and 7, entry
    // 10's only to 8.
    dp.set_tree(tree_key(9), tree(&[6, 7], false)).unwrap();
    dp.set_tree(tree_key(10), tree(&[8], false)).unwrap();
    let tap = Tap::open();
    let (verdict, out) = run(&mut dp, Program::Rx, &to_client(Some(9), 20));
    assert_eq!(verdict, TC_ACT_REDIRECT);
    let ipv4 = out[14..].to_vec();
    assert_eq!(ipv4[8], 19, "TTL decremented, as a router does");
    assert_eq!(
        u16::from_be_bytes([ipv4[4], ipv4[5]]),
        9,
        "the entry id stays"
    );
    assert_eq!(ipv4[6] & 0x80, 0x80, "still marked inside the mesh");
    assert_eq!(checksum(&ipv4[..20]), 0);
    let clones = tap.frames(std::time::Duration::from_millis(500));
    assert_eq!(clones.len(), 1, "one clone (6), the packet itself to 7");
    assert_eq!((clones[0].0, &clones[0].1), (6, &ipv4));
    let (verdict, _) = run(&mut dp, Program::Rx, &to_client(Some(10), 20));
    assert_eq!(verdict, TC_ACT_REDIRECT);
    assert!(tap.frames(std::time::Duration::from_millis(200)).is_empty());
    assert_eq!(stat(&dp, "tree_forwarded"), 2);
    assert_eq!(stat(&dp, "tree_copies"), 3);
}

fn an_access_point_delivers_with_the_mark_cleared() {
    let mut dp = trees(maps::TREES);
    dp.set_tree(tree_key(9), tree(&[], true)).unwrap();
    let frame = to_client(Some(9), 20);
    let (verdict, out) = run(&mut dp, Program::Rx, &frame);
    assert_eq!(verdict, PASS, "to the stack, which routes it to the client");
    assert_eq!(out[14 + 6] & 0x80, 0, "the mark cleared");
    assert_eq!(out[14 + 8], 20, "TTL left to the stack");
    assert_eq!(checksum(&out[14..34]), 0);
    assert_eq!(&out[34..], &frame[34..]);
    assert_eq!(stat(&dp, "tree_delivered"), 1);
    // Serving the client and forwarding too: the copies leave with the
    // TTL decremented and the mark; the client's copy without either.
    dp.set_tree(tree_key(9), tree(&[6, 7], true)).unwrap();
    let tap = Tap::open();
    let (verdict, out) = run(&mut dp, Program::Rx, &frame);
    assert_eq!(verdict, PASS);
    assert_eq!((out[14 + 6] & 0x80, out[14 + 8]), (0, 20));
    assert_eq!(checksum(&out[14..34]), 0);
    let mut clones = tap.frames(std::time::Duration::from_millis(500));
    clones.sort();
    assert_eq!(clones.iter().map(|c| c.0).collect::<Vec<_>>(), vec![6, 7]);
    assert!(clones
        .iter()
        .all(|c| c.1[8] == 19 && c.1[6] & 0x80 == 0x80 && checksum(&c.1[..20]) == 0));
    // Marked but nothing here for it (the tables lag), or the TTL spent:
    // to the stack, mark cleared.
    let lost = to_client(Some(11), 20);
    let (verdict, out) = run(&mut dp, Program::Rx, &lost);
    assert_eq!((verdict, out[14 + 6] & 0x80), (PASS, 0));
    assert_eq!(checksum(&out[14..34]), 0);
    dp.set_tree(tree_key(9), tree(&[6], false)).unwrap();
    let (verdict, out) = run(&mut dp, Program::Rx, &to_client(Some(9), 1));
    assert_eq!((verdict, out[14 + 6] & 0x80, out[14 + 8]), (PASS, 0, 1));
    assert_eq!(stat(&dp, "pass_not_on_tree"), 1);
    assert_eq!(stat(&dp, "pass_tree_ttl"), 1);
    // Without tree mode on, a marked packet is not braid_rx's business.
    let mut off = trees(maps::TRANSIT | maps::EGRESS);
    let (verdict, out) = run(&mut off, Program::Rx, &frame);
    assert_eq!((verdict, out), (PASS, frame));
}

fn ingress_passes_what_the_kernel_does_not_encode() {
    let r = [NodeId(6)];
    let mut dp = ingress(Mode::Single, &[&r], &[1]);
    let before = stat(&dp, "pass_no_session");
    for (what, p) in [
        ("no prefix", user_packet([203, 0, 113, 1], 17, 0, 1, 2)),
        ("class without a kernel session", {
            dp.set_prefix(be([198, 19, 10, 0]), 24, 10).unwrap();
            user_packet([198, 19, 10, 1], 17, 0, 1, 2)
        }),
    ] {
        let (verdict, out) = run(&mut dp, Program::TxL2, &segment(&p));
        // On to the TUN device (a redirect) unchanged.
        assert_eq!(
            (verdict, &out[..]),
            (TC_ACT_REDIRECT, &segment(&p)[..]),
            "{what}"
        );
    }
    assert_eq!(stat(&dp, "pass_no_session"), before + 2);
    assert_eq!(stat(&dp, "tx_encapsulated"), 0);
    // A session whose paths are gone: dropped, counted, as user space.
    for class_id in 0..=3 {
        let key = SessionKey {
            egress: EGRESS_NODE,
            class_id,
            pad: 0,
        };
        dp.set_session(key, &Session::default()).unwrap();
    }
    let p = user_packet([198, 19, 9, 1], 17, 0, 1, 2);
    assert_eq!(run(&mut dp, Program::TxL2, &segment(&p)).0, TC_ACT_SHOT);
    assert_eq!(stat(&dp, "tx_no_path"), 1);
}

/// IPv6 user packets take the same encoder: the header user space would
/// write (class by the same rules, urgent by DSCP), the packet behind it
/// unchanged, counted apart; flows pin by the same hash as user space's;
/// a destination outside every IPv6 prefix goes on to the TUN device.
fn ingress_encodes_ipv6_as_user_space_would() {
    let r = [NodeId(6), NodeId(8)];
    let mut dp = ingress(Mode::Single, &[&r], &[1]);
    let mut dst = V6_NET;
    dst[15] = 20;
    let voip = user_packet6(dst, 17, 46, 4000, 5060);
    let (verdict, out) = run(&mut dp, Program::TxL2, &segment(&voip));
    assert_eq!(verdict, TC_ACT_REDIRECT);
    let (h, route, payload) = sent(&out);
    assert_eq!(payload, voip);
    assert_eq!(route, vec![6, 8]);
    let class = Classifier::example().classify(&inspect(&voip).unwrap());
    assert_eq!(h.class, class.class);
    assert!(h.flags.contains(DataFlags::URGENT));
    assert_eq!(
        (h.egress, h.seq, h.mode),
        (NodeId(EGRESS_NODE), 1000, RedundancyMode::Single)
    );
    assert_eq!((stat(&dp, "tx_encapsulated"), stat(&dp, "tx_ipv6")), (1, 1));
    // Not routed into the mesh: on to the TUN device, unchanged.
    let other = segment(&user_packet6(v6([0, 0, 0, 0, 0, 7]), 17, 0, 1, 2));
    assert_eq!(
        run(&mut dp, Program::TxL2, &other),
        (TC_ACT_REDIRECT, other.clone())
    );
    assert_eq!(stat(&dp, "pass_no_session"), 1);
    // A LAN port takes it too.
    let (verdict, out) = run(&mut dp, Program::LanRx, &segment(&voip));
    assert_eq!(verdict, TC_ACT_REDIRECT);
    assert_eq!(sent(&out).2, voip);
    // Flows pinned by user space's hash.
    let (a, b) = ([NodeId(6)], [NodeId(7)]);
    let mut dp = ingress(Mode::Stripe { pin_flows: true }, &[&a, &b], &[3, 1]);
    let mut seen = [0; 2];
    for sport in 1000..1040u16 {
        let p = user_packet6(dst, 6, 0, sport, 80);
        let hash = inspect(&p).unwrap().flow_hash;
        let want = u8::from(hash % 4 >= 3);
        let (_, out) = run(&mut dp, Program::TxL2, &segment(&p));
        assert_eq!(sent(&out).0.path, want, "source port {sport}");
        seen[want as usize] += 1;
    }
    assert!(seen[0] > 0 && seen[1] > 0, "both paths: {seen:?}");
}

/// An IPv6 client's packets go to user space at an egress that catches
/// copies, like an IPv4 client's.
fn an_ipv6_clients_packets_go_to_user_space_where_copies_are_caught() {
    let mut dp = fresh(maps::TRANSIT | maps::EGRESS);
    let client = v6([0, 0, 0, 0, 1, 1]); // user_packet6's source
    dp.set_copy_source6(client, true).unwrap();
    let inner = user_packet6(v6([0, 0, 0, 0, 9, 9]), 17, 0, 1000, 2000);
    let h = header(RedundancyMode::Single, 1, ME, 1);
    let frame = underlay([198, 18, 0, 6], OUR_ADDR, PORT, &arriving(h, &[6], &inner));
    assert_eq!(run(&mut dp, Program::Rx, &frame), (PASS, frame.clone()));
    assert_eq!(stat(&dp, "pass_copy_check"), 1);
    dp.set_copy_source6(client, false).unwrap();
    let (verdict, out) = run(&mut dp, Program::Rx, &frame);
    assert_eq!(verdict, TC_ACT_REDIRECT, "delivered by the kernel again");
    assert_eq!(&out[14..], &inner[..]);
    assert_eq!(stat(&dp, "rx_delivered"), 1);
}

/// A LAN port's encoder: what `braid_tx_l2` encodes, it encodes the same;
/// what the kernel does not encode goes on to the stack (not to the TUN
/// device: it may be for the router itself or its LAN), and so do GSO
/// packets (the segmenter is on the TUN device's path).
fn a_lan_port_encodes_as_the_tun_path_and_passes_the_rest_to_the_stack() {
    let r = [NodeId(6), NodeId(8)];
    let mut dp = ingress(Mode::Single, &[&r], &[1]);
    let voip = segment(&user_packet([198, 19, 9, 20], 17, 46, 4000, 5060));
    let (verdict, out) = run(&mut dp, Program::LanRx, &voip);
    assert_eq!(verdict, TC_ACT_REDIRECT);
    let (h, route, payload) = sent(&out);
    assert_eq!((h.mode, route), (RedundancyMode::Single, vec![6, 8]));
    assert_eq!(payload, voip[14..].to_vec());
    let other = segment(&user_packet([203, 0, 113, 1], 17, 0, 1, 2));
    assert_eq!(run(&mut dp, Program::LanRx, &other), (PASS, other));
    let mut ctx = vec![0u8; 192];
    ctx[164..168].copy_from_slice(&2u32.to_ne_bytes());
    ctx[176..180].copy_from_slice(&100u32.to_ne_bytes());
    let (verdict, out) = dp.test_run(Program::LanRx, &voip, &ctx).unwrap();
    assert_eq!((verdict, out), (PASS, voip));
}

/// Rules from a small alphabet, so that packets hit and miss them.
fn rules() -> impl Strategy<Value = Classifier> {
    let rule = (
        1u8..=20,
        prop::collection::vec(
            prop::sample::select(vec![
                "198.19.0.0/16",
                "198.19.9.0/24",
                "10.0.0.0/8",
                "2001:db8::/32",
                "2001:db8:9::/48",
                "2001:db8:9:0:8000::/65",
            ]),
            0..3,
        ),
        prop::collection::vec(prop::sample::select(vec![0u8, 10, 46, 48]), 0..3),
        prop::collection::vec(prop::sample::select(vec![6u8, 17, 1]), 0..3),
        prop::collection::vec((0u16..100, 0u16..100), 0..3),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(id, dst, dscp, protocols, ports, urgent)| ClassRule {
            name: format!("c{id}"),
            id,
            matches: Match {
                dst: dst.iter().map(|d| d.parse().unwrap()).collect(),
                dscp,
                protocols,
                src_ports: Vec::new(),
                dst_ports: ports
                    .into_iter()
                    .map(|(a, b)| PortRange(a.min(b), a.max(b)))
                    .collect(),
            },
            urgent,
        });
    prop::collection::vec(rule, 0..6).prop_map(|rules| Classifier { rules })
}

/// A destination the classifier test draws.
#[derive(Debug, Clone, Copy)]
enum Dst {
    V4([u8; 4]),
    /// Which of three IPv6 destinations.
    V6(u8),
}

fn kernel_classifier_agrees_with_user_space() {
    let r = [NodeId(6)];
    let dp = std::cell::RefCell::new(ingress(Mode::Single, &[&r], &[1]));
    let mut runner = TestRunner::new(Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    });
    // IPv4 destinations, and IPv6 ones (the last byte set: one in
    // 2001:db8:9::/48 either side of /65, one outside it).
    let packet = (
        prop::sample::select(vec![
            Dst::V4([198u8, 19, 9, 1]),
            Dst::V4([198, 19, 1, 1]),
            Dst::V6(1),
            Dst::V6(2),
            Dst::V6(3),
        ]),
        prop::sample::select(vec![0u8, 10, 46, 48]),
        prop::sample::select(vec![6u8, 17, 1]),
        0u16..100,
    );
    let result = runner.run(
        &(rules(), prop::collection::vec(packet, 1..12)),
        |(classifier, packets)| {
            let mut dp = dp.borrow_mut();
            dp.set_ruleset(&compile::ruleset(&classifier).unwrap())
                .unwrap();
            dp.set_prefix(be([198, 19, 0, 0]), 16, EGRESS_NODE).unwrap();
            dp.set_prefix6(v6([0; 6]), 32, EGRESS_NODE).unwrap();
            let s = compile::session(
                NodeId(EGRESS_NODE),
                Mode::Single,
                1,
                &[IngressPath {
                    slot: 0,
                    transit: &r,
                    state: PathState {
                        up: true,
                        weight: 1,
                        loss: 0.0,
                    },
                }],
            )
            .unwrap();
            for class_id in 0..=20u8 {
                let key = SessionKey {
                    egress: EGRESS_NODE,
                    class_id,
                    pad: 0,
                };
                dp.start_seq(key, 0).unwrap();
                dp.set_session(key, &s).unwrap();
            }
            for (dst, dscp, protocol, port) in packets {
                let p = match dst {
                    Dst::V4(a) => user_packet(a, protocol, dscp, 7, port),
                    Dst::V6(which) => {
                        let mut a = V6_NET;
                        match which {
                            1 => a[8] = 0x80,
                            2 => a[15] = 1,
                            _ => a[5] = 7,
                        }
                        user_packet6(a, protocol, dscp, 7, port)
                    }
                };
                let want = classifier.classify(&inspect(&p).unwrap());
                let (_, out) = run(&mut dp, Program::TxL2, &segment(&p));
                let (h, _, _) = sent(&out);
                prop_assert_eq!(h.class, want.class);
                prop_assert_eq!(h.flags.contains(DataFlags::URGENT), want.urgent);
            }
            Ok(())
        },
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}

// ----------------------------------------------------------------- loss

fn the_lab_loss_program_drops_as_its_parameters_say() {
    use braid_bpf::loss::Loss;
    const ALWAYS: u64 = 0xffff_ffff;
    let frame = underlay([198, 18, 0, 1], OUR_ADDR, PORT, b"x");
    // Bad always, losing everything there: a blackhole.
    let mut hole = Loss::load(&[
        ("p_gb", ALWAYS),
        ("p_bg", 0),
        ("loss_good", ALWAYS),
        ("loss_bad", ALWAYS),
    ])
    .unwrap();
    // Good always, losing nothing: what comes next on the hook decides.
    let mut clear = Loss::load(&[
        ("p_gb", 0),
        ("p_bg", ALWAYS),
        ("loss_good", 0),
        ("loss_bad", 0),
    ])
    .unwrap();
    for _ in 0..20 {
        assert_eq!(hole.test_run(&frame).unwrap(), TC_ACT_SHOT);
        assert_eq!(clear.test_run(&frame).unwrap(), PASS);
    }
    // ARP: lost with everything else on a dead link; never on a lossy
    // link that spares it (neighbour resolution is not what the lab's
    // lossy links model; loss.c says why).
    let mut arp = vec![0xffu8; 6];
    arp.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x08, 0x06]);
    arp.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    arp.extend_from_slice(&[2, 0, 0, 0, 0, 1, 198, 18, 0, 1]);
    arp.extend_from_slice(&[0, 0, 0, 0, 0, 0, 198, 18, 0, 2]);
    let mut link = Loss::load(&[
        ("p_gb", ALWAYS / 2),
        ("p_bg", ALWAYS / 2),
        ("loss_good", 0),
        ("loss_bad", ALWAYS),
        ("spare_arp", 1),
    ])
    .unwrap();
    for _ in 0..20 {
        assert_eq!(hole.test_run(&arp).unwrap(), TC_ACT_SHOT);
        assert_eq!(link.test_run(&arp).unwrap(), PASS);
    }
    // Bernoulli 50%: both verdicts within 200 packets (a failure here
    // is a 2^-199 event).
    let mut half = Loss::load(&[
        ("p_gb", ALWAYS / 2),
        ("p_bg", ALWAYS / 2),
        ("loss_good", 0),
        ("loss_bad", ALWAYS),
    ])
    .unwrap();
    let verdicts: Vec<u32> = (0..200).map(|_| half.test_run(&frame).unwrap()).collect();
    assert!(verdicts.contains(&TC_ACT_SHOT) && verdicts.contains(&PASS));
    // The same loss without sparing (an access point's air): ARP is lost
    // as often as anything else.
    let arp_verdicts: Vec<u32> = (0..200).map(|_| half.test_run(&arp).unwrap()).collect();
    assert!(arp_verdicts.contains(&TC_ACT_SHOT) && arp_verdicts.contains(&PASS));
}

// ----------------------------------------------------------------- main

type Test = fn();

/// The environment variable that makes this binary a loader that
/// attaches `braid_rx` to d0, says so and waits to be killed.
const HOLDER: &str = "BRAID_TEST_HOLD_ATTACHED";

fn hold_attached() {
    let mut dp = Datapath::load(ME, PORT, 64, 16).expect("the data path loads");
    dp.attach(Program::Rx, "d0").expect("attached");
    println!("attached");
    // Until killed (or the parent goes: end of input).
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

fn a_crashed_loader_leaves_nothing_attached() {
    // The daemon's programs hang on TCX links that its process owns: a
    // SIGKILL (a crash) takes them away, and nothing is left to
    // black-hole the interface's traffic with stale maps.
    let before = Datapath::attached(Program::Rx, "d0").unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(HOLDER, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "attached");
    let during = Datapath::attached(Program::Rx, "d0").unwrap();
    assert_eq!(during.len(), before.len() + 1, "{during:?}");
    assert!(during.iter().any(|n| n == "braid_rx"), "{during:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(Datapath::attached(Program::Rx, "d0").unwrap(), before);
}

const TESTS: &[(&str, Test)] = &[
    (
        "the_generator_restores_each_frames_head_and_numbers_it",
        the_generator_restores_each_frames_head_and_numbers_it,
    ),
    (
        "egress_routes_a_delivered_packet_to_its_next_hop_when_asked",
        egress_routes_a_delivered_packet_to_its_next_hop_when_asked,
    ),
    (
        "a_crashed_loader_leaves_nothing_attached",
        a_crashed_loader_leaves_nothing_attached,
    ),
    (
        "transit_follows_the_route_like_user_space",
        transit_follows_the_route_like_user_space,
    ),
    (
        "transit_passes_up_what_user_space_refuses",
        transit_passes_up_what_user_space_refuses,
    ),
    (
        "malformed_and_foreign_packets_pass_up_unchanged",
        malformed_and_foreign_packets_pass_up_unchanged,
    ),
    (
        "only_authenticated_neighbors_data_is_taken_and_only_as_routed",
        only_authenticated_neighbors_data_is_taken_and_only_as_routed,
    ),
    (
        "egress_delivers_each_packet_once_and_leaves_coded_modes_to_user_space",
        egress_delivers_each_packet_once_and_leaves_coded_modes_to_user_space,
    ),
    (
        "a_clients_packets_go_to_user_space_where_copies_are_caught",
        a_clients_packets_go_to_user_space_where_copies_are_caught,
    ),
    (
        "gso_datagrams_are_dropped_and_counted",
        gso_datagrams_are_dropped_and_counted,
    ),
    (
        "kernel_dedup_gives_the_user_space_verdicts",
        kernel_dedup_gives_the_user_space_verdicts,
    ),
    (
        "ingress_encodes_what_user_space_would_send",
        ingress_encodes_what_user_space_would_send,
    ),
    (
        "ingress_stripes_by_the_table_and_pins_flows_by_their_hash",
        ingress_stripes_by_the_table_and_pins_flows_by_their_hash,
    ),
    (
        "ingress_mirror_sends_a_copy_per_path",
        ingress_mirror_sends_a_copy_per_path,
    ),
    (
        "ingress_passes_what_the_kernel_does_not_encode",
        ingress_passes_what_the_kernel_does_not_encode,
    ),
    (
        "ingress_encodes_ipv6_as_user_space_would",
        ingress_encodes_ipv6_as_user_space_would,
    ),
    (
        "an_ipv6_clients_packets_go_to_user_space_where_copies_are_caught",
        an_ipv6_clients_packets_go_to_user_space_where_copies_are_caught,
    ),
    (
        "kernel_classifier_agrees_with_user_space",
        kernel_classifier_agrees_with_user_space,
    ),
    (
        "a_lan_port_encodes_as_the_tun_path_and_passes_the_rest_to_the_stack",
        a_lan_port_encodes_as_the_tun_path_and_passes_the_rest_to_the_stack,
    ),
    (
        "tree_entry_marks_the_packet_and_sends_a_copy_to_each_next_hop",
        tree_entry_marks_the_packet_and_sends_a_copy_to_each_next_hop,
    ),
    (
        "tree_entry_leaves_fragments_and_foreign_destinations_alone",
        tree_entry_leaves_fragments_and_foreign_destinations_alone,
    ),
    (
        "a_marked_packet_follows_its_entry_points_table",
        a_marked_packet_follows_its_entry_points_table,
    ),
    (
        "an_access_point_delivers_with_the_mark_cleared",
        an_access_point_delivers_with_the_mark_cleared,
    ),
    (
        "the_lab_loss_program_drops_as_its_parameters_say",
        the_lab_loss_program_drops_as_its_parameters_say,
    ),
];

/// The lab bench's generator (bpf/gen.c), run as a test: each frame it
/// would send has its head written back from what the loader gave it
/// (whatever a router left there) and its IPv4 identification numbered,
/// the header checksum mended; once its total has left it sends nothing.
fn the_generator_restores_each_frames_head_and_numbers_it() {
    let mut gen = braid_bpf::gen::Generator::load().expect("the generator loads");
    let mut frame = vec![0u8; 14];
    frame[12] = 0x08; // IPv4
    frame.extend(ipv4_header(
        [198, 18, 1, 2],
        [198, 18, 3, 2],
        17,
        0,
        20 + 8 + 64,
    ));
    frame.extend([0u8; 8 + 64]);
    // A frame due every nanosecond: each run finds one due (and skips
    // those it missed, which are not numbered).
    gen.pace(&frame, 1_000_000_000, u64::MAX / 4)
        .expect("paced");
    let mut left_by_a_router = frame.clone();
    left_by_a_router[22] = 1; // the TTL run down
    left_by_a_router[..6].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
    for id in 0u16..3 {
        let (verdict, out) = gen.rehearse(&left_by_a_router).expect("runs");
        assert_eq!(verdict, 3, "frame {id} is sent (XDP_TX)");
        assert_eq!(out[..6], frame[..6], "the destination MAC is written back");
        assert_eq!(out[22], 64, "the TTL is written back");
        assert_eq!(u16::from_be_bytes([out[18], out[19]]), id, "numbered");
        assert_eq!(
            checksum(&out[14..34]),
            0,
            "frame {id}: the IPv4 header checksum holds"
        );
        assert_eq!(out[34..], frame[34..], "nothing past the IP header changes");
    }
    gen.pace(&frame, 1_000, 0).expect("paced");
    let (verdict, _) = gen.rehearse(&frame).expect("runs");
    assert_eq!(
        verdict, 1,
        "after its total, nothing more is sent (XDP_DROP)"
    );
    assert!(matches!(
        gen.pace(&frame[..40], 1000, 1),
        Err(braid_bpf::DatapathError::ShortFrame(40))
    ));
}

fn main() -> std::process::ExitCode {
    if std::env::var_os(HOLDER).is_some() {
        hold_attached();
        return std::process::ExitCode::SUCCESS;
    }
    let args = libtest_mimic::Arguments::from_args();
    let skip = if braid_bpf::missing().is_some() {
        Some("skipped: braid was built without its eBPF objects (clang)")
    } else if !nix_is_root() {
        Some("skipped: not root (loading eBPF)")
    } else {
        None
    };
    if skip.is_none() {
        // Every test thread starts from this one: all run in a network
        // namespace of their own, with a veth pair for addresses.
        unshare_net();
        ip(&["link", "set", "lo", "up"]);
        ip(&["link", "add", "d0", "type", "veth", "peer", "name", "d1"]);
        ip(&["link", "set", "d1", "up"]);
        ip(&["link", "set", "d0", "up"]);
        ip(&["addr", "add", "198.18.0.5/24", "dev", "d0"]);
        ip(&["addr", "add", "2001:db8::5/64", "dev", "d0", "nodad"]);
        // A router: the kernel's route lookup for mirror copies answers
        // only on interfaces that forward.
        std::fs::write("/proc/sys/net/ipv4/ip_forward", "1").expect("forwarding on");
        std::fs::write("/proc/sys/net/ipv6/conf/all/forwarding", "1").expect("IPv6 forwarding on");
    }
    let trials = TESTS
        .iter()
        .map(|&(name, f)| {
            let t = libtest_mimic::Trial::test(name, move || {
                f();
                Ok(())
            });
            match skip {
                Some(why) => t.with_ignored_flag(true).with_kind(why),
                None => t,
            }
        })
        .collect();
    libtest_mimic::run(&args, trials).exit_code()
}

fn nix_is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn unshare_net() {
    // This (main) thread moves to a network namespace of its own; the
    // test threads are spawned after it and start in it.
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
        .expect("a network namespace of our own (root)");
}
