//! `DB::destroy`: removing a database's directory, never one a database has open.

use std::path::Path;

use crate::{Error, ErrorKind};

/// Removes the database at `path` (nothing there: done). Refused while the directory's `LOCK`
/// is held, by this process or another.
pub(crate) fn destroy(path: &Path) -> Result<(), Error> {
    if !path.exists() {
        return Ok(());
    }
    let lock_path = path.join("LOCK");
    if lock_path.exists() {
        let io = |e: std::io::Error| {
            Error::with_kind(ErrorKind::IOError, format!("{}: {e}", lock_path.display()))
        };
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&lock_path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::with_kind(
                    ErrorKind::IOError,
                    format!(
                        "lock hold by current process, acquire time 0: {}: No locks available",
                        lock_path.display()
                    ),
                ));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
    }
    std::fs::remove_dir_all(path)
        .map_err(|e| Error::with_kind(ErrorKind::IOError, format!("{}: {e}", path.display())))
}
