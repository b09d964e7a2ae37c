//! Installing a snapshot, and finishing at open an install a crash interrupted.
//!
//! openraft purges a follower's log up to the snapshot as soon as it orders the install, without
//! waiting for it to finish. So the snapshot must be durable, and found again at open, before
//! the state machine reaches it. An install therefore runs in two steps:
//! 1. the received file is synced, checked whole (CRC, metadata) while it is copied, and the
//!    copy is published as `current.snap`;
//! 2. the current file fills a fresh state keyspace, and one synced batch switches to it (with
//!    the applied log id and membership); the old keyspace is dropped: the whole state is
//!    replaced in one step, as a range replace over every key would. The fill writes no
//!    batch: the snapshot carries the leader's state as table files (`SstFileWriter`'s, in key
//!    order), copied out into `snapshot/installing-tables/` and ingested whole at the empty
//!    keyspace's bottom level — no WAL, no memtable, no table rebuilt, no flush or compaction
//!    after. (A version 1 file carries entries instead; they are written into tables there.)
//!
//! The snapshot's bytes are thus read twice (to publish, then to fill): the fill must not start
//! before the file it could be redone from is durable.
//!
//! At open, a current snapshot newer than the applied state means step 2 did not finish: it is
//! run again. A log purged beyond the applied state with no current snapshot covering it means
//! step 1 did not finish either: a received file that is whole and covers the purge is
//! installed; failing that, opening fails with a clear error rather than leaving a node that
//! cannot apply its next entry.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use openraft::LogId;
use siftdb::{Keyspace, WriteBatch};

use crate::codec::encode;
use crate::keys;
use crate::snapshot_file::{self, Meta, Record, SnapshotReader};
use crate::store::{applied_log_id, read_meta, Shared};
use crate::table_sink::TableSink;
use crate::{Error, NodeId};

/// Where an install stages its table files, inside the snapshot directory.
const STAGED_TABLES: &str = "installing-tables";

/// Installs the snapshot streamed into `file` (whose metadata must be `expected`).
pub(crate) fn install(shared: &Shared, file: File, expected: &Meta) -> Result<(), Error> {
    publish_received(shared, file, Some(expected))?;
    install_current(shared, expected)
}

/// Step 1: syncs the received `file`, copies it while checking it whole, and publishes the copy
/// as the current snapshot. Returns the snapshot's metadata.
fn publish_received(
    shared: &Shared,
    mut file: File,
    expected: Option<&Meta>,
) -> Result<Meta, Error> {
    file.sync_all()?;
    file.seek(SeekFrom::Start(0))?;
    let part = snapshot_file::part_path(&shared.snapshot_dir, "installing");
    let copied = copy_checked(file, &part, expected).and_then(|meta| {
        let _guard = shared.snapshot_file.lock();
        if snapshot_file::publish(&shared.snapshot_dir, &part, &meta)? {
            Ok(meta)
        } else {
            Err(Error::corrupt(
                "snapshot",
                "the current snapshot is newer than the one installed",
            ))
        }
    });
    if copied.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    copied
}

/// Copies `file` to `part`, reading every entry (so the CRC is checked) and the metadata.
fn copy_checked(file: File, part: &Path, expected: Option<&Meta>) -> Result<Meta, Error> {
    let mut copy = snapshot_file::create(part)?;
    let tee = Tee {
        input: BufReader::new(file),
        copy: &mut copy,
    };
    let (mut reader, meta) = SnapshotReader::new(tee)?;
    if let Some(expected) = expected.filter(|e| **e != meta) {
        return Err(Error::corrupt(
            "snapshot",
            format!(
                "file holds snapshot {}, not {}",
                meta.snapshot_id, expected.snapshot_id
            ),
        ));
    }
    reader.check_to_end()?;
    copy.flush()?;
    Ok(meta)
}

/// Step 2: fills a fresh state keyspace from the current snapshot file (which must be
/// `expected`) and switches to it.
fn install_current(shared: &Shared, expected: &Meta) -> Result<(), Error> {
    let path = shared.snapshot_dir.join(snapshot_file::CURRENT);
    // One handle for the metadata and the entries: a newer file renamed over the current one
    // meanwhile does not mix with it.
    let file = File::open(&path)?;
    let (mut reader, meta) = SnapshotReader::new(BufReader::new(file))?;
    if meta != *expected {
        return Err(Error::corrupt(
            "snapshot",
            format!(
                "current file holds snapshot {}, not {}",
                meta.snapshot_id, expected.snapshot_id
            ),
        ));
    }
    let generation = shared.state.read().0 + 1;
    let name = keys::state_keyspace(generation);
    if shared.db.keyspace_names().contains(&name) {
        shared.db.drop_keyspace(&name)?; // left by an install that failed
    }
    let fresh = shared.db.keyspace(&name)?;
    if let Err(e) = fill(shared, &fresh, &mut reader) {
        let _ = shared.db.drop_keyspace(&name);
        return Err(e);
    }
    switch(shared, generation, fresh, &meta)
}

/// One synced batch makes `fresh` the live state with `meta`'s applied log id and membership;
/// then the old keyspace is dropped (best effort: the next open drops it if this fails).
fn switch(shared: &Shared, generation: u64, fresh: Keyspace, meta: &Meta) -> Result<(), Error> {
    let mut batch = WriteBatch::new();
    batch.put_in(&shared.meta, keys::STATE, generation.to_be_bytes());
    batch.put_in(
        &shared.meta,
        keys::APPLIED,
        &encode("applied log id", &meta.last_log_id)?,
    );
    batch.put_in(
        &shared.meta,
        keys::MEMBERSHIP,
        &encode("membership", &meta.last_membership)?,
    );
    let mut state = shared.state.write();
    shared.write_synced(batch)?;
    let old = std::mem::replace(&mut *state, (generation, fresh));
    drop(state);
    if let Err(e) = shared.db.drop_keyspace(old.1.name()) {
        tracing::warn!(keyspace = old.1.name(), error = %e, "old state keyspace not dropped");
    }
    Ok(())
}

/// Writes every record of `reader` into the empty keyspace `state` through table files it
/// ingests (the CRC is checked when the end is reached, before anything is ingested).
fn fill<R: Read>(
    shared: &Shared,
    state: &Keyspace,
    reader: &mut SnapshotReader<R>,
) -> Result<(), Error> {
    remove_staged_tables(&shared.snapshot_dir)?;
    let staging = shared.snapshot_dir.join(STAGED_TABLES);
    std::fs::create_dir_all(&staging)?;
    let filled = stage_tables(shared, reader, &staging).and_then(|files| {
        let opts = siftdb::IngestOptions {
            move_files: true,
            // The snapshot's CRC has just checked every byte of the tables; their blocks'
            // own checksums are checked again whenever they are read.
            verify_checksums_before_ingest: false,
            ..siftdb::IngestOptions::default()
        };
        Ok(state.ingest_external_file(&files, &opts)?)
    });
    remove_staged_tables(&shared.snapshot_dir)?;
    filled
}

/// Stages the records of `reader` as table files in `staging`: a table record is copied out
/// as it is (version 2); entries (version 1) are written into tables. Returns their paths.
fn stage_tables<R: Read>(
    shared: &Shared,
    reader: &mut SnapshotReader<R>,
    staging: &Path,
) -> Result<Vec<PathBuf>, Error> {
    let mut sink = TableSink::new(staging, &shared.options);
    while let Some(record) = reader.next_record()? {
        match record {
            Record::Entry((key, value)) => sink.put(&key, &value)?,
            Record::Table(len) => {
                sink.finish_file()?;
                // Through the database's file system, which ingests it.
                let fs = shared.options.fs.as_ref();
                let mut out = fs.create(&sink.next_path()).map_err(siftdb::Error::Io)?;
                reader.copy_table(
                    len,
                    &mut std::io::BufWriter::with_capacity(1 << 20, &mut out),
                )?;
                out.sync().map_err(siftdb::Error::Io)?;
            }
        }
    }
    sink.finish()
}

/// Removes the table files an install staged (left by one a crash interrupted).
pub(crate) fn remove_staged_tables(snapshot_dir: &Path) -> Result<(), Error> {
    match std::fs::remove_dir_all(snapshot_dir.join(STAGED_TABLES)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// At open: finishes an install a crash interrupted (see the module's documentation).
pub(crate) fn finish_interrupted(shared: &Shared) -> Result<(), Error> {
    let applied = applied_log_id(shared)?;
    let current_path = shared.snapshot_dir.join(snapshot_file::CURRENT);
    let current = match snapshot_file::read_meta(&current_path) {
        Ok(current) => current,
        Err(e @ Error::Corrupt { .. }) => {
            // Worth nothing: openraft builds a new one if it needs one.
            tracing::warn!(error = %e, "damaged current snapshot removed");
            std::fs::remove_file(&current_path)?;
            None
        }
        Err(e) => return Err(e),
    };
    if let Some(meta) = current.filter(|m| m.last_log_id > applied) {
        tracing::info!(snapshot = %meta.snapshot_id, "finishing an interrupted snapshot install");
        return install_current(shared, &meta);
    }
    let purged: Option<LogId<NodeId>> = read_meta(shared, keys::PURGED, "purged log id")?;
    if purged <= applied {
        return Ok(());
    }
    for path in received_files(&shared.snapshot_dir)? {
        let Ok(file) = File::open(&path) else {
            continue;
        };
        match publish_received(shared, file, None) {
            Ok(meta) if meta.last_log_id >= purged => {
                tracing::info!(snapshot = %meta.snapshot_id, "installing a received snapshot");
                return install_current(shared, &meta);
            }
            Ok(_) => {}
            Err(e) => tracing::info!(file = %path.display(), error = %e, "received file unusable"),
        }
    }
    Err(Error::corrupt(
        "state machine",
        format!(
            "applied {applied:?} is behind the log purged to {purged:?}, and no snapshot file covers it"
        ),
    ))
}

/// The files snapshots were received into, as an interrupted install left them.
fn received_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with(snapshot_file::RECEIVING) && name.ends_with(".part") {
            found.push(path);
        }
    }
    Ok(found)
}

/// Reads `input` and copies every byte read into `copy`.
struct Tee<'a, R: Read> {
    input: R,
    copy: &'a mut std::io::BufWriter<File>,
}

impl<R: Read> Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.input.read(buf)?;
        self.copy.write_all(&buf[..n])?;
        Ok(n)
    }
}
