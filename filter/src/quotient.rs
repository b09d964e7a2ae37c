//! A quotient filter (Bender, Farach-Colton, Johnson, Kraner, Kuszmaul, Medjedovic, Montes,
//! Shetty, Spillane and Zadok, "Don't Thrash: How to Cache Your Hash on Flash", VLDB 2012):
//! insert, query and delete like a cuckoo filter, and besides merge and resize without the keys.
//!
//! Each key's 64-bit hash gives a fingerprint of `p = q + r` bits (its top `p` bits), split into
//! a **quotient** (the high `q` bits) and a **remainder** (the low `r` bits). The table has `2^q`
//! slots; the quotient is the key's *canonical slot* and only the remainder is stored, so the
//! whole fingerprint is kept in `r` bits plus three metadata bits a slot:
//!
//! * `is_occupied` — some stored fingerprint has this slot as its quotient;
//! * `is_continuation` — this slot's remainder belongs to the same quotient as the one before;
//! * `is_shifted` — this slot's remainder is not in its canonical slot.
//!
//! The remainders of one quotient form a **run**, sorted ascending; runs are stored in quotient
//! order, each at its canonical slot or, if that is taken, right after the run before it
//! (shifting later runs to the right, wrapping around the end of the table). A **cluster** is a
//! sequence of runs that starts with one in its canonical slot. A query for quotient `fq` with
//! remainder `fr` checks `is_occupied(fq)` (for most absent keys the answer ends there), walks
//! back to the start of `fq`'s cluster, counts runs forward to `fq`'s own, and scans it for
//! `fr`: a few neighbouring slots, one or two cache lines at moderate load. The walk is as long
//! as the cluster, which grows like linear probing's, about `1 / (1 − α)²` near a full table:
//! inserts and queries slow down as the load `α` nears the maximum.
//!
//! **Why a quotient filter.** It stores the fingerprints themselves, losslessly (the quotient is
//! implied by the position), in sorted order. So, unlike a bloom filter, a key can be removed
//! exactly; unlike a cuckoo filter, two filters can be merged by merging two sorted fingerprint
//! streams ([`QuotientFilter::merge`]) and a full filter can be resized without its keys
//! ([`QuotientFilter::grow`]).
//!
//! **False positives.** An absent key is "maybe" when its `p`-bit fingerprint equals a stored
//! one: `1 − e^(−α / 2^r) ≈ α · 2^-r` (≈ `n / 2^p` for `n` keys). Each slot costs `r + 3` bits;
//! at the maximum load of 95 % that is `(r + 3) / 0.95` bits per key: `r = 8` gives 11.6 bits per
//! key at an FPR of 0.37 %.
//!
//! **Full is an error, never a loss.** [`QuotientFilter::new`] picks the smallest power-of-two
//! table that holds `capacity` keys at no more than [`QuotientFilter::MAX_LOAD`] (95 %; so at
//! `capacity` keys the load is between 47.5 % and 95 %). An insert beyond that load returns
//! [`FilterError::Full`] and changes nothing; the filter never grows by itself. Call
//! [`QuotientFilter::grow`] to double the slots.
//!
//! **Growing costs a remainder bit.** The keys are gone, only their `p`-bit fingerprints remain,
//! so doubling the slots moves one remainder bit into the quotient (`q + 1`, `r − 1`, `p`
//! unchanged). The FPR for the keys already held stays the same (`n / 2^p`), but the grown
//! filter's FPR at its own capacity is twice the old one at its capacity, and each slot costs
//! a bit less. A filter with a 1-bit remainder cannot grow (`Full`).
//!
//! **Duplicates** are kept: a key inserted `k` times holds `k` slots (multiset semantics) and must
//! be removed `k` times before queries rule it out. **Removing** a key that was never inserted
//! may remove another key's fingerprint (when it is a false positive): remove only inserted keys.
//!
//! Slots are stored in blocks of 64: three u64 words of metadata (bit `j` of each is slot `j` of
//! the block), then `r` u64 words of 64 packed `r`-bit remainders (`docs/FORMAT.md`).

use crate::envelope;
use crate::error::FilterError;
use crate::hash::KeyHasher;

/// The envelope magic of a serialized quotient filter.
const MAGIC: [u8; 4] = *b"SQTF";
/// Its payload format version.
const VERSION: u8 = 1;
/// Bytes of the payload before the words.
const PAYLOAD_HEADER: usize = 16;
/// Slots in a block (one u64 of each metadata bit).
const BLOCK_SLOTS: u64 = 64;
/// Metadata words at the head of each block: occupied, continuation, shifted.
const META_WORDS: usize = 3;
const OCCUPIED: usize = 0;
const CONTINUATION: usize = 1;
const SHIFTED: usize = 2;
/// The narrowest remainder (reached by growing; a fresh filter this narrow is a 50 % filter).
const MIN_REMAINDER_BITS: u32 = 1;
/// The widest remainder.
const MAX_REMAINDER_BITS: u32 = 32;
/// The smallest table: two slots.
const MIN_QUOTIENT_BITS: u32 = 1;
/// The largest table: 2^48 slots, far beyond any memory.
const MAX_QUOTIENT_BITS: u32 = 48;

/// See the module documentation.
///
/// ```
/// use siftdb_filter::{KeyHasher, QuotientFilter};
///
/// # fn main() -> Result<(), siftdb_filter::FilterError> {
/// // 8-bit remainders: about 11.6 bits per key and 0.4 % FPR at the maximum load.
/// let mut seen = QuotientFilter::new(100_000, 8, KeyHasher::default())?;
/// seen.insert(b"user:17")?; // an error when full, never a lost key
/// seen.insert(b"user:17")?; // a multiset: held twice
/// assert!(seen.remove(b"user:17"));
/// assert!(seen.contains(b"user:17")); // one copy left
///
/// let mut other = QuotientFilter::new(100_000, 8, KeyHasher::default())?;
/// other.insert(b"user:99")?;
/// let both = seen.merge(&other)?; // without the keys: from the fingerprints
/// assert!(both.contains(b"user:17") && both.contains(b"user:99"));
///
/// let bytes = both.to_bytes(); // versioned and checksummed
/// let back = QuotientFilter::from_bytes(&bytes, &KeyHasher::default())?;
/// assert_eq!(back, both);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct QuotientFilter {
    hasher: KeyHasher,
    /// Blocks of 64 slots: occupied, continuation and shifted words, then `r` remainder words.
    words: Vec<u64>,
    quotient_bits: u32,
    remainder_bits: u32,
    /// Fingerprints held (a key inserted twice counts twice).
    len: u64,
}

impl std::fmt::Debug for QuotientFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuotientFilter")
            .field("hasher", &self.hasher)
            .field("quotient_bits", &self.quotient_bits)
            .field("remainder_bits", &self.remainder_bits)
            .field("len", &self.len)
            .field("size_bytes", &self.size_bytes())
            .finish()
    }
}

/// Where a remainder is, or would go, in its quotient's run.
struct Place {
    /// The run's first slot.
    run_start: u64,
    /// The slot of the first remainder of the run not below the one looked for (or the slot
    /// after the run).
    slot: u64,
    /// Whether that slot holds the remainder looked for.
    found: bool,
}

impl QuotientFilter {
    /// The highest share of slots a filter fills; an insert beyond it is
    /// [`FilterError::Full`].
    pub const MAX_LOAD: f64 = 0.95;

    /// A filter with room for at least `capacity` keys at no more than
    /// [`MAX_LOAD`](Self::MAX_LOAD), with remainders of `remainder_bits` bits (1 to 32; FPR at
    /// full load about `0.95 / 2^bits`). The table is the smallest power of two of slots that
    /// does it; its quotient bits and `remainder_bits` may total at most 64 (one hash's bits).
    pub fn new(
        capacity: u64,
        remainder_bits: u32,
        hasher: KeyHasher,
    ) -> Result<QuotientFilter, FilterError> {
        if capacity == 0 {
            return Err(FilterError::InvalidParameter("capacity must be at least 1"));
        }
        let mut quotient_bits = MIN_QUOTIENT_BITS;
        while max_len(quotient_bits) < capacity {
            if quotient_bits >= MAX_QUOTIENT_BITS {
                return Err(FilterError::InvalidParameter(
                    "capacity needs more than 2^48 slots",
                ));
            }
            quotient_bits += 1;
        }
        QuotientFilter::with_quotient_bits(quotient_bits, remainder_bits, hasher)
    }

    /// A filter of exactly `2^quotient_bits` slots (1 to 48 bits) of `remainder_bits`-bit
    /// remainders (1 to 32); the two may total at most 64 (the fingerprint comes from one 64-bit
    /// hash).
    pub fn with_quotient_bits(
        quotient_bits: u32,
        remainder_bits: u32,
        hasher: KeyHasher,
    ) -> Result<QuotientFilter, FilterError> {
        let words = word_count(quotient_bits, remainder_bits)?;
        let words = usize::try_from(words)
            .map_err(|_| FilterError::InvalidParameter("the filter does not fit in memory"))?;
        Ok(QuotientFilter {
            hasher,
            words: vec![0; words],
            quotient_bits,
            remainder_bits,
            len: 0,
        })
    }

    /// Inserts `key`. [`FilterError::Full`] when the filter is at its maximum load: the filter
    /// is then exactly as before the call.
    pub fn insert(&mut self, key: &[u8]) -> Result<(), FilterError> {
        self.insert_hash(self.hasher.hash(key))
    }

    /// [`QuotientFilter::insert`] of a key hashed by the caller with [`QuotientFilter::hasher`].
    pub fn insert_hash(&mut self, hash: u64) -> Result<(), FilterError> {
        if self.len >= self.capacity() {
            return Err(FilterError::Full { len: self.len });
        }
        let (quotient, remainder) = self.split(hash);
        self.insert_fingerprint(quotient, remainder)
    }

    /// Whether `key` may have been inserted (more often than removed): `false` is certain.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(self.hasher.hash(key))
    }

    /// [`QuotientFilter::contains`] of a key hashed by the caller with
    /// [`QuotientFilter::hasher`].
    pub fn contains_hash(&self, hash: u64) -> bool {
        let (quotient, remainder) = self.split(hash);
        if !self.bit(quotient, OCCUPIED) {
            return false;
        }
        // `None` only for slots that are no quotient filter, which `from_bytes` refuses and no
        // operation makes; "maybe" keeps even that from becoming a false negative.
        self.locate(quotient, remainder).is_none_or(|p| p.found)
    }

    /// Removes one copy of `key`'s fingerprint; `false` (changing nothing) when there is none.
    /// Remove only keys that were inserted (see the module documentation).
    pub fn remove(&mut self, key: &[u8]) -> bool {
        self.remove_hash(self.hasher.hash(key))
    }

    /// [`QuotientFilter::remove`] of a key hashed by the caller with [`QuotientFilter::hasher`].
    pub fn remove_hash(&mut self, hash: u64) -> bool {
        let (quotient, remainder) = self.split(hash);
        if !self.bit(quotient, OCCUPIED) {
            return false;
        }
        let Some(place) = self.locate(quotient, remainder) else {
            return false;
        };
        if !place.found {
            return false;
        }
        let slot = place.slot;
        let heads_run = slot == place.run_start;
        let run_continues = self.bit(self.next(slot), CONTINUATION);
        if heads_run && run_continues {
            // The next remainder of the run becomes its head.
            self.set_bit(self.next(slot), CONTINUATION, false);
        }
        self.shift_out(slot, quotient, heads_run && run_continues);
        if heads_run && !run_continues {
            self.set_bit(quotient, OCCUPIED, false);
        }
        self.len -= 1;
        true
    }

    /// A filter holding the fingerprints of both `self` and `other` (every copy of each: a key
    /// in both is held twice), built from their sorted fingerprint streams without the keys.
    ///
    /// Both must use the same hasher ([`FilterError::HashMismatch`],
    /// [`FilterError::SeedMismatch`]) and the same fingerprint width `q + r`
    /// ([`FilterError::InvalidParameter`]). The result has the slots of the larger one, or more
    /// (a remainder bit per doubling, as [`QuotientFilter::grow`]) if the keys of both need them;
    /// [`FilterError::Full`] when they would need a remainder under one bit.
    pub fn merge(&self, other: &QuotientFilter) -> Result<QuotientFilter, FilterError> {
        if self.hasher.id() != other.hasher.id() {
            return Err(FilterError::HashMismatch {
                found: other.hasher.id() as u8,
                expected: self.hasher.id() as u8,
            });
        }
        if self.hasher != other.hasher {
            return Err(FilterError::SeedMismatch {
                found: other.hasher.seed_tag(),
                expected: self.hasher.seed_tag(),
            });
        }
        let width = self.fingerprint_bits();
        if other.fingerprint_bits() != width {
            return Err(FilterError::InvalidParameter(
                "merged quotient filters must have the same fingerprint width",
            ));
        }
        let total = self.len.saturating_add(other.len);
        let mut quotient_bits = self.quotient_bits.max(other.quotient_bits);
        while max_len(quotient_bits) < total && quotient_bits < MAX_QUOTIENT_BITS {
            quotient_bits += 1;
        }
        if max_len(quotient_bits) < total || quotient_bits + MIN_REMAINDER_BITS > width {
            return Err(FilterError::Full { len: total });
        }
        let (a, b) = (self.fingerprints()?, other.fingerprints()?);
        let mut merged = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            if a[i] <= b[j] {
                merged.push(a[i]);
                i += 1;
            } else {
                merged.push(b[j]);
                j += 1;
            }
        }
        merged.extend_from_slice(&a[i..]);
        merged.extend_from_slice(&b[j..]);
        QuotientFilter::from_sorted(quotient_bits, width - quotient_bits, self.hasher, &merged)
    }

    /// Doubles the slots, moving one remainder bit into the quotient: every key stays, the
    /// capacity doubles, and the FPR at the new capacity is twice the old one at its capacity
    /// (see the module documentation). [`FilterError::Full`], changing nothing, when the
    /// remainder is down to one bit (or the table at 2^48 slots).
    pub fn grow(&mut self) -> Result<(), FilterError> {
        if self.remainder_bits <= MIN_REMAINDER_BITS || self.quotient_bits >= MAX_QUOTIENT_BITS {
            return Err(FilterError::Full { len: self.len });
        }
        let fingerprints = self.fingerprints()?;
        *self = QuotientFilter::from_sorted(
            self.quotient_bits + 1,
            self.remainder_bits - 1,
            self.hasher,
            &fingerprints,
        )?;
        Ok(())
    }

    /// Fingerprints held (a key inserted twice counts twice).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no fingerprint is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most keys the filter takes: [`MAX_LOAD`](Self::MAX_LOAD) of its slots (at least what
    /// [`QuotientFilter::new`] was asked for).
    pub fn capacity(&self) -> u64 {
        max_len(self.quotient_bits)
    }

    /// Slots in the table: `2^q`.
    pub fn slots(&self) -> u64 {
        1 << self.quotient_bits
    }

    /// Quotient bits `q` (log2 of the slots).
    pub fn quotient_bits(&self) -> u32 {
        self.quotient_bits
    }

    /// Remainder bits `r` stored per slot.
    pub fn remainder_bits(&self) -> u32 {
        self.remainder_bits
    }

    /// Fingerprint bits `p = q + r` (constant under [`QuotientFilter::grow`]).
    pub fn fingerprint_bits(&self) -> u32 {
        self.quotient_bits + self.remainder_bits
    }

    /// Keys held over slots.
    pub fn load(&self) -> f64 {
        self.len as f64 / self.slots() as f64
    }

    /// Bytes of slots (metadata and remainders).
    pub fn size_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// Bits of memory per key at capacity: `size_bytes · 8 / capacity`, about
    /// `(r + 3) / 0.95`.
    pub fn bits_per_key(&self) -> f64 {
        self.size_bytes() as f64 * 8.0 / self.capacity().max(1) as f64
    }

    /// The FPR at the current load `α`: `1 − e^(−α / 2^r)`, just under `α · 2^-r`.
    pub fn expected_fpr(&self) -> f64 {
        let per_slot = (-f64::from(self.remainder_bits)).exp2();
        -(-self.load() * per_slot).exp_m1()
    }

    /// The hasher keys go through.
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// The serialized filter: the envelope around u32 quotient bits, u32 remainder bits, u64
    /// keys held, then the words (`docs/FORMAT.md`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut payload = Vec::with_capacity(PAYLOAD_HEADER + self.size_bytes());
        payload.extend_from_slice(&self.quotient_bits.to_le_bytes());
        payload.extend_from_slice(&self.remainder_bits.to_le_bytes());
        payload.extend_from_slice(&self.len.to_le_bytes());
        for w in &self.words {
            payload.extend_from_slice(&w.to_le_bytes());
        }
        envelope::seal(MAGIC, VERSION, &self.hasher, &payload)
    }

    /// Reads a filter written by [`QuotientFilter::to_bytes`] under the same `hasher`. Besides
    /// the envelope's checks, the sizes are checked before anything is allocated and the slots
    /// must form valid runs and clusters holding exactly the keys the header says, so no
    /// operation on the result can misread them.
    pub fn from_bytes(bytes: &[u8], hasher: &KeyHasher) -> Result<QuotientFilter, FilterError> {
        let payload = envelope::open_payload(bytes, MAGIC, VERSION, hasher, PAYLOAD_HEADER)?;
        let quotient_bits = envelope::read_u32(payload, 0);
        let remainder_bits = envelope::read_u32(payload, 4);
        let len = envelope::read_u64(payload, 8);
        let words = &payload[PAYLOAD_HEADER..];
        // The words must be there before anything is allocated for them.
        let want = word_count(quotient_bits, remainder_bits)?;
        if want.checked_mul(8) != Some(words.len() as u64) {
            return Err(FilterError::InvalidParameter(
                "slot words do not match the size",
            ));
        }
        if len > max_len(quotient_bits) {
            return Err(FilterError::InvalidParameter(
                "more keys than the filter's maximum load",
            ));
        }
        let mut filter =
            QuotientFilter::with_quotient_bits(quotient_bits, remainder_bits, *hasher)?;
        for (i, w) in filter.words.iter_mut().enumerate() {
            *w = envelope::read_u64(words, 8 * i);
        }
        filter.len = len;
        filter.check_structure()?;
        Ok(filter)
    }

    // ---- the table ----

    /// The quotient and remainder of a hash: its top `q + r` bits.
    fn split(&self, hash: u64) -> (u64, u64) {
        let fingerprint = hash >> (64 - self.fingerprint_bits());
        (
            fingerprint >> self.remainder_bits,
            fingerprint & self.remainder_mask(),
        )
    }

    fn remainder_mask(&self) -> u64 {
        (1u64 << self.remainder_bits) - 1
    }

    fn next(&self, slot: u64) -> u64 {
        (slot + 1) & (self.slots() - 1)
    }

    fn prev(&self, slot: u64) -> u64 {
        slot.wrapping_sub(1) & (self.slots() - 1)
    }

    /// The first word of `slot`'s block.
    fn block_base(&self, slot: u64) -> usize {
        (slot / BLOCK_SLOTS) as usize * (META_WORDS + self.remainder_bits as usize)
    }

    fn bit(&self, slot: u64, which: usize) -> bool {
        self.words[self.block_base(slot) + which] & (1 << (slot % BLOCK_SLOTS)) != 0
    }

    fn set_bit(&mut self, slot: u64, which: usize, value: bool) {
        let word = self.block_base(slot) + which;
        let bit = 1u64 << (slot % BLOCK_SLOTS);
        if value {
            self.words[word] |= bit;
        } else {
            self.words[word] &= !bit;
        }
    }

    /// Whether `slot` holds no remainder (no metadata bit set: an occupied slot always holds
    /// the head of its own run or a remainder shifted into it).
    fn is_empty_slot(&self, slot: u64) -> bool {
        let base = self.block_base(slot);
        let bit = 1u64 << (slot % BLOCK_SLOTS);
        (self.words[base + OCCUPIED] | self.words[base + CONTINUATION] | self.words[base + SHIFTED])
            & bit
            == 0
    }

    fn remainder(&self, slot: u64) -> u64 {
        let bits = u64::from(self.remainder_bits);
        let at = (slot % BLOCK_SLOTS) * bits;
        let word = self.block_base(slot) + META_WORDS + (at / 64) as usize;
        let shift = at % 64;
        let mut value = self.words[word] >> shift;
        if shift + bits > 64 {
            value |= self.words[word + 1] << (64 - shift);
        }
        value & self.remainder_mask()
    }

    fn set_remainder(&mut self, slot: u64, remainder: u64) {
        let bits = u64::from(self.remainder_bits);
        let mask = self.remainder_mask();
        let at = (slot % BLOCK_SLOTS) * bits;
        let word = self.block_base(slot) + META_WORDS + (at / 64) as usize;
        let shift = at % 64;
        let remainder = remainder & mask;
        self.words[word] = (self.words[word] & !(mask << shift)) | (remainder << shift);
        if shift + bits > 64 {
            let spill = shift + bits - 64;
            let high = (1u64 << spill) - 1;
            self.words[word + 1] = (self.words[word + 1] & !high) | (remainder >> (bits - spill));
        }
    }

    /// Writes a slot's remainder, continuation and shifted bits (its occupied bit is its
    /// quotient's, and stays).
    fn set_content(&mut self, slot: u64, remainder: u64, continuation: bool, shifted: bool) {
        self.set_remainder(slot, remainder);
        self.set_bit(slot, CONTINUATION, continuation);
        self.set_bit(slot, SHIFTED, shifted);
    }

    /// The next occupied slot after `slot` (`slot` itself after a full turn without one).
    fn next_occupied(&self, slot: u64) -> u64 {
        let mut at = slot;
        for _ in 0..self.slots() {
            at = self.next(at);
            if self.bit(at, OCCUPIED) {
                return at;
            }
        }
        slot
    }

    /// The slot where `quotient`'s run starts (or would start, if `quotient` is being made
    /// occupied): back to the start of the cluster, then one run forward per occupied quotient
    /// on the way. `None` if either walk takes a full turn (slots that are no quotient filter).
    fn run_start(&self, quotient: u64) -> Option<u64> {
        let slots = self.slots();
        let mut cluster = quotient;
        let mut back = 0u64;
        while self.bit(cluster, SHIFTED) {
            cluster = self.prev(cluster);
            back += 1;
            if back >= slots {
                return None;
            }
        }
        // `run` is where the run of quotient `at` starts.
        let (mut at, mut run) = (cluster, cluster);
        let (mut at_steps, mut run_steps) = (0u64, 0u64);
        while at != quotient {
            loop {
                run = self.next(run);
                run_steps += 1;
                if run_steps > slots {
                    return None;
                }
                if !self.bit(run, CONTINUATION) {
                    break;
                }
            }
            loop {
                at = self.next(at);
                at_steps += 1;
                if at_steps > slots {
                    return None;
                }
                if self.bit(at, OCCUPIED) {
                    break;
                }
            }
        }
        Some(run)
    }

    /// Where `remainder` is or would go in the run of `quotient` (which must be occupied).
    fn locate(&self, quotient: u64, remainder: u64) -> Option<Place> {
        let run_start = self.run_start(quotient)?;
        let mut slot = run_start;
        for _ in 0..self.slots() {
            let held = self.remainder(slot);
            if held >= remainder {
                return Some(Place {
                    run_start,
                    slot,
                    found: held == remainder,
                });
            }
            slot = self.next(slot);
            if !self.bit(slot, CONTINUATION) {
                return Some(Place {
                    run_start,
                    slot,
                    found: false,
                });
            }
        }
        None
    }

    /// Inserts one fingerprint, the load already checked.
    fn insert_fingerprint(&mut self, quotient: u64, remainder: u64) -> Result<(), FilterError> {
        if self.is_empty_slot(quotient) {
            self.set_bit(quotient, OCCUPIED, true);
            self.set_content(quotient, remainder, false, false);
            self.len += 1;
            return Ok(());
        }
        let had_run = self.bit(quotient, OCCUPIED);
        self.set_bit(quotient, OCCUPIED, true);
        let place = if had_run {
            self.locate(quotient, remainder)
        } else {
            // A new run goes where the next run starts now.
            self.run_start(quotient).map(|slot| Place {
                run_start: slot,
                slot,
                found: false,
            })
        };
        let Some(place) = place else {
            self.set_bit(quotient, OCCUPIED, had_run);
            return Err(FilterError::InvalidParameter(
                "the slots are not a valid quotient filter",
            ));
        };
        let mut continuation = false;
        if had_run {
            if place.slot == place.run_start {
                // The new remainder heads the run: the old head, shifted right, continues it.
                self.set_bit(place.run_start, CONTINUATION, true);
            } else {
                continuation = true;
            }
        }
        self.shift_in(place.slot, remainder, continuation, place.slot != quotient);
        self.len += 1;
        Ok(())
    }

    /// Puts a remainder into `slot`, moving every remainder from there up to the next empty
    /// slot one slot right (each then shifted). Occupied bits stay with their slots.
    fn shift_in(&mut self, slot: u64, remainder: u64, continuation: bool, shifted: bool) {
        let (mut remainder, mut continuation, mut shifted) = (remainder, continuation, shifted);
        let mut at = slot;
        for _ in 0..self.slots() {
            let was_empty = self.is_empty_slot(at);
            let moved = (self.remainder(at), self.bit(at, CONTINUATION));
            self.set_content(at, remainder, continuation, shifted);
            if was_empty {
                return;
            }
            (remainder, continuation, shifted) = (moved.0, moved.1, true);
            at = self.next(at);
        }
    }

    /// Empties `slot` by moving the remainders after it one slot left, up to an empty slot or
    /// one in its canonical slot (neither moves). `quotient` is the run `slot` was in; with
    /// `new_head` the remainder after `slot` is that run's new head.
    fn shift_out(&mut self, slot: u64, quotient: u64, new_head: bool) {
        let mut hole = slot;
        let mut run_quotient = quotient;
        for step in 0..self.slots() {
            let from = self.next(hole);
            if !self.bit(from, SHIFTED) {
                break;
            }
            let continuation = self.bit(from, CONTINUATION);
            let shifted = if continuation {
                true
            } else {
                if !(step == 0 && new_head) {
                    // The head of the next run: its quotient is the next occupied one.
                    run_quotient = self.next_occupied(run_quotient);
                }
                hole != run_quotient
            };
            let remainder = self.remainder(from);
            self.set_content(hole, remainder, continuation, shifted);
            hole = from;
        }
        self.set_content(hole, 0, false, false);
    }

    /// Every fingerprint held (`quotient << r | remainder`), ascending.
    fn fingerprints(&self) -> Result<Vec<u64>, FilterError> {
        let corrupt = FilterError::InvalidParameter("the slots are not a valid quotient filter");
        let slots = self.slots();
        let empty = (0..slots)
            .find(|&slot| self.is_empty_slot(slot))
            .ok_or(corrupt.clone())?;
        let mut out = Vec::with_capacity(usize::try_from(self.len).map_err(|_| corrupt.clone())?);
        let (mut slot, mut quotient) = (empty, empty);
        for _ in 0..slots {
            slot = self.next(slot);
            if self.is_empty_slot(slot) {
                continue;
            }
            if !self.bit(slot, CONTINUATION) {
                quotient = self.next_occupied(quotient);
            }
            out.push((quotient << self.remainder_bits) | self.remainder(slot));
        }
        // Read from after an empty slot: the quotients above it first, then the wrapped ones.
        let r = self.remainder_bits;
        let wrapped = out.partition_point(|&f| (f >> r) > empty);
        out.rotate_left(wrapped);
        Ok(out)
    }

    /// A filter of `2^quotient_bits` slots holding `fingerprints` (ascending, each of
    /// `quotient_bits + remainder_bits` bits), laid out in one pass; the few whose runs would
    /// pass the end of the table are inserted after, wrapping around.
    fn from_sorted(
        quotient_bits: u32,
        remainder_bits: u32,
        hasher: KeyHasher,
        fingerprints: &[u64],
    ) -> Result<QuotientFilter, FilterError> {
        let mut filter = QuotientFilter::with_quotient_bits(quotient_bits, remainder_bits, hasher)?;
        if fingerprints.len() as u64 > filter.capacity() {
            return Err(FilterError::Full {
                len: fingerprints.len() as u64,
            });
        }
        let mask = filter.remainder_mask();
        let slots = filter.slots();
        let mut free = 0u64;
        let mut previous = None;
        let mut spilled = fingerprints.len();
        for (i, &f) in fingerprints.iter().enumerate() {
            let (quotient, remainder) = (f >> remainder_bits, f & mask);
            let same_run = previous == Some(quotient);
            let slot = if same_run { free } else { free.max(quotient) };
            if slot >= slots {
                spilled = i;
                break;
            }
            if !same_run {
                filter.set_bit(quotient, OCCUPIED, true);
            }
            filter.set_content(slot, remainder, same_run, slot != quotient);
            filter.len += 1;
            free = slot + 1;
            previous = Some(quotient);
        }
        for &f in &fingerprints[spilled..] {
            filter.insert_fingerprint(f >> remainder_bits, f & mask)?;
        }
        Ok(filter)
    }

    /// Checks that the slots are a quotient filter holding `len` fingerprints: unused bits 0,
    /// every empty slot's remainder 0, continuations shifted and inside a run, every run head
    /// matched to an occupied quotient at or before it with no empty slot between, its shifted
    /// bit saying whether it is in that slot, and remainders ascending within runs.
    fn check_structure(&self) -> Result<(), FilterError> {
        let corrupt = |what| Err(FilterError::InvalidParameter(what));
        let slots = self.slots();
        // A table under 64 slots leaves the rest of its one block unused.
        for unused in slots..BLOCK_SLOTS {
            if !self.is_empty_slot(unused) || self.remainder(unused) != 0 {
                return corrupt("bits set past the last slot");
            }
        }
        let mut held = 0u64;
        let mut first_empty = None;
        for slot in 0..slots {
            if self.is_empty_slot(slot) {
                if self.remainder(slot) != 0 {
                    return corrupt("an empty slot holds a remainder");
                }
                first_empty.get_or_insert(slot);
            } else {
                held += 1;
            }
        }
        if held != self.len {
            return corrupt("key count does not match the slots held");
        }
        let Some(empty) = first_empty else {
            return corrupt("no empty slot");
        };
        // Walk a full turn from after an empty slot. `pending`: occupied quotients passed whose
        // run has not started yet; `quotient`: the last one whose run did.
        let (mut slot, mut quotient) = (empty, empty);
        let mut pending = 0u64;
        let mut in_run = false;
        let mut previous = 0u64;
        for _ in 0..slots {
            slot = self.next(slot);
            if self.bit(slot, OCCUPIED) {
                pending += 1;
            }
            if self.is_empty_slot(slot) {
                if pending != 0 {
                    return corrupt("an empty slot before an occupied quotient's run");
                }
                in_run = false;
                continue;
            }
            let remainder = self.remainder(slot);
            if self.bit(slot, CONTINUATION) {
                if !in_run || !self.bit(slot, SHIFTED) {
                    return corrupt("a continuation outside a run or unshifted");
                }
                if remainder < previous {
                    return corrupt("remainders out of order within a run");
                }
            } else {
                if pending == 0 {
                    return corrupt("a run without an occupied quotient");
                }
                pending -= 1;
                quotient = self.next_occupied(quotient);
                if self.bit(slot, SHIFTED) != (slot != quotient) {
                    return corrupt("a run head's shifted bit is wrong");
                }
                in_run = true;
            }
            previous = remainder;
        }
        Ok(())
    }
}

/// Keys a table of `2^quotient_bits` slots takes: `⌊0.95 · slots⌋`, always under the slots.
fn max_len(quotient_bits: u32) -> u64 {
    let slots = 1u128 << quotient_bits.min(MAX_QUOTIENT_BITS);
    (slots * 19 / 20) as u64
}

/// Words of a table of `2^quotient_bits` slots of `remainder_bits`-bit remainders, after checking
/// both (allocating nothing).
fn word_count(quotient_bits: u32, remainder_bits: u32) -> Result<u64, FilterError> {
    if !(MIN_QUOTIENT_BITS..=MAX_QUOTIENT_BITS).contains(&quotient_bits) {
        return Err(FilterError::InvalidParameter(
            "quotient_bits must be from 1 to 48",
        ));
    }
    if !(MIN_REMAINDER_BITS..=MAX_REMAINDER_BITS).contains(&remainder_bits) {
        return Err(FilterError::InvalidParameter(
            "remainder_bits must be from 1 to 32",
        ));
    }
    if quotient_bits + remainder_bits > 64 {
        return Err(FilterError::InvalidParameter(
            "quotient and remainder bits must total at most 64",
        ));
    }
    let blocks = (1u64 << quotient_bits).div_ceil(BLOCK_SLOTS);
    Ok(blocks * (META_WORDS as u64 + u64::from(remainder_bits)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64.
    fn mix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The hash whose fingerprint is `f` in `filter`.
    fn hash_of(filter: &QuotientFilter, f: u64) -> u64 {
        f << (64 - filter.fingerprint_bits())
    }

    fn assert_holds(filter: &QuotientFilter, model: &[u64]) {
        filter.check_structure().unwrap();
        let mut sorted = model.to_vec();
        sorted.sort_unstable();
        assert_eq!(filter.fingerprints().unwrap(), sorted);
        assert_eq!(filter.len(), model.len() as u64);
        for &f in model {
            assert!(filter.contains_hash(hash_of(filter, f)), "lost {f:#x}");
        }
    }

    #[test]
    fn remainders_pack_at_any_width() {
        for bits in [1u32, 3, 7, 8, 13, 31, 32] {
            let mut f = QuotientFilter::with_quotient_bits(8, bits, KeyHasher::default()).unwrap();
            let value = |slot: u64| slot.wrapping_mul(2_654_435_761) & ((1 << bits) - 1);
            for slot in 0..256 {
                f.set_remainder(slot, value(slot));
                f.set_bit(slot, SHIFTED, slot % 3 == 0);
            }
            for slot in 0..256 {
                assert_eq!(f.remainder(slot), value(slot), "{bits} bits");
                assert_eq!(f.bit(slot, SHIFTED), slot % 3 == 0);
                assert!(!f.bit(slot, OCCUPIED) && !f.bit(slot, CONTINUATION));
            }
        }
    }

    /// Inserts and removes at the fingerprint level, crowded into few quotients near the end of
    /// the table so runs and clusters wrap: after every step the structure is valid and holds
    /// exactly the model's fingerprints; absent fingerprints are neither found nor removed.
    #[test]
    fn random_operations_keep_the_structure_exact() {
        for (quotient_bits, remainder_bits) in [(1, 3), (2, 2), (3, 4), (4, 1), (5, 6), (7, 8)] {
            let mut filter = QuotientFilter::with_quotient_bits(
                quotient_bits,
                remainder_bits,
                KeyHasher::default(),
            )
            .unwrap();
            let slots = filter.slots();
            let mut model: Vec<u64> = Vec::new();
            let mut state = u64::from(quotient_bits * 100 + remainder_bits);
            for step in 0..3_000 {
                let roll = mix(&mut state);
                // Mostly inserts at first (to full and past it), mostly removes after.
                let inserts = if step < 2_000 { 4 } else { 2 };
                // Quotients from the last third of the table (and a few anywhere), remainders
                // from a handful of values: long runs, duplicates, wrap-around.
                let quotient = if roll.is_multiple_of(5) {
                    (roll >> 8) % slots
                } else {
                    slots - 1 - (roll >> 8) % (slots / 3).max(1)
                };
                let remainder = (roll >> 20) % 3 % (1 << remainder_bits);
                let f = (quotient << remainder_bits) | remainder;
                let hash = hash_of(&filter, f);
                if roll % 7 < inserts {
                    match filter.insert_hash(hash) {
                        Ok(()) => model.push(f),
                        Err(FilterError::Full { .. }) => {
                            assert_eq!(filter.len(), filter.capacity());
                        }
                        Err(e) => panic!("{e}"),
                    }
                } else {
                    let present = model.iter().position(|&m| m == f);
                    assert_eq!(filter.contains_hash(hash), present.is_some());
                    assert_eq!(filter.remove_hash(hash), present.is_some());
                    if let Some(at) = present {
                        model.swap_remove(at);
                    }
                }
                assert_holds(&filter, &model);
            }
        }
    }

    #[test]
    fn sorted_construction_spills_past_the_end_and_wraps() {
        // Fifteen fingerprints of the last two quotients in a 16-slot table: the layout pass
        // places what fits, the rest wraps to the start.
        let mut fingerprints: Vec<u64> = (0..14u64).map(|i| (15 << 4) | (i % 16)).collect();
        fingerprints.extend((0..1u64).map(|i| (14 << 4) | i));
        fingerprints.sort_unstable();
        let filter =
            QuotientFilter::from_sorted(4, 4, KeyHasher::default(), &fingerprints).unwrap();
        assert_holds(&filter, &fingerprints);
        assert!(filter.bit(0, SHIFTED), "runs wrapped to slot 0");
    }

    #[test]
    fn grow_and_merge_keep_every_fingerprint() {
        let mut state = 7u64;
        let mut a = QuotientFilter::with_quotient_bits(4, 6, KeyHasher::default()).unwrap();
        let mut b = QuotientFilter::with_quotient_bits(5, 5, KeyHasher::default()).unwrap();
        let (mut ma, mut mb) = (Vec::new(), Vec::new());
        for _ in 0..15 {
            let f = mix(&mut state) >> 54;
            a.insert_hash(hash_of(&a, f)).unwrap();
            ma.push(f);
        }
        for _ in 0..30 {
            let f = mix(&mut state) >> 54;
            b.insert_hash(hash_of(&b, f)).unwrap();
            mb.push(f);
        }
        assert!(matches!(
            a.insert_hash(0),
            Err(FilterError::Full { len: 15 })
        ));
        let merged = a.merge(&b).unwrap();
        assert_eq!((merged.quotient_bits(), merged.remainder_bits()), (6, 4));
        let both: Vec<u64> = ma.iter().chain(&mb).copied().collect();
        assert_holds(&merged, &both);
        for expected in [(5, 5), (6, 4), (7, 3), (8, 2), (9, 1)] {
            a.grow().unwrap();
            assert_eq!((a.quotient_bits(), a.remainder_bits()), expected);
            assert_holds(&a, &ma);
        }
        let before = a.clone();
        assert!(matches!(a.grow(), Err(FilterError::Full { .. })));
        assert_eq!(a, before);
    }
}
