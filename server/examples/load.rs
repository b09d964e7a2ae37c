//! A client load against a running `siftdb-server` cluster: puts (single, or batches through
//! `/kv/batch`), then linearizable gets of the keys written, from several concurrent clients;
//! prints throughput and latency of each.
//!
//! ```sh
//! cargo run --release -p siftdb-server --example load -- \
//!     --nodes 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 --clients 8 --ops 2000 --batch 1
//! ```
//!
//! With `--spawn DIR`, it starts three `siftdb-server` processes itself (the binary beside this
//! example, built with `cargo build --release -p siftdb-server`), with data in `DIR`, and stops
//! them at the end.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use hdrhistogram::Histogram;
use serde_json::json;

#[derive(Debug, Parser)]
struct Args {
    /// The nodes' addresses, comma-separated (any of them: the load follows redirects).
    #[arg(long, value_delimiter = ',')]
    nodes: Vec<String>,
    /// Start three local nodes with data under this directory instead of `--nodes`.
    #[arg(long)]
    spawn: Option<std::path::PathBuf>,
    /// Concurrent clients.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Requests per client, for puts and again for gets.
    #[arg(long, default_value_t = 1000)]
    ops: usize,
    /// Puts per request: 1 is `PUT /kv/{key}`; more is one `POST /kv/batch`.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Bytes of each value.
    #[arg(long, default_value_t = 100)]
    value_size: usize,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let mut children = Vec::new();
    let nodes = match &args.spawn {
        Some(dir) => spawn_cluster(dir, &mut children).await?,
        None => args.nodes.clone(),
    };
    if nodes.is_empty() {
        return Err("give --nodes or --spawn".into());
    }
    let leader = find_leader(&nodes).await?;
    println!(
        "cluster {nodes:?}, leader {leader}; {} clients x {} requests, {} put(s) per request, {}-byte values",
        args.clients, args.ops, args.batch, args.value_size
    );
    println!(
        "{:<6} {:>8} {:>12} {:>12} {:>9} {:>9}",
        "op", "batch", "requests/s", "keys/s", "p50 ms", "p99 ms"
    );
    let (elapsed, hist) = run_clients(&args, &leader, Phase::Put).await?;
    report("put", args.batch, &args, elapsed, &hist);
    let (elapsed, hist) = run_clients(&args, &leader, Phase::Get).await?;
    report("get", 1, &args, elapsed, &hist);
    for child in &mut children {
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let _ = child.wait();
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Put,
    Get,
}

fn report(op: &str, batch: usize, args: &Args, elapsed: Duration, hist: &Histogram<u64>) {
    let requests = (args.clients * args.ops) as f64 / elapsed.as_secs_f64();
    println!(
        "{op:<6} {batch:>8} {requests:>12.0} {:>12.0} {:>9.2} {:>9.2}",
        requests * batch as f64,
        hist.value_at_quantile(0.5) as f64 / 1000.0,
        hist.value_at_quantile(0.99) as f64 / 1000.0
    );
}

async fn run_clients(
    args: &Args,
    leader: &str,
    phase: Phase,
) -> Result<(Duration, Histogram<u64>), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..args.clients {
        let (leader, ops, batch, size) =
            (leader.to_string(), args.ops, args.batch, args.value_size);
        tasks.push(tokio::spawn(async move {
            client(c, &leader, ops, batch, size, phase).await
        }));
    }
    let mut hist = Histogram::<u64>::new(3)?;
    for t in tasks {
        hist.add(t.await??)?;
    }
    Ok((started.elapsed(), hist))
}

/// One client's requests, their latencies in microseconds.
async fn client(
    c: usize,
    leader: &str,
    ops: usize,
    batch: usize,
    value_size: usize,
    phase: Phase,
) -> Result<Histogram<u64>, String> {
    let http = reqwest::Client::new();
    let mut hist = Histogram::<u64>::new(3).map_err(|e| e.to_string())?;
    let value = "v".repeat(value_size);
    for i in 0..ops {
        let key = |j: usize| format!("c{c:03}-{:08}", i * batch + j);
        let request = match (phase, batch) {
            (Phase::Get, _) => http.get(format!("http://{leader}/kv/{}", key(0))),
            (Phase::Put, 1) => http
                .put(format!("http://{leader}/kv/{}", key(0)))
                .body(value.clone()),
            (Phase::Put, _) => {
                let ops: Vec<_> = (0..batch)
                    .map(|j| json!({"op": "put", "key": key(j), "value": value}))
                    .collect();
                http.post(format!("http://{leader}/kv/batch"))
                    .body(json!(ops).to_string())
            }
        };
        let started = Instant::now();
        let response = request.send().await.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!(
                "{}: {:?}",
                response.status(),
                response.text().await
            ));
        }
        hist.record(started.elapsed().as_micros() as u64)
            .map_err(|e| e.to_string())?;
    }
    Ok(hist)
}

async fn find_leader(nodes: &[String]) -> Result<String, Box<dyn std::error::Error>> {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        for node in nodes {
            let Ok(r) = reqwest::get(format!("http://{node}/cluster/metrics")).await else {
                continue;
            };
            let m: serde_json::Value = r.json().await?;
            if let Some(leader) = m["current_leader"].as_u64() {
                let addr = m["membership_config"]["membership"]["nodes"][leader.to_string()]
                    ["addr"]
                    .as_str()
                    .map(str::to_string);
                if let Some(addr) = addr {
                    return Ok(addr);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err("no leader".into())
}

/// Starts nodes 1..=3 on free loopback ports with data under `dir`, and initializes them.
async fn spawn_cluster(
    dir: &std::path::Path,
    children: &mut Vec<Child>,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let binary = std::env::current_exe()?
        .parent()
        .and_then(|examples| examples.parent())
        .map(|profile| profile.join("siftdb-server"))
        .ok_or("no binary directory")?;
    let mut addrs = Vec::new();
    for id in 1..=3u64 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let addr = format!("127.0.0.1:{port}");
        children.push(
            Command::new(&binary)
                .args(["--id", &id.to_string(), "--addr", &addr])
                .arg("--dir")
                .arg(dir.join(format!("node{id}")))
                .stderr(Stdio::null())
                .spawn()?,
        );
        addrs.push(addr);
    }
    let members: Vec<_> = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| json!({"id": i + 1, "addr": a}))
        .collect();
    let http = reqwest::Client::new();
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let sent = http
            .post(format!("http://{}/cluster/init", addrs[0]))
            .body(json!(members).to_string())
            .send()
            .await;
        if matches!(&sent, Ok(r) if r.status().is_success()) {
            break;
        }
        if Instant::now() > until {
            return Err("the nodes did not start".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(addrs)
}
