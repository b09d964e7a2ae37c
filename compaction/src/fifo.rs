//! The FIFO compaction picker, after RocksDB's `FIFOCompactionPicker`: nothing is merged; the
//! oldest tables are dropped once all tables together hold more than `max_table_files_size`
//! bytes, or once they are older than `ttl`. For data that is written once and expires by age
//! (logs, metrics, queues): write amplification 1, and space bounded by the limit.
//!
//! Tables go strictly oldest first (deeper levels before upper ones, which only a database
//! once compacted otherwise has; L0 oldest file first), so a newer version of a key is never
//! dropped while an older one stays: a read finds the newest value the database still holds,
//! or nothing.

use crate::picker::{LevelFile, Pick, Running};

/// Settings of FIFO compaction (RocksDB's `CompactionOptionsFIFO` and `ttl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FifoConfig {
    /// Bytes of all tables past which the oldest are dropped.
    pub max_table_files_size: u64,
    /// Age in seconds past which a table is dropped (`None`: by size only). A table's age is
    /// counted from when it was written (`LevelFile::created`); tables of unknown age (0) are
    /// dropped by size only.
    pub ttl_secs: Option<u64>,
}

/// The tables to drop now (a pick with `drop` set), if any and none is `running`. `now_secs` is
/// the current Unix time in seconds.
pub fn pick(
    levels: &[Vec<LevelFile>],
    config: &FifoConfig,
    now_secs: u64,
    running: &[Running],
) -> Option<Pick> {
    if !running.is_empty() {
        return None;
    }
    let mut total: u64 = levels.iter().flatten().map(|f| f.size).sum();
    let expired = |f: &LevelFile| {
        config
            .ttl_secs
            .is_some_and(|ttl| f.created != 0 && f.created.saturating_add(ttl) <= now_secs)
    };
    let mut dropped: Vec<(usize, Vec<u64>)> = vec![(0, Vec::new()); levels.len()];
    for (level, f) in oldest_first(levels) {
        if total <= config.max_table_files_size && !expired(f) {
            break;
        }
        total -= f.size;
        dropped[level].0 = level;
        dropped[level].1.push(f.number);
    }
    if dropped.iter().all(|(_, d)| d.is_empty()) {
        return None;
    }
    let mut by_level = dropped.into_iter();
    let inputs = by_level.next().map(|(_, d)| d).unwrap_or_default();
    let next_inputs = by_level.next().map(|(_, d)| d).unwrap_or_default();
    Some(Pick {
        level: 0,
        inputs,
        next_inputs,
        end_key: Vec::new(),
        deeper_inputs: by_level.filter(|(_, d)| !d.is_empty()).collect(),
        output_level: 0,
        drop: true,
    })
}

/// Every table with its level, oldest first: the deepest level first, L0 last and in reverse
/// of its newest-first order.
fn oldest_first(levels: &[Vec<LevelFile>]) -> impl Iterator<Item = (usize, &LevelFile)> {
    let deeper = levels
        .iter()
        .enumerate()
        .skip(1)
        .rev()
        .flat_map(|(level, files)| files.iter().map(move |f| (level, f)));
    let l0 = levels
        .first()
        .into_iter()
        .flat_map(|files| files.iter().rev());
    deeper.chain(l0.map(|f| (0, f)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(number: u64, size: u64, created: u64) -> LevelFile {
        LevelFile {
            number,
            size,
            smallest: b"a".to_vec(),
            largest: b"z".to_vec(),
            created,
        }
    }

    #[test]
    fn fifo_drops_the_oldest_tables_past_the_size_limit() {
        let levels = vec![
            vec![file(4, 10, 0), file(3, 10, 0), file(2, 10, 0)],
            vec![],
            vec![file(1, 10, 0)],
        ];
        let config = FifoConfig {
            max_table_files_size: 25,
            ttl_secs: None,
        };
        let p = pick(&levels, &config, 0, &[]).unwrap();
        assert!(p.drop);
        assert_eq!(p.inputs_by_level(), vec![(0, vec![2]), (2, vec![1])]);
        let small = FifoConfig {
            max_table_files_size: 40,
            ..config
        };
        assert_eq!(pick(&levels, &small, 0, &[]), None);
    }

    #[test]
    fn fifo_drops_tables_past_their_ttl_oldest_first() {
        let levels = vec![vec![file(3, 1, 900), file(2, 1, 0), file(1, 1, 100)]];
        let config = FifoConfig {
            max_table_files_size: u64::MAX,
            ttl_secs: Some(500),
        };
        // Table 1 expired at 600; table 2's age is unknown, so the drop stops there.
        let p = pick(&levels, &config, 1000, &[]).unwrap();
        assert_eq!(p.all_inputs(), vec![1]);
        assert_eq!(pick(&levels, &config, 599, &[]), None);
    }
}
