//! Property names (`DB::property_value`): RocksDB's `rocksdb.*` names, answered by siftdb's
//! `siftdb.*` properties where siftdb has the figure.

use std::ffi::{CStr, CString};

/// A property name known at compile time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PropName {
    name: &'static CStr,
}

impl PropName {
    const fn new(name: &'static CStr) -> PropName {
        PropName { name }
    }

    /// The name as a C string.
    pub fn as_c_str(&self) -> &CStr {
        self.name
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        self.name.to_str().unwrap_or_default()
    }

    /// An owned copy.
    #[allow(clippy::should_implement_trait)]
    pub fn to_owned(&self) -> PropertyName {
        PropertyName(self.name.to_owned())
    }
}

impl std::ops::Deref for PropName {
    type Target = CStr;

    fn deref(&self) -> &CStr {
        self.name
    }
}

impl std::fmt::Display for PropName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A property name made at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyName(CString);

impl PropertyName {
    /// The name as a C string.
    pub fn into_c_string(self) -> CString {
        self.0
    }

    /// The name.
    pub fn into_string(self) -> String {
        self.0.into_string().unwrap_or_default()
    }
}

impl std::ops::Deref for PropertyName {
    type Target = CStr;

    fn deref(&self) -> &CStr {
        &self.0
    }
}

impl std::fmt::Display for PropertyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.to_string_lossy())
    }
}

fn level_property(name: &str, level: usize) -> PropertyName {
    PropertyName(CString::new(format!("rocksdb.{name}{level}")).unwrap_or_default())
}

/// "rocksdb.num-files-at-level`N`": table files on level `N`.
pub fn num_files_at_level(level: usize) -> PropertyName {
    level_property("num-files-at-level", level)
}

/// "rocksdb.compression-ratio-at-level`N`" (siftdb has no such figure: `None`).
pub fn compression_ratio_at_level(level: usize) -> PropertyName {
    level_property("compression-ratio-at-level", level)
}

macro_rules! names {
    ($($(#[$m:meta])* $id:ident = $lit:literal;)*) => {
        $( $(#[$m])* pub const $id: &PropName = &PropName::new($lit); )*
    };
}

names! {
    /// The database's statistics (siftdb's `siftdb.stats`).
    STATS = c"rocksdb.stats";
    /// The table files per level (siftdb's `siftdb.sstables`).
    SSTABLES = c"rocksdb.sstables";
    /// Column family statistics (siftdb's `siftdb.stats`).
    CFSTATS = c"rocksdb.cfstats";
    /// Database statistics (siftdb's `siftdb.stats`).
    DBSTATS = c"rocksdb.dbstats";
    /// Files and filters per level (siftdb's `siftdb.levels`).
    LEVELSTATS = c"rocksdb.levelstats";
    /// Immutable memtables (siftdb's `siftdb.num-immutable-mem-table`).
    NUM_IMMUTABLE_MEM_TABLE = c"rocksdb.num-immutable-mem-table";
    /// Bytes of the active and unflushed memtables (siftdb's `siftdb.cur-size-all-mem-tables`).
    CUR_SIZE_ALL_MEM_TABLES = c"rocksdb.cur-size-all-mem-tables";
    /// Heap bytes of every memtable (siftdb's `siftdb.memtables-memory-bytes`).
    SIZE_ALL_MEM_TABLES = c"rocksdb.size-all-mem-tables";
    /// Estimated keys (siftdb's `siftdb.estimate-num-keys`).
    ESTIMATE_NUM_KEYS = c"rocksdb.estimate-num-keys";
    /// Bytes of table files (the sum of siftdb's levels).
    ESTIMATE_LIVE_DATA_SIZE = c"rocksdb.estimate-live-data-size";
    /// Bytes of table files (the sum of siftdb's levels).
    TOTAL_SST_FILES_SIZE = c"rocksdb.total-sst-files-size";
    /// Bytes of live table files (the sum of siftdb's levels).
    LIVE_SST_FILES_SIZE = c"rocksdb.live-sst-files-size";
    /// Bytes compaction owes (siftdb's `siftdb.estimate-pending-compaction-bytes`).
    ESTIMATE_PENDING_COMPACTION_BYTES = c"rocksdb.estimate-pending-compaction-bytes";
    /// Not in siftdb: `None`.
    BLOCK_CACHE_USAGE = c"rocksdb.block-cache-usage";
    /// Not in siftdb: `None`.
    BLOCK_CACHE_CAPACITY = c"rocksdb.block-cache-capacity";
    /// Not in siftdb: `None`.
    NUM_SNAPSHOTS = c"rocksdb.num-snapshots";
    /// Not in siftdb: `None`.
    BACKGROUND_ERRORS = c"rocksdb.background-errors";
    /// Not in siftdb: `None`.
    COMPACTION_PENDING = c"rocksdb.compaction-pending";
    /// Not in siftdb: `None`.
    NUM_RUNNING_COMPACTIONS = c"rocksdb.num-running-compactions";
    /// Not in siftdb: `None`.
    NUM_RUNNING_FLUSHES = c"rocksdb.num-running-flushes";
    /// Not in siftdb: `None`.
    IS_WRITE_STOPPED = c"rocksdb.is-write-stopped";
    /// Not in siftdb: `None`.
    OPTIONS_STATISTICS = c"rocksdb.options-statistics";
}

/// What names a property: `&str`, `String`, `&CStr`, `CString`, [`PropName`],
/// [`PropertyName`].
pub trait CStrLike {
    /// The name as text.
    #[doc(hidden)]
    fn prop_text(&self) -> Result<String, crate::Error>;
}

fn checked(s: &str) -> Result<String, crate::Error> {
    if s.contains('\0') {
        return Err(crate::Error::invalid("a name holds a NUL byte"));
    }
    Ok(s.to_string())
}

fn from_c(s: &CStr) -> Result<String, crate::Error> {
    s.to_str()
        .map(str::to_string)
        .map_err(|_| crate::Error::invalid("a name is not UTF-8"))
}

impl CStrLike for &str {
    fn prop_text(&self) -> Result<String, crate::Error> {
        checked(self)
    }
}

impl CStrLike for &String {
    fn prop_text(&self) -> Result<String, crate::Error> {
        checked(self)
    }
}

impl CStrLike for String {
    fn prop_text(&self) -> Result<String, crate::Error> {
        checked(self)
    }
}

impl CStrLike for &CStr {
    fn prop_text(&self) -> Result<String, crate::Error> {
        from_c(self)
    }
}

impl CStrLike for CString {
    fn prop_text(&self) -> Result<String, crate::Error> {
        from_c(self)
    }
}

impl CStrLike for &CString {
    fn prop_text(&self) -> Result<String, crate::Error> {
        from_c(self)
    }
}

impl CStrLike for &PropName {
    fn prop_text(&self) -> Result<String, crate::Error> {
        from_c(self.name)
    }
}

impl CStrLike for &PropertyName {
    fn prop_text(&self) -> Result<String, crate::Error> {
        from_c(&self.0)
    }
}

/// Answers a `rocksdb.*` property from a keyspace's `siftdb.*` ones.
pub(crate) fn value(ks: &siftdb::Keyspace, name: &str) -> Option<String> {
    let rest = name.strip_prefix("rocksdb.")?;
    let sift = match rest {
        "stats" | "cfstats" | "dbstats" | "cfstats-no-file-histogram" => "siftdb.stats".to_string(),
        "levelstats" => "siftdb.levels".to_string(),
        "sstables" => "siftdb.sstables".to_string(),
        "size-all-mem-tables" => "siftdb.memtables-memory-bytes".to_string(),
        "estimate-live-data-size" | "total-sst-files-size" | "live-sst-files-size" => {
            return Some(
                ks.level_info()
                    .iter()
                    .map(|l| l.bytes)
                    .sum::<u64>()
                    .to_string(),
            );
        }
        other => format!("siftdb.{other}"),
    };
    ks.property(&sift)
}
