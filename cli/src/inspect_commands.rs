//! The commands that look at files: levels, dump-table, manifest, check.

use std::io::Write;
use std::path::Path;

use siftdb::inspect::{self, FileCheck, FilterInfo, ManifestEditInfo, ManifestFile, TableInfo};

use crate::args::{Cli, DumpOptions};
use crate::db_commands;
use crate::text::{key_info, show};
use crate::{Failure, Outcome};

/// `levels`: per keyspace and level, what `level_info` reports, then each table of the level
/// with its key range (from the manifest).
pub(crate) fn levels(cli: &Cli, dir: &Path, out: &mut dyn Write) -> Outcome {
    let db = db_commands::open(dir, cli.write)?;
    let version = inspect::current_version(dir)?;
    let names = match &cli.keyspace {
        Some(_) => vec![db_commands::keyspace(&db, cli)?.name().to_string()],
        None => db.keyspace_names(),
    };
    for name in names {
        let ks = db.keyspace(&name)?;
        let info = ks.level_info();
        let files = version.keyspaces.iter().find(|k| k.name == name);
        let tables: usize = info.iter().map(|l| l.files).sum();
        let bytes: u64 = info.iter().map(|l| l.bytes).sum();
        writeln!(out, "keyspace {name}: {tables} tables, {bytes} bytes")?;
        for (level, l) in info.iter().enumerate().filter(|(_, l)| l.files > 0) {
            writeln!(
                out,
                "  L{level}: {} tables, {} bytes, {} keys, filter {} {:.2} bits/key (planned {:.2}), expected FPR {:.5}",
                l.files, l.bytes, l.keys, l.filter_kind, l.bits_per_key, l.planned_bits_per_key, l.expected_fpr
            )?;
            let in_level = files.and_then(|k| k.levels.get(level));
            for f in in_level.into_iter().flatten() {
                writeln!(out, "    {}", file_line(f, cli.hex))?;
            }
        }
    }
    Ok(())
}

/// A table as one line: name, size, keys, key range.
fn file_line(f: &ManifestFile, hex: bool) -> String {
    format!(
        "{}  {} bytes  {} entries  {} .. {}",
        f.file_name,
        f.file_size,
        f.entries,
        show(&f.smallest.user_key, hex),
        show(&f.largest.user_key, hex)
    )
}

/// `dump-table`: properties, filters, index, entries, and a check with `--verify`.
pub(crate) fn dump_table(
    cli: &Cli,
    file: &Path,
    opts: &DumpOptions,
    out: &mut dyn Write,
) -> Outcome {
    if file.is_dir() {
        return Err(Failure(format!(
            "{} is a directory, not a table file",
            file.display()
        )));
    }
    let info = inspect::table_info(file)?;
    properties(&info, cli.hex, out)?;
    filter_section("filter", info.filter.as_ref(), out)?;
    filter_section("prefix filter", info.prefix_filter.as_ref(), out)?;
    if !opts.no_index {
        writeln!(out, "index ({} data blocks)", info.index.len())?;
        for (i, e) in info.index.iter().enumerate() {
            let separator = e
                .separator
                .as_ref()
                .map_or("undecodable".into(), |k| key_info(k, cli.hex));
            let partition = e
                .partition
                .map_or(String::new(), |p| format!("  partition {p}"));
            writeln!(
                out,
                "  #{i}  offset {}  size {}  last key {separator}{partition}",
                e.offset, e.size
            )?;
        }
    }
    if opts.entries {
        let entries = inspect::table_entries(file, Some(opts.limit))?;
        writeln!(out, "entries (first {} of {})", entries.len(), info.entries)?;
        for e in entries {
            writeln!(
                out,
                "  {} => {}",
                key_info(&e.key, cli.hex),
                show(&e.value, cli.hex)
            )?;
        }
    }
    if opts.verify {
        let check = inspect::check_table(file)?;
        let status = if check.is_ok() { "ok" } else { "FAILED" };
        writeln!(out, "verify: {status}: {}", check_line(&check))?;
        if let Some(problem) = check.problem {
            return Err(Failure(format!("{} is damaged: {problem}", file.display())));
        }
    }
    Ok(())
}

/// The properties section of `dump-table`.
fn properties(t: &TableInfo, hex: bool, out: &mut dyn Write) -> Outcome {
    let key = |k: &Option<inspect::KeyInfo>| {
        k.as_ref()
            .map_or("undecodable".into(), |k| key_info(k, hex))
    };
    let none_if_empty = |s: &str| {
        if s.is_empty() {
            "none".to_string()
        } else {
            s.to_string()
        }
    };
    writeln!(out, "table {}", t.path.display())?;
    let rows: [(&str, String); 16] = [
        ("file size", format!("{} bytes", t.file_size)),
        ("format version", t.format_version.to_string()),
        ("entries", t.entries.to_string()),
        ("deletions", t.deletions.to_string()),
        ("merge operands", t.merge_operands.to_string()),
        ("range deletions", t.range_deletions.to_string()),
        ("distinct keys", t.distinct_keys.to_string()),
        ("data blocks", t.data_blocks.to_string()),
        ("raw key bytes", t.raw_key_bytes.to_string()),
        ("raw value bytes", t.raw_value_bytes.to_string()),
        ("compression", t.compression.clone()),
        (
            "sequence numbers",
            format!("{} .. {}", t.min_sequence, t.max_sequence),
        ),
        ("smallest key", key(&t.smallest_key)),
        ("largest key", key(&t.largest_key)),
        (
            "created",
            format!("{} (Unix seconds; 0: unknown)", t.creation_time),
        ),
        ("prefix extractor", none_if_empty(&t.prefix_extractor)),
    ];
    for (name, value) in rows {
        writeln!(out, "  {name:<18} {value}")?;
    }
    writeln!(out, "  {:<18} {}", "index partitions", t.index_partitions)?;
    writeln!(
        out,
        "  {:<18} {}",
        "range filter",
        if t.has_range_filter { "yes" } else { "no" }
    )?;
    if !t.filter_omitted.is_empty() {
        writeln!(out, "  {:<18} {}", "filter omitted", t.filter_omitted)?;
    }
    Ok(())
}

/// A filter section of `dump-table`.
fn filter_section(title: &str, filter: Option<&FilterInfo>, out: &mut dyn Write) -> Outcome {
    let Some(f) = filter else {
        return Ok(writeln!(out, "{title}: none")?);
    };
    writeln!(out, "{title}")?;
    writeln!(out, "  {:<18} {}", "kind", f.kind)?;
    writeln!(out, "  {:<18} {} (seed {:#x})", "hash", f.hash, f.seed_tag)?;
    writeln!(out, "  {:<18} {}", "keys", f.keys)?;
    writeln!(out, "  {:<18} {}", "bytes", f.bytes)?;
    writeln!(
        out,
        "  {:<18} {:.2} built, {:.2} planned",
        "bits per key", f.bits_per_key, f.planned_bits_per_key
    )?;
    writeln!(out, "  {:<18} {:.6}", "expected FPR", f.expected_fpr)?;
    writeln!(out, "  {:<18} {}", "partitions", f.partitions)?;
    Ok(())
}

/// `manifest`: each edit, then the current version.
pub(crate) fn manifest(cli: &Cli, dir: &Path, out: &mut dyn Write) -> Outcome {
    let edits = inspect::manifest_edits(dir)?;
    let version = inspect::current_version(dir)?;
    writeln!(
        out,
        "manifest {}: {} edits",
        version.manifest.display(),
        edits.len()
    )?;
    for edit in &edits {
        edit_lines(edit, cli.hex, out)?;
    }
    writeln!(
        out,
        "current version: next file number {}, last sequence {}, next keyspace id {}",
        version
            .next_file_number
            .map_or("-".into(), |n| n.to_string()),
        version.last_sequence,
        version.next_keyspace_id
    )?;
    for k in &version.keyspaces {
        writeln!(
            out,
            "keyspace {} (id {}), log number {}",
            k.name, k.id, k.log_number
        )?;
        for (level, files) in k.levels.iter().enumerate().filter(|(_, f)| !f.is_empty()) {
            writeln!(out, "  L{level}: {} tables", files.len())?;
            for f in files {
                writeln!(out, "    {}", file_line(f, cli.hex))?;
            }
        }
        for b in &k.blob_files {
            writeln!(
                out,
                "  blob {:06}.blob  {} bytes  {} values",
                b.number, b.file_size, b.records
            )?;
        }
    }
    Ok(())
}

/// One edit: a line of its fields, then a line per table added or deleted.
fn edit_lines(e: &ManifestEditInfo, hex: bool, out: &mut dyn Write) -> Outcome {
    let mut fields = Vec::new();
    if let Some((name, _)) = &e.created {
        fields.push(format!("create keyspace {name:?}"));
    }
    if e.dropped {
        fields.push("drop keyspace".to_string());
    }
    let numbers = [
        ("log number", e.log_number),
        ("next file number", e.next_file_number),
        ("last sequence", e.last_sequence),
        ("next keyspace id", e.next_keyspace_id.map(u64::from)),
    ];
    fields.extend(
        numbers
            .iter()
            .filter_map(|(n, v)| v.map(|v| format!("{n} {v}"))),
    );
    fields.extend(
        e.other_log_numbers
            .iter()
            .map(|(k, n)| format!("keyspace {k} log number {n}")),
    );
    fields.extend(
        e.wal_starts
            .iter()
            .map(|(w, s)| format!("WAL {w:06} starts at sequence {s}")),
    );
    let keyspace = e
        .keyspace_name
        .clone()
        .unwrap_or_else(|| format!("id {}", e.keyspace_id));
    writeln!(out, "edit {} [{keyspace}]: {}", e.index, fields.join(", "))?;
    for f in &e.added {
        writeln!(out, "  + {}", added_line(f, hex))?;
    }
    for (level, number) in &e.deleted {
        writeln!(out, "  - L{level} {number:06}.sst")?;
    }
    for b in &e.blob_files {
        writeln!(
            out,
            "  + blob {:06}.blob  {} bytes  {} values",
            b.number, b.file_size, b.records
        )?;
    }
    Ok(())
}

/// A table an edit adds: level, name, size, entries, key range, and how its filter is read.
fn added_line(f: &ManifestFile, hex: bool) -> String {
    let mut line = format!(
        "L{} {}  {} bytes  {} entries  {} .. {}",
        f.level,
        f.file_name,
        f.file_size,
        f.entries,
        key_info(&f.smallest, hex),
        key_info(&f.largest, hex)
    );
    if f.filter_level != f.level {
        line += &format!("  filter planned for L{}", f.filter_level);
    }
    if let Some(cap) = f.filter_bits_cap {
        line += &format!("  filter read at {cap:.3} bits/key");
    }
    if let Some(seqno) = f.global_seqno {
        line += &format!("  global seqno {seqno}");
    }
    line
}

/// What one file's check found, after its name.
fn check_line(c: &FileCheck) -> String {
    let what = match c.kind {
        inspect::CheckedFileKind::Table => format!(
            "{} blocks, {} entries, {} keys checked against the filters",
            c.blocks, c.entries, c.filter_keys_checked
        ),
        inspect::CheckedFileKind::Wal => format!("{} records, {} operations", c.blocks, c.entries),
        inspect::CheckedFileKind::Manifest => format!("{} records", c.blocks),
        inspect::CheckedFileKind::Blob => format!("{} values", c.entries),
        _ => "readable".to_string(),
    };
    let mut line = match &c.problem {
        Some(problem) => problem.clone(),
        None => what,
    };
    for note in &c.notes {
        line += &format!(" (note: {note})");
    }
    line
}

/// `check`: a line per file, a summary, and exit 1 naming the damaged files.
pub(crate) fn check(dir: &Path, out: &mut dyn Write) -> Outcome {
    let report = inspect::check_db(dir)?;
    for c in &report.files {
        let place = match (&c.keyspace, c.level) {
            (Some(k), Some(l)) => format!(" [{k} L{l}]"),
            (Some(k), None) => format!(" [{k}]"),
            _ => String::new(),
        };
        let status = if c.is_ok() { "ok  " } else { "FAIL" };
        writeln!(
            out,
            "{status} {:<8} {}{place}: {}",
            c.kind.name(),
            c.path.display(),
            check_line(c)
        )?;
    }
    let damaged = report.damaged();
    if damaged.is_empty() {
        writeln!(out, "check passed: {} files", report.files.len())?;
        return Ok(());
    }
    let names: Vec<String> = damaged
        .iter()
        .map(|c| c.path.display().to_string())
        .collect();
    writeln!(
        out,
        "check FAILED: {} of {} files damaged",
        damaged.len(),
        report.files.len()
    )?;
    Err(Failure(format!(
        "check failed: damaged: {}",
        names.join(", ")
    )))
}
