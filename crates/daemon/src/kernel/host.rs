//! What the kernel data path's control plane asks of the host: commands
//! (`ip`, `ethtool`), interface indices and addresses, whether an
//! interface is physical (and so whether the ingress finishes checksums),
//! and the segmenter veth pair.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::process::Command;

use braid_wire::NodeId;

use super::error::KernelError;
use crate::underlay::Port;

/// The segmenter: a veth pair whose first end cuts GSO packets up and
/// finishes checksums.
pub(super) struct Segmenter {
    /// The end that takes GSO packets and cuts them up.
    pub(super) outer: String,
    /// The far end, where the segments come out.
    pub(super) inner: String,
}

impl Segmenter {
    /// Makes the segmenter veth pair (a leftover of a daemon that died is
    /// replaced): its outer end takes GSO packets and, allowing one
    /// segment per packet, cuts them up on the way to the inner end; it
    /// finishes unfinished checksums on the way too.
    pub(super) fn create(node: NodeId) -> Result<Segmenter, KernelError> {
        let outer = format!("bsg{}o", node.0);
        let inner = format!("bsg{}i", node.0);
        let _ = ip(&["link", "del", &outer]);
        ip(&[
            "link",
            "add",
            &outer,
            "gso_max_segs",
            "1",
            "type",
            "veth",
            "peer",
            "name",
            &inner,
        ])?;
        // Without checksum offload the outer end finishes every checksum
        // a sender left to the device (braid_tx sends such packets here).
        let segmenter = Segmenter { outer, inner };
        if let Err(e) = run("ethtool", &["-K", &segmenter.outer, "tx", "off"]) {
            let _ = ip(&["link", "del", &segmenter.outer]);
            return Err(e);
        }
        ip(&["link", "set", &segmenter.outer, "up"])?;
        ip(&["link", "set", &segmenter.inner, "up"])?;
        Ok(segmenter)
    }

    /// Takes the pair away (both ends go with the outer one).
    pub(super) fn remove(&self) {
        let _ = ip(&["link", "del", &self.outer]);
    }
}

/// Runs `ip` with `args`.
pub(super) fn ip(args: &[&str]) -> Result<(), KernelError> {
    run("ip", args)
}

/// Runs `tool` with `args`; its error output is the error.
fn run(tool: &str, args: &[&str]) -> Result<(), KernelError> {
    let what = format!("{tool} {}", args.join(" "));
    let out = Command::new(tool)
        .args(args)
        .output()
        .map_err(|e| KernelError::Setup {
            what: what.clone(),
            message: format!("cannot run {tool}: {e}"),
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(KernelError::Setup {
            what,
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Whether interface `name` is a device (a NIC, a radio) rather than a
/// virtual one (veth, tap, bridge), which has no `device` in sysfs.
fn physical(name: &str) -> bool {
    std::path::Path::new("/sys/class/net")
        .join(name)
        .join("device")
        .exists()
}

pub(super) fn ifindex(name: &str) -> Result<u32, KernelError> {
    nix::net::if_::if_nametoindex(name).map_err(|e| KernelError::Setup {
        what: format!("interface {name}"),
        message: e.to_string(),
    })
}

/// The IPv4 addresses (with prefix length) of every interface, by name
/// (one dump for all).
pub(super) fn addresses() -> BTreeMap<String, Vec<(Ipv4Addr, u8)>> {
    let mut by_name: BTreeMap<String, Vec<(Ipv4Addr, u8)>> = BTreeMap::new();
    let Ok(all) = nix::ifaddrs::getifaddrs() else {
        return by_name;
    };
    for a in all {
        let Some(addr) = a.address.and_then(|x| x.as_sockaddr_in().map(|s| s.ip())) else {
            continue;
        };
        let len = a
            .netmask
            .and_then(|m| m.as_sockaddr_in().map(|m| u32::from(m.ip()).count_ones()))
            .unwrap_or(32) as u8;
        by_name
            .entry(a.interface_name)
            .or_default()
            .push((addr, len));
    }
    by_name
}

/// The open interfaces that are virtual (veth, tap, bridge, VLAN).
pub(super) fn virtual_ports(ports: &[Option<Port>]) -> Vec<&str> {
    ports
        .iter()
        .flatten()
        .filter(|p| !physical(&p.name))
        .map(|p| p.name.as_str())
        .collect()
}

/// Whether the kernel's ingress finishes checksums before encoding, and
/// why, for an ingress in the kernel or not and the virtual interfaces
/// among braid's (which pass a sender's unfinished checksums on).
pub(super) fn checksums(ingress: bool, virtual_ports: &[&str]) -> (bool, String) {
    if !ingress {
        (
            false,
            "the daemon encodes (the TUN device finishes them)".to_string(),
        )
    } else if virtual_ports.is_empty() {
        (
            false,
            "left to the interfaces' devices (all physical)".to_string(),
        )
    } else {
        (
            true,
            format!(
                "finished before encoding: {} virtual, passing them on unfinished",
                virtual_ports.join(", ")
            ),
        )
    }
}

/// Network order, as a packet carries it.
pub(super) fn be(a: Ipv4Addr) -> u32 {
    u32::from_ne_bytes(a.octets())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decided at start and again whenever an interface comes or goes.
    #[test]
    fn checksums_are_finished_only_for_an_ingress_in_the_kernel_with_a_virtual_interface() {
        assert!(!checksums(false, &["veth0"]).0);
        let (finish, why) = checksums(true, &[]);
        assert!(!finish);
        assert!(why.contains("all physical"), "{why}");
        let (finish, why) = checksums(true, &["veth0", "br0"]);
        assert!(finish);
        assert!(why.contains("veth0, br0 virtual"), "{why}");
    }
}
