//! Path reports: every `path_report_interval` each egress session tells
//! its ingress how many packets arrived on each path, inside a data
//! packet of the control class; the ingress turns two reports and what it
//! sent in between into each path's loss (what the adaptive mode and the
//! operator's per-path counters read). And echoes (`braid ctl ping`):
//! the same end-to-end carriage, signed and checked the same way.

use braid_wire::{
    ControlHeader, ControlMessage, Echo, EchoKind, MessageType, NodeId, PathCount, PathReport,
};

use super::binding::FlowKey;
use super::Node;
use crate::classify::Classified;
use crate::redundancy::CLASS_CONTROL;
use crate::time::Instant;

/// A node message's body, parsed.
enum NodeMessage<'a> {
    Report(PathReport<'a>),
    Echo(Echo),
}

impl Node {
    /// Sends each egress session's report to its ingress.
    pub(super) fn send_path_reports(&mut self, now: Instant) {
        let mut merged: std::collections::BTreeMap<(NodeId, u8), Vec<PathCount>> = self
            .egress
            .sessions()
            .filter(|((_, class), _)| *class != CLASS_CONTROL)
            .map(|(&key, s)| (key, s.path_counts(now)))
            .collect();
        // What another decoder (the kernel data path) received for the
        // same sessions: one report carries both. The kernel keeps no
        // send order, so a path it received on has none in the report
        // (the ingress then counts by the older, in-flight-blind rule).
        for (key, counts) in &self.external_counts {
            let mine = merged.entry(*key).or_default();
            for &(path, received) in counts {
                match mine.iter_mut().find(|c| c.path == path) {
                    Some(c) => {
                        c.received = c.received.wrapping_add(received);
                        c.latest = None;
                    }
                    None => mine.push(PathCount {
                        path,
                        received,
                        latest: None,
                        age_ms: 0,
                    }),
                }
            }
            mine.sort_unstable_by_key(|c| c.path);
        }
        for ((ingress, class), counts) in merged {
            let (key_id, mac_len) = self.control.mac_fields();
            let header = ControlHeader {
                key_id,
                mac_len,
                ..ControlHeader::new(MessageType::PathReport, self.id)
            };
            let mut buf = vec![0u8; PathReport::encoded_len(counts.len(), mac_len as usize)];
            let Ok(n) = PathReport::emit(&header, ingress, class, &counts, &mut buf) else {
                continue;
            };
            buf.truncate(n);
            // End to end: signed by the egress, checked by the ingress
            // (no replay state: the report only says what arrived).
            if self.send_in_control_class(now, ingress, buf) {
                self.counters.path_reports_sent += 1;
            }
        }
    }

    /// Signs a node message (a path report, an echo) and sends it to `to`
    /// inside a data packet of the control class, urgent; false when
    /// there is no path to it.
    fn send_in_control_class(&mut self, now: Instant, to: NodeId, mut buf: Vec<u8>) -> bool {
        self.control.sign(&mut buf);
        if to == self.id || !self.ensure_routes(now, to) {
            return false;
        }
        let c = Classified {
            class: CLASS_CONTROL,
            urgent: true,
            flow_hash: 0,
        };
        let mut out = std::mem::take(&mut self.scratch);
        let sent = self
            .ingress
            .send_classified(now, to, c, &buf, false, &mut out)
            .is_ok();
        let key = FlowKey {
            hash: 0,
            urgent: true,
        };
        self.emit_all(&mut out, &buf, key);
        self.scratch = out;
        sent
    }

    /// What another decoder of this node's egress sessions (the kernel
    /// data path) has received so far, per (ingress, class) and path:
    /// added to the node's own counts in the next path reports. Replaces
    /// what was given before; at most as many sessions as the egress
    /// table holds are kept.
    pub fn set_external_path_counts(
        &mut self,
        counts: impl IntoIterator<Item = ((NodeId, u8), Vec<(u8, u32)>)>,
    ) {
        self.external_counts = counts
            .into_iter()
            .filter(|((_, class), _)| *class != CLASS_CONTROL)
            .take(self.config.sessions.max)
            .collect();
    }

    /// A message of the control class delivered here: a path report for
    /// one of our ingress sessions, or an echo. Parsed, then its MAC
    /// checked, once for both.
    pub(super) fn on_node_message(&mut self, now: Instant, bytes: &[u8]) {
        let parsed = ControlMessage::parse(bytes).and_then(|msg| {
            let body = if msg.header.msg_type == MessageType::Echo {
                NodeMessage::Echo(Echo::parse(&msg)?)
            } else {
                NodeMessage::Report(PathReport::parse(&msg)?)
            };
            Ok((msg, body))
        });
        let (msg, body) = match parsed {
            Ok(r) => r,
            Err(e) => {
                self.counters.malformed += 1;
                self.refuse(e.kind());
                return;
            }
        };
        if let Err(r) = self.control.auth().check_mac(&msg) {
            self.counters.unauthenticated += 1;
            self.refuse(r.kind());
            return;
        }
        match body {
            NodeMessage::Report(report) => self.on_path_report(now, msg.header.sender, &report),
            NodeMessage::Echo(echo) => self.on_echo(now, msg.header.sender, echo),
        }
    }

    /// An authenticated path report from `sender`.
    fn on_path_report(&mut self, now: Instant, sender: NodeId, report: &PathReport<'_>) {
        if report.ingress != self.id {
            self.counters.malformed += 1;
            self.refuse("not_our_report");
            return;
        }
        self.counters.path_reports_received += 1;
        let counts: Vec<PathCount> = report.counts().collect();
        let mut out = std::mem::take(&mut self.scratch);
        self.ingress
            .on_path_report(now, sender, report.class, &counts, &mut out);
        self.emit_all(&mut out, &[], FlowKey::default());
        self.scratch = out;
        self.note_mode_changes();
    }

    /// Sends an echo request to `target` through the mesh, on the paths
    /// user traffic to it takes (the control class's session), to be
    /// answered with an [`NodeEvent::EchoReply`](super::NodeEvent::EchoReply)
    /// carrying `seq` and `stamp`. False when there is no path to it.
    pub fn send_echo(&mut self, now: Instant, target: NodeId, seq: u32, stamp: u64) -> bool {
        let echo = Echo {
            kind: EchoKind::Request,
            target,
            seq,
            stamp,
        };
        self.send_end_to_end(now, target, &echo)
    }

    /// Writes `echo` and sends it to `to` in the control class.
    fn send_end_to_end(&mut self, now: Instant, to: NodeId, echo: &Echo) -> bool {
        let (key_id, mac_len) = self.control.mac_fields();
        let header = ControlHeader {
            key_id,
            mac_len,
            ..ControlHeader::new(MessageType::Echo, self.id)
        };
        let mut buf = vec![0u8; Echo::encoded_len(mac_len as usize)];
        let Ok(n) = echo.emit(&header, &mut buf) else {
            return false;
        };
        buf.truncate(n);
        self.send_in_control_class(now, to, buf)
    }

    /// An echo delivered here: a request for us is answered at once (no
    /// state kept: an answer per authenticated request), a reply for us
    /// becomes an event.
    fn on_echo(&mut self, now: Instant, from: NodeId, echo: Echo) {
        match echo.kind {
            EchoKind::Request if echo.target == self.id => {
                let reply = Echo {
                    kind: EchoKind::Reply,
                    target: from,
                    ..echo
                };
                if self.send_end_to_end(now, from, &reply) {
                    self.counters.echoes_answered += 1;
                }
            }
            EchoKind::Reply if echo.target == self.id => {
                self.events.push(super::NodeEvent::EchoReply {
                    from,
                    seq: echo.seq,
                    stamp: echo.stamp,
                });
            }
            _ => {
                self.counters.malformed += 1;
                self.refuse("not_our_echo");
            }
        }
    }
}
