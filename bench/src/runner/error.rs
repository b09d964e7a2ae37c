//! The runner's error: a message for the user, printed by `main` before a non-zero exit.

use std::fmt;

/// An error of the workload runner (bad flags, engine failures, I/O).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
        }
    }

    /// The same error with `context` in front (`context: message`).
    pub fn context(self, context: impl fmt::Display) -> Error {
        Error::new(format!("{context}: {}", self.message))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<siftdb::Error> for Error {
    fn from(e: siftdb::Error) -> Error {
        Error::new(e.to_string())
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::new(e.to_string())
    }
}

/// The runner's result type.
pub type Result<T> = std::result::Result<T, Error>;
