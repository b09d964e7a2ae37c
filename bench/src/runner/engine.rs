//! The engines under test behind one small trait, so RocksDB and fjall (cargo feature `peers`,
//! module `peers`) run the same workloads as siftdb (module `sift`).
//!
//! Keyed operations name a keyspace by number (`--keyspaces`; see [`keyspace_name`]). siftdb
//! maps them onto its keyspaces; the peers have one and the runner refuses `--keyspaces` above 1
//! for them ([`check_keyspaces`]), so they only ever see keyspace 0.

use std::path::Path;

use siftdb::Stats;

use super::args::{Config, TransactionConfig};
use super::error::{Error, Result};
use super::settings::SettingRows;

/// One operation of a write batch; the first field is the keyspace number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Store a value.
    Put(usize, &'a [u8], &'a [u8]),
    /// Remove a key.
    Delete(usize, &'a [u8]),
}

/// A bulk load of one keyspace in progress ([`Engine::bulk_loader`]): keys in increasing
/// order, then [`BulkLoader::finish`], which makes them visible.
pub trait BulkLoader {
    /// Adds `key` with `value` (above every key added before).
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Finishes the last file and ingests every file into the keyspace.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// What one seek read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeekOutcome {
    /// The first key at or after the target was the target itself.
    pub found: bool,
    /// Entries read (the first one included).
    pub entries: u64,
}

/// What the sustained-rate workload watches while it writes: the L0 tables (each one more
/// probe per lookup, and writes stop at a count) and the bytes compaction owes. `None` where
/// the engine does not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WritePressure {
    /// Tables in L0, all keyspaces together.
    pub l0_files: Option<u64>,
    /// Bytes compaction has yet to rewrite (RocksDB's `estimate-pending-compaction-bytes`).
    pub pending_compaction_bytes: Option<u64>,
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
    /// ([`super::settings::ROWS`]).
    fn setting_rows(&self, config: &Config) -> SettingRows;
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
    /// Whether the engine loads sorted keys through external files ([`Engine::bulk_loader`]).
    fn can_bulk_load(&self) -> bool {
        false
    }
    /// Starts a bulk load of keyspace `ks` through external table files of about `file_bytes`
    /// each, staged in `staging` (a fresh directory on the database's file system); `None`
    /// when the engine has no such path.
    fn bulk_loader<'a>(
        &'a self,
        ks: usize,
        staging: &Path,
        file_bytes: u64,
    ) -> Result<Option<Box<dyn BulkLoader + 'a>>> {
        let _ = (ks, staging, file_bytes);
        Ok(None)
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
    /// The engine's write pressure now (see [`WritePressure`]).
    fn write_pressure(&self) -> WritePressure {
        WritePressure::default()
    }
    /// Flushes memtables to disk and waits, including for the compactions the flush triggers.
    fn flush(&self) -> Result<()>;
    /// Compacts everything down to the bottom level and waits.
    fn compact(&self) -> Result<()>;
    /// Brings the engine to its steady state for lookups of keys it does not hold, before a
    /// phase of them (untimed, as [`Engine::flush`] settles compaction): siftdb builds the
    /// filter index its background thread builds once a window of lookups misses. Nothing for
    /// the peers.
    fn prepare_for_misses(&self) -> Result<()> {
        Ok(())
    }
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
    /// Runs one transaction of randomtransaction (the engine was opened as the transaction
    /// database `txn` describes): for each of `keys` (keyspace number, key) in order, a read
    /// for update and a write of [`bumped`] of what it read; then a commit. `Ok(true)`:
    /// committed; `Ok(false)`: aborted by the engine's concurrency control (a conflict, a lock
    /// timeout, a deadlock), nothing written.
    fn read_modify_write_txn(
        &self,
        txn: &TransactionConfig,
        keys: &[(usize, &[u8])],
        fresh: &[u8],
    ) -> Result<bool> {
        let _ = (txn, keys, fresh);
        Err(Error::new(format!(
            "{} has no transactions in this runner",
            self.name()
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

/// The value a randomtransaction transaction writes over `old`: `old` with its first eight
/// bytes, a little-endian counter, incremented (so every commit changes the value), or `fresh`
/// for a key without a value of eight bytes or more.
pub fn bumped(old: Option<&[u8]>, fresh: &[u8]) -> Vec<u8> {
    match old {
        Some(old) if old.len() >= 8 => {
            let mut value = old.to_vec();
            let mut counter = [0u8; 8];
            counter.copy_from_slice(&old[..8]);
            let next = u64::from_le_bytes(counter).wrapping_add(1);
            value[..8].copy_from_slice(&next.to_le_bytes());
            value
        }
        _ => fresh.to_vec(),
    }
}

/// Engines this build can run.
#[cfg(not(feature = "peers"))]
pub const KNOWN_ENGINES: &[&str] = &["siftdb", "siftdb-rocksdb"];
/// Engines this build can run.
#[cfg(feature = "peers")]
pub const KNOWN_ENGINES: &[&str] = &["siftdb", "siftdb-rocksdb", "rocksdb", "fjall"];

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
    match names.iter().find(|n| n.as_str() != "siftdb") {
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
}
