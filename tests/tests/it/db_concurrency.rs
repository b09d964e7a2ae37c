//! Several writers and readers at once, with flushes running: every reader sees what writers
//! acknowledged, and the final state holds every write.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use siftdb::{Db, Options, WriteBatch};

#[test]
fn concurrent_writers_and_readers_agree() {
    let dir = siftdb_tests::temp_dir();
    let options = Options {
        write_buffer_size: 32 << 10,
        max_write_buffer_number: 3,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options.clone()).unwrap();
    const WRITERS: u64 = 3;
    const PER_WRITER: u64 = 1500;
    let progress: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let db = db.clone();
            let progress = Arc::clone(&progress);
            s.spawn(move || {
                for i in 0..PER_WRITER {
                    if i % 10 == 0 {
                        let mut b = WriteBatch::new();
                        b.put(format!("w{w}-{i:05}").as_bytes(), i.to_le_bytes())
                            .put(format!("w{w}-batch-{i:05}").as_bytes(), b"b");
                        db.write(b).unwrap();
                    } else {
                        db.put(format!("w{w}-{i:05}").as_bytes(), i.to_le_bytes())
                            .unwrap();
                    }
                    progress[w as usize].store(i + 1, Ordering::Release);
                }
            });
        }
        for r in 0..2u64 {
            let db = db.clone();
            let progress = Arc::clone(&progress);
            s.spawn(move || {
                let mut checks = 0;
                while progress
                    .iter()
                    .any(|p| p.load(Ordering::Acquire) < PER_WRITER)
                {
                    for w in 0..WRITERS {
                        let done = progress[w as usize].load(Ordering::Acquire);
                        if done == 0 {
                            continue;
                        }
                        // Everything acknowledged before we looked must be visible.
                        let i = (checks * 7 + r) % done;
                        let got = db.get(format!("w{w}-{i:05}").as_bytes()).unwrap();
                        assert_eq!(got, Some(i.to_le_bytes().to_vec()), "w{w} i{i}");
                        checks += 1;
                    }
                    if checks % 50 == 0 {
                        // Iterators see a consistent, sorted view.
                        let keys: Vec<Vec<u8>> =
                            db.iter().take(200).map(|r| r.unwrap().0).collect();
                        assert!(keys.windows(2).all(|p| p[0] < p[1]));
                    }
                }
            });
        }
    });
    let stats = db.stats();
    assert!(stats.flushes > 0, "the test must exercise flushes");
    drop(db);
    let db = Db::open(dir.path(), options).unwrap();
    let n = db.iter().count() as u64;
    assert_eq!(n, WRITERS * (PER_WRITER + PER_WRITER / 10));
}
