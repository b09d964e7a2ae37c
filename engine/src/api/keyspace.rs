//! Keyspaces (RocksDB's column families, fjall's keyspaces): the public handle, and creating and
//! dropping them.
//!
//! Every keyspace is its own LSM tree — memtables, versions, compaction, filter plan and options
//! — and all share the database's WAL, sequence, block cache and manifest. A keyspace is created
//! and dropped by one manifest record each, so a crash leaves it wholly there or wholly gone.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::base::batch::WriteBatch;
use crate::api::db::{Db, DbInner};
use crate::base::error::{Error, Result};
use crate::paths::iterator::{DbIterator, RawIterator};
use crate::base::keyspace_options::{options_text, validate_name, KeyspaceOptions, DEFAULT_KEYSPACE};
use crate::core::memtable::Memtable;
use crate::base::options::ReadOptions;
use crate::paths::properties::LevelInfo;
use crate::core::tree::{Tree, TreeMemtables};
use crate::base::version_edit::VersionEdit;

/// A handle to one keyspace of a [`Db`]: the same reads and writes as `Db`'s own methods (which
/// act on the keyspace `"default"`), on this keyspace's tree. `Clone`, `Send` and `Sync`; it keeps
/// the database open while it lives. Once the keyspace is dropped every call fails with
/// [`Error::KeyspaceDropped`].
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
/// let users = db.keyspace("users")?;
/// users.put("u:1", "ann")?;
/// assert_eq!(users.get("u:1")?, Some(b"ann".to_vec()));
/// assert_eq!(db.get("u:1")?, None); // another keyspace
/// db.drop_keyspace("users")?;
/// assert!(matches!(users.get("u:1"), Err(siftdb::Error::KeyspaceDropped(_))));
/// # Ok::<(), siftdb::Error>(())
/// ```
#[derive(Clone)]
pub struct Keyspace {
    db: Db,
    tree: Arc<Tree>,
}

impl std::fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyspace")
            .field("name", &self.tree.name)
            .field("db", &self.db)
            .finish()
    }
}

impl Keyspace {
    pub(crate) fn new(db: Db, tree: Arc<Tree>) -> Keyspace {
        Keyspace { db, tree }
    }

    /// The keyspace's id in WAL records and manifest edits.
    pub(crate) fn id(&self) -> u32 {
        self.tree.id
    }

    /// The database instance the keyspace belongs to.
    pub(crate) fn instance(&self) -> u64 {
        self.db.inner.instance
    }

    pub(crate) fn tree(&self) -> &Arc<Tree> {
        &self.tree
    }

    fn inner(&self) -> &Arc<DbInner> {
        &self.db.inner
    }

    /// The keyspace's name.
    pub fn name(&self) -> &str {
        &self.tree.name
    }

    /// Stores `value` under `key` in this keyspace.
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: K, value: V) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put_in(self, key.as_ref(), value.as_ref());
        self.db.write(batch)
    }

    /// Stores `value` under `key` in this keyspace until `ttl` has passed (see
    /// [`Db::put_with_ttl`]).
    pub fn put_with_ttl(&self, key: &[u8], value: &[u8], ttl: std::time::Duration) -> Result<()> {
        let expiry = crate::base::ttl::expiry_after(self.inner().options.clock.as_ref(), ttl);
        let mut batch = WriteBatch::new();
        batch.put_expiring(Some(self), key, value, expiry);
        self.db.write(batch)
    }

    /// Removes `key` from this keyspace (no error if it is absent).
    pub fn delete<K: AsRef<[u8]>>(&self, key: K) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete_in(self, key.as_ref());
        self.db.write(batch)
    }

    /// Removes every key in `[start, end)` of this keyspace with one record (see
    /// [`Db::delete_range`](crate::Db::delete_range)).
    pub fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete_range_in(self, start, end);
        self.db.write(batch)
    }

    /// Stores a merge operand for `key` in this keyspace (see
    /// [`Db::merge`](crate::Db::merge)).
    pub fn merge(&self, key: &[u8], operand: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.merge_in(self, key, operand);
        self.db.write(batch)
    }

    /// The value of `key`, or `None`.
    pub fn get<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// [`Keyspace::get`] reading as `opts` say.
    pub fn get_opt<K: AsRef<[u8]>>(&self, key: K, opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        let mut value = Vec::new();
        let found = self
            .inner()
            .get_latest(&self.tree, key.as_ref(), opts, &mut value)?;
        Ok(found.then_some(value))
    }

    /// Reads `key` into `buf` (cleared first); returns whether it was found.
    pub fn get_into<K: AsRef<[u8]>>(&self, key: K, buf: &mut Vec<u8>) -> Result<bool> {
        buf.clear();
        self.inner()
            .get_latest(&self.tree, key.as_ref(), &ReadOptions::default(), buf)
    }

    /// Looks up every key of `keys` in this keyspace at one point in time (see
    /// [`Db::multi_get`]); answers in the same order.
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Result<Option<Vec<u8>>>> {
        let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        self.inner().multi_get(&self.tree, &keys)
    }

    /// An iterator over all keys of this keyspace in order (see [`Db::iter`]).
    pub fn iter(&self) -> DbIterator {
        self.iter_opt(&ReadOptions::default())
    }

    /// [`Keyspace::iter`] reading as `opts` say.
    pub fn iter_opt(&self, opts: &ReadOptions) -> DbIterator {
        crate::paths::read::iterator::<&[u8], _>(self.inner(), &self.tree, None, &(..), None, opts)
    }

    /// An iterator over the keys of this keyspace in `range` (see [`Db::range`]).
    pub fn range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(&self, range: R) -> DbIterator {
        crate::paths::read::iterator(
            self.inner(),
            &self.tree,
            None,
            &range,
            None,
            &ReadOptions::default(),
        )
    }

    /// An iterator over the keys of this keyspace that start with `prefix` (see
    /// [`Db::prefix_iter`]).
    pub fn prefix_iter<P: AsRef<[u8]>>(&self, prefix: P) -> DbIterator {
        crate::paths::read::prefix_iterator(self.inner(), &self.tree, None, prefix.as_ref())
    }

    /// A raw cursor over this keyspace (see [`Db::raw_iter`]).
    pub fn raw_iter(&self) -> RawIterator {
        self.raw_iter_opt(&ReadOptions::default())
    }

    /// A raw cursor over this keyspace reading as `opts` say, within its bounds (see
    /// [`Db::raw_iter_opt`]).
    pub fn raw_iter_opt(&self, opts: &ReadOptions) -> RawIterator {
        crate::paths::read::raw_iterator(self.inner(), &self.tree, None, opts)
    }

    /// Flushes this keyspace's memtable to an L0 table and waits until it is on disk.
    pub fn flush(&self) -> Result<()> {
        self.tree.check_live()?;
        crate::jobs::flush::flush_and_wait(self.inner(), &self.tree)
    }

    /// Compacts the key range `[start, end]` of this keyspace (see [`Db::compact_range`]).
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.tree.check_live()?;
        self.inner().check_open()?;
        self.inner().check_writable()?;
        crate::jobs::compaction::compact_range(self.inner(), &self.tree, start, end)
    }

    /// Every level of this keyspace's tree (see [`Db::level_info`]); empty once dropped.
    pub fn level_info(&self) -> Vec<LevelInfo> {
        if self.tree.check_live().is_err() {
            return Vec::new();
        }
        crate::paths::properties::level_reports(&self.tree, &self.tree.read_view().version)
    }

    /// A named property of this keyspace (see [`Db::property`]); `None` once dropped.
    pub fn property(&self, name: &str) -> Option<String> {
        self.tree.check_live().ok()?;
        crate::paths::properties::property(self.inner(), &self.tree, name)
    }
}

impl DbInner {
    /// The live tree named `name`.
    pub(crate) fn tree_named(&self, name: &str) -> Option<Arc<Tree>> {
        let state = self.state.lock();
        state
            .trees
            .values()
            .find(|t| t.tree.name == name)
            .map(|t| Arc::clone(&t.tree))
    }

    /// Creates keyspace `name` (one manifest record), unless it exists: then `Ok(None)` when
    /// `exists_ok`, [`Error::AlreadyExists`] otherwise.
    pub(crate) fn create_tree(
        &self,
        name: &str,
        opts: &KeyspaceOptions,
        exists_ok: bool,
    ) -> Result<Arc<Tree>> {
        validate_name(name)?;
        self.check_writable()?;
        let options = opts.apply_to(&self.options);
        options.validate()?;
        // Keyspace changes go one at a time, as every manifest writer does; the name is checked
        // again under the manifest lock so two creators of one name cannot both succeed.
        self.writes.exclusive(|| {
            self.sync_wal()?;
            self.versions
                .create_tree(self, name, options, &options_text(opts), exists_ok)
        })
    }

    /// Makes every acknowledged write durable before a keyspace change is recorded, so that
    /// after power loss the database is a prefix of its history: a keyspace created or dropped
    /// never survives writes acknowledged before it. The caller runs inside
    /// `WriteQueue::exclusive` (no group holds the WAL); the sync runs without the state lock.
    fn sync_wal(&self) -> Result<()> {
        let Some(mut wal) = self.state.lock().wal.take() else {
            return Err(Error::Background(
                "WAL unavailable after an earlier failure".to_string(),
            ));
        };
        let synced = wal.sync();
        let mut state = self.state.lock();
        state.wal = Some(wal);
        if let Err(e) = &synced {
            // What the WAL holds may not survive power loss: no later write may be acknowledged.
            state
                .bg_error
                .get_or_insert_with(|| format!("WAL sync failed: {e}"));
            self.state_changed.notify_all();
        }
        synced.map_err(Error::from)
    }

    /// Drops keyspace `name`: one manifest record, then its memtables, cached blocks and files go.
    pub(crate) fn drop_tree(&self, name: &str) -> Result<()> {
        self.check_writable()?;
        if name == DEFAULT_KEYSPACE {
            return Err(Error::InvalidArgument(
                "the \"default\" keyspace cannot be dropped".to_string(),
            ));
        }
        let tree = self
            .tree_named(name)
            .ok_or_else(|| Error::KeyspaceNotFound(name.to_string()))?;
        // No group commit runs while the tree leaves the state: a write either went in before
        // (and is dropped with it) or resolves the keyspace after and fails.
        let version = self.writes.exclusive(|| {
            self.sync_wal()?;
            self.versions.drop_tree(self, &tree)
        })?;
        for (_, f) in version.all() {
            self.cache.erase_table(f.meta.number);
        }
        crate::paths::recovery::delete_obsolete_files(self);
        Ok(())
    }

    /// The memtables of a new tree: empty, in the current WAL.
    pub(crate) fn new_tree_memtables(tree: Arc<Tree>, wal_number: u64) -> TreeMemtables {
        let mem = Arc::clone(&tree.read_view().mem);
        mem.move_to_wal(wal_number);
        TreeMemtables {
            tree,
            mem,
            imm: Vec::new(),
        }
    }

    /// Names of the live keyspaces, `"default"` first.
    pub(crate) fn keyspace_names(&self) -> Vec<String> {
        let state = self.state.lock();
        state.trees.values().map(|t| t.tree.name.clone()).collect()
    }
}

/// A tree for keyspace `id`, with an empty memtable in WAL `wal_number`.
pub(crate) fn new_tree(
    id: u32,
    name: &str,
    options: crate::base::options::Options,
    wal_number: u64,
) -> Arc<Tree> {
    let mem = Arc::new(Memtable::for_tree(wal_number, &options));
    Arc::new(Tree::new(id, name, options, mem))
}

/// The manifest edit creating keyspace `id`.
pub(crate) fn create_edit(id: u32, name: &str, options_text: String) -> VersionEdit {
    VersionEdit {
        keyspace: id,
        created: Some((name.to_string(), options_text)),
        ..VersionEdit::default()
    }
}

/// Marks `tree` dropped (its handles fail from now on).
pub(crate) fn mark_dropped(tree: &Tree) {
    tree.dropped.store(true, Ordering::Release);
}
