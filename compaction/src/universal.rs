//! The universal (size-tiered) compaction picker, after RocksDB's `UniversalCompactionPicker`.
//!
//! The tree is a list of sorted runs, newest first: each L0 table is a run of its own, each
//! non-empty level below is one run. Once there are `trigger` runs, a compaction merges a
//! contiguous stretch of them into one run, chosen in this order:
//! 1. **Space amplification**: when the runs above the oldest hold at least
//!    `max_size_amplification_percent` of the oldest's bytes, all runs merge into the bottom
//!    level (a full compaction: the only one that bounds the space old versions take).
//! 2. **Size ratio**: from the newest run on, runs are taken while the next is at most
//!    `size_ratio` percent larger than all taken so far; at least `min_merge_width`, at most
//!    `max_merge_width` runs. The first start position that gives enough runs wins.
//! 3. **Run count**: otherwise the newest runs merge, as many as bring the count below
//!    `trigger`.
//!
//! Each byte is rewritten about once per size tier instead of once per level: far less write
//! amplification than leveled compaction, for up to `max_size_amplification_percent` more space
//! and more runs for a lookup to probe.
//!
//! The output goes to a level that keeps the runs ordered: the deepest picked level when the
//! pick holds a level's run, otherwise (only L0 tables) the level just above the next older run.
//! Outputs never go to L0, whose tables are read newest file number first; where no level is
//! free for them, the pick takes the next older run too.

use crate::picker::{key_range, LevelFile, Pick, Running};

/// Settings of universal compaction (RocksDB's `CompactionOptionsUniversal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniversalConfig {
    /// Sorted runs at which a compaction starts (`level0_file_num_compaction_trigger`).
    pub trigger: usize,
    /// Percent by which the next run may be larger than the runs taken so far.
    pub size_ratio: u32,
    /// Fewest runs a size-ratio compaction merges.
    pub min_merge_width: usize,
    /// Most runs a size-ratio compaction merges.
    pub max_merge_width: usize,
    /// Bytes of the newer runs, in percent of the oldest's, past which all runs merge.
    pub max_size_amplification_percent: u64,
}

/// One sorted run: an L0 table, or all tables of a level below.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SortedRun {
    level: usize,
    files: Vec<u64>,
    bytes: u64,
}

/// The sorted runs of `levels`, newest first (`levels[0]` lists L0 newest first).
fn sorted_runs(levels: &[Vec<LevelFile>]) -> Vec<SortedRun> {
    let l0 = levels.first().into_iter().flatten().map(|f| SortedRun {
        level: 0,
        files: vec![f.number],
        bytes: f.size,
    });
    let deeper = levels
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, files)| !files.is_empty())
        .map(|(level, files)| SortedRun {
            level,
            files: files.iter().map(|f| f.number).collect(),
            bytes: files.iter().map(|f| f.size).sum(),
        });
    l0.chain(deeper).collect()
}

/// Whether a compaction is due (at least `trigger` runs, and two to merge).
pub fn needs_compaction(levels: &[Vec<LevelFile>], config: &UniversalConfig) -> bool {
    let runs = sorted_runs(levels).len();
    runs >= config.trigger.max(2)
}

/// The next universal compaction of `levels`, if one is due and none is `running` (a tree
/// runs one universal compaction at a time: every pick starts from the newest runs).
pub fn pick(
    levels: &[Vec<LevelFile>],
    config: &UniversalConfig,
    running: &[Running],
) -> Option<Pick> {
    if !running.is_empty() || !needs_compaction(levels, config) {
        return None;
    }
    let runs = sorted_runs(levels);
    let bottom = levels.len().checked_sub(1).filter(|&b| b >= 1)?;
    if let Some(pick) = by_space_amplification(&runs, config, bottom) {
        return Some(build(levels, &runs, pick));
    }
    let chosen = by_size_ratio(&runs, config, levels.len())
        .or_else(|| by_run_count(&runs, config, levels.len()))?;
    Some(build(levels, &runs, chosen))
}

/// Bytes compaction owes once a compaction is due: every run but the oldest (what a merge down
/// to the oldest would rewrite); 0 below the trigger.
pub fn pending_compaction_bytes(levels: &[Vec<LevelFile>], config: &UniversalConfig) -> u64 {
    if !needs_compaction(levels, config) {
        return 0;
    }
    let runs = sorted_runs(levels);
    runs.split_last()
        .map_or(0, |(_, newer)| newer.iter().map(|r| r.bytes).sum())
}

/// Picked runs `start..end` and their output level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chosen {
    start: usize,
    end: usize,
    output_level: usize,
}

fn by_space_amplification(
    runs: &[SortedRun],
    config: &UniversalConfig,
    bottom: usize,
) -> Option<Chosen> {
    let (oldest, newer) = runs.split_last()?;
    if newer.is_empty() {
        return None;
    }
    let newer_bytes: u128 = newer.iter().map(|r| u128::from(r.bytes)).sum();
    let limit = u128::from(oldest.bytes) * u128::from(config.max_size_amplification_percent);
    (newer_bytes * 100 >= limit).then_some(Chosen {
        start: 0,
        end: runs.len(),
        output_level: bottom,
    })
}

fn by_size_ratio(
    runs: &[SortedRun],
    config: &UniversalConfig,
    num_levels: usize,
) -> Option<Chosen> {
    let max_width = config.max_merge_width.max(2);
    for start in 0..runs.len() {
        let mut taken = u128::from(runs[start].bytes);
        let mut end = start + 1;
        while end < runs.len() && end - start < max_width {
            let next = u128::from(runs[end].bytes);
            if taken * u128::from(100 + config.size_ratio) < next * 100 {
                break;
            }
            taken += next;
            end += 1;
        }
        if end - start >= config.min_merge_width.max(2) {
            return place(runs, start, end, num_levels);
        }
    }
    None
}

fn by_run_count(runs: &[SortedRun], config: &UniversalConfig, num_levels: usize) -> Option<Chosen> {
    let width = (runs.len() + 2)
        .saturating_sub(config.trigger)
        .max(config.min_merge_width)
        .clamp(2, runs.len());
    place(runs, 0, width, num_levels)
}

/// The output level of runs `start..end`, taking older runs into the pick until one exists.
fn place(runs: &[SortedRun], start: usize, mut end: usize, num_levels: usize) -> Option<Chosen> {
    loop {
        let deepest = runs[end - 1].level;
        let older = runs.get(end).map_or(num_levels, |r| r.level);
        if deepest >= 1 {
            return Some(Chosen {
                start,
                end,
                output_level: deepest,
            });
        }
        if older >= 2 {
            return Some(Chosen {
                start,
                end,
                output_level: older - 1,
            });
        }
        if end == runs.len() {
            return None;
        }
        end += 1;
    }
}

/// The pick merging the chosen runs.
fn build(levels: &[Vec<LevelFile>], runs: &[SortedRun], chosen: Chosen) -> Pick {
    let picked = &runs[chosen.start..chosen.end];
    let level = picked[0].level;
    let files_at = |l: usize| -> Vec<u64> {
        picked
            .iter()
            .filter(|r| r.level == l)
            .flat_map(|r| r.files.iter().copied())
            .collect()
    };
    let deeper_inputs = picked
        .iter()
        .filter(|r| r.level > level + 1)
        .map(|r| (r.level, r.files.clone()))
        .collect();
    let all: Vec<u64> = picked
        .iter()
        .flat_map(|r| r.files.iter().copied())
        .collect();
    let end_key = key_range(levels.iter().flatten().filter(|f| all.contains(&f.number)))
        .map(|(_, largest)| largest)
        .unwrap_or_default();
    Pick {
        level,
        inputs: files_at(level),
        next_inputs: files_at(level + 1),
        end_key,
        deeper_inputs,
        output_level: chosen.output_level,
        drop: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(number: u64, size: u64) -> LevelFile {
        LevelFile {
            number,
            size,
            smallest: b"a".to_vec(),
            largest: b"z".to_vec(),
            created: 0,
        }
    }

    const CONFIG: UniversalConfig = UniversalConfig {
        trigger: 4,
        size_ratio: 1,
        min_merge_width: 2,
        max_merge_width: usize::MAX,
        max_size_amplification_percent: 200,
    };

    fn levels(l0: &[(u64, u64)], deeper: &[(usize, u64, u64)]) -> Vec<Vec<LevelFile>> {
        let mut levels = vec![Vec::new(); 7];
        levels[0] = l0.iter().map(|&(n, s)| file(n, s)).collect();
        for &(level, n, s) in deeper {
            levels[level].push(file(n, s));
        }
        levels
    }

    #[test]
    fn universal_waits_for_trigger_runs() {
        let tree = levels(&[(3, 10), (2, 10)], &[(6, 1, 1000)]);
        assert_eq!(pick(&tree, &CONFIG, &[]), None);
    }

    #[test]
    fn universal_merges_similar_newest_runs_above_the_next_older_run() {
        let tree = levels(&[(5, 10), (4, 10), (3, 10)], &[(6, 1, 1000)]);
        let p = pick(&tree, &CONFIG, &[]).unwrap();
        assert_eq!((p.level, p.inputs.clone()), (0, vec![5, 4, 3]));
        assert_eq!(p.output_level, 5, "just above the bottom run");
        assert!(p.next_inputs.is_empty() && p.deeper_inputs.is_empty());
    }

    #[test]
    fn universal_full_compaction_past_the_space_amplification_limit() {
        let tree = levels(&[(9, 100), (8, 50)], &[(4, 7, 120), (6, 1, 100)]);
        let p = pick(&tree, &CONFIG, &[]).unwrap();
        assert_eq!(p.output_level, 6);
        assert_eq!(p.all_inputs(), vec![9, 8, 7, 1]);
        assert_eq!(p.deeper_inputs, vec![(4, vec![7]), (6, vec![1])]);
    }

    #[test]
    fn universal_takes_the_next_level_when_no_level_is_free() {
        let mut tree = levels(&[(9, 10), (8, 10)], &[(1, 7, 1000), (6, 1, 100_000)]);
        for (level, files) in tree.iter_mut().enumerate().take(6).skip(2) {
            files.push(file(10 + level as u64, 10_000 * level as u64));
        }
        let p = pick(&tree, &CONFIG, &[]).unwrap();
        // Two L0 runs of similar size, then L1 far larger: the L0 runs would need a level
        // above L1, so L1 joins.
        assert_eq!(
            (p.inputs.clone(), p.next_inputs.clone()),
            (vec![9, 8], vec![7])
        );
        assert_eq!(p.output_level, 1);
    }

    #[test]
    fn universal_reduces_the_run_count_when_sizes_differ() {
        // Each run far larger than all newer ones: no size-ratio pick.
        let tree = levels(
            &[(9, 1), (8, 10)],
            &[(4, 7, 100), (5, 6, 1000), (6, 1, 10_000)],
        );
        let p = pick(&tree, &CONFIG, &[]).unwrap();
        // Five runs, trigger 4: the newest three merge, leaving three.
        assert_eq!(p.all_inputs(), vec![9, 8, 7]);
        assert_eq!(p.output_level, 4);
    }

    #[test]
    fn universal_runs_one_compaction_at_a_time() {
        let tree = levels(&[(5, 10), (4, 10), (3, 10), (2, 10)], &[]);
        let busy = Running {
            inputs: vec![99],
            output_level: 6,
            smallest: Vec::new(),
            largest: Vec::new(),
        };
        assert_eq!(pick(&tree, &CONFIG, &[busy]), None);
        assert!(pick(&tree, &CONFIG, &[]).is_some());
    }
}
