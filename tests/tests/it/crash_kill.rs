//! Real crash test: a child process writes numbered keys (single writes and 3-key batches) and
//! reports each acknowledgement on stdout; the parent kills it with SIGKILL at a random moment,
//! reopens the database and checks that every acknowledged write is there, batches are
//! all-or-nothing, the recovered state is a prefix of the write sequence (no holes), and new
//! writes work. Runs with `sync = true` and `sync = false` (a process crash keeps the page cache,
//! so unsynced acknowledged writes must survive too). `SIFTDB_CRASH_CYCLES` sets the cycle count.
//!
//! Each 3-key batch also adds 1 to a counter (a `U64Add` merge) and puts a ghost key that a range
//! delete later in the same batch removes: the counter must equal the number of batches
//! recovered, and no ghost may ever be seen. The manifest rolls over every few edits
//! (`max_manifest_file_size` of 4 KiB) and at most eight table files are open, so kills land
//! inside manifest rollovers and table reopens too.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use siftdb::{Db, Options, WriteBatch, WriteOptions};

const CHILD_ENV: &str = "SIFTDB_CRASH_CHILD_DIR";
const SYNC_ENV: &str = "SIFTDB_CRASH_CHILD_SYNC";

fn options() -> Options {
    Options {
        write_buffer_size: 32 << 10,
        target_file_size_base: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        level0_file_num_compaction_trigger: 2,
        merge_operator: Some(std::sync::Arc::new(siftdb::merge::U64Add)),
        // A manifest started afresh every few edits, and few open table files: kills land
        // inside rollovers (new manifest, CURRENT switch, old one deleted) and table reopens.
        max_manifest_file_size: 4 << 10,
        max_open_files: 8,
        // Every value in blob files (small ones), relocated by compactions: kills land while
        // blob files are written, synced, collected and deleted too.
        enable_blob_files: true,
        min_blob_size: 0,
        blob_file_size: 64 << 10,
        enable_blob_garbage_collection: true,
        ..Options::default()
    }
}

const COUNTER: &[u8] = b"m-batches";

fn ghost(i: u64) -> Vec<u8> {
    format!("g{i:09}").into_bytes()
}

/// The numbered keys recovered ("k…"), in order.
fn numbered(db: &Db) -> siftdb::DbIterator {
    db.range(b"k".as_slice()..b"l".as_slice())
}

fn key(i: u64) -> Vec<u8> {
    format!("k{i:09}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    let mut v = format!("v{i}-").into_bytes();
    v.resize(40 + (i % 64) as usize, b'.');
    v
}

/// Opens the database in a child, waiting out a directory lock held a moment longer by another
/// process: while the parent has the database open (its checks), a child the parent spawns for
/// another test shares the lock's file between fork and exec.
fn open_in_child(dir: &str) -> Db {
    for _ in 0..500 {
        match Db::open(dir, options()) {
            Err(siftdb::Error::Locked(_)) => std::thread::sleep(Duration::from_millis(10)),
            opened => return opened.expect("child open"),
        }
    }
    panic!("child open: {dir} stays locked");
}

/// The child: not a test of its own; does nothing unless started by the parent.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let sync = std::env::var(SYNC_ENV).is_ok_and(|v| v == "1");
    let db = open_in_child(&dir);
    // Continue after what is already there.
    let mut i = numbered(&db).count() as u64;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    loop {
        let mut b = WriteBatch::new();
        let n = if i.is_multiple_of(4) { 3 } else { 1 };
        for j in i..i + n {
            b.put(key(j), value(j));
        }
        if n == 3 {
            b.merge(COUNTER, 1u64.to_le_bytes());
            b.put(ghost(i), b"never seen");
            b.delete_range(ghost(i), ghost(i + 1));
        }
        db.write_opt(b, &WriteOptions { sync })
            .expect("child write");
        i += n;
        // Acknowledged: everything below i.
        let _ = writeln!(out, "ack {i}");
        let _ = out.flush();
    }
}

fn cycles() -> usize {
    siftdb_tests::env_count("SIFTDB_CRASH_CYCLES", 200) as usize
}

fn run_cycles(sync: bool, cycles: usize, seed: u64) -> (usize, u64) {
    let dir = siftdb_tests::temp_dir();
    let exe = std::env::current_exe().expect("test binary path");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut acked_total = 0u64;
    for cycle in 0..cycles {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash_kill::crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, dir.path())
            .env(SYNC_ENV, if sync { "1" } else { "0" })
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("child stdout");
        let reader = std::thread::spawn(move || {
            let mut last = 0u64;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(n) = line.strip_prefix("ack ").and_then(|s| s.parse().ok()) {
                    last = n;
                }
            }
            last
        });
        let delay = Duration::from_millis(rng.gen_range(5..60));
        std::thread::sleep(delay);
        child.kill().expect("kill child"); // SIGKILL
        let _ = child.wait();
        let acked = reader.join().expect("reader thread");
        acked_total += acked;

        let db = Db::open(dir.path(), options())
            .unwrap_or_else(|e| panic!("cycle {cycle}: reopen: {e}"));
        let keys: Vec<u64> = numbered(&db)
            .map(|r| r.unwrap_or_else(|e| panic!("cycle {cycle}: iterate: {e}")))
            .map(|(k, v)| {
                let i: u64 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
                assert_eq!(v, value(i), "cycle {cycle}: wrong value for {i}");
                i
            })
            .collect();
        let n = keys.len() as u64;
        assert_eq!(keys, (0..n).collect::<Vec<_>>(), "cycle {cycle}: holes");
        assert!(
            n >= acked,
            "cycle {cycle}: lost acknowledged writes: {acked} acked, {n} recovered"
        );
        // Batches are all-or-nothing: a batch starts at a multiple of 4 and holds 3 keys.
        // Committed prefixes end at 3, 4, 7, 8, 11, …: anything else is a torn batch.
        assert!(
            matches!(n % 4, 0 | 3),
            "cycle {cycle}: a torn batch ({n} keys)"
        );
        // Every committed batch counted once; every ghost deleted by its own batch.
        let batches = db.get(COUNTER).unwrap().map_or(0, |v| {
            u64::from_le_bytes(v.try_into().expect("an 8-byte counter"))
        });
        assert_eq!(batches, n.div_ceil(4), "cycle {cycle}: batches counted");
        let ghosts = db.range(b"g".as_slice()..b"h".as_slice()).count();
        assert_eq!(ghosts, 0, "cycle {cycle}: a range-deleted ghost reappeared");
        db.put(b"zz", b"new writes work").unwrap();
        db.delete(b"zz").unwrap();
        drop(db);
    }
    (cycles, acked_total)
}

#[test]
fn kill_nine_loses_no_acknowledged_write() {
    let cycles = cycles();
    let (synced_cycles, synced_acks) = run_cycles(true, cycles / 2, 1);
    let (unsynced_cycles, unsynced_acks) = run_cycles(false, cycles - cycles / 2, 2);
    println!(
        "kill cycles: {}, lost acknowledged writes: 0, holes: 0 (sync: {synced_cycles} cycles / {synced_acks} acks; no sync: {unsynced_cycles} cycles / {unsynced_acks} acks)",
        synced_cycles + unsynced_cycles
    );
}

// Four writers at once: the kills land inside group commits that hold several writers' batches
// (a leader appending its followers' records), and the recovery must cut every writer's sequence
// at the same durable point without tearing any batch.

const MULTI_CHILD_ENV: &str = "SIFTDB_CRASH_MULTI_CHILD_DIR";
const WRITERS: usize = 4;

fn writer_key(w: usize, i: u64) -> Vec<u8> {
    format!("w{w}-{i:09}").into_bytes()
}

fn writer_counter(w: usize) -> Vec<u8> {
    format!("m-w{w}").into_bytes()
}

fn writer_ghost(w: usize, i: u64) -> Vec<u8> {
    format!("g-w{w}-{i:09}").into_bytes()
}

/// Writer `w`'s numbered keys recovered, in order.
fn writer_keys(db: &Db, w: usize) -> siftdb::DbIterator {
    db.range(format!("w{w}-").into_bytes()..format!("w{w}.").into_bytes())
}

/// Writer `w` of the child: its own sequence, a 3-key batch (with a counter merge and a ghost
/// its own range delete removes) at every multiple of 4, single puts between; each
/// acknowledgement reported as `ack <writer> <count>`; writer 0 also reports, every 8 of its
/// writes, `groups <write groups> <writes>` of all writers since the open.
fn child_writer(
    db: &Db,
    w: usize,
    sync: bool,
    out: &std::sync::Mutex<std::io::Stdout>,
    writes: &std::sync::atomic::AtomicU64,
) {
    let mut i = writer_keys(db, w).count() as u64;
    for round in 1u64.. {
        let mut b = WriteBatch::new();
        let n = if i.is_multiple_of(4) { 3 } else { 1 };
        for j in i..i + n {
            b.put(writer_key(w, j), value(j));
        }
        if n == 3 {
            b.merge(writer_counter(w), 1u64.to_le_bytes());
            b.put(writer_ghost(w, i), b"never seen");
            b.delete_range(writer_ghost(w, i), writer_ghost(w, i + 1));
        }
        db.write_opt(b, &WriteOptions { sync })
            .expect("child write");
        i += n;
        let done = writes.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1;
        let out = out.lock().expect("stdout lock");
        let mut out = out.lock();
        let _ = writeln!(out, "ack {w} {i}");
        if w == 0 && round % 8 == 0 {
            let _ = writeln!(out, "groups {} {done}", db.stats().write_groups);
        }
        let _ = out.flush();
    }
}

/// The four-writer child: not a test of its own; does nothing unless started by the parent.
#[test]
fn crash_child_multi() {
    let Ok(dir) = std::env::var(MULTI_CHILD_ENV) else {
        return;
    };
    let sync = std::env::var(SYNC_ENV).is_ok_and(|v| v == "1");
    let db = open_in_child(&dir);
    let out = std::sync::Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let writes = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, out) = (db.clone(), std::sync::Arc::clone(&out));
            let writes = std::sync::Arc::clone(&writes);
            std::thread::spawn(move || child_writer(&db, w, sync, &out, &writes))
        })
        .collect();
    for w in writers {
        let _ = w.join();
    }
}

/// Checks writer `w`'s recovered sequence after `cycle`'s kill; returns its length.
fn check_writer(db: &Db, w: usize, acked: u64, cycle: usize) -> u64 {
    let keys: Vec<u64> = writer_keys(db, w)
        .map(|r| r.unwrap_or_else(|e| panic!("cycle {cycle}: iterate: {e}")))
        .map(|(k, v)| {
            let i: u64 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
            assert_eq!(
                v,
                value(i),
                "cycle {cycle}: writer {w}: wrong value for {i}"
            );
            i
        })
        .collect();
    let n = keys.len() as u64;
    assert_eq!(
        keys,
        (0..n).collect::<Vec<_>>(),
        "cycle {cycle}: writer {w}: holes"
    );
    assert!(
        n >= acked,
        "cycle {cycle}: writer {w} lost acknowledged writes: {acked} acked, {n} recovered"
    );
    assert!(
        matches!(n % 4, 0 | 3),
        "cycle {cycle}: writer {w}: a torn batch ({n} keys)"
    );
    let batches = db.get(writer_counter(w)).unwrap().map_or(0, |v| {
        u64::from_le_bytes(v.try_into().expect("an 8-byte counter"))
    });
    assert_eq!(
        batches,
        n.div_ceil(4),
        "cycle {cycle}: writer {w}: batches counted"
    );
    n
}

/// Runs `cycles` kill cycles of the four-writer child; returns the acknowledgements seen and
/// in how many cycles the child reported fewer write groups than writes (writers committed
/// together).
fn run_multi_cycles(sync: bool, cycles: usize, seed: u64) -> (u64, usize) {
    // On the disk, not tmpfs: a real `fdatasync` takes long enough for the other writers to
    // queue behind the leader that syncs, so synced runs commit in shared groups.
    let dir = tempfile::Builder::new()
        .prefix("siftdb-crash-multi-")
        .tempdir()
        .expect("a temporary directory");
    let exe = std::env::current_exe().expect("test binary path");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (mut acked_total, mut grouped_cycles) = (0u64, 0);
    for cycle in 0..cycles {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash_kill::crash_child_multi",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(MULTI_CHILD_ENV, dir.path())
            .env(SYNC_ENV, if sync { "1" } else { "0" })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("child stdout");
        let (writing, started) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let (mut last, mut grouped) = ([0u64; WRITERS], false);
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut parts = line.split(' ');
                match (parts.next(), parts.next(), parts.next()) {
                    (Some("ack"), Some(w), Some(n)) => {
                        if let (Ok(w), Ok(n)) = (w.parse::<usize>(), n.parse::<u64>()) {
                            last[w] = last[w].max(n);
                            let _ = writing.send(());
                        }
                    }
                    (Some("groups"), Some(g), Some(n)) => {
                        if let (Ok(g), Ok(n)) = (g.parse::<u64>(), n.parse::<u64>()) {
                            grouped |= g < n;
                        }
                    }
                    _ => {}
                }
            }
            (last, grouped)
        });
        // The kill comes while the writers write (not while the child starts or opens): wait
        // for the first acknowledgement, then a random moment.
        if started.recv_timeout(Duration::from_secs(60)).is_err() {
            let _ = child.kill();
            let mut why = String::new();
            if let Some(mut err) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut err, &mut why);
            }
            panic!("cycle {cycle}: the child never acknowledged a write: {why}");
        }
        std::thread::sleep(Duration::from_micros(rng.gen_range(0..40_000)));
        child.kill().expect("kill child"); // SIGKILL
        let _ = child.wait();
        let (acked, grouped) = reader.join().expect("reader thread");
        acked_total += acked.iter().sum::<u64>();
        grouped_cycles += usize::from(grouped);

        let db = Db::open(dir.path(), options())
            .unwrap_or_else(|e| panic!("cycle {cycle}: reopen: {e}"));
        for (w, acked) in acked.iter().enumerate() {
            check_writer(&db, w, *acked, cycle);
        }
        let ghosts = db.range(b"g-".as_slice()..b"g.".as_slice()).count();
        assert_eq!(ghosts, 0, "cycle {cycle}: a range-deleted ghost reappeared");
        db.put(b"zz", b"new writes work").unwrap();
        db.delete(b"zz").unwrap();
        drop(db);
    }
    (acked_total, grouped_cycles)
}

#[test]
fn kill_nine_with_four_writers_loses_no_acknowledged_write() {
    // A quarter of the single writer's cycles: each holds four writers' checks.
    let cycles = (cycles() / 4).max(2);
    let (synced, synced_grouped) = run_multi_cycles(true, cycles / 2, 3);
    let (unsynced, unsynced_grouped) = run_multi_cycles(false, cycles - cycles / 2, 4);
    // The point of four writers: groups of several (else this is the one-writer test again).
    assert!(
        synced_grouped + unsynced_grouped > 0,
        "the writers were never committed in one group"
    );
    println!(
        "four-writer kill cycles: {cycles}, lost acknowledged writes: 0, holes: 0, torn batches: 0 (acks: {synced} synced, {unsynced} not; cycles with shared groups: {synced_grouped} synced, {unsynced_grouped} not)"
    );
}
