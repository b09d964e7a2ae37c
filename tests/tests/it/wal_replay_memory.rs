//! WAL replay takes the memory of the memtables it rebuilds, not of the log: the peak heap
//! growth of an open replaying a 64 MiB WAL with a 4 MiB write buffer is measured with a
//! counting global allocator and bounded; and, opt-in (`SIFTDB_WAL_GIB=1`), a 1 GiB WAL is
//! reopened in a fresh child process with the default write buffer and its peak RSS reported
//! and bounded.
//!
//! Run the 1 GiB measurement (in release; it writes 1 GiB to a temporary directory):
//!
//! ```text
//! SIFTDB_WAL_GIB=1 cargo test --profile test-release -p siftdb-tests --test it \
//!     -- --nocapture wal_replay_memory::wal_replay_of_a_gib_wal
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering::Relaxed};
use std::time::Instant;

use siftdb::{Db, Options, WriteBatch};

/// The system allocator of the whole test binary, counting the bytes allocated (and their
/// peak) while [`COUNTING`] is on: in the process of its own a test of this module runs in
/// (`siftdb_tests::own_process`), where no other test allocates. Off, it costs one load.
struct Counting;

/// Whether allocations are counted. Memory allocated before it was set and freed after counts
/// negative: the counts are differences, read around what is measured.
static COUNTING: AtomicBool = AtomicBool::new(false);
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(by: usize) {
    if COUNTING.load(Relaxed) {
        let now = CURRENT.fetch_add(by as isize, Relaxed) + by as isize;
        PEAK.fetch_max(now, Relaxed);
    }
}

fn shrank(by: usize) {
    if COUNTING.load(Relaxed) {
        CURRENT.fetch_sub(by as isize, Relaxed);
    }
}

// SAFETY: every call goes to `System` with the caller's arguments; the counting only reads the
// sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const MIB: usize = 1 << 20;
const VALUE_LEN: usize = 1000;

/// Options that neither flush nor compact while the WAL is written, nor compact after the
/// reopen (a compaction would allocate beside the replay being measured).
fn options(write_buffer_size: usize) -> Options {
    Options {
        write_buffer_size,
        level0_file_num_compaction_trigger: 10_000,
        level0_stop_writes_trigger: 10_000,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:012}").into_bytes()
}

/// Writes about `bytes` of puts (1,000-byte values, in batches of 64) into one memtable, so
/// they are all in the WAL when the database is dropped; returns how many keys.
fn write_wal(dir: &Path, bytes: usize) -> u64 {
    let db = Db::open(dir, options(2 * bytes + 64 * MIB)).unwrap();
    let n = (bytes / (VALUE_LEN + 16)) as u64;
    let mut value = vec![0u8; VALUE_LEN];
    for start in (0..n).step_by(64) {
        let mut batch = WriteBatch::new();
        for i in start..(start + 64).min(n) {
            value[..8].copy_from_slice(&i.to_le_bytes());
            batch.put(key(i), &value);
        }
        db.write(batch).unwrap();
    }
    assert_eq!(db.stats().flushes, 0, "the writes must stay in the WAL");
    n
}

fn wal_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

fn check_some_values(db: &Db, n: u64) {
    for i in (0..n).step_by((n / 997).max(1) as usize).chain([n - 1]) {
        let got = db
            .get(key(i))
            .unwrap()
            .unwrap_or_else(|| panic!("key {i} lost"));
        assert_eq!(got[..8], i.to_le_bytes(), "key {i}");
    }
}

fn l0_files(db: &Db) -> usize {
    db.property("siftdb.num-files-at-level0")
        .and_then(|s| s.parse().ok())
        .unwrap()
}

/// A 64 MiB WAL reopened with a 4 MiB write buffer: the open's peak heap growth stays under
/// two write buffers (the memtable being flushed and the one filling; a memtable's heap is
/// its counted size plus the skiplist's nodes) plus 16 MiB for everything else (a table being
/// built, a log block and record, the open's own structures). Reading the log whole, as
/// recovery did, takes 64 MiB for the file alone before a single record is replayed (and as
/// much again for its records, and for the one memtable they went into): well over the bound.
#[test]
fn wal_replay_peak_heap_is_bounded_by_the_write_buffer() {
    let name = "wal_replay_peak_heap_is_bounded_by_the_write_buffer";
    siftdb_tests::own_process::run_alone(module_path!(), name, || {
        COUNTING.store(true, Relaxed);
        let dir = siftdb_tests::temp_dir();
        let n = write_wal(dir.path(), 64 * MIB);
        let wal = wal_bytes(dir.path());
        assert!(wal >= 64 * MIB as u64);
        let write_buffer_size = 4 * MIB;
        let before = CURRENT.load(Relaxed);
        PEAK.store(before, Relaxed);
        let started = Instant::now();
        let db = Db::open(dir.path(), options(write_buffer_size)).unwrap();
        let peak = (PEAK.load(Relaxed) - before).max(0) as usize;
        let bound = 2 * write_buffer_size + 16 * MIB;
        eprintln!(
            "open replayed {} MiB of WAL in {:?}: peak heap growth {:.1} MiB (bound {} MiB), {} L0 tables",
            wal >> 20,
            started.elapsed(),
            peak as f64 / MIB as f64,
            bound / MIB,
            l0_files(&db)
        );
        assert!(
            peak < bound,
            "the open grew the heap by {peak} bytes at its peak (bound {bound})"
        );
        assert!(l0_files(&db) >= 10, "the replay should have flushed");
        check_some_values(&db, n);
    });
}

/// Set in the child process of [`wal_replay_of_a_gib_wal_peak_rss`]: the database to open.
const CHILD_DIR: &str = "SIFTDB_WAL_GIB_CHILD_DIR";

/// The peak resident set of this process (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("no VmHWM in /proc/self/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    kib << 10
}

/// Opt-in (`SIFTDB_WAL_GIB=1`; see the module docs for the command): writes a 1 GiB WAL, then
/// reopens it with the default write buffer (64 MiB) in a child process (this test binary run
/// again, so writing the WAL does not count) and asserts the child's peak RSS stays under the
/// memtable budget (two write buffers) plus 64 MiB; recovery reading the log whole took over
/// three times the log.
#[test]
fn wal_replay_of_a_gib_wal_peak_rss() {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        return reopen_in_child(Path::new(&dir));
    }
    if std::env::var("SIFTDB_WAL_GIB").as_deref() != Ok("1") {
        eprintln!("skipped: set SIFTDB_WAL_GIB=1 to replay a 1 GiB WAL and measure its peak RSS");
        return;
    }
    // On disk rather than tmpfs: 1 GiB of tmpfs pages is memory, if not this process's.
    let dir = tempfile::Builder::new()
        .prefix("siftdb-wal-gib-")
        .tempdir()
        .unwrap();
    let started = Instant::now();
    let n = write_wal(dir.path(), 1 << 30);
    eprintln!(
        "wrote {n} keys, {} MiB of WAL, in {:?}",
        wal_bytes(dir.path()) >> 20,
        started.elapsed()
    );
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "wal_replay_memory::wal_replay_of_a_gib_wal_peak_rss",
            "--nocapture",
        ])
        .env(CHILD_DIR, dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!(
        "child:\n{}{stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(output.status.success(), "the child failed");
    let db = Db::open(dir.path(), options(64 * MIB)).unwrap();
    check_some_values(&db, n);
}

/// The child of [`wal_replay_of_a_gib_wal_peak_rss`]: opens `dir` and reports its peak RSS.
fn reopen_in_child(dir: &Path) {
    COUNTING.store(true, Relaxed);
    let write_buffer_size = Options::default().write_buffer_size;
    let wal = wal_bytes(dir);
    let at_start = peak_rss();
    let started = Instant::now();
    let db = Db::open(dir, options(write_buffer_size)).unwrap();
    let elapsed = started.elapsed();
    let peak = peak_rss();
    let bound = 2 * write_buffer_size as u64 + 64 * MIB as u64;
    eprintln!(
        "reopen: {} MiB of WAL replayed in {elapsed:?} into {} L0 tables; peak RSS {} MiB \
         (at start {} MiB), bound {} MiB; peak heap {} MiB",
        wal >> 20,
        l0_files(&db),
        peak >> 20,
        at_start >> 20,
        bound >> 20,
        PEAK.load(Relaxed).max(0) as usize / MIB
    );
    assert!(peak < bound, "peak RSS {peak} bytes, bound {bound}");
}
