//! siftdb-tests: integration, model-based, crash and fault-injection tests of siftdb.
//!
//! Helpers shared by the tests live here.
#![deny(missing_docs)]

use std::path::Path;
use std::time::Duration;

pub mod create_hook_fs;
pub mod fault_fs;
pub mod fuzz_entry;
pub mod own_process;
pub mod pause;
pub mod stress_values;
pub use create_hook_fs::CreateHookFs;
pub use fault_fs::FaultFs;

/// A temporary directory for a test database: on tmpfs (`/dev/shm`) when available, so model
/// tests with thousands of flushes are not dominated by `fsync` latency. Durability itself is
/// tested by the crash tests, which use the real disk.
pub fn temp_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::Builder::new()
            .prefix("siftdb-test-")
            .tempdir_in(shm)
    {
        return dir;
    }
    tempfile::Builder::new()
        .prefix("siftdb-test-")
        .tempdir()
        .unwrap_or_else(|e| panic!("cannot create a temporary directory: {e}"))
}

/// A tree that grows deep on little data: 32 KiB memtables and tables, L1 of 128 KiB, levels
/// growing by 4, an L0 compaction at 2 tables, no compression (so the level targets, in bytes,
/// give the shape the filter and compaction tests expect); 10 filter bits per key. Tests
/// change what they study with struct-update syntax.
pub fn small_tree() -> siftdb::Options {
    siftdb::Options {
        write_buffer_size: 32 << 10,
        target_file_size_base: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        max_bytes_for_level_multiplier: 4.0,
        level0_file_num_compaction_trigger: 2,
        filter_bits_per_key: 10.0,
        compression: siftdb::Compression::None,
        compression_per_level: Vec::new(),
        ..siftdb::Options::default()
    }
}

/// In a database opened stepped (`Db::open_stepped`), runs every flush and then every
/// compaction that is due, as the background threads would have by now: called after each
/// write, the tree takes the same shape on every run, however busy the machine.
pub fn run_due_work(db: &siftdb::Db) {
    while db.step_flush().unwrap() {}
    while db.step_compaction().unwrap() {}
}

/// Key `i` of a write order scattered over the key space (a bijection of `0..2^32`), 11 bytes:
/// `k` and ten digits.
pub fn scattered_key(i: u32) -> Vec<u8> {
    format!("k{:010}", i.wrapping_mul(2_654_435_761)).into_bytes()
}

/// A count from the environment variable `name` (for longer soaks: more cases, cycles, points),
/// or `default` when it is unset or not a number.
pub fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Runs `f` on a thread of its own and waits for it at most `limit`: a call that hangs fails the
/// test, naming `what`, instead of hanging it. Returns what `f` returned, or its panic as `Err`.
pub fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::Result<T> {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match result.recv_timeout(limit) {
        Ok(outcome) => outcome,
        Err(_) => panic!("{what} did not return within {limit:?}: it hangs"),
    }
}

/// Keeps the panics a test injects on purpose (their message contains "injected") out of the
/// output; every other panic is reported as usual.
pub fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            if !message.contains("injected") {
                default(info);
            }
        }));
    });
}

/// The small-tree options of the fault sweeps (`io_faults`, `io_panics`, `sync_failures`): 4 KiB
/// memtables and tables, an L0 trigger of 2, so a few hundred writes flush and compact, on `fs`.
/// Two open table files and 2 KiB manifests: faults land in table reopens and manifest
/// rollovers too.
pub fn small_tree_options(fs: &FaultFs) -> siftdb::Options {
    siftdb::Options {
        write_buffer_size: 4 << 10,
        target_file_size_base: 4 << 10,
        max_bytes_for_level_base: 16 << 10,
        level0_file_num_compaction_trigger: 2,
        max_open_files: 2,
        max_manifest_file_size: 2 << 10,
        fs: std::sync::Arc::new(fs.clone()),
        ..siftdb::Options::default()
    }
}

/// Walks `it` as `walk` says (`true`: from the front, `false`: from the back), checking each
/// entry against the ends of `want`, then checks that what is left is what neither end yielded:
/// a double-ended iterator's contract over a model's entries. `what` names the walk in failures.
pub fn check_walk<I, T>(mut it: I, want: Vec<T>, walk: &[bool], what: &str)
where
    I: DoubleEndedIterator<Item = siftdb::Result<T>>,
    T: PartialEq + std::fmt::Debug,
{
    let mut want = std::collections::VecDeque::from(want);
    for &forward in walk {
        let (got, expected) = if forward {
            (it.next(), want.pop_front())
        } else {
            (it.next_back(), want.pop_back())
        };
        assert_eq!(got.map(|r| r.unwrap()), expected, "{what} {walk:?}");
    }
    let rest: Vec<T> = it.map(|r| r.unwrap()).collect();
    assert_eq!(rest, Vec::from(want), "rest of {what} {walk:?}");
}

/// A clock that moves only when told to (for expiring values), starting in November 2023.
#[derive(Debug)]
pub struct ManualClock(std::sync::atomic::AtomicU64);

impl ManualClock {
    /// A clock at 1,700,000,000,000 ms since the Unix epoch.
    pub fn new() -> ManualClock {
        ManualClock(std::sync::atomic::AtomicU64::new(1_700_000_000_000))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.0.fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl siftdb::Clock for ManualClock {
    fn now(&self) -> std::time::SystemTime {
        let ms = self.0.load(std::sync::atomic::Ordering::SeqCst);
        std::time::UNIX_EPOCH + Duration::from_millis(ms)
    }
}
