//! One keyspace's LSM tree as the engine holds it: its identity, options, published read view and
//! read counters. Its memtables live in [`DbState`](crate::core::state::DbState) (changed under
//! the state lock) and its versions in the [`VersionSet`](crate::core::version_set::VersionSet);
//! this is what a keyspace handle and a reader hold.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use siftdb_sstable::ReadStatistics;

use crate::base::error::{Error, Result};
use crate::base::options::{Options, MAX_LEVELS};
use crate::core::filter_index::{FilterIndex, IndexFilter};
use crate::core::memtable::Memtable;
use crate::core::version::Version;

/// What reads of one tree need, captured under the state lock and then used without it.
#[derive(Clone)]
pub(crate) struct ReadView {
    pub mem: Arc<Memtable>,
    /// Immutable memtables, newest first.
    pub imm: Vec<Arc<Memtable>>,
    pub version: Arc<Version>,
    /// The tree's filter index when the view was published (`core::filter_index`).
    pub index: Option<Arc<IndexFilter>>,
    /// Whether `index` covers every table of `version`: a key it rules out is in no table.
    pub index_covers_all: bool,
}

impl ReadView {
    /// A view of `mem`, `imm` and `version` with `index`'s coverage of the version.
    pub(crate) fn new(
        mem: Arc<Memtable>,
        imm: Vec<Arc<Memtable>>,
        version: Arc<Version>,
        index: &FilterIndex,
    ) -> ReadView {
        let (index, index_covers_all) = index.coverage(&version);
        ReadView {
            mem,
            imm,
            version,
            index,
            index_covers_all,
        }
    }
}

/// See the module documentation.
pub(crate) struct KeyspaceTree {
    /// The keyspace id WAL records and manifest edits name (0: `"default"`; never reused).
    pub id: u32,
    /// Shared with the write batches that name the keyspace (for their error if it is dropped).
    pub name: Arc<str>,
    /// The database's options with this keyspace's tree fields (swapped whole by
    /// `set_options`: a job reads one consistent set).
    options: ArcSwap<Options>,
    /// The text form of the options the tree was created or opened with: what a new manifest
    /// records for it (live changes by `set_options` last only as long as the process).
    opened_with: String,
    /// What reads see, republished by every change of the tree's memtables or version.
    pub view: ArcSwap<ReadView>,
    /// Filter and data-block tickers of point lookups, per level.
    pub levels: [ReadStatistics; MAX_LEVELS],
    /// Point lookups that searched the tables (counted under adaptive filter allocation).
    pub lookups: crate::core::heat::LookupClock,
    /// Whether lookups count filter probes per table (adaptive filter allocation).
    pub counts_heat: bool,
    /// L0 tables in the current version (the write path's stall check reads it per group).
    pub l0_files: AtomicUsize,
    /// Set once the keyspace is dropped: its handles fail from then on.
    pub dropped: AtomicBool,
    /// One filter over the keys of all its tables, probed before theirs.
    pub filter_index: FilterIndex,
    /// Ranges ingested into its tables, for transactions' conflict checks.
    pub ingested: crate::core::ingested_ranges::IngestedRanges,
}

impl std::fmt::Debug for KeyspaceTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyspaceTree")
            .field("id", &self.id)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl KeyspaceTree {
    /// A tree with nothing in it yet.
    pub(crate) fn new(id: u32, name: &str, options: Options, mem: Arc<Memtable>) -> KeyspaceTree {
        let counts_heat = options.filter_allocation == siftdb_filter::FilterAllocation::Adaptive;
        let filter_index = FilterIndex::new(options.filter_index_bits_per_key);
        KeyspaceTree {
            id,
            name: Arc::from(name),
            opened_with: crate::base::keyspace_options::options_text(
                &crate::base::keyspace_options::KeyspaceOptions::from(&options),
            ),
            options: ArcSwap::from_pointee(options),
            view: ArcSwap::from_pointee(ReadView {
                mem,
                imm: Vec::new(),
                version: Arc::new(Version::empty()),
                index: None,
                index_covers_all: false,
            }),
            levels: Default::default(),
            lookups: Default::default(),
            counts_heat,
            l0_files: AtomicUsize::new(0),
            dropped: AtomicBool::new(false),
            filter_index,
            ingested: Default::default(),
        }
    }

    /// A tree for keyspace `id`, with an empty memtable in WAL `wal_number`.
    pub(crate) fn new_in_wal(
        id: u32,
        name: &str,
        options: Options,
        wal_number: u64,
    ) -> Arc<KeyspaceTree> {
        let mem = Arc::new(Memtable::for_keyspace(wal_number, &options));
        Arc::new(KeyspaceTree::new(id, name, options, mem))
    }

    /// The tree's options now.
    pub(crate) fn options(&self) -> arc_swap::Guard<Arc<Options>> {
        self.options.load()
    }

    /// The text form of the options the tree was created or opened with.
    pub(crate) fn opened_with(&self) -> &str {
        &self.opened_with
    }

    /// Replaces the tree's options (`set_options`, validated by the caller): new memtables,
    /// stall checks, compaction picks and new tables follow them.
    pub(crate) fn replace_options(&self, options: Options) {
        self.options.store(Arc::new(options));
    }

    /// Fails with [`Error::KeyspaceDropped`] once the keyspace is dropped.
    pub(crate) fn check_live(&self) -> Result<()> {
        if self.dropped.load(Ordering::Acquire) {
            return Err(self.dropped_error());
        }
        Ok(())
    }

    /// The error of a call on this keyspace once it is dropped.
    pub(crate) fn dropped_error(&self) -> Error {
        Error::KeyspaceDropped(self.name.to_string())
    }

    /// Marks the tree dropped (its handles fail from now on) and empties its view: a handle
    /// kept after the drop must not keep the dropped tables' files (`core::live_tables`).
    pub(crate) fn mark_dropped(&self) {
        self.dropped.store(true, Ordering::Release);
        self.view.store(Arc::new(ReadView {
            mem: Arc::new(Memtable::new(0)),
            imm: Vec::new(),
            version: Arc::new(Version::empty()),
            index: None,
            index_covers_all: false,
        }));
    }

    /// The view published last, owned (an iterator keeps it for its life).
    pub(crate) fn read_view(&self) -> Arc<ReadView> {
        self.view.load_full()
    }

    /// The view published last, borrowed for one lookup: no lock and no reference count
    /// taken, so concurrent lookups write no shared cache line to reach it
    /// ([`ArcSwap::load`] marks it in a slot of the calling thread's own).
    pub(crate) fn read_view_guard(&self) -> arc_swap::Guard<Arc<ReadView>> {
        self.view.load()
    }

    /// The hash of `prefix`'s extracted prefix, which every table's prefix filter is probed with
    /// (`None`: no extractor, or `prefix` too short for it — no filter can rule it out).
    pub(crate) fn prefix_hash(&self, prefix: &[u8]) -> Option<u64> {
        let options = self.options();
        let extractor = options.prefix_extractor.as_ref()?;
        extractor
            .prefix(prefix)
            .map(|p| options.filter_hasher.hash(p))
    }
}

/// A tree's memtables, changed under the state lock.
pub(crate) struct KeyspaceMemtables {
    pub tree: Arc<KeyspaceTree>,
    pub mem: Arc<Memtable>,
    /// Immutable memtables waiting for flush, oldest first.
    pub imm: Vec<Arc<Memtable>>,
}

impl KeyspaceMemtables {
    /// The memtables of a new tree: empty, in the current WAL.
    pub(crate) fn of_new_keyspace(tree: Arc<KeyspaceTree>, wal_number: u64) -> KeyspaceMemtables {
        let mem = Arc::clone(&tree.read_view().mem);
        mem.move_to_wal(wal_number);
        KeyspaceMemtables {
            tree,
            mem,
            imm: Vec::new(),
        }
    }

    /// The WAL the oldest memtable's writes start in: every older WAL holds nothing of this
    /// tree that is not in its tables.
    pub(crate) fn oldest_wal(&self) -> u64 {
        self.imm
            .first()
            .map_or_else(|| self.mem.wal_number(), |m| m.wal_number())
    }
}
