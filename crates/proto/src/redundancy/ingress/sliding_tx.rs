//! The ingress's schedule for the sliding-window code (`Mode::Sliding`):
//! the window of recent data packets, the repair owed (n-m per m data
//! packets, due with the data packet that completes it), and the tail's
//! round after `flush_after` of silence. Which path a repair takes and
//! its header are the session's (`mod.rs`); the code is
//! `redundancy/sliding.rs`'s.

use crate::redundancy::sliding::{self, SlidingEncoder};
use crate::time::Instant;

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
