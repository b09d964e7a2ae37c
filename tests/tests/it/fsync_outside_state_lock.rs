//! Writers and readers never wait behind a manifest `fsync` or the WAL switch's `fsync`s: the
//! engine does that I/O without holding its state lock (issue 11).
//!
//! A file system wrapper holds the chosen `sync` until the test opens the gate; while it is held,
//! other threads put, get and wait for compaction (which take the state lock). Each of those runs
//! on its own thread and must finish while the `fsync` is still held: a deadline far above any
//! real latency turns the old behaviour (waiting for the gate, forever) into a failure instead
//! of a hung test.

use std::io::{self, Write};
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use siftdb::fs::{FileSystem, RealFs, WritableFile};
use siftdb::{Db, Options};

/// Generous: the calls measured here take microseconds; they only fail to finish if they wait for
/// the held `fsync`.
const DEADLINE: Duration = Duration::from_secs(20);

#[derive(Debug, Default)]
struct Gate {
    /// Which files' syncs are held (a name prefix or suffix test), once armed.
    armed: Option<fn(&str) -> bool>,
    /// A sync is being held.
    entered: bool,
    open: bool,
}

/// Real files; `sync` of the armed kind of file waits at the gate.
#[derive(Debug, Clone, Default)]
struct GateFs {
    gate: Arc<(Mutex<Gate>, Condvar)>,
}

impl GateFs {
    fn arm(&self, which: fn(&str) -> bool) {
        let mut g = self.gate.0.lock().unwrap();
        g.armed = Some(which);
        g.open = false;
        g.entered = false;
    }

    fn wait_entered(&self) {
        let (lock, cv) = &*self.gate;
        let g = lock.lock().unwrap();
        let (g, timeout) = cv.wait_timeout_while(g, DEADLINE, |g| !g.entered).unwrap();
        assert!(
            !timeout.timed_out() && g.entered,
            "no sync reached the gate"
        );
    }

    fn open(&self) {
        let (lock, cv) = &*self.gate;
        let mut g = lock.lock().unwrap();
        g.open = true;
        g.armed = None;
        cv.notify_all();
    }

    fn pass(&self, name: &str) {
        let (lock, cv) = &*self.gate;
        let mut g = lock.lock().unwrap();
        if !g.armed.is_some_and(|which| which(name)) {
            return;
        }
        g.entered = true;
        cv.notify_all();
        let _g = cv.wait_while(g, |g| !g.open).unwrap();
    }
}

#[derive(Debug)]
struct GateFile {
    name: String,
    inner: Box<dyn WritableFile>,
    fs: GateFs,
}

impl Write for GateFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl WritableFile for GateFile {
    fn sync(&mut self) -> io::Result<()> {
        self.fs.pass(&self.name);
        self.inner.sync()
    }
}

impl GateFs {
    /// The real file system whose files pass this gate when synced.
    fn file_system(&self) -> impl FileSystem + use<> {
        let gate = self.clone();
        siftdb_tests::CreateHookFs(move |path: &Path| -> io::Result<Box<dyn WritableFile>> {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(Box::new(GateFile {
                name,
                inner: RealFs.create(path)?,
                fs: gate.clone(),
            }))
        })
    }
}

fn open(fs: &GateFs) -> (tempfile::TempDir, Db) {
    let dir = siftdb_tests::temp_dir();
    let options = Options {
        fs: Arc::new(fs.file_system()),
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).unwrap();
    (dir, db)
}

/// Runs `f` on its own thread; fails the test if it does not finish by the deadline.
fn finishes<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(DEADLINE)
        .unwrap_or_else(|_| panic!("{what} waited for a held fsync"))
}

/// The state lock is free: a put (the write leader makes room under it), a get, a snapshot read
/// and `wait_for_compaction` (which waits on it) all finish.
fn engine_stays_available(db: &Db, key: &'static [u8]) {
    let d = db.clone();
    finishes("put", move || {
        d.put(key, b"written during the fsync").unwrap()
    });
    let d = db.clone();
    let got = finishes("get", move || d.get(key).unwrap());
    assert_eq!(got.as_deref(), Some(&b"written during the fsync"[..]));
    let d = db.clone();
    finishes("snapshot", move || d.snapshot().get(b"a").unwrap());
    let d = db.clone();
    finishes("wait_for_compaction", move || {
        d.wait_for_compaction().unwrap()
    });
}

#[test]
fn manifest_fsync_does_not_hold_up_writers_and_readers() {
    let fs = GateFs::default();
    let (_dir, db) = open(&fs);
    db.put(b"a", b"1").unwrap();
    fs.arm(|name| name.starts_with("MANIFEST"));
    // The flush writes its table, then logs the edit: its manifest sync waits at the gate.
    let flusher = {
        let db = db.clone();
        thread::spawn(move || db.flush())
    };
    fs.wait_entered();
    engine_stays_available(&db, b"b");
    fs.open();
    flusher.join().unwrap().unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.stats().flushes, 1);
}

#[test]
fn wal_switch_fsync_does_not_hold_up_the_state_lock() {
    let fs = GateFs::default();
    let (_dir, db) = open(&fs);
    db.put(b"a", b"1").unwrap();
    fs.arm(|name| name.ends_with(".log"));
    // `flush` switches the memtable: the old WAL's sync waits at the gate. The write path is
    // the switcher's meanwhile (writers queue behind it), but the state lock is free.
    let switcher = {
        let db = db.clone();
        thread::spawn(move || db.flush())
    };
    fs.wait_entered();
    let d = db.clone();
    let got = finishes("get", move || d.get(b"a").unwrap());
    assert_eq!(got, Some(b"1".to_vec()));
    let d = db.clone();
    finishes("wait_for_compaction", move || {
        d.wait_for_compaction().unwrap()
    });
    let d = db.clone();
    finishes("level_info", move || d.level_info().len());
    fs.open();
    switcher.join().unwrap().unwrap();
    db.put(b"b", b"2").unwrap();
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
}
