//! The public handles: [`Db`](db::Db), [`Keyspace`](keyspace::Keyspace),
//! [`Snapshot`](snapshot::Snapshot) and [`Transaction`](transaction::Transaction), whose reads
//! are one trait, [`Readable`](readable::Readable). Nothing below this layer names them.

pub(crate) mod backup;
pub(crate) mod batch_index;
pub(crate) mod db;
pub(crate) mod inspect;
pub(crate) mod keyspace;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod pinned_value;
pub(crate) mod readable;
pub(crate) mod snapshot;
pub(crate) mod sst_file_reader;
pub(crate) mod sst_file_writer;
pub(crate) mod transaction;
