//! Start-up checks of this host's own settings that braid depends on and
//! cannot set itself without overriding the operator: a router that
//! forwards for hosts (it serves prefixes or clients) with the kernel's
//! IP forwarding off drops every host's packet between the LAN and the
//! TUN device, silently. Said once, loudly, with the fix. And a router
//! whose control plane is not authenticated: anyone in radio range can
//! change its tables.

use braid_wire::Prefix;
use tracing::error;

use crate::config::Config;

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

/// Reads the kernel's forwarding switches and logs what is wrong.
pub fn check_forwarding(config: &Config) {
    let read = |path: &str| std::fs::read_to_string(path).ok().map(|t| t.trim() != "0");
    let v4 = read("/proc/sys/net/ipv4/ip_forward");
    let v6 = read("/proc/sys/net/ipv6/conf/all/forwarding");
    for w in forwarding_warnings(config, v4, v6) {
        error!("{w}");
    }
}

/// With no `[auth]` keys anyone who can send this router a datagram can
/// steer or black-hole its routes: said loudly at start (and after a
/// reload that removes the keys).
pub fn warn_if_unauthenticated(config: &Config) {
    if !config.node_config.control.auth.enabled() {
        error!(
            "AUTHENTICATION IS OFF: control messages are neither signed nor checked, so anyone \
             who can reach this router's interfaces can change its routes and inject traffic. \
             Give every router the same key in [auth] (make one with `braid keygen`; \
             docs/security.md)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        let path = std::env::temp_dir().join(format!("braid-checks-{}.toml", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let c = Config::load(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        c
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
}
