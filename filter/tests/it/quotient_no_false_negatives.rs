//! The quotient filter never answers "no" for a key inserted more often than removed — through
//! refused inserts (full), removes, merges, growth and round trips — its measured FPR is the one
//! it expects, and its serialized form refuses damage without panicking.

use std::collections::BTreeMap;

use proptest::prelude::*;
use siftdb_filter::{FilterError, KeyHasher, QuotientFilter};

#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<u8>),
    Remove(Vec<u8>),
    Contains(Vec<u8>),
    RoundTrip,
    Grow,
}

/// Keys from a small space (43 of them), so duplicates and shared fingerprints are common.
fn small_key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(0u8..6, 0..3)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => small_key().prop_map(Op::Insert),
        3 => small_key().prop_map(Op::Remove),
        2 => small_key().prop_map(Op::Contains),
        1 => Just(Op::RoundTrip),
        1 => Just(Op::Grow),
    ]
}

/// Every key the model holds is found.
fn holds_all(
    filter: &QuotientFilter,
    model: &BTreeMap<Vec<u8>, usize>,
) -> Result<(), TestCaseError> {
    for k in model.keys() {
        prop_assert!(filter.contains(k), "false negative for {k:?}");
    }
    prop_assert_eq!(filter.len(), model.values().sum::<usize>() as u64);
    Ok(())
}

/// Inserts `keys` until the filter is full; returns the multiset it took.
fn fill(filter: &mut QuotientFilter, keys: &[Vec<u8>]) -> BTreeMap<Vec<u8>, usize> {
    let mut model = BTreeMap::new();
    for k in keys {
        match filter.insert(k) {
            Ok(()) => *model.entry(k.clone()).or_default() += 1,
            Err(FilterError::Full { .. }) => break,
            Err(e) => panic!("{e}"),
        }
    }
    model
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Inserts (refused when full, changing nothing), removes of present keys (which always
    /// succeed), queries, growth and round trips against a multiset model.
    #[test]
    fn quotient_filter_matches_a_multiset_model(
        ops in prop::collection::vec(op(), 1..600),
        capacity in 1u64..64,
        remainder_bits in 2u32..10,
    ) {
        let hasher = KeyHasher::xxh3(11);
        let mut filter = QuotientFilter::new(capacity, remainder_bits, hasher).unwrap();
        let mut model: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(k) => {
                    let before = filter.clone();
                    match filter.insert(&k) {
                        Ok(()) => *model.entry(k).or_default() += 1,
                        Err(FilterError::Full { len }) => {
                            prop_assert_eq!(len, filter.capacity());
                            prop_assert_eq!(&filter, &before, "a refused insert changed the filter");
                        }
                        Err(e) => return Err(TestCaseError::fail(e.to_string())),
                    }
                }
                Op::Remove(k) => {
                    // Only present keys: removing an absent one may take another's fingerprint.
                    if let Some(count) = model.get_mut(&k) {
                        prop_assert!(filter.remove(&k), "present key {k:?} not removed");
                        *count -= 1;
                        if *count == 0 {
                            model.remove(&k);
                        }
                    }
                }
                Op::Contains(k) => {
                    if model.contains_key(&k) {
                        prop_assert!(filter.contains(&k), "false negative for {k:?}");
                    }
                }
                Op::RoundTrip => {
                    let back = QuotientFilter::from_bytes(&filter.to_bytes(), &hasher).unwrap();
                    prop_assert_eq!(&back, &filter);
                    filter = back;
                }
                Op::Grow => {
                    let width = filter.fingerprint_bits();
                    match filter.grow() {
                        Ok(()) => prop_assert_eq!(filter.fingerprint_bits(), width),
                        Err(FilterError::Full { .. }) => prop_assert_eq!(filter.remainder_bits(), 1),
                        Err(e) => return Err(TestCaseError::fail(e.to_string())),
                    }
                }
            }
            holds_all(&filter, &model)?;
        }
    }

    /// A merge holds both multisets (a key in both twice), whichever sizes the inputs have with
    /// the same fingerprint width; removing one side's keys leaves the other's.
    #[test]
    fn quotient_filter_merge_holds_both_multisets(
        a_keys in prop::collection::vec(any::<u16>(), 0..400),
        b_keys in prop::collection::vec(any::<u16>(), 0..400),
        a_quotient_bits in 1u32..9,
        b_larger in 0u32..3,
        remainder_bits in 3u32..12,
        round_trip in any::<bool>(),
    ) {
        let hasher = KeyHasher::default();
        let to_keys = |keys: &[u16]| keys.iter().map(|k| (k % 300).to_le_bytes().to_vec()).collect::<Vec<_>>();
        let (a_keys, b_keys) = (to_keys(&a_keys), to_keys(&b_keys));
        let mut a = QuotientFilter::with_quotient_bits(a_quotient_bits, remainder_bits, hasher).unwrap();
        // Same fingerprint width, up to 4x the slots.
        let mut b = QuotientFilter::with_quotient_bits(
            a_quotient_bits + b_larger,
            remainder_bits - b_larger,
            hasher,
        )
        .unwrap();
        let model_a = fill(&mut a, &a_keys);
        let model_b = fill(&mut b, &b_keys);
        let mut merged = match a.merge(&b) {
            Ok(merged) => merged,
            Err(FilterError::Full { len }) => {
                // Only when the keys need a table of more than 2^(p-1) slots (r under 1 bit).
                let widest = 1u64 << (a.fingerprint_bits() - 1);
                prop_assert!(len > widest * 19 / 20, "{len} keys refused");
                return Ok(());
            }
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        };
        if round_trip {
            merged = QuotientFilter::from_bytes(&merged.to_bytes(), &hasher).unwrap();
        }
        prop_assert_eq!(merged.fingerprint_bits(), a.fingerprint_bits());
        prop_assert!(merged.quotient_bits() >= a.quotient_bits().max(b.quotient_bits()));
        let mut both = model_a.clone();
        for (k, n) in &model_b {
            *both.entry(k.clone()).or_default() += n;
        }
        holds_all(&merged, &both)?;
        prop_assert_eq!(b.merge(&a).unwrap(), merged.clone(), "merge is symmetric");
        for (k, &n) in &model_a {
            for _ in 0..n {
                prop_assert!(merged.remove(k));
            }
        }
        holds_all(&merged, &model_b)?;
    }

    /// Grown several times, with keys added between the doublings, every key stays.
    #[test]
    fn quotient_filter_grow_keeps_every_key(
        keys in prop::collection::vec(any::<u32>(), 1..2000),
        capacity in 1u64..100,
        remainder_bits in 6u32..14,
        grows in 1usize..6,
    ) {
        let hasher = KeyHasher::xxh3(2);
        let mut filter = QuotientFilter::new(capacity, remainder_bits, hasher).unwrap();
        let width = filter.fingerprint_bits();
        let mut model: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
        let mut grown = 0;
        for k in &keys {
            let k = k.to_le_bytes().to_vec();
            if let Err(FilterError::Full { .. }) = filter.insert(&k) {
                if grown == grows {
                    break;
                }
                filter.grow().unwrap();
                grown += 1;
                holds_all(&filter, &model)?;
                filter.insert(&k).unwrap();
            }
            *model.entry(k).or_default() += 1;
        }
        prop_assert_eq!(filter.fingerprint_bits(), width);
        prop_assert_eq!(filter.remainder_bits(), remainder_bits - grown as u32);
        holds_all(&filter, &model)?;
        let back = QuotientFilter::from_bytes(&filter.to_bytes(), &hasher).unwrap();
        holds_all(&back, &model)?;
    }
}

/// At 90 % load with 8-bit remainders, the measured FPR over 200,000 absent keys is within a
/// factor two of `1 − e^(−α/2^r)`; the memory is (8 + 3) bits a slot.
#[test]
fn quotient_filter_measured_fpr_matches_its_expectation() {
    let mut filter = QuotientFilter::with_quotient_bits(16, 8, KeyHasher::default()).unwrap();
    let n = (0.9 * filter.slots() as f64) as u32;
    for i in 0..n {
        filter.insert(&i.to_le_bytes()).unwrap();
    }
    assert!((filter.load() - 0.9).abs() < 1e-3);
    let probes = 200_000u32;
    let false_positives = (0..probes)
        .filter(|i| filter.contains(&(i | 1 << 31).to_le_bytes()))
        .count();
    let measured = false_positives as f64 / f64::from(probes);
    let expected = filter.expected_fpr();
    assert!(
        (0.5 * expected..=2.0 * expected).contains(&measured),
        "measured {measured}, expected {expected}"
    );
    assert_eq!(filter.size_bytes() as u64 * 8, filter.slots() * 11);
    assert!((filter.bits_per_key() - 11.0 / 0.95).abs() < 0.01);
    assert!((0..n).all(|i| filter.contains(&i.to_le_bytes())));
}

/// At capacity an insert is refused with `Full` and changes nothing; every inserted key is
/// still found; after `grow` inserts go on.
#[test]
fn quotient_filter_full_is_an_error_that_loses_nothing() {
    let mut filter = QuotientFilter::new(1_000, 8, KeyHasher::default()).unwrap();
    assert!(filter.capacity() >= 1_000);
    let mut inserted = 0u32;
    let refused = loop {
        match filter.insert(&inserted.to_le_bytes()) {
            Ok(()) => inserted += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(
        refused,
        FilterError::Full {
            len: filter.capacity()
        }
    );
    assert_eq!(u64::from(inserted), filter.capacity());
    assert!(filter.load() <= QuotientFilter::MAX_LOAD);
    let before = filter.clone();
    assert!(filter.insert(b"one more").is_err());
    assert_eq!(filter, before);
    assert!((0..inserted).all(|i| filter.contains(&i.to_le_bytes())));
    filter.grow().unwrap();
    assert_eq!(filter.remainder_bits(), 7);
    filter.insert(b"one more").unwrap();
    assert!((0..inserted).all(|i| filter.contains(&i.to_le_bytes())));
    assert!(filter.contains(b"one more"));
}

/// Duplicates are a multiset: a key inserted twice is removed twice.
#[test]
fn quotient_filter_holds_duplicates_as_a_multiset() {
    let mut filter = QuotientFilter::new(100, 10, KeyHasher::default()).unwrap();
    filter.insert(b"twice").unwrap();
    filter.insert(b"twice").unwrap();
    assert_eq!(filter.len(), 2);
    assert!(filter.remove(b"twice"));
    assert!(filter.contains(b"twice"));
    assert!(filter.remove(b"twice"));
    assert!(!filter.contains(b"twice"));
    assert!(!filter.remove(b"twice"));
    assert!(filter.is_empty());
}

fn small_filter() -> Vec<u8> {
    let mut filter = QuotientFilter::new(20, 5, KeyHasher::default()).unwrap();
    for i in 0..18u32 {
        filter.insert(&i.to_le_bytes()).unwrap();
    }
    filter.to_bytes()
}

/// Every truncation and every single-bit flip of a serialized filter is refused.
#[test]
fn quotient_filter_refuses_every_truncation_and_bit_flip() {
    let bytes = small_filter();
    let hasher = KeyHasher::default();
    assert!(QuotientFilter::from_bytes(&bytes, &hasher).is_ok());
    for cut in 0..bytes.len() {
        assert!(
            QuotientFilter::from_bytes(&bytes[..cut], &hasher).is_err(),
            "cut {cut}"
        );
    }
    for byte in 0..bytes.len() {
        for bit in 0..8 {
            let mut bad = bytes.clone();
            bad[byte] ^= 1 << bit;
            assert!(
                QuotientFilter::from_bytes(&bad, &hasher).is_err(),
                "flip {byte}.{bit}"
            );
        }
    }
}

/// Damage behind a valid checksum (every payload bit flipped, every payload byte set to 0x00
/// and 0xFF, the envelope then resealed): header damage is refused; whatever else decodes
/// answers queries, inserts and removes without panicking or looping.
#[test]
fn quotient_filter_payload_damage_under_a_valid_checksum_never_panics() {
    let bytes = small_filter();
    let hasher = KeyHasher::default();
    let reseal = |mut bytes: Vec<u8>| {
        let body = bytes.len() - 4;
        let crc = crc32fast::hash(&bytes[..body]);
        bytes[body..].copy_from_slice(&crc.to_le_bytes());
        bytes
    };
    let payload = 24..bytes.len() - 4;
    let mut damaged = Vec::new();
    for byte in payload.clone() {
        for bit in 0..8 {
            let mut bad = bytes.clone();
            bad[byte] ^= 1 << bit;
            damaged.push((byte, reseal(bad)));
        }
        for value in [0x00, 0xFF] {
            let mut bad = bytes.clone();
            bad[byte] = value;
            if bad != bytes {
                damaged.push((byte, reseal(bad)));
            }
        }
    }
    let mut refused = 0;
    for (byte, bad) in damaged {
        match QuotientFilter::from_bytes(&bad, &hasher) {
            Err(_) => refused += 1,
            Ok(mut f) => {
                // The header (quotient bits, remainder bits, keys) is never accepted damaged.
                assert!(
                    byte >= payload.start + 16,
                    "header damage at {byte} accepted"
                );
                for i in 0..40u32 {
                    let _ = f.contains(&i.to_le_bytes());
                }
                if f.insert(b"probe").is_ok() {
                    assert!(f.contains(b"probe"));
                    assert!(f.remove(b"probe"));
                }
                let _ = f.merge(&f.clone());
                let _ = f.grow();
                assert_eq!(QuotientFilter::from_bytes(&f.to_bytes(), &hasher), Ok(f));
            }
        }
    }
    assert!(refused > 0);
}

/// Parameters no filter can have, another hasher, and merges of unlike filters are refused
/// with typed errors.
#[test]
fn quotient_filter_refuses_bad_parameters_and_unlike_merges() {
    let h = KeyHasher::default();
    let invalid =
        |r: Result<QuotientFilter, FilterError>| matches!(r, Err(FilterError::InvalidParameter(_)));
    assert!(invalid(QuotientFilter::new(0, 8, h)));
    assert!(invalid(QuotientFilter::new(10, 0, h)));
    assert!(invalid(QuotientFilter::new(10, 33, h)));
    assert!(invalid(QuotientFilter::with_quotient_bits(0, 8, h)));
    assert!(invalid(QuotientFilter::with_quotient_bits(49, 8, h)));
    assert!(invalid(QuotientFilter::with_quotient_bits(40, 30, h)));
    let a = QuotientFilter::new(10, 8, h).unwrap();
    assert!(matches!(
        QuotientFilter::from_bytes(&a.to_bytes(), &KeyHasher::xxh3(1)),
        Err(FilterError::SeedMismatch { .. })
    ));
    assert!(matches!(
        a.merge(&QuotientFilter::new(10, 8, KeyHasher::xxh3(1)).unwrap()),
        Err(FilterError::SeedMismatch { .. })
    ));
    assert!(matches!(
        a.merge(&QuotientFilter::new(10, 8, KeyHasher::siphash13([1; 16])).unwrap()),
        Err(FilterError::HashMismatch { .. })
    ));
    assert!(invalid(a.merge(&QuotientFilter::new(10, 9, h).unwrap())));
    // Four fingerprint bits: at most 2^3 slots (1-bit remainders), 7 keys.
    let mut narrow = QuotientFilter::with_quotient_bits(1, 3, h).unwrap();
    let mut wide = QuotientFilter::with_quotient_bits(3, 1, h).unwrap();
    narrow.insert(b"a").unwrap();
    for i in 0..7u8 {
        wide.insert(&[i]).unwrap();
    }
    assert_eq!(narrow.merge(&wide), Err(FilterError::Full { len: 8 }));
}
