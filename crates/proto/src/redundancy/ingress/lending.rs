//! An ingress session lent to another encoder (the kernel data path) and
//! taken back: the numbers each encodes with, and what the borrower sent
//! on each path meanwhile, which the paths' estimates count as sent.

use super::IngressSession;

impl IngressSession {
    /// Lends the session to another encoder (the kernel data path): it
    /// gets this session's epoch and the numbers from `next_seq + gap` on;
    /// this encoder keeps the `gap` numbers before them for the packets
    /// that still reach it (those queued on the way, say) and then
    /// encodes nothing until [`Self::take_back`]. Returns (epoch, the
    /// first number lent); `None` if lent already.
    pub fn lend(&mut self, gap: u32) -> Option<(u32, u32)> {
        if self.lent.is_some() {
            return None;
        }
        let first = self.seq.wrapping_add(gap);
        self.lent = Some(first);
        Some((self.epoch, first))
    }

    /// Whether the session is lent (see [`Self::lend`]).
    pub fn is_lent(&self) -> bool {
        self.lent.is_some()
    }

    /// Whether the session is lent and its own numbers ran out.
    pub fn lent_and_exhausted(&self) -> bool {
        self.lent == Some(self.seq)
    }

    /// Takes the session back from the encoder it was lent to, which
    /// stopped at `next_seq` (the number it would have used next) having
    /// sent `sent[slot]` packets on each path slot: the paths' estimates
    /// count them as sent from here.
    pub fn take_back(&mut self, next_seq: u32, sent: &[u64]) {
        if let Some(first) = self.lent.take() {
            self.seq = next_seq;
            let (ended, _) = self.encoded_elsewhere;
            self.encoded_elsewhere = (ended + u64::from(next_seq.wrapping_sub(first)), 0);
            let bound = braid_wire::data::data_send_order(next_seq);
            for (e, &n) in self.estimators.iter_mut().zip(sent) {
                e.on_elsewhere_ended(bound, n);
            }
        }
    }

    /// While the session is lent: the encoder it was lent to has sent
    /// `sent[slot]` packets on each path slot so far, every one numbered
    /// below `next_seq` (it has numbered packets up to there: the data
    /// rate counts them). The paths' estimates count them: what the
    /// egress reports of them is measured against them (loss, rate) as
    /// against this encoder's own.
    pub fn on_sent_elsewhere(&mut self, next_seq: u32, sent: &[u64]) {
        let Some(first) = self.lent else {
            return;
        };
        self.encoded_elsewhere.1 = u64::from(next_seq.wrapping_sub(first));
        // The last number it took: no packet counted comes after it.
        let bound = braid_wire::data::data_send_order(next_seq.wrapping_sub(1));
        for (e, &n) in self.estimators.iter_mut().zip(sent) {
            if n > 0 {
                e.on_sent_elsewhere(bound, n);
            }
        }
    }
}
