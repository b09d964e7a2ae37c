//! Event listeners: callbacks a service registers in [`Options::listeners`](crate::Options) to
//! hear of flushes, compactions, table files, background errors, write stalls and sealed
//! memtables (RocksDB's `EventListener`, with its method names).
//!
//! Every event is delivered on one thread of the database's own (`siftdb-events`), in the order
//! the engine raised them, never on the thread that raised it: a slow listener delays other
//! listeners, never a write, a flush or a compaction. A listener that panics is contained: the
//! panic is logged and counted (`Stats::event_listener_panics`), and later events are still
//! delivered to it and to the others.

use std::path::PathBuf;
use std::time::Duration;

use crate::base::error::BackgroundError;

/// Callbacks for what the engine does in the background. Every method has an empty default, so
/// a listener implements only those it needs.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use siftdb::{Db, EventListener, FlushJobInfo, Options};
///
/// #[derive(Default)]
/// struct Flushes(Mutex<Vec<u64>>);
///
/// impl EventListener for Flushes {
///     fn on_flush_completed(&self, info: &FlushJobInfo) {
///         if let Some(table) = &info.table {
///             self.0.lock().unwrap().push(table.number);
///         }
///     }
/// }
///
/// let dir = tempfile::tempdir()?;
/// let flushes = Arc::new(Flushes::default());
/// let mut options = Options::default();
/// options.listeners.push(flushes.clone());
/// let db = Db::open(dir.path(), options)?;
/// db.put(b"k", b"v")?;
/// db.flush()?;
/// db.close()?; // delivers every event raised before it
/// assert_eq!(flushes.0.lock().unwrap().len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait EventListener: Send + Sync {
    /// A flush of one memtable begins.
    fn on_flush_begin(&self, _info: &FlushJobInfo) {}
    /// That flush ended: its table is installed, or `info.error` says why not. Every
    /// `on_flush_begin` is followed by one `on_flush_completed` with the same `job_id`.
    fn on_flush_completed(&self, _info: &FlushJobInfo) {}
    /// A compaction begins (a merge, a trivial move or a FIFO drop).
    fn on_compaction_begin(&self, _info: &CompactionJobInfo) {}
    /// That compaction ended: installed, or `info.error` says why not. Every
    /// `on_compaction_begin` is followed by one `on_compaction_completed` with the same `job_id`.
    fn on_compaction_completed(&self, _info: &CompactionJobInfo) {}
    /// A flush or compaction wrote and installed a table file.
    fn on_table_file_created(&self, _info: &TableFileCreationInfo) {}
    /// An obsolete table file was deleted.
    fn on_table_file_deleted(&self, _info: &TableFileDeletionInfo) {}
    /// Background work failed and writes stopped (until [`Db::resume`](crate::Db::resume)
    /// clears the error, or a reopen).
    fn on_background_error(&self, _info: &BackgroundErrorInfo) {}
    /// Writes began or stopped waiting for flushes or compactions.
    fn on_stall_conditions_changed(&self, _info: &WriteStallInfo) {}
    /// A keyspace's active memtable was sealed (made immutable, to be flushed).
    fn on_memtable_sealed(&self, _info: &MemTableInfo) {}
}

/// Why a memtable was sealed and flushed (RocksDB's `FlushReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FlushReason {
    /// It reached the keyspace's `write_buffer_size`.
    WriteBufferFull,
    /// The WALs together exceeded `Options::max_total_wal_size` and it kept the oldest alive.
    WalFull,
    /// All memtables together reached `Options::db_write_buffer_size`.
    WriteBufferManager,
    /// [`Db::flush`](crate::Db::flush), or a call that flushes first (ingestion over it, a
    /// checkpoint, a keyspace change).
    Manual,
    /// [`Db::resume`](crate::Db::resume) started new memtables after a WAL failure.
    ErrorRecovery,
}

/// Why a compaction ran (RocksDB's `CompactionReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CompactionReason {
    /// L0 reached `level0_file_num_compaction_trigger` tables.
    LevelL0FilesNum,
    /// A level below L0 outgrew its target size.
    LevelMaxLevelSize,
    /// L0 tables merged into one L0 table (intra-L0).
    IntraL0,
    /// Universal compaction merged sorted runs.
    Universal,
    /// FIFO compaction dropped the oldest tables.
    Fifo,
    /// [`Db::compact_range`](crate::Db::compact_range).
    Manual,
}

/// Why a table file was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TableFileCreationReason {
    /// A memtable flush.
    Flush,
    /// A compaction's output.
    Compaction,
}

/// Whether writes wait (RocksDB's `WriteStallCondition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WriteStallCondition {
    /// Writes go through.
    Normal,
    /// Writes wait until the cause is gone.
    Stopped,
    /// Writes go at `Options::delayed_write_rate` (a keyspace's L0 holds
    /// `level0_slowdown_writes_trigger` tables).
    Delayed,
}

/// What writes wait for (`Stats::stall_micros_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WriteStallCause {
    /// A keyspace's L0 holds `level0_stop_writes_trigger` tables (stopped) or
    /// `level0_slowdown_writes_trigger` (delayed): compactions must catch up.
    L0Files,
    /// A keyspace has `max_write_buffer_number` memtables, all full: flushes must catch up.
    Memtables,
    /// All memtables together hold `Options::db_write_buffer_size`: flushes must free memory.
    MemoryBudget,
}

/// One table file, as an event names it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableFileInfo {
    /// The table's file number.
    pub number: u64,
    /// Its path.
    pub path: PathBuf,
    /// The level it was in (inputs) or is installed in (outputs).
    pub level: usize,
    /// Its size in bytes.
    pub size: u64,
    /// Entries it holds (every version of every key, tombstones included).
    pub entries: u64,
}

/// A flush ([`EventListener::on_flush_begin`], [`EventListener::on_flush_completed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlushJobInfo {
    /// The keyspace whose memtable is flushed.
    pub keyspace: String,
    /// Numbers this flush's events (and its table's creation event) share.
    pub job_id: u64,
    /// Why the memtable was sealed.
    pub reason: FlushReason,
    /// The memtable's entries.
    pub memtable_entries: u64,
    /// The memtable's bytes (its arena).
    pub memtable_bytes: u64,
    /// The L0 table written (completed only; `None` when the memtable held nothing to keep).
    pub table: Option<TableFileInfo>,
    /// How long the flush took (completed only).
    pub duration: Duration,
    /// Why the flush failed (completed only; `None` when it succeeded).
    pub error: Option<String>,
}

/// A compaction ([`EventListener::on_compaction_begin`],
/// [`EventListener::on_compaction_completed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactionJobInfo {
    /// The keyspace compacted.
    pub keyspace: String,
    /// Numbers this compaction's events (and its tables' creation events) share.
    pub job_id: u64,
    /// Why it ran.
    pub reason: CompactionReason,
    /// The level its inputs start at.
    pub base_level: usize,
    /// The level its outputs go to.
    pub output_level: usize,
    /// The input tables.
    pub inputs: Vec<TableFileInfo>,
    /// The tables written (completed only; moved tables for a trivial move, none for a drop).
    pub outputs: Vec<TableFileInfo>,
    /// Whether the inputs moved down unchanged (no byte written).
    pub trivial_move: bool,
    /// Bytes of the inputs (completed only; 0 for a trivial move or a drop).
    pub bytes_read: u64,
    /// Bytes of the outputs written (completed only).
    pub bytes_written: u64,
    /// How long it took (completed only).
    pub duration: Duration,
    /// Why it failed (completed only; `None` when it succeeded).
    pub error: Option<String>,
}

/// A table file written and installed ([`EventListener::on_table_file_created`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableFileCreationInfo {
    /// Its keyspace.
    pub keyspace: String,
    /// The flush's or compaction's `job_id`.
    pub job_id: u64,
    /// Why it was written.
    pub reason: TableFileCreationReason,
    /// The table.
    pub file: TableFileInfo,
}

/// An obsolete table file deleted ([`EventListener::on_table_file_deleted`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableFileDeletionInfo {
    /// The table's file number.
    pub number: u64,
    /// Its path.
    pub path: PathBuf,
    /// Why the deletion failed (`None`: the file is gone).
    pub error: Option<String>,
}

/// Writes stopped on a background failure ([`EventListener::on_background_error`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackgroundErrorInfo {
    /// The failure: the job and why (what writes now fail with).
    pub error: BackgroundError,
}

/// Writes began or stopped waiting ([`EventListener::on_stall_conditions_changed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteStallInfo {
    /// The keyspace whose L0 or memtables writes wait for; `None` for the database-wide
    /// memory budget.
    pub keyspace: Option<String>,
    /// What writes wait (or waited) for.
    pub cause: WriteStallCause,
    /// The condition now.
    pub condition: WriteStallCondition,
    /// The condition before.
    pub previous: WriteStallCondition,
}

/// A memtable sealed ([`EventListener::on_memtable_sealed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemTableInfo {
    /// Its keyspace.
    pub keyspace: String,
    /// Why it was sealed.
    pub reason: FlushReason,
    /// Its entries.
    pub entries: u64,
    /// Its bytes (its arena).
    pub bytes: u64,
    /// The WAL its writes are in.
    pub wal_number: u64,
}
