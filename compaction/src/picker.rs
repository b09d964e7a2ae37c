//! The leveled compaction picker: which files to compact next.
//!
//! L0 is compacted into L1 once it holds `l0_trigger` files (its files overlap, so every L0 file
//! adds one probe to every lookup). A level `n ≥ 1` is compacted into `n + 1` once it exceeds its
//! target size, `base · multiplier^(n-1)`. The level with the highest score (files / trigger for
//! L0, bytes / target otherwise) goes first. From a level `n ≥ 1` one file is taken, round robin by
//! key (the first file after the previous compaction's end key), which spreads rewrites evenly
//! over the key space, together with the files of `n + 1` it overlaps.

/// What the picker needs to know about a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelFile {
    /// File number.
    pub number: u64,
    /// File size in bytes.
    pub size: u64,
    /// Smallest user key.
    pub smallest: Vec<u8>,
    /// Largest user key.
    pub largest: Vec<u8>,
}

/// Shape of the tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PickerConfig {
    /// L0 file count that triggers an L0 → L1 compaction.
    pub l0_trigger: usize,
    /// Target size of L1 in bytes.
    pub base_level_bytes: u64,
    /// Growth factor of level targets.
    pub multiplier: f64,
}

impl PickerConfig {
    /// Target size of `level` (≥ 1).
    pub fn target_bytes(&self, level: usize) -> f64 {
        self.base_level_bytes as f64 * self.multiplier.powi(level.saturating_sub(1) as i32)
    }
}

/// A chosen compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    /// Level the inputs come from.
    pub level: usize,
    /// Input files of `level`.
    pub inputs: Vec<u64>,
    /// Input files of `level + 1` (overlapping the inputs).
    pub next_inputs: Vec<u64>,
    /// Largest user key of the inputs (the next round-robin cursor for `level`).
    pub end_key: Vec<u8>,
}

fn overlaps(f: &LevelFile, smallest: &[u8], largest: &[u8]) -> bool {
    f.largest.as_slice() >= smallest && f.smallest.as_slice() <= largest
}

/// Files of `files` overlapping `[smallest, largest]`.
pub fn overlapping(files: &[LevelFile], smallest: &[u8], largest: &[u8]) -> Vec<u64> {
    files
        .iter()
        .filter(|f| overlaps(f, smallest, largest))
        .map(|f| f.number)
        .collect()
}

fn key_range<'a>(files: impl Iterator<Item = &'a LevelFile>) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut range: Option<(Vec<u8>, Vec<u8>)> = None;
    for f in files {
        range = Some(match range {
            None => (f.smallest.clone(), f.largest.clone()),
            Some((s, l)) => (s.min(f.smallest.clone()), l.max(f.largest.clone())),
        });
    }
    range
}

/// Builds the pick of compacting `inputs` (numbers in `levels[level]`) into `level + 1`.
pub fn pick_files(levels: &[Vec<LevelFile>], level: usize, inputs: Vec<u64>) -> Option<Pick> {
    let files = levels.get(level)?;
    let chosen = files.iter().filter(|f| inputs.contains(&f.number));
    let (smallest, largest) = key_range(chosen)?;
    let next = levels
        .get(level + 1)
        .map_or_else(Vec::new, |n| overlapping(n, &smallest, &largest));
    Some(Pick {
        level,
        inputs,
        next_inputs: next,
        end_key: largest,
    })
}

/// Scores of every level (files / trigger for L0, bytes / target for the others).
pub fn scores(levels: &[Vec<LevelFile>], config: &PickerConfig) -> Vec<f64> {
    levels
        .iter()
        .enumerate()
        .map(|(level, files)| {
            if level == 0 {
                files.len() as f64 / config.l0_trigger.max(1) as f64
            } else {
                files.iter().map(|f| f.size).sum::<u64>() as f64 / config.target_bytes(level)
            }
        })
        .collect()
}

/// The next compaction, if any level's score is ≥ 1. The last level is never compacted further.
/// `cursors[n]` is the end key of the previous compaction out of level `n`.
pub fn pick(levels: &[Vec<LevelFile>], config: &PickerConfig, cursors: &[Vec<u8>]) -> Option<Pick> {
    let last = levels.len().checked_sub(1)?;
    let scores = scores(levels, config);
    let (level, score) = scores
        .iter()
        .enumerate()
        .take(last)
        .max_by(|a, b| a.1.total_cmp(b.1))?;
    if *score < 1.0 {
        return None;
    }
    if level == 0 {
        let inputs = levels[0].iter().map(|f| f.number).collect();
        return pick_files(levels, 0, inputs);
    }
    let files = &levels[level];
    let cursor = cursors.get(level).map_or(&[][..], Vec::as_slice);
    let file = files
        .iter()
        .find(|f| f.smallest.as_slice() > cursor)
        .or_else(|| files.first())?;
    pick_files(levels, level, vec![file.number])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(number: u64, size: u64, s: &str, l: &str) -> LevelFile {
        LevelFile {
            number,
            size,
            smallest: s.as_bytes().to_vec(),
            largest: l.as_bytes().to_vec(),
        }
    }

    const CONFIG: PickerConfig = PickerConfig {
        l0_trigger: 4,
        base_level_bytes: 1000,
        multiplier: 10.0,
    };

    #[test]
    fn picker_waits_for_l0_trigger_then_takes_all_l0_and_overlaps() {
        let mut levels = vec![
            vec![
                file(1, 10, "a", "m"),
                file(2, 10, "c", "f"),
                file(3, 10, "b", "z"),
            ],
            vec![
                file(10, 100, "a", "b"),
                file(11, 100, "x", "y"),
                file(12, 100, "zz", "zzz"),
            ],
            vec![],
        ];
        assert_eq!(pick(&levels, &CONFIG, &[]), None);
        levels[0].push(file(4, 10, "d", "e"));
        let p = pick(&levels, &CONFIG, &[]).unwrap();
        assert_eq!(p.level, 0);
        assert_eq!(p.inputs, vec![1, 2, 3, 4]);
        assert_eq!(p.next_inputs, vec![10, 11]);
    }

    #[test]
    fn picker_compacts_oversized_level_round_robin() {
        let levels = vec![
            vec![],
            vec![
                file(10, 600, "a", "c"),
                file(11, 600, "d", "f"),
                file(12, 600, "g", "i"),
            ],
            vec![file(20, 100, "b", "e"), file(21, 100, "h", "h")],
            vec![],
        ];
        let p = pick(&levels, &CONFIG, &[]).unwrap();
        assert_eq!(
            (p.level, p.inputs.clone(), p.next_inputs.clone()),
            (1, vec![10], vec![20])
        );
        let cursors = vec![Vec::new(), p.end_key];
        let p = pick(&levels, &CONFIG, &cursors).unwrap();
        assert_eq!(
            (p.inputs.clone(), p.next_inputs.clone()),
            (vec![11], vec![20])
        );
        let cursors = vec![Vec::new(), b"z".to_vec()];
        let p = pick(&levels, &CONFIG, &cursors).unwrap();
        assert_eq!(p.inputs, vec![10], "wraps around");
    }

    #[test]
    fn picker_never_compacts_the_last_level() {
        let levels = vec![vec![], vec![file(10, 1_000_000, "a", "z")]];
        assert_eq!(pick(&levels, &CONFIG, &[]), None);
    }
}
