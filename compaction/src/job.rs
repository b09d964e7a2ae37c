//! The compaction job's merge: which entries survive into the outputs.
//!
//! Versions of a user key arrive newest first. An entry is needed only if some reader can see
//! it: a live snapshot, or the current state. Snapshots cut the sequence space into stripes
//! (stripe of `s` = number of snapshots older than `s`); within one stripe only the newest version
//! of a key is visible to anyone, so older versions in the same stripe are dropped. A tombstone in
//! the oldest stripe (visible to every snapshot) is dropped when nothing older of its key can
//! exist below the output (`bottommost`): it then hides nothing.

use siftdb_sstable::{ParsedKey, SstError, ValueKind};

use crate::iter::InternalIterator;

/// What decides garbage collection.
#[derive(Debug, Clone, Default)]
pub struct GcRules {
    /// Sequence numbers of live snapshots, ascending.
    pub snapshots: Vec<u64>,
    /// No level below the output can hold any of the compacted keys.
    pub bottommost: bool,
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
        if shadowed {
            stats.shadowed_dropped += 1;
        } else if parsed.kind == ValueKind::Delete && stripe == 0 && rules.bottommost {
            stats.tombstones_dropped += 1;
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
}
