//! Prefix extractors: which part of a key a prefix filter and a prefix seek work on.

use std::sync::Arc;

/// Maps a key to its prefix. A table records the extractor's [`name`](PrefixExtractor::name),
/// and a reader consults a table's prefix filter only when the names match: a filter built over
/// other prefixes would answer "no" for prefixes that are present.
pub trait PrefixExtractor: Send + Sync + std::fmt::Debug {
    /// A name identifying the extractor *and its parameters* (e.g. `"fixed:8"`).
    fn name(&self) -> String;
    /// The prefix of `key`, or `None` when the key is outside the extractor's domain (such keys
    /// are not added to the prefix filter).
    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]>;
}

/// The first `len` bytes of a key; keys shorter than `len` are out of domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedPrefix {
    len: usize,
}

impl FixedPrefix {
    /// An extractor of `len`-byte prefixes.
    pub fn new(len: usize) -> FixedPrefix {
        FixedPrefix { len }
    }

    /// A shared handle, as options take it.
    pub fn shared(len: usize) -> Arc<dyn PrefixExtractor> {
        Arc::new(FixedPrefix::new(len))
    }

    /// The prefix length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the prefix length is zero.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl PrefixExtractor for FixedPrefix {
    fn name(&self) -> String {
        format!("fixed:{}", self.len)
    }

    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        key.get(..self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_prefix_takes_leading_bytes() {
        let p = FixedPrefix::new(3);
        assert_eq!(p.prefix(b"abcdef"), Some(&b"abc"[..]));
        assert_eq!(p.prefix(b"abc"), Some(&b"abc"[..]));
        assert_eq!(p.prefix(b"ab"), None);
        assert_eq!(p.name(), "fixed:3");
        assert_ne!(p.name(), FixedPrefix::new(4).name());
    }
}
