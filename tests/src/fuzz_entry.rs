//! Entry points that feed arbitrary bytes to every reader of on-disk data. The cargo-fuzz
//! targets under `tests/fuzz/` call them, and so do proptests in CI. Each must return without
//! panicking whatever the bytes; errors are fine, wrong answers are checked where a reference
//! exists.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use siftdb::fs::FileSystem;
use siftdb::{Db, Options};
use siftdb_sstable::block::Block;
use siftdb_sstable::{compare_internal, Table, TableCache, TableReadOptions};

use crate::FaultFs;

/// Opens `data` as a table and iterates it, plus a few point lookups; then again as an
/// ingested table read at a global seqno.
pub fn table_open_and_iterate(data: &[u8]) {
    walk_table(data, None);
    walk_table(data, Some(7));
}

fn walk_table(data: &[u8], global_seqno: Option<u64>) {
    let file = Box::new(Bytes(data.to_vec()));
    let cache = Arc::new(TableCache::new(siftdb_cache::CacheOptions::new(1 << 20)));
    let read = TableReadOptions {
        global_seqno,
        ..TableReadOptions::default()
    };
    let Ok(table) = Table::open(file, 1, "fuzz.sst", cache, read) else {
        return;
    };
    let table = Arc::new(table);
    let mut it = table.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < 100_000 {
        it.next();
        n += 1;
    }
    it.seek_to_last();
    while it.valid() && n < 200_000 {
        it.prev();
        n += 1;
    }
    it.seek_for_prev(b"key\xff\xff\xff\xff\xff\xff\xff\xff");
    let _ = table.get(b"key", u64::MAX >> 8);
    let _ = table.get(b"", 0);
    let _ = table.prefix_may_match(b"pre");
    let _ = table.range_may_overlap(Some(b"key010"), Some(b"key020"));
    let _ = table.range_may_overlap(None, Some(b"k"));
}

/// Opens `data` as blob file 7, walks its records and reads each record's value, and decodes
/// `data` as a blob reference and as a blob index: errors are fine, panics are not.
pub fn blob_file_decode(data: &[u8]) {
    let _ = siftdb_sstable::blob::BlobReference::decode(data);
    let _ = siftdb_sstable::blob::BlobIndex::decode(data);
    let file = Box::new(Bytes(data.to_vec()));
    let Ok(reader) = siftdb_sstable::blob::BlobFileReader::open(file, 7, "fuzz.blob") else {
        return;
    };
    for record in reader.records().take(100_000) {
        match record {
            Ok(record) => {
                let _ = reader.get(&record.reference);
            }
            Err(_) => break,
        }
    }
}

/// Decodes `data` as a range filter block and asks it a few ranges.
pub fn range_filter_decode(data: &[u8]) {
    if let Ok(block) = siftdb_sstable::RangeFilterBlock::decode(data) {
        let _ = block.may_overlap(Some(b"key010"), Some(b"key020"));
        let _ = block.may_overlap(None, None);
        let _ = block.may_overlap(Some(b"\xff"), Some(b""));
    }
}

/// Decodes `data` as a block and walks it (forward and with seeks).
pub fn block_decode(data: &[u8]) {
    let Ok(block) = Block::new(data.to_vec()) else {
        return;
    };
    let block = Arc::new(block);
    let mut it = block.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < 100_000 {
        it.next();
        n += 1;
    }
    it.seek_to_last();
    while it.valid() && n < 200_000 {
        it.prev();
        n += 1;
    }
    it.seek(b"\x00\x01key-with-trailer", compare_internal);
    it.prev();
    it.seek(data.get(..data.len().min(16)).unwrap_or(&[]), |a, b| {
        a.cmp(b)
    });
}

/// Decompresses `data` as a block's stored bytes with every codec, and walks what comes out as a
/// block: errors are fine, panics and allocations beyond the announced size are not.
pub fn compressed_block_decode(data: &[u8]) {
    for codec in [
        siftdb_sstable::Compression::Lz4,
        siftdb_sstable::Compression::Zstd,
    ] {
        if let Ok(contents) = codec.decompress(data) {
            block_decode(&contents);
        }
    }
}

/// Decodes `data` as a filter block and queries it.
pub fn filter_decode(data: &[u8]) {
    for hasher in [
        siftdb::KeyHasher::default(),
        siftdb::KeyHasher::siphash13([3; 16]),
    ] {
        if let Ok(f) = siftdb_filter::Filter::decode(data, &hasher) {
            let _ = f.may_contain(b"probe");
            let _ = f.expected_fpr();
        }
    }
}

/// Decodes `data` as each standalone structure of `siftdb-filter` (counting, scalable and
/// rotating bloom, cuckoo and quotient filters), then, so that the payload parsers are reached
/// past the checksum, `data` as the payload of a well-formed envelope of each
/// (`docs/FORMAT.md`), and as the slots of a quotient filter behind a valid header. Whatever
/// decodes is queried, written to once and serialized again.
pub fn standalone_filters_decode(data: &[u8]) {
    use siftdb_filter::{
        CountingBloom, CuckooFilter, KeyHasher, QuotientFilter, RotatingBloom, ScalableBloom,
    };
    let hasher = KeyHasher::default();
    let decode_all = |bytes: &[u8]| {
        if let Ok(mut f) = CountingBloom::from_bytes(bytes, &hasher) {
            let _ = f.contains(b"probe");
            f.insert(b"probe");
            assert!(f.contains(b"probe"));
            let _ = f.to_bytes();
        }
        if let Ok(mut f) = ScalableBloom::from_bytes(bytes, &hasher) {
            f.insert(b"probe");
            assert!(f.contains(b"probe"));
            let _ = (f.current_fpr(), f.to_bytes());
        }
        if let Ok(mut f) = RotatingBloom::from_bytes(bytes, &hasher) {
            f.insert(b"probe");
            assert!(f.contains(b"probe"));
            f.rotate();
            let _ = (f.current_fpr(), f.to_bytes());
        }
        if let Ok(mut f) = CuckooFilter::from_bytes(bytes, &hasher) {
            if f.insert(b"probe").is_ok() {
                assert!(f.contains(b"probe"));
                assert!(f.remove(b"probe"));
            }
            let _ = f.to_bytes();
        }
        if let Ok(mut f) = QuotientFilter::from_bytes(bytes, &hasher) {
            for probe in [&b"probe"[..], b"", b"key", &[0xFF; 16]] {
                let _ = f.contains(probe);
            }
            let _ = (f.expected_fpr(), f.merge(&f));
            if f.insert(b"probe").is_ok() {
                assert!(f.contains(b"probe"));
                assert!(f.remove(b"probe"));
            }
            let bytes = f.to_bytes();
            assert_eq!(QuotientFilter::from_bytes(&bytes, &hasher).as_ref(), Ok(&f));
            if f.grow().is_ok() {
                let _ = f.contains(b"probe");
            }
        }
    };
    decode_all(data);
    for magic in [b"SCBF", b"SSBF", b"SRBF", b"SCKF", b"SQTF"] {
        decode_all(&envelope(*magic, hasher.seed_tag(), data));
    }
    decode_all(&envelope(
        *b"SQTF",
        hasher.seed_tag(),
        &quotient_slots(data),
    ));
}

/// A quotient filter payload of one block of 64 slots (`docs/FORMAT.md`) whose remainder width
/// comes from `data`'s first byte and whose words are the rest of `data` (zero-padded), with the
/// key count the slots hold: the header passes, so the structure check sees arbitrary slots.
fn quotient_slots(data: &[u8]) -> Vec<u8> {
    let Some((&first, rest)) = data.split_first() else {
        return Vec::new();
    };
    let remainder_bits = 1 + u32::from(first % 16);
    let mut words = vec![0u64; 3 + remainder_bits as usize];
    for (word, chunk) in words.iter_mut().zip(rest.chunks(8)) {
        let mut bytes = [0u8; 8];
        bytes[..chunk.len()].copy_from_slice(chunk);
        *word = u64::from_le_bytes(bytes);
    }
    let held = u64::from((words[0] | words[1] | words[2]).count_ones());
    let mut out = Vec::with_capacity(16 + 8 * words.len());
    out.extend_from_slice(&6u32.to_le_bytes());
    out.extend_from_slice(&remainder_bits.to_le_bytes());
    out.extend_from_slice(&held.to_le_bytes());
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out
}

/// `payload` in the standalone structures' envelope (version 1, xxh3 with `seed`).
fn envelope(magic: [u8; 4], seed: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 28);
    out.extend_from_slice(&magic);
    out.extend_from_slice(&[1, siftdb_filter::HashId::Xxh3 as u8, 0, 0]);
    out.extend_from_slice(&seed.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn fresh_db(fs: &FaultFs) -> Option<()> {
    let db = Db::open("/db", options(fs)).ok()?;
    db.put(b"k1", b"v1").ok()?;
    // A value kept in a blob file: the manifest records the blob file and the table's
    // reference into it.
    db.put(b"k2", [b'b'; 32]).ok()?;
    db.flush().ok()?;
    Some(())
}

fn options(fs: &FaultFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        enable_blob_files: true,
        min_blob_size: 16,
        ..Options::default()
    }
}

fn replace(fs: &FaultFs, path: &Path, data: &[u8]) {
    replace_in(fs, path, data, Path::new("/db"));
}

fn replace_in(fs: &FaultFs, path: &Path, data: &[u8], dir: &Path) {
    if let Ok(mut f) = fs.create(path) {
        let _ = f.write_all(data);
        let _ = f.sync();
    }
    let _ = fs.sync_dir(dir);
}

/// Where [`backup_meta_decode`] keeps its backups, and the metadata file of backup 1.
const BACKUPS: &str = "/backups";
const BACKUP_META: &str = "/backups/meta/1";

/// A backup engine over [`BACKUPS`] on `fs`.
fn backup_engine(fs: &FaultFs) -> Option<siftdb::backup::BackupEngine> {
    let options = siftdb::backup::BackupEngineOptions {
        fs: Arc::new(fs.clone()),
        ..siftdb::backup::BackupEngineOptions::default()
    };
    siftdb::backup::BackupEngine::open_with(BACKUPS, options).ok()
}

/// Backup 1 of a fresh database (its tables, blob file, WAL and manifest) on `fs`.
fn fresh_backup(fs: &FaultFs) -> Option<()> {
    fresh_db(fs)?;
    let db = Db::open("/db", options(fs)).ok()?;
    let mut engine = backup_engine(fs)?;
    (engine.create_new_backup(&db).ok()? == 1).then_some(())
}

/// The metadata file of a backup of a fresh database: the seed the fuzz readers mutate.
pub fn valid_backup_meta() -> Vec<u8> {
    let fs = FaultFs::new();
    fresh_backup(&fs)
        .and_then(|()| fs.read(Path::new(BACKUP_META)).ok())
        .unwrap_or_default()
}

/// Opens a backup directory whose backup 1 has `data` as its metadata file, then lists,
/// verifies and restores it (and opens what a restore wrote): errors, never a panic, and no
/// restore of a backup whose metadata does not check out.
pub fn backup_meta_decode(data: &[u8]) {
    let fs = FaultFs::new();
    if fresh_backup(&fs).is_none() {
        return;
    }
    replace_in(
        &fs,
        Path::new(BACKUP_META),
        data,
        Path::new("/backups/meta"),
    );
    let Some(engine) = backup_engine(&fs) else {
        return;
    };
    let listed = engine.get_backup_info();
    let corrupted = engine.get_corrupted_backups();
    assert!(
        !(listed.iter().any(|b| b.backup_id == 1) && corrupted.contains(&1)),
        "backup 1 both listed and corrupt"
    );
    let verified = engine.verify_backup(1).is_ok();
    let restored = engine.restore_db_from_backup(1, "/restored").is_ok();
    assert!(
        verified || !restored,
        "a backup that does not verify was restored"
    );
    if restored && let Ok(db) = Db::open("/restored", options(&fs)) {
        let _ = db.get(b"k1");
        let _ = db.iter().take(10_000).count();
    }
}

/// Replays `data` as the database's write-ahead log (opening the database), then reads.
pub fn wal_replay(data: &[u8]) {
    let fs = FaultFs::new();
    if fresh_db(&fs).is_none() {
        return;
    }
    let wal = fs
        .paths()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max();
    if let Some(wal) = wal {
        replace(&fs, &wal, data);
    }
    if let Ok(db) = Db::open("/db", options(&fs)) {
        let _ = db.get(b"k1");
        let _ = db.iter().take(10_000).count();
    }
}

/// Replays `data` as the database's manifest (opening the database).
pub fn manifest_replay(data: &[u8]) {
    let fs = FaultFs::new();
    if fresh_db(&fs).is_none() {
        return;
    }
    let manifest = fs.paths().into_iter().find(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST-"))
    });
    if let Some(m) = manifest {
        replace(&fs, &m, data);
    }
    if let Ok(db) = Db::open("/db", options(&fs)) {
        let _ = db.get(b"k1");
        let _ = db.iter().take(10_000).count();
    }
}

/// A database whose WAL and manifest hold keyspace records: keyspace "ks" created, a
/// cross-keyspace batch, log data and expiring values in the WAL. Returns the paths of its newest WAL and its manifest.
fn db_with_keyspaces(fs: &FaultFs) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let db = Db::open("/db", options(fs)).ok()?;
    let ks = db.keyspace("ks").ok()?;
    let mut batch = siftdb::WriteBatch::new();
    batch.put(b"k1", b"v1").put_in(&ks, b"k2", b"v2");
    // Log data beside the ops, and a batch of log data alone (format 11).
    batch.put_log_data(b"log data");
    db.write(batch).ok()?;
    let mut alone = siftdb::WriteBatch::new();
    alone.put_log_data(b"alone");
    db.write(alone).ok()?;
    // An expiring value too (entry kind 2), in each keyspace.
    let hour = std::time::Duration::from_secs(3600);
    db.put_with_ttl(b"k3", b"v3", hour).ok()?;
    ks.put_with_ttl(b"k4", b"v4", hour).ok()?;
    // An ingested file over a key in the memtable: a global seqno (manifest field 16) taken by
    // a sequence marker in the WAL.
    let external = Path::new("/external.sst");
    let mut writer = siftdb::SstFileWriter::create(external, &options(fs)).ok()?;
    writer.put(b"k1", b"ingested").ok()?;
    writer.finish().ok()?;
    db.ingest_external_file(&[external], &siftdb::IngestOptions::default())
        .ok()?;
    db.put(b"k5", b"after").ok()?;
    db.close().ok()?;
    let paths = fs.paths();
    let wal = paths
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max()?
        .clone();
    let manifest = paths
        .iter()
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST-"))
        })?
        .clone();
    Some((wal, manifest))
}

/// Writes `records` as a log (valid framing and checksums around arbitrary payloads) to `path`.
fn write_log(fs: &FaultFs, path: &Path, records: &[Vec<u8>]) {
    let Ok(file) = fs.create(path) else { return };
    let mut log = siftdb::internals::LogWriter::new(file);
    for r in records {
        if log.add_record(r).is_err() {
            return;
        }
    }
    let _ = log.sync();
}

fn open_and_read_keyspaces(fs: &FaultFs) {
    if let Ok(db) = Db::open("/db", options(fs)) {
        let _ = db.get(b"k1");
        let _ = db.iter().take(10_000).count();
        for name in db.keyspace_names() {
            if let Ok(ks) = db.keyspace(&name) {
                let _ = ks.get(b"k2");
                let _ = ks.iter().take(10_000).count();
            }
        }
    }
}

/// Replays `records` — payloads with valid framing, so the batch decoder itself sees them — as
/// the WAL of a database with keyspaces, then reads every keyspace.
pub fn wal_records_replay(records: &[Vec<u8>]) {
    let fs = FaultFs::new();
    let Some((wal, _)) = db_with_keyspaces(&fs) else {
        return;
    };
    write_log(&fs, &wal, records);
    open_and_read_keyspaces(&fs);
}

/// Replays `records` as the manifest's edits (valid framing, so the edit decoder and the
/// keyspace bookkeeping see them) of a database with keyspaces, then reads every keyspace.
pub fn manifest_records_replay(records: &[Vec<u8>]) {
    let fs = FaultFs::new();
    let Some((_, manifest)) = db_with_keyspaces(&fs) else {
        return;
    };
    write_log(&fs, &manifest, records);
    open_and_read_keyspaces(&fs);
}

/// The records of the log at `path` of a fresh database with keyspaces (`wal` or manifest):
/// valid inputs for the fuzzers above to mutate.
pub fn keyspace_log_records(wal: bool) -> Vec<Vec<u8>> {
    let fs = FaultFs::new();
    let Some((wal_path, manifest)) = db_with_keyspaces(&fs) else {
        return Vec::new();
    };
    let path = if wal { wal_path } else { manifest };
    let Ok(bytes) = fs.read(&path) else {
        return Vec::new();
    };
    log_records(&bytes)
}

/// The payloads of a log's records (32 KiB blocks of 7-byte-header fragments; FULL records only,
/// which is all a small log holds; sync marks, type 5, are skipped).
fn log_records(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 7 <= bytes.len() {
        let len = usize::from(u16::from_le_bytes([bytes[pos + 4], bytes[pos + 5]]));
        let kind = bytes[pos + 6];
        if !matches!(kind, 1 | 5) || pos + 7 + len > bytes.len() {
            break;
        }
        if kind == 1 {
            out.push(bytes[pos + 7..pos + 7 + len].to_vec());
        }
        pos += 7 + len;
    }
    out
}

/// A table file held in memory.
#[derive(Debug)]
struct Bytes(Vec<u8>);

impl siftdb_sstable::RandomAccessFile for Bytes {
    fn read_at(&self, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
        let start = usize::try_from(offset).map_err(|_| std::io::ErrorKind::UnexpectedEof)?;
        let end = start
            .checked_add(len)
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        self.0
            .get(start..end)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| std::io::ErrorKind::UnexpectedEof.into())
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}
