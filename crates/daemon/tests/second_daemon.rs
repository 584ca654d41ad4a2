//! A second daemon started beside a running one, and refused, changes
//! nothing of the running one's (issue 32: a refused second daemon took
//! the first one's kernel routes with it). Daemon A runs in a namespace
//! with `[tun] routes`. Daemon B, with its own control socket and TUN
//! device, is refused twice: for A's metrics port (the message names the
//! address and the `metrics` field), and, with a metrics port of its
//! own, for A's routes (named, with the device that holds them). After
//! each: A's routes are still A's, B left no control socket and no TUN
//! device. One named network namespace (deleted also when the test
//! fails), the daemons on threads inside it; needs root.

mod common;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use braid_daemon::daemon::Daemon;
use common::{ip, Netns};

/// Starts the daemon of `config` on a thread inside `ns`: `Ok` once it
/// runs (it runs until SIGTERM), or why it was refused.
fn start_in(ns: &str, config: &Path) -> Result<std::thread::JoinHandle<()>, String> {
    let ns_path = format!("/run/netns/{ns}");
    let config = config.to_path_buf();
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let f = std::fs::File::open(&ns_path).expect("the namespace");
        nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns (root)");
        match Daemon::start(&config) {
            Ok(d) => {
                let _ = tx.send(Ok(()));
                d.run().expect("the daemon runs until stopped");
            }
            Err(e) => {
                let _ = tx.send(Err(e.to_string()));
            }
        }
    });
    match rx
        .recv_timeout(Duration::from_secs(30))
        .expect("started or refused within 30 s")
    {
        Ok(()) => Ok(handle),
        Err(e) => {
            let _ = handle.join();
            Err(e)
        }
    }
}

fn main() -> std::process::ExitCode {
    common::run_as_root(
        "a_refused_second_daemon_changes_nothing_of_the_running_ones",
        "network namespaces, TUN devices and daemons",
        a_refused_second_daemon_changes_nothing_of_the_running_ones,
    )
}

fn a_refused_second_daemon_changes_nothing_of_the_running_ones() {
    let ns = Netns::new(format!("braid-second-{}", std::process::id()));
    let dir: PathBuf = std::env::temp_dir().join(format!("braid-second-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    ip(&[
        "-n", &ns.0, "link", "add", "sd0", "type", "veth", "peer", "name", "sd1",
    ]);
    ip(&["-n", &ns.0, "link", "set", "sd0", "up"]);
    ip(&["-n", &ns.0, "link", "set", "sd1", "up"]);
    let write = |name: &str, tun: &str, metrics: u16| {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "node = 1\ncontrol_socket = \"{}\"\nmetrics = \"127.0.0.1:{metrics}\"\n\
                 [tun]\nname = \"{tun}\"\nroutes = [\"198.18.0.0/16\"]\n\
                 [[interface]]\nname = \"sd0\"\n",
                dir.join(format!("{name}.sock")).display()
            ),
        )
        .unwrap();
        path
    };
    let routes = || ip(&["-n", &ns.0, "route", "show", "exact", "198.18.0.0/16"]);
    let a = start_in(&ns.0, &write("a", "braidsd0", 9468)).expect("daemon A starts");
    assert!(routes().contains("dev braidsd0"), "A's route: {}", routes());

    // B on A's metrics port.
    let e = start_in(&ns.0, &write("b", "braidsd1", 9468)).expect_err("B is refused");
    assert!(
        e.contains("127.0.0.1:9468") && e.contains("`metrics` field"),
        "the message names the address and the field: {e}"
    );
    // B with a metrics port of its own, on A's routes.
    let e = start_in(&ns.0, &write("c", "braidsd1", 9469)).expect_err("C is refused");
    assert!(
        e.contains("198.18.0.0/16") && e.contains("braidsd0"),
        "the message names the route and the device: {e}"
    );
    // A's route is A's; the refused daemons left nothing.
    assert!(routes().contains("dev braidsd0"), "A's route: {}", routes());
    for sock in ["b.sock", "c.sock"] {
        assert!(!dir.join(sock).exists(), "{sock} left behind");
    }
    assert!(dir.join("a.sock").exists(), "A's socket is A's");
    let links = ip(&["-n", &ns.0, "link", "show"]);
    assert!(!links.contains("braidsd1"), "a TUN device left: {links}");

    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGTERM);
    let _ = a.join();
    let _ = std::fs::remove_dir_all(&dir);
}
