//! Snapshots: a fixed sequence number that reads see, kept alive against garbage collection.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::db::DbInner;
use crate::error::Result;

/// The sequence numbers of live snapshots (with counts), so compaction keeps what they see.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<u64, usize>>,
}

impl SnapshotList {
    pub(crate) fn acquire(&self, sequence: u64) {
        *self.live.lock().entry(sequence).or_insert(0) += 1;
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

    /// Sequence numbers of live snapshots, ascending.
    #[allow(dead_code)] // read by compaction's garbage collection
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
    pub(crate) fn new(db: Arc<DbInner>, sequence: u64) -> Snapshot {
        db.snapshots.acquire(sequence);
        Snapshot { db, sequence }
    }

    /// The sequence number the snapshot reads at.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// The value of `key` as of the snapshot.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db.get_at(key, self.sequence)
    }

    /// An iterator over the database as of the snapshot.
    pub fn iter(&self) -> crate::iterator::DbIterator {
        crate::iterator::DbIterator::new(&self.db, self.sequence, None)
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.db.snapshots.release(self.sequence);
    }
}
