//! What a control plane is configured with: probe timing and sizes,
//! link estimation, the link-state database's bounds, what this node
//! advertises, authentication; and the checks a configuration must pass.

use std::time::Duration;

use braid_wire::{NodeId, Prefix, RATE_UNSPECIFIED};
use thiserror::Error;

use crate::auth::{AuthConfig, AuthError};
use crate::linkest::{LinkEstConfig, MetricKind, PROBE_JITTER};
use crate::lsdb::LsdbConfig;
use crate::origin::{OriginConfig, OriginError};

/// Probe timing and sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeConfig {
    /// Mean interval between small probes. 1 s by default: a link that dies
    /// is visible within a few seconds. Air time: one ~60-byte frame per
    /// second per node, under 0.1% of a 1 Mbit/s channel.
    pub small_interval: Duration,
    /// Mean interval between big probes, per rate. 5 s by default: one
    /// 1400-byte frame every 5 s per rate, about 0.2% of a 1 Mbit/s channel
    /// per rate and negligible at modern rates.
    pub big_interval: Duration,
    /// Rates (100 kbit/s units) to send big probes at; `RATE_UNSPECIFIED`
    /// lets the radio choose (real radios, with a supplied rate for ETT).
    pub big_rates: Vec<u16>,
    /// Size of a big probe on the wire.
    pub big_probe_bytes: usize,
    /// Each interval is drawn uniformly from mean × [1 - jitter, 1 + jitter]
    /// so that neighbors never probe in lockstep.
    pub jitter: f64,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            small_interval: Duration::from_secs(1),
            big_interval: Duration::from_secs(5),
            big_rates: vec![RATE_UNSPECIFIED],
            big_probe_bytes: 1400,
            jitter: PROBE_JITTER,
        }
    }
}

/// Everything the control plane can be told.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlConfig {
    /// Probe timing and sizes.
    pub probes: ProbeConfig,
    /// Link estimation settings.
    pub links: LinkEstConfig,
    /// Link-state database limits and timers.
    pub lsdb: LsdbConfig,
    /// The link metric computed and advertised (ETX by default).
    pub metric: MetricKind,
    /// Interval at which the node re-issues its advertisement even when
    /// nothing changed (jittered down by up to 25%: 22-30 s by default).
    /// Must be under half of `lsdb.max_age`. Changes are advertised at
    /// once (within `lsa_min_interval`); the refresh only repairs what
    /// flooding lost, and every refresh is flooded to every node, so its
    /// cost grows with the square of the network's size.
    pub lsa_refresh: Duration,
    /// Least time between two advertisements of this node.
    pub lsa_min_interval: Duration,
    /// A link metric change larger than this fraction triggers a new
    /// advertisement (smaller changes wait for the refresh).
    pub change_threshold: f64,
    /// Least time between two flooding messages of this node. A lone
    /// advertisement goes out at once; advertisements that arrive within
    /// the gap wait and leave together in one message (up to
    /// `flood_bundle_bytes`), so a burst (a network coming up, a refresh
    /// wave) costs a few frames instead of one per advertisement.
    pub flood_gap: Duration,
    /// Most body bytes of one flooding message (a single advertisement
    /// larger than this is still sent, alone). 1200 keeps a message with
    /// its UDP/IPv4 underlay headers under 1280 bytes.
    pub flood_bundle_bytes: usize,
    /// Least time between two repair floods, which a neighbor's lasting
    /// digest mismatch asks for (5 s: a lost flood is repaired within a
    /// few probe intervals, and a neighbor that can never agree, such as
    /// one whose database is full, costs at most one database's worth of
    /// floods per interval).
    pub resync_interval: Duration,
    /// This router's routing area (docs/protocol.md, "Areas"). 0 by
    /// default: a network whose routers all keep it is one flat area.
    pub area: u16,
    /// Prefixes and clients this node serves.
    pub prefixes: Vec<Prefix>,
    /// Keys that sign and check every control message (none: off).
    pub auth: AuthConfig,
    /// This router's origin key and the roster of every router's
    /// (`crate::origin`; none: advertisements are not signed or checked
    /// per origin).
    pub origins: OriginConfig,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            probes: ProbeConfig::default(),
            links: LinkEstConfig::default(),
            lsdb: LsdbConfig::default(),
            metric: MetricKind::Etx,
            lsa_refresh: Duration::from_secs(30),
            lsa_min_interval: Duration::from_secs(1),
            change_threshold: 0.1,
            flood_gap: Duration::from_millis(5),
            flood_bundle_bytes: 1200,
            resync_interval: Duration::from_secs(5),
            area: 0,
            prefixes: Vec::new(),
            auth: AuthConfig::default(),
            origins: OriginConfig::default(),
        }
    }
}

/// A configuration the control plane cannot run with.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ConfigError {
    /// A probe interval is outside 1 ms..=65 s (it travels as 16-bit milliseconds).
    #[error("{field} must be between 1 ms and 65 s, got {value:?}")]
    Interval {
        /// Which interval.
        field: &'static str,
        /// The interval configured.
        value: Duration,
    },
    /// `lsa_refresh` is zero, or not under half of `lsdb.max_age`.
    #[error("lsa_refresh ({refresh:?}) must be under half of the maximum age ({max_age:?})")]
    Refresh {
        /// The refresh interval configured.
        refresh: Duration,
        /// The maximum age configured.
        max_age: Duration,
    },
    /// `lsdb.max_age` is outside 2 s..=65535 s (ages travel as 16-bit seconds).
    #[error("the maximum LSA age must be 2 s to 65535 s (the wire's age field), got {0:?}")]
    MaxAge(Duration),
    /// The probe jitter is outside [0, 0.9].
    #[error("probe jitter must be in [0, 0.9], got {0}")]
    Jitter(f64),
    /// The link estimator's window is outside 1..=64 probes.
    #[error("window must be 1..=64 probes, got {0}")]
    Window(u8),
    /// More big-probe rates than the link estimator tracks.
    #[error("at most {max} big-probe rates, got {got}")]
    Rates {
        /// Most rates tracked ([`crate::linkest::MAX_RATES`]).
        max: usize,
        /// Rates configured.
        got: usize,
    },
    /// The node id is [`NodeId::NONE`], which is reserved.
    #[error("node id {0} is reserved")]
    ReservedId(u16),
    /// The authentication keys cannot be used.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// The origin key or roster cannot be used.
    #[error(transparent)]
    Origin(#[from] OriginError),
}

impl ControlConfig {
    /// Checks that node `id` can run with this configuration ([`ControlPlane::new`] does).
    pub fn validate(&self, id: NodeId) -> Result<(), ConfigError> {
        if id == NodeId::NONE {
            return Err(ConfigError::ReservedId(id.0));
        }
        for (field, value) in [
            ("small probe interval", self.probes.small_interval),
            ("big probe interval", self.probes.big_interval),
        ] {
            if value < Duration::from_millis(1) || value.as_millis() > u16::MAX as u128 {
                return Err(ConfigError::Interval { field, value });
            }
        }
        let max_age = self.lsdb.max_age;
        if max_age < Duration::from_secs(2) || max_age > Duration::from_secs(u16::MAX as u64) {
            return Err(ConfigError::MaxAge(max_age));
        }
        if self.lsa_refresh * 2 >= self.lsdb.max_age || self.lsa_refresh.is_zero() {
            return Err(ConfigError::Refresh {
                refresh: self.lsa_refresh,
                max_age: self.lsdb.max_age,
            });
        }
        if !(0.0..=0.9).contains(&self.probes.jitter) {
            return Err(ConfigError::Jitter(self.probes.jitter));
        }
        if !(1..=crate::linkest::MAX_WINDOW).contains(&self.links.window) {
            return Err(ConfigError::Window(self.links.window));
        }
        self.auth.validate()?;
        self.origins.validate(id)?;
        if self.probes.big_rates.len() > crate::linkest::MAX_RATES {
            return Err(ConfigError::Rates {
                max: crate::linkest::MAX_RATES,
                got: self.probes.big_rates.len(),
            });
        }
        Ok(())
    }
}
