//! Real `siftdb-server` processes on loopback, and a client that follows the leader.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Raft timing for loopback tests: quick elections; a snapshot every 200 entries keeping 50,
/// so a node that joins late is seeded by a snapshot.
pub const TEST_CONFIG: &str = "[raft]
heartbeat_interval_ms = 50
election_timeout_min_ms = 300
election_timeout_max_ms = 600
snapshot_every = 200
keep_logs = 50
snapshot_chunk_bytes = 65536
";

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// One server process.
pub struct Server {
    pub id: u64,
    pub addr: String,
    pub dir: PathBuf,
    child: Option<Child>,
    log: PathBuf,
}

impl Server {
    /// Starts node `id` on `addr` with data in `dir` (logs in `dir`'s parent).
    pub fn start(id: u64, addr: &str, dir: &Path) -> Server {
        let root = dir.parent().unwrap();
        let config = root.join("node.toml");
        std::fs::write(&config, TEST_CONFIG).unwrap();
        let log = root.join(format!("node{id}.log"));
        let mut server = Server {
            id,
            addr: addr.to_string(),
            dir: dir.to_path_buf(),
            child: None,
            log,
        };
        server.restart();
        server
    }

    /// Starts the process again (after a kill), on the same address and directory.
    pub fn restart(&mut self) {
        let config = self.dir.parent().unwrap().join("node.toml");
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_siftdb-server"))
            .args(["--id", &self.id.to_string(), "--addr", &self.addr])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--config")
            .arg(&config)
            .env("RUST_LOG", "siftdb_server=info,openraft=error")
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// SIGKILL: no shutdown, no flush.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    /// SIGTERM, then the exit status (true: it exited 0).
    pub fn terminate(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return true;
        };
        let pid = child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.success();
            }
            if Instant::now() > deadline {
                child.kill().unwrap();
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's log so far (for a failure's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A client of the cluster: tries the nodes it knows, follows 307s to the leader, and retries
/// until its deadline.
pub struct Client {
    http: reqwest::Client,
    pub addrs: Vec<String>,
}

/// What a write's answer said.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// 200: committed.
    Ok,
    /// No answer before the deadline, or a 504: it may or may not be committed.
    Unknown,
}

impl Client {
    pub fn new(addrs: Vec<String>) -> Client {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(6))
            .build()
            .unwrap();
        Client { http, addrs }
    }

    /// Sends `method path body` until a node answers other than with a redirect, a 503 or a
    /// connection failure, or `deadline` passes (then `None`).
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Vec<u8>,
        deadline: Duration,
    ) -> Option<reqwest::Response> {
        let until = Instant::now() + deadline;
        let mut target = self.addrs[0].clone();
        let mut next = 0;
        while Instant::now() < until {
            let sent = self
                .http
                .request(method.clone(), format!("http://{target}{path}"))
                .body(body.clone())
                .send()
                .await;
            match sent {
                Ok(r) if r.status() == reqwest::StatusCode::TEMPORARY_REDIRECT => {
                    let location = r.headers()[reqwest::header::LOCATION].to_str().unwrap();
                    let url = reqwest::Url::parse(location).unwrap();
                    target = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
                    continue;
                }
                Ok(r) if r.status() != reqwest::StatusCode::SERVICE_UNAVAILABLE => return Some(r),
                _ => {}
            }
            next += 1;
            target = self.addrs[next % self.addrs.len()].clone();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    pub async fn put(&self, key: &str, value: &str, deadline: Duration) -> Outcome {
        match self
            .send(
                reqwest::Method::PUT,
                &format!("/kv/{key}"),
                value.as_bytes().to_vec(),
                deadline,
            )
            .await
        {
            Some(r) if r.status().is_success() => Outcome::Ok,
            Some(r) if r.status() == reqwest::StatusCode::GATEWAY_TIMEOUT => Outcome::Unknown,
            Some(r) => panic!("put {key}: {}: {:?}", r.status(), r.text().await),
            None => Outcome::Unknown,
        }
    }

    /// A linearizable read, through the leader.
    pub async fn get(&self, key: &str, deadline: Duration) -> Option<Option<Vec<u8>>> {
        let r = self
            .send(
                reqwest::Method::GET,
                &format!("/kv/{key}"),
                Vec::new(),
                deadline,
            )
            .await?;
        match r.status() {
            reqwest::StatusCode::OK => Some(Some(r.bytes().await.unwrap().to_vec())),
            reqwest::StatusCode::NOT_FOUND => Some(None),
            reqwest::StatusCode::GATEWAY_TIMEOUT => None,
            s => panic!("get {key}: {s}: {:?}", r.text().await),
        }
    }

    /// `POST path` with a JSON body to the leader.
    pub async fn post_json(
        &self,
        path: &str,
        body: &Value,
        deadline: Duration,
    ) -> reqwest::Response {
        self.send(
            reqwest::Method::POST,
            path,
            serde_json::to_vec(body).unwrap(),
            deadline,
        )
        .await
        .unwrap_or_else(|| panic!("POST {path}: no answer"))
    }
}

/// openraft's metrics of the node at `addr` (`None` while it does not answer).
pub async fn metrics(addr: &str) -> Option<Value> {
    let r = reqwest::get(format!("http://{addr}/cluster/metrics"))
        .await
        .ok()?;
    r.json().await.ok()
}

/// Waits until every node of `addrs` answers its metrics.
pub async fn wait_serving(addrs: &[String], within: Duration) {
    let until = Instant::now() + within;
    for addr in addrs {
        while metrics(addr).await.is_none() {
            assert!(Instant::now() < until, "{addr} does not serve");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The leader every node of `addrs` that answers agrees on, once they do.
pub async fn wait_leader(addrs: &[String], within: Duration) -> u64 {
    let until = Instant::now() + within;
    loop {
        let mut seen = Vec::new();
        for addr in addrs {
            if let Some(m) = metrics(addr).await {
                seen.push(m["current_leader"].as_u64());
            }
        }
        if let Some(Some(leader)) = seen.first()
            && seen.iter().all(|l| *l == Some(*leader))
        {
            return *leader;
        }
        assert!(Instant::now() < until, "no leader agreed on: {seen:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The index of the last entry the node at `addr` applied.
pub async fn last_applied(addr: &str) -> Option<u64> {
    metrics(addr).await?["last_applied"]["index"].as_u64()
}

/// Members as `/cluster/init` takes them.
pub fn members(servers: &BTreeMap<u64, Server>) -> Value {
    Value::Array(
        servers
            .values()
            .map(|s| json!({ "id": s.id, "addr": s.addr }))
            .collect(),
    )
}

/// Three nodes (ids 1 to 3) on free loopback ports with data under `root`, made one cluster
/// through node `init_via`; returns them once they agree on a leader.
pub async fn start_cluster(root: &Path, init_via: u64) -> BTreeMap<u64, Server> {
    let servers: BTreeMap<u64, Server> = (1..=3)
        .map(|id| {
            let addr = format!("127.0.0.1:{}", free_port());
            (
                id,
                Server::start(id, &addr, &root.join(format!("node{id}"))),
            )
        })
        .collect();
    let addrs: Vec<String> = servers.values().map(|s| s.addr.clone()).collect();
    wait_serving(&addrs, Duration::from_secs(30)).await;
    let r = Client::new(vec![servers[&init_via].addr.clone()])
        .post_json("/cluster/init", &members(&servers), Duration::from_secs(10))
        .await;
    assert!(r.status().is_success(), "init: {:?}", r.text().await);
    wait_leader(&addrs, Duration::from_secs(20)).await;
    servers
}

/// Makes `voters` the cluster's voting members (through the leader); `what` names the change
/// in a failure.
pub async fn change_membership(client: &Client, voters: &[u64], what: &str) {
    let r = client
        .post_json(
            "/cluster/change-membership",
            &json!(voters),
            Duration::from_secs(20),
        )
        .await;
    assert!(r.status().is_success(), "{what}: {:?}", r.text().await);
}
