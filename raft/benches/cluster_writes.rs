//! Client writes per second through a three-node in-process cluster, with siftdb storage and
//! with an in-memory store (a log in a `BTreeMap`, the state in another, as openraft's
//! `raft-kv-memstore` example keeps them) in the same harness: the storage's cost relative to
//! none. Two clients write commands of 1 and of 64 puts each; three rounds per setting, the
//! median printed.
//!
//! ```text
//! cargo bench -p siftdb-raft --bench cluster_writes [-- --writes 3000 --rounds 3]
//! ```
//!
//! `openraft-memstore` itself cannot be used here: it implements the v1 storage API, which the
//! `storage-v2` feature this crate needs switches off (the two are exclusive in openraft 0.9).

mod args;
use args::arg;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::RangeBounds;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::storage::{LogFlushed, LogState, RaftLogStorage, RaftStateMachine, Snapshot};
use openraft::{
    EntryPayload, LogId, OptionalSend, RaftLogReader, RaftSnapshotBuilder, SnapshotMeta,
    StorageError, StoredMembership, Vote,
};
use parking_lot::Mutex;
use siftdb_raft::cluster::{self, local_config};
use siftdb_raft::network::Router;
use siftdb_raft::{Command, NodeId, Response, TypeConfig};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

type Entry = openraft::Entry<TypeConfig>;
type Membership = StoredMembership<NodeId, openraft::BasicNode>;
type Meta = SnapshotMeta<NodeId, openraft::BasicNode>;

#[derive(Default)]
struct MemLog {
    vote: Option<Vote<NodeId>>,
    committed: Option<LogId<NodeId>>,
    purged: Option<LogId<NodeId>>,
    entries: BTreeMap<u64, Entry>,
}

/// The in-memory log store.
#[derive(Clone, Default)]
struct MemLogStore(Arc<Mutex<MemLog>>);

impl RaftLogReader<TypeConfig> for MemLogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError<NodeId>> {
        Ok(self
            .0
            .lock()
            .entries
            .range(range)
            .map(|(_, e)| e.clone())
            .collect())
    }
}

impl RaftLogStorage<TypeConfig> for MemLogStore {
    type LogReader = MemLogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let log = self.0.lock();
        let last = log.entries.values().next_back().map(|e| e.log_id);
        Ok(LogState {
            last_purged_log_id: log.purged,
            last_log_id: last.or(log.purged),
        })
    }

    async fn get_log_reader(&mut self) -> MemLogStore {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.0.lock().vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        Ok(self.0.lock().vote)
    }

    async fn save_committed(
        &mut self,
        c: Option<LogId<NodeId>>,
    ) -> Result<(), StorageError<NodeId>> {
        self.0.lock().committed = c;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        Ok(self.0.lock().committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut log = self.0.lock();
        for e in entries {
            log.entries.insert(e.log_id.index, e);
        }
        callback.log_io_completed(Ok(()));
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.0.lock().entries.split_off(&log_id.index);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let mut log = self.0.lock();
        log.entries = log.entries.split_off(&(log_id.index + 1));
        log.purged = Some(log_id);
        Ok(())
    }
}

#[derive(Default)]
struct MemState {
    applied: Option<LogId<NodeId>>,
    membership: Membership,
    data: BTreeMap<Vec<u8>, Vec<u8>>,
    snapshot: Option<(Meta, Vec<u8>)>,
}

/// The in-memory state machine (snapshots are encoded maps, handed out as temporary files
/// because the type configuration streams snapshots as files).
#[derive(Clone, Default)]
struct MemStateMachine(Arc<Mutex<MemState>>);

fn apply_command(data: &mut BTreeMap<Vec<u8>, Vec<u8>>, c: &Command) -> u64 {
    match c {
        Command::Put { key, value } => {
            data.insert(key.clone(), value.clone());
            1
        }
        Command::Delete { key } => {
            data.remove(key);
            1
        }
        Command::Batch(cs) => cs.iter().map(|c| apply_command(data, c)).sum(),
        other => panic!("the benchmark's state machine does not know {other:?}"),
    }
}

async fn as_file(bytes: &[u8]) -> Box<tokio::fs::File> {
    let mut file = tokio::fs::File::from_std(tempfile::tempfile().unwrap());
    file.write_all(bytes).await.unwrap();
    file.rewind().await.unwrap();
    Box::new(file)
}

impl RaftSnapshotBuilder<TypeConfig> for MemStateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let (meta, bytes) = {
            let mut s = self.0.lock();
            let meta = Meta {
                last_log_id: s.applied,
                last_membership: s.membership.clone(),
                snapshot_id: format!("{:?}", s.applied),
            };
            let bytes = postcard::to_stdvec(&s.data).unwrap();
            s.snapshot = Some((meta.clone(), bytes.clone()));
            (meta, bytes)
        };
        Ok(Snapshot {
            meta,
            snapshot: as_file(&bytes).await,
        })
    }
}

impl RaftStateMachine<TypeConfig> for MemStateMachine {
    type SnapshotBuilder = MemStateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, Membership), StorageError<NodeId>> {
        let s = self.0.lock();
        Ok((s.applied, s.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut s = self.0.lock();
        let mut out = Vec::new();
        for e in entries {
            let ops = match &e.payload {
                EntryPayload::Blank => 0,
                EntryPayload::Normal(c) => apply_command(&mut s.data, c),
                EntryPayload::Membership(m) => {
                    s.membership = Membership::new(Some(e.log_id), m.clone());
                    0
                }
            };
            s.applied = Some(e.log_id);
            out.push(Response {
                ops,
                rejected: None,
            });
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> MemStateMachine {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<tokio::fs::File>, StorageError<NodeId>> {
        Ok(as_file(&[]).await)
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        mut file: Box<tokio::fs::File>,
    ) -> Result<(), StorageError<NodeId>> {
        let mut bytes = Vec::new();
        file.rewind().await.unwrap();
        file.read_to_end(&mut bytes).await.unwrap();
        let mut s = self.0.lock();
        s.data = postcard::from_bytes(&bytes).unwrap();
        s.applied = meta.last_log_id;
        s.membership = meta.last_membership.clone();
        s.snapshot = Some((meta.clone(), bytes));
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        let current = self.0.lock().snapshot.clone();
        match current {
            Some((meta, bytes)) => Ok(Some(Snapshot {
                meta,
                snapshot: as_file(&bytes).await,
            })),
            None => Ok(None),
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Store {
    Siftdb,
    Memory,
}

impl Store {
    fn name(self) -> &'static str {
        match self {
            Store::Siftdb => "siftdb",
            Store::Memory => "memory",
        }
    }
}

/// One run: a fresh cluster, `writes` commands of `batch` puts from each of `clients` clients.
/// Returns (commands per second, latencies in µs).
async fn run(store: Store, batch: u32, clients: u32, writes: u32) -> (f64, Vec<u64>) {
    let router = Router::<TypeConfig>::new();
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let config = local_config(5000, 1000).unwrap();
    for (id, dir) in (1..=3).zip(&dirs) {
        match store {
            Store::Siftdb => {
                let (log, sm) = siftdb_raft::open(dir.path(), siftdb::Options::default()).unwrap();
                cluster::start_node(&router, id, config.clone(), log, sm)
                    .await
                    .unwrap();
            }
            Store::Memory => {
                let (log, sm) = (MemLogStore::default(), MemStateMachine::default());
                cluster::start_node(&router, id, config.clone(), log, sm)
                    .await
                    .unwrap();
            }
        };
    }
    cluster::initialize(&router, &[1, 2, 3]).await.unwrap();
    cluster::write(&router, Command::put("warm", "up"), Duration::from_secs(10))
        .await
        .unwrap();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..clients {
        let router = router.clone();
        tasks.push(tokio::spawn(async move {
            let (_, raft) = cluster::leader(&router).unwrap();
            let mut latencies = Vec::with_capacity(writes as usize);
            for w in 0..writes {
                let puts = (0..batch)
                    .map(|i| Command::put(format!("c{client}-w{w:08}-{i:02}"), vec![b'v'; 100]));
                let command = if batch == 1 {
                    puts.into_iter().next().unwrap()
                } else {
                    Command::Batch(puts.collect())
                };
                let t = Instant::now();
                raft.client_write(command).await.unwrap();
                latencies.push(t.elapsed().as_micros() as u64);
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
    for id in 1..=3 {
        cluster::stop_node(&router, id).await.unwrap();
    }
    latencies.sort_unstable();
    (f64::from(clients * writes) / elapsed, latencies)
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(0) as f64 / 1000.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let writes: u32 = arg("--writes", 2000);
    let rounds: u32 = arg("--rounds", 3);
    let clients = 2;
    println!(
        "three nodes in one process, {clients} clients, {writes} commands each (batch 1) or {} (batch 64), 100-byte values, median of {rounds} rounds",
        writes / 8
    );
    println!("openraft 0.9 defaults but heartbeat 50 ms, elections 300-600 ms, snapshot every 5000 entries; siftdb: default options, every append one synced batch; memory: nothing on disk");
    println!(
        "{:<8} {:>5} {:>12} {:>12} {:>9} {:>9}",
        "store", "batch", "commands/s", "puts/s", "p50 ms", "p99 ms"
    );
    for batch in [1u32, 64] {
        let mut by_store = Vec::new();
        for store in [Store::Siftdb, Store::Memory] {
            let mut results = Vec::new();
            for _ in 0..rounds {
                results.push(run(store, batch, clients, writes / batch.min(8)).await);
            }
            results.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (rate, lat) = &results[results.len() / 2];
            println!(
                "{:<8} {:>5} {:>12.0} {:>12.0} {:>9.2} {:>9.2}",
                store.name(),
                batch,
                rate,
                rate * f64::from(batch),
                percentile(lat, 0.5),
                percentile(lat, 0.99)
            );
            by_store.push(*rate);
        }
        println!(
            "siftdb / memory at batch {batch}: {:.2}",
            by_store[0] / by_store[1]
        );
    }
}
