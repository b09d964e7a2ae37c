//! What a table read touched: the per-call trace and the shared counters it feeds.

use std::sync::atomic::Ordering::Relaxed;

pub use crate::ticker::Ticker;

/// What the whole-key filter said on one lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FilterOutcome {
    /// The table has no filter (or it was not consulted).
    #[default]
    NotChecked,
    /// "Definitely not": the lookup ended there.
    No,
    /// "Maybe": the lookup went on to the index and a data block.
    Maybe,
}

/// How a block was obtained on one lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlockAccess {
    /// Not needed.
    #[default]
    NotRead,
    /// Held by the table itself (pinned) — no cache lookup, no I/O.
    Pinned,
    /// Found in the block cache.
    CacheHit,
    /// Read from the file (and inserted into the cache).
    FileRead,
}

impl BlockAccess {
    /// Whether the block was used at all.
    pub fn touched(self) -> bool {
        self != BlockAccess::NotRead
    }
}

/// Exactly which structures one `Table::get` touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GetTrace {
    /// Filter block access.
    pub filter_block: BlockAccess,
    /// Filter verdict.
    pub filter: FilterOutcome,
    /// Index block access.
    pub index_block: BlockAccess,
    /// Data block access.
    pub data_block: BlockAccess,
    /// Whether the key had a version in the table (value or tombstone).
    pub key_found: bool,
    /// The sequence number of that version (when `key_found`): a range tombstone of the same
    /// table hides it if newer.
    pub sequence: u64,
    /// What the false-positive memo did for this lookup.
    pub memo: MemoOutcome,
    /// The consulted filter's expected FPR, in parts per billion (0 when no filter was asked).
    pub filter_expected_fpr_ppb: u32,
}

/// The false-positive memo's part in one lookup (see `TableReadOptions::false_positive_memo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoOutcome {
    /// Not asked (no memo, or the filter said "no").
    #[default]
    NotAsked,
    /// Known absent: the lookup ended without reading the index or a data block.
    Hit,
    /// Asked, not known; the lookup then found the key absent and remembered it.
    Inserted,
    /// Asked, not known (the key was there, or absence could not be stated for every
    /// sequence number).
    Miss,
}

impl GetTrace {
    /// Number of blocks read from the file.
    pub fn file_reads(&self) -> u32 {
        [self.filter_block, self.index_block, self.data_block]
            .iter()
            .filter(|a| **a == BlockAccess::FileRead)
            .count() as u32
    }
}

/// Counters shared by all tables of a database (RocksDB-style tickers): [`Ticker`]s, which
/// threads bump without sharing a cache line; statistics, not synchronization.
#[derive(Debug, Default)]
pub struct ReadStatistics {
    /// Lookups that consulted a whole-key filter.
    pub filter_checked: Ticker,
    /// Filter said "no" (`bloom.filter.useful`).
    pub filter_useful: Ticker,
    /// Filter said "maybe" (`bloom.filter.full.positive`).
    pub filter_positive: Ticker,
    /// Filter said "maybe" and the key was there (`bloom.filter.full.true.positive`).
    pub filter_true_positive: Ticker,
    /// Prefix filter consulted.
    pub prefix_checked: Ticker,
    /// Prefix filter said "no".
    pub prefix_useful: Ticker,
    /// Range filter consulted (`Table::range_may_overlap`).
    pub range_checked: Ticker,
    /// Range filter said "no key in the range": the table was skipped.
    pub range_useful: Ticker,
    /// Filter blocks read from files.
    pub filter_block_reads: Ticker,
    /// Index blocks read from files.
    pub index_block_reads: Ticker,
    /// Data blocks read from files.
    pub data_block_reads: Ticker,
    /// Data blocks used by point lookups (from cache or file).
    pub data_block_accesses: Ticker,
    /// The expected FPRs of the filters asked about keys they do not hold, added up in parts
    /// per billion: the false positives the filters' sizes predict (a low-noise measure of how
    /// well filter memory is placed, beside the counted ones).
    pub filter_expected_fp_ppb: Ticker,
    /// Lookups the false-positive memo answered ([`MemoOutcome::Hit`]).
    pub memo_hits: Ticker,
    /// False positives remembered by the memo ([`MemoOutcome::Inserted`]).
    pub memo_inserts: Ticker,
    /// Bytes read from table files.
    pub bytes_read: Ticker,
}

impl ReadStatistics {
    /// Adds one lookup's trace to the counters.
    #[inline]
    pub fn record(&self, trace: &GetTrace) {
        match trace.filter {
            FilterOutcome::NotChecked => {}
            FilterOutcome::No => {
                self.filter_checked.fetch_add(1, Relaxed);
                self.filter_useful.fetch_add(1, Relaxed);
                self.filter_expected_fp_ppb
                    .fetch_add(u64::from(trace.filter_expected_fpr_ppb), Relaxed);
            }
            FilterOutcome::Maybe => {
                self.filter_checked.fetch_add(1, Relaxed);
                self.filter_positive.fetch_add(1, Relaxed);
                if trace.key_found {
                    self.filter_true_positive.fetch_add(1, Relaxed);
                } else {
                    self.filter_expected_fp_ppb
                        .fetch_add(u64::from(trace.filter_expected_fpr_ppb), Relaxed);
                }
            }
        }
        if trace.data_block.touched() {
            self.data_block_accesses.fetch_add(1, Relaxed);
        }
        match trace.memo {
            MemoOutcome::Hit => {
                self.memo_hits.fetch_add(1, Relaxed);
            }
            MemoOutcome::Inserted => {
                self.memo_inserts.fetch_add(1, Relaxed);
            }
            MemoOutcome::NotAsked | MemoOutcome::Miss => {}
        }
    }

    /// Counts a block read from a file.
    pub fn record_file_read(&self, kind: siftdb_cache::BlockKind, bytes: usize) {
        use siftdb_cache::BlockKind;
        let counter = match kind {
            BlockKind::Data => Some(&self.data_block_reads),
            BlockKind::Index => Some(&self.index_block_reads),
            BlockKind::Filter => Some(&self.filter_block_reads),
            // Properties are read once at open; only their bytes count.
            _ => None,
        };
        if let Some(counter) = counter {
            counter.fetch_add(1, Relaxed);
        }
        self.bytes_read.fetch_add(bytes as u64, Relaxed);
    }

    /// Measured FPR: false positives / (false positives + true negatives).
    pub fn measured_fpr(&self) -> f64 {
        let positive = self.filter_positive.load(Relaxed);
        let true_positive = self.filter_true_positive.load(Relaxed);
        let useful = self.filter_useful.load(Relaxed);
        let false_positive = positive.saturating_sub(true_positive);
        let negatives = false_positive + useful;
        if negatives == 0 {
            0.0
        } else {
            false_positive as f64 / negatives as f64
        }
    }
}
