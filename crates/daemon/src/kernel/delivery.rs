//! Whether the egress may send what it delivers straight to its next hop
//! (`kernel_delivery = "auto"`, the default): only while nothing in this
//! router's kernel would see those packets on the way through the stack
//! that `route` delivery skips. What is looked for, the first found
//! named:
//!
//! * nftables base chains of the `ip`, `ip6` or `inet` families at the
//!   prerouting, forward or postrouting hooks (a firewall, NAT; iptables
//!   over nftables shows up here too), and `netdev` or `inet` ingress
//!   chains on the TUN device (`nft -j list chains`; without `nft`
//!   installed the chains cannot be read, and the answer is no);
//! * legacy iptables tables (`/proc/net/ip_tables_names`,
//!   `ip6_tables_names`);
//! * IPsec policies (`ip -j xfrm policy list`): the FIB lookup route
//!   delivery makes does not see them;
//! * tc filters on the TUN device's receive side (`tc -j filter show dev
//!   TUN ingress`).
//!
//! Policy routing rules need nothing: the FIB lookup applies them.
//!
//! With `auto` the stack is looked at when the data path starts, then by
//! a thread of its own (the commands take milliseconds each, too long
//! for the daemon's loop): at once when nftables announces a change
//! ([`NFNLGRP_NFTABLES`]) and every [`CHECK_EVERY`] for the rest. The
//! loop takes its findings at its next sweep (every 500 ms): an nftables
//! rule added later takes effect on delivered packets within about half
//! a second, anything else within [`CHECK_EVERY`].

use std::io;
use std::process::Command;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::Duration;

use netlink_sys::{protocols::NETLINK_NETFILTER, Socket};
use nix::libc;
use tracing::warn;

use crate::config::KernelDelivery;

/// How often the stack is looked at again without an announcement.
const CHECK_EVERY: Duration = Duration::from_secs(5);

/// The least time between two looks at the stack (the loop takes the
/// findings every 500 ms anyway).
const LOOK_GAP: Duration = Duration::from_millis(250);

/// `NFNLGRP_NFTABLES` (linux/netfilter/nfnetlink.h): nftables' change
/// announcements, every table, chain or rule added or removed in this
/// network namespace.
const NFNLGRP_NFTABLES: u32 = 7;

/// How the egress hands delivered packets on, as `kernel_delivery`
/// chooses and (with `auto`) as the stack allows.
pub(super) struct Delivery {
    route: bool,
    why: String,
    /// With `auto`: the watcher's findings, (route, why), as they change.
    findings: Option<Receiver<(bool, String)>>,
}

impl Delivery {
    /// Decides for the TUN device `tun` now, and with `auto` starts the
    /// watcher (it ends at its next look after this is dropped).
    pub(super) fn start(choice: KernelDelivery, tun: &str) -> Delivery {
        let (route, why, findings) = match choice {
            KernelDelivery::Stack => (false, "stack (kernel_delivery = \"stack\")".into(), None),
            KernelDelivery::Route => (true, "route (kernel_delivery = \"route\")".into(), None),
            KernelDelivery::Auto => {
                // Subscribed before the first look, so that no change
                // after it goes unheard.
                let announcements = announcements()
                    .map_err(|e| warn!(error = %e, "nftables' change announcements cannot be heard; kernel_delivery = \"auto\" looks at the stack every 5 s"))
                    .ok();
                let (route, why) = finding(tun);
                (route, why, watch(tun, announcements))
            }
        };
        Delivery {
            route,
            why,
            findings,
        }
    }

    /// Delivery through the stack because the egress is in user space.
    pub(super) fn off() -> Delivery {
        Delivery {
            route: false,
            why: "stack: the egress is in user space".into(),
            findings: None,
        }
    }

    /// Takes the watcher's latest finding, if any came.
    pub(super) fn follow(&mut self) {
        let Some(rx) = &self.findings else { return };
        loop {
            match rx.try_recv() {
                Ok((route, why)) => (self.route, self.why) = (route, why),
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => {
                    self.findings = None;
                    return;
                }
            }
        }
    }

    /// Whether the egress routes what it delivers.
    pub(super) fn route(&self) -> bool {
        self.route
    }

    /// Which, and why (`kernel.delivery` in `braid ctl stats`).
    pub(super) fn why(&self) -> &str {
        &self.why
    }
}

/// `auto`'s answer now: route unless something stands on the way.
fn finding(tun: &str) -> (bool, String) {
    match blocker(tun) {
        None => (
            true,
            "route (auto: nothing in the stack on the way it skips)".into(),
        ),
        Some(b) => (false, format!("stack (auto: {b})")),
    }
}

/// Starts the thread that looks at the stack again after every nftables
/// announcement heard on `announcements` and every [`CHECK_EVERY`], and
/// sends each finding (it stops when the receiver is gone).
fn watch(tun: &str, announcements: Option<Socket>) -> Option<Receiver<(bool, String)>> {
    let (tx, rx) = mpsc::channel();
    let tun = tun.to_string();
    let spawned = std::thread::Builder::new()
        .name("braid-delivery".into())
        .spawn(move || {
            let mut buf = vec![0u8; 8192];
            let mut last_look: Option<std::time::Instant> = None;
            loop {
                // One look per LOOK_GAP at most: a namespace busy with
                // nftables, or a socket that fails at once, cannot keep
                // the thread running nft, ip and tc back to back.
                if let Some(wait) = last_look.and_then(|t| LOOK_GAP.checked_sub(t.elapsed())) {
                    std::thread::sleep(wait);
                }
                match &announcements {
                    // Waits for an announcement, CHECK_EVERY at most;
                    // then takes every one queued (at most 64: a
                    // namespace busy with nftables is looked at anyway).
                    Some(socket) => {
                        buf.clear();
                        let _ = socket.recv(&mut buf, 0);
                        for _ in 0..64 {
                            buf.clear();
                            if socket.recv(&mut buf, libc::MSG_DONTWAIT).is_err() {
                                break;
                            }
                        }
                    }
                    None => std::thread::sleep(CHECK_EVERY),
                }
                last_look = Some(std::time::Instant::now());
                if tx.send(finding(&tun)).is_err() {
                    return; // the data path stopped
                }
            }
        });
    match spawned {
        Ok(_) => Some(rx),
        Err(e) => {
            warn!(error = %e, "kernel_delivery = \"auto\" cannot watch the stack; its first answer stays");
            None
        }
    }
}

/// A socket that hears nftables' change announcements, waiting at most
/// [`CHECK_EVERY`] for one.
fn announcements() -> io::Result<Socket> {
    let mut socket = Socket::new(NETLINK_NETFILTER)?;
    socket.bind_auto()?;
    socket.add_membership(NFNLGRP_NFTABLES)?;
    crate::rtnl::set_receive_timeout(&socket, CHECK_EVERY)?;
    Ok(socket)
}

/// What stands on the stack's way that route delivery skips, if
/// anything (the first found), for the TUN device `tun`.
pub(super) fn blocker(tun: &str) -> Option<String> {
    let run = |program: &str, args: &[&str]| -> Result<String, String> {
        let out = Command::new(program)
            .args(args)
            .output()
            .map_err(|e| format!("{program} could not be run ({e})"))?;
        if !out.status.success() {
            return Err(format!(
                "{program} {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let legacy = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    if let Some(b) = legacy_blocker(
        &legacy("/proc/net/ip_tables_names"),
        &legacy("/proc/net/ip6_tables_names"),
    ) {
        return Some(b);
    }
    match run("nft", &["-j", "list", "chains"]) {
        Ok(json) => {
            if let Some(b) = nft_blocker(&json, tun) {
                return Some(b);
            }
        }
        Err(why) => return Some(format!("nftables' chains cannot be read: {why}")),
    }
    match run("ip", &["-j", "xfrm", "policy", "list"]) {
        Ok(json) if !empty_list(&json) => return Some("IPsec (XFRM) policies".into()),
        Ok(_) => {}
        Err(why) => return Some(format!("IPsec policies cannot be read: {why}")),
    }
    match run("tc", &["-j", "filter", "show", "dev", tun, "ingress"]) {
        Ok(json) if !empty_list(&json) => Some(format!("tc filters on {tun}'s receive side")),
        Ok(_) => None,
        Err(why) => Some(format!("tc filters on {tun} cannot be read: {why}")),
    }
}

/// Whether a command's JSON output lists nothing (empty, or `[]`).
fn empty_list(json: &str) -> bool {
    let t = json.trim();
    t.is_empty() || t == "[]"
}

/// The legacy iptables tables in use, from the two `/proc` lists.
fn legacy_blocker(ipv4: &str, ipv6: &str) -> Option<String> {
    let tables: Vec<&str> = ipv4
        .split_whitespace()
        .chain(ipv6.split_whitespace())
        .collect();
    (!tables.is_empty()).then(|| format!("legacy iptables tables ({})", tables.join(", ")))
}

/// The first base chain in `nft -j list chains` output that would see a
/// delivered packet on the stack's way: ip, ip6 or inet at prerouting,
/// forward or postrouting, or an ingress chain on `tun`. Output that
/// does not parse counts as a chain (the answer must be sure).
fn nft_blocker(json: &str, tun: &str) -> Option<String> {
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(json) else {
        return Some("nftables' chains: output not understood".into());
    };
    let Some(items) = doc["nftables"].as_array() else {
        return Some("nftables' chains: output not understood".into());
    };
    items.iter().find_map(|item| {
        let chain = item.get("chain")?;
        let family = chain["family"].as_str().unwrap_or("");
        let hook = chain["hook"].as_str()?;
        let on_tun = chain["dev"].as_str() == Some(tun)
            || chain["dev"]
                .as_array()
                .is_some_and(|d| d.iter().any(|d| d.as_str() == Some(tun)));
        let skipped = match (family, hook) {
            ("ip" | "ip6" | "inet", "prerouting" | "forward" | "postrouting") => true,
            ("netdev" | "inet", "ingress") => on_tun,
            _ => false,
        };
        skipped.then(|| {
            format!(
                "nftables chain {family} {} {} ({hook} hook)",
                chain["table"].as_str().unwrap_or("?"),
                chain["name"].as_str().unwrap_or("?"),
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_on_the_skipped_way_are_named_and_others_pass() {
        let meta = r#"{"metainfo": {"version": "1.0.6"}}"#;
        let chains = |c: &str| format!(r#"{{"nftables": [{meta}{c}]}}"#);
        assert_eq!(nft_blocker(&chains(""), "braid0"), None);
        // An input or output chain sees no forwarded packet.
        let input = r#",{"chain": {"family": "inet", "table": "filter", "name": "input", "type": "filter", "hook": "input", "prio": 0}}"#;
        assert_eq!(nft_blocker(&chains(input), "braid0"), None);
        // A regular chain (no hook) is reached only from a base chain.
        let regular = r#",{"chain": {"family": "ip", "table": "t", "name": "helper"}}"#;
        assert_eq!(nft_blocker(&chains(regular), "braid0"), None);
        let nat = r#",{"chain": {"family": "ip", "table": "nat", "name": "post", "type": "nat", "hook": "postrouting", "prio": 100}}"#;
        assert_eq!(
            nft_blocker(&chains(&format!("{input}{nat}")), "braid0").as_deref(),
            Some("nftables chain ip nat post (postrouting hook)")
        );
        let forward =
            r#",{"chain": {"family": "inet", "table": "fw", "name": "fwd", "hook": "forward"}}"#;
        assert!(nft_blocker(&chains(forward), "braid0").is_some());
        // Ingress chains: only on the TUN device.
        let other = r#",{"chain": {"family": "netdev", "table": "b", "name": "in", "hook": "ingress", "dev": "eth0"}}"#;
        assert_eq!(nft_blocker(&chains(other), "braid0"), None);
        let on_tun = r#",{"chain": {"family": "netdev", "table": "b", "name": "in", "hook": "ingress", "dev": ["eth1", "braid0"]}}"#;
        assert!(nft_blocker(&chains(on_tun), "braid0").is_some());
        // What does not parse is not taken as "nothing there".
        assert!(nft_blocker("not json", "braid0").is_some());
        assert!(nft_blocker("{}", "braid0").is_some());
    }

    #[test]
    fn legacy_tables_and_empty_lists_are_read() {
        assert_eq!(legacy_blocker("", ""), None);
        assert_eq!(
            legacy_blocker("filter\nnat\n", "").as_deref(),
            Some("legacy iptables tables (filter, nat)")
        );
        assert!(legacy_blocker("", "mangle\n").is_some());
        assert!(empty_list(""));
        assert!(empty_list(" []\n"));
        assert!(!empty_list(r#"[{"src":"0.0.0.0/0"}]"#));
    }
}
