//! Fuzz target: `siftdb_tests::fuzz_entry::standalone_filters_decode` (the counting, scalable
//! and rotating bloom, cuckoo and quotient filters' serialized forms).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    siftdb_tests::fuzz_entry::standalone_filters_decode(data);
});
