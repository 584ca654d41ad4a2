//! A router with a wrong key is seen, named and mended (issue 32: it was
//! nearly invisible: nothing at the default log level, `status` saying
//! neighbors verified beside none up, only `stats` counting `bad_mac`).
//! Daemons A and B on a veth between two namespaces, the same key id
//! with another secret: A warns once, naming B's address and the node id
//! B claims, and `status` lists B's address as failing (`bad_mac`) with
//! no neighbor verified. B is given A's key by a reload: A takes B as its
//! neighbor and the failing list empties.
//!
//! Two named network namespaces (deleted also when the test fails), the
//! daemons on threads inside them, stopped by SIGTERM; addresses from
//! 198.18.0.0/15; needs root.

mod common;

use std::time::Duration;

use braid_daemon::ctl::{self, Status};
use common::{ip, wait_for, Daemons, Log, Netns};

const KEY_A: &str = "000102030405060708090a0b0c0d0e0f";
const KEY_B: &str = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

fn main() -> std::process::ExitCode {
    common::run_as_root(
        "a_router_with_another_key_is_named_by_its_neighbor_and_comes_up_once_mended",
        "network namespaces, veth and daemons",
        a_router_with_another_key_is_named_by_its_neighbor_and_comes_up_once_mended,
    )
}

fn config(node: u16, key: &str) -> String {
    format!(
        "node = {node}\ndatapath = \"user\"\n[tun]\nname = \"braidwk\"\n\
         [probes]\nsmall_interval = \"100ms\"\nbig_interval = \"1s\"\n\
         [auth]\nkeys = [{{ id = 1, secret = \"{key}\" }}]\n\
         [[interface]]\nname = \"wk0\"\n"
    )
}

fn status(socket: &std::path::Path) -> Status {
    ctl::query::<Status>(socket, "status").expect("status").body
}

fn a_router_with_another_key_is_named_by_its_neighbor_and_comes_up_once_mended() {
    let log = Log::capture();
    let a = Netns::new(format!("braid-wka-{}", std::process::id()));
    let b = Netns::new(format!("braid-wkb-{}", std::process::id()));
    let dir = std::env::temp_dir().join(format!("braid-wrong-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut daemons = Daemons::new(log.clone(), dir.clone());
    ip(&[
        "link", "add", "wk0", "netns", &a.0, "type", "veth", "peer", "name", "wk0", "netns", &b.0,
    ]);
    ip(&["-n", &a.0, "addr", "add", "198.18.79.1/24", "dev", "wk0"]);
    ip(&["-n", &b.0, "addr", "add", "198.18.79.2/24", "dev", "wk0"]);
    ip(&["-n", &a.0, "link", "set", "wk0", "up"]);
    ip(&["-n", &b.0, "link", "set", "wk0", "up"]);
    let sock_a = daemons.start(&a.0, "a", config(1, KEY_A));
    let sock_b = daemons.start(&b.0, "b", config(2, KEY_B));

    // A names B: status, and one warning.
    wait_for(
        "A lists B's address as failing",
        Duration::from_secs(10),
        || !status(&sock_a).authentication.failing.is_empty(),
    );
    let s = status(&sock_a);
    let failing: Vec<_> = s
        .authentication
        .failing
        .iter()
        .map(|f| {
            (
                f.interface.as_str(),
                f.address.as_str(),
                f.says_node,
                f.reason.as_str(),
            )
        })
        .collect();
    assert_eq!(
        failing,
        [("wk0", "198.18.79.2", Some(2), "bad_mac")],
        "{s:?}"
    );
    assert_eq!((s.neighbors, s.authentication.verified_senders), (0, 0));
    let warning = "control messages from 198.18.79.2 fail the key check (bad_mac)";
    wait_for("A's warning", Duration::from_secs(5), || {
        log.count(warning) >= 1
    });
    // B's probes go on (ten a second): still one warning within the
    // minute.
    let seen = s.authentication.failing[0].messages;
    wait_for("ten more failures", Duration::from_secs(10), || {
        status(&sock_a)
            .authentication
            .failing
            .first()
            .is_some_and(|f| f.messages >= seen + 10)
    });
    assert_eq!(log.count(warning), 1, "warned once: {}", log.text());

    // B gets A's key: A takes B, and nothing fails any more.
    std::fs::write(
        dir.join("b.toml"),
        format!(
            "control_socket = \"{}\"\n{}",
            sock_b.display(),
            config(2, KEY_A)
        ),
    )
    .unwrap();
    ctl::query::<serde_json::Value>(&sock_b, "reload").expect("B reloads");
    wait_for("A takes B as its neighbor", Duration::from_secs(10), || {
        status(&sock_a).neighbors == 1
    });
    let s = status(&sock_a);
    assert!(s.authentication.failing.is_empty(), "{s:?}");
    assert_eq!(s.authentication.verified_senders, 1);
}
