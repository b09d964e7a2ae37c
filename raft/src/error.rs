//! The crate's error type, and its conversion to openraft's `StorageError`.

use openraft::{AnyError, ErrorSubject, ErrorVerb, StorageError, StorageIOError};

use crate::NodeId;

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The database refused or failed an operation.
    #[error("siftdb: {0}")]
    Engine(#[from] siftdb::Error),
    /// A file of the store (a snapshot) could not be read or written.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    /// A write through the cluster was not accepted before its deadline (no leader, or the
    /// leader kept failing it).
    #[error("cluster write failed: {0}")]
    Cluster(String),
    /// A command siftdb cannot store (a key or value over its limits): see
    /// [`crate::Command::check`].
    #[error("invalid command: {0}")]
    InvalidCommand(String),
    /// A stored value does not decode: the bytes are damaged or were written by something else.
    #[error("corrupt {what}: {detail}")]
    Corrupt {
        /// What was being decoded.
        what: &'static str,
        /// Why it failed.
        detail: String,
    },
}

impl Error {
    /// A decoding failure of `what`.
    pub(crate) fn corrupt(what: &'static str, detail: impl ToString) -> Error {
        Error::Corrupt {
            what,
            detail: detail.to_string(),
        }
    }

    /// The error as openraft's, naming what failed (`subject`) and how (`verb`).
    pub(crate) fn storage(
        self,
        subject: ErrorSubject<NodeId>,
        verb: ErrorVerb,
    ) -> StorageError<NodeId> {
        StorageIOError::new(subject, verb, AnyError::new(&self)).into()
    }
}

/// Shorthands for the subjects openraft's errors name.
pub(crate) trait IntoStorage<T> {
    /// Converts an error of reading or writing `subject`.
    fn or_storage(
        self,
        subject: ErrorSubject<NodeId>,
        verb: ErrorVerb,
    ) -> Result<T, StorageError<NodeId>>;
}

impl<T, E: Into<Error>> IntoStorage<T> for Result<T, E> {
    fn or_storage(
        self,
        subject: ErrorSubject<NodeId>,
        verb: ErrorVerb,
    ) -> Result<T, StorageError<NodeId>> {
        self.map_err(|e| e.into().storage(subject, verb))
    }
}
