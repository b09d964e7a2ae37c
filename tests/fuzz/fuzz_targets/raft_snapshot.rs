//! siftdb-raft's snapshot file reader on arbitrary bytes: an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = siftdb_raft::read_snapshot(data);
});
