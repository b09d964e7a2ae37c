//! Fuzz target: `siftdb_tests::fuzz_entry::table_open_and_iterate`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    siftdb_tests::fuzz_entry::table_open_and_iterate(data);
});
