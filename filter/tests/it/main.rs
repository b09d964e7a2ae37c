//! siftdb-filter's integration tests, one binary: a module per suite (each module's documentation says what it
//! holds); `common` holds their shared helpers.

mod counting_no_false_negatives;
mod cuckoo_no_false_negatives;
mod dynamic_blooms_no_false_negatives;
mod filter_block_decode;
mod filter_fpr;
mod filter_no_false_negatives;
mod quotient_no_false_negatives;
