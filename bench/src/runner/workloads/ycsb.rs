//! YCSB's core workloads A–F (Cooper et al., "Benchmarking cloud serving systems with YCSB",
//! SoCC 2010; the `workloads/workload[a-f]` files of the YCSB repository) on the runner's
//! records: the `--num` keys a fill wrote, each value `--value_size` bytes.
//!
//! | workload | mix | key choice |
//! |---|---|---|
//! | `ycsba` | 50 % read, 50 % update | scrambled Zipfian |
//! | `ycsbb` | 95 % read, 5 % update | scrambled Zipfian |
//! | `ycsbc` | 100 % read | scrambled Zipfian |
//! | `ycsbd` | 95 % read, 5 % insert | latest (Zipfian over recency) |
//! | `ycsbe` | 95 % scan of 1–100 records, 5 % insert | scrambled Zipfian start |
//! | `ycsbf` | 50 % read, 50 % read-modify-write | scrambled Zipfian |
//!
//! As in YCSB's `CoreWorkload`: the Zipfian chooser (θ = `--zipf_theta`, 0.99 by default) ranges
//! over the records plus twice the inserts the phase expects, its ranks are scattered over that
//! space (a fixed permutation, where YCSB hashes with FNV), and a draw beyond the records
//! inserted so far is drawn again. Inserts append after the loaded records in key order (YCSB's
//! `insertorder=ordered`). An update writes a whole new value (YCSB's `writeallfields=true`;
//! with one value per record there is no field to pick). A scan's length is uniform in 1..=100
//! (`maxscanlength=100`). A read-modify-write is one lookup and one put of the same key, timed as
//! one operation. Each operation type has its own latency histogram.

use std::sync::atomic::Ordering;

use super::{Workbench, STREAM_YCSB};
use crate::runner::args::Benchmark;
use crate::runner::error::{Error, Result};
use crate::runner::keys::{Permutation, Variant};
use crate::runner::measure::{Measured, OpKind, Outcome, ThreadCtx};
use crate::runner::zipf::Zipf;

/// YCSB's `maxscanlength`.
const MAX_SCAN_LENGTH: u64 = 100;

/// The operation mix of a workload, in per-mille so that a draw is one integer comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mix {
    read: u64,
    update: u64,
    insert: u64,
    scan: u64,
    read_modify_write: u64,
    /// Reads favour the most recently inserted records (workload D).
    latest: bool,
}

impl Mix {
    fn of(benchmark: Benchmark) -> Mix {
        let none = Mix {
            read: 0,
            update: 0,
            insert: 0,
            scan: 0,
            read_modify_write: 0,
            latest: false,
        };
        match benchmark {
            Benchmark::YcsbA => Mix {
                read: 500,
                update: 500,
                ..none
            },
            Benchmark::YcsbB => Mix {
                read: 950,
                update: 50,
                ..none
            },
            Benchmark::YcsbD => Mix {
                read: 950,
                insert: 50,
                latest: true,
                ..none
            },
            Benchmark::YcsbE => Mix {
                scan: 950,
                insert: 50,
                ..none
            },
            Benchmark::YcsbF => Mix {
                read: 500,
                read_modify_write: 500,
                ..none
            },
            _ => Mix { read: 1000, ..none },
        }
    }

    /// The operation for a draw in `0..1000` (the shares add up to 1000).
    fn pick(&self, draw: u64) -> OpKind {
        let shares = [
            (self.read, OpKind::Read),
            (self.update, OpKind::Update),
            (self.insert, OpKind::Insert),
            (self.scan, OpKind::Scan),
            (self.read_modify_write, OpKind::ReadModifyWrite),
        ];
        let mut edge = 0;
        for (share, kind) in shares {
            edge += share;
            if draw < edge {
                return kind;
            }
        }
        OpKind::ReadModifyWrite
    }
}

/// Chooses the record of a read, update, scan start or read-modify-write.
struct KeyChooser {
    zipf: Zipf,
    /// Scrambled: ranks scattered over `0..space` (`None`: latest, ranks back from the newest).
    scatter: Option<Permutation>,
}

impl KeyChooser {
    /// One record index below `limit` (the records inserted so far).
    fn choose(&self, ctx: &mut ThreadCtx, limit: u64) -> u64 {
        match &self.scatter {
            None => limit - 1 - self.zipf.sample(&mut ctx.rng).min(limit - 1),
            Some(p) => loop {
                let index = p.get(self.zipf.sample(&mut ctx.rng));
                if index < limit {
                    return index;
                }
            },
        }
    }
}

impl Workbench<'_> {
    /// One YCSB workload: `--reads` operations on `--threads` threads (see the module docs).
    pub(super) fn ycsb(&self, benchmark: Benchmark, stream: u64) -> Result<Measured> {
        let mix = Mix::of(benchmark);
        let ops = self.config.reads;
        let records = self.acknowledged_inserts();
        let chooser = if mix.latest {
            KeyChooser {
                zipf: Zipf::new(records, self.config.zipf_theta),
                scatter: None,
            }
        } else {
            let expected_inserts = ops * mix.insert / 1000;
            let space = records + 2 * expected_inserts;
            KeyChooser {
                zipf: Zipf::new(space, self.config.zipf_theta),
                scatter: Some(Permutation::new(space, self.config.seed ^ STREAM_YCSB)),
            }
        };
        self.timed(
            benchmark,
            self.config.threads,
            ops,
            ops,
            stream,
            |ctx, _| {
                let kind = mix.pick(ctx.rng.below(1000));
                let mut outcome = self.ycsb_op(ctx, kind, &chooser)?;
                outcome.kind = Some(kind);
                Ok(outcome)
            },
        )
    }

    /// One operation of type `kind`: an insert of the next new record, or a read, update, scan
    /// or read-modify-write of a record `chooser` picks among the acknowledged ones. Whether the
    /// record should be found is read from the model before the engine is asked.
    fn ycsb_op(&self, ctx: &mut ThreadCtx, kind: OpKind, chooser: &KeyChooser) -> Result<Outcome> {
        if kind == OpKind::Insert {
            return self.ycsb_insert(ctx);
        }
        let index = chooser.choose(ctx, self.acknowledged_inserts());
        let expected = u64::from(self.model.is_live(index));
        let ks = self.keys.keyspace(index);
        self.keys.encode(index, Variant::Written, &mut ctx.key);
        let mut outcome = Outcome {
            ops: 1,
            expected,
            ..Outcome::default()
        };
        match kind {
            OpKind::Read | OpKind::ReadModifyWrite => {
                outcome.found = u64::from(self.engine.get(ks, &ctx.key, &mut ctx.buf)?);
                outcome.expected = self.recheck_expected(index, expected, outcome.found);
                if kind == OpKind::ReadModifyWrite {
                    self.ycsb_put(ctx, index)?;
                }
            }
            OpKind::Scan => {
                let length = 1 + ctx.rng.below(MAX_SCAN_LENGTH);
                let seek = self.engine.seek_read(ks, &ctx.key, length as usize - 1)?;
                outcome.found = u64::from(seek.found);
                outcome.expected = self.recheck_expected(index, expected, outcome.found);
                outcome.entries = seek.entries;
            }
            // An update looks nothing up (and `Insert` returned above).
            OpKind::Update | OpKind::Insert => {
                self.ycsb_put(ctx, index)?;
                outcome.expected = 0;
            }
        }
        Ok(outcome)
    }

    /// The expected count of a lookup that found `found` where the model said `before`. A
    /// deleted record may be rewritten by another thread's update between the model read and
    /// the lookup (YCSB's updates only ever make records live), so a hit on a record whose put
    /// had been started was expected; a miss on a record live before the lookup stays a miss.
    fn recheck_expected(&self, index: u64, before: u64, found: u64) -> u64 {
        if found > before && self.model.was_announced(index) {
            found
        } else {
            before
        }
    }

    /// A put of a new value under the key in `ctx.key` (record `index`).
    fn ycsb_put(&self, ctx: &mut ThreadCtx, index: u64) -> Result<()> {
        let value = self.values.value(&mut ctx.rng);
        self.model.announce(index);
        self.engine
            .put(self.keys.keyspace(index), &ctx.key, value)?;
        self.model.set_live(index);
        Ok(())
    }

    /// The records below this index are all written: the loaded ones and every insert up to
    /// the first one still in flight (YCSB's acknowledged counter). Reads choose below it, so
    /// a read never races the insert of its own record.
    fn acknowledged_inserts(&self) -> u64 {
        self.acknowledged.load(Ordering::Acquire)
    }

    /// Moves the acknowledged mark over the inserts that have completed.
    fn acknowledge_inserts(&self) {
        loop {
            let mark = self.acknowledged.load(Ordering::Acquire);
            let done = mark < self.next_insert.load(Ordering::Acquire) && self.model.is_live(mark);
            if !done {
                return;
            }
            // A failed exchange means another thread moved the mark: look again from there.
            let _ = self.acknowledged.compare_exchange(
                mark,
                mark + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }

    /// An insert of the next new record.
    fn ycsb_insert(&self, ctx: &mut ThreadCtx) -> Result<Outcome> {
        let index = self.next_insert.fetch_add(1, Ordering::Relaxed);
        if index >= self.keys.capacity() {
            return Err(Error::new(format!(
                "YCSB inserts ran past the {} key indexes reserved for them",
                self.keys.capacity() - self.config.num
            )));
        }
        self.keys.encode(index, Variant::Written, &mut ctx.key);
        self.ycsb_put(ctx, index)?;
        self.acknowledge_inserts();
        Ok(Outcome {
            ops: 1,
            ..Outcome::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_follow_the_core_workloads() {
        for b in Benchmark::ALL.into_iter().filter(|b| b.is_ycsb()) {
            let m = Mix::of(b);
            let total = m.read + m.update + m.insert + m.scan + m.read_modify_write;
            assert_eq!(total, 1000, "{}", b.name());
        }
        let share = |b: Benchmark, kind: OpKind| {
            let mix = Mix::of(b);
            (0..1000).filter(|&d| mix.pick(d) == kind).count()
        };
        assert_eq!(share(Benchmark::YcsbA, OpKind::Read), 500);
        assert_eq!(share(Benchmark::YcsbA, OpKind::Update), 500);
        assert_eq!(share(Benchmark::YcsbB, OpKind::Update), 50);
        assert_eq!(share(Benchmark::YcsbC, OpKind::Read), 1000);
        assert_eq!(share(Benchmark::YcsbD, OpKind::Insert), 50);
        assert_eq!(share(Benchmark::YcsbE, OpKind::Scan), 950);
        assert_eq!(share(Benchmark::YcsbE, OpKind::Insert), 50);
        assert_eq!(share(Benchmark::YcsbF, OpKind::ReadModifyWrite), 500);
        assert!(Mix::of(Benchmark::YcsbD).latest);
    }

    #[test]
    fn latest_favours_the_newest_records() {
        let chooser = KeyChooser {
            zipf: Zipf::new(10_000, 0.99),
            scatter: None,
        };
        let mut ctx = ThreadCtx {
            thread: 0,
            rng: crate::runner::keys::Rng::new(3, 4),
            key: Vec::new(),
            buf: Vec::new(),
            indexes: Vec::new(),
        };
        let draws: Vec<u64> = (0..10_000)
            .map(|_| chooser.choose(&mut ctx, 10_500))
            .collect();
        assert!(draws.iter().all(|&i| i < 10_500));
        let recent = draws.iter().filter(|&&i| i >= 10_400).count();
        assert!(recent > 5_000, "{recent}");
    }
}
