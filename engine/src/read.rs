//! The read path of one tree: point lookups (memtables, then L0 newest first, then one table per
//! deeper level) and the constructors of its iterators. `Db`, `Keyspace` and `Snapshot` all read
//! through here.

use std::sync::Arc;

use siftdb_sstable::{GetTrace, Lookup, PreparedGet};

use crate::db::{DbInner, ReadView};
use crate::error::Result;
use crate::iterator::{merge_for, DbIterator, KeyBounds, RawIterator, ScanSpec};
use crate::options::ReadOptions;
use crate::tree::Tree;
use crate::version::{TableFile, Version};

impl DbInner {
    /// The newest value of `key` in `tree`, copied into `value` (cleared by the caller).
    pub(crate) fn get_latest(
        &self,
        tree: &Tree,
        key: &[u8],
        opts: &ReadOptions,
        value: &mut Vec<u8>,
    ) -> Result<bool> {
        tree.check_live()?;
        let (view, seq) = self.read_point(tree);
        self.get_in(tree, &view, key, seq, opts, value)
    }

    /// The value of `key` in `tree` as of `seq` (a registered snapshot's sequence), in the
    /// tree's current view.
    pub(crate) fn get_at(
        &self,
        tree: &Tree,
        key: &[u8],
        seq: u64,
        value: &mut Vec<u8>,
    ) -> Result<bool> {
        tree.check_live()?;
        self.get_in(
            tree,
            &tree.read_view(),
            key,
            seq,
            &ReadOptions::default(),
            value,
        )
    }

    /// The read path: memtables, then L0 newest first, then one table per deeper level. A found
    /// value is copied into `value` (cleared by the caller).
    fn get_in(
        &self,
        tree: &Tree,
        view: &ReadView,
        key: &[u8],
        seq: u64,
        opts: &ReadOptions,
        value: &mut Vec<u8>,
    ) -> Result<bool> {
        use std::sync::atomic::Ordering::Relaxed;
        self.check_open()?;
        self.counters.gets.fetch_add(1, Relaxed);
        for mem in std::iter::once(&view.mem).chain(view.imm.iter()) {
            match mem.get_into(key, seq, value) {
                Lookup::Found => {
                    self.counters.memtable_hits.fetch_add(1, Relaxed);
                    self.counters.gets_found.fetch_add(1, Relaxed);
                    return Ok(true);
                }
                Lookup::Deleted => {
                    self.counters.memtable_hits.fetch_add(1, Relaxed);
                    return Ok(false);
                }
                Lookup::NotFound => {}
            }
        }
        let found = self.get_from_tables(tree, &view.version, key, seq, opts.fill_cache, value)?
            == Lookup::Found;
        if found {
            self.counters.gets_found.fetch_add(1, Relaxed);
        }
        Ok(found)
    }

    /// The tables that may hold the key, in the order that finds its newest version (L0 newest
    /// first, then one table per level); the first that holds any version decides.
    fn get_from_tables(
        &self,
        tree: &Tree,
        version: &Version,
        key: &[u8],
        seq: u64,
        fill_cache: bool,
        value: &mut Vec<u8>,
    ) -> Result<Lookup> {
        let head = crate::key_head::KeyHead::of(key);
        // One hash for every table: all filters of a database share its hasher (a table built
        // with another is refused at open).
        let hash = self.options.filter_hasher.hash(key);
        let mut candidates = version
            .level(0)
            .iter()
            .filter(move |f| f.contains_key_with_head(key, head))
            .map(|f| (0usize, f))
            .chain((1..version.num_levels()).filter_map(move |level| {
                version.find_with_head(level, key, head).map(|f| (level, f))
            }));
        // One table ahead: the next table's filter is fetched and its memory requested before
        // this table's filter is probed, so on a tree whose filters do not fit the CPU's caches
        // the two waits overlap. A failure to prepare a table only counts once it is reached.
        fn prepare<'v>(
            key: &[u8],
            hash: u64,
            fill_cache: bool,
            (level, file): (usize, &'v Arc<TableFile>),
        ) -> (usize, &'v TableFile, siftdb_sstable::Result<PreparedGet>) {
            let prepared = file.table.prepare_get_hashed(key, hash);
            (level, file, prepared.map(|p| p.filling_cache(fill_cache)))
        }
        let mut trace = GetTrace::default();
        let mut next = candidates.next().map(|c| prepare(key, hash, fill_cache, c));
        while let Some((level, file, prepared)) = next.take() {
            next = candidates.next().map(|c| prepare(key, hash, fill_cache, c));
            let got = file
                .table
                .get_prepared_into(key, seq, prepared?, &mut trace, value)?;
            tree.levels[level].record(&trace);
            if got != Lookup::NotFound {
                return Ok(got);
            }
        }
        Ok(Lookup::NotFound)
    }
}

/// The view and sequence a scan of `tree` reads: the latest, or the tree's view at a snapshot's
/// `sequence`.
fn scan_point(db: &DbInner, tree: &Tree, sequence: Option<u64>) -> (Arc<ReadView>, u64) {
    match sequence {
        Some(seq) => (tree.read_view(), seq),
        None => db.read_point(tree),
    }
}

/// An iterator over `range` of `tree` (at `sequence`, or the latest).
pub(crate) fn iterator<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
    db: &Arc<DbInner>,
    tree: &Arc<Tree>,
    sequence: Option<u64>,
    range: &R,
    prefix: Option<Vec<u8>>,
    opts: &ReadOptions,
) -> DbIterator {
    if let Err(e) = tree.check_live() {
        return DbIterator::failed(db, tree, e);
    }
    let (view, seq) = scan_point(db, tree, sequence);
    let bounds = match &prefix {
        Some(p) => KeyBounds::prefix(p),
        None => KeyBounds::of(range),
    };
    DbIterator::new(db, tree, view, seq, bounds, prefix, opts.clone())
}

/// An iterator over the keys of `tree` that start with `prefix`.
pub(crate) fn prefix_iterator(
    db: &Arc<DbInner>,
    tree: &Arc<Tree>,
    sequence: Option<u64>,
    prefix: &[u8],
) -> DbIterator {
    iterator::<&[u8], _>(
        db,
        tree,
        sequence,
        &(..),
        Some(prefix.to_vec()),
        &ReadOptions::default(),
    )
}

/// A raw cursor over all of `tree` (at `sequence`, or the latest).
pub(crate) fn raw_iterator(
    db: &Arc<DbInner>,
    tree: &Arc<Tree>,
    sequence: Option<u64>,
) -> RawIterator {
    let (view, seq) = scan_point(db, tree, sequence);
    if let Err(e) = tree.check_live() {
        return RawIterator::failed(Arc::clone(db), seq, e);
    }
    let all = KeyBounds::all();
    let spec = ScanSpec {
        bounds: &all,
        prefix: None,
        read: &ReadOptions::default(),
    };
    match merge_for(tree, &view, &spec) {
        Ok(merge) => RawIterator::new(Arc::clone(db), merge, seq),
        Err(e) => RawIterator::failed(Arc::clone(db), seq, e),
    }
}
