//! siftdb behind [`Engine`]: its keyspaces for `--keyspaces`, its options from the run's
//! settings ([`siftdb_options`]), and the settings table's rows for it ([`siftdb_rows`]).

use std::path::Path;

use siftdb::{
    Db, Keyspace, KeyspaceOptions, Options, ReadOptions, Stats, TransactionMode,
    TransactionOptions, WriteBatch, WriteOptions,
};

use super::args::{AllocationArg, Config, TransactionConfig};
use super::engine::{
    bumped, keyspace_name, BatchOp, BulkLoader, Engine, SeekOutcome, WritePressure,
};
use super::error::{Error, Result};
use super::settings::{
    hits_text, memtable_bloom_text, siftdb_options, sync_text, tree_shape, SettingRows,
};
use super::text::{compression_text, filter_layout, human_bytes, open_files_text};

/// siftdb behind [`Engine`].
#[derive(Debug, Clone)]
pub struct SiftEngine {
    db: Db,
    /// The `--keyspaces` keyspaces, index = keyspace number (0 = "default").
    keyspaces: Vec<Keyspace>,
    /// The options the database was opened with (a checkpoint is opened with them too).
    options: Options,
    write_options: WriteOptions,
    /// `--pin_slice`: lookups through `get_pinned`, values not copied.
    pin_slice: bool,
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
            pin_slice: config.pin_slice,
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

/// What siftdb is given for `config`.
pub fn siftdb_rows(config: &Config) -> SettingRows {
    let o = siftdb_options(config);
    let allocation = match config.filter.allocation {
        AllocationArg::Monkey => "Monkey",
        AllocationArg::Uniform => "uniform",
        AllocationArg::Adaptive => "adaptive",
    };
    vec![
        (
            "filters",
            format!(
                "{} bits/key average ({allocation}); {}{}",
                config.filter.bits_per_key,
                filter_layout(config),
                hits_text(config)
            ),
        ),
        (
            "block cache",
            format!(
                "{} LRU, {}; filter+index blocks in it, L0's pinned",
                human_bytes(o.block_cache_capacity as u64),
                match o.block_cache_admission {
                    siftdb::CacheAdmission::All => "every block admitted",
                    siftdb::CacheAdmission::SecondSighting => {
                        "data blocks admitted on their second sighting"
                    }
                    siftdb::CacheAdmission::TinyLfu => "data blocks admitted by TinyLFU",
                    _ => "data blocks admitted by another policy",
                }
            ),
        ),
        ("prefix filter", format!("fixed:{}", config.prefix_size)),
        (
            "memtable",
            format!(
                "{} x{}{}",
                human_bytes(o.write_buffer_size as u64),
                o.max_write_buffer_number,
                memtable_bloom_text(config)
            ),
        ),
        ("tree shape", tree_shape(config)),
        (
            "open files",
            format!(
                "{} (table cache); manifest rolled over at {}",
                open_files_text(o.max_open_files),
                human_bytes(o.max_manifest_file_size)
            ),
        ),
        (
            "compression",
            compression_text(&config.compression)
                + &super::settings::compression_threads_text(o.compression_parallel_threads),
        ),
        (
            "blob files",
            super::settings::blob_text(config, &blob_gc_text(config)),
        ),
        (
            "table reads",
            if config.mmap_read { "mmap" } else { "pread" }.to_string(),
        ),
        (
            "point lookups",
            super::settings::pin_slice_text(config, "get_pinned", "get_into, copied"),
        ),
        ("sync (--sync)", sync_text(config, "fdatasync of the WAL")),
        ("writeback", super::settings::writeback_text(&o)),
        ("L0 slowdown", super::settings::slowdown_text(&o)),
        ("statistics", "counters only (no timers)".to_string()),
        (
            "background work",
            format!(
                "1 flush + {} compaction threads, each compaction in up to {} key ranges, \
                 compaction readahead {}, outputs {}",
                o.compaction_threads(),
                o.max_subcompactions,
                super::text::human_bytes(o.compaction_readahead_size as u64),
                if o.level_compaction_dynamic_file_size {
                    "cut at grandparent boundaries"
                } else {
                    "cut at the target size"
                }
            ),
        ),
        ("rate limiter", super::settings::rate_limiter_text(&o)),
        ("transactions", transactions_text(config)),
        (
            "compaction style",
            super::settings::compaction_style_text(&o),
        ),
    ]
}

/// The reads for update and writes of one randomtransaction transaction, each key in its
/// keyspace (`None`: the default one).
fn transaction_body(
    txn: &mut siftdb::Transaction,
    keys: &[(Option<&Keyspace>, &[u8])],
    fresh: &[u8],
) -> siftdb::Result<()> {
    for &(keyspace, key) in keys {
        match keyspace {
            None => {
                let old = txn.get_for_update(key)?;
                txn.put(key, bumped(old.as_deref(), fresh))?;
            }
            Some(keyspace) => {
                let old = txn.get_for_update_in(keyspace, key)?;
                txn.put_in(keyspace, key, bumped(old.as_deref(), fresh))?;
            }
        }
    }
    Ok(())
}

/// The settings table's "transactions" row for siftdb.
fn transactions_text(config: &Config) -> String {
    super::settings::transactions_text(
        config,
        || {
            "optimistic: snapshot at begin; keys written and read with get_for_update validated \
             at commit"
                .to_string()
        },
        |ms| {
            format!(
                "pessimistic: point locks, lock timeout {ms} ms, deadlock detection; reads of the \
                 newest committed values (no snapshot)"
            )
        },
    )
}

/// Whether `e` is siftdb aborting a transaction (a conflict, a lock timeout, a deadlock).
fn is_abort(e: &siftdb::Error) -> bool {
    matches!(
        e,
        siftdb::Error::Conflict | siftdb::Error::LockTimeout | siftdb::Error::Deadlock
    )
}

impl Engine for SiftEngine {
    fn name(&self) -> &'static str {
        "siftdb"
    }

    fn read_modify_write_txn(
        &self,
        txn: &TransactionConfig,
        keys: &[(usize, &[u8])],
        fresh: &[u8],
    ) -> Result<bool> {
        let opts = TransactionOptions {
            mode: if txn.pessimistic {
                TransactionMode::Pessimistic
            } else {
                TransactionMode::Optimistic
            },
            lock_timeout: txn.lock_timeout,
            ..TransactionOptions::default()
        };
        let keys = keys
            .iter()
            .map(|&(ks, key)| Ok(((ks > 0).then(|| self.keyspace(ks)).transpose()?, key)))
            .collect::<Result<Vec<_>>>()?;
        let mut transaction = self.db.transaction_opt(&opts);
        let result = transaction_body(&mut transaction, &keys, fresh)
            .and_then(|()| transaction.commit_opt(&self.write_options));
        match result {
            Ok(()) => Ok(true),
            Err(e) if is_abort(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn setting_rows(&self, config: &Config) -> SettingRows {
        siftdb_rows(config)
    }

    fn can_bulk_load(&self) -> bool {
        true
    }

    fn bulk_loader<'a>(
        &'a self,
        ks: usize,
        staging: &Path,
        file_bytes: u64,
    ) -> Result<Option<Box<dyn BulkLoader + 'a>>> {
        Ok(Some(Box::new(SiftLoader {
            keyspace: self.keyspace(ks)?,
            options: &self.options,
            prefix: staging.join(format!("ks{ks}-")),
            file_bytes,
            writer: None,
            files: Vec::new(),
        })))
    }

    fn put(&self, ks: usize, key: &[u8], value: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        self.add_put(&mut batch, ks, key, value)?;
        self.write(batch)
    }

    fn get(&self, ks: usize, key: &[u8], buf: &mut Vec<u8>) -> Result<bool> {
        if self.pin_slice {
            return Ok(self.keyspace(ks)?.get_pinned(key)?.is_some());
        }
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
        self.db.wait_for_compaction()?;
        Ok(())
    }

    fn prepare_for_misses(&self) -> Result<()> {
        // The index covers every table at once, where the background thread would build it
        // after the phase's first window of misses.
        self.db.build_filter_index()?;
        Ok(())
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

    fn write_pressure(&self) -> WritePressure {
        let sum = |name: &str| -> Option<u64> {
            self.keyspaces
                .iter()
                .map(|k| k.property(name)?.parse::<u64>().ok())
                .sum()
        };
        WritePressure {
            l0_files: sum("siftdb.num-files-at-level0"),
            pending_compaction_bytes: sum("siftdb.estimate-pending-compaction-bytes"),
        }
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

/// siftdb's blob garbage collection as the settings table shows it.
fn blob_gc_text(config: &Config) -> String {
    let b = &config.blob;
    if !b.gc {
        return "no garbage collection".to_string();
    }
    format!(
        "compactions relocate the oldest {:.0} % of the blob files at least {:.0} % garbage, \
         forced at {:.0} % garbage",
        b.gc_age_cutoff * 100.0,
        b.gc_min_garbage_ratio * 100.0,
        b.gc_force_threshold * 100.0
    )
}

/// A bulk load of one siftdb keyspace: `SstFileWriter` files of about `file_bytes`, then one
/// `ingest_external_file` of them all, moved in.
struct SiftLoader<'a> {
    keyspace: &'a Keyspace,
    options: &'a Options,
    /// Staged files are named `<prefix><n>.sst`.
    prefix: std::path::PathBuf,
    file_bytes: u64,
    writer: Option<siftdb::SstFileWriter>,
    files: Vec<std::path::PathBuf>,
}

impl SiftLoader<'_> {
    /// Finishes the file being written, if any.
    fn finish_file(&mut self) -> Result<()> {
        if let Some(mut writer) = self.writer.take() {
            writer.finish()?;
        }
        Ok(())
    }
}

impl BulkLoader for SiftLoader<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.writer.is_none() {
            let mut path = self.prefix.clone().into_os_string();
            path.push(format!("{}.sst", self.files.len()));
            let path = std::path::PathBuf::from(path);
            self.writer = Some(siftdb::SstFileWriter::create(&path, self.options)?);
            self.files.push(path);
        }
        if let Some(writer) = self.writer.as_mut() {
            writer.put(key, value)?;
            if writer.file_size() >= self.file_bytes {
                self.finish_file()?;
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        self.finish_file()?;
        // As RocksDB's loader: files moved in, not read through before ingestion (RocksDB's
        // `verify_checksums_before_ingest` defaults to off, and the crate cannot set it).
        let opts = siftdb::IngestOptions {
            move_files: true,
            verify_checksums_before_ingest: false,
            ..siftdb::IngestOptions::default()
        };
        self.keyspace.ingest_external_file(&self.files, &opts)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
