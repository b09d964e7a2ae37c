//! The public handles: [`Db`](db::Db), [`Keyspace`](keyspace::Keyspace) and
//! [`Snapshot`](snapshot::Snapshot). Nothing below this layer names them.

pub(crate) mod batch_index;
pub(crate) mod db;
pub(crate) mod keyspace;
pub(crate) mod snapshot;
