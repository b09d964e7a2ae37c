//! The raft store against a model, through clean reopens and power loss.
//!
//! Random sequences of what openraft asks of a node's storage (appends, truncations, purges,
//! votes, committed ids, applied entries, snapshot builds and installs) run against a store
//! whose database lives on [`FaultFs`], an in-memory file system that can lose power. After
//! every step the store must answer as the model does: the log (a `BTreeMap` of entries), the
//! vote, the applied log id and membership, and the state (a `BTreeMap` of keys).
//!
//! After power loss:
//! - the log, the vote and the purged id are exactly as acknowledged (all three are synced);
//! - the committed id is at most the one saved and at least the one saved before the last
//!   synced write (it is not synced itself);
//! - the state machine is at one of its states since the last synced write of the database
//!   (every synced write makes the whole WAL before it durable), never between two applies.
//!
//! Cases: `SIFTDB_RAFT_MODEL_CASES` (default 48).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::{
    CommittedLeaderId, EntryPayload, LogId, Membership, RaftLogReader, RaftSnapshotBuilder,
    StoredMembership, Vote,
};
use proptest::prelude::*;
use siftdb_raft::{Command, LogStore, StateMachine, TypeConfig};
use siftdb_tests::FaultFs;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

type Entry = openraft::Entry<TypeConfig>;
type State = BTreeMap<Vec<u8>, Vec<u8>>;
type Members = StoredMembership<u64, openraft::BasicNode>;

/// One thing openraft asks of the storage. Indexes are derived from the model so that every
/// step is one openraft could take: the state machine applies the log's own entries up to the
/// committed one, truncation stays above what is committed and applied, purges stay within what
/// is applied, and an installed snapshot is followed by a purge up to it.
#[derive(Debug, Clone)]
enum Op {
    /// Append entries of these commands after the last one, in the current term (and a
    /// membership change after them with `true`).
    Append(Vec<Command>, bool),
    /// A new term (a new leader): the vote rises to it.
    Elect,
    /// Truncate the log from the entry this far back from the end (above what is committed).
    Truncate(u8),
    /// Purge the log up to the entry at this fraction (in 1/256ths) of what is applied.
    Purge(u8),
    /// Save the last log id as committed.
    Commit,
    /// Apply up to this many committed entries.
    Apply(u8),
    /// Build a snapshot; it must hold the model's state.
    Snapshot,
    /// Install a snapshot of a leader that applied these commands after the model's state.
    Install(Vec<Command>),
    /// The same, but the node loses power before the install finishes: after the snapshot was
    /// received and the log purged up to it (`false`), or after it was published as the
    /// current snapshot (`true`). The next open must finish the install.
    InterruptedInstall(Vec<Command>, bool),
    /// Drop the store and open it again (no loss).
    Reopen,
    /// Power loss (keeping this many bytes of each file's unsynced tail), then reopen.
    Crash(u8),
}

fn command() -> impl Strategy<Value = Command> {
    let key = (0u8..24).prop_map(|k| format!("key{k:02}").into_bytes());
    let value = proptest::collection::vec(any::<u8>(), 0..40);
    let single = prop_oneof![
        3 => (key.clone(), value).prop_map(|(k, v)| Command::put(k, v)),
        1 => key.prop_map(Command::delete),
    ];
    prop_oneof![
        4 => single.clone(),
        1 => proptest::collection::vec(single, 0..5).prop_map(Command::Batch),
    ]
}

fn commands() -> impl Strategy<Value = Vec<Command>> {
    proptest::collection::vec(command(), 1..6)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (commands(), proptest::bool::weighted(0.1)).prop_map(|(c, m)| Op::Append(c, m)),
        1 => Just(Op::Elect),
        2 => any::<u8>().prop_map(Op::Truncate),
        2 => any::<u8>().prop_map(Op::Purge),
        3 => Just(Op::Commit),
        5 => (1u8..12).prop_map(Op::Apply),
        1 => Just(Op::Snapshot),
        1 => commands().prop_map(Op::Install),
        1 => (commands(), any::<bool>()).prop_map(|(c, p)| Op::InterruptedInstall(c, p)),
        1 => Just(Op::Reopen),
        2 => (0u8..40).prop_map(Op::Crash),
    ]
}

/// What the store should hold.
#[derive(Debug, Clone, Default)]
struct Model {
    log: BTreeMap<u64, Entry>,
    purged: Option<LogId<u64>>,
    term: u64,
    vote: Option<Vote<u64>>,
    committed: Option<LogId<u64>>,
    /// The committed id as of the last synced write (power loss cannot take it below that).
    durable_committed: Option<LogId<u64>>,
    /// What openraft knows is committed (saved or not): the state machine applies up to it.
    commit_point: Option<LogId<u64>>,
    machine: Machine,
    /// The last applied id of the current snapshot, if there is one.
    snapshot: Option<Option<LogId<u64>>>,
}

/// The state machine's part of the model.
#[derive(Debug, Clone, Default, PartialEq)]
struct Machine {
    applied: Option<LogId<u64>>,
    membership: Members,
    state: State,
}

impl Model {
    fn last_log_id(&self) -> Option<LogId<u64>> {
        self.log
            .values()
            .next_back()
            .map(|e| e.log_id)
            .or(self.purged)
    }

    fn next_index(&self) -> u64 {
        self.last_log_id().map_or(0, |id| id.index + 1)
    }

    /// The index up to which entries are settled: committed (saved or not) or applied.
    fn settled_index(&self) -> Option<u64> {
        self.commit_point
            .max(self.machine.applied)
            .max(self.durable_committed)
            .map(|id| id.index)
    }
}

fn log_id(term: u64, index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

fn apply_command(state: &mut State, command: &Command) {
    match command {
        Command::Put { key, value } => {
            state.insert(key.clone(), value.clone());
        }
        Command::Delete { key } => {
            state.remove(key);
        }
        Command::Batch(commands) => commands.iter().for_each(|c| apply_command(state, c)),
        other => panic!("the model does not know {other:?}"),
    }
}

fn membership(index: u64) -> Membership<u64, openraft::BasicNode> {
    let voters = [1, 2, 3 + index % 3].into_iter().collect();
    Membership::new(vec![voters], None)
}

/// `entries` in order, as `commands` and a membership change (`true`) starting at `index` in
/// `term`.
fn entries_of(term: u64, index: u64, commands: &[Command], change: bool) -> Vec<Entry> {
    let mut entries: Vec<Entry> = commands
        .iter()
        .zip(index..)
        .map(|(command, i)| Entry {
            log_id: log_id(term, i),
            payload: EntryPayload::Normal(command.clone()),
        })
        .collect();
    if change {
        let i = index + commands.len() as u64;
        entries.push(Entry {
            log_id: log_id(term, i),
            payload: EntryPayload::Membership(membership(i)),
        });
    }
    entries
}

/// `machine` after applying `entries`.
fn applied(machine: &Machine, entries: &[Entry]) -> Machine {
    let mut next = machine.clone();
    for entry in entries {
        match &entry.payload {
            EntryPayload::Normal(command) => apply_command(&mut next.state, command),
            EntryPayload::Membership(m) => {
                next.membership = StoredMembership::new(Some(entry.log_id), m.clone());
            }
            EntryPayload::Blank => {}
        }
        next.applied = Some(entry.log_id);
    }
    next
}

/// A store with its database on `fs` and its snapshot files in `dir`.
struct Node {
    log: LogStore,
    sm: StateMachine,
}

fn db_options(fs: &FaultFs) -> siftdb::Options {
    siftdb::Options {
        // Small, so flushes and compactions (of range deletes too) happen within a case.
        write_buffer_size: 4096,
        target_file_size_base: 4096,
        max_bytes_for_level_base: 16384,
        level0_file_num_compaction_trigger: 2,
        block_size: 512,
        fs: Arc::new(fs.clone()),
        ..siftdb::Options::default()
    }
}

fn open(dir: &Path, fs: &FaultFs) -> Node {
    let (log, sm) = siftdb_raft::open(dir, db_options(fs)).expect("open the store");
    Node { log, sm }
}

/// Asserts that the store answers as `model` does (the state machine: as `machine`).
async fn check(node: &mut Node, model: &Model) {
    let state = node.log.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, model.purged, "purged");
    assert_eq!(state.last_log_id, model.last_log_id(), "last log id");
    let entries = node.log.try_get_log_entries(0..u64::MAX).await.unwrap();
    let want: Vec<&Entry> = model.log.values().collect();
    assert_eq!(format!("{entries:?}"), format!("{want:?}"), "log entries");
    assert_eq!(node.log.read_vote().await.unwrap(), model.vote, "vote");
    check_machine(node, &model.machine).await;
}

async fn check_machine(node: &mut Node, machine: &Machine) {
    assert_eq!(read_machine(node).await, *machine, "state machine");
}

async fn read_machine(node: &mut Node) -> Machine {
    let (applied, membership) = node.sm.applied_state().await.unwrap();
    let state = node.sm.reader().entries().unwrap().into_iter().collect();
    Machine {
        applied,
        membership,
        state,
    }
}

/// A leader's snapshot: a fresh store (on the real file system) that applied `machine`'s state
/// and then `commands`, its last entry at `last` (past everything the node has). Returns the
/// snapshot's metadata and bytes, and the machine it holds.
async fn donor_snapshot(
    machine: &Machine,
    commands: &[Command],
    last: LogId<u64>,
) -> (
    openraft::SnapshotMeta<u64, openraft::BasicNode>,
    Vec<u8>,
    Machine,
) {
    let dir = tempfile::tempdir().unwrap();
    let (_log, mut sm) = siftdb_raft::open(dir.path(), siftdb::Options::default()).unwrap();
    let mut base: Vec<Command> = machine
        .state
        .iter()
        .map(|(k, v)| Command::put(k.clone(), v.clone()))
        .collect();
    base.extend_from_slice(commands);
    let first = last.index - base.len() as u64;
    let entries = entries_of(last.leader_id.term, first, &base, true);
    let donor = applied(&Machine::default(), &entries);
    sm.apply(entries).await.unwrap();
    let mut builder = sm.get_snapshot_builder().await;
    let mut snapshot = builder.build_snapshot().await.unwrap();
    let mut bytes = Vec::new();
    snapshot.snapshot.read_to_end(&mut bytes).await.unwrap();
    assert_eq!(snapshot.meta.last_log_id, Some(last));
    (snapshot.meta, bytes, donor)
}

/// The id a leader's snapshot ends at: past the node's log and its applied state.
fn donor_last(model: &Model, commands: &[Command]) -> LogId<u64> {
    let past = model
        .next_index()
        .max(model.machine.applied.map_or(0, |id| id.index + 1));
    log_id(
        model.term,
        past + model.machine.state.len() as u64 + commands.len() as u64,
    )
}

/// What the model becomes once a leader's snapshot ending at `last` is installed: openraft
/// purges the log up to it.
fn installed(model: &mut Model, donor: Machine, last: LogId<u64>) {
    model.machine = donor;
    model.snapshot = Some(Some(last));
    model.log.clear();
    model.purged = Some(last);
    model.commit_point = model.commit_point.max(Some(last));
}

fn run(ops: &[Op]) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run_async(ops));
}

async fn run_async(ops: &[Op]) {
    let fs = FaultFs::new();
    let dir = tempfile::tempdir().unwrap();
    let mut node = open(dir.path(), &fs);
    let mut model = Model {
        term: 1,
        ..Model::default()
    };
    // The machine states power loss may return to: from the last synced write on.
    let mut machines = vec![model.machine.clone()];
    for op in ops {
        match op {
            Op::Reopen => {
                drop(node);
                node = open(dir.path(), &fs);
                let committed = node.log.read_committed().await.unwrap();
                assert_eq!(committed, model.committed, "committed after a reopen");
            }
            Op::Crash(torn) => {
                node = power_loss(node, dir.path(), &fs, *torn);
                after_power_loss(&mut node, &mut model, &machines).await;
            }
            Op::InterruptedInstall(commands, published) => {
                let last = donor_last(&model, commands);
                let (_, bytes, donor) = donor_snapshot(&model.machine, commands, last).await;
                if *published {
                    let current = dir.path().join("snapshot").join("current.snap");
                    std::fs::write(current, &bytes).unwrap();
                } else {
                    receive(&mut node, &bytes).await;
                }
                node.log.purge(last).await.unwrap();
                node = power_loss(node, dir.path(), &fs, 0);
                after_power_loss(&mut node, &mut model, &[]).await;
                installed(&mut model, donor, last);
                check_machine(&mut node, &model.machine).await;
            }
            op => {
                if !step(&mut node, &mut model, &mut machines, op).await {
                    check(&mut node, &model).await;
                    continue;
                }
            }
        }
        if matches!(op, Op::Reopen | Op::Crash(_) | Op::InterruptedInstall(..)) {
            let current = node.sm.get_current_snapshot().await.unwrap();
            assert_eq!(current.map(|s| s.meta.last_log_id), model.snapshot);
        }
        // The step ended with a synced write (or a reopen, which starts from what is durable).
        machines = vec![model.machine.clone()];
        model.durable_committed = model.committed;
        check(&mut node, &model).await;
    }
}

/// Power loss: the machine goes off with `node` open, comes back with what was durable
/// (keeping `torn` bytes of each unsynced tail), and the store is opened again.
fn power_loss(node: Node, dir: &Path, fs: &FaultFs, torn: u8) -> Node {
    fs.crash();
    drop(node);
    fs.restart(usize::from(torn));
    open(dir, fs)
}

/// Streams `bytes` into the node as openraft does when a leader sends a snapshot.
async fn receive(node: &mut Node, bytes: &[u8]) -> Box<tokio::fs::File> {
    let mut file = node.sm.begin_receiving_snapshot().await.unwrap();
    file.write_all(bytes).await.unwrap();
    file.flush().await.unwrap();
    file
}

/// Checks what power loss may change and takes it into the model. `machines`: the states the
/// state machine may be found in (empty: whatever an interrupted install leads to, checked by
/// the caller).
async fn after_power_loss(node: &mut Node, model: &mut Model, machines: &[Machine]) {
    let committed = node.log.read_committed().await.unwrap();
    assert!(
        model.durable_committed <= committed && committed <= model.committed,
        "committed {committed:?} after power loss, saved {:?}, durable {:?}",
        model.committed,
        model.durable_committed
    );
    model.committed = committed;
    if machines.is_empty() {
        return;
    }
    let now = read_machine(node).await;
    assert!(
        machines.contains(&now),
        "state machine after power loss (applied {:?}) is none of the {} states since the last synced write",
        now.applied,
        machines.len()
    );
    model.machine = now;
}

/// One step that keeps the store open; returns whether it ended with a synced write.
async fn step(node: &mut Node, model: &mut Model, machines: &mut Vec<Machine>, op: &Op) -> bool {
    match op {
        Op::Append(commands, change) => {
            let entries = entries_of(model.term, model.next_index(), commands, *change);
            node.log.blocking_append(entries.clone()).await.unwrap();
            model
                .log
                .extend(entries.into_iter().map(|e| (e.log_id.index, e)));
        }
        Op::Elect => {
            model.term += 1;
            let vote = Vote::new(model.term, 1);
            node.log.save_vote(&vote).await.unwrap();
            model.vote = Some(vote);
        }
        Op::Truncate(back) => {
            let (Some(&first), Some(&last)) =
                (model.log.keys().next(), model.log.keys().next_back())
            else {
                return false;
            };
            // Committed and applied entries are never truncated (openraft never asks).
            let first = first.max(model.settled_index().map_or(0, |i| i + 1));
            if first > last {
                return false;
            }
            let at = last - u64::from(*back) % (last - first + 1);
            node.log.truncate(model.log[&at].log_id).await.unwrap();
            model.log.split_off(&at);
        }
        Op::Purge(fraction) => {
            // Only applied entries are purged (a snapshot covers them).
            let (Some(&first), Some(applied)) = (model.log.keys().next(), model.machine.applied)
            else {
                return false;
            };
            let last = applied
                .index
                .min(model.log.keys().next_back().copied().unwrap_or(0));
            if first > last {
                return false;
            }
            let at = first + (last - first) * u64::from(*fraction) / 256;
            let id = model.log[&at].log_id;
            node.log.purge(id).await.unwrap();
            model.log = model.log.split_off(&(at + 1));
            model.purged = Some(id);
        }
        Op::Commit => {
            let committed = model.last_log_id().max(model.committed);
            node.log.save_committed(committed).await.unwrap();
            model.committed = committed;
            model.commit_point = model.commit_point.max(committed);
            assert_eq!(node.log.read_committed().await.unwrap(), committed);
            return false;
        }
        Op::Apply(n) => {
            let from = model.machine.applied.map_or(0, |id| id.index + 1);
            let to = model.commit_point.map_or(0, |id| id.index + 1);
            let entries: Vec<Entry> = model
                .log
                .range(from..to)
                .take(usize::from(*n))
                .map(|(_, e)| e.clone())
                .collect();
            if entries.is_empty() {
                return false;
            }
            let want: Vec<u64> = entries
                .iter()
                .map(|e| match &e.payload {
                    EntryPayload::Normal(c) => c.ops(),
                    _ => 0,
                })
                .collect();
            let next = applied(&model.machine, &entries);
            let responses = node.sm.apply(entries).await.unwrap();
            let ops: Vec<u64> = responses.iter().map(|r| r.ops).collect();
            assert_eq!(ops, want, "responses");
            model.machine = next;
            machines.push(model.machine.clone());
            return false;
        }
        Op::Snapshot => {
            let mut builder = node.sm.get_snapshot_builder().await;
            let snapshot = builder.build_snapshot().await.unwrap();
            assert_eq!(snapshot.meta.last_log_id, model.machine.applied);
            assert_eq!(snapshot.meta.last_membership, model.machine.membership);
            check_snapshot_holds(snapshot, &model.machine).await;
            model.snapshot = Some(model.machine.applied);
        }
        Op::Install(commands) => {
            let last = donor_last(model, commands);
            let (meta, bytes, donor) = donor_snapshot(&model.machine, commands, last).await;
            let file = receive(node, &bytes).await;
            node.sm.install_snapshot(&meta, file).await.unwrap();
            node.log.purge(last).await.unwrap();
            installed(model, donor, last);
            let current = node.sm.get_current_snapshot().await.unwrap().unwrap();
            assert_eq!(current.meta.last_log_id, Some(last));
        }
        Op::Reopen | Op::Crash(_) | Op::InterruptedInstall(..) => {
            unreachable!("handled by the caller")
        }
    }
    true
}

/// Installs `snapshot` into a fresh store and checks that it holds `machine`.
async fn check_snapshot_holds(
    snapshot: openraft::storage::Snapshot<TypeConfig>,
    machine: &Machine,
) {
    let fs = FaultFs::new();
    let dir = tempfile::tempdir().unwrap();
    let mut fresh = open(dir.path(), &fs);
    let mut source = snapshot.snapshot;
    let mut file = fresh.sm.begin_receiving_snapshot().await.unwrap();
    tokio::io::copy(&mut *source, &mut *file).await.unwrap();
    fresh
        .sm
        .install_snapshot(&snapshot.meta, file)
        .await
        .unwrap();
    check_machine(&mut fresh, machine).await;
}

fn cases() -> u32 {
    std::env::var("SIFTDB_RAFT_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        max_shrink_iters: 200,
        ..ProptestConfig::default()
    })]

    #[test]
    fn raft_store_matches_its_model_through_reopens_and_power_loss(
        ops in proptest::collection::vec(op(), 1..60)
    ) {
        run(&ops);
    }
}
