//! siftdb-raft's integration tests, one binary: a module per suite (the storage suite of
//! openraft, the store's model and durability tests, the on-disk fixture, a three-node
//! cluster, and the kill test, whose child is this binary run again with `--exact`).

mod cluster_three_nodes;
mod crash_kill_append;
mod storage_suite;
mod store_durability;
mod store_fixture;
mod store_model;
