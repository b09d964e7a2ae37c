//! Real crash test: a child process writes numbered keys (single writes and 3-key batches) and
//! reports each acknowledgement on stdout; the parent kills it with SIGKILL at a random moment,
//! reopens the database and checks that every acknowledged write is there, batches are
//! all-or-nothing, the recovered state is a prefix of the write sequence (no holes), and new
//! writes work. Runs with `sync = true` and `sync = false` (a process crash keeps the page cache,
//! so unsynced acknowledged writes must survive too). `SIFTDB_CRASH_CYCLES` sets the cycle count.
//!
//! Each 3-key batch also adds 1 to a counter (a `U64Add` merge) and puts a ghost key that a range
//! delete later in the same batch removes: the counter must equal the number of batches
//! recovered, and no ghost may ever be seen.

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

/// The child: not a test of its own; does nothing unless started by the parent.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let sync = std::env::var(SYNC_ENV).is_ok_and(|v| v == "1");
    let db = Db::open(&dir, options()).expect("child open");
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
            b.merge(COUNTER, &1u64.to_le_bytes());
            b.put(ghost(i), b"never seen");
            b.delete_range(&ghost(i), &ghost(i + 1));
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
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
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
