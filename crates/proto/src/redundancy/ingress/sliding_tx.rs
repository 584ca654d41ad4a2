//! The ingress's schedule for the sliding-window code (`Mode::Sliding`):
//! the window of recent data packets, the repair owed (n-m per m data
//! packets, due with the data packet that completes it), the tail's
//! round after `flush_after` of silence, and the repair an egress asks
//! for (within [`REQUESTED_PER_INTERVAL`]). Which path a repair takes and
//! its header are the session's (`mod.rs`); the code is
//! `redundancy/sliding.rs`'s.

use std::time::Duration;

use crate::redundancy::sliding::{self, SlidingEncoder};
use crate::time::Instant;

/// Repair packets sent on request per [`REQUEST_INTERVAL`], at most, per
/// session: about what a 20-Mbit/s session sends in data.
pub(super) const REQUESTED_PER_INTERVAL: u32 = 200;
/// The interval of that bound.
const REQUEST_INTERVAL: Duration = Duration::from_millis(100);

/// One repair packet to send: it covers the window ending at data packet
/// `end`, and is the `j`-th sent after it.
#[derive(Debug)]
pub(super) struct Repair {
    pub(super) end: u32,
    pub(super) j: u8,
    pub(super) payload: Vec<u8>,
    /// An urgent data packet went out since the last repair: this one is
    /// urgent too (a lost VoIP packet is rebuilt from it).
    pub(super) urgent: bool,
}

/// The sliding-window code's state at the ingress.
#[derive(Debug, Default)]
pub(super) struct SlidingTx {
    encoder: SlidingEncoder,
    /// Repair owed, in m-ths of a packet: n-m added per data packet.
    credit: u32,
    /// Data packets sent since the last tail round: one is due after the
    /// next silence.
    uncovered: u32,
    /// Repair packets sent since the newest data packet (the next one's
    /// number: `sliding::repair_group`).
    next_j: u8,
    urgent: bool,
    /// When the last data packet went out.
    last_data: Instant,
    /// Repair sent on request: since when it is counted, and how much.
    requested: (Instant, u32),
    /// Requested repair packets sent so far (their numbers j count down
    /// from the last, so that they seldom repeat the repair sent with the
    /// data).
    requested_total: u32,
}

impl SlidingTx {
    /// Data packet `seq` went out at `now` under `sliding:n,m,span`;
    /// returns how many repair packets are due now (take them with
    /// [`Self::repair`]).
    pub(super) fn on_data(
        &mut self,
        now: Instant,
        seq: u32,
        packet: &[u8],
        urgent: bool,
        (n, m, span): (u8, u8, u8),
    ) -> u32 {
        if self.encoder.push(now, seq, packet, span).is_err() {
            // Too long for the code's length prefix: it went out
            // unprotected, and the window starts over after it.
            self.encoder.reset();
            return 0;
        }
        self.uncovered = self.uncovered.saturating_add(1);
        self.urgent |= urgent;
        self.last_data = now;
        self.next_j = 0;
        self.credit += u32::from(n - m);
        let due = self.credit / u32::from(m);
        self.credit %= u32::from(m);
        due
    }

    /// The next repair over the window (none beyond
    /// [`sliding::MAX_REPAIRS_AFTER`] after one data packet).
    pub(super) fn repair(&mut self, now: Instant) -> Option<Repair> {
        let j = self.next_j;
        if j >= sliding::MAX_REPAIRS_AFTER {
            return None;
        }
        let end = self.encoder.last()?;
        let payload = self.encoder.repair(now, j)?;
        self.next_j += 1;
        Some(Repair {
            end,
            j,
            payload,
            urgent: std::mem::take(&mut self.urgent),
        })
    }

    /// Up to `count` repair packets over data packets `first..=end`, as an
    /// egress asked at `now`: none when the window no longer holds them
    /// all, and no more than [`REQUESTED_PER_INTERVAL`] per interval.
    pub(super) fn requested(
        &mut self,
        now: Instant,
        first: u32,
        end: u32,
        count: u8,
    ) -> Vec<Repair> {
        if now.since(self.requested.0) >= REQUEST_INTERVAL {
            self.requested = (now, 0);
        }
        let room = REQUESTED_PER_INTERVAL.saturating_sub(self.requested.1);
        let mut out = Vec::new();
        for _ in 0..u32::from(count).min(room) {
            let top = sliding::MAX_REPAIRS_AFTER - 1;
            let j = top - (self.requested_total % u32::from(sliding::MAX_REPAIRS_AFTER)) as u8;
            let Some(payload) = self.encoder.repair_over(first, end, j) else {
                break;
            };
            self.requested_total = self.requested_total.wrapping_add(1);
            self.requested.1 += 1;
            out.push(Repair {
                end,
                j,
                payload,
                urgent: true,
            });
        }
        out
    }

    /// When the tail's round is due: `flush_after` after the last data
    /// packet, when data went out since the last round. The round comes
    /// after every burst of traffic, however much repair went with it, as
    /// a block code's flushed group sends its whole repair: a lone packet
    /// that TCP resends after a timeout otherwise goes with one repair
    /// (sliding:2,1 or 30,15 alike), and at 30% loss per path both were
    /// lost often enough to cost TCP a timeout each time (the simulator:
    /// 0.46 Mbit/s, every sliding code the same; erasure:30,15 1.19).
    pub(super) fn flush_at(&self, flush_after: std::time::Duration) -> Option<Instant> {
        (self.uncovered > 0).then(|| self.last_data + flush_after)
    }

    /// The tail's round is going out: how many repair packets (n-m, none
    /// when nothing is uncovered). The credit starts over.
    pub(super) fn flush(&mut self, (n, m): (u8, u8)) -> u32 {
        if self.uncovered == 0 {
            return 0;
        }
        self.uncovered = 0;
        self.credit = 0;
        u32::from(n - m)
    }
}
