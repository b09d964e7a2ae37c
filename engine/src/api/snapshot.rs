//! Snapshots: a fixed sequence number that reads see, kept alive against garbage collection.

use std::sync::Arc;

use crate::api::keyspace::Keyspace;
use crate::api::pinned_value::PinnedValue;
use crate::api::readable::{forward_reads_to_readable, readable_through_target, ReadTarget};
use crate::base::error::{Error, Result};
use crate::base::options::ReadOptions;
use crate::paths::engine::Engine;
use crate::paths::iterator::{DbIterator, RawIterator};
use crate::Readable;

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

    /// [`Snapshot::get_in`] without a copy where it can be (see [`PinnedValue`]).
    pub fn get_pinned_in<K: AsRef<[u8]>>(
        &self,
        ks: &Keyspace,
        key: K,
    ) -> Result<Option<PinnedValue>> {
        self.check_same_db(ks)?;
        self.in_keyspace(ks)
            .get_pinned_opt(key, &ReadOptions::default())
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
        self.in_keyspace(ks).get(key)
    }

    /// An iterator over keyspace `ks` as of the snapshot.
    pub fn iter_in(&self, ks: &Keyspace) -> DbIterator {
        if let Err(e) = self.check_same_db(ks) {
            return DbIterator::failed(self.db.shared(), ks.tree(), e);
        }
        self.in_keyspace(ks).iter()
    }

    /// Reads of keyspace `ks` at the snapshot's sequence.
    fn in_keyspace<'a>(&'a self, ks: &'a Keyspace) -> SnapshotOf<'a> {
        SnapshotOf {
            snapshot: self,
            tree: ks.tree(),
        }
    }

    fn check_same_db(&self, ks: &Keyspace) -> Result<()> {
        if ks.tag().instance != self.db.instance() {
            return Err(Error::InvalidArgument(
                "the keyspace belongs to another database than the snapshot".to_string(),
            ));
        }
        Ok(())
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
            self.db.default_keyspace(),
            Some(self.sequence),
            opts,
        )
    }
}

readable_through_target!(Snapshot, |s| ReadTarget {
    engine: &s.db,
    tree: s.db.default_keyspace(),
    sequence: Some(s.sequence),
});
forward_reads_to_readable!(Snapshot, DbIterator);

/// A snapshot's reads of one keyspace (`Snapshot::get_in` and friends).
struct SnapshotOf<'a> {
    snapshot: &'a Snapshot,
    tree: &'a Arc<crate::core::keyspace_tree::KeyspaceTree>,
}

readable_through_target!(SnapshotOf<'_>, |of| ReadTarget {
    engine: &of.snapshot.db,
    tree: of.tree,
    sequence: Some(of.snapshot.sequence),
});

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
