//! Control-plane authentication, sans-IO: RFC 8967's scheme (Babel's MAC
//! authentication) on braid's control header. It owns the keys, makes and
//! checks MACs, keeps each neighbor's replay state (boot index, highest
//! packet counter and a window of the counters just below it) and the
//! challenges that tell a neighbor that restarted from a replay of an old
//! boot. The control plane asks it about every message before anything
//! else looks at the message; what it refuses changes no table.
//!
//! * **MAC**: HMAC-SHA-256 (crates `hmac` and `sha2`, RustCrypto) over
//!   the control header and body, 32 bytes, keyed by the key the header's
//!   key id names. Every key configured is accepted; the first one signs.
//!   Rotating a key across a live network is three reloads, each without
//!   loss: add the new key second everywhere, then first everywhere, then
//!   drop the old one (docs/security.md).
//! * **Replays**: per sender, the boot index it was last verified with and
//!   the highest counter; a counter at or below the highest is accepted
//!   once within a window of [`REPLAY_WINDOW`] (a sender's copies on two
//!   links may cross), refused as `replayed` when seen and as
//!   `stale_counter` below the window.
//! * **Restarts**: a message with a boot index we hold no counter for
//!   (a new neighbor, a restarted one, or a replay of an old boot) is
//!   refused as `unverified_index`, and the sender is sent a challenge
//!   request with a fresh nonce. A reply that echoes it (and carries a
//!   valid MAC) proves the sender is live with the reply's index and
//!   counter: from then on its messages are accepted. One round trip.
//!   Messages with our own id and another boot index go through the same
//!   checks: a replay of our past boot is refused, a live second router
//!   with our id answers the challenge (the caller then reports it).
//! * **Answers to what is not verified** (a challenge request, a reply
//!   to an unverified message) are limited: each such message draws at
//!   most one challenge message (a request is answered, not also
//!   challenged back: the requester's next message is); at most one
//!   request to and one reply to each sender per [`CHALLENGE_INTERVAL`],
//!   answered or not; at most [`CHALLENGE_RATE`] a second in all (a
//!   burst of [`MAX_OUTBOX`]). What a limit holds back is counted
//!   (`challenges_limited`). Replaying anything at any rate makes a node
//!   send at most about 7 challenge messages a second per sender named.
//!
//! Bounds: at most [`MAX_PEERS`] senders with replay state, at most
//! [`MAX_PEERS`] challenges outstanding, at most [`MAX_OUTBOX`]
//! challenge messages waiting to be sent. Only a sender whose MAC checked
//! enters any of them: a stranger without the key can make none grow.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use braid_wire::{Challenge, ChallengeKind, ControlMessage, NodeId};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use thiserror::Error;

use crate::time::Instant;

/// Bytes of every MAC braid sends (a whole HMAC-SHA-256).
pub const MAC_LEN: usize = 32;
/// Least bytes of a secret (128 bits).
pub const MIN_SECRET: usize = 16;
/// Most bytes of a secret.
pub const MAX_SECRET: usize = 64;
/// Keys accepted at once: the one in use and the one being rotated in
/// (or out).
pub const MAX_KEYS: usize = 2;
/// Counters below a sender's highest that are still accepted once.
pub const REPLAY_WINDOW: u32 = 64;
/// Senders with replay state, and challenges outstanding.
pub const MAX_PEERS: usize = 1024;
/// Challenge messages waiting to be sent.
pub const MAX_OUTBOX: usize = 64;
/// A sender is asked again at most this often while unverified.
pub const CHALLENGE_INTERVAL: Duration = Duration::from_millis(300);
/// A reply later than this after its request is refused.
pub const CHALLENGE_TIMEOUT: Duration = Duration::from_secs(10);
/// Challenge messages sent per second at most, to all senders together
/// (a burst of up to [`MAX_OUTBOX`] at once).
pub const CHALLENGE_RATE: f64 = 50.0;

type HmacSha256 = Hmac<Sha256>;

/// One key: an id sent in every header it signs, and its secret.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthKey {
    /// Named in the header's key id (0-255).
    pub id: u8,
    secret: Vec<u8>,
}

impl std::fmt::Debug for AuthKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret.
        write!(
            f,
            "AuthKey {{ id: {}, secret: <{} bytes> }}",
            self.id,
            self.secret.len()
        )
    }
}

impl AuthKey {
    /// A key of `secret` (16 to 64 bytes).
    pub fn new(id: u8, secret: &[u8]) -> Result<Self, AuthError> {
        if !(MIN_SECRET..=MAX_SECRET).contains(&secret.len()) {
            return Err(AuthError::SecretLength {
                id,
                len: secret.len(),
            });
        }
        Ok(AuthKey {
            id,
            secret: secret.to_vec(),
        })
    }

    fn mac(&self, covered: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.secret).expect("HMAC takes any key length");
        mac.update(covered);
        mac
    }
}

/// Keys that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AuthError {
    /// A secret shorter than 16 or longer than 64 bytes.
    #[error("key {id}: the secret must be 16 to 64 bytes, got {len}")]
    SecretLength {
        /// The key's id.
        id: u8,
        /// Its length.
        len: usize,
    },
    /// More than two keys.
    #[error("at most {MAX_KEYS} keys are accepted at once, got {0}")]
    TooManyKeys(usize),
    /// Two keys with one id.
    #[error("two keys have id {0}")]
    DuplicateId(u8),
}

/// The keys of a node: empty means authentication is off (every message
/// accepted unsigned, as before: the driver warns).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthConfig {
    /// The first signs; all are accepted.
    pub keys: Vec<AuthKey>,
}

impl AuthConfig {
    /// Checks the key set.
    pub fn validate(&self) -> Result<(), AuthError> {
        if self.keys.len() > MAX_KEYS {
            return Err(AuthError::TooManyKeys(self.keys.len()));
        }
        if self.keys.len() == 2 && self.keys[0].id == self.keys[1].id {
            return Err(AuthError::DuplicateId(self.keys[0].id));
        }
        Ok(())
    }

    /// Whether messages are signed and checked.
    pub fn enabled(&self) -> bool {
        !self.keys.is_empty()
    }
}

/// Why a message was refused; each is a counter of `rx_errors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Refusal {
    /// No MAC, while authentication is on.
    #[error("unauthenticated")]
    Unauthenticated,
    /// A key id none of our keys has.
    #[error("unknown key")]
    UnknownKey,
    /// The MAC does not check (forged, or made with another secret).
    #[error("bad MAC")]
    BadMac,
    /// A counter already seen from this sender in this boot.
    #[error("replayed")]
    Replayed,
    /// A counter below the sender's replay window.
    #[error("stale counter")]
    StaleCounter,
    /// A boot index not (yet) proven live by a challenge.
    #[error("unverified boot index")]
    UnverifiedIndex,
    /// A challenge reply to no request of ours (or too late).
    #[error("unexpected challenge reply")]
    UnexpectedReply,
}

impl Refusal {
    /// The counter's name.
    pub fn kind(self) -> &'static str {
        match self {
            Refusal::Unauthenticated => "unauthenticated",
            Refusal::UnknownKey => "unknown_key",
            Refusal::BadMac => "bad_mac",
            Refusal::Replayed => "replayed",
            Refusal::StaleCounter => "stale_counter",
            Refusal::UnverifiedIndex => "unverified_index",
            Refusal::UnexpectedReply => "unexpected_challenge_reply",
        }
    }
}

/// What a message that passed means beyond itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passed {
    /// An ordinary message from a verified sender (or authentication is off).
    Message,
    /// A challenge reply that proved `0` live with a boot index we did not
    /// hold for it (new, or restarted). A reply that only confirms what
    /// we held is [`Passed::Challenge`].
    Verified(NodeId),
    /// A challenge (a request to us, answered; or not for us): nothing else to do.
    Challenge,
}

#[derive(Debug, Clone, Copy)]
struct Peer {
    index: u32,
    highest: u32,
    /// Bit i: counter `highest - i` seen (bit 0 is `highest` itself).
    seen: u64,
    last: Instant,
}

#[derive(Debug, Clone, Copy)]
struct Asked {
    nonce: [u8; 8],
    at: Instant,
    /// Not answered yet (a request): kept after the answer, so that the
    /// interval between two requests holds whatever is answered.
    open: bool,
}

/// The authenticator of one node.
#[derive(Debug, Clone)]
pub struct Authenticator {
    id: NodeId,
    config: AuthConfig,
    boot_index: u32,
    nonces: u32,
    peers: BTreeMap<NodeId, Peer>,
    asked: BTreeMap<NodeId, Asked>,
    /// The last request answered per requester: a replayed request (the
    /// same nonce) is not answered again.
    answered: BTreeMap<NodeId, Asked>,
    outbox: VecDeque<Challenge>,
    /// Challenge messages that may be sent now (refilled at
    /// [`CHALLENGE_RATE`], at most [`MAX_OUTBOX`]), and when last
    /// refilled.
    budget: f64,
    refilled: Option<Instant>,
    /// Challenge messages dropped because the outbox was full.
    pub outbox_full: u64,
    /// Challenge messages not sent because a rate limit held (per
    /// sender, or all together).
    pub challenges_limited: u64,
    /// Challenge requests sent, and replies that verified a sender.
    pub challenges_sent: u64,
    /// Replies that proved a sender live.
    pub senders_verified: u64,
    /// Challenges whose MAC checked (for us or not, answered or not).
    pub challenges_received: u64,
}

impl Authenticator {
    /// The authenticator of node `id`, whose boot index (its nonces' first
    /// half) is `boot_index`.
    pub fn new(id: NodeId, config: AuthConfig, boot_index: u32) -> Result<Self, AuthError> {
        config.validate()?;
        Ok(Authenticator {
            id,
            config,
            boot_index,
            nonces: 0,
            peers: BTreeMap::new(),
            asked: BTreeMap::new(),
            answered: BTreeMap::new(),
            outbox: VecDeque::new(),
            budget: MAX_OUTBOX as f64,
            refilled: None,
            outbox_full: 0,
            challenges_limited: 0,
            challenges_sent: 0,
            senders_verified: 0,
            challenges_received: 0,
        })
    }

    /// Whether messages are signed and checked.
    pub fn enabled(&self) -> bool {
        self.config.enabled()
    }

    /// The keys in use.
    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// New keys (a reload): senders stay verified (their boot indices and
    /// counters do not depend on the key).
    pub fn set_keys(&mut self, config: AuthConfig) -> Result<(), AuthError> {
        config.validate()?;
        self.config = config;
        Ok(())
    }

    /// The key id and MAC length every header we send carries.
    pub fn header_fields(&self) -> (u8, u8) {
        match self.config.keys.first() {
            Some(k) => (k.id, MAC_LEN as u8),
            None => (0, 0),
        }
    }

    /// Fills in the MAC of the whole control message in `buf` (emitted
    /// with [`Self::header_fields`]). Nothing to do when off.
    pub fn sign(&self, buf: &mut [u8]) {
        let Some(key) = self.config.keys.first() else {
            return;
        };
        let Ok((covered, trailer)) = braid_wire::split_mac(buf) else {
            return;
        };
        if trailer.len() == MAC_LEN {
            trailer.copy_from_slice(&key.mac(covered).finalize().into_bytes());
        }
    }

    /// Checks the MAC alone (messages with no replay state: path reports,
    /// which travel end to end inside data packets).
    pub fn check_mac(&self, msg: &ControlMessage<'_>) -> Result<(), Refusal> {
        if !self.enabled() {
            return Ok(());
        }
        if msg.mac.is_empty() {
            return Err(Refusal::Unauthenticated);
        }
        let key = self
            .config
            .keys
            .iter()
            .find(|k| k.id == msg.header.key_id)
            .ok_or(Refusal::UnknownKey)?;
        key.mac(msg.authenticated)
            .verify_slice(msg.mac)
            .map_err(|_| Refusal::BadMac)
    }

    /// Checks a link-local control message from a neighbor (never our
    /// own id: the caller handles those). `challenge` is its body when it
    /// is a challenge. Nothing is changed unless the MAC checks.
    pub fn check(
        &mut self,
        now: Instant,
        msg: &ControlMessage<'_>,
        challenge: Option<&Challenge>,
    ) -> Result<Passed, Refusal> {
        if !self.enabled() {
            return Ok(match challenge {
                Some(_) => Passed::Challenge,
                None => Passed::Message,
            });
        }
        self.check_mac(msg)?;
        let h = &msg.header;
        if let Some(c) = challenge {
            self.challenges_received += 1;
            if c.target != self.id {
                return Ok(Passed::Challenge);
            }
            match c.kind {
                ChallengeKind::Request => {
                    // Answered whatever we know of the requester: it asks
                    // because it does not know us (RFC 8967 §4.3). Once
                    // per nonce: a replayed request gets no second reply
                    // (a stranger replaying requests makes us send
                    // nothing); and once per interval per requester (a
                    // stranger replaying many old requests makes us send
                    // little).
                    let last = self.answered.get(&h.sender);
                    if last
                        .is_some_and(|a| a.nonce == c.nonce && now.since(a.at) <= CHALLENGE_TIMEOUT)
                    {
                        return Ok(Passed::Challenge);
                    }
                    if last.is_some_and(|a| now.since(a.at) < CHALLENGE_INTERVAL) {
                        self.challenges_limited += 1;
                        return Ok(Passed::Challenge);
                    }
                    if !self.answered.contains_key(&h.sender) && self.answered.len() >= MAX_PEERS {
                        self.answered
                            .retain(|_, a| now.since(a.at) <= CHALLENGE_TIMEOUT);
                    }
                    if self.answered.len() < MAX_PEERS || self.answered.contains_key(&h.sender) {
                        self.answered.insert(
                            h.sender,
                            Asked {
                                nonce: c.nonce,
                                at: now,
                                open: false,
                            },
                        );
                    }
                    // Only the reply: if the requester is as new to us as
                    // we are to it, its next message is challenged (one
                    // datagram per unverified one, whatever it is).
                    self.queue(
                        now,
                        Challenge {
                            kind: ChallengeKind::Reply,
                            target: h.sender,
                            nonce: c.nonce,
                        },
                    );
                    return Ok(Passed::Challenge);
                }
                ChallengeKind::Reply => {
                    let ok = self.asked.get(&h.sender).is_some_and(|a| {
                        a.open && a.nonce == c.nonce && now.since(a.at) <= CHALLENGE_TIMEOUT
                    });
                    if !ok {
                        return Err(Refusal::UnexpectedReply);
                    }
                    if let Some(a) = self.asked.get_mut(&h.sender) {
                        a.open = false;
                    }
                    self.senders_verified += 1;
                    let known = self.is_verified(h.sender, h.boot_index);
                    self.remember(now, h.sender, h.boot_index, h.counter);
                    return Ok(if known {
                        Passed::Challenge
                    } else {
                        Passed::Verified(h.sender)
                    });
                }
            }
        }
        let Some(peer) = self.peers.get_mut(&h.sender) else {
            self.ask(now, h.sender);
            return Err(Refusal::UnverifiedIndex);
        };
        if peer.index != h.boot_index {
            self.ask(now, h.sender);
            return Err(Refusal::UnverifiedIndex);
        }
        let ahead = h.counter.wrapping_sub(peer.highest);
        if ahead != 0 && ahead < 1 << 31 {
            // Newer: slide the window.
            peer.seen = if ahead >= 64 { 0 } else { peer.seen << ahead };
            peer.seen |= 1;
            peer.highest = h.counter;
        } else {
            let behind = peer.highest.wrapping_sub(h.counter);
            if behind >= REPLAY_WINDOW {
                return Err(Refusal::StaleCounter);
            }
            if peer.seen & (1 << behind) != 0 {
                return Err(Refusal::Replayed);
            }
            peer.seen |= 1 << behind;
        }
        peer.last = now;
        Ok(Passed::Message)
    }

    fn is_verified(&self, sender: NodeId, index: u32) -> bool {
        self.peers.get(&sender).is_some_and(|p| p.index == index)
    }

    fn remember(&mut self, now: Instant, sender: NodeId, index: u32, counter: u32) {
        if !self.peers.contains_key(&sender) && self.peers.len() >= MAX_PEERS {
            // Full: forget the sender heard least recently (it will be
            // challenged again if it is still there).
            if let Some(oldest) = self
                .peers
                .iter()
                .min_by_key(|(_, p)| p.last)
                .map(|(&id, _)| id)
            {
                self.peers.remove(&oldest);
            }
        }
        // Everything the sender sent before the reply counts as seen: it
        // was refused while unverified, and a replay of it must not pass.
        self.peers.insert(
            sender,
            Peer {
                index,
                highest: counter,
                seen: u64::MAX,
                last: now,
            },
        );
    }

    /// Sends `sender` a challenge request, at most once per
    /// [`CHALLENGE_INTERVAL`] (answered or not).
    fn ask(&mut self, now: Instant, sender: NodeId) {
        if let Some(a) = self.asked.get(&sender) {
            if now.since(a.at) < CHALLENGE_INTERVAL {
                self.challenges_limited += 1;
                return;
            }
        } else if self.asked.len() >= MAX_PEERS {
            self.asked
                .retain(|_, a| now.since(a.at) <= CHALLENGE_TIMEOUT);
            if self.asked.len() >= MAX_PEERS {
                return;
            }
        }
        self.nonces = self.nonces.wrapping_add(1);
        let mut nonce = [0u8; 8];
        nonce[..4].copy_from_slice(&self.boot_index.to_be_bytes());
        nonce[4..].copy_from_slice(&self.nonces.to_be_bytes());
        let request = Challenge {
            kind: ChallengeKind::Request,
            target: sender,
            nonce,
        };
        if self.queue(now, request) {
            self.asked.insert(
                sender,
                Asked {
                    nonce,
                    at: now,
                    open: true,
                },
            );
            self.challenges_sent += 1;
        }
    }

    /// Queues `c` if the overall rate and the outbox allow; whether it was.
    fn queue(&mut self, now: Instant, c: Challenge) -> bool {
        let since = self.refilled.map_or(Duration::ZERO, |t| now.since(t));
        self.refilled = Some(now);
        self.budget = (self.budget + since.as_secs_f64() * CHALLENGE_RATE).min(MAX_OUTBOX as f64);
        if self.budget < 1.0 {
            self.challenges_limited += 1;
            return false;
        }
        if self.outbox.len() >= MAX_OUTBOX {
            self.outbox_full += 1;
            return false;
        }
        self.budget -= 1.0;
        self.outbox.push_back(c);
        true
    }

    /// The next challenge message to send, if any.
    pub fn poll_challenge(&mut self) -> Option<Challenge> {
        self.outbox.pop_front()
    }

    /// Senders with replay state.
    pub fn verified(&self) -> usize {
        self.peers.len()
    }

    /// Whether `sender` was proven live by a challenge (any boot).
    pub fn is_proven(&self, sender: NodeId) -> bool {
        self.peers.contains_key(&sender)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_wire::{ControlHeader, MessageType};

    fn keys(ids: &[(u8, &[u8])]) -> AuthConfig {
        AuthConfig {
            keys: ids
                .iter()
                .map(|(id, s)| AuthKey::new(*id, s).unwrap())
                .collect(),
        }
    }

    const A: &[u8] = b"0123456789abcdef0123456789abcdef";
    const B: &[u8] = b"another secret of enough length!";

    /// A signed challenge-free probe-like message (a path report body is
    /// the simplest valid control message to build).
    fn message(auth: &Authenticator, sender: u16, index: u32, counter: u32) -> Vec<u8> {
        let (key_id, mac_len) = auth.header_fields();
        let header = ControlHeader {
            key_id,
            mac_len,
            boot_index: index,
            counter,
            ..ControlHeader::new(MessageType::PathReport, NodeId(sender))
        };
        let mut buf = vec![0u8; 128];
        let n = braid_wire::PathReport::emit(&header, NodeId(1), 0, &[], &mut buf).unwrap();
        buf.truncate(n);
        auth.sign(&mut buf);
        buf
    }

    fn check(auth: &mut Authenticator, now: u64, bytes: &[u8]) -> Result<Passed, Refusal> {
        let msg = ControlMessage::parse(bytes).unwrap();
        let c = braid_wire::Challenge::parse(&msg).ok();
        auth.check(Instant::from_millis(now), &msg, c.as_ref())
    }

    /// Runs the challenge exchange between `a` (receiver) and `b`
    /// at `now` (ms).
    fn verify(
        a: &mut Authenticator,
        b: &mut Authenticator,
        (b_id, b_index, counter): (u16, u32, u32),
        now: u64,
    ) {
        let first = message(b, b_id, b_index, counter);
        assert_eq!(check(a, now, &first), Err(Refusal::UnverifiedIndex));
        let req = a.poll_challenge().expect("a challenge request");
        assert_eq!(req.kind, ChallengeKind::Request);
        let reply = b.answer_for_test(req, NodeId(b_id), b_index, counter + 1, a.id);
        assert_eq!(
            check(a, now + 1, &reply),
            Ok(Passed::Verified(NodeId(b_id)))
        );
    }

    impl Authenticator {
        /// What `b` sends when it hears `req` from `from`.
        fn answer_for_test(
            &mut self,
            req: Challenge,
            me: NodeId,
            index: u32,
            counter: u32,
            from: NodeId,
        ) -> Vec<u8> {
            assert_eq!(req.target, me);
            let (key_id, mac_len) = self.header_fields();
            let header = ControlHeader {
                key_id,
                mac_len,
                boot_index: index,
                counter,
                ..ControlHeader::new(MessageType::Challenge, me)
            };
            let reply = Challenge {
                kind: ChallengeKind::Reply,
                target: from,
                nonce: req.nonce,
            };
            let mut buf = vec![0u8; 128];
            let n = reply.emit(&header, &mut buf).unwrap();
            buf.truncate(n);
            self.sign(&mut buf);
            buf
        }
    }

    #[test]
    fn a_stranger_without_the_key_is_refused_and_leaves_no_state() {
        let mut a = Authenticator::new(NodeId(1), keys(&[(1, A)]), 7).unwrap();
        let stranger = Authenticator::new(NodeId(2), keys(&[(1, B)]), 9).unwrap();
        let unsigned = Authenticator::new(NodeId(2), AuthConfig::default(), 9).unwrap();
        assert_eq!(
            check(&mut a, 0, &message(&stranger, 2, 9, 1)),
            Err(Refusal::BadMac)
        );
        assert_eq!(
            check(&mut a, 0, &message(&unsigned, 2, 9, 1)),
            Err(Refusal::Unauthenticated)
        );
        let other_id = Authenticator::new(NodeId(2), keys(&[(5, A)]), 9).unwrap();
        assert_eq!(
            check(&mut a, 0, &message(&other_id, 2, 9, 1)),
            Err(Refusal::UnknownKey)
        );
        // A flipped bit anywhere the MAC covers, or in the MAC.
        let friend = Authenticator::new(NodeId(2), keys(&[(1, A)]), 9).unwrap();
        let good = message(&friend, 2, 9, 1);
        for i in [1, 5, 9, 13, good.len() - 1] {
            let mut bad = good.clone();
            bad[i] ^= 0x10;
            if let Ok(msg) = ControlMessage::parse(&bad) {
                assert_eq!(
                    a.check(Instant::ZERO, &msg, None),
                    Err(Refusal::BadMac),
                    "byte {i}"
                );
            }
        }
        assert_eq!(a.verified(), 0);
        assert!(a.poll_challenge().is_none(), "no challenge for a forger");
    }

    #[test]
    fn a_new_sender_is_challenged_once_then_accepted_and_replays_are_refused() {
        let mut a = Authenticator::new(NodeId(1), keys(&[(1, A)]), 7).unwrap();
        let mut b = Authenticator::new(NodeId(2), keys(&[(1, A)]), 9).unwrap();
        verify(&mut a, &mut b, (2, 900, 10), 0);
        let m12 = message(&b, 2, 900, 12);
        assert_eq!(check(&mut a, 2, &m12), Ok(Passed::Message));
        assert_eq!(check(&mut a, 2, &m12), Err(Refusal::Replayed));
        // Crossing copies inside the window are taken once.
        let m13 = message(&b, 2, 900, 13);
        let m40 = message(&b, 2, 900, 40);
        assert_eq!(check(&mut a, 3, &m40), Ok(Passed::Message));
        assert_eq!(check(&mut a, 3, &m13), Ok(Passed::Message));
        assert_eq!(check(&mut a, 3, &m13), Err(Refusal::Replayed));
        let m200 = message(&b, 2, 900, 200);
        assert_eq!(check(&mut a, 4, &m200), Ok(Passed::Message));
        assert_eq!(
            check(&mut a, 4, &message(&b, 2, 900, 100)),
            Err(Refusal::StaleCounter)
        );
        // A replay of an old boot is refused and challenged; the old
        // boot cannot answer with the new nonce, the live one can.
        assert_eq!(
            check(&mut a, 500, &message(&b, 2, 800, 5000)),
            Err(Refusal::UnverifiedIndex)
        );
        let req = a.poll_challenge().unwrap();
        let stale_reply = b.answer_for_test(
            Challenge {
                nonce: [0; 8],
                ..req
            },
            NodeId(2),
            800,
            5001,
            NodeId(1),
        );
        assert_eq!(
            check(&mut a, 500, &stale_reply),
            Err(Refusal::UnexpectedReply)
        );
        // Still verified with the live index.
        assert_eq!(
            check(&mut a, 501, &message(&b, 2, 900, 201)),
            Ok(Passed::Message)
        );
    }

    #[test]
    fn a_restarted_sender_is_verified_with_its_new_index() {
        let mut a = Authenticator::new(NodeId(1), keys(&[(1, A)]), 7).unwrap();
        let mut b = Authenticator::new(NodeId(2), keys(&[(1, A)]), 9).unwrap();
        verify(&mut a, &mut b, (2, 900, 500), 0);
        // Restarted: a new index, counters from 1 again.
        verify(&mut a, &mut b, (2, 901, 1), 1000);
        assert_eq!(
            check(&mut a, 1002, &message(&b, 2, 901, 3)),
            Ok(Passed::Message)
        );
        assert_eq!(
            check(&mut a, 1002, &message(&b, 2, 900, 501)),
            Err(Refusal::UnverifiedIndex)
        );
    }

    /// A signed challenge request from `sender` (boot `index`) to `target`.
    fn request(auth: &Authenticator, sender: u16, index: u32, target: u16, nonce: u8) -> Vec<u8> {
        let (key_id, mac_len) = auth.header_fields();
        let header = ControlHeader {
            key_id,
            mac_len,
            boot_index: index,
            counter: 1,
            ..ControlHeader::new(MessageType::Challenge, NodeId(sender))
        };
        let req = Challenge {
            kind: ChallengeKind::Request,
            target: NodeId(target),
            nonce: [nonce; 8],
        };
        let mut buf = vec![0u8; 128];
        let n = req.emit(&header, &mut buf).unwrap();
        buf.truncate(n);
        auth.sign(&mut buf);
        buf
    }

    #[test]
    fn a_challenge_request_is_answered_once_and_not_challenged_back() {
        let mut a = Authenticator::new(NodeId(1), keys(&[(1, A)]), 7).unwrap();
        let buf = request(&a, 2, 33, 1, 5);
        assert_eq!(check(&mut a, 0, &buf), Ok(Passed::Challenge));
        let reply = a.poll_challenge().unwrap();
        assert_eq!(
            (reply.kind, reply.target, reply.nonce),
            (ChallengeKind::Reply, NodeId(2), [5; 8])
        );
        // One datagram for one request: the requester is challenged on
        // its next message, not now.
        assert!(a.poll_challenge().is_none());
        // The same request again (a replay): no second reply.
        assert_eq!(check(&mut a, 100, &buf), Ok(Passed::Challenge));
        assert!(a.poll_challenge().is_none());
        assert_eq!(a.challenges_received, 2);
        let next = message(&a, 2, 33, 2);
        assert_eq!(check(&mut a, 101, &next), Err(Refusal::UnverifiedIndex));
        let back = a.poll_challenge().unwrap();
        assert_eq!(
            (back.kind, back.target),
            (ChallengeKind::Request, NodeId(2))
        );
    }

    #[test]
    fn replays_at_any_rate_draw_one_challenge_per_interval() {
        let mut a = Authenticator::new(NodeId(1), keys(&[(1, A)]), 7).unwrap();
        let mut b = Authenticator::new(NodeId(2), keys(&[(1, A)]), 9).unwrap();
        verify(&mut a, &mut b, (2, 900, 10), 0);
        // 3 s of an old boot's messages replayed at 1,000 a second, each
        // request answered by the live sender: one request per interval,
        // not one per answer.
        let mut requests = 0;
        for ms in 0..3000u64 {
            let old = message(&b, 2, 800, 5000 + ms as u32);
            assert_eq!(check(&mut a, 10 + ms, &old), Err(Refusal::UnverifiedIndex));
            while let Some(req) = a.poll_challenge() {
                requests += 1;
                let reply = b.answer_for_test(req, NodeId(2), 900, 20 + ms as u32, NodeId(1));
                // Re-verified as it was: nothing new.
                assert_eq!(check(&mut a, 10 + ms, &reply), Ok(Passed::Challenge));
            }
        }
        assert!((9..=11).contains(&requests), "{requests} requests in 3 s");
        assert!(a.challenges_limited > 2900);
        // Requests with ever new nonces (an old boot's, replayed): one
        // reply per interval.
        let mut replies = 0;
        for ms in 0..3000u64 {
            let req = request(&b, 2, 800, 1, (ms % 251) as u8);
            assert_eq!(check(&mut a, 4000 + ms, &req), Ok(Passed::Challenge));
            while a.poll_challenge().is_some() {
                replies += 1;
            }
        }
        assert!((9..=11).contains(&replies), "{replies} replies in 3 s");
    }

    #[test]
    fn all_senders_together_draw_at_most_the_overall_rate() {
        let mut a = Authenticator::new(NodeId(1), keys(&[(1, A)]), 7).unwrap();
        let b = Authenticator::new(NodeId(2), keys(&[(1, A)]), 9).unwrap();
        // A key holder's messages from 1,000 ids in 1 s, each unverified.
        let mut sent = 0;
        for i in 0..1000u64 {
            let m = message(&b, 100 + i as u16, 1, 1);
            assert_eq!(check(&mut a, i, &m), Err(Refusal::UnverifiedIndex));
            while a.poll_challenge().is_some() {
                sent += 1;
            }
        }
        // The burst, then the rate.
        let most = MAX_OUTBOX + CHALLENGE_RATE as usize + 1;
        assert!(sent <= most, "{sent} challenges in 1 s");
        assert!(sent >= CHALLENGE_RATE as usize, "{sent}");
        assert_eq!(a.challenges_limited as usize, 1000 - sent);
    }

    #[test]
    fn either_of_two_keys_is_accepted_and_the_first_signs() {
        let mut a = Authenticator::new(NodeId(1), keys(&[(1, A), (2, B)]), 7).unwrap();
        let mut old = Authenticator::new(NodeId(2), keys(&[(1, A)]), 9).unwrap();
        let new = Authenticator::new(NodeId(3), keys(&[(2, B), (1, A)]), 9).unwrap();
        assert_eq!(new.header_fields(), (2, MAC_LEN as u8));
        verify(&mut a, &mut old, (2, 9, 1), 0);
        assert_eq!(
            check(&mut a, 1, &message(&new, 3, 9, 1)),
            Err(Refusal::UnverifiedIndex)
        );
        assert!(a.set_keys(keys(&[(2, B)])).is_ok());
        assert_eq!(
            check(&mut a, 2, &message(&old, 2, 9, 5)),
            Err(Refusal::UnknownKey)
        );
    }

    #[test]
    fn bad_key_sets_are_refused() {
        assert!(AuthKey::new(1, b"short").is_err());
        assert_eq!(
            AuthConfig {
                keys: vec![AuthKey::new(1, A).unwrap(); 3]
            }
            .validate(),
            Err(AuthError::TooManyKeys(3))
        );
        assert_eq!(
            AuthConfig {
                keys: vec![AuthKey::new(1, A).unwrap(), AuthKey::new(1, B).unwrap()]
            }
            .validate(),
            Err(AuthError::DuplicateId(1))
        );
        assert!(!format!("{:?}", AuthKey::new(1, A).unwrap()).contains("0123"));
    }
}
