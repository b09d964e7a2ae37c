//! Three nodes in one process over the in-process network: elect, write 10,000 keys through the
//! leader, stop a follower (its database closes), write more (the leader snapshots and purges
//! meanwhile, so the follower catches up by snapshot), restart it from its directory; stop the
//! leader, elect another, write more, restart it. Every acknowledged write is on every node at
//! the end, and the nodes' state keyspaces are equal. Bounded by a deadline.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use siftdb_raft::cluster::{self, local_config};
use siftdb_raft::network::Router;
use siftdb_raft::{Command, NodeId, Raft, StateReader, TypeConfig};

const WRITE_TIMEOUT: Duration = Duration::from_secs(20);
const CLIENTS: u32 = 16;

struct Node {
    dir: tempfile::TempDir,
    reader: Option<StateReader>,
}

type Acked = Arc<Mutex<BTreeMap<Vec<u8>, Option<Vec<u8>>>>>;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value-{i}-{round}").into_bytes()
}

async fn start(
    router: &Router<TypeConfig>,
    nodes: &mut BTreeMap<NodeId, Node>,
    id: NodeId,
) -> Raft {
    let config = local_config(1000, 200).unwrap();
    let node = nodes.get_mut(&id).unwrap();
    // The stopped node's database closes once its last task lets go of it.
    let mut tries = 0;
    let (log, sm) = loop {
        match siftdb_raft::open(node.dir.path(), siftdb::Options::default()) {
            Ok(store) => break store,
            Err(e) if tries < 100 => {
                tries += 1;
                tracing::info!("node {id} not reopened yet: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("node {id} cannot reopen: {e}"),
        }
    };
    node.reader = Some(sm.reader());
    cluster::start_node(router, id, config, log, sm)
        .await
        .unwrap()
}

async fn stop(router: &Router<TypeConfig>, nodes: &mut BTreeMap<NodeId, Node>, id: NodeId) {
    cluster::stop_node(router, id).await.unwrap();
    nodes.get_mut(&id).unwrap().reader = None;
}

/// Writes keys `range` (each a put, overwritten in `round`) from `CLIENTS` concurrent clients;
/// records what was acknowledged.
async fn write_keys(
    router: &Router<TypeConfig>,
    range: std::ops::Range<u32>,
    round: u32,
    acked: &Acked,
) {
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let (router, acked, range) = (router.clone(), Arc::clone(acked), range.clone());
        clients.push(tokio::spawn(async move {
            for i in range.filter(|i| i % CLIENTS == client) {
                let command = Command::put(key(i), value(i, round));
                cluster::write(&router, command, WRITE_TIMEOUT)
                    .await
                    .unwrap();
                acked.lock().insert(key(i), Some(value(i, round)));
            }
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
}

fn leader_id(router: &Router<TypeConfig>) -> NodeId {
    cluster::leader(router).expect("a leader").0
}

fn last_applied(router: &Router<TypeConfig>) -> u64 {
    let (_, raft) = cluster::leader(router).expect("a leader");
    let applied = raft.metrics().borrow().last_applied;
    applied.map_or(0, |l| l.index)
}

async fn wait_all_applied(router: &Router<TypeConfig>) {
    let index = last_applied(router);
    for id in router.ids() {
        let raft = router.get(&id).unwrap();
        cluster::wait_applied(&raft, index, Duration::from_secs(30))
            .await
            .unwrap();
    }
}

/// Prints where the scenario is (seen with `--nocapture`, and in a failure's output).
fn phase(what: &str) {
    eprintln!("cluster scenario: {what}");
}

async fn scenario(router: Router<TypeConfig>) {
    let router = &router;
    let mut nodes: BTreeMap<NodeId, Node> = (1..=3)
        .map(|id| {
            let node = Node {
                dir: tempfile::tempdir().unwrap(),
                reader: None,
            };
            (id, node)
        })
        .collect();
    for id in 1..=3 {
        start(router, &mut nodes, id).await;
    }
    cluster::initialize(router, &[1, 2, 3]).await.unwrap();
    let acked: Acked = Arc::default();

    // 10,000 keys through the leader, then a batch that deletes a hundred and sets another.
    phase("writing 10,000 keys");
    write_keys(router, 0..10_000, 0, &acked).await;
    let mut batch: Vec<Command> = (0..100).map(|i| Command::delete(key(i))).collect();
    batch.push(Command::put(b"batch".to_vec(), b"done".to_vec()));
    let response = cluster::write(router, Command::Batch(batch), WRITE_TIMEOUT)
        .await
        .unwrap();
    assert_eq!(response.ops, 101);
    {
        let mut acked = acked.lock();
        for i in 0..100 {
            acked.insert(key(i), None);
        }
        acked.insert(b"batch".to_vec(), Some(b"done".to_vec()));
    }

    // A follower goes down; the others go on, snapshot and purge the log it would need.
    let leader = leader_id(router);
    let follower = (1..=3).find(|id| *id != leader).unwrap();
    phase(&format!("stopping follower {follower}"));
    stop(router, &mut nodes, follower).await;
    write_keys(router, 10_000..12_000, 0, &acked).await;
    write_keys(router, 5_000..6_000, 1, &acked).await;
    let (_, raft) = cluster::leader(router).unwrap();
    phase("snapshot and purge");
    raft.trigger().snapshot().await.unwrap();
    let purged = raft
        .wait(Some(Duration::from_secs(30)))
        .metrics(
            |m| m.purged.is_some_and(|p| p.index > 10_000),
            "leader purges",
        )
        .await
        .unwrap()
        .purged;
    phase(&format!("restarting follower {follower}"));
    start(router, &mut nodes, follower).await;
    wait_all_applied(router).await;
    let restarted = router.get(&follower).unwrap();
    let snapshot = restarted.metrics().borrow().snapshot;
    assert!(
        snapshot.is_some_and(|s| Some(s) >= purged),
        "the follower caught up without the snapshot: {snapshot:?}, leader purged {purged:?}"
    );

    // The leader goes down; another is elected and takes writes; the old one rejoins.
    let old_leader = leader_id(router);
    phase(&format!("stopping leader {old_leader}"));
    stop(router, &mut nodes, old_leader).await;
    write_keys(router, 12_000..14_000, 0, &acked).await;
    assert_ne!(leader_id(router), old_leader);
    phase(&format!("restarting {old_leader}"));
    start(router, &mut nodes, old_leader).await;
    write_keys(router, 14_000..14_500, 0, &acked).await;
    wait_all_applied(router).await;

    phase("comparing the nodes");
    // Every acknowledged write on every node; the state keyspaces equal.
    let acked = acked.lock().clone();
    let mut states = Vec::new();
    for (id, node) in &nodes {
        let reader = node.reader.as_ref().unwrap();
        for (k, v) in &acked {
            assert_eq!(
                &reader.get(k).unwrap(),
                v,
                "node {id}, key {}",
                String::from_utf8_lossy(k)
            );
        }
        states.push((id, reader.entries().unwrap()));
    }
    let live = acked.values().filter(|v| v.is_some()).count();
    for (id, state) in &states {
        assert_eq!(state.len(), live, "node {id}");
        assert_eq!(
            *state, states[0].1,
            "node {id} differs from node {}",
            states[0].0
        );
    }
    for id in 1..=3 {
        cluster::stop_node(router, id).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_replicate_restart_and_agree() {
    let router = Router::<TypeConfig>::new();
    if tokio::time::timeout(Duration::from_secs(240), scenario(router.clone()))
        .await
        .is_err()
    {
        for id in router.ids() {
            if let Some(raft) = router.get(&id) {
                eprintln!("node {id}: {:?}", raft.metrics().borrow());
            }
        }
        panic!("the scenario did not finish in time");
    }
}
