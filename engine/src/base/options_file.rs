//! The `OPTIONS` file: the settings that shape on-disk data, checked before a database is opened
//! (a newer format, another filter hasher) and rewritten when they change.
//!
//! ```text
//! # siftdb options that shape on-disk data
//! format_version=2
//! filter_hash=Xxh3
//! filter_seed_tag=1234
//! prefix_extractor=fixed:8
//! ```
//! Unknown keys (written by a newer build) are ignored; the format version decides.

use std::path::Path;

use crate::base::error::{Error, Result};
use crate::base::fs::{names, FileSystem};
use crate::base::options::Options;

/// The database format version this build writes and reads: 2 adds field 6 of manifest edits
/// (the level a trivially moved table's filter was planned for); 3 writes tables of table
/// format 2 (compressed blocks, partitioned index and filters); 4 adds keyspaces (WAL ops
/// tagged with a keyspace id, manifest fields 7-11); 5 adds merge operands and range
/// tombstones (WAL op kinds 3 and 4, tables of table format 3 with a range tombstone block, the
/// merge operator's name in `OPTIONS`); 6 records where WALs start (manifest field 12); 7 writes
/// a sync mark after each sync of a log (fragment type 5, WAL and manifest); 8 records the
/// bits a moved table's ribbon filter is read thinned to (manifest field 13); 9 adds blob
/// files (`NNNNNN.blob`, manifest fields 14 and 15, tables holding blob indexes: value kind 5);
/// 10 adds ingested tables (manifest field 16: a table's global seqno) and sequence markers in
/// the WAL; 11 adds log data in WAL batch records (tag 0x7f, `WriteBatch::put_log_data`).
/// Older databases open and are upgraded
/// (their tables are read as they are and rewritten by compactions; everything they hold is
/// the "default" keyspace).
pub const FORMAT_VERSION: u32 = 11;

/// What `OPTIONS` records: the settings that shape on-disk data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordedOptions {
    pub format_version: u32,
    pub filter_hash: String,
    pub filter_seed_tag: u64,
    pub prefix_extractor: String,
    /// The merge operator's name, `none` without one (and for databases of format 4 or older,
    /// which cannot hold merge operands).
    pub merge_operator: String,
    /// Options changed on the open database by `set_options`, by keyspace and name, as
    /// `set_options.<keyspace>.<name>=<value>` lines (a keyspace name's `%` and `=` escaped as
    /// `%25` and `%3D`). What the process runs with, for an operator to read; a reopen runs
    /// with the options it is given, and rewrites the file without them.
    pub live: std::collections::BTreeMap<(String, String), String>,
}

/// The key of a live change's line.
fn live_key(keyspace: &str, name: &str) -> String {
    let escaped = keyspace.replace('%', "%25").replace('=', "%3D");
    format!("set_options.{escaped}.{name}")
}

/// The keyspace and option a live change's key names.
fn parse_live_key(key: &str) -> Option<(String, String)> {
    let (keyspace, name) = key.strip_prefix("set_options.")?.rsplit_once('.')?;
    let keyspace = keyspace.replace("%3D", "=").replace("%25", "%");
    Some((keyspace, name.to_string()))
}

impl RecordedOptions {
    pub(crate) fn of(options: &Options) -> RecordedOptions {
        RecordedOptions {
            format_version: FORMAT_VERSION,
            filter_hash: format!("{:?}", options.filter_hasher.id()),
            filter_seed_tag: options.filter_hasher.seed_tag(),
            prefix_extractor: options
                .prefix_extractor
                .as_ref()
                .map_or_else(|| "none".to_string(), |p| p.name()),
            merge_operator: options
                .merge_operator
                .as_ref()
                .map_or_else(|| "none".to_string(), |m| m.name().to_string()),
            live: Default::default(),
        }
    }

    fn encode(&self) -> String {
        let live: String = (self.live.iter())
            .map(|((keyspace, name), value)| format!("{}={value}\n", live_key(keyspace, name)))
            .collect();
        self.encode_fixed() + &live
    }

    fn encode_fixed(&self) -> String {
        format!(
            "# siftdb options that shape on-disk data\nformat_version={}\nfilter_hash={}\nfilter_seed_tag={}\nprefix_extractor={}\nmerge_operator={}\n",
            self.format_version,
            self.filter_hash,
            self.filter_seed_tag,
            self.prefix_extractor,
            self.merge_operator
        )
    }

    pub(crate) fn decode(text: &str) -> Option<RecordedOptions> {
        let mut r = RecordedOptions {
            format_version: 0,
            filter_hash: String::new(),
            filter_seed_tag: 0,
            prefix_extractor: String::new(),
            merge_operator: "none".to_string(),
            live: Default::default(),
        };
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let (k, v) = line.split_once('=')?;
            match k {
                "format_version" => r.format_version = v.parse().ok()?,
                "filter_hash" => r.filter_hash = v.to_string(),
                "filter_seed_tag" => r.filter_seed_tag = v.parse().ok()?,
                "prefix_extractor" => r.prefix_extractor = v.to_string(),
                "merge_operator" => r.merge_operator = v.to_string(),
                k => {
                    if let Some(change) = parse_live_key(k) {
                        r.live.insert(change, v.to_string());
                    } // else written by a newer build; the version check decides
                }
            }
        }
        (r.format_version > 0).then_some(r)
    }
}

pub(crate) fn write_options_file(
    fs: &dyn FileSystem,
    dir: &Path,
    recorded: &RecordedOptions,
) -> Result<()> {
    use std::io::Write;
    let tmp = dir.join("OPTIONS.tmp");
    let mut f = fs.create(&tmp)?;
    f.write_all(recorded.encode().as_bytes())?;
    f.sync()?;
    drop(f);
    fs.rename(&tmp, &dir.join(names::OPTIONS))?;
    fs.sync_dir(dir)?;
    Ok(())
}

/// Reads and checks the `OPTIONS` of an existing database, before anything is locked or written:
/// a newer format is [`Error::UnsupportedVersion`], another filter hasher
/// [`Error::InvalidArgument`] (every filter was built with the recorded one; reading them with
/// another would give false negatives).
pub(crate) fn check(fs: &dyn FileSystem, dir: &Path, options: &Options) -> Result<RecordedOptions> {
    let path = dir.join(names::OPTIONS);
    let text = fs
        .read(&path)
        .map_err(|e| Error::corruption(format!("cannot read OPTIONS: {e}")))?;
    let recorded = RecordedOptions::decode(&String::from_utf8_lossy(&text))
        .ok_or_else(|| Error::corruption("OPTIONS is unreadable"))?;
    if recorded.format_version > FORMAT_VERSION {
        return Err(Error::UnsupportedVersion {
            found: recorded.format_version,
            supported: FORMAT_VERSION,
        });
    }
    let wanted = RecordedOptions::of(options);
    if recorded.filter_hash != wanted.filter_hash
        || recorded.filter_seed_tag != wanted.filter_seed_tag
    {
        return Err(Error::InvalidArgument(format!(
            "filter_hasher differs from the one the database was created with ({} seed tag {:#x})",
            recorded.filter_hash, recorded.filter_seed_tag
        )));
    }
    Ok(recorded)
}

/// Refuses to open a database whose merge operands were written under another merge operator
/// (by name) than `options` has, or under one when `options` has none: reads would combine them
/// wrongly, or not at all. `holds_operands` says whether any memtable or table holds one (asked
/// only when the names differ).
pub(crate) fn check_merge_operator(
    recorded: &RecordedOptions,
    options: &Options,
    holds_operands: impl FnOnce() -> bool,
) -> Result<()> {
    let wanted = RecordedOptions::of(options);
    if recorded.merge_operator == wanted.merge_operator
        || recorded.merge_operator == "none"
        || !holds_operands()
    {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "the database holds merge operands written under merge operator {:?}; it was opened with {}",
        recorded.merge_operator,
        if wanted.merge_operator == "none" {
            "none".to_string()
        } else {
            format!("{:?}", wanted.merge_operator)
        }
    )))
}

/// Writes `OPTIONS` for a new database, or rewrites it when the recorded settings differ from
/// `options` in what may change: an older format version (the database is upgraded) or another
/// prefix extractor (safe: each table records its extractor and prefix filters of another are
/// never consulted; logged, never silently ignored). Called with the directory locked.
pub(crate) fn update(
    fs: &dyn FileSystem,
    dir: &Path,
    recorded: Option<&RecordedOptions>,
    options: &Options,
) -> Result<()> {
    let wanted = RecordedOptions::of(options);
    match recorded {
        None => write_options_file(fs, dir, &wanted),
        Some(r) if r == &wanted => Ok(()),
        Some(r) => {
            if r.prefix_extractor != wanted.prefix_extractor {
                tracing::warn!(
                    "siftdb: prefix extractor changed from {} to {}; prefix filters of older tables will not be used",
                    r.prefix_extractor,
                    wanted.prefix_extractor
                );
            }
            if r.format_version < FORMAT_VERSION {
                tracing::info!(
                    "siftdb: database format {} upgraded to {FORMAT_VERSION}",
                    r.format_version
                );
            }
            write_options_file(fs, dir, &wanted)
        }
    }
}
