//! The stress tool's values (`siftdb_tests::stress_values`): each names its keyspace, key and
//! write, so a value read back is told apart from any other.

use siftdb_tests::stress_values::{decode_id, encode, key_name, parse_key};

#[test]
fn values_round_trip_and_are_told_apart() {
    for id in 1..2000u64 {
        let v = encode(1, 77, id, 4 << 20);
        assert_eq!(decode_id(1, 77, 4 << 20, &v), Some(id));
        assert_eq!(decode_id(1, 78, 4 << 20, &v), None);
        assert_eq!(decode_id(0, 77, 4 << 20, &v), None);
    }
    assert_eq!(parse_key(&key_name(1234)), Some(1234));
    assert_eq!(parse_key(b"k0000123"), None);
}
