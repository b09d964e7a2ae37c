//! The bottom layer: what every other layer builds on and that names none of them — errors,
//! options (with keyspace options and the `OPTIONS` file), version edits, the WAL format, the file
//! system, write batches, the rate limiter of background writes, the TTL clock, merge operators, compaction filters and test pause points.

pub(crate) mod batch;
pub(crate) mod block_cache;
pub(crate) mod compaction_filter;
pub(crate) mod compaction_style;
pub(crate) mod error;
pub(crate) mod event_listener;
pub mod fs;
pub(crate) mod ingest_options;
pub(crate) mod keyspace_options;
pub(crate) mod live_options;
pub mod merge;
pub(crate) mod option_table;
pub(crate) mod option_text;
pub(crate) mod options;
pub(crate) mod options_file;
pub(crate) mod rate_limiter;
#[cfg(feature = "test-hooks")]
pub mod sync_point;
#[cfg(not(feature = "test-hooks"))]
pub(crate) mod sync_point;
pub(crate) mod ttl;
pub(crate) mod version_edit;
pub(crate) mod wal;
pub(crate) mod writeback;
