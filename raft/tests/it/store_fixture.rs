//! The `raft-store-v1` fixture (`tests/fixtures/raft-store-v1`, see its README): a store an
//! earlier build wrote through openraft's storage traits, opened by this one. The tests assert
//! its exact decoded contents, and that this build's openraft and postcard encode those values
//! into the very bytes the fixture holds: an update that changes how the store encodes
//! openraft's types fails here first.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::{
    BasicNode, CommittedLeaderId, EntryPayload, LogId, Membership, RaftLogReader,
    RaftSnapshotBuilder, StoredMembership, Vote,
};
use serde::Serialize;
use siftdb_raft::{Command, KeyValue, SnapshotMeta, TypeConfig};

type Entry = openraft::Entry<TypeConfig>;

/// The snapshot id the fixture's snapshot was built with (it holds a time stamp).
const SNAPSHOT_ID: &str = "T2-N2-6-18ed6fbc7cd51c3e";

/// Copies the fixture (every file but its README) into `to`.
fn copy_fixture(to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/raft-store-v1");
    for sub in ["db", "snapshot"] {
        std::fs::create_dir_all(to.join(sub)).unwrap();
        for entry in std::fs::read_dir(from.join(sub)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), to.join(sub).join(entry.file_name())).unwrap();
        }
    }
}

fn log_id(term: u64, node: u64, index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(term, node), index)
}

fn membership(configs: &[&[u64]], all: &[u64]) -> Membership<u64, BasicNode> {
    let configs = configs
        .iter()
        .map(|c| c.iter().copied().collect::<BTreeSet<u64>>())
        .collect();
    let nodes: BTreeMap<u64, BasicNode> = all
        .iter()
        .map(|&id| (id, BasicNode::new(format!("127.0.0.1:{}", 21000 + id))))
        .collect();
    Membership::new(configs, nodes)
}

/// The membership of entry 3: voters {1, 2, 3}.
fn membership_3() -> Membership<u64, BasicNode> {
    membership(&[&[1, 2, 3]], &[1, 2, 3])
}

/// The membership of entry 9: joint {1, 2, 3} and {2, 3, 4}.
fn membership_9() -> Membership<u64, BasicNode> {
    membership(&[&[1, 2, 3], &[2, 3, 4]], &[1, 2, 3, 4])
}

/// The twelve entries the generator appended (the fixture's log keeps 4..=10).
fn entries() -> Vec<Entry> {
    let payloads: Vec<(u64, u64, EntryPayload<TypeConfig>)> = vec![
        (1, 1, EntryPayload::Blank),
        (1, 1, EntryPayload::Normal(Command::put("apple", "red"))),
        (1, 1, EntryPayload::Membership(membership_3())),
        (2, 2, EntryPayload::Normal(Command::put("banana", "yellow"))),
        (2, 2, EntryPayload::Normal(Command::delete("apple"))),
        (
            2,
            2,
            EntryPayload::Normal(Command::Batch(vec![
                Command::put("cherry", "dark red"),
                Command::put("date", "brown"),
                Command::delete("banana"),
                Command::put(b"\x00bin".to_vec(), vec![0xff, 0x00, 0x7f]),
                Command::Batch(vec![Command::put("elder", "")]),
            ])),
        ),
        (3, 3, EntryPayload::Blank),
        (3, 3, EntryPayload::Normal(Command::put("fig", "green"))),
        (3, 3, EntryPayload::Membership(membership_9())),
        (3, 3, EntryPayload::Normal(Command::put("grape", "purple"))),
        (3, 3, EntryPayload::Normal(Command::put("honeydew", "pale"))),
        (3, 3, EntryPayload::Normal(Command::delete("fig"))),
    ];
    payloads
        .into_iter()
        .zip(1..)
        .map(|((term, node, payload), index)| Entry {
            log_id: log_id(term, node, index),
            payload,
        })
        .collect()
}

/// The entries the fixture's log holds: 4..=10 (1..=3 purged, 11.. truncated).
fn entries_left() -> Vec<Entry> {
    entries()[3..10].to_vec()
}

fn pairs(list: &[(&[u8], &[u8])]) -> Vec<KeyValue> {
    list.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect()
}

/// The applied state: entries 1..=9.
fn state_applied() -> Vec<KeyValue> {
    pairs(&[
        (b"\x00bin", b"\xff\x00\x7f"),
        (b"cherry", b"dark red"),
        (b"date", b"brown"),
        (b"elder", b""),
        (b"fig", b"green"),
    ])
}

/// The snapshot's state: entries 1..=6.
fn state_at_snapshot() -> Vec<KeyValue> {
    pairs(&[
        (b"\x00bin", b"\xff\x00\x7f"),
        (b"cherry", b"dark red"),
        (b"date", b"brown"),
        (b"elder", b""),
    ])
}

fn snapshot_meta() -> SnapshotMeta {
    SnapshotMeta {
        last_log_id: Some(log_id(2, 2, 6)),
        last_membership: StoredMembership::new(Some(log_id(1, 1, 3)), membership_3()),
        snapshot_id: SNAPSHOT_ID.to_string(),
    }
}

fn applied_membership() -> StoredMembership<u64, BasicNode> {
    StoredMembership::new(Some(log_id(3, 3, 9)), membership_9())
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// `value` as this build's postcard encodes it (as the store does).
fn encoded<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_stdvec(value).unwrap()
}

/// Every record of keyspace `name` of the database at `db`.
fn records(db: &siftdb::Db, name: &str) -> Vec<KeyValue> {
    db.keyspace(name)
        .unwrap()
        .iter()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

/// The stored bytes, read through siftdb itself, are what this build encodes the fixture's
/// values into (and a few of them these literals); the snapshot file is byte for byte what its
/// decoded contents frame to.
#[test]
fn the_raft_store_v1_fixture_holds_the_bytes_this_build_encodes() {
    let dir = tempfile::tempdir().unwrap();
    copy_fixture(dir.path());
    let db = siftdb::Db::open_read_only(dir.path().join("db"), siftdb::Options::default()).unwrap();
    assert_eq!(
        db.keyspace_names(),
        ["default", "raft_log", "raft_meta", "raft_state.0"]
    );
    assert!(records(&db, "default").is_empty());

    // The log: keys are the big-endian indexes 4..=10, values the encoded entries.
    let log = records(&db, "raft_log");
    let keys: Vec<Vec<u8>> = log.iter().map(|(k, _)| k.clone()).collect();
    let expected_keys: Vec<Vec<u8>> = (4u64..=10).map(|i| i.to_be_bytes().to_vec()).collect();
    assert_eq!(keys, expected_keys);
    for ((_, bytes), entry) in log.iter().zip(entries_left()) {
        assert_eq!(
            *bytes,
            encoded(&entry),
            "entry {} encodes differently",
            entry.log_id
        );
        let decoded: Entry = postcard::from_bytes(bytes).unwrap();
        assert_eq!(decoded, entry);
    }
    // Literals: a put (log id term 2, node 2, index 4; payload Normal; Command::Put), a delete
    // (Command::Delete), a blank entry, the batch and the joint membership.
    assert_eq!(log[0].1, unhex("02020401000662616e616e610679656c6c6f77"));
    assert_eq!(log[1].1, unhex("0202050101056170706c65"));
    assert_eq!(
        log[2].1,
        unhex(concat!(
            "020206010205",
            "0006636865727279086461726b20726564",
            "0004646174650562726f776e",
            "010662616e616e61",
            "00040062696e03ff007f",
            "02010005656c64657200"
        ))
    );
    assert_eq!(log[3].1, unhex("03030700"));
    let joint = concat!(
        "0203010203030203040401",
        "0f3132372e302e302e313a3231303031020f3132372e302e302e313a3231303032",
        "030f3132372e302e302e313a3231303033040f3132372e302e302e313a3231303034"
    );
    assert_eq!(log[5].1, unhex(&format!("03030902{joint}")));

    // The meta records, each also a literal.
    let meta: BTreeMap<Vec<u8>, Vec<u8>> = records(&db, "raft_meta").into_iter().collect();
    let keys: Vec<&[u8]> = meta.keys().map(Vec::as_slice).collect();
    assert_eq!(
        keys,
        [
            &b"applied"[..],
            b"committed",
            b"membership",
            b"purged",
            b"vote"
        ]
    );
    let vote = Vote::new_committed(3, 3);
    assert_eq!(meta[&b"vote"[..]], encoded(&vote));
    assert_eq!(meta[&b"vote"[..]], [3, 3, 1]);
    let committed = Some(log_id(3, 3, 10));
    assert_eq!(meta[&b"committed"[..]], encoded(&committed));
    assert_eq!(meta[&b"committed"[..]], [1, 3, 3, 10]);
    let purged = log_id(1, 1, 3);
    assert_eq!(meta[&b"purged"[..]], encoded(&purged));
    assert_eq!(meta[&b"purged"[..]], [1, 1, 3]);
    let applied = Some(log_id(3, 3, 9));
    assert_eq!(meta[&b"applied"[..]], encoded(&applied));
    assert_eq!(meta[&b"applied"[..]], [1, 3, 3, 9]);
    assert_eq!(meta[&b"membership"[..]], encoded(&applied_membership()));
    assert_eq!(meta[&b"membership"[..]], unhex(&format!("01030309{joint}")));
    let decoded: Vote<u64> = postcard::from_bytes(&meta[&b"vote"[..]]).unwrap();
    assert_eq!(decoded, vote);
    let decoded: StoredMembership<u64, BasicNode> =
        postcard::from_bytes(&meta[&b"membership"[..]]).unwrap();
    assert_eq!(decoded, applied_membership());

    // The state keyspace holds the pairs raw.
    assert_eq!(records(&db, "raft_state.0"), state_applied());
    drop(db);

    // The snapshot file: header, postcard-encoded metadata, entries, end record with the CRC.
    let file = std::fs::read(dir.path().join("snapshot/current.snap")).unwrap();
    let meta = encoded(&snapshot_meta());
    assert_eq!(meta.len(), 0x5a);
    let mut framed = b"SIFTRSNP".to_vec();
    framed.extend_from_slice(&1u32.to_le_bytes());
    framed.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    framed.extend_from_slice(&meta);
    let state = state_at_snapshot();
    for (key, value) in &state {
        framed.extend_from_slice(&(key.len() as u32).to_le_bytes());
        framed.extend_from_slice(&(value.len() as u32).to_le_bytes());
        framed.extend_from_slice(key);
        framed.extend_from_slice(value);
    }
    framed.extend_from_slice(&u32::MAX.to_le_bytes());
    framed.extend_from_slice(&(state.len() as u64).to_le_bytes());
    let crc = crc32fast::hash(&framed);
    framed.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(file, framed);
    assert_eq!(crc, 0xd7e2_bacc);
    assert_eq!(
        meta,
        unhex(concat!(
            "0102020601010103010301020303010f3132372e302e302e313a3231303031",
            "020f3132372e302e302e313a3231303032030f3132372e302e302e313a3231303033",
            "18", // the snapshot id's length, then its bytes
            "54322d4e322d362d31386564366662633763643531633365"
        ))
    );
}

/// Opened by this build, the store reads back exactly what the generator left, through
/// openraft's traits and the crate's own readers.
#[test]
fn the_raft_store_v1_fixture_opens_with_its_exact_contents() {
    let dir = tempfile::tempdir().unwrap();
    copy_fixture(dir.path());
    runtime().block_on(async {
        let (mut log, mut sm) = siftdb_raft::open(dir.path(), siftdb::Options::default()).unwrap();

        let vote = log.read_vote().await.unwrap().unwrap();
        assert_eq!(
            (vote.leader_id.term, vote.leader_id.node_id, vote.committed),
            (3, 3, true)
        );
        assert_eq!(vote, Vote::new_committed(3, 3));
        assert_eq!(log.read_committed().await.unwrap(), Some(log_id(3, 3, 10)));
        let state = log.get_log_state().await.unwrap();
        assert_eq!(state.last_purged_log_id, Some(log_id(1, 1, 3)));
        assert_eq!(state.last_log_id, Some(log_id(3, 3, 10)));

        // Exactly 4..=10, whatever the range asked.
        let mut reader = log.get_log_reader().await;
        assert_eq!(
            reader.try_get_log_entries(0..u64::MAX).await.unwrap(),
            entries_left()
        );
        assert_eq!(
            reader.try_get_log_entries(..).await.unwrap(),
            entries_left()
        );
        for index in 0..=13u64 {
            let found = log.try_get_log_entries(index..=index).await.unwrap();
            let expected: Vec<Entry> = entries()
                .into_iter()
                .filter(|e| e.log_id.index == index && (4..=10).contains(&index))
                .collect();
            assert_eq!(found, expected, "entry {index}");
        }
        let payloads: Vec<String> = entries_left()
            .iter()
            .map(|e| match &e.payload {
                EntryPayload::Blank => "blank".to_string(),
                EntryPayload::Normal(Command::Put { .. }) => "put".to_string(),
                EntryPayload::Normal(Command::Delete { .. }) => "delete".to_string(),
                EntryPayload::Normal(Command::Batch(_)) => "batch".to_string(),
                EntryPayload::Normal(other) => format!("{other:?}"),
                EntryPayload::Membership(_) => "membership".to_string(),
            })
            .collect();
        assert_eq!(
            payloads,
            [
                "put",
                "delete",
                "batch",
                "blank",
                "put",
                "membership",
                "put"
            ]
        );

        // The state machine: entries 1..=9 applied, the joint membership of entry 9.
        let (applied, membership) = sm.applied_state().await.unwrap();
        assert_eq!(applied, Some(log_id(3, 3, 9)));
        assert_eq!(membership, applied_membership());
        assert_eq!(
            membership.membership().get_joint_config(),
            &vec![BTreeSet::from([1, 2, 3]), BTreeSet::from([2, 3, 4])]
        );
        assert_eq!(membership.membership().learner_ids().count(), 0);
        let reader = sm.reader();
        assert_eq!(reader.last_applied().unwrap(), Some(log_id(3, 3, 9)));
        assert_eq!(reader.entries().unwrap(), state_applied());
        for (key, value) in state_applied() {
            assert_eq!(reader.get(&key).unwrap(), Some(value));
        }
        for gone in [&b"apple"[..], b"banana", b"grape", b"honeydew"] {
            assert_eq!(reader.get(gone).unwrap(), None);
        }

        // The current snapshot: entries 1..=6.
        let snapshot = sm.get_current_snapshot().await.unwrap().unwrap();
        assert_eq!(snapshot.meta, snapshot_meta());
        let file = snapshot.snapshot.into_std().await;
        let (meta, contents) = siftdb_raft::read_snapshot(file).unwrap();
        assert_eq!(meta, snapshot_meta());
        assert_eq!(contents, state_at_snapshot());
    });
}

/// After the fixture opens, this build appends, applies, snapshots and purges, and a reopen
/// finds all of it next to what the fixture held.
#[test]
fn the_raft_store_v1_fixture_takes_new_writes_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    copy_fixture(dir.path());
    let rt = runtime();
    let new_entries: Vec<Entry> = vec![
        Entry {
            log_id: log_id(4, 1, 11),
            payload: EntryPayload::Blank,
        },
        Entry {
            log_id: log_id(4, 1, 12),
            payload: EntryPayload::Normal(Command::put("kiwi", "brown")),
        },
        Entry {
            log_id: log_id(4, 1, 13),
            payload: EntryPayload::Normal(Command::Batch(vec![
                Command::delete("cherry"),
                Command::put("fig", "ripe"),
            ])),
        },
    ];
    let state_after = pairs(&[
        (b"\x00bin", b"\xff\x00\x7f"),
        (b"date", b"brown"),
        (b"elder", b""),
        (b"fig", b"ripe"),
        (b"grape", b"purple"),
        (b"kiwi", b"brown"),
    ]);
    rt.block_on(async {
        let (mut log, mut sm) = siftdb_raft::open(dir.path(), siftdb::Options::default()).unwrap();
        log.save_vote(&Vote::new_committed(4, 1)).await.unwrap();
        log.blocking_append(new_entries.clone()).await.unwrap();
        log.save_committed(Some(log_id(4, 1, 13))).await.unwrap();
        let mut to_apply = log.try_get_log_entries(10..=10).await.unwrap();
        to_apply.extend(new_entries.clone());
        let responses = sm.apply(to_apply).await.unwrap();
        let ops: Vec<u64> = responses.iter().map(|r| r.ops).collect();
        assert_eq!(ops, [1, 0, 1, 2]);
        let snapshot = sm
            .get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap();
        assert_eq!(snapshot.meta.last_log_id, Some(log_id(4, 1, 13)));
        log.purge(log_id(2, 2, 6)).await.unwrap();
    });
    rt.block_on(async {
        let (mut log, mut sm) = siftdb_raft::open(dir.path(), siftdb::Options::default()).unwrap();
        assert_eq!(
            log.read_vote().await.unwrap(),
            Some(Vote::new_committed(4, 1))
        );
        assert_eq!(log.read_committed().await.unwrap(), Some(log_id(4, 1, 13)));
        let state = log.get_log_state().await.unwrap();
        assert_eq!(state.last_purged_log_id, Some(log_id(2, 2, 6)));
        assert_eq!(state.last_log_id, Some(log_id(4, 1, 13)));
        let mut expected = entries()[6..10].to_vec();
        expected.extend(new_entries);
        assert_eq!(log.try_get_log_entries(..).await.unwrap(), expected);

        let (applied, membership) = sm.applied_state().await.unwrap();
        assert_eq!(applied, Some(log_id(4, 1, 13)));
        assert_eq!(membership, applied_membership());
        assert_eq!(sm.reader().entries().unwrap(), state_after);

        let snapshot = sm.get_current_snapshot().await.unwrap().unwrap();
        assert_eq!(snapshot.meta.last_log_id, Some(log_id(4, 1, 13)));
        assert_eq!(snapshot.meta.last_membership, applied_membership());
        let (_, contents) = siftdb_raft::read_snapshot(snapshot.snapshot.into_std().await).unwrap();
        assert_eq!(contents, state_after);
    });
}
