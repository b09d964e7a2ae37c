//! Which options `set_options` changes on an open database (RocksDB's mutable options that siftdb
//! has), and how a list of changes becomes a keyspace's new options: every name known, every
//! value parsed, the result valid — or nothing changes.

use crate::base::error::{Error, Result};
use crate::base::keyspace_options::{is_text_key, set_field, KeyspaceOptions};
use crate::base::option_table::OptionInfo;
use crate::base::options::{Options, DB_OPTIONS, KEYSPACE_OPTIONS};

/// Whether the option `name` is in `table` and changes live.
fn live_in(table: &[OptionInfo], name: &str) -> bool {
    table.iter().any(|o| o.live && o.name == name)
}

/// Whether `name` is a database option `Db::set_options` changes live (the compaction threads).
pub(crate) fn is_live_db_option(name: &str) -> bool {
    live_in(DB_OPTIONS, name)
}

/// Whether `name` is an option siftdb has that cannot change on an open database: a fixed
/// option of either table, or a line of the keyspace options' text (`universal_size_ratio`).
fn is_fixed(name: &str) -> bool {
    let fixed = |table: &[OptionInfo]| table.iter().any(|o| !o.live && o.name == name);
    fixed(DB_OPTIONS) || fixed(KEYSPACE_OPTIONS) || is_text_key(name)
}

/// The error for a change `set_options` refuses.
fn refused(name: &str, why: &str) -> Error {
    Error::InvalidArgument(format!("set_options: {name}: {why}"))
}

/// Checks that `name` may change live; `db_wide` says whether the call may change the
/// database's options too (`Db::set_options`) or a keyspace's only.
pub(crate) fn check_name(name: &str, db_wide: bool) -> Result<()> {
    if live_in(KEYSPACE_OPTIONS, name) {
        return Ok(());
    }
    if is_live_db_option(name) {
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
/// live database options are skipped (the caller applies them).
pub(crate) fn with_changes(current: &Options, changes: &[(&str, &str)]) -> Result<Options> {
    let mut tree = KeyspaceOptions::from(current);
    for (name, value) in changes {
        if is_live_db_option(name) {
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
