//! The counting bloom filter never answers "no" for a key inserted more often than removed,
//! whatever the order of inserts and removes, saturated counters and serialization included.

use std::collections::HashMap;

use proptest::prelude::*;
use siftdb_filter::{CountingBloom, KeyHasher};

#[derive(Debug, Clone)]
enum Op {
    Insert(u16),
    /// Remove one insertion of the key at this position among the keys inserted so far.
    Remove(usize),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            3 => any::<u16>().prop_map(|k| Op::Insert(k % 512)),
            2 => any::<usize>().prop_map(Op::Remove),
        ],
        1..600,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn counting_bloom_keeps_every_present_key(
        ops in ops(),
        counters in 64u64..4096,
        probes in 1u32..8,
        round_trip in any::<bool>(),
    ) {
        let hasher = KeyHasher::xxh3(11);
        let mut filter = CountingBloom::with_counters(counters, probes, hasher).unwrap();
        let mut model: HashMap<u16, u32> = HashMap::new();
        for op in ops {
            match op {
                Op::Insert(k) => {
                    filter.insert(&k.to_le_bytes());
                    *model.entry(k).or_default() += 1;
                }
                Op::Remove(i) => {
                    let mut present: Vec<u16> = model.keys().copied().collect();
                    if present.is_empty() {
                        continue;
                    }
                    present.sort_unstable();
                    let k = present[i % present.len()];
                    prop_assert!(filter.remove(&k.to_le_bytes()), "present key {k} refused");
                    let count = model.get_mut(&k).unwrap();
                    *count -= 1;
                    if *count == 0 {
                        model.remove(&k);
                    }
                }
            }
            if round_trip {
                filter = CountingBloom::from_bytes(&filter.to_bytes(), &hasher).unwrap();
            }
            for k in model.keys() {
                prop_assert!(filter.contains(&k.to_le_bytes()), "false negative for {k}");
            }
        }
        prop_assert_eq!(filter.len(), model.values().map(|&c| u64::from(c)).sum::<u64>());
    }
}

/// At the size `new` chooses, the measured FPR is near the target, and removing every key
/// empties the filter (no counter saturated at this load).
#[test]
fn counting_bloom_fpr_is_near_its_target_and_removal_empties_it() {
    let hasher = KeyHasher::default();
    let n = 20_000u32;
    let mut filter = CountingBloom::new(u64::from(n), 0.01, hasher).unwrap();
    for i in 0..n {
        filter.insert(&i.to_le_bytes());
    }
    assert_eq!(filter.saturated_counters(), 0);
    let probes = 200_000u32;
    let false_positives = (n..n + probes)
        .filter(|i| filter.contains(&i.to_le_bytes()))
        .count();
    let fpr = false_positives as f64 / f64::from(probes);
    assert!((0.006..0.015).contains(&fpr), "fpr {fpr}");
    assert!(
        (filter.expected_fpr() - 0.01).abs() < 0.002,
        "{}",
        filter.expected_fpr()
    );
    for i in 0..n {
        assert!(filter.remove(&i.to_le_bytes()));
    }
    assert!(filter.is_empty());
    assert!((n..n + 10_000).all(|i| !filter.contains(&i.to_le_bytes())));
    assert!((0..n).all(|i| !filter.contains(&i.to_le_bytes())));
}

/// A serialized filter is refused under another seed, and every single-bit flip is caught.
#[test]
fn counting_bloom_bytes_are_checked() {
    let hasher = KeyHasher::default();
    let mut filter = CountingBloom::new(100, 0.05, hasher).unwrap();
    for i in 0..100u32 {
        filter.insert(&i.to_le_bytes());
    }
    let bytes = filter.to_bytes();
    assert!(CountingBloom::from_bytes(&bytes, &KeyHasher::xxh3(1)).is_err());
    for byte in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[byte] ^= 0x10;
        assert!(
            CountingBloom::from_bytes(&bad, &hasher).is_err(),
            "flip at {byte}"
        );
    }
    for cut in 0..bytes.len() {
        assert!(CountingBloom::from_bytes(&bytes[..cut], &hasher).is_err());
    }
}
