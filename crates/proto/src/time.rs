//! Time as the core sees it: a count of microseconds the caller supplies.
//!
//! Nothing in `proto` reads a clock. The simulator passes simulated time,
//! the daemon passes a monotonic clock; both as [`Instant`].

use core::ops::{Add, Sub};
use core::time::Duration;

/// A point in time, in microseconds since an epoch the caller chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(pub u64);

impl Instant {
    /// The epoch itself.
    pub const ZERO: Instant = Instant(0);

    /// The instant `us` microseconds after the epoch.
    pub fn from_micros(us: u64) -> Self {
        Instant(us)
    }

    /// The instant `ms` milliseconds after the epoch (saturating).
    pub fn from_millis(ms: u64) -> Self {
        Instant(ms.saturating_mul(1000))
    }

    /// Microseconds since the epoch.
    pub fn as_micros(self) -> u64 {
        self.0
    }

    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn since(self, earlier: Instant) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(
            self.0
                .saturating_add(d.as_micros().min(u64::MAX as u128) as u64),
        )
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.since(earlier)
    }
}
