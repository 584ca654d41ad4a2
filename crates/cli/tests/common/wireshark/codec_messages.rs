//! Messages braid's codec writes for the dissector test: well-formed ones
//! of every type, mode and kind of entry, malformed ones, and how braid
//! takes each (accepted, or refused with the counter's name).

use std::net::Ipv6Addr;

use braid_proto::auth::Authenticator;
use braid_sim::pcap::ipv4_udp;
use braid_wire::control::LATEST_MASK;
use braid_wire::{
    Challenge, ChallengeKind, ControlFlags, ControlHeader, ControlMessage, DataFlags, DataHeader,
    Echo, EchoKind, Group, Lsa, LsaEntry, LsaLink, Message, MessageType, NodeId, PathCount,
    PathReport, Prefix, Probe, ProbeReport, RedundancyMode, RepairRequest, SessionCheck,
    SessionCheckKind,
};

use super::captures::ipv6_udp;
use super::codec_fields::authenticator;

/// The key the messages are signed with (id 3).
pub const SECRET: &[u8] = b"the dissector test's own key, 32";

/// A control header from `sender`, with `signer`'s key fields.
fn control(ty: MessageType, sender: u16, signer: Option<&Authenticator>) -> ControlHeader {
    let (key_id, mac_len) = signer.map_or((0, 0), Authenticator::header_fields);
    ControlHeader {
        msg_type: ty,
        flags: ControlFlags::empty(),
        sender: NodeId(sender),
        key_id,
        mac_len,
        boot_index: 0x0a0b_0c0d,
        counter: 42 + sender as u32,
    }
}

/// The message of the first `n` bytes of `buf`, signed by `signer`.
fn finish(mut buf: Vec<u8>, n: usize, signer: Option<&Authenticator>) -> Vec<u8> {
    buf.truncate(n);
    if let Some(a) = signer {
        a.sign(&mut buf);
    }
    buf
}

/// A data packet: `header`, `route`, then `payload`.
fn data(header: DataHeader, route: &[u16], payload: &[u8]) -> Vec<u8> {
    let route: Vec<NodeId> = route.iter().map(|&n| NodeId(n)).collect();
    let mut buf = vec![0u8; DataHeader::encoded_len(route.len())];
    let n = header.emit(&route, &mut buf).unwrap();
    buf.truncate(n);
    buf.extend_from_slice(payload);
    buf
}

/// A data header of `mode` from 1 to 9 on path 3.
fn header(mode: RedundancyMode, group: Group, flags: DataFlags) -> DataHeader {
    DataHeader {
        flags,
        mode,
        path: 3,
        route_ptr: 0,
        ingress: NodeId(1),
        egress: NodeId(9),
        seq: 0xdead_beef,
        group,
        hop_limit: 16,
        class: 2,
        epoch: 0x0102_0304,
    }
}

/// A probe from node 3 with `reports`, padded to `pad_to`.
fn probe(
    ty: MessageType,
    signer: Option<&Authenticator>,
    reports: &[ProbeReport],
    pad_to: usize,
) -> Vec<u8> {
    let h = control(ty, 3, signer);
    let rate = if ty == MessageType::ProbeBig { 110 } else { 0 };
    let mut buf = vec![0u8; Probe::encoded_len(reports.len(), pad_to, h.mac_len as usize)];
    let n = Probe::emit(&h, 77, 1000, rate, 0xbeef, reports, pad_to, &mut buf).unwrap();
    finish(buf, n, signer)
}

/// An LSA message from node 2 carrying `entries` (flagged as carrying
/// origin signatures when they do).
fn lsa_message(signer: Option<&Authenticator>, entries: &[LsaEntry<'_>]) -> Vec<u8> {
    let mut h = control(MessageType::Lsa, 2, signer);
    if entries.iter().all(|e| e.signature.is_some()) {
        h.flags = ControlFlags::SIGNED_ORIGINS;
    }
    let mut buf = vec![0u8; Lsa::bundle_len(entries, h.mac_len as usize)];
    let n = Lsa::emit_bundle(&h, entries, &mut buf).unwrap();
    finish(buf, n, signer)
}

/// Node 9's path report to node 1 (class 2) of `counts`.
fn path_report(signer: Option<&Authenticator>, counts: &[PathCount]) -> Vec<u8> {
    let h = control(MessageType::PathReport, 9, signer);
    let mut buf = vec![0u8; PathReport::encoded_len(counts.len(), h.mac_len as usize)];
    let n = PathReport::emit(&h, NodeId(1), 2, counts, &mut buf).unwrap();
    finish(buf, n, signer)
}

/// An echo of `kind` between node 9 and node 1.
fn echo(signer: Option<&Authenticator>, kind: EchoKind) -> Vec<u8> {
    let h = control(MessageType::Echo, 9, signer);
    let mut buf = vec![0u8; Echo::encoded_len(h.mac_len as usize)];
    let x = Echo {
        kind,
        target: NodeId(1),
        seq: 0x0102_0304,
        stamp: 0x1122_3344_5566_7788,
    };
    let n = x.emit(&h, &mut buf).unwrap();
    finish(buf, n, signer)
}

/// A session check of `kind` between node 9 and node 1.
fn session_check(signer: Option<&Authenticator>, kind: SessionCheckKind) -> Vec<u8> {
    let h = control(MessageType::SessionCheck, 9, signer);
    let mut buf = vec![0u8; SessionCheck::encoded_len(h.mac_len as usize)];
    let x = SessionCheck {
        kind,
        class: 46,
        target: NodeId(1),
        epoch: 0x0a0b_0c0d,
        next_seq: 0x0102_0304,
        nonce: [1, 2, 3, 4, 0, 0, 0, 9],
    };
    let n = x.emit(&h, &mut buf).unwrap();
    finish(buf, n, signer)
}

/// A repair request from node 9 to node 1.
fn repair_request(signer: Option<&Authenticator>) -> Vec<u8> {
    let h = control(MessageType::RepairRequest, 9, signer);
    let mut buf = vec![0u8; RepairRequest::encoded_len(h.mac_len as usize)];
    let x = RepairRequest {
        class: 0,
        count: 3,
        target: NodeId(1),
        end: 0x0102_0304,
        first: 0x0102_0304 - 40,
    };
    let n = x.emit(&h, &mut buf).unwrap();
    finish(buf, n, signer)
}

/// A challenge of `kind` from node 4 to node 5.
fn challenge(signer: Option<&Authenticator>, kind: ChallengeKind) -> Vec<u8> {
    let h = control(MessageType::Challenge, 4, signer);
    let mut buf = vec![0u8; Challenge::encoded_len(h.mac_len as usize)];
    let c = Challenge {
        kind,
        target: NodeId(5),
        nonce: [0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 7],
    };
    let n = c.emit(&h, &mut buf).unwrap();
    finish(buf, n, signer)
}

/// How braid takes a message: accepted, or refused with its counter's
/// name (the codec's error kind; for a data packet of braid's own
/// messages, the inner message's; a tree-mode packet with a route is
/// refused by the node that receives it).
pub fn codec_verdict(m: &[u8]) -> Result<(), &'static str> {
    match braid_wire::parse_any(m).map_err(|e| e.kind())? {
        // A path report or echo on its own: the link-local control
        // plane's.
        Message::PathReport(..)
        | Message::Echo(..)
        | Message::SessionCheck(..)
        | Message::RepairRequest(..) => Err("wrong_type"),
        Message::Data(p) if p.header.mode == RedundancyMode::Tree && !p.route.is_empty() => {
            Err("tree_with_route")
        }
        // The egress's, for a data packet of braid's own messages.
        Message::Data(p)
            if !p.header.group.is_repair() && p.payload.first().is_some_and(|b| b >> 4 == 1) =>
        {
            let msg = ControlMessage::parse(p.payload).map_err(|e| e.kind())?;
            match msg.header.msg_type {
                MessageType::Echo => {
                    Echo::parse(&msg).map_err(|e| e.kind())?;
                }
                MessageType::SessionCheck => {
                    SessionCheck::parse(&msg).map_err(|e| e.kind())?;
                }
                MessageType::RepairRequest => {
                    RepairRequest::parse(&msg).map_err(|e| e.kind())?;
                }
                _ => {
                    PathReport::parse(&msg).map_err(|e| e.kind())?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Expert infos that do not mean a message is refused: a MAC that does
/// not check under the preferences' key (the codec does not check MACs),
/// reserved bits set (ignored on receipt), a flush, a payload that is
/// not IP (an opaque user packet to the codec).
pub const BENIGN: [&str; 4] = [
    "braid.bad_mac",
    "braid.reserved_set",
    "braid.flush",
    "braid.not_ip",
];

/// Sets a control message's body length to its bytes (after an edit).
fn fix_body_len(mut m: Vec<u8>) -> Vec<u8> {
    let body = (m.len() - 16 - usize::from(m[7])) as u16;
    m[2..4].copy_from_slice(&body.to_be_bytes());
    m
}

/// Messages the codec writes: well-formed ones of every type and kind of
/// entry, and malformed ones with the error braid refuses each as (the
/// codec's error kind or, where the wire allows a message, the
/// receiver's refusal).
pub struct CodecMessages {
    pub signer: Authenticator,
    pub good: Vec<(&'static str, Vec<u8>)>,
    pub malformed: Vec<(&'static str, Vec<u8>, &'static str)>,
}

/// Messages the codec writes, the well-formed signed by key 3 (the
/// `signer`).
pub fn codec_messages() -> CodecMessages {
    let signer = authenticator(3, SECRET);
    let parts = Parts::new(&signer);
    CodecMessages {
        good: well_formed(&signer, &parts),
        malformed: malformed(&signer, &parts),
        signer,
    }
}

/// What the well-formed and the malformed messages are made of.
struct Parts {
    /// User packets for data packets to carry.
    user4: Vec<u8>,
    user6: Vec<u8>,
    counts: [PathCount; 2],
    /// A signed path report of `counts`.
    report: Vec<u8>,
    /// A data header for braid's own messages (class 255).
    control_class: DataHeader,
    /// A tree-mode data header.
    tree: DataHeader,
    links: [LsaLink; 2],
    prefixes: [Prefix; 10],
    reports: [ProbeReport; 2],
}

impl Parts {
    fn new(signer: &Authenticator) -> Parts {
        let s = Some(signer);
        let none = DataFlags::empty();
        let user4 = ipv4_udp(
            [198, 18, 1, 2],
            [198, 18, 4, 2],
            (9000, 9000),
            1,
            0,
            b"hello",
        );
        let user6 = ipv6_udp(
            "2001:2:0:1::2".parse().unwrap(),
            "2001:2:0:4::2".parse().unwrap(),
            (9001, 9001),
            b"hello over IPv6",
        );
        let counts = [
            PathCount {
                path: 0,
                received: 10,
                latest: None,
                age_ms: 0,
            },
            PathCount {
                path: 15,
                received: u32::MAX,
                latest: Some(LATEST_MASK),
                age_ms: 321,
            },
        ];
        let report = path_report(s, &counts);
        let mut control_class = header(RedundancyMode::Single, Group::NONE, DataFlags::URGENT);
        control_class.class = 255;
        let mut tree = header(RedundancyMode::Tree, Group::NONE, none);
        tree.egress = NodeId::NONE;
        let links = [
            LsaLink {
                neighbor: NodeId(2),
                link_id: 0,
                metric_out: 1000,
                metric_in: 2000,
            },
            LsaLink {
                neighbor: NodeId(3),
                link_id: 1,
                metric_out: 1500,
                metric_in: u32::MAX,
            },
        ];
        let prefixes = [
            Prefix::V4 {
                addr: [198, 18, 1, 0],
                len: 24,
            },
            Prefix::V6 {
                addr: "2001:2:0:1::".parse::<Ipv6Addr>().unwrap().octets(),
                len: 64,
            },
            Prefix::Client4 {
                addr: [198, 18, 200, 101],
                quality: 200,
            },
            Prefix::Client6 {
                addr: "2001:2:0:200::65".parse::<Ipv6Addr>().unwrap().octets(),
                quality: 1,
            },
            Prefix::Gateway {
                preference: 200,
                capacity_kbps: 1_000_000,
            },
            Prefix::Area {
                id: 7,
                transit: 4_000,
            },
            Prefix::Members {
                first: 1_000,
                extra: 255,
            },
            Prefix::Adjacent {
                area: 8,
                metric: 1_200,
            },
            Prefix::Member4 {
                node: 1_001,
                addr: [198, 18, 3, 0],
                len: 24,
            },
            Prefix::Member6 {
                node: 1_002,
                addr: "2001:2:0:3::".parse::<Ipv6Addr>().unwrap().octets(),
                len: 64,
            },
        ];
        let reports = [
            ProbeReport {
                neighbor: NodeId(1),
                rate: 0,
                ratio: 255,
            },
            ProbeReport {
                neighbor: NodeId(2),
                rate: u16::MAX,
                ratio: 128,
            },
        ];
        Parts {
            user4,
            user6,
            counts,
            report,
            control_class,
            tree,
            links,
            prefixes,
            reports,
        }
    }
}

/// Messages of every type, mode and kind of entry, as the codec writes
/// them (most signed by `signer`).
fn well_formed(signer: &Authenticator, parts: &Parts) -> Vec<(&'static str, Vec<u8>)> {
    let stranger = authenticator(9, SECRET);
    let s = Some(signer);
    let none = DataFlags::empty();
    let grp = |data, repair, index, depth| Group {
        data,
        repair,
        index,
        depth,
    };
    let mut stripe = header(
        RedundancyMode::Stripe,
        Group::NONE,
        DataFlags::CONGESTION.union(DataFlags::URGENT),
    );
    stripe.route_ptr = 1;
    let mut mirror = header(RedundancyMode::Mirror, Group::NONE, none);
    mirror.route_ptr = 5;
    mirror.hop_limit = 1;
    let entries = [
        LsaEntry::new(NodeId(1), 3, 10, &parts.links, &parts.prefixes),
        LsaEntry::new(NodeId(7), u16::MAX, 11, &[], &[]),
    ];
    vec![
        (
            "single, IPv4",
            data(
                header(RedundancyMode::Single, Group::NONE, none),
                &[],
                &parts.user4,
            ),
        ),
        ("stripe, route, IPv6", data(stripe, &[4, 5], &parts.user6)),
        (
            "mirror, route used up",
            data(mirror, &[4, 5, 6, 7, 8], &parts.user4),
        ),
        ("tree", data(parts.tree, &[], &parts.user4)),
        (
            "parity data",
            data(
                header(RedundancyMode::Parity, grp(2, 1, 1, 1), none),
                &[4],
                &parts.user4,
            ),
        ),
        (
            "parity repair",
            data(
                header(RedundancyMode::Parity, grp(2, 1, 2, 1), DataFlags::PARITY),
                &[4],
                &[1, 2, 3, 4, 5, 6, 7],
            ),
        ),
        (
            "parity-rotating repair",
            data(
                header(
                    RedundancyMode::ParityRotating,
                    grp(3, 1, 3, 1),
                    DataFlags::PARITY,
                ),
                &[],
                &[0, 9, 0xff],
            ),
        ),
        (
            "erasure data, interleaved",
            data(
                header(RedundancyMode::Erasure, grp(4, 2, 2, 4), none),
                &[],
                &parts.user6,
            ),
        ),
        (
            "erasure repair, interleaved",
            data(
                header(RedundancyMode::Erasure, grp(4, 2, 5, 8), DataFlags::PARITY),
                &[4, 5],
                &[0x5a; 30],
            ),
        ),
        (
            "sliding data",
            data(
                header(RedundancyMode::Sliding, grp(0, 0, 0, 1), none),
                &[4],
                &parts.user4,
            ),
        ),
        (
            "sliding repair",
            data(
                header(RedundancyMode::Sliding, grp(0, 15, 3, 1), DataFlags::PARITY),
                &[],
                &[32, 0, 9, 0xa5, 0x5a],
            ),
        ),
        (
            "path report in a data packet",
            data(parts.control_class, &[4], &parts.report),
        ),
        (
            "echo request in a data packet",
            data(parts.control_class, &[4], &echo(s, EchoKind::Request)),
        ),
        (
            "echo reply in a data packet",
            data(parts.control_class, &[4], &echo(s, EchoKind::Reply)),
        ),
        (
            "session check request in a data packet",
            data(
                parts.control_class,
                &[4],
                &session_check(s, SessionCheckKind::Request),
            ),
        ),
        (
            "session check proof in a data packet",
            data(
                parts.control_class,
                &[4],
                &session_check(s, SessionCheckKind::Proof),
            ),
        ),
        (
            "repair request in a data packet",
            data(parts.control_class, &[4], &repair_request(s)),
        ),
        (
            "small probe",
            probe(MessageType::ProbeSmall, s, &parts.reports, 0),
        ),
        (
            "big probe",
            probe(MessageType::ProbeBig, s, &parts.reports[1..], 300),
        ),
        (
            "unsigned probe",
            probe(MessageType::ProbeSmall, None, &[], 0),
        ),
        (
            "probe, another key",
            probe(
                MessageType::ProbeSmall,
                Some(&stranger),
                &parts.reports[..1],
                0,
            ),
        ),
        ("LSA bundle, flush", lsa_message(s, &entries)),
        (
            "LSA with its origin's signature",
            lsa_message(
                s,
                &[LsaEntry {
                    signature: Some(&[0x5a; 64]),
                    ..entries[0]
                }],
            ),
        ),
        ("challenge request", challenge(s, ChallengeKind::Request)),
        ("challenge reply", challenge(s, ChallengeKind::Reply)),
    ]
}

/// Malformed messages, each with what the dissector must say: the
/// codec's error kind (or, for a message the wire accepts, the
/// receiver's refusal).
fn malformed(signer: &Authenticator, parts: &Parts) -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let s = Some(signer);
    let none = DataFlags::empty();
    let v4_only = [parts.prefixes[0]];
    let client_only = [parts.prefixes[2]];
    let single = data(
        header(RedundancyMode::Single, Group::NONE, none),
        &[4],
        &parts.user4,
    );
    let small = probe(MessageType::ProbeSmall, None, &parts.reports, 0);
    let lsa = lsa_message(
        None,
        &[LsaEntry::new(NodeId(1), 3, 10, &parts.links, &v4_only)],
    );
    let client = lsa_message(None, &[LsaEntry::new(NodeId(1), 3, 10, &[], &client_only)]);
    let at_prefix = 16 + 16 + 12 * parts.links.len();
    let edit = |m: &[u8], at: usize, v: u8| {
        let mut m = m.to_vec();
        m[at] = v;
        m
    };
    let mut bad_mac = probe(MessageType::ProbeSmall, s, &parts.reports, 0);
    let last = bad_mac.len() - 1;
    bad_mac[last] ^= 1;
    let mut mac_cut = probe(MessageType::ProbeSmall, s, &parts.reports, 0);
    mac_cut.truncate(mac_cut.len() - 5);
    let mut long_challenge = challenge(None, ChallengeKind::Request);
    long_challenge.push(0);
    let mut long_report = path_report(None, &parts.counts);
    long_report.push(0);
    let mut long_probe = small.clone();
    long_probe.push(0);
    let mut short_report = path_report(None, &parts.counts);
    short_report.truncate(short_report.len() - 3);
    // An LSA message with no LSA: a challenge's header, retyped, alone.
    let mut empty_lsa = challenge(None, ChallengeKind::Request);
    empty_lsa.truncate(16);
    empty_lsa[0] = 0x10 | MessageType::Lsa as u8;
    let empty_lsa = fix_body_len(empty_lsa);
    vec![
        ("data header cut", single[..10].to_vec(), "truncated"),
        ("version 2", edit(&single, 0, 0x20), "unsupported_version"),
        ("type 9", edit(&single, 0, 0x19), "unknown_type"),
        ("mode 8", edit(&single, 1, 0x08), "invalid_field"),
        (
            "route pointer past the route",
            edit(&single, 3, 0x42),
            "invalid_field",
        ),
        ("route cut", edit(&single[..22], 3, 0xc0), "truncated"),
        (
            "P flag without a group",
            edit(&single, 1, 0x20),
            "invalid_field",
        ),
        (
            "datagram longer than declared",
            long_probe,
            "length_mismatch",
        ),
        ("control header cut", small[..10].to_vec(), "truncated"),
        ("MAC cut", mac_cut, "length_mismatch"),
        (
            "probe reports cut",
            fix_body_len(small[..small.len() - 6].to_vec()),
            "truncated",
        ),
        (
            "LSA checksum",
            edit(&lsa, 16 + 16 + 7, 0xff),
            "bad_checksum",
        ),
        ("prefix kind 5", edit(&lsa, at_prefix, 5), "invalid_field"),
        (
            "IPv4 prefix /33",
            edit(&lsa, at_prefix + 1, 33),
            "invalid_field",
        ),
        (
            "client quality 0",
            edit(&client, 16 + 16 + 1, 0),
            "invalid_field",
        ),
        ("LSA message without an LSA", empty_lsa, "truncated"),
        (
            "challenge kind 3",
            edit(&challenge(None, ChallengeKind::Request), 16, 3),
            "invalid_field",
        ),
        (
            "challenge of 13 bytes",
            fix_body_len(long_challenge),
            "length_mismatch",
        ),
        (
            "path index 16",
            edit(&path_report(None, &parts.counts), 16 + 4, 16),
            "invalid_field",
        ),
        (
            "byte after a path report",
            fix_body_len(long_report),
            "length_mismatch",
        ),
        ("path report cut", fix_body_len(short_report), "truncated"),
        ("path report on a link", parts.report.clone(), "wrong_type"),
        (
            "probe inside a data packet",
            data(parts.control_class, &[4], &small),
            "wrong_type",
        ),
        ("MAC", bad_mac, "bad_mac"),
        (
            "tree mode with a route",
            data(parts.tree, &[4], &parts.user4),
            "tree_with_route",
        ),
    ]
}
