//! Starting the engine's background threads.

use std::sync::Arc;

use crate::base::error::{BackgroundError, BackgroundJob, Error};
use crate::core::shared::Shared;

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
