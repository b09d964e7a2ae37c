//! Fuzz target: `siftdb_tests::fuzz_entry::wal_records_replay`, the input split into records at
//! every 0xFF byte (so the decoder behind the log framing sees arbitrary payloads).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let records: Vec<Vec<u8>> = data.split(|b| *b == 0xFF).map(<[u8]>::to_vec).collect();
    siftdb_tests::fuzz_entry::wal_records_replay(&records);
});
