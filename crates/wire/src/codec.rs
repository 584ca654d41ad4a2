//! Bounds-checked big-endian reads and writes over byte slices: what every
//! parser and emitter of the crate is built on.

use crate::WireError;

/// Bounds-checked big-endian reads over a byte slice.
#[derive(Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(WireError::Truncated {
                need: self.pos.saturating_add(n),
                have: self.buf.len(),
            }),
        }
    }

    pub(crate) fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16, WireError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos == self.buf.len()
    }

    /// What `later` (a clone of this reader, moved on) read since.
    pub(crate) fn between(&self, later: &Reader<'a>) -> &'a [u8] {
        &self.buf[self.pos..later.pos]
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }
}

/// Bounds-checked big-endian writes into a caller's buffer.
pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Writer { buf, pos: 0 }
    }

    /// Fails up front if `total` bytes will not fit, so that emitters write
    /// all or nothing.
    pub(crate) fn reserve(&self, total: usize) -> Result<(), WireError> {
        if total > self.buf.len() {
            Err(WireError::BufferTooSmall {
                need: total,
                have: self.buf.len(),
            })
        } else {
            Ok(())
        }
    }

    pub(crate) fn put(&mut self, bytes: &[u8]) {
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }

    pub(crate) fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }

    pub(crate) fn u16(&mut self, v: u16) {
        self.put(&v.to_be_bytes());
    }

    pub(crate) fn u32(&mut self, v: u32) {
        self.put(&v.to_be_bytes());
    }

    pub(crate) fn zeros(&mut self, n: usize) {
        self.buf[self.pos..self.pos + n].fill(0);
        self.pos += n;
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }
}
