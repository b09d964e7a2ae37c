//! User-facing iteration: a merge of memtables and tables, one entry per user key.

use std::sync::Arc;

use siftdb_compaction::{InternalIterator, MergingIterator};
use siftdb_sstable::{InternalKey, ParsedKey, ValueKind};

use crate::db::{DbInner, ReadView};
use crate::error::{Error, Result};
use crate::memtable::MemtableIter;

impl InternalIterator for MemtableIter {
    fn valid(&self) -> bool {
        MemtableIter::valid(self)
    }
    fn key(&self) -> &[u8] {
        MemtableIter::key(self)
    }
    fn value(&self) -> &[u8] {
        MemtableIter::value(self)
    }
    fn seek_to_first(&mut self) {
        MemtableIter::seek_to_first(self)
    }
    fn seek(&mut self, target: &[u8]) {
        MemtableIter::seek(self, target)
    }
    fn next(&mut self) {
        MemtableIter::next(self)
    }
    fn take_error(&mut self) -> Option<siftdb_sstable::SstError> {
        None
    }
}

/// An iterator over `(key, value)` pairs in key order, as of the moment it was created.
///
/// It owns `Arc`s of the memtables and tables it reads, so it borrows nothing from the [`Db`](crate::Db)
/// (`crate::Db`) and can be sent to another thread. Errors (damaged tables) are yielded as
/// `Err` items, after which the iterator ends.
pub struct DbIterator {
    /// Keeps the database's shared state alive for as long as the iterator reads from it.
    _db: Arc<DbInner>,
    merge: MergingIterator,
    sequence: u64,
    prefix: Option<Vec<u8>>,
    upper_bound: Option<Vec<u8>>,
    positioned: bool,
    last_user_key: Option<Vec<u8>>,
    done: bool,
    pending_error: Option<Error>,
}

impl std::fmt::Debug for DbIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbIterator")
            .field("sequence", &self.sequence)
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl DbIterator {
    /// An iterator over `view` as of `sequence`. It holds the view's memtables and tables for
    /// its whole life, so no compaction can take a version it needs: `sequence` must be at
    /// least as new as every table of the view ([`DbInner::read_point`]) or a registered
    /// snapshot's.
    pub(crate) fn new(
        db: &Arc<DbInner>,
        view: &ReadView,
        sequence: u64,
        prefix: Option<Vec<u8>>,
    ) -> DbIterator {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        children.push(Box::new(MemtableIter::new(Arc::clone(&view.mem))));
        for mem in &view.imm {
            children.push(Box::new(MemtableIter::new(Arc::clone(mem))));
        }
        let mut error = None;
        let prefix_hash = prefix.as_deref().and_then(|p| db.prefix_hash(p));
        for (_, file) in view.version.all() {
            if let Some(p) = &prefix {
                // Skip tables that cannot hold the prefix: by key range, then by prefix filter.
                let in_range = file.largest_user_key() >= p.as_slice()
                    && (file.smallest_user_key() <= p.as_slice()
                        || file.smallest_user_key().starts_with(p));
                if !in_range {
                    continue;
                }
                let may_match = match prefix_hash {
                    Some(hash) => file.table.prefix_may_match_hashed(hash),
                    None => Ok(true),
                };
                match may_match {
                    Ok(false) => continue,
                    Ok(true) => {}
                    Err(e) => {
                        error.get_or_insert(e);
                        continue;
                    }
                }
            }
            children.push(Box::new(file.table.iter()));
        }
        let mut it = DbIterator {
            _db: Arc::clone(db),
            merge: MergingIterator::new(children),
            sequence,
            prefix,
            upper_bound: None,
            positioned: false,
            last_user_key: None,
            done: false,
            pending_error: None,
        };
        if let Some(e) = error {
            it.done = true;
            it.pending_error = Some(Error::from(e));
        }
        it
    }

    /// Positions the iterator at the first key ≥ `key` (for a prefix iterator, at least the
    /// prefix).
    pub fn seek(&mut self, key: &[u8]) {
        let target = match &self.prefix {
            Some(p) if key < p.as_slice() => p.clone(),
            _ => key.to_vec(),
        };
        self.merge
            .seek(InternalKey::for_lookup(&target, self.sequence).encoded());
        self.positioned = true;
        self.last_user_key = None;
    }

    /// Stops iteration before `bound` (exclusive); `None` removes the bound.
    pub fn set_upper_bound(&mut self, bound: Option<Vec<u8>>) {
        self.upper_bound = bound;
    }

    fn advance(&mut self) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        if self.done {
            return self.pending_error.take().map(Err);
        }
        if !self.positioned {
            match &self.prefix {
                Some(p) => {
                    let p = p.clone();
                    self.seek(&p);
                }
                None => {
                    self.merge.seek_to_first();
                    self.positioned = true;
                }
            }
        }
        loop {
            if !self.merge.valid() {
                self.done = true;
                return self.merge.take_error().map(|e| Err(Error::from(e)));
            }
            let Some(parsed) = ParsedKey::parse(self.merge.key()) else {
                self.done = true;
                return Some(Err(Error::corruption(
                    "undecodable key in iteration".to_string(),
                )));
            };
            if let Some(p) = &self.prefix {
                if !parsed.user_key.starts_with(p) {
                    self.done = true;
                    return None;
                }
            }
            if let Some(bound) = &self.upper_bound {
                if parsed.user_key >= bound.as_slice() {
                    self.done = true;
                    return None;
                }
            }
            let newer_than_view = parsed.sequence > self.sequence;
            let shadowed = self.last_user_key.as_deref() == Some(parsed.user_key);
            if newer_than_view || shadowed {
                self.merge.next();
                continue;
            }
            self.last_user_key = Some(parsed.user_key.to_vec());
            let item = match parsed.kind {
                ValueKind::Put => Some((parsed.user_key.to_vec(), self.merge.value().to_vec())),
                ValueKind::Delete => None,
            };
            self.merge.next();
            if let Some(item) = item {
                return Some(Ok(item));
            }
        }
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.advance()
    }
}
