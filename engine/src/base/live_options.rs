//! Which options `set_options` changes on an open database (RocksDB's mutable options that siftdb
//! has), and how a list of changes becomes a keyspace's new options: every name known, every
//! value parsed, the result valid — or nothing changes.

use crate::base::error::{Error, Result};
use crate::base::keyspace_options::{set_field, KeyspaceOptions};
use crate::base::options::Options;

/// A keyspace's options that `Db::set_options` and `Keyspace::set_options` change live: new
/// memtables, the stall checks, compaction picks and new tables follow them.
pub(crate) const MUTABLE_KEYSPACE_OPTIONS: &[&str] = &[
    "write_buffer_size",
    "max_write_buffer_number",
    "level0_file_num_compaction_trigger",
    "level0_stop_writes_trigger",
    "target_file_size_base",
    "max_bytes_for_level_base",
    "max_bytes_for_level_multiplier",
    "disable_auto_compactions",
    "filter_bits_per_key",
    "optimize_filters_for_hits",
    "bloom_before_level",
    "compression",
    "compression_per_level",
    "enable_blob_files",
    "min_blob_size",
    "blob_file_size",
    "blob_compression_type",
    "enable_blob_garbage_collection",
    "blob_garbage_collection_age_cutoff",
    "blob_garbage_collection_force_threshold",
];

/// The database's options `Db::set_options` changes live: the compaction threads.
pub(crate) const MUTABLE_DB_OPTIONS: &[&str] =
    &["max_background_jobs", "max_background_compactions"];

/// Options a user may name that stay as the database was opened with them: the rest of a
/// keyspace's (their text form's names) and the database's.
const FIXED_DB_OPTIONS: &[&str] = &[
    "create_if_missing",
    "error_if_exists",
    "max_subcompactions",
    "compaction_readahead_size",
    "level_compaction_dynamic_file_size",
    "block_cache_capacity",
    "block_cache_admission",
    "block_cache",
    "false_positive_memo_bytes",
    "filter_index_bits_per_key",
    "filter_hasher",
    "paranoid_checks",
    "read_mode",
    "compression_parallel_threads",
    "fs",
    "keyspaces",
    "max_total_wal_size",
    "db_write_buffer_size",
    "allow_stall",
    "max_open_files",
    "max_manifest_file_size",
    "compaction_filter",
    "merge_operator",
    "listeners",
    "clock",
    "rate_limiter",
    "bytes_per_sync",
    "wal_bytes_per_sync",
];

/// Whether `name` is an option siftdb has that cannot change on an open database.
fn is_fixed(name: &str) -> bool {
    if FIXED_DB_OPTIONS.contains(&name) {
        return true;
    }
    let text = crate::base::keyspace_options::options_text(&KeyspaceOptions::default());
    text.lines()
        .filter_map(|l| l.split_once('='))
        .any(|(key, _)| key == name)
}

/// The error for a change `set_options` refuses.
fn refused(name: &str, why: &str) -> Error {
    Error::InvalidArgument(format!("set_options: {name}: {why}"))
}

/// Checks that `name` may change live; `db_wide` says whether the call may change the
/// database's options too (`Db::set_options`) or a keyspace's only.
pub(crate) fn check_name(name: &str, db_wide: bool) -> Result<()> {
    if MUTABLE_KEYSPACE_OPTIONS.contains(&name) {
        return Ok(());
    }
    if MUTABLE_DB_OPTIONS.contains(&name) {
        return if db_wide {
            Ok(())
        } else {
            Err(refused(
                name,
                "a database option: change it with Db::set_options",
            ))
        };
    }
    if is_fixed(name) {
        return Err(refused(
            name,
            "cannot change on an open database (set it when opening, or creating the keyspace)",
        ));
    }
    Err(refused(name, "no such option"))
}

/// `current` (a keyspace's options) with the keyspace `changes` applied, validated. Names of
/// [`MUTABLE_DB_OPTIONS`] are skipped (the caller applies them).
pub(crate) fn with_changes(current: &Options, changes: &[(&str, &str)]) -> Result<Options> {
    let mut tree = KeyspaceOptions::from(current);
    for (name, value) in changes {
        if MUTABLE_DB_OPTIONS.contains(name) {
            continue;
        }
        check_name(name, false)?;
        set_field(&mut tree, name, value)
            .ok_or_else(|| refused(name, &format!("cannot read the value {value:?}")))?;
    }
    let changed = tree.apply_to(current);
    changed
        .validate()
        .map_err(|e| refused(changes.first().map_or("", |c| c.0), &e.to_string()))?;
    Ok(changed)
}

/// The number `value` of a database option, checked: at least 1.
pub(crate) fn thread_count(name: &str, value: &str) -> Result<usize> {
    match value.parse::<usize>() {
        Ok(n) if (1..=256).contains(&n) => Ok(n),
        _ => Err(refused(
            name,
            &format!("{value:?} is not a thread count from 1 to 256"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sorted_into_live_fixed_and_unknown() {
        assert!(check_name("write_buffer_size", false).is_ok());
        assert!(check_name("max_background_jobs", true).is_ok());
        let msg = |r: Result<()>| r.unwrap_err().to_string();
        assert!(msg(check_name("max_background_jobs", false)).contains("Db::set_options"));
        assert!(msg(check_name("block_size", true)).contains("cannot change"));
        assert!(msg(check_name("prefix_extractor", true)).contains("cannot change"));
        assert!(msg(check_name("block_cache_capacity", true)).contains("cannot change"));
        assert!(msg(check_name("no_such_thing", true)).contains("no such option"));
    }

    #[test]
    fn changes_apply_whole_or_not_at_all() {
        let current = Options::default();
        let changed = with_changes(
            &current,
            &[
                ("write_buffer_size", "1048576"),
                ("disable_auto_compactions", "true"),
            ],
        )
        .unwrap();
        assert_eq!(changed.write_buffer_size, 1 << 20);
        assert!(changed.disable_auto_compactions);
        assert!(with_changes(&current, &[("write_buffer_size", "lots")]).is_err());
        assert!(with_changes(&current, &[("write_buffer_size", "0")]).is_err());
        assert!(with_changes(&current, &[("compression", "brotli")]).is_err());
        let codecs = with_changes(&current, &[("compression_per_level", "none,lz4,zstd")]).unwrap();
        assert_eq!(codecs.compression_per_level.len(), 3);
    }
}
