//! Output: the header, one `db_bench`-style line per workload followed by the statistics that
//! matter for it, and the same figures as one JSON object per workload.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Map, Value};
use siftdb::{LevelFilterStats, Stats};
use siftdb_cache::BlockKind;

use super::args::{Benchmark, Config};
use super::measure::{Measured, OpKind};
use super::settings::siftdb_options;
use super::text::{compression_text, db_write_buffer_text, filter_layout, human_bytes};
use super::workloads::{CheckpointReport, PhaseResult};

fn ratio(numerator: u64, denominator: u64) -> f64 {
    if denominator == 0 {
        0.0
    } else {
        numerator as f64 / denominator as f64
    }
}

/// The header printed before the first workload.
pub fn header(
    config: &Config,
    engine: &str,
    settings: Option<&str>,
    dir: &Path,
    temporary: bool,
) -> String {
    let options = siftdb_options(config);
    let mut out = String::new();
    let _ = writeln!(out, "siftdb-bench  engine: {engine}");
    if let Some(settings) = settings {
        let _ = writeln!(out, "Mapped as:    {settings}");
    }
    workload_lines(&mut out, config);
    // siftdb's filter layout; a peer's own is in its `Mapped as` line.
    if settings.is_none() {
        siftdb_read_path_lines(&mut out, config, &options);
    }
    storage_lines(&mut out, config, &options);
    let _ = writeln!(
        out,
        "Database:     {}{}",
        dir.display(),
        match (temporary, config.keep) {
            (true, false) => " (temporary, removed at the end)",
            (true, true) => " (temporary, kept: --keep)",
            (false, _) if config.use_existing_db => " (existing)",
            (false, _) => "",
        }
    );
    let names: Vec<&str> = config.benchmarks.iter().map(|b| b.name()).collect();
    let _ = writeln!(out, "Benchmarks:   {}", names.join(","));
    let _ = writeln!(out, "{}", "-".repeat(64));
    out
}

/// The header's lines on keys, values and operations.
fn workload_lines(out: &mut String, config: &Config) {
    let prefixes = config.num.div_ceil(config.keys_per_prefix);
    let _ = writeln!(
        out,
        "Keys:         {} bytes each (prefix {} bytes shared by {} keys; {} prefixes)",
        config.key_size, config.prefix_size, config.keys_per_prefix, prefixes
    );
    let _ = writeln!(out, "Values:       {} bytes each", config.value_size);
    let _ = writeln!(out, "Entries:      {}", config.num);
    let _ = writeln!(
        out,
        "Reads:        {} (seek_nexts {}, hot set {} keys, deletes {})",
        config.reads, config.seek_nexts, config.hot_keys, config.deletes
    );
    let _ = writeln!(
        out,
        "RawSize:      {} (estimated)",
        human_bytes(config.num * (config.key_size + config.value_size) as u64)
    );
    let _ = writeln!(
        out,
        "Threads:      {} (batch size {})",
        config.threads, config.batch_size
    );
    let _ = writeln!(out, "Keyspaces:    {}", keyspaces_text(config.keyspaces));
}

/// The header's lines on siftdb's filters, prefix filters and read-path structures.
fn siftdb_read_path_lines(out: &mut String, config: &Config, options: &siftdb::Options) {
    let _ = writeln!(
        out,
        "Filters:      {:.1} bits/key average; {}; {} allocation",
        config.filter.bits_per_key,
        filter_layout(config),
        match config.filter.allocation {
            super::args::AllocationArg::Monkey => "monkey",
            super::args::AllocationArg::Uniform => "uniform",
            super::args::AllocationArg::Adaptive => "adaptive",
        }
    );
    let _ = writeln!(
        out,
        "Prefixes:     fixed:{} extractor (a prefix filter in every table)",
        config.prefix_size
    );
    // siftdb's own read-path structures, which no peer has (so none is mapped to them).
    let _ = writeln!(
        out,
        "Read path:    false-positive memo {}; range filters {}; filter index {} (no peer has any)",
        match options.false_positive_memo_bytes {
            0 => "off".to_string(),
            bytes => human_bytes(bytes as u64),
        },
        match options.range_filter_bits_per_key {
            b if b > 0.0 => format!("{b} bits/key"),
            _ => "off".to_string(),
        },
        match options.filter_index_bits_per_key {
            b if b > 0.0 => format!(
                "{b} bits/key of its room (2x the keys at a rebuild; built before each phase of \
                 missing keys, as the engine builds it once lookups miss)"
            ),
            _ => "off".to_string(),
        }
    );
    if options.rate_limiter.is_some() {
        let _ = writeln!(
            out,
            "Rate limiter: {}",
            super::settings::rate_limiter_text(options)
        );
    }
}

/// The header's lines on compression, partitions, memory budgets and syncing.
fn storage_lines(out: &mut String, config: &Config, options: &siftdb::Options) {
    let _ = writeln!(
        out,
        "Compression:  {}; values compress to about {:.0}% (--compression_ratio)",
        compression_text(&config.compression),
        config.compression_ratio * 100.0
    );
    let _ = writeln!(
        out,
        "Partitions:   {}",
        match config.partition_index_and_filters {
            Some(true) => "index and filters of every table partitioned (--partition_index_and_filters)",
            Some(false) => "none: one index and one filter block per table",
            None => "index and filters partitioned in tables where either exceeds 64 KiB (siftdb's default)",
        }
    );
    let _ = writeln!(
        out,
        "Block cache:  {}",
        human_bytes(options.block_cache_capacity as u64)
    );
    let _ = writeln!(
        out,
        "Write buffer: {} (x{} memtables; {})",
        human_bytes(options.write_buffer_size as u64),
        options.max_write_buffer_number,
        db_write_buffer_text(options.db_write_buffer_size, options.allow_stall)
    );
    let _ = writeln!(
        out,
        "Sync:         {}; flush after write workloads: {}",
        config.sync, config.flush_after_write
    );
}

/// The keyspaces of a run in words: `1`, or `4 (key i in keyspace i % 4: default, ks1..ks3, ...)`.
pub fn keyspaces_text(keyspaces: usize) -> String {
    match keyspaces {
        1 => "1".to_string(),
        2 => "2 (key i in keyspace i % 2: default, ks1; the same options each)".to_string(),
        n => format!(
            "{n} (key i in keyspace i % {n}: default, ks1..ks{}; the same options each)",
            n - 1
        ),
    }
}

/// The footer: the tree's shape at the end.
pub fn footer(engine: &str, shape: Option<&str>) -> String {
    let source = if engine == "siftdb" {
        "siftdb.levels"
    } else {
        "files per level"
    };
    match shape {
        Some(shape) => format!("{}\nTree at the end ({source}):\n{shape}", "-".repeat(64)),
        None => String::new(),
    }
}

/// One engine's throughput rows: a label (a workload's name, or `NAME+flush` for a write
/// workload counted with the untimed flush after it) and its ops/sec.
pub type Throughputs = Vec<(String, f64)>;

/// The ratio table that ends a run of several engines: siftdb's ops/sec divided by each peer's,
/// per row (`-` where either side did not run it).
pub fn ratio_table(runs: &[(String, Throughputs)]) -> String {
    let Some((_, sift)) = runs.iter().find(|(name, _)| name == "siftdb") else {
        return String::new();
    };
    let peers: Vec<&(String, Throughputs)> =
        runs.iter().filter(|(name, _)| name != "siftdb").collect();
    if peers.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "{}\nops/sec per workload, and siftdb's ratio to each peer (NAME+flush: the write \
         workload with the flush and compactions it left, which the next workload would wait \
         for):\n",
        "=".repeat(64)
    );
    let _ = write!(out, "{:<18} {:>12}", "benchmark", "siftdb");
    for (name, _) in &peers {
        let _ = write!(out, " {:>12} {:>12}", name, format!("siftdb/{name}"));
    }
    out.push('\n');
    for (i, (label, sift_ops)) in sift.iter().enumerate() {
        let nth = occurrence(sift, i);
        let shown = if nth == 0 {
            label.clone()
        } else {
            format!("{label}#{}", nth + 1)
        };
        let _ = write!(out, "{shown:<18} {sift_ops:>12.0}");
        for (_, list) in &peers {
            match ops_of(list, label, nth) {
                Some(peer) if peer > 0.0 => {
                    let _ = write!(out, " {:>12.0} {:>11.2}x", peer, sift_ops / peer);
                }
                _ => {
                    let _ = write!(out, " {:>12} {:>12}", "-", "-");
                }
            }
        }
        out.push('\n');
    }
    out
}

/// How many times the label of `list[i]` came before it (a workload run twice, such as a
/// second `overwrite`, is compared with the peer's second run of it, not its first).
fn occurrence(list: &[(String, f64)], i: usize) -> usize {
    list[..i].iter().filter(|(l, _)| *l == list[i].0).count()
}

/// The ops/sec of the `nth` (from 0) workload named `label` in `list`.
fn ops_of(list: &[(String, f64)], label: &str, nth: usize) -> Option<f64> {
    list.iter()
        .filter(|(l, _)| l == label)
        .nth(nth)
        .map(|(_, v)| *v)
}

/// The ratio table as one JSON object (`{"ratios": {"rocksdb": {"readmissing": 1.7, ...}}}`).
pub fn ratio_json(runs: &[(String, Throughputs)]) -> Option<Value> {
    let (_, sift) = runs.iter().find(|(name, _)| name == "siftdb")?;
    let mut ratios = Map::new();
    for (name, list) in runs.iter().filter(|(name, _)| name != "siftdb") {
        let mut per = Map::new();
        for (i, (label, sift_ops)) in sift.iter().enumerate() {
            let nth = occurrence(sift, i);
            if let Some(peer) = ops_of(list, label, nth).filter(|&p| p > 0.0) {
                let key = if nth == 0 {
                    label.clone()
                } else {
                    format!("{label}#{}", nth + 1)
                };
                per.insert(key, json!(sift_ops / peer));
            }
        }
        ratios.insert(name.clone(), Value::Object(per));
    }
    (!ratios.is_empty()).then(|| json!({ "ratios": ratios }))
}

pub(crate) fn is_point_read(b: Benchmark) -> bool {
    matches!(
        b,
        Benchmark::ReadRandom
            | Benchmark::ReadMissing
            | Benchmark::MultiReadRandom
            | Benchmark::MultiReadMissing
            | Benchmark::MissFloor
            | Benchmark::ReadHot
            | Benchmark::ReadHotScan
            | Benchmark::ReadZipf
            | Benchmark::ReadWhileWriting
            | Benchmark::ReadWhileCompacting
    )
}

fn is_scan(b: Benchmark) -> bool {
    matches!(
        b,
        Benchmark::SeekRandom
            | Benchmark::SeekMissing
            | Benchmark::PrefixScan
            | Benchmark::ReadSeq
            | Benchmark::ReadReverse
    )
}

fn writes_mb_per_sec(result: &PhaseResult, config: &Config) -> Option<f64> {
    let m = result.measured.as_ref()?;
    let secs = m.wall.as_secs_f64();
    let writes = matches!(
        result.benchmark,
        Benchmark::FillSeq | Benchmark::FillRandom | Benchmark::BulkLoad | Benchmark::Overwrite
    );
    (writes && secs > 0.0).then(|| {
        (m.totals.ops * (config.key_size + config.value_size) as u64) as f64 / secs / 1048576.0
    })
}

/// The text of one workload: its `db_bench` line and the statistics that matter for it.
pub fn text(result: &PhaseResult, config: &Config) -> String {
    let name = result.benchmark.name();
    if let Some(reason) = &result.skipped {
        return format!("{name:<12} : {reason}\n");
    }
    let Some(m) = &result.measured else {
        return stats_text(result);
    };
    let t = &m.totals;
    let extra = summary(result, m, config);
    let mut out = format!(
        "{name:<12} : {:>10.3} micros/op {:>9} ops/sec;{extra}\n",
        m.micros_per_op(),
        m.ops_per_sec().round() as u64
    );
    if config.histogram {
        // A step of a multiread workload is a whole batch: its latencies are per call.
        let samples = if result.benchmark.is_multi_read() {
            "calls"
        } else {
            "samples"
        };
        let _ = writeln!(
            out,
            "  latency us   : P50 {:.3}  P95 {:.3}  P99 {:.3}  P99.9 {:.3}  max {:.3}  ({} {samples}, {} threads)",
            m.quantile_micros(0.50),
            m.quantile_micros(0.95),
            m.quantile_micros(0.99),
            m.quantile_micros(0.999),
            m.max_micros(),
            m.latency.len(),
            m.threads
        );
    }
    out.push_str(&kinds_text(m));
    if let Some(c) = &result.checkpoint {
        out.push_str(&checkpoint_text(c, m));
    }
    if let Some((alone, beside)) = result.hot_hit_rates {
        let _ = writeln!(
            out,
            "  hot set hits : data-block cache hit rate {alone:.4} alone, {beside:.4} beside the \
             scan ({:.3} of alone)",
            beside / alone.max(f64::MIN_POSITIVE)
        );
    }
    if let Some(stats) = &result.stats {
        if result.benchmark.writes() {
            out.push_str(&writes_text(stats, result));
        }
        if is_point_read(result.benchmark) {
            out.push_str(&lookups_text(stats, true));
            out.push_str(&filters_text(stats, result.filter_stats_by_level));
            out.push_str(&cache_text(stats));
        }
        if is_scan(result.benchmark) {
            out.push_str(&scans_text(stats, t.ops));
            out.push_str(&cache_text(stats));
        }
    }
    if let Some(rss) = result.rss {
        let _ = writeln!(
            out,
            "  memory       : peak RSS {} ({} at the start)",
            human_bytes(rss.peak),
            human_bytes(rss.current)
        );
    }
    if let Some(io) = result.disk_io.filter(|io| io.read > 0 || io.written > 0) {
        let _ = writeln!(
            out,
            "  disk         : wrote {}, read {} (the process's storage I/O over the workload and \
             its flush)",
            human_bytes(io.written),
            human_bytes(io.read)
        );
    }
    out
}

/// What the `db_bench` line of a write workload says after its rate; the read workloads' in
/// [`read_summary`].
fn summary(result: &PhaseResult, m: &Measured, config: &Config) -> String {
    let t = &m.totals;
    match result.benchmark {
        Benchmark::FillSeq | Benchmark::FillRandom | Benchmark::BulkLoad | Benchmark::Overwrite => format!(
            " {:>6.1} MB/s ({} ops)",
            writes_mb_per_sec(result, config).unwrap_or(0.0),
            t.ops
        ),
        Benchmark::DeleteRandom => format!(" (deleted {} existing keys of {})", t.entries, t.ops),
        Benchmark::DeleteRange => format!(
            " ({} range deletes of {} keys each removed {} existing keys)",
            t.ops, config.range_tombstone_width, t.entries
        ),
        Benchmark::MergeRandom => format!(" ({} merges)", t.ops),
        Benchmark::RandomTransaction => transaction_text(t, config),
        Benchmark::FillSustained => match &result.sustained {
            Some(s) => format!(
                " (the fastest trial passed; sustained {:.0} puts/s over {} trials, limits: L0 under {} tables, compaction owing at most {})",
                s.sustained,
                s.trials.len(),
                s.max_l0_files,
                human_bytes(s.max_pending_bytes)
            ),
            None => String::new(),
        },
        _ => read_summary(result, m, config),
    }
}

/// randomtransaction's counts: `(committed 9,532 of 10,000 optimistic transactions of 4 keys;
/// 468 aborted, abort rate 4.68 %)`; the rate before it is of committed transactions.
fn transaction_text(t: &super::measure::Outcome, config: &Config) -> String {
    let attempts = t.ops + t.aborts;
    let (mode, sets) = config
        .transactions
        .map_or(("", 0), |txn| (txn.mode(), txn.sets));
    format!(
        " (committed {} of {attempts} {mode} transactions of {sets} keys; {} aborted, abort rate {:.2} %)",
        t.ops,
        t.aborts,
        abort_rate(t) * 100.0
    )
}

/// Aborted transactions over all attempts (0 without any).
fn abort_rate(t: &super::measure::Outcome) -> f64 {
    let attempts = t.ops + t.aborts;
    if attempts == 0 {
        0.0
    } else {
        t.aborts as f64 / attempts as f64
    }
}

/// What the `db_bench` line of a read workload says after its rate: found counts, with the key
/// model's expectation where they differ.
fn read_summary(result: &PhaseResult, m: &Measured, config: &Config) -> String {
    let t = &m.totals;
    let known = result.expected_known;
    match result.benchmark {
        Benchmark::MultiReadRandom | Benchmark::MultiReadMissing => format!(
            " (found {} of {} keys; {}){}",
            t.found,
            t.ops,
            batches_text(m, config.batch_size as u64),
            mismatch(known, t.found, t.expected, "found")
        ),
        Benchmark::ReadWhileWriting => format!(
            " (found {} of {}){} (writer: {} puts)",
            t.found,
            t.ops,
            mismatch(known, t.found, t.expected, "found"),
            result.writer_ops.unwrap_or(0)
        ),
        Benchmark::ReadWhileCompacting => format!(
            " (found {} of {}){} (compactor: {} full compactions)",
            t.found,
            t.ops,
            mismatch(known, t.found, t.expected, "found"),
            result.writer_ops.unwrap_or(0)
        ),
        Benchmark::SeekRandom => format!(
            " (found {} of {}; {:.1} entries per seek){}",
            t.found,
            t.ops,
            ratio(t.entries, t.ops),
            mismatch(known, t.found, t.expected, "found")
        ),
        Benchmark::SeekMissing => format!(
            " ({} of {} empty ranges returned a key){}",
            t.found,
            t.ops,
            mismatch(known, t.found, t.expected, "found")
        ),
        Benchmark::PrefixScan => format!(
            " (found {} of {}; {:.1} entries per prefix){}{}",
            t.found,
            t.ops,
            ratio(t.entries, t.ops),
            mismatch(known, t.found, t.expected, "found"),
            mismatch(known, t.entries, t.expected_entries, "entries")
        ),
        Benchmark::ReadSeq | Benchmark::ReadReverse => format!(
            " ({} entries){}",
            t.entries,
            mismatch(known, t.entries, t.expected_entries, "entries")
        ),
        // The source's count is exact even with --use_existing_db: always compared.
        Benchmark::Checkpoint => format!(
            " (checkpoint holds {} keys){}",
            t.found,
            if t.found == t.expected {
                String::new()
            } else {
                format!(" [expected {} keys: the source's]", t.expected)
            }
        ),
        b if b.is_ycsb() => format!(
            " (found {} of {} records read or scanned){}",
            t.found,
            lookups_of(m),
            mismatch(known, t.found, t.expected, "found")
        ),
        _ => format!(
            " (found {} of {}){}",
            t.found,
            t.ops,
            mismatch(known, t.found, t.expected, "found")
        ),
    }
}

/// ` [expected N what]` when the key model knows and `found` is not `expected`; else empty.
fn mismatch(known: bool, found: u64, expected: u64, what: &str) -> String {
    if known && found != expected {
        format!(" [expected {expected} {what}]")
    } else {
        String::new()
    }
}

/// The peak resident set of each engine over its workloads (each workload's peak is measured
/// from its own start: see [`super::memory`]); empty where it was not measured.
pub fn memory_text(engines: &[(String, Option<u64>)]) -> String {
    let known: Vec<String> = engines
        .iter()
        .filter_map(|(name, peak)| peak.map(|p| format!("{name} {}", human_bytes(p))))
        .collect();
    if known.is_empty() {
        return String::new();
    }
    format!(
        "Peak RSS (largest over the workloads, each engine after the one before closed): {}\n",
        known.join(", ")
    )
}

/// Operations of a mixed workload that look a record up (reads, scans, read-modify-writes).
fn lookups_of(m: &Measured) -> u64 {
    m.by_kind
        .iter()
        .filter(|(k, _)| matches!(k, OpKind::Read | OpKind::Scan | OpKind::ReadModifyWrite))
        .map(|(_, h)| h.len())
        .sum()
}

/// One line per operation type of a mixed workload: count and latency quantiles (YCSB's
/// report); empty for single-type workloads.
fn kinds_text(m: &Measured) -> String {
    let mut out = String::new();
    for (kind, h) in &m.by_kind {
        let q = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        let _ = writeln!(
            out,
            "  {:<17} : {:>9} ops  latency us P50 {:.3}  P99 {:.3}  P99.9 {:.3}  max {:.3}",
            kind.name(),
            h.len(),
            q(0.50),
            q(0.99),
            q(0.999),
            h.max() as f64 / 1000.0
        );
    }
    out
}

/// The per-type figures of a mixed workload for `--json`.
fn kinds_json(m: &Measured) -> Value {
    let mut map = Map::new();
    for (kind, h) in &m.by_kind {
        let q = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        map.insert(
            kind.name().into(),
            json!({
                "ops": h.len(),
                "p50_us": q(0.50),
                "p99_us": q(0.99),
                "p999_us": q(0.999),
                "max_us": h.max() as f64 / 1000.0,
            }),
        );
    }
    Value::Object(map)
}

/// The batches of a multiread workload: `313 calls of 64 keys (the last 32), 75.1 micros/call`,
/// and with keys over several keyspaces how many `multi_get` calls those took (one per keyspace
/// of a batch).
fn batches_text(m: &Measured, batch_size: u64) -> String {
    let t = &m.totals;
    let mut out = if t.batches == 1 {
        format!("1 call of {} keys", t.ops)
    } else {
        format!("{} calls of {batch_size} keys", t.batches)
    };
    // `--reads` need not be a multiple of `--batch_size`: the last batch takes the rest.
    let last = t
        .ops
        .saturating_sub(t.batches.saturating_sub(1) * batch_size);
    if t.batches > 1 && last != batch_size {
        let _ = write!(out, " (the last {last})");
    }
    let _ = write!(out, ", {:.3} micros/call", m.micros_per_batch());
    if t.calls != t.batches {
        let _ = write!(
            out,
            "; keys grouped per keyspace: {} multi_get calls, {:.1} keys each",
            t.calls,
            ratio(t.ops, t.calls)
        );
    }
    out
}

/// What the stalls waited for, when the engine says (siftdb): " (L0 files 1.2, memtables 0.4,
/// memory budget 0.0 ms)"; empty otherwise.
fn stall_causes_text(s: &Stats) -> String {
    let causes = [
        s.stall_micros_l0_files,
        s.stall_micros_memtables,
        s.stall_micros_memory_budget,
        s.stall_micros_l0_slowdown,
    ];
    if causes.iter().all(|c| *c == 0) {
        return String::new();
    }
    let ms = |c: u64| c as f64 / 1000.0;
    format!(
        " (L0 files {:.1}, memtables {:.1}, memory budget {:.1}, L0 slowdown {:.1} ms)",
        ms(causes[0]),
        ms(causes[1]),
        ms(causes[2]),
        ms(causes[3])
    )
}

fn writes_text(s: &Stats, result: &PhaseResult) -> String {
    let mut out = format!(
        "  writes       : {} keys, {} user -> WAL {}, flushed {} in {} flushes, compacted {} in {} \
         (+{} tables moved down unchanged, {} with their filters thinned); write amplification \
         {:.2} ({:.2} without the WAL); stall {:.1} ms{}\n",
        s.keys_written,
        human_bytes(s.bytes_written_user),
        human_bytes(s.wal_bytes),
        human_bytes(s.flush_bytes),
        s.flushes,
        human_bytes(s.compaction_bytes_written),
        s.compactions,
        s.trivial_moves,
        s.filters_thinned_by_moves,
        s.write_amplification(),
        s.write_amplification_without_wal(),
        s.stall_micros as f64 / 1000.0,
        stall_causes_text(s)
    );
    if s.blob_bytes_written > 0 || s.blob_files > 0 {
        let _ = writeln!(
            out,
            "  blob files   : {} written ({} of it relocated by garbage collection); {} live \
             files hold {}, {} of it garbage",
            human_bytes(s.blob_bytes_written),
            human_bytes(s.blob_bytes_relocated),
            s.blob_files,
            human_bytes(s.blob_file_bytes),
            human_bytes(s.blob_garbage_bytes)
        );
    }
    if s.table_bytes_uncompressed > 0 {
        let _ = writeln!(
            out,
            "  tables       : {} written, {} uncompressed (compression ratio {:.2})",
            human_bytes(s.flush_bytes + s.compaction_bytes_written),
            human_bytes(s.table_bytes_uncompressed),
            s.compression_ratio()
        );
    }
    if s.compaction_blocks_read > 0 {
        let _ = writeln!(
            out,
            "  compaction   : read {} input bytes in {} blocks from files, none of them cached",
            human_bytes(s.compaction_bytes_read),
            s.compaction_blocks_read
        );
    }
    if let Some(flush) = result.flush_time {
        let _ = writeln!(
            out,
            "  flush        : {:.1} ms after the phase (untimed); {} write groups, {} WAL syncs",
            flush.as_secs_f64() * 1000.0,
            s.write_groups,
            s.wal_syncs
        );
    }
    out
}

/// The checkpoint line: its time, what it linked and copied, its size, how its keys were counted.
fn checkpoint_text(c: &CheckpointReport, m: &Measured) -> String {
    let transfer = match (c.files_linked, c.bytes_copied) {
        (Some(linked), Some(copied)) => format!(
            "{linked} table files hard-linked, {} copied (WALs, tables not linkable)",
            human_bytes(copied)
        ),
        _ => "files linked and bytes copied not counted by this engine".to_string(),
    };
    format!(
        "  checkpoint   : {:.0} micros; {transfer}; directory {} (linked files in full); opened, \
         keys counted by iterating every keyspace: {} (source {})\n",
        m.wall.as_secs_f64() * 1e6,
        human_bytes(c.dir_bytes),
        c.keys,
        c.source_keys
    )
}

/// The lookups line. File reads are divided by lookups only in a phase of point reads (`stats`
/// totals mix in the blocks scans read).
fn lookups_text(s: &Stats, point_reads_only: bool) -> String {
    let total = s.filter_total();
    let file_reads = if point_reads_only {
        format!(" (read from file {:.4})", ratio(s.data_block_reads, s.gets))
    } else {
        String::new()
    };
    // Only siftdb counts what its filters' sizes predict.
    let expected = if total.expected_false_positives_ppb > 0 && s.gets > 0 {
        format!(
            " (expected from the filters' FPRs {:.4})",
            total.expected_false_positives() / s.gets as f64
        )
    } else {
        String::new()
    };
    let memo = if s.memo.hits + s.memo.inserts > 0 {
        format!(
            "; false-positive memo: {} hits, {} inserts, {} evictions, {} held ({})",
            s.memo.hits,
            s.memo.inserts,
            s.memo.evictions,
            s.memo.entries,
            human_bytes(s.memo.bytes)
        )
    } else {
        String::new()
    };
    let memtable_bloom = if s.memtable_bloom_checked > 0 {
        format!(
            "; memtable bloom: {} asked, {} ruled out",
            s.memtable_bloom_checked, s.memtable_bloom_useful
        )
    } else {
        String::new()
    };
    format!(
        "  lookups      : {} ({} in memtables); data blocks per lookup {:.4}{file_reads}; \
         filter false positives per lookup {:.4}{expected}; \
         blocks read from file: {} data, {} index, {} filter{memo}{memtable_bloom}\n",
        s.gets,
        s.memtable_hits,
        ratio(total.data_block_accesses, s.gets),
        ratio(total.false_positives(), s.gets),
        s.data_block_reads,
        s.index_block_reads,
        s.filter_block_reads
    )
}

/// The filter table: a row per level, or one row `all` for an engine that counts filter outcomes
/// for the whole tree (`by_level` false).
fn filters_text(s: &Stats, by_level: bool) -> String {
    let rows: Vec<(String, LevelFilterStats)> = s
        .levels
        .iter()
        .enumerate()
        .filter(|(_, l)| l.checked > 0)
        .map(|(i, l)| {
            (
                if by_level {
                    format!("L{i}")
                } else {
                    "all".to_string()
                },
                *l,
            )
        })
        .collect();
    if rows.is_empty() {
        return "  filters      : not consulted\n".to_string();
    }
    let mut out = format!(
        "  filters      : {:<6} {:>10} {:>10} {:>10} {:>10} {:>12} {:>12}\n",
        "level", "checked", "useful", "positive", "true pos", "measured fpr", "blocks/check"
    );
    let mut row = |label: &str, l: &LevelFilterStats| {
        let _ = writeln!(
            out,
            "                 {:<6} {:>10} {:>10} {:>10} {:>10} {:>12.6} {:>12.4}",
            label,
            l.checked,
            l.useful,
            l.positive,
            l.true_positive,
            l.measured_fpr(),
            ratio(l.data_block_accesses, l.checked)
        );
    };
    for (label, l) in &rows {
        row(label, l);
    }
    if rows.len() > 1 {
        row("all", &s.filter_total());
    }
    out
}

fn cache_text(s: &Stats) -> String {
    let parts: Vec<String> = BlockKind::ALL
        .iter()
        .map(|&kind| {
            let k = s.cache.kind(kind);
            if k.lookups() == 0 {
                format!("{} -", kind.name())
            } else {
                format!(
                    "{} {:.1}% of {}",
                    kind.name(),
                    k.hit_ratio() * 100.0,
                    k.lookups()
                )
            }
        })
        .collect();
    format!("  block cache  : hit rate {}\n", parts.join(", "))
}

fn scans_text(s: &Stats, ops: u64) -> String {
    let blocks: u64 = [BlockKind::Index, BlockKind::Data]
        .iter()
        .map(|&k| s.cache.kind(k).lookups())
        .sum();
    format!(
        "  scans        : prefix filters {} checked, {} tables skipped; range filters {} checked, \
         {} tables skipped; index+data blocks used {} ({:.3} per op); data blocks read from file \
         {} ({:.2} per op), {} read\n",
        s.prefix_checked,
        s.prefix_useful,
        s.range_checked,
        s.range_useful,
        blocks,
        ratio(blocks, ops),
        s.data_block_reads,
        ratio(s.data_block_reads, ops),
        human_bytes(s.bytes_read)
    )
}

fn stats_text(result: &PhaseResult) -> String {
    let mut out = format!(
        "{:<12} : cumulative statistics; {} keys exist{}\n",
        "stats",
        result.live_keys,
        if result.expected_known {
            ""
        } else {
            " (assumed: --use_existing_db)"
        }
    );
    if let Some(s) = &result.stats {
        out.push_str(&lookups_text(s, false));
        out.push_str(&filters_text(s, result.filter_stats_by_level));
        out.push_str(&cache_text(s));
        let _ = writeln!(
            out,
            "  cache usage  : {} of {} ({} pinned), {} entries",
            human_bytes(s.cache.usage as u64),
            human_bytes(s.cache.capacity as u64),
            human_bytes(s.cache.pinned_usage as u64),
            s.cache.entries
        );
        let _ = writeln!(
            out,
            "  prefix seeks : prefix filters {} checked, {} tables skipped",
            s.prefix_checked, s.prefix_useful
        );
        let _ = writeln!(
            out,
            "  table cache  : {} file reads found the file open, {} reopened it; {} opens, {} \
             closed to stay within --open_files, {} open now; manifest {} ({} rollovers)",
            s.table_cache_hits,
            s.table_cache_misses,
            s.table_cache_opens,
            s.table_cache_evictions,
            s.open_table_files,
            human_bytes(s.manifest_file_size),
            s.manifest_rollovers
        );
        out.push_str(&writes_text(s, result));
        if s.checkpoints > 0 {
            let _ = writeln!(
                out,
                "  checkpoints  : {} taken; {} table files hard-linked, {} copied",
                s.checkpoints,
                s.checkpoint_files_linked,
                human_bytes(s.checkpoint_bytes_copied)
            );
        }
    }
    if let Some(bytes) = result.disk_bytes {
        let _ = writeln!(
            out,
            "  disk         : {} in the database directory (tables, logs, metadata)",
            human_bytes(bytes)
        );
    }
    if let Some(shape) = &result.shape {
        out.push_str(if result.filter_stats_by_level {
            "  tree (siftdb.levels):\n"
        } else {
            "  tree (files per level):\n"
        });
        for line in shape.lines() {
            let _ = writeln!(out, "    {line}");
        }
    }
    out
}

fn level_json(level: Option<usize>, l: &LevelFilterStats) -> Value {
    let mut v = json!({
        "checked": l.checked,
        "useful": l.useful,
        "positive": l.positive,
        "true_positive": l.true_positive,
        "measured_fpr": l.measured_fpr(),
        "data_block_accesses": l.data_block_accesses,
    });
    if let (Some(level), Value::Object(map)) = (level, &mut v) {
        map.insert("level".to_string(), json!(level));
    }
    v
}

fn stats_json(s: &Stats, point_reads_only: bool, map: &mut Map<String, Value>) {
    let total = s.filter_total();
    let mut put = |k: &str, v: Value| {
        map.insert(k.to_string(), v);
    };
    put("gets", json!(s.gets));
    put("gets_found", json!(s.gets_found));
    put("memtable_hits", json!(s.memtable_hits));
    put("memtable_bloom_checked", json!(s.memtable_bloom_checked));
    put("memtable_bloom_useful", json!(s.memtable_bloom_useful));
    put(
        "data_blocks_per_lookup",
        json!(ratio(total.data_block_accesses, s.gets)),
    );
    if point_reads_only {
        put(
            "data_block_reads_per_lookup",
            json!(ratio(s.data_block_reads, s.gets)),
        );
    }
    put("data_block_reads", json!(s.data_block_reads));
    put("index_block_reads", json!(s.index_block_reads));
    put("filter_block_reads", json!(s.filter_block_reads));
    put("bytes_read", json!(s.bytes_read));
    put("filter_checked", json!(total.checked));
    put("filter_useful", json!(total.useful));
    // The tree-wide filter index, in front of the tables' filters: what it ruled out never
    // reached them.
    put("filter_index_checked", json!(s.filter_index_checked));
    put("filter_index_useful", json!(s.filter_index_useful));
    put("filter_positive", json!(total.positive));
    put("filter_true_positive", json!(total.true_positive));
    put("measured_fpr", json!(total.measured_fpr()));
    put(
        "levels",
        Value::Array(
            s.levels
                .iter()
                .enumerate()
                .filter(|(_, l)| l.checked > 0)
                .map(|(i, l)| level_json(Some(i), l))
                .collect(),
        ),
    );
    put("prefix_checked", json!(s.prefix_checked));
    put("prefix_useful", json!(s.prefix_useful));
    let mut hit = Map::new();
    let mut lookups = Map::new();
    for kind in BlockKind::ALL {
        let k = s.cache.kind(kind);
        hit.insert(kind.name().to_string(), json!(k.hit_ratio()));
        lookups.insert(kind.name().to_string(), json!(k.lookups()));
    }
    put("cache_hit_ratio", Value::Object(hit));
    put("cache_lookups", Value::Object(lookups));
    write_stats_json(s, map);
}

/// The write side of [`stats_json`]: bytes written, flushes, compactions, stalls, checkpoints.
fn write_stats_json(s: &Stats, map: &mut Map<String, Value>) {
    let mut put = |k: &str, v: Value| {
        map.insert(k.to_string(), v);
    };
    put("keys_written", json!(s.keys_written));
    put("bytes_written_user", json!(s.bytes_written_user));
    put("wal_bytes", json!(s.wal_bytes));
    put("flush_bytes", json!(s.flush_bytes));
    put("blob_bytes_written", json!(s.blob_bytes_written));
    put("blob_bytes_relocated", json!(s.blob_bytes_relocated));
    put("blob_file_bytes", json!(s.blob_file_bytes));
    put("blob_garbage_bytes", json!(s.blob_garbage_bytes));
    put(
        "compaction_bytes_written",
        json!(s.compaction_bytes_written),
    );
    put("flushes", json!(s.flushes));
    put("compactions", json!(s.compactions));
    put("trivial_moves", json!(s.trivial_moves));
    put(
        "filters_thinned_by_moves",
        json!(s.filters_thinned_by_moves),
    );
    put("fifo_tables_dropped", json!(s.fifo_tables_dropped));
    put(
        "table_bytes_uncompressed",
        json!(s.table_bytes_uncompressed),
    );
    put("compression_ratio", json!(s.compression_ratio()));
    put("compaction_blocks_read", json!(s.compaction_blocks_read));
    put("write_amplification", json!(s.write_amplification()));
    put(
        "write_amplification_without_wal",
        json!(s.write_amplification_without_wal()),
    );
    put("stall_micros", json!(s.stall_micros));
    put("stall_micros_l0_files", json!(s.stall_micros_l0_files));
    put("stall_micros_memtables", json!(s.stall_micros_memtables));
    put(
        "stall_micros_memory_budget",
        json!(s.stall_micros_memory_budget),
    );
    put(
        "stall_micros_l0_slowdown",
        json!(s.stall_micros_l0_slowdown),
    );
    put("checkpoints", json!(s.checkpoints));
    put("checkpoint_files_linked", json!(s.checkpoint_files_linked));
    put("checkpoint_bytes_copied", json!(s.checkpoint_bytes_copied));
}

/// The checkpoint's own fields; linked and copied are `null` for an engine that does not count
/// them.
fn sustained_json(s: &super::workloads::SustainedReport, map: &mut Map<String, Value>) {
    map.insert("sustained_ops_per_sec".into(), json!(s.sustained));
    map.insert("sustained_max_l0_files".into(), json!(s.max_l0_files));
    map.insert(
        "sustained_max_pending_bytes".into(),
        json!(s.max_pending_bytes),
    );
    let trials: Vec<Value> = s
        .trials
        .iter()
        .map(|t| {
            json!({
                "target_ops_per_sec": t.target,
                "achieved_ops_per_sec": t.achieved,
                "max_l0_files": t.max_l0_files,
                "max_pending_compaction_bytes": t.max_pending_bytes,
                "stall_micros": t.stall_micros,
                "passed": t.failed.is_none(),
                "failed_because": t.failed,
            })
        })
        .collect();
    map.insert("sustained_trials".into(), json!(trials));
}

fn checkpoint_json(c: &CheckpointReport, m: &Measured, map: &mut Map<String, Value>) {
    let mut put = |k: &str, v: Value| {
        map.insert(k.to_string(), v);
    };
    put("checkpoint_micros", json!(m.wall.as_secs_f64() * 1e6));
    put("checkpoint_files_linked", json!(c.files_linked));
    put("checkpoint_bytes_copied", json!(c.bytes_copied));
    put("checkpoint_dir_bytes", json!(c.dir_bytes));
    put("checkpoint_keys", json!(c.keys));
    put("source_keys", json!(c.source_keys));
    put("keys_counted_by", json!("iterating every keyspace"));
}

/// One workload as a JSON object (one line of `--json` output).
pub fn json(result: &PhaseResult, config: &Config, engine: &str) -> Value {
    let mut map = Map::new();
    map.insert("engine".into(), json!(engine));
    map.insert("benchmark".into(), json!(result.benchmark.name()));
    map.insert("num".into(), json!(config.num));
    map.insert("key_size".into(), json!(config.key_size));
    map.insert("value_size".into(), json!(config.value_size));
    map.insert("threads".into(), json!(config.threads));
    map.insert("keyspaces".into(), json!(config.keyspaces));
    if let Some(reason) = &result.skipped {
        map.insert("skipped".into(), json!(reason));
        return Value::Object(map);
    }
    match &result.measured {
        Some(m) => measured_json(result, m, config, &mut map),
        None => {
            map.insert("ops".into(), json!(0));
            map.insert("live_keys".into(), json!(result.live_keys));
        }
    }
    if let Some(s) = &result.stats {
        stats_json(s, is_point_read(result.benchmark), &mut map);
    }
    // After the statistics: the checkpoint's own linked and copied figures win over the
    // phase's counters of the same name (they are equal for siftdb; `null` where not counted).
    if let (Some(c), Some(m)) = (&result.checkpoint, &result.measured) {
        checkpoint_json(c, m, &mut map);
    }
    if let Some(s) = &result.sustained {
        sustained_json(s, &mut map);
    }
    if let Some((alone, beside)) = result.hot_hit_rates {
        map.insert("hot_hit_rate_alone".into(), json!(alone));
        map.insert("hot_hit_rate_beside_scan".into(), json!(beside));
    }
    if let Some(shape) = &result.shape {
        map.insert("tree".into(), json!(shape));
    }
    if let Some(bytes) = result.disk_bytes {
        map.insert("disk_bytes".into(), json!(bytes));
    }
    if let Some(rss) = result.rss {
        map.insert("rss_start_bytes".into(), json!(rss.current));
        map.insert("peak_rss_bytes".into(), json!(rss.peak));
    }
    if let Some(io) = result.disk_io {
        map.insert("disk_bytes_written".into(), json!(io.written));
        map.insert("disk_bytes_read".into(), json!(io.read));
    }
    Value::Object(map)
}

/// A timed workload's own fields: counts, rates, latency quantiles, per-type figures and
/// batches, in the order `--json` prints them.
fn measured_json(
    result: &PhaseResult,
    m: &Measured,
    config: &Config,
    map: &mut Map<String, Value>,
) {
    let t = &m.totals;
    let expected = |v: u64| {
        if result.expected_known {
            json!(v)
        } else {
            Value::Null
        }
    };
    map.insert("ops".into(), json!(t.ops));
    map.insert("elapsed_secs".into(), json!(m.wall.as_secs_f64()));
    map.insert("micros_per_op".into(), json!(m.micros_per_op()));
    map.insert("ops_per_sec".into(), json!(m.ops_per_sec()));
    if let Some(mbps) = writes_mb_per_sec(result, config) {
        map.insert("mb_per_sec".into(), json!(mbps));
    }
    map.insert("found".into(), json!(t.found));
    map.insert("expected_found".into(), expected(t.expected));
    map.insert("entries".into(), json!(t.entries));
    if result.benchmark == Benchmark::PrefixScan {
        map.insert("expected_entries".into(), expected(t.expected_entries));
    }
    map.insert("p50_us".into(), json!(m.quantile_micros(0.50)));
    map.insert("p95_us".into(), json!(m.quantile_micros(0.95)));
    map.insert("p99_us".into(), json!(m.quantile_micros(0.99)));
    map.insert("p999_us".into(), json!(m.quantile_micros(0.999)));
    map.insert("max_us".into(), json!(m.max_micros()));
    if !m.by_kind.is_empty() {
        map.insert("operations".into(), kinds_json(m));
    }
    if result.benchmark.is_multi_read() {
        map.insert("batch_size".into(), json!(config.batch_size));
        map.insert("calls".into(), json!(t.batches));
        map.insert("micros_per_call".into(), json!(m.micros_per_batch()));
        map.insert("multi_get_calls".into(), json!(t.calls));
    }
    if result.benchmark == Benchmark::RandomTransaction {
        map.insert("committed".into(), json!(t.ops));
        map.insert("aborted".into(), json!(t.aborts));
        map.insert("abort_rate".into(), json!(abort_rate(t)));
        if let Some(txn) = config.transactions {
            map.insert("transaction_mode".into(), json!(txn.mode()));
            map.insert("transaction_sets".into(), json!(txn.sets));
        }
    }
    if let Some(w) = result.writer_ops {
        map.insert("writer_ops".into(), json!(w));
    }
    if let Some(f) = result.flush_time {
        map.insert("flush_after_secs".into(), json!(f.as_secs_f64()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workload_run_twice_is_compared_run_by_run() {
        let run = |ops: &[f64]| -> Throughputs {
            ops.iter().map(|&o| ("overwrite".to_string(), o)).collect()
        };
        let runs = vec![
            ("siftdb".to_string(), run(&[100.0, 60.0])),
            ("fjall".to_string(), run(&[50.0, 30.0])),
        ];
        let table = ratio_table(&runs);
        assert!(table.contains("overwrite   "), "{table}");
        assert!(table.contains("overwrite#2"), "{table}");
        assert_eq!(table.matches("2.00x").count(), 2, "{table}");
        let json = ratio_json(&runs).unwrap_or_default();
        assert_eq!(json["ratios"]["fjall"]["overwrite"], json!(2.0));
        assert_eq!(json["ratios"]["fjall"]["overwrite#2"], json!(2.0));
    }

    #[test]
    fn keyspaces_read_as_text() {
        assert_eq!(keyspaces_text(1), "1");
        assert_eq!(
            keyspaces_text(4),
            "4 (key i in keyspace i % 4: default, ks1..ks3; the same options each)"
        );
    }

    #[test]
    fn batches_read_as_calls() {
        use super::super::measure::{new_histogram, Outcome};
        let measured = |ops, batches, calls| Measured {
            totals: Outcome {
                ops,
                batches,
                calls,
                ..Outcome::default()
            },
            wall: std::time::Duration::from_millis(2),
            thread_time: std::time::Duration::from_millis(2),
            threads: 1,
            latency: new_histogram().unwrap(),
            by_kind: Vec::new(),
            per_second: Vec::new(),
        };
        assert_eq!(
            batches_text(&measured(1000, 16, 16), 64),
            "16 calls of 64 keys (the last 40), 125.000 micros/call"
        );
        assert_eq!(
            batches_text(&measured(1024, 16, 64), 64),
            "16 calls of 64 keys, 125.000 micros/call; keys grouped per keyspace: 64 multi_get \
             calls, 16.0 keys each"
        );
        assert_eq!(
            batches_text(&measured(10, 1, 1), 64),
            "1 call of 10 keys, 2000.000 micros/call"
        );
    }
}
