//! An access interface's socket on a real interface: a client's DHCP
//! request and its ARP request reach it through the socket's filter, other
//! traffic does not, and both make the sender a client. Runs in a network
//! namespace of its own (a thread that unshares one), on a veth pair;
//! needs root. A harness of its own (libtest-mimic), so that without root
//! the runner's output lists the test as ignored, and why.

use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::time::{Duration, Instant};

use braid_daemon::access::{dhcp_frame, AccessPort};
use braid_daemon::config::AccessInterface;
use nix::libc;

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip runs");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Waits (at most `ms`) until `fd` is readable.
fn readable(fd: i32, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, ms) > 0 }
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
    let args = libtest_mimic::Arguments::from_args();
    let trial = libtest_mimic::Trial::test(
        "clients_are_found_from_dhcp_and_arp_through_the_access_sockets_filter",
        || {
            clients_are_found_from_dhcp_and_arp_through_the_access_sockets_filter();
            Ok(())
        },
    );
    let trial = if nix::unistd::geteuid().is_root() {
        trial
    } else {
        trial
            .with_ignored_flag(true)
            .with_kind("skipped: not root (a network namespace, veth and a packet socket)")
    };
    libtest_mimic::run(&args, vec![trial]).exit_code()
}

fn clients_are_found_from_dhcp_and_arp_through_the_access_sockets_filter() {
    std::thread::spawn(|| {
        // This thread, and what it starts, get a network namespace of
        // their own: nothing outside sees the veth pair.
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
            .expect("a network namespace of this thread's own (root)");
        ip(&[
            "link", "add", "braida0", "type", "veth", "peer", "name", "braida1",
        ]);
        ip(&["link", "set", "lo", "up"]);
        ip(&["link", "set", "braida1", "up"]);
        let config = AccessInterface {
            name: "braida0".into(),
            address: Ipv4Addr::new(198, 18, 9, 2),
            len: 24,
            gateway: Ipv4Addr::new(198, 18, 9, 1),
            mac: braid_daemon::config::DEFAULT_GATEWAY_MAC,
            probe_interval: Duration::from_millis(100),
            probe_window: 10,
        };
        let mut port = AccessPort::open(&config, braid_proto::time::Instant::ZERO)
            .expect("the access interface set up");
        let client = Raw::open("braida1");
        let (dhcp_client, arp_client) =
            (Ipv4Addr::new(198, 18, 9, 77), Ipv4Addr::new(198, 18, 9, 78));
        let any = Ipv4Addr::UNSPECIFIED;
        // Not DHCP: a UDP datagram to port 5000 (the DHCP request with its
        // ports changed); the filter keeps it from the socket.
        let mut other = dhcp_frame(
            3,
            [2, 0, 0, 0, 0, 0x76],
            any,
            any,
            Some(Ipv4Addr::new(198, 18, 9, 76)),
        );
        other[14 + 22..14 + 24].copy_from_slice(&5000u16.to_be_bytes());
        client.send(&other);
        client.send(&dhcp_frame(
            3,
            [2, 0, 0, 0, 0, 0x77],
            any,
            any,
            Some(dhcp_client),
        ));
        client.send(&arp_request(
            [2, 0, 0, 0, 0, 0x78],
            arp_client,
            config.gateway,
        ));
        let deadline = Instant::now() + Duration::from_secs(5);
        let found = |port: &AccessPort| {
            let mut c: Vec<Ipv4Addr> = port.clients().map(|(a, _)| a).collect();
            c.sort();
            c
        };
        while found(&port).len() < 2 && Instant::now() < deadline {
            if readable(port.raw_fd(), 100) {
                port.read();
            }
        }
        assert_eq!(found(&port), vec![dhcp_client, arp_client]);
        let macs: Vec<_> = port.clients().map(|(_, m)| m).collect();
        assert_eq!(
            macs,
            vec![Some([2, 0, 0, 0, 0, 0x77]), Some([2, 0, 0, 0, 0, 0x78])]
        );
        assert_eq!(port.counters.dhcp, 1);
        assert_eq!(
            port.counters.malformed, 0,
            "the UDP datagram to port 5000 never reached the socket"
        );
        port.shutdown();
        // The namespace goes with the thread (nothing else holds it).
    })
    .join()
    .expect("the test thread");
}
