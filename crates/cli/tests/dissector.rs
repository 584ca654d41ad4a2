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

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use braid_proto::auth::{AuthConfig, AuthKey, Authenticator, Refusal};
use braid_wire::control::LATEST_MASK;
use braid_wire::{
    Challenge, ChallengeKind, ControlFlags, ControlHeader, ControlMessage, DataFlags, DataHeader,
    Echo, EchoKind, Group, Lsa, LsaBundle, LsaEntry, LsaLink, Message, MessageType, NodeId,
    PathCount, PathReport, Prefix, Probe, ProbeReport, RedundancyMode,
};

/// braid's UDP port (the daemon's default, the simulator's captures').
const PORT: u16 = 6868;

fn dissector() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../dist/wireshark/braid.lua")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("braid-dissector-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ------------------------------------------------------------ processes

struct Ran {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` to its end, at most `limit` (killed and failed past it),
/// its output through files (no pipe to fill).
fn run_bounded(cmd: &mut Command, limit: Duration, what: &str) -> Ran {
    let out = scratch(&format!("{what}.stdout"));
    let err = scratch(&format!("{what}.stderr"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}, killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        ok: status.success(),
        stdout: std::fs::read_to_string(&out).unwrap(),
        stderr: std::fs::read_to_string(&err).unwrap(),
    }
}

/// tshark's PDML of `pcap` with the dissector loaded and `options`
/// (`-o` preferences).
fn pdml(pcap: &Path, options: &[String], what: &str) -> Vec<Packet> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"])
        .arg(pcap)
        .arg("-X")
        .arg(format!("lua_script:{}", dissector().display()))
        .args(["-T", "pdml"]);
    for o in options {
        cmd.args(["-o", o]);
    }
    let ran = run_bounded(&mut cmd, Duration::from_secs(300), what);
    assert!(ran.ok, "{what}: tshark failed: {}", ran.stderr);
    // A script that does not load is reported on stderr only.
    let complaints: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| !l.contains("Running as user") && !l.trim().is_empty())
        .collect();
    assert!(complaints.is_empty(), "{what}: tshark said {complaints:?}");
    let packets = parse_pdml(&ran.stdout);
    assert!(!packets.is_empty(), "{what}: no packets in tshark's output");
    packets
}

// ------------------------------------------------------------ PDML

/// One `<proto>` or `<field>` of tshark's PDML, with its children.
#[derive(Debug, Default, Clone)]
struct Item {
    name: String,
    show: String,
    showname: String,
    value: String,
    pos: usize,
    size: usize,
    children: Vec<Item>,
}

/// A packet: its protocols, outermost first.
type Packet = Vec<Item>;

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let end = rest[i..].find(';').map(|e| i + e).expect("entity ends");
        let entity = &rest[i + 1..end];
        let c = match entity {
            "quot" => '"',
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "apos" => '\'',
            _ if entity.starts_with("#x") => {
                char::from_u32(u32::from_str_radix(&entity[2..], 16).unwrap()).unwrap()
            }
            _ if entity.starts_with('#') => char::from_u32(entity[1..].parse().unwrap()).unwrap(),
            _ => panic!("unknown entity &{entity};"),
        };
        out.push(c);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// An element's attributes (tshark writes one element per line, values
/// in double quotes, quotes inside escaped).
fn element(line: &str) -> Item {
    let mut item = Item::default();
    let mut rest = line;
    while let Some(eq) = rest.find("=\"") {
        let key = rest[..eq].rsplit(' ').next().unwrap_or("");
        let after = &rest[eq + 2..];
        let close = after.find('"').expect("attribute value ends");
        let value = unescape(&after[..close]);
        match key {
            "name" => item.name = value,
            "show" => item.show = value,
            "showname" => item.showname = value,
            "value" => item.value = value,
            "pos" => item.pos = value.parse().unwrap(),
            "size" => item.size = value.parse().unwrap(),
            _ => {}
        }
        rest = &after[close + 1..];
    }
    item
}

fn parse_pdml(text: &str) -> Vec<Packet> {
    let mut packets = Vec::new();
    let mut protos: Vec<Item> = Vec::new();
    let mut open: Vec<Item> = Vec::new();
    fn attach(open: &mut [Item], protos: &mut Vec<Item>, item: Item) {
        match open.last_mut() {
            Some(parent) => parent.children.push(item),
            None => protos.push(item),
        }
    }
    for line in text.lines() {
        let l = line.trim();
        if l == "<packet>" {
            protos.clear();
        } else if l == "</packet>" {
            assert!(open.is_empty(), "unbalanced PDML");
            packets.push(std::mem::take(&mut protos));
        } else if l.starts_with("<proto ") || l.starts_with("<field ") {
            let item = element(l);
            if l.ends_with("/>") {
                attach(&mut open, &mut protos, item);
            } else {
                open.push(item);
            }
        } else if l == "</proto>" || l == "</field>" {
            let item = open.pop().expect("balanced PDML");
            attach(&mut open, &mut protos, item);
        }
    }
    packets
}

fn walk<'a>(item: &'a Item, out: &mut Vec<&'a Item>) {
    for c in &item.children {
        out.push(c);
        walk(c, out);
    }
}

fn descendants(item: &Item) -> Vec<&Item> {
    let mut out = Vec::new();
    walk(item, &mut out);
    out
}

/// Items whose value the dissector computes (shown in brackets): they
/// cover no bytes of their own.
const GENERATED: [&str; 7] = [
    "braid.data.group.base",
    "braid.data.send_order",
    "braid.data.next_hop",
    "braid.data.payload.kind",
    "braid.auth.status",
    "braid.lsa.checksum.status",
    "braid.lsa_count",
];

/// Subtrees: their children are the fields.
const SUBTREES: [&str; 16] = [
    "braid.data",
    "braid.data.group",
    "braid.data.route",
    "braid.data.payload",
    "braid.ctl",
    "braid.auth",
    "braid.probe",
    "braid.probe.report",
    "braid.lsa",
    "braid.lsa.link",
    "braid.lsa.prefix",
    "braid.lsa.client",
    "braid.path_report",
    "braid.path_report.entry",
    "braid.challenge",
    "braid.echo",
];

/// The bytes of the braid protocol item that no braid field covers
/// (generated items and subtrees aside): offsets from the item's start.
fn uncovered(proto: &Item) -> Vec<usize> {
    let mut covered = vec![false; proto.size];
    let braid_field = |i: &Item| i.name.starts_with("braid.") && !GENERATED.contains(&&*i.name);
    for item in descendants(proto) {
        if !braid_field(item) || item.children.iter().any(braid_field) {
            continue;
        }
        for at in item.pos..item.pos + item.size {
            if let Some(c) = at.checked_sub(proto.pos).and_then(|i| covered.get_mut(i)) {
                *c = true;
            }
        }
    }
    (0..proto.size).filter(|&i| !covered[i]).collect()
}

/// Every expert info of a packet, by the field it names: a dissector's
/// own (`braid.truncated`), an exception Wireshark caught
/// (`_ws.malformed.expert`: a read past the end), or a Lua error
/// (`_ws.lua.error`).
///
/// Wireshark's own guesses from the outer UDP ports are left out: its UDP
/// dissector marks any datagram whose port falls in 33434-33534 as a
/// "possible traceroute", and a lab daemon's ephemeral port sometimes
/// does (one full test run met it: source port 33454).
fn experts(packet: &Packet) -> Vec<String> {
    packet
        .iter()
        .flat_map(experts_in)
        .filter(|x| x != "udp.possible_traceroute")
        .collect()
}

/// The expert infos inside one protocol's tree.
fn experts_in(proto: &Item) -> Vec<String> {
    descendants(proto)
        .into_iter()
        .filter(|item| item.name == "_ws.expert")
        .map(|item| {
            item.children
                .iter()
                .find(|c| !c.name.starts_with("_ws.expert"))
                .map_or("?".to_string(), |c| c.name.clone())
        })
        .collect()
}

/// Whether a dissector threw (rather than said what is wrong).
fn threw(experts: &[String]) -> bool {
    experts
        .iter()
        .any(|x| x == "_ws.malformed.expert" || x == "_ws.lua.error")
}

// ------------------------------------------------------------ pcap files

/// A libpcap file of Ethernet frames.
struct PcapWriter {
    bytes: Vec<u8>,
    frames: usize,
}

fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 packet carrying UDP (checksum 0: none) from `sport` to `dport`.
fn ipv4_udp(
    src: [u8; 4],
    dst: [u8; 4],
    ports: (u16, u16),
    id: u16,
    flags: u16,
    body: &[u8],
) -> Vec<u8> {
    let total = 28 + body.len();
    let mut p = vec![0x45, 0];
    p.extend_from_slice(&(total as u16).to_be_bytes());
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&flags.to_be_bytes());
    p.extend_from_slice(&[64, 17, 0, 0]);
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    let sum = checksum(&p);
    p[10..12].copy_from_slice(&sum.to_be_bytes());
    p.extend_from_slice(&ports.0.to_be_bytes());
    p.extend_from_slice(&ports.1.to_be_bytes());
    p.extend_from_slice(&((8 + body.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(body);
    p
}

/// An IPv6 packet carrying UDP (checksum computed: IPv6 needs one).
fn ipv6_udp(src: Ipv6Addr, dst: Ipv6Addr, ports: (u16, u16), body: &[u8]) -> Vec<u8> {
    let len = (8 + body.len()) as u16;
    let mut udp = Vec::new();
    udp.extend_from_slice(&ports.0.to_be_bytes());
    udp.extend_from_slice(&ports.1.to_be_bytes());
    udp.extend_from_slice(&len.to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(body);
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src.octets());
    pseudo.extend_from_slice(&dst.octets());
    pseudo.extend_from_slice(&u32::from(len).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, 17]);
    pseudo.extend_from_slice(&udp);
    let sum = checksum(&pseudo);
    udp[6..8].copy_from_slice(&sum.to_be_bytes());
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&len.to_be_bytes());
    p.extend_from_slice(&[17, 64]);
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    p.extend_from_slice(&udp);
    p
}

impl PcapWriter {
    fn new() -> Self {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&4u16.to_le_bytes());
        bytes.extend_from_slice(&[0; 8]);
        bytes.extend_from_slice(&65_535u32.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        PcapWriter { bytes, frames: 0 }
    }

    /// An IPv4 packet in an Ethernet frame; returns its frame number.
    fn ipv4(&mut self, packet: &[u8]) -> usize {
        let mut frame = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
        frame.extend_from_slice(packet);
        self.frames += 1;
        self.bytes
            .extend_from_slice(&(self.frames as u32).to_le_bytes());
        self.bytes.extend_from_slice(&0u32.to_le_bytes());
        self.bytes
            .extend_from_slice(&(frame.len() as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&(frame.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(&frame);
        self.frames
    }

    /// A braid datagram between two underlay addresses, from and to `port`.
    fn braid(&mut self, port: u16, datagram: &[u8]) -> usize {
        self.ipv4(&ipv4_udp(
            [198, 18, 0, 1],
            [198, 18, 0, 2],
            (port, port),
            0,
            0,
            datagram,
        ))
    }
}

/// A UDP datagram on braid's port, as a capture holds it.
struct Datagram {
    frame: usize,
    src: IpAddr,
    /// Where the datagram starts in the frame.
    offset: usize,
    bytes: Vec<u8>,
}

/// The UDP datagrams to or from `port` in a libpcap file of Ethernet,
/// Linux cooked (v1, v2) or raw IP frames.
fn datagrams(pcap: &[u8], port: u16) -> Vec<Datagram> {
    let magic = u32::from_le_bytes(pcap[0..4].try_into().unwrap());
    assert!(
        magic == 0xa1b2_c3d4 || magic == 0xa1b2_3c4d,
        "not a little-endian libpcap file: {magic:#x}"
    );
    let linktype = u32::from_le_bytes(pcap[20..24].try_into().unwrap());
    let mut out = Vec::new();
    let mut at = 24;
    let mut frame = 0;
    while at + 16 <= pcap.len() {
        let caplen = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let origlen = u32::from_le_bytes(pcap[at + 12..at + 16].try_into().unwrap()) as usize;
        let data = &pcap[at + 16..at + 16 + caplen];
        at += 16 + caplen;
        frame += 1;
        assert_eq!(caplen, origlen, "frame {frame} was cut by the snap length");
        let (ethertype, l3) = match linktype {
            1 => (u16::from_be_bytes([data[12], data[13]]), 14),
            113 => (u16::from_be_bytes([data[14], data[15]]), 16),
            276 => (u16::from_be_bytes([data[0], data[1]]), 20),
            101 => (if data[0] >> 4 == 6 { 0x86dd } else { 0x0800 }, 0),
            other => panic!("link type {other} not read here"),
        };
        let ip = &data[l3..];
        let (src, udp) = match ethertype {
            0x0800 if ip[9] == 17 && u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff == 0 => {
                let ihl = usize::from(ip[0] & 0x0f) * 4;
                let src: [u8; 4] = ip[12..16].try_into().unwrap();
                (IpAddr::from(src), l3 + ihl)
            }
            0x86dd if ip[6] == 17 => {
                let src: [u8; 16] = ip[8..24].try_into().unwrap();
                (IpAddr::from(src), l3 + 40)
            }
            _ => continue,
        };
        let u = &data[udp..];
        let (sport, dport) = (
            u16::from_be_bytes([u[0], u[1]]),
            u16::from_be_bytes([u[2], u[3]]),
        );
        let len = usize::from(u16::from_be_bytes([u[4], u[5]]));
        if sport != port && dport != port {
            continue;
        }
        out.push(Datagram {
            frame,
            src,
            offset: udp + 8,
            bytes: u[8..len].to_vec(),
        });
    }
    out
}

// ------------------------------------------------------------ what the codec says

/// A field's value as the codec gives it: a number (PDML's `show`, in
/// decimal or 0x hex), bytes (PDML's `value`, hex) or text (`show`: an
/// address).
#[derive(Debug, Clone, PartialEq)]
enum V {
    N(u64),
    B(Vec<u8>),
    S(String),
}

#[derive(Default)]
struct Expected {
    fields: Vec<(&'static str, V)>,
    /// What the datagram is ("data/erasure/repair", "lsa/client", ...).
    kinds: BTreeSet<String>,
    /// Where an IP packet inside a data packet starts, and its version.
    ip_payload: Option<(usize, u8)>,
}

impl Expected {
    fn n(&mut self, name: &'static str, v: impl Into<u64>) {
        self.fields.push((name, V::N(v.into())));
    }
    fn b(&mut self, name: &'static str, v: &[u8]) {
        self.fields.push((name, V::B(v.to_vec())));
    }
    fn s(&mut self, name: &'static str, v: impl ToString) {
        self.fields.push((name, V::S(v.to_string())));
    }
    fn kind(&mut self, k: impl Into<String>) {
        self.kinds.insert(k.into());
    }
}

/// The MAC status the dissector must show, from braid's own check.
fn mac_status(msg: &ControlMessage<'_>, auth: &Authenticator) -> u64 {
    if msg.mac.is_empty() {
        return 4;
    }
    match auth.check_mac(msg) {
        Ok(()) => 1,
        Err(Refusal::BadMac) => 2,
        Err(Refusal::UnknownKey) => 3,
        Err(other) => panic!("unexpected refusal {}", other.kind()),
    }
}

/// The fields of the message in `bytes` (at `base` in its datagram), as
/// the codec parses them, in the order the dissector shows them.
fn expect(bytes: &[u8], base: usize, auth: &Authenticator, e: &mut Expected) {
    let message = braid_wire::parse_any(bytes).unwrap_or_else(|err| {
        panic!(
            "the codec refuses a captured message ({}): {err:?}",
            err.kind()
        )
    });
    let (msg, type_code) = match message {
        Message::Data(pkt) => return expect_data(&pkt, bytes, base, auth, e),
        Message::Probe(m, _)
        | Message::Lsa(m, _)
        | Message::PathReport(m, _)
        | Message::Challenge(m, _)
        | Message::Echo(m, _) => (m, m.header.msg_type as u8),
    };
    let h = msg.header;
    e.n("braid.ctl.version", 1u8);
    e.n("braid.ctl.type", type_code);
    e.n("braid.ctl.flags", h.flags.bits());
    e.n("braid.ctl.body_len", msg.body.len() as u64);
    e.n("braid.ctl.sender", h.sender.0);
    e.n("braid.ctl.key_id", h.key_id);
    e.n("braid.ctl.mac_len", h.mac_len);
    e.n("braid.ctl.boot_index", h.boot_index);
    e.n("braid.ctl.counter", h.counter);
    match message {
        Message::Probe(_, p) => {
            e.kind(if type_code == 1 {
                "probe/small"
            } else {
                "probe/big"
            });
            e.n("braid.probe.seq", p.seq);
            e.n("braid.probe.interval", p.interval_ms);
            e.n("braid.probe.rate", p.rate);
            e.n("braid.probe.report_count", p.report_count() as u64);
            e.n("braid.probe.digest", p.digest);
            for r in p.reports() {
                e.n("braid.probe.report.neighbor", r.neighbor.0);
                e.n("braid.probe.report.rate", r.rate);
                e.n("braid.probe.report.ratio", r.ratio);
                e.n("braid.probe.report.reserved", 0u8);
            }
            let padding = &msg.body[12 + 6 * p.report_count()..];
            if !padding.is_empty() {
                e.kind("probe/padding");
                e.b("braid.probe.padding", padding);
            }
        }
        Message::Lsa(_, bundle) => {
            e.kind("lsa");
            expect_lsas(&bundle, e);
        }
        Message::PathReport(_, r) => {
            e.kind("path report");
            let counts: Vec<PathCount> = r.counts().collect();
            e.n("braid.path_report.ingress", r.ingress.0);
            e.n("braid.path_report.class", r.class);
            e.n("braid.path_report.count", counts.len() as u64);
            for c in counts {
                e.n("braid.path_report.path", c.path);
                e.n("braid.path_report.known", c.latest.is_some());
                e.n("braid.path_report.latest", c.latest.unwrap_or(0));
                e.n("braid.path_report.received", c.received);
                e.n("braid.path_report.age", c.age_ms);
            }
        }
        Message::Challenge(_, c) => {
            e.kind(match c.kind {
                ChallengeKind::Request => "challenge/request",
                ChallengeKind::Reply => "challenge/reply",
            });
            e.n("braid.challenge.kind", c.kind as u8);
            e.n("braid.challenge.reserved", 0u8);
            e.n("braid.challenge.target", c.target.0);
            e.b("braid.challenge.nonce", &c.nonce);
            e.n(
                "braid.challenge.nonce.boot_index",
                u32::from_be_bytes(c.nonce[..4].try_into().unwrap()),
            );
            e.n(
                "braid.challenge.nonce.counter",
                u32::from_be_bytes(c.nonce[4..].try_into().unwrap()),
            );
        }
        Message::Echo(_, x) => {
            e.kind(match x.kind {
                EchoKind::Request => "echo/request",
                EchoKind::Reply => "echo/reply",
            });
            e.n("braid.echo.kind", x.kind as u8);
            e.n("braid.echo.reserved", 0u8);
            e.n("braid.echo.target", x.target.0);
            e.n("braid.echo.seq", x.seq);
            e.n("braid.echo.stamp", x.stamp);
        }
        Message::Data(_) => unreachable!(),
    }
    if !msg.mac.is_empty() {
        e.b("braid.auth.mac", msg.mac);
    }
    let status = mac_status(&msg, auth);
    e.kind(format!(
        "mac/{}",
        ["unchecked", "good", "bad", "unknown key", "none"][status as usize]
    ));
    e.n("braid.auth.status", status);
}

fn expect_lsas(bundle: &LsaBundle<'_>, e: &mut Expected) {
    for lsa in bundle.iter() {
        e.n("braid.lsa.origin", lsa.origin.0);
        e.n("braid.lsa.age", lsa.age);
        e.n("braid.lsa.seq", lsa.seq);
        e.n("braid.lsa.checksum", lsa.checksum);
        e.n("braid.lsa.link_count", lsa.link_count() as u64);
        e.n("braid.lsa.prefix_count", lsa.prefix_count() as u64);
        if lsa.age == u16::MAX {
            e.kind("lsa/flush");
        }
        for l in lsa.links() {
            e.kind("lsa/link");
            e.n("braid.lsa.link.neighbor", l.neighbor.0);
            e.n("braid.lsa.link.id", l.link_id);
            e.n("braid.lsa.link.reserved", 0u8);
            e.n("braid.lsa.link.metric_out", l.metric_out);
            e.n("braid.lsa.link.metric_in", l.metric_in);
        }
        for p in lsa.prefixes() {
            match p {
                Prefix::V4 { addr, len } => {
                    e.kind("lsa/prefix4");
                    e.n("braid.lsa.prefix.kind", 4u8);
                    e.n("braid.lsa.prefix.length", len);
                    e.s("braid.lsa.prefix.v4", Ipv4Addr::from(addr));
                }
                Prefix::V6 { addr, len } => {
                    e.kind("lsa/prefix6");
                    e.n("braid.lsa.prefix.kind", 6u8);
                    e.n("braid.lsa.prefix.length", len);
                    e.s("braid.lsa.prefix.v6", Ipv6Addr::from(addr));
                }
                Prefix::Client4 { addr, quality } => {
                    e.kind("lsa/client4");
                    e.n("braid.lsa.prefix.kind", 0x14u8);
                    e.n("braid.lsa.client.quality", quality);
                    e.s("braid.lsa.client.v4", Ipv4Addr::from(addr));
                }
                Prefix::Client6 { addr, quality } => {
                    e.kind("lsa/client6");
                    e.n("braid.lsa.prefix.kind", 0x16u8);
                    e.n("braid.lsa.client.quality", quality);
                    e.s("braid.lsa.client.v6", Ipv6Addr::from(addr));
                }
            }
        }
        e.n("braid.lsa.checksum.status", 1u8);
    }
    e.n("braid.lsa_count", bundle.len() as u64);
}

fn mode_name(m: RedundancyMode) -> &'static str {
    [
        "single",
        "stripe",
        "mirror",
        "tree",
        "parity",
        "parity-rotating",
        "erasure",
    ][m as usize]
}

fn expect_data(
    pkt: &braid_wire::DataPacket<'_>,
    bytes: &[u8],
    base: usize,
    auth: &Authenticator,
    e: &mut Expected,
) {
    let h = pkt.header;
    let flags = h.flags;
    let g = h.group;
    e.kind(format!("data/{}", mode_name(h.mode)));
    e.n("braid.data.version", 1u8);
    e.n("braid.data.type", 0u8);
    e.n("braid.data.flags", flags.bits() >> 4);
    e.n(
        "braid.data.flags.congestion",
        flags.contains(DataFlags::CONGESTION),
    );
    e.n("braid.data.flags.urgent", flags.contains(DataFlags::URGENT));
    e.n("braid.data.flags.parity", flags.contains(DataFlags::PARITY));
    e.n("braid.data.flags.reserved", 0u8);
    e.n("braid.data.mode", h.mode as u8);
    e.n("braid.data.path", h.path);
    e.n("braid.data.rlen", pkt.route.len() as u64);
    e.n("braid.data.rptr", h.route_ptr);
    e.n("braid.data.ingress", h.ingress.0);
    e.n("braid.data.egress", h.egress.0);
    e.n("braid.data.seq", h.seq);
    e.n("braid.data.group.data", g.data);
    e.n("braid.data.group.repair", g.repair);
    e.n("braid.data.group.depth", g.depth);
    e.n("braid.data.group.index", g.index);
    if !g.is_none() {
        e.kind(format!(
            "data/{}/group depth {}",
            mode_name(h.mode),
            g.depth
        ));
        let base_seq = if g.is_repair() {
            h.seq
        } else {
            g.base_of(h.seq)
        };
        e.n("braid.data.group.base", base_seq);
    }
    e.n("braid.data.hop_limit", h.hop_limit);
    e.n("braid.data.class", h.class);
    e.n("braid.data.epoch", h.epoch);
    e.n("braid.data.send_order", h.send_order());
    for hop in pkt.route.iter() {
        e.kind("data/route");
        e.n("braid.data.route.hop", hop.0);
    }
    if h.mode != RedundancyMode::Tree {
        let next = pkt.route.get(usize::from(h.route_ptr)).unwrap_or(h.egress);
        e.n("braid.data.next_hop", next.0);
    }
    let payload = pkt.payload;
    let at = bytes.len() - payload.len();
    if payload.is_empty() {
        return;
    }
    if g.is_repair() {
        if h.mode == RedundancyMode::Erasure {
            e.kind("data/repair/shard");
            e.n("braid.data.payload.kind", 5u8);
            e.b("braid.data.repair.shard", payload);
        } else {
            e.kind(format!("data/{}/repair/xor", mode_name(h.mode)));
            e.n("braid.data.payload.kind", 4u8);
            e.n(
                "braid.data.repair.len_xor",
                u16::from_be_bytes([payload[0], payload[1]]),
            );
            e.b("braid.data.repair.xor", &payload[2..]);
        }
        return;
    }
    match payload[0] >> 4 {
        4 | 6 => {
            let v = payload[0] >> 4;
            e.kind(format!("data/payload/ipv{v}"));
            e.n("braid.data.payload.kind", if v == 4 { 1u8 } else { 2 });
            e.ip_payload = Some((base + at, v));
        }
        1 => {
            e.kind("data/payload/braid");
            e.n("braid.data.payload.kind", 3u8);
            expect(payload, base + at, auth, e);
        }
        other => panic!("a data packet whose payload starts with nibble {other}"),
    }
}

// ------------------------------------------------------------ the checks

/// What one capture showed.
#[derive(Default)]
struct Checked {
    datagrams: usize,
    fields: usize,
    kinds: BTreeMap<String, usize>,
    /// Every shown value of these braid fields (for the callers' spot checks).
    values: BTreeMap<String, BTreeSet<String>>,
}

const SPOT: [&str; 6] = [
    "braid.lsa.origin",
    "braid.ctl.sender",
    "braid.data.ingress",
    "braid.data.egress",
    "braid.path_report.ingress",
    "braid.auth.status",
];

fn braid_proto(packet: &Packet) -> Option<(usize, &Item)> {
    packet.iter().enumerate().find(|(_, p)| p.name == "braid")
}

fn field_value<'a>(packet: &'a Packet, name: &str) -> Option<&'a Item> {
    packet.iter().flat_map(descendants).find(|i| i.name == name)
}

/// Compares one shown field with the codec's value.
fn same(item: &Item, v: &V) -> bool {
    match v {
        V::N(n) => {
            let shown = match item.show.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).ok(),
                None => item.show.parse().ok(),
            };
            shown == Some(*n)
        }
        V::B(b) => item.value == hex(b),
        V::S(s) => &item.show == s,
    }
}

/// Checks every braid datagram of `pcap` (UDP port 6868) field by field
/// against the codec, for full byte coverage, and for no expert info
/// (`allowed` aside).
fn check_capture(
    what: &str,
    pcap: &Path,
    options: &[String],
    auth: &Authenticator,
    allowed: &[&str],
) -> Checked {
    let bytes = std::fs::read(pcap).unwrap();
    let grams = datagrams(&bytes, PORT);
    assert!(
        !grams.is_empty(),
        "{what}: no braid datagram in {}",
        pcap.display()
    );
    let packets = pdml(pcap, options, what);
    let mut checked = Checked::default();
    for g in &grams {
        let packet = &packets[g.frame - 1];
        let frame_no = field_value(packet, "frame.number").map(|i| i.show.clone());
        assert_eq!(
            frame_no,
            Some(g.frame.to_string()),
            "{what}: PDML out of step"
        );
        let (index, proto) = braid_proto(packet)
            .unwrap_or_else(|| panic!("{what}: frame {}: not dissected as braid", g.frame));
        assert_eq!(
            (proto.pos, proto.size),
            (g.offset, g.bytes.len()),
            "{what}: frame {}: braid does not take the whole datagram",
            g.frame
        );
        let mut e = Expected::default();
        expect(&g.bytes, g.offset, auth, &mut e);
        // Field by field, in the dissector's order.
        let names: BTreeSet<&str> = e.fields.iter().map(|(n, _)| *n).collect();
        let shown: Vec<&Item> = descendants(proto)
            .into_iter()
            .filter(|i| i.name.starts_with("braid."))
            .collect();
        let unknown: Vec<&str> = shown
            .iter()
            .map(|i| i.name.as_str())
            .filter(|n| !names.contains(n) && !SUBTREES.contains(n) && !allowed.contains(n))
            .collect();
        assert!(
            unknown.is_empty(),
            "{what}: frame {}: fields the codec does not give: {unknown:?}",
            g.frame
        );
        let compared: Vec<&&Item> = shown
            .iter()
            .filter(|i| names.contains(i.name.as_str()))
            .collect();
        for (k, (name, v)) in e.fields.iter().enumerate() {
            let item = compared.get(k).unwrap_or_else(|| {
                panic!(
                    "{what}: frame {}: the dissector stops before {name} = {v:?}",
                    g.frame
                )
            });
            assert!(
                item.name == *name && same(item, v),
                "{what}: frame {}: field {k}: the dissector shows {} = {:?} ({:?}), the codec {name} = {v:?}",
                g.frame,
                item.name,
                item.show,
                item.value
            );
        }
        assert_eq!(
            compared.len(),
            e.fields.len(),
            "{what}: frame {}: extra fields",
            g.frame
        );
        // Every byte is some field's.
        let gaps = uncovered(proto);
        assert!(
            gaps.is_empty(),
            "{what}: frame {}: bytes no field decodes: {gaps:?}",
            g.frame
        );
        // The user's packet goes on to Wireshark's IP dissector, and
        // nothing is left to the "data" dissector.
        let next = packet[index + 1..]
            .iter()
            .find(|p| p.name != "fake-field-wrapper");
        match e.ip_payload {
            Some((at, v)) => {
                let want = if v == 4 { "ip" } else { "ipv6" };
                let next = next
                    .unwrap_or_else(|| panic!("{what}: frame {}: payload not handed on", g.frame));
                assert_eq!(
                    (next.name.as_str(), next.pos),
                    (want, at),
                    "{what}: frame {}",
                    g.frame
                );
            }
            None => assert!(
                next.is_none(),
                "{what}: frame {}: {} after braid",
                g.frame,
                next.map_or("", |n| n.name.as_str())
            ),
        }
        let bad: Vec<String> = experts(packet)
            .into_iter()
            .filter(|x| !allowed.contains(&x.as_str()))
            .collect();
        assert!(
            bad.is_empty(),
            "{what}: frame {}: expert info {bad:?}",
            g.frame
        );
        checked.datagrams += 1;
        checked.fields += e.fields.len();
        for k in e.kinds {
            *checked.kinds.entry(k).or_default() += 1;
        }
        for item in shown.iter().filter(|i| SPOT.contains(&i.name.as_str())) {
            checked
                .values
                .entry(item.name.clone())
                .or_default()
                .insert(item.show.clone());
        }
    }
    // No braid datagram escaped the check, none was dissected twice
    // (ICMP errors quoting one aside).
    let dissected = packets
        .iter()
        .filter(|p| braid_proto(p).is_some() && !p.iter().any(|x| x.name.starts_with("icmp")))
        .count();
    assert_eq!(
        dissected,
        grams.len(),
        "{what}: braid frames in tshark's output"
    );
    eprintln!(
        "{what}: {} braid datagrams, {} fields compared with the codec; kinds: {:?}",
        checked.datagrams, checked.fields, checked.kinds
    );
    checked
}

fn assert_kinds(what: &str, checked: &Checked, kinds: &[&str]) {
    let missing: Vec<&&str> = kinds
        .iter()
        .filter(|k| !checked.kinds.contains_key(**k))
        .collect();
    assert!(
        missing.is_empty(),
        "{what}: no {missing:?} in the capture: {:?}",
        checked.kinds
    );
}

fn values(checked: &Checked, name: &str) -> BTreeSet<String> {
    checked.values.get(name).cloned().unwrap_or_default()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn authenticator(id: u8, secret: &[u8]) -> Authenticator {
    let keys = vec![AuthKey::new(id, secret).unwrap()];
    Authenticator::new(NodeId(0xfffe), AuthConfig { keys }, 1).unwrap()
}

fn keys_option(id: u8, secret: &[u8]) -> String {
    format!("braid.keys:{id}:{}", hex(secret))
}

// ------------------------------------------------------------ codec-made messages

const SECRET: &[u8] = b"the dissector test's own key, 32";

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

fn finish(mut buf: Vec<u8>, n: usize, signer: Option<&Authenticator>) -> Vec<u8> {
    buf.truncate(n);
    if let Some(a) = signer {
        a.sign(&mut buf);
    }
    buf
}

fn data(header: DataHeader, route: &[u16], payload: &[u8]) -> Vec<u8> {
    let route: Vec<NodeId> = route.iter().map(|&n| NodeId(n)).collect();
    let mut buf = vec![0u8; DataHeader::encoded_len(route.len())];
    let n = header.emit(&route, &mut buf).unwrap();
    buf.truncate(n);
    buf.extend_from_slice(payload);
    buf
}

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

fn lsa_message(signer: Option<&Authenticator>, entries: &[LsaEntry<'_>]) -> Vec<u8> {
    let h = control(MessageType::Lsa, 2, signer);
    let mut buf = vec![0u8; Lsa::bundle_len(entries, h.mac_len as usize)];
    let n = Lsa::emit_bundle(&h, entries, &mut buf).unwrap();
    finish(buf, n, signer)
}

fn path_report(signer: Option<&Authenticator>, counts: &[PathCount]) -> Vec<u8> {
    let h = control(MessageType::PathReport, 9, signer);
    let mut buf = vec![0u8; PathReport::encoded_len(counts.len(), h.mac_len as usize)];
    let n = PathReport::emit(&h, NodeId(1), 2, counts, &mut buf).unwrap();
    finish(buf, n, signer)
}

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
fn codec_verdict(m: &[u8]) -> Result<(), &'static str> {
    match braid_wire::parse_any(m).map_err(|e| e.kind())? {
        // A path report or echo on its own: the link-local control
        // plane's.
        Message::PathReport(..) | Message::Echo(..) => Err("wrong_type"),
        Message::Data(p) if p.header.mode == RedundancyMode::Tree && !p.route.is_empty() => {
            Err("tree_with_route")
        }
        // The egress's, for a data packet of braid's own messages.
        Message::Data(p)
            if !p.header.group.is_repair() && p.payload.first().is_some_and(|b| b >> 4 == 1) =>
        {
            let msg = ControlMessage::parse(p.payload).map_err(|e| e.kind())?;
            if msg.header.msg_type == MessageType::Echo {
                Echo::parse(&msg).map_err(|e| e.kind())?;
            } else {
                PathReport::parse(&msg).map_err(|e| e.kind())?;
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
const BENIGN: [&str; 4] = [
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
struct CodecMessages {
    signer: Authenticator,
    good: Vec<(&'static str, Vec<u8>)>,
    malformed: Vec<(&'static str, Vec<u8>, &'static str)>,
}

fn codec_messages() -> CodecMessages {
    let signer = authenticator(3, SECRET);
    let stranger = authenticator(9, SECRET);
    let s = Some(&signer);
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
    let none = DataFlags::empty();
    let grp = |data, repair, index, depth| Group {
        data,
        repair,
        index,
        depth,
    };
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
    let mut stripe = header(
        RedundancyMode::Stripe,
        Group::NONE,
        DataFlags::CONGESTION.union(DataFlags::URGENT),
    );
    stripe.route_ptr = 1;
    let mut mirror = header(RedundancyMode::Mirror, Group::NONE, none);
    mirror.route_ptr = 5;
    mirror.hop_limit = 1;
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
    ];
    let v4_only = [prefixes[0]];
    let client_only = [prefixes[2]];
    let entries = [
        LsaEntry::new(NodeId(1), 3, 10, &links, &prefixes),
        LsaEntry::new(NodeId(7), u16::MAX, 11, &[], &[]),
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
    let good: Vec<(&'static str, Vec<u8>)> = vec![
        (
            "single, IPv4",
            data(
                header(RedundancyMode::Single, Group::NONE, none),
                &[],
                &user4,
            ),
        ),
        ("stripe, route, IPv6", data(stripe, &[4, 5], &user6)),
        (
            "mirror, route used up",
            data(mirror, &[4, 5, 6, 7, 8], &user4),
        ),
        ("tree", data(tree, &[], &user4)),
        (
            "parity data",
            data(
                header(RedundancyMode::Parity, grp(2, 1, 1, 1), none),
                &[4],
                &user4,
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
                &user6,
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
            "path report in a data packet",
            data(control_class, &[4], &report),
        ),
        (
            "echo request in a data packet",
            data(control_class, &[4], &echo(s, EchoKind::Request)),
        ),
        (
            "echo reply in a data packet",
            data(control_class, &[4], &echo(s, EchoKind::Reply)),
        ),
        (
            "small probe",
            probe(MessageType::ProbeSmall, s, &reports, 0),
        ),
        (
            "big probe",
            probe(MessageType::ProbeBig, s, &reports[1..], 300),
        ),
        (
            "unsigned probe",
            probe(MessageType::ProbeSmall, None, &[], 0),
        ),
        (
            "probe, another key",
            probe(MessageType::ProbeSmall, Some(&stranger), &reports[..1], 0),
        ),
        ("LSA bundle, flush", lsa_message(s, &entries)),
        ("challenge request", challenge(s, ChallengeKind::Request)),
        ("challenge reply", challenge(s, ChallengeKind::Reply)),
    ];

    // Malformed: what the dissector must say, named as the codec's error
    // kind (or, for a message the wire accepts, the receiver's refusal).
    let single = data(
        header(RedundancyMode::Single, Group::NONE, none),
        &[4],
        &user4,
    );
    let small = probe(MessageType::ProbeSmall, None, &reports, 0);
    let lsa = lsa_message(None, &[LsaEntry::new(NodeId(1), 3, 10, &links, &v4_only)]);
    let client = lsa_message(None, &[LsaEntry::new(NodeId(1), 3, 10, &[], &client_only)]);
    let at_prefix = 16 + 16 + 12 * links.len();
    let edit = |m: &[u8], at: usize, v: u8| {
        let mut m = m.to_vec();
        m[at] = v;
        m
    };
    let mut bad_mac = probe(MessageType::ProbeSmall, s, &reports, 0);
    let last = bad_mac.len() - 1;
    bad_mac[last] ^= 1;
    let mut mac_cut = probe(MessageType::ProbeSmall, s, &reports, 0);
    mac_cut.truncate(mac_cut.len() - 5);
    let mut long_challenge = challenge(None, ChallengeKind::Request);
    long_challenge.push(0);
    let mut long_report = path_report(None, &counts);
    long_report.push(0);
    let mut long_probe = small.clone();
    long_probe.push(0);
    let mut short_report = path_report(None, &counts);
    short_report.truncate(short_report.len() - 3);
    // An LSA message with no LSA: a challenge's header, retyped, alone.
    let mut empty_lsa = challenge(None, ChallengeKind::Request);
    empty_lsa.truncate(16);
    empty_lsa[0] = 0x10 | MessageType::Lsa as u8;
    let empty_lsa = fix_body_len(empty_lsa);
    let malformed: Vec<(&'static str, Vec<u8>, &'static str)> = vec![
        ("data header cut", single[..10].to_vec(), "truncated"),
        ("version 2", edit(&single, 0, 0x20), "unsupported_version"),
        ("type 9", edit(&single, 0, 0x19), "unknown_type"),
        ("mode 7", edit(&single, 1, 0x07), "invalid_field"),
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
            edit(&path_report(None, &counts), 16 + 4, 16),
            "invalid_field",
        ),
        (
            "byte after a path report",
            fix_body_len(long_report),
            "length_mismatch",
        ),
        ("path report cut", fix_body_len(short_report), "truncated"),
        ("path report on a link", report.clone(), "wrong_type"),
        (
            "probe inside a data packet",
            data(control_class, &[4], &small),
            "wrong_type",
        ),
        ("MAC", bad_mac, "bad_mac"),
        (
            "tree mode with a route",
            data(tree, &[4], &user4),
            "tree_with_route",
        ),
    ];
    CodecMessages {
        signer,
        good,
        malformed,
    }
}

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
    std::fs::write(&file, &pcap.bytes).unwrap();

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
            "lsa/flush",
            "path report",
            "challenge/request",
            "challenge/reply",
            "echo/request",
            "echo/reply",
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
    std::fs::write(&file, &pcap.bytes).unwrap();
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
    std::fs::write(&file, &pcap.bytes).unwrap();
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

fn lab_namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("braid-{LAB_NAME}-")))
        .map(String::from)
        .collect()
}

fn signal(child: &Child, sig: &str) {
    let _ = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .stderr(Stdio::null())
        .status();
}

/// Waits for `child` at most `limit`; whether it ended.
fn wait_for(child: &mut Child, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// The lab run and the capture, stopped (the lab torn down) however the
/// test ends.
struct LabRun {
    lab: Child,
    dumpcap: Option<Child>,
    file: PathBuf,
}

impl Drop for LabRun {
    fn drop(&mut self) {
        if !matches!(self.lab.try_wait(), Ok(Some(_))) {
            // `braid lab run` tears down on SIGTERM.
            signal(&self.lab, "-TERM");
            if !wait_for(&mut self.lab, Duration::from_secs(60)) {
                let _ = self.lab.kill();
                let _ = self.lab.wait();
            }
        }
        if let Some(d) = &mut self.dumpcap {
            signal(d, "-TERM");
            if !wait_for(d, Duration::from_secs(10)) {
                let _ = d.kill();
                let _ = d.wait();
            }
        }
        let _ = Command::new(env!("CARGO_BIN_EXE_braid"))
            .args(["lab", "down"])
            .arg(&self.file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn lab_capture_with_authentication_decodes_completely() {
    let file = scratch("tdissect.toml");
    std::fs::write(&file, LAB).unwrap();
    let _ = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["lab", "down"])
        .arg(&file)
        .output();
    assert!(
        lab_namespaces().is_empty(),
        "{:?} left from before",
        lab_namespaces()
    );
    let pcap = scratch("lab.pcap");
    let log = scratch("lab.log");
    let lab = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["lab", "run", "--json"])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut run = LabRun {
        lab,
        dumpcap: None,
        file: file.clone(),
    };
    // Router a's namespace is the lab's first step: capture on all its
    // interfaces (the links come up after), as pcap, from then on.
    let ns = format!("braid-{LAB_NAME}-a");
    let deadline = Instant::now() + Duration::from_secs(60);
    // Usable, not just named: `ip netns add` makes the file before it
    // mounts the namespace on it, and entering it in between fails.
    let usable = |ns: &str| {
        Command::new("ip")
            .args(["netns", "exec", ns, "true"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    while !usable(&ns) {
        assert!(
            !matches!(run.lab.try_wait(), Ok(Some(_))),
            "the lab ended before its namespaces: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        assert!(Instant::now() < deadline, "no namespace {ns} after 60 s");
    }
    let mut dumpcap = Command::new("ip")
        .args([
            "netns", "exec", &ns, "dumpcap", "-q", "-P", "-i", "any", "-w",
        ])
        .arg(&pcap)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = dumpcap.stderr.take().unwrap();
    run.dumpcap = Some(dumpcap);
    // dumpcap says when it captures.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut said = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) if line.contains("Capturing on") => break,
            Ok(line) => said.push(line),
            Err(_) => panic!("dumpcap did not start capturing: {said:?}"),
        }
    }
    // The lab runs its flows and the crash, reports and tears down.
    assert!(
        wait_for(&mut run.lab, Duration::from_secs(240)),
        "the lab did not end within 240 s"
    );
    let status = run.lab.wait().unwrap();
    assert!(
        status.success(),
        "lab run failed: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let mut d = run.dumpcap.take().unwrap();
    signal(&d, "-TERM");
    assert!(
        wait_for(&mut d, Duration::from_secs(20)),
        "dumpcap did not stop"
    );
    drop(run);
    assert!(
        lab_namespaces().is_empty(),
        "namespaces left: {:?}",
        lab_namespaces()
    );

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

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Why the lab capture cannot run here, if it cannot.
fn lab_missing() -> Option<String> {
    if !common::is_root() {
        return Some("not root".into());
    }
    let probe = format!("braid-dissector-captest-{}", std::process::id());
    let ok = Command::new("ip")
        .args(["netns", "add", &probe])
        .status()
        .is_ok_and(|s| s.success());
    let _ = Command::new("ip").args(["netns", "del", &probe]).status();
    if !ok {
        return Some("cannot create network namespaces".into());
    }
    if !have("dumpcap") {
        return Some("dumpcap is not installed (run scripts/setup.sh)".into());
    }
    if Command::new("tc").arg("-V").output().is_err() {
        return Some("tc is not installed (run scripts/setup.sh)".into());
    }
    None
}

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
            common::trial(name, missing, move || {
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
