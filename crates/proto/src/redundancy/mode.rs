//! The redundancy modes an operator chooses per node pair, direction and
//! traffic class, with their text form (`mirror:3`, `parity:4`,
//! `erasure:6,4`, `adaptive:0.999`, ...).

use core::fmt;
use core::str::FromStr;

use braid_wire::RedundancyMode;
use thiserror::Error;

/// Most paths a session uses (the header's path index has four bits).
pub const MAX_PATHS: usize = 16;
/// Most data or repair packets in a group (four bits each in the header).
pub const MAX_SHARDS: u8 = 15;

/// How the ingress protects one session.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// The best path only.
    Single,
    /// Spread across paths in proportion to their capacity (WISPR 0);
    /// `pin_flows` keeps each flow (5-tuple) on one path instead.
    Stripe {
        /// Keep each flow on one path instead of spreading its packets.
        pin_flows: bool,
    },
    /// Every packet on k paths (WISPR 1).
    Mirror(u8),
    /// Along the entry point's tree to every access point serving the
    /// destination (SMesh).
    Tree,
    /// Stripe, and after every X-1 data packets one XOR parity packet on a
    /// dedicated path (WISPR 4).
    Parity(u8),
    /// The same with the parity path rotating (WISPR 5).
    ParityRotating(u8),
    /// Every m data packets get n-m Reed-Solomon repair packets; any m of
    /// the n rebuild the group. `depth` groups are filled in turn
    /// (interleaved) so that a burst of losses on a path hits each less.
    Erasure {
        /// Packets per group, data and repair together.
        n: u8,
        /// Data packets per group.
        m: u8,
        /// Groups interleaved, 1-8 (1: none).
        depth: u8,
    },
    /// Stripe, and after every m data packets n-m repair packets, each a
    /// random linear combination of the last `span` data packets
    /// (`sliding.rs`): a burst is rebuilt by the repair that follows it,
    /// without waiting for a block to fill.
    Sliding {
        /// Packets per round, data and repair together.
        n: u8,
        /// Data packets per round.
        m: u8,
        /// Data packets each repair packet covers, 1-64.
        span: u8,
    },
    /// The cheapest of the modes above meeting a target delivery ratio,
    /// from measured path loss.
    Adaptive {
        /// Delivery ratio to meet, in (0, 1) (0.999 when the text gives none).
        target: f64,
    },
}

/// Why a mode's text or parameters are not acceptable.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ModeError {
    /// The text names no mode.
    #[error("unknown redundancy mode \"{0}\" (expected single, stripe, stripe:pinned, mirror:K, tree, parity:X, parity-rotating:X, erasure:N,M[,DEPTH], sliding:N,M[,SPAN] or adaptive[:TARGET])")]
    Unknown(String),
    /// `mirror:K` with K outside 1..=16.
    #[error("mirror:{0}: k must be between 1 and {MAX_PATHS}")]
    MirrorK(u8),
    /// `parity:X` with X outside 2..=16.
    #[error("parity:{0}: X must be between 2 and {max} (X-1 data packets and one parity)", max = MAX_SHARDS + 1)]
    ParityX(u8),
    /// `erasure:N,M` with a shape the header cannot carry.
    #[error("erasure:{n},{m}: need 1 <= m < n, m <= {MAX_SHARDS} and n - m <= {MAX_SHARDS}")]
    ErasureShape {
        /// The N given.
        n: u8,
        /// The M given.
        m: u8,
    },
    /// `erasure:N,M,D` with D outside 1..=8.
    #[error("erasure:{n},{m},{depth}: the interleaving depth must be between 1 and {max}", max = braid_wire::MAX_DEPTH)]
    Depth {
        /// The N given.
        n: u8,
        /// The M given.
        m: u8,
        /// The depth given.
        depth: u8,
    },
    /// `sliding:N,M,SPAN` with a shape or span out of range.
    #[error("sliding:{n},{m},{span}: need 1 <= m < n, m <= {MAX_SHARDS}, n - m <= {MAX_SHARDS} and a span of 1 to {max}", max = super::sliding::MAX_SPAN)]
    SlidingShape {
        /// The N given.
        n: u8,
        /// The M given.
        m: u8,
        /// The span given.
        span: u8,
    },
    /// An adaptive target outside (0, 1).
    #[error("adaptive target {0} must be a delivery ratio in (0, 1)")]
    Target(f64),
    /// A parameter is not a number (the whole text given).
    #[error("bad number in \"{0}\"")]
    Number(String),
}

impl Mode {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), ModeError> {
        match *self {
            Mode::Mirror(k) if k == 0 || k as usize > MAX_PATHS => Err(ModeError::MirrorK(k)),
            Mode::Parity(x) | Mode::ParityRotating(x) if !(2..=MAX_SHARDS + 1).contains(&x) => {
                Err(ModeError::ParityX(x))
            }
            Mode::Erasure { n, m, .. }
                if m == 0 || m >= n || m > MAX_SHARDS || n - m > MAX_SHARDS =>
            {
                Err(ModeError::ErasureShape { n, m })
            }
            Mode::Erasure { n, m, depth } if !(1..=braid_wire::MAX_DEPTH).contains(&depth) => {
                Err(ModeError::Depth { n, m, depth })
            }
            Mode::Sliding { n, m, span }
                if m == 0
                    || m >= n
                    || m > MAX_SHARDS
                    || n - m > MAX_SHARDS
                    || !(1..=super::sliding::MAX_SPAN).contains(&span) =>
            {
                Err(ModeError::SlidingShape { n, m, span })
            }
            Mode::Adaptive { target } if !(target > 0.0 && target < 1.0) => {
                Err(ModeError::Target(target))
            }
            _ => Ok(()),
        }
    }

    /// Data packets per group and repair packets per group (0, 0 without
    /// groups).
    pub fn group_shape(&self) -> (u8, u8) {
        match *self {
            Mode::Parity(x) | Mode::ParityRotating(x) => (x - 1, 1),
            Mode::Erasure { n, m, .. } => (m, n - m),
            _ => (0, 0),
        }
    }

    /// Groups filled in turn (1 but for interleaved erasure).
    pub fn depth(&self) -> u8 {
        match *self {
            Mode::Erasure { depth, .. } => depth,
            _ => 1,
        }
    }

    /// Packets sent per data packet, on average, with `paths` paths up.
    pub fn overhead(&self, paths: usize) -> f64 {
        match *self {
            Mode::Mirror(k) => (k as usize).min(paths.max(1)) as f64,
            Mode::Parity(x) | Mode::ParityRotating(x) => x as f64 / (x - 1) as f64,
            Mode::Erasure { n, m, .. } | Mode::Sliding { n, m, .. } => n as f64 / m as f64,
            _ => 1.0,
        }
    }

    /// The code that goes in the data header.
    pub fn wire(&self) -> RedundancyMode {
        match self {
            Mode::Single => RedundancyMode::Single,
            Mode::Stripe { .. } => RedundancyMode::Stripe,
            Mode::Mirror(_) => RedundancyMode::Mirror,
            Mode::Tree => RedundancyMode::Tree,
            Mode::Parity(_) => RedundancyMode::Parity,
            Mode::ParityRotating(_) => RedundancyMode::ParityRotating,
            Mode::Erasure { .. } => RedundancyMode::Erasure,
            Mode::Sliding { .. } => RedundancyMode::Sliding,
            // Adaptive is resolved to one of the others before sending.
            Mode::Adaptive { .. } => RedundancyMode::Single,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Single => write!(f, "single"),
            Mode::Stripe { pin_flows: false } => write!(f, "stripe"),
            Mode::Stripe { pin_flows: true } => write!(f, "stripe:pinned"),
            Mode::Mirror(k) => write!(f, "mirror:{k}"),
            Mode::Tree => write!(f, "tree"),
            Mode::Parity(x) => write!(f, "parity:{x}"),
            Mode::ParityRotating(x) => write!(f, "parity-rotating:{x}"),
            Mode::Erasure { n, m, depth: 1 } => write!(f, "erasure:{n},{m}"),
            Mode::Erasure { n, m, depth } => write!(f, "erasure:{n},{m},{depth}"),
            Mode::Sliding { n, m, span } if *span == super::sliding::DEFAULT_SPAN => {
                write!(f, "sliding:{n},{m}")
            }
            Mode::Sliding { n, m, span } => write!(f, "sliding:{n},{m},{span}"),
            Mode::Adaptive { target } => write!(f, "adaptive:{target}"),
        }
    }
}

impl FromStr for Mode {
    type Err = ModeError;

    fn from_str(s: &str) -> Result<Self, ModeError> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let num = |a: &str| {
            a.trim()
                .parse::<u8>()
                .map_err(|_| ModeError::Number(s.to_string()))
        };
        // `N,M[,X]`: the codes' shape, X as given or `default`.
        let shape = |args: &str, default: u8| -> Result<(u8, u8, u8), ModeError> {
            let (n, rest) = args
                .split_once(',')
                .ok_or_else(|| ModeError::Number(s.to_string()))?;
            let (m, x) = match rest.split_once(',') {
                Some((m, x)) => (m, num(x)?),
                None => (rest, default),
            };
            Ok((num(n)?, num(m)?, x))
        };
        let mode = match (name.trim(), arg) {
            ("single", None) => Mode::Single,
            ("stripe", None) => Mode::Stripe { pin_flows: false },
            ("stripe", Some("pinned")) => Mode::Stripe { pin_flows: true },
            ("mirror", Some(k)) => Mode::Mirror(num(k)?),
            ("tree", None) => Mode::Tree,
            ("parity", Some(x)) => Mode::Parity(num(x)?),
            ("parity-rotating", Some(x)) => Mode::ParityRotating(num(x)?),
            ("erasure", Some(args)) => {
                let (n, m, depth) = shape(args, 1)?;
                Mode::Erasure { n, m, depth }
            }
            ("sliding", Some(args)) => {
                let (n, m, span) = shape(args, super::sliding::DEFAULT_SPAN)?;
                Mode::Sliding { n, m, span }
            }
            ("adaptive", None) => Mode::Adaptive { target: 0.999 },
            ("adaptive", Some(t)) => Mode::Adaptive {
                target: t
                    .trim()
                    .parse()
                    .map_err(|_| ModeError::Number(s.to_string()))?,
            },
            _ => return Err(ModeError::Unknown(s.to_string())),
        };
        mode.validate()?;
        Ok(mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_bad_text_is_an_error() {
        for s in [
            "single",
            "stripe",
            "stripe:pinned",
            "mirror:3",
            "tree",
            "parity:4",
            "parity-rotating:4",
            "erasure:6,4",
            "erasure:18,12,4",
            "sliding:6,4",
            "sliding:3,2,16",
            "adaptive:0.999",
        ] {
            assert_eq!(s.parse::<Mode>().unwrap().to_string(), s);
        }
        assert_eq!(
            "adaptive".parse::<Mode>().unwrap(),
            Mode::Adaptive { target: 0.999 }
        );
        assert!(matches!(
            "mirror:0".parse::<Mode>(),
            Err(ModeError::MirrorK(0))
        ));
        assert!(matches!(
            "parity:1".parse::<Mode>(),
            Err(ModeError::ParityX(1))
        ));
        assert!(matches!(
            "parity:17".parse::<Mode>(),
            Err(ModeError::ParityX(17))
        ));
        assert!(matches!(
            "erasure:4,4".parse::<Mode>(),
            Err(ModeError::ErasureShape { .. })
        ));
        assert!(matches!(
            "erasure:40,20".parse::<Mode>(),
            Err(ModeError::ErasureShape { .. })
        ));
        assert!(matches!(
            "erasure:6,4,9".parse::<Mode>(),
            Err(ModeError::Depth { depth: 9, .. })
        ));
        assert!(matches!(
            "erasure:6,4,0".parse::<Mode>(),
            Err(ModeError::Depth { depth: 0, .. })
        ));
        for bad in [
            "sliding:4,4",
            "sliding:20,2",
            "sliding:6,4,0",
            "sliding:6,4,65",
        ] {
            assert!(
                matches!(bad.parse::<Mode>(), Err(ModeError::SlidingShape { .. })),
                "{bad}"
            );
        }
        assert!(matches!(
            "adaptive:1.5".parse::<Mode>(),
            Err(ModeError::Target(_))
        ));
        assert!(matches!(
            "raid6".parse::<Mode>(),
            Err(ModeError::Unknown(_))
        ));
        assert!(matches!(
            "mirror:x".parse::<Mode>(),
            Err(ModeError::Number(_))
        ));
    }

    #[test]
    fn shapes_and_overheads() {
        assert_eq!(Mode::Parity(4).group_shape(), (3, 1));
        assert_eq!(
            Mode::Erasure {
                n: 6,
                m: 4,
                depth: 1
            }
            .group_shape(),
            (4, 2)
        );
        assert_eq!(Mode::Mirror(3).overhead(2), 2.0);
        assert_eq!(
            Mode::Erasure {
                n: 6,
                m: 4,
                depth: 3
            }
            .overhead(3),
            1.5
        );
    }
}
