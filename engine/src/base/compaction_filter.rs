//! Compaction filters (RocksDB's `CompactionFilter`): the user's say on values as compaction
//! rewrites them — drop expired sessions, rewrite a format, purge a tenant lazily.
//!
//! Every compaction job installs a `JobFilter` as its merge's `EntryFilter` (siftdb-compaction):
//! it removes expired values and asks the user's filter, if any, about the rest. The merge asks
//! only about the newest version of a key that no live snapshot can see, and turns a removal into
//! a tombstone unless the output is the bottom and no snapshot is live, so no older version can
//! resurface. A panic in the user's filter abandons the job (`Error::CompactionFilter`): nothing
//! is lost, background compactions retry after a growing pause, and `wait_for_compaction` and
//! stalled writers report it. When the filter acted, the job installs only if no snapshot
//! appeared during its merge (it checks under the snapshot gate; `jobs/compaction/job.rs`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use parking_lot::Mutex;
use siftdb_compaction::{EntryFilter, FilterDecision};
use siftdb_sstable::{SstError, ValueKind};

/// What a [`CompactionFilter`] decided for one value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompactionDecision {
    /// Keep the value.
    Keep,
    /// Remove the key. Where an older version of it may still exist (below the compaction's
    /// output level, or kept for a snapshot) a tombstone takes the value's place, so the older
    /// version cannot resurface; at the bottom with no snapshot the key simply goes.
    Remove,
    /// Keep the key with this value instead.
    ChangeValue(Vec<u8>),
}

/// Decides, as compaction rewrites them, whether values stay, go or change (set it in
/// `Options::compaction_filter`).
///
/// `filter` is called for each value that is the newest version of its key among the tables a
/// compaction merges and that no live snapshot can see — so a snapshot's reads never change —
/// with the level the compaction writes to. Tombstones are not shown. It may run on any
/// compaction thread, at any time after the value was written (or never, for a key that is never
/// compacted): use it for what may happen lazily. A panic inside it fails that compaction
/// cleanly (its outputs are discarded, nothing is lost); the compaction is retried later, with a
/// growing pause while it keeps failing.
///
/// ```
/// use siftdb::{CompactionDecision, CompactionFilter};
/// /// Drops every value that starts with "tmp:".
/// struct DropTemporary;
/// impl CompactionFilter for DropTemporary {
///     fn name(&self) -> &str { "drop-temporary" }
///     fn filter(&self, _level: usize, _key: &[u8], value: &[u8]) -> CompactionDecision {
///         if value.starts_with(b"tmp:") { CompactionDecision::Remove } else { CompactionDecision::Keep }
///     }
/// }
/// let options = siftdb::Options {
///     compaction_filter: Some(std::sync::Arc::new(DropTemporary)),
///     ..Default::default()
/// };
/// # let _ = options;
/// ```
pub trait CompactionFilter: Send + Sync {
    /// A name for logs and errors.
    fn name(&self) -> &str;
    /// The decision for `value` of `key`, which the compaction writes to `level`.
    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> CompactionDecision;
}

/// One compaction job's [`EntryFilter`]: removes expired values (`Db::put_with_ttl`), then asks
/// the user's [`CompactionFilter`], if any, with the output level, turning a panic into an error
/// the job reports as [`Error::CompactionFilter`](crate::Error).
pub(crate) struct JobFilter {
    filter: Option<Arc<dyn CompactionFilter>>,
    /// Reads the value a blob index points to (given the key and the stored index), for a
    /// user's filter to see: only when there is one.
    blob: Option<BlobFetch>,
    level: usize,
    /// The time expiring values are judged by (milliseconds), fixed when the job starts.
    now: u64,
    /// Why the filter failed (its panic, and the key), once it has.
    failure: Mutex<Option<String>>,
    /// Whether the user's filter removed or changed anything.
    user_acted: std::sync::atomic::AtomicBool,
}

impl JobFilter {
    pub(crate) fn new(
        filter: Option<Arc<dyn CompactionFilter>>,
        level: usize,
        now: u64,
    ) -> JobFilter {
        JobFilter {
            filter,
            level,
            now,
            failure: Mutex::new(None),
            blob: None,
            user_acted: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether the user's filter removed or changed any value.
    pub(crate) fn user_acted(&self) -> bool {
        self.user_acted.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Why the filter failed, if it did.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failure.lock().clone()
    }
}

/// How a [`JobFilter`] reads a blob value: `(key, stored blob index)` to the value.
pub(crate) type BlobFetch =
    Box<dyn Fn(&[u8], &[u8]) -> crate::base::error::Result<Arc<Vec<u8>>> + Send + Sync>;

impl JobFilter {
    /// This filter, reading blob values for the user's filter with `blob`.
    pub(crate) fn reading_blobs_with(mut self, blob: BlobFetch) -> JobFilter {
        self.blob = Some(blob);
        self
    }

    /// The decision on a blob index: expired values go without their blob being read; the
    /// user's filter (if any) sees the value read from the blob file, and a changed value is
    /// stored inline (with the index's expiry).
    fn decide_blob(&self, user_key: &[u8], stored: &[u8]) -> Result<FilterDecision, SstError> {
        let corrupt = |reason: String| SstError::Corruption {
            file: "compaction input".to_string(),
            offset: 0,
            reason,
        };
        let index = siftdb_sstable::blob::BlobIndex::decode(stored).ok_or_else(|| {
            corrupt(format!(
                "the blob index of key {:?} does not decode",
                String::from_utf8_lossy(user_key)
            ))
        })?;
        if index.expiry.is_some_and(|expiry| self.now >= expiry) {
            return Ok(FilterDecision::Remove);
        }
        let (Some(_), Some(blob)) = (&self.filter, &self.blob) else {
            return Ok(FilterDecision::Keep);
        };
        let value = blob(user_key, stored).map_err(|e| corrupt(e.to_string()))?;
        Ok(match self.ask_user(user_key, &value)? {
            FilterDecision::ChangeValue(v) => match index.expiry {
                Some(expiry) => FilterDecision::ChangeValueAs(
                    ValueKind::ExpiringPut,
                    crate::base::ttl::encode(expiry, &v),
                ),
                None => FilterDecision::ChangeValueAs(ValueKind::Put, v),
            },
            decision => decision,
        })
    }
}

impl EntryFilter for JobFilter {
    fn decide(
        &self,
        user_key: &[u8],
        kind: ValueKind,
        value: &[u8],
    ) -> Result<FilterDecision, SstError> {
        if kind == ValueKind::BlobIndex {
            return self.decide_blob(user_key, value);
        }
        if kind != ValueKind::ExpiringPut {
            return self.ask_user(user_key, value);
        }
        let (expiry, inner) =
            crate::base::ttl::decode(value).ok_or_else(|| SstError::Corruption {
                file: "compaction input".to_string(),
                offset: 0,
                reason: format!(
                    "expiring value of key {:?} is shorter than its expiry time",
                    String::from_utf8_lossy(user_key)
                ),
            })?;
        if self.now >= expiry {
            return Ok(FilterDecision::Remove);
        }
        // The user's filter sees the value without its expiry; a changed value keeps it.
        Ok(match self.ask_user(user_key, inner)? {
            FilterDecision::ChangeValue(v) => {
                FilterDecision::ChangeValue(crate::base::ttl::encode(expiry, &v))
            }
            decision => decision,
        })
    }
}

impl JobFilter {
    /// The user's filter's decision on `value` (`Keep` without one).
    fn ask_user(&self, user_key: &[u8], value: &[u8]) -> Result<FilterDecision, SstError> {
        let Some(filter) = &self.filter else {
            return Ok(FilterDecision::Keep);
        };
        let decided = catch_unwind(AssertUnwindSafe(|| {
            filter.filter(self.level, user_key, value)
        }));
        if matches!(
            decided,
            Ok(CompactionDecision::Remove | CompactionDecision::ChangeValue(_))
        ) {
            self.user_acted
                .store(true, std::sync::atomic::Ordering::Release);
        }
        match decided {
            Ok(CompactionDecision::Keep) => Ok(FilterDecision::Keep),
            Ok(CompactionDecision::Remove) => Ok(FilterDecision::Remove),
            Ok(CompactionDecision::ChangeValue(v)) => Ok(FilterDecision::ChangeValue(v)),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_string());
                let message = format!(
                    "compaction filter {:?} panicked on key {:?}: {what}",
                    filter.name(),
                    String::from_utf8_lossy(user_key)
                );
                self.failure.lock().get_or_insert(message.clone());
                Err(SstError::InvalidArgument(message))
            }
        }
    }
}
