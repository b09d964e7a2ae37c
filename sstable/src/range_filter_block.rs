//! The range filter block: "may this table hold a key in `[start, end)`?" (property
//! `range_filter_handle`; `docs/FORMAT.md`).
//!
//! Built at seal time from the table's distinct user keys: a [`KeyImage`] learned from them maps
//! keys to dense order-preserving 64-bit images, and a [`RangeFilter`] (Grafite) over the images
//! answers range emptiness. Layout (little-endian), inside an ordinary block (CRC trailer):
//!
//! ```text
//! magic "SRF1" | version u8 = 1 | image kind u8 = 1 (KeyImage v1) | seed u64
//! | num_codes u64 | block_slots u64 | block_log2 u8 | low_bits u8
//! | image_len u32 | KeyImage encoding (image_len bytes)
//! | low_words u32 | high_words u32 | low words (u64 each) | high words (u64 each)
//! ```
//!
//! A block of another version or image kind, or whose parts disagree, is refused.

use siftdb_filter::{KeyImage, RangeFilter, RangeParams};

/// Magic at the start of a range filter block.
pub const RANGE_FILTER_MAGIC: [u8; 4] = *b"SRF1";
/// Version of the layout above.
pub const RANGE_FILTER_VERSION: u8 = 1;
/// Image kind 1: [`KeyImage`] (common prefix, then per-position alphabets).
pub const IMAGE_KEY_IMAGE_V1: u8 = 1;
/// Images per block of the range filter: ranges up to 2^16 key positions wide cost one or two
/// successor searches.
const BLOCK_LOG2: u8 = 16;
/// Seed of the range filter's block hash (recorded in the block).
const SEED: u64 = 0x5EED_0F51_71DB;
/// Bytes of a key kept per distinct key while the table is built: the image reads at most
/// 32 positions after the common prefix.
const TAIL: usize = 33;

/// Collects what the range filter needs from the keys as they are added, in order.
#[derive(Debug, Default)]
pub(crate) struct RangeKeyCollector {
    first: Vec<u8>,
    /// Common prefix length of the keys so far (with the first key).
    lcp: usize,
    /// Per key: up to [`TAIL`] bytes from `lcp` at the time it was added.
    tails: Vec<u8>,
    /// End offset in `tails` of each key's tail.
    ends: Vec<u32>,
    /// `(first key index, lcp)` from which keys were cut at that prefix length.
    runs: Vec<(usize, usize)>,
}

impl RangeKeyCollector {
    /// Adds the next distinct user key (ascending).
    pub(crate) fn add(&mut self, key: &[u8]) {
        if self.ends.is_empty() {
            self.first = key.to_vec();
            self.lcp = key.len();
            self.runs.push((0, self.lcp));
        } else {
            let common = self
                .first
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count();
            if common < self.lcp {
                self.lcp = common;
                self.runs.push((self.ends.len(), common));
            }
        }
        let tail = &key[self.lcp.min(key.len())..];
        self.tails.extend_from_slice(&tail[..tail.len().min(TAIL)]);
        self.ends.push(self.tails.len() as u32);
    }

    /// Every key as far as the image reads it: the first key's bytes before the cut, then the
    /// tail.
    fn keys(&self) -> Vec<Vec<u8>> {
        let mut keys = Vec::with_capacity(self.ends.len());
        let mut run = 0;
        let mut start = 0usize;
        for (i, &end) in self.ends.iter().enumerate() {
            while run + 1 < self.runs.len() && self.runs[run + 1].0 <= i {
                run += 1;
            }
            let cut = self.runs[run].1;
            let mut key = self.first[..cut.min(self.first.len())].to_vec();
            key.extend_from_slice(&self.tails[start..end as usize]);
            start = end as usize;
            keys.push(key);
        }
        keys
    }

    /// The block's contents at `bits_per_key` (none for a table without keys).
    pub(crate) fn finish(self, bits_per_key: f64) -> Option<Vec<u8>> {
        if self.ends.is_empty() {
            return None;
        }
        let keys = self.keys();
        let image = KeyImage::learn(keys.iter().map(|k| k.as_slice()));
        let images: Vec<u64> = keys.iter().map(|k| image.image(k)).collect();
        let filter =
            RangeFilter::build(&images, bits_per_key.clamp(3.0, 64.0), BLOCK_LOG2, SEED).ok()?;
        Some(encode(&image, &filter))
    }
}

fn encode(image: &KeyImage, filter: &RangeFilter) -> Vec<u8> {
    let p = filter.params();
    let image_bytes = image.encode();
    let mut out = Vec::with_capacity(64 + image_bytes.len() + filter.size_bytes());
    out.extend_from_slice(&RANGE_FILTER_MAGIC);
    out.push(RANGE_FILTER_VERSION);
    out.push(IMAGE_KEY_IMAGE_V1);
    out.extend_from_slice(&p.seed.to_le_bytes());
    out.extend_from_slice(&p.num_codes.to_le_bytes());
    out.extend_from_slice(&p.block_slots.to_le_bytes());
    out.push(p.block_log2);
    out.push(p.low_bits);
    out.extend_from_slice(&(image_bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(&image_bytes);
    out.extend_from_slice(&(filter.low_words().len() as u32).to_le_bytes());
    out.extend_from_slice(&(filter.high_words().len() as u32).to_le_bytes());
    for w in filter.low_words().iter().chain(filter.high_words()) {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out
}

/// A decoded range filter block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeFilterBlock {
    image: KeyImage,
    filter: RangeFilter,
}

/// Reads little-endian fields off the front of a byte slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err("range filter block truncated".to_string());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, String> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn words(&mut self, n: usize) -> Result<Vec<u64>, String> {
        let bytes = self.take(n.checked_mul(8).ok_or("range filter block overflow")?)?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| {
                let mut a = [0u8; 8];
                a.copy_from_slice(c);
                u64::from_le_bytes(a)
            })
            .collect())
    }
}

impl RangeFilterBlock {
    /// Decodes a block's contents; any disagreement is an error naming it.
    pub fn decode(contents: &[u8]) -> Result<RangeFilterBlock, String> {
        let mut r = Reader(contents);
        if r.take(4)? != RANGE_FILTER_MAGIC {
            return Err("range filter block has a wrong magic".to_string());
        }
        let version = r.u8()?;
        if version != RANGE_FILTER_VERSION {
            return Err(format!("range filter block of unknown version {version}"));
        }
        let kind = r.u8()?;
        if kind != IMAGE_KEY_IMAGE_V1 {
            return Err(format!("range filter block of unknown image kind {kind}"));
        }
        let params = RangeParams {
            seed: r.u64()?,
            num_codes: r.u64()?,
            block_slots: r.u64()?,
            block_log2: r.u8()?,
            low_bits: r.u8()?,
        };
        let image_len = r.u32()? as usize;
        let (image, used) = KeyImage::decode(r.take(image_len)?).map_err(|e| e.to_string())?;
        if used != image_len {
            return Err("range filter block's key image has trailing bytes".to_string());
        }
        let (low_words, high_words) = (r.u32()? as usize, r.u32()? as usize);
        let low = r.words(low_words)?;
        let high = r.words(high_words)?;
        if !r.0.is_empty() {
            return Err("range filter block has trailing bytes".to_string());
        }
        let filter = RangeFilter::from_parts(params, low, high).map_err(|e| e.to_string())?;
        Ok(RangeFilterBlock { image, filter })
    }

    /// `false`: the table holds no key in `[start, end)` (`None`: unbounded on that side).
    pub fn may_overlap(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> bool {
        let lo = start.map_or(0, |k| self.image.image(k));
        // The largest image of a key below `end`; none below it at all: empty.
        let hi = match end {
            None => u64::MAX,
            Some(k) => match self.image.image_before(k) {
                Some(hi) => hi,
                None => return false,
            },
        };
        self.filter.may_contain_range(lo, hi)
    }

    /// Bytes the decoded filter holds (its cache charge).
    pub fn size_bytes(&self) -> usize {
        self.filter.size_bytes() + 64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_of(keys: &[Vec<u8>], bits: f64) -> RangeFilterBlock {
        let mut c = RangeKeyCollector::default();
        for k in keys {
            c.add(k);
        }
        RangeFilterBlock::decode(&c.finish(bits).unwrap()).unwrap()
    }

    #[test]
    fn range_filter_block_answers_gaps_between_decimal_keys() {
        // Keys 0, 10, 20, ...: ranges of 1..9 between them are empty.
        let keys: Vec<Vec<u8>> = (0..20_000u32)
            .map(|i| format!("user{:010}", i * 10).into_bytes())
            .collect();
        let block = block_of(&keys, 12.0);
        let key = |n: u32| format!("user{n:010}").into_bytes();
        let mut maybes = 0;
        for i in 0..20_000u32 {
            let n = i * 10;
            assert!(block.may_overlap(Some(&key(n)), Some(&key(n + 1))), "{n}");
            assert!(block.may_overlap(Some(&key(n.saturating_sub(3))), Some(&key(n + 1))));
            maybes += u32::from(block.may_overlap(Some(&key(n + 1)), Some(&key(n + 9))));
        }
        // 8 key positions per empty range at ~12 bits/key: FPR bound 8/2^10.
        assert!(
            maybes < 20_000 / 50,
            "{maybes} of 20000 empty ranges said maybe"
        );
        assert!(block.may_overlap(None, None));
        assert!(block.may_overlap(Some(b"a"), None));
        assert!(!block.may_overlap(Some(b"v"), None));
        assert!(!block.may_overlap(None, Some(b"a")));
    }

    #[test]
    fn range_filter_block_collector_rebuilds_keys_as_the_image_reads_them() {
        let keys: Vec<Vec<u8>> = ["abcde1", "abcde2", "abd", "abdx", "b", "bb"]
            .iter()
            .map(|k| k.as_bytes().to_vec())
            .collect();
        let mut c = RangeKeyCollector::default();
        for k in &keys {
            c.add(k);
        }
        assert_eq!(c.keys(), keys);
        let block = RangeFilterBlock::decode(&c.finish(10.0).unwrap()).unwrap();
        for k in &keys {
            let mut end = k.clone();
            end.push(0);
            assert!(block.may_overlap(Some(k), Some(&end)));
        }
    }

    #[test]
    fn range_filter_block_damage_is_refused_or_harmless() {
        let keys: Vec<Vec<u8>> = (0..500u32)
            .map(|i| format!("k{i:05}").into_bytes())
            .collect();
        let mut c = RangeKeyCollector::default();
        for k in &keys {
            c.add(k);
        }
        let bytes = c.finish(10.0).unwrap();
        for cut in 0..bytes.len() {
            assert!(
                RangeFilterBlock::decode(&bytes[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(RangeFilterBlock::decode(&longer).is_err());
        for at in [0, 4, 5] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            assert!(RangeFilterBlock::decode(&bad).is_err(), "byte {at}");
        }
    }
}
