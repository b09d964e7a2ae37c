//! Replaying the WALs into per-keyspace memtables.
//!
//! Each log is streamed through [`LogReader`] record by record (never read whole), and a
//! memtable that fills up during the replay is flushed to an L0 table there and then (see
//! [`replay_wals`]): recovering a log of any size takes the memory of the memtables being
//! rebuilt, not of the log.
//!
//! Damage that nothing proves synced (a torn last record, or unsynced pages lost out of order by
//! a power loss) ends the replay there: the writes before it are replayed, the rest — later
//! logs too — dropped (point-in-time recovery), with a warning and the
//! `Stats::recovery_dropped_wal_*` counters. A WAL switch leaves the old log unsynced until a
//! synced write, a flush or a keyspace change needs it durable (`core/closed_wals.rs`), so
//! damage may end an older log as well, or lose the records at its end whole (the next log
//! then starts with a gap). What proves a log synced: a sync mark after the damage in the same
//! log (the reader reports that as corruption), a sync mark in any later log (the write that
//! wrote it synced every older log first), or a keyspace's log number past it (the flush or
//! keyspace change that recorded it did too). Damage that was synced means acknowledged
//! writes are gone, and replaying past it would leave a hole: [`Error::Corruption`], or with
//! `paranoid_checks = false` recovery up to the damage.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::base::batch;
use crate::base::error::{Error, Result};
use crate::base::fs::{names, FileSystem};
use crate::base::wal::reader::{LogEnd, LogReader};
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::manifest_state::ManifestState;
use crate::core::memtable::Memtable;
use crate::core::shared::Shared;
use crate::core::version::Version;

/// What the WALs held: per keyspace id its writes not yet in a table in one memtable, and the
/// last sequence number.
pub(crate) struct Recovered {
    pub mems: BTreeMap<u32, Memtable>,
    pub last_sequence: u64,
    /// L0 tables written during the replay (memtables that filled up), already in the
    /// versions: what the WALs held is in them and `mems` together.
    pub tables_written: usize,
}

/// A log to replay, read from start to end.
type LogInput = Box<dyn Read + Send>;

/// Replays `wals` (oldest first), streaming each log record by record. An op of a keyspace is
/// replayed only from the keyspace's log number on (older WALs' writes of it are in its
/// tables); ops of dropped keyspaces are skipped.
///
/// A keyspace's memtable that reaches its `write_buffer_size` is written as an L0 table at
/// once and added to its tree's version in `versions`, so memory stays at the memtables being
/// rebuilt, whatever the size of the logs. Those tables become part of the database only with
/// the open's commit (its new manifest); an open that fails before leaves them as orphans,
/// which the next open's obsolete-file cleanup deletes. A read-only open writes no file: it
/// replays everything into memory.
pub(crate) fn replay_wals(
    db: &Shared,
    wals: &[u64],
    manifest: &ManifestState,
    versions: &mut [(Arc<KeyspaceTree>, Version)],
) -> Result<Recovered> {
    let recovered = Recovered {
        mems: manifest
            .keyspaces
            .keys()
            .map(|id| (*id, Memtable::new(0)))
            .collect(),
        last_sequence: manifest.last_sequence,
        tables_written: 0,
    };
    let flush_at = if db.read_only() {
        BTreeMap::new()
    } else {
        versions
            .iter()
            .map(|(tree, _)| (tree.id, tree.options().write_buffer_size))
            .collect()
    };
    let (newest, mut newest_input) = newest_written(db, wals)?;
    let mut replay = WalReplay {
        db,
        recovered,
        manifest,
        wals: &wals[..(newest + 1).min(wals.len())],
        records_in_log: 0,
        expected_next: manifest.first_wal_sequence(),
        versions,
        flush_at,
        full: Vec::new(),
    };
    for (index, number) in wals.iter().enumerate().take(newest + 1) {
        let input = match newest_input.take() {
            Some(input) if index == newest => input,
            other => {
                newest_input = other;
                db.fs().open_sequential(&names::wal(db.dir(), *number))?
            }
        };
        if !replay.log(*number, input, index == newest)? {
            // Later logs would leave a hole.
            let dropped = wals[index + 1..=newest].len() as u64;
            db.counters()
                .recovery_dropped_wals
                .fetch_add(dropped, Relaxed);
            break;
        }
    }
    Ok(replay.recovered)
}

/// The index in `wals` of the newest log holding any bytes, opened (a WAL switch or a recovery
/// cut short after creating its new log leaves that log empty). Each log looked at is opened
/// once (its first byte tells), and the one found is replayed through that opening.
fn newest_written(db: &Shared, wals: &[u64]) -> Result<(usize, Option<LogInput>)> {
    for (index, number) in wals.iter().enumerate().rev() {
        if let Some(input) = open_if_written(db.fs().as_ref(), &names::wal(db.dir(), *number))? {
            return Ok((index, Some(input)));
        }
    }
    Ok((0, None))
}

/// The file at `path` opened for a sequential read if it holds any bytes (`None` if it is
/// empty): its first byte is read to tell, and handed back ahead of the rest.
pub(super) fn open_if_written(fs: &dyn FileSystem, path: &Path) -> io::Result<Option<LogInput>> {
    let mut input = fs.open_sequential(path)?;
    let mut first = [0u8; 1];
    loop {
        match input.read(&mut first) {
            Ok(0) => return Ok(None),
            Ok(_) => return Ok(Some(Box::new(io::Cursor::new(first).chain(input)))),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The state of a WAL replay between logs.
struct WalReplay<'a> {
    db: &'a Shared,
    recovered: Recovered,
    manifest: &'a ManifestState,
    /// The logs being replayed, oldest first, up to the newest holding any bytes.
    wals: &'a [u64],
    /// Records replayed from the log being replayed.
    records_in_log: usize,
    /// The sequence the next record must start at (`None` before the first record when the
    /// manifest does not say where the oldest log starts).
    expected_next: Option<u64>,
    /// Every keyspace's version, which tables flushed during the replay join.
    versions: &'a mut [(Arc<KeyspaceTree>, Version)],
    /// Per keyspace id the memtable size at which it is flushed during the replay (empty for
    /// a read-only open, which writes nothing).
    flush_at: BTreeMap<u32, usize>,
    /// Keyspaces whose memtable filled up in the record being replayed.
    full: Vec<u32>,
}

impl WalReplay<'_> {
    /// Replays one log; returns whether the replay may go on to the next one.
    ///
    /// Records are replayed as they are read, before the log's end is known; a record that
    /// stops the replay (a gap, or an undecodable one) stops replaying, but the rest of the log
    /// is still read to classify its end, so the outcome (the error when both the end and a record are
    /// wrong, the warnings, the `recovery_dropped_wal_*` counters) is what it was when the log
    /// was classified first and replayed after.
    fn log(&mut self, number: u64, input: LogInput, last_log: bool) -> Result<bool> {
        let mut reader = LogReader::new(input);
        self.records_in_log = 0;
        let mut replayed: Result<bool> = Ok(true);
        while let Some(record) = reader.next_record()? {
            if matches!(replayed, Ok(true)) {
                replayed = self.record(number, record);
                // Between records, not inside one: a batch's writes to a keyspace land in one
                // table. A failed table write fails the open at once (no need to read on).
                if matches!(replayed, Ok(true)) {
                    self.flush_full()?;
                }
            }
        }
        let end = reader.end().cloned().unwrap_or(LogEnd::Clean);
        let unsynced_allowed = match end {
            LogEnd::Clean => false,
            _ => last_log || self.may_end_unsynced(number)?,
        };
        let damage = self.damage(number, &end, unsynced_allowed)?;
        if let Some(offset) = damage_offset(&end) {
            let dropped = reader.into_log_len()?.saturating_sub(offset);
            self.db
                .counters()
                .recovery_dropped_wal_bytes
                .fetch_add(dropped, Relaxed);
        }
        Ok(replayed? && !damage)
    }

    /// Whether log `number` may end in writes that were never synced: nothing after it proves it
    /// synced — no keyspace's log number is past it, and no later log holds a sync mark (see
    /// the module documentation). Reads the later logs: only asked when damage is found.
    fn may_end_unsynced(&self, number: u64) -> Result<bool> {
        let proven_by_manifest = self
            .manifest
            .keyspaces
            .values()
            .any(|k| k.log_number > number);
        if proven_by_manifest {
            return Ok(false);
        }
        for later in self.wals.iter().filter(|n| **n > number) {
            if log_holds_sync_mark(self.db, *later)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether the log ends in damage that must stop the replay there (an error for damage
    /// that loses synced writes, unless `paranoid_checks` is off). `unsynced_allowed`: nothing
    /// proves the log's end synced, so damage that no sync mark in it follows is a power loss
    /// of unsynced writes.
    fn damage(&self, number: u64, end: &LogEnd, unsynced_allowed: bool) -> Result<bool> {
        let (offset, reason) = match end {
            LogEnd::Clean => return Ok(false),
            LogEnd::TornTail { offset } if unsynced_allowed => {
                tracing::info!("siftdb: WAL {number:06}.log: torn tail at {offset} dropped");
                return Ok(false);
            }
            LogEnd::DamagedTail { offset, reason } if unsynced_allowed => {
                tracing::warn!("siftdb: WAL {number:06}.log: damaged last record at {offset} dropped: {reason}");
                return Ok(false);
            }
            LogEnd::UnsyncedLoss {
                offset,
                reason,
                fragments_after,
            } if unsynced_allowed => {
                tracing::warn!(
                    "siftdb: WAL {number:06}.log: unsynced data lost at {offset} ({reason}); \
                     {fragments_after} later fragments dropped (no sync mark follows the damage)"
                );
                self.db
                    .counters()
                    .recovery_dropped_wal_fragments
                    .fetch_add(*fragments_after as u64, Relaxed);
                return Ok(false);
            }
            LogEnd::TornTail { offset } => (*offset, "cut off".to_string()),
            LogEnd::DamagedTail { offset, reason }
            | LogEnd::UnsyncedLoss { offset, reason, .. }
            | LogEnd::Corrupted { offset, reason } => (*offset, reason.clone()),
        };
        if self.db.options().paranoid_checks {
            return Err(Error::Corruption(crate::base::error::Corruption::at(
                format!("{number:06}.log"),
                offset,
                format!("WAL damaged before the end of the log: {reason}"),
            )));
        }
        tracing::warn!(
            "siftdb: WAL {number:06}.log damaged at {offset}: {reason}; recovering up to it"
        );
        Ok(true)
    }

    /// Replays one record; returns whether it continued the log (records are missing if not).
    fn record(&mut self, number: u64, record: &[u8]) -> Result<bool> {
        if let Some((seq, count)) = batch::decode_sequence_marker(record) {
            return self.sequence_marker(number, seq, count);
        }
        let (seq, ops) = batch::decode(record).ok_or_else(|| {
            Error::corruption(format!("WAL {number:06}.log holds an undecodable batch"))
        })?;
        // Writes reach the logs in sequence order with consecutive numbers, so the records of
        // all logs form one unbroken run, starting where the manifest says the oldest log
        // starts. A jump means records are missing that no checksum can show (a log cut at a
        // record boundary, or emptied). Without that start (a manifest of format 5 or older)
        // the first record may only not leave a gap after the manifest's last sequence, which
        // cannot see records lost at the start of a keyspace's log once another keyspace has
        // flushed past them.
        if !self.continues(number, seq)? {
            return Ok(false);
        }
        self.expected_next = Some(seq + ops.len() as u64);
        self.records_in_log += 1;
        let mut s = seq;
        for op in ops {
            match self.manifest.keyspaces.get(&op.keyspace) {
                Some(k) if number >= k.log_number => {
                    if let Some(mem) = self.recovered.mems.get(&op.keyspace) {
                        mem.insert(op.key, s, op.kind, op.value);
                        let limit = self.flush_at.get(&op.keyspace);
                        if limit.is_some_and(|l| mem.approximate_size() >= *l)
                            && !self.full.contains(&op.keyspace)
                        {
                            self.full.push(op.keyspace);
                        }
                    }
                }
                Some(_) => {} // already in the keyspace's tables
                None if op.keyspace < self.manifest.next_keyspace_id => {} // dropped
                None if self.db.read_only() => {
                    // Beside a writer: a keyspace it created after this open read the manifest.
                    // The reason says "missing", so the read is retried from the manifest
                    // (`retry_while_writer_moves`), which then knows it; a keyspace no later
                    // manifest knows stays corruption.
                    return Err(Error::corruption(format!(
                        "WAL {number:06}.log writes keyspace id {} missing from the manifest \
                         read before it",
                        op.keyspace
                    )));
                }
                None => {
                    return Err(Error::corruption(format!(
                        "WAL {number:06}.log writes keyspace id {} that the manifest never created",
                        op.keyspace
                    )))
                }
            }
            s += 1;
        }
        self.recovered.last_sequence = self.recovered.last_sequence.max(s.saturating_sub(1));
        Ok(true)
    }

    /// Whether record `seq` of log `number` continues the run of sequence numbers; `false` ends
    /// the replay there (a log lost unsynced before it, or — without `paranoid_checks` —
    /// records missing), and missing records that were synced are corruption.
    fn continues(&mut self, number: u64, seq: u64) -> Result<bool> {
        let continues = match self.expected_next {
            Some(next) => seq == next,
            None => seq <= self.manifest.last_sequence + 1,
        };
        if continues {
            return Ok(true);
        }
        if self.lost_unsynced_end(number, seq)? {
            tracing::warn!(
                "siftdb: WAL {number:06}.log starts at sequence {seq}, after records an older \
                 log lost unsynced in a power loss; it and later logs dropped"
            );
            // Dropped whole, as the later logs are (`replay_wals` counts those).
            self.db
                .counters()
                .recovery_dropped_wals
                .fetch_add(1, Relaxed);
            return Ok(false);
        }
        let msg = format!(
            "WAL {number:06}.log: sequence {seq} does not continue the log (records are missing)"
        );
        if self.db.options().paranoid_checks {
            return Err(Error::corruption(msg));
        }
        tracing::warn!("siftdb: {msg}; recovering up to it");
        Ok(false)
    }

    /// Replays a sequence marker (the global seqno an ingestion took): nothing goes into the
    /// memtables (the ingested table is in the manifest), but the numbers are in the run.
    fn sequence_marker(&mut self, number: u64, seq: u64, count: u64) -> Result<bool> {
        if !self.continues(number, seq)? {
            return Ok(false);
        }
        self.expected_next = Some(seq + count);
        self.records_in_log += 1;
        let last = seq + count - 1;
        self.recovered.last_sequence = self.recovered.last_sequence.max(last);
        Ok(true)
    }

    /// Whether the gap before record `seq`, the first of log `number`, is the end of an older
    /// log lost unsynced (the records missing from its end whole: pages past the last one
    /// written back): it starts a log, lies ahead of the expected sequence, and nothing proves
    /// the log before it synced.
    fn lost_unsynced_end(&self, number: u64, seq: u64) -> Result<bool> {
        let ahead = self.expected_next.is_some_and(|next| seq > next);
        if !ahead || self.records_in_log > 0 {
            return Ok(false);
        }
        match self.wals.iter().rev().find(|n| **n < number) {
            Some(previous) => self.may_end_unsynced(*previous),
            None => Ok(false),
        }
    }

    /// Flushes the memtables that filled up in the records replayed since the last call.
    fn flush_full(&mut self) -> Result<()> {
        while let Some(id) = self.full.pop() {
            self.flush(id)?;
        }
        Ok(())
    }

    /// Writes keyspace `id`'s memtable as an L0 table of its version (numbered after every
    /// table written before it, so newer writes are in higher-numbered, newer L0 tables) and
    /// starts it a fresh one.
    fn flush(&mut self, id: u32) -> Result<()> {
        let (Some(mem), Some((tree, version))) = (
            self.recovered.mems.get_mut(&id),
            self.versions.iter_mut().find(|(tree, _)| tree.id == id),
        ) else {
            return Ok(());
        };
        let mem = std::mem::replace(mem, Memtable::new(0));
        *version = super::flush_recovered(self.db, tree, std::mem::take(version), &mem)?;
        self.recovered.tables_written += 1;
        tracing::debug!(
            "siftdb: recovery flushed {} bytes of keyspace {id} from the WALs",
            mem.approximate_size()
        );
        Ok(())
    }
}

/// Where a log's contents end, if before its last byte.
/// Whether WAL `number` holds a sync mark anywhere (read whole; damage in it is no matter).
fn log_holds_sync_mark(db: &Shared, number: u64) -> Result<bool> {
    let Some(input) = open_if_written(db.fs().as_ref(), &names::wal(db.dir(), number))? else {
        return Ok(false);
    };
    let mut reader = LogReader::new(input);
    while reader.next_record()?.is_some() {}
    Ok(reader.sync_marks() > 0)
}

fn damage_offset(end: &LogEnd) -> Option<u64> {
    match end {
        LogEnd::Clean => None,
        LogEnd::TornTail { offset }
        | LogEnd::DamagedTail { offset, .. }
        | LogEnd::UnsyncedLoss { offset, .. }
        | LogEnd::Corrupted { offset, .. } => Some(*offset),
    }
}
