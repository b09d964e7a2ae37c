//! The filter block decoder refuses everything it does not fully understand, without panicking.

use proptest::prelude::*;
use siftdb_filter::{Filter, FilterBuilder, FilterError, FilterKind, KeyHasher, HEADER_LEN};

fn block(kind: FilterKind, hasher: KeyHasher, n: usize) -> Vec<u8> {
    let mut b = FilterBuilder::new(kind, 9.5, hasher);
    for i in 0..n {
        b.add_key(format!("k{i}").as_bytes());
    }
    b.finish().unwrap()
}

fn blocks() -> Vec<(Vec<u8>, KeyHasher)> {
    let mut out = Vec::new();
    for kind in [
        FilterKind::BlockedBloom,
        FilterKind::Ribbon,
        FilterKind::BinaryFuse,
    ] {
        for hasher in [KeyHasher::default(), KeyHasher::siphash13([7; 16])] {
            for n in [0, 1, 40] {
                out.push((block(kind, hasher, n), hasher));
            }
        }
    }
    out
}

#[test]
fn filter_block_rejects_every_truncation() {
    for (bytes, hasher) in blocks() {
        assert!(Filter::decode(&bytes, &hasher).is_ok());
        for len in 0..bytes.len() {
            assert!(
                Filter::decode(&bytes[..len], &hasher).is_err(),
                "truncation to {len} of {} accepted",
                bytes.len()
            );
        }
    }
}

#[test]
fn filter_block_rejects_every_header_byte_change() {
    for (bytes, hasher) in blocks() {
        for at in 0..HEADER_LEN {
            for delta in [1u8, 0x80, 0xff] {
                let mut bad = bytes.clone();
                bad[at] ^= delta;
                assert!(
                    Filter::decode(&bad, &hasher).is_err(),
                    "byte {at} ^ {delta:#x} accepted"
                );
            }
        }
    }
}

#[test]
fn filter_block_rejects_any_single_bit_flip() {
    for (bytes, hasher) in blocks() {
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 1 << (at % 8);
            assert!(
                Filter::decode(&bad, &hasher).is_err(),
                "flip at {at} accepted"
            );
        }
    }
}

#[test]
fn filter_block_rejects_foreign_seed_and_hash() {
    let bytes = block(FilterKind::BlockedBloom, KeyHasher::xxh3(1), 10);
    assert!(matches!(
        Filter::decode(&bytes, &KeyHasher::xxh3(2)),
        Err(FilterError::SeedMismatch {
            found: 1,
            expected: 2
        })
    ));
    assert!(matches!(
        Filter::decode(&bytes, &KeyHasher::siphash13([0; 16])),
        Err(FilterError::HashMismatch { .. })
    ));
    let keyed = block(FilterKind::Ribbon, KeyHasher::siphash13([1; 16]), 10);
    assert!(matches!(
        Filter::decode(&keyed, &KeyHasher::siphash13([2; 16])),
        Err(FilterError::SeedMismatch { .. })
    ));
}

#[test]
fn filter_block_rejects_unknown_version_and_kind() {
    let good = block(FilterKind::BlockedBloom, KeyHasher::default(), 5);
    // Re-seal with a valid checksum so only the field under test is wrong.
    let reseal = |mut b: Vec<u8>| {
        let body = b.len() - 4;
        let crc = crc32(&b[..body]);
        b[body..].copy_from_slice(&crc.to_le_bytes());
        b
    };
    let mut v = good.clone();
    v[4] = 2;
    assert!(matches!(
        Filter::decode(&reseal(v), &KeyHasher::default()),
        Err(FilterError::UnsupportedVersion(2))
    ));
    let mut k = good.clone();
    k[5] = 9;
    assert!(matches!(
        Filter::decode(&reseal(k), &KeyHasher::default()),
        Err(FilterError::UnknownKind(9))
    ));
    let mut h = good.clone();
    h[6] = 77;
    assert!(matches!(
        Filter::decode(&reseal(h), &KeyHasher::default()),
        Err(FilterError::UnknownHash(77))
    ));
    let mut p = good;
    p[36] = 200; // bloom probe count out of range
    assert!(matches!(
        Filter::decode(&reseal(p), &KeyHasher::default()),
        Err(FilterError::InvalidParameter(_))
    ));
}

/// CRC32 (IEEE), bitwise: the test's own implementation, independent of the crate's.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn filter_block_random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = Filter::decode(&bytes, &KeyHasher::default());
    }

    #[test]
    fn filter_block_mutations_never_panic(
        index in 0usize..18,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        truncate in any::<Option<usize>>(),
    ) {
        let all = blocks();
        let (mut bytes, hasher) = all[index % all.len()].clone();
        for (at, value) in edits {
            let len = bytes.len();
            bytes[at % len] = value;
        }
        if let Some(t) = truncate {
            bytes.truncate(t % (bytes.len() + 1));
        }
        let _ = Filter::decode(&bytes, &hasher);
    }

    /// Parameter and payload changes with a valid checksum (what a bug, not a bit flip, would
    /// write): every kind's decoder refuses or accepts them without panicking, and whatever it
    /// accepts answers queries without panicking.
    #[test]
    fn filter_block_resealed_parameter_changes_never_panic(
        index in 0usize..18,
        edits in proptest::collection::vec((32usize..48, any::<u8>()), 1..4),
        payload_cut in any::<Option<usize>>(),
    ) {
        let all = blocks();
        let (mut bytes, hasher) = all[index % all.len()].clone();
        for (at, value) in edits {
            bytes[at] = value;
        }
        let body = bytes.len() - 4;
        let mut body_bytes = bytes[..body].to_vec();
        if let Some(cut) = payload_cut {
            let payload = body_bytes.len() - HEADER_LEN;
            body_bytes.truncate(HEADER_LEN + cut % (payload + 1));
        }
        let crc = crc32(&body_bytes);
        body_bytes.extend_from_slice(&crc.to_le_bytes());
        if let Ok(f) = Filter::decode(&body_bytes, &hasher) {
            for probe in 0..64u64 {
                let _ = f.may_contain_hash(probe.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                f.prefetch_hash(probe);
            }
        }
    }
}
