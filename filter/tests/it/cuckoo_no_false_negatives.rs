//! The cuckoo filter never answers "no" for a key inserted more often than removed, a refused
//! insert (full) loses nothing, and its serialized form round-trips and refuses damage.

use std::collections::HashMap;

use proptest::prelude::*;
use siftdb_filter::{CuckooFilter, FilterError, KeyHasher};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Inserts (some refused when full), removes of inserted keys, round trips: every key
    /// inserted more often than removed is found, and a refused insert loses nothing.
    #[test]
    fn cuckoo_filter_keeps_every_present_key(
        ops in prop::collection::vec(prop_oneof![3 => any::<u16>().prop_map(|k| (true, k)), 1 => any::<u16>().prop_map(|k| (false, k))], 1..1500),
        log_buckets in 2u32..8,
        bits in 4u32..17,
        round_trip in any::<bool>(),
    ) {
        let hasher = KeyHasher::xxh3(3);
        let mut filter = CuckooFilter::with_buckets(1 << log_buckets, bits, hasher).unwrap();
        let mut model: HashMap<u16, u32> = HashMap::new();
        for (n, (insert, k)) in ops.into_iter().enumerate() {
            if insert {
                match filter.insert(&k.to_le_bytes()) {
                    Ok(()) => *model.entry(k).or_default() += 1,
                    Err(FilterError::Full { .. }) => {}
                    Err(e) => return Err(TestCaseError::fail(e.to_string())),
                }
            } else if let Some(count) = model.get_mut(&k) {
                prop_assert!(filter.remove(&k.to_le_bytes()), "present key {k} not removed");
                *count -= 1;
                if *count == 0 {
                    model.remove(&k);
                }
            }
            if round_trip && n % 100 == 0 {
                filter = CuckooFilter::from_bytes(&filter.to_bytes(), &hasher).unwrap();
            }
            for k in model.keys() {
                prop_assert!(filter.contains(&k.to_le_bytes()), "false negative for {k}");
            }
        }
        prop_assert_eq!(filter.len(), model.values().map(|&c| u64::from(c)).sum::<u64>());
    }
}

/// At the size `new` picks the filter takes its capacity, and its FPR is under 8 / 2^f.
#[test]
fn cuckoo_filter_reaches_its_load_and_fpr() {
    let n = 100_000u32;
    let mut filter = CuckooFilter::new(u64::from(n), 12, KeyHasher::default()).unwrap();
    for i in 0..n {
        filter.insert(&i.to_le_bytes()).unwrap();
    }
    let probes = 200_000u32;
    let false_positives = (n..n + probes)
        .filter(|i| filter.contains(&i.to_le_bytes()))
        .count();
    let fpr = false_positives as f64 / f64::from(probes);
    assert!(fpr < 8.0 / 4096.0, "measured {fpr}");
    let bytes = filter.to_bytes();
    for byte in (0..bytes.len()).step_by(97) {
        let mut bad = bytes.clone();
        bad[byte] ^= 0x04;
        assert!(CuckooFilter::from_bytes(&bad, &KeyHasher::default()).is_err());
    }
}
