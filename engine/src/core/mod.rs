//! The engine's shared state: the tree of each keyspace (memtables, published read views),
//! versions and the [`VersionSet`](version_set::VersionSet) that owns them with the manifest,
//! memtables, snapshots, the write queue, statistics and the filter plan. It names only `base`.

pub(crate) mod arena;
pub(crate) mod blob_file;
pub(crate) mod blob_gc;
pub(crate) mod cache_reservation;
pub(crate) mod closed_wals;
pub(crate) mod events;
pub(crate) mod file_cache;
pub(crate) mod file_deleter;
pub(crate) mod filter_index;
pub(crate) mod filter_plan;
pub(crate) mod heat;
pub(crate) mod ingested_ranges;
pub(crate) mod key_bounds;
pub(crate) mod key_head;
pub(crate) mod keyspace_tree;
pub(crate) mod level_info;
pub(crate) mod level_iter;
pub(crate) mod live_tables;
pub(crate) mod lock_order;
pub(crate) mod lock_table;
pub(crate) mod manifest;
pub(crate) mod manifest_state;
pub(crate) mod memtable;
pub(crate) mod memtable_bloom;
pub(crate) mod range_skip;
pub(crate) mod shared;
pub(crate) mod snapshot_list;
pub(crate) mod spin;
pub(crate) mod state;
pub(crate) mod stats;
pub(crate) mod version;
pub(crate) mod version_set;
pub(crate) mod write_queue;
