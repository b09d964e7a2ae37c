//! Databases written by older builds keep opening (redb-style backward-compatibility tests).
//!
//! Each fixture under `tests/fixtures/` was written by an older build (its README says which and
//! what it holds) and is never rewritten. The test opens a copy, reads every key back —
//! from tables and from the WAL — then writes, compacts and reopens it with this build.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use siftdb::{Db, Keyspace, Options};

fn copy_fixture(name: &str, to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        let file = entry.file_name();
        if file != "README.md" {
            std::fs::copy(entry.path(), to.join(&file)).unwrap();
        }
    }
}

/// The table format versions (from the footers) of the tables in `dir`.
fn table_versions(dir: &Path) -> Vec<u32> {
    let mut versions: Vec<u32> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .map(|p| {
            let bytes = std::fs::read(p).unwrap();
            let footer = bytes.len() - siftdb_sstable::format::FOOTER_LEN;
            u32::from_le_bytes(bytes[footer + 64..footer + 68].try_into().unwrap())
        })
        .collect();
    versions.sort_unstable();
    versions.dedup();
    versions
}

/// What `format-v1` holds (see its README).
fn v1_expected(i: u32) -> Option<Vec<u8>> {
    if i.is_multiple_of(5) {
        None
    } else if i.is_multiple_of(3) {
        Some(format!("v2-{i}").into_bytes())
    } else {
        Some(format!("v1-{i}").into_bytes())
    }
}

fn check_v1_contents(db: &Db) {
    for i in 0..2000u32 {
        let got = db.get(format!("fixture:{i:05}")).unwrap();
        assert_eq!(got, v1_expected(i), "fixture:{i:05}");
    }
    for i in 0..50u32 {
        let got = db.get(format!("wal-only:{i:03}")).unwrap();
        assert_eq!(got, Some(format!("w-{i}").into_bytes()), "wal-only:{i:03}");
    }
    let live = (0..2000u32).filter(|&i| v1_expected(i).is_some()).count();
    assert_eq!(db.prefix_iter("fixture:").count(), live);
    assert_eq!(db.prefix_iter("wal-only:").count(), 50);
}

#[test]
fn a_format_1_database_opens_reads_and_upgrades() {
    let dir = siftdb_tests::temp_dir();
    copy_fixture("format-v1", dir.path());
    assert_eq!(table_versions(dir.path()), vec![1]);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_v1_contents(&db);
    // Opening upgrades OPTIONS to this build's format.
    let options = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(
        options.contains(&format!("format_version={}", siftdb::FORMAT_VERSION)),
        "{options}"
    );
    // New writes, a full compaction and reopening all work on the old files.
    for i in 0..500u32 {
        db.put(format!("new:{i:04}"), "n").unwrap();
    }
    db.compact_range(None, None).unwrap();
    // The compaction rewrote every table in this build's table format.
    assert_eq!(
        table_versions(dir.path()),
        vec![siftdb_sstable::format::TABLE_FORMAT_VERSION]
    );
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_v1_contents(&db);
    assert_eq!(db.prefix_iter("new:").count(), 500);
}

/// What `format-v2` holds (see its README).
fn v2_expected(k: u32) -> Option<Vec<u8>> {
    if k.is_multiple_of(5) {
        None
    } else if k.is_multiple_of(3) {
        Some(format!("s2-{k}").into_bytes())
    } else {
        Some(format!("s1-{k:020}").into_bytes())
    }
}

fn check_v2_contents(db: &Db) {
    for k in 0..2000u32 {
        assert_eq!(
            db.get(format!("seq:{k:05}")).unwrap(),
            v2_expected(k),
            "seq:{k:05}"
        );
    }
    for i in 0..50u32 {
        let got = db.get(format!("wal-only:{i:03}")).unwrap();
        assert_eq!(got, Some(format!("w-{i}").into_bytes()), "wal-only:{i:03}");
    }
    // Both directions see the same live keys.
    let live: Vec<Vec<u8>> = (0..2000u32)
        .filter(|&k| v2_expected(k).is_some())
        .map(|k| format!("seq:{k:05}").into_bytes())
        .collect();
    let forward: Vec<Vec<u8>> = db.prefix_iter("seq:").map(|kv| kv.unwrap().0).collect();
    assert_eq!(forward, live);
    let mut backward: Vec<Vec<u8>> = db
        .prefix_iter("seq:")
        .rev()
        .map(|kv| kv.unwrap().0)
        .collect();
    backward.reverse();
    assert_eq!(backward, live);
}

#[test]
fn a_format_2_database_opens_reads_and_upgrades() {
    let dir = siftdb_tests::temp_dir();
    copy_fixture("format-v2", dir.path());
    assert_eq!(table_versions(dir.path()), vec![1]);
    let recorded = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(recorded.contains("format_version=2"), "{recorded}");
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_v2_contents(&db);
    // The tree of the old build is read as it was: L0, L1 and L2 hold tables.
    let levels = db.level_info();
    assert!(levels.len() >= 3 && levels[..3].iter().all(|l| l.files > 0));
    for i in 0..300u32 {
        db.put(format!("new:{i:04}"), "n").unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(
        table_versions(dir.path()),
        vec![siftdb_sstable::format::TABLE_FORMAT_VERSION]
    );
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_v2_contents(&db);
    assert_eq!(db.prefix_iter("new:").count(), 300);
}

/// What `format-v3` holds (see its README).
fn v3_expected(k: u32) -> Option<Vec<u8>> {
    if k.is_multiple_of(7) {
        None
    } else if k.is_multiple_of(4) {
        Some(format!("t2-{k}").into_bytes())
    } else {
        Some(format!("t1-{k:020}").into_bytes())
    }
}

fn check_v3_contents(db: &Db) {
    for k in 0..3000u32 {
        assert_eq!(
            db.get(format!("v3:{k:05}")).unwrap(),
            v3_expected(k),
            "v3:{k:05}"
        );
    }
    for i in 0..40u32 {
        let got = db.get(format!("wal-only:{i:03}")).unwrap();
        assert_eq!(got, Some(format!("w-{i}").into_bytes()), "wal-only:{i:03}");
    }
    let live = (0..3000u32).filter(|&k| v3_expected(k).is_some()).count();
    assert_eq!(db.prefix_iter("v3:").count(), live);
    assert_eq!(db.prefix_iter("v3:").rev().count(), live);
}

#[test]
fn a_format_3_database_opens_as_the_default_keyspace_and_upgrades() {
    let dir = siftdb_tests::temp_dir();
    copy_fixture("format-v3", dir.path());
    assert_eq!(table_versions(dir.path()), vec![2]);
    let recorded = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(recorded.contains("format_version=3"), "{recorded}");
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_v3_contents(&db);
    // Everything the old build wrote is the "default" keyspace; its tables are partitioned.
    assert_eq!(db.keyspace_names(), vec!["default".to_string()]);
    assert!(db.level_info().iter().any(|l| l.partitioned_tables > 0));
    // The old database takes keyspaces: a new one beside the old data, a cross-keyspace batch.
    let ks = db.keyspace("added").unwrap();
    let mut batch = siftdb::WriteBatch::new();
    batch.put("new:v3", "n").put_in(&ks, b"k", b"v");
    db.write(batch).unwrap();
    db.compact_range(None, None).unwrap();
    drop((db, ks));
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_v3_contents(&db);
    assert_eq!(db.get("new:v3").unwrap(), Some(b"n".to_vec()));
    assert_eq!(
        db.keyspace("added").unwrap().get("k").unwrap(),
        Some(b"v".to_vec())
    );
}

/// When `format-v4` was written: every write of it was made at this time (ms since the Unix
/// epoch), by a clock that did not move. Its expiring values expire this long after it.
const V4_WRITTEN_AT: u64 = 1_700_000_000_000;
const MINUTE: u64 = 60_000;
const DAY: u64 = 24 * 60 * MINUTE;
/// The TTLs of `format-v4`: expired a day later, alive for a century.
const V4_SHORT: u64 = 10 * MINUTE;
const V4_LONG: u64 = 100 * 365 * DAY;

/// A clock that stands still.
struct StoppedClock(u64);

impl siftdb::Clock for StoppedClock {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.0)
    }
}

/// A key's last write in a fixture: its value and expiry (ms; `None`: never), `None` if deleted.
type Written = Option<(Vec<u8>, Option<u64>)>;
/// What each key reads as: its value, or `None`.
type State = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

fn plain(value: String) -> Written {
    Some((value.into_bytes(), None))
}

fn expiring(value: impl Into<Vec<u8>>, ttl: u64) -> Written {
    Some((value.into(), Some(V4_WRITTEN_AT + ttl)))
}

/// `v4:<k>` of the "default" keyspace of `format-v4` (see its README).
fn v4_default_key(k: u32) -> Written {
    // 4: the WAL tail.
    match k % 100 {
        50 => return plain(format!("d-{k}")),
        51 => return None,
        52 => return expiring(format!("o-{k}"), V4_LONG),
        53 => return expiring(format!("z-{k}"), V4_SHORT),
        // 3: the last L0 table.
        17 => return plain(format!("c-{k}")),
        18 => return None,
        19 => return expiring(format!("n-{k}"), V4_LONG),
        _ => {}
    }
    // 2: deletes and overwrites.
    if k.is_multiple_of(7) {
        return None;
    } else if k % 5 == 1 {
        return plain(format!("b-{k}"));
    } else if k % 9 == 2 {
        return expiring(format!("y-{k}"), V4_SHORT);
    } else if k % 11 == 4 {
        return expiring(format!("m-{k}"), V4_LONG);
    }
    // 1: everything once.
    match k % 10 {
        3 => expiring(format!("x-{k}"), V4_SHORT),
        7 => expiring(format!("l-{k:020}"), V4_LONG),
        _ => plain(format!("a-{k:020}")),
    }
}

/// `ev:<k>` of the "events" keyspace of `format-v4` (see its README).
fn v4_events_key(k: u32) -> Written {
    match k % 50 {
        // 4: the WAL tail.
        1 => return None,
        2 => return plain(format!("e4-{k}")),
        // 3: the last L0 table.
        11 => return plain(format!("e3-{k}")),
        12 => return None,
        _ => {}
    }
    // 2: deletes and overwrites.
    if k.is_multiple_of(8) {
        return None;
    } else if k.is_multiple_of(3) {
        return expiring(format!("e2-{k}"), V4_LONG);
    } else if k % 10 == 9 {
        return expiring(format!("s2-{k}"), V4_SHORT);
    }
    // 1: everything once.
    match k % 6 {
        1 => expiring(format!("s-{k}"), V4_SHORT),
        5 => expiring(format!("L-{k:016}"), V4_LONG),
        _ => plain(format!("e1-{k:016}-event")),
    }
}

/// Every key `format-v4` wrote, by keyspace ("default", "events"), and what it reads as at
/// `now` (ms): an expiring value is absent from its expiry on.
fn v4_state(now: u64) -> (State, State) {
    let mut default = BTreeMap::new();
    let mut events = BTreeMap::new();
    for k in 0..3000u32 {
        default.insert(format!("v4:{k:05}").into_bytes(), v4_default_key(k));
    }
    for i in 0..20u64 {
        let value = (i * 1000).to_le_bytes();
        let written = if i % 5 == 4 {
            expiring(value, V4_SHORT)
        } else {
            Some((value.to_vec(), None))
        };
        default.insert(format!("count:{i:02}").into_bytes(), written);
    }
    for i in 0..40u32 {
        let written = match i % 4 {
            0 => plain(format!("w-{i}")),
            1 => expiring(format!("ws-{i}"), V4_SHORT),
            2 => expiring(format!("wl-{i}"), V4_LONG),
            _ => expiring(format!("w0-{i}"), 0),
        };
        default.insert(format!("wal-only:{i:03}").into_bytes(), written);
    }
    for k in 0..2000u32 {
        events.insert(format!("ev:{k:05}").into_bytes(), v4_events_key(k));
    }
    events.insert(b"edge:expired".to_vec(), expiring("gone", DAY));
    events.insert(b"edge:live".to_vec(), expiring("kept", DAY + 1));
    for i in 0..30u32 {
        let written = match i % 3 {
            0 => plain(format!("q-{i}")),
            1 => expiring(format!("qs-{i}"), V4_SHORT),
            _ => expiring(format!("ql-{i}"), V4_LONG),
        };
        events.insert(format!("ev-wal:{i:03}").into_bytes(), written);
    }
    for i in 0..10u64 {
        let value = (i * 7).to_le_bytes();
        let written = if i % 4 == 3 {
            expiring(value, V4_SHORT)
        } else {
            Some((value.to_vec(), None))
        };
        events.insert(format!("ev-count:{i:02}").into_bytes(), written);
    }
    let at_now = |written: BTreeMap<Vec<u8>, Written>| -> State {
        written
            .into_iter()
            .map(|(key, w)| {
                let value = w.and_then(|(value, expiry)| {
                    expiry.is_none_or(|expiry| now < expiry).then_some(value)
                });
                (key, value)
            })
            .collect()
    };
    (at_now(default), at_now(events))
}

/// Panics with the first difference of two lists of key-value pairs.
fn assert_same_pairs(what: &str, got: &[(Vec<u8>, Vec<u8>)], want: &[(Vec<u8>, Vec<u8>)]) {
    let show = |kv: Option<&(Vec<u8>, Vec<u8>)>| {
        kv.map(|(k, v)| {
            format!(
                "{} = {}",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(v)
            )
        })
    };
    if let Some(at) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        panic!(
            "{what}: {} pairs, {} expected; #{at} is {:?}, expected {:?}",
            got.len(),
            want.len(),
            show(got.get(at)),
            show(want.get(at))
        );
    }
}

/// Reads every key of `state` from `ks` (get, multi_get) and its live keys by iterating the
/// whole keyspace and each of `prefixes`, in both directions.
fn check_keyspace(ks: &Keyspace, state: &State, prefixes: &[&str]) {
    let name = ks.name().to_string();
    for (key, value) in state {
        assert_eq!(
            ks.get(key).unwrap(),
            *value,
            "{name}: {}",
            String::from_utf8_lossy(key)
        );
    }
    let keys: Vec<&Vec<u8>> = state.keys().collect();
    let got: Vec<Option<Vec<u8>>> = ks
        .multi_get(&keys)
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert!(
        got.iter().eq(state.values()),
        "{name}: multi_get differs from get"
    );
    let live = |prefix: &str| -> Vec<(Vec<u8>, Vec<u8>)> {
        state
            .iter()
            .filter(|(k, _)| k.starts_with(prefix.as_bytes()))
            .filter_map(|(k, v)| Some((k.clone(), v.clone()?)))
            .collect()
    };
    let forward: Vec<_> = ks.iter().map(|kv| kv.unwrap()).collect();
    assert_same_pairs(&format!("{name} forward"), &forward, &live(""));
    let mut backward: Vec<_> = ks.iter().rev().map(|kv| kv.unwrap()).collect();
    backward.reverse();
    assert_same_pairs(&format!("{name} backward"), &backward, &live(""));
    for prefix in prefixes {
        let forward: Vec<_> = ks.prefix_iter(prefix).map(|kv| kv.unwrap()).collect();
        assert_same_pairs(&format!("{name} {prefix} forward"), &forward, &live(prefix));
        let mut backward: Vec<_> = ks.prefix_iter(prefix).rev().map(|kv| kv.unwrap()).collect();
        backward.reverse();
        assert_same_pairs(
            &format!("{name} {prefix} backward"),
            &backward,
            &live(prefix),
        );
    }
}

const V4_DEFAULT_PREFIXES: &[&str] = &["v4:", "count:", "wal-only:", "new:"];
const V4_EVENTS_PREFIXES: &[&str] = &["ev:", "ev-wal:", "ev-count:", "edge:", "ev-new:"];

/// Checks both keyspaces of a `format-v4` database against `(default, events)`.
fn check_v4(db: &Db, (default, events): &(State, State)) {
    check_keyspace(
        &db.keyspace("default").unwrap(),
        default,
        V4_DEFAULT_PREFIXES,
    );
    check_keyspace(&db.keyspace("events").unwrap(), events, V4_EVENTS_PREFIXES);
    // `Db`'s own methods are the "default" keyspace's.
    let forward: Vec<_> = db.iter().map(|kv| kv.unwrap()).collect();
    let live: Vec<_> = default
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.clone()?)))
        .collect();
    assert_same_pairs("Db::iter", &forward, &live);
}

/// The tuning `format-v4` was written with (see its README), with the clock at `now` and a
/// merge operator for the counters.
fn v4_options(now: u64) -> Options {
    use siftdb::Compression::{Lz4, Zstd};
    Options {
        write_buffer_size: 32 << 10,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        level0_file_num_compaction_trigger: 8,
        compression: Lz4,
        compression_per_level: vec![siftdb::Compression::None, Lz4, Zstd],
        partition_above: Some(1024),
        metadata_block_size: 128,
        block_size: 512,
        clock: Arc::new(StoppedClock(now)),
        merge_operator: Some(Arc::new(siftdb::merge::U64Add)),
        ..Options::default()
    }
}

/// The options `format-v4` recorded for "events", but L0 compacted only at 8 tables (as the
/// writer's last open had it), so that the tree stays as the old build left it until compacted.
fn v4_events_options() -> siftdb::KeyspaceOptions {
    use siftdb::Compression::{Lz4, Zstd};
    siftdb::KeyspaceOptions {
        write_buffer_size: 16 << 10,
        target_file_size_base: 8 << 10,
        max_bytes_for_level_base: 32 << 10,
        level0_file_num_compaction_trigger: 8,
        compression: Zstd,
        compression_per_level: vec![siftdb::Compression::None, Zstd, Lz4],
        partition_above: Some(512),
        metadata_block_size: 128,
        block_size: 256,
        filter_bits_per_key: 8.0,
        prefix_extractor: Some(siftdb::FixedPrefix::shared(3)),
        ..siftdb::KeyspaceOptions::default()
    }
}

/// The properties of the tables in `dir`.
fn table_properties(dir: &Path) -> Vec<siftdb_sstable::TableProperties> {
    let cache = Arc::new(siftdb_sstable::TableCache::new(
        siftdb_cache::CacheOptions::new(1 << 20),
    ));
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .map(|p| {
            let file = std::fs::File::open(&p).unwrap();
            let file = siftdb_sstable::open_random_access(file, siftdb::ReadMode::Pread).unwrap();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let table = siftdb_sstable::Table::open(
                file,
                0,
                name,
                Arc::clone(&cache),
                siftdb_sstable::TableReadOptions::default(),
            )
            .unwrap();
            table.properties().clone()
        })
        .collect()
}

/// The codec bytes of the blocks stored in the tables of `dir` (0 none, 1 LZ4, 2 Zstd), found by
/// walking each file's blocks from its start (a block is followed by its codec byte and the CRC
/// of both) up to the first block without a trailer, if any.
fn stored_codecs(dir: &Path) -> BTreeSet<u8> {
    use siftdb_sstable::format::{block_trailer, BLOCK_TRAILER_LEN, FOOTER_LEN};
    let mut codecs = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "sst") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let end = bytes.len() - FOOTER_LEN - BLOCK_TRAILER_LEN;
        let mut start = 0;
        let is_trailer = |start: usize, at: usize| {
            bytes[at] <= 2
                && block_trailer(&bytes[start..at], bytes[at])[..]
                    == bytes[at..at + BLOCK_TRAILER_LEN]
        };
        while let Some(at) = (start..=end).find(|&at| is_trailer(start, at)) {
            codecs.insert(bytes[at]);
            start = at + BLOCK_TRAILER_LEN;
        }
    }
    codecs
}

/// A `u64` counter value.
fn counter(n: u64) -> Option<Vec<u8>> {
    Some(n.to_le_bytes().to_vec())
}

/// `state[key]` as a counter (absent: 0).
fn counter_in(state: &State, key: &[u8]) -> u64 {
    state
        .get(key)
        .cloned()
        .flatten()
        .map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()))
}

#[test]
fn a_format_4_database_opens_with_its_keyspaces_and_upgrades() {
    // Read a day after it was written: the short TTLs have expired, the long ones have not.
    let now = V4_WRITTEN_AT + DAY;
    let dir = siftdb_tests::temp_dir();
    copy_fixture("format-v4", dir.path());
    assert_eq!(table_versions(dir.path()), vec![2]);
    let recorded = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(recorded.contains("format_version=4"), "{recorded}");
    // The old tables were built with every codec, and hold blocks stored with each.
    let properties = table_properties(dir.path());
    let codecs: BTreeSet<&str> = properties.iter().map(|p| p.compression.as_str()).collect();
    assert_eq!(codecs, BTreeSet::from(["lz4", "none", "zstd"]));
    assert_eq!(stored_codecs(dir.path()), BTreeSet::from([0, 1, 2]));

    let options = Options {
        keyspaces: vec![("events".to_string(), v4_events_options())],
        ..v4_options(now)
    };
    let db = Db::open(dir.path(), options.clone()).unwrap();
    assert_eq!(db.keyspace_names(), vec!["default", "events"]);
    let mut state = v4_state(now);
    check_v4(&db, &state);
    // The tree of the old build is read as it was: its two L0 tables and deeper levels in both
    // keyspaces, with partitioned tables (recovery may add an L0 table of the WAL tail).
    assert!(table_versions(dir.path()).contains(&2));
    let events = db.keyspace("events").unwrap();
    for levels in [db.level_info(), events.level_info()] {
        assert!(levels[0].files >= 2);
        assert!(levels[1..].iter().any(|l| l.files > 0));
        assert!(levels.iter().any(|l| l.partitioned_tables > 0));
    }
    let upgraded = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(
        upgraded.contains(&format!("format_version={}", siftdb::FORMAT_VERSION)),
        "{upgraded}"
    );

    // This build's writes on the old data: range deletes over old tables and the WAL tail, merge
    // operands on old values (expired ones count as absent), in single writes and in a batch.
    let (default, ev_state) = &mut state;
    db.delete_range(b"v4:01000", b"v4:01500").unwrap();
    for k in 1000..1500u32 {
        default.insert(format!("v4:{k:05}").into_bytes(), None);
    }
    for i in 0..25u64 {
        let key = format!("count:{i:02}").into_bytes();
        db.merge(&key, 5u64.to_le_bytes()).unwrap();
        if i % 2 == 0 {
            db.merge(&key, i.to_le_bytes()).unwrap();
        }
        let sum = counter_in(default, &key) + 5 + if i % 2 == 0 { i } else { 0 };
        default.insert(key, counter(sum));
    }
    let mut batch = siftdb::WriteBatch::new();
    batch.delete_range_in(&events, b"ev:00100", b"ev:00300");
    for k in 100..300u32 {
        ev_state.insert(format!("ev:{k:05}").into_bytes(), None);
    }
    for i in 0..12u64 {
        let key = format!("ev-count:{i:02}").into_bytes();
        batch.merge_in(&events, &key, 1u64.to_le_bytes());
        let sum = counter_in(ev_state, &key) + 1;
        ev_state.insert(key, counter(sum));
    }
    batch.put("new:batch", "n");
    default.insert(b"new:batch".to_vec(), Some(b"n".to_vec()));
    db.write(batch).unwrap();
    for i in 0..300u32 {
        db.put(format!("new:{i:04}"), "n").unwrap();
        default.insert(format!("new:{i:04}").into_bytes(), Some(b"n".to_vec()));
    }
    db.put("v4:01200", "revived").unwrap();
    default.insert(b"v4:01200".to_vec(), Some(b"revived".to_vec()));
    events.put("ev:00150", "revived").unwrap();
    ev_state.insert(b"ev:00150".to_vec(), Some(b"revived".to_vec()));
    events
        .put_with_ttl(b"ev-new:minute", b"m", Duration::from_secs(60))
        .unwrap();
    ev_state.insert(b"ev-new:minute".to_vec(), Some(b"m".to_vec()));
    events
        .put_with_ttl(b"ev-new:zero", b"z", Duration::ZERO)
        .unwrap();
    ev_state.insert(b"ev-new:zero".to_vec(), None);
    check_v4(&db, &state);

    // A full compaction of both keyspaces rewrites every table in this build's format, folding
    // the operands into the old values and dropping what expired.
    db.compact_range(None, None).unwrap();
    events.compact_range(None, None).unwrap();
    assert_eq!(
        table_versions(dir.path()),
        vec![siftdb_sstable::format::TABLE_FORMAT_VERSION]
    );
    check_v4(&db, &state);
    drop((db, events));
    let db = Db::open(dir.path(), options).unwrap();
    check_v4(&db, &state);
    let upgraded = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(
        upgraded.contains(&format!("format_version={}", siftdb::FORMAT_VERSION)),
        "{upgraded}"
    );
    assert!(
        upgraded.contains("merge_operator=siftdb.u64add"),
        "{upgraded}"
    );
}

#[test]
fn a_format_4_database_opens_with_its_recorded_keyspace_options_when_every_ttl_has_expired() {
    // Two centuries after it was written every value with a TTL has expired, also those that
    // hid an older value.
    let now = V4_WRITTEN_AT + 200 * 365 * DAY;
    let dir = siftdb_tests::temp_dir();
    copy_fixture("format-v4", dir.path());
    // "events" opens with the options recorded by the old build (L0 compacts at 2 tables: a
    // compaction of the old tables starts at once, beside the reads).
    let db = Db::open(dir.path(), v4_options(now)).unwrap();
    let state = v4_state(now);
    check_v4(&db, &state);
    db.wait_for_compaction().unwrap();
    check_v4(&db, &state);
    db.compact_range(None, None).unwrap();
    db.keyspace("events")
        .unwrap()
        .compact_range(None, None)
        .unwrap();
    check_v4(&db, &state);
    assert_eq!(
        table_versions(dir.path()),
        vec![siftdb_sstable::format::TABLE_FORMAT_VERSION]
    );
    // The recorded prefix extractor of "events" was rebuilt: its new tables carry its filter.
    let extractors: BTreeSet<String> = table_properties(dir.path())
        .into_iter()
        .map(|p| p.prefix_extractor)
        .collect();
    assert_eq!(
        extractors,
        BTreeSet::from([String::new(), "fixed:3".to_string()])
    );
}

/// What `format-v5`'s default keyspace holds for `v5:<k>` (see its README).
fn v5_expected(k: u32) -> Option<Vec<u8>> {
    if k % 100 == 7 {
        Some(format!("c-{k}").into_bytes())
    } else if (1000..1500).contains(&k) {
        None
    } else if k < 2000 {
        Some(format!("a-{k}").into_bytes())
    } else {
        Some(format!("b-{k}").into_bytes())
    }
}

fn v5_options() -> Options {
    Options {
        write_buffer_size: 32 << 10,
        merge_operator: Some(Arc::new(siftdb::merge::U64Add)),
        ..Options::default()
    }
}

fn check_v5(db: &Db) {
    for k in 0..3000u32 {
        let got = db.get(format!("v5:{k:05}")).unwrap();
        assert_eq!(got, v5_expected(k), "v5:{k:05}");
    }
    for i in 0..10u64 {
        let got = db.get(format!("count:{i:02}")).unwrap();
        assert_eq!(
            got,
            Some((2 * (i + 1) + 100).to_le_bytes().to_vec()),
            "count:{i:02}"
        );
    }
    let second = db.keyspace("second").unwrap();
    let keys: Vec<Vec<u8>> = second.iter().map(|r| r.unwrap().0).collect();
    let want: Vec<Vec<u8>> = (10..250)
        .map(|k| format!("s:{k:04}").into_bytes())
        .collect();
    assert_eq!(keys, want);
    assert_eq!(second.get(b"s:0123").unwrap(), Some(b"s-123".to_vec()));
}

#[test]
fn a_format_5_database_with_a_lagging_keyspace_wal_opens_and_upgrades() {
    let dir = siftdb_tests::temp_dir();
    copy_fixture("format-v5", dir.path());
    let recorded = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(recorded.contains("format_version=5"), "{recorded}");
    // Its manifest records no WAL starts: replay checks the first record the old way, and
    // "second"'s writes in the oldest WAL are all there.
    let db = Db::open(dir.path(), v5_options()).unwrap();
    check_v5(&db);
    let upgraded = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(
        upgraded.contains(&format!("format_version={}", siftdb::FORMAT_VERSION)),
        "{upgraded}"
    );
    // This build's writes, a full compaction, and a reopen (now with WAL starts recorded).
    db.put(b"after", b"upgrade").unwrap();
    db.keyspace("second")
        .unwrap()
        .put(b"s:9999", b"late")
        .unwrap();
    db.compact_range(None, None).unwrap();
    drop(db);
    let db = Db::open(dir.path(), v5_options()).unwrap();
    assert_eq!(db.get(b"after").unwrap(), Some(b"upgrade".to_vec()));
    db.keyspace("second").unwrap().delete(b"s:9999").unwrap();
    check_v5(&db);
}

/// `value(tag, k)` of the `format-v6` fixture (see its README).
fn v6_value(tag: &str, k: u32) -> Vec<u8> {
    format!("{tag}-{k}-{}", tag.repeat(40)).into_bytes()
}

/// Every pair `format-v6`'s default keyspace holds, in key order (see its README).
fn v6_default_pairs() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut pairs = BTreeMap::new();
    for k in 0..4000u32 {
        let value = if k % 100 == 7 {
            Some(v6_value("c", k))
        } else if k == 11 || k % 50 == 3 || (1000..1500).contains(&k) {
            None
        } else if k % 1000 == 500 {
            Some(v6_value("d", k))
        } else if k < 2000 {
            Some(v6_value("a", k))
        } else {
            Some(v6_value("b", k))
        };
        if let Some(v) = value {
            pairs.insert(format!("f6:{k:05}").into_bytes(), v);
        }
    }
    for i in 0..10u64 {
        let total = 2 * (i + 1) + 100;
        pairs.insert(
            format!("count:{i:02}").into_bytes(),
            total.to_le_bytes().to_vec(),
        );
        pairs.insert(
            format!("ttl:{i:02}").into_bytes(),
            format!("t-{i}").into_bytes(),
        );
    }
    pairs.into_iter().collect()
}

/// Every pair `format-v6`'s `"zstd"` keyspace holds, in key order.
fn v6_zstd_pairs() -> Vec<(Vec<u8>, Vec<u8>)> {
    (10..350u32)
        .map(|k| {
            let tag = if k < 100 { "y" } else { "z" };
            (format!("z:{k:04}").into_bytes(), v6_value(tag, k))
        })
        .collect()
}

fn v6_options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        merge_operator: Some(Arc::new(siftdb::merge::U64Add)),
        prefix_extractor: Some(siftdb::FixedPrefix::shared(3)),
        ..Options::default()
    }
}

fn all_pairs(
    iter: impl Iterator<Item = siftdb::Result<(Vec<u8>, Vec<u8>)>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    iter.map(|r| r.unwrap()).collect()
}

fn check_v6(db: &Db) {
    assert_same_pairs("default", &all_pairs(db.iter()), &v6_default_pairs());
    let zstd = db.keyspace("zstd").unwrap();
    assert_same_pairs("zstd", &all_pairs(zstd.iter()), &v6_zstd_pairs());
    // Point lookups go through the filters (the iterator does not).
    for (key, value) in v6_default_pairs().iter().step_by(7) {
        assert_eq!(db.get(key).unwrap().as_ref(), Some(value), "{key:?}");
    }
    for k in [11u32, 53, 1003, 1250, 3953] {
        assert_eq!(db.get(format!("f6:{k:05}")).unwrap(), None, "f6:{k:05}");
    }
    assert_eq!(zstd.get(b"z:0005").unwrap(), None);
    assert_eq!(zstd.get(b"z:0042").unwrap(), Some(v6_value("y", 42)));
}

#[test]
fn a_format_6_database_opens_with_every_kind_of_entry_and_upgrades() {
    opens_with_every_kind_of_entry_and_upgrades("format-v6", 6);
}

/// The same writes by the last build of format 7 (before manifest field 13): its WALs and
/// manifest carry sync marks.
#[test]
fn a_format_7_database_opens_with_every_kind_of_entry_and_upgrades() {
    opens_with_every_kind_of_entry_and_upgrades("format-v7", 7);
}

/// The same writes by the last build of format 8 (before blob files).
#[test]
fn a_format_8_database_opens_with_every_kind_of_entry_and_upgrades() {
    opens_with_every_kind_of_entry_and_upgrades("format-v8", 8);
}

/// The same writes by the last build of format 9 (before ingested tables).
#[test]
fn a_format_9_database_opens_with_every_kind_of_entry_and_upgrades() {
    opens_with_every_kind_of_entry_and_upgrades("format-v9", 9);
}

/// The same writes by the last build of format 10 (before log data in the WAL).
#[test]
fn a_format_10_database_opens_with_every_kind_of_entry_and_upgrades() {
    opens_with_every_kind_of_entry_and_upgrades("format-v10", 10);
}

/// Opens fixture `name` (of database format `format`, written by the generator in
/// `format-v6/README.md`), checks every pair it holds, upgrades it, writes, compacts and
/// reopens it.
fn opens_with_every_kind_of_entry_and_upgrades(name: &str, format: u32) {
    let dir = siftdb_tests::temp_dir();
    copy_fixture(name, dir.path());
    let recorded = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(
        recorded.contains(&format!("format_version={format}")),
        "{recorded}"
    );
    // What the fixture's tables are made of, as its README says.
    let properties = table_properties(dir.path());
    let filters: BTreeSet<String> = properties.iter().map(|p| p.filter_kind.clone()).collect();
    assert_eq!(
        filters,
        BTreeSet::from(["blocked_bloom".to_string(), "ribbon".to_string()])
    );
    assert!(properties.iter().any(|p| p.index_partitions > 0));
    // 0: the blocks compression would not shrink by an eighth, and the uncompressed index blocks.
    assert_eq!(stored_codecs(dir.path()), BTreeSet::from([0, 1, 2]));
    assert_eq!(table_versions(dir.path()), vec![3]);

    let db = Db::open(dir.path(), v6_options()).unwrap();
    check_v6(&db);
    let upgraded = std::fs::read_to_string(dir.path().join("OPTIONS")).unwrap();
    assert!(
        upgraded.contains(&format!("format_version={}", siftdb::FORMAT_VERSION)),
        "{upgraded}"
    );
    // This build's writes, a full compaction, and a reopen.
    db.put(b"after", b"upgrade").unwrap();
    db.keyspace("zstd")
        .unwrap()
        .put(b"z:9999", b"late")
        .unwrap();
    db.compact_range(None, None).unwrap();
    drop(db);
    let db = Db::open(dir.path(), v6_options()).unwrap();
    assert_eq!(db.get(b"after").unwrap(), Some(b"upgrade".to_vec()));
    db.delete(b"after").unwrap();
    let zstd = db.keyspace("zstd").unwrap();
    assert_eq!(zstd.get(b"z:9999").unwrap(), Some(b"late".to_vec()));
    zstd.delete(b"z:9999").unwrap();
    check_v6(&db);
}
