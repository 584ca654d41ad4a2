//! Node messages: what one router tells another end to end, inside data
//! packets of the control class. Session checks (`egress.rs` says when an
//! egress asks; the ingress answers with its proof). Path reports: every
//! `path_report_interval` each egress session tells its ingress how many
//! packets arrived on each path; the ingress turns two reports and what
//! it sent in between into each path's loss (what the adaptive mode and
//! the operator's per-path counters read). Echoes (`braid ctl ping`): the
//! same carriage, signed and checked the same way, as are repair
//! requests (an egress asking for more of the sliding-window code).
//!
//! Here the messages are written ([`Reporter::reports`], [`echo_message`])
//! and read ([`read_node_message`], [`answer_echo`]); the node signs,
//! sends and acts on them.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use braid_wire::control::LATEST_MASK;
use braid_wire::{
    ControlHeader, ControlMessage, Echo, EchoKind, MessageType, NodeId, PathCount, PathReport,
    RepairRequest, SessionCheck,
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
    /// A session check request or proof.
    Check(SessionCheck),
    /// An egress asking for more repair of a sliding-window session.
    Repair(RepairRequest),
}

/// What another decoder of an egress session (the kernel data path)
/// received on one path: how many packets, and the newest one's send
/// order and when it arrived (`None` when it does not know).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedPath {
    /// The path index.
    pub path: u8,
    /// Packets received on it since the session began (wrapping).
    pub received: u32,
    /// The newest arrival's send order, and when it arrived.
    pub newest: Option<(u32, Instant)>,
}

impl DecodedPath {
    /// As a path report made at `now` counts it.
    fn count(&self, now: Instant) -> PathCount {
        PathCount {
            path: self.path,
            received: self.received,
            latest: self.newest.map(|(order, _)| order & LATEST_MASK),
            age_ms: self.newest.map_or(0, |(_, at)| {
                now.since(at).as_millis().min(u128::from(u16::MAX)) as u16
            }),
        }
    }
}

/// When path reports are due, and what another decoder counted.
#[derive(Debug)]
pub struct Reporter {
    interval: Duration,
    next: Instant,
    /// What another decoder (the kernel data path) received of egress
    /// sessions, per path.
    external: BTreeMap<(NodeId, u8), Vec<DecodedPath>>,
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
        counts: impl IntoIterator<Item = ((NodeId, u8), Vec<DecodedPath>)>,
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
    /// `only`: just these sessions' (the early reports of sessions that
    /// heard a new path).
    pub fn reports(
        &self,
        now: Instant,
        egress: &Egress,
        me: NodeId,
        (key_id, mac_len): (u8, u8),
        only: Option<&BTreeSet<(NodeId, u8)>>,
    ) -> Vec<(NodeId, Vec<u8>)> {
        let wanted =
            |key: &(NodeId, u8)| key.1 != CLASS_CONTROL && only.is_none_or(|o| o.contains(key));
        let mut merged: BTreeMap<(NodeId, u8), Vec<PathCount>> = egress
            .sessions()
            .filter(|(key, _)| wanted(key))
            .map(|(&key, s)| (key, s.path_counts(now)))
            .collect();
        // What another decoder (the kernel data path) received for the
        // same sessions: one report carries both.
        for (key, counts) in self.external.iter().filter(|(key, _)| wanted(key)) {
            let mine = merged.entry(*key).or_default();
            for theirs in counts.iter().map(|d| d.count(now)) {
                match mine.iter_mut().find(|c| c.path == theirs.path) {
                    Some(c) => *c = merge(*c, theirs),
                    None => mine.push(theirs),
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

/// One path's counts from two decoders of a session: the arrivals of
/// both, and the newer of their newest arrivals (serial arithmetic over
/// the send orders' 23 bits). When one decoder does not know its newest,
/// neither is given: the ingress then counts by the in-flight-blind rule.
fn merge(a: PathCount, b: PathCount) -> PathCount {
    let newest = match (a.latest, b.latest) {
        (Some(x), Some(y)) => {
            let b_newer = y.wrapping_sub(x) & LATEST_MASK;
            Some(if b_newer != 0 && b_newer < 1 << 22 {
                (y, b.age_ms)
            } else {
                (x, a.age_ms)
            })
        }
        _ => None,
    };
    PathCount {
        path: a.path,
        received: a.received.wrapping_add(b.received),
        latest: newest.map(|n| n.0),
        age_ms: newest.map_or(0, |n| n.1),
    }
}

/// A node message of type `ty` and `len` bytes in all, written by `me`
/// with the MAC fields `(key_id, mac_len)` through `emit`, unsigned.
fn node_message(
    ty: MessageType,
    len: usize,
    me: NodeId,
    (key_id, mac_len): (u8, u8),
    emit: impl FnOnce(&ControlHeader, &mut [u8]) -> Result<usize, braid_wire::WireError>,
) -> Option<Vec<u8>> {
    let header = ControlHeader {
        key_id,
        mac_len,
        ..ControlHeader::new(ty, me)
    };
    let mut buf = vec![0u8; len];
    let n = emit(&header, &mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// `echo`, written by `me` with the MAC fields `mac`, unsigned.
pub fn echo_message(echo: &Echo, me: NodeId, mac: (u8, u8)) -> Option<Vec<u8>> {
    let len = Echo::encoded_len(mac.1 as usize);
    node_message(MessageType::Echo, len, me, mac, |h, b| echo.emit(h, b))
}

/// `check`, written by `me` with the MAC fields `mac`, unsigned.
pub fn check_message(check: &SessionCheck, me: NodeId, mac: (u8, u8)) -> Option<Vec<u8>> {
    let len = SessionCheck::encoded_len(mac.1 as usize);
    node_message(MessageType::SessionCheck, len, me, mac, |h, b| {
        check.emit(h, b)
    })
}

/// `request`, written by `me` with the MAC fields `mac`, unsigned.
pub fn repair_request_message(
    request: &RepairRequest,
    me: NodeId,
    mac: (u8, u8),
) -> Option<Vec<u8>> {
    let len = RepairRequest::encoded_len(mac.1 as usize);
    node_message(MessageType::RepairRequest, len, me, mac, |h, b| {
        request.emit(h, b)
    })
}

/// A message of the control class delivered to `me`: parsed, then its
/// MAC checked (once for every kind); its sender and body.
pub fn read_node_message<'a>(
    bytes: &'a [u8],
    auth: &Authenticator,
) -> Result<(NodeId, NodeMessage<'a>), Refusal> {
    let msg = ControlMessage::parse(bytes).map_err(Refusal::Malformed)?;
    let body = match msg.header.msg_type {
        MessageType::Echo => NodeMessage::Echo(Echo::parse(&msg).map_err(Refusal::Malformed)?),
        MessageType::SessionCheck => {
            NodeMessage::Check(SessionCheck::parse(&msg).map_err(Refusal::Malformed)?)
        }
        MessageType::RepairRequest => {
            NodeMessage::Repair(RepairRequest::parse(&msg).map_err(Refusal::Malformed)?)
        }
        _ => NodeMessage::Report(PathReport::parse(&msg).map_err(Refusal::Malformed)?),
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
    fn another_decoders_counts_are_dated_at_the_report_and_merged_newest_first() {
        let t = Instant::ZERO + Duration::from_millis(500);
        let kernel = DecodedPath {
            path: 1,
            received: 10,
            newest: Some((320, Instant::ZERO + Duration::from_millis(480))),
        };
        let counted = kernel.count(t);
        assert_eq!((counted.latest, counted.age_ms), (Some(320), 20));
        let mine = PathCount {
            path: 1,
            received: 5,
            latest: Some(160),
            age_ms: 3,
        };
        let both = merge(mine, counted);
        assert_eq!(both.received, 15);
        assert_eq!((both.latest, both.age_ms), (Some(320), 20), "the newer one");
        // Across the 23 bits' wrap, serially.
        let wrapped = PathCount {
            latest: Some(LATEST_MASK - 31),
            ..mine
        };
        let early = PathCount {
            latest: Some(0),
            ..counted
        };
        assert_eq!(merge(wrapped, early).latest, Some(0));
        // One side blind: no newest at all.
        let blind = PathCount {
            latest: None,
            age_ms: 0,
            ..mine
        };
        assert_eq!(merge(blind, counted).latest, None);
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
