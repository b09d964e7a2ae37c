//! The engines under test behind one small trait, so RocksDB and fjall (cargo feature `peers`,
//! module `peers`) run the same workloads as siftdb.
//!
//! Keyed operations name a keyspace by number (`--keyspaces`; see [`keyspace_name`]). siftdb
//! maps them onto its keyspaces; the peers have one and the runner refuses `--keyspaces` above 1
//! for them ([`check_keyspaces`]), so they only ever see keyspace 0.

use std::path::Path;

use siftdb::{
    Db, FilterAllocation, FixedPrefix, Keyspace, KeyspaceOptions, Options, ReadOptions, Stats,
    WriteBatch, WriteOptions,
};

use super::args::{AllocationArg, Config};
use super::error::{Error, Result};

/// One operation of a write batch; the first field is the keyspace number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Store a value.
    Put(usize, &'a [u8], &'a [u8]),
    /// Remove a key.
    Delete(usize, &'a [u8]),
}

/// What one seek read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeekOutcome {
    /// The first key at or after the target was the target itself.
    pub found: bool,
    /// Entries read (the first one included).
    pub entries: u64,
}

/// A key-value engine as the workloads see it. Implementations are shared by the worker threads.
pub trait Engine: Send + Sync {
    /// The engine's name (`siftdb`, `rocksdb`, `fjall`).
    fn name(&self) -> &'static str;
    /// How the run's settings were mapped onto this engine, for the header (`None`: siftdb's own
    /// options, printed by the header itself).
    fn settings(&self) -> Option<String> {
        None
    }
    /// What the engine was given, one row per setting of the run's settings table
    /// ([`super::settings::ROWS`]); siftdb's own by default.
    fn setting_rows(&self, config: &Config) -> super::settings::SettingRows {
        super::settings::siftdb_rows(config)
    }
    /// Whether [`Stats::levels`] holds one row per level (siftdb) or a single row for the whole
    /// tree (peers that count filter outcomes globally).
    fn filter_stats_by_level(&self) -> bool {
        true
    }
    /// Stores `value` under `key` in keyspace `ks`.
    fn put(&self, ks: usize, key: &[u8], value: &[u8]) -> Result<()>;
    /// Looks `key` up in keyspace `ks` into `buf`; returns whether it was found.
    fn get(&self, ks: usize, key: &[u8], buf: &mut Vec<u8>) -> Result<bool>;
    /// Looks up every key of `keys`, all of keyspace `ks`, in one batched call where the engine
    /// has one (siftdb's `multi_get`, RocksDB's `MultiGet`); returns how many were found. Only
    /// the count comes back: the workloads check found counts, so no value is copied out for
    /// them (an engine that hands values back has them dropped unread).
    fn multi_get(&self, ks: usize, keys: &[&[u8]]) -> Result<u64>;
    /// Removes `key` from keyspace `ks`.
    fn delete(&self, ks: usize, key: &[u8]) -> Result<()>;
    /// Applies `ops` atomically.
    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()>;
    /// Whether the engine removes a key range with one operation ([`Engine::delete_range`]).
    fn can_delete_range(&self) -> bool {
        false
    }
    /// Removes the keys in `[start, end)` of keyspace `ks` (one range tombstone).
    fn delete_range(&self, ks: usize, start: &[u8], end: &[u8]) -> Result<()> {
        let _ = (ks, start, end);
        Err(Error::new(format!("{} has no range deletes", self.name())))
    }
    /// Whether the engine has merge operators ([`Engine::merge`]).
    fn can_merge(&self) -> bool {
        false
    }
    /// Merges `operand` (an 8-byte little-endian u64) into `key` of keyspace `ks` with the
    /// `U64Add` operator.
    fn merge(&self, ks: usize, key: &[u8], operand: &[u8]) -> Result<()> {
        let _ = (ks, key, operand);
        Err(Error::new(format!(
            "{} has no merge operators",
            self.name()
        )))
    }
    /// Seeks keyspace `ks` to the first key `>= key` and reads it and up to `nexts` entries
    /// after it.
    fn seek_read(&self, ks: usize, key: &[u8], nexts: usize) -> Result<SeekOutcome>;
    /// Counts the entries of keyspace `ks` in `[start, end)` (one bounded iterator, read to
    /// its end).
    fn range_count(&self, ks: usize, start: &[u8], end: &[u8]) -> Result<u64> {
        let _ = (ks, start, end);
        Err(Error::new(format!(
            "{} has no bounded range scan in this runner",
            self.name()
        )))
    }
    /// Reads every entry under `prefix` in every keyspace (the keys of one prefix are spread
    /// over all of them); returns how many there were.
    fn prefix_scan(&self, prefix: &[u8]) -> Result<u64>;
    /// Reads every entry (key and value) of every keyspace, one keyspace after the other, each
    /// in ascending key order or, with `reverse`, descending; returns how many there were.
    fn scan(&self, reverse: bool) -> Result<u64>;
    /// Counts the keys of every keyspace, untimed (a checkpoint's source); unlike [`scan`]
    /// it need not leave its blocks in the block cache.
    ///
    /// [`scan`]: Engine::scan
    fn count_keys(&self) -> Result<u64> {
        self.scan(false)
    }
    /// Flushes memtables to disk and waits, including for the compactions the flush triggers.
    fn flush(&self) -> Result<()>;
    /// Compacts everything down to the bottom level and waits.
    fn compact(&self) -> Result<()>;
    /// Whether the engine takes checkpoints ([`Engine::checkpoint`]).
    fn can_checkpoint(&self) -> bool {
        false
    }
    /// Writes a checkpoint — a consistent copy that opens as a database — into `dir`, which
    /// must not exist yet.
    fn checkpoint(&self, dir: &Path) -> Result<()> {
        Err(Error::new(format!(
            "{} has no checkpoints (cannot write {})",
            self.name(),
            dir.display()
        )))
    }
    /// Opens the checkpoint in `dir` as a database of this engine and counts its keys (every
    /// keyspace, by iterating); closes it again.
    fn checkpoint_keys(&self, dir: &Path) -> Result<u64> {
        Err(Error::new(format!(
            "{} has no checkpoints (cannot open {})",
            self.name(),
            dir.display()
        )))
    }
    /// The statistics, in siftdb's vocabulary (peers map what they can; `None`: none).
    fn stats(&self) -> Option<Stats>;
    /// A text table of the tree's shape (siftdb: the `siftdb.levels` property; with several
    /// keyspaces the `siftdb.keyspaces` table, then each keyspace's `siftdb.levels`).
    fn shape(&self) -> Option<String>;
    /// Closes the engine (background work stops).
    fn close(&self) -> Result<()>;
}

/// Engines this build can run.
#[cfg(not(feature = "peers"))]
pub const KNOWN_ENGINES: &[&str] = &["siftdb"];
/// Engines this build can run.
#[cfg(feature = "peers")]
pub const KNOWN_ENGINES: &[&str] = &["siftdb", "rocksdb", "fjall"];

/// Engines that arrive with the `peers` feature.
pub const PEER_ENGINES: [&str; 2] = ["rocksdb", "fjall"];

/// Checks that every name in `names` is an engine this build runs.
pub fn check_engines(names: &[String]) -> Result<()> {
    for name in names {
        if KNOWN_ENGINES.contains(&name.as_str()) {
            continue;
        }
        if PEER_ENGINES.contains(&name.as_str()) {
            return Err(Error::new(format!(
                "engine '{name}' is not in this build: the peers (rocksdb, fjall) need the cargo \
                 feature `peers` (`cargo run --release -p siftdb-bench --features peers`); \
                 available: {}",
                KNOWN_ENGINES.join(",")
            )));
        }
        return Err(Error::new(format!(
            "unknown engine '{name}' (available: {})",
            KNOWN_ENGINES.join(",")
        )));
    }
    Ok(())
}

/// Checks that every engine of `names` can spread the keys over `keyspaces` keyspaces: siftdb
/// can; the peers run one keyspace (RocksDB's column families and fjall's keyspaces are not
/// mapped), and are refused rather than quietly given every key in one.
pub fn check_keyspaces(names: &[String], keyspaces: usize) -> Result<()> {
    if keyspaces <= 1 {
        return Ok(());
    }
    match names.iter().find(|n| PEER_ENGINES.contains(&n.as_str())) {
        Some(peer) => Err(Error::new(format!(
            "--keyspaces={keyspaces}: only siftdb spreads keys over keyspaces; {peer} runs one \
             (its column families / keyspaces are not mapped): run it with --keyspaces=1"
        ))),
        None => Ok(()),
    }
}

/// The name of keyspace number `ks`: `"default"` (the one `Db`'s own methods use), then `ks1`,
/// `ks2`, ...
pub fn keyspace_name(ks: usize) -> String {
    if ks == 0 {
        siftdb::DEFAULT_KEYSPACE.to_string()
    } else {
        format!("ks{ks}")
    }
}

/// Opens engine `name` in `dir` with the options of `config`.
pub fn open_engine(name: &str, dir: &Path, config: &Config) -> Result<Box<dyn Engine>> {
    check_engines(&[name.to_string()])?;
    check_keyspaces(&[name.to_string()], config.keyspaces)?;
    let context = |e: Error| e.context(format!("cannot open {name} in {}", dir.display()));
    #[cfg(feature = "peers")]
    match name {
        "rocksdb" => {
            let engine = super::peers::rocks::RocksEngine::open(dir, config).map_err(context)?;
            return Ok(Box::new(engine));
        }
        "fjall" => {
            let engine = super::peers::fjall::FjallEngine::open(dir, config).map_err(context)?;
            return Ok(Box::new(engine));
        }
        _ => {}
    }
    let engine = SiftEngine::open(dir, config).map_err(context)?;
    Ok(Box::new(engine))
}

/// The siftdb options `config` describes.
pub fn siftdb_options(config: &Config) -> Options {
    let defaults = Options::default();
    Options {
        filter_bits_per_key: config.filter.bits_per_key,
        optimize_filters_for_hits: config.optimize_filters_for_hits,
        memtable_prefix_bloom_size_ratio: config.memtable_bloom_size_ratio,
        memtable_whole_key_filtering: config.memtable_whole_key_filtering,
        bloom_before_level: config.filter.bloom_before_level,
        deep_filter_kind: if config.filter.policy == super::args::FilterPolicyArg::Fuse {
            siftdb::FilterKind::BinaryFuse
        } else {
            siftdb::FilterKind::Ribbon
        },
        filter_allocation: match config.filter.allocation {
            AllocationArg::Monkey => FilterAllocation::Monkey,
            AllocationArg::Uniform => FilterAllocation::Uniform,
            AllocationArg::Adaptive => FilterAllocation::Adaptive,
        },
        prefix_extractor: Some(FixedPrefix::shared(config.prefix_size)),
        block_cache_capacity: config.cache_size.unwrap_or(defaults.block_cache_capacity),
        block_cache_admission: match config.cache_admission {
            super::args::AdmissionArg::All => siftdb::CacheAdmission::All,
            super::args::AdmissionArg::SecondSighting => siftdb::CacheAdmission::SecondSighting,
            super::args::AdmissionArg::TinyLfu => siftdb::CacheAdmission::TinyLfu,
        },
        false_positive_memo_bytes: config
            .false_positive_memo_bytes
            .unwrap_or(defaults.false_positive_memo_bytes),
        range_filter_bits_per_key: config
            .range_filter_bits_per_key
            .unwrap_or(defaults.range_filter_bits_per_key),
        write_buffer_size: config
            .write_buffer_size
            .unwrap_or(defaults.write_buffer_size),
        db_write_buffer_size: config.db_write_buffer_size,
        target_file_size_base: config
            .tree
            .target_file_size_base
            .unwrap_or(defaults.target_file_size_base),
        max_bytes_for_level_base: config
            .tree
            .max_bytes_for_level_base
            .unwrap_or(defaults.max_bytes_for_level_base),
        max_bytes_for_level_multiplier: config
            .tree
            .max_bytes_for_level_multiplier
            .unwrap_or(defaults.max_bytes_for_level_multiplier),
        level0_file_num_compaction_trigger: config
            .tree
            .level0_file_num_compaction_trigger
            .unwrap_or(defaults.level0_file_num_compaction_trigger),
        max_background_compactions: config
            .tree
            .max_background_compactions
            .unwrap_or(defaults.max_background_compactions),
        compaction_pri: match config.tree.compaction_pri {
            super::args::CompactionPriArg::MinOverlappingRatio => {
                siftdb::CompactionPri::MinOverlappingRatio
            }
            super::args::CompactionPriArg::RoundRobin => siftdb::CompactionPri::RoundRobin,
        },
        error_if_exists: false,
        create_if_missing: !config.use_existing_db,
        read_mode: if config.mmap_read {
            siftdb::ReadMode::Mmap
        } else {
            siftdb::ReadMode::Pread
        },
        compression_per_level: config.compression.clone(),
        // mergerandom's counters (`db_bench`'s uint64add); RocksDB gets the same operator.
        merge_operator: Some(std::sync::Arc::new(siftdb::merge::U64Add)),
        partition_above: match config.partition_index_and_filters {
            Some(true) => Some(0),
            Some(false) => None,
            None => defaults.partition_above,
        },
        ..defaults
    }
}

/// The per-level codecs as text: `lz4 on every level`, `none on L0-L1, lz4 from L2`.
pub fn compression_text(levels: &[siftdb::Compression]) -> String {
    match levels {
        [] => "none on every level".to_string(),
        [one] => format!("{} on every level", one.name()),
        _ => {
            let mut parts = Vec::new();
            let mut start = 0;
            for i in 1..=levels.len() {
                if i == levels.len() || levels[i] != levels[start] {
                    let name = levels[start].name();
                    parts.push(if i == levels.len() {
                        format!("{name} from L{start}")
                    } else if i - 1 == start {
                        format!("{name} on L{start}")
                    } else {
                        format!("{name} on L{start}-L{}", i - 1)
                    });
                    start = i;
                }
            }
            parts.join(", ")
        }
    }
}

/// siftdb behind [`Engine`].
#[derive(Debug, Clone)]
pub struct SiftEngine {
    db: Db,
    /// The `--keyspaces` keyspaces, index = keyspace number (0 = "default").
    keyspaces: Vec<Keyspace>,
    /// The options the database was opened with (a checkpoint is opened with them too).
    options: Options,
    write_options: WriteOptions,
}

impl SiftEngine {
    /// Opens (or creates) the database in `dir`, and its `--keyspaces` keyspaces.
    pub fn open(dir: &Path, config: &Config) -> Result<SiftEngine> {
        let mut options = siftdb_options(config);
        // Every keyspace runs with the default keyspace's options — also the ones an earlier
        // run created (--use_existing_db), which would otherwise reopen with what they recorded
        // then.
        let tree = KeyspaceOptions::from(&options);
        options.keyspaces = (1..config.keyspaces)
            .map(|ks| (keyspace_name(ks), tree.clone()))
            .collect();
        let db = Db::open(dir, options.clone())?;
        let keyspaces = open_keyspaces(&db, &tree, config)?;
        Ok(SiftEngine {
            db,
            keyspaces,
            options,
            write_options: WriteOptions { sync: config.sync },
        })
    }

    /// The database handle.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Keyspace number `ks`.
    fn keyspace(&self, ks: usize) -> Result<&Keyspace> {
        self.keyspaces.get(ks).ok_or_else(|| {
            Error::new(format!(
                "internal error: keyspace {ks} of {}",
                self.keyspaces.len()
            ))
        })
    }

    /// Adds a put into keyspace `ks` to `batch`. The default keyspace's goes in unnamed (as
    /// `Db::put` writes it), so a one-keyspace run writes the very batches it wrote before
    /// keyspaces existed.
    fn add_put(&self, batch: &mut WriteBatch, ks: usize, key: &[u8], value: &[u8]) -> Result<()> {
        match ks {
            0 => batch.put(key, value),
            _ => batch.put_in(self.keyspace(ks)?, key, value),
        };
        Ok(())
    }

    /// Adds a delete from keyspace `ks` to `batch` (the default keyspace's unnamed, as above).
    fn add_delete(&self, batch: &mut WriteBatch, ks: usize, key: &[u8]) -> Result<()> {
        match ks {
            0 => batch.delete(key),
            _ => batch.delete_in(self.keyspace(ks)?, key),
        };
        Ok(())
    }

    fn write(&self, batch: WriteBatch) -> Result<()> {
        Ok(self.db.write_opt(batch, &self.write_options)?)
    }
}

/// The keyspaces `"default"`, `ks1`, ... of `db` (`config.keyspaces` of them): the existing ones
/// opened, the others created with `tree`. An existing database (`--use_existing_db`) must have
/// exactly these: with fewer or more, the keys would not be where the workloads look for them.
fn open_keyspaces(db: &Db, tree: &KeyspaceOptions, config: &Config) -> Result<Vec<Keyspace>> {
    let names: Vec<String> = (0..config.keyspaces).map(keyspace_name).collect();
    let existing = db.keyspace_names();
    if config.use_existing_db {
        let (mut want, mut have) = (names.clone(), existing.clone());
        want.sort();
        have.sort();
        if want != have {
            return Err(Error::new(format!(
                "--use_existing_db with --keyspaces={}: the database has keyspaces {}, not {}",
                config.keyspaces,
                existing.join(","),
                names.join(",")
            )));
        }
    }
    names
        .iter()
        .map(|name| {
            let keyspace = if existing.contains(name) {
                db.keyspace(name)
            } else {
                db.create_keyspace(name, tree.clone())
            };
            keyspace.map_err(|e| Error::from(e).context(format!("keyspace {name}")))
        })
        .collect()
}

/// Reads every entry of `iter` (key and value, in place), forwards or backwards; returns how
/// many there were.
fn read_all(mut iter: siftdb::RawIterator, reverse: bool) -> Result<u64> {
    if reverse {
        iter.seek_to_last();
    } else {
        iter.seek_to_first();
    }
    let mut entries = 0;
    while iter.valid() {
        std::hint::black_box((iter.key(), iter.value()));
        entries += 1;
        if reverse {
            iter.prev();
        } else {
            iter.next();
        }
    }
    iter.status()?;
    Ok(entries)
}

/// Counts the keys of every keyspace of `db` by iterating, with `read`.
fn count_all_keys(db: &Db, read: &ReadOptions) -> Result<u64> {
    let mut keys = 0;
    for name in db.keyspace_names() {
        for item in db.keyspace(&name)?.iter_opt(read) {
            item?;
            keys += 1;
        }
    }
    Ok(keys)
}

impl Engine for SiftEngine {
    fn name(&self) -> &'static str {
        "siftdb"
    }

    fn put(&self, ks: usize, key: &[u8], value: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        self.add_put(&mut batch, ks, key, value)?;
        self.write(batch)
    }

    fn get(&self, ks: usize, key: &[u8], buf: &mut Vec<u8>) -> Result<bool> {
        Ok(self.keyspace(ks)?.get_into(key, buf)?)
    }

    fn multi_get(&self, ks: usize, keys: &[&[u8]]) -> Result<u64> {
        // One view for all keys. Each found value comes back as its own `Vec` (there is no
        // variant that reuses buffers or only reports found): counted and dropped.
        let mut found = 0;
        for answer in self.keyspace(ks)?.multi_get(keys) {
            found += u64::from(answer?.is_some());
        }
        Ok(found)
    }

    fn delete(&self, ks: usize, key: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        self.add_delete(&mut batch, ks, key)?;
        self.write(batch)
    }

    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        // One batch across keyspaces: atomic as a whole, as a one-keyspace batch is.
        let mut batch = WriteBatch::new();
        for op in ops {
            match *op {
                BatchOp::Put(ks, key, value) => self.add_put(&mut batch, ks, key, value)?,
                BatchOp::Delete(ks, key) => self.add_delete(&mut batch, ks, key)?,
            }
        }
        self.write(batch)
    }

    fn can_delete_range(&self) -> bool {
        true
    }

    fn delete_range(&self, ks: usize, start: &[u8], end: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        match ks {
            0 => batch.delete_range(start, end),
            _ => batch.delete_range_in(self.keyspace(ks)?, start, end),
        };
        self.write(batch)
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn merge(&self, ks: usize, key: &[u8], operand: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        match ks {
            0 => batch.merge(key, operand),
            _ => batch.merge_in(self.keyspace(ks)?, key, operand),
        };
        self.write(batch)
    }

    fn seek_read(&self, ks: usize, key: &[u8], nexts: usize) -> Result<SeekOutcome> {
        // The raw iterator, as for RocksDB: keys and values are read in place, not copied.
        let mut iter = self.keyspace(ks)?.raw_iter();
        iter.seek(key);
        let mut outcome = SeekOutcome::default();
        while iter.valid() && outcome.entries <= nexts as u64 {
            if outcome.entries == 0 {
                outcome.found = iter.key() == key;
            }
            std::hint::black_box(iter.value());
            outcome.entries += 1;
            iter.next();
        }
        iter.status()?;
        Ok(outcome)
    }

    fn range_count(&self, ks: usize, start: &[u8], end: &[u8]) -> Result<u64> {
        let mut entries = 0;
        for item in self.keyspace(ks)?.range(start..end) {
            let (_, value) = item?;
            std::hint::black_box(value);
            entries += 1;
        }
        Ok(entries)
    }

    fn scan(&self, reverse: bool) -> Result<u64> {
        let mut entries = 0;
        for keyspace in &self.keyspaces {
            entries += read_all(keyspace.raw_iter(), reverse)?;
        }
        Ok(entries)
    }

    fn prefix_scan(&self, prefix: &[u8]) -> Result<u64> {
        let mut entries = 0;
        for keyspace in &self.keyspaces {
            for item in keyspace.prefix_iter(prefix) {
                item?;
                entries += 1;
            }
        }
        Ok(entries)
    }

    fn count_keys(&self) -> Result<u64> {
        // Not through the block cache: the count must not change what the next workload meets.
        count_all_keys(
            &self.db,
            &ReadOptions {
                fill_cache: false,
                ..Default::default()
            },
        )
    }

    fn flush(&self) -> Result<()> {
        // `Db::flush` flushes the default keyspace only.
        for keyspace in &self.keyspaces {
            keyspace.flush()?;
        }
        // Let background compaction finish too, so the next phase meets a settled tree.
        Ok(self.db.wait_for_compaction()?)
    }

    fn compact(&self) -> Result<()> {
        for keyspace in &self.keyspaces {
            keyspace.compact_range(None, None)?;
        }
        Ok(())
    }

    fn stats(&self) -> Option<Stats> {
        Some(self.db.stats())
    }

    fn shape(&self) -> Option<String> {
        if self.keyspaces.len() == 1 {
            return self.db.property("siftdb.levels");
        }
        // The keyspaces table, then each keyspace's tree.
        let mut out = self.db.property("siftdb.keyspaces")?;
        for keyspace in &self.keyspaces {
            let levels = keyspace.property("siftdb.levels")?;
            out.push_str(&format!("keyspace {}:\n{levels}", keyspace.name()));
        }
        Some(out)
    }

    fn can_checkpoint(&self) -> bool {
        true
    }

    fn checkpoint(&self, dir: &Path) -> Result<()> {
        Ok(self.db.checkpoint(dir)?)
    }

    fn checkpoint_keys(&self, dir: &Path) -> Result<u64> {
        let options = Options {
            create_if_missing: false,
            ..self.options.clone()
        };
        let copy = Db::open(dir, options)?;
        let keys = count_all_keys(&copy, &ReadOptions::default());
        copy.close()?;
        keys
    }

    fn close(&self) -> Result<()> {
        Ok(self.db.close()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_peer_engines_are_clear_errors() {
        assert!(check_engines(&["siftdb".to_string()]).is_ok());
        if cfg!(feature = "peers") {
            assert!(check_engines(&["rocksdb".to_string(), "fjall".to_string()]).is_ok());
        } else {
            let peer = check_engines(&["rocksdb".to_string()]).unwrap_err();
            assert!(peer.to_string().contains("peers"), "{peer}");
        }
        let unknown = check_engines(&["leveldb".to_string()]).unwrap_err();
        assert!(unknown.to_string().contains("unknown engine"), "{unknown}");
    }

    #[test]
    fn peers_refuse_several_keyspaces() {
        let engines = ["siftdb".to_string(), "rocksdb".to_string()];
        assert!(check_keyspaces(&engines, 1).is_ok());
        assert!(check_keyspaces(&engines[..1], 4).is_ok());
        let refused = check_keyspaces(&engines, 4).unwrap_err();
        assert!(refused.to_string().contains("rocksdb"), "{refused}");
        assert_eq!(keyspace_name(0), "default");
        assert_eq!(keyspace_name(3), "ks3");
    }

    fn config(flags: &[&str]) -> Config {
        use clap::Parser;
        let args = crate::runner::Args::try_parse_from(
            std::iter::once("siftdb-bench").chain(flags.iter().copied()),
        )
        .unwrap();
        Config::from_args(&args).unwrap()
    }

    #[test]
    fn keyspaces_keep_their_keys_apart_and_checkpoints_hold_them_all() {
        let dir = tempfile::tempdir().unwrap();
        let engine = SiftEngine::open(&dir.path().join("db"), &config(&["--keyspaces=3"])).unwrap();
        assert_eq!(engine.db().keyspace_names(), ["default", "ks1", "ks2"]);
        engine.put(0, b"a", b"0").unwrap();
        engine.put(2, b"b", b"2").unwrap();
        engine
            .write_batch(&[BatchOp::Put(1, b"c", b"1"), BatchOp::Put(2, b"d", b"2")])
            .unwrap();
        let mut buf = Vec::new();
        assert!(engine.get(2, b"b", &mut buf).unwrap() && buf == b"2");
        // A batch reads its own keyspace only: "b" is in ks2, "a" in default, "x" nowhere.
        let keys: [&[u8]; 4] = [b"b", b"a", b"d", b"x"];
        assert_eq!(engine.multi_get(2, &keys).unwrap(), 2);
        assert_eq!(engine.multi_get(0, &keys[..2]).unwrap(), 1);
        assert_eq!(engine.multi_get(1, &[]).unwrap(), 0);
        assert!(!engine.get(0, b"b", &mut buf).unwrap());
        assert_eq!(engine.db().get("b").unwrap(), None);
        assert_eq!(engine.scan(true).unwrap(), 4);
        engine.flush().unwrap();
        engine.delete(1, b"c").unwrap();
        assert_eq!(engine.count_keys().unwrap(), 3);

        let copy = dir.path().join("copy");
        engine.checkpoint(&copy).unwrap();
        assert_eq!(engine.checkpoint_keys(&copy).unwrap(), 3);
        assert!(
            engine.checkpoint(&copy).is_err(),
            "the directory is not empty"
        );
        engine.close().unwrap();
    }
}

#[cfg(test)]
mod compression_text_tests {
    use super::compression_text;
    use siftdb::Compression::{Lz4, None as Off, Zstd};

    #[test]
    fn per_level_codecs_read_as_text() {
        assert_eq!(compression_text(&[Lz4]), "lz4 on every level");
        assert_eq!(
            compression_text(&[Off, Off, Lz4]),
            "none on L0-L1, lz4 from L2"
        );
        assert_eq!(
            compression_text(&[Off, Lz4, Zstd]),
            "none on L0, lz4 on L1, zstd from L2"
        );
    }
}

/// The shared memtable budget as the settings lines print it (`--db_write_buffer_size`).
pub fn db_write_buffer_text(bytes: usize) -> String {
    match bytes {
        0 => "no shared memtable budget".to_string(),
        n => format!(
            "all memtables at most {}",
            crate::runner::report::human_bytes(n as u64)
        ),
    }
}
