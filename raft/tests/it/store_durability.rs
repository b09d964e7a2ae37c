//! The store's own promises beyond openraft's suite, with siftdb's counters as the oracle:
//! a purge or truncate of thousands of entries is one small WAL record in one synced batch;
//! an append is one synced batch; what the store holds survives a
//! reopen; a snapshot install interrupted before its switch leaves the old state, and the next
//! open drops its leftover.

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::{CommittedLeaderId, EntryPayload, LogId, RaftLogReader, RaftSnapshotBuilder, Vote};
use siftdb_raft::{Command, TypeConfig};

type Entry = openraft::Entry<TypeConfig>;

fn log_id(index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(1, 1), index)
}

fn put(index: u64) -> Entry {
    Entry {
        log_id: log_id(index),
        payload: EntryPayload::Normal(Command::put(format!("k{index:05}"), vec![b'v'; 64])),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

#[test]
fn purge_and_truncate_are_one_small_record_each_and_append_one_synced_batch() {
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let (mut log, sm) = siftdb_raft::open(dir.path(), siftdb::Options::default()).unwrap();
        let db = sm.reader().db().clone();
        let syncs = db.stats().wal_syncs;
        log.blocking_append((1..=5000).map(put)).await.unwrap();
        let stats = db.stats();
        assert_eq!(stats.wal_syncs - syncs, 1, "one append, one synced batch");
        let entry_bytes = stats.wal_bytes;

        let before = db.stats();
        log.purge(log_id(4000)).await.unwrap();
        let after = db.stats();
        assert!(
            after.wal_bytes - before.wal_bytes < 128,
            "purge of 4000 entries: {} WAL bytes",
            after.wal_bytes - before.wal_bytes
        );
        assert_eq!(after.wal_syncs - before.wal_syncs, 1);

        log.truncate(log_id(4500)).await.unwrap();
        let truncated = db.stats();
        assert!(truncated.wal_bytes - after.wal_bytes < 128);
        assert!(
            entry_bytes > 5000 * 64,
            "the entries themselves went through the WAL"
        );

        let state = log.get_log_state().await.unwrap();
        assert_eq!(state.last_purged_log_id, Some(log_id(4000)));
        assert_eq!(state.last_log_id, Some(log_id(4499)));
        let left = log.try_get_log_entries(0..u64::MAX).await.unwrap();
        assert_eq!(left.first().map(|e| e.log_id.index), Some(4001));
        assert_eq!(left.len(), 499);
    });
}

#[test]
fn everything_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    rt.block_on(async {
        let (mut log, mut sm) = siftdb_raft::open(dir.path(), siftdb::Options::default()).unwrap();
        log.save_vote(&Vote::new(7, 2)).await.unwrap();
        log.blocking_append((1..=100).map(put)).await.unwrap();
        log.save_committed(Some(log_id(90))).await.unwrap();
        sm.apply((1..=90).map(put)).await.unwrap();
        log.purge(log_id(10)).await.unwrap();
    });
    rt.block_on(async {
        let (mut log, mut sm) = siftdb_raft::open(dir.path(), siftdb::Options::default()).unwrap();
        assert_eq!(log.read_vote().await.unwrap(), Some(Vote::new(7, 2)));
        assert_eq!(log.read_committed().await.unwrap(), Some(log_id(90)));
        let state = log.get_log_state().await.unwrap();
        assert_eq!(
            (state.last_purged_log_id, state.last_log_id),
            (Some(log_id(10)), Some(log_id(100)))
        );
        assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(90)));
        let reader = sm.reader();
        assert_eq!(reader.last_applied().unwrap(), Some(log_id(90)));
        assert_eq!(reader.get(b"k00090").unwrap(), Some(vec![b'v'; 64]));
        assert_eq!(reader.get(b"k00091").unwrap(), None);
        assert_eq!(reader.entries().unwrap().len(), 90);
    });
}

#[test]
fn a_snapshot_moves_the_state_and_a_damaged_one_is_refused() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    runtime().block_on(async {
        let (_log_a, mut sm_a) = siftdb_raft::open(a.path(), siftdb::Options::default()).unwrap();
        sm_a.apply((1..=300).map(put)).await.unwrap();
        let snapshot = sm_a
            .get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap();
        assert_eq!(snapshot.meta.last_log_id, Some(log_id(300)));

        let (_log_b, mut sm_b) = siftdb_raft::open(b.path(), siftdb::Options::default()).unwrap();
        sm_b.apply((1..=5).map(|i| Entry {
            log_id: log_id(i),
            payload: EntryPayload::Normal(Command::put(format!("only-on-b{i}"), "x")),
        }))
        .await
        .unwrap();
        // A damaged copy of the file: refused, and b's state untouched.
        let path = a.path().join("snapshot").join("current.snap");
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x10;
        let damaged = b.path().join("damaged.snap");
        std::fs::write(&damaged, &bytes).unwrap();
        let file = Box::new(tokio::fs::File::open(&damaged).await.unwrap());
        assert!(sm_b.install_snapshot(&snapshot.meta, file).await.is_err());
        assert_eq!(sm_b.reader().entries().unwrap().len(), 5);
        assert_eq!(
            sm_b.reader()
                .db()
                .keyspace_names()
                .iter()
                .filter(|n| n.starts_with("raft_state."))
                .count(),
            1
        );

        // The real one: b's state becomes a's.
        let file = Box::new(tokio::fs::File::open(&path).await.unwrap());
        sm_b.install_snapshot(&snapshot.meta, file).await.unwrap();
        assert_eq!(
            sm_b.reader().entries().unwrap(),
            sm_a.reader().entries().unwrap()
        );
        assert_eq!(sm_b.applied_state().await.unwrap().0, Some(log_id(300)));
        let current = sm_b.get_current_snapshot().await.unwrap().unwrap();
        assert_eq!(current.meta, snapshot.meta);
        // What an install interrupted before its switch leaves: a state keyspace not live.
        let leftover = sm_b.reader().db().keyspace("raft_state.9").unwrap();
        leftover.put(b"half", b"filled").unwrap();
    });
    // Reopened: the installed state is the live one, and only one state keyspace is left.
    runtime().block_on(async {
        let (_log, mut sm) = siftdb_raft::open(b.path(), siftdb::Options::default()).unwrap();
        assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(300)));
        assert_eq!(sm.reader().entries().unwrap().len(), 300);
        let names = sm.reader().db().keyspace_names();
        assert_eq!(
            names
                .iter()
                .filter(|n| n.starts_with("raft_state."))
                .count(),
            1,
            "{names:?}"
        );
    });
}

/// A command siftdb cannot store (a key over its limit) is applied as a no-op, the same on
/// every node, instead of failing `apply` (which openraft treats as fatal, on every node and at
/// every replay); the entries around it apply as usual.
#[test]
fn a_command_siftdb_cannot_store_is_applied_as_a_refused_no_op() {
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let (_log, mut sm) = siftdb_raft::open(dir.path(), siftdb::Options::default()).unwrap();
        let huge = Command::Batch(vec![
            Command::put("fits", "x"),
            Command::put(vec![b'k'; siftdb::MAX_KEY_SIZE + 1], "x"),
        ]);
        assert!(matches!(
            huge.check(),
            Err(siftdb_raft::Error::InvalidCommand(_))
        ));
        let entries = vec![
            put(1),
            Entry {
                log_id: log_id(2),
                payload: EntryPayload::Normal(huge),
            },
            put(3),
        ];
        let responses = sm.apply(entries).await.unwrap();
        assert_eq!(responses[0].ops, 1);
        assert_eq!(responses[1].ops, 0);
        assert!(responses[1]
            .rejected
            .as_deref()
            .is_some_and(|r| r.contains("key of")));
        assert_eq!(
            (responses[2].ops, responses[2].rejected.as_deref()),
            (1, None)
        );
        assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(3)));
        let reader = sm.reader();
        assert_eq!(
            reader.get(b"fits").unwrap(),
            None,
            "the whole batch is refused"
        );
        assert_eq!(reader.entries().unwrap().len(), 2);
    });
}

/// A log purged past the applied state with no snapshot file to cover it (state openraft could
/// never apply its next entry from) is refused at open with a clear error.
#[test]
fn a_log_purged_past_the_state_without_a_snapshot_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let (mut log, _sm) = siftdb_raft::open(dir.path(), siftdb::Options::default()).unwrap();
        log.blocking_append((1..=10).map(put)).await.unwrap();
        log.purge(log_id(5)).await.unwrap();
    });
    let refused = siftdb_raft::open(dir.path(), siftdb::Options::default()).map(|_| ());
    let message = format!("{refused:?}");
    assert!(
        matches!(refused, Err(siftdb_raft::Error::Corrupt { .. })) && message.contains("behind"),
        "{message}"
    );
}
