//! `compact_range` leaves the bottom level reclaimed: deletions of the range, written in L0
//! beside a key whose range reaches over the bottom level's tables, leave no trace on disk once
//! the range is compacted, whether the tables holding them reach the bottom by merges or by
//! moves (a manifest edit) after an earlier step of the same call wrote them.

use siftdb::{Db, IngestOptions, Options, SstFileWriter};

/// Deletions recorded in the tables of the deepest level that has any.
fn deletions_at_the_bottom(dir: &std::path::Path) -> (usize, u64) {
    let version = siftdb::inspect::current_version(dir).unwrap();
    let levels = &version.keyspaces[0].levels;
    let deepest = levels.iter().rposition(|l| !l.is_empty()).unwrap();
    let deletions = levels[deepest]
        .iter()
        .map(|f| {
            siftdb::inspect::table_info(dir.join(&f.file_name))
                .unwrap()
                .deletions
        })
        .sum();
    (deepest, deletions)
}

#[test]
fn compact_range_leaves_no_deletion_of_the_range_at_the_bottom() {
    let dir = siftdb_tests::temp_dir();
    // Every key its own table: the merge of L0 writes one table per key, each moved on alone.
    let options = Options {
        target_file_size_base: 1,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options.clone()).unwrap();
    // An ingested table at the bottom level, m..z.
    let external = dir.path().join("external.sst");
    let mut writer = SstFileWriter::create(&external, &options).unwrap();
    for key in ["m", "q", "z"] {
        writer.put(key, "ingested").unwrap();
    }
    writer.finish().unwrap();
    db.ingest_external_file(&[&external], &IngestOptions::default())
        .unwrap();
    // Two overlapping L0 tables (so their step down is a merge, not a move): deletions of
    // a..c with a put of "zz", then a put of "b2". The merge spans a..zz, which overlaps the
    // bottom's m..z: not a bottom-level compaction, so it keeps the deletions; its tables of
    // a..c then move down alone, overlapping nothing below.
    for key in ["a", "b", "c"] {
        db.delete(key).unwrap();
    }
    db.put("zz", "new").unwrap();
    db.flush().unwrap();
    db.put("b2", "new").unwrap();
    db.flush().unwrap();
    db.compact_range(Some(b"a"), Some(b"c")).unwrap();
    for key in ["a", "b", "c"] {
        assert_eq!(db.get(key).unwrap(), None);
    }
    assert_eq!(db.get("q").unwrap(), Some(b"ingested".to_vec()));
    assert_eq!(db.get("zz").unwrap(), Some(b"new".to_vec()));
    assert_eq!(db.get("b2").unwrap(), Some(b"new".to_vec()));
    let (deepest, deletions) = deletions_at_the_bottom(dir.path());
    assert_eq!(
        deletions, 0,
        "deletions of the range left in the bottom level (L{deepest})"
    );
}
