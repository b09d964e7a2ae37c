//! The write path: group commit through the WAL into the memtable.
//!
//! Writers queue up; the first one in line becomes the leader, takes every queued batch (its
//! group, up to 1 MiB), makes room in the memtable (stalling if flushes are behind), appends the
//! group to the WAL with one flush (and one sync if any writer asked for it), inserts it into the
//! memtable, publishes the new sequence number and wakes the group. Concurrent writers thus share
//! WAL writes and syncs.
//!
//! The leader's steps, and which lock each runs under (`commit_group`):
//! 1. no lock: optimistic transactions' commit checks (`paths/conflict.rs`), which read the trees;
//! 2. the state lock: batches naming a dropped keyspace fail alone (`Error::KeyspaceDropped`),
//!    `make_room` for every keyspace the group writes, sequence numbers reserved for the group,
//!    the WAL taken out of the state;
//! 3. no lock: one WAL record per batch, one `write` for the group, one `fdatasync` if any
//!    writer asked (the logs closed by earlier switches first: a synced write makes everything
//!    acknowledged before it durable); then the memtable inserts;
//! 4. the state lock again: the WAL put back, or, after a failure, the background error recorded
//!    (the log may hold part of the group: nothing more may be appended until `Db::resume`);
//! 5. `VersionSet::publish_sequence`: readers see the group, never a write the WAL lacks.
//!
//! `make_room` switches a full memtable (`switch_memtables`: a new WAL, whose creation and
//! directory sync run with the state lock released; the old log is handed to the OS unsynced and
//! left to `core/closed_wals.rs`), flushes the keyspaces holding the oldest WAL once the WALs
//! exceed `max_total_wal_size` and the largest memtables once all together exceed
//! `db_write_buffer_size`, and stalls while a keyspace has `max_write_buffer_number` memtables
//! waiting or `level0_stop_writes_trigger` L0 tables, or memory is over budget (stall time in
//! `Stats::stall_micros`, by cause). In stepped mode (`Db::open_stepped`) writes never stall: a
//! stall is flow control, and an L0 stall could not be ended inline (a compaction may not start
//! on the write path, which ranks below the compaction lock).
//!
//! A switch happens under the write path (the leader, or `WriteQueue::exclusive`), so no group
//! can append meanwhile; memtables record the oldest WAL that may hold their writes, which is
//! what `DbState::min_live_wal` keeps alive. Sequence numbers taken outside a batch (an
//! ingestion's global sequence number) are written as a marker record so that recovery's run of
//! sequence numbers stays unbroken (`take_sequences_holding_writes`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;
use siftdb_sstable::MAX_SEQUENCE;

use crate::base::batch::{self, WriteBatch};
use crate::base::error::{BackgroundError, BackgroundJob, Error, Result};
use crate::base::event_listener::{
    FlushReason, MemTableInfo, WriteStallCause, WriteStallCondition,
};
use crate::base::wal::writer::LogWriter;
use crate::core::events::{Event, Events};
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::memtable::Memtable;
use crate::core::state::{DbState, Stall, StateGuard};
use crate::core::write_queue::{CommitCheck, QueuedWrite, Turn};
use crate::paths::engine::Engine;

/// The memtables a group writes into, by keyspace id.
type GroupMemtables = Vec<(u32, Arc<Memtable>)>;

impl Engine {
    pub(crate) fn write(&self, batch: WriteBatch, sync: bool) -> Result<()> {
        self.write_checked(batch, sync, None)
    }

    /// [`Engine::write`] of a batch that commits only if `check` holds when its group is
    /// committed (else [`Error::Conflict`], nothing written): an optimistic transaction's
    /// commit.
    pub(crate) fn write_checked(
        &self,
        batch: WriteBatch,
        sync: bool,
        check: Option<CommitCheck>,
    ) -> Result<()> {
        self.shared.check_open()?;
        self.shared.check_writable()?;
        batch.validate()?;
        if batch.has_merges() && self.shared.options().merge_operator.is_none() {
            return Err(Error::InvalidArgument(
                "merge needs a merge operator (Options::merge_operator)".to_string(),
            ));
        }
        if batch.instance().is_some_and(|i| i != self.instance) {
            return Err(Error::InvalidArgument(
                "the batch names a keyspace of another database".to_string(),
            ));
        }
        // An empty batch writes nothing, but a synced one still makes every earlier write
        // durable (as a synced write of anything would): it goes through the WAL, as a batch of
        // log data alone does.
        if batch.writes_nothing() && !sync && check.is_none() {
            return Ok(());
        }
        match self.writes.enter(batch, sync, check) {
            Turn::Done(result) => result,
            Turn::Lead(mut leader) => {
                let mut rejected = Vec::new();
                let result = self.commit_group(leader.group_mut(), &mut rejected);
                self.writes.finish(leader, result, rejected)
            }
        }
    }

    /// Commits `group`; a batch naming a keyspace that was dropped moves to `rejected` with its
    /// error (the rest of the group is committed without it).
    fn commit_group(
        &self,
        group: &mut Vec<QueuedWrite>,
        rejected: &mut Vec<(u64, Error)>,
    ) -> Result<()> {
        // Conditional batches first, with no lock held: they read the trees.
        self.reject_conflicting(group, rejected);
        // Reserve room and sequence numbers, and take the WAL out for the unlocked append.
        let mut delayed = false;
        let (mems, mut wal, first_seq, count, sync) = loop {
            let mut state = self.shared.state().lock();
            reject_dropped(&state, group, rejected);
            let mut touched: Vec<u32> = group.iter().flat_map(|w| w.batch.keyspace_ids()).collect();
            touched.sort_unstable();
            touched.dedup();
            self.make_room(&mut state, &touched)?;
            if group.is_empty() {
                return Ok(());
            }
            // Slowed down: the group waits once, without the lock, then makes room again.
            if !delayed && let Some((until, slowed)) = self.slowdown(&mut state, group) {
                drop(state);
                self.wait_slowed(until, &slowed);
                delayed = true;
                continue;
            }
            let count: u64 = group.iter().map(|w| w.batch.len() as u64).sum();
            let sync = group.iter().any(|w| w.sync);
            let last = self.shared.versions().last_sequence();
            if last + count > MAX_SEQUENCE {
                return Err(Error::InvalidArgument(
                    "sequence numbers exhausted".to_string(),
                ));
            }
            let first = last + 1;
            self.shared.versions().set_last_sequence(last + count);
            let wal = state.wal.take().ok_or_else(|| {
                Error::Background(BackgroundError::described(
                    BackgroundJob::WalWrite,
                    "WAL unavailable after an earlier failure",
                ))
            })?;
            let mems: GroupMemtables = touched
                .iter()
                .filter_map(|id| state.trees.get(id).map(|t| (*id, Arc::clone(&t.mem))))
                .collect();
            break (mems, wal, first, count, sync);
        };
        let appended = {
            // The WAL is out of the state: a panic here (the file system's, or a prefix
            // extractor's in the memtable bloom) must stop writes, not leave them to find no WAL.
            let _on_panic = self.shared.state().fail_on_panic(
                BackgroundJob::WalWrite,
                "a write panicked while appending its group (the file system or a user callback)",
            );
            self.append_group(&mems, &mut wal, group, first_seq, sync)
        };
        let mut state = self.shared.state().lock();
        state.wal = Some(wal);
        if let Err(e) = appended {
            // The WAL may hold part of the group: nothing more can be appended safely.
            state.set_background_error(|| BackgroundError::new(BackgroundJob::WalWrite, &e));
            state.wal = None;
            self.shared.state().changed().notify_all();
            return Err(e);
        }
        drop(state);
        self.shared
            .versions()
            .publish_sequence(first_seq + count - 1);
        Ok(())
    }

    fn append_group(
        &self,
        mems: &GroupMemtables,
        wal: &mut LogWriter,
        group: &mut [QueuedWrite],
        first_seq: u64,
        sync: bool,
    ) -> Result<()> {
        use std::sync::atomic::Ordering::Relaxed;
        let before = wal.size();
        let mut seq = first_seq;
        for w in group.iter_mut() {
            let n = w.batch.len() as u64;
            wal.add_record(w.batch.encode(seq))?;
            seq += n;
        }
        wal.flush()?;
        if sync {
            // The logs closed before this one first: a synced write makes everything
            // acknowledged before it durable, and its sync mark says so for them too.
            self.shared.closed_wals().sync_all()?;
            wal.sync()?;
            self.shared.counters().wal_syncs.fetch_add(1, Relaxed);
        }
        self.shared
            .counters()
            .wal_bytes
            .fetch_add(wal.size() - before, Relaxed);
        self.shared.counters().write_groups.fetch_add(1, Relaxed);
        // Only now, with the group in the WAL, does it reach the memtables.
        let mut seq = first_seq;
        for w in group.iter_mut() {
            let (_, ops) = batch::decode(w.batch.encode(seq))
                .ok_or_else(|| Error::corruption("batch failed to decode"))?;
            for op in ops {
                let mem = mems
                    .iter()
                    .find(|(id, _)| *id == op.keyspace)
                    .map(|(_, m)| m)
                    .ok_or_else(|| Error::corruption("batch names an unresolved keyspace"))?;
                mem.insert(op.key, seq, op.kind, op.value);
                self.shared.counters().keys_written.fetch_add(1, Relaxed);
                self.shared
                    .counters()
                    .bytes_written_user
                    .fetch_add((op.key.len() + op.value.len()) as u64, Relaxed);
                seq += 1;
            }
        }
        Ok(())
    }

    /// Makes sure the memtables of keyspaces `ids` can take a write: switches a full one to a
    /// new memtable (and WAL), stalls while one has too many memtables waiting for flush or too
    /// many L0 tables, flushes the keyspaces that keep the oldest WAL alive once the WALs
    /// exceed `Options::max_total_wal_size`, and the largest memtable once all of them exceed
    /// `Options::db_write_buffer_size`.
    pub(crate) fn make_room(&self, state: &mut StateGuard<'_>, ids: &[u32]) -> Result<()> {
        // The cause of the first wait: the stall's time is counted under it.
        let mut stalled: Option<(Instant, StallCause)> = None;
        let result = loop {
            if let Err(e) = state.check_background() {
                break Err(e);
            }
            if self.shared.is_shutting_down() {
                break Err(Error::Closed);
            }
            // Stepped mode (tests): no thread would end a stall; see `Db::open_stepped`.
            let room = room_for(state, ids, !self.shared.stepped());
            if let Room::Stall(cause, id) = room {
                state.set_stall(Some(Stall::stopped(cause.into(), Some(id))));
                // The compactions that would end the stall keep failing in the user's filter:
                // waiting would never end.
                if let Some(why) = self.compactions.filter_failure() {
                    break Err(Error::CompactionFilter(why));
                }
                // Too many overlapping L0 files (every lookup would probe each of them), or
                // too many memtables waiting: wait for the background work to catch up.
                stalled.get_or_insert_with(|| (Instant::now(), cause));
                self.shared.state().work().notify_all();
                self.shared.state().wait_changed(state);
                continue;
            }
            let (full, reason) = match room {
                Room::Switch(full) => (full, FlushReason::WriteBufferFull),
                _ => {
                    let full = self.keyspaces_holding_old_wals(state);
                    if full.is_empty() {
                        let over = self.largest_memtables_over_budget(state);
                        (over, FlushReason::WriteBufferManager)
                    } else {
                        (full, FlushReason::WalFull)
                    }
                }
            };
            if !full.is_empty() {
                if let Err(e) = self.switch_memtables(state, &full, reason) {
                    break Err(e);
                }
                continue;
            }
            if !self.over_memory_budget(state) {
                break Ok(());
            }
            // Every keyspace's memtables together hold the whole budget, and switching more
            // frees nothing: wait for the flushes under way to free their memory.
            stalled.get_or_insert_with(|| (Instant::now(), StallCause::MemoryBudget));
            state.set_stall(Some(Stall::stopped(WriteStallCause::MemoryBudget, None)));
            self.shared.state().work().notify_all();
            self.shared.state().wait_changed(state);
        };
        if let Some((start, cause)) = stalled {
            state.set_stall(None);
            self.count_stall(start.elapsed().as_micros() as u64, cause);
        }
        result
    }

    /// Whether `group` waits before it is written, and until when: while a keyspace's L0 holds
    /// `level0_slowdown_writes_trigger` tables, the database writes at
    /// `Options::delayed_write_rate` (RocksDB's delayed writes, database-wide as there), so that
    /// compactions catch up before writes must stop. Groups are paced by the time their bytes
    /// take at that rate; a group waits only once the pace is a millisecond ahead of the clock
    /// (a sleep shorter than that would cost more than it asks). Records the condition.
    fn slowdown(
        &self,
        state: &mut StateGuard<'_>,
        group: &[QueuedWrite],
    ) -> Option<(Instant, Arc<KeyspaceTree>)> {
        let rate = self.shared.options().delayed_write_rate;
        let slowed = if rate == 0 || self.shared.stepped() {
            None
        } else {
            state
                .trees
                .values()
                .find(|t| is_slowed(&t.tree))
                .map(|t| Arc::clone(&t.tree))
        };
        if state
            .stall
            .is_none_or(|s| s.condition == WriteStallCondition::Delayed)
        {
            state.set_stall(slowed.as_ref().map(|tree| Stall {
                condition: WriteStallCondition::Delayed,
                cause: WriteStallCause::L0Files,
                keyspace: Some(tree.id),
            }));
        }
        let Some(slowed) = slowed else {
            state.delayed_until = None;
            return None;
        };
        let bytes: u64 = group.iter().map(|w| w.batch.size_bytes() as u64).sum();
        let cost = Duration::from_nanos(bytes.saturating_mul(1_000_000_000) / rate);
        let now = Instant::now();
        let until = state.delayed_until.filter(|t| *t > now).unwrap_or(now) + cost;
        state.delayed_until = Some(until);
        (until >= now + Duration::from_millis(1)).then_some((until, slowed))
    }

    /// Waits until `until`, in slices of at most a millisecond: the wait ends early once
    /// `slowed` no longer slows writes (its compactions caught up) or the database closes.
    /// Counted as a stall of its own cause.
    fn wait_slowed(&self, until: Instant, slowed: &KeyspaceTree) {
        let start = Instant::now();
        loop {
            let now = Instant::now();
            if now >= until || self.shared.is_shutting_down() || !is_slowed(slowed) {
                break;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(1)));
        }
        self.count_stall(start.elapsed().as_micros() as u64, StallCause::L0Slowdown);
    }

    /// Adds a stall of `micros` to the total and to its cause's counter.
    fn count_stall(&self, micros: u64, cause: StallCause) {
        let counters = self.shared.counters();
        counters.stall_micros.fetch_add(micros, Ordering::Relaxed);
        let by_cause = match cause {
            StallCause::L0Files => &counters.stall_micros_l0_files,
            StallCause::Memtables => &counters.stall_micros_memtables,
            StallCause::MemoryBudget => &counters.stall_micros_memory_budget,
            StallCause::L0Slowdown => &counters.stall_micros_l0_slowdown,
        };
        by_cause.fetch_add(micros, Ordering::Relaxed);
    }

    /// With the WALs over `max_total_wal_size`, the keyspaces whose active memtable keeps the
    /// oldest live WAL alive (switched, they get flushed and the WAL goes); none otherwise.
    fn keyspaces_holding_old_wals(&self, state: &DbState) -> Vec<u32> {
        if state.trees.len() < 2 {
            return Vec::new(); // one keyspace switches its WAL with its memtable
        }
        let limit = match self.shared.options().max_total_wal_size {
            0 => state
                .trees
                .values()
                .map(|t| {
                    let o = &t.tree.options();
                    4 * (o.write_buffer_size as u64) * o.max_write_buffer_number as u64
                })
                .sum(),
            n => n,
        };
        let oldest = state.min_live_wal();
        let current = state.wal.as_ref().map_or(0, LogWriter::size);
        let total: u64 = current
            + state
                .closed_wal_sizes
                .range(oldest..)
                .map(|(_, size)| size)
                .sum::<u64>();
        if total <= limit {
            return Vec::new();
        }
        state
            .trees
            .iter()
            .filter(|(_, t)| {
                t.imm.is_empty()
                    && !t.mem.is_empty()
                    && t.mem.wal_number() == oldest
                    && oldest < state.wal_number
            })
            .map(|(id, _)| *id)
            .collect()
    }

    /// Whether writes must wait for flushes to free memtable memory
    /// (`Options::db_write_buffer_size` with `allow_stall`; RocksDB's write buffer manager
    /// stalls the same way): all memtables together, frozen ones included, hold the budget,
    /// and some are frozen — a flush under way will free them. With none frozen there is
    /// nothing to wait for: the switch that `largest_memtables_over_budget` asks for comes
    /// first.
    fn over_memory_budget(&self, state: &DbState) -> bool {
        let options = self.shared.options();
        let budget = options.db_write_buffer_size;
        // Stepped mode (tests): no flush thread would free the memory.
        if budget == 0 || !options.allow_stall || self.shared.stepped() {
            return false;
        }
        let (active, frozen) = state.memtable_bytes();
        frozen > 0 && active + frozen >= budget
    }

    /// With all memtables together over `Options::db_write_buffer_size`, the keyspaces whose
    /// active memtables, largest first, must be switched (and flushed, freeing their memory) to
    /// bring the active ones back under the budget — all in one switch, with one new WAL; only
    /// those that may switch (their immutable memtables leave room). None otherwise.
    fn largest_memtables_over_budget(&self, state: &DbState) -> Vec<u32> {
        let budget = self.shared.options().db_write_buffer_size;
        if budget == 0 {
            return Vec::new();
        }
        // RocksDB's rule (`WriteBufferManager::ShouldFlush`): count the active memtables
        // (memtables being flushed free their memory soon, and switching more for them would
        // only make tiny tables), against 7/8 of the budget — or against half of it once all
        // memtables together reach the budget.
        let (mut active, frozen) = state.memtable_bytes();
        let limit = if active + frozen >= budget {
            budget / 2
        } else {
            budget / 8 * 7
        };
        let mut candidates: Vec<(usize, u32)> = state
            .trees
            .iter()
            .filter(|(_, t)| {
                !t.mem.is_empty() && t.imm.len() + 1 < t.tree.options().max_write_buffer_number
            })
            .map(|(id, t)| (t.mem.approximate_size(), *id))
            .collect();
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        let mut chosen = Vec::new();
        for (size, id) in candidates {
            if active <= limit {
                break;
            }
            active -= size;
            chosen.push(id);
        }
        chosen
    }

    /// Freezes the memtables of keyspaces `ids` and starts new ones with a new WAL.
    ///
    /// The caller holds the state lock and owns the write path (it is the write leader, or runs
    /// inside [`WriteQueue::exclusive`](crate::core::write_queue::WriteQueue::exclusive)), so no group can append while the lock is released for
    /// the I/O — creating the next log, syncing the old one, syncing the directory — and readers,
    /// flushes and compactions are not held up behind those `fsync`s.
    pub(crate) fn switch_memtables(
        &self,
        state: &mut StateGuard<'_>,
        ids: &[u32],
        reason: FlushReason,
    ) -> Result<()> {
        let number = self.shared.versions().new_file_number();
        let old_size = state.wal.as_ref().map_or(0, LogWriter::size);
        let old_number = state.wal_number;
        let old = state.wal.take();
        // The rank stays recorded while unlocked: `start_wal` takes no lock.
        let started = MutexGuard::unlocked(state.guard_mut(), || {
            let _on_panic = self.shared.state().fail_on_panic(
                BackgroundJob::WalSwitch,
                "panicked while starting a new WAL (the file system)",
            );
            self.start_wal(number, old_number, old)
        });
        match started {
            Ok(wal) => {
                state.wal_number = number;
                state.closed_wal_sizes.insert(old_number, old_size);
                // No group is in flight: every sequence number handed out is in older logs.
                let first_sequence = self.shared.versions().last_sequence() + 1;
                state.wal_starts.insert(number, first_sequence);
                state.wal = Some(wal);
                let events = state.events.clone();
                for id in ids {
                    if let Some(t) = state.trees.get_mut(id) {
                        let fresh = Arc::new(Memtable::for_keyspace(number, &t.tree.options()));
                        let old = std::mem::replace(&mut t.mem, fresh);
                        old.seal(reason);
                        announce_sealed(&events, &t.tree.name, &old, reason);
                        t.imm.push(old);
                    }
                }
                // Empty memtables need no old WAL: they start in this one.
                for t in state.trees.values() {
                    t.mem.move_to_wal(number);
                }
                let oldest = state.min_live_wal();
                state.closed_wal_sizes.retain(|n, _| *n >= oldest);
                state.wal_starts.retain(|n, _| *n >= oldest);
                for id in ids {
                    self.shared.versions().publish_view(state, *id);
                }
                self.shared.state().work().notify_all();
                Ok(())
            }
            Err((e, old)) => {
                if old.is_none() {
                    // The old log could not be handed to the OS, or the new log's entry made
                    // durable: no later write may be acknowledged ahead of them.
                    state.set_background_error(|| {
                        BackgroundError::new(BackgroundJob::WalSwitch, &e)
                    });
                    self.shared.state().changed().notify_all();
                }
                state.wal = old;
                Err(e)
            }
        }
    }

    /// Makes every acknowledged write durable: before a keyspace change is recorded (so that
    /// after power loss the database is a prefix of its history: a keyspace created or dropped
    /// never survives writes acknowledged before it), and at close. The caller runs inside
    /// `WriteQueue::exclusive` (no group holds the WAL); the sync runs without the state lock.
    pub(in crate::paths) fn sync_wal(&self) -> Result<()> {
        let state_cell = self.shared.state();
        let Some(mut wal) = state_cell.lock().wal.take() else {
            return Err(Error::Background(BackgroundError::described(
                BackgroundJob::WalSync,
                "WAL unavailable after an earlier failure",
            )));
        };
        let synced = {
            let _on_panic = state_cell.fail_on_panic(
                BackgroundJob::WalSync,
                "panicked while syncing the WAL (the file system)",
            );
            self.shared
                .closed_wals()
                .sync_all()
                .and_then(|()| wal.sync())
        };
        let mut state = state_cell.lock();
        state.wal = Some(wal);
        if let Err(e) = &synced {
            // What the WAL holds may not survive power loss: no later write may be acknowledged.
            let e = Error::from(std::io::Error::new(e.kind(), e.to_string()));
            state.set_background_error(|| BackgroundError::new(BackgroundJob::WalSync, &e));
            state_cell.changed().notify_all();
        }
        synced.map_err(Error::from)
    }

    /// Makes the WAL durable at close, as RocksDB does unless `avoid_sync_during_shutdown`: a
    /// database closed cleanly survives a later power loss whole. Skipped without a WAL (read
    /// only) and after a background error (the WAL may not be trusted then).
    pub(crate) fn sync_wal_at_close(&self) -> Result<()> {
        if self.shared.read_only() || self.shared.state().lock().check_background().is_err() {
            return Ok(());
        }
        // Closing must return even if the file system panics (`sync_wal`'s guard records the
        // panic as the background error).
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.writes.exclusive(|| self.sync_wal())
        }))
        .unwrap_or_else(|payload| {
            Err(Error::Background(BackgroundError::panicked(
                BackgroundJob::WalSync,
                payload.as_ref(),
            )))
        })
    }

    /// Creates WAL `number`, closes the old log (`old_number`) unsynced and makes the new
    /// directory entry durable. On failure returns the old log if it is still usable (the new
    /// one could not be created).
    fn start_wal(
        &self,
        number: u64,
        old_number: u64,
        old: Option<LogWriter>,
    ) -> std::result::Result<LogWriter, (Error, Option<LogWriter>)> {
        let file = match self.shared.create_wal(number) {
            Ok(file) => file,
            Err(e) => return Err((e.into(), old)),
        };
        // The new log exists, the old one is not yet synced, the state lock is free: readers,
        // flushes and file deletions may run here, writers queue behind this leader.
        crate::base::sync_point::sync_point!(self.shared, crate::base::sync_point::WAL_SWITCH_IO);
        if let Some(old) = old {
            // Everything acknowledged is already with the OS. The old log is made durable by
            // whoever next needs it so (a synced write, a flush, a keyspace change, close; see
            // `core/closed_wals.rs`), not by this writer.
            let file = old.close_unsynced().map_err(|e| (Error::from(e), None))?;
            self.shared.closed_wals().push(old_number, file);
        }
        // Synced writes to the new log must survive power loss: so must its directory entry.
        self.shared
            .fs()
            .sync_dir(self.shared.dir())
            .map_err(|e| (e.into(), None))?;
        Ok(LogWriter::new(file))
    }
}

/// Switches `tree`'s memtable (if it holds anything) and waits until every memtable of the tree
/// frozen so far is in a table.
pub(crate) fn flush_and_wait(engine: &Engine, tree: &KeyspaceTree) -> Result<()> {
    let db = engine.shared();
    db.check_open()?;
    db.check_writable()?;
    let target = engine.writes.exclusive(|| freeze_for_flush(engine, tree))?;
    wait_flushed(engine, tree, target)
}

/// Freezes `tree`'s memtable if it holds anything; returns the WAL number of the newest frozen
/// memtable (`None`: none to wait for). The caller holds the write path.
pub(crate) fn freeze_for_flush(engine: &Engine, tree: &KeyspaceTree) -> Result<Option<u64>> {
    let mut state = engine.shared().state().lock();
    state.check_background()?;
    let t = state
        .trees
        .get(&tree.id)
        .ok_or_else(|| tree.dropped_error())?;
    if !t.mem.is_empty() {
        engine.switch_memtables(&mut state, &[tree.id], FlushReason::Manual)?;
    }
    Ok(state
        .trees
        .get(&tree.id)
        .and_then(|t| t.imm.last())
        .map(|m| m.wal_number()))
}

/// Waits until `tree`'s frozen memtables up to the one of WAL `target` are in tables (flushing
/// them here in a stepped database). It needs no lock of the write path, so a caller holding
/// it may wait (an ingestion stalls writes while the memtable it overlaps flushes).
pub(crate) fn wait_flushed(
    engine: &Engine,
    tree: &KeyspaceTree,
    target: Option<u64>,
) -> Result<()> {
    let db = engine.shared();
    let Some(target) = target else { return Ok(()) };
    let mut state = db.state().lock();
    loop {
        state.check_background()?;
        let Some(t) = state.trees.get(&tree.id) else {
            return Err(tree.dropped_error());
        };
        if t.imm.first().is_none_or(|m| m.wal_number() > target) {
            return Ok(());
        }
        if db.is_shutting_down() {
            return Err(Error::Closed);
        }
        if db.stepped() {
            // No flush thread: flush here, oldest first, as the thread would.
            drop(state);
            crate::jobs::flush::flush_next(db)?;
            state = db.state().lock();
            continue;
        }
        db.state().work().notify_all();
        db.state()
            .wait_changed_for(&mut state, Duration::from_millis(200));
    }
}

impl Engine {
    /// Takes the `count` sequence numbers after the last one for something that writes no
    /// batch (an ingestion's global seqno), recording them in the WAL as a sequence marker,
    /// synced, so recovery finds the run of sequence numbers unbroken. Returns the first. The
    /// caller holds the write path; the numbers become visible when it publishes them.
    pub(crate) fn take_sequences_holding_writes(&self, count: u64) -> Result<u64> {
        let db = &self.shared;
        let (mut wal, first) = {
            let mut state = db.state().lock();
            state.check_background()?;
            let last = db.versions().last_sequence();
            if last + count > MAX_SEQUENCE {
                return Err(Error::InvalidArgument(
                    "sequence numbers exhausted".to_string(),
                ));
            }
            let wal = state.wal.take().ok_or_else(|| {
                Error::Background(BackgroundError::described(
                    BackgroundJob::WalWrite,
                    "WAL unavailable after an earlier failure",
                ))
            })?;
            db.versions().set_last_sequence(last + count);
            (wal, last + 1)
        };
        let appended = {
            let _on_panic = db.state().fail_on_panic(
                BackgroundJob::WalWrite,
                "a sequence marker panicked while appending (the file system)",
            );
            append_marker(db, &mut wal, first, count)
        };
        let mut state = db.state().lock();
        state.wal = Some(wal);
        if let Err(e) = appended {
            state.set_background_error(|| BackgroundError::new(BackgroundJob::WalWrite, &e));
            state.wal = None;
            db.state().changed().notify_all();
            return Err(e);
        }
        Ok(first)
    }
}

/// Appends and syncs the sequence marker of `count` numbers from `first` (older logs synced
/// first, as for a synced write: its sync mark vouches for them).
fn append_marker(
    db: &crate::core::shared::Shared,
    wal: &mut LogWriter,
    first: u64,
    count: u64,
) -> Result<()> {
    let before = wal.size();
    wal.add_record(&batch::encode_sequence_marker(first, count))?;
    wal.flush()?;
    db.closed_wals().sync_all()?;
    wal.sync()?;
    db.counters()
        .wal_bytes
        .fetch_add(wal.size() - before, Ordering::Relaxed);
    Ok(())
}

/// Why a write waits (`Stats::stall_micros_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StallCause {
    /// A keyspace's L0 holds `level0_stop_writes_trigger` tables.
    L0Files,
    /// A keyspace has `max_write_buffer_number` memtables, all full.
    Memtables,
    /// All memtables together hold `db_write_buffer_size`.
    MemoryBudget,
    /// A keyspace's L0 holds `level0_slowdown_writes_trigger` tables (writes delayed, not
    /// stopped).
    L0Slowdown,
}

/// What the memtables of a group's keyspaces need before it can be written.
#[derive(Debug, PartialEq, Eq)]
enum Room {
    Enough,
    /// These keyspaces' memtables are full: switch them.
    Switch(Vec<u32>),
    /// Wait for flushes or compactions of this keyspace, for this reason.
    Stall(StallCause, u32),
}

impl From<StallCause> for WriteStallCause {
    fn from(cause: StallCause) -> WriteStallCause {
        match cause {
            StallCause::L0Files | StallCause::L0Slowdown => WriteStallCause::L0Files,
            StallCause::Memtables => WriteStallCause::Memtables,
            StallCause::MemoryBudget => WriteStallCause::MemoryBudget,
        }
    }
}

/// Announces that `mem`, of keyspace `name`, was sealed for `reason` (`on_memtable_sealed`).
fn announce_sealed(events: &Events, name: &str, mem: &Memtable, reason: FlushReason) {
    events.emit(|| {
        Event::MemtableSealed(MemTableInfo {
            keyspace: name.to_string(),
            reason,
            entries: mem.len() as u64,
            bytes: mem.approximate_size() as u64,
            wal_number: mem.wal_number(),
        })
    });
}

/// What the memtables of keyspaces `ids` need; with `may_stall` false (stepped mode) a full
/// memtable is switched even past `max_write_buffer_number`, and L0's stop trigger is ignored.
fn room_for(state: &DbState, ids: &[u32], may_stall: bool) -> Room {
    let mut full = Vec::new();
    for id in ids {
        let Some(t) = state.trees.get(id) else {
            continue; // dropped: its batches are rejected
        };
        let o = &t.tree.options();
        // FIFO keeps every table in L0 by design: its size limit, not the count, bounds them.
        let counts_l0 = o.compaction_style != crate::base::compaction_style::CompactionStyle::Fifo;
        if may_stall
            && counts_l0
            && t.tree.l0_files.load(Ordering::Acquire) >= o.level0_stop_writes_trigger
        {
            return Room::Stall(StallCause::L0Files, *id);
        }
        if t.mem.approximate_size() >= o.write_buffer_size {
            if may_stall && t.imm.len() + 1 >= o.max_write_buffer_number {
                return Room::Stall(StallCause::Memtables, *id);
            }
            full.push(*id);
        }
    }
    if full.is_empty() {
        Room::Enough
    } else {
        Room::Switch(full)
    }
}

/// Whether writes to `tree` are slowed down: its L0 holds `level0_slowdown_writes_trigger`
/// tables (at least `level0_file_num_compaction_trigger`, so that a compaction is due to end
/// it) but fewer than the stop; never with automatic compactions off or FIFO compaction, where
/// no compaction would end it.
fn is_slowed(tree: &KeyspaceTree) -> bool {
    let o = tree.options();
    let l0 = tree.l0_files.load(Ordering::Acquire);
    let from = o
        .level0_slowdown_writes_trigger
        .max(o.level0_file_num_compaction_trigger);
    o.compaction_style != crate::base::compaction_style::CompactionStyle::Fifo
        && !o.disable_auto_compactions
        && l0 >= from
        && l0 < o.level0_stop_writes_trigger
}

/// Moves the batches of `group` that name a keyspace no longer in `state` (dropped) to
/// `rejected`, each with its error.
fn reject_dropped(state: &DbState, group: &mut Vec<QueuedWrite>, rejected: &mut Vec<(u64, Error)>) {
    group.retain(|w| {
        match w
            .batch
            .first_missing_keyspace(|id| state.trees.contains_key(&id))
        {
            None => true,
            Some(name) => {
                rejected.push((w.ticket, Error::KeyspaceDropped(name.to_string())));
                false
            }
        }
    });
}
