//! The engine's one lock order, and in debug builds a check of it.
//!
//! Locks that are held while another is taken, outer first. A thread holding one of them takes
//! only locks further down the list:
//!
//! 1. [`Rank::Compactions`] — `Compactions::lock` (`jobs/compaction`): background compactions
//!    hold it shared for a whole job, `compact_range` exclusively.
//! 2. [`Rank::WritePath`] — the write path: being the write leader, or inside
//!    `WriteQueue::exclusive` (memtable switches outside a write, keyspace changes,
//!    checkpoints). Not a mutex: a role handed over under the queue's mutex.
//! 3. [`Rank::Flush`] — `Shared::flush_role`: one flush at a time, for a whole flush (the flush
//!    thread, or in stepped mode whoever calls `Db::step_flush`, `Db::flush` or `Db::resume`).
//! 4. [`Rank::SnapshotGate`] — `SnapshotList::gate`: held exclusively by a compaction whose
//!    filter changed values while it installs, by an ingestion from its snapshot checks to its
//!    install, and by a read-only open's catch-up; shared while a snapshot registers.
//! 5. [`Rank::FileDeletions`] — `FileDeletions::lock`: from a deletion's pause check to its last
//!    deletion.
//! 6. [`Rank::Manifest`] — `VersionSet::manifest`: one manifest writer at a time, for a whole
//!    `log_and_apply`, `create_keyspace_tree` or `drop_keyspace_tree`.
//! 7. [`Rank::State`] — the state lock (`StateCell`): memtables, the WAL, the background error.
//! 8. [`Rank::Files`] — `VersionSet::files`: current versions, pending outputs, log numbers.
//!
//! Leaves, never held while another lock is taken: each tree's published view
//! (`KeyspaceTree::view`), the write queue's mutex, the live snapshot list, the compaction filter's last
//! failure, the handle's thread list and directory lock, the sync-point registry, the locks
//! inside the block cache and memtables, and `ClosedWals`' two (its sync lock, held across the
//! closed logs' `fdatasync`s, takes only its own list lock; `core/closed_wals.rs`).
//!
//! Outside the ranks:
//! * the lock table's stripes and its wait-for graph (`core/lock_table.rs`) are leaves too, but
//!   for the graph taken inside a stripe (never the other way); the key locks of pessimistic
//!   transactions are not mutexes, and a transaction waits for one holding no engine lock;
//! * the catch-up gate (`Engine::catch_up_gate`, read-only opens only) is taken shared by a
//!   reader around loading its view and sequence (no lock is taken inside it), and exclusively
//!   by a catch-up between the snapshot gate (4) and the state lock (7) (`recovery/catch_up.rs`).
//!
//! No lock is held across a manifest or WAL `fsync` but the manifest lock, the write path and
//! `ClosedWals`' sync lock: readers never wait for the disk behind a writer's lock.
//!
//! In builds with debug assertions (tests run so: `test-release` keeps them), every ranked lock
//! is taken through [`Held::enter`], which panics when a thread takes a lock while holding one at
//! or below it in the list: an order violation shows up in the first test that exercises it, not
//! as a rare deadlock. Release builds compile the check away.

use std::ops::{Deref, DerefMut};

/// A lock's place in the order (see the module documentation); lower ranks are taken first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rank {
    Compactions,
    WritePath,
    Flush,
    SnapshotGate,
    FileDeletions,
    Manifest,
    State,
    Files,
}

#[cfg(debug_assertions)]
thread_local! {
    /// The ranks the current thread holds, in the order it took them.
    static HELD: std::cell::RefCell<Vec<Rank>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A ranked lock the current thread holds, released from the check on drop.
pub(crate) struct Held {
    #[cfg(debug_assertions)]
    rank: Rank,
}

impl Held {
    /// Records that the current thread takes a lock of `rank`; in debug builds, panics if it
    /// holds one of the same or a later rank (call it before blocking on the lock, so a
    /// violation panics instead of deadlocking).
    pub(crate) fn enter(rank: Rank) -> Held {
        #[cfg(debug_assertions)]
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            // Not while unwinding: a second panic would abort the process, and the drop guards
            // that run then (recording a background error) are the reason to unwind at all.
            if let Some(&top) = held.iter().max().filter(|_| !std::thread::panicking()) {
                assert!(
                    top < rank,
                    "lock order violated: taking {rank:?} while holding {top:?} (see core/lock_order.rs)"
                );
            }
            held.push(rank);
        });
        #[cfg(not(debug_assertions))]
        let _ = rank;
        Held {
            #[cfg(debug_assertions)]
            rank,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        #[cfg(debug_assertions)]
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            if let Some(i) = held.iter().rposition(|r| *r == self.rank) {
                held.remove(i);
            }
        });
    }
}

/// A lock guard `G` of a ranked lock: derefs to what `G` derefs to.
pub(crate) struct Ranked<G> {
    guard: G,
    _held: Held,
}

impl<G> Ranked<G> {
    /// Takes a lock of `rank` with `lock` (checked before it blocks).
    pub(crate) fn take(rank: Rank, lock: impl FnOnce() -> G) -> Ranked<G> {
        let held = Held::enter(rank);
        Ranked {
            guard: lock(),
            _held: held,
        }
    }

    /// The guard itself (for a condition variable's wait).
    pub(crate) fn guard_mut(&mut self) -> &mut G {
        &mut self.guard
    }
}

impl<G: Deref> Deref for Ranked<G> {
    type Target = G::Target;

    fn deref(&self) -> &G::Target {
        &self.guard
    }
}

impl<G: DerefMut> DerefMut for Ranked<G> {
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.guard
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_taken_in_order_pass_and_release() {
        let state = Held::enter(Rank::State);
        let files = Held::enter(Rank::Files);
        drop(files);
        drop(state);
        // Released: the outer lock can be taken again.
        let _manifest = Held::enter(Rank::Manifest);
    }

    #[test]
    #[cfg(debug_assertions)]
    fn a_lock_taken_against_the_order_panics() {
        let caught = std::panic::catch_unwind(|| {
            let _files = Held::enter(Rank::Files);
            let _state = Held::enter(Rank::State);
        });
        let message = caught
            .err()
            .and_then(|e| e.downcast_ref::<String>().cloned());
        assert!(
            message.is_some_and(|m| m.contains("taking State while holding Files")),
            "the order check did not fire"
        );
    }

    #[test]
    #[cfg(debug_assertions)]
    fn taking_the_same_lock_twice_panics() {
        let caught = std::panic::catch_unwind(|| {
            let _a = Held::enter(Rank::Manifest);
            let _b = Held::enter(Rank::Manifest);
        });
        assert!(caught.is_err());
    }
}
