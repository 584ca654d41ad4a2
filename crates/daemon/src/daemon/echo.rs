//! `braid ctl ping` and `braid ctl traceroute`: echo requests sent end to
//! end through the mesh (`Node::send_echo`), on the paths user traffic
//! takes, and the control client that asked kept waiting (never the
//! loop) until the replies are in or the last one is a second late.
//! Traceroute asks each router of the primary path toward the target in
//! turn, so each hop's round trip is that router's own.
//!
//! Bounded: at most [`MAX_WAITING`] requests wait at once, at most
//! [`MAX_PROBES`] echoes each; a request waits at most about three
//! seconds, within the control clients' idle limit.

use std::time::Duration;

use braid_proto::node::Node;
use braid_proto::time::Instant;
use braid_wire::NodeId;
use serde_json::{json, Value};

use crate::ctl;

/// Requests that may wait for replies at once.
pub const MAX_WAITING: usize = 4;
/// Echoes per request (a ping's count; the hops of a traceroute).
pub const MAX_PROBES: usize = 10;
/// Between two echoes of one request.
const SPACING: Duration = Duration::from_millis(200);
/// How long after an echo its reply may come.
const WAIT: Duration = Duration::from_secs(1);

/// What was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ping,
    Traceroute,
}

/// One echo of a request.
#[derive(Debug, Clone)]
struct Probe {
    target: NodeId,
    seq: u32,
    /// When it was sent (`None`: not yet; or no path, then `unreachable`).
    sent: Option<Instant>,
    unreachable: bool,
    rtt: Option<Duration>,
}

/// A request waiting for its replies: its control client's slot.
#[derive(Debug)]
struct Waiting {
    slot: usize,
    kind: Kind,
    target: NodeId,
    /// The routers of the primary path (traceroute).
    path: Vec<NodeId>,
    probes: Vec<Probe>,
    next_send: Instant,
}

/// Names for node ids (`[labels]`).
type Labels = std::collections::BTreeMap<u16, String>;

/// Reads `ping NODE [COUNT]` or `traceroute NODE` (NODE a node id or a
/// name `labels` gives one); `None` for any other command, else the
/// request's parts or the error to answer with.
fn parse(line: &str, labels: &Labels) -> Option<Result<(Kind, NodeId, usize), String>> {
    let mut words = line.split_whitespace();
    let kind = match words.next()? {
        "ping" => Kind::Ping,
        "traceroute" => Kind::Traceroute,
        _ => return None,
    };
    let word = words.next();
    let named = word.and_then(|w| labels.iter().find(|(_, name)| name.as_str() == w));
    let node = match (named, word.map(str::parse::<u16>)) {
        (Some((id, _)), _) => NodeId(*id),
        (None, Some(Ok(n))) if (1..u16::MAX).contains(&n) => NodeId(n),
        (None, Some(Err(_))) => {
            let names: Vec<&str> = labels.values().map(String::as_str).collect();
            return Some(Err(format!(
                "no router is named \"{}\" here: give a node id (1-65534) or a name of [labels]{}",
                word.unwrap_or_default(),
                if names.is_empty() {
                    " (none are set)".to_string()
                } else {
                    format!(" ({})", names.join(", "))
                }
            )));
        }
        _ => return Some(Err(
            "give a node id (1-65534) or a name of [labels]: ping NODE [COUNT], traceroute NODE"
                .into(),
        )),
    };
    let count = match (kind, words.next().map(str::parse::<usize>)) {
        (Kind::Ping, None) => 3,
        (Kind::Ping, Some(Ok(c))) if (1..=MAX_PROBES).contains(&c) => c,
        (Kind::Ping, Some(_)) => {
            return Some(Err(format!("a ping's count is 1 to {MAX_PROBES}")));
        }
        (Kind::Traceroute, None) => 0,
        (Kind::Traceroute, Some(_)) => return Some(Err("traceroute takes a node id only".into())),
    };
    if words.next().is_some() {
        return Some(Err(
            "too many words: ping NODE [COUNT], traceroute NODE".into()
        ));
    }
    Some(Ok((kind, node, count)))
}

/// Whether a ctl line is an echo request (answered later, not at once).
pub(super) fn is_echo_request(line: &str) -> bool {
    parse(line, &Labels::new()).is_some()
}

/// The pings and traceroutes waiting for their replies.
#[derive(Debug, Default)]
pub(super) struct Echoes {
    waiting: Vec<Waiting>,
    /// The last echo sequence number used.
    seq: u32,
}

impl Echoes {
    /// Starts a ping or traceroute for the client in `slot`; an error is
    /// the document to answer at once.
    pub fn start(
        &mut self,
        slot: usize,
        line: &str,
        node: &Node,
        labels: &Labels,
        now: Instant,
    ) -> Result<(), Value> {
        let (kind, target, count) = match parse(line, labels) {
            Some(Ok(r)) => r,
            Some(Err(e)) => return Err(ctl::error_doc(&e)),
            None => return Err(ctl::error_doc("not an echo request")),
        };
        if self.waiting.len() >= MAX_WAITING {
            return Err(ctl::error_doc(&format!(
                "{MAX_WAITING} pings or traceroutes already wait for replies; try again in a few seconds"
            )));
        }
        if target == node.id() {
            return Err(ctl::error_doc("that is this router"));
        }
        if node.control().lsdb().get(target).is_none() {
            return Err(ctl::error_doc(&format!(
                "router {} is not in the link-state database (braid ctl topology lists those known)",
                target.0
            )));
        }
        // Traceroute: each router of the path traffic to the target takes.
        let path: Vec<NodeId> = match kind {
            Kind::Ping => Vec::new(),
            Kind::Traceroute => match traceroute_path(node, target) {
                Some(path) => path,
                None => {
                    return Err(ctl::error_doc(&format!(
                        "no path to router {} now",
                        target.0
                    )))
                }
            },
        };
        let targets: Vec<NodeId> = match kind {
            Kind::Ping => vec![target; count],
            Kind::Traceroute => path.clone(),
        };
        let probes = targets
            .into_iter()
            .map(|t| {
                self.seq = self.seq.wrapping_add(1);
                Probe {
                    target: t,
                    seq: self.seq,
                    sent: None,
                    unreachable: false,
                    rtt: None,
                }
            })
            .collect();
        self.waiting.push(Waiting {
            slot,
            kind,
            target,
            path,
            probes,
            next_send: now,
        });
        Ok(())
    }

    /// Whether no request waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// An echo reply: its round trip goes to the probe that sent it.
    pub fn reply(&mut self, now: Instant, from: NodeId, seq: u32) {
        for w in &mut self.waiting {
            if let Some(p) = w
                .probes
                .iter_mut()
                .find(|p| p.seq == seq && p.target == from && p.rtt.is_none())
            {
                if let Some(sent) = p.sent {
                    p.rtt = Some(Duration::from_micros(now.since(sent).as_micros() as u64));
                }
                return;
            }
        }
    }

    /// When the next echo is due or a request's wait ends.
    pub fn timeout(&self) -> Option<Instant> {
        self.waiting
            .iter()
            .map(|w| match w.probes.iter().find(|p| p.sent.is_none()) {
                Some(_) => w.next_send,
                None => {
                    w.probes
                        .iter()
                        .filter_map(|p| p.sent)
                        .max()
                        .unwrap_or(w.next_send)
                        + WAIT
                }
            })
            .min()
    }

    /// Sends the echoes that are due, and returns the answers of the
    /// requests that are done (every reply in, or the last echo a second
    /// old): each client's slot and its document.
    pub fn advance(&mut self, now: Instant, node: &mut Node) -> Vec<(usize, Value)> {
        let mut done = Vec::new();
        for (i, w) in self.waiting.iter_mut().enumerate() {
            // Ping: one echo per spacing; traceroute: all at once.
            while let Some(p) = w
                .probes
                .iter_mut()
                .find(|p| p.sent.is_none() && !p.unreachable)
            {
                if w.next_send > now {
                    break;
                }
                if node.send_echo(now, p.target, p.seq, now.0) {
                    p.sent = Some(now);
                } else {
                    p.unreachable = true;
                }
                if w.kind == Kind::Ping {
                    w.next_send = now + SPACING;
                }
            }
            let all_sent = w.probes.iter().all(|p| p.sent.is_some() || p.unreachable);
            let last = w.probes.iter().filter_map(|p| p.sent).max();
            let answered = w.probes.iter().all(|p| p.rtt.is_some() || p.unreachable);
            if all_sent && (answered || last.is_none_or(|t| now >= t + WAIT)) {
                done.push(i);
            }
        }
        let mut answers = Vec::with_capacity(done.len());
        for i in done.into_iter().rev() {
            let w = self.waiting.swap_remove(i);
            answers.push((w.slot, echo_doc(&w, node.id())));
        }
        answers
    }
}

/// The routers of the path traffic to `target` takes (the primary path,
/// else the best candidate), `target` last.
fn traceroute_path(node: &Node, target: NodeId) -> Option<Vec<NodeId>> {
    let transit = node
        .paths_to(target)
        .and_then(|p| p.first().cloned())
        .or_else(|| node.candidate_paths(target).first().map(|(t, _)| t.clone()))?;
    Some(
        transit
            .into_iter()
            .chain([target])
            .take(MAX_PROBES)
            .collect(),
    )
}

/// The answer to a request that is done, from router `me`.
fn echo_doc(w: &Waiting, me: NodeId) -> Value {
    let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e3);
    let body = match w.kind {
        Kind::Ping => json!({
            "target": w.target.0,
            "sent": w.probes.iter().filter(|p| p.sent.is_some()).count(),
            "received": w.probes.iter().filter(|p| p.rtt.is_some()).count(),
            "probes": w.probes.iter().map(|p| json!({
                "seq": p.seq,
                "rtt_ms": ms(p.rtt),
                "unreachable": p.unreachable,
            })).collect::<Vec<_>>(),
        }),
        Kind::Traceroute => json!({
            "target": w.target.0,
            "path": std::iter::once(me.0)
                .chain(w.path.iter().map(|n| n.0))
                .collect::<Vec<_>>(),
            "hops": w.probes.iter().enumerate().map(|(k, p)| json!({
                "hop": k + 1,
                "node": p.target.0,
                "rtt_ms": ms(p.rtt),
                "unreachable": p.unreachable,
            })).collect::<Vec<_>>(),
        }),
    };
    let mut doc = json!({ "version": ctl::CTL_VERSION, "node": me.0 });
    if let (Value::Object(d), Value::Object(b)) = (&mut doc, body) {
        d.extend(b);
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_requests_are_read_and_bad_ones_named() {
        let none = Labels::new();
        assert_eq!(parse("status", &none), None);
        assert_eq!(parse("ping 4", &none), Some(Ok((Kind::Ping, NodeId(4), 3))));
        assert_eq!(
            parse("ping 4 10", &none),
            Some(Ok((Kind::Ping, NodeId(4), 10)))
        );
        assert_eq!(
            parse("traceroute 7", &none),
            Some(Ok((Kind::Traceroute, NodeId(7), 0)))
        );
        for bad in [
            "ping",
            "ping x",
            "ping 0",
            "ping 65535",
            "ping 4 0",
            "ping 4 11",
            "ping 4 2 1",
            "traceroute 4 2",
        ] {
            assert!(matches!(parse(bad, &none), Some(Err(_))), "{bad}");
        }
    }

    /// Issue 32: `braid ctl ping d` answered "give a node id".
    #[test]
    fn a_router_is_named_by_its_label() {
        let labels = Labels::from([(3, "d".to_string()), (7, "hill".to_string())]);
        assert_eq!(
            parse("ping d", &labels),
            Some(Ok((Kind::Ping, NodeId(3), 3)))
        );
        assert_eq!(
            parse("traceroute hill", &labels),
            Some(Ok((Kind::Traceroute, NodeId(7), 0)))
        );
        let Some(Err(e)) = parse("ping e", &labels) else {
            panic!("ping e is refused");
        };
        assert!(e.contains("\"e\"") && e.contains("d, hill"), "{e}");
    }
}
