//! An interface going down, seen the two ways the daemon looks: the
//! interface's flags before a send (`Port::usable`) and the kernel's link
//! notifications (`CarrierWatch`); and the interface list as `rescan`
//! reads it when notifications were lost. Runs in a network namespace of its own
//! (a thread that unshares one), on a veth pair; needs root. A harness of
//! its own (libtest-mimic), so that without root the runner's output
//! lists the test as ignored, and why.

mod common;

use std::os::fd::AsRawFd;

use braid_daemon::carrier::CarrierWatch;
use braid_daemon::underlay::Port;
use common::ip;

/// Reads notifications until one about interface `index` arrives (at
/// most 5 s each); returns whether it said usable.
fn next_state(watch: &mut CarrierWatch, index: u32) -> bool {
    loop {
        assert!(readable(watch.as_raw_fd()), "a notification within 5 s");
        let mut seen = None;
        let r = watch.read(|s| {
            if s.index == index {
                seen = Some(s.usable);
            }
        });
        assert_eq!(r.malformed, 0);
        if let Some(usable) = seen {
            return usable;
        }
    }
}

/// Waits (at most 5 s) until `fd` is readable.
fn readable(fd: i32) -> bool {
    let mut p = nix::libc::pollfd {
        fd,
        events: nix::libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { nix::libc::poll(&mut p, 1, 5000) > 0 }
}

fn main() -> std::process::ExitCode {
    common::run_as_root(
        "an_interface_going_down_is_seen_before_a_send_and_by_notification",
        "a network namespace and veth",
        an_interface_going_down_is_seen_before_a_send_and_by_notification,
    )
}

fn an_interface_going_down_is_seen_before_a_send_and_by_notification() {
    std::thread::spawn(|| {
        // This thread, and what it starts, get a network namespace of
        // their own: nothing outside sees the dummy interface.
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
            .expect("a network namespace of this thread's own (root)");
        ip(&[
            "link", "add", "braidt0", "type", "veth", "peer", "name", "braidt1",
        ]);
        ip(&["link", "set", "lo", "up"]);
        ip(&["link", "set", "braidt1", "up"]);
        ip(&["link", "set", "braidt0", "up"]);
        ip(&["addr", "add", "198.18.200.1/24", "dev", "braidt0"]);
        let port = Port::open("braidt0", 6868, "224.0.0.186".parse().unwrap(), 2304)
            .expect("port on the veth");
        let mut watch = CarrierWatch::open().expect("link notifications");
        // Carrier comes when both ends are up (the kernel says so a moment
        // later: wait for its notification).
        while !port.usable() {
            next_state(&mut watch, port.index);
        }
        // Set down here: the flags say so at once, before any send.
        ip(&["link", "set", "braidt0", "down"]);
        assert!(!port.usable(), "down is seen at once");
        assert!(!next_state(&mut watch, port.index), "and notified");
        ip(&["link", "set", "braidt0", "up"]);
        while !next_state(&mut watch, port.index) {}
        assert!(port.usable(), "back up");
        // The far end goes down: carrier lost here, notified, and the
        // flags agree once the kernel has noted it.
        ip(&["link", "set", "braidt1", "down"]);
        assert!(!next_state(&mut watch, port.index), "carrier loss notified");
        assert!(!port.usable(), "no carrier, not usable");
        ip(&["link", "set", "braidt1", "up"]);
        while !next_state(&mut watch, port.index) {}
        assert_eq!(
            braid_daemon::carrier::usable_now("braidt0"),
            Some(true),
            "the interface list agrees"
        );
        assert_eq!(braid_daemon::carrier::usable_now("braidt9"), None);
        // Looking at the configured interfaces without notifications: the
        // one open is there and usable; one missing is not said; one
        // whose index changed under braid is said removed, then there.
        use braid_daemon::carrier::{rescan, LinkState};
        let names = ["braidt0".to_string(), "braidt9".to_string()];
        let now = LinkState {
            index: port.index,
            name: Some("braidt0".into()),
            usable: true,
            removed: false,
        };
        assert_eq!(
            rescan(&[Some(port.index), None], &names),
            std::slice::from_ref(&now)
        );
        let stale = port.index + 100;
        assert_eq!(
            rescan(&[Some(stale), None], &names),
            [
                LinkState {
                    index: stale,
                    name: None,
                    usable: false,
                    removed: true
                },
                now
            ]
        );
        // The namespace goes with the thread (nothing else holds it).
    })
    .join()
    .expect("the test thread");
}
