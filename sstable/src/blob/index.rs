//! [`BlobIndex`]: the value a table stores for a value kept in a blob file
//! ([`ValueKind::BlobIndex`](crate::ValueKind)).

use super::BlobReference;

/// The flag bit of an expiring value's index: the expiry time follows the flags.
const HAS_EXPIRY: u8 = 1;

/// What a table stores in place of a value kept in a blob file: where the value is and, for an
/// expiring value (`Db::put_with_ttl`), when it expires, so that a read or a compaction judges
/// expiry without reading the blob.
///
/// ```text
/// flags u8 (bit 0: expiring) | expiry u64 LE (if expiring) | BlobReference
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobIndex {
    /// Where the value is.
    pub reference: BlobReference,
    /// Milliseconds since the Unix epoch after which the value is gone (`None`: never).
    pub expiry: Option<u64>,
}

impl BlobIndex {
    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32);
        match self.expiry {
            Some(expiry) => {
                out.push(HAS_EXPIRY);
                out.extend_from_slice(&expiry.to_le_bytes());
            }
            None => out.push(0),
        }
        out.extend_from_slice(&self.reference.encode());
        out
    }

    /// Decodes [`BlobIndex::encode`]'s bytes (all of them); `None` for anything else.
    pub fn decode(bytes: &[u8]) -> Option<BlobIndex> {
        let (&flags, rest) = bytes.split_first()?;
        let (expiry, rest) = match flags {
            0 => (None, rest),
            HAS_EXPIRY => {
                let (at, rest) = rest.split_at_checked(8)?;
                (Some(u64::from_le_bytes(at.try_into().ok()?)), rest)
            }
            _ => return None,
        };
        Some(BlobIndex {
            reference: BlobReference::decode(rest)?,
            expiry,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compression::Compression;

    fn reference() -> BlobReference {
        BlobReference {
            file_number: 12,
            offset: 4_000,
            size: 4_096,
            checksum: 0x1234_5678,
            compression: Compression::None,
        }
    }

    #[test]
    fn indexes_round_trip_with_and_without_expiry() {
        for expiry in [None, Some(0), Some(1_700_000_000_000), Some(u64::MAX)] {
            let index = BlobIndex {
                reference: reference(),
                expiry,
            };
            assert_eq!(BlobIndex::decode(&index.encode()), Some(index));
        }
    }

    #[test]
    fn damaged_indexes_do_not_decode() {
        let bytes = BlobIndex {
            reference: reference(),
            expiry: Some(99),
        }
        .encode();
        for cut in 0..bytes.len() {
            assert_eq!(BlobIndex::decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut flags = bytes.clone();
        flags[0] = 2;
        assert_eq!(BlobIndex::decode(&flags), None);
        let mut long = bytes;
        long.push(0);
        assert_eq!(BlobIndex::decode(&long), None);
    }
}
