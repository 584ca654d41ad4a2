//! What an ingress knows of one of its paths: the input both the encoder
//! (which paths are up, how to weigh them) and the adaptive mode's choice
//! (how much each loses) read.

/// What the ingress knows of one of its paths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathState {
    /// The path exists and its first hop is usable.
    pub up: bool,
    /// Capacity estimate (any unit, the same for all paths): the stripe
    /// weight.
    pub weight: u32,
    /// Measured loss ratio in [0, 1] (for the adaptive mode).
    pub loss: f64,
}
