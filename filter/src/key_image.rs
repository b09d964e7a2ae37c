//! An order-preserving 64-bit image of byte-string keys, learned from the keys of one set (an
//! SSTable), for the [`RangeFilter`](crate::RangeFilter).
//!
//! # Why not the first eight bytes
//!
//! A range filter's FPR grows with the *width* of a range in image units (`ℓ / 2^(B-2)`), so
//! the image must be dense where the keys are. Raw bytes are not: keys of decimal digits use 10
//! of 256 values per byte, so 16 consecutive ids span hundreds of image units across a carry,
//! and a table's keys usually share a long prefix that carries no information.
//!
//! # The image
//!
//! Learned from the keys: their common prefix `P`, then for each of the next positions the
//! *alphabet* of symbols seen there (bytes, plus "end of key", which sorts before every byte).
//! A key's image is the mixed-radix number whose digit at position `j` is the rank of its symbol
//! in alphabet `j`, over as many positions as fit in 64 bits. Decimal ids become their numeric
//! value; hex ids, base-16 numbers; and so on.
//!
//! Any byte string `x` (a range bound, not only a learned key) gets an image, monotone in `x`:
//! `x ≤ y ⇒ image(x) ≤ image(y)`. A string below the prefix maps to 0, above it to `u64::MAX`;
//! a symbol absent from alphabet `j` takes the digit "number of alphabet symbols below it" with
//! all later digits 0 (the image of the smallest learned-shaped string above it), carrying into
//! the digits before when it is above every symbol. Keys equal on all imaged positions share an
//! image (the filter then answers for both: coarser, never wrong).

use crate::error::FilterError;

/// The symbol "end of key" (sorts before every byte).
const END: u16 = 0;

/// Most positions imaged after the prefix: bounds the learning pass (one pass over the keys per
/// position) for long keys whose later bytes rarely vary.
const MAX_POSITIONS: usize = 32;

/// Version of the serialized form (`KeyImage::encode`).
const ENCODING_VERSION: u8 = 1;

/// The learned image (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyImage {
    prefix: Vec<u8>,
    /// Per imaged position: the sorted symbols seen there (`END` = 0, byte `b` = `b + 1`).
    alphabets: Vec<Vec<u16>>,
    /// `weights[j]`: the value of one step of digit `j` (product of the later radices).
    weights: Vec<u64>,
}

/// The symbol of `key` at `pos`.
fn symbol(key: &[u8], pos: usize) -> u16 {
    key.get(pos).map_or(END, |&b| u16::from(b) + 1)
}

impl KeyImage {
    /// Learns the image of `keys` (sorted ascending, as a table holds them).
    pub fn learn<'a>(keys: impl IntoIterator<Item = &'a [u8]> + Clone) -> KeyImage {
        let mut iter = keys.clone().into_iter();
        let Some(first) = iter.next() else {
            return KeyImage::from_alphabets(Vec::new(), Vec::new());
        };
        let last = iter.last().unwrap_or(first);
        // Sorted keys: the common prefix of the first and the last is everyone's.
        let p = first.iter().zip(last).take_while(|(a, b)| a == b).count();
        let prefix = first[..p].to_vec();
        // Alphabets of the following positions, while the product of radices fits in 64 bits.
        let mut seen: Vec<[bool; 257]> = Vec::new();
        let mut capacity = 1u128;
        while seen.len() < MAX_POSITIONS {
            let pos = p + seen.len();
            let mut symbols = [false; 257];
            let mut any_byte = false;
            for key in keys.clone() {
                let s = symbol(key, pos);
                symbols[usize::from(s)] = true;
                any_byte |= s != END;
            }
            let radix = symbols.iter().filter(|&&b| b).count() as u128;
            if !any_byte || capacity * radix > u128::from(u64::MAX) + 1 {
                break;
            }
            capacity *= radix;
            seen.push(symbols);
        }
        let alphabets = seen
            .iter()
            .map(|symbols| {
                (0..257u16)
                    .filter(|&s| symbols[usize::from(s)])
                    .collect::<Vec<u16>>()
            })
            .collect();
        KeyImage::from_alphabets(prefix, alphabets)
    }

    fn from_alphabets(prefix: Vec<u8>, alphabets: Vec<Vec<u16>>) -> KeyImage {
        let mut weights = vec![1u64; alphabets.len()];
        for j in (0..alphabets.len().saturating_sub(1)).rev() {
            weights[j] = weights[j + 1].saturating_mul(alphabets[j + 1].len() as u64);
        }
        KeyImage {
            prefix,
            alphabets,
            weights,
        }
    }

    /// The image of any byte string `key` (monotone: see the module docs).
    pub fn image(&self, key: &[u8]) -> u64 {
        self.image_exact(key).0
    }

    /// The largest image a learned key below `end` can have (an exclusive range end); `None`
    /// when no learned key is below it. One less than `image(end)` when the image pins `end`
    /// down (it ends, or leaves the learned alphabets, within the imaged positions): a learned
    /// key with the same image would then be `end` itself or above it.
    pub fn image_before(&self, end: &[u8]) -> Option<u64> {
        match self.image_exact(end) {
            (0, true) => None,
            (v, true) => Some(v - 1),
            (v, false) => Some(v),
        }
    }

    /// The image of `key`, and whether it is *exact*: every learned key below `key` has a
    /// smaller image.
    fn image_exact(&self, key: &[u8]) -> (u64, bool) {
        let p = self.prefix.len();
        let head = &key[..key.len().min(p)];
        match head.cmp(&self.prefix[..head.len()]) {
            std::cmp::Ordering::Less => return (0, true),
            std::cmp::Ordering::Greater => return (u64::MAX, false),
            // Shorter than the prefix but equal so far: below every key that has it.
            std::cmp::Ordering::Equal if key.len() < p => return (0, true),
            std::cmp::Ordering::Equal => {}
        }
        let mut value = 0u64;
        for (j, alphabet) in self.alphabets.iter().enumerate() {
            let s = symbol(key, p + j);
            let rank = alphabet.partition_point(|&a| a < s) as u64;
            let Some(v) = rank
                .checked_mul(self.weights[j])
                .and_then(|add| value.checked_add(add))
            else {
                return (u64::MAX, false);
            };
            value = v;
            if alphabet.get(rank as usize) != Some(&s) {
                // Not a learned symbol: the smallest image above it (later digits 0).
                return (value, true);
            }
            if s == END {
                return (value, true); // the key ends here; later digits are 0
            }
        }
        // Every byte of `key` imaged: a learned key with its image has its bytes, so it is
        // `key` itself. With bytes beyond, a smaller learned key may share the image.
        (value, key.len() <= p + self.alphabets.len())
    }

    /// The serialized form: version, prefix, then each alphabet (its size and symbols).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![ENCODING_VERSION];
        out.extend_from_slice(&(self.prefix.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.prefix);
        out.push(self.alphabets.len() as u8);
        for alphabet in &self.alphabets {
            out.extend_from_slice(&(alphabet.len() as u16).to_le_bytes());
            for &s in alphabet {
                out.extend_from_slice(&s.to_le_bytes());
            }
        }
        out
    }

    /// Decodes [`KeyImage::encode`]'s output, validating it (sorted symbols, radices whose
    /// product fits in 64 bits); returns the image and the bytes it took.
    pub fn decode(bytes: &[u8]) -> Result<(KeyImage, usize), FilterError> {
        let bad = |why| FilterError::InvalidParameter(why);
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8], FilterError> {
            let end = at.checked_add(n).filter(|&e| e <= bytes.len());
            let end = end.ok_or(FilterError::InvalidParameter("key image truncated"))?;
            let s = &bytes[at..end];
            at = end;
            Ok(s)
        };
        if take(1)?[0] != ENCODING_VERSION {
            return Err(bad("key image of an unknown version"));
        }
        let plen = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad("key image"))?);
        let prefix = take(plen as usize)?.to_vec();
        let positions = take(1)?[0];
        if usize::from(positions) > MAX_POSITIONS {
            return Err(bad("key image with too many positions"));
        }
        let mut alphabets = Vec::with_capacity(usize::from(positions));
        let mut capacity = 1u128;
        for _ in 0..positions {
            let n = u16::from_le_bytes(take(2)?.try_into().map_err(|_| bad("key image"))?);
            let raw = take(2 * usize::from(n))?;
            let alphabet: Vec<u16> = raw
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            if alphabet.is_empty()
                || alphabet.windows(2).any(|w| w[0] >= w[1])
                || alphabet.last().is_some_and(|&s| s > 256)
            {
                return Err(bad("key image alphabet out of order"));
            }
            capacity *= alphabet.len() as u128;
            if capacity > u128::from(u64::MAX) + 1 {
                return Err(bad("key image radices overflow 64 bits"));
            }
            alphabets.push(alphabet);
        }
        Ok((KeyImage::from_alphabets(prefix, alphabets), at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn learned(keys: &[Vec<u8>]) -> KeyImage {
        KeyImage::learn(keys.iter().map(|k| k.as_slice()))
    }

    #[test]
    fn decimal_ids_become_their_numbers() {
        let keys: Vec<Vec<u8>> = (0..1000u32)
            .map(|i| format!("user{:06}", 500_000 + i * 3).into_bytes())
            .collect();
        let image = learned(&keys);
        let images: Vec<u64> = keys.iter().map(|k| image.image(k)).collect();
        // Consecutive ids 3 apart are at most a few image units apart: dense.
        assert!(
            images
                .windows(2)
                .all(|w| w[0] < w[1] && w[1] - w[0] <= 3 * 10),
            "{images:?}"
        );
        // A gap of 2 ids between keys is a narrow image range.
        let lo = image.image(b"user500001");
        let hi = image.image(b"user500002");
        assert!(hi - lo <= 2 && lo > images[0] && hi < images[1]);
        assert_eq!(image.image(b"a"), 0);
        assert_eq!(image.image(b"zzz"), u64::MAX);
    }

    #[test]
    fn key_image_round_trips_and_refuses_damage() {
        let keys: Vec<Vec<u8>> = (0..50u32)
            .map(|i| format!("k{i:03}x").into_bytes())
            .collect();
        let image = learned(&keys);
        let bytes = image.encode();
        let (back, used) = KeyImage::decode(&bytes).unwrap();
        assert_eq!((back, used), (image, bytes.len()));
        for cut in 0..bytes.len() {
            assert!(KeyImage::decode(&bytes[..cut]).is_err(), "cut {cut}");
        }
        let mut wrong = bytes.clone();
        wrong[0] = 9;
        assert!(KeyImage::decode(&wrong).is_err());
    }

    #[test]
    fn key_image_of_nothing_is_zero() {
        let image = KeyImage::learn(std::iter::empty::<&[u8]>());
        assert_eq!(image.image(b"anything"), 0);
    }

    proptest! {
        #[test]
        fn key_image_is_monotone_for_any_strings(
            mut keys in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..6), 1..40),
            probes in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..7), 2..40),
            narrow in any::<bool>(),
        ) {
            if narrow {
                // Few symbols per position, so absent ones are common.
                for k in &mut keys { for b in k.iter_mut() { *b = b'a' + *b % 4; } }
            }
            keys.sort();
            let image = learned(&keys);
            let mut all: Vec<Vec<u8>> = probes.into_iter().chain(keys.iter().cloned()).collect();
            all.sort();
            for w in all.windows(2) {
                prop_assert!(image.image(&w[0]) <= image.image(&w[1]), "{:?} {:?}", w[0], w[1]);
            }
            // An exclusive end: every learned key below it is at most image_before(end).
            for end in &all {
                for k in keys.iter().filter(|k| *k < end) {
                    let before = image.image_before(end);
                    prop_assert!(before.is_some_and(|b| image.image(k) <= b), "{:?} < {:?}", k, end);
                }
            }
            let (back, _) = KeyImage::decode(&image.encode()).unwrap();
            prop_assert_eq!(back, image);
        }
    }
}
