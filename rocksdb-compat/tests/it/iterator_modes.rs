//! Iterators: modes and directions, bounds, prefixes, raw cursors, refresh, snapshots.

use siftdb_rocksdb::{
    Direction, IteratorMode, Options, PrefixRange, ReadOptions, SliceTransform, DB,
};

fn keys(
    it: impl Iterator<Item = Result<(Box<[u8]>, Box<[u8]>), siftdb_rocksdb::Error>>,
) -> Vec<String> {
    it.map(|r| String::from_utf8(r.unwrap().0.to_vec()).unwrap())
        .collect()
}

fn filled(dir: &tempfile::TempDir, opts: Option<Options>) -> DB {
    let db = match opts {
        Some(o) => DB::open(&o, dir.path()).unwrap(),
        None => DB::open_default(dir.path()).unwrap(),
    };
    for k in ["a1", "a2", "b1", "b2", "c1"] {
        db.put(k, k).unwrap();
    }
    db
}

#[test]
fn modes_start_end_and_from_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(&dir, None);
    assert_eq!(
        keys(db.iterator(IteratorMode::Start)),
        ["a1", "a2", "b1", "b2", "c1"]
    );
    assert_eq!(
        keys(db.iterator(IteratorMode::End)),
        ["c1", "b2", "b1", "a2", "a1"]
    );
    assert_eq!(
        keys(db.iterator(IteratorMode::From(b"b", Direction::Forward))),
        ["b1", "b2", "c1"]
    );
    assert_eq!(
        keys(db.iterator(IteratorMode::From(b"b", Direction::Reverse))),
        ["a2", "a1"]
    );
    let mut it = db.iterator(IteratorMode::Start);
    it.set_mode(IteratorMode::From(b"c", Direction::Forward));
    assert_eq!(keys(it), ["c1"]);
}

#[test]
fn bounds_and_ranges_limit_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(&dir, None);
    let mut opts = ReadOptions::default();
    opts.set_iterate_lower_bound(b"a2".to_vec());
    opts.set_iterate_upper_bound(b"b2".to_vec());
    assert_eq!(
        keys(db.iterator_opt(IteratorMode::Start, opts)),
        ["a2", "b1"]
    );
    let mut opts = ReadOptions::default();
    opts.set_iterate_range(PrefixRange(&b"b"[..]));
    assert_eq!(keys(db.iterator_opt(IteratorMode::End, opts)), ["b2", "b1"]);
}

#[test]
fn prefix_iterator_stops_where_the_extracted_prefix_changes() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_prefix_extractor(SliceTransform::create_fixed_prefix(1));
    let db = filled(&dir, Some(opts));
    assert_eq!(keys(db.prefix_iterator(b"a")), ["a1", "a2"]);
    assert_eq!(keys(db.prefix_iterator(b"b2")), ["b2"]);
    assert_eq!(
        keys(db.full_iterator(IteratorMode::From(b"b2", Direction::Forward))),
        ["b2", "c1"]
    );
}

#[test]
fn a_raw_cursor_seeks_steps_and_refreshes() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(&dir, None);
    let mut raw = db.raw_iterator();
    assert!(!raw.valid());
    raw.seek(b"b");
    assert_eq!(raw.item(), Some((&b"b1"[..], &b"b1"[..])));
    raw.prev();
    assert_eq!(raw.key(), Some(&b"a2"[..]));
    raw.seek_for_prev(b"b9");
    assert_eq!(raw.key(), Some(&b"b2"[..]));
    raw.seek_to_last();
    raw.next();
    assert!(!raw.valid());
    assert_eq!(raw.value(), None);
    raw.status().unwrap();
    db.put(b"d1", b"d1").unwrap();
    raw.seek(b"d");
    assert!(!raw.valid());
    raw.refresh().unwrap();
    raw.seek(b"d");
    assert_eq!(raw.key(), Some(&b"d1"[..]));
}

#[test]
fn a_tailing_iterator_goes_on_with_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(dir.path()).unwrap();
    db.put(b"k1", b"v").unwrap();
    let mut opts = ReadOptions::default();
    opts.set_tailing(true);
    let mut it = db.iterator_opt(IteratorMode::Start, opts);
    assert_eq!(&*it.next().unwrap().unwrap().0, b"k1");
    db.put(b"k2", b"v").unwrap();
    assert_eq!(&*it.next().unwrap().unwrap().0, b"k2");
}

#[test]
fn snapshot_reads_and_iterators_keep_their_view() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let db = DB::open_cf(&opts, dir.path(), ["cf"]).unwrap();
    let cf = db.cf_handle("cf").unwrap();
    db.put(b"k1", b"old").unwrap();
    db.put_cf(&cf, b"c1", b"old").unwrap();
    let snap = db.snapshot();
    db.put(b"k1", b"new").unwrap();
    db.put(b"k2", b"new").unwrap();
    db.put_cf(&cf, b"c2", b"new").unwrap();
    assert_eq!(snap.get(b"k1").unwrap(), Some(b"old".to_vec()));
    assert_eq!(&*snap.get_pinned(b"k1").unwrap().unwrap(), b"old");
    assert_eq!(keys(snap.iterator(IteratorMode::Start)), ["k1"]);
    assert_eq!(keys(snap.iterator_cf(&cf, IteratorMode::End)), ["c1"]);
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    assert_eq!(db.get_opt(b"k2", &ro).unwrap(), None);
    assert_eq!(snap.sequence_number(), 2);
}
