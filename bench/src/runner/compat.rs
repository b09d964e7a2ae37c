//! siftdb through its rust-rocksdb API (crate `siftdb-rocksdb`) behind [`Engine`]: the same
//! siftdb options as `--engine=siftdb` ([`siftdb_options`]), so that the two runs differ only by
//! the compatibility layer, whose cost this engine measures. One keyspace (the default column
//! family).

use std::path::Path;

use siftdb_rocksdb::{IteratorMode, Options, WriteBatch, WriteOptions, DB};

use super::args::Config;
use super::engine::{BatchOp, Engine, SeekOutcome, WritePressure};
use super::error::{Error, Result};
use super::settings::{siftdb_options, SettingRows};
use super::sift::siftdb_rows;

/// The engine's name on the command line.
pub const NAME: &str = "siftdb-rocksdb";

/// siftdb through `siftdb-rocksdb` behind [`Engine`].
pub struct CompatEngine {
    db: DB,
    write_options: WriteOptions,
    /// `--pin_slice`: lookups through `get_pinned`, values not copied.
    pin_slice: bool,
}

impl From<siftdb_rocksdb::Error> for Error {
    fn from(e: siftdb_rocksdb::Error) -> Error {
        Error::new(format!("siftdb-rocksdb: {e}"))
    }
}

impl CompatEngine {
    /// Opens (or creates) the database in `dir` with siftdb's options for `config`.
    pub fn open(dir: &Path, config: &Config) -> Result<CompatEngine> {
        let mut options = Options::from_siftdb(siftdb_options(config));
        options.create_if_missing(true);
        let db = DB::open(&options, dir)?;
        let mut write_options = WriteOptions::default();
        write_options.set_sync(config.sync);
        Ok(CompatEngine {
            db,
            write_options,
            pin_slice: config.pin_slice,
        })
    }

    /// Refuses a keyspace other than the default one.
    fn only_default(ks: usize) -> Result<()> {
        match ks {
            0 => Ok(()),
            _ => Err(Error::new(format!(
                "{NAME} runs one keyspace, not keyspace {ks}"
            ))),
        }
    }
}

impl Engine for CompatEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn setting_rows(&self, config: &Config) -> SettingRows {
        siftdb_rows(config)
    }

    fn put(&self, ks: usize, key: &[u8], value: &[u8]) -> Result<()> {
        Self::only_default(ks)?;
        Ok(self.db.put_opt(key, value, &self.write_options)?)
    }

    fn get(&self, ks: usize, key: &[u8], buf: &mut Vec<u8>) -> Result<bool> {
        Self::only_default(ks)?;
        // rust-rocksdb's zero-copy read; without --pin_slice the value is copied out, as the
        // RocksDB peer does.
        let Some(value) = self.db.get_pinned(key)? else {
            return Ok(false);
        };
        if !self.pin_slice {
            buf.clear();
            buf.extend_from_slice(&value);
        }
        Ok(true)
    }

    fn multi_get(&self, ks: usize, keys: &[&[u8]]) -> Result<u64> {
        Self::only_default(ks)?;
        let mut found = 0;
        for answer in self.db.multi_get(keys) {
            found += u64::from(answer?.is_some());
        }
        Ok(found)
    }

    fn delete(&self, ks: usize, key: &[u8]) -> Result<()> {
        Self::only_default(ks)?;
        Ok(self.db.delete_opt(key, &self.write_options)?)
    }

    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        let mut batch = WriteBatch::default();
        for op in ops {
            match *op {
                BatchOp::Put(ks, key, value) => {
                    Self::only_default(ks)?;
                    batch.put(key, value);
                }
                BatchOp::Delete(ks, key) => {
                    Self::only_default(ks)?;
                    batch.delete(key);
                }
            }
        }
        Ok(self.db.write_opt(batch, &self.write_options)?)
    }

    fn seek_read(&self, ks: usize, key: &[u8], nexts: usize) -> Result<SeekOutcome> {
        Self::only_default(ks)?;
        let mut iter = self.db.raw_iterator();
        iter.seek(key);
        let mut outcome = SeekOutcome::default();
        while iter.valid() && outcome.entries <= nexts as u64 {
            if outcome.entries == 0 {
                outcome.found = iter.key() == Some(key);
            }
            std::hint::black_box(iter.value());
            outcome.entries += 1;
            iter.next();
        }
        iter.status()?;
        Ok(outcome)
    }

    fn prefix_scan(&self, prefix: &[u8]) -> Result<u64> {
        let mut entries = 0;
        for item in self.db.prefix_iterator(prefix) {
            let (key, _) = item?;
            if !key.starts_with(prefix) {
                break; // without a prefix extractor the iterator runs on past the prefix
            }
            entries += 1;
        }
        Ok(entries)
    }

    fn scan(&self, reverse: bool) -> Result<u64> {
        let mode = if reverse {
            IteratorMode::End
        } else {
            IteratorMode::Start
        };
        let mut entries = 0;
        for item in self.db.iterator(mode) {
            std::hint::black_box(item?);
            entries += 1;
        }
        Ok(entries)
    }

    fn flush(&self) -> Result<()> {
        self.db.flush()?;
        Ok(self.db.as_siftdb().wait_for_compaction()?)
    }

    fn prepare_for_misses(&self) -> Result<()> {
        // As for siftdb's own API: the same database underneath, brought to the same state.
        self.db.as_siftdb().build_filter_index()?;
        Ok(())
    }

    fn write_pressure(&self) -> WritePressure {
        let property = |name: &str| self.db.as_siftdb().property(name)?.parse::<u64>().ok();
        WritePressure {
            l0_files: property("siftdb.num-files-at-level0"),
            pending_compaction_bytes: property("siftdb.estimate-pending-compaction-bytes"),
        }
    }

    fn compact(&self) -> Result<()> {
        self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
        Ok(())
    }

    fn stats(&self) -> Option<siftdb::Stats> {
        Some(self.db.as_siftdb().stats())
    }

    fn shape(&self) -> Option<String> {
        self.db.as_siftdb().property("siftdb.levels")
    }

    fn close(&self) -> Result<()> {
        Ok(self.db.as_siftdb().close()?)
    }
}
