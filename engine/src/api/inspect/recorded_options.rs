//! The settings a database was created with, as `OPTIONS` records them, and [`Options`] that
//! open it without changing them.

use std::path::Path;
use std::sync::Arc;

use siftdb_filter::KeyHasher;
use siftdb_sstable::FixedPrefix;

use crate::base::error::{Error, Result};
use crate::base::fs::{names, FileSystem, RealFs};
use crate::base::merge::{Append, MergeOperator, U64Add};
use crate::base::options::Options;
use crate::base::options_file::RecordedOptions;

/// What a database's `OPTIONS` file records: the settings that shape its data on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordedOptionsInfo {
    /// The database format version.
    pub format_version: u32,
    /// The filters' hash function (`Xxh3`, `SipHash13`).
    pub filter_hash: String,
    /// Its seed (XXH3) or the secret's check value (SipHash).
    pub filter_seed_tag: u64,
    /// The "default" keyspace's prefix extractor (`none`, `fixed:N`, or a custom name).
    pub prefix_extractor: String,
    /// The merge operator's name (`none` without one).
    pub merge_operator: String,
}

/// Reads the `OPTIONS` of the database in `dir`.
pub fn recorded_options(dir: impl AsRef<Path>) -> Result<RecordedOptionsInfo> {
    let dir = dir.as_ref();
    super::require_database(dir)?;
    let text = RealFs
        .read(&dir.join(names::OPTIONS))
        .map_err(|e| Error::corruption(format!("cannot read OPTIONS: {e}")))?;
    let r = RecordedOptions::decode(&String::from_utf8_lossy(&text))
        .ok_or_else(|| Error::corruption("OPTIONS is unreadable"))?;
    Ok(RecordedOptionsInfo {
        format_version: r.format_version,
        filter_hash: r.filter_hash,
        filter_seed_tag: r.filter_seed_tag,
        prefix_extractor: r.prefix_extractor,
        merge_operator: r.merge_operator,
    })
}

/// [`Options`] that open the database in `dir` as it was created, for a tool that knows
/// nothing of the application: its filter hasher (XXH3 with the recorded seed), its prefix
/// extractor (`fixed:N`) and its merge operator (`siftdb.u64add`, `siftdb.append:*`); the
/// rest are the defaults, and a missing directory is not created. `InvalidArgument` when a
/// recorded setting is not one this build can rebuild: filters keyed with a SipHash secret
/// (it is not on disk) or a custom prefix extractor (a read-write open would record its
/// absence). An unknown merge operator is left out: the open then fails only if the database
/// holds merge operands.
pub fn open_options(dir: impl AsRef<Path>) -> Result<Options> {
    options_for(dir.as_ref(), true)
}

/// [`open_options`] for [`Db::open_read_only`](crate::Db::open_read_only): a custom prefix
/// extractor is left out instead of refused (reads stay right without it: a table's prefix
/// filter is consulted only under the extractor it was built with, and a read-only open
/// records nothing). Filters keyed with a SipHash secret are still refused.
pub fn read_only_options(dir: impl AsRef<Path>) -> Result<Options> {
    options_for(dir.as_ref(), false)
}

fn options_for(dir: &Path, strict: bool) -> Result<Options> {
    let recorded = recorded_options(dir)?;
    let filter_hasher = match recorded.filter_hash.as_str() {
        "Xxh3" => KeyHasher::xxh3(recorded.filter_seed_tag),
        other => {
            return Err(Error::InvalidArgument(format!(
                "the filters use the keyed hash {other}, whose secret is not on disk"
            )))
        }
    };
    let prefix_extractor = match recorded.prefix_extractor.as_str() {
        "none" | "" => None,
        name => match name.strip_prefix("fixed:").and_then(|n| n.parse().ok()) {
            Some(len) => Some(FixedPrefix::shared(len)),
            None if !strict => None,
            None => {
                return Err(Error::InvalidArgument(format!(
                    "the database's prefix extractor {name:?} is not built in"
                )))
            }
        },
    };
    Ok(Options {
        create_if_missing: false,
        filter_hasher,
        prefix_extractor,
        merge_operator: merge_operator(&recorded.merge_operator),
        ..Options::default()
    })
}

/// The built-in merge operator named `name`.
fn merge_operator(name: &str) -> Option<Arc<dyn MergeOperator>> {
    if name == "siftdb.u64add" {
        return Some(Arc::new(U64Add));
    }
    let hex = name.strip_prefix("siftdb.append:")?;
    let separator = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    Some(Arc::new(Append::new(&separator)))
}
