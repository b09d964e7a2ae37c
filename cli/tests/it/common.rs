//! A real database for the tests: three keyspaces, enough keys in "default" for tables on
//! several levels, made with the library and closed before the tool runs.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use siftdb::{Db, FixedPrefix, KeyspaceOptions, Options};

/// Keys written to "default".
pub const DEFAULT_KEYS: u64 = 6_000;
/// Keys written to "users".
pub const USER_KEYS: u64 = 300;

pub fn key(i: u64) -> String {
    format!("key:{i:08}")
}

pub fn value(i: u64) -> String {
    let mut v = format!("value of {i} ");
    while v.len() < 80 {
        v.push('v');
    }
    v
}

pub fn user_key(i: u64) -> String {
    format!("user:{i:05}")
}

/// Small memtables and tables, so a few thousand keys reach L2.
pub fn options() -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        max_bytes_for_level_multiplier: 4.0,
        level0_file_num_compaction_trigger: 2,
        ..Options::default()
    }
    .with_fixed_prefix(4)
}

/// Makes the database in `dir` and closes it.
pub fn build_db(dir: &Path) {
    let db = Db::open(dir, options()).unwrap();
    let users = db
        .create_keyspace(
            "users",
            KeyspaceOptions {
                write_buffer_size: 8 << 10,
                prefix_extractor: Some(FixedPrefix::shared(5)),
                ..KeyspaceOptions::default()
            },
        )
        .unwrap();
    let events = db
        .create_keyspace("events", KeyspaceOptions::default())
        .unwrap();
    for i in 0..DEFAULT_KEYS {
        db.put(key(i), value(i)).unwrap();
        if i % 500 == 499 {
            db.wait_for_compaction().unwrap();
        }
    }
    for i in 0..USER_KEYS {
        users.put(user_key(i), format!("name {i}")).unwrap();
    }
    events.put("e1", "login").unwrap();
    events.put("e2", "logout").unwrap();
    db.flush().unwrap();
    users.flush().unwrap();
    events.flush().unwrap();
    db.wait_for_compaction().unwrap();
    db.close().unwrap();
}

/// A fresh database in a temporary directory.
pub fn fresh_db() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    build_db(&dir);
    (tmp, dir)
}

/// The live tables of `keyspace`, by level.
pub fn tables(dir: &Path, keyspace: &str) -> Vec<Vec<PathBuf>> {
    let version = siftdb::inspect::current_version(dir).unwrap();
    let ks = version
        .keyspaces
        .iter()
        .find(|k| k.name == keyspace)
        .unwrap();
    ks.levels
        .iter()
        .map(|files| files.iter().map(|f| dir.join(&f.file_name)).collect())
        .collect()
}

/// A table of "default" deeper than L0.
pub fn deep_table(dir: &Path) -> PathBuf {
    tables(dir, "default")
        .into_iter()
        .skip(1)
        .flatten()
        .next()
        .expect("a table below L0")
}

/// Runs the built `siftdb` with `args`.
pub fn siftdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_siftdb"))
        .args(args)
        .output()
        .unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Flips one byte in the middle of the first data block of the table at `path`; returns its
/// offset.
pub fn flip_data_byte(path: &Path) -> u64 {
    let info = siftdb::inspect::table_info(path).unwrap();
    let block = &info.index[0];
    let at = block.offset + block.size / 2;
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at as usize] ^= 0x5a;
    std::fs::write(path, bytes).unwrap();
    at
}
