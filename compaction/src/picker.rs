//! The leveled compaction picker: which files to compact next.
//!
//! L0 is compacted into L1 once it holds `l0_trigger` files (its files overlap, so every L0 file
//! adds one probe to every lookup). A level `n ≥ 1` is compacted into `n + 1` once it exceeds its
//! target size, `base · multiplier^(n-1)`. The level with the highest score (files / trigger for
//! L0, bytes / target otherwise) goes first. From a level `n ≥ 1` one file is taken together
//! with the files of `n + 1` it overlaps: by default the file whose overlap in `n + 1` is the
//! smallest for its size ([`CompactionPri::MinOverlappingRatio`], RocksDB's default
//! `kMinOverlappingRatio`: the least bytes rewritten per byte moved down), or round robin by key
//! ([`CompactionPri::RoundRobin`]: the first file after the previous compaction's end key, which
//! spreads rewrites evenly over the key space).
//!
//! When L0 is small beside the part of L1 it overlaps (less than `1 / multiplier` of it, and at
//! most `intra_l0_max_bytes`), its files are merged into one L0 table instead (RocksDB's
//! intra-L0 compaction): merging a few small tables into all of L1 would rewrite L1 for a
//! sliver of new data, which is the common case once large values live in blob files and the
//! tables hold only keys and blob references. L0 then grows by flushes until it is worth
//! merging down.

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
    /// When the table was written, in Unix seconds (0: unknown); FIFO's TTL reads it.
    pub created: u64,
}

/// Which file of a level `n ≥ 1` a compaction takes first (RocksDB's `compaction_pri`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CompactionPri {
    /// The file with the fewest bytes overlapping it in the next level per byte of its own
    /// (ties: round robin). On random writes this rewrites fewer bytes of the next level than
    /// [`CompactionPri::RoundRobin`].
    #[default]
    MinOverlappingRatio,
    /// The first file after where the previous compaction of the level ended (LevelDB's).
    RoundRobin,
}

impl CompactionPri {
    /// The name the options text records (`min_overlapping_ratio`, `round_robin`).
    pub fn name(&self) -> &'static str {
        match self {
            CompactionPri::MinOverlappingRatio => "min_overlapping_ratio",
            CompactionPri::RoundRobin => "round_robin",
        }
    }

    /// The priority named `name` (see [`CompactionPri::name`]).
    pub fn from_name(name: &str) -> Option<CompactionPri> {
        match name {
            "min_overlapping_ratio" => Some(CompactionPri::MinOverlappingRatio),
            "round_robin" => Some(CompactionPri::RoundRobin),
            _ => None,
        }
    }
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
    /// Which file of a level goes first.
    pub compaction_pri: CompactionPri,
    /// The most bytes an intra-L0 compaction merges (0: never merge L0 into itself).
    pub intra_l0_max_bytes: u64,
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
    /// Inputs of levels below `level + 1`: the whole sorted runs a universal compaction merges
    /// with the others, or the tables a FIFO compaction drops there. Empty for leveled picks.
    pub deeper_inputs: Vec<(usize, Vec<u64>)>,
    /// The level the outputs go to (`level + 1` for leveled picks).
    pub output_level: usize,
    /// The inputs are deleted, not merged (FIFO: the oldest tables go).
    pub drop: bool,
}

impl Pick {
    /// Every input file number, of every level.
    pub fn all_inputs(&self) -> Vec<u64> {
        let deeper = self.deeper_inputs.iter().flat_map(|(_, n)| n);
        self.inputs
            .iter()
            .chain(&self.next_inputs)
            .chain(deeper)
            .copied()
            .collect()
    }

    /// The input file numbers with their levels.
    pub fn inputs_by_level(&self) -> Vec<(usize, Vec<u64>)> {
        let mut by_level = vec![
            (self.level, self.inputs.clone()),
            (self.level + 1, self.next_inputs.clone()),
        ];
        by_level.extend(self.deeper_inputs.iter().cloned());
        by_level.retain(|(_, numbers)| !numbers.is_empty());
        by_level
    }
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

pub(crate) fn key_range<'a>(
    files: impl Iterator<Item = &'a LevelFile>,
) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut range: Option<(Vec<u8>, Vec<u8>)> = None;
    for f in files {
        range = Some(match range {
            None => (f.smallest.clone(), f.largest.clone()),
            Some((s, l)) => (s.min(f.smallest.clone()), l.max(f.largest.clone())),
        });
    }
    range
}

/// The pick of L0's compaction: all of L0 at once (its files overlap), into L1, or into one
/// L0 table when that is the cheaper way to bring the file count down (see the module
/// documentation).
fn pick_l0(levels: &[Vec<LevelFile>], config: &PickerConfig) -> Option<Pick> {
    let inputs: Vec<u64> = levels.first()?.iter().map(|f| f.number).collect();
    let mut pick = pick_files(levels, 0, inputs)?;
    let bytes = |level: usize, numbers: &[u64]| -> u64 {
        levels.get(level).map_or(0, |files| {
            files
                .iter()
                .filter(|f| numbers.contains(&f.number))
                .map(|f| f.size)
                .sum()
        })
    };
    let l0_bytes = bytes(0, &pick.inputs);
    let l1_bytes = bytes(1, &pick.next_inputs);
    let intra = pick.inputs.len() >= 2
        && l0_bytes <= config.intra_l0_max_bytes
        && (l0_bytes as f64) * config.multiplier < l1_bytes as f64;
    if intra {
        pick.next_inputs.clear();
        pick.output_level = 0;
    }
    Some(pick)
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
        deeper_inputs: Vec::new(),
        output_level: level + 1,
        drop: false,
    })
}

/// Scores of every level (files / trigger for L0, bytes / target for the others).
pub fn scores(levels: &[Vec<LevelFile>], config: &PickerConfig) -> Vec<f64> {
    scores_counting(levels, config, |_| true)
}

/// [`scores`] over the files for which `counts` holds.
fn scores_counting(
    levels: &[Vec<LevelFile>],
    config: &PickerConfig,
    counts: impl Fn(&LevelFile) -> bool,
) -> Vec<f64> {
    levels
        .iter()
        .enumerate()
        .map(|(level, files)| {
            let files = files.iter().filter(|f| counts(f));
            if level == 0 {
                files.count() as f64 / config.l0_trigger.max(1) as f64
            } else {
                files.map(|f| f.size).sum::<u64>() as f64 / config.target_bytes(level)
            }
        })
        .collect()
}

/// The next compaction, if any level's score is ≥ 1. The last level is never compacted further.
/// `cursors[n]` is the end key of the previous compaction out of level `n`.
pub fn pick(levels: &[Vec<LevelFile>], config: &PickerConfig, cursors: &[Vec<u8>]) -> Option<Pick> {
    pick_besides(levels, config, cursors, &[])
}

/// A compaction already under way: what the picker must stay clear of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    /// Every input file (both levels).
    pub inputs: Vec<u64>,
    /// The level its outputs go to.
    pub output_level: usize,
    /// Key range of its inputs (and so of its outputs).
    pub smallest: Vec<u8>,
    /// See `smallest`.
    pub largest: Vec<u8>,
}

impl Running {
    /// What `pick` will hold while it runs into `output_level`.
    pub fn of(pick: &Pick, levels: &[Vec<LevelFile>], output_level: usize) -> Running {
        let inputs = pick.all_inputs();
        let files = levels
            .iter()
            .flatten()
            .filter(|f| inputs.contains(&f.number));
        let (smallest, largest) = key_range(files).unwrap_or_default();
        Running {
            inputs,
            output_level,
            smallest,
            largest,
        }
    }
}

/// [`pick`] beside compactions already `running`: a pick never shares an input file with one of
/// them, and never writes into a level a key range that one of them is writing into (the two
/// jobs' outputs would overlap inside a sorted level). Levels are tried by score; inside a level,
/// files round robin from the cursor until one fits. Files being compacted do not count towards
/// their level's score, so a level is not picked twice for the same excess.
pub fn pick_besides(
    levels: &[Vec<LevelFile>],
    config: &PickerConfig,
    cursors: &[Vec<u8>],
    running: &[Running],
) -> Option<Pick> {
    let last = levels.len().checked_sub(1)?;
    let busy = |n: u64| running.iter().any(|r| r.inputs.contains(&n));
    let scores = scores_counting(levels, config, |f| !busy(f.number));
    let mut by_score: Vec<(usize, f64)> = scores.into_iter().enumerate().take(last).collect();
    by_score.sort_by(|a, b| b.1.total_cmp(&a.1));
    let fits = |p: &Pick| fits_beside(p, levels, running);
    for (level, score) in by_score {
        if score < 1.0 {
            break;
        }
        if level == 0 {
            // All of L0 at once (its files overlap), and only with none of it busy.
            if levels[0].iter().any(|f| busy(f.number)) {
                continue;
            }
            match pick_l0(levels, config) {
                Some(p) if fits(&p) => return Some(p),
                _ => continue,
            }
        }
        let files: Vec<&LevelFile> = levels[level].iter().filter(|f| !busy(f.number)).collect();
        let cursor = cursors.get(level).map_or(&[][..], Vec::as_slice);
        let start = files
            .iter()
            .position(|f| f.smallest.as_slice() > cursor)
            .unwrap_or(0);
        let mut candidates: Vec<&LevelFile> = files[start..]
            .iter()
            .chain(&files[..start])
            .copied()
            .collect();
        if config.compaction_pri == CompactionPri::MinOverlappingRatio {
            let next = levels.get(level + 1).map_or(&[][..], Vec::as_slice);
            // A stable sort: equal ratios keep the round-robin order.
            candidates.sort_by_cached_key(|f| overlap_per_mille(f, next));
        }
        for file in candidates {
            if let Some(p) = pick_files(levels, level, vec![file.number])
                && fits(&p)
            {
                return Some(p);
            }
        }
    }
    None
}

/// Whether leveled pick `p` can run beside `running`: it shares no input file with them, and
/// none of them writes into its output level a key range its outputs would overlap.
pub fn fits_beside(p: &Pick, levels: &[Vec<LevelFile>], running: &[Running]) -> bool {
    let busy = |n: u64| running.iter().any(|r| r.inputs.contains(&n));
    let output_level = p.output_level;
    let mine = Running::of(p, levels, output_level);
    !mine.inputs.iter().any(|&n| busy(n))
        && !running.iter().any(|r| {
            r.output_level == output_level
                && r.largest >= mine.smallest
                && r.smallest <= mine.largest
        })
}

/// Bytes compaction still has to rewrite to bring the tree into shape (RocksDB's
/// `estimate-pending-compaction-bytes`): L0 once it is at its trigger (its bytes and L1's), and
/// each level's excess over its target, carried down and counted with the share of the next
/// level it rewrites.
pub fn pending_compaction_bytes(levels: &[Vec<LevelFile>], config: &PickerConfig) -> u64 {
    let bytes = |files: &[LevelFile]| files.iter().map(|f| f.size).sum::<u64>();
    let mut pending = 0u64;
    let mut incoming = 0u64;
    if let Some(l0) = levels.first()
        && l0.len() >= config.l0_trigger.max(1)
    {
        incoming = bytes(l0);
        pending = incoming + levels.get(1).map_or(0, |l1| bytes(l1));
    }
    let last = levels.len().saturating_sub(1);
    for (level, files) in levels
        .iter()
        .enumerate()
        .skip(1)
        .take(last.saturating_sub(1))
    {
        let size = bytes(files) + incoming;
        let target = config.target_bytes(level) as u64;
        incoming = size.saturating_sub(target);
        pending = pending.saturating_add((incoming as f64 * (config.multiplier + 1.0)) as u64);
    }
    pending
}

/// Bytes of `next` (a sorted level) overlapping `file`, per thousand bytes of `file`.
fn overlap_per_mille(file: &LevelFile, next: &[LevelFile]) -> u64 {
    // The overlapping files of a sorted level are contiguous.
    let first = next.partition_point(|n| n.largest.as_slice() < file.smallest.as_slice());
    let overlap: u64 = next[first..]
        .iter()
        .take_while(|n| n.smallest.as_slice() <= file.largest.as_slice())
        .map(|n| n.size)
        .sum();
    overlap.saturating_mul(1000) / file.size.max(1)
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
            created: 0,
        }
    }

    const CONFIG: PickerConfig = PickerConfig {
        l0_trigger: 4,
        base_level_bytes: 1000,
        multiplier: 10.0,
        compaction_pri: CompactionPri::RoundRobin,
        intra_l0_max_bytes: 0,
    };

    #[test]
    fn picker_takes_the_file_with_the_least_overlap_per_byte() {
        let levels = vec![
            vec![],
            vec![
                file(10, 600, "a", "c"),
                file(11, 600, "d", "f"),
                file(12, 300, "g", "i"),
                file(13, 600, "j", "l"),
            ],
            vec![
                file(20, 900, "b", "e"),
                file(21, 100, "h", "h"),
                file(22, 50, "k", "k"),
            ],
            vec![],
        ];
        let config = PickerConfig {
            compaction_pri: CompactionPri::MinOverlappingRatio,
            ..CONFIG
        };
        // Overlap per byte: 10 → 1.5, 11 → 1.5, 12 → 0.33, 13 → 0.083.
        let p = pick(&levels, &config, &[]).unwrap();
        assert_eq!((p.inputs, p.next_inputs), (vec![13], vec![22]));
        // Busy with 13, the next best.
        let running = [Running::of(&p_of(&levels, 13), &levels, 2)];
        let p = pick_besides(&levels, &config, &[], &running).unwrap();
        assert_eq!((p.inputs, p.next_inputs), (vec![12], vec![21]));
        // Equal ratios (10, 11) keep the round-robin order from the cursor.
        let tied = vec![
            levels[0].clone(),
            levels[1][..2].to_vec(),
            levels[2].clone(),
            vec![],
        ];
        let cursors = vec![Vec::new(), b"c".to_vec()];
        let p = pick(&tied, &config, &cursors).unwrap();
        assert_eq!(p.inputs, vec![11]);
    }

    fn p_of(levels: &[Vec<LevelFile>], number: u64) -> Pick {
        pick_files(levels, 1, vec![number]).unwrap()
    }

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
    fn picker_merges_a_small_l0_into_itself_until_it_is_worth_moving_down() {
        let l0 = |sizes: &[u64]| -> Vec<LevelFile> {
            (1..)
                .zip(sizes)
                .map(|(n, &size)| file(n, size, "b", "y"))
                .collect()
        };
        // L1 under its target throughout: only L0 is due.
        let config = PickerConfig {
            intra_l0_max_bytes: 500,
            base_level_bytes: 100_000,
            ..CONFIG
        };
        let l1 = vec![file(10, 2000, "a", "m"), file(11, 2000, "n", "z")];
        // 40 bytes of L0 over 4000 of L1: merged into one L0 table.
        let levels = vec![l0(&[10, 10, 10, 10]), l1.clone(), vec![]];
        let p = pick(&levels, &config, &[]).unwrap();
        assert_eq!((p.level, p.output_level), (0, 0));
        assert_eq!((p.inputs, p.next_inputs), (vec![1, 2, 3, 4], vec![]));
        // 430 bytes: more than a tenth of L1, so down into it.
        let levels = vec![l0(&[400, 10, 10, 10]), l1.clone(), vec![]];
        let p = pick(&levels, &config, &[]).unwrap();
        assert_eq!((p.output_level, p.next_inputs), (1, vec![10, 11]));
        // Past the most an intra-L0 compaction merges, even beside a larger L1.
        let big_l1 = vec![file(10, 20_000, "a", "m"), file(11, 20_000, "n", "z")];
        let levels = vec![l0(&[600, 10, 10, 10]), big_l1, vec![]];
        assert_eq!(pick(&levels, &config, &[]).unwrap().output_level, 1);
        // Off, and with one L0 file (a trigger of 1), never.
        let off = PickerConfig {
            intra_l0_max_bytes: 0,
            ..config
        };
        let levels = vec![l0(&[10, 10, 10, 10]), l1.clone(), vec![]];
        assert_eq!(pick(&levels, &off, &[]).unwrap().output_level, 1);
        let one = PickerConfig {
            l0_trigger: 1,
            ..config
        };
        let levels = vec![l0(&[10]), l1, vec![]];
        assert_eq!(pick(&levels, &one, &[]).unwrap().output_level, 1);
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
    fn pending_bytes_count_l0_at_its_trigger_and_excess_carried_down() {
        let mut levels = vec![
            vec![
                file(1, 10, "a", "b"),
                file(2, 10, "a", "b"),
                file(3, 10, "a", "b"),
            ],
            vec![file(10, 1500, "a", "z")],
            vec![],
            vec![file(30, 5, "a", "z")],
        ];
        // L0 below its trigger; L1 500 over its 1000, rewriting L2's share (multiplier 10).
        assert_eq!(pending_compaction_bytes(&levels, &CONFIG), 500 * 11);
        levels[0].push(file(4, 10, "a", "b"));
        // L0 at its trigger: its 40 and L1's 1500, then L1's 540 excess (L2 stays under).
        assert_eq!(
            pending_compaction_bytes(&levels, &CONFIG),
            40 + 1500 + 540 * 11
        );
        assert_eq!(pending_compaction_bytes(&[vec![], vec![]], &CONFIG), 0);
    }

    #[test]
    fn picker_never_compacts_the_last_level() {
        let levels = vec![vec![], vec![file(10, 1_000_000, "a", "z")]];
        assert_eq!(pick(&levels, &CONFIG, &[]), None);
    }

    #[test]
    fn picker_stays_clear_of_running_compactions() {
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
        let first = pick(&levels, &CONFIG, &[]).unwrap();
        assert_eq!(
            (first.inputs.clone(), first.next_inputs.clone()),
            (vec![10], vec![20])
        );
        let running = vec![Running::of(&first, &levels, 2)];
        // File 11 overlaps file 20, which the first job holds; file 12 is free.
        let second = pick_besides(&levels, &CONFIG, &[], &running).unwrap();
        assert_eq!(
            (second.inputs.clone(), second.next_inputs.clone()),
            (vec![12], vec![21])
        );
        let mut both = running.clone();
        both.push(Running::of(&second, &levels, 2));
        // L1 still counts 600 idle bytes of 1000: below target, nothing more to do.
        assert_eq!(pick_besides(&levels, &CONFIG, &[], &both), None);
    }

    #[test]
    fn picker_never_writes_a_range_another_job_is_writing() {
        let levels = vec![
            vec![],
            vec![file(10, 2000, "a", "c"), file(11, 2000, "p", "q")],
            vec![],
            vec![],
        ];
        // A job writing a..z into L2 (say, from files no longer listed): nothing of L1 may go
        // into L2 beside it.
        let running = vec![Running {
            inputs: vec![99],
            output_level: 2,
            smallest: b"a".to_vec(),
            largest: b"z".to_vec(),
        }];
        assert_eq!(pick_besides(&levels, &CONFIG, &[], &running), None);
        let narrow = vec![Running {
            smallest: b"a".to_vec(),
            largest: b"d".to_vec(),
            ..running[0].clone()
        }];
        let p = pick_besides(&levels, &CONFIG, &[], &narrow).unwrap();
        assert_eq!(p.inputs, vec![11]);
    }
}
