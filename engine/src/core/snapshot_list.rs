//! The sequence numbers of live snapshots, which compaction keeps the versions of.
//!
//! A snapshot's sequence is chosen inside the list's lock (`acquire_current`), and a compaction
//! reads the list only after choosing its inputs: either it sees the snapshot, or all its inputs
//! are older than the snapshot's sequence, so what it keeps is what the snapshot sees.
//!
//! The list also holds the snapshot gate (rank 4 of `core/lock_order.rs`): a new snapshot
//! registers under it shared (`acquire_gated`); it is held exclusively by a compaction whose
//! compaction filter changed values (from checking that no snapshot appeared during its merge to
//! its install), by an ingestion (from its snapshot checks to its install) and by a read-only
//! open's catch-up.

use std::collections::BTreeMap;

use parking_lot::{Mutex, RwLock, RwLockWriteGuard};

use crate::core::lock_order::{Rank, Ranked};

/// The sequence numbers of live snapshots (with counts), so compaction keeps what they see.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<u64, usize>>,
    /// New snapshots are registered under it shared; held exclusively by a compaction whose
    /// filter changed values while it checks that no snapshot appeared during its merge and
    /// installs, by an ingestion from its snapshot checks to its install, and by a catch-up.
    gate: RwLock<()>,
}

impl SnapshotList {
    /// Holds new snapshots off while the guard lives (see the `gate` field).
    pub(crate) fn hold_new_snapshots(&self) -> Ranked<RwLockWriteGuard<'_, ()>> {
        Ranked::take(Rank::SnapshotGate, || self.gate.write())
    }

    /// Registers a snapshot at the sequence `current` returns, waiting while a compaction holds
    /// new snapshots off ([`SnapshotList::hold_new_snapshots`]).
    pub(crate) fn acquire_gated(&self, current: impl FnOnce() -> u64) -> u64 {
        let _gate = Ranked::take(Rank::SnapshotGate, || self.gate.read());
        self.acquire_current(current)
    }

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
