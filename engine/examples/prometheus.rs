//! siftdb's statistics served to Prometheus (cargo feature `metrics`).
//!
//! ```text
//! cargo run -p siftdb --features metrics --example prometheus -- [ADDR] [DB_DIR]
//! curl -s http://127.0.0.1:9000/metrics | grep siftdb_filter_useful_total
//! ```
//!
//! Installs `metrics-exporter-prometheus` with its HTTP listener on `ADDR` (default
//! `127.0.0.1:9000`, or `SIFTDB_METRICS_ADDR`), opens the database in `DB_DIR` (default: a
//! temporary directory), runs a small workload in two keyspaces — writes flushed into L0 over
//! tables compacted to a deeper level, lookups of present and missing keys, seeks — publishes
//! the figures and serves them until killed; the database's publisher thread refreshes them
//! every second (`Options::metrics_interval`). `docs/METRICS.md` lists every metric.

use std::error::Error;
use std::net::SocketAddr;
use std::path::Path;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use siftdb::{Db, Keyspace, Options};

/// The keyspaces the workload writes: `Db`'s own (`"default"`) and one more.
pub const KEYSPACES: [&str; 2] = ["default", "users"];

/// Keys per batch of the workload (even numbers: the odd ones between them are the lookups
/// that miss, inside every table's key range so that its filter is asked).
pub const KEYS: u32 = 2_000;

/// Latency histogram buckets, in seconds (1 µs to 100 ms).
const BUCKETS: &[f64] = &[
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 0.1,
];

/// Installs the Prometheus recorder with its HTTP listener on `addr` (once per process), opens
/// the database in `dir`, runs the workload and publishes its figures. The listener serves
/// `GET /metrics` on a thread of its own from then on; the database keeps publishing while the
/// returned handle lives.
pub fn serve(addr: SocketAddr, dir: &Path) -> Result<Db, Box<dyn Error>> {
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(Matcher::Suffix("_seconds".to_string()), BUCKETS)?
        .install()?;
    let options = Options {
        write_buffer_size: 256 << 10,
        // No filter index: every lookup of a missing key reaches the per-level filters this
        // example shows (with one, the index rules most of them out first).
        filter_index_bits_per_key: 0.0,
        ..Options::default()
    };
    let db = Db::open(dir, options)?;
    for name in KEYSPACES {
        workload(&db.keyspace(name)?)?;
    }
    db.publish_metrics();
    Ok(db)
}

/// The key of number `i`.
pub fn key(i: u32) -> String {
    format!("key{i:08}")
}

/// Even keys compacted to a deeper level, more even keys flushed to L0 over them, lookups of
/// every present key and of as many missing ones, and seeks.
fn workload(ks: &Keyspace) -> Result<(), Box<dyn Error>> {
    let value = vec![b'v'; 100];
    for i in (0..2 * KEYS).step_by(2) {
        ks.put(key(i), &value)?;
    }
    ks.compact_range(None, None)?; // out of L0
    for i in (2 * KEYS..4 * KEYS).step_by(2) {
        ks.put(key(i), &value)?;
    }
    ks.put(key(0), b"new")?; // L0's range spans the deeper tables' keys too
    ks.flush()?; // into L0
    for i in 0..4 * KEYS {
        let found = ks.get(key(i))?.is_some();
        if found != (i % 2 == 0) {
            return Err(format!("{}: key {i} found: {found}", ks.name()).into());
        }
    }
    let mut it = ks.raw_iter();
    for i in (0..4 * KEYS).step_by(16) {
        it.seek(key(i).as_bytes());
        it.status()?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = match args.next() {
        Some(addr) => addr.parse()?,
        None => std::env::var("SIFTDB_METRICS_ADDR")
            .unwrap_or_else(|_| "127.0.0.1:9000".to_string())
            .parse()?,
    };
    let temp;
    let dir = match args.next() {
        Some(dir) => std::path::PathBuf::from(dir),
        None => {
            temp = tempfile::tempdir()?;
            temp.path().to_path_buf()
        }
    };
    let _db = serve(addr, &dir)?;
    println!("serving siftdb's metrics on http://{addr}/metrics (Ctrl-C to stop)");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}
