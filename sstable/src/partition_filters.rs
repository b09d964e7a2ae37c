//! Filter partitions: which data blocks each one covers, and building them on a worker while
//! the table is still being written.
//!
//! A partitioned table has one filter partition per index partition, and an index partition
//! closes once its entries fill about `metadata_block_size` bytes ([`RunCutter`]). That rule
//! only looks at the data blocks cut so far, so a builder with worker threads
//! ([`TableBuildOptions::compression_threads`](crate::TableBuildOptions) above 1) knows each
//! partition's keys as soon as its last block is cut, long before `finish`. [`EarlyFilters`]
//! hands each closed partition's hashes to a worker that builds and encodes its filter, so
//! the building thread no longer stops at `finish` to build a whole table's filters (for a
//! ribbon filter over a 64 MiB table, a fifth of a bulk load's time) while the compression
//! workers wait.
//!
//! The worker's filters are only a head start: `finish` uses one only where it would have
//! built the very same partition with the very same spec (the table ended up partitioned, the
//! run matches, the bits/key were not changed since), so the table's bytes are those a single
//! thread writes.

use std::ops::Range;
use std::sync::mpsc::{channel, Receiver, Sender};

use siftdb_filter::KeyHasher;

use crate::builder::FilterSpec;
use crate::error::{Result, SstError};

/// Index bytes one data block's entry is counted as when cutting partitions: its separator
/// and an encoded handle with the block format's overhead.
pub(crate) fn index_entry_bytes(separator_len: usize) -> usize {
    separator_len + 19
}

/// Cuts the data blocks, in order, into runs whose index entries fill about one metadata
/// block: a run closes with the block that brings it to `limit` bytes.
#[derive(Debug, Clone)]
pub(crate) struct RunCutter {
    limit: usize,
    start: usize,
    bytes: usize,
    blocks: usize,
}

impl RunCutter {
    pub(crate) fn new(limit: usize) -> RunCutter {
        RunCutter {
            limit,
            start: 0,
            bytes: 0,
            blocks: 0,
        }
    }

    /// The next data block, with its separator's length; the run it closes, if it does.
    pub(crate) fn push(&mut self, separator_len: usize) -> Option<Range<usize>> {
        self.blocks += 1;
        self.bytes += index_entry_bytes(separator_len);
        if self.bytes < self.limit {
            return None;
        }
        let run = self.start..self.blocks;
        self.start = self.blocks;
        self.bytes = 0;
        Some(run)
    }

    /// The last, unfinished run (`None` if the last block closed a run).
    pub(crate) fn rest(&self) -> Option<Range<usize>> {
        (self.start < self.blocks).then_some(self.start..self.blocks)
    }
}

/// A filter partition built and encoded by the worker.
pub(crate) struct BuiltPartition {
    /// The data blocks it covers.
    pub run: Range<usize>,
    /// The encoded filter block.
    pub encoded: Vec<u8>,
    pub expected_fpr: f64,
    /// Hashes it was built over.
    pub keys: usize,
}

/// A partition's hashes on their way to the worker.
struct Job {
    run: Range<usize>,
    hashes: Vec<u64>,
}

/// Filter partitions built by a worker thread as their runs close.
pub(crate) struct EarlyFilters {
    spec: FilterSpec,
    cutter: RunCutter,
    jobs: Sender<Job>,
    done: Receiver<std::result::Result<BuiltPartition, String>>,
    submitted: usize,
}

impl EarlyFilters {
    /// A worker building `spec` filters with `hasher`, for runs of `metadata_block_size`
    /// index bytes; `None` if no thread could be started (the table is then built as a single
    /// thread builds it).
    pub(crate) fn start(
        spec: FilterSpec,
        hasher: KeyHasher,
        metadata_block_size: usize,
    ) -> Option<EarlyFilters> {
        let (jobs, inbox) = channel::<Job>();
        let (outbox, done) = channel();
        std::thread::Builder::new()
            .name("siftdb-filter".to_string())
            .spawn(move || {
                for job in inbox {
                    let built = build(spec, hasher, &job.hashes).map(|(encoded, expected_fpr)| {
                        BuiltPartition {
                            run: job.run,
                            encoded,
                            expected_fpr,
                            keys: job.hashes.len(),
                        }
                    });
                    if outbox.send(built).is_err() {
                        return; // the builder went away
                    }
                }
            })
            .ok()?;
        Some(EarlyFilters {
            spec,
            cutter: RunCutter::new(metadata_block_size),
            jobs,
            done,
            submitted: 0,
        })
    }

    /// A data block was cut. If it closes a run, `hashes_of(run)` gives the run's hashes and
    /// the worker builds its filter.
    pub(crate) fn block_cut(
        &mut self,
        separator_len: usize,
        hashes_of: impl FnOnce(&Range<usize>) -> Vec<u64>,
    ) {
        let Some(run) = self.cutter.push(separator_len) else {
            return;
        };
        let hashes = hashes_of(&run);
        // A worker that stopped leaves those runs to `finish` (see `finish`).
        if self.jobs.send(Job { run, hashes }).is_ok() {
            self.submitted += 1;
        }
    }

    /// Waits for every partition handed out and returns them in order, or none at all when
    /// the table's filter spec is no longer the one they were built with.
    pub(crate) fn finish(self, spec: Option<FilterSpec>) -> Result<Vec<BuiltPartition>> {
        let EarlyFilters {
            spec: built_with,
            jobs,
            done,
            submitted,
            ..
        } = self;
        drop(jobs);
        if spec != Some(built_with) {
            return Ok(Vec::new());
        }
        let mut built = Vec::with_capacity(submitted);
        for _ in 0..submitted {
            let partition = done
                .recv()
                .map_err(|_| SstError::InvalidArgument("a filter worker stopped".to_string()))?
                .map_err(SstError::InvalidArgument)?;
            built.push(partition);
        }
        Ok(built)
    }
}

/// Builds a filter of `spec` over `hashes`: its encoded block and expected FPR.
pub(crate) fn build(
    spec: FilterSpec,
    hasher: KeyHasher,
    hashes: &[u64],
) -> std::result::Result<(Vec<u8>, f64), String> {
    let filter = siftdb_filter::Filter::from_hashes(spec.kind, spec.bits_per_key, hasher, hashes)
        .map_err(|e| e.to_string())?;
    Ok((filter.encode(), filter.expected_fpr()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb_filter::FilterKind;

    #[test]
    fn run_cutter_closes_a_run_at_the_block_that_fills_it() {
        let mut cutter = RunCutter::new(100);
        let closed: Vec<_> = [30, 30, 40, 10, 100, 5]
            .iter()
            .map(|len| cutter.push(*len))
            .collect();
        // 49, 98, 157 → closes 0..3; 29, 148 → closes 3..5; 24 stays open.
        assert_eq!(closed, vec![None, None, Some(0..3), None, Some(3..5), None]);
        assert_eq!(cutter.rest(), Some(5..6));
        cutter.push(200);
        assert_eq!(cutter.rest(), None);
    }

    #[test]
    fn early_filters_come_back_in_order_and_equal_a_local_build() {
        let spec = FilterSpec {
            kind: FilterKind::Ribbon,
            bits_per_key: 9.5,
        };
        let hasher = KeyHasher::default();
        let mut early = EarlyFilters::start(spec, hasher, 100).expect("a thread");
        let hashes_of =
            |run: &Range<usize>| (run.start as u64 * 1000..run.end as u64 * 1000).collect();
        for _ in 0..10 {
            early.block_cut(31, hashes_of); // two blocks per run
        }
        let built = early.finish(Some(spec)).unwrap();
        assert_eq!(built.len(), 5);
        for (i, partition) in built.iter().enumerate() {
            assert_eq!(partition.run, 2 * i..2 * i + 2);
            let (encoded, fpr) = build(spec, hasher, &hashes_of(&partition.run)).unwrap();
            assert_eq!(
                (&partition.encoded, partition.expected_fpr),
                (&encoded, fpr)
            );
            assert_eq!(partition.keys, 2000);
        }
    }

    #[test]
    fn early_filters_are_dropped_when_the_spec_changed() {
        let spec = FilterSpec {
            kind: FilterKind::BlockedBloom,
            bits_per_key: 10.0,
        };
        let mut early = EarlyFilters::start(spec, KeyHasher::default(), 10).expect("a thread");
        early.block_cut(5, |_| vec![1, 2, 3]);
        let changed = FilterSpec {
            bits_per_key: 6.0,
            ..spec
        };
        assert!(early.finish(Some(changed)).unwrap().is_empty());
    }
}
