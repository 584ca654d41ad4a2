//! Route damping (SrcRR section 4.5): keep the current route unless a new
//! one is clearly better or the current one has been held long enough.
//!
//! Without damping, routes of nearly equal metric flap with every probe
//! that is lost, and each flap re-orders packets in flight.

use core::time::Duration;

use crate::time::Instant;

/// How much better a new route must be to replace the current one at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Margin {
    /// Better by at least this many metric units (SrcRR: one full expected
    /// transmission, 1000 units of ETX).
    Absolute(u64),
    /// Better by at least this many percent of the current cost (mesh
    /// daemons today use 10-20%).
    Percent(u8),
}

/// Damping settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DampingConfig {
    /// How much better a new route must be to be taken at once (1000 units by default).
    pub margin: Margin,
    /// After this long on one route, any strictly better route is taken
    /// (SrcRR: 5 s).
    pub hold: Duration,
}

impl Default for DampingConfig {
    /// SrcRR's rule in its own terms: one full expected transmission, 5 s.
    fn default() -> Self {
        DampingConfig {
            margin: Margin::Absolute(crate::metric::SCALE as u64),
            hold: Duration::from_secs(5),
        }
    }
}

/// The damped choice of one route (for one destination, or one path slot).
#[derive(Debug, Clone)]
pub struct Damping<R> {
    config: DampingConfig,
    current: Option<(R, Instant)>,
}

impl<R: PartialEq + Clone> Damping<R> {
    /// A damper with no route chosen yet.
    pub fn new(config: DampingConfig) -> Self {
        Damping {
            config,
            current: None,
        }
    }

    /// The route in use, if one has been chosen.
    pub fn current(&self) -> Option<&R> {
        self.current.as_ref().map(|(r, _)| r)
    }

    /// Offers the best route now known (`best`, with cost `best_cost`) and
    /// the current route's cost now (`None` if it no longer exists).
    /// Returns the route to use and whether it changed.
    pub fn offer(
        &mut self,
        now: Instant,
        best: R,
        best_cost: u64,
        current_cost: Option<u64>,
    ) -> (&R, bool) {
        let switch = match (&self.current, current_cost) {
            (None, _) | (_, None) => true,
            (Some((cur, since)), Some(cost)) => {
                *cur != best && best_cost < cost && {
                    let held = now.since(*since) >= self.config.hold;
                    let gain = cost - best_cost;
                    let clearly = match self.config.margin {
                        Margin::Absolute(units) => gain >= units,
                        Margin::Percent(p) => {
                            gain.saturating_mul(100) >= cost.saturating_mul(p as u64)
                        }
                    };
                    held || clearly
                }
            }
        };
        if switch {
            self.current = Some((best, now));
        }
        (&self.current.as_ref().expect("set above").0, switch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_a_route_until_clearly_beaten_or_held_long_enough() {
        let mut d = Damping::new(DampingConfig::default());
        let t0 = Instant::ZERO;
        assert_eq!(d.offer(t0, "a", 3000, None), (&"a", true));
        // Slightly better: kept.
        assert_eq!(
            d.offer(t0 + Duration::from_secs(1), "b", 2500, Some(3000)),
            (&"a", false)
        );
        // One full transmission better: switched.
        assert_eq!(
            d.offer(t0 + Duration::from_secs(2), "c", 2000, Some(3000)),
            (&"c", true)
        );
        // Slightly better, but after the hold time: switched.
        assert_eq!(
            d.offer(t0 + Duration::from_secs(3), "b", 1900, Some(2000)),
            (&"c", false)
        );
        assert_eq!(
            d.offer(t0 + Duration::from_secs(7), "b", 1900, Some(2000)),
            (&"b", true)
        );
        // The current route vanished: switched at once, even to a worse one.
        assert_eq!(
            d.offer(t0 + Duration::from_secs(8), "z", 9000, None),
            (&"z", true)
        );
    }

    #[test]
    fn percent_margin() {
        let mut d = Damping::new(DampingConfig {
            margin: Margin::Percent(10),
            hold: Duration::from_secs(60),
        });
        let t = Instant::ZERO;
        d.offer(t, 1, 1000, None);
        assert!(!d.offer(t, 2, 950, Some(1000)).1);
        assert!(d.offer(t, 2, 900, Some(1000)).1);
    }
}
