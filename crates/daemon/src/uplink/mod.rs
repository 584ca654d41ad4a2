//! A gateway's uplink health (`[uplink]`): the prefixes it serves through
//! its uplink (the default route, most often) are advertised only while
//! probes beyond the uplink are answered, so that a gateway whose modem
//! stays up while nothing answers beyond it stops drawing the mesh's
//! Internet traffic within `down` rounds, and takes it back after `up`.
//!
//! | module | owns |
//! |---|---|
//! | `track` | [`Tracker`]: rounds judged, the healthy/down decision with its hysteresis (sans-IO) |
//! | `probe` | [`Prober`]: the probes on the wire (ICMP echo, TCP connect, DNS) and their answers matched to a round and a target |
//!
//! This file joins them for the daemon's loop: it runs the tracker's
//! timers, sends what a round asks, feeds the answers back and tells the
//! node which prefixes to advertise.

mod probe;
mod track;

use std::net::IpAddr;
use std::os::fd::RawFd;

use braid_proto::control::External;
use braid_proto::node::Node;
use braid_proto::time::Instant;
use braid_wire::Prefix;

pub use probe::{Method, ProbeCounters, Prober};
pub use track::{Step, TargetStats, TrackConfig, TrackCounters, Tracker, MAX_TARGETS};

/// `[uplink]` as the daemon runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct UplinkConfig {
    /// What is advertised only while the uplink is healthy.
    pub prefixes: Vec<Prefix>,
    pub method: Method,
    pub targets: Vec<IpAddr>,
    /// The probes leave by this interface (SO_BINDTODEVICE), whatever the
    /// routing table says.
    pub interface: Option<String>,
    pub track: TrackConfig,
    /// Advertised with the prefixes while healthy (a
    /// [`Prefix::Gateway`]: preference and capacity), when either is set.
    pub gateway: Option<Prefix>,
}

/// A change of the uplink's state, for the log and the monitors.
#[derive(Debug, Clone, PartialEq)]
pub struct UplinkChange {
    pub healthy: bool,
    /// The prefixes advertised or withdrawn.
    pub prefixes: Vec<Prefix>,
    /// Targets that answered the round that decided it.
    pub answered: Vec<IpAddr>,
}

/// The uplink checker the loop runs.
pub struct Uplink {
    config: UplinkConfig,
    tracker: Tracker,
    prober: Prober,
    answers: Vec<(u16, usize)>,
}

impl Uplink {
    /// Opens the probe sockets; the first round is due at once. `ident`
    /// tells this daemon's echoes from other pings' (random).
    pub fn open(config: UplinkConfig, now: Instant, ident: u16) -> std::io::Result<Uplink> {
        let prober = Prober::open(
            config.method,
            config.targets.clone(),
            config.interface.clone(),
            ident,
        )?;
        Ok(Uplink {
            tracker: Tracker::new(config.track, now, ident),
            prober,
            config,
            answers: Vec::new(),
        })
    }

    /// The sockets answers arrive on, to poll for reading.
    pub fn read_fds(&self) -> Vec<RawFd> {
        self.prober.read_fds().collect()
    }

    /// Whether the uplink is healthy now.
    pub fn healthy(&self) -> bool {
        self.tracker.healthy()
    }

    /// When [`Self::advance`] should next run.
    pub fn poll_timeout(&self) -> Instant {
        self.tracker.poll_timeout()
    }

    /// Runs the timers due at `now`: a round judged (a change, if any, is
    /// applied to the node and returned), the next one sent. Returns the
    /// TCP probes to poll for writing (`(target, fd)`).
    pub fn advance(
        &mut self,
        now: Instant,
        node: &mut Node,
        watch: &mut Vec<(usize, RawFd)>,
    ) -> Option<UplinkChange> {
        let step = self.tracker.handle_timeout(now);
        let mut change = None;
        if let Some(healthy) = step.changed {
            change = Some(self.apply(healthy, node));
        }
        if step.ended {
            // Its TCP probes still waiting go.
            self.prober.close_connects();
        }
        if let Some(seq) = step.probe {
            let mut at_once = Vec::new();
            watch.extend(self.prober.send_round(seq, &mut at_once));
            for target in at_once {
                if let Some(h) = self.tracker.answered(now, seq, target) {
                    change = Some(self.apply(h, node));
                }
            }
        }
        change
    }

    /// Answers waiting on the ICMP or DNS sockets.
    pub fn read(&mut self, now: Instant, node: &mut Node) -> Option<UplinkChange> {
        let mut answers = std::mem::take(&mut self.answers);
        answers.clear();
        self.prober.read(&mut answers);
        let mut change = None;
        for &(seq, target) in &answers {
            if let Some(h) = self.tracker.answered(now, seq, target) {
                change = Some(self.apply(h, node));
            }
        }
        self.answers = answers;
        change
    }

    /// Target `target`'s TCP probe is writable (connected or failed).
    pub fn connect_ready(
        &mut self,
        now: Instant,
        target: usize,
        node: &mut Node,
    ) -> Option<UplinkChange> {
        let seq = self.prober.connect_ready(target)?;
        let h = self.tracker.answered(now, seq, target)?;
        Some(self.apply(h, node))
    }

    fn apply(&mut self, healthy: bool, node: &mut Node) -> UplinkChange {
        let prefixes = if healthy {
            self.config
                .prefixes
                .iter()
                .chain(&self.config.gateway)
                .copied()
                .collect()
        } else {
            Vec::new()
        };
        let over = node.set_external_prefixes(External::Uplink, prefixes);
        if over > 0 {
            tracing::warn!(
                over,
                "uplink prefixes that do not fit in an advertisement are not advertised"
            );
        }
        let answered = self
            .tracker
            .targets()
            .iter()
            .zip(&self.config.targets)
            .filter(|(t, _)| t.answered_last)
            .map(|(_, a)| *a)
            .collect();
        UplinkChange {
            healthy,
            prefixes: self.config.prefixes.clone(),
            answered,
        }
    }

    /// Counters for the metrics: the tracker's and the prober's.
    pub fn counters(&self) -> (TrackCounters, ProbeCounters) {
        (self.tracker.counters(), self.prober.counters())
    }

    /// Each target with its record, in the configured order.
    pub fn targets(&self) -> impl Iterator<Item = (IpAddr, TargetStats)> + '_ {
        self.config
            .targets
            .iter()
            .copied()
            .zip(self.tracker.targets().iter().copied())
    }

    /// The settings it runs with.
    pub fn config(&self) -> &UplinkConfig {
        &self.config
    }

    /// The tracker (its state, streak and settings in force).
    pub fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    /// The last error a probe's send met.
    pub fn last_error(&self) -> Option<&str> {
        self.prober.last_error()
    }
}
