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
}

impl TableFile {
    /// Smallest user key.
    pub fn smallest_user_key(&self) -> &[u8] {
        self.meta.smallest.user_key()
    }

    /// Largest user key.
    pub fn largest_user_key(&self) -> &[u8] {
        self.meta.largest.user_key()
    }

    /// Whether `user_key` lies within the table's key range.
    pub fn may_contain_user_key(&self, user_key: &[u8]) -> bool {
        self.smallest_user_key() <= user_key && user_key <= self.largest_user_key()
    }
}

/// An immutable snapshot of the live tables. L0 is ordered newest first (its tables overlap);
/// deeper levels are ordered by key and do not overlap.
#[derive(Debug, Clone, Default)]
pub struct Version {
    levels: Vec<Vec<Arc<TableFile>>>,
}

impl Version {
    /// An empty version.
    pub fn empty() -> Version {
        Version {
            levels: vec![Vec::new(); MAX_LEVELS],
        }
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
    pub fn find_in_sorted_level(&self, level: usize, user_key: &[u8]) -> Option<&Arc<TableFile>> {
        let files = self.level(level);
        let i = files.partition_point(|f| f.largest_user_key() < user_key);
        files.get(i).filter(|f| f.smallest_user_key() <= user_key)
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
        Ok(Version { levels })
    }
}
