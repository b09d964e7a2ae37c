//! Striped key locks: an operation locks the stripes of the keys it touches, in one global
//! order, for its writes and for the reads it verifies, so the expected state is exact while it
//! holds them. A run of keys maps onto a contiguous run of stripes.
//!
//! The gate orders `delete_files_in_range` (exclusive) against the readers that look at keys
//! without holding their locks for the whole read: a snapshot read after the locks were
//! released, and the read-only instance. The gate is always taken before any key lock.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::values::KEYSPACES;

/// Keys per stripe, as a shift.
const SHIFT: u32 = 2;

/// The key locks and the gate.
pub struct KeyLocks {
    per_keyspace: usize,
    stripes: Vec<Mutex<()>>,
    gate: RwLock<()>,
}

/// Held stripes, released on drop.
pub type Held<'a> = Vec<MutexGuard<'a, ()>>;

impl KeyLocks {
    /// Locks for `keys` keys in each keyspace.
    pub fn new(keys: u32) -> KeyLocks {
        let per_keyspace = (keys as usize >> SHIFT) + 1;
        KeyLocks {
            per_keyspace,
            stripes: (0..per_keyspace * KEYSPACES.len())
                .map(|_| Mutex::new(()))
                .collect(),
            gate: RwLock::new(()),
        }
    }

    fn stripe(&self, ks: usize, key: u32) -> usize {
        ks * self.per_keyspace + (key >> SHIFT) as usize
    }

    /// Locks the stripes of `keys` (keyspace, key), in order.
    pub fn lock(&self, keys: &[(usize, u32)]) -> Held<'_> {
        let mut ids: Vec<usize> = keys.iter().map(|&(ks, k)| self.stripe(ks, k)).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter()
            .map(|i| {
                self.stripes[i]
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
            })
            .collect()
    }

    /// Locks the keys `start..end` of keyspace `ks`.
    pub fn lock_run(&self, ks: usize, start: u32, end: u32) -> Held<'_> {
        if start >= end {
            return Vec::new();
        }
        let (first, last) = (self.stripe(ks, start), self.stripe(ks, end - 1));
        (first..=last)
            .map(|i| {
                self.stripes[i]
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
            })
            .collect()
    }

    /// The gate, shared (readers that look after releasing their key locks).
    pub fn gate_shared(&self) -> RwLockReadGuard<'_, ()> {
        self.gate.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The gate, exclusive (`delete_files_in_range`).
    pub fn gate_exclusive(&self) -> RwLockWriteGuard<'_, ()> {
        self.gate.write().unwrap_or_else(PoisonError::into_inner)
    }
}
