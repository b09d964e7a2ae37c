//! `FilterAllocation::Adaptive`: tables whose key range lookups probe more often than Monkey
//! assumes get lower FPRs when compaction rewrites them, cold ones higher, at the filter memory
//! Monkey spends; the expected false positives per lookup (the filters' own FPRs over the probes,
//! counted by the engine) fall below Monkey's on a skewed workload.

use siftdb::{Db, FilterAllocation, Options};

fn options(allocation: FilterAllocation) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        filter_bits_per_key: 5.0,
        filter_allocation: allocation,
        false_positive_memo_bytes: 0,
        // The heat oracle counts per-table probes; a tree-wide filter index in front of them
        // would answer the missing keys first (filter_index_lookups.rs).
        filter_index_bits_per_key: 0.0,
        ..Options::default()
    }
}

fn key(n: u32) -> Vec<u8> {
    format!("k{n:08}").into_bytes()
}

/// Every even number up to 2·`KEYS` is written; odd ones are missing.
const KEYS: u32 = 40_000;

fn write_all(db: &Db, round: u32) {
    for i in 0..KEYS {
        let n = (i.wrapping_mul(7_919) % KEYS) * 2;
        db.put(key(n), format!("v{round}-{n}")).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
}

/// Missing keys, 9 in 10 from the hot tenth of the key range.
fn read_skewed(db: &Db, lookups: u32) {
    for i in 0..lookups {
        let r = i.wrapping_mul(2_654_435_761);
        let n = if r % 10 < 9 {
            r % (KEYS / 10)
        } else {
            r % KEYS
        };
        assert_eq!(db.get(key(2 * n + 1)).unwrap(), None);
    }
}

/// (filter bits, keys) below L0 of the tables the last lookups found hot (heat ≥ 2: probed at
/// least twice as often per key as Monkey assumes) and of the cold ones (heat ≤ 0.5).
fn bits_by_heat(db: &Db) -> ((f64, u64), (f64, u64)) {
    let table = db.property("siftdb.sstables").unwrap();
    println!("{table}");
    let (mut hot, mut cold) = ((0.0, 0), (0.0, 0));
    for row in table.lines().skip(1) {
        let cols: Vec<&str> = row.split_whitespace().collect();
        let keys: u64 = cols[2].parse().unwrap();
        let bits: f64 = cols[5].parse().unwrap();
        let heat: f64 = cols[8].parse().unwrap();
        let side = match heat {
            _ if cols[0] == "L0" => continue,
            h if h >= 2.0 => &mut hot,
            h if h <= 0.5 => &mut cold,
            _ => continue,
        };
        side.0 += bits * keys as f64;
        side.1 += keys;
    }
    (hot, cold)
}

/// Bits/key below L0 over every table.
fn mean_bits(db: &Db) -> f64 {
    let table = db.property("siftdb.sstables").unwrap();
    let (bits, keys) = table
        .lines()
        .skip(1)
        .map(|row| row.split_whitespace().collect::<Vec<_>>())
        .filter(|cols| cols[0] != "L0")
        .fold((0.0, 0u64), |(b, k), cols| {
            let keys: u64 = cols[2].parse().unwrap();
            (b + cols[5].parse::<f64>().unwrap() * keys as f64, k + keys)
        });
    bits / keys as f64
}

fn run(allocation: FilterAllocation) -> (f64, f64, (f64, u64), (f64, u64)) {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), options(allocation)).unwrap();
    write_all(&db, 0);
    read_skewed(&db, 100_000);
    // Rewrites every table: compactions re-plan from the heat the reads measured.
    write_all(&db, 1);
    // Below L0 only: L0 tables are planned at flush, as under Monkey, and how many a run ends
    // with depends on compaction timing.
    let below_l0 = |db: &Db| -> f64 {
        let levels = db.stats().levels;
        levels[1..]
            .iter()
            .map(|l| l.expected_false_positives())
            .sum()
    };
    let before = below_l0(&db);
    read_skewed(&db, 100_000);
    let expected = (below_l0(&db) - before) / 1e5;
    let (hot, cold) = bits_by_heat(&db);
    (expected, mean_bits(&db), hot, cold)
}

/// How many pairs of runs the comparisons take the median of: one run's table layout depends on
/// how flushes and compactions interleaved (under load, a run measured adaptive at 1.24 of
/// Monkey's false positives once in 16, and another at 0.90 of its filter memory, on the code
/// before and after the engine's layering alike).
const RUNS: usize = 3;

/// The median of `values` (`RUNS` of them).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[test]
fn filter_adaptive_allocation_moves_bits_to_hot_ranges_at_monkeys_memory() {
    let (mut hot_minus_cold, mut bits_ratios, mut fp_ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let (monkey_fp, monkey_bits, _, _) = run(FilterAllocation::Monkey);
        let (adaptive_fp, adaptive_bits, hot, cold) = run(FilterAllocation::Adaptive);
        let (hot_bits, cold_bits) = (hot.0 / hot.1 as f64, cold.0 / cold.1 as f64);
        println!(
            "expected false positives per lookup below L0: monkey {monkey_fp:.4}, adaptive {adaptive_fp:.4}; \
             bits/key below L0: monkey {monkey_bits:.2}, adaptive {adaptive_bits:.2} \
             (hot tables {hot_bits:.2}, cold ones {cold_bits:.2})"
        );
        hot_minus_cold.push(hot_bits - cold_bits);
        bits_ratios.push(adaptive_bits / monkey_bits);
        fp_ratios.push(adaptive_fp / monkey_fp);
    }
    let spread = median(hot_minus_cold.clone());
    assert!(spread > 2.0, "hot minus cold bits/key: {hot_minus_cold:?}");
    let memory = median(bits_ratios.clone());
    assert!(
        (memory - 1.0).abs() < 0.1,
        "adaptive / monkey bits/key: {bits_ratios:?}"
    );
    // The gain depends on how compaction cut the tables (timing): a CI run measured 0.80 of
    // Monkey's once, so the bound asks for a clear gain (10 %) rather than a typical one.
    let gain = median(fp_ratios.clone());
    assert!(
        gain < 0.9,
        "adaptive / monkey expected false positives: {fp_ratios:?}"
    );
}
