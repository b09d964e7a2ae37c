//! Holding a pause point (`Db::set_sync_point`) open: the first thread to reach it signals the
//! test and waits there until the test closes the window.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use siftdb::Db;

/// How long a step may take before the test calls it hung (a deadlock fails the test instead of
/// hanging it; nothing is measured against it).
pub const HANG: Duration = Duration::from_secs(60);

/// Pauses the first thread that reaches a point until [`Window::close`] (or the window drops).
pub struct Window {
    entered: mpsc::Receiver<()>,
    resume: Option<mpsc::Sender<()>>,
}

impl Window {
    /// Arms `point` on `db`: the next thread to reach it stops there; later ones pass.
    pub fn arm(db: &Db, point: &'static str) -> Window {
        let (entered_tx, entered) = mpsc::channel();
        let (resume, resume_rx) = mpsc::channel::<()>();
        let armed = AtomicBool::new(true);
        let entered_tx = Mutex::new(entered_tx);
        let resume_rx = Mutex::new(resume_rx);
        db.set_sync_point(point, move || {
            if armed.swap(false, Ordering::AcqRel) {
                let _ = entered_tx.lock().map(|tx| tx.send(()));
                let _ = resume_rx.lock().map(|rx| rx.recv());
            }
        });
        Window {
            entered,
            resume: Some(resume),
        }
    }

    /// Waits until a thread is held at the point (panics, naming `what`, if none comes).
    pub fn wait_entered(&self, what: &str) {
        if self.entered.recv_timeout(HANG).is_err() {
            panic!("{what} never reached its pause point");
        }
    }

    /// Lets the held thread go on.
    pub fn close(&mut self) {
        if let Some(resume) = self.resume.take() {
            let _ = resume.send(());
        }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // A failing test must not leave a thread held forever.
        self.close();
    }
}

/// Runs `f` on its own thread while a window is held: it must return (a call blocked by what the
/// held thread holds fails the test, named `what`, after [`HANG`]).
pub fn must_finish<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    match crate::within(HANG, what, f) {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Waits, yielding, until `done` holds (a state another thread is about to reach); panics,
/// naming `what`, if it never does.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < HANG, "{what}: never happened");
        std::thread::sleep(Duration::from_millis(1));
    }
}
