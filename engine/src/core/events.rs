//! Delivering events to the listeners of `Options::listeners`: the engine's threads hand each
//! event to a queue (a channel send, nothing more, so that it may happen under the state lock
//! and on the write path), and one thread of its own, `siftdb-events`, calls the listeners in
//! order, each call contained (a panicking listener is logged and counted, and the thread goes
//! on).

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use crate::base::event_listener::{
    BackgroundErrorInfo, CompactionJobInfo, EventListener, FlushJobInfo, MemTableInfo,
    TableFileCreationInfo, TableFileDeletionInfo, TableFileInfo, WriteStallInfo,
};

/// One event, as queued for the listeners.
#[derive(Debug)]
pub(crate) enum Event {
    FlushBegin(FlushJobInfo),
    FlushCompleted(FlushJobInfo),
    CompactionBegin(CompactionJobInfo),
    CompactionCompleted(CompactionJobInfo),
    TableFileCreated(TableFileCreationInfo),
    TableFileDeleted(TableFileDeletionInfo),
    BackgroundError(BackgroundErrorInfo),
    StallConditionsChanged(WriteStallInfo),
    MemtableSealed(MemTableInfo),
}

impl Event {
    /// Calls the method of `listener` this event is for.
    fn deliver(&self, listener: &dyn EventListener) {
        match self {
            Event::FlushBegin(i) => listener.on_flush_begin(i),
            Event::FlushCompleted(i) => listener.on_flush_completed(i),
            Event::CompactionBegin(i) => listener.on_compaction_begin(i),
            Event::CompactionCompleted(i) => listener.on_compaction_completed(i),
            Event::TableFileCreated(i) => listener.on_table_file_created(i),
            Event::TableFileDeleted(i) => listener.on_table_file_deleted(i),
            Event::BackgroundError(i) => listener.on_background_error(i),
            Event::StallConditionsChanged(i) => listener.on_stall_conditions_changed(i),
            Event::MemtableSealed(i) => listener.on_memtable_sealed(i),
        }
    }
}

/// The engine's side of the listeners: cheap to clone (every clone queues to the same thread),
/// and free when there are none (an event is not even built).
#[derive(Clone, Default)]
pub(crate) struct Events {
    queue: Option<Arc<Queue>>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("listening", &self.queue.is_some())
            .finish_non_exhaustive()
    }
}

/// The queue to the delivering thread and what it counts.
struct Queue {
    sender: Mutex<Option<Sender<Event>>>,
    /// Numbers for flush and compaction jobs (`job_id`).
    job_ids: AtomicU64,
    /// Listener calls that panicked.
    panics: Arc<AtomicU64>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Events {
    /// Starts the delivering thread for `listeners` (none: nothing to start).
    pub(crate) fn start(listeners: &[Arc<dyn EventListener>]) -> std::io::Result<Events> {
        if listeners.is_empty() {
            return Ok(Events::default());
        }
        let (sender, receiver) = channel();
        let queue = Arc::new(Queue {
            sender: Mutex::new(Some(sender)),
            job_ids: AtomicU64::new(1),
            panics: Arc::new(AtomicU64::new(0)),
            thread: Mutex::new(None),
        });
        let listeners = listeners.to_vec();
        // The thread holds the queue weakly: dropping the last `Events` ends it.
        let weak = Arc::downgrade(&queue);
        let handle = std::thread::Builder::new()
            .name("siftdb-events".to_string())
            .spawn(move || deliver_all(&receiver, &listeners, &weak))?;
        *queue.thread.lock() = Some(handle);
        Ok(Events { queue: Some(queue) })
    }

    /// Whether any listener is registered.
    pub(crate) fn listening(&self) -> bool {
        self.queue.is_some()
    }

    /// Queues the event `make` builds, if anyone listens. Never blocks on a listener.
    pub(crate) fn emit(&self, make: impl FnOnce() -> Event) {
        let Some(queue) = &self.queue else {
            return;
        };
        let sender = queue.sender.lock();
        if let Some(sender) = sender.as_ref() {
            // An error: the thread is gone (it stopped), nobody would deliver the event.
            let _ = sender.send(make());
        }
    }

    /// A number for a new flush or compaction job (0 when nobody listens).
    pub(crate) fn next_job_id(&self) -> u64 {
        self.queue
            .as_ref()
            .map_or(0, |q| q.job_ids.fetch_add(1, Ordering::Relaxed))
    }

    /// Listener calls that panicked so far.
    pub(crate) fn panics(&self) -> u64 {
        self.queue
            .as_ref()
            .map_or(0, |q| q.panics.load(Ordering::Relaxed))
    }

    /// Delivers what is queued and stops the thread (at close). Later events are dropped.
    pub(crate) fn stop(&self) {
        let Some(queue) = &self.queue else {
            return;
        };
        queue.sender.lock().take();
        let thread = queue.thread.lock().take();
        if let Some(thread) = thread
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        self.sender.get_mut().take();
    }
}

/// The delivering thread: each event to each listener, in order, panics contained.
fn deliver_all(
    receiver: &Receiver<Event>,
    listeners: &[Arc<dyn EventListener>],
    queue: &std::sync::Weak<Queue>,
) {
    while let Ok(event) = receiver.recv() {
        for listener in listeners {
            let call = || event.deliver(listener.as_ref());
            if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)) {
                let what = crate::base::error::panic_message(payload.as_ref());
                tracing::error!("siftdb: an event listener panicked on {event:?}: {what}");
                if let Some(q) = queue.upgrade() {
                    q.panics.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// How an event names the table `meta` describes, in `level` of the database in `dir`.
pub(crate) fn table_info(
    dir: &std::path::Path,
    level: usize,
    meta: &crate::base::version_edit::FileMeta,
) -> TableFileInfo {
    TableFileInfo {
        number: meta.number,
        path: crate::base::fs::names::table(dir, meta.number),
        level,
        size: meta.file_size,
        entries: meta.entries,
    }
}
