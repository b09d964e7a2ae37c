//! Compaction filters as rust-rocksdb declares them, run by siftdb's `CompactionFilter`.

use parking_lot::Mutex;

/// What a compaction filter decided for one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Keep the value.
    Keep,
    /// Remove the key.
    Remove,
    /// Keep the key with this value.
    Change(&'static [u8]),
}

/// A compaction filter object: called for each value compaction rewrites.
pub trait CompactionFilter {
    /// The decision for `value` of `key`, written to `level`.
    fn filter(&mut self, level: u32, key: &[u8], value: &[u8]) -> Decision;
    /// A name for logs.
    fn name(&self) -> &std::ffi::CStr;
}

/// A compaction filter function: level, key, value to a [`Decision`].
pub trait CompactionFilterFn: FnMut(u32, &[u8], &[u8]) -> Decision {}

impl<F> CompactionFilterFn for F where F: FnMut(u32, &[u8], &[u8]) -> Decision + Send + 'static {}

/// A filter function as siftdb's `CompactionFilter` (calls are serialized: the function is
/// `FnMut`).
pub(crate) struct FilterAdapter<F> {
    name: String,
    filter: Mutex<F>,
}

impl<F> FilterAdapter<F> {
    pub(crate) fn new(name: String, filter: F) -> Self {
        FilterAdapter {
            name,
            filter: Mutex::new(filter),
        }
    }
}

impl<F: CompactionFilterFn + Send + 'static> siftdb::CompactionFilter for FilterAdapter<F> {
    fn name(&self) -> &str {
        &self.name
    }

    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> siftdb::CompactionDecision {
        let level = u32::try_from(level).unwrap_or(u32::MAX);
        match (self.filter.lock())(level, key, value) {
            Decision::Keep => siftdb::CompactionDecision::Keep,
            Decision::Remove => siftdb::CompactionDecision::Remove,
            Decision::Change(v) => siftdb::CompactionDecision::ChangeValue(v.to_vec()),
        }
    }
}
