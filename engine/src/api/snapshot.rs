//! Snapshots: a fixed sequence number that reads see, kept alive against garbage collection.

use std::sync::Arc;

use crate::api::keyspace::Keyspace;
use crate::api::pinned_value::PinnedValue;
use crate::base::error::{Error, Result};
use crate::base::options::ReadOptions;
use crate::paths::engine::Engine;
use crate::paths::iterator::{DbIterator, RawIterator};

/// A consistent read-only view of the database at one point in time. Reads through it see
/// exactly the writes acknowledged before it was taken, whatever happens after (writes,
/// flushes). Released on drop.
pub struct Snapshot {
    db: Arc<Engine>,
    sequence: u64,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("sequence", &self.sequence)
            .finish()
    }
}

impl Snapshot {
    /// A snapshot at the sequence visible now, registered before any compaction can miss it.
    pub(crate) fn new(db: Arc<Engine>) -> Snapshot {
        // Waits while a compaction whose filter changed values installs them (see
        // `CompactionJob::run`).
        let shared = db.shared();
        let sequence = shared
            .snapshots()
            .acquire_gated(|| shared.versions().visible_sequence());
        crate::base::sync_point::sync_point!(
            shared,
            crate::base::sync_point::SNAPSHOT_SEQUENCE_CHOSEN
        );
        Snapshot { db, sequence }
    }

    /// The sequence number the snapshot reads at.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// The value of `key` as of the snapshot (in the "default" keyspace).
    pub fn get<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<Vec<u8>>> {
        let mut value = Vec::new();
        let found = self.get_into(key, &mut value)?;
        Ok(found.then_some(value))
    }

    /// [`Snapshot::get`] without a copy where it can be (see [`PinnedValue`]).
    pub fn get_pinned<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<PinnedValue>> {
        self.get_pinned_at(self.db.default_tree(), key.as_ref())
    }

    /// [`Snapshot::get_in`] without a copy where it can be (see [`PinnedValue`]).
    pub fn get_pinned_in<K: AsRef<[u8]>>(
        &self,
        ks: &Keyspace,
        key: K,
    ) -> Result<Option<PinnedValue>> {
        self.check_same_db(ks)?;
        self.get_pinned_at(ks.tree(), key.as_ref())
    }

    fn get_pinned_at(
        &self,
        tree: &crate::core::tree::Tree,
        key: &[u8],
    ) -> Result<Option<PinnedValue>> {
        let (mut copied, mut pinned) = (Vec::new(), None);
        let found = self
            .db
            .get_at_pinned(tree, key, self.sequence, &mut copied, &mut pinned)?;
        Ok(crate::api::pinned_value::answer(found, pinned, copied))
    }

    /// [`Snapshot::get`] into `buf` (cleared first); returns whether the key was found.
    pub fn get_into<K: AsRef<[u8]>>(&self, key: K, buf: &mut Vec<u8>) -> Result<bool> {
        buf.clear();
        self.db
            .get_at(self.db.default_tree(), key.as_ref(), self.sequence, buf)
    }

    /// The value of `key` in keyspace `ks` as of the snapshot: a snapshot covers every keyspace
    /// at one point (they share one sequence), so reads of several keyspaces through it agree.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// let index = db.keyspace("index")?;
    /// index.put("k", "1")?;
    /// let snapshot = db.snapshot();
    /// index.put("k", "2")?;
    /// assert_eq!(snapshot.get_in(&index, b"k")?, Some(b"1".to_vec()));
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn get_in(&self, ks: &Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_same_db(ks)?;
        let mut value = Vec::new();
        let found = self.db.get_at(ks.tree(), key, self.sequence, &mut value)?;
        Ok(found.then_some(value))
    }

    /// An iterator over keyspace `ks` as of the snapshot.
    pub fn iter_in(&self, ks: &Keyspace) -> DbIterator {
        if let Err(e) = self.check_same_db(ks) {
            return DbIterator::failed(self.db.shared(), ks.tree(), e);
        }
        crate::paths::read::iterator::<&[u8], _>(
            &self.db,
            ks.tree(),
            Some(self.sequence),
            &(..),
            None,
            &ReadOptions::default(),
        )
    }

    fn check_same_db(&self, ks: &Keyspace) -> Result<()> {
        if ks.tag().instance != self.db.instance() {
            return Err(Error::InvalidArgument(
                "the keyspace belongs to another database than the snapshot".to_string(),
            ));
        }
        Ok(())
    }

    /// An iterator over the database as of the snapshot (`.rev()` for descending order).
    pub fn iter(&self) -> DbIterator {
        self.range::<&[u8], _>(..)
    }

    /// An iterator over the keys in `range` as of the snapshot (see [`Db::range`](crate::Db::range)).
    pub fn range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(&self, range: R) -> DbIterator {
        crate::paths::read::iterator(
            &self.db,
            self.db.default_tree(),
            Some(self.sequence),
            &range,
            None,
            &ReadOptions::default(),
        )
    }

    /// An iterator over the keys that start with `prefix` as of the snapshot.
    pub fn prefix_iter<P: AsRef<[u8]>>(&self, prefix: P) -> DbIterator {
        crate::paths::read::prefix_iterator(
            &self.db,
            self.db.default_tree(),
            Some(self.sequence),
            prefix.as_ref(),
        )
    }

    /// A raw cursor over the database as of the snapshot (see [`RawIterator`]).
    pub fn raw_iter(&self) -> RawIterator {
        self.raw_iter_opt(&ReadOptions::default())
    }

    /// A raw cursor over the database as of the snapshot, reading as `opts` say, within its
    /// bounds (see [`Db::raw_iter_opt`](crate::Db::raw_iter_opt)).
    pub fn raw_iter_opt(&self, opts: &ReadOptions) -> RawIterator {
        crate::paths::read::raw_iterator(
            &self.db,
            self.db.default_tree(),
            Some(self.sequence),
            opts,
        )
    }
}

impl Clone for Snapshot {
    /// Another handle on the same point in time, released on its own drop. The sequence is
    /// registered again while this one holds it, so no compaction can drop what it reads.
    fn clone(&self) -> Snapshot {
        let sequence = self.sequence;
        self.db.shared().snapshots().acquire_current(|| sequence);
        Snapshot {
            db: Arc::clone(&self.db),
            sequence,
        }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.db.shared().snapshots().release(self.sequence);
    }
}
