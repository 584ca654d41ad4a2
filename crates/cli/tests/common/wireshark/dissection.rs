//! What the dissector showed, judged: which bytes of a braid item no
//! braid field covers, which expert infos a packet carries, whether the
//! dissector threw.

use super::pdml::{descendants, Item, Packet};

/// Items whose value the dissector computes (shown in brackets): they
/// cover no bytes of their own.
pub const GENERATED: [&str; 7] = [
    "braid.data.group.base",
    "braid.data.send_order",
    "braid.data.next_hop",
    "braid.data.payload.kind",
    "braid.auth.status",
    "braid.lsa.checksum.status",
    "braid.lsa_count",
];

/// Subtrees: their children are the fields.
pub const SUBTREES: [&str; 23] = [
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
    "braid.lsa.gateway",
    "braid.lsa.area",
    "braid.lsa.members",
    "braid.lsa.adjacent",
    "braid.lsa.member",
    "braid.path_report",
    "braid.path_report.entry",
    "braid.challenge",
    "braid.echo",
    "braid.check",
    "braid.rreq",
];

/// The bytes of the braid protocol item that no braid field covers
/// (generated items and subtrees aside): offsets from the item's start.
pub fn uncovered(proto: &Item) -> Vec<usize> {
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
pub fn experts(packet: &Packet) -> Vec<String> {
    packet
        .iter()
        .flat_map(experts_in)
        .filter(|x| x != "udp.possible_traceroute")
        .collect()
}

/// The expert infos inside one protocol's tree.
pub fn experts_in(proto: &Item) -> Vec<String> {
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
pub fn threw(experts: &[String]) -> bool {
    experts
        .iter()
        .any(|x| x == "_ws.malformed.expert" || x == "_ws.lua.error")
}

/// The braid protocol item of a packet, with its place among the
/// packet's protocols.
pub fn braid_proto(packet: &Packet) -> Option<(usize, &Item)> {
    packet.iter().enumerate().find(|(_, p)| p.name == "braid")
}
