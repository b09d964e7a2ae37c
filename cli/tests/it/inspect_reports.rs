//! `siftdb::inspect` through the library: what each function reports about files whose contents
//! the test knows, and the damage the checks find.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::*;
use siftdb::inspect::{self, CheckedFileKind, EntryKind};
use siftdb::{Options, SstFileWriter};

/// A table of `n` puts (`k00000`, `k00002`, ...: even numbers) and a tombstone (`k00001`).
fn write_table(path: &Path, n: u64) {
    let mut w = SstFileWriter::create(path, &Options::default()).unwrap();
    for i in 0..n {
        if i == 1 {
            w.delete(b"k00001").unwrap();
        }
        w.put(format!("k{:05}", 2 * i), format!("v{i}")).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn table_info_reports_what_the_writer_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("t.sst");
    write_table(&path, 2_000);
    let info = inspect::table_info(&path).unwrap();
    assert_eq!(info.entries, 2_001);
    assert_eq!(info.deletions, 1);
    assert_eq!(info.distinct_keys, 2_001);
    assert_eq!(info.format_version, 3);
    assert_eq!(info.file_size, std::fs::metadata(&path).unwrap().len());
    let smallest = info.smallest_key.clone().unwrap();
    assert_eq!(
        (smallest.user_key.as_slice(), smallest.kind),
        (&b"k00000"[..], EntryKind::Put)
    );
    assert_eq!(info.largest_key.clone().unwrap().user_key, b"k03998");
    let filter = info.filter.clone().expect("a whole-key filter");
    assert_eq!(filter.keys, 2_001);
    assert!(
        filter.bits_per_key > filter.planned_bits_per_key * 0.9,
        "{filter:?}"
    );
    assert!(
        filter.expected_fpr > 0.0 && filter.expected_fpr < 0.05,
        "{filter:?}"
    );
    assert!(info.prefix_filter.is_none());
    // One index entry per data block, separators ascending, the last one the largest key.
    assert_eq!(info.index.len() as u64, info.data_blocks);
    assert!(info.index.len() > 3, "{} blocks", info.index.len());
    let separators: Vec<Vec<u8>> = info
        .index
        .iter()
        .map(|e| e.separator.clone().unwrap().user_key)
        .collect();
    assert!(separators.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(separators.last().unwrap(), b"k03998");
    assert!(info
        .index
        .windows(2)
        .all(|w| w[0].offset + w[0].size < w[1].offset));
}

#[test]
fn table_entries_lists_the_entries_in_order_up_to_the_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("t.sst");
    write_table(&path, 500);
    let all = inspect::table_entries(&path, None).unwrap();
    assert_eq!(all.len(), 501);
    assert_eq!(all[1].key.user_key, b"k00001");
    assert_eq!(all[1].key.kind, EntryKind::Delete);
    assert!(all[1].value.is_empty());
    assert_eq!(all[2].key.user_key, b"k00002");
    assert_eq!(all[2].value, b"v1");
    assert!(all
        .windows(2)
        .all(|w| w[0].key.user_key < w[1].key.user_key));
    let first = inspect::table_entries(&path, Some(3)).unwrap();
    assert_eq!(first, all[..3].to_vec());
}

#[test]
fn a_file_that_is_not_a_table_is_a_corruption_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("notes.sst");
    std::fs::write(&path, vec![7u8; 500]).unwrap();
    for err in [
        inspect::table_info(&path).unwrap_err(),
        inspect::table_entries(&path, None).unwrap_err(),
    ] {
        assert!(matches!(err, siftdb::Error::Corruption(_)), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("not a siftdb table") && text.contains("notes.sst"),
            "{text}"
        );
    }
    let check = inspect::check_table(&path).unwrap();
    assert!(check.problem.unwrap().contains("not a siftdb table"));
    assert!(inspect::check_table(tmp.path().join("absent.sst")).is_err());
}

#[test]
fn check_table_passes_a_sound_table_and_fails_a_flipped_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("t.sst");
    write_table(&path, 2_000);
    let check = inspect::check_table(&path).unwrap();
    assert!(check.is_ok(), "{check:?}");
    assert_eq!(check.entries, 2_001);
    assert_eq!(check.filter_keys_checked, 2_001);
    let info = inspect::table_info(&path).unwrap();
    assert!(check.blocks >= info.data_blocks + 3, "{check:?}");
    let at = flip_data_byte(&path);
    let check = inspect::check_table(&path).unwrap();
    let problem = check.problem.expect("the flipped byte is found");
    assert!(problem.contains("checksum mismatch"), "{problem}");
    assert!(
        problem.contains(&format!("offset {}", info.index[0].offset)),
        "{problem} (byte {at})"
    );
}

/// Rewrites the table's whole-key filter block as a filter of the same kind and size over
/// other keys, with both its own checksum and its block trailer's made right: a table whose
/// every checksum verifies and whose filter rules out keys it holds.
fn replace_filter_with_one_over_other_keys(path: &Path) {
    let info = inspect::table_info(path).unwrap();
    let filter = info.filter.unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes.windows(4).position(|w| w == b"SFLT").unwrap();
    let mut builder = siftdb_filter::FilterBuilder::new(
        filter.kind,
        filter.planned_bits_per_key,
        siftdb_filter::KeyHasher::default(),
    );
    for i in 0..filter.keys {
        builder.add_key(format!("other key {i}").as_bytes());
    }
    let block = builder.finish().unwrap();
    assert_eq!(
        block.len() as u64,
        filter.bytes,
        "the rebuilt filter has another size"
    );
    bytes[at..at + block.len()].copy_from_slice(&block);
    let trailer = at + block.len();
    let mut h = crc32fast::Hasher::new();
    h.update(&block);
    h.update(&bytes[trailer..trailer + 1]);
    bytes[trailer + 1..trailer + 5].copy_from_slice(&h.finalize().to_le_bytes());
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn check_table_finds_a_filter_that_rules_out_keys_the_table_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("t.sst");
    write_table(&path, 300);
    replace_filter_with_one_over_other_keys(&path);
    // Every block still reads: the damage is in what the filter says.
    inspect::table_info(&path).unwrap();
    assert_eq!(inspect::table_entries(&path, None).unwrap().len(), 301);
    let check = inspect::check_table(&path).unwrap();
    let problem = check.problem.expect("a filter that rules out held keys");
    assert!(
        problem.contains("whole-key filter rules out key"),
        "{problem}"
    );
}

#[test]
fn manifest_edits_fold_into_the_current_version_the_database_reports() {
    let (_tmp, dir) = fresh_db();
    let version = inspect::current_version(&dir).unwrap();
    let names: Vec<&str> = version.keyspaces.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["default", "users", "events"]);
    let edits = inspect::manifest_edits(&dir).unwrap();
    assert!(edits[0].next_file_number.is_some());
    assert!(edits
        .iter()
        .any(|e| e.created.as_ref().is_some_and(|(n, _)| n == "users")));
    let db = siftdb::Db::open_read_only(&dir, inspect::open_options(&dir).unwrap()).unwrap();
    for ks in &version.keyspaces {
        // The edits of this keyspace, replayed by hand, leave the version's tables.
        let mut live = BTreeSet::new();
        for e in edits.iter().filter(|e| e.keyspace_id == ks.id) {
            for (level, number) in &e.deleted {
                assert!(
                    live.remove(&(*level, *number)),
                    "edit {} deletes a table not there",
                    e.index
                );
            }
            live.extend(e.added.iter().map(|f| (f.level, f.number)));
        }
        let listed: BTreeSet<(usize, u64)> = ks
            .levels
            .iter()
            .flatten()
            .map(|f| (f.level, f.number))
            .collect();
        assert_eq!(live, listed, "keyspace {}", ks.name);
        // And the open database agrees, level by level.
        let per_level: Vec<usize> = db
            .keyspace(&ks.name)
            .unwrap()
            .level_info()
            .iter()
            .map(|l| l.files)
            .collect();
        for (level, files) in ks.levels.iter().enumerate() {
            assert_eq!(files.len(), per_level[level], "{} L{level}", ks.name);
        }
        // Deeper levels in key order, not overlapping.
        for files in ks.levels.iter().skip(1) {
            assert!(files
                .windows(2)
                .all(|w| w[0].largest.user_key < w[1].smallest.user_key));
        }
    }
}

#[test]
fn check_db_passes_then_reports_a_damaged_wal_and_a_damaged_table() {
    let (_tmp, dir) = fresh_db();
    // Writes left in the WAL (close does not flush; 50 fit in one memtable).
    let db = siftdb::Db::open(&dir, options()).unwrap();
    for i in 0..50 {
        db.put(format!("wal key {i}"), value(i)).unwrap();
    }
    db.close().unwrap();
    drop(db);
    let report = inspect::check_db(&dir).unwrap();
    assert!(report.is_ok(), "{:#?}", report.damaged());
    let count = |kind| report.files.iter().filter(|f| f.kind == kind).count();
    assert_eq!(count(CheckedFileKind::Manifest), 1);
    assert_eq!(count(CheckedFileKind::Options), 1);
    let live_tables: usize = ["default", "users", "events"]
        .iter()
        .map(|k| tables(&dir, k).iter().flatten().count())
        .sum();
    assert_eq!(count(CheckedFileKind::Table), live_tables);
    let wal = report
        .files
        .iter()
        .find(|f| f.kind == CheckedFileKind::Wal && f.entries > 0)
        .expect("a WAL holding the writes");
    assert_eq!(wal.entries, 50);
    assert!(report
        .files
        .iter()
        .filter(|f| f.kind == CheckedFileKind::Table)
        .all(|f| f.filter_keys_checked > 0));

    let wal_path = wal.path.clone();
    let mut bytes = std::fs::read(&wal_path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&wal_path, bytes).unwrap();
    let table = deep_table(&dir);
    flip_data_byte(&table);
    let report = inspect::check_db(&dir).unwrap();
    let damaged: Vec<&Path> = report.damaged().iter().map(|f| f.path.as_path()).collect();
    assert_eq!(
        damaged,
        [wal_path.as_path(), table.as_path()],
        "{:#?}",
        report.damaged()
    );
}

#[test]
fn check_db_reports_a_table_the_manifest_names_but_the_directory_lacks() {
    let (_tmp, dir) = fresh_db();
    let table = deep_table(&dir);
    std::fs::remove_file(&table).unwrap();
    let report = inspect::check_db(&dir).unwrap();
    let damaged = report.damaged();
    assert_eq!(damaged.len(), 1, "{damaged:#?}");
    assert_eq!(damaged[0].path, table);
}

#[test]
fn options_rebuild_what_the_database_was_created_with() {
    let (_tmp, dir) = fresh_db();
    let recorded = inspect::recorded_options(&dir).unwrap();
    assert_eq!(recorded.filter_hash, "Xxh3");
    assert_eq!(recorded.prefix_extractor, "fixed:4");
    assert_eq!(recorded.format_version, siftdb::FORMAT_VERSION);
    let options = inspect::open_options(&dir).unwrap();
    assert_eq!(options.prefix_extractor.as_ref().unwrap().name(), "fixed:4");
    assert_eq!(options.filter_hasher, options_hasher());
    assert!(!options.create_if_missing);

    // A database of a custom extractor cannot be rebuilt: refused, not opened without it.
    let tmp = tempfile::tempdir().unwrap();
    let custom = Options {
        prefix_extractor: Some(std::sync::Arc::new(Reverse)),
        ..Options::default()
    };
    siftdb::Db::open(tmp.path(), custom)
        .unwrap()
        .close()
        .unwrap();
    let err = inspect::open_options(tmp.path()).unwrap_err();
    assert!(
        err.to_string().contains("\"reverse\" is not built in"),
        "{err}"
    );
    // Read-only, it is left out: reads do not need it.
    let read = inspect::read_only_options(tmp.path()).unwrap();
    assert!(read.prefix_extractor.is_none());
    siftdb::Db::open_read_only(tmp.path(), read).unwrap();
    // Not a database: every function says so.
    let empty = tempfile::tempdir().unwrap();
    for err in [
        inspect::recorded_options(empty.path()).unwrap_err(),
        inspect::check_db(empty.path()).unwrap_err(),
        inspect::manifest_edits(empty.path().join("missing")).unwrap_err(),
        inspect::current_version(empty.path()).unwrap_err(),
    ] {
        assert!(matches!(err, siftdb::Error::NotADatabase { .. }), "{err:?}");
    }
}

fn options_hasher() -> siftdb::KeyHasher {
    common::options().filter_hasher
}

/// A prefix extractor that is not built in.
#[derive(Debug)]
struct Reverse;

impl siftdb::PrefixExtractor for Reverse {
    fn name(&self) -> String {
        "reverse".into()
    }

    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        key.get(..1)
    }
}
