//! Key heads: the first 16 bytes of a user key as a big-endian integer (zero-padded), kept
//! next to a key so most comparisons never follow the key's pointer or call `memcmp`.
//!
//! Where two heads differ they order the keys exactly as the keys themselves would: the first
//! differing byte is either a real byte of both keys, or one key's zero padding against a
//! non-zero byte of a longer key it is a prefix of (so it is the smaller one). Equal heads say
//! nothing, and only then are the whole keys compared. Internal keys order by user key first, so
//! the same holds for them with the user key's head.
//!
//! Used by the memtable's skiplist keys and by the per-level file ranges of a `Version`.

use std::cmp::Ordering;

/// See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct KeyHead(u128);

impl KeyHead {
    /// The head of `user_key`.
    pub(crate) fn of(user_key: &[u8]) -> KeyHead {
        let mut bytes = [0u8; 16];
        let n = user_key.len().min(16);
        bytes[..n].copy_from_slice(&user_key[..n]);
        KeyHead(u128::from_be_bytes(bytes))
    }

    /// `self`'s key compared with `other`'s by their heads, calling `full` only on a tie.
    pub(crate) fn cmp_then(self, other: KeyHead, full: impl FnOnce() -> Ordering) -> Ordering {
        match self.cmp(&other) {
            Ordering::Equal => full(),
            decided => decided,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_comparison_agrees_with_key_comparison() {
        let keys: [&[u8]; 13] = [
            b"",
            b"\0",
            b"a",
            b"a\0",
            b"a\0\x01",
            b"ab",
            b"abcdefgh",
            b"abcdefghijklmnop",
            b"abcdefghijklmnop\0",
            b"abcdefghijklmnopq",
            b"abcdefghijklmnoq",
            b"b",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(
                    KeyHead::of(a).cmp_then(KeyHead::of(b), || a.cmp(b)),
                    a.cmp(b),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }
}
