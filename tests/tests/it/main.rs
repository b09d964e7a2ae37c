//! siftdb's integration tests, one binary: a module per suite (as LevelDB builds one test
//! binary). Each module's own documentation says what it holds.
//!
//! Tests that need a process of their own run this binary again for themselves alone, with
//! `--exact` (`siftdb_tests::own_process`, or their own child protocol): `crash_kill` and
//! `read_only_process` kill and watch a writer child, `set_options_threads` counts the
//! process's threads, `table_cache_open_files` its open files under a lowered limit, and
//! `wal_replay_memory` its heap (the binary's global allocator counts only in that child).

mod backup_engine;
mod backup_power_loss;
mod batch_index_model;
mod blob_files_features;
mod blob_files_read_paths;
mod blob_gc_relocation;
mod block_cache_shared;
mod cache_admission_scan;
mod checkpoint_concurrent;
mod combined_faults;
mod compact_range_bottom_level;
mod compaction_cache;
mod compaction_concurrency;
mod compaction_fifo;
mod compaction_filter;
mod compaction_gc;
mod compaction_intra_l0;
mod compaction_monkey;
mod compaction_subcompactions;
mod compaction_thinned_moves;
mod compaction_trivial_move;
mod compaction_universal;
mod compat_old_formats;
mod compression_parallel_threads;
mod corruption_sweep;
mod crash_kill;
mod db_basic;
mod db_concurrency;
mod db_concurrency_compaction;
mod db_get_path;
mod db_model;
mod db_model_crash;
mod db_recovery;
mod db_snapshot;
mod delete_files_in_range;
mod disk_full;
mod event_listeners;
mod false_positive_memo;
mod file_deletions_disabled;
mod filter_adaptive_allocation;
mod filter_fuse_levels;
mod filter_index_lookups;
mod filter_omitted_levels;
mod fsync_outside_state_lock;
mod fuzz_readers;
mod get_pinned_values;
mod ingest_corruption;
mod ingest_external_file;
mod ingest_power_loss;
mod io_faults;
mod io_panics;
mod iterator_cost;
mod keyspace_bad_input;
mod keyspace_memory_budget;
mod keyspace_model;
mod manifest_rollover;
mod memtable_bloom_lookups;
mod memtable_memory_usage;
mod merge_operator;
mod merge_range_delete_concurrency;
mod multi_get_levels;
mod options_validate;
mod panic_containment;
mod pause_windows;
mod power_loss;
mod range_delete_levels;
mod range_filter_scans;
mod rate_limiter_pacing;
mod read_only_process;
mod read_sequence_race;
mod read_sequence_stress;
mod readable_handles;
mod schedule_model;
mod set_options_live;
mod set_options_threads;
mod snapshot_clone;
mod sst_file_reader;
mod sync_failures;
mod table_cache_open_files;
mod transaction_bank;
mod transaction_locks;
mod transaction_validation;
mod ttl_model;
mod wal_replay_flushes;
mod wal_replay_memory;
mod wal_switch_unsynced;
mod write_batch_log_data;
mod write_opt_sync;
mod write_stall_causes;
