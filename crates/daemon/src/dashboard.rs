//! The live dashboard on the daemon's opt-in HTTP port (`metrics`): `/`
//! is one self-contained page (no external assets: it opens on a router
//! without Internet), which polls `/state` every second: the topology as
//! NetJSON with labels, this router's links, routes and sessions (the
//! documents `braid ctl --json` prints) and the last monitor events.

use std::collections::VecDeque;

use serde_json::{json, Value};

use crate::ctl::{self, View};

/// The page.
pub const PAGE: &str = include_str!("dashboard.html");

/// Monitor events the dashboard keeps (the oldest go first).
pub const RECENT_EVENTS: usize = 50;

/// The state document the page polls.
pub fn state(v: &View<'_>, default_mode: &str, events: &VecDeque<String>) -> String {
    let me = v.node.id().0;
    let labels = v.labels;
    let doc = |command: &str| ctl::answer(command, v).unwrap_or(Value::Null);
    json!({
        "version": ctl::CTL_VERSION,
        "node": me,
        "label": labels.get(&me).cloned().unwrap_or_else(|| format!("node {me}")),
        "mode": default_mode,
        "status": doc("status"),
        "links": doc("links"),
        "routes": doc("routes"),
        "sessions": doc("sessions"),
        "topology": crate::metrics::netjson_value(v.node, labels),
        "events": events
            .iter()
            .filter_map(|e| serde_json::from_str::<Value>(e).ok())
            .collect::<Vec<_>>(),
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::PAGE;

    #[test]
    fn the_page_needs_nothing_from_outside() {
        assert!(
            PAGE.contains("fetch('state'"),
            "it polls the state document"
        );
        for external in ["http://", "https://", "<link ", "src=\""] {
            assert!(!PAGE.contains(external), "the page loads {external}");
        }
    }
}
