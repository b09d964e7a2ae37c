//! `siftdb::backup::BackupEngine`: backups are incremental (a table is copied once, shared by
//! every backup that holds it), restore into a database that holds what the backup's point
//! held (keyspaces and blob files included), verify and restore refuse damaged bytes with a
//! `Corruption` naming the file (the sweep flips bits across every file of a backup), purges
//! remove what no backup names, and backups taken while a writer writes hold a prefix of its
//! writes with everything acknowledged before the call.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use siftdb::backup::{BackupEngine, BackupEngineOptions};
use siftdb::{Db, Error, KeyspaceOptions, Options};

fn options() -> Options {
    Options {
        write_buffer_size: 16 << 10,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Restores backup `id` into a new directory under `root` and opens it.
fn restored(backups: &BackupEngine, id: u32, root: &Path) -> Db {
    let target = root.join(format!("restored-{id}"));
    backups
        .restore_db_from_backup(id, &target)
        .expect("restore");
    Db::open(&target, options()).expect("open the restored database")
}

#[test]
fn backups_share_tables_and_restore_their_own_point() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path().join("db"), options()).expect("open");
    let mut backups = BackupEngine::open(dir.path().join("backups")).expect("engine");
    for i in 0..2_000 {
        db.put(key(i), [b'a'; 50]).expect("put");
    }
    db.flush().expect("flush");
    let first = backups
        .create_new_backup_with_metadata(&db, "before the update")
        .expect("backup");
    let shared_after_first = files_in(&dir.path().join("backups/shared"));
    assert!(!shared_after_first.is_empty());
    db.put(key(7), "updated").expect("put");
    db.delete(key(8)).expect("delete");
    let second = backups.create_new_backup(&db).expect("backup");
    // Nothing was flushed or compacted in between: no table is copied again.
    assert_eq!(
        files_in(&dir.path().join("backups/shared")),
        shared_after_first
    );
    let info = backups.get_backup_info();
    assert_eq!(
        info.iter().map(|b| b.backup_id).collect::<Vec<_>>(),
        [first, second]
    );
    assert_eq!(info[0].app_metadata, "before the update");
    assert!(info[1].sequence > info[0].sequence);
    assert!(info[0].size > 2_000 * 50 / 4 && info[0].number_files >= 4);

    let old = restored(&backups, first, dir.path());
    assert_eq!(old.get(key(7)).expect("get"), Some(vec![b'a'; 50]));
    assert_eq!(old.get(key(8)).expect("get"), Some(vec![b'a'; 50]));
    assert_eq!(old.iter().count(), 2_000);
    let new = restored(&backups, second, dir.path());
    assert_eq!(new.get(key(7)).expect("get"), Some(b"updated".to_vec()));
    assert_eq!(new.get(key(8)).expect("get"), None);
    assert_eq!(new.iter().count(), 1_999);
    // A restored database is an ordinary one: it takes writes and reopens.
    new.put("after", "restore").expect("put");
    drop(new);
    let new = Db::open(dir.path().join(format!("restored-{second}")), options()).expect("reopen");
    assert_eq!(new.get("after").expect("get"), Some(b"restore".to_vec()));

    // Purging the first backup keeps the tables the second still names.
    backups.purge_old_backups(1).expect("purge");
    assert_eq!(backups.get_backup_info().len(), 1);
    assert!(matches!(
        backups.restore_db_from_backup(first, dir.path().join("gone")),
        Err(Error::BackupNotFound(id)) if id == first
    ));
    backups.verify_backup(second).expect("verify");
    drop(backups);
    let backups = BackupEngine::open(dir.path().join("backups")).expect("reopen engine");
    backups.verify_backup(second).expect("verify after reopen");
}

#[test]
fn a_purge_removes_the_tables_only_deleted_backups_named() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path().join("db"), options()).expect("open");
    let mut backups = BackupEngine::open(dir.path().join("backups")).expect("engine");
    for i in 0..1_000 {
        db.put(key(i), [b'a'; 50]).expect("put");
    }
    db.flush().expect("flush");
    backups.create_new_backup(&db).expect("backup");
    let shared = dir.path().join("backups/shared");
    let first_tables = files_in(&shared);
    // Everything rewritten into new tables: the second backup shares nothing with the first.
    db.compact_range(None::<&[u8]>, None::<&[u8]>)
        .expect("compact");
    let second = backups.create_new_backup(&db).expect("backup");
    assert!(files_in(&shared).len() > first_tables.len());
    backups.purge_old_backups(1).expect("purge");
    let left = files_in(&shared);
    assert!(
        first_tables.iter().all(|t| !left.contains(t)),
        "{left:?} still holds tables of {first_tables:?}"
    );
    assert!(files_in(&dir.path().join("backups/private"))
        .iter()
        .all(|n| n.starts_with(&format!("{second:06}_"))));
    assert_eq!(restored(&backups, second, dir.path()).iter().count(), 1_000);
}

#[test]
fn without_shared_tables_each_backup_holds_its_own_copies() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path().join("db"), options()).expect("open");
    let engine_options = BackupEngineOptions {
        share_table_files: false,
        ..BackupEngineOptions::default()
    };
    let mut backups =
        BackupEngine::open_with(dir.path().join("backups"), engine_options).expect("engine");
    for i in 0..500 {
        db.put(key(i), "v").expect("put");
    }
    db.flush().expect("flush");
    let a = backups.create_new_backup(&db).expect("backup");
    let b = backups.create_new_backup(&db).expect("backup");
    assert!(files_in(&dir.path().join("backups/shared")).is_empty());
    let private = files_in(&dir.path().join("backups/private"));
    for id in [a, b] {
        assert!(private
            .iter()
            .any(|n| n.starts_with(&format!("{id:06}_")) && n.ends_with(".sst")));
    }
    backups.delete_backup(a).expect("delete");
    assert_eq!(restored(&backups, b, dir.path()).iter().count(), 500);
}

#[test]
fn keyspaces_and_blob_files_are_backed_up_and_restored() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path().join("db"), options()).expect("open");
    let blobs = db
        .create_keyspace(
            "blobs",
            KeyspaceOptions {
                enable_blob_files: true,
                min_blob_size: 100,
                ..KeyspaceOptions::from(&options())
            },
        )
        .expect("keyspace");
    for i in 0..300 {
        blobs.put(key(i), vec![b'b'; 1_000]).expect("put");
        db.put(key(i), "small").expect("put");
    }
    blobs.flush().expect("flush");
    let mut backups = BackupEngine::open(dir.path().join("backups")).expect("engine");
    let id = backups.create_new_backup(&db).expect("backup");
    assert!(files_in(&dir.path().join("backups/shared"))
        .iter()
        .any(|n| n.ends_with(".blob")));
    let copy = restored(&backups, id, dir.path());
    let ks = copy.keyspace("blobs").expect("keyspace restored");
    assert_eq!(ks.get(key(299)).expect("get"), Some(vec![b'b'; 1_000]));
    assert_eq!(ks.iter().count(), 300);
    assert_eq!(copy.get(key(0)).expect("get"), Some(b"small".to_vec()));
}

#[test]
fn restore_refuses_a_database_and_foreign_files_and_unknown_ids() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path().join("db"), options()).expect("open");
    db.put("k", "v").expect("put");
    let mut backups = BackupEngine::open(dir.path().join("backups")).expect("engine");
    let id = backups.create_new_backup(&db).expect("backup");
    let into_db = backups.restore_db_from_backup(id, dir.path().join("db"));
    assert!(
        matches!(into_db, Err(Error::InvalidArgument(_))),
        "{into_db:?}"
    );
    let foreign = dir.path().join("foreign");
    std::fs::create_dir_all(&foreign).expect("mkdir");
    std::fs::write(foreign.join("notes.txt"), "mine").expect("write");
    let into_foreign = backups.restore_db_from_backup(id, &foreign);
    assert!(
        matches!(into_foreign, Err(Error::InvalidArgument(_))),
        "{into_foreign:?}"
    );
    assert_eq!(
        std::fs::read(foreign.join("notes.txt")).expect("kept"),
        b"mine"
    );
    assert!(matches!(
        backups.verify_backup(id + 1),
        Err(Error::BackupNotFound(_))
    ));
    assert!(matches!(
        backups.delete_backup(id + 1),
        Err(Error::BackupNotFound(_))
    ));
    // One engine per directory.
    let second = BackupEngine::open(dir.path().join("backups"));
    assert!(matches!(second, Err(Error::Locked(_))), "{second:?}");
}

/// Every file of a backup, flipped at offsets spread over it: `verify_backup` and the restore
/// refuse it with a `Corruption` naming the file, the restore leaves no database behind, and
/// once the bit is flipped back both work again.
#[test]
fn every_damaged_backup_file_is_refused_by_verify_and_restore() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path().join("db"), options()).expect("open");
    for i in 0..600 {
        db.put(key(i), [b'a'; 40]).expect("put");
    }
    db.flush().expect("flush");
    db.put("in the wal", "v").expect("put");
    let root = dir.path().join("backups");
    let mut backups = BackupEngine::open(&root).expect("engine");
    let id = backups.create_new_backup(&db).expect("backup");
    let mut files: Vec<PathBuf> = Vec::new();
    for sub in ["shared", "private"] {
        files.extend(
            files_in(&root.join(sub))
                .iter()
                .map(|n| root.join(sub).join(n)),
        );
    }
    let mut flips = 0;
    for (n, file) in files.iter().enumerate() {
        let len = std::fs::metadata(file).expect("stat").len() as usize;
        for step in 0..7 {
            let offset = (len * step / 7 + n) % len.max(1);
            flip(file, offset);
            let name = file
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            let verified = backups.verify_backup(id);
            match &verified {
                Err(Error::Corruption(c)) => {
                    assert!(c.file().is_some_and(|f| f.contains(&name)), "{c}")
                }
                other => panic!("{name} at {offset}: verify gave {other:?}"),
            }
            let target = dir.path().join(format!("restore-{n}-{step}"));
            let restore = backups.restore_db_from_backup(id, &target);
            assert!(
                matches!(restore, Err(Error::Corruption(_))),
                "{name} at {offset}: restore gave {restore:?}"
            );
            assert!(!target.join("CURRENT").exists());
            flip(file, offset);
            flips += 1;
        }
    }
    assert!(flips >= 7 * 5, "{flips}");
    backups.verify_backup(id).expect("verify after repair");
    // A damaged metadata file makes its backup corrupt (not restorable), and a purge removes
    // it.
    let meta = root.join("meta").join(id.to_string());
    flip(&meta, 20);
    drop(backups);
    let mut backups = BackupEngine::open(&root).expect("engine");
    assert_eq!(backups.get_corrupted_backups(), [id]);
    assert!(backups.get_backup_info().is_empty());
    assert!(matches!(
        backups.restore_db_from_backup(id, dir.path().join("never")),
        Err(Error::Corruption(_))
    ));
    backups.purge_old_backups(5).expect("purge");
    assert!(backups.get_corrupted_backups().is_empty());
    assert!(files_in(&root.join("shared")).is_empty());
    // Ids are not reused.
    assert!(backups.create_new_backup(&db).expect("backup") > id);
}

fn flip(file: &Path, offset: usize) {
    let mut bytes = std::fs::read(file).expect("read");
    bytes[offset] ^= 0x10;
    std::fs::write(file, bytes).expect("write");
}

/// Backups taken while a writer writes keys in order: each restores to a prefix of the
/// writer's keys holding every key acknowledged before the backup started.
#[test]
fn backups_taken_during_writes_hold_a_prefix_with_every_acknowledged_write() {
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(
        dir.path().join("db"),
        Options {
            write_buffer_size: 8 << 10,
            ..Options::default()
        },
    )
    .expect("open");
    let mut backups = BackupEngine::open(dir.path().join("backups")).expect("engine");
    let acknowledged = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let mut cuts = Vec::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) && i < 200_000 {
                db.put(key(i), [b'w'; 60]).expect("put");
                i += 1;
                acknowledged.store(i, Ordering::Release);
            }
        });
        for _ in 0..4 {
            std::thread::sleep(std::time::Duration::from_millis(30));
            let before = acknowledged.load(Ordering::Acquire);
            let id = backups.create_new_backup(&db).expect("backup");
            cuts.push((id, before));
        }
        stop.store(true, Ordering::Relaxed);
    });
    for (id, before) in cuts {
        let copy = restored(&backups, id, dir.path());
        let keys: Vec<Vec<u8>> = copy.iter().map(|r| r.expect("entry").0).collect();
        let n = keys.len() as u64;
        assert!(
            n >= before,
            "backup {id}: {n} keys, {before} acknowledged before it"
        );
        assert!(
            keys.iter().enumerate().all(|(i, k)| *k == key(i as u64)),
            "backup {id} is not a prefix of the writes"
        );
    }
}
