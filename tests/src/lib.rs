//! siftdb-tests: integration, model-based, crash and fault-injection tests of siftdb.
//!
//! Helpers shared by the tests live here.
#![deny(missing_docs)]

use std::path::Path;

pub mod fault_fs;
pub mod fuzz_entry;
pub use fault_fs::FaultFs;

/// A temporary directory for a test database: on tmpfs (`/dev/shm`) when available, so model
/// tests with thousands of flushes are not dominated by `fsync` latency. Durability itself is
/// tested by the crash tests, which use the real disk.
pub fn temp_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::Builder::new()
            .prefix("siftdb-test-")
            .tempdir_in(shm)
        {
            return dir;
        }
    }
    tempfile::Builder::new()
        .prefix("siftdb-test-")
        .tempdir()
        .unwrap_or_else(|e| panic!("cannot create a temporary directory: {e}"))
}

/// A count from the environment variable `name` (for longer soaks: more cases, cycles, points),
/// or `default` when it is unset or not a number.
pub fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
