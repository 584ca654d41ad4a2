//! An access interface's socket on a real interface: a client's DHCP
//! request, ARP request and IPv6 duplicate address detection reach it
//! through the socket's filter, other traffic does not, and each makes the
//! sender a client; the client's kernel takes the access point's router
//! advertisement (a default route through the anycast link-local gateway,
//! an address by SLAAC). The access point runs in a network namespace of
//! its own (a thread that unshares one), the client in a named one (the
//! kernel ignores a router advertisement from its own address), on a veth
//! pair; needs root. A harness of its own (libtest-mimic), so that without
//! root the runner's output lists the test as ignored, and why.

mod common;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use braid_daemon::access::{dhcp_frame, neighbor_solicitation, AccessPort};
use braid_daemon::config::AccessInterface;
use common::{ip, Netns};
use nix::libc;

/// Runs `f` on a thread inside the named namespace `name`.
fn in_netns<T: Send + 'static>(name: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/run/netns/{name}");
    std::thread::spawn(move || {
        let ns = std::fs::File::open(&path).expect("the namespace");
        nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns (root)");
        f()
    })
    .join()
    .expect("the namespace's thread")
}

/// Waits (at most `ms`) until one of `fds` is readable.
fn readable(fds: Vec<i32>, ms: i32) -> bool {
    let mut p: Vec<libc::pollfd> = fds
        .into_iter()
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: valid pollfds for the duration of the call.
    unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) > 0 }
}

/// Sends raw Ethernet frames out of interface `ifindex`.
struct Raw {
    fd: OwnedFd,
    ifindex: i32,
}

impl Raw {
    fn open(name: &str) -> Raw {
        let ifindex = nix::net::if_::if_nametoindex(name).expect("the interface") as i32;
        // SAFETY: a plain socket call; the descriptor is owned from here.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
        assert!(fd >= 0, "a packet socket (root)");
        Raw {
            // SAFETY: just opened, owned by nothing else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            ifindex,
        }
    }

    fn send(&self, frame: &[u8]) {
        // SAFETY: a zeroed sockaddr_ll filled below; the frame is valid
        // for its length.
        let sent = unsafe {
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_ifindex = self.ifindex;
            sll.sll_halen = 6;
            sll.sll_addr[..6].copy_from_slice(&frame[..6]);
            libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        assert_eq!(sent, frame.len() as isize, "frame sent");
    }
}

/// A broadcast ARP request from `sender` (at `mac`) for `target`.
fn arp_request(mac: [u8; 6], sender: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&sender.octets());
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&target.octets());
    f
}

fn main() -> std::process::ExitCode {
    common::run_as_root(
        "clients_are_found_from_dhcp_arp_neighbor_discovery_and_the_neighbor_table",
        "a network namespace, veth and packet sockets",
        clients_are_found_from_dhcp_arp_neighbor_discovery_and_the_neighbor_table,
    )
}

fn clients_are_found_from_dhcp_arp_neighbor_discovery_and_the_neighbor_table() {
    let client_ns = Netns::new(format!("braid-acctest-{}", std::process::id()));
    let client_name = client_ns.0.clone();
    std::thread::spawn(move || {
        // This thread, and what it starts, get a network namespace of
        // their own: nothing outside sees the veth pair.
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
            .expect("a network namespace of this thread's own (root)");
        ip(&[
            "link", "add", "braida0", "type", "veth", "peer", "name", "braida1",
        ]);
        ip(&["link", "set", "lo", "up"]);
        ip(&["link", "set", "braida1", "netns", &client_name]);
        ip(&["-n", &client_name, "link", "set", "braida1", "up"]);
        let config = AccessInterface {
            name: "braida0".into(),
            address: Ipv4Addr::new(198, 18, 9, 2),
            len: 24,
            gateway: Ipv4Addr::new(198, 18, 9, 1),
            mac: braid_daemon::config::DEFAULT_GATEWAY_MAC,
            address6: Some("2001:2:0:9::2".parse().unwrap()),
            probe_interval: Duration::from_millis(100),
            probe_window: 10,
        };
        let mut port = AccessPort::open(&config, braid_proto::time::Instant::ZERO)
            .expect("the access interface set up");
        let dhcp_client = Ipv4Addr::new(198, 18, 9, 77);
        let arp_client = Ipv4Addr::new(198, 18, 9, 78);
        let v6_client: Ipv6Addr = "2001:2:0:9::79".parse().unwrap();
        let gateway = config.gateway;
        in_netns(&client_name, move || {
            let client = Raw::open("braida1");
            let any = Ipv4Addr::UNSPECIFIED;
            // Not for the socket: a UDP datagram to port 5000 (the DHCP
            // request with its ports changed) and an ICMPv6 echo request
            // (a solicitation with its type changed).
            let mut udp = dhcp_frame(
                3,
                [2, 0, 0, 0, 0, 0x76],
                any,
                any,
                Some(Ipv4Addr::new(198, 18, 9, 76)),
            );
            udp[14 + 22..14 + 24].copy_from_slice(&5000u16.to_be_bytes());
            client.send(&udp);
            let mut echo = neighbor_solicitation(
                None,
                [2, 0, 0, 0, 0, 0x75],
                Ipv6Addr::UNSPECIFIED,
                "2001:2:0:9::75".parse().unwrap(),
            );
            echo[14 + 40] = 128;
            client.send(&echo);
            client.send(&dhcp_frame(
                3,
                [2, 0, 0, 0, 0, 0x77],
                any,
                any,
                Some(dhcp_client),
            ));
            client.send(&arp_request([2, 0, 0, 0, 0, 0x78], arp_client, gateway));
            client.send(&neighbor_solicitation(
                None,
                [2, 0, 0, 0, 0, 0x79],
                Ipv6Addr::UNSPECIFIED,
                v6_client,
            ));
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        let wanted = |port: &AccessPort| {
            let mut c: Vec<IpAddr> = port.clients().map(|(a, _)| a).collect();
            c.sort();
            c.into_iter()
                .filter(|a| {
                    [
                        IpAddr::V4(dhcp_client),
                        IpAddr::V4(arp_client),
                        IpAddr::V6(v6_client),
                    ]
                    .contains(a)
                })
                .count()
        };
        while wanted(&port) < 3 && Instant::now() < deadline {
            if readable(port.raw_fds(), 100) {
                port.read(braid_proto::time::Instant::ZERO);
            }
        }
        let found: Vec<(IpAddr, Option<[u8; 6]>)> = port.clients().collect();
        for (client, last) in [
            (IpAddr::V4(dhcp_client), 0x77),
            (IpAddr::V4(arp_client), 0x78),
            (IpAddr::V6(v6_client), 0x79),
        ] {
            assert!(
                found.contains(&(client, Some([2, 0, 0, 0, 0, last]))),
                "{client} found: {found:?}"
            );
        }
        assert_eq!(port.counters.dhcp, 1);
        assert_eq!(
            port.counters.malformed, 0,
            "the UDP datagram to port 5000 and the echo request never reached the socket"
        );
        // The client's kernel takes the router advertisement: a default
        // route through the gateway's link-local address, and an address
        // in the /64 (SLAAC), whose duplicate address detection makes it
        // a client here too.
        port.advertise_router();
        assert_eq!(port.counters.router_advertisements, 1);
        let gw6 = config.gateway6().to_string();
        let slaac = |port: &AccessPort| {
            port.clients().any(|(a, _)| {
                matches!(a, IpAddr::V6(v) if v != v6_client && v.segments()[..4] == [0x2001, 2, 0, 9])
            })
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        let (mut route, mut addrs) = (String::new(), String::new());
        while Instant::now() < deadline {
            route = ip(&["-n", &client_name, "-6", "route", "show", "default"]);
            addrs = ip(&["-n", &client_name, "-6", "addr", "show", "dev", "braida1"]);
            if route.contains(&gw6) && addrs.contains("2001:2:0:9:") && slaac(&port) {
                break;
            }
            // The route and the address are not announced on a socket
            // this test holds: the access socket's next frame (or 50 ms)
            // is when to look again.
            if readable(port.raw_fds(), 50) {
                port.read(braid_proto::time::Instant::ZERO);
            }
        }
        assert!(route.contains(&format!("via {gw6} dev braida1")), "{route}");
        assert!(addrs.contains("2001:2:0:9:"), "{addrs}");
        assert!(slaac(&port), "the SLAAC address's detection was heard");
        // The kernel's neighbor table (IPv4 and IPv6 entries on the
        // access interface) names clients too, read at the next probe.
        let (table4, table6) = ("198.18.9.90", "2001:2:0:9::90");
        for (a, mac) in [(table4, "02:00:00:00:00:90"), (table6, "02:00:00:00:00:91")] {
            ip(&["neigh", "replace", a, "lladdr", mac, "dev", "braida0", "nud", "permanent"]);
        }
        let mut rng = <rand_chacha::ChaCha8Rng as rand_core::SeedableRng>::seed_from_u64(1);
        let mut node = braid_proto::node::Node::new(
            braid_wire::NodeId(1),
            braid_proto::node::NodeConfig::default(),
            braid_proto::time::Instant::ZERO,
            &mut rng,
        )
        .expect("a node");
        port.probe(braid_proto::time::Instant::from_millis(1000), &mut node);
        let found: Vec<(IpAddr, Option<[u8; 6]>)> = port.clients().collect();
        assert!(found.contains(&(table4.parse().unwrap(), Some([2, 0, 0, 0, 0, 0x90]))), "{found:?}");
        assert!(found.contains(&(table6.parse().unwrap(), Some([2, 0, 0, 0, 0, 0x91]))), "{found:?}");
        assert!(port.counters.probes_sent >= 5, "every client probed");
        port.shutdown();
        // This namespace goes with the thread (nothing else holds it).
    })
    .join()
    .expect("the test thread");
    drop(client_ns);
}
