//! External file ingestion (RocksDB's `IngestExternalFile`): table files built by
//! [`SstFileWriter`](crate::SstFileWriter) join a keyspace's tree by one manifest edit.
//!
//! The steps, and why in this order:
//! 1. *Stage*, with no lock held: each file is linked or copied into the database under a new
//!    table number (a pending output, so no cleanup deletes it), opened and checked — written
//!    at sequence 0, every block's checksum, keys in order and distinct — and the set is
//!    checked not to overlap itself.
//! 2. *Place*, with compactions held off (`Compactions::exclusive`, as `compact_range` runs)
//!    and the write path held: a memtable holding keys in a file's range is flushed first (its
//!    writes are older and must end up below the file), and so are memtables holding anything
//!    when a file goes to L0 (L0 is ordered by newest sequence: a file newer than unflushed
//!    writes, merged by an L0 compaction with an older table, would sort above their flush);
//!    each file goes to the deepest level where nothing at or above it overlaps it. If anything
//!    in the tree overlaps a file, a snapshot exists (`snapshot_consistency`), the ingestion
//!    excises, or FIFO holds tables, the files get one sequence number newer than every write
//!    (their *global seqno*, taken with a WAL marker so recovery's run of sequence numbers
//!    stays unbroken); otherwise they keep sequence 0 and cost nothing to read. New snapshots
//!    wait from these checks until the install.
//! 3. *Install*: the tables are opened at their global seqno and one edit adds them all; the
//!    sequence number is published under the state lock before the new version's read view, so
//!    no reader pairs the new version with the old sequence. The files' key ranges are recorded
//!    for transactions' conflict checks (`core/ingested_ranges.rs`).

mod excise;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use siftdb_sstable::{InternalKey, Table, TableIterOptions, TableReadOptions, MAX_SEQUENCE};

use crate::base::error::{BackgroundError, BackgroundJob, Error, Result};
use crate::base::fs::names;
use crate::base::ingest_options::IngestOptions;
use crate::base::version_edit::{FileMeta, VersionEdit};
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::memtable::MemtableIter;
use crate::core::shared::Shared;
use crate::core::version::Version;
use crate::paths::engine::Engine;

/// One external file taken into the database directory, not yet in the tree.
struct Staged {
    number: u64,
    source: PathBuf,
    file_size: u64,
    entries: u64,
    distinct_keys: u64,
    /// The table's smallest and largest internal keys, as written (sequence 0).
    smallest: InternalKey,
    largest: InternalKey,
    /// The level it goes to, once placed.
    level: usize,
    /// The table of an excise's range deletion, written here (not a caller's file).
    tombstone: bool,
}

impl Staged {
    fn user_range(&self) -> (&[u8], &[u8]) {
        (self.smallest.user_key(), self.largest.user_key())
    }

    /// Whether `key` is at or before this file's last key. A range deletion's end is
    /// exclusive: a file ending in one does not hold its end key.
    fn reaches(&self, key: &[u8]) -> bool {
        let last = self.largest.user_key();
        if self.largest.is_range_end_sentinel() {
            key < last
        } else {
            key <= last
        }
    }

    /// Whether `[smallest, largest]` (user keys) overlaps this file's range.
    fn overlaps(&self, smallest: &[u8], largest: &[u8]) -> bool {
        self.reaches(smallest) && self.smallest.user_key() <= largest
    }

    /// Whether the range deletion `[start, end)` overlaps this file's range.
    fn overlaps_deletion(&self, start: &[u8], end: &[u8]) -> bool {
        self.reaches(start) && end > self.smallest.user_key()
    }

    /// Its manifest record at `seqno` (`None`: as written).
    fn meta(&self, seqno: Option<u64>) -> FileMeta {
        let at = |key: &InternalKey| match seqno {
            Some(g) if !key.is_range_end_sentinel() => {
                InternalKey::new(key.user_key(), g, key.parsed().kind)
            }
            _ => key.clone(),
        };
        FileMeta {
            number: self.number,
            file_size: self.file_size,
            smallest: at(&self.smallest),
            largest: at(&self.largest),
            entries: self.entries,
            distinct_keys: self.distinct_keys,
            filter_level: crate::core::filter_plan::BOTTOM,
            filter_cap_millibits: None,
            blob_refs: Vec::new(),
            global_seqno: seqno,
        }
    }
}

/// The staged files of one ingestion: given back (numbers released, copies deleted) unless it
/// is installed.
struct StagedSet<'a> {
    db: &'a Shared,
    files: Vec<Staged>,
    installed: bool,
}

impl Drop for StagedSet<'_> {
    fn drop(&mut self) {
        if self.installed {
            return;
        }
        let numbers: Vec<u64> = self.files.iter().map(|f| f.number).collect();
        for number in &numbers {
            // Best effort: an orphan left behind is deleted by the next cleanup anyway.
            let _ = self.db.fs().remove(&names::table(self.db.dir(), *number));
        }
        self.db.versions().release_outputs(&numbers);
    }
}

impl Engine {
    /// Ingests the files at `paths` into `tree` (see `Db::ingest_external_file`).
    pub(crate) fn ingest_external_files(
        &self,
        tree: &Arc<KeyspaceTree>,
        paths: &[PathBuf],
        opts: &IngestOptions,
    ) -> Result<()> {
        ingest_external_files(self, tree, paths, opts)
    }
}

/// Ingests the files at `paths` into `tree` (see the module documentation).
fn ingest_external_files(
    engine: &Engine,
    tree: &Arc<KeyspaceTree>,
    paths: &[PathBuf],
    opts: &IngestOptions,
) -> Result<()> {
    let db = engine.shared();
    db.check_open()?;
    db.check_writable()?;
    tree.check_live()?;
    if paths.is_empty() && opts.excise.is_none() {
        return Ok(());
    }
    let mut set = StagedSet {
        db,
        files: Vec::new(),
        installed: false,
    };
    for path in paths {
        let number = db.versions().new_output();
        let staged = stage(db, tree, path, number, opts);
        match staged {
            Ok(file) => set.files.push(file),
            Err(e) => {
                let _ = db.fs().remove(&names::table(db.dir(), number));
                db.versions().release_outputs(&[number]);
                return Err(e);
            }
        }
    }
    check_disjoint(&mut set.files)?;
    if let Some(range) = &opts.excise {
        excise::check_inside(&set.files, range)?;
        let number = db.versions().new_output();
        match excise::stage_tombstone(db, tree, range, number) {
            Ok(file) => set.files.push(file),
            Err(e) => {
                let _ = db.fs().remove(&names::table(db.dir(), number));
                db.versions().release_outputs(&[number]);
                return Err(e);
            }
        }
    }
    db.fs().sync_dir(db.dir())?;
    let _compactions = engine.compactions().exclusive();
    let excised = engine
        .writes
        .exclusive(|| place_and_install(engine, tree, &mut set.files, opts))?;
    set.installed = true;
    if excised {
        // Outside the write path and the snapshot gate: the listing and deletions of the
        // excised tables hold up no writer and no new snapshot.
        crate::jobs::obsolete::delete_obsolete_files(db);
    }
    let callers = || set.files.iter().filter(|f| !f.tombstone);
    db.counters()
        .files_ingested
        .fetch_add(callers().count() as u64, Relaxed);
    if opts.move_files {
        for f in callers() {
            // The file is in the database now; a source that cannot be removed is only a
            // leftover of the caller's.
            if let Err(e) = db.fs().remove(&f.source) {
                tracing::warn!(
                    "siftdb: ingested {} but could not remove it: {e}",
                    f.source.display()
                );
            }
        }
    }
    Ok(())
}

/// Takes the file at `source` into the database as table `number` and checks it.
fn stage(
    db: &Shared,
    tree: &KeyspaceTree,
    source: &Path,
    number: u64,
    opts: &IngestOptions,
) -> Result<Staged> {
    let target = names::table(db.dir(), number);
    take_file(db, source, &target, opts)?;
    let table = open_staged(db, tree, &target, number)?;
    let props = table.properties();
    let name = source.display();
    if props.max_sequence != 0 {
        return Err(Error::InvalidArgument(format!(
            "{name} is not an external file: its entries carry sequence numbers up to {} \
             (SstFileWriter writes them all at 0)",
            props.max_sequence
        )));
    }
    if props.merge_operands > 0 && tree.options().merge_operator.is_none() {
        return Err(Error::InvalidArgument(format!(
            "{name} holds merge operands and keyspace {} has no merge operator",
            tree.name
        )));
    }
    if opts.verify_checksums_before_ingest {
        verify(&table, source)?;
    }
    staged_from(&table, source, number)
}

/// What the ingestion needs to know of staged table `number` (copied from `source`).
fn staged_from(table: &Table, source: &Path, number: u64) -> Result<Staged> {
    let props = table.properties();
    let key = |encoded: &[u8]| {
        InternalKey::from_encoded(encoded.to_vec())
            .ok_or_else(|| Error::InvalidArgument(format!("{} holds no keys", source.display())))
    };
    Ok(Staged {
        number,
        source: source.to_path_buf(),
        file_size: table.file_size(),
        entries: props.entries,
        distinct_keys: props.distinct_keys,
        smallest: key(&props.smallest_key)?,
        largest: key(&props.largest_key)?,
        level: 0,
        tombstone: false,
    })
}

/// Links (`move_files`) or copies `source` to `target`, synced.
fn take_file(db: &Shared, source: &Path, target: &Path, opts: &IngestOptions) -> Result<()> {
    if opts.move_files {
        match db.fs().hard_link(source, target) {
            Ok(()) => {
                // Through the database's file system, which need not be the real one.
                let len = db
                    .fs()
                    .open_random(target, siftdb_sstable::ReadMode::Pread)
                    .map_or(0, |f| f.size());
                db.counters().ingested_bytes_linked.fetch_add(len, Relaxed);
                return Ok(());
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Error::Io(e)),
            Err(e) if !opts.failed_move_fall_back_to_copy => return Err(Error::Io(e)),
            Err(_) => {}
        }
    }
    let copied = copy_file(db, source, target)?;
    db.counters()
        .ingested_bytes_copied
        .fetch_add(copied, Relaxed);
    Ok(())
}

/// Copies `source` to `target` in chunks (a file of any size in bounded memory), synced.
fn copy_file(db: &Shared, source: &Path, target: &Path) -> Result<u64> {
    const CHUNK: usize = 1 << 20;
    let mut input = db.fs().open_sequential(source)?;
    let mut output = db.fs().create(target)?;
    let mut buf = vec![0u8; CHUNK];
    let mut copied = 0u64;
    loop {
        let n = std::io::Read::read(&mut input, &mut buf)?;
        if n == 0 {
            break;
        }
        std::io::Write::write_all(&mut output, &buf[..n])?;
        copied += n as u64;
    }
    output.sync()?;
    Ok(copied)
}

/// Opens a staged file to inspect it: as written (no global seqno), through the block cache
/// under its table number.
fn open_staged(db: &Shared, tree: &KeyspaceTree, path: &Path, number: u64) -> Result<Arc<Table>> {
    let file = db.files().open_table_file(path.to_path_buf())?;
    let read = TableReadOptions {
        key_hasher: db.options().filter_hasher,
        prefix_extractor: tree.options().prefix_extractor.clone(),
        ..TableReadOptions::default()
    };
    let name = path.display().to_string();
    Ok(Arc::new(Table::open(
        file,
        db.cache_id(number),
        name,
        Arc::clone(db.cache()),
        read,
    )?))
}

/// Reads every entry of `table` (each block's checksum checked on the way) and checks that its
/// user keys are strictly increasing: a global seqno gives every entry of the file one
/// sequence number, which two versions of a key could not share.
fn verify(table: &Arc<Table>, source: &Path) -> Result<()> {
    let mut it = table.iter_with(TableIterOptions {
        fill_cache: false,
        read_once: true,
        ..TableIterOptions::default()
    });
    it.seek_to_first();
    let mut last: Option<Vec<u8>> = None;
    while it.valid() {
        let user = siftdb_sstable::user_key_of(it.key());
        if last.as_deref().is_some_and(|l| user <= l) {
            return Err(Error::InvalidArgument(format!(
                "{}: user keys out of order or repeated at {:?}",
                source.display(),
                String::from_utf8_lossy(user)
            )));
        }
        last = Some(user.to_vec());
        it.next();
    }
    match it.take_error() {
        Some(e) => Err(Error::from(e)),
        None => Ok(()),
    }
}

/// Sorts `files` by key and refuses a set whose ranges overlap.
fn check_disjoint(files: &mut [Staged]) -> Result<()> {
    files.sort_by(|a, b| a.smallest.user_key().cmp(b.smallest.user_key()));
    for pair in files.windows(2) {
        let (s, l) = pair[1].user_range();
        if pair[0].overlaps(s, l) {
            return Err(Error::InvalidArgument(format!(
                "external files {} and {} overlap",
                pair[0].source.display(),
                pair[1].source.display()
            )));
        }
    }
    Ok(())
}

/// Step 2 and 3 of the module documentation; the caller holds compactions off and the write
/// path. Returns whether tables were excised (their files are obsolete now).
fn place_and_install(
    engine: &Engine,
    tree: &Arc<KeyspaceTree>,
    files: &mut [Staged],
    opts: &IngestOptions,
) -> Result<bool> {
    let db = engine.shared();
    if memtables_overlap(engine, tree, files)? {
        flush_memtables(
            engine,
            tree,
            opts,
            "the memtable holds keys in the ingested range",
        )?;
    }
    let mut flushed_for_l0 = false;
    loop {
        // No snapshot appears from the checks below until the files are installed and their
        // sequence published: one registered in between at the old sequence would find the
        // excised tables gone, or files it should not see at sequence 0.
        let no_new_snapshots = db.snapshots().hold_new_snapshots();
        let plan = Placement::plan(db, tree, files, opts);
        // L0 is ordered by newest sequence, so L0 tables' sequence ranges must not
        // interleave: a file taken into L0 at a global seqno newer than unflushed writes,
        // merged by a compaction that stays in L0 with an older table, would make a table
        // that sorts above their later flush, and reads would find older versions first.
        // Placed here, on the version installed (the flush thread may have added an L0
        // table since the overlap check), with the write path held (nothing new arrives).
        if files.iter().any(|f| f.level == 0) && memtables_hold_writes(engine, tree)? {
            drop(no_new_snapshots);
            if flushed_for_l0 {
                return Err(Error::Background(BackgroundError::described(
                    BackgroundJob::Flush,
                    "ingestion: the memtables hold writes after a flush with writes stopped",
                )));
            }
            let why = "a file goes to L0 above writes the memtable holds";
            flush_memtables(engine, tree, opts, why)?;
            flushed_for_l0 = true;
            continue;
        }
        install_placed(engine, tree, files, opts, &plan)?;
        return Ok(!plan.excised.is_empty());
    }
}

/// Flushes `tree`'s memtables (its writes are older than the files and must end up below
/// them); refused without `allow_blocking_flush`, saying `why`.
fn flush_memtables(
    engine: &Engine,
    tree: &KeyspaceTree,
    opts: &IngestOptions,
    why: &str,
) -> Result<()> {
    if !opts.allow_blocking_flush {
        return Err(Error::InvalidArgument(format!(
            "{why} and allow_blocking_flush is off"
        )));
    }
    let target = crate::paths::write::freeze_for_flush(engine, tree)?;
    crate::paths::write::wait_flushed(engine, tree, target)
}

/// Where an ingestion's files go, decided on the tree's current version.
struct Placement {
    version: Arc<Version>,
    /// Tables the excise range covers whole (level, number): they leave in the same edit.
    excised: Vec<(usize, u64)>,
    /// Whether anything in the tree overlaps a file.
    overlaps_tree: bool,
    /// Whether snapshots must keep their view (`snapshot_consistency` with snapshots live).
    snapshots: bool,
}

impl Placement {
    /// Sets each file's level; the caller holds new snapshots off.
    fn plan(
        db: &Shared,
        tree: &KeyspaceTree,
        files: &mut [Staged],
        opts: &IngestOptions,
    ) -> Placement {
        let version = db.versions().current(tree);
        let live_snapshots = !db.snapshots().sequences().is_empty();
        // Tables the excise range covers whole leave in the same edit (not under a snapshot,
        // which must keep reading them); the range deletion covers the rest.
        let excised = match &opts.excise {
            Some(range) if !live_snapshots => excise::covered_tables(&version, range),
            _ => Vec::new(),
        };
        let mut overlaps_tree = false;
        // The excise's range deletion first: the files must lie above it (or, in L0, sort
        // before it by sequence), since a lookup stops at the first table whose deletion
        // covers its key.
        files.sort_by_key(|f| !f.tombstone);
        let mut highest = usize::MAX;
        for f in files.iter_mut() {
            let (level, overlapped) = place(&version, tree, f, &excised);
            f.level = if f.tombstone {
                highest = level.saturating_sub(1);
                level
            } else {
                level.min(highest)
            };
            overlaps_tree |= overlapped;
        }
        Placement {
            version,
            excised,
            overlaps_tree,
            snapshots: opts.snapshot_consistency && live_snapshots,
        }
    }
}

/// Takes the files' global seqno if they need one, installs them where `plan` put them and
/// publishes the sequence; the caller holds new snapshots off.
fn install_placed(
    engine: &Engine,
    tree: &KeyspaceTree,
    files: &[Staged],
    opts: &IngestOptions,
    plan: &Placement,
) -> Result<()> {
    let db = engine.shared();
    // With an excise, two numbers: the range deletion's, and the files' just after it, so the
    // deletion never hides the files' own keys.
    let numbers = if opts.excise.is_some() { 2 } else { 1 };
    // An excise always takes them: its deletion must sort after the files it makes room for.
    // So does a file joining FIFO's tables: FIFO drops them oldest sequence first, and at
    // sequence 0 the file would go before the older data.
    let fifo =
        tree.options().compaction_style == crate::base::compaction_style::CompactionStyle::Fifo;
    let version = &plan.version;
    let fifo_behind = fifo && (0..version.num_levels()).any(|l| !version.level(l).is_empty());
    let first = if plan.overlaps_tree || plan.snapshots || opts.excise.is_some() || fifo_behind {
        if !opts.allow_global_seqno {
            return Err(Error::InvalidArgument(
                "the files need a sequence number newer than existing data and \
                 allow_global_seqno is off"
                    .to_string(),
            ));
        }
        Some(engine.take_sequences_holding_writes(numbers)?)
    } else {
        None
    };
    let seqno_of = |f: &Staged| first.map(|g| if f.tombstone { g } else { g + numbers - 1 });
    let published = first.map(|g| g + numbers - 1);
    // Transactions whose snapshot is older conflict on these keys (`core/ingested_ranges.rs`).
    // Files that keep sequence 0 while snapshots live (no `snapshot_consistency`) count as
    // written after every write so far: a snapshot taken later at the same sequence conflicts
    // too, until the next write. With no snapshot no transaction predates them (new ones wait
    // for the gate the caller holds).
    let after = published.or_else(|| {
        let live = !db.snapshots().sequences().is_empty();
        live.then(|| db.versions().visible_sequence() + 1)
    });
    install(db, tree, files, seqno_of, &plan.excised, |_| {
        let oldest = db.snapshots().sequences().first().copied();
        tree.ingested
            .forget_up_to(oldest.unwrap_or_else(|| db.versions().visible_sequence()));
        if let Some(after) = after {
            record_ingested(tree, files, after);
        }
        if let Some(last) = published {
            db.versions().publish_sequence(last);
        }
    })
}

/// Records the files' key ranges in `tree`'s ingested ranges (see `core/ingested_ranges.rs`).
fn record_ingested(tree: &KeyspaceTree, files: &[Staged], after: u64) {
    for f in files {
        let (start, end) = f.user_range();
        tree.ingested
            .record(after, start, end, f.largest.is_range_end_sentinel());
    }
}

/// Whether `tree`'s memtables, active or frozen, hold any write.
fn memtables_hold_writes(engine: &Engine, tree: &KeyspaceTree) -> Result<bool> {
    let state = engine.shared().state().lock();
    let t = state
        .trees
        .get(&tree.id)
        .ok_or_else(|| tree.dropped_error())?;
    Ok(!t.mem.is_empty() || !t.imm.is_empty())
}

/// Whether a memtable of `tree` holds a key or range deletion in any file's range.
fn memtables_overlap(engine: &Engine, tree: &KeyspaceTree, files: &[Staged]) -> Result<bool> {
    let mems = {
        let state = engine.shared().state().lock();
        let t = state
            .trees
            .get(&tree.id)
            .ok_or_else(|| tree.dropped_error())?;
        let mut mems = vec![Arc::clone(&t.mem)];
        mems.extend(t.imm.iter().cloned());
        mems
    };
    Ok(mems.iter().any(|mem| {
        let deletions = mem.range_tombstones();
        files.iter().any(|f| {
            let mut it = MemtableIter::new(Arc::clone(mem));
            it.seek(InternalKey::for_lookup(f.smallest.user_key(), MAX_SEQUENCE).encoded());
            let point = it.valid() && {
                let user = siftdb_sstable::user_key_of(it.key());
                f.overlaps(user, user)
            };
            point
                || deletions.as_ref().is_some_and(|t| {
                    t.tombstones()
                        .any(|r| f.overlaps_deletion(&r.start, &r.end))
                })
        })
    }))
}

/// The level for `file`: the deepest where no table at or above it overlaps it (L0 when L0
/// does; FIFO keeps every table in L0), and whether anything in the tree overlaps it.
fn place(
    version: &Version,
    tree: &KeyspaceTree,
    file: &Staged,
    excised: &[(usize, u64)],
) -> (usize, bool) {
    let overlapping = |level: usize| {
        version.level(level).iter().any(|t| {
            !excised.contains(&(level, t.meta.number))
                && file.overlaps(t.smallest_user_key(), t.largest_user_key())
        })
    };
    let fifo =
        tree.options().compaction_style == crate::base::compaction_style::CompactionStyle::Fifo;
    let mut chosen = 0;
    for level in 0..version.num_levels() {
        if overlapping(level) {
            return (chosen, true);
        }
        if !fifo {
            chosen = level;
        }
    }
    (chosen, false)
}

/// Opens the staged tables, each at its `seqno_of`, and adds them to the tree by one edit that
/// also deletes the `excised` tables (level, number). `on_install` runs under the state lock
/// before readers see the new version: the caller publishes the files' sequence there, so no
/// reader pairs the new version (excised tables gone, files at a sequence not yet visible)
/// with the old sequence.
fn install(
    db: &Shared,
    tree: &KeyspaceTree,
    files: &[Staged],
    seqno_of: impl Fn(&Staged) -> Option<u64>,
    excised: &[(usize, u64)],
    on_install: impl FnOnce(&mut crate::core::state::DbState),
) -> Result<()> {
    let mut edit = VersionEdit {
        deleted: excised.to_vec(),
        ..VersionEdit::default()
    };
    let mut tables = Vec::with_capacity(files.len());
    for f in files {
        let meta = f.meta(seqno_of(f));
        tables.push(crate::jobs::table_io::open_table(
            db,
            &tree.options(),
            f.level,
            &meta,
        )?);
        edit.added.push((f.level, meta));
    }
    db.versions()
        .log_and_apply(tree, edit, &tables, on_install)?;
    for (_, number) in excised {
        db.uncache_table(*number);
    }
    Ok(())
}
