//! Linearizability under partitions: the node code of `siftdb-server` over a simulated network
//! that partitions, heals, drops, delays and duplicates messages (seeded), with clients
//! writing and reading through whichever node believes it leads. Every history, timeouts
//! recorded as unknown outcomes, must pass the linearizability checker; a read served by a
//! deposed leader without the read index must not.

use crate::sim;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use siftdb_raft::Command;
use siftdb_server::linearizability::{check, Kind, Operation};
use sim::{LinkFaults, SimCluster};

/// Seeds per test function; four functions run 20 seeds (the test harness runs two functions
/// at a time on two cores, and each runs its five seeds at once: the simulation mostly waits).
const SEEDS_PER_TEST: u64 = 5;
const CLIENTS: u64 = 4;
const OPS_PER_CLIENT: u64 = 125;
const KEYS: u64 = 5;
/// How long an operation waits for a quorum before its outcome is unknown.
const DEADLINE: Duration = Duration::from_millis(200);

type History = Arc<Mutex<Vec<Operation>>>;

#[derive(Default)]
struct Counts {
    acked_writes: AtomicU64,
    unknown_writes: AtomicU64,
    reads: AtomicU64,
    partitions: AtomicU64,
    heals: AtomicU64,
}

/// One client: `OPS_PER_CLIENT` recorded puts (of values no one else writes), gets and deletes
/// on a few keys, each sent to a node that believes it leads (one at random when two do: a
/// deposed leader that has not heard of its successor). A read that does not answer is not
/// recorded, and another operation takes its place.
async fn client(
    cluster: Arc<SimCluster>,
    id: u64,
    seed: u64,
    history: History,
    counts: Arc<Counts>,
) {
    let mut rng = StdRng::seed_from_u64(seed * 1_000 + id);
    let mut recorded = 0;
    for i in 0.. {
        if recorded == OPS_PER_CLIENT {
            break;
        }
        let key = format!("k{}", rng.gen_range(0..KEYS)).into_bytes();
        let node = loop {
            let leaders: Vec<_> = cluster
                .nodes
                .values()
                .filter(|n| n.metrics().state == openraft::ServerState::Leader)
                .collect();
            if !leaders.is_empty() {
                break leaders[rng.gen_range(0..leaders.len())].clone();
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let roll = rng.gen_range(0..10);
        let call = cluster.now();
        let (kind, ret) = if roll < 5 || roll == 9 {
            let (kind, command) = if roll < 5 {
                let value = format!("c{id}-{i}").into_bytes();
                (Kind::Put(value.clone()), Command::put(key.clone(), value))
            } else {
                (Kind::Delete, Command::delete(key.clone()))
            };
            match node.write(command).await {
                Ok(_) => {
                    counts.acked_writes.fetch_add(1, Ordering::Relaxed);
                    (kind, Some(cluster.now()))
                }
                // Refused or timed out: it may still be committed later (a leader that
                // appended it and then lost its leadership answers "not the leader").
                Err(_) => {
                    counts.unknown_writes.fetch_add(1, Ordering::Relaxed);
                    (kind, None)
                }
            }
        } else {
            match node.read(&key, true).await {
                Ok(value) => {
                    counts.reads.fetch_add(1, Ordering::Relaxed);
                    (Kind::Get(value), Some(cluster.now()))
                }
                // A read that did not answer tells nothing.
                Err(_) => continue,
            }
        };
        history.lock().push(Operation {
            key,
            kind,
            call,
            ret,
        });
        recorded += 1;
    }
}

/// Operations recorded between two acts of the nemesis (it also acts after 300 ms without
/// that many, so a partition that stalls the clients is healed).
const OPS_PER_ACT: usize = 20;

/// Alternates partitions (the leader alone, or another node alone, as the seed decides) with
/// heals, every [`OPS_PER_ACT`] recorded operations, and turns lossy links on or off at random
/// with each act, until `stop`. Paced by the clients' progress, not the clock, so every run
/// goes through partitions and heals however fast it is.
async fn nemesis(
    cluster: Arc<SimCluster>,
    history: History,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
) {
    let net = &cluster.net;
    let mut act = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mark = history.lock().len() + OPS_PER_ACT;
        let since = std::time::Instant::now();
        while history.lock().len() < mark
            && since.elapsed() < Duration::from_millis(300)
            && !stop.load(Ordering::Relaxed)
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        if act.is_multiple_of(2) {
            let alone = match (net.random(2), cluster.believed_leader()) {
                (0, Some(leader)) => leader,
                _ => 1 + net.random(3),
            };
            net.partition(&BTreeSet::from([alone]));
            counts.partitions.fetch_add(1, Ordering::Relaxed);
        } else {
            net.heal();
            counts.heals.fetch_add(1, Ordering::Relaxed);
        }
        net.set_faults(if net.random(2) == 0 {
            LinkFaults {
                drop_request: 0.05,
                drop_response: 0.05,
                duplicate: 0.05,
                max_delay: Duration::from_millis(5),
            }
        } else {
            LinkFaults::default()
        });
        act += 1;
    }
    net.heal();
    net.set_faults(LinkFaults::default());
}

async fn run_seed(seed: u64) {
    let cluster = Arc::new(SimCluster::start(3, seed, DEADLINE).await);
    cluster.wait_leader(Duration::from_secs(10)).await;
    let history: History = Arc::default();
    let counts = Arc::new(Counts::default());
    let stop = Arc::new(AtomicBool::new(false));
    let chaos = tokio::spawn(nemesis(
        Arc::clone(&cluster),
        Arc::clone(&history),
        Arc::clone(&stop),
        Arc::clone(&counts),
    ));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| {
            tokio::spawn(client(
                Arc::clone(&cluster),
                id,
                seed,
                Arc::clone(&history),
                Arc::clone(&counts),
            ))
        })
        .collect();
    for c in clients {
        c.await.unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    chaos.await.unwrap();

    let history = history.lock().clone();
    let acked = counts.acked_writes.load(Ordering::Relaxed);
    let unknown = counts.unknown_writes.load(Ordering::Relaxed);
    let reads = counts.reads.load(Ordering::Relaxed);
    let partitions = counts.partitions.load(Ordering::Relaxed);
    let heals = counts.heals.load(Ordering::Relaxed);
    eprintln!(
        "seed {seed}: {} operations ({acked} writes acknowledged, {unknown} unknown, {reads} reads), {partitions} partitions, {heals} heals",
        history.len()
    );
    if let Err(v) = check(&history) {
        panic!("seed {seed}: {v}");
    }
    // Not vacuous: the operations ran across partitions and heals.
    assert_eq!(history.len() as u64, CLIENTS * OPS_PER_CLIENT);
    assert!(partitions >= 5 && heals >= 5, "seed {seed}: too calm");
    assert!(acked > 100 && reads > 50, "seed {seed}");
    match Arc::try_unwrap(cluster) {
        Ok(cluster) => cluster.shutdown().await,
        Err(_) => panic!("the cluster is still shared"),
    }
}

async fn run_seeds(first: u64) {
    let _beside_other_simulations = crate::CLUSTERS.read().await;
    let seeds: Vec<u64> = (first..first + SEEDS_PER_TEST).collect();
    for pair in seeds.chunks(SEEDS_PER_TEST as usize) {
        let runs: Vec<_> = pair
            .iter()
            .map(|&seed| tokio::spawn(run_seed(seed)))
            .collect();
        for run in runs {
            if let Err(e) = run.await {
                std::panic::resume_unwind(e.into_panic());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_across_partitions_are_linearizable_seeds_1_to_5() {
    run_seeds(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_across_partitions_are_linearizable_seeds_6_to_10() {
    run_seeds(6).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_across_partitions_are_linearizable_seeds_11_to_15() {
    run_seeds(11).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_across_partitions_are_linearizable_seeds_16_to_20() {
    run_seeds(16).await;
}

/// The injected bug: a leader cut off from the others still believes it leads, and a read it
/// serves from its own state (no read index) returns the value a newer, acknowledged write
/// replaced. The checker must reject that history; the real read path does not answer there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checker_rejects_a_read_served_by_a_deposed_leader_without_the_read_index() {
    let _beside_other_simulations = crate::CLUSTERS.read().await;
    let cluster = SimCluster::start(3, 99, DEADLINE).await;
    let old = cluster.wait_leader(Duration::from_secs(10)).await;
    let mut history = Vec::new();
    let key = b"k".to_vec();
    let put = |value: &str| Command::put(key.clone(), value.as_bytes().to_vec());

    let call = cluster.now();
    cluster.nodes[&old].write(put("v1")).await.unwrap();
    history.push(Operation {
        key: key.clone(),
        kind: Kind::Put(b"v1".to_vec()),
        call,
        ret: Some(cluster.now()),
    });

    cluster.net.partition(&BTreeSet::from([old]));
    let new = loop {
        let elected = cluster
            .nodes
            .values()
            .find(|n| n.id() != old && n.metrics().state == openraft::ServerState::Leader);
        if let Some(n) = elected {
            break n.id();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let call = cluster.now();
    cluster.nodes[&new].write(put("v2")).await.unwrap();
    history.push(Operation {
        key: key.clone(),
        kind: Kind::Put(b"v2".to_vec()),
        call,
        ret: Some(cluster.now()),
    });
    assert!(check(&history).is_ok());

    // The deposed leader has not heard of its successor.
    let deposed = &cluster.nodes[&old];
    assert_eq!(deposed.metrics().state, openraft::ServerState::Leader);
    // The bug: its local state, as if it were a linearizable read.
    let call = cluster.now();
    let stale = deposed.read(&key, false).await.unwrap();
    assert_eq!(stale.as_deref(), Some(&b"v1"[..]));
    let mut buggy = history.clone();
    buggy.push(Operation {
        key: key.clone(),
        kind: Kind::Get(stale),
        call,
        ret: Some(cluster.now()),
    });
    assert!(check(&buggy).is_err(), "the checker accepted a stale read");

    // The real read path asks a quorum first: on the deposed leader it does not answer.
    assert!(deposed.read(&key, true).await.is_err());
    // On the new leader it answers the newest value.
    let call = cluster.now();
    let fresh = cluster.nodes[&new].read(&key, true).await.unwrap();
    history.push(Operation {
        key,
        kind: Kind::Get(fresh),
        call,
        ret: Some(cluster.now()),
    });
    assert!(check(&history).is_ok());
    cluster.shutdown().await;
}
