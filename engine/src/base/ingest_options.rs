//! How [`Db::ingest_external_file`](crate::Db::ingest_external_file) takes files in
//! (RocksDB's `IngestExternalFileOptions`, its names and defaults except where noted).

/// Options of one ingestion. More fields may come; build it with `..IngestOptions::default()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestOptions {
    /// Hard-link the files into the database and remove the originals once ingested, instead
    /// of copying them (default `false`).
    pub move_files: bool,
    /// With `move_files`, copy a file that cannot be linked (another file system) instead of
    /// failing (default `true`).
    pub failed_move_fall_back_to_copy: bool,
    /// Snapshots taken before the ingestion keep their view: the files get a sequence number
    /// newer than every snapshot even when they overlap nothing (default `true`).
    pub snapshot_consistency: bool,
    /// Allow giving the files a sequence number newer than existing writes (needed when they
    /// overlap data already in the database, under `snapshot_consistency` with snapshots, and
    /// under FIFO compaction into a keyspace holding tables, whose oldest-first drops go by
    /// sequence number); without it such an ingestion is refused (default `true`).
    pub allow_global_seqno: bool,
    /// Flush the memtable when it holds keys in the files' range, or any write when a file goes
    /// to L0 (where tables are ordered by sequence), stalling writes meanwhile; without it such
    /// an ingestion is refused (default `true`).
    pub allow_blocking_flush: bool,
    /// Read every block of every file, checking its checksum and that its keys are in order
    /// and distinct, before anything is ingested (default `true`; RocksDB's default is `false`:
    /// a damaged file is refused instead of failing reads later).
    pub verify_checksums_before_ingest: bool,
    /// Replace this key range (Pebble's `IngestAndExcise`): every key in `start..end` that is
    /// not in the files disappears in the same atomic step in which the files appear, the
    /// memtable's and every level's (tables wholly inside the range are deleted at once unless
    /// a snapshot reads them; the rest is hidden by a range deletion). Every file must lie
    /// inside the range; with no file it is an atomic range delete. `None` (default): an
    /// ordinary ingestion.
    pub excise: Option<std::ops::Range<Vec<u8>>>,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            move_files: false,
            failed_move_fall_back_to_copy: true,
            snapshot_consistency: true,
            allow_global_seqno: true,
            allow_blocking_flush: true,
            verify_checksums_before_ingest: true,
            excise: None,
        }
    }
}
