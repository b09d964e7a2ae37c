//! Flushes, compactions, options changed live, properties and the other upkeep calls of
//! `DBWithThreadMode`.

use std::path::Path;

use crate::column_family::AsColumnFamilyRef;
use crate::db::{ColumnFamilyMetaData, LiveFile, Range, ThreadMode};
use crate::db_iterator::DBWALIterator;
use crate::properties::CStrLike;
use crate::{
    CompactOptions, DBWithThreadMode, Error, FlushOptions, IngestExternalFileOptions,
    WaitForCompactOptions, DEFAULT_COLUMN_FAMILY_NAME,
};

/// RocksDB options `set_options` accepts that siftdb has no counterpart of (no effect).
const NO_EFFECT_LIVE: &[&str] = &[
    "paranoid_file_checks",
    "report_bg_io_stats",
    "max_sequential_skip_in_iterations",
    "soft_pending_compaction_bytes_limit",
    "hard_pending_compaction_bytes_limit",
    "inplace_update_num_locks",
    "memtable_huge_page_size",
    "max_successive_merges",
    "periodic_compaction_seconds",
    "ttl",
];

/// The changes siftdb takes, after checking them as RocksDB does (`None`: nothing to pass on).
fn live_changes<'a>(opts: &[(&'a str, &'a str)]) -> Result<Vec<(&'a str, &'a str)>, Error> {
    if opts.is_empty() {
        return Err(Error::invalid("empty input"));
    }
    if opts
        .iter()
        .any(|(k, v)| k.contains('\0') || v.contains('\0'))
    {
        return Err(Error::invalid("an option name or value holds a NUL byte"));
    }
    Ok(opts
        .iter()
        .filter(|(k, _)| !NO_EFFECT_LIVE.contains(k))
        .copied()
        .collect())
}

fn compact_bounds<'s, S: AsRef<[u8]>, E: AsRef<[u8]>>(
    start: &'s Option<S>,
    end: &'s Option<E>,
) -> (Option<&'s [u8]>, Option<&'s [u8]>) {
    (
        start.as_ref().map(AsRef::as_ref),
        end.as_ref().map(AsRef::as_ref),
    )
}

impl<T: ThreadMode> DBWithThreadMode<T> {
    /// The siftdb database underneath (an extension: its statistics, properties and options
    /// beyond what rust-rocksdb's API reaches).
    pub fn as_siftdb(&self) -> &siftdb::Db {
        &self.core.db
    }

    /// Flushes the default column family's memtable and waits (siftdb's `flush`).
    pub fn flush(&self) -> Result<(), Error> {
        Ok(self.core.db.flush()?)
    }

    /// As [`flush`](Self::flush) (siftdb's flush always waits).
    pub fn flush_opt(&self, flushopts: &FlushOptions) -> Result<(), Error> {
        let _ = flushopts;
        self.flush()
    }

    /// Flushes a column family's memtable and waits.
    pub fn flush_cf(&self, cf: &impl AsColumnFamilyRef) -> Result<(), Error> {
        Ok(cf.cf_inner().ks.flush()?)
    }

    /// As [`flush_cf`](Self::flush_cf).
    pub fn flush_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        flushopts: &FlushOptions,
    ) -> Result<(), Error> {
        let _ = flushopts;
        self.flush_cf(cf)
    }

    /// Flushes several column families, one after another.
    pub fn flush_cfs_opt(
        &self,
        cfs: &[&impl AsColumnFamilyRef],
        opts: &FlushOptions,
    ) -> Result<(), Error> {
        let _ = opts;
        cfs.iter().try_for_each(|cf| self.flush_cf(*cf))
    }

    /// Syncs the WAL: siftdb writes it on every write; with `sync`, a synced empty batch
    /// makes everything before it durable.
    pub fn flush_wal(&self, sync: bool) -> Result<(), Error> {
        if sync {
            let opts = siftdb::WriteOptions { sync: true };
            self.core.db.write_opt(siftdb::WriteBatch::new(), &opts)?;
        }
        Ok(())
    }

    /// Compacts `[start, end]` of the default column family down to the bottom and waits
    /// (siftdb's `compact_range`). An error is dropped, as rust-rocksdb's signature has it.
    pub fn compact_range<S: AsRef<[u8]>, E: AsRef<[u8]>>(&self, start: Option<S>, end: Option<E>) {
        let (s, e) = compact_bounds(&start, &end);
        let _ = self.core.db.compact_range(s, e);
    }

    /// As [`compact_range`](Self::compact_range) (the options have no effect).
    pub fn compact_range_opt<S: AsRef<[u8]>, E: AsRef<[u8]>>(
        &self,
        start: Option<S>,
        end: Option<E>,
        opts: &CompactOptions,
    ) {
        let _ = opts;
        self.compact_range(start, end);
    }

    /// Compacts `[start, end]` of a column family.
    pub fn compact_range_cf<S: AsRef<[u8]>, E: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        start: Option<S>,
        end: Option<E>,
    ) {
        let (s, e) = compact_bounds(&start, &end);
        let _ = cf.cf_inner().ks.compact_range(s, e);
    }

    /// As [`compact_range_cf`](Self::compact_range_cf) (the options have no effect).
    pub fn compact_range_cf_opt<S: AsRef<[u8]>, E: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        start: Option<S>,
        end: Option<E>,
        opts: &CompactOptions,
    ) {
        let _ = opts;
        self.compact_range_cf(cf, start, end);
    }

    /// Waits until no compaction is due or running (siftdb's `wait_for_compaction`), after a
    /// flush of every column family if the options ask for one.
    pub fn wait_for_compact(&self, opts: &WaitForCompactOptions) -> Result<(), Error> {
        if opts.flush {
            for name in self.cfs.cf_names() {
                if let Some(cf) = self.cf(&name) {
                    cf.ks.flush()?;
                }
            }
        }
        Ok(self.core.db.wait_for_compaction()?)
    }

    /// Changes options of the default column family live (siftdb's `set_options`).
    pub fn set_options(&self, opts: &[(&str, &str)]) -> Result<(), Error> {
        let changes = live_changes(opts)?;
        if changes.is_empty() {
            return Ok(());
        }
        Ok(self.core.db.set_options(&changes)?)
    }

    /// Changes options of a column family live.
    pub fn set_options_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        opts: &[(&str, &str)],
    ) -> Result<(), Error> {
        let changes = live_changes(opts)?;
        if changes.is_empty() {
            return Ok(());
        }
        Ok(cf.cf_inner().ks.set_options(&changes)?)
    }

    fn default_ks(&self) -> Result<siftdb::Keyspace, Error> {
        Ok(self.core.db.keyspace(DEFAULT_COLUMN_FAMILY_NAME)?)
    }

    /// A property of the default column family (see [`properties`](crate::properties)).
    pub fn property_value(&self, name: impl CStrLike) -> Result<Option<String>, Error> {
        Ok(crate::properties::value(
            &self.default_ks()?,
            &name.prop_text()?,
        ))
    }

    /// A property of a column family.
    pub fn property_value_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        name: impl CStrLike,
    ) -> Result<Option<String>, Error> {
        Ok(crate::properties::value(
            &cf.cf_inner().ks,
            &name.prop_text()?,
        ))
    }

    /// A numeric property of the default column family.
    pub fn property_int_value(&self, name: impl CStrLike) -> Result<Option<u64>, Error> {
        parse_int(self.property_value(name)?)
    }

    /// A numeric property of a column family.
    pub fn property_int_value_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        name: impl CStrLike,
    ) -> Result<Option<u64>, Error> {
        parse_int(self.property_value_cf(cf, name)?)
    }

    /// The sequence number of the last write (that of a snapshot taken now).
    pub fn latest_sequence_number(&self) -> u64 {
        // Not a snapshot: one would hold a secondary's catch-ups off while it lives.
        self.core.db.latest_sequence_number()
    }

    /// The write batches after `seq_number`, read from the WALs still in the directory, with
    /// their log data (`put_log_data`); column family ids are siftdb's keyspace ids. A
    /// number past the latest, or one whose WAL is gone, is an error.
    pub fn get_updates_since(&self, seq_number: u64) -> Result<DBWALIterator, Error> {
        let latest = self.latest_sequence_number();
        if seq_number > latest {
            let why = format!("sequence {seq_number} is past the latest, {latest}");
            return Err(Error::with_kind(crate::ErrorKind::NotFound, why));
        }
        let all = crate::wal::read_batches(self.path())?;
        let first = all.first().map_or(latest + 1, |(s, _)| *s);
        if first > seq_number + 1 {
            let why = format!("the WAL holding sequence {} is gone", seq_number + 1);
            return Err(Error::with_kind(crate::ErrorKind::NotFound, why));
        }
        let batches: Vec<_> = all.into_iter().filter(|(s, _)| *s > seq_number).collect();
        Ok(DBWALIterator {
            batches: batches.into_iter(),
        })
    }

    /// Approximate bytes of each range of the default column family.
    pub fn get_approximate_sizes(&self, ranges: &[Range]) -> Vec<u64> {
        match self.default_ks() {
            Ok(ks) => approximate_sizes(&ks, ranges),
            Err(_) => vec![0; ranges.len()],
        }
    }

    /// Approximate bytes of each range of a column family: siftdb reports sizes per level,
    /// so a range that holds keys counts the column family's table bytes times the share of
    /// its keys it holds.
    pub fn get_approximate_sizes_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        ranges: &[Range],
    ) -> Vec<u64> {
        approximate_sizes(&cf.cf_inner().ks, ranges)
    }

    /// Ingests table files into the default column family (siftdb's `ingest_external_file`).
    pub fn ingest_external_file<P: AsRef<Path>>(&self, paths: Vec<P>) -> Result<(), Error> {
        self.ingest_external_file_opts(&IngestExternalFileOptions::default(), paths)
    }

    /// As [`ingest_external_file`](Self::ingest_external_file), with options.
    pub fn ingest_external_file_opts<P: AsRef<Path>>(
        &self,
        opts: &IngestExternalFileOptions,
        paths: Vec<P>,
    ) -> Result<(), Error> {
        let o = siftdb::IngestOptions {
            move_files: opts.move_files,
            ..Default::default()
        };
        Ok(self.core.db.ingest_external_file(&paths, &o)?)
    }

    /// Ingests table files into a column family.
    pub fn ingest_external_file_cf<P: AsRef<Path>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        paths: Vec<P>,
    ) -> Result<(), Error> {
        self.ingest_external_file_cf_opts(cf, &IngestExternalFileOptions::default(), paths)
    }

    /// As [`ingest_external_file_cf`](Self::ingest_external_file_cf), with options.
    pub fn ingest_external_file_cf_opts<P: AsRef<Path>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        opts: &IngestExternalFileOptions,
        paths: Vec<P>,
    ) -> Result<(), Error> {
        let o = siftdb::IngestOptions {
            move_files: opts.move_files,
            ..Default::default()
        };
        Ok(cf.cf_inner().ks.ingest_external_file(&paths, &o)?)
    }

    /// Size and table files of the default column family.
    pub fn get_column_family_metadata(&self) -> ColumnFamilyMetaData {
        self.default_ks()
            .map(|ks| metadata(&ks))
            .unwrap_or_default()
    }

    /// Size and table files of a column family.
    pub fn get_column_family_metadata_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
    ) -> ColumnFamilyMetaData {
        metadata(&cf.cf_inner().ks)
    }

    /// The table files of every column family, from the live manifest and each table's
    /// properties (siftdb's `inspect::current_version` and `inspect::table_info`).
    pub fn live_files(&self) -> Result<Vec<LiveFile>, Error> {
        let version = siftdb::inspect::current_version(self.path())?;
        let mut out = Vec::new();
        for ks in &version.keyspaces {
            for (level, files) in ks.levels.iter().enumerate() {
                for f in files {
                    out.push(live_file(self.path(), &ks.name, level, f)?);
                }
            }
        }
        Ok(out)
    }

    /// Deletes the table files below L0 wholly inside `[from, to]` of the default column
    /// family (siftdb's `delete_files_in_range`).
    pub fn delete_file_in_range<K: AsRef<[u8]>>(&self, from: K, to: K) -> Result<(), Error> {
        self.core.db.delete_files_in_range(from, to)?;
        Ok(())
    }

    /// As [`delete_file_in_range`](Self::delete_file_in_range), in a column family.
    pub fn delete_file_in_range_cf<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        from: K,
        to: K,
    ) -> Result<(), Error> {
        cf.cf_inner().ks.delete_files_in_range(from, to)?;
        Ok(())
    }

    /// Stops deleting obsolete files until [`enable_file_deletions`](Self::enable_file_deletions)
    /// (siftdb's `Db::disable_file_deletions`; calls nest).
    pub fn disable_file_deletions(&self) -> Result<(), Error> {
        Ok(self.core.db.disable_file_deletions()?)
    }

    /// Ends one [`disable_file_deletions`](Self::disable_file_deletions); the files that became
    /// obsolete meanwhile go once none is left.
    pub fn enable_file_deletions(&self) -> Result<(), Error> {
        Ok(self.core.db.enable_file_deletions()?)
    }

    /// Stops background work: siftdb stops it when the last handle closes; no effect.
    pub fn cancel_all_background_work(&self, wait: bool) {
        let _ = wait;
    }

    /// User-defined timestamps: siftdb has none; refused.
    pub fn increase_full_history_ts_low<S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        ts: S,
    ) -> Result<(), Error> {
        let _ = (cf.cf_inner(), ts.as_ref());
        Err(Error::not_supported("user-defined timestamps"))
    }

    /// User-defined timestamps: siftdb has none; refused.
    pub fn get_full_history_ts_low(&self, cf: &impl AsColumnFamilyRef) -> Result<Vec<u8>, Error> {
        let _ = cf.cf_inner();
        Err(Error::not_supported("user-defined timestamps"))
    }
}

fn parse_int(value: Option<String>) -> Result<Option<u64>, Error> {
    match value {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| Error::invalid(format!("property value {v:?} is not a number"))),
    }
}

fn metadata(ks: &siftdb::Keyspace) -> ColumnFamilyMetaData {
    let levels = ks.level_info();
    ColumnFamilyMetaData {
        size: levels.iter().map(|l| l.bytes).sum(),
        name: ks.name().to_string(),
        file_count: levels.iter().map(|l| l.files).sum(),
    }
}

fn approximate_sizes(ks: &siftdb::Keyspace, ranges: &[Range]) -> Vec<u64> {
    let levels = ks.level_info();
    let bytes: u64 = levels.iter().map(|l| l.bytes).sum();
    let keys: u64 = levels.iter().map(|l| l.keys).sum::<u64>().max(1);
    ranges
        .iter()
        .map(|r| {
            let opts = siftdb::ReadOptions {
                iterate_lower_bound: Some(r.start_key.to_vec()),
                iterate_upper_bound: Some(r.end_key.to_vec()),
                ..Default::default()
            };
            let in_range = ks.iter_opt(&opts).take_while(Result::is_ok).count() as u64;
            bytes.saturating_mul(in_range) / keys
        })
        .collect()
}

fn live_file(
    dir: &Path,
    cf: &str,
    level: usize,
    f: &siftdb::inspect::ManifestFile,
) -> Result<LiveFile, Error> {
    let info = siftdb::inspect::table_info(dir.join(&f.file_name))?;
    Ok(LiveFile {
        column_family_name: cf.to_string(),
        name: format!("/{}", f.file_name),
        directory: dir.display().to_string(),
        size: usize::try_from(f.file_size).unwrap_or(usize::MAX),
        level: i32::try_from(level).unwrap_or(i32::MAX),
        start_key: Some(f.smallest.user_key.clone()),
        end_key: Some(f.largest.user_key.clone()),
        smallest_seqno: info.min_sequence,
        largest_seqno: info.max_sequence,
        num_entries: info.entries,
        num_deletions: info.deletions,
    })
}
