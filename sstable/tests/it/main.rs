//! siftdb-sstable's integration tests, one binary: a module per suite (each module's documentation says what it
//! holds); `common` holds their shared helpers.

mod blob_file;
mod common;
mod table_corruption;
mod table_filter_cap;
mod table_get_path;
mod table_global_seqno;
mod table_parallel_compression;
mod table_prefix_filter;
mod table_range_filter;
mod table_range_tombstones;
mod table_readahead;
mod table_round_trip;
