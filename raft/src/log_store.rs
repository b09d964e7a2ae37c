//! The log half of the storage: entries in the log keyspace, the vote and the committed and
//! purged log ids in the meta keyspace.

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftLogReader, StorageError, Vote};
use siftdb::WriteBatch;

use crate::codec::{decode, encode};
use crate::error::IntoStorage;
use crate::keys;
use crate::store::{blocking, read_meta, Shared};
use crate::{Error, NodeId, TypeConfig};

type Entry = openraft::Entry<TypeConfig>;

/// The log store openraft appends to and reads from ([`RaftLogStorage`]); also its own log
/// reader (clones share the database).
#[derive(Clone)]
pub struct LogStore {
    shared: Arc<Shared>,
}

impl LogStore {
    pub(crate) fn new(shared: Arc<Shared>) -> LogStore {
        LogStore { shared }
    }

    /// The entries with indexes in `[start, end)` (`end = None`: to the last), in order.
    fn entries(&self, start: u64, end: Option<u64>) -> Result<Vec<Entry>, Error> {
        let from = keys::log_key(start);
        let iter = match end {
            Some(end) if end <= start => return Ok(Vec::new()),
            Some(end) => self.shared.log.range(from..keys::log_key(end)),
            None => self.shared.log.range(from..),
        };
        iter.map(|item| {
            let (_, value) = item?;
            decode("log entry", &value)
        })
        .collect()
    }

    /// The id of the last entry in the log, if any.
    fn last_entry_id(&self) -> Result<Option<LogId<NodeId>>, Error> {
        match self.shared.log.iter().next_back() {
            Some(item) => {
                let (_, value) = item?;
                let entry: Entry = decode("log entry", &value)?;
                Ok(Some(entry.log_id))
            }
            None => Ok(None),
        }
    }
}

/// `[start, end)` of a range of log indexes (`end = None`: unbounded).
fn index_bounds(range: &impl RangeBounds<u64>) -> (u64, Option<u64>) {
    let start = match range.start_bound() {
        Bound::Included(s) => *s,
        Bound::Excluded(s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(e) => e.checked_add(1),
        Bound::Excluded(e) => Some(*e),
        Bound::Unbounded => None,
    };
    (start, end)
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError<NodeId>> {
        let (start, end) = index_bounds(&range);
        self.entries(start, end)
            .or_storage(ErrorSubject::Logs, ErrorVerb::Read)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let purged: Option<LogId<NodeId>> = read_meta(&self.shared, keys::PURGED, "purged log id")
            .or_storage(ErrorSubject::Logs, ErrorVerb::Read)?;
        let last = self
            .last_entry_id()
            .or_storage(ErrorSubject::Logs, ErrorVerb::Read)?;
        Ok(LogState {
            last_purged_log_id: purged,
            last_log_id: last.or(purged),
        })
    }

    async fn get_log_reader(&mut self) -> LogStore {
        self.clone()
    }

    /// Written synced: a vote must survive power loss.
    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        let bytes = encode("vote", vote).or_storage(ErrorSubject::Vote, ErrorVerb::Write)?;
        let shared = Arc::clone(&self.shared);
        blocking(move || {
            let mut batch = WriteBatch::new();
            batch.put_in(&shared.meta, keys::VOTE, &bytes);
            shared.write_synced(batch)
        })
        .await
        .or_storage(ErrorSubject::Vote, ErrorVerb::Write)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        read_meta(&self.shared, keys::VOTE, "vote").or_storage(ErrorSubject::Vote, ErrorVerb::Read)
    }

    /// Not synced: after power loss a lower committed id only means re-applying from the log.
    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), StorageError<NodeId>> {
        let subject = ErrorSubject::Store;
        let bytes =
            encode("committed log id", &committed).or_storage(subject.clone(), ErrorVerb::Write)?;
        self.shared
            .meta
            .put(keys::COMMITTED, bytes)
            .or_storage(subject, ErrorVerb::Write)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        let committed: Option<Option<LogId<NodeId>>> =
            read_meta(&self.shared, keys::COMMITTED, "committed log id")
                .or_storage(ErrorSubject::Store, ErrorVerb::Read)?;
        Ok(committed.flatten())
    }

    /// One synced batch of all `entries`; `callback` hears of it once it is durable.
    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut batch = WriteBatch::new();
        for entry in entries {
            let bytes =
                encode("log entry", &entry).or_storage(ErrorSubject::Logs, ErrorVerb::Write)?;
            batch.put_in(&self.shared.log, keys::log_key(entry.log_id.index), &bytes);
        }
        let shared = Arc::clone(&self.shared);
        let written = blocking(move || shared.write_synced(batch)).await;
        match written {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(std::io::Error::other(e.to_string())));
                Err(e.storage(ErrorSubject::Logs, ErrorVerb::Write))
            }
        }
    }

    /// Removes the entries from `log_id` on: one range delete, synced.
    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let shared = Arc::clone(&self.shared);
        blocking(move || {
            let mut batch = WriteBatch::new();
            let start = keys::log_key(log_id.index);
            batch.delete_range_in(&shared.log, start, keys::log_key(u64::MAX));
            shared.write_synced(batch)
        })
        .await
        .or_storage(ErrorSubject::Logs, ErrorVerb::Delete)
    }

    /// Removes the entries up to `log_id` and records it as purged: one range delete and one
    /// meta record in one synced batch.
    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let bytes =
            encode("purged log id", &log_id).or_storage(ErrorSubject::Logs, ErrorVerb::Delete)?;
        let shared = Arc::clone(&self.shared);
        blocking(move || {
            let mut batch = WriteBatch::new();
            let end = keys::log_key(log_id.index.saturating_add(1));
            batch.delete_range_in(&shared.log, keys::log_key(0), end);
            batch.put_in(&shared.meta, keys::PURGED, &bytes);
            shared.write_synced(batch)
        })
        .await
        .or_storage(ErrorSubject::Logs, ErrorVerb::Delete)
    }
}

#[cfg(test)]
mod tests {
    use super::index_bounds;

    #[test]
    fn index_ranges_become_half_open() {
        assert_eq!(index_bounds(&(3..7)), (3, Some(7)));
        assert_eq!(index_bounds(&(3..=7)), (3, Some(8)));
        assert_eq!(index_bounds(&(..)), (0, None));
        assert_eq!(index_bounds(&(5..)), (5, None));
        assert_eq!(index_bounds(&(0..=u64::MAX)), (0, None));
    }
}
