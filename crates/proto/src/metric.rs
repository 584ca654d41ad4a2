//! Link and path costs.
//!
//! A [`Metric`] is a link cost in fixed point: 1000 units are one unit of
//! the metric in use (one hop, one expected transmission for ETX, one
//! millisecond of air time for ETT). Integers keep path computation exact
//! and deterministic. A link cost is never zero: a zero-cost link makes
//! equal-cost paths of different lengths and breaks shortest-path
//! tie-breaking, so every cost is at least [`Metric::MIN`]. Path costs are
//! sums in `u64` and cannot overflow for any path braid can represent.

use thiserror::Error;

/// Units per whole metric unit.
pub const SCALE: u32 = 1000;

/// A link's cost in one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Metric(u32);

/// Why a number is not a usable link cost.
#[derive(Debug, Clone, Copy, PartialEq, Error)]
pub enum MetricError {
    /// The cost is below zero.
    #[error("cost {0} is negative")]
    Negative(f64),
    /// The cost is NaN or infinite.
    #[error("cost is not a finite number")]
    NotFinite,
    /// The cost is above [`Metric::MAX_COST`].
    #[error("cost {0} is larger than the largest cost braid represents ({max})", max = Metric::MAX_COST)]
    TooLarge(f64),
    /// A cost factor outside [`CostFactor::MIN`]..=[`CostFactor::MAX`].
    #[error("cost factor {0} is outside {min}..={max} (a factor only raises a link's cost)", min = CostFactor::MIN, max = CostFactor::MAX)]
    Factor(f64),
}

/// An operator's factor on a link's measured cost (babeld's `rxcost`,
/// olsrd's `LinkQualityMult`, as a multiplier): the router at one end
/// advertises both directions of the link at this many times what it
/// measures, and since a direction costs the worse of its two ends' word
/// ([`crate::lsdb::Lsdb::graph`]), the link costs that much more both
/// ways in every router's topology. At least 1: a factor only raises a
/// cost (a router cannot make a link look better than its other end sees
/// it; to prefer a link, raise the others).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct CostFactor(f64);

impl CostFactor {
    /// The smallest factor: the measured cost, unchanged.
    pub const MIN: f64 = 1.0;
    /// The largest factor (an ETX-1 link then costs 1000, more than any
    /// path of lossy links braid would choose).
    pub const MAX: f64 = 1000.0;

    /// A factor, checked.
    pub fn new(factor: f64) -> Result<Self, MetricError> {
        if (Self::MIN..=Self::MAX).contains(&factor) {
            Ok(CostFactor(factor))
        } else {
            Err(MetricError::Factor(factor))
        }
    }

    /// The factor.
    pub fn get(self) -> f64 {
        self.0
    }

    /// `metric` raised by the factor; an unusable link stays unusable.
    pub fn apply(self, metric: Metric) -> Metric {
        if metric.is_infinite() {
            metric
        } else {
            Metric::saturating_from_f64(metric.as_cost() * self.0)
        }
    }
}

impl Metric {
    /// The smallest cost a link can have (0.001).
    pub const MIN: Metric = Metric(1);
    /// One hop, one transmission: the cost of a perfect link under ETX.
    pub const ONE: Metric = Metric(SCALE);
    /// An unusable link. Never enters a graph.
    pub const INFINITY: Metric = Metric(u32::MAX);
    /// The largest finite cost, in whole units.
    pub const MAX_COST: f64 = (u32::MAX - 1) as f64 / SCALE as f64;

    /// From raw units; 0 becomes [`Metric::MIN`].
    pub const fn from_units(units: u32) -> Self {
        if units == 0 {
            Metric::MIN
        } else {
            Metric(units)
        }
    }

    /// The cost in raw units ([`SCALE`] per whole unit).
    pub const fn units(self) -> u32 {
        self.0
    }

    /// Whether this is [`Metric::INFINITY`]: an unusable link.
    pub fn is_infinite(self) -> bool {
        self == Metric::INFINITY
    }

    /// From a cost in whole units (as NetJSON gives it). Rounds to the
    /// nearest unit of 0.001; a cost of zero (or below 0.0005) becomes
    /// [`Metric::MIN`].
    pub fn from_cost(cost: f64) -> Result<Self, MetricError> {
        if !cost.is_finite() {
            return Err(MetricError::NotFinite);
        }
        if cost < 0.0 {
            return Err(MetricError::Negative(cost));
        }
        if cost > Self::MAX_COST {
            return Err(MetricError::TooLarge(cost));
        }
        Ok(Metric::from_units((cost * SCALE as f64).round() as u32))
    }

    /// From a ratio-like value (ETX = 1/(df*dr)); saturates to infinity
    /// for values too large or not finite.
    pub fn saturating_from_f64(value: f64) -> Self {
        if !value.is_finite() || value >= Self::MAX_COST {
            Metric::INFINITY
        } else {
            Metric::from_units((value.max(0.0) * SCALE as f64).round() as u32)
        }
    }

    /// Back to whole units.
    pub fn as_cost(self) -> f64 {
        self.0 as f64 / SCALE as f64
    }
}

/// A path cost: the sum of its links' metrics.
pub fn path_cost_as_f64(units: u64) -> f64 {
    units as f64 / SCALE as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_are_never_zero_and_bad_numbers_are_errors() {
        assert_eq!(Metric::from_cost(0.0).unwrap(), Metric::MIN);
        assert_eq!(Metric::from_cost(1.5).unwrap().units(), 1500);
        assert_eq!(Metric::from_units(0), Metric::MIN);
        assert!(matches!(
            Metric::from_cost(-1.0),
            Err(MetricError::Negative(_))
        ));
        assert!(matches!(
            Metric::from_cost(f64::NAN),
            Err(MetricError::NotFinite)
        ));
        assert!(matches!(
            Metric::from_cost(f64::INFINITY),
            Err(MetricError::NotFinite)
        ));
        assert!(matches!(
            Metric::from_cost(1e12),
            Err(MetricError::TooLarge(_))
        ));
        assert_eq!(Metric::saturating_from_f64(f64::INFINITY), Metric::INFINITY);
        assert_eq!(Metric::saturating_from_f64(2.0).as_cost(), 2.0);
    }

    #[test]
    fn a_cost_factor_only_raises_and_keeps_an_unusable_link_unusable() {
        let f = CostFactor::new(4.0).unwrap();
        assert_eq!(f.apply(Metric::from_cost(1.25).unwrap()).as_cost(), 5.0);
        assert_eq!(f.apply(Metric::INFINITY), Metric::INFINITY);
        let most = CostFactor::new(CostFactor::MAX).unwrap();
        assert_eq!(
            most.apply(Metric::from_units(u32::MAX - 1)),
            Metric::INFINITY,
            "saturates"
        );
        for bad in [0.5, 0.0, -2.0, 1000.5, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(CostFactor::new(bad), Err(MetricError::Factor(_))),
                "{bad}"
            );
        }
    }
}
