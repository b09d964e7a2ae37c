//! A node's storage SIGKILLed while appending: a child process appends log entries (batches of
//! 1 to 8) and applies them, raises its vote now and then, and builds a snapshot and purges
//! the entries it covers (as openraft does), reporting each acknowledgement on stdout; the
//! parent kills it at a random moment and reopens the store. The log must hold every
//! acknowledged entry, unchanged, with no hole after the purged ones (a prefix of what was
//! appended), the vote must never be older than the last one acknowledged, and the state
//! machine must hold exactly the entries up to its applied id, never past the log's end.
//! `SIFTDB_RAFT_CRASH_CYCLES` sets the number of cycles (default 12).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::{CommittedLeaderId, EntryPayload, LogId, RaftLogReader, RaftSnapshotBuilder, Vote};
use siftdb_raft::{LogStore, StateMachine, TypeConfig};

const CHILD_ENV: &str = "SIFTDB_RAFT_CRASH_CHILD_DIR";
const NODE: u64 = 1;

type Entry = openraft::Entry<TypeConfig>;

fn command(index: u64) -> siftdb_raft::Command {
    siftdb_raft::Command::put(format!("k{index}"), format!("value of entry {index}"))
}

fn entry(term: u64, index: u64) -> Entry {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(term, NODE), index),
        payload: EntryPayload::Normal(command(index)),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// The child: not a test of its own; does nothing unless started by the parent.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    runtime().block_on(async move {
        let (mut log, mut sm) = siftdb_raft::open(&dir, siftdb::Options::default()).unwrap();
        let state = log.get_log_state().await.unwrap();
        let mut next = state.last_log_id.map_or(1, |l| l.index + 1);
        // Re-apply what the last run appended but did not apply (openraft does the same).
        let applied = sm.applied_state().await.unwrap().0.map_or(0, |id| id.index);
        let missing = log.try_get_log_entries(applied + 1..next).await.unwrap();
        sm.apply(missing).await.unwrap();
        let mut term = log
            .read_vote()
            .await
            .unwrap()
            .map_or(1, |v| v.leader_id.term);
        let mut out = std::io::stdout().lock();
        let mut round = 0u64;
        loop {
            round += 1;
            if round.is_multiple_of(7) {
                term += 1;
                log.save_vote(&Vote::new(term, NODE)).await.unwrap();
                let _ = writeln!(out, "vote {term}");
            }
            let n = 1 + round % 8;
            let batch: Vec<Entry> = (next..next + n).map(|i| entry(term, i)).collect();
            log.blocking_append(batch.clone()).await.unwrap();
            next += n;
            let _ = writeln!(out, "ack {}", next - 1);
            sm.apply(batch).await.unwrap();
            if round.is_multiple_of(50) && next > 200 {
                // Purged entries are always covered by a snapshot.
                sm.get_snapshot_builder()
                    .await
                    .build_snapshot()
                    .await
                    .unwrap();
                let upto = next - 150;
                let id = log.try_get_log_entries(upto..=upto).await.unwrap()[0].log_id;
                log.purge(id).await.unwrap();
            }
            let _ = out.flush();
        }
    });
}

/// What the parent saw the child acknowledge.
#[derive(Default)]
struct Acked {
    index: u64,
    term: u64,
}

fn run_child(exe: &std::path::Path, dir: &std::path::Path, millis: u64) -> Acked {
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "crash_kill_append::crash_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut acked = Acked::default();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(n) = line.strip_prefix("ack ").and_then(|s| s.parse().ok()) {
                acked.index = n;
            } else if let Some(t) = line.strip_prefix("vote ").and_then(|s| s.parse().ok()) {
                acked.term = t;
            }
        }
        acked
    });
    std::thread::sleep(Duration::from_millis(millis));
    child.kill().unwrap(); // SIGKILL
    let _ = child.wait();
    reader.join().unwrap()
}

async fn check(log: &mut LogStore, acked: &Acked, cycle: usize) -> u64 {
    let state = log.get_log_state().await.unwrap();
    let last = state.last_log_id.map_or(0, |l| l.index);
    assert!(
        last >= acked.index,
        "cycle {cycle}: acknowledged up to {}, log ends at {last}",
        acked.index
    );
    let first = state.last_purged_log_id.map_or(1, |p| p.index + 1);
    let entries = log.try_get_log_entries(first..=last).await.unwrap();
    assert_eq!(
        entries.len() as u64,
        last + 1 - first,
        "cycle {cycle}: a hole in the log"
    );
    let mut term = 0;
    for (i, e) in (first..).zip(&entries) {
        assert_eq!(e.log_id.index, i, "cycle {cycle}");
        assert!(
            e.log_id.leader_id.term >= term,
            "cycle {cycle}: terms go back at {i}"
        );
        term = e.log_id.leader_id.term;
        assert!(
            matches!(&e.payload, EntryPayload::Normal(c) if *c == command(i)),
            "cycle {cycle}: entry {i} changed"
        );
    }
    let vote = log.read_vote().await.unwrap();
    let vote_term = vote.map_or(0, |v| v.leader_id.term);
    assert!(
        vote_term >= acked.term,
        "cycle {cycle}: vote {vote_term} older than the acknowledged {}",
        acked.term
    );
    last
}

/// The state machine holds exactly the puts of entries 1 to its applied id, and that id is in
/// the log (at most `last`).
async fn check_state(sm: &mut StateMachine, last: u64, cycle: usize) {
    let applied = sm.applied_state().await.unwrap().0.map_or(0, |id| id.index);
    assert!(
        applied <= last,
        "cycle {cycle}: applied {applied} past the log's end {last}"
    );
    let pairs = sm.reader().entries().unwrap();
    assert_eq!(
        pairs.len() as u64,
        applied,
        "cycle {cycle}: state of {} keys at applied {applied}",
        pairs.len()
    );
    for i in [1, applied] {
        if let (true, siftdb_raft::Command::Put { key, value }) = (i > 0, command(i)) {
            let got = sm.reader().get(&key).unwrap();
            if got.as_ref() != Some(&value) {
                // Say everything a rare failure needs (it was seen once under load): what the
                // scan holds for the key, and what a second get says.
                let scanned = pairs.iter().find(|kv| kv.0 == key).map(|kv| kv.1.clone());
                let again = sm.reader().get(&key).unwrap();
                panic!(
                    "cycle {cycle}: get(k{i}) = {got:?}, scan = {scanned:?}, get again = {again:?}, applied {applied}, stats {:?}",
                    sm.reader().db().stats()
                );
            }
        }
    }
}

#[test]
fn kill_nine_while_appending_keeps_every_acknowledged_entry_and_vote() {
    let cycles: usize = std::env::var("SIFTDB_RAFT_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let rt = runtime();
    let mut total = Acked::default();
    for cycle in 0..cycles {
        let millis = 40 + (cycle as u64 * 37) % 160;
        let mut acked = run_child(&exe, dir.path(), millis);
        acked.term = acked.term.max(total.term); // a vote acknowledged in an earlier cycle
        let last = rt.block_on(async {
            let (mut log, mut sm) =
                siftdb_raft::open(dir.path(), siftdb::Options::default()).unwrap();
            let last = check(&mut log, &acked, cycle).await;
            check_state(&mut sm, last, cycle).await;
            last
        });
        total.index = last;
        total.term = total.term.max(acked.term);
    }
    assert!(total.index > 0, "the child never acknowledged an append");
    println!(
        "raft kill cycles: {cycles}, entries: {}, terms: {}, lost: 0, holes: 0",
        total.index, total.term
    );
}
