//! The compaction job's merge: which entries survive into the outputs.
//!
//! Versions of a user key arrive newest first. An entry is needed only if some reader can see
//! it: a live snapshot, or the current state. Snapshots cut the sequence space into stripes
//! (stripe of `s` = number of snapshots older than `s`); within one stripe only the newest version
//! of a key is visible to anyone, so older versions in the same stripe are dropped. A tombstone in
//! the oldest stripe (visible to every snapshot) is dropped when nothing older of its key can
//! exist below the output (`bottommost`): it then hides nothing.

use siftdb_sstable::{InternalKey, ParsedKey, SstError, ValueKind};

use crate::iter::InternalIterator;

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
}

/// A user's decision on values during compaction (the engine's `CompactionFilter`, TTL).
///
/// Asked only about a value that is the newest version of its key in the compaction and that no
/// live snapshot can see (removing or changing it changes no snapshot's answer); tombstones are
/// never shown. An `Err` stops the compaction (its outputs are discarded, nothing is lost).
pub trait EntryFilter: Send + Sync {
    /// The decision for `value` (as stored) of `user_key`, an entry of `kind` (a value kind:
    /// `Put` or `ExpiringPut`). A changed value is stored as given, with the same kind.
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
        let parsed = ParsedKey::parse(key).ok_or_else(|| SstError::Corruption {
            file: "compaction input".to_string(),
            offset: 0,
            reason: "undecodable internal key".to_string(),
        })?;
        let first_of_key = current_key.as_deref() != Some(parsed.user_key);
        if first_of_key {
            current_key = Some(parsed.user_key.to_vec());
            newer_stripe = None;
        }
        let stripe = rules.stripe(parsed.sequence);
        let shadowed = newer_stripe == Some(stripe);
        newer_stripe = Some(stripe);
        let unseen_by_snapshots = stripe == rules.snapshots.len();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VecIter;
    use siftdb_sstable::InternalKey;

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
}
