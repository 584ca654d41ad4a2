//! Which routes cross between the kernel's table and the mesh, decided
//! without I/O: the kernel's routes redistributed (by table, protocol and
//! prefix; never braid's own) and the mesh's prefixes installed (other
//! routers' reachable prefixes; never a client's host route, nor what
//! this router serves itself).

use braid_proto::node::Node;
use braid_wire::Prefix;

use super::settings::{KernelRoute, RedistributeConfig};

/// Most routes installed at once (the mesh's prefixes beyond it are not
/// installed, and the count says so).
pub const MAX_INSTALLED: usize = 4096;

/// Whether `inner` lies within `outer` (same family, at least as long,
/// same leading bits).
pub fn within(inner: &Prefix, outer: &Prefix) -> bool {
    let (a, la, b, lb): (&[u8], u8, &[u8], u8) = match (inner, outer) {
        (Prefix::V4 { addr: a, len: la }, Prefix::V4 { addr: b, len: lb }) => (a, *la, b, *lb),
        (Prefix::V6 { addr: a, len: la }, Prefix::V6 { addr: b, len: lb }) => (a, *la, b, *lb),
        _ => return false,
    };
    if la < lb {
        return false;
    }
    let full = (lb / 8) as usize;
    let rest = lb % 8;
    a.get(..full) == b.get(..full)
        && (rest == 0 || {
            let mask = 0xffu8 << (8 - rest);
            a.get(full).map(|x| x & mask) == b.get(full).map(|x| x & mask)
        })
}

/// The prefixes `config` takes from `table`: unicast routes of its table
/// and protocols, within its prefixes, neither through the TUN device
/// (`tun_index`) nor of braid's install protocol; sorted, each once.
pub fn redistributed(
    table: &[KernelRoute],
    config: &RedistributeConfig,
    tun_index: u32,
    install_protocol: Option<u8>,
) -> Vec<Prefix> {
    let mut out: Vec<Prefix> = table
        .iter()
        .filter(|r| {
            r.unicast
                && r.table == config.table
                && config.protocols.contains(&r.protocol)
                && Some(r.protocol) != install_protocol
                && r.oif != Some(tun_index)
                && (config.within.is_empty() || config.within.iter().any(|w| within(&r.prefix, w)))
        })
        .map(|r| r.prefix)
        .collect();
    out.sort_by_cached_key(|p| p.to_string());
    out.dedup();
    out
}

/// The prefixes to install: every IPv4 or IPv6 prefix another reachable
/// router advertises that this router does not advertise itself (a
/// gateway does not route its own uplink's default route into the mesh);
/// sorted, each once, at most [`MAX_INSTALLED`].
pub fn installs_wanted(node: &Node) -> Vec<Prefix> {
    let me = node.id();
    let lsdb = node.control().lsdb();
    let own: Vec<Prefix> = lsdb
        .get(me)
        .map(|r| r.prefixes.to_vec())
        .unwrap_or_default();
    let mut out: Vec<Prefix> = lsdb
        .records()
        .filter(|r| r.origin != me && lsdb.has_two_way_link(r.origin))
        .flat_map(|r| r.prefixes.iter().copied())
        .filter(|p| matches!(p, Prefix::V4 { .. } | Prefix::V6 { .. }) && !own.contains(p))
        .collect();
    out.sort_by_cached_key(|p| p.to_string());
    out.dedup();
    out.truncate(MAX_INSTALLED);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(a: [u8; 4], len: u8) -> Prefix {
        Prefix::V4 { addr: a, len }
    }

    fn route(prefix: Prefix, protocol: u8, oif: u32) -> KernelRoute {
        KernelRoute {
            prefix,
            table: 254,
            protocol,
            oif: Some(oif),
            unicast: true,
        }
    }

    #[test]
    fn within_compares_the_outer_prefixs_bits_only() {
        let outer = v4([198, 19, 0, 0], 16);
        assert!(within(&v4([198, 19, 77, 0], 24), &outer));
        assert!(within(&outer, &outer));
        assert!(!within(&v4([198, 18, 77, 0], 24), &outer));
        assert!(!within(&v4([198, 0, 0, 0], 8), &outer));
        assert!(within(&v4([198, 19, 77, 0], 24), &v4([198, 19, 64, 0], 18)));
        assert!(!within(
            &v4([198, 19, 128, 0], 24),
            &v4([198, 19, 64, 0], 18)
        ));
        let v6 = Prefix::V6 {
            addr: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            len: 32,
        };
        assert!(!within(&v4([32, 1, 13, 184], 32), &v6));
    }

    #[test]
    fn only_the_named_protocols_within_the_filters_and_never_braids_own() {
        let config = RedistributeConfig {
            table: 254,
            protocols: vec![188, 196],
            within: vec![v4([198, 19, 0, 0], 16)],
        };
        let tun = 9;
        let table = vec![
            route(v4([198, 19, 77, 0], 24), 188, 3),   // OSPF: taken
            route(v4([198, 19, 78, 0], 24), 196, 3),   // FRR static: taken
            route(v4([198, 19, 78, 0], 24), 196, 4),   // the same prefix again
            route(v4([198, 19, 79, 0], 24), 2, 3),     // kernel (connected): not named
            route(v4([10, 0, 0, 0], 8), 188, 3),       // outside the filter
            route(v4([198, 19, 80, 0], 24), 188, tun), // through braid's TUN
            route(v4([198, 19, 81, 0], 24), 177, 3),   // braid's own protocol
            KernelRoute {
                table: 100,
                ..route(v4([198, 19, 82, 0], 24), 188, 3)
            },
            KernelRoute {
                unicast: false,
                ..route(v4([198, 19, 83, 0], 24), 188, 3)
            },
        ];
        assert_eq!(
            redistributed(&table, &config, tun, Some(177)),
            vec![v4([198, 19, 77, 0], 24), v4([198, 19, 78, 0], 24)]
        );
        let any = RedistributeConfig {
            within: vec![],
            ..config
        };
        assert_eq!(redistributed(&table, &any, tun, Some(177)).len(), 3);
    }
}
