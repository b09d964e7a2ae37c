//! The error type of the table layer.

use thiserror::Error;

/// Why a table could not be built or read.
#[derive(Debug, Error)]
pub enum SstError {
    /// Bytes on disk are not a valid table: bad magic, bad checksum, truncated file, a block
    /// handle out of range, undecodable contents.
    #[error("corruption in {file} at offset {offset}: {reason}")]
    Corruption {
        /// File name (or description) of the table.
        file: String,
        /// Byte offset of the damaged structure.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
    /// A block's checksum does not match its contents.
    #[error("checksum mismatch in {file} at offset {offset}: got {got:#010x}, expected {expected:#010x}")]
    ChecksumMismatch {
        /// File name of the table.
        file: String,
        /// Offset of the block.
        offset: u64,
        /// Checksum computed over the bytes read.
        got: u32,
        /// Checksum stored on disk.
        expected: u32,
    },
    /// The table was written by a newer (or unknown) format version.
    #[error("{file}: unsupported table format version {version}")]
    UnsupportedVersion {
        /// File name of the table.
        file: String,
        /// Version found in the footer.
        version: u32,
    },
    /// The table's filter block cannot be used by this reader (e.g. a foreign hash seed).
    #[error("{file}: filter block at offset {offset} refused: {source}")]
    Filter {
        /// File name of the table.
        file: String,
        /// Offset of the filter block.
        offset: u64,
        /// The filter layer's reason.
        source: siftdb_filter::FilterError,
    },
    /// Keys were added to a builder out of order (the table is not written).
    #[error("keys added out of order: {0}")]
    OutOfOrder(String),
    /// A caller passed something the table layer cannot accept.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An I/O error.
    #[error("I/O error on {file}: {source}")]
    Io {
        /// File name of the table.
        file: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl SstError {
    /// Whether this error means the bytes on disk are damaged or unreadable by this build.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            SstError::Corruption { .. }
                | SstError::ChecksumMismatch { .. }
                | SstError::UnsupportedVersion { .. }
                | SstError::Filter { .. }
        )
    }
}

/// Result of the table layer.
pub type Result<T> = std::result::Result<T, SstError>;
