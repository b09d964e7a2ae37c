//! Three `siftdb-server` processes on loopback under a client load: while two clients write
//! (and read back, linearizably) without pause, a follower and then the leader are SIGKILLed and
//! restarted, and a node is wiped and replaced by a new one seeded by a snapshot. No
//! acknowledged put is lost, and the cluster takes writes again within a bound after each kill.

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{change_membership, wait_leader, wait_serving, Client, Outcome, Server};
use parking_lot::Mutex;
use serde_json::json;

/// How long the cluster may take to commit writes again after a kill (an election is
/// 300–600 ms here; the rest is slack for a loaded 2-core machine).
const RECOVERY_BOUND: Duration = Duration::from_secs(10);
const WRITERS: u64 = 2;

/// The load's shared state: what was acknowledged (key number -> value), and counts.
#[derive(Default)]
struct Load {
    acked: Mutex<BTreeMap<u64, String>>,
    next_key: AtomicU64,
    reads_checked: AtomicU64,
    stop: AtomicBool,
}

impl Load {
    fn acked_count(&self) -> usize {
        self.acked.lock().len()
    }
}

fn key(n: u64) -> String {
    format!("key{n:06}")
}

/// One writer: puts new keys without pause (each retried through redirects and failed nodes
/// for up to 15 s), and after every fourth, reads back an acknowledged key linearizably: it
/// must hold its value (every key is written once).
async fn writer(client: Client, load: Arc<Load>) {
    let mut round = 0u64;
    while !load.stop.load(Ordering::Relaxed) {
        let n = load.next_key.fetch_add(1, Ordering::Relaxed);
        let value = format!("value-{n}");
        if client.put(&key(n), &value, Duration::from_secs(15)).await == Outcome::Ok {
            load.acked.lock().insert(n, value);
        }
        round += 1;
        if round.is_multiple_of(4) {
            let probe = {
                let acked = load.acked.lock();
                let skip = (round as usize * 7919) % acked.len().max(1);
                acked.iter().nth(skip).map(|(n, v)| (*n, v.clone()))
            };
            if let Some((n, value)) = probe
                && let Some(got) = client.get(&key(n), Duration::from_secs(15)).await
            {
                assert_eq!(got, Some(value.into_bytes()), "key {n} read back");
                load.reads_checked.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Waits until `more` puts beyond those acknowledged now are; returns how long that took.
async fn wait_acks(load: &Load, more: usize, within: Duration) -> Duration {
    let started = Instant::now();
    let target = load.acked_count() + more;
    while load.acked_count() < target {
        assert!(
            started.elapsed() < within,
            "{} of {target} puts acknowledged after {within:?}",
            load.acked_count()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    started.elapsed()
}

/// Reads every acknowledged key linearizably: each must hold its value.
async fn check_all(client: &Client, load: &Load) {
    let acked = load.acked.lock().clone();
    for (n, value) in acked {
        let got = client
            .get(&key(n), Duration::from_secs(15))
            .await
            .expect("a linearizable read answers");
        assert_eq!(got, Some(value.into_bytes()), "key {n}");
    }
}

fn addrs(servers: &BTreeMap<u64, Server>) -> Vec<String> {
    servers.values().map(|s| s.addr.clone()).collect()
}

/// SIGKILLs node `id` under the load; writes must go on within [`RECOVERY_BOUND`]; then
/// restarts it.
async fn kill_and_restart(servers: &mut BTreeMap<u64, Server>, id: u64, load: &Load, what: &str) {
    servers.get_mut(&id).unwrap().kill();
    let resumed = wait_acks(load, 10, RECOVERY_BOUND).await;
    eprintln!("{what} (node {id}) killed: 10 more puts acknowledged within {resumed:?}");
    wait_acks(load, 100, Duration::from_secs(60)).await;
    servers.get_mut(&id).unwrap().restart();
    wait_serving(&[servers[&id].addr.clone()], Duration::from_secs(30)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_acknowledged_put_is_lost_across_kills_restarts_and_a_reseeded_node() {
    let _alone = crate::CLUSTERS.write().await;
    let root = tempfile::tempdir().unwrap();
    let mut servers = common::start_cluster(root.path(), 1).await;
    let client = Client::new(addrs(&servers));
    let load = Arc::new(Load::default());
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| tokio::spawn(writer(Client::new(addrs(&servers)), Arc::clone(&load))))
        .collect();
    wait_acks(&load, 100, Duration::from_secs(60)).await;

    let leader = wait_leader(&addrs(&servers), Duration::from_secs(20)).await;
    let follower = *servers.keys().find(|id| **id != leader).unwrap();
    kill_and_restart(&mut servers, follower, &load, "a follower").await;
    let leader = wait_leader(&addrs(&servers), Duration::from_secs(20)).await;
    kill_and_restart(&mut servers, leader, &load, "the leader").await;
    wait_acks(&load, 50, Duration::from_secs(60)).await;

    reseed_a_wiped_node(&mut servers, &client, &load, root.path()).await;

    load.stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let acked = load.acked_count();
    let issued = load.next_key.load(Ordering::Relaxed) as usize;
    eprintln!(
        "{acked} of {issued} puts acknowledged, {} reads checked",
        load.reads_checked.load(Ordering::Relaxed)
    );
    assert!(acked >= 500);
    check_all(&client, &load).await;
    check_on_its_own_state(&servers[&4], &load).await;
    for server in servers.values_mut() {
        let log = server.log();
        assert!(
            server.terminate(),
            "node {} exited badly:\n{log}",
            server.id
        );
    }
}

/// Under the load, removes a follower from the cluster, wipes its directory, and adds a node
/// with a new id (4) in its place. The leader's log no longer starts at 1 by then, so the new
/// node can only be seeded by the snapshot.
async fn reseed_a_wiped_node(
    servers: &mut BTreeMap<u64, Server>,
    client: &Client,
    load: &Load,
    root: &std::path::Path,
) {
    let leader = wait_leader(&addrs(servers), Duration::from_secs(20)).await;
    let gone = *servers.keys().find(|id| **id != leader).unwrap();
    let mut voters: Vec<u64> = servers.keys().copied().filter(|id| *id != gone).collect();
    change_membership(client, &voters, &format!("remove {gone}")).await;
    let mut old = servers.remove(&gone).unwrap();
    old.kill();
    std::fs::remove_dir_all(&old.dir).unwrap();
    wait_acks(load, 100, Duration::from_secs(60)).await;

    let leader = wait_leader(&addrs(servers), Duration::from_secs(20)).await;
    let purged = common::metrics(&servers[&leader].addr).await.unwrap()["purged"]["index"]
        .as_u64()
        .unwrap_or(0);
    assert!(purged > 0, "the leader purged no log entry");
    let addr = format!("127.0.0.1:{}", common::free_port());
    let new = Server::start(4, &addr, &root.join("node4"));
    wait_serving(std::slice::from_ref(&addr), Duration::from_secs(30)).await;
    let r = client
        .post_json(
            "/cluster/add-learner",
            &json!({ "id": 4, "addr": addr }),
            Duration::from_secs(30),
        )
        .await;
    assert!(r.status().is_success(), "add learner: {:?}", r.text().await);
    voters.push(4);
    change_membership(client, &voters, "promote node 4").await;
    servers.insert(4, new);
    let metrics = common::metrics(&addr).await.unwrap();
    assert!(
        !metrics["snapshot"].is_null(),
        "node 4 has no snapshot: {metrics}"
    );
    wait_acks(load, 50, Duration::from_secs(60)).await;
}

/// Once `server` applied what the leader has, its own state, read locally, holds every
/// acknowledged key.
async fn check_on_its_own_state(server: &Server, load: &Load) {
    let leader_addr = {
        let m = common::metrics(&server.addr).await.unwrap();
        let leader = m["current_leader"].as_u64().unwrap();
        m["membership_config"]["membership"]["nodes"][leader.to_string()]["addr"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let target = common::last_applied(&leader_addr).await.unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while common::last_applied(&server.addr).await.unwrap_or(0) < target {
        assert!(
            Instant::now() < until,
            "node {} does not catch up",
            server.id
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let local = Client::new(vec![server.addr.clone()]);
    let acked = load.acked.lock().clone();
    for (n, value) in acked {
        let r = local
            .send(
                reqwest::Method::GET,
                &format!("/kv/{}?stale=true", key(n)),
                Vec::new(),
                Duration::from_secs(10),
            )
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            reqwest::StatusCode::OK,
            "key {n} on node {}",
            server.id
        );
        assert_eq!(r.bytes().await.unwrap().to_vec(), value.into_bytes());
    }
}
