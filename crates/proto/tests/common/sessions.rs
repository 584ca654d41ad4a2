//! Sessions driven by hand: numbered payloads, an outgoing packet on the
//! wire, and a Gilbert loss chain per path.

use braid_proto::random::unit_f64;
use braid_proto::redundancy::{Outgoing, Payload};
use rand_chacha::ChaCha8Rng;

/// Packet `i`: its number first, then a length and filler that vary.
pub fn payload(i: usize) -> Vec<u8> {
    let mut p = (i as u32).to_be_bytes().to_vec();
    p.extend(std::iter::repeat_n((i * 31) as u8, (i * 7) % 53));
    p
}

/// The bytes of `o` on the wire (`input` is the packet a data copy carries).
pub fn wire(o: &Outgoing, input: &[u8]) -> Vec<u8> {
    let body: &[u8] = match &o.payload {
        Payload::Input => input,
        Payload::Repair(r) => r,
    };
    let mut buf = vec![0u8; 64 + body.len()];
    let n = o.header.emit(&[], &mut buf).unwrap();
    buf.truncate(n);
    buf.extend_from_slice(body);
    buf
}

/// A path losing packets as a Gilbert chain: `loss` of them, in runs of
/// `burst` on average (independent when `burst` is `1 / (1 - loss)`).
#[derive(Debug, Clone, Copy)]
pub struct Gilbert {
    to_bad: f64,
    to_good: f64,
    bad: bool,
}

impl Gilbert {
    pub fn new(loss: f64, burst: f64, rng: &mut ChaCha8Rng) -> Self {
        if loss <= 0.0 {
            return Gilbert {
                to_bad: 0.0,
                to_good: 1.0,
                bad: false,
            };
        }
        let to_good = (1.0 / burst).min(1.0 - loss);
        Gilbert {
            to_bad: loss * to_good / (1.0 - loss),
            to_good,
            bad: unit_f64(rng) < loss,
        }
    }

    pub fn independent(loss: f64, rng: &mut ChaCha8Rng) -> Self {
        Gilbert::new(loss, 1.0 / (1.0 - loss), rng)
    }

    /// Whether the next packet is lost.
    pub fn lose(&mut self, rng: &mut ChaCha8Rng) -> bool {
        let lost = self.bad;
        let r = unit_f64(rng);
        self.bad = if self.bad {
            r >= self.to_good
        } else {
            r < self.to_bad
        };
        lost
    }
}
