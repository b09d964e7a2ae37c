//! Fuzz target: `siftdb_tests::fuzz_entry::blob_file_decode`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    siftdb_tests::fuzz_entry::blob_file_decode(data);
});
