//! A replicated key-value service: three siftdb-backed Raft nodes in one process, and a small
//! command-line client reading commands from stdin.
//!
//! ```text
//! cargo run --release -p siftdb-raft --example kv_cluster            # data in a temp dir
//! cargo run --release -p siftdb-raft --example kv_cluster -- --dir /tmp/kv   # kept
//! ```
//!
//! Commands (one per line): `put KEY VALUE`, `get KEY` (from every node), `del KEY`,
//! `fill N` (N puts), `stop ID`, `start ID`, `status`, `quit`.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use siftdb_raft::cluster::{self, local_config};
use siftdb_raft::network::Router;
use siftdb_raft::{Command, NodeId, StateReader, TypeConfig};

#[derive(Parser)]
#[command(about = "Three siftdb-backed Raft nodes in one process, driven from stdin")]
struct Args {
    /// Where the nodes keep their data (`node-1`, `node-2`, `node-3` under it); a temporary
    /// directory, removed at exit, if not given.
    #[arg(long)]
    dir: Option<PathBuf>,
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const TIMEOUT: Duration = Duration::from_secs(10);

struct Cluster {
    router: Router<TypeConfig>,
    root: PathBuf,
    readers: BTreeMap<NodeId, StateReader>,
}

impl Cluster {
    async fn start(&mut self, id: NodeId) -> Result<()> {
        let dir = self.root.join(format!("node-{id}"));
        let deadline = Instant::now() + TIMEOUT;
        // A stopped node's database closes once its last task has let go of it.
        let (log, sm) = loop {
            match siftdb_raft::open(&dir, siftdb::Options::default()) {
                Ok(store) => break store,
                Err(e) if Instant::now() > deadline => return Err(e.into()),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        self.readers.insert(id, sm.reader());
        cluster::start_node(&self.router, id, local_config(5000, 1000)?, log, sm).await?;
        Ok(())
    }

    async fn stop(&mut self, id: NodeId) -> Result<()> {
        self.readers.remove(&id);
        Ok(cluster::stop_node(&self.router, id).await?)
    }

    async fn write(&self, command: Command) -> Result<()> {
        let started = Instant::now();
        let response = cluster::write(&self.router, command, TIMEOUT).await?;
        let leader = cluster::leader(&self.router).map(|(id, _)| id);
        println!(
            "ok: {} op(s) committed by leader {leader:?} in {:?}",
            response.ops,
            started.elapsed()
        );
        Ok(())
    }

    fn status(&self) {
        for id in self.router.ids() {
            if let Some(raft) = self.router.get(&id) {
                let m = raft.metrics().borrow().clone();
                println!(
                    "node {id}: {:?}, term {}, leader {:?}, last log {:?}, applied {:?}, snapshot {:?}",
                    m.state, m.current_term, m.current_leader, m.last_log_index,
                    m.last_applied.map(|l| l.index), m.snapshot.map(|l| l.index)
                );
            }
        }
    }

    async fn run(&mut self, line: &str) -> Result<bool> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["put", key, value] => self.write(Command::put(*key, *value)).await?,
            ["del", key] => self.write(Command::delete(*key)).await?,
            ["fill", n] => {
                let n: u32 = n.parse()?;
                let puts = (0..n).map(|i| Command::put(format!("fill{i:08}"), format!("v{i}")));
                self.write(Command::Batch(puts.collect())).await?;
            }
            ["get", key] => {
                for (id, reader) in &self.readers {
                    let value = reader.get(key.as_bytes())?;
                    println!(
                        "node {id}: {:?}",
                        value.map(|v| String::from_utf8_lossy(&v).into_owned())
                    );
                }
            }
            ["stop", id] => self.stop(id.parse()?).await?,
            ["start", id] => self.start(id.parse()?).await?,
            ["status"] => self.status(),
            ["quit"] | ["exit"] => return Ok(false),
            [] => {}
            _ => println!(
                "commands: put K V | get K | del K | fill N | stop ID | start ID | status | quit"
            ),
        }
        Ok(true)
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let args = Args::parse();
    let temp = tempfile::tempdir()?;
    let root = args.dir.unwrap_or_else(|| temp.path().to_path_buf());
    let mut cluster = Cluster {
        router: Router::new(),
        root,
        readers: BTreeMap::new(),
    };
    for id in 1..=3 {
        cluster.start(id).await?;
    }
    // A fresh cluster is initialized once; a restarted one already knows its members.
    let fresh = cluster
        .readers
        .values()
        .all(|r| r.last_applied().ok().flatten().is_none());
    if fresh {
        cluster::initialize(&cluster.router, &[1, 2, 3]).await?;
    }
    println!(
        "three nodes up in {}; type `status`, `put k v`, `get k`, `stop 1`…",
        cluster.root.display()
    );
    for line in std::io::stdin().lock().lines() {
        match cluster.run(line?.trim()).await {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => println!("error: {e}"),
        }
    }
    for id in cluster.router.ids() {
        cluster.stop(id).await?;
    }
    Ok(())
}
