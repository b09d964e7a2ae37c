//! Three `siftdb-server` processes on loopback under a client load: a follower and then the
//! leader are SIGKILLed and restarted, and a node is wiped and replaced by a new one seeded
//! by a snapshot. No acknowledged put is lost, and the cluster takes writes again within a
//! bound after each kill.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{members, wait_leader, wait_serving, Client, Outcome, Server};
use parking_lot::Mutex;
use serde_json::json;

/// How long the cluster may take to commit a write again after a kill (an election is
/// 300–600 ms here; the rest is slack for a loaded 2-core machine).
const RECOVERY_BOUND: Duration = Duration::from_secs(10);

/// What the load acknowledged: key number -> value.
type Acked = Arc<Mutex<BTreeMap<u64, String>>>;

/// Puts keys `from..to` one after another, recording those acknowledged; each put retries
/// (through redirects and failed nodes) for up to 15 s. Returns the longest wait for an ack.
async fn load(client: &Client, acked: &Acked, from: u64, to: u64) -> Duration {
    let mut longest = Duration::ZERO;
    for n in from..to {
        let value = format!("value-{n}");
        let started = Instant::now();
        if client
            .put(&format!("key{n:06}"), &value, Duration::from_secs(15))
            .await
            == Outcome::Ok
        {
            acked.lock().insert(n, value);
        }
        longest = longest.max(started.elapsed());
    }
    longest
}

/// Reads every acknowledged key linearizably: each must hold its value.
async fn check_all(client: &Client, acked: &Acked) {
    let acked = acked.lock().clone();
    for (n, value) in acked {
        let got = client
            .get(&format!("key{n:06}"), Duration::from_secs(15))
            .await
            .expect("a linearizable read answers");
        assert_eq!(got, Some(value.into_bytes()), "key {n}");
    }
}

fn addrs(servers: &BTreeMap<u64, Server>) -> Vec<String> {
    servers.values().map(|s| s.addr.clone()).collect()
}

async fn start_cluster(root: &std::path::Path) -> BTreeMap<u64, Server> {
    let servers: BTreeMap<u64, Server> = (1..=3)
        .map(|id| {
            let addr = format!("127.0.0.1:{}", common::free_port());
            (
                id,
                Server::start(id, &addr, &root.join(format!("node{id}"))),
            )
        })
        .collect();
    wait_serving(&addrs(&servers), Duration::from_secs(30)).await;
    let client = Client::new(vec![servers[&1].addr.clone()]);
    let r = client
        .post_json("/cluster/init", &members(&servers), Duration::from_secs(10))
        .await;
    assert!(r.status().is_success(), "init: {:?}", r.text().await);
    wait_leader(&addrs(&servers), Duration::from_secs(20)).await;
    servers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_acknowledged_put_is_lost_across_kills_restarts_and_a_reseeded_node() {
    let root = tempfile::tempdir().unwrap();
    let mut servers = start_cluster(root.path()).await;
    let client = Client::new(addrs(&servers));
    let acked: Acked = Arc::default();
    load(&client, &acked, 0, 150).await;

    // A follower dies: the other two keep committing.
    let leader = wait_leader(&addrs(&servers), Duration::from_secs(20)).await;
    let follower = *servers.keys().find(|id| **id != leader).unwrap();
    servers.get_mut(&follower).unwrap().kill();
    let waited = load(&client, &acked, 150, 300).await;
    assert!(
        waited < RECOVERY_BOUND,
        "a follower's death held writes {waited:?}"
    );
    servers.get_mut(&follower).unwrap().restart();

    // The leader dies: a new one is elected and takes the writes.
    let leader = wait_leader(&addrs(&servers), Duration::from_secs(20)).await;
    servers.get_mut(&leader).unwrap().kill();
    let waited = load(&client, &acked, 300, 450).await;
    assert!(
        waited < RECOVERY_BOUND,
        "the leader's death held writes {waited:?}"
    );
    servers.get_mut(&leader).unwrap().restart();
    wait_leader(&addrs(&servers), Duration::from_secs(20)).await;
    check_all(&client, &acked).await;

    reseed_a_wiped_node(&mut servers, &client, &acked, root.path()).await;

    assert_eq!(acked.lock().len(), 600, "every put was acknowledged");
    check_all(&client, &acked).await;
    for server in servers.values_mut() {
        let log = server.log();
        assert!(
            server.terminate(),
            "node {} exited badly:\n{log}",
            server.id
        );
    }
}

/// Removes a follower from the cluster, wipes its directory, and adds a node with a new id in
/// its place: it has no log, and the leader's log starts after its last snapshot, so the new
/// node is seeded by the snapshot (openraft's metrics show one).
async fn reseed_a_wiped_node(
    servers: &mut BTreeMap<u64, Server>,
    client: &Client,
    acked: &Acked,
    root: &std::path::Path,
) {
    let leader = wait_leader(&addrs(servers), Duration::from_secs(20)).await;
    let gone = *servers.keys().find(|id| **id != leader).unwrap();
    let voters: Vec<u64> = servers.keys().copied().filter(|id| *id != gone).collect();
    let r = client
        .post_json(
            "/cluster/change-membership",
            &json!(voters),
            Duration::from_secs(20),
        )
        .await;
    assert!(
        r.status().is_success(),
        "remove {gone}: {:?}",
        r.text().await
    );
    let mut old = servers.remove(&gone).unwrap();
    old.kill();
    std::fs::remove_dir_all(&old.dir).unwrap();

    load(client, acked, 450, 600).await;
    // The leader's log no longer starts at 1: a node without a log can only be seeded by the
    // snapshot.
    let leader = wait_leader(&addrs(servers), Duration::from_secs(20)).await;
    let purged = common::metrics(&servers[&leader].addr).await.unwrap()["purged"]["index"]
        .as_u64()
        .unwrap_or(0);
    assert!(purged > 0, "the leader purged no log entry");
    let id = 4;
    let addr = format!("127.0.0.1:{}", common::free_port());
    let new = Server::start(id, &addr, &root.join("node4"));
    wait_serving(std::slice::from_ref(&addr), Duration::from_secs(30)).await;
    let r = client
        .post_json(
            "/cluster/add-learner",
            &json!({ "id": id, "addr": addr }),
            Duration::from_secs(30),
        )
        .await;
    assert!(r.status().is_success(), "add learner: {:?}", r.text().await);
    let mut voters = voters;
    voters.push(id);
    let r = client
        .post_json(
            "/cluster/change-membership",
            &json!(voters),
            Duration::from_secs(20),
        )
        .await;
    assert!(r.status().is_success(), "promote: {:?}", r.text().await);
    servers.insert(id, new);

    let metrics = common::metrics(&addr).await.unwrap();
    assert!(
        !metrics["snapshot"].is_null(),
        "the new node was seeded by a snapshot: {metrics}"
    );
    // Once it applied what the leader has, its own state, read locally, holds every
    // acknowledged key.
    let leader = wait_leader(&addrs(servers), Duration::from_secs(20)).await;
    let target = common::last_applied(&servers[&leader].addr).await.unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while common::last_applied(&addr).await.unwrap_or(0) < target {
        assert!(
            Instant::now() < until,
            "node 4 does not catch up to {target}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let local = Client::new(vec![addr.clone()]);
    let acked = acked.lock().clone();
    for (n, value) in acked {
        let r = local
            .send(
                reqwest::Method::GET,
                &format!("/kv/key{n:06}?stale=true"),
                Vec::new(),
                Duration::from_secs(10),
            )
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            reqwest::StatusCode::OK,
            "key {n} on the new node"
        );
        assert_eq!(r.bytes().await.unwrap().to_vec(), value.into_bytes());
    }
}
