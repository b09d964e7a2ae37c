//! The write path: group commit through the WAL into the memtable.
//!
//! Writers queue up; the first one in line becomes the leader, takes every queued batch (its
//! group), makes room in the memtable (stalling if flushes are behind), appends the group to the
//! WAL with one flush (and one sync if any writer asked for it), inserts it into the memtable,
//! publishes the new sequence number and wakes the group. Concurrent writers thus share WAL
//! writes and syncs.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex, MutexGuard};
use siftdb_sstable::MAX_SEQUENCE;

use crate::batch::{self, WriteBatch};
use crate::db::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::fs::names;
use crate::memtable::Memtable;
use crate::wal::writer::LogWriter;

/// Largest group a leader assembles (bytes of encoded batches).
const MAX_GROUP_BYTES: usize = 1 << 20;

#[derive(Default)]
struct Queue {
    next_ticket: u64,
    pending: VecDeque<(u64, WriteBatch, bool)>,
    /// Results for the followers of finished groups (a failed group's error, duplicated for
    /// each writer with its variant and I/O kind intact).
    done: HashMap<u64, Result<()>>,
    leader_active: bool,
}

/// The queue of writers waiting to commit.
#[derive(Default)]
pub(crate) struct WriteQueue {
    queue: Mutex<Queue>,
    changed: Condvar,
}

impl DbInner {
    pub(crate) fn write(&self, batch: WriteBatch, sync: bool) -> Result<()> {
        self.check_open()?;
        batch.validate()?;
        if batch.is_empty() {
            return Ok(());
        }
        let q = &self.writes;
        let mut queue = q.queue.lock();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.pending.push_back((ticket, batch, sync));
        loop {
            if let Some(result) = queue.done.remove(&ticket) {
                return result;
            }
            if !queue.leader_active {
                break;
            }
            q.changed.wait(&mut queue);
        }
        // Leader: take a group (our own batch is in it: it was queued before we led).
        queue.leader_active = true;
        let mut group = Vec::new();
        let mut bytes = 0;
        while let Some((t, b, s)) = queue.pending.pop_front() {
            bytes += b.size_bytes();
            group.push((t, b, s));
            if bytes >= MAX_GROUP_BYTES {
                break;
            }
        }
        drop(queue);
        let result = self.commit_group(&mut group);
        let mut queue = q.queue.lock();
        for (t, _, _) in &group {
            if *t != ticket {
                let shared = match &result {
                    Ok(()) => Ok(()),
                    Err(e) => Err(e.duplicate()),
                };
                queue.done.insert(*t, shared);
            }
        }
        queue.leader_active = false;
        q.changed.notify_all();
        result
    }

    fn commit_group(&self, group: &mut [(u64, WriteBatch, bool)]) -> Result<()> {
        let sync = group.iter().any(|g| g.2);
        let count: u64 = group.iter().map(|g| g.1.len() as u64).sum();
        // Reserve room and sequence numbers, and take the WAL out for the unlocked append.
        let (mem, mut wal, first_seq) = {
            let mut state = self.state.lock();
            self.make_room(&mut state)?;
            let last = self.versions.last_sequence();
            if last + count > MAX_SEQUENCE {
                return Err(Error::InvalidArgument(
                    "sequence numbers exhausted".to_string(),
                ));
            }
            let first = last + 1;
            self.versions.set_last_sequence(last + count);
            let wal = state.wal.take().ok_or_else(|| {
                Error::Background("WAL unavailable after an earlier failure".to_string())
            })?;
            (Arc::clone(&state.mem), wal, first)
        };
        let appended = self.append_group(&mem, &mut wal, group, first_seq, sync);
        let mut state = self.state.lock();
        state.wal = Some(wal);
        if let Err(e) = appended {
            // The WAL may hold part of the group: nothing more can be appended safely.
            let msg = format!("WAL write failed: {e}");
            state.bg_error.get_or_insert(msg);
            state.wal = None;
            self.state_changed.notify_all();
            return Err(e);
        }
        drop(state);
        self.visible_sequence
            .store(first_seq + count - 1, Ordering::Release);
        Ok(())
    }

    fn append_group(
        &self,
        mem: &Memtable,
        wal: &mut LogWriter,
        group: &mut [(u64, WriteBatch, bool)],
        first_seq: u64,
        sync: bool,
    ) -> Result<()> {
        use std::sync::atomic::Ordering::Relaxed;
        let before = wal.size();
        let mut seq = first_seq;
        for (_, batch, _) in group.iter_mut() {
            let n = batch.len() as u64;
            wal.add_record(batch.encode(seq))?;
            seq += n;
        }
        wal.flush()?;
        if sync {
            wal.sync()?;
            self.counters.wal_syncs.fetch_add(1, Relaxed);
        }
        self.counters
            .wal_bytes
            .fetch_add(wal.size() - before, Relaxed);
        self.counters.write_groups.fetch_add(1, Relaxed);
        // Only now, with the group in the WAL, does it reach the memtable.
        let mut seq = first_seq;
        for (_, batch, _) in group.iter_mut() {
            let (_, ops) = batch::decode(batch.encode(seq))
                .ok_or_else(|| Error::corruption("batch failed to decode"))?;
            for op in ops {
                mem.insert(op.key, seq, op.kind, op.value);
                self.counters.keys_written.fetch_add(1, Relaxed);
                self.counters
                    .bytes_written_user
                    .fetch_add((op.key.len() + op.value.len()) as u64, Relaxed);
                seq += 1;
            }
        }
        Ok(())
    }

    /// Makes sure the memtable can take a write: switches to a new memtable (and WAL) when it
    /// is full, and stalls while too many memtables wait for flush.
    pub(crate) fn make_room(&self, state: &mut MutexGuard<'_, DbState>) -> Result<()> {
        let mut stalled: Option<Instant> = None;
        let result = loop {
            if let Some(e) = &state.bg_error {
                break Err(Error::Background(e.clone()));
            }
            if self.shutting_down.load(Ordering::Acquire) {
                break Err(Error::Closed);
            }
            if self.versions.l0_files() >= self.options.level0_stop_writes_trigger {
                // Too many overlapping L0 files: every lookup would probe each of them. Wait for
                // compaction to catch up.
                stalled.get_or_insert_with(Instant::now);
                self.work_available.notify_all();
                self.state_changed.wait(state);
                continue;
            }
            if state.mem.approximate_size() < self.options.write_buffer_size {
                break Ok(());
            }
            if state.imm.len() + 1 >= self.options.max_write_buffer_number {
                stalled.get_or_insert_with(Instant::now);
                self.work_available.notify_all();
                self.state_changed.wait(state);
                continue;
            }
            if let Err(e) = self.switch_memtable(state) {
                break Err(e);
            }
        };
        if let Some(start) = stalled {
            self.counters
                .stall_micros
                .fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
        }
        result
    }

    /// Freezes the memtable and starts a new one with a new WAL.
    ///
    /// The caller holds the state lock and owns the write path (it is the write leader, or runs
    /// inside [`WriteQueue::exclusive`]), so no group can append while the lock is released for
    /// the I/O — creating the next log, syncing the old one, syncing the directory — and readers,
    /// flushes and compactions are not held up behind those `fsync`s.
    pub(crate) fn switch_memtable(&self, state: &mut MutexGuard<'_, DbState>) -> Result<()> {
        let number = self.versions.new_file_number();
        let old = state.wal.take();
        let started = MutexGuard::unlocked(state, || self.start_wal(number, old));
        match started {
            Ok(wal) => {
                state.wal = Some(wal);
                let old = std::mem::replace(&mut state.mem, Arc::new(Memtable::new(number)));
                state.imm.push(old);
                self.publish_view(state);
                self.work_available.notify_all();
                Ok(())
            }
            Err((e, old)) => {
                if old.is_none() {
                    // The old log could not be made durable: what it holds may be lost on power
                    // failure, and no later write may be acknowledged ahead of it.
                    state
                        .bg_error
                        .get_or_insert_with(|| format!("WAL switch failed: {e}"));
                    self.state_changed.notify_all();
                }
                state.wal = old;
                Err(e)
            }
        }
    }

    /// Creates WAL `number`, then makes the old log and the new directory entry durable. On
    /// failure returns the old log if it is still usable (the new one could not be created).
    fn start_wal(
        &self,
        number: u64,
        old: Option<LogWriter>,
    ) -> std::result::Result<LogWriter, (Error, Option<LogWriter>)> {
        let file = match self.fs.create(&names::wal(&self.dir, number)) {
            Ok(file) => file,
            Err(e) => return Err((e.into(), old)),
        };
        if let Some(mut old) = old {
            // Everything acknowledged is already flushed to the OS; make the old log durable
            // before it stops being appended (a synced write after it must not overtake it).
            old.sync().map_err(|e| (Error::from(e), None))?;
        }
        // Synced writes to the new log must survive power loss: so must its directory entry.
        self.fs.sync_dir(&self.dir).map_err(|e| (e.into(), None))?;
        Ok(LogWriter::new(file))
    }
}

impl WriteQueue {
    /// Runs `f` while no write group is in progress and none can start (used to switch
    /// memtables outside the write path without racing a leader that is appending).
    pub(crate) fn exclusive<R>(&self, f: impl FnOnce() -> R) -> R {
        let mut queue = self.queue.lock();
        while queue.leader_active {
            self.changed.wait(&mut queue);
        }
        queue.leader_active = true;
        drop(queue);
        let result = f();
        let mut queue = self.queue.lock();
        queue.leader_active = false;
        self.changed.notify_all();
        result
    }
}
