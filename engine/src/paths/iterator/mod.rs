//! User-facing iteration, in layers that all go both ways:
//!
//! * `sources.rs` — what a scan merges: a cursor per memtable and per L0 table, one
//!   [`LevelIterator`](crate::core::level_iter::LevelIterator) per sorted level (`core/level_iter.rs`), limited by the scan's
//!   bounds and prefix filter;
//! * the heap merge of those cursors (`siftdb_sstable::MergingIterator`);
//! * [`RawIterator`] (`raw.rs`) — one entry per user key, snapshot visibility and tombstones;
//! * [`DbIterator`] (here) — bounds, prefixes, and a Rust iterator from both ends.

mod raw;
mod sources;

use std::sync::Arc;

pub(crate) use crate::core::key_bounds::KeyBounds;
pub use raw::RawIterator;
pub(crate) use raw::Visibility;
pub(crate) use sources::{blob_reads, merge_for, visibility, ScanSpec};

use crate::base::error::Error;
use crate::base::options::ReadOptions;
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::keyspace_tree::ReadView;
use crate::core::shared::Shared;

/// What every cursor of one [`DbIterator`] reads: the same tree, view, sequence, bounds and
/// prefix.
struct Scan {
    db: Arc<Shared>,
    tree: Arc<KeyspaceTree>,
    view: Arc<ReadView>,
    sequence: u64,
    bounds: KeyBounds,
    prefix: Option<Vec<u8>>,
    read: ReadOptions,
    /// The sequence number, time (expiring values are judged by it) and range tombstones
    /// fixed when the iterator was made: both ends (each a cursor of its own, made when first
    /// used) see one state.
    seen: Visibility,
}

impl Scan {
    fn cursor(&self) -> RawIterator {
        let spec = ScanSpec {
            bounds: &self.bounds,
            prefix: self.prefix.as_deref(),
            read: &self.read,
        };
        let db = Some(Arc::clone(&self.db));
        match merge_for(&self.tree, &self.view, &spec) {
            Ok(merge) => RawIterator::new(db, merge, self.seen.clone(), self.bounds.clone())
                .in_keyspace(&self.tree.name),
            Err(e) => RawIterator::failed(Arc::clone(&self.db), self.sequence, e),
        }
    }
}

/// One end of a [`DbIterator`]: its cursor, and whether the cursor sits on the last key this end
/// yielded (rather than on a position a seek chose, not yet yielded).
#[derive(Default)]
struct End {
    cursor: Option<RawIterator>,
    yielded: bool,
}

impl End {
    /// The key this end yielded last, if its cursor still sits on it.
    fn last_yielded(&self) -> Option<&[u8]> {
        let cursor = self.cursor.as_ref()?;
        (self.yielded && cursor.valid()).then(|| cursor.key())
    }
}

/// An iterator over `(key, value)` pairs in key order — or, from the back (`.rev()`,
/// [`DoubleEndedIterator::next_back`]), in descending order — as of the moment it was created.
///
/// It owns `Arc`s of the memtables and tables it reads, so it borrows nothing from the
/// [`Db`](crate::Db) and can be sent to another thread. Mixing `next` and `next_back` follows
/// std's contract: the two ends meet in the middle and no key is yielded twice. An error (a
/// damaged table) is yielded as an `Err` item, after which the iterator ends. Ranges, prefixes
/// and seeks keep to the iterator's bounds.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
/// for k in ["a", "b", "c", "d"] {
///     db.put(k, "v")?;
/// }
/// let keys = |it: siftdb::DbIterator| -> Result<Vec<Vec<u8>>, siftdb::Error> {
///     it.map(|kv| kv.map(|(k, _)| k)).collect()
/// };
/// assert_eq!(keys(db.range("b".."d"))?, [b"b", b"c"]);
/// assert_eq!(keys(db.range("b"..="d"))?, [b"b", b"c", b"d"]);
/// let descending: Vec<Vec<u8>> = db.iter().rev().map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(descending, [b"d", b"c", b"b", b"a"]);
/// let mut it = db.iter();
/// assert_eq!(it.next().unwrap()?.0, b"a");
/// assert_eq!(it.next_back().unwrap()?.0, b"d");
/// assert_eq!(it.next().unwrap()?.0, b"b");
/// assert_eq!(it.next_back().unwrap()?.0, b"c");
/// assert!(it.next().is_none() && it.next_back().is_none()); // the ends met
/// # Ok::<(), siftdb::Error>(())
/// ```
pub struct DbIterator {
    scan: Scan,
    front: End,
    back: End,
    /// The ends met, or one ran out: nothing more either way (until a seek).
    done: bool,
    /// An error to yield once.
    error: Option<Error>,
}

impl std::fmt::Debug for DbIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbIterator")
            .field("sequence", &self.scan.sequence)
            .field("bounds", &self.scan.bounds)
            .field("prefix", &self.scan.prefix)
            .finish()
    }
}

impl DbIterator {
    /// An iterator over `view` as of `sequence`, within `bounds` (and `prefix`, whose filter may
    /// skip tables). It holds the view's memtables and tables for its whole life, so no
    /// compaction can take a version it needs: `sequence` must be at least as new as every table
    /// of the view ([`Engine::read_point`](crate::paths::engine::Engine::read_point)) or a registered snapshot's.
    pub(crate) fn new(
        db: &Arc<Shared>,
        tree: &Arc<KeyspaceTree>,
        view: Arc<ReadView>,
        sequence: u64,
        bounds: KeyBounds,
        prefix: Option<Vec<u8>>,
        read: ReadOptions,
    ) -> DbIterator {
        let now = crate::base::ttl::millis(db.options().clock.now());
        DbIterator {
            scan: Scan {
                seen: visibility(tree, &view, sequence, now, blob_reads(db, &view, &read)),
                db: Arc::clone(db),
                tree: Arc::clone(tree),
                view,
                sequence,
                bounds,
                prefix,
                read,
            },
            front: End::default(),
            back: End::default(),
            done: false,
            error: None,
        }
    }

    /// An iterator that yields `error` and ends (a dropped keyspace, a closed database).
    pub(crate) fn failed(db: &Arc<Shared>, tree: &Arc<KeyspaceTree>, error: Error) -> DbIterator {
        let view = tree.read_view();
        let mut it = DbIterator::new(
            db,
            tree,
            view,
            0,
            KeyBounds::all(),
            None,
            ReadOptions::default(),
        );
        it.done = true;
        it.error = Some(error);
        it
    }

    /// Positions the front at the first key ≥ `key` (within the iterator's bounds: a key below
    /// the lower bound or the prefix seeks to it). The next `next()` yields it.
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        let key = key.as_ref();
        let cursor = self.front.cursor.get_or_insert_with(|| self.scan.cursor());
        cursor.seek(key);
        self.front.yielded = false;
        self.done = false;
    }

    /// Positions the back at the last key ≤ `key` (within the iterator's bounds: a key above the
    /// upper bound or the prefix seeks to it). The next `next_back()` yields it.
    pub fn seek_for_prev(&mut self, key: impl AsRef<[u8]>) {
        let key = key.as_ref();
        let cursor = self.back.cursor.get_or_insert_with(|| self.scan.cursor());
        cursor.seek_for_prev(key);
        self.back.yielded = false;
        self.done = false;
    }

    /// Ends the iteration with the error that stopped `cursor`, if any.
    fn stop(&mut self, error: Option<Error>) -> Option<crate::Result<(Vec<u8>, Vec<u8>)>> {
        self.done = true;
        error.or_else(|| self.error.take()).map(Err)
    }
}

impl Iterator for DbIterator {
    type Item = crate::Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return self.error.take().map(Err);
        }
        let scan = &self.scan;
        if self.front.cursor.is_none() {
            let mut cursor = scan.cursor();
            cursor.seek_to_first();
            self.front.cursor = Some(cursor);
            self.front.yielded = false;
        }
        let cursor = self.front.cursor.as_mut()?;
        if self.front.yielded {
            cursor.next();
        }
        self.front.yielded = true;
        if !cursor.valid() {
            let error = cursor.take_error();
            return self.stop(error);
        }
        let key = cursor.key();
        // (The cursor keeps to the bounds itself.)
        if self.back.last_yielded().is_some_and(|back| key >= back) {
            return self.stop(None);
        }
        let item = current_entry(cursor);
        // A value that could not be read from its blob file ends the iteration.
        self.done = item.is_err();
        Some(item)
    }
}

/// The cursor's key and value, copied (or the error reading the value from its blob file).
fn current_entry(cursor: &RawIterator) -> crate::Result<(Vec<u8>, Vec<u8>)> {
    let value = cursor.try_value()?;
    Ok((cursor.key().to_vec(), value.to_vec()))
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return self.error.take().map(Err);
        }
        let scan = &self.scan;
        if self.back.cursor.is_none() {
            let mut cursor = scan.cursor();
            cursor.seek_to_last();
            self.back.cursor = Some(cursor);
            self.back.yielded = false;
        }
        let cursor = self.back.cursor.as_mut()?;
        if self.back.yielded {
            cursor.prev();
        }
        self.back.yielded = true;
        if !cursor.valid() {
            let error = cursor.take_error();
            return self.stop(error);
        }
        let key = cursor.key();
        if self.front.last_yielded().is_some_and(|front| key <= front) {
            return self.stop(None);
        }
        let item = current_entry(cursor);
        // A value that could not be read from its blob file ends the iteration.
        self.done = item.is_err();
        Some(item)
    }
}
