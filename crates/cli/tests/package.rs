//! The packages: `braid generate` (man pages, completions); the Debian
//! package from scripts/deb.sh, installed for real with dpkg and its
//! systemd unit's command run as the unit says (its user, capabilities
//! and environment) in a network namespace; and the OpenWrt recipe's
//! UCI-to-TOML mapping, checked by the daemon. A harness of its own
//! (libtest-mimic), as tests/lab.rs: a test this machine cannot run is
//! listed as ignored, with the reason as its kind
//! (`test [skipped: not root] ... ignored`).

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn braid() -> &'static str {
    env!("CARGO_BIN_EXE_braid")
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    out
}

/// Runs a command that must succeed; its stdout.
fn ok(cmd: &mut Command) -> String {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("braid-pkg-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

// ---------------------------------------------------------------------
// braid generate

fn generate_writes_a_man_page_per_command_and_completions_for_each_shell() {
    let dir = temp_dir("man");
    ok(Command::new(braid()).args(["generate", "man"]).arg(&dir));
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    for page in [
        "braid.1",
        "braid-daemon.1",
        "braid-ctl.1",
        "braid-keygen.1",
        "braid-paths.1",
        "braid-sim.1",
        "braid-demo.1",
        "braid-lab.1",
        "braid-lab-run.1",
    ] {
        assert!(
            pages.contains(&page.to_string()),
            "{page} missing: {pages:?}"
        );
    }
    // Hidden commands (the lab's helpers, this generator) get no page.
    for hidden in ["generate", "lab-delay", "lab-flood", "help"] {
        assert!(
            !pages.iter().any(|p| p.contains(hidden)),
            "a page for hidden {hidden}: {pages:?}"
        );
    }
    let daemon = std::fs::read_to_string(dir.join("braid-daemon.1")).unwrap();
    for section in [
        ".SH FILES",
        ".SH SIGNALS",
        ".SH EXIT STATUS",
        "braid.toml",
        "SIGHUP",
    ] {
        assert!(
            daemon.contains(section),
            "braid-daemon.1 lacks {section}:\n{daemon}"
        );
    }
    let top = std::fs::read_to_string(dir.join("braid.1")).unwrap();
    assert!(
        top.contains("braid\\-daemon(1)"),
        "braid.1 lists its pages:\n{top}"
    );
    // Every page is well-formed roff, when man can read it.
    if have("man") {
        for page in &pages {
            let out = run(Command::new("man")
                .args(["--warnings", "-l", "-Tutf8"])
                .arg(dir.join(page))
                .env("MANWIDTH", "80"));
            assert!(out.status.success(), "man -l {page}");
            let warnings = String::from_utf8_lossy(&out.stderr);
            assert!(warnings.trim().is_empty(), "{page}: {warnings}");
        }
    }

    for (shell, checker) in [("bash", "bash"), ("zsh", "zsh"), ("fish", "fish")] {
        let text = ok(Command::new(braid()).args(["generate", "completions", shell]));
        for word in ["daemon", "ctl", "keygen", "config", "check"] {
            assert!(text.contains(word), "{shell} completions lack {word}");
        }
        for hidden in ["lab-flood", "lab-delay", "generate"] {
            assert!(!text.contains(hidden), "{shell}: hidden {hidden} completed");
        }
        // The script parses, in the shells that are here.
        if have(checker) {
            let file = dir.join(format!("completion.{shell}"));
            std::fs::write(&file, &text).unwrap();
            ok(Command::new(checker).arg("-n").arg(&file));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------
// OpenWrt: UCI to TOML

/// `uci show braid`, from a UCI file (what `uci` would print for it):
/// sections by name or `@type[i]`, each option once, lists on one line.
fn uci_show(file: &str) -> String {
    fn unquote(v: &str) -> String {
        let v = v.trim();
        if v.len() >= 2
            && ((v.starts_with('\'') && v.ends_with('\''))
                || (v.starts_with('"') && v.ends_with('"')))
        {
            v[1..v.len() - 1].to_string()
        } else {
            v.to_string()
        }
    }
    let quote = |v: &str| format!("'{}'", v.replace('\'', "'\\''"));
    let mut out = String::new();
    let mut anonymous: BTreeMap<String, usize> = BTreeMap::new();
    // The section being read: its path and its options in order.
    type Section = (String, Vec<(String, Vec<String>)>);
    let mut section: Option<Section> = None;
    let flush = |section: &mut Option<Section>, out: &mut String| {
        if let Some((path, options)) = section.take() {
            for (key, values) in options {
                let vals: Vec<String> = values.iter().map(|v| quote(v)).collect();
                out.push_str(&format!("{path}.{key}={}\n", vals.join(" ")));
            }
        }
    };
    for line in file.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        match word {
            "config" => {
                flush(&mut section, &mut out);
                let (kind, name) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                let name = unquote(name);
                let path = if name.is_empty() {
                    let i = anonymous.entry(kind.to_string()).or_default();
                    *i += 1;
                    format!("braid.@{kind}[{}]", *i - 1)
                } else {
                    format!("braid.{name}")
                };
                out.push_str(&format!("{path}={kind}\n"));
                section = Some((path, Vec::new()));
            }
            "option" | "list" => {
                let (key, value) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                let value = unquote(value);
                let options = &mut section.as_mut().expect("an option inside a section").1;
                match options.iter_mut().find(|(k, _)| k == key) {
                    Some((_, values)) if word == "list" => values.push(value),
                    Some((_, values)) => *values = vec![value],
                    None => options.push((key.to_string(), vec![value])),
                }
            }
            _ => panic!("not a UCI line: {line}"),
        }
    }
    flush(&mut section, &mut out);
    out
}

fn uci2toml(show: &str, shell: &[&str], path_prefix: Option<&Path>) -> Output {
    let script = repo().join("dist/openwrt/braid/files/braid-uci2toml");
    let mut cmd = Command::new(shell[0]);
    cmd.args(&shell[1..]).arg(&script);
    if let Some(dir) = path_prefix {
        let path = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{path}", dir.display()));
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(show.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// A router's UCI config using every kind of option the mapping has.
const SAMPLE_UCI: &str = "\
config braid 'main'
	option enabled '1'
	option node '7'
	list interface 'wlan0'
	list interface 'wlan1'
	list prefix '198.18.7.0/24'
	option mode 'stripe'
	option log 'info'
	option paths '2'
	option reorder '1'
	option datapath 'user'
	option metrics '127.0.0.1:9468'
	option control_socket '/var/run/braid/braid.sock'
	option probe_interval '200ms'
	option big_probe_interval '2s'
	option dead_after '5'
	option key_file ''

config tun 'tun'
	option name 'braid0'
	option address '198.18.7.1/24'
	option mtu '1400'
	list route '198.18.0.0/15'
	list route '2001:2::/48'

config policy
	option name \"it's voip\"
	option to '198.18.0.0/15'
	option ports '16384-32767'
	option mode 'mirror:2'
	option urgent '1'

config policy
	option name 'bulk'
	option mode 'parity:4'

config access
	option interface 'ap0'
	option address '198.18.200.2/24'
	option gateway '198.18.200.1'
";

fn openwrt_uci_becomes_a_config_the_daemon_accepts() {
    let dir = temp_dir("uci");
    let check = |toml: &str, name: &str| {
        let path = dir.join(name);
        std::fs::write(&path, toml).unwrap();
        let out = run(Command::new(braid())
            .args(["daemon", "--check", "--config"])
            .arg(&path));
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    // The mapping runs in POSIX sh with awk here, and in BusyBox's sh and
    // awk (what OpenWrt has) when BusyBox is installed.
    let busybox = temp_dir("busybox");
    let mut shells: Vec<(Vec<&str>, Option<&Path>)> = vec![(vec!["sh"], None)];
    if have("busybox") {
        let found = ok(Command::new("sh").args(["-c", "command -v busybox"]));
        std::os::unix::fs::symlink(found.trim(), busybox.join("awk")).unwrap();
        shells.push((vec!["busybox", "sh"], Some(busybox.as_path())));
    } else {
        eprintln!("note: busybox is not installed: the mapping is run with sh and awk only");
    }
    for (shell, path) in &shells {
        let out = uci2toml(&uci_show(SAMPLE_UCI), shell, *path);
        let toml = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{shell:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in [
            "node = 7",
            "mode = \"stripe\"",
            "paths = 2",
            "reorder = true",
            "prefixes = [\"198.18.7.0/24\"]",
            "[[interface]]\nname = \"wlan0\"",
            "[[interface]]\nname = \"wlan1\"",
            "[probes]\nsmall_interval = \"200ms\"\nbig_interval = \"2s\"\ndead_after = 5",
            "routes = [\"198.18.0.0/15\", \"2001:2::/48\"]",
            "name = \"it's voip\"",
            "urgent = true",
            "[[access]]\ninterface = \"ap0\"",
        ] {
            assert!(toml.contains(line), "{shell:?}: no `{line}` in:\n{toml}");
        }
        assert!(
            !toml.contains("key_file"),
            "an empty option is unset:\n{toml}"
        );
        let (valid, said) = check(&toml, "sample.toml");
        assert!(
            valid,
            "{shell:?}: the daemon refuses the mapping's TOML: {said}\n{toml}"
        );
        assert!(said.contains("valid (node 7)"), "{said}");

        // The recipe's own defaults: refused until a node id is set (by
        // the daemon, naming the field), accepted once it is.
        let defaults =
            std::fs::read_to_string(repo().join("dist/openwrt/braid/files/braid.config")).unwrap();
        let out = uci2toml(&uci_show(&defaults), shell, *path);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (valid, said) = check(&String::from_utf8_lossy(&out.stdout), "defaults.toml");
        assert!(!valid && said.contains("node"), "{said}");
        let set = defaults.replace("option node ''", "option node '12'");
        let out = uci2toml(&uci_show(&set), shell, *path);
        let (valid, said) = check(&String::from_utf8_lossy(&out.stdout), "set.toml");
        assert!(valid && said.contains("valid (node 12)"), "{said}");

        // Mistakes are refused with the option's name.
        for (bad, says) in [
            ("braid.main.nodee='1'\n", "braid.main.nodee: unknown option"),
            (
                "braid.main.port='68x'\n",
                "braid.main.port: \"68x\" is not a whole number",
            ),
            (
                "braid.main.reorder='maybe'\n",
                "braid.main.reorder: \"maybe\" is not a boolean",
            ),
            (
                "braid.main.mode='single' 'stripe'\n",
                "braid.main.mode: one value expected",
            ),
            ("braid.x=bridge\n", "braid.x: unknown section type"),
            ("braid.main.log='unterminated\n", "unterminated quote"),
        ] {
            let out = uci2toml(&(uci_show(SAMPLE_UCI) + bad), shell, *path);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                !out.status.success() && err.contains(says),
                "{shell:?} {bad}: {err}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&busybox);
}

// ---------------------------------------------------------------------
// The Debian package

const NETNS: &str = "braid-pkg-test";

/// Why the package test cannot run here, if it cannot.
fn deb_test_missing() -> Option<String> {
    if !common::is_root() {
        return Some("not root (dpkg -i, network namespaces)".into());
    }
    for tool in [
        "dpkg-deb", "dpkg", "setpriv", "ip", "getent", "userdel", "groupdel",
    ] {
        if !have(tool) {
            return Some(format!("{tool} is not installed"));
        }
    }
    let status = Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", "braid"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if status.contains("installed") || status.contains("config-files") {
        return Some(format!(
            "a braid package is on this machine ({status}): not replacing it"
        ));
    }
    if Path::new("/usr/bin/braid").exists() || Path::new("/run/braid").exists() {
        return Some("/usr/bin/braid or /run/braid exists: not replacing it".into());
    }
    if run(Command::new("ip").args(["netns", "add", "braid-pkg-probe"]))
        .status
        .success()
    {
        let _ = run(Command::new("ip").args(["netns", "del", "braid-pkg-probe"]));
    } else {
        return Some("cannot create network namespaces".into());
    }
    None
}

/// A unit file's settings (the last of each, as systemd reads them).
fn unit_settings(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Capability numbers (linux/capability.h) of the names a unit uses.
fn capability_bit(name: &str) -> u32 {
    match name {
        "CAP_NET_BIND_SERVICE" => 10,
        "CAP_NET_ADMIN" => 12,
        "CAP_NET_RAW" => 13,
        "CAP_SYS_ADMIN" => 21,
        "CAP_PERFMON" => 38,
        "CAP_BPF" => 39,
        other => panic!("the test does not know {other}"),
    }
}

/// Everything the test made, undone also when it fails.
struct Installed {
    daemon: Option<Child>,
    made_user: bool,
    made_group: bool,
}

impl Drop for Installed {
    fn drop(&mut self) {
        if let Some(mut d) = self.daemon.take() {
            let _ = d.kill();
            let _ = d.wait();
        }
        let quiet = |cmd: &mut Command| {
            let _ = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status();
        };
        quiet(Command::new("ip").args(["netns", "del", NETNS]));
        let _ = std::fs::remove_dir_all("/run/braid");
        quiet(Command::new("dpkg").args(["--purge", "braid"]));
        if self.made_user && getent("passwd", "braid").is_some() {
            quiet(Command::new("userdel").arg("braid"));
        }
        // userdel takes the user's own group with it, where it can.
        if self.made_group && getent("group", "braid").is_some() {
            quiet(Command::new("groupdel").arg("braid"));
        }
    }
}

fn getent(db: &str, key: &str) -> Option<Vec<String>> {
    let out = run(Command::new("getent").args([db, key]));
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .split(':')
            .map(String::from)
            .collect()
    })
}

fn dpkg_install(deb: &Path) {
    ok(Command::new("dpkg")
        .args(["-i", "--force-confdef", "--force-confold"])
        .arg(deb)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null()));
}

fn the_deb_installs_and_its_unit_runs_the_daemon_as_braid_with_only_its_capabilities() {
    let work = temp_dir("deb");
    // 1. The package, from the binary this test run built.
    let built = ok(Command::new(repo().join("scripts/deb.sh"))
        .args(["--binary", braid(), "--out"])
        .arg(&work));
    let deb = PathBuf::from(
        built
            .lines()
            .last()
            .expect("deb.sh prints the package")
            .trim(),
    );
    let name = deb.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("braid_{}_", env!("CARGO_PKG_VERSION")))
            && name.ends_with(".deb"),
        "{name}"
    );
    let contents = ok(Command::new("dpkg-deb").arg("-c").arg(&deb));
    for path in [
        "./usr/bin/braid",
        "./lib/systemd/system/braid.service",
        "./etc/braid/braid.toml",
        "./usr/share/man/man1/braid.1.gz",
        "./usr/share/man/man1/braid-daemon.1.gz",
        "./usr/share/bash-completion/completions/braid",
        "./usr/share/zsh/vendor-completions/_braid",
        "./usr/share/fish/vendor_completions.d/braid.fish",
        "./usr/share/doc/braid/copyright",
        "./usr/share/doc/braid/changelog.gz",
        "./usr/share/doc/braid/operations.md.gz",
    ] {
        assert!(
            contents.lines().any(|l| l.ends_with(path)),
            "{path} not in the package:\n{contents}"
        );
    }
    assert!(
        contents
            .lines()
            .all(|l| l.starts_with("drwxr-xr-x root/root")
                || l.starts_with("-rw-r--r-- root/root")
                || l.starts_with("-rwxr-xr-x root/root")),
        "modes and owners:\n{contents}"
    );
    let conffiles = ok(Command::new("dpkg-deb")
        .args(["-I"])
        .arg(&deb)
        .arg("conffiles"));
    assert_eq!(conffiles.trim(), "/etc/braid/braid.toml");
    let depends = ok(Command::new("dpkg-deb")
        .args(["-f"])
        .arg(&deb)
        .arg("Depends"));
    assert!(
        depends.contains("libc6 (>= ") && depends.contains("iproute2"),
        "{depends}"
    );

    // 2. Installed for real: the maintainer scripts make the user and
    // the group; the unit is installed but not enabled.
    let mut guard = Installed {
        daemon: None,
        made_user: getent("passwd", "braid").is_none(),
        made_group: getent("group", "braid").is_none(),
    };
    dpkg_install(&deb);
    let status = ok(Command::new("dpkg-query").args(["-W", "-f=${Status}", "braid"]));
    assert_eq!(status, "install ok installed");
    let user = getent("passwd", "braid").expect("postinst made the user braid");
    let group = getent("group", "braid").expect("postinst made the group braid");
    let (uid, gid): (u32, u32) = (user[2].parse().unwrap(), group[2].parse().unwrap());
    assert!(uid < 1000 && gid < 1000, "system ids: {user:?} {group:?}");
    assert_eq!(user[3], group[2], "braid's primary group is braid");
    assert!(
        !Path::new("/etc/systemd/system/multi-user.target.wants/braid.service").exists(),
        "the unit is enabled by the operator, not by the package"
    );
    let version = ok(Command::new("/usr/bin/braid").arg("--version"));
    assert_eq!(
        version.trim(),
        format!("braid {}", env!("CARGO_PKG_VERSION"))
    );

    let unit_text = std::fs::read_to_string("/lib/systemd/system/braid.service").unwrap();
    if have("systemd-analyze") {
        // Checks the unit's syntax, its commands (they exist now) and its
        // man page (installed now too).
        let out =
            run(Command::new("systemd-analyze")
                .args(["verify", "/lib/systemd/system/braid.service"]));
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && !said.contains("braid"),
            "systemd-analyze verify: {said}"
        );
    } else {
        eprintln!("note: systemd-analyze is not installed: the unit's syntax is not verified");
    }
    let unit = unit_settings(&unit_text);
    let exec = unit["ExecStart"].clone();
    let pre = unit["ExecStartPre"].clone();
    assert_eq!(exec, "/usr/bin/braid daemon --config /etc/braid/braid.toml");
    assert_eq!(pre, format!("{exec} --check"));
    assert_eq!(unit["User"], "braid");
    assert_eq!(unit["Group"], "braid");
    assert_eq!(unit["NoNewPrivileges"], "yes");
    assert_eq!(unit["RuntimeDirectory"], "braid");
    assert_eq!(unit["ExecReload"], "/bin/kill -HUP $MAINPID");
    assert_eq!(unit["Restart"], "on-failure");
    for (key, value) in [
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
    ] {
        assert_eq!(unit[key], value, "{key}");
    }
    let caps: Vec<&str> = unit["AmbientCapabilities"].split_whitespace().collect();
    assert_eq!(
        caps,
        unit["CapabilityBoundingSet"]
            .split_whitespace()
            .collect::<Vec<_>>(),
        "ambient and bounding sets"
    );
    let mask: u64 = caps.iter().map(|c| 1u64 << capability_bit(c)).sum();
    let setpriv_caps = caps
        .iter()
        .map(|c| format!("+{}", c.trim_start_matches("CAP_").to_lowercase()))
        .collect::<Vec<_>>()
        .join(",");
    // What systemd gives the unit's commands: its user with its groups,
    // these capabilities (ambient, so the `ip` and `ethtool` the daemon
    // runs have them too), no new privileges, a clean environment.
    let as_unit = |command: &str, netns: bool| {
        let mut argv: Vec<String> = Vec::new();
        if netns {
            argv.extend(["ip", "netns", "exec", NETNS].map(String::from));
        }
        argv.extend(
            [
                "setpriv",
                "--reuid=braid",
                "--regid=braid",
                "--init-groups",
                &format!("--inh-caps=-all,{setpriv_caps}"),
                &format!("--ambient-caps=-all,{setpriv_caps}"),
                &format!("--bounding-set=-all,{setpriv_caps}"),
                "--no-new-privs",
                "--",
            ]
            .map(String::from),
        );
        argv.extend(command.split_whitespace().map(String::from));
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .env_clear()
            .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin")
            .env("LANG", "C.UTF-8")
            .env("USER", "braid")
            .env("LOGNAME", "braid")
            .env("HOME", &user[5])
            .env("SHELL", &user[6])
            .stdin(Stdio::null());
        cmd
    };

    // 3. The shipped config is refused until it has a node id: the unit's
    // ExecStartPre says why.
    let out = run(&mut as_unit(&pre, false));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains("node"),
        "default config: {said}"
    );

    // 4. The operator's edit: a node id and an interface, in the shipped
    // file (so its control_group = "braid" is what runs). The kernel data
    // path (encoder included) and an access interface make the daemon use
    // every capability the unit gives it.
    let kernel_path = kernel_data_path_possible();
    if let Some(why) = &kernel_path {
        eprintln!("note: {why}: the daemon runs the user-space data path, and CAP_BPF and CAP_PERFMON go untested");
    }
    let shipped = std::fs::read_to_string("/etc/braid/braid.toml").unwrap();
    assert!(
        shipped.contains("\ncontrol_group = \"braid\"\n"),
        "{shipped}"
    );
    let datapath = if kernel_path.is_none() {
        "datapath = \"kernel\"\nlate_binding = 0\n"
    } else {
        "datapath = \"user\"\n"
    };
    let edited = shipped
        .replacen("#node = 1\n", &format!("node = 1\nlog = \"info\"\n{datapath}"), 1)
        .replacen("#[[interface]]\n#name = \"wlan0\"\n", "[[interface]]\nname = \"pkt0\"\n", 1)
        + "\n[tun]\nname = \"pkt-tun\"\naddress = \"198.18.252.1/24\"\nroutes = [\"198.18.0.0/15\"]\n\n\
           [[access]]\ninterface = \"pkt1\"\naddress = \"198.18.251.2/24\"\ngateway = \"198.18.251.1\"\n";
    assert_ne!(edited, shipped);
    std::fs::write("/etc/braid/braid.toml", &edited).unwrap();
    let checked = ok(&mut as_unit(&pre, false));
    assert!(checked.contains("valid (node 1)"), "{checked}");

    // 5. A namespace with a veth pair: pkt0 runs braid, pkt1 is an access
    // interface.
    let _ = run(Command::new("ip").args(["netns", "del", NETNS]));
    ok(Command::new("ip").args(["netns", "add", NETNS]));
    for args in [
        "link set lo up",
        "link add pkt0 type veth peer name pkt1",
        "addr add 198.18.253.1/30 dev pkt0",
        "link set pkt0 up",
        "link set pkt1 up",
    ] {
        ok(Command::new("ip")
            .args(["-n", NETNS])
            .args(args.split_whitespace()));
    }
    // RuntimeDirectory=braid: what systemd makes before the first command.
    std::fs::create_dir("/run/braid").unwrap();
    ok(Command::new("chown").args(["braid:braid", "/run/braid"]));

    // 6. ExecStart, as the unit runs it.
    let log_path = work.join("daemon.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let child = as_unit(&exec, true)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("the daemon starts");
    let pid = child.id();
    guard.daemon = Some(child);
    let log_text = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let socket = Path::new("/run/braid/braid.sock");
    let started = Instant::now();
    while !socket.exists() {
        if let Some(status) = guard.daemon.as_mut().unwrap().try_wait().unwrap() {
            panic!(
                "the daemon exited ({status}) before its socket appeared:\n{}",
                log_text()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no control socket after 60 s:\n{}",
            log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("control socket after {:?}", started.elapsed());

    // The daemon is braid with exactly the unit's capabilities.
    let proc_status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        proc_status
            .lines()
            .find(|l| l.starts_with(name))
            .map(|l| l[name.len()..].trim().to_string())
            .unwrap_or_default()
    };
    assert!(field("Name:").starts_with("braid"), "{proc_status}");
    assert_eq!(
        field("Uid:").split_whitespace().collect::<Vec<_>>(),
        vec![uid.to_string(); 4]
    );
    assert_eq!(
        field("Gid:").split_whitespace().collect::<Vec<_>>(),
        vec![gid.to_string(); 4]
    );
    for set in ["CapEff:", "CapPrm:", "CapAmb:", "CapBnd:"] {
        assert_eq!(
            u64::from_str_radix(&field(set), 16).unwrap(),
            mask,
            "{set} of the daemon (unit: {caps:?})"
        );
    }
    assert_eq!(field("NoNewPrivs:"), "1");
    let meta = std::fs::metadata(socket).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(meta.mode() & 0o777, 0o660, "the control socket's mode");
    assert_eq!(meta.gid(), gid, "the control socket's group");

    // 7. `braid ctl` as a member of the control group (not root, not
    // braid: nobody with the group added), and refused without it.
    let nobody = getent("passwd", "nobody").map_or(65534, |p| p[2].parse().unwrap());
    let ctl = |groups: &str, what: &str| {
        run(Command::new("setpriv")
            .args([
                format!("--reuid={nobody}"),
                format!("--regid={nobody}"),
                groups.to_string(),
            ])
            .args(["/usr/bin/braid", "ctl", "--json", what]))
    };
    let out = ctl(&format!("--groups={gid}"), "status");
    assert!(
        out.status.success(),
        "ctl status as a member of braid: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        log_text()
    );
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["interfaces"][0], "pkt0", "{status}");
    let out = ctl("--clear-groups", "status");
    assert!(!out.status.success(), "a user outside the group is refused");
    let stats: serde_json::Value =
        serde_json::from_slice(&ctl(&format!("--groups={gid}"), "stats").stdout).unwrap();
    if kernel_path.is_none() {
        assert!(
            stats["stats"]["kernel"].is_object(),
            "the kernel data path runs: {stats}"
        );
    }
    let log_now = log_text();
    assert!(
        log_now.contains("access interface ready"),
        "the access interface (CAP_NET_RAW) is up:\n{log_now}"
    );

    // 8. ExecReload (SIGHUP) keeps it running; SIGTERM stops it: exit 0,
    // socket gone.
    ok(Command::new("kill").args(["-HUP", &pid.to_string()]));
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        guard.daemon.as_mut().unwrap().try_wait().unwrap().is_none(),
        "the daemon survives a reload:\n{}",
        log_text()
    );
    ok(Command::new("kill").args(["-TERM", &pid.to_string()]));
    let stopping = Instant::now();
    let status = loop {
        if let Some(s) = guard.daemon.as_mut().unwrap().try_wait().unwrap() {
            break s;
        }
        assert!(
            stopping.elapsed() < Duration::from_secs(20),
            "the daemon did not stop within 20 s of SIGTERM:\n{}",
            log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    guard.daemon = None;
    assert!(
        status.success(),
        "exit status after SIGTERM: {status}\n{}",
        log_text()
    );
    assert!(!socket.exists(), "the control socket is removed");

    // 9. Removal keeps the operator's config; reinstalling keeps it too;
    // purge takes everything the package brought.
    ok(Command::new("dpkg").args(["-r", "braid"]));
    assert!(!Path::new("/usr/bin/braid").exists());
    assert_eq!(
        std::fs::read_to_string("/etc/braid/braid.toml").unwrap(),
        edited
    );
    dpkg_install(&deb);
    assert_eq!(
        std::fs::read_to_string("/etc/braid/braid.toml").unwrap(),
        edited
    );
    assert!(
        std::fs::symlink_metadata("/etc/systemd/system/braid.service").is_err(),
        "reinstalling lifts the mask removal set"
    );
    ok(Command::new("dpkg").args(["--purge", "braid"]));
    let status = run(Command::new("dpkg-query").args(["-W", "-f=${Status}", "braid"]));
    assert!(!String::from_utf8_lossy(&status.stdout).contains("installed"));
    for gone in [
        "/etc/braid/braid.toml",
        "/lib/systemd/system/braid.service",
        "/usr/share/man/man1/braid.1.gz",
        "/etc/systemd/system/braid.service",
    ] {
        assert!(
            std::fs::symlink_metadata(gone).is_err(),
            "{gone} left after purge"
        );
    }
    // The user and the group stay after a purge (files may belong to
    // them); the guard removes the ones this test made.
    assert!(getent("passwd", "braid").is_some() && getent("group", "braid").is_some());
    let (made_user, made_group) = (guard.made_user, guard.made_group);
    drop(guard);
    assert!(!made_user || getent("passwd", "braid").is_none());
    assert!(!made_group || getent("group", "braid").is_none());
    let _ = std::fs::remove_dir_all(&work);
}

/// Why the daemon cannot run the kernel data path here, if it cannot.
fn kernel_data_path_possible() -> Option<String> {
    if let Some(why) = braid_lab::link::loss_program_missing() {
        return Some(format!("braid was built without its eBPF programs ({why})"));
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release
        .trim()
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if (major, minor) < (6, 6) {
        return Some(format!(
            "Linux {} has no TCX (6.6 or later)",
            release.trim()
        ));
    }
    None
}

fn main() -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let deb_missing = deb_test_missing();
    let uci_missing = (!have("awk")).then(|| "awk is not installed".to_string());
    type Test = (&'static str, Option<String>, fn());
    let tests: [Test; 3] = [
        (
            "generate_writes_a_man_page_per_command_and_completions_for_each_shell",
            None,
            generate_writes_a_man_page_per_command_and_completions_for_each_shell,
        ),
        (
            "openwrt_uci_becomes_a_config_the_daemon_accepts",
            uci_missing,
            openwrt_uci_becomes_a_config_the_daemon_accepts,
        ),
        (
            "the_deb_installs_and_its_unit_runs_the_daemon_as_braid_with_only_its_capabilities",
            deb_missing,
            the_deb_installs_and_its_unit_runs_the_daemon_as_braid_with_only_its_capabilities,
        ),
    ];
    let trials = tests
        .into_iter()
        .map(|(name, missing, body)| {
            common::trial(name, missing, None, move || {
                body();
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit_code()
}
