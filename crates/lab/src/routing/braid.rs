//! braid daemons as the lab's routing: each router's config is the
//! daemon's own config type ([`braid_daemon::config::ConfigFile`]),
//! filled in and serialised, so the lab writes nothing the daemon would
//! not read the same way.

use std::path::Path;

use anyhow::bail;
use braid_daemon::config::{
    value, AccessFile, AuthFile, ConfigFile, InterfaceFile, KeyFile, ProbesFile, TunFile,
    UplinkFile,
};

use crate::scenario::{BraidDatapath, Lab};
use crate::step::Step;

/// The config of router `i`'s daemon for `mode`, its data path as
/// `datapath` says.
pub fn config(
    lab: &Lab,
    i: usize,
    mode: &str,
    datapath: &BraidDatapath,
) -> anyhow::Result<ConfigFile> {
    let interfaces = lab.interfaces_of(i);
    if interfaces.is_empty() {
        bail!("router {} has no link", lab.routers[i].name);
    }
    let mut prefixes = Vec::new();
    let mut routes = vec![value("198.18.0.0/16".to_string())];
    if lab.routers[i].host {
        let (net, len) = Lab::host_net(i);
        prefixes.push(value(format!("{net}/{len}")));
        if lab.ipv6() {
            prefixes.push(value(format!("{}/64", Lab::host_net6(i))));
        }
    }
    if lab.ipv6() {
        routes.push(value(Lab::IPV6_RANGE.to_string()));
    }
    // The internet: a gateway checks its uplink and announces the way out
    // while it works (its own default route is its ISP); every other
    // router sends what is not the mesh's into braid.
    let uplink = lab.routers[i].uplink.then(|| UplinkFile {
        prefixes: vec![value("0.0.0.0/0".to_string())],
        targets: vec![value(Lab::INTERNET_HOST.to_string())],
        interface: Some(value(Lab::UPLINK_DEV.to_string())),
        ..UplinkFile::default()
    });
    if lab.has_internet() && !lab.routers[i].uplink {
        routes.push(value("0.0.0.0/0".to_string()));
    }
    Ok(ConfigFile {
        prefixes,
        mode: Some(value(mode.to_string())),
        reorder: datapath.reorder,
        reorder_max_wait: datapath
            .reorder_max_wait
            .map(|d| value(format!("{}ms", d.as_millis()))),
        datapath: Some(value(datapath.of(i).to_string())),
        late_binding: datapath.late_binding.map(value),
        equalise_delay: datapath.equalise_delay,
        pace: datapath.pace,
        urgent_copies: datapath.urgent_copies.map(value),
        copy_window: datapath
            .copy_window
            .map(|d| value(format!("{}ms", d.as_millis()))),
        report_interval: datapath
            .report_interval
            .map(|d| value(format!("{}ms", d.as_millis()))),
        kernel_delivery: datapath
            .kernel_delivery
            .filter(|_| datapath.of(i) == "kernel")
            .map(|d| value(d.to_string())),
        paths: Some(value(lab.paths)),
        area: (lab.routers[i].area != 0).then(|| value(lab.routers[i].area)),
        log: Some(value(lab.log.as_str().to_string())),
        control_socket: Some(lab.socket(i).display().to_string()),
        metrics: Some(value("127.0.0.1:9468".to_string())),
        interfaces: interfaces
            .into_iter()
            .map(|name| InterfaceFile { name: value(name) })
            .collect(),
        tun: TunFile {
            routes,
            mtu: Some(value(tun_mtu(lab))),
            mss_clamp: datapath.mss_clamp,
            ..TunFile::default()
        },
        probes: ProbesFile {
            small_interval: Some(value(format!(
                "{}ms",
                datapath
                    .probe_interval
                    .unwrap_or(lab.probe_interval)
                    .as_millis()
            ))),
            dead_after: datapath.dead_after.or(lab.dead_after).map(value),
            ..ProbesFile::default()
        },
        access: lab
            .access_segments(i)
            .into_iter()
            .map(|s| AccessFile {
                interface: value(Lab::access_dev(s)),
                address: value(format!(
                    "{}/{}",
                    lab.access_addr(s, i),
                    Lab::segment_net(s).1
                )),
                gateway: value(Lab::segment_gateway(s).to_string()),
                address6: lab
                    .ipv6()
                    .then(|| value(format!("{}/64", lab.access_addr6(s, i)))),
                mac: None,
                probe_interval: None,
                probe_window: None,
            })
            .collect(),
        client_margin: datapath.client_margin.map(value),
        uplink,
        auth: lab.auth.then(|| AuthFile {
            keys: vec![lab_key(1)],
            key_file: None,
        }),
        lan_interfaces: if datapath.lan_encode && lab.routers[i].host && datapath.of(i) == "kernel"
        {
            vec![value("host0".to_string())]
        } else {
            Vec::new()
        },
        labels: lab
            .routers
            .iter()
            .enumerate()
            .map(|(k, r)| ((k + 1).to_string(), value(r.name.clone())))
            .collect(),
        ..ConfigFile::new(i as u16 + 1)
    })
}

/// The lab's key `id`: a fixed secret made from the id (a lab's routers
/// must share it; never use these outside the lab).
pub fn lab_key(id: u8) -> KeyFile {
    let secret: String = (0..32u8)
        .map(|j| {
            format!(
                "{:02x}",
                id.wrapping_mul(37).wrapping_add(j.wrapping_mul(11))
            )
        })
        .collect();
    KeyFile {
        id: value(id),
        secret: value(secret),
    }
}

/// Router `i`'s daemon takes the lab's keys `ids` (the first signs): its
/// config file is rewritten and the daemon told to reload (SIGHUP).
/// Returns false when router `i` runs no braid daemon (another variant).
pub fn rekey(lab: &Lab, i: usize, ids: &[u8]) -> anyhow::Result<bool> {
    let name = &lab.routers[i].name;
    let path = lab.dir().join(format!("{name}.toml"));
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(false);
    };
    let mut config: ConfigFile = toml::from_str(&text)?;
    config.auth = Some(AuthFile {
        keys: ids.iter().map(|&id| lab_key(id)).collect(),
        key_file: None,
    });
    std::fs::write(&path, config.to_toml()?)?;
    let pid = std::fs::read_to_string(lab.dir().join(format!("{name}.pid")))?;
    let pid: i32 = pid.trim().parse()?;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGHUP,
    )?;
    Ok(true)
}

/// Router `i`'s braid daemon is killed (SIGKILL: no clean shutdown, no
/// flush of its advertisement) and started again at once with the same
/// config, as a crashed router that a supervisor restarts. Returns false
/// when router `i` runs no braid daemon (another variant).
pub fn crash_and_restart(lab: &Lab, i: usize) -> anyhow::Result<bool> {
    use std::process::{Command, Stdio};
    let name = &lab.routers[i].name;
    let config = lab.dir().join(format!("{name}.toml"));
    let pid_file = lab.dir().join(format!("{name}.pid"));
    if !config.exists() {
        return Ok(false);
    }
    let pid: i32 = std::fs::read_to_string(&pid_file)?.trim().parse()?;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )?;
    // Gone (or a zombie: its devices and programs are released) before
    // the new one takes the TUN device's name.
    let gone = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !gone(pid) {
        if std::time::Instant::now() > deadline {
            bail!("{name}'s daemon (pid {pid}) did not die");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(lab.dir().join(format!("{name}.log")))?;
    let child = Command::new("ip")
        .args(["netns", "exec", &lab.ns(i)])
        .arg(std::env::current_exe()?)
        .args(["daemon", "--config"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()?;
    // Teardown finds it by its pid file, as it finds the first one.
    std::fs::write(&pid_file, child.id().to_string())?;
    Ok(true)
}

/// The TUN device's MTU: what a link's 1,500 bytes leave after braid's
/// underlay (IP, UDP: 28 bytes) and data header (20 bytes and 2 per
/// transit node, for a route through every router of the lab, at most
/// 15), so that a full-size packet crosses the mesh unfragmented.
pub fn tun_mtu(lab: &Lab) -> u16 {
    let transit = lab.routers.len().saturating_sub(2).min(15) as u16;
    1500 - 28 - 20 - 2 * transit
}

/// Router `i`'s config file and daemon.
pub fn start(
    lab: &Lab,
    i: usize,
    mode: &str,
    datapath: &BraidDatapath,
    exe: &Path,
) -> anyhow::Result<Vec<Step>> {
    let name = format!("{}.toml", lab.routers[i].name);
    let path = lab.dir().join(&name);
    Ok(vec![
        Step::File {
            name,
            contents: config(lab, i, mode, datapath)?.to_toml()?,
        },
        Step::Daemon {
            router: i,
            program: exe.to_path_buf(),
            args: vec![
                "daemon".into(),
                "--config".into(),
                path.display().to_string(),
            ],
        },
    ])
}
