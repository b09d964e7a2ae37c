//! The linearizability checker itself (`siftdb_server::linearizability`): it accepts the
//! histories a register allows and rejects the others, before the cluster tests trust it.

use siftdb_server::linearizability::{check, Kind, Operation};

fn op(kind: Kind, call: u64, ret: Option<u64>) -> Operation {
    Operation {
        key: b"k".to_vec(),
        kind,
        call,
        ret,
    }
}
fn put(v: &str, call: u64, ret: u64) -> Operation {
    op(Kind::Put(v.into()), call, Some(ret))
}
fn get(v: Option<&str>, call: u64, ret: u64) -> Operation {
    op(Kind::Get(v.map(|v| v.as_bytes().to_vec())), call, Some(ret))
}

#[test]
fn sequential_histories_follow_the_register() {
    assert!(check(&[get(None, 0, 1), put("a", 2, 3), get(Some("a"), 4, 5)]).is_ok());
    assert!(check(&[
        put("a", 0, 1),
        op(Kind::Delete, 2, Some(3)),
        get(None, 4, 5)
    ])
    .is_ok());
    assert!(check(&[
        put("a", 0, 1),
        op(Kind::Delete, 2, Some(3)),
        get(Some("a"), 4, 5)
    ])
    .is_err());
    assert!(check(&[get(Some("a"), 0, 1), put("a", 2, 3)]).is_err());
}

#[test]
fn overlapping_operations_may_take_effect_in_either_order() {
    // The read overlaps the write: old or new value.
    assert!(check(&[put("a", 0, 1), put("b", 2, 6), get(Some("a"), 3, 4)]).is_ok());
    assert!(check(&[put("a", 0, 1), put("b", 2, 6), get(Some("b"), 3, 4)]).is_ok());
    // But two reads inside it cannot see new then old.
    assert!(check(&[
        put("a", 0, 1),
        put("b", 2, 9),
        get(Some("b"), 3, 4),
        get(Some("a"), 5, 6),
    ])
    .is_err());
}

#[test]
fn an_unknown_write_may_take_effect_late_or_never() {
    let unknown = op(Kind::Put("x".into()), 2, None);
    assert!(check(&[put("a", 0, 1), unknown.clone(), get(Some("a"), 10, 11)]).is_ok());
    assert!(check(&[put("a", 0, 1), unknown.clone(), get(Some("x"), 10, 11)]).is_ok());
    // Once seen, it cannot be undone.
    assert!(check(&[
        put("a", 0, 1),
        unknown,
        get(Some("x"), 10, 11),
        get(Some("a"), 12, 13),
    ])
    .is_err());
    // Never before its call.
    assert!(check(&[op(Kind::Put("x".into()), 5, None), get(Some("x"), 0, 1)]).is_err());
}

#[test]
fn keys_are_checked_apart_and_failed_reads_are_ignored() {
    let mut other = put("z", 0, 1);
    other.key = b"other".to_vec();
    let failed_read = op(Kind::Get(Some("nonsense".into())), 2, None);
    assert!(check(&[put("a", 0, 1), other, failed_read, get(Some("a"), 3, 4)]).is_ok());
    let err = check(&[put("a", 0, 1), put("b", 2, 3), get(Some("a"), 4, 5)]).unwrap_err();
    assert_eq!(err.key, b"k".to_vec());
}

#[test]
fn many_concurrent_operations_are_searched_quickly() {
    // 4 clients x 50 rounds of overlapping writes and reads that saw the latest write.
    let mut history = Vec::new();
    for round in 0..50u64 {
        let t = round * 10;
        for c in 0..3u64 {
            history.push(put(&format!("{round}-{c}"), t, t + 8));
        }
        history.push(get(Some(&format!("{round}-2")), t + 9, t + 9));
    }
    assert!(check(&history).is_ok());
}
