//! openraft's own storage test suite (`openraft::testing::Suite::test_all`) against the siftdb
//! store: every test of it must pass.

use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;
use siftdb_raft::{LogStore, NodeId, StateMachine, TypeConfig};

/// A fresh store in a temporary directory for each test of the suite (the directory is the
/// guard the suite keeps alive while the test runs).
struct FreshStore;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, tempfile::TempDir> for FreshStore {
    async fn build(
        &self,
    ) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError<NodeId>> {
        let dir = tempfile::tempdir().map_err(|e| failed(&e))?;
        let (log, state_machine) =
            siftdb_raft::open(dir.path(), siftdb::Options::default()).map_err(|e| failed(&e))?;
        Ok((dir, log, state_machine))
    }
}

fn failed(e: &(impl std::error::Error + 'static)) -> StorageError<NodeId> {
    openraft::StorageIOError::write(openraft::AnyError::new(e)).into()
}

#[test]
fn openraft_storage_suite_passes() {
    if let Err(e) = Suite::test_all(FreshStore) {
        panic!("openraft's storage suite failed: {e}");
    }
}
