//! The engines under test behind one small trait, so RocksDB and fjall (cargo feature `peers`,
//! module `peers`) run the same workloads as siftdb.

use std::path::Path;

use siftdb::{Db, FilterAllocation, FixedPrefix, Options, Stats, WriteBatch, WriteOptions};

use super::args::{AllocationArg, Config};
use super::error::{Error, Result};

/// One operation of a write batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Store a value.
    Put(&'a [u8], &'a [u8]),
    /// Remove a key.
    Delete(&'a [u8]),
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
    /// Whether [`Stats::levels`] holds one row per level (siftdb) or a single row for the whole
    /// tree (peers that count filter outcomes globally).
    fn filter_stats_by_level(&self) -> bool {
        true
    }
    /// Stores `value` under `key`.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Looks `key` up into `buf`; returns whether it was found.
    fn get(&self, key: &[u8], buf: &mut Vec<u8>) -> Result<bool>;
    /// Removes `key`.
    fn delete(&self, key: &[u8]) -> Result<()>;
    /// Applies `ops` atomically.
    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()>;
    /// Seeks to the first key `>= key` and reads it and up to `nexts` entries after it.
    fn seek_read(&self, key: &[u8], nexts: usize) -> Result<SeekOutcome>;
    /// Reads every entry under `prefix`; returns how many there were.
    fn prefix_scan(&self, prefix: &[u8]) -> Result<u64>;
    /// Reads every entry (key and value), in ascending key order or, with `reverse`,
    /// descending; returns how many there were.
    fn scan(&self, reverse: bool) -> Result<u64>;
    /// Flushes memtables to disk and waits, including for the compactions the flush triggers.
    fn flush(&self) -> Result<()>;
    /// Compacts everything down to the bottom level and waits.
    fn compact(&self) -> Result<()>;
    /// The statistics, in siftdb's vocabulary (peers map what they can; `None`: none).
    fn stats(&self) -> Option<Stats>;
    /// A text table of the tree's shape (siftdb: the `siftdb.levels` property).
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

/// Opens engine `name` in `dir` with the options of `config`.
pub fn open_engine(name: &str, dir: &Path, config: &Config) -> Result<Box<dyn Engine>> {
    check_engines(&[name.to_string()])?;
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
        bloom_before_level: config.filter.bloom_before_level,
        filter_allocation: match config.filter.allocation {
            AllocationArg::Monkey => FilterAllocation::Monkey,
            AllocationArg::Uniform => FilterAllocation::Uniform,
        },
        prefix_extractor: Some(FixedPrefix::shared(config.prefix_size)),
        block_cache_capacity: config.cache_size.unwrap_or(defaults.block_cache_capacity),
        write_buffer_size: config
            .write_buffer_size
            .unwrap_or(defaults.write_buffer_size),
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
        error_if_exists: false,
        create_if_missing: !config.use_existing_db,
        read_mode: if config.mmap_read {
            siftdb::ReadMode::Mmap
        } else {
            siftdb::ReadMode::Pread
        },
        compression_per_level: config.compression.clone(),
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
    write_options: WriteOptions,
}

impl SiftEngine {
    /// Opens (or creates) the database in `dir`.
    pub fn open(dir: &Path, config: &Config) -> Result<SiftEngine> {
        Ok(SiftEngine {
            db: Db::open(dir, siftdb_options(config))?,
            write_options: WriteOptions { sync: config.sync },
        })
    }

    /// The database handle.
    pub fn db(&self) -> &Db {
        &self.db
    }
}

impl Engine for SiftEngine {
    fn name(&self) -> &'static str {
        "siftdb"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(key, value);
        Ok(self.db.write_opt(batch, &self.write_options)?)
    }

    fn get(&self, key: &[u8], buf: &mut Vec<u8>) -> Result<bool> {
        Ok(self.db.get_into(key, buf)?)
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete(key);
        Ok(self.db.write_opt(batch, &self.write_options)?)
    }

    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        let mut batch = WriteBatch::new();
        for op in ops {
            match *op {
                BatchOp::Put(key, value) => batch.put(key, value),
                BatchOp::Delete(key) => batch.delete(key),
            };
        }
        Ok(self.db.write_opt(batch, &self.write_options)?)
    }

    fn seek_read(&self, key: &[u8], nexts: usize) -> Result<SeekOutcome> {
        // The raw iterator, as for RocksDB: keys and values are read in place, not copied.
        let mut iter = self.db.raw_iter();
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

    fn scan(&self, reverse: bool) -> Result<u64> {
        let mut iter = self.db.raw_iter();
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

    fn prefix_scan(&self, prefix: &[u8]) -> Result<u64> {
        let mut entries = 0;
        for item in self.db.prefix_iter(prefix) {
            item?;
            entries += 1;
        }
        Ok(entries)
    }

    fn flush(&self) -> Result<()> {
        self.db.flush()?;
        // Let background compaction finish too, so the next phase meets a settled tree.
        Ok(self.db.wait_for_compaction()?)
    }

    fn compact(&self) -> Result<()> {
        Ok(self.db.compact_range(None, None)?)
    }

    fn stats(&self) -> Option<Stats> {
        Some(self.db.stats())
    }

    fn shape(&self) -> Option<String> {
        self.db.property("siftdb.levels")
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
