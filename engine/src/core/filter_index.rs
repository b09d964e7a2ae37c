//! The tree-wide filter index: one blocked bloom filter over the user keys of every table of a
//! tree, probed before any table's own filter, so that a key no table holds costs one cache
//! line whatever the tree's depth (the per-table filters cost one probe per L0 table and level).
//!
//! **What it covers.** An index filter (`IndexFilter`) has a generation; a table whose
//! `index_gen` equals it is *covered*: its keys are all in that filter. A table is marked only
//! after its keys are in: a flush inserts the memtable's keys before it marks the new table and
//! installs it; a compaction's outputs inherit the mark when every input has it (a compaction
//! writes no user key its inputs do not hold); a rebuild scans every table of a version before
//! its filter replaces the old one and marks them, with the tables flushes and compactions
//! registered with it meanwhile. A flush and a compaction look again once their tables are
//! installed, for a rebuild that began after their first look and scanned a version without
//! them. Any other table (ingested, recovered at open) is *uncovered*, and a lookup probes it
//! by its own filter as before. Bits are never cleared, so a key that compaction drops stays
//! "maybe" until the next rebuild: the index errs only towards "maybe".
//!
//! **How readers use it.** Each published [`ReadView`](crate::core::keyspace_tree::ReadView) carries the
//! current filter and whether it covers every table of the view's version. A key the filter
//! rules out is then answered by the memtables alone; otherwise only the uncovered tables are
//! probed.
//!
//! **Sizing.** A rebuild sizes the filter for `ROOM` times the exact entry count of the
//! version's tables at `Options::filter_index_bits_per_key`, so flushes can add keys until it
//! is full; it is rebuilt (by the background job in `jobs::filter_index_rebuild`) once the keys added
//! reach its room, once uncovered tables hold more than an eighth of the entries, or once the
//! tree shrank to a quarter of the room. Its memory is charged to the block cache.
//!
//! **Stepping aside.** The index pays only for lookups of keys no table holds; a lookup that
//! finds its key pays the index's probe, and every lookup pays for the cache room it takes from
//! data blocks. So the index is *retired* (dropped, its memory given back) once
//! [`USAGE_WINDOW`] lookups in a row have mostly found their keys (it ruled out fewer than one
//! in [`RETIRE_BELOW`]), and rebuilt once a window of lookups without it mostly missed (at least
//! one in [`RETURN_AT`] found nothing). A tree starts that way too: after an open there is no
//! index until a window of lookups misses, so a tree whose lookups find their keys never pays
//! a scan of its tables, nor the cache room (`Db::build_filter_index` builds one at once).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwapOption;
use parking_lot::Mutex;
use siftdb_filter::AtomicBlockedBloom;
use siftdb_sstable::{TableCache, Ticker};

use crate::core::cache_reservation::CacheReservation;
use crate::core::version::{TableFile, Version};

/// Room a rebuilt filter has, as a multiple of the keys it starts with: flushes fill the rest.
pub(crate) const ROOM: f64 = 2.0;

/// A rebuild waits for a quiet tree (no flush or compaction for this long) unless the filter
/// is far over its room ([`FAR_OVER_ROOM`]): during a bulk load, scanning the tree again after
/// every few flushes would cost the load more than an over-full filter costs lookups.
pub(crate) const QUIET_MILLIS: u64 = 2_000;

/// Lookups (that reached the tables' level) a usage decision waits for.
pub(crate) const USAGE_WINDOW: u64 = 10_000;

/// The index retires when it rules out fewer than one lookup in this many of a window.
pub(crate) const RETIRE_BELOW: u64 = 20;

/// A retired index returns when one lookup in this many of a window finds nothing.
pub(crate) const RETURN_AT: u64 = 5;

/// Keys added beyond the room, as a multiple of it, that force a rebuild on a busy tree.
pub(crate) const FAR_OVER_ROOM: u64 = 4;

/// The hash the index probes with, derived from the per-table filters' hash of the key: a key
/// that is a false positive of a table's filter (its bits happen to be set in that filter's
/// block) is not thereby more likely one of the index, whose block and bits it picks anew.
#[inline]
pub(crate) fn index_hash(hash: u64) -> u64 {
    // murmur3's 64-bit finalizer over the hash with a constant folded in.
    let mut x = hash ^ 0x6A09_E667_F3BC_C908;
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^= x >> 33;
    x = x.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    x ^ (x >> 33)
}

/// One generation of the index: its filter and what went into it.
#[derive(Debug)]
pub(crate) struct IndexFilter {
    /// Tables with this `index_gen` are covered (never 0: 0 marks a table no filter covers).
    pub r#gen: u64,
    bloom: AtomicBlockedBloom,
    /// The keys the filter was sized for.
    room: u64,
    /// Keys added so far (the scan's and the flushes').
    added: AtomicU64,
    /// The filter's bytes, charged to the block cache while it lives.
    charge: CacheReservation,
}

impl IndexFilter {
    /// An empty filter of generation `gen` with room for `room` keys.
    pub(crate) fn new(
        r#gen: u64,
        room: u64,
        bits_per_key: f64,
        cache: &TableCache,
    ) -> Option<IndexFilter> {
        let bloom = AtomicBlockedBloom::with_capacity(room, bits_per_key).ok()?;
        let charge = CacheReservation::charge(cache, bloom.size_bytes());
        Some(IndexFilter {
            r#gen,
            bloom,
            room,
            added: AtomicU64::new(0),
            charge,
        })
    }

    /// Whether a key of (per-table filter) hash `hash` may be in a covered table.
    #[inline]
    pub(crate) fn may_contain(&self, hash: u64) -> bool {
        self.bloom.may_contain_hash(index_hash(hash))
    }

    /// Starts loading the line [`IndexFilter::may_contain`] reads for `hash`.
    #[inline]
    pub(crate) fn prefetch(&self, hash: u64) {
        self.bloom.prefetch_hash(index_hash(hash));
    }

    /// Adds a key by its per-table filter hash.
    pub(crate) fn add(&self, hash: u64) {
        self.bloom.insert_hash(index_hash(hash));
    }

    /// Counts `n` keys added.
    pub(crate) fn count_added(&self, n: u64) {
        self.added.fetch_add(n, Ordering::Relaxed);
    }

    /// Keys added so far.
    pub(crate) fn added(&self) -> u64 {
        self.added.load(Ordering::Relaxed)
    }

    /// The keys the filter was sized for.
    pub(crate) fn room(&self) -> u64 {
        self.room
    }

    /// Bytes of the filter (charged to the block cache).
    pub(crate) fn size_bytes(&self) -> usize {
        self.charge.bytes()
    }

    /// The FPR the filter should give now.
    pub(crate) fn expected_fpr(&self) -> f64 {
        self.bloom.expected_fpr(self.added())
    }
}

/// A rebuild under way: its filter, and the tables it will cover once its scan is done (the
/// version it scans, the flushes that added to it meanwhile, the outputs of compactions of
/// those), by number. They are held, not looked up in a version at the end: a flush or a
/// compaction registered during the scan may install its tables only after the swap, and a
/// compaction may have replaced scanned tables by then.
struct Rebuild {
    filter: Arc<IndexFilter>,
    covers: HashMap<u64, Arc<TableFile>>,
}

impl Rebuild {
    fn covers(&self, table: &TableFile) -> bool {
        self.covers.contains_key(&table.meta.number)
    }

    fn cover(&mut self, table: &Arc<TableFile>) {
        self.covers
            .entry(table.meta.number)
            .or_insert_with(|| Arc::clone(table));
    }
}

/// Point lookups the index answered, for `Stats` and `siftdb.levels`.
#[derive(Debug, Default)]
pub(crate) struct IndexTickers {
    /// Lookups that probed the index.
    pub checked: Ticker,
    /// Of those, keys it ruled out.
    pub negative: Ticker,
    /// Keys it did not rule out that no table held (counted when it covered every table).
    pub false_positive: Ticker,
    /// Lookups that reached the tables with no index in their view.
    pub unindexed: Ticker,
    /// Of those, lookups no table answered.
    pub unindexed_misses: Ticker,
}

/// The tickers as the last usage decision saw them, and whether the index stands aside.
#[derive(Debug, Default)]
struct Usage {
    checked: u64,
    negative: u64,
    unindexed: u64,
    unindexed_misses: u64,
    /// No index until a window of lookups misses: from the open on (a tree whose lookups find
    /// their keys never pays a scan of its tables), and after a retirement.
    aside: bool,
}

/// What a window of lookups said of the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Usefulness {
    /// The current filter (of generation `gen`) ruled out almost none of them.
    Idle { r#gen: u64 },
    /// Without a filter, enough of them found nothing.
    Missed,
}

/// A tree's filter index (see the module documentation).
pub(crate) struct FilterIndex {
    /// 0: no index (`Options::filter_index_bits_per_key`).
    bits_per_key: f64,
    current: ArcSwapOption<IndexFilter>,
    /// The rebuild under way; also the lock that orders a flush's or a compaction's marks
    /// against a rebuild's start and swap.
    rebuild: Mutex<Option<Rebuild>>,
    /// Held through a whole rebuild: one at a time (the background thread's and
    /// `Db::build_filter_index`'s).
    turn: Mutex<()>,
    next_gen: AtomicU64,
    /// Milliseconds since `epoch` of the last flush or compaction that changed the tree.
    last_change: AtomicU64,
    epoch: Instant,
    /// Rebuilds completed.
    pub rebuilds: AtomicU64,
    /// Times the index retired (see the module documentation).
    pub retirements: AtomicU64,
    usage: Mutex<Usage>,
    /// See [`IndexTickers`].
    pub tickers: IndexTickers,
}

impl std::fmt::Debug for FilterIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilterIndex")
            .field("bits_per_key", &self.bits_per_key)
            .field("current", &self.current.load().as_ref().map(|c| c.r#gen))
            .finish_non_exhaustive()
    }
}

/// What a rebuild should do, decided from the tree's current version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RebuildNeed {
    /// The index serves the tree well.
    No,
    /// It should be rebuilt, sized for this many keys.
    Now { room: u64 },
    /// Lookups find their keys: the filter of this generation should be dropped.
    Retire { r#gen: u64 },
}

impl FilterIndex {
    /// An index at `bits_per_key` (0: none; the tree's tables are probed one by one).
    pub(crate) fn new(bits_per_key: f64) -> FilterIndex {
        FilterIndex {
            bits_per_key,
            current: ArcSwapOption::empty(),
            rebuild: Mutex::new(None),
            turn: Mutex::new(()),
            next_gen: AtomicU64::new(1),
            last_change: AtomicU64::new(0),
            epoch: Instant::now(),
            rebuilds: AtomicU64::new(0),
            retirements: AtomicU64::new(0),
            usage: Mutex::new(Usage {
                aside: true,
                ..Usage::default()
            }),
            tickers: IndexTickers::default(),
        }
    }

    /// Whether the tree keeps an index at all.
    pub(crate) fn enabled(&self) -> bool {
        self.bits_per_key > 0.0
    }

    /// The current filter, if any.
    pub(crate) fn current(&self) -> Option<Arc<IndexFilter>> {
        self.current.load_full()
    }

    /// The current filter and whether it covers every table of `version`: what a read view
    /// publishes.
    pub(crate) fn coverage(&self, version: &Version) -> (Option<Arc<IndexFilter>>, bool) {
        let current = self.current();
        let all = current
            .as_ref()
            .is_some_and(|c| version.all().all(|(_, f)| f.index_gen() == c.r#gen));
        (current, all)
    }

    fn now_millis(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn touch(&self) {
        self.last_change.store(self.now_millis(), Ordering::Relaxed);
    }

    /// A flush's new table `table`, whose user keys `for_each_hash` hands out by their per-table
    /// filter hash: added to the current filter and to a rebuild's under way, then `table` is
    /// marked covered by them. Called before the table is installed, so that readers find it
    /// covered, and again once it is: a rebuild that began in between scans a version without
    /// it and would leave it uncovered (keys it already holds are not added again).
    pub(crate) fn add_flushed(
        &self,
        table: &Arc<TableFile>,
        for_each_hash: impl Fn(&mut dyn FnMut(u64)),
    ) {
        if !self.enabled() {
            return;
        }
        self.touch();
        let mut rebuild = self.rebuild.lock();
        let current = self.current().filter(|c| table.index_gen() != c.r#gen);
        let rebuild = rebuild.as_mut().filter(|r| !r.covers(table));
        let targets: Vec<&IndexFilter> = current
            .as_deref()
            .into_iter()
            .chain(rebuild.as_ref().map(|r| &*r.filter))
            .collect();
        if targets.is_empty() {
            return;
        }
        let mut keys = 0u64;
        for_each_hash(&mut |hash| {
            keys += 1;
            for t in &targets {
                t.add(hash);
            }
        });
        for t in &targets {
            t.count_added(keys);
        }
        if let Some(c) = &current {
            table.mark_covered(c.r#gen);
        }
        if let Some(r) = rebuild {
            r.cover(table);
        }
    }

    /// A compaction's `outputs` of `inputs`: covered by a filter that covers every input, since
    /// their keys are the inputs' (or fewer). Called before the outputs are installed, and
    /// again once they are (a rebuild that began in between scanned the inputs, not them).
    pub(crate) fn inherit(&self, inputs: &[&TableFile], outputs: &[Arc<TableFile>]) {
        if !self.enabled() {
            return;
        }
        self.touch();
        let mut rebuild = self.rebuild.lock();
        if let Some(c) = self.current()
            && inputs.iter().all(|f| f.index_gen() == c.r#gen)
        {
            outputs.iter().for_each(|o| o.mark_covered(c.r#gen));
        }
        if let Some(r) = rebuild.as_mut()
            && inputs.iter().all(|f| r.covers(f))
        {
            outputs.iter().for_each(|o| r.cover(o));
        }
    }

    /// Whether the index should be rebuilt for `version`.
    pub(crate) fn need(&self, version: &Version) -> RebuildNeed {
        if !self.enabled() {
            return RebuildNeed::No;
        }
        let entries: u64 = version.all().map(|(_, f)| f.meta.entries).sum();
        let room = ((entries as f64 * ROOM) as u64).max(1024);
        match self.usage_verdict() {
            Some(Usefulness::Idle { r#gen }) => return RebuildNeed::Retire { r#gen },
            Some(Usefulness::Missed) if entries > 0 => return RebuildNeed::Now { room },
            _ if self.usage.lock().aside => return RebuildNeed::No,
            _ => {}
        }
        let Some(current) = self.current() else {
            return if entries > 0 {
                RebuildNeed::Now { room }
            } else {
                RebuildNeed::No
            };
        };
        let quiet = self
            .now_millis()
            .saturating_sub(self.last_change.load(Ordering::Relaxed))
            >= QUIET_MILLIS;
        let added = current.added();
        let over = if quiet {
            added > current.room
        } else {
            added > current.room.saturating_mul(FAR_OVER_ROOM)
        };
        let uncovered: u64 = version
            .all()
            .filter(|(_, f)| f.index_gen() != current.r#gen)
            .map(|(_, f)| f.meta.entries)
            .sum();
        let too_uncovered = quiet && uncovered > 0 && uncovered * 8 > entries;
        let too_big = quiet && entries.saturating_mul(4) < current.room && current.room > 1024;
        if over || too_uncovered || too_big {
            RebuildNeed::Now { room }
        } else {
            RebuildNeed::No
        }
    }

    /// What the lookups since the last decision say, once a window of them is in (`None` if
    /// nothing, or too few lookups yet). A full window starts a new one.
    fn usage_verdict(&self) -> Option<Usefulness> {
        let now = self.usage_now(false);
        let mut usage = self.usage.lock();
        let aside = usage.aside;
        let (lookups, telling) = if aside {
            (
                now.unindexed.saturating_sub(usage.unindexed),
                now.unindexed_misses.saturating_sub(usage.unindexed_misses),
            )
        } else {
            (
                now.checked.saturating_sub(usage.checked),
                now.negative.saturating_sub(usage.negative),
            )
        };
        if lookups < USAGE_WINDOW {
            return None;
        }
        *usage = Usage { aside, ..now };
        if aside {
            (telling * RETURN_AT >= lookups).then_some(Usefulness::Missed)
        } else {
            let current = self.current()?;
            (telling * RETIRE_BELOW < lookups).then_some(Usefulness::Idle {
                r#gen: current.r#gen,
            })
        }
    }

    /// Counts `n` lookups that reached the tables without an index in their view (what a
    /// retired index's return is decided on); nothing for a tree that keeps no index.
    #[inline]
    pub(crate) fn count_unindexed(&self, n: u64) {
        if self.enabled() {
            self.tickers.unindexed.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The tickers now, as a fresh window's start.
    fn usage_now(&self, aside: bool) -> Usage {
        let t = &self.tickers;
        Usage {
            checked: t.checked.load(Ordering::Relaxed),
            negative: t.negative.load(Ordering::Relaxed),
            unindexed: t.unindexed.load(Ordering::Relaxed),
            unindexed_misses: t.unindexed_misses.load(Ordering::Relaxed),
            aside,
        }
    }

    /// Drops the current index if it is still generation `gen` (a forced rebuild may have
    /// replaced it since it was judged); its memory goes back to the cache until lookups miss
    /// again. The caller republishes the tree's view.
    pub(crate) fn retire(&self, r#gen: u64) {
        let _rebuild = self.rebuild.lock();
        if self.current().is_none_or(|c| c.r#gen != r#gen) {
            return;
        }
        self.current.store(None);
        *self.usage.lock() = self.usage_now(true);
        self.retirements.fetch_add(1, Ordering::Relaxed);
    }

    /// The right to rebuild, held until the rebuild finished or was abandoned.
    pub(crate) fn rebuild_turn(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.turn.lock()
    }

    /// Starts a rebuild with room for `room` keys, to cover the tables of `version` (captured
    /// by the caller *after* this returns, so that every later flush adds to the new filter
    /// too); `None` if the filter cannot be made.
    pub(crate) fn begin_rebuild(&self, room: u64, cache: &TableCache) -> Option<Arc<IndexFilter>> {
        let r#gen = self.next_gen.fetch_add(1, Ordering::Relaxed);
        let filter = Arc::new(IndexFilter::new(r#gen, room, self.bits_per_key, cache)?);
        *self.rebuild.lock() = Some(Rebuild {
            filter: Arc::clone(&filter),
            covers: HashMap::new(),
        });
        Some(filter)
    }

    /// Adds the tables of the version the rebuild scans to what it will cover (before their
    /// scan, so that compactions of them meanwhile pass the mark on).
    pub(crate) fn plan_cover<'a>(&self, tables: impl Iterator<Item = &'a Arc<TableFile>>) {
        if let Some(r) = self.rebuild.lock().as_mut() {
            tables.for_each(|t| r.cover(t));
        }
    }

    /// Ends the rebuild under way: with its scan done, every table it covers is marked with its
    /// generation (installed or not yet: see [`Rebuild`]) and its filter replaces the current
    /// one. The caller then republishes the tree's view.
    pub(crate) fn finish_rebuild(&self, filter: &Arc<IndexFilter>) {
        let mut rebuild = self.rebuild.lock();
        let Some(r) = rebuild.take_if(|r| Arc::ptr_eq(&r.filter, filter)) else {
            return;
        };
        for table in r.covers.values() {
            table.mark_covered(r.filter.r#gen);
        }
        self.current.store(Some(r.filter));
        // A fresh window for the new filter.
        *self.usage.lock() = self.usage_now(false);
        self.rebuilds.fetch_add(1, Ordering::Relaxed);
    }

    /// Drops the rebuild under way (shutdown, a failed scan).
    pub(crate) fn abandon_rebuild(&self) {
        self.rebuild.lock().take();
    }
}
