//! The node's buffer pool: the data path takes its buffers from here and
//! the driver gives them back ([`super::Node::recycle`]), so that once
//! warm a node forwards, encodes and delivers without allocating
//! (`tests/hot_path_alloc.rs` holds it at zero allocations).

/// Most buffers kept for reuse.
const POOL_BUFFERS: usize = 256;
/// Largest buffer kept (a jumbo frame and then some).
const POOL_BUFFER_BYTES: usize = 16 << 10;

/// Empty buffers ready for reuse, bounded in number and size.
#[derive(Debug, Default)]
pub(super) struct BufferPool {
    free: Vec<Vec<u8>>,
}

impl BufferPool {
    /// An empty buffer: a recycled one, or a new one.
    pub(super) fn take(&mut self) -> Vec<u8> {
        self.free.pop().unwrap_or_default()
    }

    /// A buffer holding a copy of `bytes`.
    pub(super) fn copy_of(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut b = self.take();
        b.extend_from_slice(bytes);
        b
    }

    /// Keeps `buf` for reuse, within the pool's bounds.
    pub(super) fn give(&mut self, mut buf: Vec<u8>) {
        if self.free.len() < POOL_BUFFERS && buf.capacity() <= POOL_BUFFER_BYTES {
            buf.clear();
            self.free.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_empty_and_the_pool_stays_bounded() {
        let mut pool = BufferPool::default();
        let b = pool.copy_of(b"abc");
        let at = b.as_ptr();
        pool.give(b);
        let again = pool.take();
        assert!(
            again.is_empty() && again.as_ptr() == at,
            "the same buffer, cleared"
        );
        for _ in 0..POOL_BUFFERS + 10 {
            pool.give(Vec::with_capacity(64));
        }
        assert_eq!(pool.free.len(), POOL_BUFFERS);
        pool.give(Vec::with_capacity(POOL_BUFFER_BYTES + 1));
        assert_eq!(
            pool.free.len(),
            POOL_BUFFERS,
            "too big, or too many: dropped"
        );
    }
}
