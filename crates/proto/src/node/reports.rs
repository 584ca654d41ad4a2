//! Node messages: what one router tells another end to end, inside data
//! packets of the control class. Path reports: every
//! `path_report_interval` each egress session tells its ingress how many
//! packets arrived on each path; the ingress turns two reports and what
//! it sent in between into each path's loss (what the adaptive mode and
//! the operator's per-path counters read). Echoes (`braid ctl ping`): the
//! same carriage, signed and checked the same way.
//!
//! Here the messages are written ([`Reporter::reports`], [`echo_message`])
//! and read ([`read_node_message`], [`answer_echo`]); the node signs,
//! sends and acts on them.

use std::collections::BTreeMap;
use std::time::Duration;

use braid_wire::{
    ControlHeader, ControlMessage, Echo, EchoKind, MessageType, NodeId, PathCount, PathReport,
};

use super::refusal::Refusal;
use crate::auth::Authenticator;
use crate::redundancy::{Egress, CLASS_CONTROL};
use crate::time::Instant;

/// A node message's body, parsed.
pub enum NodeMessage<'a> {
    /// An egress's path report.
    Report(PathReport<'a>),
    /// An echo request or reply.
    Echo(Echo),
}

/// When path reports are due, and what another decoder counted.
#[derive(Debug)]
pub struct Reporter {
    interval: Duration,
    next: Instant,
    /// Per-path receive counts of egress sessions another decoder (the
    /// kernel data path) keeps.
    external: BTreeMap<(NodeId, u8), Vec<(u8, u32)>>,
}

impl Reporter {
    /// Reports every `interval`, the first at `now + interval`.
    pub fn new(now: Instant, interval: Duration) -> Self {
        Reporter {
            interval,
            next: now + interval,
            external: BTreeMap::new(),
        }
    }

    /// When the next reports are due.
    pub fn poll_timeout(&self) -> Instant {
        self.next
    }

    /// Whether reports are due at `now` (then the next are due an
    /// interval later).
    pub fn due(&mut self, now: Instant) -> bool {
        if now < self.next {
            return false;
        }
        self.next = now + self.interval;
        true
    }

    /// What another decoder of this node's egress sessions has received
    /// so far; replaces what was given before; at most `max` sessions.
    pub fn set_external(
        &mut self,
        counts: impl IntoIterator<Item = ((NodeId, u8), Vec<(u8, u32)>)>,
        max: usize,
    ) {
        self.external = counts
            .into_iter()
            .filter(|((_, class), _)| *class != CLASS_CONTROL)
            .take(max)
            .collect();
    }

    /// Each egress session's report to its ingress, unsigned, written by
    /// `me` with the MAC fields `(key_id, mac_len)`: (ingress, message).
    pub fn reports(
        &self,
        now: Instant,
        egress: &Egress,
        me: NodeId,
        (key_id, mac_len): (u8, u8),
    ) -> Vec<(NodeId, Vec<u8>)> {
        let mut merged: BTreeMap<(NodeId, u8), Vec<PathCount>> = egress
            .sessions()
            .filter(|((_, class), _)| *class != CLASS_CONTROL)
            .map(|(&key, s)| (key, s.path_counts(now)))
            .collect();
        // What another decoder (the kernel data path) received for the
        // same sessions: one report carries both. The kernel keeps no
        // send order, so a path it received on has none in the report
        // (the ingress then counts by the older, in-flight-blind rule).
        for (key, counts) in &self.external {
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
        let header = ControlHeader {
            key_id,
            mac_len,
            ..ControlHeader::new(MessageType::PathReport, me)
        };
        let mut out = Vec::new();
        for ((ingress, class), counts) in merged {
            let mut buf = vec![0u8; PathReport::encoded_len(counts.len(), mac_len as usize)];
            let Ok(n) = PathReport::emit(&header, ingress, class, &counts, &mut buf) else {
                continue;
            };
            buf.truncate(n);
            out.push((ingress, buf));
        }
        out
    }
}

/// `echo`, written by `me` with the MAC fields `(key_id, mac_len)`,
/// unsigned.
pub fn echo_message(echo: &Echo, me: NodeId, (key_id, mac_len): (u8, u8)) -> Option<Vec<u8>> {
    let header = ControlHeader {
        key_id,
        mac_len,
        ..ControlHeader::new(MessageType::Echo, me)
    };
    let mut buf = vec![0u8; Echo::encoded_len(mac_len as usize)];
    let n = echo.emit(&header, &mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// A message of the control class delivered to `me`: parsed, then its
/// MAC checked (once for every kind); its sender and body.
pub fn read_node_message<'a>(
    bytes: &'a [u8],
    auth: &Authenticator,
) -> Result<(NodeId, NodeMessage<'a>), Refusal> {
    let msg = ControlMessage::parse(bytes).map_err(Refusal::Malformed)?;
    let body = if msg.header.msg_type == MessageType::Echo {
        NodeMessage::Echo(Echo::parse(&msg).map_err(Refusal::Malformed)?)
    } else {
        NodeMessage::Report(PathReport::parse(&msg).map_err(Refusal::Malformed)?)
    };
    auth.check_mac(&msg).map_err(Refusal::BadNodeMessage)?;
    Ok((msg.header.sender, body))
}

/// What an echo delivered to `me` from `from` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EchoAnswer {
    /// A request for `me`: this reply goes back to `from` (no state
    /// kept: an answer per authenticated request).
    Reply(Echo),
    /// A reply to one of `me`'s requests: tell the driver.
    Returned,
}

/// What `me` does with `echo` from `from`.
pub fn answer_echo(echo: Echo, me: NodeId, from: NodeId) -> Result<EchoAnswer, Refusal> {
    match echo.kind {
        EchoKind::Request if echo.target == me => Ok(EchoAnswer::Reply(Echo {
            kind: EchoKind::Reply,
            target: from,
            ..echo
        })),
        EchoKind::Reply if echo.target == me => Ok(EchoAnswer::Returned),
        _ => Err(Refusal::NotOurEcho),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: NodeId = NodeId(1);
    const PEER: NodeId = NodeId(2);

    fn request(target: NodeId) -> Echo {
        Echo {
            kind: EchoKind::Request,
            target,
            seq: 7,
            stamp: 99,
        }
    }

    #[test]
    fn echoes_are_answered_only_for_us() {
        let reply = answer_echo(request(ME), ME, PEER).unwrap();
        let EchoAnswer::Reply(r) = reply else {
            panic!("a request for us is answered: {reply:?}");
        };
        assert_eq!(
            (r.kind, r.target, r.seq, r.stamp),
            (EchoKind::Reply, PEER, 7, 99)
        );
        assert_eq!(answer_echo(r, PEER, ME), Ok(EchoAnswer::Returned));
        assert_eq!(
            answer_echo(request(PEER), ME, PEER),
            Err(Refusal::NotOurEcho)
        );
        assert_eq!(answer_echo(r, ME, PEER), Err(Refusal::NotOurEcho));
    }

    #[test]
    fn an_echo_written_here_reads_back_and_garbage_is_malformed() {
        let auth = Authenticator::new(ME, Default::default(), 0).unwrap();
        let buf = echo_message(&request(PEER), ME, (0, 0)).unwrap();
        let (sender, body) = read_node_message(&buf, &auth).unwrap();
        assert_eq!(sender, ME);
        assert!(matches!(body, NodeMessage::Echo(e) if e == request(PEER)));
        assert!(matches!(
            read_node_message(&buf[..buf.len() - 1], &auth),
            Err(Refusal::Malformed(_))
        ));
    }

    #[test]
    fn reports_are_due_every_interval() {
        let mut r = Reporter::new(Instant::ZERO, Duration::from_secs(1));
        assert!(!r.due(Instant::ZERO));
        let t = Instant::ZERO + Duration::from_secs(1);
        assert!(r.due(t));
        assert_eq!(r.poll_timeout(), t + Duration::from_secs(1));
        assert!(!r.due(t));
    }
}
