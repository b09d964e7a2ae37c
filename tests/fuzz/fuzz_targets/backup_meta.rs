//! A backup's metadata file on arbitrary bytes: listing, verifying and restoring the backup
//! answer with errors, never a panic, and never restore what does not verify.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    siftdb_tests::fuzz_entry::backup_meta_decode(data);
});
