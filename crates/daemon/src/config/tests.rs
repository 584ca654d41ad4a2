//! The config file's checks as an operator meets them: the guide's
//! example and good files give the node its settings; bad files are
//! refused with the line and field of each problem, all of them at once.

use std::time::Duration;

use braid_proto::redundancy::reorder::ReorderTimeout;
use braid_wire::{NodeId, Prefix};

use super::*;

#[test]
fn the_example_config_in_the_operations_guide_is_valid_and_warns_of_nothing() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/operations.md"),
    )
    .unwrap();
    let at = doc
        .find("Example (a router serving 198.18.1.0/24, mirroring VoIP):")
        .expect("the example is in the guide");
    let block = doc[at..].split("```toml\n").nth(1).unwrap();
    let text = block.split("```").next().unwrap();
    let c = Config::parse("operations.md", text).unwrap();
    // It stripes TCP: its egress must re-order (without, 3,282
    // retransmissions in 5 s on lossless links in an operator's trial).
    assert_eq!(c.node_config.policy.default.to_string(), "stripe");
    assert!(c.node_config.egress.reorder.is_some());
    assert_eq!(crate::daemon::checks::tun_address_warning(&c), None);
}

const GOOD: &str = r#"
node = 7
prefixes = ["198.18.7.0/24"]
mode = "mirror:2"

[[interface]]
name = "veth0"

[[interface]]
name = "veth1"

[tun]
address = "198.18.7.1/24"
routes = ["198.18.0.0/15"]

[probes]
small_interval = "200ms"

[[policy]]
to = "198.18.9.0/24"
ports = "5060"
mode = "mirror:3"
urgent = true
"#;

#[test]
fn a_good_file_gives_the_node_its_settings() {
    let c = Config::parse("good.toml", GOOD).unwrap();
    assert_eq!(c.node, NodeId(7));
    assert_eq!(c.interfaces, ["veth0", "veth1"]);
    assert_eq!(c.port, DEFAULT_PORT);
    assert_eq!(c.tun.name, "braid0");
    assert_eq!(c.tun.routes, ["198.18.0.0/15".parse().unwrap()]);
    let nc = &c.node_config;
    assert_eq!(nc.control.probes.small_interval, Duration::from_millis(200));
    assert_eq!(
        nc.control.prefixes,
        [Prefix::V4 {
            addr: [198, 18, 7, 0],
            len: 24
        }]
    );
    assert_eq!(nc.policy.default, "mirror:2".parse().unwrap());
    assert_eq!(nc.policy.classes[&1], "mirror:3".parse().unwrap());
    assert_eq!(nc.classifier.rules[0].urgent, Some(true));
    assert_eq!(nc.late_binding.map(|l| l.bound), Some(2));
    assert_eq!(c.send_buffer, DEFAULT_SEND_BUFFER);
    assert_eq!(nc.egress.reorder, None);
    assert_eq!(c.datapath, DatapathChoice::Auto);
    assert_eq!(c.kernel_delivery, KernelDelivery::Auto);
    let stack = Config::parse(
        "good.toml",
        &GOOD.replace("node = 7", "node = 7\nkernel_delivery = \"stack\""),
    )
    .unwrap();
    assert_eq!(stack.kernel_delivery, KernelDelivery::Stack);
    let route = Config::parse(
        "good.toml",
        &GOOD.replace(
            "node = 7",
            "node = 7\ndatapath = \"kernel\"\nkernel_delivery = \"route\"",
        ),
    )
    .unwrap();
    assert_eq!(
        (route.datapath, route.kernel_delivery),
        (DatapathChoice::Kernel, KernelDelivery::Route)
    );
}

#[test]
fn the_area_reaches_the_control_plane_and_defaults_to_the_flat_one() {
    let parse = |extra: &str| {
        let text = format!("node = 1\n{extra}[[interface]]\nname = \"a\"\n");
        Config::parse("a.toml", &text).map(|c| c.node_config.control.area)
    };
    assert_eq!(parse("").unwrap(), 0);
    assert_eq!(parse("area = 7\n").unwrap(), 7);
    assert_eq!(parse("area = 65535\n").unwrap(), 65535);
    let e = parse("area = 65536\n").unwrap_err().to_string();
    assert!(e.contains("area"), "{e}");
    let e = parse("area = -1\n").unwrap_err().to_string();
    assert!(e.contains("area"), "{e}");
}

#[test]
fn window_and_binding_fields_reach_the_node() {
    let text = "node = 1\nreorder = true\nreorder_window = 64\nreorder_max_wait = \"30ms\"\n\
                dedup_window = 1024\nlate_binding = 4\nsend_buffer = 65536\n\
                [[interface]]\nname = \"a\"\n";
    let c = Config::parse("w.toml", text).unwrap();
    let nc = &c.node_config;
    let r = nc.egress.reorder.unwrap();
    assert_eq!(r.max_packets, 64);
    assert_eq!(
        r.timeout,
        ReorderTimeout::Adaptive {
            min: Duration::from_millis(2),
            max: Duration::from_millis(30),
            initial: Duration::from_millis(30),
        }
    );
    assert_eq!(nc.egress.dedup_window, 1024);
    assert_eq!(nc.late_binding.map(|l| l.bound), Some(4));
    assert_eq!(c.send_buffer, 65536);
    let off = Config::parse(
        "w.toml",
        &text.replace("late_binding = 4", "late_binding = 0"),
    )
    .unwrap();
    assert_eq!(off.node_config.late_binding, None);
}

#[test]
fn pacing_is_off_unless_asked_for_and_reports_take_an_interval_in_range() {
    let parse = |extra: &str| {
        Config::parse(
            "p.toml",
            &format!("node = 1\n{extra}[[interface]]\nname = \"a\"\n"),
        )
    };
    let c = parse("").unwrap().node_config;
    assert!(!c.pace);
    assert_eq!(c.path_report_interval, Duration::from_secs(1));
    let c = parse("pace = true\nreport_interval = \"250ms\"\n")
        .unwrap()
        .node_config;
    assert!(c.pace);
    assert_eq!(c.path_report_interval, Duration::from_millis(250));
    for bad in ["\"10ms\"", "\"1h\"", "\"soon\""] {
        let err = parse(&format!("report_interval = {bad}\n")).unwrap_err();
        assert!(err.to_string().contains("report_interval"), "{bad}: {err}");
    }
}

#[test]
fn urgent_copies_default_to_six_and_take_one_to_eight() {
    let parse = |extra: &str| {
        Config::parse(
            "u.toml",
            &format!("node = 1\n{extra}[[interface]]\nname = \"a\"\n"),
        )
    };
    let copies = |extra: &str| parse(extra).unwrap().node_config.ingress.urgent_copies;
    assert_eq!(copies(""), 6);
    assert_eq!(copies("urgent_copies = 1\n"), 1);
    assert_eq!(copies("urgent_copies = 8\n"), 8);
    for bad in ["0", "9", "\"many\""] {
        let err = parse(&format!("urgent_copies = {bad}\n")).unwrap_err();
        assert!(err.to_string().contains("urgent_copies"), "{bad}: {err}");
    }
}

#[test]
fn delay_equalisation_is_off_unless_asked_for() {
    let cfg = |extra: &str| {
        Config::parse(
            "e.toml",
            &format!("node = 1\n{extra}[[interface]]\nname = \"a\"\n"),
        )
        .unwrap()
        .node_config
        .equalise_delay
    };
    assert!(!cfg(""));
    assert!(!cfg("reorder = true\n"));
    assert!(cfg("reorder = true\nequalise_delay = true\n"));
    assert!(!cfg("equalise_delay = false\n"));
}

#[test]
fn mss_clamping_is_off_unless_asked_for() {
    let cfg = |extra: &str| {
        Config::parse(
            "m.toml",
            &format!("node = 1\n[[interface]]\nname = \"a\"\n{extra}"),
        )
        .unwrap()
        .tun
        .mss_clamp
    };
    assert!(!cfg(""));
    assert!(cfg("[tun]\nmss_clamp = true\n"));
    assert!(!cfg("[tun]\nmss_clamp = false\n"));
}

#[test]
fn bad_files_are_refused_with_line_and_field() {
    let cases = [
        ("node = 0\n[[interface]]\nname = \"a\"\n", 1, "node"),
        ("node = 1\n", 1, "interface"),
        ("node = 1\nbogus = 2\n", 2, "bogus"),
        (
            "node = 1\nmode = \"mirror:x\"\n[[interface]]\nname = \"a\"\n",
            2,
            "mode",
        ),
        (
            "node = 1\n[[interface]]\nname = \"a\"\n[tun]\nroutes = [\"10.0.0.0/33\"]\n",
            5,
            "tun.routes[0]",
        ),
        (
            "node = 1\n[[interface]]\nname = \"a\"\n[probes]\nsmall_interval = \"soon\"\n",
            5,
            "probes.small_interval",
        ),
        (
            "node = 1\ngroup = \"239.1.1.1\"\n[[interface]]\nname = \"a\"\n",
            2,
            "group",
        ),
        (
            "node = 1\n[[interface]]\nname = \"a\"\n[[interface]]\nname = \"a\"\n",
            5,
            "interface[1].name",
        ),
        (
            "node = 1\nlog = \"loud\"\n[[interface]]\nname = \"a\"\n",
            2,
            "log",
        ),
        (
            "node = 1\ndatapath = \"fast\"\n[[interface]]\nname = \"a\"\n",
            2,
            "datapath",
        ),
        (
            "node = 1\nkernel_delivery = \"direct\"\n[[interface]]\nname = \"a\"\n",
            2,
            "kernel_delivery",
        ),
        (
            "node = 1\nreorder_window = 2\n[[interface]]\nname = \"a\"\n",
            2,
            "reorder_window",
        ),
        (
            "node = 1\nreorder_max_wait = \"10s\"\n[[interface]]\nname = \"a\"\n",
            2,
            "reorder_max_wait",
        ),
        (
            "node = 1\ndedup_window = 1\n[[interface]]\nname = \"a\"\n",
            2,
            "dedup_window",
        ),
        (
            "node = 1\nlate_binding = 100\n[[interface]]\nname = \"a\"\n",
            2,
            "late_binding",
        ),
        (
            "node = 1\nsend_buffer = 0\n[[interface]]\nname = \"a\"\n",
            2,
            "send_buffer",
        ),
        (
            "node = 1\nlan_interfaces = [\"a\"]\n[[interface]]\nname = \"a\"\n",
            2,
            "lan_interfaces[0]",
        ),
        (
            "node = 1\n[[interface]]\nname = \"a\"\n[[access]]\ninterface = \"w\"\naddress = \"198.18.9.2/24\"\ngateway = \"198.18.10.1\"\n",
            7,
            "access[0].gateway",
        ),
        (
            "node = 1\n[[interface]]\nname = \"a\"\n[[access]]\ninterface = \"w\"\naddress = \"198.18.9.2\"\ngateway = \"198.18.9.1\"\n",
            6,
            "access[0].address",
        ),
        (
            "node = 1\n[[interface]]\nname = \"a\"\n[[access]]\ninterface = \"w\"\naddress = \"198.18.9.2/24\"\ngateway = \"198.18.9.1\"\nmac = \"03:00:00:00:00:01\"\n",
            8,
            "access[0].mac",
        ),
        (
            "node = 1\n[[interface]]\nname = \"a\"\n[[access]]\ninterface = \"a\"\naddress = \"198.18.9.2/24\"\ngateway = \"198.18.9.1\"\n",
            5,
            "access[0].interface",
        ),
    ];
    for (text, line, field) in cases {
        let e = Config::parse("bad.toml", text).unwrap_err();
        let e = e.first();
        assert_eq!((e.line, e.field.as_str()), (line, field), "{text}: {e}");
    }
}

/// Issue 32: the mistakes an operator made, each refused with what to
/// write instead.
#[test]
fn common_mistakes_are_refused_with_what_was_meant() {
    let cases = [
        (
            "prefix = [\"198.18.2.0/24\"]\n",
            "prefix",
            "did you mean `prefixes`?",
        ),
        ("metrics = \"9468\"\n", "metrics", "\"127.0.0.1:9468\""),
        (
            "prefixes = [\"198.18.2.1/24\"]\n",
            "prefixes[0]",
            "write \"198.18.2.0/24\"",
        ),
        (
            "prefixes = [\"2001:db8::1/64\"]\n",
            "prefixes[0]",
            "write \"2001:db8::/64\"",
        ),
        ("log_format = \"xml\"\n", "log_format", "text, json"),
    ];
    for (extra, field, says) in cases {
        let text = format!("node = 1\n{extra}[[interface]]\nname = \"a\"\n");
        let e = Config::parse("bad.toml", &text).unwrap_err();
        let e = e.first();
        assert_eq!((e.line, e.field.as_str()), (2, field), "{text}: {e}");
        assert!(e.to_string().contains(says), "{text}: {e}");
    }
    // A name far from every field gets no guess.
    let e = Config::parse("bad.toml", "node = 1\nwibble = 2\n").unwrap_err();
    assert!(
        !e.first().to_string().contains("did you mean"),
        "{}",
        e.first()
    );
    // Whole prefixes pass.
    let ok = "node = 1\nprefixes = [\"198.18.2.0/24\", \"2001:db8::/64\", \"198.18.2.7/32\"]\n[[interface]]\nname = \"a\"\n";
    assert_eq!(
        Config::parse("ok.toml", ok)
            .unwrap()
            .node_config
            .control
            .prefixes
            .len(),
        3
    );
}

const SECRET: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

/// Issue 32: a config holding the keys at mode 0644 was "valid" without
/// a word; it is still valid, with a warning naming the fix.
#[test]
fn inline_keys_others_can_read_are_warned_of() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("braid-inline-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("r.toml");
    let with_keys = format!(
        "node = 1\n[[interface]]\nname = \"a\"\n[auth]\nkeys = [{{ id = 1, secret = \"{SECRET}\" }}]\n"
    );
    let warning = |text: &str, mode: u32| {
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let c = Config::parse("r.toml", text).unwrap();
        inline_keys_warning(&path, &c)
    };
    let w = warning(&with_keys, 0o644).expect("0644 with keys is warned of");
    assert!(w.contains("mode 0644") && w.contains("chmod 600"), "{w}");
    assert_eq!(warning(&with_keys, 0o600), None);
    // No keys in the file, nothing to warn of.
    assert_eq!(
        warning("node = 1\n[[interface]]\nname = \"a\"\n", 0o644),
        None
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn keys_inline_or_in_a_root_only_file() {
    let base = "node = 1\n[[interface]]\nname = \"a\"\n";
    let c = Config::parse("k.toml", base).unwrap();
    assert!(!c.node_config.control.auth.enabled(), "no [auth]: off");
    let text = format!(
        "{base}[auth]\nkeys = [{{ id = 1, secret = \"{SECRET}\" }}, {{ id = 2, secret = \"{SECRET}\" }}]\n"
    );
    let c = Config::parse("k.toml", &text).unwrap();
    let ids: Vec<u8> = c
        .node_config
        .control
        .auth
        .keys
        .iter()
        .map(|k| k.id)
        .collect();
    assert_eq!(ids, [1, 2]);
    for (section, field, words) in [
        (
            "keys = [{ id = 1, secret = \"xyz\" }]",
            "auth.keys[0].secret",
            "hex",
        ),
        (
            "keys = [{ id = 1, secret = \"0011\" }]",
            "auth.keys[0].secret",
            "16 to 64 bytes",
        ),
        (
            &format!(
                "keys = [{{ id = 1, secret = \"{SECRET}\" }}, {{ id = 1, secret = \"{SECRET}\" }}]"
            ),
            "auth.keys[1].id",
            "two keys",
        ),
        (
            &format!("keys = [{{ id = 1, secret = \"{SECRET}\" }}]\nkey_file = \"/x\""),
            "auth.key_file",
            "not both",
        ),
        ("keys = []", "auth.keys", "no key"),
    ] {
        let e = Config::parse("k.toml", &format!("{base}[auth]\n{section}\n")).unwrap_err();
        let e = e.first();
        assert_eq!(e.field, field, "{section}");
        assert!(e.message.contains(words), "{section}: {}", e.message);
    }
    // A key file: only its owner may read it.
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("braid-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("keys.toml");
    std::fs::write(
        &keys,
        format!("keys = [{{ id = 7, secret = \"{SECRET}\" }}]\n"),
    )
    .unwrap();
    let conf = dir.join("braid.toml");
    std::fs::write(
        &conf,
        format!("{base}[auth]\nkey_file = \"{}\"\n", keys.display()),
    )
    .unwrap();
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = Config::load(&conf).unwrap_err().to_string();
    assert!(
        e.contains("can be read by others") && e.contains("chmod 600"),
        "{e}"
    );
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600)).unwrap();
    let c = Config::load(&conf).unwrap();
    assert_eq!(c.node_config.control.auth.keys[0].id, 7);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_problem_is_reported_at_once_the_first_as_a_check_that_stopped_would_say() {
    let text = "node = 0\nlog = \"loud\"\n[[interface]]\nname = \"a\"\n[tun]\nmtu = 20\n\
                [[access]]\ninterface = \"a\"\naddress = \"198.18.9.2\"\ngateway = \"x\"\n\
                [auth]\nkeys = [{ id = 1, secret = \"xyz\" }]\n";
    let e = Config::parse("bad.toml", text).unwrap_err();
    let found: Vec<(usize, &str)> = e.all().map(|e| (e.line, e.field.as_str())).collect();
    assert_eq!(
        found,
        [
            (1, "node"),
            (2, "log"),
            (6, "tun.mtu"),
            (8, "access[0].interface"),
            (9, "access[0].address"),
            (10, "access[0].gateway"),
            (12, "auth.keys[0].secret"),
        ]
    );
    assert_eq!(
        e.first().to_string(),
        "bad.toml:1: node: node ids are 1 to 65534"
    );
    // One problem a line, each located.
    let shown = e.to_string();
    assert_eq!(shown.lines().count(), found.len(), "{shown}");
    assert!(shown.lines().all(|l| l.starts_with("bad.toml:")), "{shown}");
    assert!(
        shown.ends_with(
            "bad.toml:12: auth.keys[0].secret: not hex digits (make one with `braid keygen`)"
        ),
        "{shown}"
    );
}

#[test]
fn origin_keys_and_the_roster_are_read_and_checked() {
    use braid_proto::origin::{hex, OriginKey};
    use std::os::unix::fs::PermissionsExt;
    let base = "node = 3\n[[interface]]\nname = \"a\"\n";
    let dir = std::env::temp_dir().join(format!("braid-origin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mine = [3u8; 32];
    let public = |s: [u8; 32]| hex(&OriginKey::from_secret(&s).unwrap().public());
    let key = dir.join("origin.key");
    std::fs::write(&key, format!("secret = \"{}\"\n", hex(&mine))).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let roster = dir.join("roster.toml");
    let write_roster = |entries: &[(u16, String)]| {
        let text: String = entries
            .iter()
            .map(|(n, k)| format!("[[router]]\nnode = {n}\nkey = \"{k}\"\n"))
            .collect();
        std::fs::write(&roster, text).unwrap();
    };
    let conf = dir.join("braid.toml");
    let load = |origin: &str| {
        std::fs::write(&conf, format!("{base}[origin]\n{origin}")).unwrap();
        Config::load(&conf)
    };
    let both = format!(
        "key_file = \"{}\"\nroster_file = \"{}\"\n",
        key.display(),
        roster.display()
    );
    write_roster(&[(3, public(mine)), (4, public([4; 32]))]);
    let c = load(&both).unwrap();
    let o = &c.node_config.control.origins;
    assert!(o.key.is_some() && o.roster.as_ref().unwrap().len() == 2);
    // The roster must list this router's own key.
    write_roster(&[(3, public([9; 32]))]);
    let e = load(&both).unwrap_err().to_string();
    assert!(e.contains("does not list this router's public key"), "{e}");
    // A key that is not a key.
    write_roster(&[(3, "abcd".into())]);
    let e = load(&both).unwrap_err().to_string();
    assert!(e.contains("router[0].key"), "{e}");
    // A roster without this router's key.
    let e = Config::parse(
        "c.toml",
        &format!("{base}[origin]\nroster_file = \"{}\"\n", roster.display()),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("origin.key_file"), "{e}");
    // A key alone (step 1 of a rollout) signs without checking.
    let c = load(&format!("key_file = \"{}\"\n", key.display())).unwrap();
    assert!(c.node_config.control.origins.key.is_some());
    assert!(c.node_config.control.origins.roster.is_none());
    // The secret key file is owner-only.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = load(&both).unwrap_err().to_string();
    assert!(e.contains("chmod 600"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_uplink_gives_its_prefixes_targets_and_rounds_with_defaults() {
    let base = "node = 1\nprefixes = [\"198.18.1.0/24\"]\n[[interface]]\nname = \"a\"\n";
    let c = Config::parse("u.toml", base).unwrap();
    assert!(c.uplink.is_none(), "off unless asked for");
    let text = format!(
        "{base}[uplink]\nprefixes = [\"0.0.0.0/0\", \"::/0\"]\n\
         targets = [\"198.19.100.1\", \"2001:db8::1\"]\n"
    );
    let u = Config::parse("u.toml", &text).unwrap().uplink.unwrap();
    assert_eq!(u.prefixes.len(), 2);
    assert_eq!(u.method, crate::uplink::Method::Icmp);
    assert_eq!(u.targets.len(), 2);
    assert_eq!(u.track.targets, 2);
    assert_eq!(u.track.interval, Duration::from_millis(400));
    assert_eq!(u.track.timeout, Duration::from_millis(300));
    assert_eq!((u.track.reliability, u.track.down, u.track.up), (1, 3, 3));
    // The defaults act on a silent failure within 2 s.
    let tracker = crate::uplink::Tracker::new(u.track, braid_proto::time::Instant::ZERO, 0);
    assert_eq!(tracker.worst_detection(), Duration::from_millis(1500));
    let text = format!(
        "{base}[uplink]\nprefixes = [\"0.0.0.0/0\"]\ntargets = [\"198.19.100.1\"]\n\
         method = \"tcp\"\ninterface = \"up0\"\ninterval = \"1s\"\ntimeout = \"1s\"\n\
         down = 5\nup = 10\n"
    );
    let u = Config::parse("u.toml", &text).unwrap().uplink.unwrap();
    assert_eq!(u.method, crate::uplink::Method::Tcp(443));
    assert_eq!(u.interface.as_deref(), Some("up0"));
    assert_eq!((u.track.down, u.track.up), (5, 10));
    let dns = text.replace("\"tcp\"", "\"dns\"");
    let u = Config::parse("u.toml", &dns).unwrap().uplink.unwrap();
    assert_eq!(u.method, crate::uplink::Method::Dns(53));
}

#[test]
fn bad_uplinks_are_refused_naming_the_field() {
    let base = "node = 1\nprefixes = [\"198.18.1.0/24\"]\n[[interface]]\nname = \"a\"\n[uplink]\n";
    let ok = "prefixes = [\"0.0.0.0/0\"]\ntargets = [\"198.19.100.1\"]\n";
    assert!(Config::parse("u.toml", &format!("{base}{ok}")).is_ok());
    let cases = [
        ("targets = [\"198.19.100.1\"]\n", "uplink.prefixes"),
        ("prefixes = [\"0.0.0.0/0\"]\n", "uplink.targets"),
        (
            "prefixes = [\"198.18.1.0/24\"]\ntargets = [\"198.19.100.1\"]\n",
            "in `prefixes` too",
        ),
        (
            "prefixes = [\"0.0.0.0/0\", \"0.0.0.0/0\"]\ntargets = [\"198.19.100.1\"]\n",
            "listed twice",
        ),
        (
            "prefixes = [\"0.0.0.0/0\"]\ntargets = [\"198.19.100.1\", \"198.19.100.1\"]\n",
            "listed twice",
        ),
        (
            "prefixes = [\"0.0.0.0/0\"]\ntargets = [\"example.com\"]\n",
            "uplink.targets[0]",
        ),
        (&format!("{ok}method = \"http\"\n"), "uplink.method"),
        (&format!("{ok}port = 80\n"), "no port"),
        (&format!("{ok}method = \"tcp\"\nport = 0\n"), "uplink.port"),
        (&format!("{ok}timeout = \"600ms\"\n"), "uplink.timeout"),
        (&format!("{ok}interval = \"10ms\"\n"), "uplink.interval"),
        (&format!("{ok}reliability = 2\n"), "uplink.reliability"),
        (&format!("{ok}down = 0\n"), "uplink.down"),
        (&format!("{ok}interface = \"\"\n"), "uplink.interface"),
    ];
    for (section, says) in cases {
        let e = Config::parse("u.toml", &format!("{base}{section}")).unwrap_err();
        assert!(e.to_string().contains(says), "{section}: {e}");
    }
}

#[test]
fn gateway_preference_capacity_and_the_entry_points_choice_reach_the_node() {
    let base = "node = 1\n[[interface]]\nname = \"a\"\n";
    let c = Config::parse("g.toml", base).unwrap();
    let d = braid_proto::node::GatewayChoice::default();
    assert_eq!(c.node_config.gateways, d);
    assert!(d.sticky && !d.spread, "sticky, nearest by default");
    let text = format!(
        "gateway_spread = true\ngateway_sticky = false\ngateway_flows = 100\n\
         gateway_flow_idle = \"60s\"\n{base}[uplink]\nprefixes = [\"0.0.0.0/0\"]\n\
         targets = [\"198.19.100.1\"]\npreference = 200\ncapacity = \"1Gbit\"\n"
    );
    let c = Config::parse("g.toml", &text).unwrap();
    let g = c.node_config.gateways;
    assert!(g.spread && !g.sticky);
    assert_eq!((g.max_flows, g.flow_idle), (100, Duration::from_secs(60)));
    assert_eq!(
        c.uplink.unwrap().gateway,
        Some(Prefix::Gateway {
            preference: 200,
            capacity_kbps: 1_000_000
        })
    );
    assert_eq!(
        Config::parse("g.toml", base)
            .unwrap()
            .node_config
            .copy_window,
        Some(Duration::from_millis(50)),
        "copies dropped at the egress by default"
    );
    let off = Config::parse("g.toml", &format!("copy_window = \"0s\"\n{base}")).unwrap();
    assert_eq!(off.node_config.copy_window, None);
    let uplink = "[uplink]\nprefixes = [\"0.0.0.0/0\"]\ntargets = [\"198.19.100.1\"]\n";
    let no_gateway = Config::parse("g.toml", &format!("{base}{uplink}")).unwrap();
    assert_eq!(no_gateway.uplink.unwrap().gateway, None, "nothing said");
    for (text, says) in [
        (format!("gateway_flows = 2\n{base}"), "gateway_flows"),
        (format!("copy_window = \"2s\"\n{base}"), "copy_window"),
        (
            format!("gateway_flow_idle = \"2d\"\n{base}"),
            "gateway_flow_idle",
        ),
        (
            format!("{base}{uplink}capacity = \"fast\"\n"),
            "uplink.capacity",
        ),
        (format!("{base}{uplink}preference = 300\n"), "preference"),
    ] {
        let e = Config::parse("g.toml", &text).unwrap_err();
        assert!(e.to_string().contains(says), "{text}: {e}");
    }
}

#[test]
fn redistribution_and_installation_take_names_or_numbers_with_defaults() {
    let base = "node = 1\n[[interface]]\nname = \"a\"\n";
    let c = Config::parse("r.toml", base).unwrap();
    assert!(
        c.redistribute.is_none() && c.install.is_none(),
        "off unless asked for"
    );
    let text = format!(
        "{base}[redistribute]\nprotocols = [\"ospf\", \"frr-static\", 4, \"200\"]\n\
         prefixes = [\"10.0.0.0/8\"]\n[install]\n"
    );
    let c = Config::parse("r.toml", &text).unwrap();
    let r = c.redistribute.unwrap();
    assert_eq!(r.protocols, vec![188, 196, 4, 200]);
    assert_eq!(r.table, 254);
    assert_eq!(r.within.len(), 1);
    let i = c.install.unwrap();
    assert_eq!((i.protocol, i.metric, i.table), (177, 20, 254));
    let text = format!(
        "{base}[redistribute]\nprotocols = [\"bgp\"]\ntable = 100\n\
         [install]\nprotocol = 99\nmetric = 5\ntable = 101\n"
    );
    let c = Config::parse("r.toml", &text).unwrap();
    assert_eq!(c.redistribute.unwrap().table, 100);
    let i = c.install.unwrap();
    assert_eq!((i.protocol, i.metric, i.table), (99, 5, 101));
}

#[test]
fn bad_redistribution_is_refused_naming_the_field() {
    let base = "node = 1\n[[interface]]\nname = \"a\"\n";
    let cases = [
        ("[redistribute]\n", "redistribute.protocols"),
        (
            "[redistribute]\nprotocols = [\"osfp\"]\n",
            "not a routing protocol",
        ),
        (
            "[redistribute]\nprotocols = [\"ospf\", 188]\n",
            "listed twice",
        ),
        // braid's own routes taken back would loop, whatever its number.
        ("[redistribute]\nprotocols = [\"braid\"]\n", "would loop"),
        (
            "[redistribute]\nprotocols = [99]\n[install]\nprotocol = 99\n",
            "would loop",
        ),
        (
            "[redistribute]\nprotocols = [\"ospf\"]\nprefixes = [\"10.0.0.1/8\"]\n",
            "host bits",
        ),
        (
            "[redistribute]\nprotocols = [\"ospf\"]\ntable = 255\n",
            "redistribute.table",
        ),
        ("[install]\nprotocol = \"kernel\"\n", "install.protocol"),
        ("[install]\nmetric = 0\n", "install.metric"),
        ("[install]\ntable = 0\n", "install.table"),
        ("[install]\nmetrc = 5\n", "metrc"),
    ];
    for (extra, needle) in cases {
        let e = Config::parse("r.toml", &format!("{base}{extra}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "{extra:?}: {e}");
    }
}

#[test]
fn cost_factors_reach_the_node_by_neighbor_and_interface_position() {
    use braid_proto::node::Interface;
    let base = "node = 1\n[[interface]]\nname = \"a\"\n[[interface]]\nname = \"lte0\"\n";
    let c = Config::parse("c.toml", base).unwrap();
    assert_eq!(c.node_config.cost_overrides, Default::default());
    let text = format!(
        "{base}[[cost]]\ninterface = \"lte0\"\nfactor = 10\n\
         [[cost]]\nneighbor = 7\nfactor = 2.5\n"
    );
    let o = Config::parse("c.toml", &text)
        .unwrap()
        .node_config
        .cost_overrides;
    assert_eq!(o.interfaces.len(), 1);
    assert_eq!(
        o.interfaces[&Interface(1)].get(),
        10.0,
        "lte0 is the second"
    );
    assert_eq!(o.neighbors[&NodeId(7)].get(), 2.5);
    assert_eq!(
        o.factor(NodeId(7), Interface(1)).unwrap().get(),
        2.5,
        "a neighbor's factor wins over its interface's"
    );
    assert_eq!(o.factor(NodeId(8), Interface(1)).unwrap().get(), 10.0);
    assert_eq!(o.factor(NodeId(8), Interface(0)), None);
}

#[test]
fn bad_cost_factors_are_refused_naming_the_field() {
    let base = "node = 1\n[[interface]]\nname = \"a\"\n";
    let cases = [
        (
            "[[cost]]\ninterface = \"b\"\nfactor = 2\n",
            "cost[0].interface",
        ),
        ("[[cost]]\nneighbor = 1\nfactor = 2\n", "own id"),
        ("[[cost]]\nneighbor = 0\nfactor = 2\n", "cost[0].neighbor"),
        ("[[cost]]\nfactor = 2\n", "neither interface nor neighbor"),
        (
            "[[cost]]\ninterface = \"a\"\nneighbor = 2\nfactor = 2\n",
            "both interface and neighbor",
        ),
        ("[[cost]]\nneighbor = 2\nfactor = 0.5\n", "cost[0].factor"),
        ("[[cost]]\nneighbor = 2\nfactor = 5000\n", "only raises"),
        (
            "[[cost]]\nneighbor = 2\nfactor = 2\n[[cost]]\nneighbor = 2\nfactor = 3\n",
            "cost[1]: listed twice",
        ),
        ("[[cost]]\nneighbor = 2\n", "factor"),
    ];
    for (section, says) in cases {
        let e = Config::parse("c.toml", &format!("{base}{section}")).unwrap_err();
        assert!(e.to_string().contains(says), "{section}: {e}");
    }
}

#[test]
fn an_ipv6_underlay_takes_its_group_and_the_user_data_path() {
    use std::net::IpAddr;
    let base = "node = 1\n[[interface]]\nname = \"a\"\n";
    let v4 = Config::parse("u.toml", base).unwrap();
    assert_eq!(v4.underlay, UnderlayFamily::Ipv4);
    assert_eq!(v4.group, IpAddr::V4(DEFAULT_GROUP));
    assert_eq!(v4.datapath, DatapathChoice::Auto);
    let text = format!("underlay = \"ipv6\"\n{base}[tun]\naddress6 = \"2001:2:0:1::fe/128\"\n");
    let v6 = Config::parse("u.toml", &text).unwrap();
    assert_eq!(v6.underlay, UnderlayFamily::Ipv6);
    assert_eq!(v6.group, IpAddr::V6(DEFAULT_GROUP6));
    assert_eq!(
        v6.datapath,
        DatapathChoice::User,
        "auto means user over IPv6"
    );
    assert_eq!(
        v6.tun.address6,
        Some(("2001:2:0:1::fe".parse().unwrap(), 128))
    );
    let own = Config::parse("u.toml", &format!("group = \"ff02::1:99\"\n{text}")).unwrap();
    assert_eq!(own.group, "ff02::1:99".parse::<IpAddr>().unwrap());
    for (head, tail, says) in [
        ("underlay = \"ipx\"\n", "", "underlay"),
        (
            "underlay = \"ipv6\"\ngroup = \"224.0.0.186\"\n",
            "",
            "ff02::/16",
        ),
        ("group = \"ff02::186\"\n", "", "224.0.0.0/24"),
        ("underlay = \"ipv6\"\ngroup = \"ff05::1\"\n", "", "group"),
        (
            "underlay = \"ipv6\"\ndatapath = \"kernel\"\n",
            "",
            "IPv4 only",
        ),
        ("", "[tun]\naddress6 = \"fe80::1/64\"\n", "tun.address6"),
        ("", "[tun]\naddress6 = \"2001:2::1\"\n", "tun.address6"),
        ("", "[tun]\naddress6 = \"2001:2::1/129\"\n", "tun.address6"),
    ] {
        let e = Config::parse("u.toml", &format!("{head}{base}{tail}")).unwrap_err();
        assert!(e.to_string().contains(says), "{head}{tail}: {e}");
    }
}
