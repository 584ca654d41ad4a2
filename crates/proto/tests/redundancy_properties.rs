//! Ingress and egress together, for every mode, with arbitrary per-packet
//! loss, re-ordering and duplication in between (through the real wire
//! encoding): nothing is delivered twice, content is exact, and every
//! packet the mode can save is delivered.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use braid_proto::redundancy::reorder::{ReorderConfig, ReorderTimeout};
use braid_proto::redundancy::{
    EgressConfig, EgressSession, IngressConfig, IngressSession, Mode, PacketMeta, PathState,
    Payload,
};
use braid_proto::time::Instant;
use braid_wire::{DataHeader, NodeId};
use proptest::prelude::*;

mod common;
use common::sessions::{payload, wire};

/// One sent packet, with what it carries.
struct Sent {
    header: DataHeader,
    bytes: Vec<u8>,
    /// The original packet index for data copies.
    data_of: Option<usize>,
}

/// A group as sent: its shard indexes, those of which a copy arrived, and
/// the original packets among its data.
#[derive(Default)]
struct GroupSeen {
    shards: HashSet<u8>,
    arrived: HashSet<u8>,
    members: Vec<usize>,
}

struct Run {
    sent: Vec<Sent>,
    delivered: Vec<Vec<u8>>,
    arrived: Vec<bool>,
}

#[allow(clippy::too_many_arguments)]
fn run(
    mode: Mode,
    count: usize,
    paths: usize,
    start: u32,
    lost: &[bool],
    dup: &[bool],
    order: &[u32],
    reorder: bool,
) -> Run {
    let mut ing = IngressSession::new(
        NodeId(1),
        NodeId(2),
        0,
        mode,
        IngressConfig::default(),
        start,
        start.rotate_left(16),
    );
    let mut out = Vec::new();
    let path_states: Vec<PathState> = (0..paths)
        .map(|i| PathState {
            up: true,
            weight: 1 + i as u32,
            loss: 0.05,
        })
        .collect();
    ing.set_paths(Instant::ZERO, &path_states, &mut out);
    let mut sent = Vec::new();
    let mut now = Instant::ZERO;
    for i in 0..count {
        now = now + Duration::from_millis(1);
        let p = payload(i);
        out.clear();
        ing.encode(
            now,
            &p,
            PacketMeta {
                flow_hash: i as u64 % 3,
                ..Default::default()
            },
            &mut out,
        );
        for o in &out {
            let data_of = matches!(o.payload, Payload::Input).then_some(i);
            sent.push(Sent {
                header: o.header,
                bytes: wire(o, &p),
                data_of,
            });
        }
    }
    // The flush timer closes the last, partial group.
    out.clear();
    now = now + Duration::from_millis(100);
    ing.handle_timeout(now, &mut out);
    for o in &out {
        sent.push(Sent {
            header: o.header,
            bytes: wire(o, &[]),
            data_of: None,
        });
    }
    // The network: loss, duplication, re-ordering.
    let mut arrived = vec![false; count];
    let mut wire_order: Vec<(u32, usize)> = Vec::new();
    for (j, s) in sent.iter().enumerate() {
        if lost[j % lost.len()] {
            continue;
        }
        if let Some(i) = s.data_of {
            arrived[i] = true;
        }
        wire_order.push((order[j % order.len()], j));
        if dup[j % dup.len()] {
            wire_order.push((order[(j + 7) % order.len()], j));
        }
    }
    wire_order.sort();
    let config = EgressConfig {
        reorder: reorder.then_some(ReorderConfig {
            max_packets: 32,
            timeout: ReorderTimeout::Fixed(Duration::from_millis(30)),
        }),
        ..EgressConfig::default()
    };
    let mut eg = EgressSession::new(config, Instant::ZERO);
    let mut delivered = Vec::new();
    for (_, j) in wire_order {
        now = now + Duration::from_micros(100);
        eg.handle_timeout(now, &mut |p| delivered.push(p.to_vec()));
        let pkt = DataHeader::parse(&sent[j].bytes).unwrap();
        eg.receive(now, &pkt, &mut |p| delivered.push(p.to_vec()));
    }
    eg.flush(&mut |p| delivered.push(p.to_vec()));
    Run {
        sent,
        delivered,
        arrived,
    }
}

fn modes() -> impl Strategy<Value = Mode> {
    prop_oneof![
        Just(Mode::Single),
        Just(Mode::Stripe { pin_flows: false }),
        Just(Mode::Stripe { pin_flows: true }),
        (1u8..=4).prop_map(Mode::Mirror),
        Just(Mode::Tree),
        (2u8..=6).prop_map(Mode::Parity),
        (2u8..=6).prop_map(Mode::ParityRotating),
        (1u8..=5, 1u8..=3, 1u8..=4).prop_map(|(m, r, depth)| Mode::Erasure { n: m + r, m, depth }),
        (1u8..=5, 1u8..=3, 1u8..=40).prop_map(|(m, r, span)| Mode::Sliding { n: m + r, m, span }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn every_mode_delivers_at_most_once_exactly_and_saves_what_it_can(
        mode in modes(),
        count in 1usize..60,
        paths in 1usize..=4,
        start in prop_oneof![Just(u32::MAX - 20), any::<u32>()],
        lost in prop::collection::vec(prop::bool::weighted(0.2), 1..300),
        dup in prop::collection::vec(prop::bool::weighted(0.1), 1..300),
        order in prop::collection::vec(any::<u32>(), 1..300),
        reorder in any::<bool>(),
    ) {
        let r = run(mode, count, paths, start, &lost, &dup, &order, reorder);
        let originals: Vec<Vec<u8>> = (0..count).map(payload).collect();
        // At most once, and only what was sent, byte for byte.
        let mut seen = HashSet::new();
        for d in &r.delivered {
            prop_assert!(originals.contains(d), "delivered bytes that were never sent");
            prop_assert!(seen.insert(d.clone()), "delivered twice");
        }
        // Any packet of which one copy arrived is delivered (mirror: if any
        // copy arrives).
        for (i, original) in originals.iter().enumerate() {
            if r.arrived[i] {
                prop_assert!(seen.contains(original), "packet {} arrived but was not delivered", i);
            }
        }
        // Without repair, nothing that did not arrive can be delivered.
        let (data, repair) = mode.group_shape();
        if let Mode::Sliding { .. } = mode {
            // A repair that arrived with one packet it covers missing
            // rebuilds that packet (its coefficient is never zero).
            let data_seq: BTreeMap<u32, usize> = r.sent.iter()
                .filter_map(|s| Some((s.header.seq, s.data_of?)))
                .collect();
            for (j, s) in r.sent.iter().enumerate() {
                if s.data_of.is_some() || lost[j % lost.len()] {
                    continue;
                }
                let pkt = DataHeader::parse(&s.bytes).unwrap();
                let span = u32::from(pkt.payload[0]);
                let end = s.header.seq;
                let missing: Vec<usize> = (0..span)
                    .filter_map(|k| data_seq.get(&end.wrapping_sub(k)).copied())
                    .filter(|&i| !r.arrived[i])
                    .collect();
                if let [i] = missing[..] {
                    prop_assert!(seen.contains(&originals[i]),
                        "packet {} alone missing under repair {} after {}, not rebuilt", i, s.header.group.index, end);
                }
            }
        } else if repair == 0 {
            for (i, original) in originals.iter().enumerate() {
                prop_assert_eq!(seen.contains(original), r.arrived[i]);
            }
        } else {
            // Per group: shards lost (no copy arrived); if at most `repair`,
            // the whole group is delivered.
            let mut groups: BTreeMap<u32, GroupSeen> = BTreeMap::new();
            for (j, s) in r.sent.iter().enumerate() {
                let h = &s.header;
                let base = if h.group.is_repair() { h.seq } else { h.group.base_of(h.seq) };
                let g = groups.entry(base).or_default();
                g.shards.insert(h.group.index);
                if !lost[j % lost.len()] {
                    g.arrived.insert(h.group.index);
                }
                if let Some(i) = s.data_of { g.members.push(i); }
            }
            for (base, g) in &groups {
                let lost_shards = g.shards.len() - g.arrived.len();
                if lost_shards <= repair as usize {
                    for &i in &g.members {
                        prop_assert!(seen.contains(&originals[i]),
                            "group {} lost {} of {} shards, packet {} missing ({}, {} data)", base, lost_shards, g.shards.len(), i, mode, data);
                    }
                }
            }
        }
    }

    /// The adaptive mode moves between modes as path loss changes, with no
    /// packet lost or delivered twice on a perfect network.
    #[test]
    fn adaptive_switches_without_loss_or_duplication(losses in prop::collection::vec(0.0f64..0.4, 1..12)) {
        let mut ing = IngressSession::new(NodeId(1), NodeId(2), 0, Mode::Adaptive { target: 0.999 }, IngressConfig::default(), 0, 0);
        let mut eg = EgressSession::new(EgressConfig::default(), Instant::ZERO);
        let mut delivered = Vec::new();
        let mut out = Vec::new();
        let mut now = Instant::ZERO;
        let mut n = 0;
        let mut modes = HashSet::new();
        for loss in losses {
            let paths: Vec<PathState> = (0..3).map(|_| PathState { up: true, weight: 1, loss }).collect();
            ing.set_paths(now, &paths, &mut out);
            modes.insert(ing.active_mode().to_string());
            for _ in 0..17 {
                now = now + Duration::from_millis(1);
                ing.encode(now, &payload(n), PacketMeta::default(), &mut out);
                n += 1;
            }
            for o in out.drain(..) {
                let bytes = wire(&o, &payload(if matches!(o.payload, Payload::Input) { (o.header.seq) as usize } else { 0 }));
                let pkt = DataHeader::parse(&bytes).unwrap();
                eg.receive(now, &pkt, &mut |p| delivered.push(p.to_vec()));
            }
        }
        let mut got: Vec<Vec<u8>> = delivered.clone();
        got.sort();
        got.dedup();
        prop_assert_eq!(got.len(), delivered.len(), "a packet was delivered twice");
        prop_assert_eq!(delivered.len(), n, "modes seen: {:?}", modes);
    }
}

/// The egress's path reports tell the ingress what each path lost; the
/// adaptive mode acts on it.
#[test]
fn path_reports_measure_per_path_loss_and_drive_adaptive() {
    use braid_proto::random::unit_f64;
    use rand_chacha::rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let mut ing = IngressSession::new(
        NodeId(1),
        NodeId(2),
        0,
        Mode::Adaptive { target: 0.999 },
        IngressConfig::default(),
        0,
        0,
    );
    let mut eg = EgressSession::new(EgressConfig::default(), Instant::ZERO);
    let mut out = Vec::new();
    // The probes see three clean paths, so adaptive starts striping.
    let paths = [PathState {
        up: true,
        weight: 1,
        loss: 0.0,
    }; 3];
    ing.set_paths(Instant::ZERO, &paths, &mut out);
    let stripe = Mode::Stripe { pin_flows: false };
    assert_eq!(ing.active_mode(), stripe);
    // But path 0 really loses 20% of what it carries.
    let loss = [0.2, 0.0, 0.0];
    let mut now = Instant::ZERO;
    let mut delivered = 0usize;
    for round in 0..20 {
        for i in 0..500 {
            now = now + Duration::from_micros(200);
            ing.encode(
                now,
                &payload(round * 500 + i),
                PacketMeta::default(),
                &mut out,
            );
            for o in out.drain(..) {
                if unit_f64(&mut rng) < loss[o.path as usize] {
                    continue;
                }
                let bytes = wire(&o, &payload(round * 500 + i));
                eg.receive(now, &DataHeader::parse(&bytes).unwrap(), &mut |_| {
                    delivered += 1
                });
            }
        }
        ing.on_path_report(now, &eg.path_counts(now), &mut out);
    }
    let c = ing.counters();
    let measured = ing.path_loss();
    assert!(
        (measured[0] - 0.2).abs() < 0.05,
        "path 0 measured {:.3}",
        measured[0]
    );
    assert!(measured[1] < 0.01 && measured[2] < 0.01, "{measured:?}");
    let ratio = c.lost_per_path[0] as f64 / c.sent_per_path[0] as f64;
    assert!(
        ratio > 0.1,
        "lost {} of {} on path 0",
        c.lost_per_path[0],
        c.sent_per_path[0]
    );
    assert_eq!(c.lost_per_path[1] + c.lost_per_path[2], 0);
    // Adaptive moved off `stripe` once path 0's loss was measured.
    assert_ne!(ing.active_mode(), stripe);
    assert!(c.mode_changes >= 1);
}
