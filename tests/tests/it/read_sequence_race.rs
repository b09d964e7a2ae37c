//! A read must never use a sequence number older than what the tree it reads can serve.
//!
//! The race (issue 11): a reader chooses sequence S, then takes its view of the tree. If, in
//! between, another thread overwrites key `k` at S+1, flushes and compacts, garbage collection
//! drops the old version of `k` (no snapshot ≤ S was registered), and the reader — reading the
//! new tree at S — finds neither version: `k` seems absent although it was never deleted.
//!
//! These tests run the overwrite + flush + compaction deterministically inside the gap through
//! the engine's `read:sequence_and_view` and `snapshot:sequence_chosen` pause points.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use siftdb::sync_point::{READ_SEQUENCE_AND_VIEW, SNAPSHOT_SEQUENCE_CHOSEN};
use siftdb::{Db, Options};

/// Pauses the first thread that reaches `point` until the returned [`Window::close`].
struct Window {
    entered: mpsc::Receiver<()>,
    resume: mpsc::Sender<()>,
}

impl Window {
    fn arm(db: &Db, point: &'static str) -> Window {
        let (entered_tx, entered) = mpsc::channel();
        let (resume, resume_rx) = mpsc::channel::<()>();
        let armed = AtomicBool::new(true);
        let entered_tx = Mutex::new(entered_tx);
        let resume_rx = Mutex::new(resume_rx);
        db.set_sync_point(point, move || {
            if armed.swap(false, Ordering::AcqRel) {
                let _ = entered_tx.lock().unwrap().send(());
                let _ = resume_rx.lock().unwrap().recv();
            }
        });
        Window { entered, resume }
    }

    fn wait_entered(&self) {
        self.entered
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the reader never reached the pause point");
    }

    fn close(&self) {
        self.resume.send(()).unwrap();
    }
}

fn open() -> (tempfile::TempDir, Db) {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    // `k`'s first version and a neighbour, in a table: the compaction below merges it with the
    // table holding `k`'s second version and, with no snapshot in the way, drops the first.
    db.put(b"k", b"v1").unwrap();
    db.put(b"other", b"x").unwrap();
    db.flush().unwrap();
    (dir, db)
}

/// Inside the window: overwrite `k`, flush it and compact everything into one level.
fn overwrite_and_compact(db: &Db) {
    db.put(b"k", b"v2").unwrap();
    db.compact_range(None, None).unwrap();
}

#[test]
fn get_racing_overwrite_and_compaction_finds_the_key() {
    let (_dir, db) = open();
    let window = Window::arm(&db, READ_SEQUENCE_AND_VIEW);
    let reader = {
        let db = db.clone();
        thread::spawn(move || db.get(b"k").unwrap())
    };
    window.wait_entered();
    overwrite_and_compact(&db);
    window.close();
    let got = reader.join().unwrap();
    assert!(
        got == Some(b"v1".to_vec()) || got == Some(b"v2".to_vec()),
        "get missed a key that was never deleted: {got:?}"
    );
}

#[test]
fn snapshot_racing_overwrite_and_compaction_keeps_its_version() {
    let (_dir, db) = open();
    let window = Window::arm(&db, SNAPSHOT_SEQUENCE_CHOSEN);
    let reader = {
        let db = db.clone();
        thread::spawn(move || db.snapshot())
    };
    window.wait_entered();
    overwrite_and_compact(&db);
    window.close();
    let snapshot = reader.join().unwrap();
    // The snapshot was taken before `v2` was written: it must see `v1`, for its whole life.
    assert_eq!(snapshot.get(b"k").unwrap(), Some(b"v1".to_vec()));
    db.compact_range(None, None).unwrap();
    assert_eq!(snapshot.get(b"k").unwrap(), Some(b"v1".to_vec()));
    assert_eq!(db.get(b"k").unwrap(), Some(b"v2".to_vec()));
}

#[test]
fn iterator_racing_overwrite_and_compaction_yields_the_key() {
    let (_dir, db) = open();
    let window = Window::arm(&db, READ_SEQUENCE_AND_VIEW);
    let reader = {
        let db = db.clone();
        thread::spawn(move || db.iter().collect::<Result<Vec<_>, _>>().unwrap())
    };
    window.wait_entered();
    overwrite_and_compact(&db);
    window.close();
    let entries = reader.join().unwrap();
    let keys: Vec<&[u8]> = entries.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(
        keys,
        vec![&b"k"[..], b"other"],
        "iteration missed a key: {entries:?}"
    );
}

/// The window does not stall other readers: a second reader passes the point while the first
/// one waits in it (the callback runs without any engine lock held).
#[test]
fn pause_point_holds_no_engine_lock() {
    let (_dir, db) = open();
    let window = Window::arm(&db, READ_SEQUENCE_AND_VIEW);
    let reader = {
        let db = db.clone();
        thread::spawn(move || db.get(b"other").unwrap())
    };
    window.wait_entered();
    let db2 = db.clone();
    let second = Arc::new(Mutex::new(None));
    let second2 = Arc::clone(&second);
    thread::spawn(move || *second2.lock().unwrap() = Some(db2.get(b"k").unwrap()))
        .join()
        .unwrap();
    assert_eq!(*second.lock().unwrap(), Some(Some(b"v1".to_vec())));
    window.close();
    assert_eq!(reader.join().unwrap(), Some(b"x".to_vec()));
}
