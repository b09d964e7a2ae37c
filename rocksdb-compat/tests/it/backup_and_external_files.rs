//! `SstFileWriter` and `backup::BackupEngine` through the layer.

use siftdb_rocksdb::backup::{BackupEngine, BackupEngineOptions, RestoreOptions};
use siftdb_rocksdb::{Env, ErrorKind, Options, SstFileWriter, DB};

#[test]
fn an_external_file_is_written_and_ingested() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("external.sst");
    let opts = Options::default();
    let mut writer = SstFileWriter::create(&opts);
    assert!(writer.put(b"a", b"1").is_err(), "nothing is open yet");
    writer.open(&file).unwrap();
    writer.put(b"a", b"1").unwrap();
    writer.put(b"c", b"3").unwrap();
    writer.delete_range(b"d", b"f").unwrap();
    assert_eq!(
        writer.delete_range(b"z", b"y").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        writer.put_with_ts(b"x", [0u8; 8], b"v").unwrap_err().kind(),
        ErrorKind::NotSupported
    );
    writer.finish().unwrap();
    assert_eq!(writer.file_size(), std::fs::metadata(&file).unwrap().len());

    let db = DB::open_default(dir.path().join("db")).unwrap();
    db.put(b"e", b"old").unwrap();
    db.ingest_external_file(vec![&file]).unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(b"c").unwrap(), Some(b"3".to_vec()));
    assert_eq!(
        db.get(b"e").unwrap(),
        None,
        "the file's range deletion is newer"
    );
}

#[test]
fn backups_are_made_verified_purged_and_restored() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(dir.path().join("db")).unwrap();
    let opts = BackupEngineOptions::new(dir.path().join("backups")).unwrap();
    let mut engine = BackupEngine::open(&opts, &Env::new().unwrap()).unwrap();
    for round in 0..3 {
        db.put(b"k", format!("v{round}")).unwrap();
        engine.create_new_backup_flush(&db, round == 1).unwrap();
    }
    let info = engine.get_backup_info();
    assert_eq!(info.len(), 3);
    for b in &info {
        engine.verify_backup(b.backup_id).unwrap();
        assert!(b.size > 0 && b.num_files > 0 && b.timestamp > 0);
    }
    engine.purge_old_backups(2).unwrap();
    let info = engine.get_backup_info();
    assert_eq!(info.len(), 2);

    let restore = dir.path().join("restored");
    let options = RestoreOptions::default();
    engine
        .restore_from_backup(&restore, &restore, &options, info[0].backup_id)
        .unwrap();
    assert_eq!(
        DB::open_default(&restore).unwrap().get(b"k").unwrap(),
        Some(b"v1".to_vec())
    );
    let latest = dir.path().join("latest");
    engine
        .restore_from_latest_backup(&latest, &latest, &options)
        .unwrap();
    assert_eq!(
        DB::open_default(&latest).unwrap().get(b"k").unwrap(),
        Some(b"v2".to_vec())
    );
    // A WAL directory apart from the database's cannot be honoured.
    let err = engine
        .restore_from_latest_backup(dir.path().join("x"), dir.path().join("y"), &options)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotSupported);
}
