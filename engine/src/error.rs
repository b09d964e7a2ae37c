//! The engine's error type.

use std::path::PathBuf;

use thiserror::Error;

/// Everything a siftdb call can fail with.
#[derive(Debug, Error)]
pub enum Error {
    /// An I/O error from the file system.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// Bytes on disk are damaged or unreadable: a table, the WAL or the manifest.
    #[error("corruption: {0}")]
    Corruption(String),
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
    /// A background error stopped writes; reopen the database to recover.
    #[error("database stopped after a background error: {0}")]
    Background(String),
    /// The database is closed.
    #[error("database is closed")]
    Closed,
}

impl Error {
    /// Whether this error reports damaged bytes on disk.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption(_))
    }
}

impl From<siftdb_sstable::SstError> for Error {
    fn from(e: siftdb_sstable::SstError) -> Self {
        match e {
            siftdb_sstable::SstError::Io { source, .. } => Error::Io(source),
            siftdb_sstable::SstError::InvalidArgument(m)
            | siftdb_sstable::SstError::OutOfOrder(m) => Error::InvalidArgument(m),
            other => Error::Corruption(other.to_string()),
        }
    }
}

/// Result of siftdb calls.
pub type Result<T> = std::result::Result<T, Error>;
