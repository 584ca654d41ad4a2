//! Access interfaces (`[[access]]`): L2 segments where unmodified
//! clients live, what this router is on each ([`AccessInterface`]), and
//! the rules a config's entries must meet: names, addresses, the gateway
//! in the clients' subnet, no interface both a braid interface and an
//! access interface.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use super::schema::AccessFile;
use braid_conf::Findings;

/// The link address every access point gives its access interfaces (the
/// clients' gateway's, the same everywhere: a client keeps its ARP entry
/// across access points). Locally administered.
pub const DEFAULT_GATEWAY_MAC: [u8; 6] = [0x02, 0x62, 0x72, 0x64, 0x00, 0x01];

/// An access interface: an L2 segment (a Wi-Fi AP's interface, a LAN)
/// where unmodified clients live, served by this router as one of
/// possibly several access points.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessInterface {
    pub name: String,
    /// This access point's own address on it, and the clients' subnet
    /// length: the source of its probes, unique per access point.
    pub address: Ipv4Addr,
    pub len: u8,
    /// The clients' default gateway: the same address on every access
    /// point (anycast), answered with `mac`.
    pub gateway: Ipv4Addr,
    pub mac: [u8; 6],
    /// This access point's own IPv6 address in the clients' /64, when it
    /// serves IPv6 clients too: the source of its neighbor solicitations,
    /// unique per access point; the /64 is what its router
    /// advertisements offer (SLAAC), the same on every access point.
    pub address6: Option<Ipv6Addr>,
    /// How often each client is probed (an ARP request, or a neighbor
    /// solicitation).
    pub probe_interval: Duration,
    /// Probes a client's quality is counted over.
    pub probe_window: u32,
}

impl AccessInterface {
    /// Whether `a` is in the clients' subnet.
    pub fn covers(&self, a: Ipv4Addr) -> bool {
        same_subnet(a, self.address, self.len)
    }

    /// Whether `a` is in the clients' IPv6 /64 (and is not this access
    /// point's own address there).
    pub fn covers6(&self, a: Ipv6Addr) -> bool {
        self.address6
            .is_some_and(|own| a != own && a.octets()[..8] == own.octets()[..8])
    }

    /// The clients' IPv6 default gateway: the link-local address made from
    /// `mac` (modified EUI-64), so the same on every access point, as the
    /// router advertisements' source.
    pub fn gateway6(&self) -> Ipv6Addr {
        let m = self.mac;
        Ipv6Addr::from([
            0xfe,
            0x80,
            0,
            0,
            0,
            0,
            0,
            0,
            m[0] ^ 0x02,
            m[1],
            m[2],
            0xff,
            0xfe,
            m[3],
            m[4],
            m[5],
        ])
    }
}

/// Whether `a` and `b` are in the same subnet of prefix length `len`.
fn same_subnet(a: Ipv4Addr, b: Ipv4Addr, len: u8) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    u32::from(a) & mask == u32::from(b) & mask
}

/// `02:62:72:64:00:01`: six hex bytes, not multicast.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.trim().split(':');
    for b in &mut mac {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    (parts.next().is_none() && mac[0] & 1 == 0).then_some(mac)
}

/// Checks `[[access]]`: each entry's fields, its gateway in its clients'
/// subnet, and no interface named twice (by two entries, or as an
/// `[[interface]]`).
pub(super) fn check_access(
    found: &mut Findings<'_>,
    entries: &[AccessFile],
    interfaces: &[String],
) -> Vec<AccessInterface> {
    let mut out = Vec::new();
    for (i, a) in entries.iter().enumerate() {
        let field = |f: &str| format!("access[{i}].{f}");
        let name = check_name(found, a, &entries[..i], interfaces, &field("interface"));
        let subnet = check_address(found, a, &field("address"));
        let gateway = check_gateway(found, a, &field("gateway"));
        let mac = check_mac(found, a, &field("mac"));
        let probe_interval = check_probe_interval(found, a, &field("probe_interval"));
        let probe_window = check_probe_window(found, a, &field("probe_window"));
        let address6 = check_address6(found, a, &field("address6"));
        let (Some((address, len)), Some(gateway)) = (subnet, gateway) else {
            continue;
        };
        if !same_subnet(gateway, address, len) || gateway == address {
            found.refuse(
                Some(a.gateway.span()),
                &field("gateway"),
                format!(
                    "{gateway} must be another address of {address}/{len}, the clients' subnet"
                ),
            );
            continue;
        }
        if let (Some(name), Some(mac), Some(probe_interval), Some(probe_window), Some(address6)) =
            (name, mac, probe_interval, probe_window, address6)
        {
            out.push(AccessInterface {
                name,
                address,
                len,
                gateway,
                mac,
                address6,
                probe_interval,
                probe_window,
            });
        }
    }
    out
}

/// The interface's name: a valid one, not named by an earlier entry nor
/// as an `[[interface]]`.
fn check_name(
    found: &mut Findings<'_>,
    a: &AccessFile,
    earlier: &[AccessFile],
    interfaces: &[String],
    field: &str,
) -> Option<String> {
    let name = a.interface.get_ref();
    if name.is_empty() || name.len() > 15 {
        found.refuse(
            Some(a.interface.span()),
            field,
            format!("\"{name}\" is not an interface name (1-15 characters)"),
        );
        return None;
    }
    if interfaces.contains(name) || earlier.iter().any(|o| o.interface.get_ref() == name) {
        found.refuse(
            Some(a.interface.span()),
            field,
            format!("{name} is listed twice (an access interface is not an [[interface]])"),
        );
        return None;
    }
    Some(name.clone())
}

/// This access point's own address and the clients' prefix length (8 to
/// 30).
fn check_address(found: &mut Findings<'_>, a: &AccessFile, field: &str) -> Option<(Ipv4Addr, u8)> {
    let text = a.address.get_ref();
    let subnet = text.trim().split_once('/').and_then(|(addr, len)| {
        let address: Ipv4Addr = addr.parse().ok()?;
        let len: u8 = len.parse().ok()?;
        (8..=30).contains(&len).then_some((address, len))
    });
    if subnet.is_none() {
        found.refuse(
            Some(a.address.span()),
            field,
            format!(
                "\"{text}\" is not this access point's own address with the clients' prefix length, like 198.18.9.2/24"
            ),
        );
    }
    subnet
}

/// The clients' default gateway (checked against the subnet by the
/// caller).
fn check_gateway(found: &mut Findings<'_>, a: &AccessFile, field: &str) -> Option<Ipv4Addr> {
    let gateway = a.gateway.get_ref().trim().parse().ok();
    if gateway.is_none() {
        found.refuse(
            Some(a.gateway.span()),
            field,
            format!("\"{}\" is not an IPv4 address", a.gateway.get_ref()),
        );
    }
    gateway
}

/// The gateway's link address: a unicast one, [`DEFAULT_GATEWAY_MAC`]
/// when not given.
fn check_mac(found: &mut Findings<'_>, a: &AccessFile, field: &str) -> Option<[u8; 6]> {
    let Some(m) = &a.mac else {
        return Some(DEFAULT_GATEWAY_MAC);
    };
    let mac = parse_mac(m.get_ref());
    if mac.is_none() {
        found.refuse(
            Some(m.span()),
            field,
            format!(
                "\"{}\" is not a unicast link address like 02:62:72:64:00:01",
                m.get_ref()
            ),
        );
    }
    mac
}

/// How often each client is probed: 10 ms to 10 s, 100 ms when not
/// given.
fn check_probe_interval(found: &mut Findings<'_>, a: &AccessFile, field: &str) -> Option<Duration> {
    let src = found.src;
    let interval =
        found.keep(src.duration(&a.probe_interval, field, Duration::from_millis(100)))?;
    if !(Duration::from_millis(10)..=Duration::from_secs(10)).contains(&interval) {
        found.refuse(
            a.probe_interval.as_ref().map(|v| v.span()),
            field,
            "10 ms to 10 s",
        );
        return None;
    }
    Some(interval)
}

/// Probes a client's quality is counted over: 1 to 64, 10 when not
/// given.
fn check_probe_window(found: &mut Findings<'_>, a: &AccessFile, field: &str) -> Option<u32> {
    match &a.probe_window {
        None => Some(10),
        Some(w) if (1..=64).contains(w.get_ref()) => Some(*w.get_ref()),
        Some(w) => {
            found.refuse(Some(w.span()), field, "1 to 64 probes");
            None
        }
    }
}

/// This access point's own IPv6 address in the clients' /64, if it
/// serves IPv6: global or unique local unicast, not the /64's first
/// address. `Some(None)`: not given.
fn check_address6(
    found: &mut Findings<'_>,
    a: &AccessFile,
    field: &str,
) -> Option<Option<Ipv6Addr>> {
    let Some(v) = &a.address6 else {
        return Some(None);
    };
    let text = v.get_ref().trim();
    let own = text
        .strip_suffix("/64")
        .and_then(|a| a.parse::<Ipv6Addr>().ok())
        .filter(|a| {
            let o = a.octets();
            let link_local = o[0] == 0xfe && o[1] & 0xc0 == 0x80;
            !(a.is_multicast()
                || a.is_unspecified()
                || a.is_loopback()
                || link_local
                || o[8..] == [0; 8])
        });
    if own.is_none() {
        found.refuse(
            Some(v.span()),
            field,
            format!(
                "\"{text}\" is not this access point's own IPv6 address in the clients' /64, like 2001:2:0:c8::2/64 (SLAAC needs a /64)"
            ),
        );
    }
    own.map(Some)
}
