//! A plain, insertable bloom filter: the building block of the scalable and the rotating bloom
//! filters, whose key counts are not known when a filter is made (the SSTable filters are built
//! whole from a known key set instead).

use crate::error::FilterError;

/// The most probes a key may set.
const MAX_PROBES: u32 = 32;

/// A bit array and its probe count; keys arrive as 64-bit hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlainBloom {
    words: Vec<u64>,
    num_bits: u64,
    num_probes: u32,
    /// Keys inserted.
    inserted: u64,
}

impl PlainBloom {
    /// A filter for `keys` keys at false-positive rate `fpr`: `k = ⌈log2(1/fpr)⌉` probes and
    /// `k · keys / ln 2` bits (the optimum for that `k`).
    pub(crate) fn for_keys(keys: u64, fpr: f64) -> Result<PlainBloom, FilterError> {
        let (bits, probes) = sizing(keys, fpr)?;
        PlainBloom::with_bits(bits, probes)
    }

    /// Whether this filter has the bits and probes [`PlainBloom::for_keys`] gives `keys` and
    /// `fpr` (a check on a decoded filter, before trusting the sizes it implies).
    pub(crate) fn is_sized_for(&self, keys: u64, fpr: f64) -> bool {
        sizing(keys, fpr) == Ok((self.num_bits, self.num_probes))
    }

    /// A filter of `num_bits` bits and `num_probes` probes per key.
    pub(crate) fn with_bits(num_bits: u64, num_probes: u32) -> Result<PlainBloom, FilterError> {
        if num_bits == 0 || !(1..=MAX_PROBES).contains(&num_probes) {
            return Err(FilterError::InvalidParameter(
                "a bloom filter needs bits and 1 to 32 probes",
            ));
        }
        let words = usize::try_from(num_bits.div_ceil(64))
            .map_err(|_| FilterError::InvalidParameter("the filter does not fit in memory"))?;
        Ok(PlainBloom {
            words: vec![0; words],
            num_bits,
            num_probes,
            inserted: 0,
        })
    }

    pub(crate) fn insert_hash(&mut self, hash: u64) {
        for bit in probes(hash, self.num_bits, self.num_probes) {
            self.words[(bit / 64) as usize] |= 1 << (bit % 64);
        }
        self.inserted += 1;
    }

    pub(crate) fn contains_hash(&self, hash: u64) -> bool {
        probes(hash, self.num_bits, self.num_probes)
            .all(|bit| self.words[(bit / 64) as usize] & (1 << (bit % 64)) != 0)
    }

    /// Keys inserted.
    pub(crate) fn inserted(&self) -> u64 {
        self.inserted
    }

    /// Bytes of bits.
    pub(crate) fn size_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// Forgets every key.
    pub(crate) fn clear(&mut self) {
        self.words.fill(0);
        self.inserted = 0;
    }

    /// The false-positive rate now, from the share of bits set: `(set / m)^k`.
    pub(crate) fn current_fpr(&self) -> f64 {
        let set: u64 = self.words.iter().map(|w| u64::from(w.count_ones())).sum();
        (set as f64 / self.num_bits as f64).powi(self.num_probes as i32)
    }

    /// Appends `u64 bits, u32 probes, u32 0, u64 inserted, words` (little-endian).
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.num_bits.to_le_bytes());
        out.extend_from_slice(&self.num_probes.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&self.inserted.to_le_bytes());
        for w in &self.words {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    /// Reads what [`PlainBloom::encode_into`] wrote at the start of `bytes`; returns it and
    /// the bytes it took.
    pub(crate) fn decode(bytes: &[u8]) -> Result<(PlainBloom, usize), FilterError> {
        const HEADER: usize = 24;
        if bytes.len() < HEADER {
            return Err(FilterError::Truncated {
                needed: HEADER,
                actual: bytes.len(),
            });
        }
        let num_bits = crate::envelope::read_u64(bytes, 0);
        let num_probes = crate::envelope::read_u32(bytes, 8);
        // The bytes must be there before anything is allocated for them.
        let needed = usize::try_from(num_bits.div_ceil(64))
            .ok()
            .and_then(|words| words.checked_mul(8))
            .and_then(|n| n.checked_add(HEADER))
            .ok_or(FilterError::InvalidParameter("bloom filter size overflows"))?;
        if bytes.len() < needed {
            return Err(FilterError::Truncated {
                needed,
                actual: bytes.len(),
            });
        }
        let mut filter = PlainBloom::with_bits(num_bits, num_probes)?;
        filter.inserted = crate::envelope::read_u64(bytes, 16);
        for (i, w) in filter.words.iter_mut().enumerate() {
            *w = crate::envelope::read_u64(bytes, HEADER + 8 * i);
        }
        Ok((filter, needed))
    }
}

/// The bits and probes of a filter for `keys` keys at `fpr`, allocating nothing.
pub(crate) fn sizing(keys: u64, fpr: f64) -> Result<(u64, u32), FilterError> {
    if keys == 0 {
        return Err(FilterError::InvalidParameter(
            "a filter needs room for a key",
        ));
    }
    check_fpr(fpr)?;
    let probes = (1.0 / fpr).log2().ceil().clamp(1.0, f64::from(MAX_PROBES));
    let bits = (probes * keys as f64 / std::f64::consts::LN_2).ceil();
    Ok((bits as u64, probes as u32))
}

/// Refuses a false-positive rate outside (0, 1) (NaN included).
pub(crate) fn check_fpr(fpr: f64) -> Result<(), FilterError> {
    if fpr > 0.0 && fpr < 1.0 {
        Ok(())
    } else {
        Err(FilterError::InvalidParameter("fpr must be in (0, 1)"))
    }
}

/// The FPR of asking every filter of `filters` (a key is "maybe" if any says so):
/// `1 − Π(1 − pᵢ)`, each `pᵢ` from the bits set now.
pub(crate) fn union_fpr(filters: &[PlainBloom]) -> f64 {
    1.0 - filters
        .iter()
        .map(|f| 1.0 - f.current_fpr())
        .product::<f64>()
}

/// The slots (bits, counters) key `hash` sets: double hashing of its one 64-bit hash
/// (Kirsch and Mitzenmacher), each mapped into `0..num_slots` by a multiply-shift.
pub(crate) fn probes(hash: u64, num_slots: u64, num_probes: u32) -> impl Iterator<Item = u64> {
    let step = hash.rotate_left(32) | 1;
    let m = u128::from(num_slots);
    (0..u64::from(num_probes)).map(move |i| {
        let mixed = hash.wrapping_add(i.wrapping_mul(step));
        ((u128::from(mixed) * m) >> 64) as u64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizing_and_round_trip() {
        let mut f = PlainBloom::for_keys(1000, 0.01).unwrap();
        assert_eq!(f.num_probes, 7);
        assert_eq!(f.num_bits, 10_099);
        for h in 0..1000u64 {
            f.insert_hash(h.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        }
        assert!((0..1000u64).all(|h| f.contains_hash(h.wrapping_mul(0x9E37_79B9_7F4A_7C15))));
        let mut bytes = Vec::new();
        f.encode_into(&mut bytes);
        let (back, used) = PlainBloom::decode(&bytes).unwrap();
        assert_eq!((back, used), (f, bytes.len()));
        assert!(PlainBloom::decode(&bytes[..bytes.len() - 1]).is_err());
    }
}
