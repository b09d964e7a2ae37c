//! The engine's error type.

use std::path::PathBuf;
use std::sync::Arc;

use thiserror::Error;

/// Everything a siftdb call can fail with.
///
/// New variants may be added in later versions: match with a wildcard arm.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error from the file system.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// Bytes on disk are damaged or unreadable: a table, the WAL or the manifest.
    #[error(transparent)]
    Corruption(Corruption),
    /// Another `Db` (in this process or another) has the directory open.
    #[error("database at {0} is locked by another instance")]
    Locked(PathBuf),
    /// The path exists but is not a siftdb database directory.
    #[error("{path} is not a siftdb database: {reason}")]
    NotADatabase {
        /// The path given to `open`.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The database was written by a newer format version than this build reads.
    #[error(
        "database format version {found} is not supported (this build reads up to {supported})"
    )]
    UnsupportedVersion {
        /// Version on disk.
        found: u32,
        /// Newest version this build reads.
        supported: u32,
    },
    /// The call's arguments are not acceptable (nothing was written).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A background error stopped writes; reopen the database to recover. It names the job
    /// that failed and, for an I/O failure, its [`std::io::ErrorKind`] (a full disk is
    /// `StorageFull`).
    #[error("database stopped after a background error: {0}")]
    Background(BackgroundError),
    /// The database is closed.
    #[error("database is closed")]
    Closed,
    /// `create_keyspace` named a keyspace that exists.
    #[error("keyspace {0:?} already exists")]
    AlreadyExists(String),
    /// The keyspace was dropped: its handles, and batches naming it, fail.
    #[error("keyspace {0:?} was dropped")]
    KeyspaceDropped(String),
    /// No keyspace of that name exists (and this call does not create one: a read-only open).
    #[error("keyspace {0:?} does not exist")]
    KeyspaceNotFound(String),
    /// The database was opened with [`Db::open_read_only`](crate::Db::open_read_only): it
    /// takes no writes, flushes, compactions, keyspace changes or checkpoints.
    #[error("database is open read-only")]
    ReadOnly,
    /// The compaction filter failed (it panicked): the compaction was abandoned, nothing lost.
    /// Background compactions retry; `compact_range` returns this.
    #[error("{0}")]
    CompactionFilter(CompactionFilterError),
    /// A transaction's commit found that another writer committed one of the keys it wrote
    /// or read for update after its snapshot (optimistic validation; a pessimistic transaction
    /// with `set_snapshot` gets it when it locks such a key). Nothing of the transaction was
    /// written: run it again from the start.
    #[error("transaction conflict: a key it wrote or read for update changed after its snapshot")]
    Conflict,
    /// A pessimistic transaction waited longer than its `lock_timeout` for a key another
    /// transaction holds. The transaction is still open: retry the call, or roll back.
    #[error("timed out waiting for a transaction's lock on a key")]
    LockTimeout,
    /// Waiting for the lock would have closed a cycle of transactions each waiting for the
    /// next (pessimistic transactions with `deadlock_detect`). This transaction did not get
    /// the lock; roll it back (releasing its locks) and run it again.
    #[error("deadlock: waiting for the lock would close a cycle of waiting transactions")]
    Deadlock,
    /// The backup directory holds no backup of that id (`siftdb::backup::BackupEngine`).
    #[error("backup {0} does not exist")]
    BackupNotFound(u32),
}

/// The job whose failure stopped writes (see [`BackgroundError`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackgroundJob {
    /// A memtable flush.
    Flush,
    /// A compaction.
    Compaction,
    /// Appending a write group to the WAL.
    WalWrite,
    /// Syncing the WAL (before a keyspace change).
    WalSync,
    /// Starting a new WAL (memtable switch).
    WalSwitch,
    /// Appending an edit to the manifest.
    ManifestWrite,
    /// Starting a background thread.
    ThreadStart,
    /// Deleting obsolete files (the deleter thread: only a panic of the file system stops
    /// writes; a failed deletion is logged, and the file deleted later).
    FileDeletion,
}

impl std::fmt::Display for BackgroundJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BackgroundJob::Flush => "flush",
            BackgroundJob::Compaction => "compaction",
            BackgroundJob::WalWrite => "WAL write",
            BackgroundJob::WalSync => "WAL sync",
            BackgroundJob::WalSwitch => "WAL switch",
            BackgroundJob::ManifestWrite => "manifest write",
            BackgroundJob::ThreadStart => "thread start",
            BackgroundJob::FileDeletion => "file deletion",
        })
    }
}

/// The message of a panic's payload (what `catch_unwind` caught).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// Why background work stopped writes: the job that failed, the I/O error kind if the failure
/// was one, and the error's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundError {
    job: BackgroundJob,
    io_kind: Option<std::io::ErrorKind>,
    message: String,
}

impl BackgroundError {
    /// The background error of `job` failing with `error`.
    pub(crate) fn new(job: BackgroundJob, error: &Error) -> BackgroundError {
        BackgroundError {
            job,
            io_kind: error.io_kind(),
            message: error.to_string(),
        }
    }

    /// A background error of `job` described by `message` alone (no I/O error behind it).
    pub(crate) fn described(job: BackgroundJob, message: impl Into<String>) -> BackgroundError {
        BackgroundError {
            job,
            io_kind: None,
            message: message.into(),
        }
    }

    /// The background error of `job` panicking with `payload` (what `catch_unwind` caught).
    pub(crate) fn panicked(
        job: BackgroundJob,
        payload: &(dyn std::any::Any + Send),
    ) -> BackgroundError {
        let what = panic_message(payload);
        BackgroundError::described(job, format!("panicked: {what}"))
    }

    /// The background error `error` of `job` stands for: its own if it is one already.
    pub(crate) fn of(job: BackgroundJob, error: &Error) -> BackgroundError {
        match error {
            Error::Background(b) => b.clone(),
            e => BackgroundError::new(job, e),
        }
    }

    /// The job that failed.
    pub fn job(&self) -> BackgroundJob {
        self.job
    }

    /// The kind of the I/O error that made it fail, if an I/O error did.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        self.io_kind
    }

    /// The failure's text.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for BackgroundError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed: {}", self.job, self.message)
    }
}

/// A compaction abandoned because the user's compaction filter failed (panicked): the keyspace
/// and level it was compacting into, and what the filter said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionFilterError {
    keyspace: String,
    output_level: usize,
    message: String,
}

impl CompactionFilterError {
    pub(crate) fn new(keyspace: &str, output_level: usize, message: String) -> Self {
        CompactionFilterError {
            keyspace: keyspace.to_string(),
            output_level,
            message,
        }
    }

    /// The keyspace whose compaction was abandoned.
    pub fn keyspace(&self) -> &str {
        &self.keyspace
    }

    /// The level the compaction was writing.
    pub fn output_level(&self) -> usize {
        self.output_level
    }

    /// What the filter's failure said.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for CompactionFilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Where and why bytes on disk are damaged: the file and offset where known, and the lower
/// layer's error (a checksum mismatch, a refused filter block) as the [`source`](std::error::Error::source).
#[derive(Debug, Clone)]
pub struct Corruption {
    file: Option<String>,
    offset: Option<u64>,
    reason: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl Corruption {
    /// Damage described by `reason` alone.
    pub(crate) fn new(reason: impl Into<String>) -> Corruption {
        Corruption {
            file: None,
            offset: None,
            reason: reason.into(),
            source: None,
        }
    }

    /// Damage in `file` at `offset`.
    pub(crate) fn at(
        file: impl Into<String>,
        offset: u64,
        reason: impl Into<String>,
    ) -> Corruption {
        Corruption {
            file: Some(file.into()),
            offset: Some(offset),
            reason: reason.into(),
            source: None,
        }
    }

    /// Damage to the whole of `file` (a checksum over the file, a missing file).
    pub(crate) fn in_file(file: impl Into<String>, reason: impl Into<String>) -> Corruption {
        Corruption {
            file: Some(file.into()),
            offset: None,
            reason: reason.into(),
            source: None,
        }
    }

    /// The damaged file (its path or name), if known.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// The byte offset of the damaged structure in [`Corruption::file`], if known.
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }

    /// What is wrong.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl std::fmt::Display for Corruption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "corruption")?;
        if let Some(file) = &self.file {
            write!(f, " in {file}")?;
        }
        if let Some(offset) = self.offset {
            write!(f, " at offset {offset}")?;
        }
        write!(f, ": {}", self.reason)?;
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Corruption {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// A user key for an error message: escaped, the first 64 bytes at most.
pub(crate) fn printable_key(key: &[u8]) -> String {
    let shown = &key[..key.len().min(64)];
    let more = if key.len() > shown.len() { "…" } else { "" };
    format!("\"{}{more}\"", shown.escape_ascii())
}

impl Error {
    /// Whether this error reports damaged bytes on disk.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption(_))
    }

    /// The kind of the I/O error behind this one, if an I/O error is behind it.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        match self {
            Error::Io(e) => Some(e.kind()),
            Error::Background(b) => b.io_kind(),
            _ => None,
        }
    }

    /// A [`Error::Corruption`] described by `reason` alone.
    pub(crate) fn corruption(reason: impl Into<String>) -> Error {
        Error::Corruption(Corruption::new(reason))
    }

    /// The same error for another waiter of a failed operation (every writer of a failed group
    /// commit gets the leader's error): the same variant and fields; an I/O error keeps its kind
    /// and message.
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::Io(e) => Error::Io(std::io::Error::new(e.kind(), e.to_string())),
            Error::Corruption(c) => Error::Corruption(c.clone()),
            Error::Locked(p) => Error::Locked(p.clone()),
            Error::NotADatabase { path, reason } => Error::NotADatabase {
                path: path.clone(),
                reason: reason.clone(),
            },
            Error::UnsupportedVersion { found, supported } => Error::UnsupportedVersion {
                found: *found,
                supported: *supported,
            },
            Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
            Error::Background(m) => Error::Background(m.clone()),
            Error::Closed => Error::Closed,
            Error::AlreadyExists(n) => Error::AlreadyExists(n.clone()),
            Error::KeyspaceDropped(n) => Error::KeyspaceDropped(n.clone()),
            Error::KeyspaceNotFound(n) => Error::KeyspaceNotFound(n.clone()),
            Error::ReadOnly => Error::ReadOnly,
            Error::CompactionFilter(m) => Error::CompactionFilter(m.clone()),
            Error::Conflict => Error::Conflict,
            Error::LockTimeout => Error::LockTimeout,
            Error::Deadlock => Error::Deadlock,
            Error::BackupNotFound(id) => Error::BackupNotFound(*id),
        }
    }
}

impl From<siftdb_sstable::SstError> for Error {
    fn from(e: siftdb_sstable::SstError) -> Self {
        use siftdb_sstable::SstError;
        match e {
            // The table's name goes into the message; the kind stays what the OS said.
            SstError::Io { file, source } => Error::Io(std::io::Error::new(
                source.kind(),
                format!("{file}: {source}"),
            )),
            SstError::InvalidArgument(m) | SstError::OutOfOrder(m) => Error::InvalidArgument(m),
            SstError::Corruption {
                file,
                offset,
                reason,
            } => Error::Corruption(Corruption::at(file, offset, reason)),
            SstError::ChecksumMismatch {
                ref file, offset, ..
            } => {
                let mut c = Corruption::at(file.clone(), offset, "block checksum mismatch");
                c.source = Some(Arc::new(e));
                Error::Corruption(c)
            }
            SstError::Filter {
                ref file, offset, ..
            } => {
                let mut c = Corruption::at(file.clone(), offset, "filter block refused");
                c.source = Some(Arc::new(e));
                Error::Corruption(c)
            }
            SstError::UnsupportedVersion { ref file, .. } => {
                let mut c = Corruption::at(file.clone(), 0, "table format not supported");
                c.source = Some(Arc::new(e));
                Error::Corruption(c)
            }
        }
    }
}

/// Result of siftdb calls.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corruption_keeps_file_offset_and_source() {
        let sst = siftdb_sstable::SstError::ChecksumMismatch {
            file: "000007.sst".to_string(),
            offset: 4096,
            got: 1,
            expected: 2,
        };
        let e = Error::from(sst);
        let Error::Corruption(c) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(c.file(), Some("000007.sst"));
        assert_eq!(c.offset(), Some(4096));
        assert!(std::error::Error::source(c).is_some());
        assert!(e.to_string().contains("000007.sst at offset 4096"), "{e}");
        assert!(e.is_corruption());
    }

    #[test]
    fn duplicate_keeps_the_variant_and_the_io_kind() {
        let io = Error::Io(std::io::Error::new(std::io::ErrorKind::StorageFull, "full"));
        match io.duplicate() {
            Error::Io(e) => assert_eq!(e.kind(), std::io::ErrorKind::StorageFull),
            other => panic!("{other:?}"),
        }
        let c = Error::Corruption(Corruption::at("x.log", 3, "bad"));
        assert!(c.duplicate().is_corruption());
        assert!(matches!(
            Error::InvalidArgument("n".into()).duplicate(),
            Error::InvalidArgument(_)
        ));
    }

    #[test]
    fn background_error_keeps_the_job_and_the_io_kind() {
        let full = Error::Io(std::io::Error::new(std::io::ErrorKind::StorageFull, "full"));
        let e = Error::Background(BackgroundError::new(BackgroundJob::Flush, &full));
        let Error::Background(b) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(b.job(), BackgroundJob::Flush);
        assert_eq!(b.io_kind(), Some(std::io::ErrorKind::StorageFull));
        assert_eq!(e.io_kind(), Some(std::io::ErrorKind::StorageFull));
        assert!(
            e.to_string().contains("flush failed: I/O error: full"),
            "{e}"
        );
        assert!(matches!(e.duplicate(), Error::Background(d) if d == *b));
    }

    #[test]
    fn a_table_io_error_keeps_its_file_name_and_kind() {
        let sst = siftdb_sstable::SstError::Io {
            file: "000042.sst".to_string(),
            source: std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied"),
        };
        let e = Error::from(sst);
        assert_eq!(e.io_kind(), Some(std::io::ErrorKind::PermissionDenied));
        assert!(e.to_string().contains("000042.sst"), "{e}");
    }
}
