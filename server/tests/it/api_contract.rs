//! The HTTP API of `siftdb-server` (docs/DISTRIBUTED.md), on a 3-process cluster: status codes,
//! the redirect to the leader, stale reads, batches, percent-encoded keys, cluster calls.

use crate::common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{members, wait_leader, Server};
use reqwest::StatusCode;
use serde_json::json;

async fn cluster(root: &std::path::Path) -> (BTreeMap<u64, Server>, u64) {
    let servers = common::start_cluster(root, 2).await;
    let addrs: Vec<String> = servers.values().map(|s| s.addr.clone()).collect();
    let leader = wait_leader(&addrs, Duration::from_secs(20)).await;
    (servers, leader)
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Polls a stale read of `path` on `server` until it answers `want`.
async fn stale_eventually(server: &Server, path: &str, want: Option<&[u8]>) {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let r = http()
            .get(server.url(&format!("{path}?stale=true")))
            .send()
            .await
            .unwrap();
        let got = match r.status() {
            StatusCode::OK => Some(r.bytes().await.unwrap().to_vec()),
            StatusCode::NOT_FOUND => None,
            s => panic!("stale read: {s}"),
        };
        if got.as_deref() == want {
            return;
        }
        assert!(
            Instant::now() < until,
            "{path} on node {}: {got:?}",
            server.id
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_api_keeps_its_contract() {
    let _beside_simulations = crate::CLUSTERS.read().await;
    let root = tempfile::tempdir().unwrap();
    let (servers, leader_id) = cluster(root.path()).await;
    let leader = &servers[&leader_id];
    let follower = servers.values().find(|s| s.id != leader_id).unwrap();
    let http = http();

    // Writes on the leader answer 200 with the log index; on a follower, 307 to the leader.
    let r = http
        .put(leader.url("/kv/alpha"))
        .body("one")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let ack: serde_json::Value = r.json().await.unwrap();
    assert!(ack["index"].as_u64().unwrap() > 0);
    let r = http
        .put(follower.url("/kv/alpha"))
        .body("two")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(
        r.headers()["location"].to_str().unwrap(),
        leader.url("/kv/alpha")
    );

    // Linearizable reads: on the leader, or redirected; stale reads answer anywhere.
    let r = http.get(leader.url("/kv/alpha")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(&r.bytes().await.unwrap()[..], b"one");
    let r = http.get(follower.url("/kv/alpha")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::TEMPORARY_REDIRECT);
    stale_eventually(follower, "/kv/alpha", Some(b"one")).await;
    let r = http.get(leader.url("/kv/missing")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // Keys are percent-encoded bytes; "batch" is a key like any other for PUT and GET.
    for (path, value) in [("/kv/a%2Fb%00%FF", "bytes"), ("/kv/batch", "a key")] {
        let r = http.put(leader.url(path)).body(value).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        let r = http.get(leader.url(path)).send().await.unwrap();
        assert_eq!(&r.bytes().await.unwrap()[..], value.as_bytes(), "{path}");
    }
    stale_eventually(follower, "/kv/a%2Fb%00%FF", Some(b"bytes")).await;
    // The key is the decoded bytes: another spelling of them names the same key.
    let r = http
        .get(leader.url("/kv/a%2fb%00%ff"))
        .send()
        .await
        .unwrap();
    assert_eq!(&r.bytes().await.unwrap()[..], b"bytes");
    // A path that is not /kv/ and one non-empty segment names no key: a client error.
    for path in ["/kv/", "/kv/a/b", "/other/a"] {
        for r in [
            http.get(leader.url(path)).send().await.unwrap(),
            http.put(leader.url(path)).body("v").send().await.unwrap(),
        ] {
            assert!(r.status().is_client_error(), "{path}: {}", r.status());
        }
    }

    // DELETE, then 404.
    let r = http.delete(leader.url("/kv/alpha")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = http.get(leader.url("/kv/alpha")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // A batch applies in order, all together.
    let batch = json!([
        {"op": "put", "key": "b1", "value": "x"},
        {"op": "put", "key": "b2", "value": "y"},
        {"op": "delete", "key": "b1"},
    ]);
    let r = http
        .post(leader.url("/kv/batch"))
        .body(batch.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = http.get(leader.url("/kv/b1")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = http.get(leader.url("/kv/b2")).send().await.unwrap();
    assert_eq!(&r.bytes().await.unwrap()[..], b"y");

    // Bad input: a clear 400, nothing written.
    for bad in ["{}", "[{\"op\": \"rename\", \"key\": \"k\"}]", "not json"] {
        let r = http
            .post(leader.url("/kv/batch"))
            .body(bad)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
        let body: serde_json::Value = r.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().contains("expected"),
            "{body}"
        );
    }
    let r = http.put(leader.url("/kv/")).body("v").send().await.unwrap();
    assert!(r.status().is_client_error());

    // Cluster calls: a second init conflicts; metrics answer.
    let r = http
        .post(leader.url("/cluster/init"))
        .body(members(&servers).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let m: serde_json::Value = http
        .get(follower.url("/cluster/metrics"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(m["id"].as_u64(), Some(follower.id));
    assert_eq!(m["current_leader"].as_u64(), Some(leader_id));
    let text = http
        .get(leader.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("siftdb_"), "{text}");
}
