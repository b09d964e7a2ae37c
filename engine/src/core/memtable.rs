//! The memtable: a concurrent skiplist of internal keys, flushed to an L0 table when full.
//!
//! * Keys and values are copied once into the memtable's arena (`core/arena.rs`): an insert costs
//!   one copy and no allocation beyond the skiplist node, a flush reads entries in place, and a
//!   flushed memtable is freed in a few chunks. The skiplist holds borrows of the arena typed
//!   `'static` inside this file only; the skiplist is dropped before the arena (field order), and
//!   every accessor shortens a borrow to the memtable's.
//! * Skiplist keys carry their user key's head (`core/key_head.rs`) inline, so comparisons rarely
//!   follow a key's pointer.
//! * Range tombstones (`Db::delete_range`) are kept apart, in the memtable's own list, never among
//!   the point entries; readers get them fragmented, built by the first reader after a change and
//!   shared until the next.
//! * With `memtable_prefix_bloom_size_ratio`, a bloom of prefixes (and whole keys) lets lookups
//!   and prefix scans pass the memtable by (`core/memtable_bloom.rs`); the writer inserts into the
//!   bloom before the skiplist, so a reader that can see an entry finds it in the bloom.
//! * A memtable records the oldest WAL that may hold its writes (an empty one moves up to the
//!   newest at each switch), which keeps that WAL alive until the memtable is flushed.

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_skiplist::map::Entry;
use crossbeam_skiplist::SkipMap;
use parking_lot::Mutex;
use siftdb_sstable::{
    compare_internal, pack_trailer, user_key_of, FragmentedRangeTombstones, InternalKey, Lookup,
    ParsedKey, RangeTombstone, ValueKind,
};

use crate::base::event_listener::FlushReason;
use crate::core::arena::Arena;
use crate::core::key_head::KeyHead;
use crate::core::memtable_bloom::MemtableBloom;

/// Per-entry bookkeeping charged on top of key and value bytes (skiplist node, pointers).
const ENTRY_OVERHEAD: usize = 64;

/// A skiplist key: an encoded internal key with its user key's [`KeyHead`] inline.
///
/// Why: an insert or lookup compares its key with a few dozen skiplist keys, and comparing
/// encoded keys directly means following each one's pointer and calling `memcmp` (together
/// about a third of a random fill's time in profiles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MemKey<'a> {
    head: KeyHead,
    encoded: &'a [u8],
}

impl<'a> MemKey<'a> {
    /// The key of `encoded`, an encoded internal key (at least its 8-byte trailer).
    fn new(encoded: &'a [u8]) -> MemKey<'a> {
        MemKey {
            head: KeyHead::of(user_key_of(encoded)),
            encoded,
        }
    }

    /// The key of `encoded` if it is long enough to be an encoded internal key.
    fn parse(encoded: &'a [u8]) -> Option<MemKey<'a>> {
        ParsedKey::parse(encoded).map(|_| MemKey::new(encoded))
    }

    fn user_key(&self) -> &'a [u8] {
        user_key_of(self.encoded)
    }

    fn parsed(&self) -> ParsedKey<'a> {
        ParsedKey::parse(self.encoded).unwrap_or(ParsedKey {
            user_key: self.encoded,
            sequence: 0,
            kind: ValueKind::Put,
        })
    }
}

impl PartialOrd for MemKey<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for MemKey<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.head
            .cmp_then(other.head, || compare_internal(self.encoded, other.encoded))
    }
}

/// A key of the skiplist: a [`MemKey`] of bytes in the memtable's arena. `'static` stands for
/// "as long as the memtable": the bytes live in `Memtable::arena`, which is dropped after the
/// skiplist, and this module hands them out only through borrows of the memtable
/// ([`StoredKey::key`], [`StoredValue::bytes`] shorten the lifetime), never as `'static`.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct StoredKey(MemKey<'static>);

impl StoredKey {
    fn key(&self) -> MemKey<'_> {
        self.0
    }
}

impl<'a> std::borrow::Borrow<MemKey<'a>> for StoredKey {
    fn borrow(&self) -> &MemKey<'a> {
        &self.0
    }
}

// The skiplist may drop a replaced entry's key and value after the memtable (and its arena) is
// gone (crossbeam's deferred destruction): sound only while dropping them reads nothing.
const _: () =
    assert!(!std::mem::needs_drop::<StoredKey>() && !std::mem::needs_drop::<StoredValue>());

/// A value of the skiplist: bytes in the memtable's arena (see [`StoredKey`]).
#[derive(Debug)]
struct StoredValue(&'static [u8]);

impl StoredValue {
    fn bytes(&self) -> &[u8] {
        self.0
    }
}

/// Result of a memtable lookup (the benchmarks' and tests' API; the engine uses
/// [`Memtable::get_into`]).
#[cfg(any(test, feature = "internals"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemGet {
    /// The newest visible version is this value.
    Found(Vec<u8>),
    /// The newest visible version is a tombstone.
    Deleted,
    /// No visible version here.
    NotFound,
}

/// An in-memory sorted run. Writers insert under the engine's write lock; readers read
/// concurrently without locks.
#[derive(Debug)]
pub struct Memtable {
    /// The entries, their keys and values in `arena` (declared first: dropped before it).
    map: SkipMap<StoredKey, StoredValue>,
    size: AtomicUsize,
    /// The oldest WAL that may hold this memtable's writes (moved forward while the memtable is
    /// empty, so an idle keyspace does not keep old WALs alive).
    wal_number: AtomicU64,
    /// Range tombstones, kept apart from the point entries (RocksDB's range-del memtable).
    range_dels: Mutex<RangeDels>,
    /// Whether `range_dels` holds any: readers of a memtable without them never lock it.
    has_range_dels: AtomicBool,
    /// Merge operands inserted.
    merge_operands: AtomicU64,
    /// The smallest sequence number inserted (`u64::MAX` while empty): every write of the tree
    /// that is already in its tables is older, which lets a transaction's validation stop at
    /// the memtables (`paths/conflict.rs`).
    first_sequence: AtomicU64,
    /// Prefixes (and optionally whole keys) of the entries, asked before the skiplist.
    bloom: Option<MemtableBloom>,
    /// The bytes of every key and value in `map`.
    arena: Arena,
    /// Why it was sealed (a [`FlushReason`] as `seal_code`), for its flush's events.
    sealed_for: std::sync::atomic::AtomicU8,
}

/// Bytes of the skiplist's head node: its entry's header and a tower of the maximum height
/// (crossbeam-skiplist's 32 levels of one pointer).
const SKIPLIST_HEAD_BYTES: usize = 3 * std::mem::size_of::<usize>() + 32 * 8;

/// Bytes of one skiplist node, estimated: a header (reference count and height), the key and
/// value (two borrowed slices, 16 bytes each) and a tower of two pointers on average (a node
/// reaches each next level with probability 1/2), rounded up to the allocator's 16 bytes.
const SKIPLIST_NODE_BYTES: usize = 64;

/// The code of `reason` in [`Memtable`]'s `sealed_for`.
fn seal_code(reason: FlushReason) -> u8 {
    match reason {
        FlushReason::WriteBufferFull => 0,
        FlushReason::WalFull => 1,
        FlushReason::WriteBufferManager => 2,
        FlushReason::Manual => 3,
        FlushReason::ErrorRecovery => 4,
    }
}

/// A memtable's range tombstones as written, and their fragmented form, built by the first
/// reader after a change and shared until the next (fragmenting is O(n log n); reads are many).
#[derive(Debug, Default)]
struct RangeDels {
    written: Vec<RangeTombstone>,
    fragmented: Option<Arc<FragmentedRangeTombstones>>,
}

impl Memtable {
    /// An empty memtable whose writes are logged in WAL `wal_number`.
    pub fn new(wal_number: u64) -> Memtable {
        Memtable {
            map: SkipMap::new(),
            size: AtomicUsize::new(0),
            wal_number: AtomicU64::new(wal_number),
            range_dels: Mutex::new(RangeDels::default()),
            has_range_dels: AtomicBool::new(false),
            merge_operands: AtomicU64::new(0),
            first_sequence: AtomicU64::new(u64::MAX),
            bloom: None,
            arena: Arena::default(),
            sealed_for: std::sync::atomic::AtomicU8::new(seal_code(FlushReason::Manual)),
        }
    }

    /// Records why the memtable was sealed (made immutable).
    pub(crate) fn seal(&self, reason: FlushReason) {
        self.sealed_for.store(seal_code(reason), Ordering::Relaxed);
    }

    /// Why the memtable was sealed ([`FlushReason::Manual`] if it never was).
    pub(crate) fn sealed_for(&self) -> FlushReason {
        [
            FlushReason::WriteBufferFull,
            FlushReason::WalFull,
            FlushReason::WriteBufferManager,
            FlushReason::Manual,
            FlushReason::ErrorRecovery,
        ]
        .into_iter()
        .find(|r| seal_code(*r) == self.sealed_for.load(Ordering::Relaxed))
        .unwrap_or(FlushReason::Manual)
    }

    /// An empty memtable of a tree with `options` (with the memtable bloom they ask for).
    pub(crate) fn for_keyspace(
        wal_number: u64,
        options: &crate::base::options::Options,
    ) -> Memtable {
        Memtable {
            bloom: MemtableBloom::for_options(options),
            ..Memtable::new(wal_number)
        }
    }

    /// Inserts one entry. A [`ValueKind::RangeDelete`] is a range tombstone: `key` is its start
    /// and `value` its end.
    pub fn insert(&self, key: &[u8], sequence: u64, kind: ValueKind, value: &[u8]) {
        self.size
            .fetch_add(key.len() + value.len() + ENTRY_OVERHEAD, Ordering::Relaxed);
        // A load first: only a memtable's first inserts write the shared line.
        if sequence < self.first_sequence.load(Ordering::Relaxed) {
            self.first_sequence.fetch_min(sequence, Ordering::Relaxed);
        }
        if kind == ValueKind::RangeDelete {
            let mut dels = self.range_dels.lock();
            dels.written.push(RangeTombstone {
                start: key.to_vec(),
                end: value.to_vec(),
                sequence,
            });
            dels.fragmented = None;
            self.has_range_dels.store(true, Ordering::Release);
            return;
        }
        if kind == ValueKind::Merge {
            self.merge_operands.fetch_add(1, Ordering::Relaxed);
        }
        // Before the skiplist: a reader that finds the entry must find it in the bloom too.
        if let Some(bloom) = &self.bloom {
            bloom.insert(key);
        }
        let trailer = pack_trailer(sequence, kind).to_le_bytes();
        let copy = self.arena.copy(&[key, &trailer, value]);
        let (encoded, value) = copy.split_at(key.len() + trailer.len());
        // SAFETY: the copies live in `self.arena`, which is dropped after `self.map` (field
        // order) and never frees or changes them before; the map keeps them as `'static` only
        // inside this module, which reads them through borrows of `self` (see `StoredKey`).
        let (encoded, value): (&'static [u8], &'static [u8]) =
            unsafe { (&*(encoded as *const [u8]), &*(value as *const [u8])) };
        self.map
            .insert(StoredKey(MemKey::new(encoded)), StoredValue(value));
    }

    /// Approximate memory used (the bloom's filters included).
    pub fn approximate_size(&self) -> usize {
        self.size.load(Ordering::Relaxed) + self.bloom.as_ref().map_or(0, MemtableBloom::size_bytes)
    }

    /// Heap bytes the memtable holds (RocksDB's `ApproximateMemoryUsage`, for
    /// `siftdb.memtables-memory-bytes`): its arena's chunks, written or not, its skiplist's
    /// head and nodes, and its bloom, so an empty memtable costs its fixed part. The flush
    /// trigger counts [`approximate_size`](Memtable::approximate_size) instead: the data.
    pub fn memory_usage(&self) -> usize {
        std::mem::size_of::<Memtable>()
            + SKIPLIST_HEAD_BYTES
            + self.len() * SKIPLIST_NODE_BYTES
            + self.arena.reserved_bytes()
            + self.bloom.as_ref().map_or(0, MemtableBloom::size_bytes)
    }

    /// Whether the memtable may hold a point entry of `key`, by its bloom (`true` without one):
    /// `false` is certain. Range tombstones are not in the bloom.
    pub(crate) fn may_contain_key(&self, key: &[u8]) -> bool {
        self.bloom.as_ref().is_none_or(|b| b.may_contain_key(key))
    }

    /// Whether the memtable may hold a point entry of the prefix hashed as `prefix_hash` (see
    /// `KeyspaceTree::prefix_hash`), by its bloom (`true` without one): `false` is certain.
    pub(crate) fn may_contain_prefix_hash(&self, prefix_hash: u64) -> bool {
        self.bloom
            .as_ref()
            .is_none_or(|b| b.may_contain_prefix_hash(prefix_hash))
    }

    /// Whether the memtable has a bloom.
    pub(crate) fn has_bloom(&self) -> bool {
        self.bloom.is_some()
    }

    /// Point entries (range tombstones not counted).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// The smallest sequence number inserted, `None` while nothing was.
    pub(crate) fn first_sequence(&self) -> Option<u64> {
        let first = self.first_sequence.load(Ordering::Relaxed);
        (first != u64::MAX).then_some(first)
    }

    /// Merge operands inserted.
    pub fn merge_operands(&self) -> u64 {
        self.merge_operands.load(Ordering::Relaxed)
    }

    /// Whether the memtable holds nothing: no point entry and no range tombstone.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty() && !self.has_range_dels.load(Ordering::Acquire)
    }

    /// The range tombstones, fragmented (`None` when there are none: the common case costs one
    /// atomic load).
    pub fn range_tombstones(&self) -> Option<Arc<FragmentedRangeTombstones>> {
        if !self.has_range_dels.load(Ordering::Acquire) {
            return None;
        }
        let mut dels = self.range_dels.lock();
        let dels = &mut *dels;
        let fragmented = dels.fragmented.get_or_insert_with(|| {
            Arc::new(FragmentedRangeTombstones::new(dels.written.iter().cloned()))
        });
        Some(Arc::clone(fragmented))
    }

    /// The sequence number of the newest range tombstone visible at `snapshot` that covers
    /// `key`, if any.
    pub fn covering_tombstone(&self, key: &[u8], snapshot: u64) -> Option<u64> {
        self.range_tombstones()?.max_covering(key, snapshot)
    }

    /// The oldest WAL that may hold this memtable's writes.
    pub fn wal_number(&self) -> u64 {
        self.wal_number.load(Ordering::Acquire)
    }

    /// Moves an empty memtable to a newer WAL (the caller owns the write path, so nothing is
    /// being inserted).
    pub(crate) fn move_to_wal(&self, wal_number: u64) {
        if self.is_empty() {
            self.wal_number.store(wal_number, Ordering::Release);
        }
    }

    /// The newest version of `key` visible at `snapshot`.
    #[cfg(any(test, feature = "internals"))]
    pub fn get(&self, key: &[u8], snapshot: u64) -> MemGet {
        let mut value = Vec::new();
        match self.get_into(key, snapshot, &mut value) {
            // The benchmarks' and tests' view: an expiring value as stored (expiry first).
            Lookup::Found | Lookup::FoundExpiring | Lookup::Merge | Lookup::FoundBlob => {
                MemGet::Found(value)
            }
            Lookup::Deleted => MemGet::Deleted,
            Lookup::NotFound => MemGet::NotFound,
        }
    }

    /// [`Memtable::get`] copying a found value into `value` (cleared first; untouched unless
    /// the result is [`Lookup::Found`]).
    #[cfg(any(test, feature = "internals"))]
    pub fn get_into(&self, key: &[u8], snapshot: u64, value: &mut Vec<u8>) -> Lookup {
        self.get_versioned(key, snapshot, value).0
    }

    /// [`Memtable::get_into`], with the sequence number of the version found (0 when none).
    /// Range tombstones are not consulted (see [`Memtable::covering_tombstone`]).
    pub fn get_versioned(&self, key: &[u8], snapshot: u64, value: &mut Vec<u8>) -> (Lookup, u64) {
        let target = InternalKey::for_lookup(key, snapshot);
        let target = MemKey::new(target.encoded());
        let Some(entry) = self.map.lower_bound(Bound::Included(&target)) else {
            return (Lookup::NotFound, 0);
        };
        let parsed = entry.key().key().parsed();
        if parsed.user_key != key {
            return (Lookup::NotFound, 0);
        }
        let found = match parsed.kind {
            ValueKind::Put => {
                value.clear();
                value.extend_from_slice(entry.value().bytes());
                Lookup::Found
            }
            ValueKind::ExpiringPut => {
                value.clear();
                value.extend_from_slice(entry.value().bytes());
                Lookup::FoundExpiring
            }
            ValueKind::Merge => {
                value.clear();
                value.extend_from_slice(entry.value().bytes());
                Lookup::Merge
            }
            // Never written to a memtable (flushes make blob indexes); answered as a table
            // would, for the read path to resolve.
            ValueKind::BlobIndex => {
                value.clear();
                value.extend_from_slice(entry.value().bytes());
                Lookup::FoundBlob
            }
            ValueKind::Delete | ValueKind::RangeDelete => Lookup::Deleted,
        };
        (found, parsed.sequence)
    }

    /// The smallest and largest user keys of the point entries, or `None` when there are none.
    pub fn user_key_range(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let first = self.map.front()?;
        let last = self.map.back()?;
        Some((
            first.key().key().user_key().to_vec(),
            last.key().key().user_key().to_vec(),
        ))
    }

    /// Calls `f` with each entry's encoded internal key and value, in internal-key order, read
    /// in place: the flush's path (cloning every key and value into owned buffers cost two
    /// allocations and two frees per entry).
    pub(crate) fn try_for_each_entry<E>(
        &self,
        mut f: impl FnMut(&[u8], &[u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        for entry in self.map.iter() {
            f(entry.key().key().encoded, entry.value().bytes())?;
        }
        Ok(())
    }

    /// Calls `f` with each distinct user key, in order (the versions of a key are adjacent):
    /// what a flush adds to the tree's filter index, without copying entries.
    pub(crate) fn for_each_user_key(&self, mut f: impl FnMut(&[u8])) {
        let mut last: Option<Entry<'_, StoredKey, StoredValue>> = None;
        for entry in self.map.iter() {
            let user_key = entry.key().key().user_key();
            if last
                .as_ref()
                .is_some_and(|l| l.key().key().user_key() == user_key)
            {
                continue;
            }
            f(user_key);
            last = Some(entry);
        }
    }
}

/// A position in a memtable's skiplist: an entry (reference-counted by the skiplist, so it
/// stays valid while held) or none.
type Position<'a> = Option<Entry<'a, StoredKey, StoredValue>>;

self_cell::self_cell!(
    /// A skiplist position together with the memtable it points into.
    struct Cursor {
        owner: Arc<Memtable>,
        #[covariant]
        dependent: Position,
    }
);

/// A cursor over a memtable that owns it (an `Arc`), so iterators need no borrow of the `Db`.
/// It holds a skiplist entry: a step is one link followed, in either direction, and the key and
/// value are read in place (nothing is copied).
pub struct MemtableIter {
    cursor: Cursor,
}

impl std::fmt::Debug for MemtableIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemtableIter")
            .field("valid", &self.valid())
            .finish()
    }
}

impl MemtableIter {
    /// An unpositioned cursor.
    pub fn new(mem: Arc<Memtable>) -> MemtableIter {
        MemtableIter {
            cursor: Cursor::new(mem, |_| None),
        }
    }

    fn entry(&self) -> Option<&Entry<'_, StoredKey, StoredValue>> {
        self.cursor.borrow_dependent().as_ref()
    }

    /// Whether the cursor is on an entry.
    pub fn valid(&self) -> bool {
        self.entry().is_some()
    }

    /// Current internal key (encoded).
    pub fn key(&self) -> &[u8] {
        self.entry().map_or(&[], |e| e.key().key().encoded)
    }

    /// Current value.
    pub fn value(&self) -> &[u8] {
        self.entry().map_or(&[], |e| e.value().bytes())
    }

    /// First entry.
    pub fn seek_to_first(&mut self) {
        self.cursor
            .with_dependent_mut(|mem, position| *position = mem.map.front());
    }

    /// Last entry.
    pub fn seek_to_last(&mut self) {
        self.cursor
            .with_dependent_mut(|mem, position| *position = mem.map.back());
    }

    /// First entry ≥ `target` (an encoded internal key; an unparsable one seeks to the start).
    pub fn seek(&mut self, target: &[u8]) {
        let target = MemKey::parse(target);
        self.cursor.with_dependent_mut(|mem, position| {
            *position = match &target {
                Some(t) => mem.map.lower_bound(Bound::Included(t)),
                None => mem.map.front(),
            }
        });
    }

    /// Last entry ≤ `target` (an encoded internal key; an unparsable one seeks to the end).
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        let target = MemKey::parse(target);
        self.cursor.with_dependent_mut(|mem, position| {
            *position = match &target {
                Some(t) => mem.map.upper_bound(Bound::Included(t)),
                None => mem.map.back(),
            }
        });
    }

    /// Next entry.
    pub fn next(&mut self) {
        self.cursor.with_dependent_mut(|_, position| {
            if position.as_mut().is_some_and(|e| !e.move_next()) {
                *position = None;
            }
        });
    }

    /// Previous entry.
    pub fn prev(&mut self) {
        self.cursor.with_dependent_mut(|_, position| {
            if position.as_mut().is_some_and(|e| !e.move_prev()) {
                *position = None;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb_sstable::ParsedKey;

    fn parse(key: &[u8]) -> Option<ParsedKey<'_>> {
        ParsedKey::parse(key)
    }

    #[test]
    fn memtable_returns_newest_visible_version() {
        let m = Memtable::new(1);
        m.insert(b"k", 1, ValueKind::Put, b"v1");
        m.insert(b"k", 3, ValueKind::Delete, b"");
        m.insert(b"k", 5, ValueKind::Put, b"v5");
        m.insert(b"j", 9, ValueKind::Put, b"j");
        assert_eq!(m.get(b"k", 0), MemGet::NotFound);
        assert_eq!(m.get(b"k", 2), MemGet::Found(b"v1".to_vec()));
        assert_eq!(m.get(b"k", 4), MemGet::Deleted);
        assert_eq!(m.get(b"k", 99), MemGet::Found(b"v5".to_vec()));
        assert_eq!(m.get(b"l", 99), MemGet::NotFound);
        assert!(m.approximate_size() > 0);
    }

    #[test]
    fn memkey_order_is_internal_key_order() {
        let users: [&[u8]; 9] = [
            b"",
            b"\0",
            b"a",
            b"a\0",
            b"abcdefghijklmnop",
            b"abcdefghijklmnop\0",
            b"abcdefghijklmnoq",
            b"abcdefghijklmnopq",
            b"\xff",
        ];
        let keys: Vec<InternalKey> = users
            .iter()
            .flat_map(|u| [1u64, 7].map(|seq| InternalKey::new(u, seq, ValueKind::Put)))
            .collect();
        for a in &keys {
            for b in &keys {
                assert_eq!(
                    MemKey::new(a.encoded()).cmp(&MemKey::new(b.encoded())),
                    a.cmp(b),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }

    #[test]
    fn memtable_iter_walks_in_order() {
        let m = Arc::new(Memtable::new(1));
        for (i, k) in [b"c", b"a", b"b"].iter().enumerate() {
            m.insert(*k, i as u64 + 1, ValueKind::Put, b"v");
        }
        let mut it = MemtableIter::new(Arc::clone(&m));
        it.seek_to_first();
        let mut seen = Vec::new();
        while it.valid() {
            seen.push(parse(it.key()).unwrap().user_key.to_vec());
            it.next();
        }
        assert_eq!(seen, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        it.seek(InternalKey::for_lookup(b"b", 100).encoded());
        assert_eq!(parse(it.key()).unwrap().user_key, b"b");
        // Backward, and across direction changes.
        it.prev();
        assert_eq!(parse(it.key()).unwrap().user_key, b"a");
        it.prev();
        assert!(!it.valid());
        it.seek_to_last();
        assert_eq!(parse(it.key()).unwrap().user_key, b"c");
        it.seek_for_prev(InternalKey::new(b"bb", 0, ValueKind::Delete).encoded());
        assert_eq!(parse(it.key()).unwrap().user_key, b"b");
        it.next();
        assert_eq!(parse(it.key()).unwrap().user_key, b"c");
        it.next();
        assert!(!it.valid());
    }

    #[test]
    fn memtable_iter_keeps_its_entry_while_writers_insert_around_it() {
        // The cursor's entry borrows from the memtable it owns: inserts before and after it
        // (on another thread) neither move nor invalidate it, and the walk then sees them.
        let m = Arc::new(Memtable::new(1));
        m.insert(b"m", 1, ValueKind::Put, b"middle");
        let mut it = MemtableIter::new(Arc::clone(&m));
        it.seek_to_first();
        let writer = {
            let m = Arc::clone(&m);
            std::thread::spawn(move || {
                for i in 0..1000u32 {
                    let k = format!("{}{i:04}", if i % 2 == 0 { 'a' } else { 'z' });
                    m.insert(k.as_bytes(), 2, ValueKind::Put, b"v");
                }
            })
        };
        assert_eq!(it.value(), b"middle");
        writer.join().unwrap();
        drop(m); // the iterator alone keeps the memtable alive
        assert_eq!(it.value(), b"middle");
        let mut after = 0;
        while it.valid() {
            after += 1;
            it.next();
        }
        assert_eq!(after, 501); // "m" and the 500 "z" keys
        it.seek_to_last();
        let mut all = 0;
        while it.valid() {
            all += 1;
            it.prev();
        }
        assert_eq!(all, 1001);
    }
}
