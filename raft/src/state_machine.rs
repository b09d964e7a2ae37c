//! The state-machine half of the storage: commands applied to the live state keyspace with the
//! last applied log id in the same batch; snapshots built from and installed into it.

use std::path::PathBuf;
use std::sync::Arc;

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftSnapshotBuilder, StorageError,
    StoredMembership,
};
use siftdb::{Keyspace, WriteBatch};

use crate::codec::encode;
use crate::error::IntoStorage;
use crate::keys;
use crate::snapshot_file::{self, Meta, SnapshotWriter};
use crate::snapshot_install;
use crate::store::{applied_log_id, blocking, read_meta, Shared};
use crate::table_sink::TableSink;
use crate::{Command, Error, KeyValue, NodeId, Response, TypeConfig};

type Entry = openraft::Entry<TypeConfig>;
type Membership = StoredMembership<NodeId, openraft::BasicNode>;

/// The state machine openraft applies committed entries to ([`RaftStateMachine`]).
pub struct StateMachine {
    shared: Arc<Shared>,
    /// The file the snapshot being received is written to.
    receiving: Option<PathBuf>,
}

impl StateMachine {
    pub(crate) fn new(shared: Arc<Shared>) -> StateMachine {
        StateMachine {
            shared,
            receiving: None,
        }
    }

    /// A handle reading what this state machine has applied; it stays valid after the state
    /// machine is handed to openraft.
    pub fn reader(&self) -> StateReader {
        StateReader {
            shared: Arc::clone(&self.shared),
        }
    }
}

/// Reads a node's applied state: the key-value pairs its commands wrote.
#[derive(Clone)]
pub struct StateReader {
    shared: Arc<Shared>,
}

impl StateReader {
    /// The value of `key`, as applied on this node so far.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        // Recursive: a reader never queues behind an install waiting for the write lock (which
        // waits for a snapshot build's whole scan).
        Ok(self.shared.state.read_recursive().1.get(key)?)
    }

    /// Every key-value pair, in key order, at one point.
    pub fn entries(&self) -> Result<Vec<KeyValue>, Error> {
        let state = self.shared.state.read_recursive();
        let snapshot = self.shared.db.snapshot();
        let pairs = snapshot.iter_in(&state.1).collect::<Result<_, _>>()?;
        Ok(pairs)
    }

    /// The id of the last log entry applied.
    pub fn last_applied(&self) -> Result<Option<LogId<NodeId>>, Error> {
        applied_log_id(&self.shared)
    }

    /// The database beneath (for its statistics and properties).
    pub fn db(&self) -> &siftdb::Db {
        &self.shared.db
    }
}

/// Adds the puts and deletes of `command` to `batch`; returns how many.
fn add_command(batch: &mut WriteBatch, state: &Keyspace, command: &Command) -> u64 {
    match command {
        Command::Put { key, value } => {
            batch.put_in(state, key, value);
            1
        }
        Command::Delete { key } => {
            batch.delete_in(state, key);
            1
        }
        Command::Batch(commands) => commands.iter().map(|c| add_command(batch, state, c)).sum(),
    }
}

/// Applies `entries` in one write batch (not synced: see `build_snapshot`), with the last
/// applied log id and, if one of them changes it, the membership.
fn apply_entries(shared: &Shared, entries: Vec<Entry>) -> Result<Vec<Response>, Error> {
    let state = shared.state.read();
    let mut batch = WriteBatch::new();
    let mut responses = Vec::with_capacity(entries.len());
    let mut last = None;
    let mut membership = None;
    for entry in entries {
        let response = match &entry.payload {
            EntryPayload::Blank => Response::default(),
            // Refused alike on every node, so the states stay equal and no node fails on it.
            EntryPayload::Normal(command) => match command.check_applicable() {
                Ok(()) => Response {
                    ops: add_command(&mut batch, &state.1, command),
                    rejected: None,
                },
                Err(e) => Response {
                    ops: 0,
                    rejected: Some(e.to_string()),
                },
            },
            EntryPayload::Membership(m) => {
                membership = Some(Membership::new(Some(entry.log_id), m.clone()));
                Response::default()
            }
        };
        last = Some(entry.log_id);
        responses.push(response);
    }
    if last.is_none() {
        return Ok(responses);
    }
    batch.put_in(
        &shared.meta,
        keys::APPLIED,
        &encode("applied log id", &last)?,
    );
    if let Some(m) = membership {
        batch.put_in(&shared.meta, keys::MEMBERSHIP, &encode("membership", &m)?);
    }
    shared.db.write(batch)?;
    Ok(responses)
}

/// The applied log id and membership as the meta keyspace holds them.
fn applied_state(shared: &Shared) -> Result<(Option<LogId<NodeId>>, Membership), Error> {
    let membership = read_meta(shared, keys::MEMBERSHIP, "membership")?.unwrap_or_default();
    Ok((applied_log_id(shared)?, membership))
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, Membership), StorageError<NodeId>> {
        applied_state(&self.shared).or_storage(ErrorSubject::StateMachine, ErrorVerb::Read)
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        apply_entries(&self.shared, entries)
            .or_storage(ErrorSubject::StateMachine, ErrorVerb::Write)
    }

    async fn get_snapshot_builder(&mut self) -> SnapshotBuilder {
        SnapshotBuilder {
            shared: Arc::clone(&self.shared),
        }
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<tokio::fs::File>, StorageError<NodeId>> {
        let path = snapshot_file::part_path(&self.shared.snapshot_dir, snapshot_file::RECEIVING);
        let file = tokio::fs::File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .await
            .or_storage(ErrorSubject::Snapshot(None), ErrorVerb::Write)?;
        if let Some(old) = self.receiving.replace(path) {
            let _ = tokio::fs::remove_file(old).await;
        }
        Ok(Box::new(file))
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<tokio::fs::File>,
    ) -> Result<(), StorageError<NodeId>> {
        let subject = ErrorSubject::Snapshot(Some(meta.signature()));
        let file = snapshot.into_std().await;
        let shared = Arc::clone(&self.shared);
        let expected = meta.clone();
        blocking(move || snapshot_install::install(&shared, file, &expected))
            .await
            .or_storage(subject, ErrorVerb::Write)?;
        if let Some(path) = self.receiving.take() {
            let _ = tokio::fs::remove_file(path).await;
        }
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        let path = self.shared.snapshot_dir.join(snapshot_file::CURRENT);
        let current = blocking(move || snapshot_file::open_current(&path))
            .await
            .or_storage(ErrorSubject::Snapshot(None), ErrorVerb::Read)?;
        Ok(current.map(|(meta, file)| Snapshot {
            meta,
            snapshot: Box::new(tokio::fs::File::from_std(file)),
        }))
    }
}

/// Builds snapshots of the state machine ([`RaftSnapshotBuilder`]).
pub struct SnapshotBuilder {
    shared: Arc<Shared>,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let shared = Arc::clone(&self.shared);
        let (meta, file) = blocking(move || build(&shared))
            .await
            .or_storage(ErrorSubject::Snapshot(None), ErrorVerb::Write)?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(tokio::fs::File::from_std(file)),
        })
    }
}

/// Writes the live state keyspace, read at one siftdb snapshot, to a snapshot file and makes it
/// the current one. First makes every applied write durable: openraft may purge the log up to
/// the snapshot once it exists, and the state machine's writes are not synced one by one.
fn build(shared: &Shared) -> Result<(Meta, std::fs::File), Error> {
    let state = shared.state.read();
    let snapshot = shared.db.snapshot();
    // Everything the snapshot sees is made durable before the file exists.
    shared.write_synced(WriteBatch::new())?;
    let applied: Option<LogId<NodeId>> = match snapshot.get_in(&shared.meta, keys::APPLIED)? {
        Some(bytes) => crate::codec::decode("applied log id", &bytes)?,
        None => None,
    };
    let last_membership: Membership = match snapshot.get_in(&shared.meta, keys::MEMBERSHIP)? {
        Some(bytes) => crate::codec::decode("membership", &bytes)?,
        None => Membership::default(),
    };
    let meta = Meta {
        last_log_id: applied,
        last_membership,
        snapshot_id: snapshot_id(applied),
    };
    let tables = snapshot_file::part_path(&shared.snapshot_dir, "building-tables");
    std::fs::create_dir(&tables)?;
    let part = snapshot_file::part_path(&shared.snapshot_dir, "building");
    let written = write_snapshot_file(shared, &snapshot, &state.1, &meta, (&tables, &part));
    drop(state);
    std::fs::remove_dir_all(&tables)?;
    for table in written? {
        // Written through the database's file system (which need not be the real one).
        let _ = shared.options.fs.remove(&table);
    }
    // Opened before the rename: if a newer snapshot wins meanwhile, this one is still readable.
    let file = std::fs::File::open(&part)?;
    let _guard = shared.snapshot_file.lock();
    if !snapshot_file::publish(&shared.snapshot_dir, &part, &meta)? {
        std::fs::remove_file(&part)?;
    }
    Ok((meta, file))
}

/// Writes the state keyspace `state` as `snapshot` sees it into table files in `tables`, then
/// the snapshot file at `part` carrying them (version 2: the follower ingests the tables as
/// they are). Returns the table files.
fn write_snapshot_file(
    shared: &Shared,
    snapshot: &siftdb::Snapshot,
    state: &siftdb::Keyspace,
    meta: &Meta,
    (tables, part): (&std::path::Path, &std::path::Path),
) -> Result<Vec<std::path::PathBuf>, Error> {
    let mut sink = TableSink::new(tables, &shared.options);
    for item in snapshot.iter_in(state) {
        let (key, value) = item?;
        sink.put(&key, &value)?;
    }
    let files = sink.finish()?;
    let mut writer = SnapshotWriter::new(snapshot_file::create(part)?, meta)?;
    for table in &files {
        writer.table(shared.options.fs.as_ref(), table)?;
    }
    writer
        .finish()?
        .into_inner()
        .map_err(|e| Error::Io(e.into_error()))?;
    Ok(files)
}

/// A snapshot id unique on this node: the last applied log id and a time stamp.
fn snapshot_id(applied: Option<LogId<NodeId>>) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    match applied {
        Some(id) => format!("{}-{}-{nanos:x}", id.leader_id, id.index),
        None => format!("none-{nanos:x}"),
    }
}
