//! The public handle of a keyspace (RocksDB's column families, fjall's keyspaces), and the write
//! batch methods that name one. Creating and dropping keyspaces is `paths/keyspaces.rs`.

use std::sync::Arc;

use siftdb_sstable::ValueKind;

use crate::api::db::Db;
use crate::api::readable::{forward_reads_to_readable, readable_through_target, ReadTarget};
use crate::base::batch::{KeyspaceTag, WriteBatch};
use crate::base::error::Result;
use crate::base::options::{ReadOptions, WriteOptions};
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::level_info::LevelInfo;
use crate::paths::engine::Engine;
use crate::paths::iterator::{DbIterator, RawIterator};

/// A handle to one keyspace of a [`Db`]: the same reads and writes as `Db`'s own methods (which
/// act on the keyspace `"default"`), on this keyspace's tree. `Clone`, `Send` and `Sync`; it keeps
/// the database open while it lives. Once the keyspace is dropped every call fails with
/// [`Error::KeyspaceDropped`](crate::Error::KeyspaceDropped).
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
    tree: Arc<KeyspaceTree>,
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
    pub(crate) fn new(db: Db, tree: Arc<KeyspaceTree>) -> Keyspace {
        Keyspace { db, tree }
    }

    /// What a write batch records of the keyspace it names.
    pub(crate) fn tag(&self) -> KeyspaceTag {
        KeyspaceTag {
            id: self.tree.id,
            instance: self.engine().instance(),
            name: Arc::clone(&self.tree.name),
        }
    }

    pub(crate) fn tree(&self) -> &Arc<KeyspaceTree> {
        &self.tree
    }

    fn engine(&self) -> &Arc<Engine> {
        self.db.engine()
    }

    /// The keyspace's name.
    pub fn name(&self) -> &str {
        &self.tree.name
    }

    /// Stores `value` under `key` in this keyspace.
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: K, value: V) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// [`Keyspace::put`] with write options (see [`Db::put_opt`](crate::Db::put_opt)).
    pub fn put_opt<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: K,
        value: V,
        opts: &WriteOptions,
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put_in(self, key, value);
        self.db.write_opt(batch, opts)
    }

    /// Stores `value` under `key` in this keyspace until `ttl` has passed (see
    /// [`Db::put_with_ttl`]).
    pub fn put_with_ttl<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: K,
        value: V,
        ttl: std::time::Duration,
    ) -> Result<()> {
        let expiry =
            crate::base::ttl::expiry_after(self.engine().shared().options().clock.as_ref(), ttl);
        let mut batch = WriteBatch::new();
        batch.put_expiring(Some(&self.tag()), key.as_ref(), value.as_ref(), expiry);
        self.db.write(batch)
    }

    /// Removes `key` from this keyspace (no error if it is absent).
    pub fn delete<K: AsRef<[u8]>>(&self, key: K) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// [`Keyspace::delete`] with write options.
    pub fn delete_opt<K: AsRef<[u8]>>(&self, key: K, opts: &WriteOptions) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete_in(self, key);
        self.db.write_opt(batch, opts)
    }

    /// Removes every key in `[start, end)` of this keyspace with one record (see
    /// [`Db::delete_range`](crate::Db::delete_range)).
    pub fn delete_range<S: AsRef<[u8]>, E: AsRef<[u8]>>(&self, start: S, end: E) -> Result<()> {
        self.delete_range_opt(start, end, &WriteOptions::default())
    }

    /// [`Keyspace::delete_range`] with write options.
    pub fn delete_range_opt<S: AsRef<[u8]>, E: AsRef<[u8]>>(
        &self,
        start: S,
        end: E,
        opts: &WriteOptions,
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete_range_in(self, start, end);
        self.db.write_opt(batch, opts)
    }

    /// Stores a merge operand for `key` in this keyspace (see
    /// [`Db::merge`](crate::Db::merge)).
    pub fn merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: K, operand: V) -> Result<()> {
        self.merge_opt(key, operand, &WriteOptions::default())
    }

    /// [`Keyspace::merge`] with write options.
    pub fn merge_opt<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: K,
        operand: V,
        opts: &WriteOptions,
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.merge_in(self, key, operand);
        self.db.write_opt(batch, opts)
    }

    /// A raw cursor over this keyspace (see [`Db::raw_iter`]).
    pub fn raw_iter(&self) -> RawIterator {
        self.raw_iter_opt(&ReadOptions::default())
    }

    /// A raw cursor over this keyspace reading as `opts` say, within its bounds (see
    /// [`Db::raw_iter_opt`]).
    pub fn raw_iter_opt(&self, opts: &ReadOptions) -> RawIterator {
        crate::paths::read::raw_iterator(self.engine(), &self.tree, None, opts)
            .in_keyspace(&self.tree.name)
    }

    /// Flushes this keyspace's memtable to an L0 table and waits until it is on disk.
    pub fn flush(&self) -> Result<()> {
        self.tree.check_live()?;
        self.engine().flush(&self.tree)
    }

    /// Changes this keyspace's options on the open database (see [`Db::set_options`]; the
    /// database's own options — its compaction threads — are refused here).
    pub fn set_options(&self, changes: &[(&str, &str)]) -> Result<()> {
        self.db.set_tree_options(&self.tree, changes, false)
    }

    /// Compacts the key range `[start, end]` of this keyspace (see [`Db::compact_range`]).
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.tree.check_live()?;
        self.engine().compact_range(&self.tree, start, end)
    }

    /// Ingests table files built by [`SstFileWriter`](crate::SstFileWriter) into this keyspace
    /// (see [`Db::ingest_external_file`]).
    pub fn ingest_external_file<P: AsRef<std::path::Path>>(
        &self,
        paths: &[P],
        opts: &crate::IngestOptions,
    ) -> Result<()> {
        self.tree.check_live()?;
        let paths: Vec<std::path::PathBuf> =
            paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
        self.engine()
            .ingest_external_files(&self.tree, &paths, opts)
    }

    /// Deletes this keyspace's tables below L0 whose keys all lie in `[start, end]` (see
    /// [`Db::delete_files_in_range`]); returns how many.
    pub fn delete_files_in_range(
        &self,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> Result<usize> {
        self.tree.check_live()?;
        self.engine()
            .delete_files_in_range(&self.tree, start.as_ref(), end.as_ref())
    }

    /// Every level of this keyspace's tree (see [`Db::level_info`]); empty once dropped.
    pub fn level_info(&self) -> Vec<LevelInfo> {
        if self.tree.check_live().is_err() {
            return Vec::new();
        }
        crate::core::level_info::level_reports(&self.tree, &self.tree.read_view().version)
    }

    /// A named property of this keyspace (see [`Db::property`]); `None` once dropped.
    pub fn property(&self, name: &str) -> Option<String> {
        self.tree.check_live().ok()?;
        crate::paths::properties::property(self.engine(), &self.tree, name)
    }
}

readable_through_target!(Keyspace, |ks| ReadTarget {
    engine: ks.engine(),
    tree: &ks.tree,
    sequence: None,
});
forward_reads_to_readable!(Keyspace, DbIterator);

impl WriteBatch {
    /// Adds a put to keyspace `ks`. A keyspace of another database, or one dropped before the
    /// batch is written, makes the whole batch fail at write time.
    pub fn put_in<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        ks: &Keyspace,
        key: K,
        value: V,
    ) -> &mut Self {
        self.add_in(
            &ks.tag(),
            ValueKind::Put,
            key.as_ref(),
            Some(value.as_ref()),
        )
    }

    /// Adds a delete from keyspace `ks`.
    pub fn delete_in<K: AsRef<[u8]>>(&mut self, ks: &Keyspace, key: K) -> &mut Self {
        self.add_in(&ks.tag(), ValueKind::Delete, key.as_ref(), None)
    }

    /// Adds a merge operand for `key` in keyspace `ks`.
    pub fn merge_in<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        ks: &Keyspace,
        key: K,
        operand: V,
    ) -> &mut Self {
        self.add_in(
            &ks.tag(),
            ValueKind::Merge,
            key.as_ref(),
            Some(operand.as_ref()),
        )
    }

    /// Adds the removal of every key in `[start, end)` of keyspace `ks`.
    pub fn delete_range_in<S: AsRef<[u8]>, E: AsRef<[u8]>>(
        &mut self,
        ks: &Keyspace,
        start: S,
        end: E,
    ) -> &mut Self {
        self.add_range_in(&ks.tag(), start.as_ref(), end.as_ref())
    }
}
