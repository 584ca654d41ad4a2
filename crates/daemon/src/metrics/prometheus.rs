//! The Prometheus page (text exposition format 0.0.4) at `/metrics`,
//! rendered per request from the protocol state where the counters
//! already live: one function per group of families, written in the
//! page's order.

use braid_proto::node::Node;
use braid_proto::redundancy::reorder::ReorderCounters;
use braid_proto::time::Instant;

use super::exposition::{family, SessionLabels};
use crate::counters::IoCounters;
use crate::kernel::KernelReport;
use crate::routes::RouteCounters;
use crate::uplink::Uplink;

/// What the daemon itself knows of its process, for the metrics every
/// exporter has: when it started and how its last reload went.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessFacts {
    /// Start time, seconds since the Unix epoch.
    pub started_unix: f64,
    /// The last reload: when (Unix seconds) and whether it was taken.
    pub last_reload: Option<(f64, bool)>,
}

/// The Prometheus page: every family, each sample labelled with this
/// node (`node`).
pub fn prometheus(
    node: &Node,
    now: Instant,
    neighbors: usize,
    io: &IoCounters,
    parts: Parts<'_>,
    process: ProcessFacts,
) -> String {
    let Parts {
        kernel,
        uplink,
        routes,
    } = parts;
    let mut page = String::new();
    let out = &mut page;
    let id = &node.id().0.to_string();
    process_families(out, id, io, process);
    mesh_families(out, id, node, neighbors);
    link_families(out, id, node, now);
    ingress_families(out, id, node);
    egress_outcome_families(out, id, node);
    session_table_families(out, id, node);
    control_families(out, id, node, now);
    egress_order_families(out, id, node);
    node_families(out, id, node, io);
    gateway_families(out, id, node);
    if let Some(k) = kernel {
        kernel_families(out, id, k);
    }
    if let Some(u) = uplink {
        uplink_families(out, id, u);
    }
    if let Some(r) = routes {
        route_families(out, id, r);
    }
    page
}

/// What runs on some routers only, each when it does.
#[derive(Default, Clone, Copy)]
pub struct Parts<'a> {
    /// The kernel data path.
    pub kernel: Option<&'a KernelReport>,
    /// A gateway's uplink checker (`[uplink]`).
    pub uplink: Option<&'a Uplink>,
    /// Routes shared with the kernel's table (`[redistribute]`,
    /// `[install]`).
    pub routes: Option<RouteCounters>,
}

/// Routes shared with the kernel's table: how many cross each way now,
/// and what failed.
fn route_families(out: &mut String, id: &str, c: RouteCounters) {
    let me = || ("node", id.to_string());
    let mut f = family(
        out,
        "braid_kernel_routes",
        "gauge",
        "Routes crossing between the kernel's table and the mesh now: redistributed (kernel routes advertised; over: those that did not fit), installed (the mesh's prefixes in the kernel).",
    );
    for (what, v) in [
        ("redistributed", c.redistributed),
        ("redistributed_over", c.redistributed_over),
        ("installed", c.installed),
    ] {
        f.sample(&[me(), ("what", what.into())], v as f64);
    }
    let mut f = family(
        out,
        "braid_kernel_route_failures_total",
        "counter",
        "Routes the kernel refused to add or remove (install), and reads of its table that failed (read).",
    );
    f.sample(
        &[me(), ("what", "install".into())],
        c.install_failures as f64,
    );
    f.sample(&[me(), ("what", "read".into())], c.read_failures as f64);
}

/// As an entry point: flows pinned to their gateway.
fn gateway_families(out: &mut String, id: &str, node: &Node) {
    let me = || ("node", id.to_string());
    let (c, pinned) = node.gateway_counters();
    let mut f = family(
        out,
        "braid_gateway_flows_pinned",
        "gauge",
        "Flows entering the mesh here kept on the egress they started with.",
    );
    f.sample(&[me()], pinned as f64);
    let mut f = family(
        out,
        "braid_gateway_flow_events_total",
        "counter",
        "What the flow pins did (stats.gateways): flows pinned, packets kept on their egress where the choice now is another, flows moved because their egress stopped serving, pins expired, flows not pinned (table full).",
    );
    for (what, v) in [
        ("flows_pinned", c.flows_pinned),
        ("packets_kept", c.packets_kept),
        ("flows_moved", c.flows_moved),
        ("flows_expired", c.flows_expired),
        ("flows_unpinned", c.flows_unpinned),
    ] {
        f.sample(&[me(), ("what", what.into())], v as f64);
    }
}

/// A gateway's uplink (`[uplink]`): healthy or not, its rounds and
/// changes, each target's last answer.
fn uplink_families(out: &mut String, id: &str, u: &Uplink) {
    let me = || ("node", id.to_string());
    let (tc, pc) = u.counters();
    let mut f = family(
        out,
        "braid_uplink_healthy",
        "gauge",
        "1 while the uplink's probes are answered and its prefixes advertised; 0 while they are withdrawn.",
    );
    f.sample(&[me()], if u.healthy() { 1.0 } else { 0.0 });
    let mut f = family(
        out,
        "braid_uplink_rounds_total",
        "counter",
        "Rounds of uplink probes, by verdict (passed: enough targets answered).",
    );
    f.sample(
        &[me(), ("result", "passed".into())],
        tc.rounds_passed as f64,
    );
    f.sample(
        &[me(), ("result", "failed".into())],
        tc.rounds_failed as f64,
    );
    let mut f = family(
        out,
        "braid_uplink_changes_total",
        "counter",
        "Times the uplink went down (prefixes withdrawn) or came up (advertised).",
    );
    f.sample(&[me(), ("to", "down".into())], tc.went_down as f64);
    f.sample(&[me(), ("to", "up".into())], tc.went_up as f64);
    let mut f = family(
        out,
        "braid_uplink_probe_send_failures_total",
        "counter",
        "Uplink probes the kernel refused to send (no route, interface down); counted as unanswered.",
    );
    f.sample(&[me()], pc.send_failed as f64);
    let mut f = family(
        out,
        "braid_uplink_target_up",
        "gauge",
        "1 when the target answered the last round that ended.",
    );
    for (addr, t) in u.targets() {
        f.sample(
            &[me(), ("target", addr.to_string())],
            if t.answered_last { 1.0 } else { 0.0 },
        );
    }
    let mut f = family(
        out,
        "braid_uplink_target_rtt_seconds",
        "gauge",
        "The target's last answer's round trip.",
    );
    for (addr, t) in u.targets() {
        if let Some(rtt) = t.last_rtt {
            f.sample(&[me(), ("target", addr.to_string())], rtt.as_secs_f64());
        }
    }
}

/// The process: which braid, since when, its last reload, its I/O.
fn process_families(out: &mut String, id: &str, io: &IoCounters, process: ProcessFacts) {
    let me = || ("node", id.to_string());
    let mut f = family(
        out,
        "braid_build_info",
        "gauge",
        "Always 1; the labels say which braid this is.",
    );
    f.sample(
        &[
            me(),
            ("version", env!("CARGO_PKG_VERSION").into()),
            ("ctl_version", crate::ctl::CTL_VERSION.to_string()),
        ],
        1.0,
    );
    let mut f = family(
        out,
        "braid_start_time_seconds",
        "gauge",
        "When the daemon started, seconds since the Unix epoch.",
    );
    f.sample(&[me()], process.started_unix);
    let mut f = family(
        out,
        "braid_config_last_reload_successful",
        "gauge",
        "1 when the last reload (SIGHUP, braid ctl reload) was taken, or none was asked; 0 when it was refused and the running config kept.",
    );
    f.sample(
        &[me()],
        if process.last_reload.is_some_and(|(_, ok)| !ok) {
            0.0
        } else {
            1.0
        },
    );
    let mut f = family(
        out,
        "braid_config_last_reload_seconds",
        "gauge",
        "When the config was last read (start or reload, taken or refused), seconds since the Unix epoch.",
    );
    f.sample(
        &[me()],
        process.last_reload.map_or(process.started_unix, |(t, _)| t),
    );
    let mut f = family(
        out,
        "braid_io_total",
        "counter",
        "The daemon's input and output, by what (the names of `braid ctl stats` .io): TUN and UDP packets, send errors, blocked and full queues, control socket requests, reloads.",
    );
    if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(io) {
        for (what, n) in m {
            // A level, not a count: its own gauge below.
            if what == "interfaces_missing" {
                continue;
            }
            if let Some(n) = n.as_f64() {
                f.sample(&[me(), ("what", what)], n);
            }
        }
    }
    let mut f = family(
        out,
        "braid_interfaces_missing",
        "gauge",
        "Configured interfaces that do not exist now (waited for: opened when the kernel says they appeared).",
    );
    f.sample(&[me()], io.interfaces_missing as f64);
}

/// The mesh as this node sees it: neighbors, origins, and its clients as
/// an access point.
fn mesh_families(out: &mut String, id: &str, node: &Node, neighbors: usize) {
    let me = || ("node", id.to_string());
    let mut f = family(out, "braid_neighbors", "gauge", "Neighbors heard recently.");
    f.sample(&[me()], neighbors as f64);
    let lsdb = node.control().lsdb();
    let mut f = family(
        out,
        "braid_lsdb_origins",
        "gauge",
        "Origins in the link-state database.",
    );
    f.sample(&[me()], lsdb.len() as f64);

    let access = node.access();
    let mut f = family(
        out,
        "braid_access_clients",
        "gauge",
        "As an access point: unmodified clients heard (state=heard) and served (state=serving).",
    );
    let serving = access.clients().filter(|(_, c)| c.serving).count();
    f.sample(
        &[me(), ("state", "heard".into())],
        access.clients().count() as f64,
    );
    f.sample(&[me(), ("state", "serving".into())], serving as f64);
    let c = access.counters();
    let mut f = family(
        out,
        "braid_access_events_total",
        "counter",
        "As an access point: clients it started and stopped serving, forgot (expired) and could not track (refused: table full).",
    );
    for (what, n) in [
        ("started", c.started),
        ("stopped", c.stopped),
        ("expired", c.expired),
        ("refused", c.refused),
    ] {
        f.sample(&[me(), ("what", what.into())], n as f64);
    }
}

/// Each link to a neighbor: its ETX, delivery ratios and cost.
fn link_families(out: &mut String, id: &str, node: &Node, now: Instant) {
    let me = || ("node", id.to_string());
    let links = node.control().link_estimates(now);
    let mut f = family(
        out,
        "braid_link_etx",
        "gauge",
        "Expected transmission count of the link to a neighbor (+Inf: unusable).",
    );
    for l in &links {
        f.sample(&[me(), ("neighbor", l.neighbor.0.to_string())], l.etx);
    }
    let mut f = family(
        out,
        "braid_link_delivery_ratio",
        "gauge",
        "Probe delivery ratio: out = our probes at the neighbor (df), in = theirs here (dr).",
    );
    for l in &links {
        let n = l.neighbor.0.to_string();
        f.sample(
            &[me(), ("neighbor", n.clone()), ("direction", "out".into())],
            l.df,
        );
        f.sample(&[me(), ("neighbor", n), ("direction", "in".into())], l.dr);
    }
    let mut f = family(
        out,
        "braid_link_cost",
        "gauge",
        "Link cost used for routing, in the unit of braid_link_etx (1.0 = one expected transmission; with the ETT metric, ms of air time); +Inf: unusable.",
    );
    for l in &links {
        let n = l.neighbor.0.to_string();
        let v = |m: braid_proto::metric::Metric| {
            if m.is_infinite() {
                f64::INFINITY
            } else {
                f64::from(m.units()) / f64::from(braid_proto::metric::SCALE)
            }
        };
        f.sample(
            &[me(), ("neighbor", n.clone()), ("direction", "out".into())],
            v(l.metric_out),
        );
        f.sample(
            &[me(), ("neighbor", n), ("direction", "in".into())],
            v(l.metric_in),
        );
    }
}

/// Ingress sessions: what each path carried and lost, its estimates,
/// and what was dropped for want of a path.
fn ingress_families(out: &mut String, id: &str, node: &Node) {
    let sessions: Vec<_> = node.ingress().sessions().collect();
    // A path's labels: its slot (`path`, what the data header and the
    // counters are kept by) and its route (`route`, the routers it
    // crosses: what keeps naming one physical path when the slots are
    // re-ordered, as route damping lets a better path become primary).
    let path_labels = |egress: braid_wire::NodeId, class: u8, p: usize| {
        let mut l = SessionLabels::new(id, "egress", egress.0, class).with("path", p);
        let route = node
            .paths_to(egress)
            .and_then(|paths| paths.get(p))
            .map(|t| crate::ctl::route_text(node.id(), t, egress))
            .unwrap_or_default();
        l.push(("route", route));
        l
    };
    let mut f = family(
        out,
        "braid_path_sent_total",
        "counter",
        "Packets an ingress session sent on each path (data, copies and repair).",
    );
    for (&(egress, class), s) in &sessions {
        for (p, &n) in s
            .counters()
            .sent_per_path
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
        {
            f.sample(&path_labels(egress, class, p), n as f64);
        }
    }
    let mut f = family(
        out,
        "braid_path_lost_total",
        "counter",
        "Packets lost on each path, from the egress's path reports.",
    );
    for (&(egress, class), s) in &sessions {
        for (p, &n) in s.counters().lost_per_path.iter().enumerate() {
            if s.counters().sent_per_path[p] > 0 {
                f.sample(&path_labels(egress, class, p), n as f64);
            }
        }
    }
    type EstimateFigure = fn(&braid_proto::redundancy::estimate::PathEstimate) -> Option<f64>;
    let estimates: [(&str, &str, EstimateFigure); 4] = [
        (
            "braid_path_loss_ratio",
            "Share of packets each path lost over the last 32 path reports (packets in flight not counted).",
            |e| Some(e.loss),
        ),
        (
            "braid_path_loss_burst_packets",
            "Mean run of lost packets on each path, fitted from the spread of its loss counts (1/(1-loss) when losses are independent).",
            |e| Some(e.burst),
        ),
        (
            "braid_path_delay_seconds",
            "Mean delay out on each path plus the path report's way back, over the last 32 path reports (an upper bound of the one-way delay).",
            |e| e.delay_ms.map(|d| d / 1e3),
        ),
        (
            "braid_path_delay_spread_seconds",
            "Standard deviation of that delay over the last 32 path reports.",
            |e| e.delay_spread_ms.map(|d| d / 1e3),
        ),
    ];
    for (name, help, figure) in estimates {
        let mut f = family(out, name, "gauge", help);
        for (&(egress, class), s) in &sessions {
            for (p, e) in s.path_estimates().into_iter().enumerate() {
                if let Some(value) = e.as_ref().and_then(figure) {
                    f.sample(&path_labels(egress, class, p), value);
                }
            }
        }
    }
    let mut f = family(
        out,
        "braid_ingress_dropped_total",
        "counter",
        "Packets an ingress session dropped, by reason.",
    );
    for (&(egress, class), s) in &sessions {
        f.sample(
            &SessionLabels::new(id, "egress", egress.0, class).with("reason", "no_path"),
            s.counters().no_path as f64,
        );
    }
}

/// Egress sessions: what became of arriving packets, and restarts seen.
fn egress_outcome_families(out: &mut String, id: &str, node: &Node) {
    let egress: Vec<_> = node.egress().sessions().collect();
    let mut f = family(out, "braid_egress_packets_total", "counter", "What an egress session did with arriving packets (the names of `braid ctl sessions` egress counters): delivered, duplicates (dropped), rebuilt (from parity, erasure or sliding-window repair), too_old, too_far_ahead (more than half a window ahead: held for the ingress's proof), old_epoch (a late copy from before its ingress restarted), rebuild_failed (dropped), unproven (another epoch or numbers too far ahead, held for the ingress's proof) and unproven_dropped (what the proof refuted, or none came in time: forged).");
    for (&(ingress, class), s) in &egress {
        let c = s.counters();
        for (what, n) in [
            ("delivered", c.delivered),
            ("duplicates", c.duplicates),
            ("rebuilt", c.rebuilt),
            ("too_old", c.too_old),
            ("too_far_ahead", c.too_far_ahead),
            ("old_epoch", c.old_epoch),
            ("rebuild_failed", c.rebuild_failed),
            ("unproven", c.unproven),
            ("unproven_dropped", c.unproven_dropped),
        ] {
            f.sample(
                &SessionLabels::new(id, "ingress", ingress.0, class).with("what", what),
                n as f64,
            );
        }
    }
    let mut f = family(
        out,
        "braid_egress_epoch_changes_total",
        "counter",
        "Times an egress session's ingress opened it anew (restarted): the window started over.",
    );
    for (&(ingress, class), s) in &egress {
        f.sample(
            &SessionLabels::new(id, "ingress", ingress.0, class).0,
            s.counters().epoch_changes as f64,
        );
    }
}

/// The session tables of both sides: sessions dropped or refused.
fn session_table_families(out: &mut String, id: &str, node: &Node) {
    let me = || ("node", id.to_string());
    let mut f = family(
        out,
        "braid_sessions_dropped_total",
        "counter",
        "Sessions a table dropped (expired: idle; evicted: idle longest when the table was full) or refused (the table was full of busy sessions), per side.",
    );
    let tables = [
        ("ingress", node.ingress().totals().sessions),
        ("egress", node.egress().table_counters()),
    ];
    for (side, t) in tables {
        for (reason, n) in [
            ("expired", t.expired),
            ("evicted", t.evicted),
            ("refused", t.refused),
        ] {
            f.sample(
                &[me(), ("side", side.into()), ("reason", reason.into())],
                n as f64,
            );
        }
    }
}

/// The control plane: link-state events and messages, the database's
/// work, authentication and a duplicate node id.
fn control_families(out: &mut String, id: &str, node: &Node, now: Instant) {
    let me = || ("node", id.to_string());
    let cc = node.control().counters();
    let mut f = family(
        out,
        "braid_control_events_total",
        "counter",
        "Link-state events: neighbors_new and neighbors_restarted (each got a probe and the database), stale_answered (an older advertisement answered with ours), own_seq_jumps (numbered past our own advertisement from before a restart), flushes_received, resyncs (repair floods), origin_checks (advertisements whose origin signature was checked), lsas_other_area (advertisements of another area's routers, not kept).",
    );
    for (what, n) in [
        ("neighbors_new", cc.neighbors_new),
        ("neighbors_restarted", cc.neighbors_restarted),
        ("stale_answered", cc.stale_answered),
        ("own_seq_jumps", cc.own_seq_jumps),
        ("flushes_received", cc.flushes_received),
        ("resyncs", cc.resyncs),
        ("origin_checks", cc.origin_checks),
        ("challenges_sent", cc.challenges_sent),
        ("senders_verified", cc.senders_verified),
        ("challenges_dropped", cc.challenges_dropped),
        ("challenges_limited", cc.challenges_limited),
        ("unverified", cc.unverified),
        ("duplicate_id_signs", cc.duplicate_id_signs),
        ("lsas_other_area", cc.lsas_other_area),
    ] {
        f.sample(&[me(), ("what", what.into())], n as f64);
    }
    let mut f = family(
        out,
        "braid_control_messages_total",
        "counter",
        "Control messages (the names of `braid ctl stats` .control): rx_probes, rx_lsas, rx_own (our own advertisements heard back), tx_probes, tx_lsas, tx_lsa_messages, tx_errors, lsas_originated, links_failed.",
    );
    for (what, n) in [
        ("rx_probes", cc.rx_probes),
        ("rx_lsas", cc.rx_lsas),
        ("rx_own", cc.rx_own),
        ("tx_probes", cc.tx_probes),
        ("tx_lsas", cc.tx_lsas),
        ("tx_lsa_messages", cc.tx_lsa_messages),
        ("tx_errors", cc.tx_errors),
        ("lsas_originated", cc.lsas_originated),
        ("links_failed", cc.links_failed),
    ] {
        f.sample(&[me(), ("what", what.into())], n as f64);
    }
    let mut f = family(
        out,
        "braid_lsdb_events_total",
        "counter",
        "What the link-state database did with advertisements (the names of `braid ctl stats` .lsdb): installed, duplicate, stale, flushed, too_old, expired, and refused_origins, refused_links, refused_prefixes (over its bounds).",
    );
    if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(node.control().lsdb().counters())
    {
        for (what, n) in m {
            if let Some(n) = n.as_f64() {
                f.sample(&[me(), ("what", what)], n);
            }
        }
    }
    let auth = node.control().auth();
    family(
        out,
        "braid_authentication_enabled",
        "gauge",
        "1 when control messages are signed and checked ([auth] keys), 0 when anyone in radio range can change this router's tables.",
    )
    .sample(&[me()], if auth.enabled() { 1.0 } else { 0.0 });
    family(
        out,
        "braid_duplicate_node_id",
        "gauge",
        "1 when another router showed signs of using this router's node id within the last 60 s (braid ctl status says how; give one of them another `node`).",
    )
    .sample(
        &[me()],
        match node.control().duplicate_id_seen() {
            Some((_, at)) if now.since(at) < std::time::Duration::from_secs(60) => 1.0,
            _ => 0.0,
        },
    );
}

/// Egress sessions again: what re-ordering held back, and what each path
/// brought.
fn egress_order_families(out: &mut String, id: &str, node: &Node) {
    let egress: Vec<_> = node.egress().sessions().collect();
    type Count = fn(&ReorderCounters) -> u64;
    let reorder: [(&str, &str, Count); 3] = [
        (
            "braid_egress_reordered_total",
            "Packets the re-order buffer held back to restore order.",
            |r| r.held,
        ),
        (
            "braid_egress_reorder_gaps_skipped_total",
            "Sequence numbers the re-order buffer gave up waiting for (timeout, congestion flag or full window).",
            |r| r.gaps_skipped,
        ),
        (
            "braid_egress_reorder_late_total",
            "Packets that came after the re-order buffer gave up on them (delivered out of order).",
            |r| r.late,
        ),
    ];
    for (name, help, count) in reorder {
        let mut f = family(out, name, "counter", help);
        for (&(ingress, class), s) in &egress {
            if let Some(r) = s.reorder_counters() {
                f.sample(
                    &SessionLabels::new(id, "ingress", ingress.0, class).0,
                    count(&r) as f64,
                );
            }
        }
    }
    let mut f = family(
        out,
        "braid_path_received_total",
        "counter",
        "Packets an egress session received on each path.",
    );
    for (&(ingress, class), s) in &egress {
        for (p, pc) in s
            .counters()
            .per_path
            .iter()
            .enumerate()
            .filter(|(_, pc)| pc.received > 0)
        {
            f.sample(
                &SessionLabels::new(id, "ingress", ingress.0, class).with("path", p),
                pc.received as f64,
            );
        }
    }
}

/// The node's own packets: dropped by reason, handled, and control
/// datagrams refused.
fn node_families(out: &mut String, id: &str, node: &Node, io: &IoCounters) {
    let me = || ("node", id.to_string());
    let c = node.counters();
    let mut f = family(
        out,
        "braid_node_dropped_total",
        "counter",
        "Packets dropped on their way through this router, by reason (the names of `braid ctl stats` .node, and .io for unknown_neighbor, udp_tx_queue_full, udp_tx_errors, and udp_rx_dropped, tun_queue_dropped and tun_write_dropped: the kernel's drops at braid's receiving sockets and TUN device).",
    );
    for (reason, n) in [
        ("no_egress", c.no_egress),
        ("no_path", c.no_path),
        ("route_too_long", c.route_too_long),
        ("not_ip", c.not_ip),
        ("hop_limit_exceeded", c.hop_limit_exceeded),
        ("not_on_route", c.not_on_route),
        ("not_on_tree", c.not_on_tree),
        ("malformed", c.malformed),
        ("queue_full", c.queue_full),
        ("binding_overflow", c.binding_overflow),
        ("binding_full", c.binding_full),
        ("queue_dropped", c.queue_dropped),
        ("copies_dropped", c.copies_dropped),
        ("unknown_neighbor", io.unknown_neighbor),
        ("udp_tx_queue_full", io.udp_tx_queue_full),
        ("udp_tx_errors", io.udp_tx_errors),
        ("udp_rx_dropped", io.udp_rx_dropped),
        ("tun_queue_dropped", io.tun_queue_dropped),
        ("tun_write_dropped", io.tun_write_dropped),
    ] {
        f.sample(&[me(), ("reason", reason.into())], n as f64);
    }
    let mut f = family(
        out,
        "braid_node_packets_total",
        "counter",
        "Packets the node handled: user_in (from the TUN), forwarded, routed_on (of those, routed on at a waypoint: a path longer than one route holds), tree_copies (tree mode), delivered (to the TUN), held (bulk held for delay equalisation), held_early (of those, let go early: the hold was full), probe_copies (a session's first packets copied on every path to date them).",
    );
    for (what, n) in [
        ("user_in", c.user_in),
        ("forwarded", c.forwarded),
        ("routed_on", c.routed_on),
        ("tree_copies", c.tree_copies),
        ("delivered", c.delivered),
        ("held", c.held),
        ("held_early", c.held_early),
        ("probe_copies", c.probe_copies),
    ] {
        f.sample(&[me(), ("what", what.into())], n as f64);
    }
    let mut f = family(
        out,
        "braid_node_repair_requests_total",
        "counter",
        "Repair requests of the sliding-window code: sent (as an egress: packets the repair sent with the data did not rebuild), answered and unanswered (as an ingress: unanswered when the packets named had left its window or its bound was reached).",
    );
    for (what, n) in [
        ("sent", c.repair_requests_sent),
        ("answered", c.repair_requests_answered),
        ("unanswered", c.repair_requests_unanswered),
    ] {
        f.sample(&[me(), ("what", what.into())], n as f64);
    }
    let cc = node.control().counters();
    let mut f = family(
        out,
        "braid_control_rx_errors_total",
        "counter",
        "Control datagrams refused, by error kind.",
    );
    for (kind, n) in &cc.rx_errors {
        f.sample(&[me(), ("kind", kind.to_string())], *n as f64);
    }
}

/// The kernel data path's programs and sessions, when it runs.
fn kernel_families(out: &mut String, id: &str, k: &KernelReport) {
    let me = || ("node", id.to_string());
    let mut f = family(
        out,
        "braid_kernel_packets_total",
        "counter",
        "What the kernel data path's programs did, by counter (rx_forwarded, rx_delivered, rx_duplicate, tx_encapsulated, pass_*: handed to user space, ...; docs/operations.md lists them).",
    );
    for (counter, n) in &k.programs {
        f.sample(&[me(), ("counter", counter.clone())], *n as f64);
    }
    let mut f = family(
        out,
        "braid_kernel_sessions",
        "gauge",
        "Sessions the kernel data path runs, by side (ingress: encoded there; egress: deduplicated there).",
    );
    f.sample(
        &[me(), ("side", "ingress".into())],
        k.ingress_sessions.len() as f64,
    );
    f.sample(
        &[me(), ("side", "egress".into())],
        k.egress_sessions.len() as f64,
    );
}
