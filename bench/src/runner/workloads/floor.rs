//! missfloor: what a missing key costs at the least on this machine, for this tree — one
//! dependent memory load over a buffer the size of the tree's filter index, then one lookup in
//! an empty database (its memtable empty), the two chained so that neither overlaps the other.
//! A lookup of a missing key that the filter index rules out does both and nothing else; the
//! ratio of `readmissing`'s time per key to this one's is the overhead left around the probe.

use std::cell::Cell;
use std::hint::black_box;

use super::super::error::{Error, Result};
use super::super::keys::{Rng, Variant};
use super::super::measure::{Measured, Outcome};
use super::Workbench;
use crate::runner::args::Benchmark;

/// Bytes per buffer slot: one cache line, so every load of the chase is its own line.
const LINE: usize = 64;

/// One cache line of the chase buffer: the slot to load next, and padding.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line {
    next: usize,
    _pad: [usize; LINE / 8 - 1],
}

/// A buffer of `bytes` (at least two lines) whose lines form one random cycle (Sattolo's
/// shuffle), so the hardware prefetchers cannot guess the next line.
fn chase_buffer(bytes: u64, seed: u64) -> Vec<Line> {
    let lines = usize::try_from(bytes / LINE as u64)
        .unwrap_or(usize::MAX)
        .max(2);
    let mut order: Vec<usize> = (0..lines).collect();
    let mut rng = Rng::new(seed, 0xF100);
    for i in (1..lines).rev() {
        let j = rng.below(i as u64) as usize;
        order.swap(i, j);
    }
    let mut buffer = vec![
        Line {
            next: 0,
            _pad: [0; LINE / 8 - 1]
        };
        lines
    ];
    for w in order.windows(2) {
        buffer[w[0]].next = w[1];
    }
    buffer[order[lines - 1]].next = order[0];
    buffer
}

thread_local! {
    /// Where this thread's chase stands.
    static AT: Cell<usize> = const { Cell::new(0) };
}

impl Workbench<'_> {
    /// missfloor (siftdb only: the buffer is sized from its filter index).
    pub(super) fn miss_floor(&self, stream: u64) -> Result<Measured> {
        // `skip_reason` skips the workload where there is no index; this is its last guard.
        let bytes = self.engine.stats().map_or(0, |s| s.filter_index_bytes);
        if bytes == 0 {
            return Err(Error::new(
                "missfloor: no filter index to size the buffer from",
            ));
        }
        let buffer = chase_buffer(bytes, self.config.seed);
        let dir = tempfile::tempdir()?;
        let empty = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
        if !self.config.json {
            println!(
                "missfloor    : one dependent load over {:.1} MiB (the filter index) + one get on an empty database",
                bytes as f64 / (1 << 20) as f64
            );
        }
        let measured = self.reads(Benchmark::MissFloor, stream, |w, ctx| {
            let at = AT.get() % buffer.len();
            let next = black_box(&buffer[at]).next;
            // The key depends on the load, and the next load on the lookup's answer: each step
            // waits for the one before.
            w.keys.encode(
                next as u64 % w.config.num.max(1),
                Variant::Missing,
                &mut ctx.key,
            );
            let found = empty.get(&ctx.key)?.is_some();
            AT.set(next ^ usize::from(found));
            Ok(Outcome {
                ops: 1,
                found: u64::from(found),
                ..Outcome::default()
            })
        })?;
        Ok(measured)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chase_buffer_is_one_cycle_through_every_line() {
        let buffer = chase_buffer(64 * 1000, 7);
        let mut seen = vec![false; buffer.len()];
        let mut at = 0;
        for _ in 0..buffer.len() {
            assert!(!seen[at], "line {at} visited twice");
            seen[at] = true;
            at = buffer[at].next;
        }
        assert_eq!(at, 0);
        assert!(seen.iter().all(|&s| s));
    }
}
