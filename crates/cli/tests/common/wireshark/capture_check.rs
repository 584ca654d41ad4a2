//! A capture checked datagram by datagram against the codec: every field
//! the dissector shows, in order, with the codec's value; every byte
//! covered; the user's packet handed on; no expert info.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use braid_proto::auth::Authenticator;

use super::captures::{datagrams, Datagram, PORT};
use super::codec_fields::{expect, Expected, V};
use super::dissection::{braid_proto, experts, uncovered, SUBTREES};
use super::pdml::{descendants, field_value, hex, Item, Packet};
use super::tshark::pdml;

/// What one capture showed.
#[derive(Default)]
pub struct Checked {
    pub datagrams: usize,
    pub fields: usize,
    pub kinds: BTreeMap<String, usize>,
    /// Every shown value of these braid fields (for the callers' spot checks).
    pub values: BTreeMap<String, BTreeSet<String>>,
}

/// The fields whose shown values a [`Checked`] keeps.
const SPOT: [&str; 6] = [
    "braid.lsa.origin",
    "braid.ctl.sender",
    "braid.data.ingress",
    "braid.data.egress",
    "braid.path_report.ingress",
    "braid.auth.status",
];

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
pub fn check_capture(
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
        check_datagram(what, g, &packets[g.frame - 1], auth, allowed, &mut checked);
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

/// Checks one datagram's frame (`packet`, as tshark showed it) against
/// the codec; counts what it held in `checked`.
fn check_datagram(
    what: &str,
    g: &Datagram,
    packet: &Packet,
    auth: &Authenticator,
    allowed: &[&str],
    checked: &mut Checked,
) {
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
            let next =
                next.unwrap_or_else(|| panic!("{what}: frame {}: payload not handed on", g.frame));
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

/// Asserts that the capture held every kind of message and entry in `kinds`.
pub fn assert_kinds(what: &str, checked: &Checked, kinds: &[&str]) {
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

/// Every value the capture showed for the spot-checked field `name`.
pub fn values(checked: &Checked, name: &str) -> BTreeSet<String> {
    checked.values.get(name).cloned().unwrap_or_default()
}

/// A set of strings, to compare [`values`] with.
pub fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}
