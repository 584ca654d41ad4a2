//! Helpers over a caller-supplied random number generator.

use rand_core::RngCore;

/// A uniform value in [0, 1).
pub fn unit_f64(rng: &mut dyn RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// A uniform value in [lo, hi).
pub fn uniform(rng: &mut dyn RngCore, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * unit_f64(rng)
}
