//! The error every call returns: a message and the RocksDB status kind it falls under.

use std::fmt;

/// The RocksDB status code an [`Error`] falls under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Something asked for is not there.
    NotFound,
    /// Data on disk failed a check.
    Corruption,
    /// siftdb has no such feature.
    NotSupported,
    /// An argument or option cannot work.
    InvalidArgument,
    /// The operating system reported an I/O failure (or the directory is locked).
    IOError,
    /// A merge is still in progress.
    MergeInProgress,
    /// An operation could not complete.
    Incomplete,
    /// The database is closing.
    ShutdownInProgress,
    /// A wait timed out (a transaction's lock).
    TimedOut,
    /// The operation was aborted.
    Aborted,
    /// A resource is in use (a transaction conflict, a deadlock).
    Busy,
    /// Something expired.
    Expired,
    /// Try the operation again.
    TryAgain,
    /// A compaction would be too large.
    CompactionTooLarge,
    /// The column family was dropped.
    ColumnFamilyDropped,
    /// Anything else.
    Unknown,
}

/// An error: its message (starting with the kind's words, as RocksDB's status strings do) and
/// its [`ErrorKind`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
    kind: ErrorKind,
}

impl Error {
    /// An error with this message; its kind is read from the message's start as RocksDB's
    /// status strings begin ("Invalid argument: ...", "IO error: ...").
    pub fn new(message: String) -> Error {
        let kind = kind_of(&message);
        Error { message, kind }
    }

    /// An error of `kind` whose message is the kind's words then `detail`.
    pub(crate) fn with_kind(kind: ErrorKind, detail: impl fmt::Display) -> Error {
        Error {
            message: format!("{}: {detail}", words(kind)),
            kind,
        }
    }

    /// A feature siftdb does not have.
    pub(crate) fn not_supported(what: impl fmt::Display) -> Error {
        Error::with_kind(
            ErrorKind::NotSupported,
            format!("{what} (siftdb has no such feature)"),
        )
    }

    /// An argument that cannot work.
    pub(crate) fn invalid(what: impl fmt::Display) -> Error {
        Error::with_kind(ErrorKind::InvalidArgument, what)
    }

    /// The message.
    pub fn into_string(self) -> String {
        self.message
    }

    /// The status kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

/// The words RocksDB's status strings start with for each kind.
fn words(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::NotFound => "NotFound",
        ErrorKind::Corruption => "Corruption",
        ErrorKind::NotSupported => "Not implemented",
        ErrorKind::InvalidArgument => "Invalid argument",
        ErrorKind::IOError => "IO error",
        ErrorKind::MergeInProgress => "Merge in progress",
        ErrorKind::Incomplete => "Result incomplete",
        ErrorKind::ShutdownInProgress => "Shutdown in progress",
        ErrorKind::TimedOut => "Operation timed out",
        ErrorKind::Aborted => "Operation aborted",
        ErrorKind::Busy => "Resource busy",
        ErrorKind::Expired => "Operation expired",
        ErrorKind::TryAgain => "Operation failed. Try again.",
        ErrorKind::CompactionTooLarge => "Compaction too large",
        ErrorKind::ColumnFamilyDropped => "Column family dropped",
        ErrorKind::Unknown => "Unknown",
    }
}

const KINDS: [ErrorKind; 15] = [
    ErrorKind::NotFound,
    ErrorKind::Corruption,
    ErrorKind::NotSupported,
    ErrorKind::InvalidArgument,
    ErrorKind::IOError,
    ErrorKind::MergeInProgress,
    ErrorKind::Incomplete,
    ErrorKind::ShutdownInProgress,
    ErrorKind::TimedOut,
    ErrorKind::Aborted,
    ErrorKind::Busy,
    ErrorKind::Expired,
    ErrorKind::TryAgain,
    ErrorKind::CompactionTooLarge,
    ErrorKind::ColumnFamilyDropped,
];

fn kind_of(message: &str) -> ErrorKind {
    KINDS
        .into_iter()
        .find(|k| message.starts_with(words(*k)))
        .unwrap_or(ErrorKind::Unknown)
}

impl AsRef<str> for Error {
    fn as_ref(&self) -> &str {
        &self.message
    }
}

impl From<Error> for String {
    fn from(e: Error) -> String {
        e.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.message.fmt(f)
    }
}

impl std::error::Error for Error {}

impl From<siftdb::Error> for Error {
    fn from(e: siftdb::Error) -> Error {
        let text = e.to_string();
        if text.contains("merge operator") && text.contains("failed") {
            // RocksDB's words for a merge function that returned nothing.
            return Error::with_kind(
                ErrorKind::Corruption,
                format!("Merge operator failed: {text}"),
            );
        }
        Error::with_kind(kind_of_siftdb(&e), text)
    }
}

/// The RocksDB kind closest to a siftdb error.
fn kind_of_siftdb(e: &siftdb::Error) -> ErrorKind {
    use siftdb::Error as E;
    match e {
        E::Io(_) | E::Locked(_) | E::Background(_) => ErrorKind::IOError,
        E::Corruption(_) => ErrorKind::Corruption,
        E::InvalidArgument(_) | E::AlreadyExists(_) => ErrorKind::InvalidArgument,
        E::ReadOnly => ErrorKind::NotSupported,
        E::Closed => ErrorKind::ShutdownInProgress,
        E::KeyspaceDropped(_) => ErrorKind::ColumnFamilyDropped,
        E::KeyspaceNotFound(_) | E::BackupNotFound(_) => ErrorKind::NotFound,
        E::Conflict | E::Deadlock => ErrorKind::Busy,
        E::LockTimeout => ErrorKind::TimedOut,
        E::CompactionFilter(_) => ErrorKind::Aborted,
        _ => ErrorKind::Unknown,
    }
}
