//! A read-only open catching up with the writer beside it (RocksDB's secondary instance): the
//! manifest, the tables and the live WALs read again, and every keyspace's view replaced.
//!
//! The read runs with no lock but the snapshot gate, held exclusively throughout: no snapshot is
//! taken meanwhile, catch-ups run one at a time (a slower one must not install an older state
//! over a newer one), and it is refused while snapshots exist (the writer keeps no versions for
//! another process's snapshots). `OPTIONS` is read again, and merge operands the handle's merge
//! operator cannot read are refused, as an open refuses them.
//!
//! The install holds the engine's catch-up gate (`Engine::catch_up_gate`) exclusively, taken
//! after the snapshot gate and before the state lock. A read-only engine's readers take it shared
//! while they load a view and then the sequence (`Engine::read_point`; a writable open skips it),
//! so every keyspace's view and the sequence change together for them: a reader never pairs a
//! new view (whose tables may have lost versions the writer's compactions dropped) with an older
//! sequence, and never sees half of a batch across keyspaces.

use crate::base::error::{Error, Result};
use crate::base::options_file;
use crate::paths::engine::Engine;

use super::{
    holds_merge_operands, install_read_state, read_tables_and_wals, retry_while_writer_moves,
    ManifestState,
};

/// Reads what the writer of the database has made durable since the open (or the last
/// catch-up) and makes it what reads see: tables it flushed or compacted, and writes still in
/// its WALs. Keyspaces created by the writer since the open stay unknown; keyspaces it dropped
/// read empty.
///
/// Refused while the instance holds snapshots: the writer keeps only the versions its own
/// snapshots need, so a snapshot taken here could find a key's older version compacted away.
pub(crate) fn catch_up_with_primary(engine: &Engine) -> Result<()> {
    let inner = engine.shared();
    if !inner.read_only() {
        return Err(Error::InvalidArgument(
            "try_catch_up_with_primary: the database is not open read-only (only a read-only \
             open catches up with a writer)"
                .to_string(),
        ));
    }
    engine.check_open()?;
    // Held for the whole catch-up: no snapshot is taken meanwhile, and catch-ups run one at a
    // time (a slower one must not install an older state over a newer one).
    let _no_new_snapshots = inner.snapshots().hold_new_snapshots();
    if !inner.snapshots().sequences().is_empty() {
        return Err(Error::InvalidArgument(
            "try_catch_up_with_primary: snapshots are held (the writer may have compacted away \
             the versions they read); release them first"
                .to_string(),
        ));
    }
    let dir = inner.dir();
    let read = retry_while_writer_moves(dir, || {
        let fs = &inner.options().fs;
        // OPTIONS again: the writer may have written merge operands since the open, which this
        // handle's merge operator must be able to read (as an open checks).
        let recorded = options_file::check(fs.as_ref(), dir, inner.options())?;
        let manifest = ManifestState::read(fs.as_ref(), dir)?;
        let entries = fs.list(dir)?;
        let read = read_tables_and_wals(inner, &manifest, &entries)?;
        options_file::check_merge_operator(&recorded, inner.options(), || {
            holds_merge_operands(&read.versions, &read.recovered)
        })?;
        Ok(read)
    })?;
    // The writer's sequence can be behind what was read earlier only if it crashed and
    // reopened without writes it had not synced: what it holds now is the database.
    // Readers wait while every keyspace's view and the sequence change together.
    let _readers_wait = engine.catch_up_gate.write();
    install_read_state(inner, read);
    Ok(())
}
