//! What braid's codec says a captured message is: its fields, in the
//! order the dissector shows them, and the kinds of message and entry it
//! holds.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, Ipv6Addr};

use braid_proto::auth::{AuthConfig, AuthKey, Authenticator, Refusal};
use braid_wire::{
    ChallengeKind, ControlMessage, DataFlags, EchoKind, LsaBundle, Message, NodeId, PathCount,
    Prefix, RedundancyMode, SessionCheckKind,
};

/// A field's value as the codec gives it: a number (PDML's `show`, in
/// decimal or 0x hex), bytes (PDML's `value`, hex) or text (`show`: an
/// address).
#[derive(Debug, Clone, PartialEq)]
pub enum V {
    N(u64),
    B(Vec<u8>),
    S(String),
}

/// What the codec says one datagram holds.
#[derive(Default)]
pub struct Expected {
    /// Each field's name and value, in the dissector's order.
    pub fields: Vec<(&'static str, V)>,
    /// What the datagram is ("data/erasure/repair", "lsa/client", ...).
    pub kinds: BTreeSet<String>,
    /// Where an IP packet inside a data packet starts, and its version.
    pub ip_payload: Option<(usize, u8)>,
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
pub fn expect(bytes: &[u8], base: usize, auth: &Authenticator, e: &mut Expected) {
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
        | Message::Echo(m, _)
        | Message::SessionCheck(m, _)
        | Message::RepairRequest(m, _) => (m, m.header.msg_type as u8),
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
        Message::SessionCheck(_, c) => {
            e.kind(match c.kind {
                SessionCheckKind::Request => "check/request",
                SessionCheckKind::Proof => "check/proof",
            });
            e.n("braid.check.kind", c.kind as u8);
            e.n("braid.check.class", c.class);
            e.n("braid.check.target", c.target.0);
            e.n("braid.check.epoch", c.epoch);
            e.n("braid.check.next_seq", c.next_seq);
            e.b("braid.check.nonce", &c.nonce);
        }
        Message::RepairRequest(_, r) => {
            e.kind("repair request");
            e.n("braid.rreq.class", r.class);
            e.n("braid.rreq.count", r.count);
            e.n("braid.rreq.target", r.target.0);
            e.n("braid.rreq.end", r.end);
            e.n("braid.rreq.first", r.first);
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
                Prefix::Gateway {
                    preference,
                    capacity_kbps,
                } => {
                    e.kind("lsa/gateway");
                    e.n("braid.lsa.prefix.kind", 0x20u8);
                    e.n("braid.lsa.gateway.preference", preference);
                    e.n("braid.lsa.gateway.capacity", capacity_kbps);
                }
                Prefix::Area { id, transit } => {
                    e.kind("lsa/area");
                    e.n("braid.lsa.prefix.kind", 0x30u8);
                    e.n("braid.lsa.prefix.zero", 0u8);
                    e.n("braid.lsa.area.id", id);
                    e.n("braid.lsa.area.transit", transit);
                }
                Prefix::Members { first, extra } => {
                    e.kind("lsa/members");
                    e.n("braid.lsa.prefix.kind", 0x31u8);
                    e.n("braid.lsa.members.extra", extra);
                    e.n("braid.lsa.members.first", first);
                }
                Prefix::Member4 { node, addr, len } => {
                    e.kind("lsa/member4");
                    e.n("braid.lsa.prefix.kind", 0x34u8);
                    e.n("braid.lsa.prefix.length", len);
                    e.n("braid.lsa.member.node", node);
                    e.s("braid.lsa.member.v4", Ipv4Addr::from(addr));
                }
                Prefix::Member6 { node, addr, len } => {
                    e.kind("lsa/member6");
                    e.n("braid.lsa.prefix.kind", 0x36u8);
                    e.n("braid.lsa.prefix.length", len);
                    e.n("braid.lsa.member.node", node);
                    e.s("braid.lsa.member.v6", Ipv6Addr::from(addr));
                }
                Prefix::Adjacent { area, metric } => {
                    e.kind("lsa/adjacent");
                    e.n("braid.lsa.prefix.kind", 0x32u8);
                    e.n("braid.lsa.prefix.zero", 0u8);
                    e.n("braid.lsa.adjacent.area", area);
                    e.n("braid.lsa.adjacent.metric", metric);
                }
            }
        }
        e.n("braid.lsa.checksum.status", 1u8);
        if let Some(sig) = lsa.signature {
            e.kind("lsa/signed");
            e.b("braid.lsa.signature", sig);
        }
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
        "sliding",
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
    e.n(
        "braid.data.flags.waypoint",
        flags.contains(DataFlags::WAYPOINT),
    );
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
        if h.mode == RedundancyMode::Sliding {
            e.kind("data/sliding/repair");
            e.n("braid.data.payload.kind", 7u8);
            e.n("braid.data.repair.span", payload[0]);
            if payload.len() > 1 {
                e.b("braid.data.repair.combination", &payload[1..]);
            }
        } else if h.mode == RedundancyMode::Erasure {
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

/// A checker (and signer) holding key `id`.
pub fn authenticator(id: u8, secret: &[u8]) -> Authenticator {
    let keys = vec![AuthKey::new(id, secret).unwrap()];
    Authenticator::new(NodeId(0xfffe), AuthConfig { keys }, 1).unwrap()
}
