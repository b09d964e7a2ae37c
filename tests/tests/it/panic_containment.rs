//! A panic in user code — a prefix extractor, a clock — reaches the caller whose call ran it and
//! nothing else: no later `put`, `flush`, `wait_for_compaction` or drop of the `Db` hangs, a panic
//! in a background job becomes the database's (typed) background error, and a reopen with a
//! well-behaved callback of the same name loses no acknowledged write.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use siftdb::{BackgroundJob, Clock, Db, Error, Options, PrefixExtractor};
use siftdb_tests::{quiet_injected_panics, temp_dir, within};

/// How long any call may take before the test calls it a hang.
const LIMIT: Duration = Duration::from_secs(20);

/// The first two bytes of a key; panics on the key `boom` while armed.
#[derive(Debug)]
struct Extractor {
    armed: bool,
}

impl PrefixExtractor for Extractor {
    fn name(&self) -> String {
        "test:first-two".to_string()
    }

    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        if self.armed && key == b"boom" {
            panic!("injected extractor panic");
        }
        key.get(..2)
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn options(armed: bool, memtable_bloom: bool) -> Options {
    Options {
        prefix_extractor: Some(Arc::new(Extractor { armed })),
        memtable_prefix_bloom_size_ratio: if memtable_bloom { 0.1 } else { 0.0 },
        ..Options::default()
    }
}

/// Every key of `keys` reads back `value` after a reopen with `options`.
fn assert_all_there(dir: &std::path::Path, options: Options, keys: &[Vec<u8>]) {
    let db = Db::open(dir, options).unwrap();
    for k in keys {
        assert_eq!(
            db.get(k).unwrap(),
            Some(b"v".to_vec()),
            "{:?} lost",
            String::from_utf8_lossy(k)
        );
    }
}

/// After the panic: a put from another thread, a flush, and dropping the last handle all return.
fn nothing_hangs(db: Db) -> siftdb::Result<()> {
    let writer = db.clone();
    let later = within(LIMIT, "a put after the panic", move || {
        writer.put(key(99_999), "v")
    })
    .expect("a later put does not panic");
    let flusher = db.clone();
    let flushed = within(LIMIT, "a flush after the panic", move || flusher.flush());
    assert!(
        flushed.expect("flush returns").is_err(),
        "flush after the panic fails"
    );
    within(LIMIT, "dropping the Db", move || drop(db)).expect("drop returns");
    later
}

#[test]
fn a_panicking_extractor_on_the_write_path_hangs_no_later_call() {
    quiet_injected_panics();
    let dir = temp_dir();
    let db = Db::open(dir.path(), options(true, true)).unwrap();
    let acked: Vec<Vec<u8>> = (0..200).map(key).collect();
    for k in &acked {
        db.put(k, "v").unwrap();
    }
    let writer = db.clone();
    let panicked = within(LIMIT, "the put whose extractor panics", move || {
        writer.put("boom", "v")
    });
    assert!(
        panicked.is_err(),
        "the extractor's panic reaches its caller"
    );
    // Writes stop with a typed error (the WAL was out for the panicking group's append).
    match nothing_hangs(db) {
        Err(Error::Background(e)) => assert_eq!(e.job(), BackgroundJob::WalWrite, "{e}"),
        other => panic!("a write after the panic: {other:?}"),
    }
    assert_all_there(dir.path(), options(false, true), &acked);
}

#[test]
fn a_panicking_extractor_in_a_flush_becomes_the_background_error() {
    quiet_injected_panics();
    let dir = temp_dir();
    // No memtable bloom: the extractor first meets `boom` when the flush builds its table.
    let db = Db::open(dir.path(), options(true, false)).unwrap();
    let mut acked: Vec<Vec<u8>> = (0..200).map(key).collect();
    for k in &acked {
        db.put(k, "v").unwrap();
    }
    db.put("boom", "v").unwrap();
    acked.push(b"boom".to_vec());
    let flusher = db.clone();
    let flushed = within(LIMIT, "the flush whose extractor panics", move || {
        flusher.flush()
    })
    .expect("flush returns an error, it does not panic");
    match flushed {
        Err(Error::Background(e)) => {
            assert_eq!(e.job(), BackgroundJob::Flush, "{e}");
            assert!(e.message().contains("injected extractor panic"), "{e}");
        }
        other => panic!("the flush: {other:?}"),
    }
    assert!(matches!(nothing_hangs(db), Err(Error::Background(_))));
    assert_all_there(dir.path(), options(false, false), &acked);
}

/// The system clock; panics while armed.
struct ArmedClock(AtomicBool);

impl Clock for ArmedClock {
    fn now(&self) -> SystemTime {
        if self.0.load(Ordering::Relaxed) {
            panic!("injected clock panic");
        }
        SystemTime::now()
    }
}

#[test]
fn a_panicking_clock_reaches_its_caller_or_stops_background_work() {
    quiet_injected_panics();
    let dir = temp_dir();
    let clock = Arc::new(ArmedClock(AtomicBool::new(false)));
    let options = || Options {
        clock: Arc::clone(&clock) as Arc<dyn Clock>,
        write_buffer_size: 16 << 10,
        level0_file_num_compaction_trigger: 2,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options()).unwrap();
    db.put_with_ttl(b"session", b"v", Duration::from_secs(3600))
        .unwrap();
    clock.0.store(true, Ordering::Relaxed);
    // On the caller's thread: the caller gets the panic, the database goes on.
    let writer = db.clone();
    let ttl_put = within(LIMIT, "put_with_ttl with a panicking clock", move || {
        writer.put_with_ttl(b"other", b"v", Duration::from_secs(1))
    });
    assert!(ttl_put.is_err());
    let reader = db.clone();
    assert!(within(LIMIT, "get of an expiring value", move || reader
        .get("session"))
    .is_err());
    db.put("plain", "v").unwrap();
    // In a background job (a flush reads the clock for its table's `creation_time`, a
    // compaction's filter for expiry): the background error.
    let mut acked = vec![b"plain".to_vec()];
    for i in 0..2_000 {
        let k = key(i);
        match db.put(&k, "v") {
            Ok(()) => acked.push(k),
            Err(Error::Background(_)) => break,
            Err(e) => panic!("{e}"),
        }
    }
    let waiter = db.clone();
    let waited = within(LIMIT, "wait_for_compaction", move || {
        waiter.wait_for_compaction()
    })
    .expect("wait_for_compaction returns");
    match waited {
        Err(Error::Background(e)) => {
            assert!(
                matches!(e.job(), BackgroundJob::Flush | BackgroundJob::Compaction),
                "{e}"
            );
            assert!(e.message().contains("injected clock panic"), "{e}");
        }
        other => panic!("wait_for_compaction: {other:?}"),
    }
    within(LIMIT, "dropping the Db", move || drop(db)).expect("drop returns");
    clock.0.store(false, Ordering::Relaxed);
    let db = Db::open(dir.path(), options()).unwrap();
    for k in &acked {
        assert_eq!(db.get(k).unwrap(), Some(b"v".to_vec()));
    }
    assert_eq!(db.get("session").unwrap(), Some(b"v".to_vec()));
}
