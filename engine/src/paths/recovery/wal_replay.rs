//! Replaying the WALs into per-keyspace memtables.
//!
//! A cut-off or damaged last record of the *newest* log is an unsynced write torn by a crash:
//! dropped (point-in-time recovery). Older logs were synced before the next one started, so any
//! damage there — or damage followed by valid records anywhere — means acknowledged writes are
//! gone, and replaying later logs would leave a hole: [`Error::Corruption`], or with
//! `paranoid_checks = false` recovery up to the damage.

use std::collections::BTreeMap;

use crate::base::batch;
use crate::base::error::{Error, Result};
use crate::base::fs::names;
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
    for (index, number) in wals.iter().enumerate() {
        let bytes = db.fs().read(&names::wal(db.dir(), *number))?;
        let last_log = index + 1 == wals.len();
        if !replay.log(*number, &bytes, last_log)? {
            break; // later logs would leave a hole
        }
    }
    Ok(replay.recovered)
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
        let paranoid = self.db.options().paranoid_checks;
        let (records, end) = read_log(bytes);
        let damage = match &end {
            LogEnd::Clean => None,
            LogEnd::TornTail { offset } if last_log => {
                tracing::info!("siftdb: WAL {number:06}.log: torn tail at {offset} dropped");
                None
            }
            LogEnd::DamagedTail { offset, reason } if last_log => {
                tracing::warn!("siftdb: WAL {number:06}.log: damaged last record at {offset} dropped: {reason}");
                None
            }
            LogEnd::TornTail { offset } => Some((*offset, "cut off".to_string())),
            LogEnd::DamagedTail { offset, reason } | LogEnd::Corrupted { offset, reason } => {
                Some((*offset, reason.clone()))
            }
        };
        if let Some((offset, reason)) = &damage {
            if paranoid {
                return Err(Error::Corruption(crate::base::error::Corruption::at(
                    format!("{number:06}.log"),
                    *offset,
                    format!("WAL damaged before the end of the log: {reason}"),
                )));
            }
            tracing::warn!(
                "siftdb: WAL {number:06}.log damaged at {offset}: {reason}; recovering up to it"
            );
        }
        for record in &records {
            if !self.record(number, record)? {
                return Ok(false);
            }
        }
        Ok(damage.is_none())
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
