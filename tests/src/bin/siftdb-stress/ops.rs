//! A worker thread: draws operations by weight and runs them; the helpers every operation
//! uses (choosing keys, new states, writes that keep the expected state, error handling).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use siftdb::{Error, WriteOptions};

use crate::cli::{pick, OpKind};
use crate::ctx::Ctx;
use crate::expected::DELETED;
use crate::values::{encode, key_name, mix, COUNTERS, KEYSPACES};
use crate::verify::Checker;
use crate::{
    ops_admin, ops_bank, ops_bulk, ops_claims, ops_copies, ops_excise, ops_read, ops_txn, ops_write,
};

/// A key's new state in a write: (keyspace, key, state).
pub type Change = (usize, u32, u64);

/// One thread's view of the run.
pub struct Worker<'a> {
    /// The shared state.
    pub ctx: &'a Ctx<'a>,
    /// The thread's random choices.
    pub rng: StdRng,
}

/// Runs operations until the deadline, the thread's operation count or a stop.
pub fn run_thread(ctx: &Ctx, tid: usize, deadline: Option<Instant>) {
    let table = ctx.args.weights.table();
    let seed = mix(ctx.stats.seed ^ mix(tid as u64 + 1));
    let mut w = Worker {
        ctx,
        rng: StdRng::seed_from_u64(seed),
    };
    let limit = ctx.args.ops_per_thread.filter(|_| !ctx.args.worker);
    let mut done = 0u64;
    while !ctx.stats.stopped()
        && limit.is_none_or(|l| done < l)
        && deadline.is_none_or(|d| Instant::now() < d)
    {
        let kind = pick(&table, &mut w.rng);
        let before = ctx.db.latest_sequence_number();
        run_op(&mut w, kind);
        ctx.stats.count_op(kind);
        // The newest sequence number reads see never goes back.
        let after = ctx.db.latest_sequence_number();
        if after < before {
            let (want, got) = (format!("at least {before}"), after.to_string());
            ctx.stats
                .mismatch(kind.name(), "-", "latest_sequence_number", &want, &got);
        }
        done += 1;
    }
}

fn run_op(w: &mut Worker, kind: OpKind) {
    match kind {
        OpKind::Put => ops_write::put(w, false),
        OpKind::TtlPut => ops_write::put(w, true),
        OpKind::Delete => ops_write::delete(w),
        OpKind::Merge => ops_write::merge(w),
        OpKind::DeleteRange => ops_write::delete_range(w),
        OpKind::Batch => ops_write::batch(w),
        OpKind::Get => ops_read::get(w),
        OpKind::GetPinned => ops_read::get_pinned(w),
        OpKind::MultiGet => ops_read::multi_get(w),
        OpKind::Iterate => ops_read::iterate(w),
        OpKind::Seek => ops_read::seek(w),
        OpKind::Snapshot => ops_copies::snapshot(w),
        OpKind::OptimisticTxn => ops_txn::transaction(w, false),
        OpKind::PessimisticTxn => ops_txn::transaction(w, true),
        OpKind::Ingest => ops_bulk::ingest(w),
        OpKind::DeleteFilesInRange => ops_bulk::delete_files_in_range(w),
        OpKind::Flush => ops_admin::flush(w),
        OpKind::CompactRange => ops_admin::compact_range(w),
        OpKind::SetOptions => ops_admin::set_options(w),
        OpKind::Keyspace => ops_admin::keyspace(w),
        OpKind::Checkpoint => ops_copies::checkpoint(w),
        OpKind::Backup => ops_copies::backup(w),
        OpKind::Secondary => ops_copies::secondary(w),
        OpKind::BankTransfer => ops_bank::transfer(w),
        OpKind::BankIngest => ops_bank::ingest_move(w),
        OpKind::BankAudit => ops_bank::audit(w),
        OpKind::ExciseWrite => ops_excise::write(w),
        OpKind::ExciseRead => ops_excise::read(w),
        OpKind::Claim => ops_claims::claim(w),
    }
}

/// Whether an error is one the fault-injecting file system causes: an I/O error, writes
/// stopped by one, or a file that could not be read because of one (siftdb reports an
/// unreadable file as corruption; FaultFs's errors name themselves).
pub fn is_fault(e: &Error) -> bool {
    match e {
        Error::Io(_) | Error::Background(_) => true,
        Error::Corruption(_) => {
            let text = e.to_string();
            text.contains("injected") || text.contains("FaultFs")
        }
        _ => false,
    }
}

impl Worker<'_> {
    /// Keys per keyspace.
    pub fn keys(&self) -> u32 {
        self.ctx.exp.keys()
    }

    /// Any keyspace of the run.
    pub fn pick_ks(&mut self) -> usize {
        self.rng.gen_range(0..KEYSPACES.len())
    }

    /// A keyspace of encoded values ("default" or "blob").
    pub fn pick_value_ks(&mut self) -> usize {
        self.rng.gen_range(0..COUNTERS)
    }

    /// A key: one in five among the first 64 (hot keys), else any.
    pub fn pick_key(&mut self) -> u32 {
        let keys = self.keys();
        if self.rng.gen_ratio(1, 5) {
            self.rng.gen_range(0..keys.min(64))
        } else {
            self.rng.gen_range(0..keys)
        }
    }

    /// Up to `n` distinct (keyspace, key) pairs, sorted.
    pub fn pick_keys(&mut self, n: usize) -> Vec<(usize, u32)> {
        let mut keys: Vec<(usize, u32)> =
            (0..n).map(|_| (self.pick_ks(), self.pick_key())).collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// A run `start..end` of 1 to `max_len` keys.
    pub fn pick_run(&mut self, max_len: u32) -> (u32, u32) {
        let len = self.rng.gen_range(1..=max_len.min(self.keys()));
        let start = self.rng.gen_range(0..=self.keys() - len);
        (start, start + len)
    }

    /// A new value's state for keyspace `ks`: a fresh id, or a counter's new sum.
    pub fn new_value(&mut self, ks: usize) -> u64 {
        if ks == COUNTERS {
            self.rng.gen_range(1..1_000_000)
        } else {
            self.ctx.exp.new_id()
        }
    }

    /// A deletion's state.
    pub fn new_deletion(&self) -> u64 {
        DELETED | self.ctx.exp.new_id()
    }

    /// The bytes of value `state` of `key` in keyspace `ks`.
    pub fn bytes_of(&self, ks: usize, key: u32, state: u64) -> Vec<u8> {
        if ks == COUNTERS {
            state.to_le_bytes().to_vec()
        } else {
            encode(ks, key, state, self.ctx.exp.max_value())
        }
    }

    /// Write options: one write in `--sync_one_in` synced.
    pub fn write_options(&mut self) -> WriteOptions {
        let n = self.ctx.args.sync_one_in;
        WriteOptions {
            sync: n > 0 && self.rng.gen_ratio(1, n),
        }
    }

    /// The checker of reads.
    pub fn checker(&self) -> Checker<'_> {
        self.ctx.checker()
    }

    /// Records the writes about to be issued.
    pub fn begin(&self, changes: &[Change]) {
        for &(ks, key, state) in changes {
            self.ctx.exp.begin(ks, key, state);
        }
    }

    /// Records the outcome of the writes `begin` recorded; whether they were made.
    pub fn complete(&self, op: &str, changes: &[Change], result: siftdb::Result<()>) -> bool {
        match result {
            Ok(()) => {
                for &(ks, key, state) in changes {
                    self.ctx.exp.finish(ks, key, state);
                    self.ctx.stats.record(op, ks, key, state, true);
                }
                true
            }
            Err(e) => {
                for &(ks, key, state) in changes {
                    self.ctx.exp.fail(ks, key);
                    self.ctx.stats.record(op, ks, key, state, false);
                }
                let (ks, key) = changes.first().map_or(("-", String::new()), |&(ks, k, _)| {
                    (
                        KEYSPACES[ks],
                        String::from_utf8_lossy(&key_name(k)).into_owned(),
                    )
                });
                self.failed(op, ks, &key, &e, true);
                false
            }
        }
    }

    /// Issues the writes of `changes` through `write`, keeping the expected state.
    pub fn write(
        &self,
        op: &str,
        changes: &[Change],
        write: impl FnOnce() -> siftdb::Result<()>,
    ) -> bool {
        self.begin(changes);
        self.complete(op, changes, write())
    }

    /// An operation failed: under `--faults` an I/O error is counted (and a write's error
    /// resumed from); anything else is a mismatch.
    pub fn failed(&self, op: &str, ks: &str, key: &str, e: &Error, write: bool) {
        let stats = self.ctx.stats;
        if self.ctx.fault.is_some() && is_fault(e) {
            let counter = if write {
                &stats.write_errors
            } else {
                &stats.read_errors
            };
            counter.fetch_add(1, Relaxed);
            if write || matches!(e, Error::Background(_)) {
                crate::faults::recover(self.ctx);
            }
        } else {
            stats.mismatch(op, ks, key, "success", &format!("error: {e}"));
        }
    }
}
