//! The codes that rebuild lost packets: XOR parity (one loss per group)
//! and Reed-Solomon (any n-m losses per group, through the
//! `reed-solomon-erasure` crate: the field arithmetic is not written here).
//!
//! Packets of one group differ in length. Inside a code each packet takes
//! the form `[length:16][payload][zero padding]`, so a rebuilt packet comes
//! back with its exact length:
//!
//! * XOR: the parity payload is `[xor of lengths:16][xor of payloads]`, as
//!   long as the longest payload plus two bytes. A missing packet is the
//!   parity XOR every other packet, cut to the XOR of the lengths.
//! * Reed-Solomon: every shard is `[length:16][payload][padding]`, all as
//!   long as the longest payload plus two bytes; repair shards have that
//!   size, so a receiver learns it from any repair packet.

use reed_solomon_erasure::galois_8::ReedSolomon;
use thiserror::Error;

/// Bytes of the length prefix inside a code.
pub const LEN_PREFIX: usize = 2;

/// Why a group could not be coded or rebuilt.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CodingError {
    /// A rebuilt packet's length prefix claims more bytes than the code holds.
    #[error("rebuilt packet claims {claimed} bytes but the code holds {available}")]
    BadLength {
        /// Length the prefix gives.
        claimed: usize,
        /// Bytes the code holds after the prefix.
        available: usize,
    },
    /// A payload of this many bytes does not fit the code (over 65535 bytes, or
    /// longer than its group's shards).
    #[error("payload of {0} bytes is too long to code")]
    TooLong(usize),
    /// The Reed-Solomon library refused the group (its message).
    #[error("reed-solomon: {0}")]
    ReedSolomon(String),
    /// A repair payload of this many bytes is unusable.
    #[error(
        "repair shard of {0} bytes: too short, of another size than its group's, or misnumbered"
    )]
    BadShard(usize),
}

fn rs_err(e: reed_solomon_erasure::Error) -> CodingError {
    CodingError::ReedSolomon(e.to_string())
}

/// XOR parity over the data packets of one group, built as they pass.
#[derive(Debug, Clone, Default)]
pub struct XorParity {
    acc: Vec<u8>,
    len_xor: u16,
}

impl XorParity {
    /// Starts a new group: forgets every payload added.
    pub fn reset(&mut self) {
        self.acc.clear();
        self.len_xor = 0;
    }

    /// Adds one data packet's payload; fails if it is longer than 65535 bytes.
    pub fn add(&mut self, payload: &[u8]) -> Result<(), CodingError> {
        let len = u16::try_from(payload.len()).map_err(|_| CodingError::TooLong(payload.len()))?;
        if self.acc.len() < payload.len() {
            self.acc.resize(payload.len(), 0);
        }
        for (a, b) in self.acc.iter_mut().zip(payload) {
            *a ^= b;
        }
        self.len_xor ^= len;
        Ok(())
    }

    /// The parity packet's payload.
    pub fn payload(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(LEN_PREFIX + self.acc.len());
        p.extend_from_slice(&self.len_xor.to_be_bytes());
        p.extend_from_slice(&self.acc);
        p
    }
}

/// Rebuilds the one missing packet of a group from its parity payload and
/// every other data packet.
pub fn xor_rebuild<'a>(
    parity: &[u8],
    others: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<u8>, CodingError> {
    if parity.len() < LEN_PREFIX {
        return Err(CodingError::BadShard(parity.len()));
    }
    let mut len = u16::from_be_bytes([parity[0], parity[1]]) as usize;
    let mut out = parity[LEN_PREFIX..].to_vec();
    for o in others {
        len ^= o.len();
        for (a, b) in out.iter_mut().zip(o) {
            *a ^= b;
        }
    }
    if len > out.len() {
        return Err(CodingError::BadLength {
            claimed: len,
            available: out.len(),
        });
    }
    out.truncate(len);
    Ok(out)
}

/// Shard size for payloads up to `max_payload` bytes.
pub fn shard_bytes(max_payload: usize) -> usize {
    LEN_PREFIX + max_payload
}

fn shard(payload: &[u8], size: usize) -> Vec<u8> {
    let mut buf = Vec::with_capacity(size);
    buf.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    buf.extend_from_slice(payload);
    buf.resize(size, 0);
    buf
}

/// A Reed-Solomon codec kept across groups of the same shape (building one
/// computes its encoding matrix; the crate also caches decode matrices).
#[derive(Default)]
pub struct RsCodec(Option<(usize, usize, ReedSolomon)>);

impl core::fmt::Debug for RsCodec {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("RsCodec")
    }
}

impl RsCodec {
    fn get(&mut self, data: usize, repair: usize) -> Result<&ReedSolomon, CodingError> {
        let fits = matches!(&self.0, Some((d, r, _)) if *d == data && *r == repair);
        if !fits {
            self.0 = Some((
                data,
                repair,
                ReedSolomon::new(data, repair).map_err(rs_err)?,
            ));
        }
        Ok(&self.0.as_ref().expect("set above").2)
    }
}

/// Repair payloads for one group of data packets (`repair` of them).
pub fn rs_encode(
    codec: &mut RsCodec,
    data: &[&[u8]],
    repair: usize,
) -> Result<Vec<Vec<u8>>, CodingError> {
    let max = data.iter().map(|d| d.len()).max().unwrap_or(0);
    if max > u16::MAX as usize {
        return Err(CodingError::TooLong(max));
    }
    let size = shard_bytes(max);
    let rs = codec.get(data.len(), repair)?;
    let mut shards: Vec<Vec<u8>> = data.iter().map(|d| shard(d, size)).collect();
    shards.extend((0..repair).map(|_| vec![0u8; size]));
    rs.encode(&mut shards).map_err(rs_err)?;
    Ok(shards.split_off(data.len()))
}

/// Rebuilds the missing data packets of a group of `data_count` from the
/// data packets present (`(index, payload)`) and repair packets present
/// (`(repair index, payload)`). Returns the rebuilt `(index, payload)`.
pub fn rs_rebuild(
    codec: &mut RsCodec,
    data_count: usize,
    repair_count: usize,
    present: &[(usize, &[u8])],
    repair: &[(usize, &[u8])],
) -> Result<Vec<(usize, Vec<u8>)>, CodingError> {
    let size = repair.first().map(|(_, r)| r.len()).unwrap_or(0);
    if size < LEN_PREFIX
        || repair
            .iter()
            .any(|(j, r)| r.len() != size || *j >= repair_count)
    {
        return Err(CodingError::BadShard(size));
    }
    let rs = codec.get(data_count, repair_count)?;
    let mut shards: Vec<Option<Vec<u8>>> = vec![None; data_count + repair_count];
    for &(i, d) in present {
        if LEN_PREFIX + d.len() > size || i >= data_count {
            return Err(CodingError::TooLong(d.len()));
        }
        shards[i] = Some(shard(d, size));
    }
    for &(j, r) in repair {
        shards[data_count + j] = Some(r.to_vec());
    }
    let missing: Vec<usize> = (0..data_count).filter(|&i| shards[i].is_none()).collect();
    rs.reconstruct_data(&mut shards).map_err(rs_err)?;
    let mut out = Vec::with_capacity(missing.len());
    for i in missing {
        let s = shards[i].as_ref().expect("reconstructed");
        let len = u16::from_be_bytes([s[0], s[1]]) as usize;
        if LEN_PREFIX + len > s.len() {
            return Err(CodingError::BadLength {
                claimed: len,
                available: s.len() - LEN_PREFIX,
            });
        }
        out.push((i, s[LEN_PREFIX..LEN_PREFIX + len].to_vec()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xor_rebuilds_any_one_packet_of_different_lengths() {
        let data: Vec<Vec<u8>> = vec![
            b"hello".to_vec(),
            b"a much longer packet".to_vec(),
            vec![],
            b"xyz".to_vec(),
        ];
        let mut p = XorParity::default();
        for d in &data {
            p.add(d).unwrap();
        }
        let parity = p.payload();
        for lost in 0..data.len() {
            let others = data
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != lost)
                .map(|(_, d)| d.as_slice());
            assert_eq!(xor_rebuild(&parity, others).unwrap(), data[lost]);
        }
    }

    #[test]
    fn reed_solomon_rebuilds_any_m_of_n() {
        let data: Vec<Vec<u8>> = (0..4).map(|i| vec![i as u8 + 1; 10 + 7 * i]).collect();
        let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
        let mut enc = RsCodec::default();
        let mut dec = RsCodec::default();
        let repair = rs_encode(&mut enc, &refs, 2).unwrap();
        assert_eq!(repair.len(), 2);
        // Lose data 1 and 3; keep both repairs.
        let present = [(0, refs[0]), (2, refs[2])];
        let rep: Vec<(usize, &[u8])> = repair
            .iter()
            .enumerate()
            .map(|(j, r)| (j, r.as_slice()))
            .collect();
        let mut rebuilt = rs_rebuild(&mut dec, 4, 2, &present, &rep).unwrap();
        rebuilt.sort();
        assert_eq!(rebuilt, vec![(1, data[1].clone()), (3, data[3].clone())]);
        // Too few shards: an error, not garbage.
        assert!(rs_rebuild(&mut dec, 4, 2, &present[..1], &rep).is_err());
        // The decoder is reusable after a failure.
        assert_eq!(rs_rebuild(&mut dec, 4, 2, &present, &rep).unwrap().len(), 2);
    }
}
