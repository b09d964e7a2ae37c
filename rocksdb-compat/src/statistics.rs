//! Statistics kept by the layer when `Options::enable_statistics` is on: bytes and keys
//! written and read through it, and the time of its writes. siftdb's own statistics are the
//! `rocksdb.stats` property.

use std::sync::atomic::{AtomicU64, Ordering};

/// How much is recorded (siftdb records the same always).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsLevel {
    /// No timers.
    DisableAll,
    /// Except tickers.
    ExceptTickers,
    /// Except histograms and timers.
    ExceptHistogramOrTimers,
    /// Except timers.
    ExceptTimers,
    /// Except detailed timers.
    ExceptDetailedTimers,
    /// Except time spent on mutexes.
    ExceptTimeForMutex,
    /// Everything.
    All,
}

/// Counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ticker {
    /// Bytes written.
    BytesWritten,
    /// Bytes read.
    BytesRead,
    /// Keys written.
    NumberKeysWritten,
    /// Keys read.
    NumberKeysRead,
    /// Block cache misses.
    BlockCacheMiss,
    /// Block cache hits.
    BlockCacheHit,
    /// Bloom filter useful.
    BloomFilterUseful,
}

/// Histograms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Histogram {
    /// Get latency.
    DbGet,
    /// Write latency.
    DbWrite,
    /// Seek latency.
    DbSeek,
    /// Compaction time.
    CompactionTime,
}

/// A histogram's figures (always empty here).
#[derive(Debug, Clone, Copy, Default)]
pub struct HistogramData {
    count: u64,
    max: f64,
    median: f64,
    average: f64,
    sum: u64,
}

impl HistogramData {
    /// Samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Largest sample.
    pub fn max(&self) -> f64 {
        self.max
    }

    /// Median.
    pub fn median(&self) -> f64 {
        self.median
    }

    /// Average.
    pub fn average(&self) -> f64 {
        self.average
    }

    /// Sum.
    pub fn sum(&self) -> u64 {
        self.sum
    }
}

/// The counters one `Options::enable_statistics` shares with the databases opened with it.
#[derive(Debug, Default)]
pub(crate) struct Statistics {
    bytes_written: AtomicU64,
    keys_written: AtomicU64,
    bytes_read: AtomicU64,
    keys_read: AtomicU64,
    writes: AtomicU64,
    write_nanos: AtomicU64,
    write_max_nanos: AtomicU64,
}

impl Statistics {
    /// A write of `keys` keys and `bytes` bytes that took `nanos`.
    pub(crate) fn wrote(&self, keys: u64, bytes: u64, nanos: u64) {
        self.keys_written.fetch_add(keys, Ordering::Relaxed);
        self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.write_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.write_max_nanos.fetch_max(nanos, Ordering::Relaxed);
    }

    /// A read that found `bytes` bytes (or nothing).
    pub(crate) fn read(&self, bytes: Option<usize>) {
        self.keys_read.fetch_add(1, Ordering::Relaxed);
        self.bytes_read
            .fetch_add(bytes.unwrap_or(0) as u64, Ordering::Relaxed);
    }

    pub(crate) fn ticker(&self, ticker: Ticker) -> u64 {
        let counter = match ticker {
            Ticker::BytesWritten => &self.bytes_written,
            Ticker::NumberKeysWritten => &self.keys_written,
            Ticker::BytesRead => &self.bytes_read,
            Ticker::NumberKeysRead => &self.keys_read,
            _ => return 0,
        };
        counter.load(Ordering::Relaxed)
    }

    /// Write times in microseconds (count, sum, largest; the median is not kept and is the
    /// average here).
    pub(crate) fn histogram(&self, histogram: Histogram) -> HistogramData {
        if histogram != Histogram::DbWrite {
            return HistogramData::default();
        }
        let count = self.writes.load(Ordering::Relaxed);
        let sum = self.write_nanos.load(Ordering::Relaxed) as f64 / 1000.0;
        let average = if count == 0 { 0.0 } else { sum / count as f64 };
        HistogramData {
            count,
            max: self.write_max_nanos.load(Ordering::Relaxed) as f64 / 1000.0,
            median: average,
            average,
            sum: sum as u64,
        }
    }
}

impl std::fmt::Display for Statistics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (name, ticker) in [
            ("rocksdb.bytes.written", Ticker::BytesWritten),
            ("rocksdb.number.keys.written", Ticker::NumberKeysWritten),
            ("rocksdb.bytes.read", Ticker::BytesRead),
            ("rocksdb.number.keys.read", Ticker::NumberKeysRead),
        ] {
            writeln!(f, "{name} COUNT : {}", self.ticker(ticker))?;
        }
        let h = self.histogram(Histogram::DbWrite);
        writeln!(
            f,
            "rocksdb.db.write.micros COUNT : {} SUM : {} MAX : {}",
            h.count, h.sum, h.max
        )
    }
}
