//! Property tests: every message round-trips, and no byte string makes a
//! parser panic (arbitrary bytes and mutations of valid messages).

use braid_wire::data::forward_in_place;
use braid_wire::*;
use proptest::prelude::*;

fn node() -> impl Strategy<Value = NodeId> {
    any::<u16>().prop_map(NodeId)
}

fn group_and_flags() -> impl Strategy<Value = (Group, DataFlags)> {
    let flags = (any::<bool>(), any::<bool>());
    prop_oneof![
        flags.prop_map(|f| (Group::NONE, f)),
        (1u8..=15, 0u8..=15, 1u8..=MAX_DEPTH, flags).prop_flat_map(|(data, repair, depth, f)| {
            (0..data + repair).prop_map(move |index| {
                (
                    Group {
                        data,
                        repair,
                        index,
                        depth,
                    },
                    f,
                )
            })
        }),
    ]
    .prop_map(|(group, (congestion, urgent))| {
        let mut flags = DataFlags::empty();
        if congestion {
            flags.insert(DataFlags::CONGESTION);
        }
        if urgent {
            flags.insert(DataFlags::URGENT);
        }
        if group.is_repair() {
            flags.insert(DataFlags::PARITY);
        }
        (group, flags)
    })
}

fn data_packet() -> impl Strategy<Value = (DataHeader, Vec<NodeId>, Vec<u8>)> {
    (
        group_and_flags(),
        0usize..7,
        0u8..=15,
        prop::collection::vec(node(), 0..=63),
        (node(), node(), any::<u32>(), any::<u8>(), any::<u8>()),
        any::<u32>(),
        prop::collection::vec(any::<u8>(), 0..64),
        any::<bool>(),
    )
        .prop_flat_map(
            |((group, mut flags), mode, path, route, ids, epoch, payload, waypoint)| {
                let len = route.len() as u8;
                // A waypoint ends a route: only with one.
                if waypoint && len > 0 {
                    flags.insert(DataFlags::WAYPOINT);
                }
                (0..=len).prop_map(move |route_ptr| {
                    let (ingress, egress, seq, hop_limit, class) = ids;
                    let header = DataHeader {
                        flags,
                        mode: RedundancyMode::ALL[mode],
                        path,
                        route_ptr,
                        ingress,
                        egress,
                        seq,
                        group,
                        hop_limit,
                        class,
                        epoch,
                    };
                    (header, route.clone(), payload.clone())
                })
            },
        )
}

fn control_header(ty: MessageType) -> impl Strategy<Value = ControlHeader> {
    (node(), any::<u8>(), 0u8..=32, any::<u32>(), any::<u32>()).prop_map(
        move |(sender, key_id, mac_len, boot_index, counter)| ControlHeader {
            msg_type: ty,
            flags: ControlFlags::empty(),
            sender,
            key_id,
            mac_len,
            boot_index,
            counter,
        },
    )
}

fn report() -> impl Strategy<Value = ProbeReport> {
    (node(), any::<u16>(), any::<u8>()).prop_map(|(neighbor, rate, ratio)| ProbeReport {
        neighbor,
        rate,
        ratio,
    })
}

fn prefix() -> impl Strategy<Value = Prefix> {
    prop_oneof![
        (any::<[u8; 4]>(), 0u8..=32).prop_map(|(addr, len)| Prefix::V4 { addr, len }),
        (any::<[u8; 16]>(), 0u8..=128).prop_map(|(addr, len)| Prefix::V6 { addr, len }),
        (any::<[u8; 4]>(), 1u8..=255).prop_map(|(addr, quality)| Prefix::Client4 { addr, quality }),
        (any::<[u8; 16]>(), 1u8..=255)
            .prop_map(|(addr, quality)| Prefix::Client6 { addr, quality }),
        (any::<u8>(), any::<u32>()).prop_map(|(preference, capacity_kbps)| Prefix::Gateway {
            preference,
            capacity_kbps
        }),
        (any::<u16>(), any::<u32>()).prop_map(|(id, transit)| Prefix::Area { id, transit }),
        (any::<u16>(), any::<u8>()).prop_map(|(first, extra)| Prefix::Members { first, extra }),
        (any::<u16>(), any::<u32>()).prop_map(|(area, metric)| Prefix::Adjacent { area, metric }),
        (any::<u16>(), any::<[u8; 4]>(), 0u8..=32).prop_map(|(node, addr, len)| Prefix::Member4 {
            node,
            addr,
            len
        }),
        (any::<u16>(), any::<[u8; 16]>(), 0u8..=128)
            .prop_map(|(node, addr, len)| Prefix::Member6 { node, addr, len }),
    ]
}

fn link() -> impl Strategy<Value = LsaLink> {
    (node(), any::<u8>(), any::<u32>(), any::<u32>()).prop_map(
        |(neighbor, link_id, metric_out, metric_in)| LsaLink {
            neighbor,
            link_id,
            metric_out,
            metric_in,
        },
    )
}

/// Any valid message, emitted.
fn valid_message() -> impl Strategy<Value = Vec<u8>> {
    let data = data_packet().prop_map(|(h, route, payload)| {
        let mut buf = vec![0u8; DataHeader::encoded_len(63) + payload.len()];
        let n = h.emit(&route, &mut buf).unwrap();
        assert_eq!(
            n,
            DataHeader::encoded_len(route.len()),
            "encoded_len is what emit writes"
        );
        buf.truncate(n);
        buf.extend_from_slice(&payload);
        buf
    });
    let probe = (
        prop_oneof![Just(MessageType::ProbeSmall), Just(MessageType::ProbeBig)]
            .prop_flat_map(control_header),
        any::<u32>(),
        any::<u16>(),
        any::<u16>(),
        any::<u16>(),
        prop::collection::vec(report(), 0..20),
        0usize..300,
    )
        .prop_map(|(h, seq, interval, rate, digest, reports, pad)| {
            let mut buf = vec![0u8; 512];
            let n = Probe::emit(&h, seq, interval, rate, digest, &reports, pad, &mut buf).unwrap();
            assert_eq!(
                n,
                Probe::encoded_len(reports.len(), pad, h.mac_len as usize)
            );
            buf.truncate(n);
            buf
        });
    let one_lsa = (
        node(),
        any::<u16>(),
        any::<u32>(),
        prop::collection::vec(link(), 0..20),
        prop::collection::vec(prefix(), 0..8),
    );
    let lsa = (
        control_header(MessageType::Lsa),
        prop::collection::vec(one_lsa, 1..4),
        any::<bool>(),
        any::<u8>(),
    )
        .prop_map(|(mut h, lsas, signed, sig_byte)| {
            // Signed: each LSA followed by its origin's signature (any
            // bytes to the codec).
            let sig = [sig_byte; ORIGIN_SIGNATURE_LEN];
            if signed {
                h.flags = ControlFlags::SIGNED_ORIGINS;
            }
            let entries: Vec<LsaEntry<'_>> = lsas
                .iter()
                .map(|(origin, age, seq, links, prefixes)| LsaEntry {
                    signature: signed.then_some(&sig),
                    ..LsaEntry::new(*origin, *age, *seq, links, prefixes)
                })
                .collect();
            let mut buf = vec![0u8; 4096];
            let n = Lsa::emit_bundle(&h, &entries, &mut buf).unwrap();
            assert_eq!(n, Lsa::bundle_len(&entries, h.mac_len as usize));
            buf.truncate(n);
            buf
        });
    let report = (
        control_header(MessageType::PathReport),
        node(),
        any::<u8>(),
        prop::collection::vec(
            (
                0u8..16,
                any::<u32>(),
                prop::option::of(0..=braid_wire::control::LATEST_MASK),
                any::<u16>(),
            ),
            0..16,
        ),
    )
        .prop_map(|(h, ingress, class, counts)| {
            let counts: Vec<PathCount> = counts
                .into_iter()
                .map(|(path, received, latest, age)| PathCount {
                    path,
                    received,
                    latest,
                    // Sent only with the send order it dates.
                    age_ms: if latest.is_some() { age } else { 0 },
                })
                .collect();
            let mut buf = vec![0u8; 512];
            let n = PathReport::emit(&h, ingress, class, &counts, &mut buf).unwrap();
            assert_eq!(n, PathReport::encoded_len(counts.len(), h.mac_len as usize));
            buf.truncate(n);
            buf
        });
    let challenge = (
        control_header(MessageType::Challenge),
        any::<bool>(),
        node(),
        any::<[u8; 8]>(),
    )
        .prop_map(|(h, request, target, nonce)| {
            let kind = if request {
                ChallengeKind::Request
            } else {
                ChallengeKind::Reply
            };
            let c = Challenge {
                kind,
                target,
                nonce,
            };
            let mut buf = vec![0u8; 512];
            let n = c.emit(&h, &mut buf).unwrap();
            assert_eq!(n, Challenge::encoded_len(h.mac_len as usize));
            buf.truncate(n);
            buf
        });
    let echo = (
        control_header(MessageType::Echo),
        any::<bool>(),
        node(),
        any::<u32>(),
        any::<u64>(),
    )
        .prop_map(|(h, request, target, seq, stamp)| {
            let kind = if request {
                EchoKind::Request
            } else {
                EchoKind::Reply
            };
            let e = Echo {
                kind,
                target,
                seq,
                stamp,
            };
            let mut buf = vec![0u8; 512];
            let n = e.emit(&h, &mut buf).unwrap();
            assert_eq!(n, Echo::encoded_len(h.mac_len as usize));
            buf.truncate(n);
            buf
        });
    let check = (
        control_header(MessageType::SessionCheck),
        any::<bool>(),
        any::<u8>(),
        node(),
        (any::<u32>(), any::<u32>()),
        any::<[u8; 8]>(),
    )
        .prop_map(|(h, request, class, target, (epoch, next_seq), nonce)| {
            let kind = if request {
                SessionCheckKind::Request
            } else {
                SessionCheckKind::Proof
            };
            let c = SessionCheck {
                kind,
                class,
                target,
                epoch,
                next_seq,
                nonce,
            };
            let mut buf = vec![0u8; 512];
            let n = c.emit(&h, &mut buf).unwrap();
            assert_eq!(n, SessionCheck::encoded_len(h.mac_len as usize));
            buf.truncate(n);
            buf
        });
    let repair = (
        control_header(MessageType::RepairRequest),
        any::<u8>(),
        1..=MAX_REQUEST_COUNT,
        node(),
        any::<u32>(),
        0..MAX_REQUEST_SPAN,
    )
        .prop_map(|(h, class, count, target, end, back)| {
            let r = RepairRequest {
                class,
                count,
                target,
                end,
                first: end.wrapping_sub(back),
            };
            let mut buf = vec![0u8; 512];
            let n = r.emit(&h, &mut buf).unwrap();
            assert_eq!(n, RepairRequest::encoded_len(h.mac_len as usize));
            buf.truncate(n);
            buf
        });
    prop_oneof![data, probe, lsa, report, challenge, echo, check, repair]
}

/// Re-emits a parsed message; parsing that again must give the same value.
fn re_emit(msg: &Message<'_>) -> Vec<u8> {
    let mut buf = vec![0u8; 70_000];
    let n = match msg {
        Message::Data(p) => {
            let route: Vec<NodeId> = p.route.iter().collect();
            let n = p.header.emit(&route, &mut buf).unwrap();
            buf[n..n + p.payload.len()].copy_from_slice(p.payload);
            n + p.payload.len()
        }
        Message::Probe(m, p) => {
            let reports: Vec<_> = p.reports().collect();
            // Padding is not part of the value; keep the length the same.
            let len = m.authenticated.len() + m.mac.len();
            Probe::emit(
                &m.header,
                p.seq,
                p.interval_ms,
                p.rate,
                p.digest,
                &reports,
                len,
                &mut buf,
            )
            .unwrap()
        }
        Message::Lsa(m, bundle) => {
            let owned: Vec<(Vec<_>, Vec<_>)> = bundle
                .iter()
                .map(|l| (l.links().collect(), l.prefixes().collect()))
                .collect();
            let entries: Vec<LsaEntry<'_>> = bundle
                .iter()
                .zip(&owned)
                .map(|(l, (links, prefixes))| LsaEntry {
                    origin: l.origin,
                    age: l.age,
                    seq: l.seq,
                    checksum: l.checksum,
                    links,
                    prefixes,
                    signature: l.signature,
                })
                .collect();
            Lsa::emit_bundle(&m.header, &entries, &mut buf).unwrap()
        }
        Message::PathReport(m, r) => {
            let counts: Vec<_> = r.counts().collect();
            PathReport::emit(&m.header, r.ingress, r.class, &counts, &mut buf).unwrap()
        }
        Message::Challenge(m, c) => c.emit(&m.header, &mut buf).unwrap(),
        Message::Echo(m, e) => e.emit(&m.header, &mut buf).unwrap(),
        Message::SessionCheck(m, c) => c.emit(&m.header, &mut buf).unwrap(),
        Message::RepairRequest(m, r) => r.emit(&m.header, &mut buf).unwrap(),
    };
    buf.truncate(n);
    buf
}

fn same_value(a: &Message<'_>, b: &Message<'_>) -> bool {
    match (a, b) {
        (Message::Data(x), Message::Data(y)) => x == y,
        (Message::Probe(mx, x), Message::Probe(my, y)) => {
            mx.header == my.header
                && (x.kind, x.seq, x.interval_ms, x.rate, x.digest)
                    == (y.kind, y.seq, y.interval_ms, y.rate, y.digest)
                && x.reports().eq(y.reports())
        }
        (Message::Lsa(mx, xs), Message::Lsa(my, ys)) => {
            mx.header == my.header
                && xs.len() == ys.len()
                && xs.iter().zip(ys.iter()).all(|(x, y)| {
                    (x.origin, x.age, x.seq) == (y.origin, y.age, y.seq)
                        && x.links().eq(y.links())
                        && x.prefixes().eq(y.prefixes())
                        && x.signature == y.signature
                })
        }
        (Message::PathReport(mx, x), Message::PathReport(my, y)) => {
            mx.header == my.header
                && (x.ingress, x.class) == (y.ingress, y.class)
                && x.counts().eq(y.counts())
        }
        (Message::Challenge(mx, x), Message::Challenge(my, y)) => mx.header == my.header && x == y,
        (Message::Echo(mx, x), Message::Echo(my, y)) => mx.header == my.header && x == y,
        (Message::SessionCheck(mx, x), Message::SessionCheck(my, y)) => {
            mx.header == my.header && x == y
        }
        (Message::RepairRequest(mx, x), Message::RepairRequest(my, y)) => {
            mx.header == my.header && x == y
        }
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn data_round_trip((h, route, payload) in data_packet()) {
        let mut buf = vec![0u8; DataHeader::encoded_len(63) + payload.len()];
        let n = h.emit(&route, &mut buf).unwrap();
        prop_assert_eq!(n, DataHeader::encoded_len(route.len()));
        buf[n..n + payload.len()].copy_from_slice(&payload);
        let pkt = DataHeader::parse(&buf[..n + payload.len()]).unwrap();
        prop_assert_eq!(pkt.header, h);
        prop_assert_eq!(pkt.route.iter().collect::<Vec<_>>(), route);
        prop_assert_eq!(pkt.payload, &payload[..]);
    }

    /// Walked along its route, a packet names at every node the node
    /// that sent it; any other node is told no sender.
    #[test]
    fn every_receiver_names_the_node_that_sent_the_packet(
        (mut h, route, _payload) in data_packet(),
        stranger in node(),
    ) {
        h.route_ptr = 0;
        h.hop_limit = 255;
        let mut buf = vec![0u8; DataHeader::encoded_len(63)];
        let n = h.emit(&route, &mut buf).unwrap();
        let buf = &mut buf[..n];
        let mut at = h.ingress;
        let mut hops = 0;
        while let Ok(data::Forward::To(next)) = forward_in_place(buf, at) {
            let pkt = DataHeader::parse(buf).unwrap();
            let on_path = route.contains(&stranger) || stranger == h.ingress || stranger == h.egress;
            if !on_path && stranger != next {
                prop_assert_eq!(data::previous_hop(&pkt, stranger), None);
            }
            // A route that names a node twice is ambiguous: the first
            // mention is the one the pointer checks.
            let named = route.iter().filter(|&&r| r == next).count();
            let egress_in_route = next == h.egress && named > 0;
            if named <= 1 && next != h.ingress && !egress_in_route {
                prop_assert_eq!(data::previous_hop(&pkt, next), Some(at));
            }
            at = next;
            hops += 1;
            if hops > 70 {
                break;
            }
        }
    }

    #[test]
    fn every_valid_message_round_trips(bytes in valid_message()) {
        let msg = parse_any(&bytes).unwrap();
        let again = re_emit(&msg);
        prop_assert_eq!(&again, &bytes);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(msg) = parse_any(&bytes) {
            let again = re_emit(&msg);
            prop_assert!(same_value(&parse_any(&again).unwrap(), &msg));
        }
        let mut copy = bytes.clone();
        let _ = forward_in_place(&mut copy, NodeId(1));
    }

    #[test]
    fn mutated_valid_messages_never_panic(
        bytes in valid_message(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut m = bytes.clone();
        for (at, v) in edits {
            let i = at.index(m.len());
            m[i] = v;
        }
        // Force the version nibble back to ours half the time, so that the
        // mutations reach past the first byte.
        if m[0] & 1 == 0 {
            m[0] = (VERSION << 4) | (m[0] & 0x0f);
        }
        if truncate {
            m.truncate(cut.index(m.len() + 1));
        }
        if let Ok(msg) = parse_any(&m) {
            let again = re_emit(&msg);
            prop_assert!(same_value(&parse_any(&again).unwrap(), &msg));
        }
        let _ = forward_in_place(&mut m, NodeId(1));
    }
}
