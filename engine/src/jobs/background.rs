//! Starting the engine's background threads.
//!
//! Every job runs inside `contained`: a panic in it (a user callback's, the file system's) becomes
//! the background error of that job instead of killing the thread, so writers and waiters see an
//! error rather than wait forever. `record_failure` records a job's ordinary failure the same way,
//! except an echo of the background error itself (a job that stopped on it records nothing, or
//! it would bring back an error `Db::resume` cleared). The write path guards the WAL the same way
//! with `StateCell::fail_on_panic`.

use std::sync::Arc;

use crate::base::error::{BackgroundError, BackgroundJob, Error, Result};
use crate::core::shared::Shared;

/// Runs one background job, containing a panic in it (a user callback's, the file system's): it
/// is recorded as the background error of `job` and comes back as that error, so the thread
/// lives on, and every writer and waiter sees the error instead of waiting for a thread that
/// died.
pub(crate) fn contained<T>(
    shared: &Shared,
    job: BackgroundJob,
    run: impl FnOnce() -> Result<T>,
) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(result) => result,
        Err(payload) => {
            let why = BackgroundError::panicked(job, payload.as_ref());
            tracing::error!("siftdb: {job} panicked, writes stopped: {why}");
            shared.state().fail(|| why.clone());
            Err(Error::Background(why))
        }
    }
}

/// Records that `job` failed with `error`: writes stop with it as the background error.
pub(crate) fn record_failure(shared: &Shared, job: BackgroundJob, error: &Error) {
    // A job that stopped on the background error echoes it: nothing new failed. Recording the
    // echo would bring back an error `Db::resume` cleared while the job was winding down.
    if let Error::Background(_) = error {
        tracing::debug!("siftdb: {job} stopped on the background error: {error}");
        return;
    }
    tracing::error!("siftdb: {job} failed, writes stopped: {error}");
    shared.state().fail(|| BackgroundError::of(job, error));
}

/// Spawns a named background thread running `body` on `shared`; the caller keeps the handle
/// (joined at shutdown). If the thread cannot start, writes stop with a background error.
pub(crate) fn spawn(
    shared: &Arc<Shared>,
    name: &str,
    body: impl FnOnce(&Arc<Shared>) + Send + 'static,
) -> Option<std::thread::JoinHandle<()>> {
    let db = Arc::clone(shared);
    match std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || body(&db))
    {
        Ok(handle) => Some(handle),
        Err(e) => {
            shared
                .state()
                .fail(|| BackgroundError::new(BackgroundJob::ThreadStart, &Error::Io(e)));
            None
        }
    }
}
