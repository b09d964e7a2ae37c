//! Versions: the set of live tables per level, replaced (never mutated) by each edit.

use std::sync::Arc;

use siftdb_sstable::Table;

use crate::error::{Error, Result};
use crate::options::MAX_LEVELS;
use crate::version_edit::{FileMeta, VersionEdit};

/// A live table: what the manifest says about it, and the open reader.
#[derive(Debug)]
pub struct TableFile {
    /// Manifest metadata.
    pub meta: FileMeta,
    /// The open table.
    pub table: Arc<Table>,
    /// The first 8 bytes of the smallest and largest user keys as big-endian integers (see
    /// [`KeyHead`]): most range checks of a lookup are decided by them without a `memcmp`.
    heads: (KeyHead, KeyHead),
}

/// The first 8 bytes of a key as a big-endian integer, zero-padded. Where two heads differ they
/// order the keys as the keys themselves would (the first differing byte is a real byte of both
/// keys, or the shorter key's zero padding against a non-zero byte of a key it is a prefix of);
/// only equal heads need the whole keys compared.
///
/// Why: a point lookup checks one file range per level (and every L0 file), each a few `memcmp`
/// calls on short keys; in profiles of missing-key lookups those calls were ~15 % of the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct KeyHead(u64);

impl KeyHead {
    pub(crate) fn of(key: &[u8]) -> KeyHead {
        let mut bytes = [0u8; 8];
        let n = key.len().min(8);
        bytes[..n].copy_from_slice(&key[..n]);
        KeyHead(u64::from_be_bytes(bytes))
    }
}

/// `a` compared with `b`, deciding by their heads where they differ.
fn compare_keys(a: &[u8], a_head: KeyHead, b: &[u8], b_head: KeyHead) -> std::cmp::Ordering {
    match a_head.cmp(&b_head) {
        std::cmp::Ordering::Equal => a.cmp(b),
        other => other,
    }
}

impl TableFile {
    /// A live table over `table`, described by `meta`.
    pub fn new(meta: FileMeta, table: Arc<Table>) -> TableFile {
        let heads = (
            KeyHead::of(meta.smallest.user_key()),
            KeyHead::of(meta.largest.user_key()),
        );
        TableFile { meta, table, heads }
    }

    /// Smallest user key.
    pub fn smallest_user_key(&self) -> &[u8] {
        self.meta.smallest.user_key()
    }

    /// Largest user key.
    pub fn largest_user_key(&self) -> &[u8] {
        self.meta.largest.user_key()
    }

    /// Whether `user_key` (whose head is `head`) lies within the table's key range.
    pub(crate) fn contains_key_with_head(&self, user_key: &[u8], head: KeyHead) -> bool {
        use std::cmp::Ordering::Greater;
        compare_keys(self.smallest_user_key(), self.heads.0, user_key, head) != Greater
            && compare_keys(user_key, head, self.largest_user_key(), self.heads.1) != Greater
    }
}

/// An immutable snapshot of the live tables. L0 is ordered newest first (its tables overlap);
/// deeper levels are ordered by key and do not overlap.
#[derive(Debug, Clone, Default)]
pub struct Version {
    levels: Vec<Vec<Arc<TableFile>>>,
    /// Per level, each table's (smallest, largest) key heads, in `levels` order: a lookup's
    /// binary search over a level reads this contiguous array and touches a table's own
    /// (separately allocated, likely uncached) metadata only on a head tie.
    heads: Vec<Vec<(KeyHead, KeyHead)>>,
}

impl Version {
    /// An empty version.
    pub fn empty() -> Version {
        Version::from_levels(vec![Vec::new(); MAX_LEVELS])
    }

    fn from_levels(levels: Vec<Vec<Arc<TableFile>>>) -> Version {
        let heads = levels
            .iter()
            .map(|files| files.iter().map(|f| f.heads).collect())
            .collect();
        Version { levels, heads }
    }

    /// Tables of `level`.
    pub fn level(&self, level: usize) -> &[Arc<TableFile>] {
        self.levels.get(level).map_or(&[], Vec::as_slice)
    }

    /// All tables with their levels.
    pub fn all(&self) -> impl Iterator<Item = (usize, &Arc<TableFile>)> {
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(l, files)| files.iter().map(move |f| (l, f)))
    }

    /// Number of levels.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// The one table of a sorted level (≥ 1) whose range may hold `user_key`.
    pub(crate) fn find_with_head(
        &self,
        level: usize,
        user_key: &[u8],
        head: KeyHead,
    ) -> Option<&Arc<TableFile>> {
        use std::cmp::Ordering::{Equal, Less};
        let files = self.level(level);
        let heads = self.heads.get(level).map_or(&[][..], Vec::as_slice);
        // `heads[i]` belongs to `files[i]` (built together in `from_levels`). Binary search for
        // the first table whose largest key is >= the key, deciding by heads where they differ.
        let (mut lo, mut hi) = (0, files.len().min(heads.len()));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let below = match heads[mid].1.cmp(&head) {
                Equal => files[mid].largest_user_key() < user_key,
                other => other == Less,
            };
            if below {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let (smallest, _) = *heads.get(lo)?;
        let file = files.get(lo)?;
        let starts_at_or_before = match smallest.cmp(&head) {
            Equal => file.smallest_user_key() <= user_key,
            other => other == Less,
        };
        starts_at_or_before.then_some(file)
    }

    /// Distinct keys per level (the Monkey allocation's input).
    pub fn level_keys(&self) -> Vec<u64> {
        self.levels
            .iter()
            .map(|files| files.iter().map(|f| f.meta.distinct_keys).sum())
            .collect()
    }

    /// The version after `edit`, opening added tables with `open`.
    pub fn apply(
        &self,
        edit: &VersionEdit,
        mut open: impl FnMut(usize, &FileMeta) -> Result<Arc<TableFile>>,
    ) -> Result<Version> {
        let mut levels = self.levels.clone();
        for &(level, number) in &edit.deleted {
            let files = levels
                .get_mut(level)
                .ok_or_else(|| Error::Corruption(format!("edit names level {level}")))?;
            let before = files.len();
            files.retain(|f| f.meta.number != number);
            if files.len() == before {
                return Err(Error::Corruption(format!(
                    "edit deletes table {number} not in level {level}"
                )));
            }
        }
        for (level, meta) in &edit.added {
            let files = levels
                .get_mut(*level)
                .ok_or_else(|| Error::Corruption(format!("edit names level {level}")))?;
            files.push(open(*level, meta)?);
        }
        for (level, files) in levels.iter_mut().enumerate() {
            if level == 0 {
                files.sort_by_key(|f| std::cmp::Reverse(f.meta.number));
            } else {
                files.sort_by(|a, b| a.meta.smallest.cmp(&b.meta.smallest));
            }
        }
        Ok(Version::from_levels(levels))
    }
}

#[cfg(test)]
mod key_head_tests {
    use super::*;

    #[test]
    fn head_comparison_agrees_with_key_comparison() {
        let keys: [&[u8]; 12] = [
            b"",
            b"\0",
            b"a",
            b"a\0",
            b"a\0\x01",
            b"ab",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefghi",
            b"abcdefgi",
            b"b",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(
                    compare_keys(a, KeyHead::of(a), b, KeyHead::of(b)),
                    a.cmp(b),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }
}
