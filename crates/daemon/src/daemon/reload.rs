//! What a reload (SIGHUP, `braid ctl reload`) does with a new config
//! beside the running one: which changed fields wait for the next start,
//! and the config the daemon runs with afterwards (the new one for what
//! changes at once, the running one for the rest).

use braid_proto::auth::AuthConfig;
use braid_proto::node::NodeConfig;

use crate::config::Config;

/// The fields `new` changes that take effect only at the next start, by
/// the names the log and `braid ctl reload` give them.
pub(super) fn restart_needed(old: &Config, new: &Config) -> Vec<&'static str> {
    let mut needs_restart = Vec::new();
    if new.node != old.node {
        needs_restart.push("node");
    }
    if new.interfaces != old.interfaces {
        needs_restart.push("interface");
    }
    if new.port != old.port || new.group != old.group {
        needs_restart.push("port/group");
    }
    if new.tun != old.tun {
        needs_restart.push("tun");
    }
    if new.control_socket != old.control_socket || new.control_group != old.control_group {
        needs_restart.push("control_socket/control_group");
    }
    if new.send_buffer != old.send_buffer {
        needs_restart.push("send_buffer");
    }
    if new.datapath != old.datapath {
        needs_restart.push("datapath");
    }
    if new.kernel_delivery != old.kernel_delivery {
        needs_restart.push("kernel_delivery");
    }
    if new.access != old.access {
        needs_restart.push("access");
    }
    if new.lan_interfaces != old.lan_interfaces {
        needs_restart.push("lan_interfaces");
    }
    // The node's other settings (prefixes, paths, probes, re-order,
    // windows, late binding, delay equalisation) are fixed while it runs.
    let live = |c: &NodeConfig| {
        let mut c = NodeConfig {
            policy: old.node_config.policy.clone(),
            classifier: old.node_config.classifier.clone(),
            neighbor_timeout: old.node_config.neighbor_timeout,
            ..c.clone()
        };
        c.control.auth = old.node_config.control.auth.clone();
        c.control.origins = old.node_config.control.origins.clone();
        c
    };
    if live(&new.node_config) != old.node_config {
        needs_restart
            .push("prefixes/paths/probes/reorder/windows/late_binding/equalise_delay/pace/report_interval/client_margin/client_hold");
    }
    needs_restart
}

/// The config the daemon runs with after taking `new`: `new`'s modes and
/// policies, keys, origin key and roster, `dead_after` (the neighbor timeout now `timeout`) and
/// log level; `old`'s for everything that needs a restart.
pub(super) fn running_after(
    old: Config,
    new: Config,
    timeout: Option<std::time::Duration>,
    auth: AuthConfig,
    origins: braid_proto::origin::OriginConfig,
) -> Config {
    let mut kept = new;
    kept.node = old.node;
    kept.interfaces = old.interfaces;
    kept.port = old.port;
    kept.group = old.group;
    kept.tun = old.tun;
    kept.control_socket = old.control_socket;
    kept.control_group = old.control_group;
    kept.send_buffer = old.send_buffer;
    kept.access = old.access;
    kept.lan_interfaces = old.lan_interfaces;
    kept.node_config = NodeConfig {
        policy: kept.node_config.policy,
        classifier: kept.node_config.classifier,
        neighbor_timeout: timeout,
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
        let same = restart_needed(&old, &config(RUNNING));
        assert!(same.is_empty(), "{same:?}");
        let modes = config(&RUNNING.replace("single", "mirror:2"));
        assert!(restart_needed(&old, &modes).is_empty());
        let new = config(
            "node = 2\nmode = \"mirror:2\"\npaths = 2\n[[interface]]\nname = \"b\"\n\
             [probes]\ndead_after = 20\n",
        );
        assert_eq!(
            restart_needed(&old, &new),
            [
                "node",
                "interface",
                "prefixes/paths/probes/reorder/windows/late_binding/equalise_delay/pace/report_interval/client_margin/client_hold"
            ]
        );
        let timeout = Some(old.node_config.control.probes.small_interval * new.dead_after);
        let auth = new.node_config.control.auth.clone();
        let policy = new.node_config.policy.clone();
        let kept = running_after(old.clone(), new, timeout, auth, Default::default());
        assert_eq!(
            (kept.node, kept.interfaces.clone()),
            (old.node, old.interfaces)
        );
        assert_eq!(kept.dead_after, 20);
        assert_eq!(kept.node_config.policy, policy);
        assert_eq!(kept.node_config.max_paths, old.node_config.max_paths);
        assert_eq!(kept.node_config.neighbor_timeout, timeout);
    }
}
