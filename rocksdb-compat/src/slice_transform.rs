//! Prefix extractors (RocksDB's `SliceTransform`) over siftdb's `PrefixExtractor`.

use std::sync::Arc;

/// Whether a key has a prefix at all.
pub type InDomainFn = fn(&[u8]) -> bool;

/// A prefix extractor: fixed-length (siftdb's `FixedPrefix`) or a function.
#[derive(Clone, Debug)]
pub struct SliceTransform {
    inner: Arc<dyn siftdb::PrefixExtractor>,
}

#[derive(Debug)]
struct FnTransform {
    name: String,
    transform: for<'a> fn(&'a [u8]) -> &'a [u8],
    in_domain: Option<InDomainFn>,
}

impl siftdb::PrefixExtractor for FnTransform {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        match self.in_domain {
            Some(in_domain) if !in_domain(key) => None,
            _ => Some((self.transform)(key)),
        }
    }
}

#[derive(Debug)]
struct Noop;

impl siftdb::PrefixExtractor for Noop {
    fn name(&self) -> String {
        "rocksdb.Noop".to_string()
    }

    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        Some(key)
    }
}

impl SliceTransform {
    /// An extractor by function; keys `in_domain_fn` rejects have no prefix. The name is
    /// recorded with the database: reopen with the same name and function.
    pub fn create(
        name: impl Into<String>,
        transform_fn: for<'a> fn(&'a [u8]) -> &'a [u8],
        in_domain_fn: Option<InDomainFn>,
    ) -> SliceTransform {
        SliceTransform {
            inner: Arc::new(FnTransform {
                name: name.into(),
                transform: transform_fn,
                in_domain: in_domain_fn,
            }),
        }
    }

    /// The first `len` bytes (siftdb's `FixedPrefix`); shorter keys have no prefix.
    pub fn create_fixed_prefix(len: usize) -> SliceTransform {
        SliceTransform {
            inner: siftdb::FixedPrefix::shared(len),
        }
    }

    /// The whole key is its prefix.
    pub fn create_noop() -> SliceTransform {
        SliceTransform {
            inner: Arc::new(Noop),
        }
    }

    /// The siftdb extractor.
    pub(crate) fn extractor(&self) -> Arc<dyn siftdb::PrefixExtractor> {
        self.inner.clone()
    }

    /// The prefix of `key`, if it has one.
    pub(crate) fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        self.inner.prefix(key)
    }
}
