//! Snapshots: a fixed sequence number that reads see, kept alive against garbage collection.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::api::db::DbInner;
use crate::base::error::{Error, Result};
use crate::paths::iterator::{DbIterator, RawIterator};
use crate::api::keyspace::Keyspace;
use crate::base::options::ReadOptions;

/// The sequence numbers of live snapshots (with counts), so compaction keeps what they see.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<u64, usize>>,
}

impl SnapshotList {
    /// Registers a snapshot at the sequence `current` returns, chosen inside the list's critical
    /// section: a compaction's [`SnapshotList::sequences`] either sees the snapshot, or ran
    /// before its sequence was chosen — and then every input of that compaction (picked before
    /// it asked) holds only older sequence numbers, so what it keeps is what the snapshot sees.
    pub(crate) fn acquire_current(&self, current: impl FnOnce() -> u64) -> u64 {
        let mut live = self.live.lock();
        let sequence = current();
        *live.entry(sequence).or_insert(0) += 1;
        sequence
    }

    pub(crate) fn release(&self, sequence: u64) {
        let mut live = self.live.lock();
        if let Some(count) = live.get_mut(&sequence) {
            *count -= 1;
            if *count == 0 {
                live.remove(&sequence);
            }
        }
    }

    /// Sequence numbers of live snapshots, ascending. A compaction must ask only after it has
    /// chosen its inputs (see [`SnapshotList::acquire_current`]).
    pub(crate) fn sequences(&self) -> Vec<u64> {
        self.live.lock().keys().copied().collect()
    }
}

/// A consistent read-only view of the database at one point in time. Reads through it see
/// exactly the writes acknowledged before it was taken, whatever happens after (writes,
/// flushes). Released on drop.
pub struct Snapshot {
    db: Arc<DbInner>,
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
    pub(crate) fn new(db: Arc<DbInner>) -> Snapshot {
        // Waits while a compaction whose filter changed values installs them (see
        // `CompactionJob::run`).
        let gate = db.snapshot_gate.read();
        let sequence = db
            .snapshots
            .acquire_current(|| db.visible_sequence.load(Ordering::Acquire));
        drop(gate);
        crate::base::sync_point::sync_point!(db, crate::base::sync_point::SNAPSHOT_SEQUENCE_CHOSEN);
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

    /// [`Snapshot::get`] into `buf` (cleared first); returns whether the key was found.
    pub fn get_into<K: AsRef<[u8]>>(&self, key: K, buf: &mut Vec<u8>) -> Result<bool> {
        buf.clear();
        self.db
            .get_at(&self.db.default, key.as_ref(), self.sequence, buf)
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
            return DbIterator::failed(&self.db, ks.tree(), e);
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
        if ks.instance() != self.db.instance {
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
            &self.db.default,
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
            &self.db.default,
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
        crate::paths::read::raw_iterator(&self.db, &self.db.default, Some(self.sequence), opts)
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.db.snapshots.release(self.sequence);
    }
}
