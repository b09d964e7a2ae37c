//! Column families: siftdb keyspaces, with the handles rust-rocksdb hands out.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use crate::slice_transform::SliceTransform;
use crate::Options;

/// The column family every database has (siftdb's `DEFAULT_KEYSPACE`).
pub const DEFAULT_COLUMN_FAMILY_NAME: &str = siftdb::DEFAULT_KEYSPACE;

/// A column family's name and options, for opening or creating it.
#[derive(Clone, Debug)]
pub struct ColumnFamilyDescriptor {
    pub(crate) name: String,
    pub(crate) options: Options,
    pub(crate) ttl: ColumnFamilyTtl,
}

impl ColumnFamilyDescriptor {
    /// A descriptor whose TTL follows the database's.
    pub fn new<S: Into<String>>(name: S, options: Options) -> Self {
        Self::new_with_ttl(name, options, ColumnFamilyTtl::SameAsDb)
    }

    /// A descriptor with its own TTL.
    pub fn new_with_ttl<S: Into<String>>(name: S, options: Options, ttl: ColumnFamilyTtl) -> Self {
        ColumnFamilyDescriptor {
            name: name.into(),
            options,
            ttl,
        }
    }

    /// Sets the TTL.
    pub fn set_ttl(&mut self, ttl: ColumnFamilyTtl) {
        self.ttl = ttl;
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The TTL.
    pub fn ttl(&self) -> ColumnFamilyTtl {
        self.ttl
    }
}

/// How long values written to a column family live (siftdb's `put_with_ttl`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ColumnFamilyTtl {
    /// As the database (`DB::open_with_ttl`).
    #[default]
    SameAsDb,
    /// This long.
    Duration(Duration),
    /// Forever.
    Disabled,
}

impl ColumnFamilyTtl {
    pub(crate) fn resolve(self, db_ttl: Option<Duration>) -> Option<Duration> {
        match self {
            ColumnFamilyTtl::SameAsDb => db_ttl,
            ColumnFamilyTtl::Duration(d) => Some(d),
            ColumnFamilyTtl::Disabled => None,
        }
    }
}

/// What a column family handle holds: the keyspace, its id in this session, its prefix
/// extractor and TTL. Not for applications (it appears in [`AsColumnFamilyRef`]).
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct CfInner {
    pub(crate) ks: siftdb::Keyspace,
    pub(crate) id: u32,
    pub(crate) prefix: Option<SliceTransform>,
    pub(crate) ttl: Option<Duration>,
}

/// A column family handle of a single-threaded database.
#[derive(Debug)]
pub struct ColumnFamily {
    pub(crate) inner: CfInner,
}

/// A column family handle of a multi-threaded database, valid while the database lives.
#[derive(Debug)]
pub struct BoundColumnFamily<'a> {
    pub(crate) inner: Arc<CfInner>,
    pub(crate) db: PhantomData<&'a ()>,
}

/// The handle type `cf_handle` returns in the default thread mode.
#[cfg(not(feature = "multi-threaded-cf"))]
pub type ColumnFamilyRef<'a> = &'a ColumnFamily;
/// The handle type `cf_handle` returns in the default thread mode.
#[cfg(feature = "multi-threaded-cf")]
pub type ColumnFamilyRef<'a> = Arc<BoundColumnFamily<'a>>;

/// What names a column family in `_cf` calls.
pub trait AsColumnFamilyRef {
    /// The handle's contents.
    #[doc(hidden)]
    fn cf_inner(&self) -> &CfInner;
}

impl AsColumnFamilyRef for ColumnFamily {
    fn cf_inner(&self) -> &CfInner {
        &self.inner
    }
}

impl AsColumnFamilyRef for &ColumnFamily {
    fn cf_inner(&self) -> &CfInner {
        &self.inner
    }
}

impl AsColumnFamilyRef for Arc<BoundColumnFamily<'_>> {
    fn cf_inner(&self) -> &CfInner {
        &self.inner
    }
}
