//! The one error type of the filter layer.

use thiserror::Error;

/// Why a filter could not be built or a serialized filter block was refused.
///
/// A reader refuses anything it does not fully understand: a filter read under the wrong hash
/// function or seed answers "definitely not" for keys that are present, the one lie a filter must
/// never tell, so every mismatch is an error rather than a best effort.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FilterError {
    /// The block ends before a field it must contain.
    #[error("filter block truncated: need {needed} bytes, have {actual}")]
    Truncated {
        /// Bytes the layout requires.
        needed: usize,
        /// Bytes present.
        actual: usize,
    },
    /// The block does not start with the filter magic number.
    #[error("filter block has bad magic {found:#010x}")]
    BadMagic {
        /// The four bytes found, little-endian.
        found: u32,
    },
    /// The checksum over header and payload does not match.
    #[error("filter block checksum mismatch: got {got:#010x}, expected {expected:#010x}")]
    ChecksumMismatch {
        /// Checksum computed over the bytes read.
        got: u32,
        /// Checksum stored in the block.
        expected: u32,
    },
    /// A format version this build does not know.
    #[error("unsupported filter format version {0}")]
    UnsupportedVersion(u8),
    /// A filter kind this build does not know.
    #[error("unknown filter kind {0}")]
    UnknownKind(u8),
    /// A hash function id this build does not know.
    #[error("unknown hash function id {0}")]
    UnknownHash(u8),
    /// The block was built with a different hash function than the reader uses.
    #[error("filter hash function mismatch: block uses id {found}, reader expects id {expected}")]
    HashMismatch {
        /// Hash id stored in the block.
        found: u8,
        /// Hash id of the reader's hasher.
        expected: u8,
    },
    /// The block was built with a different seed (or keyed-hash secret) than the reader uses.
    #[error("filter hash seed mismatch: block has {found:#018x}, reader expects {expected:#018x}")]
    SeedMismatch {
        /// Seed (or secret check value) stored in the block.
        found: u64,
        /// Seed (or secret check value) of the reader's hasher.
        expected: u64,
    },
    /// A header field holds a value that no valid block can have.
    #[error("invalid filter parameter: {0}")]
    InvalidParameter(&'static str),
    /// The requested filter cannot be built (e.g. bits/key out of range, or ribbon banding kept failing).
    #[error("filter build failed: {0}")]
    Build(String),
    /// A dynamic filter has no room for another key: the insert changed nothing (a cuckoo
    /// filter that could not place a fingerprint after its kicks put every kicked one back).
    #[error("filter full: no room for another key after {len} keys")]
    Full {
        /// Keys the filter holds.
        len: u64,
    },
}
