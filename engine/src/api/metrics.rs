//! Metrics export (cargo feature `metrics`): [`Db::publish_metrics`] records the database's
//! statistics through the [`metrics`] crate's facade, into whatever recorder the application
//! installed (`metrics-exporter-prometheus` in `examples/prometheus.rs`), and the publisher
//! thread does so every [`Options::metrics_interval`](crate::Options::metrics_interval).
//! Every name, label and unit is listed in `docs/METRICS.md`.
//!
//! Counters are published with `absolute` (the engine's tickers since open), sizes and levels
//! with gauges. Labels: `keyspace` on per-keyspace figures, `keyspace` and `level` on per-level
//! ones, `kind` on the block cache's per-kind figures, `cause` on write stalls.

use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, Label, Unit};

use crate::api::db::Db;
use crate::core::stats::Stats;
use crate::paths::engine::Engine;
use crate::paths::metrics_snapshot::{KeyspaceFigures, LevelFigures, MetricsSnapshot};

/// A database-wide counter: its name, help and the [`Stats`] field it publishes.
type StatsCounter = (&'static str, &'static str, fn(&Stats) -> u64);

/// The database-wide counters (no label).
#[rustfmt::skip]
const DB_COUNTERS: &[StatsCounter] = &[
    ("siftdb_gets_total", "Point lookups.", |s| s.gets),
    ("siftdb_gets_found_total", "Point lookups that found a value.", |s| s.gets_found),
    ("siftdb_memtable_hits_total", "Lookups answered by a memtable.", |s| s.memtable_hits),
    ("siftdb_memtable_bloom_checked_total", "Memtable searches that asked the memtable's bloom.", |s| s.memtable_bloom_checked),
    ("siftdb_memtable_bloom_useful_total", "Memtable searches the bloom ruled out.", |s| s.memtable_bloom_useful),
    ("siftdb_data_block_reads_total", "Data blocks read from table files.", |s| s.data_block_reads),
    ("siftdb_index_block_reads_total", "Index blocks read from table files.", |s| s.index_block_reads),
    ("siftdb_filter_block_reads_total", "Filter blocks read from table files.", |s| s.filter_block_reads),
    ("siftdb_bytes_read_total", "Bytes read from table files by users' reads.", |s| s.bytes_read),
    ("siftdb_prefix_checked_total", "Prefix filter checks.", |s| s.prefix_checked),
    ("siftdb_prefix_useful_total", "Prefix filter checks that skipped a table.", |s| s.prefix_useful),
    ("siftdb_range_checked_total", "Range filters consulted by scans.", |s| s.range_checked),
    ("siftdb_range_useful_total", "Range filters that ruled their table out of a scan.", |s| s.range_useful),
    ("siftdb_keys_written_total", "Keys written by users.", |s| s.keys_written),
    ("siftdb_bytes_written_user_total", "Bytes of keys and values written by users.", |s| s.bytes_written_user),
    ("siftdb_wal_bytes_total", "Bytes appended to the WAL.", |s| s.wal_bytes),
    ("siftdb_wal_syncs_total", "WAL syncs.", |s| s.wal_syncs),
    ("siftdb_write_groups_total", "Write groups committed.", |s| s.write_groups),
    ("siftdb_flushes_total", "Memtable flushes.", |s| s.flushes),
    ("siftdb_flush_bytes_total", "Bytes of tables written by flushes.", |s| s.flush_bytes),
    ("siftdb_blob_bytes_written_total", "Bytes of blob files written.", |s| s.blob_bytes_written),
    ("siftdb_blob_bytes_relocated_total", "Value bytes blob garbage collection moved.", |s| s.blob_bytes_relocated),
    ("siftdb_compactions_total", "Compactions.", |s| s.compactions),
    ("siftdb_compaction_bytes_read_total", "Bytes read by compactions.", |s| s.compaction_bytes_read),
    ("siftdb_compaction_bytes_written_total", "Bytes written by compactions.", |s| s.compaction_bytes_written),
    ("siftdb_compaction_blocks_read_total", "Blocks compactions read from table files.", |s| s.compaction_blocks_read),
    ("siftdb_trivial_moves_total", "Tables moved down a level without a rewrite.", |s| s.trivial_moves),
    ("siftdb_filters_thinned_by_moves_total", "Moved tables whose filter was thinned to the new level's plan.", |s| s.filters_thinned_by_moves),
    ("siftdb_subcompactions_total", "Key ranges merged by split compactions.", |s| s.subcompactions),
    ("siftdb_fifo_tables_dropped_total", "Tables FIFO compaction dropped.", |s| s.fifo_tables_dropped),
    ("siftdb_table_bytes_uncompressed_total", "What the tables flushes and compactions wrote would take uncompressed.", |s| s.table_bytes_uncompressed),
    ("siftdb_stall_micros_total", "Microseconds writers spent stalled (every cause).", |s| s.stall_micros),
    ("siftdb_checkpoints_total", "Checkpoints written.", |s| s.checkpoints),
    ("siftdb_checkpoint_files_linked_total", "Table files checkpoints hard-linked.", |s| s.checkpoint_files_linked),
    ("siftdb_checkpoint_bytes_copied_total", "Bytes checkpoints copied.", |s| s.checkpoint_bytes_copied),
    ("siftdb_files_ingested_total", "External table files ingested.", |s| s.files_ingested),
    ("siftdb_files_deleted_in_range_total", "Tables delete_files_in_range deleted.", |s| s.files_deleted_in_range),
    ("siftdb_ingested_bytes_linked_total", "Bytes of ingested files hard-linked.", |s| s.ingested_bytes_linked),
    ("siftdb_ingested_bytes_copied_total", "Bytes of ingested files copied.", |s| s.ingested_bytes_copied),
    ("siftdb_recovery_dropped_wal_fragments_total", "WAL fragments the last open dropped after damage.", |s| s.recovery_dropped_wal_fragments),
    ("siftdb_recovery_dropped_wal_bytes_total", "WAL bytes past where the last open stopped replaying.", |s| s.recovery_dropped_wal_bytes),
    ("siftdb_recovery_dropped_wals_total", "WALs the last open dropped whole.", |s| s.recovery_dropped_wals),
    ("siftdb_compaction_filter_removed_total", "Values the compaction filter removed.", |s| s.compaction_filter_removed),
    ("siftdb_compaction_filter_changed_total", "Values the compaction filter changed.", |s| s.compaction_filter_changed),
    ("siftdb_compaction_filter_failures_total", "Compactions abandoned because the compaction filter panicked.", |s| s.compaction_filter_failures),
    ("siftdb_range_deleted_dropped_total", "Entries compactions dropped under a range tombstone.", |s| s.range_deleted_dropped),
    ("siftdb_range_tombstones_dropped_total", "Range tombstone pieces compactions dropped.", |s| s.range_tombstones_dropped),
    ("siftdb_merges_in_compaction_total", "Runs of merge operands compactions combined.", |s| s.merges_in_compaction),
    ("siftdb_table_cache_hits_total", "Table file reads that found the file open in the table cache.", |s| s.table_cache_hits),
    ("siftdb_table_cache_misses_total", "Table file reads that found the file closed by the table cache.", |s| s.table_cache_misses),
    ("siftdb_table_cache_opens_total", "Table files opened.", |s| s.table_cache_opens),
    ("siftdb_table_cache_evictions_total", "Table files the table cache closed.", |s| s.table_cache_evictions),
    ("siftdb_manifest_rollovers_total", "Manifests started afresh since open.", |s| s.manifest_rollovers),
    ("siftdb_memo_hits_total", "Lookups the false-positive memo answered.", |s| s.memo.hits),
    ("siftdb_memo_inserts_total", "Absences the false-positive memo remembered.", |s| s.memo.inserts),
    ("siftdb_memo_evictions_total", "False-positive memo entries pushed out by newer ones.", |s| s.memo.evictions),
    ("siftdb_memo_forgotten_total", "False-positive memo entries dropped with their table.", |s| s.memo.forgotten),
    ("siftdb_event_listener_panics_total", "Event listener calls that panicked (contained).", |s| s.event_listener_panics),
];

/// The database-wide gauges (no label).
#[rustfmt::skip]
const DB_GAUGES: &[StatsCounter] = &[
    ("siftdb_compactions_peak_concurrency", "Most compactions seen running at once.", |s| s.compactions_peak_concurrency),
    ("siftdb_open_table_files", "Table files open through the table cache.", |s| s.open_table_files),
    ("siftdb_manifest_file_size_bytes", "Bytes of the manifest being appended to.", |s| s.manifest_file_size),
    ("siftdb_memo_entries", "Entries the false-positive memo holds.", |s| s.memo.entries),
    ("siftdb_memo_bytes", "Bytes the false-positive memo is charged.", |s| s.memo.bytes),
    ("siftdb_block_cache_capacity_bytes", "The block cache's capacity.", |s| s.cache.capacity as u64),
    ("siftdb_block_cache_usage_bytes", "Bytes charged to the block cache (pinned included).", |s| s.cache.usage as u64),
    ("siftdb_block_cache_pinned_usage_bytes", "Bytes of pinned block cache entries.", |s| s.cache.pinned_usage as u64),
    ("siftdb_block_cache_high_priority_usage_bytes", "Bytes in the block cache's high-priority pool.", |s| s.cache.high_priority_usage as u64),
    ("siftdb_block_cache_high_priority_capacity_bytes", "Capacity of the block cache's high-priority pool.", |s| s.cache.high_priority_capacity as u64),
    ("siftdb_block_cache_pinned_entries", "Block cache entries with a pin.", |s| s.cache.pinned_entries as u64),
];

/// A per-kind block cache figure: its name, help, whether a counter, and the field.
type KindFigure = (
    &'static str,
    &'static str,
    bool,
    fn(&siftdb_cache::KindStats) -> u64,
);

/// The block cache's figures per block kind (label `kind`).
#[rustfmt::skip]
const CACHE_KIND: &[KindFigure] = &[
    ("siftdb_block_cache_hits_total", "Block cache lookups that found the block.", true, |k| k.hits),
    ("siftdb_block_cache_misses_total", "Block cache lookups that did not find the block.", true, |k| k.misses),
    ("siftdb_block_cache_inserts_total", "Entries added to the block cache.", true, |k| k.inserts),
    ("siftdb_block_cache_evictions_total", "Entries removed to make room.", true, |k| k.evictions),
    ("siftdb_block_cache_erasures_total", "Entries erased with their table.", true, |k| k.erasures),
    ("siftdb_block_cache_rejections_total", "Inserts larger than their shard.", true, |k| k.rejections),
    ("siftdb_block_cache_not_admitted_total", "Data blocks the admission policy kept out.", true, |k| k.not_admitted),
    ("siftdb_block_cache_entries", "Entries of the kind resident.", false, |k| k.entries as u64),
    ("siftdb_block_cache_bytes", "Bytes charged by resident entries of the kind.", false, |k| k.bytes as u64),
];

/// A per-level figure: its name, help, whether a counter, and the value.
type LevelFigure = (&'static str, &'static str, bool, fn(&LevelFigures) -> u64);

/// The figures of each level of each keyspace (labels `keyspace`, `level`).
#[rustfmt::skip]
const LEVEL: &[LevelFigure] = &[
    ("siftdb_filter_checked_total", "Point lookups that consulted a filter on the level.", true, |l| l.filter.checked),
    ("siftdb_filter_useful_total", "Filter probes that said no (bloom.filter.useful).", true, |l| l.filter.useful),
    ("siftdb_filter_positive_total", "Filter probes that said maybe.", true, |l| l.filter.positive),
    ("siftdb_filter_true_positive_total", "Filter probes that said maybe for a key the table held.", true, |l| l.filter.true_positive),
    ("siftdb_filter_false_positives_total", "Filter probes that said maybe for a key the table did not hold.", true, |l| l.filter.false_positives()),
    ("siftdb_filter_expected_false_positives_ppb_total", "False positives the probed filters' sizes predict, in billionths.", true, |l| l.filter.expected_false_positives_ppb),
    ("siftdb_data_block_accesses_total", "Data blocks point lookups used on the level (block cache or file).", true, |l| l.filter.data_block_accesses),
    ("siftdb_level_memo_hits_total", "Lookups on the level the false-positive memo answered.", true, |l| l.filter.memo_hits),
    ("siftdb_level_memo_inserts_total", "False positives on the level the memo remembered.", true, |l| l.filter.memo_inserts),
    ("siftdb_level_files", "Tables in the level.", false, |l| l.files),
    ("siftdb_level_bytes", "Bytes of the level's table files.", false, |l| l.bytes),
    ("siftdb_level_keys", "Distinct keys in the level's tables.", false, |l| l.keys),
];

/// A per-keyspace figure: its name, help, whether a counter, and the value.
type KeyspaceFigure = (
    &'static str,
    &'static str,
    bool,
    fn(&KeyspaceFigures) -> u64,
);

/// The figures of each keyspace (label `keyspace`).
#[rustfmt::skip]
const KEYSPACE: &[KeyspaceFigure] = &[
    ("siftdb_memtable_active_bytes", "Bytes of the keyspace's active memtable.", false, |k| k.active_memtable_bytes),
    ("siftdb_memtable_immutable_bytes", "Bytes of its frozen memtables waiting for a flush.", false, |k| k.immutable_memtable_bytes),
    ("siftdb_memtable_immutable_count", "Frozen memtables waiting for a flush.", false, |k| k.immutable_memtables),
    ("siftdb_memtable_entries", "Entries in its memtables.", false, |k| k.memtable_entries),
    ("siftdb_pending_compaction_bytes", "Bytes compaction owes the keyspace's tree.", false, |k| k.pending_compaction_bytes),
    ("siftdb_filter_index_checked_total", "Lookups that probed the keyspace's filter index.", true, |k| k.filter_index_checked),
    ("siftdb_filter_index_useful_total", "Keys the filter index ruled out of every table.", true, |k| k.filter_index_useful),
    ("siftdb_filter_index_false_positives_total", "Keys the filter index let through that no table held.", true, |k| k.filter_index_false_positives),
    ("siftdb_filter_index_bytes", "Bytes of the keyspace's filter index.", false, |k| k.filter_index_bytes),
    ("siftdb_filter_index_rebuilds_total", "Filter index rebuilds.", true, |k| k.filter_index_rebuilds),
    ("siftdb_filter_index_retirements_total", "Filter index retirements.", true, |k| k.filter_index_retirements),
    ("siftdb_blob_files", "Blob files live in the keyspace.", false, |k| k.blob_files),
    ("siftdb_blob_file_bytes", "Stored value bytes of its blob files.", false, |k| k.blob_file_bytes),
    ("siftdb_blob_garbage_bytes", "Blob bytes no live table references.", false, |k| k.blob_garbage_bytes),
];

/// A write stall cause: its label and the [`Stats`] field.
type StallCause = (&'static str, fn(&Stats) -> u64);

/// The write stall causes (label `cause` of `siftdb_stall_micros_by_cause_total`).
#[rustfmt::skip]
const STALL_CAUSES: &[StallCause] = &[
    ("l0_files", |s| s.stall_micros_l0_files),
    ("memtables", |s| s.stall_micros_memtables),
    ("memory_budget", |s| s.stall_micros_memory_budget),
    ("l0_slowdown", |s| s.stall_micros_l0_slowdown),
];

impl Db {
    /// Records every statistic of the database through the [`metrics`] crate's facade now (cargo
    /// feature `metrics`), into the recorder the application installed (none: nothing happens):
    /// the [`Stats`] counters, the block cache per block kind (label `kind`), per keyspace
    /// (label `keyspace`) its memtables, filter index and compaction debt, and per keyspace and
    /// level (labels `keyspace`, `level`) the filter probes, useful answers and false
    /// positives, data blocks used and the level's tables. Names and units are in
    /// `docs/METRICS.md`.
    ///
    /// The publisher thread calls it every [`Options::metrics_interval`](crate::Options);
    /// call it yourself before a scrape that must see the latest figures. It takes the state
    /// lock as briefly as [`Db::stats`] does, does no I/O, and never fails.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
    /// db.put("k", "v")?;
    /// db.publish_metrics(); // into the global recorder, if one is installed
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn publish_metrics(&self) {
        publish(self.engine());
    }

    /// Starts the thread that publishes every `Options::metrics_interval` (when set, and the
    /// database is writable); it ends with the database.
    pub(crate) fn start_metrics_publisher(&self) {
        let engine = Arc::clone(self.engine());
        let Some(interval) = engine.shared().options().metrics_interval else {
            return;
        };
        let thread = std::thread::Builder::new()
            .name("siftdb-metrics".to_string())
            .spawn(move || publisher_loop(&engine, interval));
        match thread {
            Ok(handle) => self.adopt_thread(handle),
            // Metrics are not worth stopping writes for: the database runs without them.
            Err(e) => tracing::warn!("siftdb: the metrics publisher did not start: {e}"),
        }
    }
}

/// Times flushes and compactions (`siftdb_flush_seconds`, `siftdb_compaction_seconds`, label
/// `keyspace`) from the durations their completion events carry.
struct JobDurations;

impl crate::EventListener for JobDurations {
    fn on_flush_completed(&self, info: &crate::FlushJobInfo) {
        if info.error.is_none() {
            metrics::histogram!("siftdb_flush_seconds", "keyspace" => info.keyspace.clone())
                .record(info.duration.as_secs_f64());
        }
    }

    fn on_compaction_completed(&self, info: &crate::CompactionJobInfo) {
        if info.error.is_none() && !info.trivial_move {
            metrics::histogram!("siftdb_compaction_seconds", "keyspace" => info.keyspace.clone())
                .record(info.duration.as_secs_f64());
        }
    }
}

/// `options` with the listener that times flushes and compactions added (when the publisher
/// runs: `metrics_interval` set).
pub(crate) fn with_job_durations(mut options: crate::Options) -> crate::Options {
    if options.metrics_interval.is_some() {
        options.listeners.push(Arc::new(JobDurations));
    }
    options
}

/// Publishes every `interval` until the database closes (closing unparks the thread). A panic
/// in the recorder (the application's code) ends the thread, not the database.
fn publisher_loop(engine: &Engine, interval: Duration) {
    let shared = engine.shared();
    let mut next = Instant::now() + interval;
    loop {
        if shared.is_shutting_down() {
            return;
        }
        let now = Instant::now();
        if now < next {
            std::thread::park_timeout(next - now);
            continue;
        }
        next = now + interval;
        let published = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| publish(engine)));
        if published.is_err() {
            tracing::warn!("siftdb: publishing metrics panicked; the publisher stops");
            return;
        }
    }
}

/// Records the figures of `engine` now.
pub(crate) fn publish(engine: &Engine) {
    static DESCRIBED: Once = Once::new();
    DESCRIBED.call_once(describe);
    let snapshot = crate::paths::metrics_snapshot::snapshot(engine);
    publish_database(&snapshot);
    for keyspace in &snapshot.keyspaces {
        publish_keyspace(keyspace);
    }
}

/// The database-wide figures.
fn publish_database(snapshot: &MetricsSnapshot) {
    let s = &snapshot.stats;
    for (name, _, value) in DB_COUNTERS {
        counter!(*name).absolute(value(s));
    }
    for (name, _, value) in DB_GAUGES {
        gauge!(*name).set(value(s) as f64);
    }
    for (cause, value) in STALL_CAUSES {
        counter!("siftdb_stall_micros_by_cause_total", "cause" => *cause).absolute(value(s));
    }
    for kind in siftdb_cache::BlockKind::ALL {
        let stats = s.cache.kind(kind);
        let labels = [Label::new("kind", kind_label(kind))];
        for (name, _, is_counter, value) in CACHE_KIND {
            publish_one(name, &labels, *is_counter, value(stats));
        }
    }
    gauge!("siftdb_block_cache_entries_all").set(s.cache.entries as f64);
    gauge!("siftdb_memtable_bytes_all").set(snapshot.memtable_bytes_all as f64);
    gauge!("siftdb_background_error").set(if snapshot.background_error { 1.0 } else { 0.0 });
}

/// One keyspace's figures and its levels'.
fn publish_keyspace(keyspace: &KeyspaceFigures) {
    let labels = [Label::new("keyspace", Arc::clone(&keyspace.name))];
    for (name, _, is_counter, value) in KEYSPACE {
        publish_one(name, &labels, *is_counter, value(keyspace));
    }
    for (level, figures) in keyspace.levels.iter().enumerate() {
        let labels = [
            Label::new("keyspace", Arc::clone(&keyspace.name)),
            Label::new("level", level.to_string()),
        ];
        for (name, _, is_counter, value) in LEVEL {
            publish_one(name, &labels, *is_counter, value(figures));
        }
        gauge!("siftdb_filter_measured_fpr", labels.iter()).set(figures.filter.measured_fpr());
    }
}

/// Records one labelled figure: a counter's total, or a gauge's value.
fn publish_one(name: &'static str, labels: &[Label], is_counter: bool, value: u64) {
    if is_counter {
        counter!(name, labels.iter()).absolute(value);
    } else {
        gauge!(name, labels.iter()).set(value as f64);
    }
}

/// The `kind` label of a block kind.
fn kind_label(kind: siftdb_cache::BlockKind) -> &'static str {
    use siftdb_cache::BlockKind;
    match kind {
        BlockKind::Data => "data",
        BlockKind::Index => "index",
        BlockKind::Filter => "filter",
        BlockKind::Properties => "properties",
        BlockKind::Blob => "blob",
        _ => "other",
    }
}

/// Gives every metric its help text (and the histograms their unit), once per process.
fn describe() {
    for (name, help, _) in DB_COUNTERS {
        describe_counter!(*name, *help);
    }
    for (name, help, _) in DB_GAUGES {
        describe_gauge!(*name, *help);
    }
    let labelled = CACHE_KIND.iter().map(|(n, h, c, _)| (*n, *h, *c));
    let labelled = labelled.chain(LEVEL.iter().map(|(n, h, c, _)| (*n, *h, *c)));
    for (name, help, is_counter) in labelled.chain(KEYSPACE.iter().map(|(n, h, c, _)| (*n, *h, *c)))
    {
        if is_counter {
            describe_counter!(name, help);
        } else {
            describe_gauge!(name, help);
        }
    }
    let by_cause = "Microseconds writers spent stalled, by cause.";
    describe_counter!("siftdb_stall_micros_by_cause_total", by_cause);
    describe_gauge!(
        "siftdb_block_cache_entries_all",
        "Block cache entries resident."
    );
    describe_gauge!(
        "siftdb_memtable_bytes_all",
        "Bytes of every keyspace's memtables."
    );
    let failed = "1 once background work failed and writes stopped, else 0.";
    describe_gauge!("siftdb_background_error", failed);
    let fpr = "Measured false-positive rate of the level's filters.";
    describe_gauge!("siftdb_filter_measured_fpr", fpr);
    for (job, name) in [
        ("Flush", "siftdb_flush_seconds"),
        (
            "Compaction (not trivial moves)",
            "siftdb_compaction_seconds",
        ),
    ] {
        describe_histogram!(name, Unit::Seconds, format!("{job} duration."));
    }
    for (op, name) in [
        ("Point lookup", "siftdb_get_seconds"),
        ("Write", "siftdb_put_seconds"),
        ("Iterator seek", "siftdb_seek_seconds"),
    ] {
        let every = crate::paths::latency::SAMPLE_EVERY;
        let help = format!("{op} latency (sampled: one call in {every} per thread).");
        describe_histogram!(name, Unit::Seconds, help);
    }
}
