//! The snapshot file reader against arbitrary and damaged bytes (the same entry point as the
//! cargo-fuzz target `raft_snapshot` under `tests/fuzz/`): it never panics, never allocates
//! what a damaged length claims, and refuses every damaged copy of a real snapshot.

use std::sync::OnceLock;

use openraft::storage::RaftStateMachine;
use openraft::{CommittedLeaderId, EntryPayload, LogId, RaftSnapshotBuilder};
use proptest::prelude::*;
use siftdb_raft::{Command, KeyValue, TypeConfig};
use tokio::io::AsyncReadExt;

/// A real snapshot file of a store that applied 40 puts, and the pairs it holds.
fn snapshot_file() -> &'static (Vec<u8>, Vec<KeyValue>) {
    static FILE: OnceLock<(Vec<u8>, Vec<KeyValue>)> = OnceLock::new();
    FILE.get_or_init(|| {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let (_log, mut sm) = siftdb_raft::open(dir.path(), siftdb::Options::default()).unwrap();
            let entries = (1..=40u64).map(|i| openraft::Entry::<TypeConfig> {
                log_id: LogId::new(CommittedLeaderId::new(1, 1), i),
                payload: EntryPayload::Normal(Command::put(
                    format!("key{i:03}"),
                    vec![i as u8; i as usize],
                )),
            });
            sm.apply(entries).await.unwrap();
            let mut snapshot = sm
                .get_snapshot_builder()
                .await
                .build_snapshot()
                .await
                .unwrap();
            let mut bytes = Vec::new();
            snapshot.snapshot.read_to_end(&mut bytes).await.unwrap();
            let pairs = sm.reader().entries().unwrap();
            (bytes, pairs)
        })
    })
}

#[test]
fn a_real_snapshot_file_reads_back_whole() {
    let (bytes, pairs) = snapshot_file();
    let (meta, read) = siftdb_raft::read_snapshot(&bytes[..]).unwrap();
    assert_eq!(meta.last_log_id.map(|id| id.index), Some(40));
    assert_eq!(&read, pairs);
    assert_eq!(read.len(), 40);
}

proptest! {
    #[test]
    fn arbitrary_bytes_are_an_error_never_a_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..512),
        header in any::<bool>(),
    ) {
        let mut bytes = Vec::new();
        if header {
            bytes.extend_from_slice(b"SIFTRSNP\x01\x00\x00\x00");
        }
        bytes.extend_from_slice(&tail);
        prop_assert!(siftdb_raft::read_snapshot(&bytes[..]).is_err());
    }

    #[test]
    fn a_damaged_snapshot_file_is_refused(
        at in any::<prop::sample::Index>(),
        xor in 1u8..=255,
        cut in any::<prop::sample::Index>(),
        damage in 0u8..3,
    ) {
        let (bytes, _) = snapshot_file();
        let mut damaged = bytes.clone();
        match damage {
            0 => damaged[at.index(bytes.len())] ^= xor,
            1 => damaged.truncate(cut.index(bytes.len())),
            _ => damaged.insert(at.index(bytes.len()), xor),
        }
        let read = siftdb_raft::read_snapshot(&damaged[..]);
        prop_assert!(
            matches!(read, Err(siftdb_raft::Error::Corrupt { .. })),
            "damage {damage} at {}: {read:?}", at.index(bytes.len())
        );
    }
}
