//! An access point's clients (SMesh, seed 000): which unmodified clients
//! this node hears, how well, and which of them it serves. A client is
//! served by every access point whose quality is within `margin` of the
//! best any access point advertises for it, so that while it moves it is
//! served by several at once (seed 000's figure 1), and an access point
//! keeps serving for `hold` after it fell out of the margin, so that the
//! set does not flap. What is served goes into this node's advertisement
//! as client entries (one host address and a quality each); the tree of
//! every entry point then reaches all the serving access points.
//!
//! The driver measures quality (the daemon from ARP/ND probes answered on
//! an access interface; the simulator from its radio model) and reports it
//! with [`AccessPoint::heard`]; [`AccessPoint::update`] decides.

use std::collections::BTreeMap;
use std::time::Duration;

use braid_wire::Prefix;
use serde::{Deserialize, Serialize};

use crate::time::Instant;

/// How an access point decides which clients it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessConfig {
    /// An access point serves a client while its quality is at least the
    /// best other access point's minus this (quality units, 0-255; 96:
    /// both serve until one hears the client about 40% worse than the
    /// other). 0: only the best serves (ties: all of the best).
    pub margin: u8,
    /// How long an access point keeps serving after it fell out of the
    /// margin (3 s: longer than an advertisement takes to reach the
    /// network, so a client is never served by nobody while the set
    /// changes).
    pub hold: Duration,
    /// A client not reported for this long is forgotten (10 s).
    pub timeout: Duration,
    /// Most clients tracked; more are refused and counted (512).
    pub max_clients: usize,
    /// Qualities are advertised rounded down to a multiple of this (32),
    /// so that a quality that wavers does not re-issue the advertisement.
    pub quality_step: u8,
}

impl Default for AccessConfig {
    fn default() -> Self {
        AccessConfig {
            margin: 96,
            hold: Duration::from_secs(3),
            timeout: Duration::from_secs(10),
            max_clients: 512,
            quality_step: 32,
        }
    }
}

/// A client's address: an IPv4 address in the first four bytes when `v4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientAddr {
    /// The address, most significant byte first.
    pub addr: [u8; 16],
    /// Whether it is an IPv4 address.
    pub v4: bool,
}

impl ClientAddr {
    /// The advertisement entry for this client with `quality`.
    fn entry(self, quality: u8) -> Prefix {
        if self.v4 {
            Prefix::Client4 {
                addr: [self.addr[0], self.addr[1], self.addr[2], self.addr[3]],
                quality,
            }
        } else {
            Prefix::Client6 {
                addr: self.addr,
                quality,
            }
        }
    }
}

impl std::fmt::Display for ClientAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.v4 {
            let a = &self.addr;
            write!(f, "{}", std::net::Ipv4Addr::new(a[0], a[1], a[2], a[3]))
        } else {
            write!(f, "{}", std::net::Ipv6Addr::from(self.addr))
        }
    }
}

/// One client as this access point sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientState {
    /// The last quality the driver reported (0: not heard at all).
    pub quality: u8,
    /// When it was last reported.
    pub heard: Instant,
    /// Whether this access point serves it (advertises it).
    pub serving: bool,
    /// Since when it has been out of the margin while served.
    pub out_since: Option<Instant>,
}

/// What the access point counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AccessCounters {
    /// Clients refused because the table was full.
    pub refused: u64,
    /// Clients forgotten after `timeout`.
    pub expired: u64,
    /// Times this access point started serving a client.
    pub started: u64,
    /// Times it stopped.
    pub stopped: u64,
}

/// An access point's client table.
#[derive(Debug, Clone, Default)]
pub struct AccessPoint {
    config: AccessConfig,
    clients: BTreeMap<ClientAddr, ClientState>,
    advertised: Vec<Prefix>,
    counters: AccessCounters,
}

impl AccessPoint {
    /// An access point with no client yet.
    pub fn new(config: AccessConfig) -> Self {
        AccessPoint {
            config,
            ..Default::default()
        }
    }

    /// The settings.
    pub fn config(&self) -> &AccessConfig {
        &self.config
    }

    /// The clients tracked, by address.
    pub fn clients(&self) -> impl Iterator<Item = (&ClientAddr, &ClientState)> {
        self.clients.iter()
    }

    /// Whether no client is tracked.
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// What was counted.
    pub fn counters(&self) -> AccessCounters {
        self.counters
    }

    /// The driver measured `quality` (0-255) toward `client` at `now`.
    pub fn heard(&mut self, now: Instant, client: ClientAddr, quality: u8) {
        if let Some(c) = self.clients.get_mut(&client) {
            c.quality = quality;
            c.heard = now;
            return;
        }
        if quality == 0 {
            return; // never heard: nothing to track
        }
        if self.clients.len() >= self.config.max_clients {
            self.counters.refused += 1;
            return;
        }
        self.clients.insert(
            client,
            ClientState {
                quality,
                heard: now,
                serving: false,
                out_since: None,
            },
        );
    }

    /// When [`Self::update`] next has something to decide without a new
    /// report: a hold that ends, a client that times out.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.clients
            .values()
            .map(|c| {
                let gone = c.heard + self.config.timeout;
                c.out_since.map_or(gone, |s| gone.min(s + self.config.hold))
            })
            .min()
    }

    /// Decides which clients this access point serves at `now`, given the
    /// best quality another access point advertises for each (`others`).
    /// Returns the advertisement entries when they changed.
    pub fn update(
        &mut self,
        now: Instant,
        mut others: impl FnMut(&ClientAddr) -> Option<u8>,
    ) -> Option<Vec<Prefix>> {
        let cfg = self.config;
        let before = self.clients.len();
        self.clients.retain(|_, c| now.since(c.heard) < cfg.timeout);
        self.counters.expired += (before - self.clients.len()) as u64;
        let step = cfg.quality_step.max(1);
        let mut entries = Vec::new();
        for (addr, c) in self.clients.iter_mut() {
            let best_other = others(addr).unwrap_or(0);
            let within = c.quality > 0 && c.quality.saturating_add(cfg.margin) >= best_other;
            if within {
                if !c.serving {
                    self.counters.started += 1;
                }
                c.serving = true;
                c.out_since = None;
            } else if c.serving {
                let since = *c.out_since.get_or_insert(now);
                if now.since(since) >= cfg.hold {
                    c.serving = false;
                    c.out_since = None;
                    self.counters.stopped += 1;
                }
            }
            if c.serving {
                let q = (c.quality / step * step).max(1);
                entries.push(addr.entry(q));
            }
        }
        if entries == self.advertised {
            return None;
        }
        self.advertised = entries.clone();
        Some(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> ClientAddr {
        let mut addr = [0u8; 16];
        addr[..4].copy_from_slice(&[198, 18, 7, 7]);
        ClientAddr { addr, v4: true }
    }

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn serves_within_the_margin_and_holds_before_letting_go() {
        let mut ap = AccessPoint::new(AccessConfig {
            margin: 50,
            hold: Duration::from_secs(2),
            ..Default::default()
        });
        ap.heard(at(0), client(), 200);
        let e = ap.update(at(0), |_| Some(240)).expect("starts serving");
        assert_eq!(
            e,
            vec![Prefix::Client4 {
                addr: [198, 18, 7, 7],
                quality: 192
            }]
        );
        assert!(ap.update(at(100), |_| Some(240)).is_none(), "no change");
        // Falls out of the margin: still served for the hold.
        ap.heard(at(200), client(), 150);
        let e = ap.update(at(200), |_| Some(240)).expect("quality changed");
        assert_eq!(e.len(), 1);
        assert!(ap.update(at(2100), |_| Some(240)).is_none(), "held");
        assert_eq!(ap.update(at(2200), |_| Some(240)), Some(vec![]), "let go");
        assert_eq!(ap.counters().stopped, 1);
        // Back within the margin: served again at once.
        ap.heard(at(2300), client(), 230);
        assert!(ap
            .update(at(2300), |_| Some(240))
            .is_some_and(|e| e.len() == 1));
    }

    #[test]
    fn a_silent_client_is_forgotten_and_the_table_is_bounded() {
        let mut ap = AccessPoint::new(AccessConfig {
            max_clients: 1,
            ..Default::default()
        });
        ap.heard(at(0), client(), 255);
        let mut other = client();
        other.addr[3] = 8;
        ap.heard(at(0), other, 255);
        assert_eq!(ap.counters().refused, 1);
        assert_eq!(ap.update(at(0), |_| None).map(|e| e.len()), Some(1));
        assert_eq!(ap.update(at(10_000), |_| None), Some(vec![]));
        assert_eq!(ap.counters().expired, 1);
        assert_eq!(ap.clients().count(), 0);
        ap.heard(at(10_000), other, 0);
        assert_eq!(ap.clients().count(), 0, "quality 0 is not a client");
    }
}
