//! How long a follower takes to install a snapshot of `--keys` keys (16-byte keys, 100-byte
//! values, all alike or, with `--random_values 1`, random hex digits: half-compressible): a
//! leader applies them, builds its snapshot file, and a second store installs that
//! file through openraft's `install_snapshot`, three times (the median printed). The install
//! is what a node that fell behind pays before it can apply again.
//!
//! ```text
//! cargo bench -p siftdb-raft --bench snapshot_install [-- --keys 1000000 --rounds 3 --random_values 1]
//! ```

mod args;
use args::arg;
use std::time::{Duration, Instant};

use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine};
use openraft::{EntryPayload, LogId};
use siftdb_raft::{Command, TypeConfig};

type Entry = openraft::Entry<TypeConfig>;

fn log_id(index: u64) -> LogId<u64> {
    LogId::new(openraft::CommittedLeaderId::new(1, 1), index)
}

fn main() {
    let keys: u64 = arg("--keys", 1_000_000);
    let rounds: u64 = arg("--rounds", 3);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let leader = tempfile::tempdir().expect("tempdir");
    let random = arg::<u32>("--random_values", 0) == 1;
    let value_of = |k: u64| -> String {
        if !random {
            return "v".repeat(100);
        }
        // xorshift from the key: deterministic, different per key.
        let mut x = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..100)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from_digit((x % 16) as u32, 16).unwrap_or('0')
            })
            .collect()
    };
    let snapshot = runtime.block_on(async {
        let (_log, mut sm) =
            siftdb_raft::open(leader.path(), siftdb::Options::default()).expect("open leader");
        let per_entry = 1000;
        let entries = keys.div_ceil(per_entry);
        let batch = (0..entries).map(|e| {
            let puts = (e * per_entry..((e + 1) * per_entry).min(keys))
                .map(|k| Command::put(format!("key{k:013}"), value_of(k)))
                .collect();
            Entry {
                log_id: log_id(e + 1),
                payload: EntryPayload::Normal(Command::Batch(puts)),
            }
        });
        sm.apply(batch).await.expect("apply");
        sm.get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .expect("snapshot")
    });
    let file = leader.path().join("snapshot").join("current.snap");
    let bytes = std::fs::metadata(&file).map_or(0, |m| m.len());
    let mut times: Vec<Duration> = Vec::new();
    for _ in 0..rounds {
        let follower = tempfile::tempdir().expect("tempdir");
        let took = runtime.block_on(async {
            let (_log, mut sm) = siftdb_raft::open(follower.path(), siftdb::Options::default())
                .expect("open follower");
            let data = Box::new(tokio::fs::File::open(&file).await.expect("snapshot file"));
            let start = Instant::now();
            sm.install_snapshot(&snapshot.meta, data)
                .await
                .expect("install");
            let took = start.elapsed();
            assert_eq!(
                sm.reader()
                    .get(format!("key{:013}", keys - 1).as_bytes())
                    .expect("get"),
                Some(value_of(keys - 1).into_bytes())
            );
            took
        });
        times.push(took);
    }
    times.sort();
    let median = times[times.len() / 2];
    println!(
        "snapshot install: {keys} keys ({:.1} MiB file), median of {rounds}: {:.3} s ({:.0} keys/s)",
        bytes as f64 / 1048576.0,
        median.as_secs_f64(),
        keys as f64 / median.as_secs_f64()
    );
}
