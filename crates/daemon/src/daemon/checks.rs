//! Start-up checks of this host's own settings that braid depends on and
//! cannot set itself without overriding the operator: a router that
//! forwards for hosts (it serves prefixes or clients) with the kernel's
//! IP forwarding off drops every host's packet between the LAN and the
//! TUN device, silently. Said once, loudly, with the fix. And a router
//! whose control plane is not authenticated: anyone in radio range can
//! change its tables. And the interfaces and addresses braid is given:
//! a listed interface that is down or has no address hears no neighbor,
//! one that does not exist (yet) is waited for, and a router whose own
//! TUN address no router serves cannot reach the hosts of the mesh
//! itself.

use std::net::Ipv4Addr;

use braid_wire::Prefix;
use tracing::{error, info, warn};

use crate::config::{Config, UnderlayFamily};

/// What IP forwarding this router needs: (IPv4, IPv6).
fn needs(config: &Config) -> (bool, bool) {
    let prefixes = &config.node_config.control.prefixes;
    let v4 = prefixes.iter().any(|p| matches!(p, Prefix::V4 { .. })) || !config.access.is_empty();
    let v6 = prefixes.iter().any(|p| matches!(p, Prefix::V6 { .. }))
        || config.access.iter().any(|a| a.address6.is_some());
    (v4, v6)
}

/// The warnings for `config` when the kernel's forwarding is `v4_on` and
/// `v6_on` (`None`: unknown, no warning).
pub fn forwarding_warnings(
    config: &Config,
    v4_on: Option<bool>,
    v6_on: Option<bool>,
) -> Vec<String> {
    let (v4, v6) = needs(config);
    let mut out = Vec::new();
    if v4 && v4_on == Some(false) {
        out.push(
            "IPv4 forwarding is off (net.ipv4.ip_forward = 0): this router serves hosts or clients, and the kernel will drop their packets between the LAN and braid's TUN device; turn it on: sysctl -w net.ipv4.ip_forward=1"
                .to_string(),
        );
    }
    if v6 && v6_on == Some(false) {
        out.push(
            "IPv6 forwarding is off (net.ipv6.conf.all.forwarding = 0): this router serves IPv6 hosts or clients, and the kernel will drop their packets; turn it on: sysctl -w net.ipv6.conf.all.forwarding=1"
                .to_string(),
        );
    }
    out
}

/// The forwarding warnings for `config` with the kernel's switches as
/// they are now (IPv4, IPv6).
fn forwarding_now(config: &Config) -> Vec<String> {
    let read = |path: &str| std::fs::read_to_string(path).ok().map(|t| t.trim() != "0");
    forwarding_warnings(
        config,
        read("/proc/sys/net/ipv4/ip_forward"),
        read("/proc/sys/net/ipv6/conf/all/forwarding"),
    )
}

/// Reads the kernel's forwarding switches and logs what is wrong.
pub fn check_forwarding(config: &Config) {
    for w in forwarding_now(config) {
        error!("{w}");
    }
}

/// With no `[auth]` keys anyone who can send this router a datagram can
/// steer or black-hole its routes: the warning, when that is so.
fn unauthenticated_warning(config: &Config) -> Option<String> {
    (!config.node_config.control.auth.enabled()).then(|| {
        "AUTHENTICATION IS OFF: control messages are neither signed nor checked, so anyone \
         who can reach this router's interfaces can change its routes and inject traffic. \
         Give every router the same key in [auth] (make one with `braid keygen`; \
         docs/security.md)"
            .to_string()
    })
}

/// Says [`unauthenticated_warning`] loudly: at start (and after a reload
/// that removes the keys).
pub fn warn_if_unauthenticated(config: &Config) {
    if let Some(w) = unauthenticated_warning(config) {
        error!("{w}");
    }
}

/// What the kernel says of one configured interface at start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InterfaceFacts {
    pub exists: bool,
    pub up: bool,
    pub ipv4: Vec<Ipv4Addr>,
    /// Whether it has an IPv6 address (a link-local one is enough for an
    /// IPv6 underlay).
    pub ipv6: bool,
}

/// The warnings for configured interfaces in the state `facts` gives
/// them (by name).
pub fn interface_warnings(config: &Config, facts: &dyn Fn(&str) -> InterfaceFacts) -> Vec<String> {
    let mut out = Vec::new();
    for name in &config.interfaces {
        let f = facts(name);
        if !f.exists {
            // Said by the start itself (`missing_interface_messages`):
            // waited for.
            continue;
        }
        if !f.up {
            out.push(format!(
                "interface {name} is down: braid hears no neighbor on it until it is up (ip link set {name} up)"
            ));
        }
        match config.underlay {
            UnderlayFamily::Ipv4 if f.ipv4.is_empty() => out.push(format!(
                "interface {name} has no IPv4 address: braid's datagrams to and from neighbors need one (e.g. ip addr add 10.1.1.1/24 dev {name}), or run the underlay over IPv6 (underlay = \"ipv6\"); until then no neighbor is found on it"
            )),
            UnderlayFamily::Ipv6 if !f.ipv6 => out.push(format!(
                "interface {name} has no IPv6 address, not even a link-local one: IPv6 is off there (sysctl net.ipv6.conf.{name}.disable_ipv6), and the IPv6 underlay finds no neighbor on it"
            )),
            _ => {}
        }
    }
    out
}

/// What the start says of the configured interfaces that do not exist
/// (`missing`, of `configured` in all): a warning for each (the daemon
/// opens it when the kernel says it appeared), and an error when none of
/// them exists (the daemon runs all the same, reaching no neighbor until
/// one appears: a radio plugged in late, or a typo in the config).
pub fn missing_interface_messages(
    missing: &[String],
    configured: usize,
) -> (Vec<String>, Option<String>) {
    let warnings = missing
        .iter()
        .map(|name| {
            format!(
                "interface {name} does not exist (yet): braid will use it when it appears (if it should be there, check the name: ip link)"
            )
        })
        .collect();
    let none = (!missing.is_empty() && missing.len() == configured).then(|| {
        format!(
            "none of the configured interfaces exists ({}): this router reaches no neighbor until one of them appears",
            missing.join(", ")
        )
    });
    (warnings, none)
}

/// Whether `a` lies in a served IPv4 prefix.
fn served(config: &Config, a: Ipv4Addr) -> bool {
    config.node_config.control.prefixes.iter().any(|p| match p {
        Prefix::V4 { addr, len } => {
            let mask = if *len == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(*len))
            };
            u32::from(a) & mask == u32::from(Ipv4Addr::from(*addr)) & mask
        }
        _ => false,
    })
}

/// The warning for a router that serves IPv4 prefixes but whose TUN
/// address lies in none of them: packets the router itself sends into the
/// mesh (a ping, ssh to a host) leave with a source address no router
/// serves, and the answers have no way back.
pub fn tun_address_warning(config: &Config) -> Option<String> {
    let first = config
        .node_config
        .control
        .prefixes
        .iter()
        .find_map(|p| match p {
            Prefix::V4 { addr, len } => Some((Ipv4Addr::from(*addr), *len)),
            _ => None,
        })?;
    if config.tun.routes.is_empty() {
        return None;
    }
    match config.tun.address {
        Some((a, _)) if served(config, a) => None,
        Some((a, _)) => Some(format!(
            "[tun] address {a} is in none of this router's prefixes: what the router itself sends into the mesh (ping, ssh) gets no answer; give the TUN device one address of a served prefix that no host uses, as /32 (e.g. address = \"{}/32\" for {}/{})",
            first_host(first), first.0, first.1
        )),
        None => Some(format!(
            "[tun] has no address: what the router itself sends into the mesh (ping, ssh) leaves from another of its addresses, which no router serves, and gets no answer; give the TUN device one address of a served prefix that no host uses, as /32 (e.g. address = \"{}/32\" for {}/{})",
            first_host(first), first.0, first.1
        )),
    }
}

/// The first host address of a prefix (the network's own address plus
/// one), to suggest.
fn first_host((a, len): (Ipv4Addr, u8)) -> Ipv4Addr {
    if len >= 31 {
        a
    } else {
        Ipv4Addr::from(u32::from(a) + 1)
    }
}

/// What the kernel says of each interface, by name, now.
fn interface_facts() -> impl Fn(&str) -> InterfaceFacts {
    let addrs: Vec<_> = nix::ifaddrs::getifaddrs()
        .map(|i| i.collect())
        .unwrap_or_default();
    move |name: &str| {
        let mine: Vec<_> = addrs.iter().filter(|a| a.interface_name == name).collect();
        InterfaceFacts {
            exists: nix::net::if_::if_nametoindex(name).is_ok(),
            up: mine
                .iter()
                .any(|a| a.flags.contains(nix::net::if_::InterfaceFlags::IFF_UP)),
            ipv4: mine
                .iter()
                .filter_map(|a| a.address.as_ref()?.as_sockaddr_in().map(|s| s.ip()))
                .collect(),
            ipv6: mine.iter().any(|a| {
                a.address
                    .as_ref()
                    .and_then(|a| a.as_sockaddr_in6())
                    .is_some()
            }),
        }
    }
}

/// Everything the daemon would warn of at start on this host with
/// `config`, read from `path` (`braid daemon --check` prints them):
/// interfaces missing, down or without an address, a TUN address no
/// router serves, authentication off, keys others can read, IP
/// forwarding off where hosts depend on it.
pub fn host_warnings(path: &std::path::Path, config: &Config) -> Vec<String> {
    let facts = interface_facts();
    let missing: Vec<String> = config
        .interfaces
        .iter()
        .filter(|n| !facts(n).exists)
        .cloned()
        .collect();
    let (mut out, none) = missing_interface_messages(&missing, config.interfaces.len());
    out.extend(none);
    out.extend(interface_warnings(config, &facts));
    out.extend(tun_address_warning(config));
    out.extend(unauthenticated_warning(config));
    out.extend(crate::config::inline_keys_warning(path, config));
    out.extend(forwarding_now(config));
    out
}

/// Reads what the kernel says of the configured interfaces and logs what
/// is wrong (and, at info level, what is fine).
pub fn check_interfaces(config: &Config) {
    let facts = interface_facts();
    for name in &config.interfaces {
        let f = facts(name);
        if f.exists {
            info!(interface = %name, up = f.up, ipv4 = ?f.ipv4, "braid interface");
        }
    }
    for w in interface_warnings(config, &facts) {
        warn!("{w}");
    }
    if let Some(w) = tun_address_warning(config) {
        warn!("{w}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse("test.toml", text).unwrap()
    }

    #[test]
    fn forwarding_off_is_reported_only_where_hosts_depend_on_it() {
        let transit = config("node = 1\n[[interface]]\nname = \"a\"\n");
        assert!(forwarding_warnings(&transit, Some(false), Some(false)).is_empty());
        let v4 = config("node = 1\nprefixes = [\"198.18.7.0/24\"]\n[[interface]]\nname = \"a\"\n");
        let w = forwarding_warnings(&v4, Some(false), Some(false));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("sysctl -w net.ipv4.ip_forward=1"), "{}", w[0]);
        assert!(forwarding_warnings(&v4, Some(true), Some(false)).is_empty());
        assert!(
            forwarding_warnings(&v4, None, None).is_empty(),
            "unknown: quiet"
        );
        let both = config(
            "node = 1\nprefixes = [\"198.18.7.0/24\", \"2001:2:0:7::/64\"]\n[[interface]]\nname = \"a\"\n",
        );
        let w = forwarding_warnings(&both, Some(true), Some(false));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("net.ipv6.conf.all.forwarding=1"));
        let ap = config(
            "node = 1\n[[interface]]\nname = \"a\"\n[[access]]\ninterface = \"w\"\naddress = \"198.18.9.2/24\"\ngateway = \"198.18.9.1\"\naddress6 = \"2001:2:0:9::2/64\"\n",
        );
        assert_eq!(forwarding_warnings(&ap, Some(false), Some(false)).len(), 2);
    }

    #[test]
    fn interfaces_down_or_without_address_are_named() {
        let c = config("node = 1\n[[interface]]\nname = \"a\"\n[[interface]]\nname = \"b\"\n");
        let fine = |_: &str| InterfaceFacts {
            exists: true,
            up: true,
            ipv4: vec![Ipv4Addr::new(10, 0, 0, 1)],
            ipv6: false,
        };
        assert!(interface_warnings(&c, &fine).is_empty());
        let b_down = |n: &str| InterfaceFacts {
            exists: true,
            up: n != "b",
            ipv4: if n == "a" {
                vec![]
            } else {
                vec![Ipv4Addr::new(10, 0, 0, 1)]
            },
            ipv6: n == "a",
        };
        let w = interface_warnings(&c, &b_down);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("interface a has no IPv4 address"), "{w:?}");
        assert!(w[1].starts_with("interface b is down"), "{w:?}");
        // Over IPv6, IPv4 is not needed; IPv6 (link-local) is.
        let v6 = config(
            "node = 1\nunderlay = \"ipv6\"\n[[interface]]\nname = \"a\"\n\
             [[interface]]\nname = \"b\"\n",
        );
        let w = interface_warnings(&v6, &b_down);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("interface b is down"), "{w:?}");
        assert!(w[1].starts_with("interface b has no IPv6 address"), "{w:?}");
    }

    #[test]
    fn missing_interfaces_are_named_once_each_and_none_at_all_loudly() {
        let (w, none) = missing_interface_messages(&[], 2);
        assert!(w.is_empty() && none.is_none());
        let (w, none) = missing_interface_messages(&["wlan1".into()], 2);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with(
                "interface wlan1 does not exist (yet): braid will use it when it appears"
            ),
            "{w:?}"
        );
        assert_eq!(none, None, "one of two is there");
        let (w, none) = missing_interface_messages(&["wlan1".into(), "wlan2".into()], 2);
        assert_eq!(w.len(), 2);
        let none = none.expect("none exists: said");
        assert!(none.contains("(wlan1, wlan2)"), "{none}");
    }

    #[test]
    fn a_tun_address_outside_the_served_prefixes_is_named_with_a_fix() {
        let base = "node = 1\nprefixes = [\"198.18.1.0/24\"]\n[[interface]]\nname = \"a\"\n[tun]\nroutes = [\"198.18.0.0/15\"]\n";
        let w = tun_address_warning(&config(base)).unwrap();
        assert!(w.contains("address = \"198.18.1.1/32\""), "{w}");
        let outside = format!("{base}address = \"10.9.9.9/32\"\n");
        assert!(tun_address_warning(&config(&outside))
            .unwrap()
            .contains("10.9.9.9"));
        let inside = format!("{base}address = \"198.18.1.254/32\"\n");
        assert_eq!(tun_address_warning(&config(&inside)), None);
        let transit = "node = 1\n[[interface]]\nname = \"a\"\n";
        assert_eq!(tun_address_warning(&config(transit)), None);
    }
}
