//! Iterators: the raw cursor (siftdb's `RawIterator`) and the Rust iterator over it.

use std::marker::PhantomData;

use crate::slice_transform::SliceTransform;
use crate::{DBAccess, Error, ReadOptions};

/// A key and a value, as iterators yield them.
pub type KVBytes = (Box<[u8]>, Box<[u8]>);

/// Which way an iterator goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Ascending keys.
    Forward,
    /// Descending keys.
    Reverse,
}

/// Where an iterator starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IteratorMode<'a> {
    /// At the first key, forward.
    Start,
    /// At the last key, backward.
    End,
    /// At a key (or the next one in `Direction`), going that way.
    From(&'a [u8], Direction),
}

/// What an iterator reads from, kept so that `refresh` can read again.
#[derive(Clone)]
pub(crate) enum Origin {
    Db(siftdb::Db),
    Ks(siftdb::Keyspace),
}

/// The cursor underneath: siftdb's, or entries read at a snapshot of a column family (siftdb
/// has no raw cursor there).
// The live cursor is the common case: boxing it would cost every step an indirection.
#[allow(clippy::large_enum_variant)]
enum Source {
    Live(siftdb::RawIterator),
    Buffered(Buffered),
}

struct Buffered {
    entries: Vec<KVBytes>,
    pos: usize,
}

impl Buffered {
    fn read(it: siftdb::DbIterator, opts: &siftdb::ReadOptions) -> Result<Buffered, Error> {
        let lower = opts.iterate_lower_bound.as_deref();
        let upper = opts.iterate_upper_bound.as_deref();
        let mut entries = Vec::new();
        for item in it {
            let (k, v) = item?;
            let below = lower.is_some_and(|l| k.as_slice() < l);
            let above = upper.is_some_and(|u| k.as_slice() >= u);
            if !below && !above {
                entries.push((k.into_boxed_slice(), v.into_boxed_slice()));
            }
        }
        let pos = entries.len();
        Ok(Buffered { entries, pos })
    }

    fn current(&self) -> Option<&KVBytes> {
        self.entries.get(self.pos)
    }

    fn seek(&mut self, key: &[u8]) {
        self.pos = self.entries.partition_point(|(k, _)| &**k < key);
    }

    fn seek_for_prev(&mut self, key: &[u8]) {
        let after = self.entries.partition_point(|(k, _)| &**k <= key);
        self.pos = after.checked_sub(1).unwrap_or(self.entries.len());
    }

    fn prev(&mut self) {
        self.pos = self.pos.checked_sub(1).unwrap_or(self.entries.len());
    }
}

/// Keeps a cursor to the prefix of the key it was positioned at (`prefix_same_as_start`).
struct PrefixBound {
    transform: SliceTransform,
    prefix: Option<Vec<u8>>,
}

/// A raw cursor (RocksDB's `DBRawIterator`): seek, step both ways, read the current entry.
pub struct DBRawIteratorWithThreadMode<'a, D: DBAccess> {
    source: Source,
    origin: Origin,
    opts: siftdb::ReadOptions,
    prefix: Option<Box<PrefixBound>>,
    status: Option<Error>,
    tailing: bool,
    db: PhantomData<&'a D>,
}

/// A raw cursor of [`DB`](crate::DB).
pub type DBRawIterator<'a> = DBRawIteratorWithThreadMode<'a, crate::DB>;

impl<'a, D: DBAccess> DBRawIteratorWithThreadMode<'a, D> {
    pub(crate) fn new(origin: Origin, opts: ReadOptions, prefix: Option<&SliceTransform>) -> Self {
        let (source, status) = match make_source(&origin, &opts) {
            Ok(s) => (s, None),
            Err(e) => (
                Source::Buffered(Buffered {
                    entries: Vec::new(),
                    pos: 0,
                }),
                Some(e),
            ),
        };
        let prefix = match prefix {
            Some(t) if opts.prefix_same_as_start && !opts.total_order_seek => {
                Some(Box::new(PrefixBound {
                    transform: t.clone(),
                    prefix: None,
                }))
            }
            _ => None,
        };
        DBRawIteratorWithThreadMode {
            source,
            origin,
            tailing: opts.tailing,
            opts: opts.inner,
            prefix,
            status,
            db: PhantomData,
        }
    }

    /// Whether the cursor is on an entry.
    pub fn valid(&self) -> bool {
        let on_entry = match &self.source {
            Source::Live(it) => it.valid(),
            Source::Buffered(b) => b.current().is_some(),
        };
        on_entry && self.in_prefix()
    }

    fn in_prefix(&self) -> bool {
        let Some(bound) = &self.prefix else {
            return true;
        };
        let Some(want) = &bound.prefix else {
            return true;
        };
        bound.transform.prefix(self.raw_key()) == Some(want.as_slice())
    }

    fn raw_key(&self) -> &[u8] {
        match &self.source {
            Source::Live(it) => it.key(),
            Source::Buffered(b) => b.current().map_or(&[][..], |(k, _)| &**k),
        }
    }

    fn raw_value(&self) -> &[u8] {
        match &self.source {
            Source::Live(it) => it.value(),
            Source::Buffered(b) => b.current().map_or(&[][..], |(_, v)| &**v),
        }
    }

    /// Why the cursor stopped, if it stopped at an error.
    pub fn status(&self) -> Result<(), Error> {
        if let Some(e) = &self.status {
            return Err(e.clone());
        }
        match &self.source {
            Source::Live(it) => it.status().map_err(Error::from),
            Source::Buffered(_) => Ok(()),
        }
    }

    fn remember_prefix(&mut self, key: &[u8]) {
        if let Some(bound) = &mut self.prefix {
            bound.prefix = bound.transform.prefix(key).map(<[u8]>::to_vec);
        }
    }

    /// To the first entry (within the lower bound, whose prefix a prefix-bound cursor keeps).
    pub fn seek_to_first(&mut self) {
        if let Some(bound) = &mut self.prefix {
            let lower = self.opts.iterate_lower_bound.as_deref();
            bound.prefix = lower
                .and_then(|l| bound.transform.prefix(l))
                .map(<[u8]>::to_vec);
        }
        match &mut self.source {
            Source::Live(it) => it.seek_to_first(),
            Source::Buffered(b) => b.pos = 0,
        }
    }

    /// To the last entry.
    pub fn seek_to_last(&mut self) {
        if let Some(bound) = &mut self.prefix {
            bound.prefix = None;
        }
        match &mut self.source {
            Source::Live(it) => it.seek_to_last(),
            Source::Buffered(b) => b.prev_from_end(),
        }
    }

    /// To the first entry at or after `key`.
    pub fn seek<K: AsRef<[u8]>>(&mut self, key: K) {
        let key = key.as_ref();
        self.remember_prefix(key);
        match &mut self.source {
            Source::Live(it) => it.seek(key),
            Source::Buffered(b) => b.seek(key),
        }
    }

    /// To the last entry at or before `key`.
    pub fn seek_for_prev<K: AsRef<[u8]>>(&mut self, key: K) {
        let key = key.as_ref();
        self.remember_prefix(key);
        match &mut self.source {
            Source::Live(it) => it.seek_for_prev(key),
            Source::Buffered(b) => b.seek_for_prev(key),
        }
    }

    /// To the next entry.
    pub fn next(&mut self) {
        if !self.valid() {
            return;
        }
        match &mut self.source {
            Source::Live(it) => it.next(),
            Source::Buffered(b) => b.pos += 1,
        }
    }

    /// To the previous entry.
    pub fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        match &mut self.source {
            Source::Live(it) => it.prev(),
            Source::Buffered(b) => b.prev(),
        }
    }

    /// The current key.
    pub fn key(&self) -> Option<&[u8]> {
        self.valid().then(|| self.raw_key())
    }

    /// The current value.
    pub fn value(&self) -> Option<&[u8]> {
        self.valid().then(|| self.raw_value())
    }

    /// The current entry's user-defined timestamp: siftdb has none, so it is empty.
    pub fn timestamp(&self) -> Option<&[u8]> {
        self.valid().then_some(&[][..])
    }

    /// The current key and value.
    pub fn item(&self) -> Option<(&[u8], &[u8])> {
        self.valid().then(|| (self.raw_key(), self.raw_value()))
    }

    /// Reads the latest state of the database from now on (a snapshot the cursor read at is
    /// left); position the cursor again after this.
    pub fn refresh(&mut self) -> Result<(), Error> {
        let opts = ReadOptions {
            inner: self.opts.clone(),
            ..ReadOptions::default()
        };
        self.source = make_source(&self.origin, &opts)?;
        self.status = None;
        Ok(())
    }
}

impl Buffered {
    fn prev_from_end(&mut self) {
        self.pos = self.entries.len();
        self.prev();
    }
}

fn make_source(origin: &Origin, opts: &ReadOptions) -> Result<Source, Error> {
    match (&opts.snapshot, origin) {
        (Some(snap), Origin::Db(_)) => Ok(Source::Live(snap.snapshot.raw_iter_opt(&opts.inner))),
        (Some(snap), Origin::Ks(ks)) => {
            let entries = Buffered::read(snap.snapshot.iter_in(ks), &opts.inner)?;
            Ok(Source::Buffered(entries))
        }
        (None, Origin::Db(db)) => Ok(Source::Live(db.raw_iter_opt(&opts.inner))),
        (None, Origin::Ks(ks)) => Ok(Source::Live(ks.raw_iter_opt(&opts.inner))),
    }
}

/// An iterator of entries (RocksDB's `DBIterator`): each item is a key and a value, or the
/// error that ended the iteration.
pub struct DBIteratorWithThreadMode<'a, D: DBAccess> {
    raw: DBRawIteratorWithThreadMode<'a, D>,
    direction: Direction,
    positioned: bool,
    done: bool,
    /// The last key yielded, kept by a tailing iterator to go on after it.
    last: Option<Box<[u8]>>,
}

/// An iterator of [`DB`](crate::DB).
pub type DBIterator<'a> = DBIteratorWithThreadMode<'a, crate::DB>;

impl<'a, D: DBAccess> DBIteratorWithThreadMode<'a, D> {
    pub(crate) fn new(raw: DBRawIteratorWithThreadMode<'a, D>, mode: IteratorMode<'_>) -> Self {
        let mut it = DBIteratorWithThreadMode {
            raw,
            direction: Direction::Forward,
            positioned: true,
            done: false,
            last: None,
        };
        it.set_mode(mode);
        it
    }

    /// Starts again at `mode`.
    pub fn set_mode(&mut self, mode: IteratorMode<'_>) {
        self.direction = match mode {
            IteratorMode::Start => {
                self.raw.seek_to_first();
                Direction::Forward
            }
            IteratorMode::End => {
                self.raw.seek_to_last();
                Direction::Reverse
            }
            IteratorMode::From(key, Direction::Forward) => {
                self.raw.seek(key);
                Direction::Forward
            }
            IteratorMode::From(key, Direction::Reverse) => {
                self.raw.seek_for_prev(key);
                Direction::Reverse
            }
        };
        self.positioned = true;
        self.done = false;
    }

    /// Reads the latest state of the database and starts again at `mode`.
    pub fn refresh(&mut self, mode: IteratorMode<'_>) -> Result<(), Error> {
        self.raw.refresh()?;
        self.set_mode(mode);
        Ok(())
    }

    /// The raw cursor underneath.
    pub fn into_raw(self) -> DBRawIteratorWithThreadMode<'a, D> {
        self.raw
    }
}

impl<D: DBAccess> Iterator for DBIteratorWithThreadMode<'_, D> {
    type Item = Result<KVBytes, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if !self.positioned {
            match self.direction {
                Direction::Forward => self.raw.next(),
                Direction::Reverse => self.raw.prev(),
            }
        }
        self.positioned = false;
        if !self.raw.valid() && self.raw.tailing && self.direction == Direction::Forward {
            self.renew_tail();
        }
        match self.raw.item() {
            Some((k, v)) => {
                let item: KVBytes = (Box::from(k), Box::from(v));
                if self.raw.tailing {
                    self.last = Some(item.0.clone());
                }
                Some(Ok(item))
            }
            None => {
                self.done = true;
                self.raw.status().err().map(Err)
            }
        }
    }
}

impl<D: DBAccess> DBIteratorWithThreadMode<'_, D> {
    /// A tailing iterator at its end: reads the database again, after the last key yielded.
    fn renew_tail(&mut self) {
        if self.raw.refresh().is_err() {
            return;
        }
        match self.last.take() {
            Some(last) => {
                self.raw.seek(&last);
                if self.raw.key() == Some(&*last) {
                    self.raw.next();
                }
            }
            None => self.raw.seek_to_first(),
        }
    }
}

impl<D: DBAccess> std::iter::FusedIterator for DBIteratorWithThreadMode<'_, D> {}

/// The write batches after a sequence number still in the WALs (`DB::get_updates_since`),
/// each with its first sequence number.
pub struct DBWALIterator {
    pub(crate) batches: std::vec::IntoIter<(u64, crate::WriteBatch)>,
}

impl Iterator for DBWALIterator {
    type Item = Result<(u64, crate::WriteBatch), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.batches.next().map(Ok)
    }
}
