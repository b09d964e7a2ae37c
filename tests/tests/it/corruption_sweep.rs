//! Corruption sweep: single-bit flips and truncations spread over every file of a database
//! (WAL, tables, blob files, manifest, CURRENT, OPTIONS), once with the default keyspace leveled and once
//! FIFO (the second keyspace is universal in both). Each must give a clear error or, for a WAL tail,
//! a clean point-in-time recovery. Never a wrong value, never a panic. The database has two
//! keyspaces (a quarter of the keys in "second", written in cross-keyspace batches, its tables
//! filtered by binary fuse filters, its values kept in blob files), so flips land
//! in keyspace records of the WAL and the manifest too; a key found in the wrong keyspace, or a
//! keyspace that vanished, counts as wrong. A tenth of the values expire (in an hour). Before
//! them, *ghost* keys are written and removed by range deletes, and *counters* are built from
//! merge operands (`U64Add`), all flushed to tables: a ghost that reappears, or a counter with
//! another value, counts as wrong.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use siftdb::{CompactionStyle, Db, Options};
use siftdb_tests::FaultFs;

const KEYS: u32 = 4000;

fn options(fs: &FaultFs, style: CompactionStyle) -> Options {
    Options {
        // The default keyspace's style: leveled, or FIFO (under its limit: every table stays
        // in L0, each with its `creation_time`).
        compaction_style: style,
        write_buffer_size: 32 << 10,
        fs: Arc::new(fs.clone()),
        // Every table compressed, so flips land in compressed blocks too.
        compression: siftdb::Compression::Lz4,
        compression_per_level: Vec::new(),
        // And partitioned indexes and filters: small blocks and a low threshold, so that every
        // flushed table is partitioned, whether or not a compaction has merged any yet.
        block_size: 512,
        partition_above: Some(256),
        metadata_block_size: 256,
        merge_operator: Some(Arc::new(siftdb::merge::U64Add)),
        // Range filter blocks in the default keyspace's tables, read by the bounded scans.
        range_filter_bits_per_key: 8.0,
        // No whole-key filter in the bottom level's tables (their properties say why), so
        // flips land in tables a lookup reads without a filter too.
        optimize_filters_for_hits: true,
        ..Options::default()
    }
}

/// Ghost keys: written, then removed by range deletes (never readable).
const GHOSTS: u32 = 400;
/// Counters, each the sum of `COUNTER_MERGES` operands of 1.
const COUNTERS: u32 = 40;
const COUNTER_MERGES: u64 = 5;

/// Ghost `i`: between the sweep's keys, so the range deletes span the tables written after them
/// (which are then compacted with them, not moved down unchanged).
fn ghost(i: u32) -> Vec<u8> {
    format!("key{:06}g", i * (KEYS / GHOSTS)).into_bytes()
}

fn counter(i: u32) -> Vec<u8> {
    format!("count{i:04}").into_bytes()
}

/// Writes the ghosts (then range-deletes them, in several ranges, which also span sweep keys
/// written later — newer, so not deleted) and the counters, and flushes: they are in tables
/// before the sweep's keys are written, so a WAL's point-in-time recovery never takes them back.
fn write_ghosts_and_counters(db: &Db) {
    for i in 0..GHOSTS {
        db.put(ghost(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    for round in 0..COUNTER_MERGES {
        for i in 0..COUNTERS {
            db.merge(counter(i), 1u64.to_le_bytes()).unwrap();
        }
        if round == 2 {
            db.flush().unwrap();
        }
    }
    for part in 0..4 {
        let (a, b) = (part * GHOSTS / 4, (part + 1) * GHOSTS / 4);
        db.delete_range(ghost(a), ghost(b)).unwrap();
    }
    db.flush().unwrap();
}

/// Whether an entry of a scan of the default keyspace is a counter with its right value (true),
/// a counter with another (false), or not a counter (`None`).
fn counter_entry(k: &[u8], v: &[u8]) -> Option<bool> {
    k.starts_with(b"count")
        .then(|| v == COUNTER_MERGES.to_le_bytes().as_slice())
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i:06}-payload").into_bytes()
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// The keyspace key `i` lives in: "second" for every fourth key (so "default" holds as many as
/// before keyspaces existed, enough for its tables to be compacted and partitioned).
fn in_second(i: u32) -> bool {
    i % 4 == 1
}

/// A database with flushed tables and a WAL holding the newest writes.
fn base(style: CompactionStyle) -> FaultFs {
    let fs = FaultFs::new();
    let db = Db::open("/db", options(&fs, style)).unwrap();
    write_ghosts_and_counters(&db);
    // "second" filters every level with binary fuse filters, so flips land in fuse blocks too
    // (the default keyspace has blocked bloom and ribbon ones), and compacts in the universal
    // style (its levels are whole sorted runs, merged several at a time).
    let second = db
        .create_keyspace(
            "second",
            siftdb::KeyspaceOptions {
                bloom_before_level: 0,
                deep_filter_kind: siftdb::FilterKind::BinaryFuse,
                // The default keyspace's small memtables and partitioned tables.
                write_buffer_size: 32 << 10,
                compression: siftdb::Compression::Lz4,
                block_size: 512,
                partition_above: Some(256),
                metadata_block_size: 256,
                compaction_style: siftdb::CompactionStyle::Universal,
                // Its values in blob files (every one qualifies), so flips land in blob files
                // and in the blob indexes of its tables too.
                enable_blob_files: true,
                min_blob_size: 16,
                blob_file_size: 8 << 10,
                ..Default::default()
            },
        )
        .unwrap();
    // Pairs of consecutive keys in one batch, often one in each keyspace; every fifth pair as
    // expiring values (an hour: live during the sweep), so flips land in expiry times too.
    let hour = std::time::Duration::from_secs(3600);
    for pair in (0..KEYS).step_by(2) {
        if pair % 10 == 0 {
            for i in pair..(pair + 2).min(KEYS) {
                if in_second(i) {
                    second.put_with_ttl(key(i), value(i), hour).unwrap();
                } else {
                    db.put_with_ttl(key(i), value(i), hour).unwrap();
                }
            }
            continue;
        }
        let mut batch = siftdb::WriteBatch::new();
        for i in pair..(pair + 2).min(KEYS) {
            if in_second(i) {
                batch.put_in(&second, key(i), value(i));
            } else {
                batch.put(key(i), value(i));
            }
        }
        db.write(batch).unwrap();
    }
    // Memtables of 32 KiB: most writes are in (compressed) tables, the newest in the WAL.
    let stats = db.stats();
    assert!(
        stats.flushes > 0 && stats.table_bytes_uncompressed > stats.flush_bytes,
        "the sweep's tables are not compressed"
    );
    assert!(
        second
            .property("siftdb.levels")
            .unwrap_or_default()
            .contains("binary_fuse"),
        "no fuse filter in the sweep's tables: {}",
        second.property("siftdb.levels").unwrap_or_default()
    );
    assert!(
        stats.blob_files > 0,
        "no blob file in the sweep's database: {stats:?}"
    );
    if style == CompactionStyle::Fifo {
        let levels = db.level_info();
        assert!(
            levels[0].files > 1 && levels[1..].iter().all(|l| l.files == 0),
            "a FIFO tree is L0 only: {}",
            db.property("siftdb.levels").unwrap_or_default()
        );
    }
    assert!(
        db.level_info().iter().any(|l| l.partitioned_tables > 0),
        "no table of the sweep is partitioned: {}",
        db.property("siftdb.levels").unwrap_or_default()
    );
    drop(db);
    fs
}

#[derive(Default, Debug)]
struct Tally {
    cases: u64,
    detected: u64,
    wrong: u64,
    clean: u64,
}

/// One item of a scan.
type Entry = siftdb::Result<(Vec<u8>, Vec<u8>)>;

/// Opens the damaged copy and reads everything; counts what happened.
fn check(fs: &FaultFs, style: CompactionStyle, damaged_wal: bool, tally: &mut Tally) {
    tally.cases += 1;
    let db = match Db::open("/db", options(fs, style)) {
        Ok(db) => db,
        Err(_) => {
            tally.detected += 1;
            return;
        }
    };
    // A keyspace the damage made vanish is created empty here: its keys count as missing.
    let second = match db.keyspace("second") {
        Ok(ks) => ks,
        Err(_) => {
            tally.detected += 1;
            return;
        }
    };
    let mut saw_error = false;
    let mut missing = 0u32;
    let mut first_missing = None;
    // Which keys a get found: a multi_get must not miss one of them.
    let mut found_by_get = vec![false; KEYS as usize];
    for i in 0..KEYS {
        let got = if in_second(i) {
            second.get(key(i))
        } else {
            db.get(key(i))
        };
        match got {
            Ok(Some(v)) if v == value(i) => found_by_get[i as usize] = true,
            Ok(Some(_)) => tally.wrong += 1,
            Ok(None) => {
                missing += 1;
                first_missing.get_or_insert(i);
            }
            Err(e) => {
                assert!(e.is_corruption(), "non-corruption error: {e}");
                saw_error = true;
            }
        }
    }
    // Ghosts stay gone; counters read their sum (or an error).
    for i in 0..GHOSTS {
        match db.get(ghost(i)) {
            Ok(None) => {}
            Ok(Some(_)) => tally.wrong += 1,
            Err(e) => {
                assert!(e.is_corruption(), "non-corruption error: {e}");
                saw_error = true;
            }
        }
    }
    for i in 0..COUNTERS {
        match db.get(counter(i)) {
            Ok(Some(v)) if v == COUNTER_MERGES.to_le_bytes() => {}
            Ok(_) => tally.wrong += 1,
            Err(e) => {
                assert!(e.is_corruption(), "non-corruption error: {e}");
                saw_error = true;
            }
        }
    }
    // multi_get over the same keys, 64 per call in each keyspace: every answer is the written
    // value, absent where the get found nothing too, or a corruption error — never another
    // value, never a key lost that a get found.
    for of_second in [false, true] {
        let keys: Vec<u32> = (0..KEYS).filter(|&i| in_second(i) == of_second).collect();
        for chunk in keys.chunks(64) {
            let names: Vec<Vec<u8>> = chunk.iter().map(|&i| key(i)).collect();
            let got = if of_second {
                second.multi_get(&names)
            } else {
                db.multi_get(&names)
            };
            for (&i, answer) in chunk.iter().zip(got) {
                match answer {
                    Ok(Some(v)) if v == value(i) => {}
                    Ok(Some(_)) => tally.wrong += 1,
                    Ok(None) if found_by_get[i as usize] => tally.wrong += 1,
                    Ok(None) => {}
                    Err(e) => {
                        assert!(e.is_corruption(), "non-corruption error: {e}");
                        saw_error = true;
                    }
                }
            }
        }
    }
    // Bounded scans of one key ask the range filters: a key a get found is never skipped.
    for i in (0..KEYS).filter(|&i| !in_second(i)).step_by(40) {
        let k = key(i);
        let mut got = db.range(k.clone()..=k.clone());
        match got.next() {
            Some(Ok((gk, v))) if gk == k && v == value(i) => {}
            Some(Ok(_)) => tally.wrong += 1,
            None if found_by_get[i as usize] => tally.wrong += 1,
            None => {}
            Some(Err(e)) => {
                assert!(e.is_corruption(), "non-corruption error: {e}");
                saw_error = true;
            }
        }
    }
    // Both scan directions read every block again: each entry they yield is a written key with
    // its value, in order; damage ends a scan with an error, never a wrong entry.
    for (reverse, of_second) in [(false, false), (true, false), (false, true), (true, true)] {
        let it = if of_second { second.iter() } else { db.iter() };
        let entries: Box<dyn Iterator<Item = Entry>> = if reverse {
            Box::new(it.rev())
        } else {
            Box::new(it)
        };
        let mut previous: Option<Vec<u8>> = None;
        for item in entries {
            match item {
                Ok((k, v)) if !of_second && counter_entry(&k, &v).is_some() => {
                    if counter_entry(&k, &v) == Some(false) {
                        tally.wrong += 1;
                    }
                    previous = Some(k);
                }
                Ok((k, v)) => {
                    let i: Option<u32> = std::str::from_utf8(&k)
                        .ok()
                        .and_then(|s| s.strip_prefix("key"))
                        .and_then(|n| n.parse().ok());
                    let in_order =
                        previous
                            .as_ref()
                            .is_none_or(|p| if reverse { *p > k } else { *p < k });
                    let in_its_keyspace = i.is_some_and(|i| in_second(i) == of_second);
                    if i.is_none_or(|i| v != value(i)) || !in_order || !in_its_keyspace {
                        tally.wrong += 1;
                    }
                    previous = Some(k);
                }
                Err(e) => {
                    assert!(e.is_corruption(), "non-corruption error: {e}");
                    saw_error = true;
                }
            }
        }
    }
    // Keys may be missing only as a WAL's point-in-time recovery: a suffix of the write order.
    let suffix = first_missing.is_some_and(|f| KEYS - f == missing);
    if missing > 0 && !(damaged_wal && suffix) {
        if std::env::var("SIFTDB_SWEEP_DEBUG").is_ok() {
            eprintln!("missing {missing} from {first_missing:?}, wal {damaged_wal}");
            for p in fs.paths() {
                eprintln!("  {} {:?}", p.display(), fs.file_len(&p));
            }
        }
        tally.wrong += u64::from(missing);
    }
    if saw_error || missing > 0 {
        tally.detected += 1;
    } else {
        tally.clean += 1; // the flipped bit was never read (e.g. padding) or was redundant
    }
}

#[test]
fn bit_flips_and_truncations_never_give_wrong_values() {
    let flips: u64 = siftdb_tests::env_count("SIFTDB_CORRUPTION_FLIPS", 5000);
    sweep(CompactionStyle::Level, flips);
}

/// The same sweep over a database whose default keyspace compacts FIFO: all its tables in L0.
#[test]
fn bit_flips_and_truncations_under_fifo_never_give_wrong_values() {
    let flips: u64 = siftdb_tests::env_count("SIFTDB_CORRUPTION_FLIPS", 5000) / 4;
    sweep(CompactionStyle::Fifo, flips);
}

/// `flips` damaged copies of the base database (default keyspace compacting in `style`), each
/// opened and read back, then every WAL emptied once.
fn sweep(style: CompactionStyle, flips: u64) {
    let original = base(style);
    let files: Vec<PathBuf> = original
        .paths()
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "LOCK"))
        .collect();
    if std::env::var("SIFTDB_SWEEP_DEBUG").is_ok() {
        for p in &files {
            eprintln!("base {} {:?}", p.display(), original.file_len(p));
        }
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let mut tally = Tally::default();
    for n in 0..flips {
        let fs = original.deep_clone();
        let path = &files[n as usize % files.len()];
        let len = fs.file_len(path).unwrap_or(0);
        if len == 0 {
            continue;
        }
        let is_wal = path.extension().is_some_and(|e| e == "log");
        if n % 10 == 9 {
            // Truncation instead of a flip.
            let keep = rng.gen_range(0..len);
            let bytes = {
                let full = siftdb::fs::FileSystem::read(&fs, path).unwrap();
                full[..keep].to_vec()
            };
            truncate(&fs, path, &bytes);
        } else {
            let offset = rng.gen_range(0..len);
            assert!(fs.flip_bit(path, offset, rng.gen_range(0..8)));
        }
        let before = tally.wrong;
        check(&fs, style, is_wal, &mut tally);
        if tally.wrong > before && std::env::var("SIFTDB_SWEEP_DEBUG").is_ok() {
            eprintln!("wrong after damaging {} (case {n})", path.display());
        }
    }
    // Every WAL emptied, once each: an older one holding only the writes of a keyspace that
    // another keyspace's flushes have passed must be found out, not replayed around.
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
    {
        let fs = original.deep_clone();
        truncate(&fs, path, &[]);
        let before = tally.wrong;
        check(&fs, style, true, &mut tally);
        if tally.wrong > before && std::env::var("SIFTDB_SWEEP_DEBUG").is_ok() {
            eprintln!("wrong after emptying {}", path.display());
        }
    }
    println!(
        "bit flips: {}, detected: {}, clean (bit not read): {}, wrong values: {}, panics: 0",
        tally.cases, tally.detected, tally.clean, tally.wrong
    );
    assert_eq!(tally.wrong, 0, "{tally:?}");
}

fn truncate(fs: &FaultFs, path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut f = siftdb::fs::FileSystem::create(fs, path).unwrap();
    f.write_all(bytes).unwrap();
    f.sync().unwrap();
}
