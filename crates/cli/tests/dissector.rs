//! The Wireshark dissector (`dist/wireshark/braid.lua`) against braid's
//! own codec, with tshark:
//!
//! * messages the codec writes (`braid_wire`): every message type, mode
//!   and kind of entry; malformed ones, each of which must carry the
//!   expert info named as the error braid refuses it with; and every cut
//!   and altered byte of the well-formed ones, marked as the codec takes
//!   them (never a Lua error, never a byte left unshown);
//! * a simulator capture (`braid sim --pcap`) of a small mesh with
//!   authentication on and data in every mode;
//! * a real lab capture (root): `braid lab run` with a router crashing,
//!   captured with dumpcap inside a router's namespace.
//!
//! For every braid datagram of the well-formed messages and of both
//! captures, each field the dissector shows is compared with what the
//! codec parses from the same bytes (field by field, in order), every
//! byte of the datagram must belong to a braid field (the user's packet
//! inside a data packet must be decoded by Wireshark's IP dissector
//! instead), and no expert info, malformed mark or Lua error may appear.
//! A harness of its own (libtest-mimic), as the lab tests: where tshark
//! or root is missing the runner's own output says `[skipped: why]`.
//! What the tests stand on (running tshark, reading PDML, writing and
//! reading captures, the codec's view of each message) is in
//! `common/wireshark/`.

mod common;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::process::Command;
use std::time::Duration;

use braid_sim::pcap::ipv4_udp;
use braid_wire::{ControlMessage, Message};
use common::wireshark::capture_check::{assert_kinds, check_capture, set, values};
use common::wireshark::captures::{datagrams, PcapWriter, PORT};
use common::wireshark::codec_fields::authenticator;
use common::wireshark::codec_messages::{codec_messages, codec_verdict, BENIGN, SECRET};
use common::wireshark::dissection::{braid_proto, experts, experts_in, threw, uncovered};
use common::wireshark::lab_capture::{lab_missing, run_captured};
use common::wireshark::pdml::{field_value, Packet};
use common::wireshark::tshark::{have, keys_option, pdml, run_bounded, scratch};

// ------------------------------------------------------------ codec-made messages

fn codec_messages_decode_field_for_field() {
    let c = codec_messages();
    let mut pcap = PcapWriter::new();
    for (_, m) in &c.good {
        pcap.braid(PORT, m);
    }
    // The port preference: a probe on 7000 is braid only when told.
    let small_probe = &c
        .good
        .iter()
        .find(|(what, _)| *what == "small probe")
        .unwrap()
        .1;
    let other_port = pcap.braid(7000, small_probe);
    // Kernel tree mode: an IPv4 packet with the reserved flag set, entry
    // point 7 in its identification; and one without.
    let tree = |flags, body: &[u8]| {
        ipv4_udp(
            [198, 18, 1, 2],
            [198, 18, 4, 2],
            (9000, 9000),
            7,
            flags,
            body,
        )
    };
    let marked = pcap.ipv4(&tree(0x8000, b"tree"));
    let unmarked = pcap.ipv4(&tree(0, b"plain"));
    let file = scratch("codec.pcap");
    std::fs::write(&file, pcap.bytes()).unwrap();

    let checked = check_capture(
        "codec",
        &file,
        &[keys_option(3, SECRET)],
        &c.signer,
        &["braid.flush"],
    );
    assert_eq!(checked.datagrams, c.good.len());
    assert_kinds(
        "codec",
        &checked,
        &[
            "data/single",
            "data/stripe",
            "data/mirror",
            "data/tree",
            "data/parity",
            "data/parity-rotating",
            "data/erasure",
            "data/route",
            "data/payload/ipv4",
            "data/payload/ipv6",
            "data/payload/braid",
            "data/parity/repair/xor",
            "data/parity-rotating/repair/xor",
            "data/repair/shard",
            "data/erasure/group depth 8",
            "probe/small",
            "probe/big",
            "probe/padding",
            "lsa",
            "lsa/link",
            "lsa/prefix4",
            "lsa/prefix6",
            "lsa/client4",
            "lsa/client6",
            "lsa/gateway",
            "lsa/area",
            "lsa/members",
            "lsa/adjacent",
            "lsa/member4",
            "lsa/member6",
            "lsa/flush",
            "lsa/signed",
            "path report",
            "challenge/request",
            "challenge/reply",
            "echo/request",
            "echo/reply",
            "check/request",
            "check/proof",
            "repair request",
            "mac/good",
            "mac/none",
            "mac/unknown key",
        ],
    );
    let packets = pdml(&file, &[], "codec-default");
    assert!(
        braid_proto(&packets[other_port - 1]).is_none(),
        "port 7000 is not braid's by default"
    );
    let moved = pdml(&file, &["braid.port:7000".to_string()], "codec-port");
    assert!(
        braid_proto(&moved[other_port - 1]).is_some(),
        "the port preference is not applied"
    );
    assert!(
        braid_proto(&moved[0]).is_none(),
        "port 6868 is still braid's after the port moved"
    );
    let entry = |p: &Packet| field_value(p, "braid_mark.entry").map(|i| i.show.clone());
    assert_eq!(
        entry(&packets[marked - 1]),
        Some("7".to_string()),
        "kernel tree mode"
    );
    assert_eq!(
        entry(&packets[unmarked - 1]),
        None,
        "an unmarked packet is marked"
    );
}

fn malformed_messages_carry_the_error_braid_refuses_them_with() {
    let c = codec_messages();
    let mut pcap = PcapWriter::new();
    for (what, m, kind) in &c.malformed {
        // The codec refuses it so (or, where the wire allows it, the
        // receiving node does).
        let codec = match (codec_verdict(m), braid_wire::parse_any(m)) {
            (Err(kind), _) => kind,
            (Ok(()), Ok(Message::Probe(msg, _))) => c
                .signer
                .check_mac(&msg)
                .map_or_else(|r| r.kind(), |()| "accepted"),
            _ => "accepted",
        };
        assert_eq!(codec, *kind, "{what}: the codec");
        pcap.braid(PORT, m);
    }
    let file = scratch("codec-malformed.pcap");
    std::fs::write(&file, pcap.bytes()).unwrap();
    let packets = pdml(&file, &[keys_option(3, SECRET)], "codec-malformed");
    assert_eq!(packets.len(), c.malformed.len());
    for ((what, m, kind), packet) in c.malformed.iter().zip(&packets) {
        let (_, proto) =
            braid_proto(packet).unwrap_or_else(|| panic!("{what}: not dissected as braid"));
        assert_eq!(proto.size, m.len(), "{what}");
        let found = experts(packet);
        let want = format!("braid.{kind}");
        assert!(
            found.contains(&want),
            "{what}: expert info {found:?}, wanted {want}"
        );
        assert!(!threw(&found), "{what}: the dissector threw: {found:?}");
        // Even a malformed message is shown to its last byte.
        assert!(
            uncovered(proto).is_empty(),
            "{what}: bytes no field shows: {:?}",
            uncovered(proto)
        );
    }
    eprintln!(
        "codec: {} malformed messages, each marked as braid refuses it",
        c.malformed.len()
    );
}

fn every_cut_and_altered_byte_is_marked_as_the_codec_takes_it() {
    // Every cut of the well-formed messages, and each of their bytes with
    // all bits or the low four inverted: the dissector never throws,
    // shows every byte, marks each message the codec refuses with the
    // codec's error kind, and no other as an error.
    let c = codec_messages();
    let mut pcap = PcapWriter::new();
    let mut cases = Vec::new();
    for (what, m) in &c.good {
        for cut in 1..m.len() {
            cases.push((format!("{what}, cut to {cut} bytes"), m[..cut].to_vec()));
        }
        for i in 0..m.len() {
            for bits in [0xff, 0x0f] {
                let mut x = m.clone();
                x[i] ^= bits;
                cases.push((format!("{what}, byte {i} xor {bits:#x}"), x));
            }
        }
    }
    for (_, m) in &cases {
        pcap.braid(PORT, m);
    }
    let file = scratch("codec-fuzz.pcap");
    std::fs::write(&file, pcap.bytes()).unwrap();
    let packets = pdml(&file, &[keys_option(3, SECRET)], "codec-fuzz");
    assert_eq!(packets.len(), cases.len());
    let mut refused = BTreeMap::<&str, usize>::new();
    for ((what, m), packet) in cases.iter().zip(&packets) {
        let (_, proto) =
            braid_proto(packet).unwrap_or_else(|| panic!("{what}: not dissected as braid"));
        assert_eq!(proto.size, m.len(), "{what}");
        let found = experts_in(proto);
        assert!(!threw(&found), "{what}: the dissector threw: {found:?}");
        assert!(uncovered(proto).is_empty(), "{what}: bytes no field shows");
        match codec_verdict(m) {
            Err(kind) => {
                *refused.entry(kind).or_default() += 1;
                let want = format!("braid.{kind}");
                assert!(
                    found.contains(&want),
                    "{what}: expert info {found:?}, the codec: {kind}"
                );
            }
            Ok(()) => {
                let errors: Vec<&String> = found
                    .iter()
                    .filter(|x| !BENIGN.contains(&x.as_str()))
                    .collect();
                assert!(
                    errors.is_empty(),
                    "{what}: the codec accepts it, the dissector says {errors:?}"
                );
            }
        }
    }
    eprintln!(
        "codec: {} cut or altered messages, {} refused by the codec and marked so by the dissector: {refused:?}",
        cases.len(),
        refused.values().sum::<usize>()
    );
}

// ------------------------------------------------------------ simulator capture

/// The simulator's key (`crates/sim/src/world.rs`).
const SIM_KEY: &[u8] = b"the simulated network's key, 32B";

/// Five braid nodes (s x a t b: ids 0-4, in the order the links name
/// them) and a client c of t; s reaches t over two node-disjoint paths
/// from x, so the captured link s-x carries every path. Every mode,
/// authentication on.
const SCENARIO: &str = r#"name = "dissector"
duration = "8s"
seed = 1

[topology]
kind = "links"
links = [["s", "x"], ["x", "a"], ["a", "t"], ["x", "b"], ["b", "t"], ["t", "c"]]

[link]
delay = "2ms"

[node]
paths = 2
auth = true
clients = ["c"]
"#;

fn sim_capture_of_every_mode_decodes_completely() {
    let mut text = SCENARIO.to_string();
    for mode in [
        "single",
        "stripe",
        "mirror:2",
        "parity:3",
        "parity-rotating:3",
        "erasure:4,2,2",
        "sliding:3,2,8",
        "tree",
    ] {
        let to = if mode == "tree" { "c" } else { "t" };
        text += &format!(
            "\n[[flows]]\nname = \"{}\"\nfrom = \"s\"\nto = \"{to}\"\ncount = 40\ninterval = \"5ms\"\nstart = \"3s\"\nmode = \"{mode}\"\n",
            mode.replace([':', ','], "-")
        );
    }
    let file = scratch("dissector.toml");
    std::fs::write(&file, text).unwrap();
    let out = scratch("sim");
    let ran = run_bounded(
        Command::new(env!("CARGO_BIN_EXE_braid"))
            .args(["sim", "--pcap", "s,x", "--out"])
            .arg(&out)
            .arg(&file),
        Duration::from_secs(120),
        "sim",
    );
    assert!(ran.ok, "braid sim failed: {}", ran.stderr);
    let auth = authenticator(1, SIM_KEY);
    let checked = check_capture(
        "simulator",
        &out.join("s-x.pcap"),
        &[keys_option(1, SIM_KEY)],
        &auth,
        &[],
    );
    assert_kinds(
        "simulator",
        &checked,
        &[
            "data/single",
            "data/stripe",
            "data/mirror",
            "data/tree",
            "data/parity",
            "data/parity-rotating",
            "data/erasure",
            "data/erasure/group depth 2",
            "data/route",
            "data/parity/repair/xor",
            "data/parity-rotating/repair/xor",
            "data/repair/shard",
            "data/payload/ipv4",
            "data/payload/braid",
            "path report",
            "probe/small",
            "probe/big",
            "lsa",
            "lsa/link",
            "lsa/prefix4",
            "lsa/client4",
            "challenge/request",
            "challenge/reply",
            "mac/good",
        ],
    );
    // The scenario's nodes: every origin advertises, s (0) and x (1)
    // send on the link, sessions run from s to t (3), t reports to s,
    // and every MAC checks under the simulation's key.
    assert_eq!(
        values(&checked, "braid.lsa.origin"),
        set(&["0", "1", "2", "3", "4"])
    );
    assert_eq!(values(&checked, "braid.ctl.sender"), set(&["0", "1", "3"]));
    assert_eq!(values(&checked, "braid.data.ingress"), set(&["0", "3"]));
    assert_eq!(values(&checked, "braid.data.egress"), set(&["0", "3"]));
    assert_eq!(values(&checked, "braid.path_report.ingress"), set(&["0"]));
    assert_eq!(values(&checked, "braid.auth.status"), set(&["1"]));
    // Each link-local control message's sender is the node at its
    // underlay address (198.19.255.(id + 1) in simulator captures).
    let bytes = std::fs::read(out.join("s-x.pcap")).unwrap();
    let mut senders = 0;
    for g in datagrams(&bytes, PORT) {
        if let Ok(msg) = ControlMessage::parse(&g.bytes) {
            let IpAddr::V4(src) = g.src else {
                panic!("IPv6 underlay")
            };
            assert_eq!(
                u16::from(src.octets()[3]) - 1,
                msg.header.sender.0,
                "frame {}",
                g.frame
            );
            senders += 1;
        }
    }
    assert!(senders > 10, "{senders} control messages");
}

// ------------------------------------------------------------ lab capture

/// A diamond (a-b-d, a-c-d; router ids 1-4) with auth on (the lab's
/// default), erasure coding, an IPv4 flow a to d and an IPv6 flow d to
/// a, and b crashing and starting again 1 s in: challenges, LSAs, path
/// reports, probes and coded data all cross router a.
const LAB: &str = r#"name = "tdissect"
mode = "erasure:4,2"
paths = 2
[[router]]
name = "a"
host = true
[[router]]
name = "b"
[[router]]
name = "c"
[[router]]
name = "d"
host = true
[[link]]
a = "a"
b = "b"
[[link]]
a = "b"
b = "d"
[[link]]
a = "a"
b = "c"
[[link]]
a = "c"
b = "d"
[[flow]]
name = "v4"
from = "a"
to = "d"
count = 300
interval = "10ms"
[[flow]]
name = "v6"
from = "d"
to = "a"
count = 300
interval = "10ms"
ipv6 = true
[[event]]
at = "1s"
router = "b"
action = "crash"
"#;

const LAB_NAME: &str = "tdissect";

fn lab_capture_with_authentication_decodes_completely() {
    let file = scratch("tdissect.toml");
    std::fs::write(&file, LAB).unwrap();
    let pcap = scratch("lab.pcap");
    run_captured(LAB_NAME, &file, "a", &pcap, &scratch("lab.log"));

    let key = braid_lab::routing::braid::lab_key(1);
    let secret: Vec<u8> = (0..key.secret.get_ref().len() / 2)
        .map(|i| u8::from_str_radix(&key.secret.get_ref()[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let auth = authenticator(*key.id.get_ref(), &secret);
    // A daemon stopped at teardown floods its LSA's flush (a chat).
    let checked = check_capture(
        "lab",
        &pcap,
        &[keys_option(*key.id.get_ref(), &secret)],
        &auth,
        &["braid.flush"],
    );
    assert_kinds(
        "lab",
        &checked,
        &[
            "data/erasure",
            "data/route",
            "data/repair/shard",
            "data/payload/ipv4",
            "data/payload/ipv6",
            "data/payload/braid",
            "path report",
            "probe/small",
            "probe/big",
            "probe/padding",
            "lsa",
            "lsa/link",
            "lsa/prefix4",
            "lsa/prefix6",
            "challenge/request",
            "challenge/reply",
            "mac/good",
        ],
    );
    // Router ids are 1-4 in file order; a (1) hears b (2) and c (3) and
    // speaks itself; the sessions run between a and d (4); every MAC
    // checks under the lab's key.
    assert_eq!(
        values(&checked, "braid.lsa.origin"),
        set(&["1", "2", "3", "4"])
    );
    assert_eq!(
        values(&checked, "braid.ctl.sender"),
        set(&["1", "2", "3", "4"])
    );
    assert_eq!(values(&checked, "braid.data.ingress"), set(&["1", "4"]));
    assert_eq!(values(&checked, "braid.auth.status"), set(&["1"]));
    // Link j joins 198.19.j.1 (its first router) and 198.19.j.2: each
    // link-local control message comes from its sender's address.
    let ends = [(1u16, 2u16), (2, 4), (1, 3), (3, 4)];
    let bytes = std::fs::read(&pcap).unwrap();
    let mut senders = 0;
    for g in datagrams(&bytes, PORT) {
        if let Ok(msg) = ControlMessage::parse(&g.bytes) {
            let IpAddr::V4(src) = g.src else {
                panic!("IPv6 underlay")
            };
            let [_, _, link, end] = src.octets();
            let (first, second) = ends[usize::from(link)];
            let id = if end == 1 { first } else { second };
            assert_eq!(id, msg.header.sender.0, "frame {} from {src}", g.frame);
            senders += 1;
        }
    }
    assert!(senders > 10, "{senders} control messages");
}

// ------------------------------------------------------------ harness

fn main() -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let tshark =
        (!have("tshark")).then(|| "tshark is not installed (run scripts/setup.sh)".to_string());
    let tests: [(&str, bool, fn()); 5] = [
        (
            "codec_messages_decode_field_for_field",
            false,
            codec_messages_decode_field_for_field,
        ),
        (
            "malformed_messages_carry_the_error_braid_refuses_them_with",
            false,
            malformed_messages_carry_the_error_braid_refuses_them_with,
        ),
        (
            "every_cut_and_altered_byte_is_marked_as_the_codec_takes_it",
            false,
            every_cut_and_altered_byte_is_marked_as_the_codec_takes_it,
        ),
        (
            "a_simulator_capture_of_every_mode_decodes_completely",
            false,
            sim_capture_of_every_mode_decodes_completely,
        ),
        (
            "a_lab_capture_with_authentication_decodes_completely",
            true,
            lab_capture_with_authentication_decodes_completely,
        ),
    ];
    let trials = tests
        .into_iter()
        .map(|(name, lab, body)| {
            let missing = tshark
                .clone()
                .or_else(|| if lab { lab_missing() } else { None });
            common::trial(name, missing, None, move || {
                body();
            })
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    // The captures and tshark's output stay for a look when a test failed.
    let dir = scratch("x").with_file_name("");
    if conclusion.has_failed() {
        eprintln!("captures and tshark output: {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    conclusion.exit_code()
}
