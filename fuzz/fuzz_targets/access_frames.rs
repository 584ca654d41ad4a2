//! Any frame an access interface's sockets can hand the daemon (ARP,
//! DHCP, IPv6 neighbor discovery): the parsers return a value or nothing,
//! never panic.
#![no_main]

use braid_daemon::access::frames::{ethertype, Arp, Dhcp, Nd};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ethertype(data);
    let _ = Arp::parse(data);
    let _ = Dhcp::parse(data);
    let _ = Nd::parse(data);
});
