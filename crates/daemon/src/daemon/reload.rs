//! What a reload (SIGHUP, `braid ctl reload`) does with a new config
//! beside the running one: which changed fields wait for the next start,
//! and the config the daemon runs with afterwards (the new one for what
//! changes at once, the running one for the rest).

use braid_proto::auth::AuthConfig;
use braid_proto::node::NodeConfig;

use crate::config::Config;

/// The settings a reload applies while the daemon runs (as the file
/// names them; a table's name stands for each of its keys): modes and
/// policies, cost factors, keys, the origin key and roster, the neighbor
/// timeout, names, and the log level (when [`crate::logging`] set the
/// log up). Every other setting changed waits for the next start.
const LIVE: [&str; 8] = [
    "mode",
    "policy",
    "cost",
    "auth",
    "origin",
    "probes.dead_after",
    "labels",
    "log",
];

/// The settings `new` changes beside `old`, as the files name them: a
/// top-level key (`reorder`), a table's key (`tun.mtu`, `probes.dead_after`),
/// an array of tables by its name (`interface`, `policy`), sorted.
pub(super) fn changed(old: &toml::Table, new: &toml::Table) -> Vec<String> {
    let mut names = Vec::new();
    let keys = old
        .keys()
        .chain(new.keys().filter(|k| !old.contains_key(*k)));
    for key in keys {
        let (a, b) = (old.get(key), new.get(key));
        if a == b {
            continue;
        }
        let empty = toml::Table::new();
        let (x, y) = (a.map(toml::Value::as_table), b.map(toml::Value::as_table));
        let tables = match (x, y) {
            (Some(Some(x)), Some(Some(y))) => Some((x, y)),
            (Some(Some(x)), None) => Some((x, &empty)),
            (None, Some(Some(y))) => Some((&empty, y)),
            _ => None,
        };
        match tables {
            Some((x, y)) => {
                let inner = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k)));
                for k in inner {
                    if x.get(k) != y.get(k) {
                        names.push(format!("{key}.{k}"));
                    }
                }
            }
            None => names.push(key.clone()),
        }
    }
    names
}

/// Whether a change of setting `name` (as [`changed`] names it) takes
/// effect at once; `log_live`: the log level can be changed here.
fn is_live(name: &str, log_live: bool) -> bool {
    if name == "log" {
        return log_live;
    }
    LIVE.iter().any(|l| {
        name == *l
            || name
                .strip_prefix(l)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The settings `new` changes that take effect only at the next start,
/// named as the file names them (what `braid ctl reload` and the log
/// list).
pub(super) fn restart_needed(old: &Config, new: &Config, log_live: bool) -> Vec<String> {
    changed(&old.source, &new.source)
        .into_iter()
        .filter(|name| !is_live(name, log_live))
        .collect()
}

/// The config the daemon runs with after taking `new`: `new`'s modes and
/// policies, cost factors, keys, origin key and roster, `dead_after` (the neighbor
/// timeout now `timeout`), names, and log level (when `log_live`);
/// `old`'s for everything that needs a restart.
pub(super) fn running_after(
    old: Config,
    new: Config,
    timeout: Option<std::time::Duration>,
    auth: AuthConfig,
    origins: braid_proto::origin::OriginConfig,
    log_live: bool,
) -> Config {
    let mut kept = new;
    if !log_live {
        kept.log = old.log;
    }
    kept.node = old.node;
    kept.interfaces = old.interfaces;
    kept.port = old.port;
    kept.group = old.group;
    kept.underlay = old.underlay;
    kept.tun = old.tun;
    kept.control_socket = old.control_socket;
    kept.control_group = old.control_group;
    kept.send_buffer = old.send_buffer;
    kept.access = old.access;
    kept.lan_interfaces = old.lan_interfaces;
    kept.metrics = old.metrics;
    kept.log_format = old.log_format;
    kept.datapath = old.datapath;
    kept.kernel_delivery = old.kernel_delivery;
    kept.uplink = old.uplink;
    kept.redistribute = old.redistribute;
    kept.install = old.install;
    // The file as the daemon started with it: what a later reload
    // compares with, so a setting still waiting for a restart is named
    // again (the live ones are never named).
    kept.source = old.source;
    // Cost factors by the running interfaces' positions.
    let cost_overrides = crate::config::cost_overrides(&kept.costs, &kept.interfaces);
    kept.node_config = NodeConfig {
        policy: kept.node_config.policy,
        classifier: kept.node_config.classifier,
        neighbor_timeout: timeout,
        cost_overrides,
        ..old.node_config
    };
    kept.node_config.control.auth = auth;
    kept.node_config.control.origins = origins;
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNNING: &str = "node = 1\nmode = \"single\"\n[[interface]]\nname = \"a\"\n";

    fn config(text: &str) -> Config {
        Config::parse("test.toml", text).unwrap()
    }

    #[test]
    fn modes_change_at_once_and_what_needs_a_restart_is_named_and_kept() {
        let old = config(RUNNING);
        let same = restart_needed(&old, &config(RUNNING), false);
        assert!(same.is_empty(), "{same:?}");
        let modes = config(&RUNNING.replace("single", "mirror:2"));
        assert!(restart_needed(&old, &modes, false).is_empty());
        let new = config(
            "node = 2\nmode = \"mirror:2\"\npaths = 2\n[[interface]]\nname = \"b\"\n\
             [probes]\ndead_after = 20\n",
        );
        assert_eq!(
            restart_needed(&old, &new, false),
            ["interface", "node", "paths"]
        );
        let timeout = Some(old.node_config.control.probes.small_interval * new.dead_after);
        let auth = new.node_config.control.auth.clone();
        let policy = new.node_config.policy.clone();
        let kept = running_after(old.clone(), new, timeout, auth, Default::default(), false);
        assert_eq!(
            (kept.node, kept.interfaces.clone()),
            (old.node, old.interfaces)
        );
        assert_eq!(kept.dead_after, 20);
        assert_eq!(kept.node_config.policy, policy);
        assert_eq!(kept.node_config.max_paths, old.node_config.max_paths);
        assert_eq!(kept.node_config.neighbor_timeout, timeout);
    }

    /// Issue 32: `log` and `metrics` changes were ignored without a word,
    /// and a change of `reorder` alone was reported as eleven settings.
    #[test]
    fn every_setting_changed_is_applied_or_named_alone() {
        let old = config(RUNNING);
        let with = |extra: &str| config(&format!("{RUNNING}{extra}"));
        let cases: [(&str, &[&str]); 8] = [
            ("reorder = true\n", &["reorder"]),
            (
                "[redistribute]\nprotocols = [\"ospf\"]\n",
                &["redistribute.protocols"],
            ),
            ("[install]\nmetric = 30\n", &["install.metric"]),
            ("metrics = \"127.0.0.1:9500\"\n", &["metrics"]),
            ("log_format = \"json\"\n", &["log_format"]),
            ("[tun]\nmtu = 1300\n", &["tun.mtu"]),
            (
                "[probes]\nsmall_interval = \"50ms\"\ndead_after = 9\n",
                &["probes.small_interval"],
            ),
            ("[labels]\n1 = \"hill\"\n", &[]),
        ];
        for (extra, named) in cases {
            // Top-level keys must precede the tables: put them first.
            let new = if extra.starts_with('[') {
                with(extra)
            } else {
                config(&format!("{extra}{RUNNING}"))
            };
            assert_eq!(restart_needed(&old, &new, true), named, "{extra}");
        }
        // The log level: at once where braid's log can change it, else
        // named.
        let louder = config(&format!("log = \"debug\"\n{RUNNING}"));
        assert!(restart_needed(&old, &louder, true).is_empty());
        assert_eq!(restart_needed(&old, &louder, false), ["log"]);
        let kept = running_after(
            old.clone(),
            louder,
            None,
            Default::default(),
            Default::default(),
            false,
        );
        assert_eq!(kept.log, old.log, "the level kept when it cannot change");
        // What needs a restart is kept as running.
        let moved = config(&format!("metrics = \"127.0.0.1:9500\"\n{RUNNING}"));
        let kept = running_after(
            old.clone(),
            moved,
            None,
            Default::default(),
            Default::default(),
            true,
        );
        assert_eq!(kept.metrics, old.metrics);
        // Asked again with the same file, it is still waiting.
        let again = config(&format!("metrics = \"127.0.0.1:9500\"\n{RUNNING}"));
        assert_eq!(restart_needed(&kept, &again, true), ["metrics"]);
    }

    #[test]
    fn cost_factors_change_at_once_by_the_running_interfaces() {
        let old = config(RUNNING);
        // The new file adds an interface before "a" (that waits for a
        // restart) and raises "a": the factor goes to the running "a".
        let new = config(
            "node = 1
mode = \"single\"
[[interface]]
name = \"z\"
[[interface]]
             name = \"a\"
[[cost]]
interface = \"a\"
factor = 4
",
        );
        assert_eq!(restart_needed(&old, &new, true), ["interface"]);
        let kept = running_after(old, new, None, Default::default(), Default::default(), true);
        let o = &kept.node_config.cost_overrides;
        let running_a = braid_proto::node::Interface(0);
        assert_eq!(o.interfaces.keys().collect::<Vec<_>>(), [&running_a]);
        assert_eq!(o.interfaces[&running_a].get(), 4.0);
    }
}
