//! The database handle (`DB`, `DBWithThreadMode<T>`): opening, column families, the thread
//! modes, and [`DBAccess`], what snapshots, iterators and checkpoints read through.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use crate::column_family::{
    BoundColumnFamily, CfInner, ColumnFamily, ColumnFamilyDescriptor, ColumnFamilyTtl,
};
use crate::slice_transform::SliceTransform;
use crate::{Error, Options, DEFAULT_COLUMN_FAMILY_NAME};

/// A key range (`get_approximate_sizes_cf`).
#[derive(Debug, Clone, Copy)]
pub struct Range<'a> {
    pub(crate) start_key: &'a [u8],
    pub(crate) end_key: &'a [u8],
}

impl<'a> Range<'a> {
    /// `[start_key, end_key)`.
    pub fn new(start_key: &'a [u8], end_key: &'a [u8]) -> Range<'a> {
        Range { start_key, end_key }
    }
}

/// How a database keeps its column family handles: [`SingleThreaded`] (created and dropped
/// through `&mut self`, handles borrowed) or [`MultiThreaded`] (through `&self`, handles
/// `Arc`ed). siftdb is thread-safe either way.
pub trait ThreadMode: Sized {
    /// A map of the column families opened.
    #[doc(hidden)]
    fn new_cf_map(cfs: BTreeMap<String, CfInner>) -> Self;
    /// The handle's contents of a column family.
    #[doc(hidden)]
    fn cf_inner(&self, name: &str) -> Option<CfInner>;
    /// The names held.
    #[doc(hidden)]
    fn cf_names(&self) -> Vec<String>;
}

/// Column family handles without locking (see [`ThreadMode`]).
pub struct SingleThreaded {
    pub(crate) cfs: BTreeMap<String, ColumnFamily>,
}

/// Column family handles behind a lock (see [`ThreadMode`]).
pub struct MultiThreaded {
    pub(crate) cfs: RwLock<BTreeMap<String, Arc<CfInner>>>,
}

impl ThreadMode for SingleThreaded {
    fn new_cf_map(cfs: BTreeMap<String, CfInner>) -> Self {
        let cfs = cfs
            .into_iter()
            .map(|(n, inner)| (n, ColumnFamily { inner }))
            .collect();
        SingleThreaded { cfs }
    }

    fn cf_inner(&self, name: &str) -> Option<CfInner> {
        self.cfs.get(name).map(|c| c.inner.clone())
    }

    fn cf_names(&self) -> Vec<String> {
        self.cfs.keys().cloned().collect()
    }
}

impl ThreadMode for MultiThreaded {
    fn new_cf_map(cfs: BTreeMap<String, CfInner>) -> Self {
        let cfs = cfs.into_iter().map(|(n, c)| (n, Arc::new(c))).collect();
        MultiThreaded {
            cfs: RwLock::new(cfs),
        }
    }

    fn cf_inner(&self, name: &str) -> Option<CfInner> {
        self.cfs.read().get(name).map(|c| (**c).clone())
    }

    fn cf_names(&self) -> Vec<String> {
        self.cfs.read().keys().cloned().collect()
    }
}

/// What every database handle holds: the siftdb database and what the layer adds to it. Not
/// for applications (it appears in [`DBAccess`]).
#[doc(hidden)]
pub struct DbCore {
    pub(crate) db: siftdb::Db,
    pub(crate) prefix: Option<SliceTransform>,
    pub(crate) ttl: Option<Duration>,
    pub(crate) path: PathBuf,
    pub(crate) next_cf_id: AtomicU32,
    pub(crate) stats: Option<Arc<crate::statistics::Statistics>>,
    /// The names of the database's merge operator and compaction filter.
    pub(crate) merge_name: Option<String>,
    pub(crate) filter_name: Option<String>,
}

/// What snapshots, iterators and checkpoints read through: every database kind implements it.
pub trait DBAccess {
    /// The database underneath.
    #[doc(hidden)]
    fn core(&self) -> &DbCore;

    /// The siftdb snapshot a [`SnapshotWithThreadMode`](crate::SnapshotWithThreadMode) of
    /// this reads at: one taken now (a transaction's own, if it has one).
    #[doc(hidden)]
    fn take_snapshot(&self) -> siftdb::Snapshot {
        self.core().db.snapshot()
    }

    /// Reads `key` with `readopts`.
    fn get_opt<K: AsRef<[u8]>>(
        &self,
        key: K,
        readopts: &crate::ReadOptions,
    ) -> Result<Option<Vec<u8>>, Error> {
        self.core().get(None, key.as_ref(), readopts)
    }

    /// Reads `key` of a column family with `readopts`.
    fn get_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl crate::AsColumnFamilyRef,
        key: K,
        readopts: &crate::ReadOptions,
    ) -> Result<Option<Vec<u8>>, Error> {
        self.core().get(Some(cf.cf_inner()), key.as_ref(), readopts)
    }

    /// Reads `key` without a copy.
    fn get_pinned_opt<K: AsRef<[u8]>>(
        &self,
        key: K,
        readopts: &crate::ReadOptions,
    ) -> Result<Option<crate::DBPinnableSlice<'_>>, Error> {
        self.core().get_pinned(None, key.as_ref(), readopts)
    }

    /// Reads `key` of a column family without a copy.
    fn get_pinned_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl crate::AsColumnFamilyRef,
        key: K,
        readopts: &crate::ReadOptions,
    ) -> Result<Option<crate::DBPinnableSlice<'_>>, Error> {
        self.core()
            .get_pinned(Some(cf.cf_inner()), key.as_ref(), readopts)
    }

    /// Reads several keys.
    fn multi_get_opt<K, I>(
        &self,
        keys: I,
        readopts: &crate::ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>, Error>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        self.core().multi_get(keys, readopts)
    }

    /// Reads several keys, each of its column family.
    fn multi_get_cf_opt<'b, K, I, W>(
        &self,
        keys_cf: I,
        readopts: &crate::ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>, Error>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'b W, K)>,
        W: crate::AsColumnFamilyRef + 'b,
    {
        keys_cf
            .into_iter()
            .map(|(cf, k)| self.core().get(Some(cf.cf_inner()), k.as_ref(), readopts))
            .collect()
    }
}

/// A database handle (rust-rocksdb's `DBWithThreadMode`); [`DB`] names the default mode.
pub struct DBWithThreadMode<T: ThreadMode> {
    pub(crate) core: DbCore,
    pub(crate) cfs: T,
}

/// The database type: `DBWithThreadMode<SingleThreaded>`, or `<MultiThreaded>` with the
/// `multi-threaded-cf` feature, as in rust-rocksdb.
#[cfg(not(feature = "multi-threaded-cf"))]
pub type DB = DBWithThreadMode<SingleThreaded>;
/// The database type: `DBWithThreadMode<SingleThreaded>`, or `<MultiThreaded>` with the
/// `multi-threaded-cf` feature, as in rust-rocksdb.
#[cfg(feature = "multi-threaded-cf")]
pub type DB = DBWithThreadMode<MultiThreaded>;

impl<T: ThreadMode> DBAccess for DBWithThreadMode<T> {
    fn core(&self) -> &DbCore {
        &self.core
    }
}

impl<T: ThreadMode> std::fmt::Debug for DBWithThreadMode<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RocksDB {{ path: {:?} }}", self.core.path)
    }
}

/// How a database is opened.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenMode {
    ReadWrite,
    ReadOnly,
}

/// The siftdb options of an open: the database's, with each descriptor's keyspace options
/// and, when the database's options have none, a descriptor's merge operator and compaction
/// filter (siftdb has one of each per database).
fn siftdb_options(
    opts: &Options,
    cfs: &[ColumnFamilyDescriptor],
) -> Result<siftdb::Options, Error> {
    if let Some(e) = cfs
        .iter()
        .find_map(|c| c.options.refused.clone())
        .or_else(|| opts.refused.clone())
    {
        return Err(e);
    }
    let mut inner = opts.inner.clone();
    for cf in cfs.iter().filter(|c| c.name != DEFAULT_COLUMN_FAMILY_NAME) {
        inner
            .keyspaces
            .push((cf.name.clone(), cf.options.keyspace_options()));
        let (merge, filter) = (
            &cf.options.inner.merge_operator,
            &cf.options.inner.compaction_filter,
        );
        inner.merge_operator = one_per_db(
            inner.merge_operator.take(),
            merge,
            |m| m.name().to_string(),
            "merge operator",
        )?;
        inner.compaction_filter = one_per_db(
            inner.compaction_filter.take(),
            filter,
            |f| f.name().to_string(),
            "compaction filter",
        )?;
    }
    Ok(inner)
}

impl DbCore {
    /// Opens the siftdb database and checks the column families against what it holds.
    fn open(
        opts: &Options,
        path: &Path,
        cfs: &[ColumnFamilyDescriptor],
        mode: OpenMode,
        ttl: Option<Duration>,
    ) -> Result<(DbCore, BTreeMap<String, CfInner>), Error> {
        let inner = siftdb_options(opts, cfs)?;
        let merge_name = inner.merge_operator.as_ref().map(|m| m.name().to_string());
        let filter_name = inner
            .compaction_filter
            .as_ref()
            .map(|f| f.name().to_string());
        let db = match mode {
            OpenMode::ReadWrite => siftdb::Db::open(path, inner),
            OpenMode::ReadOnly => siftdb::Db::open_read_only(path, inner),
        }
        .map_err(|e| open_error(e, path, opts))?;
        let existing = db.keyspace_names();
        let unopened: Vec<&str> = existing
            .iter()
            .filter(|n| *n != DEFAULT_COLUMN_FAMILY_NAME && !cfs.iter().any(|c| &c.name == *n))
            .map(String::as_str)
            .collect();
        if !unopened.is_empty() && mode == OpenMode::ReadWrite {
            return Err(Error::invalid(format!(
                "Column families not opened: {}",
                unopened.join(", ")
            )));
        }
        let core = DbCore {
            db,
            prefix: opts.prefix.clone(),
            ttl,
            path: path.to_path_buf(),
            next_cf_id: AtomicU32::new(1),
            stats: opts.statistics.clone(),
            merge_name,
            filter_name,
        };
        let map = core.open_cfs(opts, cfs, &existing, mode)?;
        Ok((core, map))
    }

    /// Handles of the named column families, created where missing if the options say so.
    fn open_cfs(
        &self,
        opts: &Options,
        cfs: &[ColumnFamilyDescriptor],
        existing: &[String],
        mode: OpenMode,
    ) -> Result<BTreeMap<String, CfInner>, Error> {
        let mut map = BTreeMap::new();
        let default = CfInner {
            ks: self.db.keyspace(DEFAULT_COLUMN_FAMILY_NAME)?,
            id: 0,
            prefix: self.prefix.clone(),
            ttl: self.ttl,
        };
        map.insert(DEFAULT_COLUMN_FAMILY_NAME.to_string(), default);
        for cf in cfs.iter().filter(|c| c.name != DEFAULT_COLUMN_FAMILY_NAME) {
            let ks = if existing.contains(&cf.name) {
                self.db.keyspace(&cf.name)?
            } else if opts.create_missing_cfs && mode == OpenMode::ReadWrite {
                self.db
                    .create_keyspace(&cf.name, cf.options.keyspace_options())?
            } else {
                return Err(Error::invalid(format!(
                    "Column family not found: {}",
                    cf.name
                )));
            };
            let inner = self.cf_inner(ks, &cf.options, cf.ttl);
            map.insert(cf.name.clone(), inner);
        }
        Ok(map)
    }

    /// A handle's contents for a keyspace, with a fresh id.
    pub(crate) fn cf_inner(
        &self,
        ks: siftdb::Keyspace,
        opts: &Options,
        ttl: ColumnFamilyTtl,
    ) -> CfInner {
        CfInner {
            ks,
            id: self.next_cf_id.fetch_add(1, Ordering::Relaxed),
            prefix: opts.prefix.clone(),
            ttl: ttl.resolve(self.ttl),
        }
    }

    /// A new column family's merge operator or compaction filter must be the database's.
    fn check_same<T: ?Sized>(
        &self,
        given: &Option<Arc<T>>,
        db: &Option<String>,
        name: impl Fn(&T) -> String,
        what: &str,
    ) -> Result<(), Error> {
        match given {
            Some(g) if db.as_deref() != Some(name(g).as_str()) => {
                Err(Error::not_supported(format!(
                "a {what} per column family ({:?}: siftdb has one per database, set when it opens)",
                name(g)
            )))
            }
            _ => Ok(()),
        }
    }

    /// Creates a column family.
    pub(crate) fn create_cf(&self, name: &str, opts: &Options) -> Result<CfInner, Error> {
        if let Some(e) = &opts.refused {
            return Err(e.clone());
        }
        self.check_same(
            &opts.inner.merge_operator,
            &self.merge_name,
            |m| m.name().to_string(),
            "merge operator",
        )?;
        self.check_same(
            &opts.inner.compaction_filter,
            &self.filter_name,
            |f| f.name().to_string(),
            "compaction filter",
        )?;
        let ks = self.db.create_keyspace(name, opts.keyspace_options())?;
        Ok(self.cf_inner(ks, opts, ColumnFamilyTtl::SameAsDb))
    }
}

/// siftdb has one merge operator and one compaction filter per database: a column family's
/// is taken when the database's options have none, and one of another name is refused.
fn one_per_db<T: ?Sized>(
    db: Option<Arc<T>>,
    cf: &Option<Arc<T>>,
    name: impl Fn(&T) -> String,
    what: &str,
) -> Result<Option<Arc<T>>, Error> {
    match (db, cf) {
        (None, cf) => Ok(cf.clone()),
        (Some(db), Some(cf)) if name(&db) != name(cf) => Err(Error::not_supported(format!(
            "a {what} per column family ({:?} beside {:?}: siftdb has one per database)",
            name(cf),
            name(&db)
        ))),
        (db, _) => Ok(db),
    }
}

/// The error of a failed open, in RocksDB's words where they differ.
fn open_error(e: siftdb::Error, path: &Path, opts: &Options) -> Error {
    let missing = !path.join("CURRENT").exists() && !opts.inner.create_if_missing;
    match e {
        siftdb::Error::Locked(p) => Error::with_kind(
            crate::ErrorKind::IOError,
            format!(
                "lock hold by current process, acquire time 0: {}/LOCK: No locks available",
                p.display()
            ),
        ),
        _ if missing => Error::invalid(format!(
            "{}: does not exist (create_if_missing is false)",
            path.display()
        )),
        e => Error::from(e),
    }
}

fn descriptors<I, N>(cfs: I) -> Vec<ColumnFamilyDescriptor>
where
    I: IntoIterator<Item = N>,
    N: AsRef<str>,
{
    cfs.into_iter()
        .map(|n| ColumnFamilyDescriptor::new(n.as_ref(), Options::default()))
        .collect()
}

fn descriptors_with_opts<I, N>(cfs: I) -> Vec<ColumnFamilyDescriptor>
where
    I: IntoIterator<Item = (N, Options)>,
    N: AsRef<str>,
{
    cfs.into_iter()
        .map(|(n, o)| ColumnFamilyDescriptor::new(n.as_ref(), o))
        .collect()
}

impl<T: ThreadMode> DBWithThreadMode<T> {
    fn open_with(
        opts: &Options,
        path: &Path,
        cfs: Vec<ColumnFamilyDescriptor>,
        mode: OpenMode,
        ttl: Option<Duration>,
    ) -> Result<Self, Error> {
        let (core, map) = DbCore::open(opts, path, &cfs, mode, ttl)?;
        Ok(DBWithThreadMode {
            core,
            cfs: T::new_cf_map(map),
        })
    }

    /// Opens (creating if missing) the database at `path` with default options.
    pub fn open_default<P: AsRef<Path>>(path: P) -> Result<Self, Error> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        Self::open(&opts, path)
    }

    /// Opens the database at `path`.
    pub fn open<P: AsRef<Path>>(opts: &Options, path: P) -> Result<Self, Error> {
        Self::open_with(opts, path.as_ref(), Vec::new(), OpenMode::ReadWrite, None)
    }

    /// Opens the database with its column families named.
    pub fn open_cf<P, I, N>(opts: &Options, path: P, cfs: I) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        Self::open_with(
            opts,
            path.as_ref(),
            descriptors(cfs),
            OpenMode::ReadWrite,
            None,
        )
    }

    /// Opens the database with its column families named, each with its options.
    pub fn open_cf_with_opts<P, I, N>(opts: &Options, path: P, cfs: I) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = (N, Options)>,
        N: AsRef<str>,
    {
        Self::open_with(
            opts,
            path.as_ref(),
            descriptors_with_opts(cfs),
            OpenMode::ReadWrite,
            None,
        )
    }

    /// Opens the database with its column families described.
    pub fn open_cf_descriptors<P, I>(opts: &Options, path: P, cfs: I) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        Self::open_with(
            opts,
            path.as_ref(),
            cfs.into_iter().collect(),
            OpenMode::ReadWrite,
            None,
        )
    }

    /// Opens the database read-only (beside a writer, siftdb's `open_read_only`).
    /// `error_if_log_file_exist` is refused when `true` (siftdb replays the WAL instead).
    pub fn open_for_read_only<P: AsRef<Path>>(
        opts: &Options,
        path: P,
        error_if_log_file_exist: bool,
    ) -> Result<Self, Error> {
        Self::open_cf_descriptors_read_only(opts, path, Vec::new(), error_if_log_file_exist)
    }

    /// Opens the database read-only with its column families named.
    pub fn open_cf_for_read_only<P, I, N>(
        opts: &Options,
        path: P,
        cfs: I,
        error_if_log_file_exist: bool,
    ) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        Self::open_cf_descriptors_read_only(opts, path, descriptors(cfs), error_if_log_file_exist)
    }

    /// Opens the database read-only with its column families named, each with its options.
    pub fn open_cf_with_opts_for_read_only<P, I, N>(
        opts: &Options,
        path: P,
        cfs: I,
        error_if_log_file_exist: bool,
    ) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = (N, Options)>,
        N: AsRef<str>,
    {
        Self::open_cf_descriptors_read_only(
            opts,
            path,
            descriptors_with_opts(cfs),
            error_if_log_file_exist,
        )
    }

    /// Opens the database read-only with its column families described.
    pub fn open_cf_descriptors_read_only<P, I>(
        opts: &Options,
        path: P,
        cfs: I,
        error_if_log_file_exist: bool,
    ) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        if error_if_log_file_exist {
            return Err(Error::not_supported("error_if_log_file_exist"));
        }
        Self::open_with(
            opts,
            path.as_ref(),
            cfs.into_iter().collect(),
            OpenMode::ReadOnly,
            None,
        )
    }

    /// Opens the database; every value written by `put` lives `ttl` (siftdb's `put_with_ttl`).
    pub fn open_with_ttl<P: AsRef<Path>>(
        opts: &Options,
        path: P,
        ttl: Duration,
    ) -> Result<Self, Error> {
        Self::open_with(
            opts,
            path.as_ref(),
            Vec::new(),
            OpenMode::ReadWrite,
            Some(ttl),
        )
    }

    /// As [`open_with_ttl`](Self::open_with_ttl), with column families named.
    pub fn open_cf_with_ttl<P, I, N>(
        opts: &Options,
        path: P,
        cfs: I,
        ttl: Duration,
    ) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        Self::open_with(
            opts,
            path.as_ref(),
            descriptors(cfs),
            OpenMode::ReadWrite,
            Some(ttl),
        )
    }

    /// As [`open_with_ttl`](Self::open_with_ttl), with column families described (each may
    /// have its own TTL).
    pub fn open_cf_descriptors_with_ttl<P, I>(
        opts: &Options,
        path: P,
        cfs: I,
        ttl: Duration,
    ) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        Self::open_with(
            opts,
            path.as_ref(),
            cfs.into_iter().collect(),
            OpenMode::ReadWrite,
            Some(ttl),
        )
    }

    /// Opens a secondary instance of the database at `primary_path`: a read-only open beside
    /// its writer that [`try_catch_up_with_primary`](Self::try_catch_up_with_primary) brings up
    /// to date (siftdb's `Db::open_read_only` and `Db::try_catch_up_with_primary`).
    /// `secondary_path` is created, as RocksDB creates it for its info log; siftdb writes
    /// nothing there.
    pub fn open_as_secondary<P: AsRef<Path>>(
        opts: &Options,
        primary_path: P,
        secondary_path: P,
    ) -> Result<Self, Error> {
        Self::open_cf_descriptors_as_secondary(opts, primary_path, secondary_path, Vec::new())
    }

    /// A secondary instance with column families, each with its options (see
    /// [`open_as_secondary`](Self::open_as_secondary)).
    pub fn open_cf_descriptors_as_secondary<P, I>(
        opts: &Options,
        primary_path: P,
        secondary_path: P,
        cfs: I,
    ) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        let secondary = secondary_path.as_ref();
        std::fs::create_dir_all(secondary).map_err(|e| {
            Error::with_kind(
                crate::ErrorKind::IOError,
                format!("{}: {e}", secondary.display()),
            )
        })?;
        Self::open_with(
            opts,
            primary_path.as_ref(),
            cfs.into_iter().collect(),
            OpenMode::ReadOnly,
            None,
        )
    }

    /// A secondary instance with column families named (see
    /// [`open_as_secondary`](Self::open_as_secondary)).
    pub fn open_cf_as_secondary<P, I, N>(
        opts: &Options,
        primary_path: P,
        secondary_path: P,
        cfs: I,
    ) -> Result<Self, Error>
    where
        P: AsRef<Path>,
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        Self::open_cf_descriptors_as_secondary(opts, primary_path, secondary_path, descriptors(cfs))
    }

    /// Brings a secondary (or read-only) instance up to date with its primary: what the
    /// primary flushed, compacted or logged since becomes what reads see (siftdb's
    /// `Db::try_catch_up_with_primary`; refused while snapshots of this instance are held).
    pub fn try_catch_up_with_primary(&self) -> Result<(), Error> {
        self.core
            .db
            .try_catch_up_with_primary()
            .map_err(Error::from)
    }

    /// The column families of the database at `path`, `"default"` first.
    pub fn list_cf<P: AsRef<Path>>(opts: &Options, path: P) -> Result<Vec<String>, Error> {
        let mut inner = opts.inner.clone();
        inner.create_if_missing = false;
        let db = siftdb::Db::open_read_only(path.as_ref(), inner)
            .map_err(|e| open_error(e, path.as_ref(), opts))?;
        Ok(db.keyspace_names())
    }

    /// Deletes the database at `path` (refused while a database has it open).
    pub fn destroy<P: AsRef<Path>>(opts: &Options, path: P) -> Result<(), Error> {
        let _ = opts;
        crate::destroy::destroy(path.as_ref())
    }

    /// Repairing: siftdb recovers at open, and checks with `siftdb check`; refused.
    pub fn repair<P: AsRef<Path>>(opts: &Options, path: P) -> Result<(), Error> {
        let _ = (opts, path);
        Err(Error::not_supported("repair (siftdb recovers at open)"))
    }

    /// The database's directory.
    pub fn path(&self) -> &Path {
        &self.core.path
    }

    pub(crate) fn cf(&self, name: &str) -> Option<CfInner> {
        self.cfs.cf_inner(name)
    }
}

impl DBWithThreadMode<SingleThreaded> {
    /// Creates a column family (a siftdb keyspace).
    pub fn create_cf<N: AsRef<str>>(&mut self, name: N, opts: &Options) -> Result<(), Error> {
        let inner = self.core.create_cf(name.as_ref(), opts)?;
        self.cfs
            .cfs
            .insert(name.as_ref().to_string(), ColumnFamily { inner });
        Ok(())
    }

    /// Drops a column family.
    pub fn drop_cf(&mut self, name: &str) -> Result<(), Error> {
        self.core.db.drop_keyspace(name)?;
        self.cfs.cfs.remove(name);
        Ok(())
    }

    /// The handle of a column family.
    pub fn cf_handle(&self, name: &str) -> Option<&ColumnFamily> {
        self.cfs.cfs.get(name)
    }
}

impl DBWithThreadMode<MultiThreaded> {
    /// Creates a column family (a siftdb keyspace).
    pub fn create_cf<N: AsRef<str>>(&self, name: N, opts: &Options) -> Result<(), Error> {
        let inner = self.core.create_cf(name.as_ref(), opts)?;
        self.cfs
            .cfs
            .write()
            .insert(name.as_ref().to_string(), Arc::new(inner));
        Ok(())
    }

    /// Drops a column family.
    pub fn drop_cf(&self, name: &str) -> Result<(), Error> {
        self.core.db.drop_keyspace(name)?;
        self.cfs.cfs.write().remove(name);
        Ok(())
    }

    /// The handle of a column family.
    pub fn cf_handle(&self, name: &str) -> Option<Arc<BoundColumnFamily<'_>>> {
        let inner = self.cfs.cfs.read().get(name)?.clone();
        Some(Arc::new(BoundColumnFamily {
            inner,
            db: std::marker::PhantomData,
        }))
    }
}

/// A table file of the database (`live_files`).
#[derive(Debug, Clone)]
pub struct LiveFile {
    /// Its column family.
    pub column_family_name: String,
    /// Its file name.
    pub name: String,
    /// Its directory.
    pub directory: String,
    /// Bytes.
    pub size: usize,
    /// Its level.
    pub level: i32,
    /// Its first key.
    pub start_key: Option<Vec<u8>>,
    /// Its last key.
    pub end_key: Option<Vec<u8>>,
    /// Smallest sequence number.
    pub smallest_seqno: u64,
    /// Largest sequence number.
    pub largest_seqno: u64,
    /// Entries.
    pub num_entries: u64,
    /// Deletions.
    pub num_deletions: u64,
}

/// Size and file count of a column family.
#[derive(Debug, Clone, Default)]
pub struct ColumnFamilyMetaData {
    /// Bytes of its table files.
    pub size: u64,
    /// Its name.
    pub name: String,
    /// Table files.
    pub file_count: usize,
}
