//! What the fuzz targets share: a cheap deterministic random source (the
//! node and control plane take one; fuzzing needs it repeatable).

/// A linear congruential generator: deterministic, no state beyond a word.
pub struct Counter(pub u64);

impl rand_core::RngCore for Counter {
    fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1);
        self.0
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for b in dst {
            *b = self.next_u64() as u8;
        }
    }
}
