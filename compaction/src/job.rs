//! The compaction job's merge: which entries survive into the outputs.
//!
//! Versions of a user key arrive newest first. An entry is needed only if some reader can see
//! it: a live snapshot, or the current state. Snapshots cut the sequence space into stripes
//! (stripe of `s` = number of snapshots older than `s`); within one stripe only the newest version
//! of a key is visible to anyone, so older versions in the same stripe are dropped. A tombstone in
//! the oldest stripe (visible to every snapshot) is dropped when nothing older of its key can
//! exist below the output (`bottommost`): it then hides nothing.

use siftdb_sstable::{FragmentedRangeTombstones, InternalKey, ParsedKey, SstError, ValueKind};

use siftdb_sstable::InternalIterator;

/// What decides garbage collection.
#[derive(Debug, Clone, Default)]
pub struct GcRules {
    /// Sequence numbers of live snapshots, ascending.
    pub snapshots: Vec<u64>,
    /// No level below the output can hold any of the compacted keys.
    pub bottommost: bool,
    /// Asked about the newest version of each key that no live snapshot sees (see
    /// [`EntryFilter`]); `None`: every entry is kept.
    pub filter: Option<std::sync::Arc<dyn EntryFilter>>,
    /// Combines merge operands with what they apply to; `None`: operands are kept as they are
    /// (and so is every version below them).
    pub merger: Option<std::sync::Arc<dyn OperandMerger>>,
    /// The range tombstones of the compaction's inputs: an entry one of them deletes within
    /// the entry's own snapshot stripe is seen by no reader and dropped.
    pub range_tombstones: Option<std::sync::Arc<FragmentedRangeTombstones>>,
}

impl std::fmt::Debug for dyn OperandMerger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OperandMerger")
    }
}

/// Combines merge operands ([`ValueKind::Merge`]) during compaction: the engine's merge
/// operator.
///
/// Within one snapshot stripe the operands of a key stack on its newest older version (the
/// *base*): with a value or a tombstone as base, or nothing at all below at the bottom of the
/// tree, they become one value ([`OperandMerger::full_merge`]); with the base out of reach (in
/// another stripe, a level below, or an expiring value, whose expiry a read judges) they may be
/// combined into one operand ([`OperandMerger::partial_merge`]). A failed merge keeps every
/// entry as it was: compaction never loses data to an operator's failure (reads report it).
pub trait OperandMerger: Send + Sync {
    /// `operands` (oldest first) applied to `existing`; `None` if the operator failed.
    fn full_merge(
        &self,
        user_key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>>;
    /// `operands` (oldest first) combined into one operand; `None` if they cannot be.
    fn partial_merge(&self, user_key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>>;
}

impl std::fmt::Debug for dyn EntryFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EntryFilter")
    }
}

/// What an [`EntryFilter`] decided for one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterDecision {
    /// Keep the value as it is.
    Keep,
    /// Remove the key: a tombstone at the entry's sequence number takes its place (so an older
    /// version kept for a snapshot or in a level below cannot resurface), or nothing at all at
    /// the bottom with no snapshot, where every older version is dropped too.
    Remove,
    /// Keep the key with this value instead.
    ChangeValue(Vec<u8>),
    /// Keep the key with this value, stored as an entry of this kind (a value kind): how a
    /// changed value of a blob index ([`ValueKind::BlobIndex`]) is stored inline.
    ChangeValueAs(ValueKind, Vec<u8>),
}

/// A user's decision on values during compaction (the engine's `CompactionFilter`, TTL).
///
/// Asked only about a value that is the newest version of its key in the compaction and that no
/// live snapshot can see (removing or changing it changes no snapshot's answer); tombstones are
/// never shown. An `Err` stops the compaction (its outputs are discarded, nothing is lost).
pub trait EntryFilter: Send + Sync {
    /// The decision for `value` (as stored) of `user_key`, an entry of `kind` (a value kind:
    /// `Put`, `ExpiringPut` or `BlobIndex`). A changed value is stored as given, with the same
    /// kind ([`FilterDecision::ChangeValue`]) or the one given
    /// ([`FilterDecision::ChangeValueAs`]).
    fn decide(
        &self,
        user_key: &[u8],
        kind: ValueKind,
        value: &[u8],
    ) -> Result<FilterDecision, SstError>;
}

impl GcRules {
    fn stripe(&self, sequence: u64) -> usize {
        self.snapshots.partition_point(|&s| s < sequence)
    }

    /// Whether a range tombstone deletes `user_key` at `sequence` for every reader that could
    /// see that version: one newer than it in the same snapshot stripe.
    fn range_deleted(&self, user_key: &[u8], sequence: u64) -> bool {
        let Some(tombstones) = &self.range_tombstones else {
            return false;
        };
        let Some((_, _, sequences)) = tombstones.fragment_at(user_key) else {
            return false;
        };
        // Descending: the last one above `sequence` is the oldest newer tombstone, the one in
        // the lowest stripe.
        let oldest_newer = sequences.iter().take_while(|&&t| t > sequence).last();
        oldest_newer.is_some_and(|&t| self.stripe(t) == self.stripe(sequence))
    }
}

/// Counts of what the merge did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Entries read.
    pub entries_in: u64,
    /// Entries written.
    pub entries_out: u64,
    /// Versions dropped because a newer one hides them from every reader.
    pub shadowed_dropped: u64,
    /// Tombstones dropped at the bottom.
    pub tombstones_dropped: u64,
    /// Values the filter removed (a tombstone written, or nothing at the bottom).
    pub filter_removed: u64,
    /// Values the filter changed.
    pub filter_changed: u64,
    /// Runs of merge operands combined with their base into one value.
    pub merges_full: u64,
    /// Runs of merge operands combined into one operand.
    pub merges_partial: u64,
    /// Entries dropped because a range tombstone deletes them.
    pub range_deleted: u64,
}

/// Where surviving entries go. `user_key_boundary` is true when the entry starts a new user key
/// (outputs may only be cut there, so one key's versions never straddle two files of a level).
pub trait CompactionSink {
    /// Takes one surviving entry.
    fn add(&mut self, key: &[u8], value: &[u8], user_key_boundary: bool) -> Result<(), SstError>;
}

/// Drains `input` (positioned anywhere; it is rewound) into `sink`, applying `rules`.
pub fn merge_into(
    input: &mut dyn InternalIterator,
    rules: &GcRules,
    sink: &mut dyn CompactionSink,
) -> Result<MergeStats, SstError> {
    let mut stats = MergeStats::default();
    let mut current_key: Option<Vec<u8>> = None;
    let mut newer_stripe: Option<usize> = None;
    input.seek_to_first();
    while input.valid() {
        stats.entries_in += 1;
        let key = input.key();
        let parsed = ParsedKey::parse(key).ok_or_else(undecodable)?;
        let first_of_key = current_key.as_deref() != Some(parsed.user_key);
        if first_of_key {
            current_key = Some(parsed.user_key.to_vec());
            newer_stripe = None;
        }
        let stripe = rules.stripe(parsed.sequence);
        let shadowed = newer_stripe == Some(stripe);
        newer_stripe = Some(stripe);
        let unseen_by_snapshots = stripe == rules.snapshots.len();
        if !shadowed && rules.range_deleted(parsed.user_key, parsed.sequence) {
            stats.range_deleted += 1;
            input.next();
            continue;
        }
        if parsed.kind == ValueKind::Merge && !shadowed {
            let run = OperandRun::collect(input, rules, stripe, &mut stats)?;
            if run.left_base_in_stripe {
                // An expiring base stays, under the operands: not shadowed by them.
                newer_stripe = None;
            }
            run.write(rules, sink, first_of_key, &mut stats)?;
            continue;
        }
        if shadowed {
            stats.shadowed_dropped += 1;
        } else if parsed.kind == ValueKind::Delete && stripe == 0 && rules.bottommost {
            stats.tombstones_dropped += 1;
        } else if let (Some(filter), true, true) = (
            &rules.filter,
            first_of_key && unseen_by_snapshots,
            parsed.kind.is_value(),
        ) {
            match filter.decide(parsed.user_key, parsed.kind, input.value())? {
                FilterDecision::Keep => {
                    sink.add(key, input.value(), first_of_key)?;
                    stats.entries_out += 1;
                }
                FilterDecision::ChangeValue(value) => {
                    sink.add(key, &value, first_of_key)?;
                    stats.entries_out += 1;
                    stats.filter_changed += 1;
                }
                FilterDecision::ChangeValueAs(kind, value) if kind.is_value() => {
                    let changed = InternalKey::new(parsed.user_key, parsed.sequence, kind);
                    sink.add(changed.encoded(), &value, first_of_key)?;
                    stats.entries_out += 1;
                    stats.filter_changed += 1;
                }
                FilterDecision::ChangeValueAs(kind, _) => {
                    return Err(SstError::InvalidArgument(format!(
                        "a compaction filter changed a value into a {kind:?}"
                    )))
                }
                FilterDecision::Remove => {
                    stats.filter_removed += 1;
                    // At the bottom with no snapshot, every older version of the key is in
                    // this stripe and dropped as shadowed: nothing is left to hide.
                    if !(rules.bottommost && rules.snapshots.is_empty()) {
                        let tombstone =
                            InternalKey::new(parsed.user_key, parsed.sequence, ValueKind::Delete);
                        sink.add(tombstone.encoded(), &[], first_of_key)?;
                        stats.entries_out += 1;
                    }
                }
            }
        } else {
            sink.add(key, input.value(), first_of_key)?;
            stats.entries_out += 1;
        }
        input.next();
    }
    if let Some(e) = input.take_error() {
        return Err(e);
    }
    Ok(stats)
}

fn undecodable() -> SstError {
    SstError::Corruption {
        file: "compaction input".to_string(),
        offset: 0,
        reason: "undecodable internal key".to_string(),
    }
}

/// What a run of merge operands stacks on.
enum Base {
    /// A value or a tombstone of the same stripe, taken out of the input: (key, value).
    Taken(Vec<u8>, Vec<u8>),
    /// Nothing older of the key in this compaction.
    Nothing,
    /// A range tombstone deletes what is below (left in the input, to be dropped).
    Deleted,
    /// The base is out of reach: in an older stripe, or an expiring value or a blob index (left
    /// in the input).
    OutOfReach,
}

/// The merge operands of one key in one stripe, newest first, and what is below them.
struct OperandRun {
    user_key: Vec<u8>,
    /// (encoded key, operand), newest first.
    operands: Vec<(Vec<u8>, Vec<u8>)>,
    base: Base,
    /// The entry after the run is a value of the same key and stripe, left in the input.
    left_base_in_stripe: bool,
}

impl OperandRun {
    /// Takes the operands of the input's current key and `stripe` (the input is on the newest),
    /// and the value or tombstone under them if it is in the same stripe.
    fn collect(
        input: &mut dyn InternalIterator,
        rules: &GcRules,
        stripe: usize,
        stats: &mut MergeStats,
    ) -> Result<OperandRun, SstError> {
        let first = input.key().to_vec();
        let user_key = siftdb_sstable::user_key_of(&first).to_vec();
        let mut run = OperandRun {
            user_key,
            operands: vec![(first, input.value().to_vec())],
            base: Base::Nothing,
            left_base_in_stripe: false,
        };
        input.next();
        while input.valid() {
            let parsed = ParsedKey::parse(input.key()).ok_or_else(undecodable)?;
            if parsed.user_key != run.user_key.as_slice() {
                break;
            }
            let kind = parsed.kind;
            if rules.stripe(parsed.sequence) != stripe {
                run.base = Base::OutOfReach;
                break;
            }
            if rules.range_deleted(parsed.user_key, parsed.sequence) {
                // Deleted below the operands (the main loop drops what is covered).
                run.base = Base::Deleted;
                break;
            }
            // An expiring base is judged by reads; a blob's value is not read by compactions.
            if kind == ValueKind::ExpiringPut || kind == ValueKind::BlobIndex {
                run.base = Base::OutOfReach;
                run.left_base_in_stripe = true;
                break;
            }
            stats.entries_in += 1;
            let entry = (input.key().to_vec(), input.value().to_vec());
            input.next();
            if kind == ValueKind::Merge {
                run.operands.push(entry);
            } else {
                run.base = Base::Taken(entry.0, entry.1);
                break;
            }
        }
        if let Some(e) = input.take_error() {
            return Err(e);
        }
        Ok(run)
    }

    /// Writes the run: one value if the base is in reach (and the operator succeeds), else one
    /// combined operand, else the operands as they were; a base taken and not merged goes back.
    fn write(
        self,
        rules: &GcRules,
        sink: &mut dyn CompactionSink,
        first_of_key: bool,
        stats: &mut MergeStats,
    ) -> Result<(), SstError> {
        let newest = ParsedKey::parse(&self.operands[0].0).ok_or_else(undecodable)?;
        let oldest_first: Vec<&[u8]> = self.operands.iter().rev().map(|o| o.1.as_slice()).collect();
        let Some(merger) = &rules.merger else {
            return self.write_unchanged(sink, first_of_key, stats);
        };
        let existing = match &self.base {
            Base::Taken(key, value) => match ParsedKey::parse(key).map(|p| p.kind) {
                Some(ValueKind::Put) => Some(Some(value.as_slice())),
                Some(ValueKind::Delete) => Some(None),
                _ => return Err(undecodable()),
            },
            Base::Nothing if rules.bottommost => Some(None),
            Base::Deleted => Some(None),
            Base::Nothing | Base::OutOfReach => None,
        };
        if let Some(existing) = existing {
            if let Some(value) = merger.full_merge(&self.user_key, existing, &oldest_first) {
                let key = InternalKey::new(&self.user_key, newest.sequence, ValueKind::Put);
                sink.add(key.encoded(), &value, first_of_key)?;
                stats.entries_out += 1;
                stats.merges_full += 1;
                stats.shadowed_dropped += self.operands.len() as u64 - 1;
                return Ok(());
            }
        } else if self.operands.len() > 1
            && let Some(operand) = merger.partial_merge(&self.user_key, &oldest_first)
        {
            sink.add(&self.operands[0].0, &operand, first_of_key)?;
            stats.entries_out += 1;
            stats.merges_partial += 1;
            stats.shadowed_dropped += self.operands.len() as u64 - 1;
            return Ok(());
        }
        self.write_unchanged(sink, first_of_key, stats)
    }

    fn write_unchanged(
        self,
        sink: &mut dyn CompactionSink,
        mut first_of_key: bool,
        stats: &mut MergeStats,
    ) -> Result<(), SstError> {
        let base = match self.base {
            Base::Taken(key, value) => Some((key, value)),
            Base::Nothing | Base::OutOfReach | Base::Deleted => None,
        };
        for (key, value) in self.operands.into_iter().chain(base) {
            sink.add(&key, &value, first_of_key)?;
            first_of_key = false;
            stats.entries_out += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb_sstable::InternalKey;
    use siftdb_sstable::VecIter;

    #[derive(Default)]
    struct Collect(Vec<(String, u64, ValueKind, bool)>);
    impl CompactionSink for Collect {
        fn add(&mut self, key: &[u8], _value: &[u8], boundary: bool) -> Result<(), SstError> {
            let p = ParsedKey::parse(key).unwrap();
            self.0.push((
                String::from_utf8_lossy(p.user_key).into_owned(),
                p.sequence,
                p.kind,
                boundary,
            ));
            Ok(())
        }
    }

    fn input(entries: &[(&str, u64, ValueKind)]) -> VecIter {
        VecIter::new(
            entries
                .iter()
                .map(|(k, s, kind)| {
                    (
                        InternalKey::new(k.as_bytes(), *s, *kind).encoded().to_vec(),
                        Vec::new(),
                    )
                })
                .collect(),
        )
    }

    use ValueKind::{Delete as D, Put as P};

    #[test]
    fn merge_keeps_only_newest_without_snapshots() {
        let mut it = input(&[("a", 1, P), ("a", 5, P), ("a", 3, D), ("b", 2, P)]);
        let mut out = Collect::default();
        let stats = merge_into(&mut it, &GcRules::default(), &mut out).unwrap();
        assert_eq!(
            out.0,
            vec![("a".into(), 5, P, true), ("b".into(), 2, P, true)]
        );
        assert_eq!(stats.shadowed_dropped, 2);
    }

    #[test]
    fn merge_keeps_what_snapshots_see() {
        // Snapshot at 3 sees a@3 (a delete); snapshot at 1 sees a@1.
        let mut it = input(&[("a", 1, P), ("a", 2, P), ("a", 3, D), ("a", 5, P)]);
        let rules = GcRules {
            snapshots: vec![1, 3],
            bottommost: true,
            filter: None,
            merger: None,
            range_tombstones: None,
        };
        let mut out = Collect::default();
        merge_into(&mut it, &rules, &mut out).unwrap();
        let seqs: Vec<u64> = out.0.iter().map(|e| e.1).collect();
        assert_eq!(seqs, vec![5, 3, 1]);
        assert_eq!(
            out.0.iter().filter(|e| e.3).count(),
            1,
            "one boundary per user key"
        );
    }

    #[test]
    fn merge_drops_tombstones_only_at_the_bottom_and_when_no_snapshot_needs_them() {
        let entries = [("a", 4, D), ("a", 2, P), ("b", 6, D)];
        let mut out = Collect::default();
        merge_into(
            &mut input(&entries),
            &GcRules {
                snapshots: vec![],
                bottommost: false,
                filter: None,
                merger: None,
                range_tombstones: None,
            },
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out.0.len(),
            2,
            "not bottommost: tombstones kept, a@2 hidden"
        );
        let mut out = Collect::default();
        let stats = merge_into(
            &mut input(&entries),
            &GcRules {
                snapshots: vec![],
                bottommost: true,
                filter: None,
                merger: None,
                range_tombstones: None,
            },
            &mut out,
        )
        .unwrap();
        assert!(out.0.is_empty());
        assert_eq!(stats.tombstones_dropped, 2);
        // A snapshot at 3 still sees a@2, so a@4's tombstone must stay to hide it from newer
        // readers. b@6 is newer than the snapshot: kept (conservatively) until it is released.
        let mut out = Collect::default();
        merge_into(
            &mut input(&entries),
            &GcRules {
                snapshots: vec![3],
                bottommost: true,
                filter: None,
                merger: None,
                range_tombstones: None,
            },
            &mut out,
        )
        .unwrap();
        let kept: Vec<(String, u64)> = out.0.iter().map(|e| (e.0.clone(), e.1)).collect();
        assert_eq!(
            kept,
            vec![("a".into(), 4), ("a".into(), 2), ("b".into(), 6)]
        );
    }

    /// Removes "r…" keys, rewrites "c…" keys' values, keeps the rest; counts its calls.
    struct TestFilter(std::sync::atomic::AtomicUsize);
    impl EntryFilter for TestFilter {
        fn decide(
            &self,
            key: &[u8],
            _kind: ValueKind,
            _value: &[u8],
        ) -> Result<FilterDecision, SstError> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(match key.first() {
                Some(b'r') => FilterDecision::Remove,
                Some(b'c') => FilterDecision::ChangeValue(b"new".to_vec()),
                _ => FilterDecision::Keep,
            })
        }
    }

    /// What a filtered merge wrote, its counts, and the filter's calls.
    type Filtered = (Vec<(String, u64, ValueKind, bool)>, MergeStats, usize);

    fn filtered(
        entries: &[(&str, u64, ValueKind)],
        snapshots: Vec<u64>,
        bottommost: bool,
    ) -> Filtered {
        let filter = std::sync::Arc::new(TestFilter(Default::default()));
        let rules = GcRules {
            snapshots,
            bottommost,
            filter: Some(filter.clone()),
            merger: None,
            range_tombstones: None,
        };
        let mut out = Collect::default();
        let stats = merge_into(&mut input(entries), &rules, &mut out).unwrap();
        let calls = filter.0.load(std::sync::atomic::Ordering::Relaxed);
        (out.0, stats, calls)
    }

    #[test]
    fn the_filter_removes_with_a_tombstone_unless_nothing_older_can_resurface() {
        let entries = [("c", 5, P), ("k", 6, P), ("r", 7, P), ("r", 2, P)];
        // At the bottom without snapshots: r@7 goes, and r@2 with it (shadowed).
        let (out, stats, calls) = filtered(&entries, vec![], true);
        let keys: Vec<(String, u64, ValueKind)> =
            out.iter().map(|e| (e.0.clone(), e.1, e.2)).collect();
        assert_eq!(keys, vec![("c".into(), 5, P), ("k".into(), 6, P)]);
        assert_eq!(
            (stats.filter_removed, stats.filter_changed, calls),
            (1, 1, 3)
        );
        // Above the bottom: a tombstone replaces r@7, so an older r below cannot resurface.
        let (out, _, _) = filtered(&entries, vec![], false);
        assert!(out.contains(&("r".into(), 7, D, true)), "{out:?}");
        // A snapshot at 3 sees r@2: kept, and hidden from newer readers by r@7's tombstone.
        let (out, _, _) = filtered(&entries, vec![3], true);
        assert!(out.contains(&("r".into(), 7, D, true)), "{out:?}");
        assert!(out.contains(&("r".into(), 2, P, false)), "{out:?}");
    }

    #[test]
    fn the_filter_never_sees_what_a_snapshot_sees_or_tombstones() {
        // A snapshot at 6 sees c@5 and k@6: neither may change; r@7 is newer and may.
        let entries = [("c", 5, P), ("d", 9, D), ("k", 6, P), ("r", 7, P)];
        let (out, stats, calls) = filtered(&entries, vec![6], true);
        assert_eq!(calls, 1, "only r@7 is unseen by the snapshot");
        assert_eq!(stats.filter_changed, 0);
        assert!(out.contains(&("r".into(), 7, D, true)));
    }

    /// Concatenates operands onto the base with "+"; fails on an operand "bad".
    struct Concat;
    impl OperandMerger for Concat {
        fn full_merge(&self, _k: &[u8], existing: Option<&[u8]>, ops: &[&[u8]]) -> Option<Vec<u8>> {
            if ops.contains(&&b"bad"[..]) {
                return None;
            }
            let mut out = existing.map_or_else(|| b"_".to_vec(), <[u8]>::to_vec);
            for op in ops {
                out.push(b'+');
                out.extend_from_slice(op);
            }
            Some(out)
        }
        fn partial_merge(&self, _k: &[u8], ops: &[&[u8]]) -> Option<Vec<u8>> {
            Some(ops.join(&b'+'))
        }
    }

    /// Entries with values, merged with `Concat`: what came out, as (key, seq, kind, value).
    fn merged(
        entries: &[(&str, u64, ValueKind, &str)],
        snapshots: Vec<u64>,
        bottommost: bool,
        merger: bool,
    ) -> Vec<(String, u64, ValueKind, String)> {
        merged_under(entries, snapshots, bottommost, merger, None)
    }

    /// [`merged`] with range tombstones (start, end, sequence) among the inputs.
    fn merged_under(
        entries: &[(&str, u64, ValueKind, &str)],
        snapshots: Vec<u64>,
        bottommost: bool,
        merger: bool,
        tombstones: Option<&[(&str, &str, u64)]>,
    ) -> Vec<(String, u64, ValueKind, String)> {
        #[derive(Default)]
        struct Values(Vec<(String, u64, ValueKind, String)>);
        impl CompactionSink for Values {
            fn add(&mut self, key: &[u8], value: &[u8], _: bool) -> Result<(), SstError> {
                let p = ParsedKey::parse(key).unwrap();
                self.0.push((
                    String::from_utf8_lossy(p.user_key).into_owned(),
                    p.sequence,
                    p.kind,
                    String::from_utf8_lossy(value).into_owned(),
                ));
                Ok(())
            }
        }
        let mut it = VecIter::new(
            entries
                .iter()
                .map(|(k, s, kind, v)| {
                    let key = InternalKey::new(k.as_bytes(), *s, *kind);
                    (key.encoded().to_vec(), v.as_bytes().to_vec())
                })
                .collect(),
        );
        let rules = GcRules {
            snapshots,
            bottommost,
            filter: None,
            merger: merger
                .then(|| std::sync::Arc::new(Concat) as std::sync::Arc<dyn OperandMerger>),
            range_tombstones: tombstones.map(|t| {
                std::sync::Arc::new(FragmentedRangeTombstones::new(t.iter().map(|(a, b, s)| {
                    siftdb_sstable::RangeTombstone::new(a.as_bytes(), b.as_bytes(), *s)
                })))
            }),
        };
        let mut out = Values::default();
        merge_into(&mut it, &rules, &mut out).unwrap();
        out.0
    }

    use ValueKind::{ExpiringPut as X, Merge as M};

    fn row(k: &str, s: u64, kind: ValueKind, v: &str) -> (String, u64, ValueKind, String) {
        (k.into(), s, kind, v.into())
    }

    #[test]
    fn operands_on_a_value_become_one_value() {
        let e = [
            ("a", 1, P, "0"),
            ("a", 2, M, "x"),
            ("a", 3, M, "y"),
            ("b", 4, M, "z"),
        ];
        // Not at the bottom: b's single operand stays an operand.
        let out = merged(&e, vec![], false, true);
        assert_eq!(out, vec![row("a", 3, P, "0+x+y"), row("b", 4, M, "z")]);
        // At the bottom, nothing below b: its operand applies to nothing.
        let out = merged(&e, vec![], true, true);
        assert_eq!(out[1], row("b", 4, P, "_+z"));
        // A tombstone as base: the operands apply to nothing.
        let out = merged(&[("a", 1, D, ""), ("a", 2, M, "x")], vec![], false, true);
        assert_eq!(out, vec![row("a", 2, P, "_+x")]);
    }

    #[test]
    fn operands_without_their_base_combine_into_one_operand() {
        let out = merged(&[("a", 5, M, "x"), ("a", 6, M, "y")], vec![], false, true);
        assert_eq!(out, vec![row("a", 6, M, "x+y")]);
    }

    #[test]
    fn a_snapshot_between_operands_keeps_what_it_sees() {
        // Snapshot 2 sees a = 0+x; the current state is 0+x+y.
        let e = [("a", 1, P, "0"), ("a", 2, M, "x"), ("a", 3, M, "y")];
        let out = merged(&e, vec![2], false, true);
        assert_eq!(out, vec![row("a", 3, M, "y"), row("a", 2, P, "0+x")]);
    }

    #[test]
    fn operands_on_an_expiring_value_leave_it_for_reads_to_judge() {
        let e = [("a", 1, X, "exp"), ("a", 2, M, "x"), ("a", 3, M, "y")];
        let out = merged(&e, vec![], true, true);
        assert_eq!(out, vec![row("a", 3, M, "x+y"), row("a", 1, X, "exp")]);
    }

    #[test]
    fn without_an_operator_or_when_it_fails_everything_stays() {
        let e = [("a", 1, P, "0"), ("a", 2, M, "bad"), ("a", 3, M, "y")];
        let expected = vec![
            row("a", 3, M, "y"),
            row("a", 2, M, "bad"),
            row("a", 1, P, "0"),
        ];
        assert_eq!(merged(&e, vec![], true, false), expected);
        assert_eq!(merged(&e, vec![], true, true), expected);
    }

    #[test]
    fn range_tombstones_drop_what_they_delete_within_its_stripe() {
        let e = [
            ("a", 2, P, "a2"),
            ("b", 1, P, "b1"),
            ("b", 9, P, "b9"),
            ("c", 3, P, "c3"),
        ];
        let e = {
            let mut e = e.to_vec();
            e.sort_by(|x, y| x.0.cmp(y.0).then(y.1.cmp(&x.1)));
            e
        };
        let ts: &[(&str, &str, u64)] = &[("a", "c", 5)];
        // No snapshot: a@2 and b@1 go; b@9 (newer than the tombstone) and c (outside) stay.
        let out = merged_under(&e, vec![], false, false, Some(ts));
        let kept: Vec<(String, u64)> = out.iter().map(|r| (r.0.clone(), r.1)).collect();
        assert_eq!(kept, vec![("b".into(), 9), ("c".into(), 3)]);
        // A snapshot at 2 sees a@2 and b@1 (the tombstone is newer than it): they stay.
        let out = merged_under(&e, vec![2], false, false, Some(ts));
        assert_eq!(out.len(), 4, "{out:?}");
        // Operands on a range-deleted value apply to nothing.
        let e = [("a", 2, P, "old"), ("a", 7, M, "x")];
        let out = merged_under(&e, vec![], false, true, Some(ts));
        assert_eq!(out, vec![row("a", 7, P, "_+x")]);
    }
}
