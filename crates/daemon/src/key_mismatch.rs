//! Neighbors whose control messages fail the key check: which underlay
//! address (on which interface), the node id their header claims, why
//! (`bad_mac`: another secret; `unknown_key`: a key id we lack;
//! `unauthenticated`: no MAC at all), how many and when the last came;
//! and when the operator is warned. A router with a wrong key is otherwise nearly
//! invisible: it simply never comes up. Pure and bounded: at most
//! [`MAX_SENDERS`] addresses (the longest silent is dropped for a new
//! one), each forgotten after [`FORGET_AFTER`] without a failure or as
//! soon as a message from it checks.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use braid_proto::time::Instant;
use braid_wire::NodeId;

/// Addresses remembered at most (a flood of forged datagrams from many
/// addresses cannot grow the table).
pub const MAX_SENDERS: usize = 32;

/// An address is forgotten after this long without a failing message.
pub const FORGET_AFTER: Duration = Duration::from_secs(120);

/// The operator is warned of one address at most this often.
pub const WARN_EVERY: Duration = Duration::from_secs(60);

/// One address whose control messages fail the key check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The daemon's interface (its position in the config).
    pub port: usize,
    pub addr: IpAddr,
    /// The node id its last message's header claims (unauthenticated).
    pub claimed: Option<NodeId>,
    /// The last failure's name (`bad_mac`, `unknown_key`,
    /// `unauthenticated`).
    pub reason: &'static str,
    /// Failing messages since it was first noted.
    pub count: u64,
    pub last: Instant,
    warned: Option<Instant>,
}

/// The table.
#[derive(Debug, Default)]
pub struct KeyMismatches {
    senders: BTreeMap<(usize, IpAddr), Mismatch>,
}

impl KeyMismatches {
    /// A control message from `addr` on `port` failed the key check for
    /// `reason`. Returns the entry when the operator should be warned now
    /// (the first failure from this address, then at most once per
    /// [`WARN_EVERY`]).
    pub fn note(
        &mut self,
        now: Instant,
        port: usize,
        addr: IpAddr,
        claimed: Option<NodeId>,
        reason: &'static str,
    ) -> Option<&Mismatch> {
        self.forget_silent(now);
        let key = (port, addr);
        if !self.senders.contains_key(&key) && self.senders.len() >= MAX_SENDERS {
            let quietest = self
                .senders
                .iter()
                .min_by_key(|(_, m)| m.last)
                .map(|(k, _)| *k)?;
            self.senders.remove(&quietest);
        }
        let m = self.senders.entry(key).or_insert(Mismatch {
            port,
            addr,
            claimed,
            reason,
            count: 0,
            last: now,
            warned: None,
        });
        m.count += 1;
        m.last = now;
        m.reason = reason;
        m.claimed = claimed.or(m.claimed);
        let due = m.warned.is_none_or(|w| now.since(w) >= WARN_EVERY);
        if due {
            m.warned = Some(now);
            Some(m)
        } else {
            None
        }
    }

    /// A control message from `addr` on `port` checked: it is no longer
    /// failing.
    pub fn passed(&mut self, port: usize, addr: IpAddr) {
        if !self.senders.is_empty() {
            self.senders.remove(&(port, addr));
        }
    }

    /// The addresses failing now (a failure within [`FORGET_AFTER`]), by
    /// interface and address.
    pub fn current(&self, now: Instant) -> impl Iterator<Item = &Mismatch> + '_ {
        self.senders
            .values()
            .filter(move |m| now.since(m.last) < FORGET_AFTER)
    }

    fn forget_silent(&mut self, now: Instant) {
        self.senders.retain(|_, m| now.since(m.last) < FORGET_AFTER);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: u64) -> Instant {
        Instant::from_millis(s * 1000)
    }

    fn addr(i: u8) -> IpAddr {
        IpAddr::from([198, 18, 0, i])
    }

    #[test]
    fn warns_at_the_first_failure_then_once_a_minute_and_forgets_on_a_pass() {
        let mut k = KeyMismatches::default();
        let w = k.note(t(0), 0, addr(2), Some(NodeId(3)), "bad_mac");
        assert_eq!(w.map(|m| (m.count, m.claimed)), Some((1, Some(NodeId(3)))));
        for s in 1..60 {
            assert!(k
                .note(t(s), 0, addr(2), Some(NodeId(3)), "bad_mac")
                .is_none());
        }
        let w = k.note(t(60), 0, addr(2), None, "bad_mac").cloned();
        assert_eq!(w.map(|m| (m.count, m.claimed)), Some((61, Some(NodeId(3)))));
        // Another interface is another place.
        assert!(k.note(t(60), 1, addr(2), None, "unknown_key").is_some());
        assert_eq!(k.current(t(61)).count(), 2);
        k.passed(0, addr(2));
        let left: Vec<_> = k.current(t(61)).map(|m| (m.port, m.reason)).collect();
        assert_eq!(left, [(1, "unknown_key")]);
        // Silence: forgotten.
        assert_eq!(k.current(t(60) + FORGET_AFTER).count(), 0);
    }

    #[test]
    fn a_flood_from_many_addresses_keeps_the_table_bounded() {
        let mut k = KeyMismatches::default();
        for i in 0..=255u8 {
            k.note(t(1), 0, addr(i), None, "bad_mac");
        }
        assert_eq!(k.current(t(1)).count(), MAX_SENDERS);
        // The latest address is among those kept.
        assert!(k.current(t(1)).any(|m| m.addr == addr(255)));
    }
}
