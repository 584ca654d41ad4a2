//! Copies of one packet that entered the mesh twice, dropped at the
//! egress. A client on a shared radio reaches two access points, and both
//! forward its frame into the mesh: two sessions, two sequence spaces, so
//! the sessions' dedup cannot see that the two packets are one. Without
//! braid bytes on the client's packet, a copy is recognised by its bytes:
//! the same IP packet (TTL or hop limit and the IPv4 header checksum left
//! out, as routers change them) delivered again within `window`. The
//! first 64 bytes and the length are hashed: they hold the IP header (the
//! IPv4 identification, which Linux numbers per packet, retransmissions
//! included) and the transport header (TCP's sequence numbers and
//! timestamp, UDP's and TCP's checksum over the payload), so two packets
//! that differ anywhere almost surely differ there.
//!
//! Bounded: at most [`MAX_REMEMBERED`] packets are remembered (the oldest
//! forgotten first); a packet is forgotten after `window`.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use crate::classify::fnv;
use crate::time::Instant;

/// Most packets remembered at once (at 50 ms, 80,000 packets/s: about
/// 900 Mbit/s of full-size packets; beyond that the oldest are forgotten
/// before the window ends). The tables grow to what the egress's rate
/// needs (a VoIP egress remembers a handful of packets; at most about
/// 130 KB) and then stay: delivering allocates nothing once warm.
pub const MAX_REMEMBERED: usize = 4096;

/// Bytes of a packet hashed (besides its length).
const HASHED: usize = 64;

/// The packets delivered within the last `window`.
#[derive(Debug, Clone, Default)]
pub struct CopyFilter {
    seen: HashSet<u64>,
    order: VecDeque<(Instant, u64)>,
}

impl CopyFilter {
    /// Whether `packet` (an IP packet) is a copy of one delivered within
    /// `window` before `now`; if not, it is remembered.
    pub fn is_copy(&mut self, now: Instant, window: Duration, packet: &[u8]) -> bool {
        while let Some(&(at, h)) = self.order.front() {
            if now.since(at) < window && self.order.len() < MAX_REMEMBERED {
                break;
            }
            self.order.pop_front();
            self.seen.remove(&h);
        }
        let h = digest(packet);
        if self.seen.contains(&h) {
            return true;
        }
        self.seen.insert(h);
        self.order.push_back((now, h));
        false
    }
}

/// The packet's hash (FNV-1a, as the flow hash), TTL or hop limit and the
/// IPv4 header checksum left out.
fn digest(packet: &[u8]) -> u64 {
    let head = &packet[..packet.len().min(HASHED)];
    let h = 0xcbf2_9ce4_8422_2325 ^ packet.len() as u64;
    let part = |from: usize, to: usize| head.get(from..to.min(head.len())).unwrap_or(&[]);
    if head.first().is_some_and(|b| b >> 4 == 4) {
        // Skips the TTL (8) and the header checksum (10-11).
        let h = fnv(h, part(0, 8));
        let h = fnv(h, part(9, 10));
        fnv(h, part(12, HASHED))
    } else {
        // Skips the hop limit (7).
        fnv(fnv(h, part(0, 7)), part(8, HASHED))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(id: u16, ttl: u8, payload: u8) -> Vec<u8> {
        let mut p = vec![0u8; 100];
        p[0] = 0x45;
        p[4..6].copy_from_slice(&id.to_be_bytes());
        p[8] = ttl;
        p[10] = ttl ^ 0x5a; // a checksum that follows the TTL
        p[40] = payload;
        p
    }

    #[test]
    fn a_copy_through_another_access_point_is_caught_within_the_window() {
        let w = Duration::from_millis(50);
        let mut f = CopyFilter::default();
        let t = |ms| Instant::from_millis(ms);
        assert!(!f.is_copy(t(0), w, &packet(1, 64, 0)));
        // The copy crossed one hop more: TTL and checksum differ.
        assert!(f.is_copy(t(5), w, &packet(1, 63, 0)));
        // Another packet: another IP id, or other bytes.
        assert!(!f.is_copy(t(6), w, &packet(2, 64, 0)));
        assert!(!f.is_copy(t(6), w, &packet(1, 64, 1)));
        // The same bytes after the window: a packet sent again.
        assert!(!f.is_copy(t(60), w, &packet(1, 64, 0)));
        // IPv6: the hop limit (byte 7) is left out.
        let mut a = vec![0u8; 80];
        a[0] = 0x60;
        a[7] = 64;
        let mut b = a.clone();
        b[7] = 60;
        assert!(!f.is_copy(t(61), w, &a));
        assert!(f.is_copy(t(62), w, &b));
        assert!(!f.is_copy(t(62), w, &[]), "no bytes: nothing to compare");
    }

    #[test]
    fn the_memory_is_bounded() {
        let w = Duration::from_secs(60);
        let mut f = CopyFilter::default();
        let now = Instant::from_millis(1);
        for i in 0..(MAX_REMEMBERED as u32 + 100) {
            let mut p = packet(0, 64, 0);
            p[12..16].copy_from_slice(&i.to_be_bytes());
            assert!(!f.is_copy(now, w, &p));
        }
        assert!(f.order.len() <= MAX_REMEMBERED && f.seen.len() <= MAX_REMEMBERED);
        // The oldest were forgotten to make room.
        assert!(!f.is_copy(now, w, &{
            let mut p = packet(0, 64, 0);
            p[12..16].copy_from_slice(&0u32.to_be_bytes());
            p
        }));
    }
}
