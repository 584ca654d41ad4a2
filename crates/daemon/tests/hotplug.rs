//! Interfaces that come and go under a running daemon. Daemon A is
//! configured with `hpx0` (there) and `hp0` (not yet): it starts, says
//! `hp0` does not exist, and counts it missing. Then `hp0` appears (a veth
//! to daemon B's namespace): A opens it on the kernel's link notification
//! and finds B through it. The veth is deleted: A's neighbor goes down at
//! once (the neighbor timeout here is 10 s), and the interface counts as
//! missing again. It is made again, and B is back through it. It is
//! renamed (no braid interface any more: closed) and named back (opened
//! again). Where braid was built with its eBPF objects, A runs the kernel
//! data path, and `braid_rx` is on `hp0` each time it appears, once, and
//! off the interface renamed away.
//!
//! Two named network namespaces (deleted also when the test fails), the
//! daemons on threads inside them, stopped by SIGTERM; addresses from
//! 198.18.0.0/15; needs root. A harness of its own (libtest-mimic), so
//! that without root the runner's output lists the test as ignored, and
//! why.

mod common;

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use braid_bpf::{Datapath, Program};
use braid_daemon::ctl::{self, Neighbors, Stats, Status};
use common::{ip, spawn_in, wait_for, Daemons, Log, Netns};
use serde_json::Value;

/// Where A has `neighbor` up: its interface's name.
fn neighbor_interface(socket: &Path, neighbor: u16) -> Option<String> {
    let doc = ctl::query::<Neighbors>(socket, "neighbors").expect("neighbors");
    doc.body
        .neighbors
        .into_iter()
        .find(|n| n.id == neighbor)
        .map(|n| n.interface)
}

fn io(socket: &Path) -> braid_daemon::counters::IoCounters {
    ctl::query::<Stats>(socket, "stats")
        .expect("stats")
        .body
        .stats
        .io
}

/// The veth `hp0` between the two namespaces, with addresses, up.
fn make_hp0(a: &str, b: &str) {
    ip(&[
        "link", "add", "hp0", "netns", a, "type", "veth", "peer", "name", "hp0", "netns", b,
    ]);
    ip(&["-n", a, "addr", "add", "198.18.77.1/24", "dev", "hp0"]);
    ip(&["-n", b, "addr", "add", "198.18.77.2/24", "dev", "hp0"]);
    ip(&["-n", a, "link", "set", "hp0", "up"]);
    ip(&["-n", b, "link", "set", "hp0", "up"]);
}

/// The programs attached on `dev`'s receive side in namespace `ns`.
fn attached_on(ns: &str, dev: &'static str) -> Vec<String> {
    spawn_in(ns, move || {
        Datapath::attached(Program::Rx, dev).expect("query")
    })
    .join()
    .expect("the query's thread")
}

fn main() -> std::process::ExitCode {
    common::run_as_root(
        "an_interface_missing_at_start_is_used_when_it_appears_and_again_after_it_went",
        "network namespaces, veth and daemons",
        an_interface_missing_at_start_is_used_when_it_appears_and_again_after_it_went,
    )
}

fn an_interface_missing_at_start_is_used_when_it_appears_and_again_after_it_went() {
    let log = Log::capture();
    let a = Netns::new(format!("braid-hpa-{}", std::process::id()));
    let b = Netns::new(format!("braid-hpb-{}", std::process::id()));
    let dir = std::env::temp_dir().join(format!("braid-hotplug-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut daemons = Daemons::new(log.clone(), dir);
    // The kernel data path where braid carries its programs.
    let kernel = braid_bpf::missing().is_none();
    if !kernel {
        eprintln!("the kernel data path's part skipped: braid was built without its eBPF objects");
    }
    // Probes every 100 ms; a neighbor unheard for 10 s is down: what
    // takes it down sooner is the interface going.
    let probes = "[probes]\nsmall_interval = \"100ms\"\nbig_interval = \"1s\"\ndead_after = 100\n";
    // hpx0: there from the start, to nobody (a veth pair inside A).
    ip(&[
        "-n", &a.0, "link", "add", "hpx0", "type", "veth", "peer", "name", "hpx1",
    ]);
    ip(&["-n", &a.0, "link", "set", "hpx0", "up"]);
    let sock_a = daemons.start(
        &a.0,
        "a",
        format!(
            "node = 1\ndatapath = \"{}\"\n[tun]\nname = \"braidhp\"\n{probes}\
             [[interface]]\nname = \"hpx0\"\n[[interface]]\nname = \"hp0\"\n",
            if kernel { "kernel" } else { "user" }
        ),
    );

    // A runs with what it has, says what it waits for, and counts it.
    let warning = "interface hp0 does not exist (yet): braid will use it when it appears";
    assert_eq!(log.count(warning), 1, "said once: {}", log.text());
    let status = ctl::query::<Status>(&sock_a, "status").expect("status");
    assert_eq!(status.body.interfaces, ["hpx0", "hp0"], "both listed");
    let c = io(&sock_a);
    assert_eq!((c.interfaces_missing, c.interfaces_appeared), (1, 0));

    // hp0 appears, and B behind it.
    make_hp0(&a.0, &b.0);
    let sock_b = daemons.start(
        &b.0,
        "b",
        format!(
            "node = 2\ndatapath = \"user\"\n[tun]\nname = \"braidhp\"\n{probes}\
             [[interface]]\nname = \"hp0\"\n"
        ),
    );
    // A monitor on A from here on: the events it tells.
    let (events, heard) = mpsc::channel::<Value>();
    let sock = sock_a.clone();
    std::thread::spawn(move || {
        let _ = ctl::monitor(&sock, |line| {
            serde_json::from_str(line).is_ok_and(|v| events.send(v).is_ok())
        });
    });
    let took = wait_for("B up at A through hp0", Duration::from_secs(20), || {
        neighbor_interface(&sock_a, 2).as_deref() == Some("hp0")
    });
    eprintln!("B up at A through hp0 {took:?} after B started");
    assert_eq!(neighbor_interface(&sock_b, 1).as_deref(), Some("hp0"));
    let c = io(&sock_a);
    assert_eq!((c.interfaces_missing, c.interfaces_appeared), (0, 1));
    assert_eq!(log.count(warning), 1, "not said again");
    assert_eq!(log.count("interface hp0 appeared: braid uses it now"), 1);
    if kernel {
        assert_eq!(
            attached_on(&a.0, "hp0"),
            ["braid_rx"],
            "braid_rx on hp0, once"
        );
    }

    // hp0 goes (both ends): B goes down at A at once, for that reason.
    ip(&["-n", &a.0, "link", "del", "hp0"]);
    let took = wait_for("B down at A", Duration::from_secs(3), || {
        neighbor_interface(&sock_a, 2).is_none()
    });
    eprintln!("B down at A {took:?} after hp0 was deleted");
    let down = std::iter::from_fn(|| heard.recv_timeout(Duration::from_secs(3)).ok())
        .find(|e| e["event"] == "neighbor_down")
        .expect("a neighbor_down event");
    assert_eq!(down["neighbor"], 2, "{down}");
    assert_eq!(down["why"], "interface down", "{down}");
    let c = io(&sock_a);
    assert_eq!((c.interfaces_missing, c.interfaces_gone), (1, 1));
    wait_for("A down at B", Duration::from_secs(3), || {
        neighbor_interface(&sock_b, 1).is_none()
    });
    assert!(
        log.count("interface hp0 is gone (removed or renamed)") >= 2,
        "both daemons said it: {}",
        log.text()
    );
    // Still answering, still listing what it is configured with.
    let status = ctl::query::<Status>(&sock_a, "status").expect("status");
    assert_eq!(status.body.interfaces, ["hpx0", "hp0"]);

    // hp0 comes back: so does B, through it, on both sides.
    make_hp0(&a.0, &b.0);
    let took = wait_for("B back at A through hp0", Duration::from_secs(20), || {
        neighbor_interface(&sock_a, 2).as_deref() == Some("hp0")
    });
    eprintln!("B back at A {took:?} after hp0 was made again");
    wait_for("A back at B", Duration::from_secs(20), || {
        neighbor_interface(&sock_b, 1).is_some()
    });
    let up = std::iter::from_fn(|| heard.recv_timeout(Duration::from_secs(3)).ok())
        .find(|e| e["event"] == "neighbor_up")
        .expect("a neighbor_up event");
    assert_eq!(up["neighbor"], 2, "{up}");
    assert_eq!(up["interface"], "hp0", "{up}");
    let c = io(&sock_a);
    assert_eq!(
        (
            c.interfaces_missing,
            c.interfaces_appeared,
            c.interfaces_gone
        ),
        (0, 2, 1)
    );
    let c = io(&sock_b);
    assert_eq!(
        (
            c.interfaces_missing,
            c.interfaces_appeared,
            c.interfaces_gone
        ),
        (0, 1, 1),
        "B's own hp0 went and came back too"
    );
    if kernel {
        assert_eq!(
            attached_on(&a.0, "hp0"),
            ["braid_rx"],
            "on the new hp0, once"
        );
    }

    // Renamed: not the configured interface any more, closed (and the
    // kernel's program comes off it); named back: opened again.
    ip(&["-n", &a.0, "link", "set", "hp0", "down"]);
    ip(&["-n", &a.0, "link", "set", "hp0", "name", "hpz"]);
    wait_for("hp0 closed at A", Duration::from_secs(3), || {
        io(&sock_a).interfaces_gone == 2
    });
    assert_eq!(neighbor_interface(&sock_a, 2), None);
    assert_eq!(io(&sock_a).interfaces_missing, 1);
    if kernel {
        assert_eq!(attached_on(&a.0, "hpz"), Vec::<String>::new(), "off hpz");
    }
    ip(&["-n", &a.0, "link", "set", "hpz", "name", "hp0"]);
    ip(&["-n", &a.0, "link", "set", "hp0", "up"]);
    wait_for(
        "B back at A after the rename",
        Duration::from_secs(20),
        || neighbor_interface(&sock_a, 2).as_deref() == Some("hp0"),
    );
    let c = io(&sock_a);
    assert_eq!(
        (
            c.interfaces_missing,
            c.interfaces_appeared,
            c.interfaces_gone
        ),
        (0, 3, 2)
    );
    if kernel {
        assert_eq!(attached_on(&a.0, "hp0"), ["braid_rx"], "on hp0 again, once");
    }
    drop(daemons);
    drop((a, b));
}
