//! Statistics names. siftdb's statistics live on the database (`rocksdb.stats`); the
//! option-level tickers and histograms read 0 and empty.

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
