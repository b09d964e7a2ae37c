//! `multi_get` on a tree of many small tables per level answers exactly as one `get` per key:
//! the batch finds each key's table by galloping from the previous key's and shares a table's
//! filter between its keys, which must never skip a table that holds a key.

use siftdb::{Db, Options};

#[test]
fn multi_get_agrees_with_get_across_many_tables_per_level() {
    let dir = siftdb_tests::temp_dir();
    let options = Options {
        write_buffer_size: 16 << 10,
        target_file_size_base: 8 << 10,
        max_bytes_for_level_base: 32 << 10,
        max_bytes_for_level_multiplier: 4.0,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).unwrap();
    let key = |i: u32| format!("k{:07}", i.wrapping_mul(7919) % 30_000).into_bytes();
    for i in 0..30_000u32 {
        if i % 3 != 0 {
            db.put(key(i), i.to_le_bytes()).unwrap();
        }
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    let tables: usize = db.level_info().iter().map(|l| l.files).sum();
    assert!(tables > 20, "a tree of many tables: {tables}");
    // Batches of 64 keys, present and missing mixed, in scattered and in runs of neighbours.
    for start in (0..30_000u32).step_by(997) {
        let keys: Vec<Vec<u8>> = (0..64u32)
            .map(|j| {
                let n = if j % 2 == 0 {
                    start + j
                } else {
                    start.wrapping_mul(31) + j * 401
                };
                format!("k{:07}", n % 30_000).into_bytes()
            })
            .collect();
        let got: Vec<Option<Vec<u8>>> = db
            .multi_get(&keys)
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| db.get(k).unwrap()).collect();
        assert_eq!(got, want, "batch from {start}");
    }
}
