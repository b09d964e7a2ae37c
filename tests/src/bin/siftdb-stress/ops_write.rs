//! Point and range writes: put, put_with_ttl, delete, merge, delete_range, write batches.

use std::time::Duration;

use rand::Rng;
use siftdb::{Keyspace, WriteBatch, WriteBatchWithIndex};

use crate::expected::Allowed;
use crate::ops::{Change, Worker};
use crate::values::{key_name, COUNTERS, KEYSPACES};

/// A TTL no run reaches: expiring values are verified like any other.
pub const TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// A put (or with `ttl` a `put_with_ttl`) of a new value, half of them read back.
pub fn put(w: &mut Worker, ttl: bool) {
    let ctx = w.ctx;
    let ks = if ttl { w.pick_value_ks() } else { w.pick_ks() };
    let key = w.pick_key();
    let _held = ctx.locks.lock(&[(ks, key)]);
    let state = w.new_value(ks);
    let (name, value, opts) = (key_name(key), w.bytes_of(ks, key, state), w.write_options());
    let handle = &ctx.ks[ks];
    let op = if ttl { "put_with_ttl" } else { "put" };
    let written = w.write(op, &[(ks, key, state)], || {
        if ttl {
            handle.put_with_ttl(&name, &value, TTL)
        } else {
            handle.put_opt(&name, &value, &opts)
        }
    });
    // Half the puts are read back at once: an acknowledged write is readable (a put whose
    // `Ok` came before its batch was written, beside large batches, reads older).
    if written && w.rng.gen_bool(0.5) {
        w.checker()
            .read("get right after the put", ks, key, handle.get(&name));
    }
}

/// A delete.
pub fn delete(w: &mut Worker) {
    let ctx = w.ctx;
    let (ks, key) = (w.pick_ks(), w.pick_key());
    let _held = ctx.locks.lock(&[(ks, key)]);
    let (state, name, opts) = (w.new_deletion(), key_name(key), w.write_options());
    w.write("delete", &[(ks, key, state)], || {
        ctx.ks[ks].delete_opt(&name, &opts)
    });
}

/// A U64Add merge of 1 to 16 into a counter (a put of a new sum when its state is uncertain:
/// a sum over an unknown base could not be predicted).
pub fn merge(w: &mut Worker) {
    let ctx = w.ctx;
    let key = w.pick_key();
    let _held = ctx.locks.lock(&[(COUNTERS, key)]);
    let name = key_name(key);
    let opts = w.write_options();
    let handle = &ctx.ks[COUNTERS];
    match ctx.exp.counter_base(key) {
        Some(base) => {
            let delta = w.rng.gen_range(1..=16u64);
            w.write("merge", &[(COUNTERS, key, base + delta)], || {
                handle.merge_opt(&name, delta.to_le_bytes(), &opts)
            });
        }
        None => {
            let state = w.new_value(COUNTERS);
            w.write("merge (put)", &[(COUNTERS, key, state)], || {
                handle.put_opt(&name, state.to_le_bytes(), &opts)
            });
        }
    }
}

/// A delete_range over a locked run of 1 to 16 keys.
pub fn delete_range(w: &mut Worker) {
    let ctx = w.ctx;
    let ks = w.pick_ks();
    let (start, end) = w.pick_run(16);
    let _held = ctx.locks.lock_run(ks, start, end);
    let changes: Vec<Change> = (start..end).map(|k| (ks, k, w.new_deletion())).collect();
    let opts = w.write_options();
    w.write("delete_range", &changes, || {
        ctx.ks[ks].delete_range_opt(key_name(start), key_name(end), &opts)
    });
}

/// A write batch, plain or indexed (read back before it is written).
enum AnyBatch {
    Plain(WriteBatch),
    Indexed(WriteBatchWithIndex),
}

impl AnyBatch {
    fn put_in(&mut self, ks: &Keyspace, key: &[u8], value: &[u8]) {
        match self {
            AnyBatch::Plain(b) => {
                b.put_in(ks, key, value);
            }
            AnyBatch::Indexed(b) => {
                b.put_in(ks, key, value);
            }
        }
    }

    fn delete_in(&mut self, ks: &Keyspace, key: &[u8]) {
        match self {
            AnyBatch::Plain(b) => {
                b.delete_in(ks, key);
            }
            AnyBatch::Indexed(b) => {
                b.delete_in(ks, key);
            }
        }
    }

    fn merge_in(&mut self, ks: &Keyspace, key: &[u8], operand: &[u8]) {
        match self {
            AnyBatch::Plain(b) => {
                b.merge_in(ks, key, operand);
            }
            AnyBatch::Indexed(b) => {
                b.merge_in(ks, key, operand);
            }
        }
    }

    fn into_batch(self) -> WriteBatch {
        match self {
            AnyBatch::Plain(b) => b,
            AnyBatch::Indexed(b) => b.into(),
        }
    }
}

/// A batch of 2 to 6 writes (puts, deletes, merges) across the keyspaces, sometimes with log
/// data: all of it or none. Half are `WriteBatchWithIndex`es, each key read back through
/// `get_from_batch_and_db_in` before the batch is written.
pub fn batch(w: &mut Worker) {
    let ctx = w.ctx;
    let n = w.rng.gen_range(2..=6);
    let keys = w.pick_keys(n);
    let _held = ctx.locks.lock(&keys);
    let mut batch = if w.rng.gen_bool(0.5) {
        AnyBatch::Indexed(WriteBatchWithIndex::new())
    } else {
        AnyBatch::Plain(WriteBatch::new())
    };
    let mut changes = Vec::new();
    for &(ks, key) in &keys {
        let handle = &ctx.ks[ks];
        let name = key_name(key);
        let roll = w.rng.gen_range(0..10);
        let base = (ks == COUNTERS)
            .then(|| ctx.exp.counter_base(key))
            .flatten();
        if roll < 2 {
            batch.delete_in(handle, &name);
            changes.push((ks, key, w.new_deletion()));
        } else if let (true, Some(base)) = (roll < 5, base) {
            let delta = w.rng.gen_range(1..=16u64);
            batch.merge_in(handle, &name, &delta.to_le_bytes());
            changes.push((ks, key, base + delta));
        } else {
            let state = w.new_value(ks);
            batch.put_in(handle, &name, &w.bytes_of(ks, key, state));
            changes.push((ks, key, state));
        }
    }
    if let AnyBatch::Indexed(indexed) = &batch {
        for &(ks, key, state) in &changes {
            let got = indexed.get_from_batch_and_db_in(&ctx.ks[ks], key_name(key));
            match got {
                Ok(v) => w.checker().value(
                    "get_from_batch_and_db",
                    ks,
                    key,
                    &Allowed::exactly(state),
                    v.as_deref(),
                ),
                Err(e) => w
                    .checker()
                    .error("get_from_batch_and_db", KEYSPACES[ks], "-", &e),
            }
        }
    }
    let mut batch = batch.into_batch();
    if w.rng.gen_ratio(1, 10) {
        batch.put_log_data(b"siftdb-stress log data");
    }
    let opts = w.write_options();
    w.write("write batch", &changes, || ctx.db.write_opt(batch, &opts));
}
