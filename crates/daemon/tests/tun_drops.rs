//! Packets the kernel drops at braid's TUN device are counted (issue 32:
//! iperf3 saw 18,242 retransmits, `ip -s link` 18,348 TX drops on the
//! TUN device, and no braid counter or metric showed them). A daemon in
//! a namespace routes 198.18.91.0/24 to its TUN device; the device's
//! queue is set to hold nothing (`txqueuelen 0`), so the kernel drops
//! every packet routed there; 50 UDP datagrams are sent to that prefix.
//! `stats` (io.tun_queue_dropped) and the metrics page
//! (`braid_io_total{what="tun_queue_dropped"}`) count each of them.
//!
//! One named network namespace (deleted also when the test fails), the
//! daemon on a thread inside it, stopped by SIGTERM; needs root.

mod common;

use braid_daemon::ctl::{self, Stats};
use common::{ip, spawn_in, Daemons, Log, Netns};

fn main() -> std::process::ExitCode {
    common::run_as_root(
        "packets_the_kernel_drops_at_the_tun_device_are_counted",
        "a network namespace, a TUN device and a daemon",
        packets_the_kernel_drops_at_the_tun_device_are_counted,
    )
}

fn dropped(socket: &std::path::Path) -> u64 {
    ctl::query::<Stats>(socket, "stats")
        .expect("stats")
        .body
        .stats
        .io
        .tun_queue_dropped
}

fn packets_the_kernel_drops_at_the_tun_device_are_counted() {
    let log = Log::capture();
    let ns = Netns::new(format!("braid-td-{}", std::process::id()));
    let dir = std::env::temp_dir().join(format!("braid-tun-drops-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut daemons = Daemons::new(log, dir);
    ip(&[
        "-n", &ns.0, "link", "add", "td0", "type", "veth", "peer", "name", "td1",
    ]);
    ip(&["-n", &ns.0, "link", "set", "td0", "up"]);
    let socket = daemons.start(
        &ns.0,
        "a",
        "node = 1\ndatapath = \"user\"\nmetrics = \"127.0.0.1:9479\"\n\
         [tun]\nname = \"braidtd\"\nroutes = [\"198.18.91.0/24\"]\n\
         [[interface]]\nname = \"td0\"\n"
            .to_string(),
    );
    ip(&["-n", &ns.0, "link", "set", "braidtd", "txqueuelen", "0"]);
    let before = dropped(&socket);
    let sent = spawn_in(&ns.0, || {
        let s = std::net::UdpSocket::bind("0.0.0.0:0").expect("a UDP socket");
        (0..50)
            .filter(|_| s.send_to(b"dropped at the TUN", "198.18.91.5:9").is_ok())
            .count() as u64
    })
    .join()
    .expect("the sender");
    assert_eq!(sent, 50, "the kernel took every datagram to route");
    // The kernel counts as it drops: by the time send_to returned.
    let after = dropped(&socket);
    // The kernel's own IPv6 packets (router solicitations) may be
    // dropped there too, a few.
    assert!(
        (before + 50..=before + 55).contains(&after),
        "50 drops counted: {before} before, {after} after"
    );
    // The metrics page says the same.
    let page = spawn_in(&ns.0, || {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect("127.0.0.1:9479").expect("metrics");
        c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut page = String::new();
        c.read_to_string(&mut page).unwrap();
        page
    })
    .join()
    .expect("the scrape");
    let line = page
        .lines()
        .find(|l| l.starts_with("braid_io_total{") && l.contains("what=\"tun_queue_dropped\""))
        .unwrap_or_else(|| panic!("a tun_queue_dropped sample: {page}"));
    let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(value >= (before + 50) as f64, "{line}");
}
