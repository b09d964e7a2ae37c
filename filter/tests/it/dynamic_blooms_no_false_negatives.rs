//! The scalable and the rotating bloom filters never answer "no" for a key they should hold:
//! the scalable one for every key ever inserted, however far it grew; the rotating one for every
//! key inserted since the oldest bucket still in the window began. Serialized forms round-trip
//! and refuse damage.

use std::collections::VecDeque;

use proptest::prelude::*;
use siftdb_filter::{KeyHasher, RotatingBloom, ScalableBloom};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn scalable_bloom_keeps_every_key(
        keys in prop::collection::vec(any::<u32>(), 1..3000),
        initial in 1u64..200,
        fpr in 0.001f64..0.2,
        growth in 2u32..5,
        round_trip in any::<bool>(),
    ) {
        let hasher = KeyHasher::xxh3(5);
        let mut chain = ScalableBloom::with_growth(initial, fpr, growth, 0.5, hasher).unwrap();
        for (n, k) in keys.iter().enumerate() {
            chain.insert(&k.to_le_bytes());
            if round_trip && n % 500 == 0 {
                chain = ScalableBloom::from_bytes(&chain.to_bytes(), &hasher).unwrap();
            }
        }
        for k in &keys {
            prop_assert!(chain.contains(&k.to_le_bytes()), "false negative for {k}");
        }
        prop_assert!(chain.fpr_bound() <= fpr * (1.0 + 1e-9));
    }

    #[test]
    fn rotating_bloom_keeps_the_window(
        steps in prop::collection::vec(prop_oneof![4 => any::<u16>().prop_map(Some), 1 => Just(None)], 1..2000),
        buckets in 2usize..8,
        round_trip in any::<bool>(),
    ) {
        let hasher = KeyHasher::default();
        let mut window = RotatingBloom::new(buckets, 200, 0.01, hasher).unwrap();
        // The keys of each bucket still in the window, newest last.
        let mut model: VecDeque<Vec<u16>> = VecDeque::from([Vec::new()]);
        for step in steps {
            match step {
                Some(k) => {
                    window.insert(&k.to_le_bytes());
                    if let Some(newest) = model.back_mut() {
                        newest.push(k);
                    }
                }
                None => {
                    window.rotate();
                    model.push_back(Vec::new());
                    if model.len() > buckets {
                        model.pop_front();
                    }
                    if round_trip {
                        window = RotatingBloom::from_bytes(&window.to_bytes(), &hasher).unwrap();
                    }
                }
            }
        }
        for k in model.iter().flatten() {
            prop_assert!(window.contains(&k.to_le_bytes()), "false negative for {k}");
        }
    }
}

/// Grown to 64× its first size, the chain's measured FPR stays under its bound.
#[test]
fn scalable_bloom_measured_fpr_stays_under_its_bound() {
    let mut chain = ScalableBloom::new(2_000, 0.01, KeyHasher::default()).unwrap();
    let n = 128_000u32;
    for i in 0..n {
        chain.insert(&i.to_le_bytes());
    }
    assert!(chain.filters() >= 6, "{}", chain.filters());
    let probes = 200_000u32;
    let false_positives = (n..n + probes)
        .filter(|i| chain.contains(&i.to_le_bytes()))
        .count();
    let fpr = false_positives as f64 / f64::from(probes);
    assert!(fpr < 0.01, "measured {fpr}, bound 0.01");
    assert!(chain.current_fpr() < 0.01, "{}", chain.current_fpr());
}

/// A full window answers under its FPR, and every single-bit flip of the bytes is refused.
#[test]
fn rotating_bloom_fpr_and_damage() {
    let hasher = KeyHasher::default();
    let mut window = RotatingBloom::new(4, 5_000, 0.02, hasher).unwrap();
    let mut key = 0u32;
    for _ in 0..4 {
        for _ in 0..5_000 {
            window.insert(&key.to_le_bytes());
            key += 1;
        }
        window.rotate();
    }
    // The last rotation retired the first bucket: 15,000 keys in the window.
    let probes = 100_000u32;
    let false_positives = (1_000_000..1_000_000 + probes)
        .filter(|i: &u32| window.contains(&i.to_le_bytes()))
        .count();
    let fpr = false_positives as f64 / f64::from(probes);
    assert!(fpr < 0.02, "measured {fpr}");
    let small = RotatingBloom::new(2, 50, 0.05, hasher).unwrap();
    let bytes = small.to_bytes();
    for byte in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[byte] ^= 0x01;
        assert!(
            RotatingBloom::from_bytes(&bad, &hasher).is_err(),
            "flip at {byte}"
        );
    }
    assert!(RotatingBloom::from_bytes(&bytes, &KeyHasher::xxh3(3)).is_err());
    assert!(
        ScalableBloom::from_bytes(&bytes, &hasher).is_err(),
        "another structure's bytes"
    );
}
