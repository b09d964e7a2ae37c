//! Commit-time validation of optimistic transactions (RocksDB's `OptimisticTransactionDB`): a
//! batch that carries a [`CommitCheck`] commits only if none of its keys was written after its
//! snapshot.
//!
//! The write leader checks each such batch of its group before it reserves sequence numbers:
//! every earlier group is in the memtables by then and no other group can start, so nothing
//! commits between the check and the write. A key counts as written when its newest version —
//! a value, a tombstone, a merge operand or a range tombstone over it — is newer than the
//! snapshot, or when an earlier batch of the same group writes it.
//!
//! The check never scans history: per key it is one point lookup of the newest version. It
//! stops at the memtables when they hold every write since the snapshot (the oldest one's
//! first sequence is at most the snapshot's next); otherwise it also asks the tables, as a
//! `get` would (filters first). The transaction's snapshot is registered, so compaction keeps
//! every version newer than it with its sequence number.

use std::collections::HashSet;

use siftdb_sstable::{GetTrace, Lookup, MAX_SEQUENCE};

use crate::base::batch::{self, WriteBatch};
use crate::base::error::{printable_key, Error, Result};
use crate::core::key_head::KeyHead;
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::write_queue::{CommitCheck, QueuedWrite};
use crate::paths::engine::Engine;
use siftdb_sstable::ValueKind;

/// What the batches of a group checked so far write: (keyspace, key) of point writes, and the
/// range deletions as (keyspace, start, end).
#[derive(Default)]
struct GroupWrites {
    points: HashSet<(u32, Vec<u8>)>,
    ranges: Vec<(u32, Vec<u8>, Vec<u8>)>,
}

impl GroupWrites {
    fn add(&mut self, batch: &mut WriteBatch) -> Result<()> {
        let (_, ops) = batch::decode(batch.encode(0))
            .ok_or_else(|| Error::corruption("batch failed to decode"))?;
        for op in ops {
            if op.kind == ValueKind::RangeDelete {
                self.ranges
                    .push((op.keyspace, op.key.to_vec(), op.value.to_vec()));
            } else {
                self.points.insert((op.keyspace, op.key.to_vec()));
            }
        }
        Ok(())
    }

    fn writes(&self, id: u32, key: &[u8]) -> bool {
        self.points.contains(&(id, key.to_vec()))
            || self.ranges.iter().any(|(ks, start, end)| {
                *ks == id && start.as_slice() <= key && key < end.as_slice()
            })
    }
}

impl Engine {
    /// Moves the batches of `group` whose [`CommitCheck`] fails to `rejected`: with
    /// [`Error::Conflict`] when a key was written after the snapshot, or the error that kept
    /// the check from reading the tree.
    pub(crate) fn reject_conflicting(
        &self,
        group: &mut Vec<QueuedWrite>,
        rejected: &mut Vec<(u64, Error)>,
    ) {
        let Some(last_checked) = group.iter().rposition(|w| w.check.is_some()) else {
            return;
        };
        let mut earlier = GroupWrites::default();
        let mut kept = Vec::with_capacity(group.len());
        for (i, mut write) in group.drain(..).enumerate() {
            let verdict = match &write.check {
                Some(check) => self.check_commit(check, &earlier),
                None => Ok(()),
            };
            // Only a later checked batch reads what this one writes.
            let noted = verdict.and_then(|()| {
                if i < last_checked {
                    earlier.add(&mut write.batch)
                } else {
                    Ok(())
                }
            });
            match noted {
                Ok(()) => kept.push(write),
                Err(e) => rejected.push((write.ticket, e)),
            }
        }
        *group = kept;
    }

    fn check_commit(&self, check: &CommitCheck, earlier: &GroupWrites) -> Result<()> {
        for (tree, key) in &check.keys {
            if earlier.writes(tree.id, key) || self.written_after(tree, key, check.snapshot)? {
                tracing::debug!(
                    "siftdb: transaction conflict on key {} of keyspace {:?}",
                    printable_key(key),
                    &*tree.name
                );
                return Err(Error::Conflict);
            }
        }
        Ok(())
    }

    /// Whether `tree` holds a version of `key` (or a range tombstone over it) newer than
    /// `snapshot`.
    pub(crate) fn written_after(
        &self,
        tree: &KeyspaceTree,
        key: &[u8],
        snapshot: u64,
    ) -> Result<bool> {
        tree.check_live()?;
        // Ingested tables hold writes the memtables never saw (possibly at sequence 0).
        if tree.ingested.written_after(key, snapshot) {
            return Ok(true);
        }
        let view = tree.read_view_guard();
        let mut scratch = Vec::new();
        let memtables = std::iter::once(&view.mem).chain(view.imm.iter());
        for mem in memtables {
            let (got, version) = if mem.may_contain_key(key) {
                mem.get_versioned(key, MAX_SEQUENCE, &mut scratch)
            } else {
                (Lookup::NotFound, 0)
            };
            let covered = mem.covering_tombstone(key, MAX_SEQUENCE);
            if got != Lookup::NotFound || covered.is_some() {
                return Ok(version.max(covered.unwrap_or(0)) > snapshot);
            }
        }
        let oldest = view.imm.last().unwrap_or(&view.mem);
        if oldest
            .first_sequence()
            .is_some_and(|first| first <= snapshot.saturating_add(1))
        {
            // Every write since the snapshot is in the memtables, and none is of this key.
            return Ok(false);
        }
        let version = &view.version;
        let head = KeyHead::of(key);
        let hash = self.shared.options().filter_hasher.hash(key);
        let mut trace = GetTrace::default();
        for file in version.tables_for_key(key, head) {
            let covered = file
                .table
                .range_tombstones()
                .and_then(|t| t.max_covering(key, MAX_SEQUENCE));
            let got = if file.meta.entries > 0 {
                let prepared = file.table.prepare_get_hashed(key, hash)?;
                file.table.get_prepared_into(
                    key,
                    MAX_SEQUENCE,
                    prepared,
                    &mut trace,
                    &mut scratch,
                )?
            } else {
                Lookup::NotFound
            };
            if got != Lookup::NotFound || covered.is_some() {
                let found = if got == Lookup::NotFound {
                    0
                } else {
                    trace.sequence
                };
                return Ok(found.max(covered.unwrap_or(0)) > snapshot);
            }
        }
        Ok(false)
    }
}
