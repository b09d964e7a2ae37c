//! Opening a node's storage: one siftdb database with the log, meta and state keyspaces, and a
//! directory for the current snapshot file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use siftdb::{Db, Keyspace, WriteBatch, WriteOptions};

use openraft::LogId;
use serde::de::DeserializeOwned;

use crate::codec::decode;
use crate::keys;
use crate::log_store::LogStore;
use crate::state_machine::StateMachine;
use crate::{Error, NodeId};

/// What the log store, the state machine and their readers and builders share.
pub(crate) struct Shared {
    pub db: Db,
    pub log: Keyspace,
    pub meta: Keyspace,
    /// The live state keyspace and its generation. Written only by a snapshot install, which
    /// holds the write lock while it switches; a snapshot build holds the read lock throughout,
    /// so the keyspace it reads is never dropped under it.
    pub state: RwLock<(u64, Keyspace)>,
    /// Where the current snapshot file (and files being built or received) live.
    pub snapshot_dir: PathBuf,
    /// Held while the current snapshot file is replaced.
    pub snapshot_file: Mutex<()>,
    /// The options the database was opened with: a snapshot install writes its table files
    /// with them.
    pub options: siftdb::Options,
}

impl Shared {
    /// A synced write of `batch`: durable, with everything written before it, when it returns.
    pub(crate) fn write_synced(&self, batch: WriteBatch) -> Result<(), Error> {
        Ok(self.db.write_opt(batch, &WriteOptions { sync: true })?)
    }
}

/// Opens (creating if needed) the storage of one Raft node in `dir`: the database in `dir/db`
/// (opened with `options`), snapshot files in `dir/snapshot`. Returns the two halves openraft
/// takes; they share the database, which closes when the last of them (and of their readers)
/// is dropped.
pub fn open(
    dir: impl AsRef<Path>,
    options: siftdb::Options,
) -> Result<(LogStore, StateMachine), Error> {
    let dir = dir.as_ref();
    let snapshot_dir = dir.join("snapshot");
    std::fs::create_dir_all(&snapshot_dir)?;
    let db = Db::open(dir.join("db"), options.clone())?;
    let log = db.keyspace(keys::LOG)?;
    let meta = db.keyspace(keys::META)?;
    let state = live_state(&db, &meta)?;
    let shared = Arc::new(Shared {
        db,
        log,
        meta,
        state: RwLock::new(state),
        snapshot_dir,
        snapshot_file: Mutex::new(()),
        options,
    });
    crate::snapshot_install::finish_interrupted(&shared)?;
    crate::snapshot_file::remove_partial_files(&shared.snapshot_dir)?;
    crate::snapshot_install::remove_staged_tables(&shared.snapshot_dir)?;
    Ok((
        LogStore::new(Arc::clone(&shared)),
        StateMachine::new(shared),
    ))
}

/// The live state keyspace (generation 0 in a new store), after dropping any other: those are
/// leftovers of a snapshot install that did not reach its switch.
fn live_state(db: &Db, meta: &Keyspace) -> Result<(u64, Keyspace), Error> {
    let generation = match meta.get(keys::STATE)? {
        Some(bytes) => {
            let bytes: [u8; 8] = bytes
                .as_slice()
                .try_into()
                .map_err(|_| Error::corrupt("state generation", "not 8 bytes"))?;
            u64::from_be_bytes(bytes)
        }
        None => 0,
    };
    let live = keys::state_keyspace(generation);
    for name in db.keyspace_names() {
        if name.starts_with(keys::STATE_PREFIX) && name != live {
            db.drop_keyspace(&name)?;
        }
    }
    Ok((generation, db.keyspace(&live)?))
}

/// The value of meta record `key`, decoded.
pub(crate) fn read_meta<T: DeserializeOwned>(
    shared: &Shared,
    key: &[u8],
    what: &'static str,
) -> Result<Option<T>, Error> {
    match shared.meta.get(key)? {
        Some(bytes) => Ok(Some(decode(what, &bytes)?)),
        None => Ok(None),
    }
}

/// The state machine's last applied log id (stored as an `Option`, as openraft hands it over).
pub(crate) fn applied_log_id(shared: &Shared) -> Result<Option<LogId<NodeId>>, Error> {
    let applied: Option<Option<LogId<NodeId>>> =
        read_meta(shared, keys::APPLIED, "applied log id")?;
    Ok(applied.flatten())
}

/// Runs `f` (which blocks on a synced write) on tokio's blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Io(std::io::Error::other(format!("storage task failed: {e}"))))?
}
