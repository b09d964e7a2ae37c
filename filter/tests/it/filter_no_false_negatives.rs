//! A filter may say "maybe" wrongly, never "no" wrongly: for every kind, hash mode and bits/key,
//! every inserted key must be reported as possibly present, before and after serialization.

use proptest::prelude::*;
use siftdb_filter::{Filter, FilterBuilder, FilterKind, KeyHasher};

const KINDS: [FilterKind; 3] = [
    FilterKind::BlockedBloom,
    FilterKind::Ribbon,
    FilterKind::BinaryFuse,
];

fn hashers() -> [KeyHasher; 3] {
    [
        KeyHasher::default(),
        KeyHasher::xxh3(0xdead_beef),
        KeyHasher::siphash13(*b"0123456789abcdef"),
    ]
}

fn check(kind: FilterKind, bits_per_key: f64, hasher: KeyHasher, keys: &[Vec<u8>]) {
    let mut builder = FilterBuilder::new(kind, bits_per_key, hasher);
    for key in keys {
        builder.add_key(key);
    }
    let built = builder.build().unwrap();
    let decoded = Filter::decode(&built.encode(), &hasher).unwrap();
    for key in keys {
        assert!(
            built.may_contain(key),
            "{kind} {bits_per_key} built: false negative"
        );
        assert!(
            decoded.may_contain(key),
            "{kind} {bits_per_key} decoded: false negative"
        );
    }
    assert_eq!(decoded.key_count(), keys.len() as u64);
}

fn numbered_keys(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("user{i:012}").into_bytes())
        .collect()
}

#[test]
fn filter_fixed_sizes_have_no_false_negatives() {
    for n in [0usize, 1, 2, 31, 1000, 20_000] {
        let keys = numbered_keys(n);
        for kind in KINDS {
            for hasher in hashers() {
                for bpk in [1.0, 4.5, 6.0, 6.7, 8.0, 10.0, 12.0, 16.0, 23.3] {
                    check(kind, bpk, hasher, &keys);
                }
            }
        }
    }
}

#[test]
fn filter_large_set_has_no_false_negatives() {
    let keys = numbered_keys(300_000);
    for kind in KINDS {
        check(kind, 7.3, KeyHasher::default(), &keys);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn filter_random_sets_have_no_false_negatives(
        keys in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..3000),
        bpk in 0.5f64..30.0,
        kind_index in 0usize..2,
        hasher_index in 0usize..3,
    ) {
        check(KINDS[kind_index], bpk, hashers()[hasher_index], &keys);
    }
}

#[test]
fn filter_batched_query_agrees_with_single_queries() {
    let keys = numbered_keys(20_000);
    let hasher = KeyHasher::default();
    // Inserted keys interleaved with absent ones, so both answers occur in one batch.
    let probes: Vec<u64> = (0..40_000)
        .map(|i| hasher.hash(format!("user{:012}", i).as_bytes()))
        .collect();
    for kind in KINDS {
        for bpk in [4.5, 10.0, 16.0] {
            let mut builder = FilterBuilder::new(kind, bpk, hasher);
            for key in &keys {
                builder.add_key(key);
            }
            let filter = builder.build().unwrap();
            let mut batch = vec![false; 7];
            filter.may_contain_batch(&probes, &mut batch);
            let single: Vec<bool> = probes.iter().map(|&h| filter.may_contain_hash(h)).collect();
            assert_eq!(batch, single, "{kind} {bpk}");
            assert!(
                batch[..20_000].iter().all(|&b| b),
                "{kind} {bpk}: false negative"
            );
            assert!(
                batch[20_000..].iter().any(|&b| !b),
                "{kind} {bpk}: says yes to everything"
            );
        }
    }
}
