//! The read path (point lookups, batched lookups, the iterator stack), the write path (group
//! commit, memtable and WAL switches) and recovery at open. They name `jobs`, `core` and `base`.

pub(crate) mod conflict;
pub(crate) mod delete_files;
pub(crate) mod engine;
pub(crate) mod ingest;
pub(crate) mod iterator;
pub(crate) mod keyspaces;
pub(crate) mod latency;
pub(crate) mod manual_compaction;
#[cfg(feature = "metrics")]
pub(crate) mod metrics_snapshot;
pub(crate) mod properties;
pub(crate) mod read;
pub(crate) mod recovery;
pub(crate) mod resume;
pub(crate) mod set_options;
pub(crate) mod write;
