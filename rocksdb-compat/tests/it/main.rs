//! siftdb-rocksdb's integration tests, one binary: a module per suite (each module's documentation says what it
//! holds); `common` holds their shared helpers.

mod backup_and_external_files;
mod checkpoint_properties_transactions;
mod column_family_keyspaces;
mod db_basics;
mod iterator_modes;
mod merge_and_compaction_filter;
mod options_mapping;
mod transaction_db_locks;
mod write_batch_entries;
