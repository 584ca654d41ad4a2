//! braid daemons as the lab's routing: each router's config is the
//! daemon's own config type ([`braid_daemon::config::ConfigFile`]),
//! filled in and serialised, so the lab writes nothing the daemon would
//! not read the same way.

use std::path::Path;

use anyhow::bail;
use braid_daemon::config::{value, ConfigFile, InterfaceFile, ProbesFile, TunFile};

use crate::plan::Step;
use crate::scenario::Lab;

/// The config of router `i`'s daemon for `mode`.
pub fn config(lab: &Lab, i: usize, mode: &str) -> anyhow::Result<ConfigFile> {
    let interfaces = lab.interfaces_of(i);
    if interfaces.is_empty() {
        bail!("router {} has no link", lab.routers[i].name);
    }
    let prefixes = if lab.routers[i].host {
        let (net, len) = Lab::host_net(i);
        vec![value(format!("{net}/{len}"))]
    } else {
        Vec::new()
    };
    Ok(ConfigFile {
        prefixes,
        mode: Some(value(mode.to_string())),
        paths: Some(value(lab.paths)),
        log: Some(value(lab.log.as_str().to_string())),
        control_socket: Some(lab.socket(i).display().to_string()),
        metrics: Some(value("127.0.0.1:9468".to_string())),
        interfaces: interfaces
            .into_iter()
            .map(|name| InterfaceFile { name: value(name) })
            .collect(),
        tun: TunFile {
            routes: vec![value("198.18.0.0/16".to_string())],
            ..TunFile::default()
        },
        probes: ProbesFile {
            small_interval: Some(value(format!("{}ms", lab.probe_interval.as_millis()))),
            dead_after: lab.dead_after.map(value),
            ..ProbesFile::default()
        },
        ..ConfigFile::new(i as u16 + 1)
    })
}

/// Router `i`'s config file and daemon.
pub fn start(lab: &Lab, i: usize, mode: &str, exe: &Path) -> anyhow::Result<Vec<Step>> {
    let name = format!("{}.toml", lab.routers[i].name);
    let path = lab.dir().join(&name);
    Ok(vec![
        Step::File {
            name,
            contents: config(lab, i, mode)?.to_toml()?,
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
