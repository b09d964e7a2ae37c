//! Read-only opens beside a writer in another process. A child process (this test binary, started
//! with an environment variable, as in `crash_kill.rs`) writes numbered keys — each batch into
//! the "default" keyspace and the same keys into keyspace "mirror" — with tiny memtables and
//! levels, runs a full `compact_range` every few hundred keys, and reports progress on stdout.
//!
//! The parent opens the directory read-only several times while that goes on. Each read-only
//! `Db` must show one consistent state: keys `0..n` for some `n` at least what was acknowledged
//! before the open, each with its value, no holes, no torn batch, and "mirror" equal to
//! "default" (the batches span both). And it must keep showing exactly that state — through the
//! same handle and through iterators created before — after the writer has compacted and
//! deleted the files it read. At the end the child is killed and the database opens normally.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use siftdb::{Db, Error, KeyspaceOptions, Options, WriteBatch};

const CHILD_ENV: &str = "SIFTDB_RO_CHILD_DIR";
/// The child compacts everything after every this many keys.
const COMPACT_EVERY: u64 = 400;

fn options() -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("k{i:09}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    let mut v = format!("v{i}-").into_bytes();
    v.resize(40 + (i % 64) as usize, b'.');
    v
}

fn mirror_value(i: u64) -> Vec<u8> {
    format!("mirror of {i}").into_bytes()
}

/// The child: not a test of its own; does nothing unless started by the parent. Writes until
/// killed, or until its stdin closes (the parent is gone).
#[test]
fn read_only_writer_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        std::process::exit(0);
    });
    let db = Db::open(&dir, options()).expect("child open");
    let mirror = db
        .create_keyspace("mirror", KeyspaceOptions::from(&options()))
        .or_else(|_| db.keyspace("mirror"))
        .expect("child mirror keyspace");
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut i = db.iter().count() as u64;
    let mut compactions = i / COMPACT_EVERY;
    loop {
        // A batch of 3 keys at every multiple of 4, single keys between: a committed prefix
        // ends at 3, 4, 7, 8, … keys. Every key goes into both keyspaces in the same batch.
        let n = if i.is_multiple_of(4) { 3 } else { 1 };
        let mut b = WriteBatch::new();
        for j in i..i + n {
            b.put(key(j), value(j));
            b.put_in(&mirror, key(j), mirror_value(j));
        }
        db.write(b).expect("child write");
        i += n;
        let _ = writeln!(out, "ack {i}");
        if i / COMPACT_EVERY > compactions {
            compactions = i / COMPACT_EVERY;
            // Rewrites (and so deletes) the tables every read-only open has read so far.
            db.compact_range(None, None).expect("child compact");
            mirror
                .compact_range(None, None)
                .expect("child compact mirror");
            let _ = writeln!(out, "compacted {i}");
        }
        let _ = out.flush();
    }
}

/// The child process, killed when dropped (also when the test fails half-way).
struct Writer {
    child: Child,
    /// Keys acknowledged (as far as the parent has read the child's output).
    acked: Arc<AtomicU64>,
    /// Full compactions the child reported.
    compactions: Arc<AtomicU64>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    fn spawn(dir: &Path) -> Writer {
        let exe = std::env::current_exe().expect("test binary path");
        let mut child = Command::new(exe)
            .args([
                "--exact",
                "read_only_process::read_only_writer_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("child stdout");
        let acked = Arc::new(AtomicU64::new(0));
        let compactions = Arc::new(AtomicU64::new(0));
        let (a, c) = (Arc::clone(&acked), Arc::clone(&compactions));
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(n) = line.strip_prefix("ack ").and_then(|s| s.parse().ok()) {
                    a.store(n, Ordering::SeqCst);
                } else if line.starts_with("compacted ") {
                    c.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        Writer {
            child,
            acked,
            compactions,
            reader: Some(reader),
        }
    }

    fn acked(&self) -> u64 {
        self.acked.load(Ordering::SeqCst)
    }

    fn compactions(&self) -> u64 {
        self.compactions.load(Ordering::SeqCst)
    }

    /// Waits until `done(self)`, failing the test after a generous timeout (or if the child
    /// died).
    fn wait_for(&mut self, what: &str, done: impl Fn(&Writer) -> bool) {
        let start = Instant::now();
        while !done(self) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the writer child exited ({status}) while waiting for {what}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "timed out waiting for {what} (acked {}, compactions {})",
                self.acked(),
                self.compactions()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Kills the child (SIGKILL) and returns the last acknowledgement it reported.
    fn kill(mut self) -> u64 {
        self.child.kill().expect("kill child");
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            r.join().expect("reader thread");
        }
        self.acked()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a read-only open showed: the number of keys, and every key/value of both keyspaces.
#[derive(Debug, PartialEq)]
struct State {
    n: u64,
    default: Vec<(Vec<u8>, Vec<u8>)>,
    mirror: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Reads all of `db` and checks it is a consistent prefix state.
fn read_state(db: &Db, ctx: &str) -> State {
    let collect = |it: siftdb::DbIterator| -> Vec<(Vec<u8>, Vec<u8>)> {
        it.collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{ctx}: iterate: {e}"))
    };
    let mirror = db
        .keyspace("mirror")
        .unwrap_or_else(|e| panic!("{ctx}: mirror keyspace: {e}"));
    let state = State {
        n: 0,
        default: collect(db.iter()),
        mirror: collect(mirror.iter()),
    };
    let n = state.default.len() as u64;
    check_prefix(&state.default, n, value, ctx);
    check_prefix(&state.mirror, n, mirror_value, &format!("{ctx} (mirror)"));
    State { n, ..state }
}

/// `kvs` must be exactly keys `0..n` with their values, `n` the end of a whole batch.
fn check_prefix(kvs: &[(Vec<u8>, Vec<u8>)], n: u64, value: fn(u64) -> Vec<u8>, ctx: &str) {
    assert_eq!(
        kvs.len() as u64,
        n,
        "{ctx}: the keyspaces disagree (a batch torn across keyspaces)"
    );
    for (i, (k, v)) in kvs.iter().enumerate() {
        let i = i as u64;
        assert_eq!(*k, key(i), "{ctx}: a hole before key {i}");
        assert_eq!(*v, value(i), "{ctx}: wrong value of key {i}");
    }
    assert!(matches!(n % 4, 0 | 3), "{ctx}: a torn batch ({n} keys)");
}

/// Reads `state` again through `db` by point lookups (keys and the first absent one).
fn check_gets(db: &Db, state: &State, ctx: &str) {
    let mirror = db.keyspace("mirror").unwrap();
    for (k, v) in &state.default {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{ctx}: get {k:?}");
    }
    for (k, v) in state.mirror.iter().step_by(3) {
        assert_eq!(
            mirror.get(k).unwrap().as_ref(),
            Some(v),
            "{ctx}: mirror get"
        );
    }
    for i in state.n..state.n + 8 {
        assert_eq!(
            db.get(key(i)).unwrap(),
            None,
            "{ctx}: key {i} beyond the state"
        );
        assert_eq!(mirror.get(key(i)).unwrap(), None, "{ctx}: mirror key {i}");
    }
}

fn table_files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst"))
        .collect()
}

/// Creates the database in `dir` with its "mirror" keyspace (here, so that a first read-only
/// open cannot race the child creating it), runs `check` on it, starts the writer child and
/// waits for its first full compaction: there are tables then, so that what a read-only open
/// reads first includes some that the next compaction deletes.
fn start_writer(dir: &Path, check: impl FnOnce(&Db)) -> Writer {
    {
        let db = Db::open(dir, options()).unwrap();
        db.create_keyspace("mirror", KeyspaceOptions::from(&options()))
            .unwrap();
        check(&db);
    }
    let mut writer = Writer::spawn(dir);
    writer.wait_for("a first compaction", |w| {
        w.compactions() >= 1 && w.acked() >= COMPACT_EVERY
    });
    writer
}

#[test]
fn read_only_opens_see_stable_consistent_states_beside_a_writer_process() {
    let dir = siftdb_tests::temp_dir();
    let mut writer = start_writer(dir.path(), |_| {});

    // The writer holds the lock: an ordinary open is refused, a read-only one is not.
    assert!(
        matches!(Db::open(dir.path(), options()), Err(Error::Locked(_))),
        "an ordinary open beside the writer must fail with Locked"
    );

    let mut max_seen = 0;
    for round in 0..3 {
        let ctx = format!("round {round}");
        let acked_before = writer.acked();
        let ro = Db::open_read_only(dir.path(), options())
            .unwrap_or_else(|e| panic!("{ctx}: read-only open: {e}"));
        let files_at_open = table_files(dir.path());
        // Iterators and a snapshot made now, consumed only after the writer moved on.
        let early_iter = ro.iter();
        let early_mirror_iter = ro.keyspace("mirror").unwrap().iter();
        let mut early_raw = ro.raw_iter();
        let snapshot = ro.snapshot();

        let state = read_state(&ro, &ctx);
        assert!(
            state.n >= acked_before,
            "{ctx}: the read-only open lost acknowledged writes: {} keys, {acked_before} acked",
            state.n
        );
        assert!(state.n >= max_seen, "{ctx}: went back in time");
        max_seen = state.n;
        check_gets(&ro, &state, &ctx);

        // The writer moves on: more keys and at least one full compaction, which deletes the
        // tables this read-only open is reading.
        let (acked, compactions) = (writer.acked(), writer.compactions());
        writer.wait_for("progress and a full compaction", |w| {
            w.compactions() > compactions && w.acked() >= acked + 200
        });
        let files_now = table_files(dir.path());
        let gone = files_at_open.difference(&files_now).count();
        assert!(
            gone > 0,
            "{ctx}: the writer's compaction deleted no table the read-only open may hold \
             (the test no longer tests what it says)"
        );

        eprintln!(
            "{ctx}: read-only open saw {} keys ({acked_before} acked before); the writer then \
             reached {} keys and deleted {gone} of the {} tables there were",
            state.n,
            writer.acked(),
            files_at_open.len()
        );
        let ctx = format!("{ctx}, after {gone} of its tables were deleted");
        assert_eq!(
            read_state(&ro, &ctx),
            state,
            "{ctx}: the read-only open changed"
        );
        check_gets(&ro, &state, &ctx);
        let early: Vec<_> = early_iter.collect::<Result<_, _>>().unwrap();
        assert_eq!(early, state.default, "{ctx}: iterator made before");
        let early_mirror: Vec<_> = early_mirror_iter.collect::<Result<_, _>>().unwrap();
        assert_eq!(
            early_mirror, state.mirror,
            "{ctx}: mirror iterator made before"
        );
        early_raw.seek_to_first();
        let mut raw = Vec::new();
        while early_raw.valid() {
            raw.push((early_raw.key().to_vec(), early_raw.value().to_vec()));
            early_raw.next();
        }
        early_raw.status().unwrap();
        assert_eq!(raw, state.default, "{ctx}: raw cursor made before");
        for i in (0..state.n).step_by(11) {
            assert_eq!(snapshot.get(key(i)).unwrap(), Some(value(i)), "{ctx}");
        }
        assert_eq!(snapshot.get(key(state.n)).unwrap(), None, "{ctx}");
        // Still refused, still nothing written.
        assert!(matches!(ro.put(b"x", b"y"), Err(Error::ReadOnly)));
    }

    // Many quick opens in a row, so that some land while the writer appends to the WAL, switches
    // memtables or installs a compaction (the rounds above mostly met it stalled).
    for quick in 0..25 {
        let ctx = format!("quick open {quick}");
        let acked_before = writer.acked();
        let ro = Db::open_read_only(dir.path(), options())
            .unwrap_or_else(|e| panic!("{ctx}: read-only open: {e}"));
        let state = read_state(&ro, &ctx);
        assert!(state.n >= acked_before, "{ctx}: lost acknowledged writes");
        assert!(state.n >= max_seen, "{ctx}: went back in time");
        max_seen = state.n;
        std::thread::sleep(Duration::from_millis(3));
    }

    // Two read-only opens side by side, of different moments: each keeps its own state.
    let first = Db::open_read_only(dir.path(), options()).unwrap();
    let first_state = read_state(&first, "first of two");
    let (acked, compactions) = (writer.acked(), writer.compactions());
    writer.wait_for("progress between two read-only opens", |w| {
        w.compactions() > compactions && w.acked() >= acked + 100
    });
    let second = Db::open_read_only(dir.path(), options()).unwrap();
    let second_state = read_state(&second, "second of two");
    assert!(
        second_state.n > first_state.n,
        "the second open should see the writer's progress ({} then {} keys)",
        first_state.n,
        second_state.n
    );
    assert_eq!(read_state(&first, "first, beside the second"), first_state);
    check_gets(&first, &first_state, "first, beside the second");
    check_gets(&second, &second_state, "second, beside the first");
    max_seen = max_seen.max(second_state.n);

    // The writer dies; its last acknowledged write and everything the readers saw must be there.
    let last_acked = writer.kill();
    // The read-only opens outlive the writer, unchanged.
    assert_eq!(read_state(&first, "first, writer dead"), first_state);
    assert_eq!(read_state(&second, "second, writer dead"), second_state);
    drop((first, second));

    let db = Db::open(dir.path(), options()).expect("open after the writer was killed");
    let state = read_state(&db, "after the kill");
    assert!(
        state.n >= last_acked && state.n >= max_seen,
        "after the kill: {} keys, {last_acked} acknowledged, {max_seen} seen read-only",
        state.n
    );
    // And it works as a writer again: one more batch as the child would have written it.
    let mirror = db.keyspace("mirror").unwrap();
    let end = if state.n.is_multiple_of(4) {
        state.n + 3
    } else {
        state.n + 1
    };
    let mut b = WriteBatch::new();
    for j in state.n..end {
        b.put(key(j), value(j));
        b.put_in(&mirror, key(j), mirror_value(j));
    }
    db.write(b).unwrap();
    db.flush().unwrap();
    drop((mirror, db));
    let db = Db::open(dir.path(), options()).unwrap();
    let after = read_state(&db, "reopened");
    assert_eq!(after.n, end);
}

/// A read-only open that catches up with the writer process again and again
/// (`Db::try_catch_up_with_primary`, RocksDB's secondary instance): between catch-ups it shows
/// what it showed, iterators keep the state they were made on, each catch-up shows a consistent
/// state with every write acknowledged before it (also when it lands mid-append or
/// mid-compaction), and point lookups running beside the catch-ups never miss a key.
#[test]
fn read_only_open_catches_up_with_a_writer_process() {
    let dir = siftdb_tests::temp_dir();
    let mut writer = start_writer(dir.path(), |db| {
        // Only a read-only open catches up.
        assert!(matches!(
            db.try_catch_up_with_primary(),
            Err(Error::InvalidArgument(_))
        ));
    });
    let ro = Db::open_read_only(dir.path(), options()).unwrap();
    let mut state = read_state(&ro, "at open");
    for round in 0..6 {
        let ctx = format!("catch-up {round}");
        let (acked, compactions) = (writer.acked(), writer.compactions());
        // Every other round waits for a full compaction too: the tables read so far are gone.
        writer.wait_for("progress", |w| {
            w.acked() >= acked + 150 && (round % 2 == 1 || w.compactions() > compactions)
        });
        let before = ro.iter();
        assert_eq!(read_state(&ro, &ctx), state, "{ctx}: changed before it");
        let now = catch_up_and_read(&ro, &writer, &state, &ctx);
        check_gets(&ro, &now, &ctx);
        let early: Vec<_> = before.collect::<Result<_, _>>().unwrap();
        assert_eq!(early, state.default, "{ctx}: iterator made before it");
        state = now;
    }

    // Point lookups beside quick catch-ups: a key once seen stays readable, and a key of the
    // newest batches found in "default" is in "mirror" too (the same batch wrote both: a
    // catch-up installs every keyspace's view at once).
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = state.n;
    let reader = {
        let (ro, stop) = (ro.clone(), Arc::clone(&stop));
        let mirror = ro.keyspace("mirror").unwrap();
        std::thread::spawn(move || {
            let mut lookups = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let i = lookups * 7919 % seen;
                assert_eq!(ro.get(key(i)).unwrap(), Some(value(i)), "lookup of {i}");
                let j = seen + lookups % 400;
                if ro.get(key(j)).unwrap().is_some() {
                    assert_eq!(
                        mirror.get(key(j)).unwrap(),
                        Some(mirror_value(j)),
                        "key {j} in default, not yet in mirror: a torn catch-up"
                    );
                }
                lookups += 1;
            }
            lookups
        })
    };
    for quick in 0..25 {
        let ctx = format!("quick catch-up {quick}");
        let now = catch_up_and_read(&ro, &writer, &state, &ctx);
        state = now;
        std::thread::sleep(Duration::from_millis(3));
    }
    stop.store(true, Ordering::SeqCst);
    let lookups = reader
        .join()
        .expect("the reader beside the catch-ups failed");
    assert!(lookups > 0);

    // A snapshot held here would read versions the writer need not keep: refused meanwhile.
    let snapshot = ro.snapshot();
    assert!(matches!(
        ro.try_catch_up_with_primary(),
        Err(Error::InvalidArgument(_))
    ));
    drop(snapshot);
    ro.try_catch_up_with_primary().unwrap();
    let last_acked = writer.kill();
    ro.try_catch_up_with_primary().unwrap();
    let last = read_state(&ro, "after the writer was killed");
    assert!(
        last.n >= last_acked,
        "a catch-up after the kill lost writes"
    );
}

/// A catch-up checks the merge operator as an open does: once the writer has written merge
/// operands under an operator this handle lacks, the catch-up is refused and the handle keeps
/// what it showed (it would otherwise read them with no operator, or a wrong one).
#[test]
fn a_catch_up_refuses_operands_its_merge_operator_cannot_read() {
    let dir = siftdb_tests::temp_dir();
    let with_operator = || Options {
        merge_operator: Some(Arc::new(siftdb::merge::U64Add)),
        ..options()
    };
    let writer = Db::open(dir.path(), with_operator()).unwrap();
    writer.put("k", 1u64.to_le_bytes()).unwrap();
    // No operands yet: a read-only open without the operator is allowed.
    let reader = Db::open_read_only(dir.path(), options()).unwrap();
    writer.put("j", 2u64.to_le_bytes()).unwrap();
    reader.try_catch_up_with_primary().unwrap();
    writer.merge("k", 5u64.to_le_bytes()).unwrap();
    assert!(matches!(
        reader.try_catch_up_with_primary(),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(reader.get("k").unwrap(), Some(1u64.to_le_bytes().to_vec()));
    // With the operator, the same catch-up reads the operand.
    let merging = Db::open_read_only(dir.path(), with_operator()).unwrap();
    writer.merge("k", 1u64.to_le_bytes()).unwrap();
    merging.try_catch_up_with_primary().unwrap();
    assert_eq!(merging.get("k").unwrap(), Some(7u64.to_le_bytes().to_vec()));
}

/// Catches `ro` up and reads its state, which must hold every write the writer acknowledged
/// before and not go back from `earlier`.
fn catch_up_and_read(ro: &Db, writer: &Writer, earlier: &State, ctx: &str) -> State {
    let acked_before = writer.acked();
    ro.try_catch_up_with_primary()
        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
    let now = read_state(ro, ctx);
    assert!(
        now.n >= acked_before && now.n >= earlier.n,
        "{ctx}: {} keys, {acked_before} acknowledged before, {} seen earlier",
        now.n,
        earlier.n
    );
    now
}
