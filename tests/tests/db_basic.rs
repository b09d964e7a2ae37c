//! Basic behaviour of the public API.

use siftdb::{Db, Options};

#[test]
fn db_iterates_after_flush() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    let before: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(before.len(), 2, "{before:?}");
    db.flush().unwrap();
    eprintln!("{}", db.property("siftdb.levels").unwrap());
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    let after: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    assert_eq!(after.len(), 2, "{after:?}");
}

#[test]
fn db_iterates_across_many_tables() {
    let dir = siftdb_tests::temp_dir();
    let o = Options {
        write_buffer_size: 2048,
        block_size: 256,
        ..Options::default()
    };
    let db = Db::open(dir.path(), o).unwrap();
    let mut model = std::collections::BTreeMap::new();
    for i in 0..400u32 {
        let k = format!("k{:03}", (i * 37) % 101).into_bytes();
        let v = vec![i as u8; 40];
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    let got: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    let want: Vec<_> = model.into_iter().collect();
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
}

#[test]
fn db_seek_matches_model_across_tables() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let dir = siftdb_tests::temp_dir();
    let o = Options {
        write_buffer_size: 2048,
        block_size: 256,
        ..Options::default()
    };
    let db = Db::open(dir.path(), o).unwrap();
    let mut model = std::collections::BTreeMap::new();
    let key = |rng: &mut rand::rngs::StdRng| -> Vec<u8> {
        let n = rng.gen_range(0..5);
        (0..n).map(|_| b"abc"[rng.gen_range(0..3)]).collect()
    };
    for i in 0..300u32 {
        let k = key(&mut rng);
        if rng.gen_bool(0.2) {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = vec![i as u8; rng.gen_range(0..200)];
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        if i % 50 == 49 {
            for _ in 0..20 {
                let t = key(&mut rng);
                let mut it = db.iter();
                it.seek(&t);
                let got: Vec<_> = it.map(|r| r.unwrap().0).collect();
                let want: Vec<_> = model.range(t.clone()..).map(|(k, _)| k.clone()).collect();
                assert_eq!(got, want, "seek {t:?} at {i}");
            }
        }
    }
}
