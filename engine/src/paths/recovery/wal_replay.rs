//! Replaying the WALs into per-keyspace memtables.
//!
//! Damage in the *newest* log that no sync mark after it proves synced (a torn last record, or
//! unsynced pages lost out of order by a power loss) ends the log there: the writes before it
//! are replayed, the rest dropped (point-in-time recovery), with a warning and the
//! `Stats::recovery_dropped_wal_*` counters. Older logs were synced before the next one started,
//! so any damage there — or damage before a sync mark anywhere — means acknowledged writes are
//! gone, and replaying past it would leave a hole: [`Error::Corruption`], or with
//! `paranoid_checks = false` recovery up to the damage.

use std::collections::BTreeMap;

use crate::base::batch;
use crate::base::error::{Error, Result};
use crate::base::fs::names;
use std::sync::atomic::Ordering::Relaxed;

use crate::base::wal::reader::{read_log, LogEnd};
use crate::core::memtable::Memtable;
use crate::core::shared::Shared;

use crate::core::manifest_state::ManifestState;

/// What the WALs held: per keyspace id its writes in one memtable, and the last sequence number.
pub(crate) struct Recovered {
    pub mems: BTreeMap<u32, Memtable>,
    pub last_sequence: u64,
}

/// Replays `wals` (oldest first). An op of a keyspace is replayed only from the keyspace's log
/// number on (older WALs' writes of it are in its tables); ops of dropped keyspaces are skipped.
pub(crate) fn replay_wals(
    db: &Shared,
    wals: &[u64],
    manifest: &ManifestState,
) -> Result<Recovered> {
    let recovered = Recovered {
        mems: manifest
            .keyspaces
            .keys()
            .map(|id| (*id, Memtable::new(0)))
            .collect(),
        last_sequence: manifest.last_sequence,
    };
    let mut replay = WalReplay {
        db,
        recovered,
        manifest,
        expected_next: manifest.first_wal_sequence(),
    };
    let (newest, mut newest_bytes) = newest_written(db, wals)?;
    for (index, number) in wals.iter().enumerate().take(newest + 1) {
        let bytes = match newest_bytes.take() {
            Some(bytes) if index == newest => bytes,
            other => {
                newest_bytes = other;
                db.fs().read(&names::wal(db.dir(), *number))?
            }
        };
        if !replay.log(*number, &bytes, index == newest)? {
            break; // later logs would leave a hole
        }
    }
    Ok(replay.recovered)
}

/// The index in `wals` of the newest log holding any bytes, and those bytes. Only that log may
/// end in unsynced writes: a log is synced before the next one is written to, but a WAL switch
/// or a recovery cut short after creating its new log leaves that log empty.
fn newest_written(db: &Shared, wals: &[u64]) -> Result<(usize, Option<Vec<u8>>)> {
    for (index, number) in wals.iter().enumerate().rev() {
        let bytes = db.fs().read(&names::wal(db.dir(), *number))?;
        if !bytes.is_empty() {
            return Ok((index, Some(bytes)));
        }
    }
    Ok((0, None))
}

/// The state of a WAL replay between logs.
struct WalReplay<'a> {
    db: &'a Shared,
    recovered: Recovered,
    manifest: &'a ManifestState,
    /// The sequence the next record must start at (`None` before the first record when the
    /// manifest does not say where the oldest log starts).
    expected_next: Option<u64>,
}

impl WalReplay<'_> {
    /// Replays one log; returns whether the replay may go on to the next one.
    fn log(&mut self, number: u64, bytes: &[u8], last_log: bool) -> Result<bool> {
        let contents = read_log(bytes);
        let damage = self.damage(number, &contents.end, last_log)?;
        if let Some(offset) = damage_offset(&contents.end) {
            let dropped = (bytes.len() as u64).saturating_sub(offset);
            self.db
                .counters()
                .recovery_dropped_wal_bytes
                .fetch_add(dropped, Relaxed);
        }
        for record in &contents.records {
            if !self.record(number, record)? {
                return Ok(false);
            }
        }
        Ok(!damage)
    }

    /// Whether the log ends in damage that must stop the replay there (an error for damage
    /// that loses synced writes, unless `paranoid_checks` is off).
    fn damage(&self, number: u64, end: &LogEnd, last_log: bool) -> Result<bool> {
        let (offset, reason) = match end {
            LogEnd::Clean => return Ok(false),
            LogEnd::TornTail { offset } if last_log => {
                tracing::info!("siftdb: WAL {number:06}.log: torn tail at {offset} dropped");
                return Ok(false);
            }
            LogEnd::DamagedTail { offset, reason } if last_log => {
                tracing::warn!("siftdb: WAL {number:06}.log: damaged last record at {offset} dropped: {reason}");
                return Ok(false);
            }
            LogEnd::UnsyncedLoss {
                offset,
                reason,
                fragments_after,
            } if last_log => {
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
        let continues = match self.expected_next {
            Some(next) => seq == next,
            None => seq <= self.manifest.last_sequence + 1,
        };
        if !continues {
            let msg = format!(
                "WAL {number:06}.log: sequence {seq} does not continue the log (records are missing)"
            );
            if self.db.options().paranoid_checks {
                return Err(Error::corruption(msg));
            }
            tracing::warn!("siftdb: {msg}; recovering up to it");
            return Ok(false);
        }
        self.expected_next = Some(seq + ops.len() as u64);
        let mut s = seq;
        for op in ops {
            match self.manifest.keyspaces.get(&op.keyspace) {
                Some(k) if number >= k.log_number => {
                    if let Some(mem) = self.recovered.mems.get(&op.keyspace) {
                        mem.insert(op.key, s, op.kind, op.value);
                    }
                }
                Some(_) => {} // already in the keyspace's tables
                None if op.keyspace < self.manifest.next_keyspace_id => {} // dropped
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
}

/// Where a log's contents end, if before its last byte.
fn damage_offset(end: &LogEnd) -> Option<u64> {
    match end {
        LogEnd::Clean => None,
        LogEnd::TornTail { offset }
        | LogEnd::DamagedTail { offset, .. }
        | LogEnd::UnsyncedLoss { offset, .. }
        | LogEnd::Corrupted { offset, .. } => Some(*offset),
    }
}
