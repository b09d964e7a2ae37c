//! Bad input to the keyspace, checkpoint and read-only APIs: every mistake is a clear, typed
//! error, and none of them loses (or adds) data. Each test keeps a model of what every keyspace
//! must hold and checks the database against it after each bad call — and, for the mistakes that
//! could have reached the disk (a manifest record, a WAL record, a deleted file), again after a
//! reopen.
//!
//! Also here, because they are the other side of the same coin: a dropped then re-created
//! keyspace starts empty, the options a keyspace was created with come back after a reopen (and
//! in a checkpoint), and a dropped keyspace's table files leave the directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use siftdb::{Db, Error, FixedPrefix, KeyspaceOptions, Options, WriteBatch};

/// What every keyspace must hold: name -> key -> value.
type Model = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

/// Small memtables, so that the data of a test spans memtables and tables alike (a bad call must
/// leave both alone).
fn options() -> Options {
    Options {
        write_buffer_size: 16 << 10,
        ..Options::default()
    }
}

fn open(dir: &Path) -> Db {
    Db::open(dir, options()).unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

/// Writes `n` keys into keyspace `name` of `db` (and the model), flushing half-way so that
/// some of them are in a table and some only in the memtable and the WAL.
fn fill(db: &Db, model: &mut Model, name: &str, n: usize) {
    let ks = db.keyspace(name).unwrap();
    let entry = model.entry(name.to_string()).or_default();
    for i in 0..n {
        let k = format!("{name}:{i:05}").into_bytes();
        let mut v = format!("value of {name} {i}").into_bytes();
        v.resize(48 + i % 32, b'.');
        ks.put(&k, &v).unwrap();
        entry.insert(k, v);
        if i == n / 2 {
            ks.flush().unwrap();
        }
    }
}

/// Checks that `db` holds exactly what `model` says: the same keyspaces (`"default"` first),
/// and in each the same keys and values, both by iteration and by point lookups.
fn check(db: &Db, model: &Model, ctx: &str) {
    let names = db.keyspace_names();
    assert_eq!(names.first().map(String::as_str), Some("default"), "{ctx}");
    let got: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    let want: BTreeSet<&str> = model.keys().map(String::as_str).collect();
    assert_eq!(got, want, "{ctx}: keyspace names");
    assert_eq!(got.len(), names.len(), "{ctx}: duplicate names {names:?}");
    for (name, kv) in model {
        let ks = db
            .keyspace(name)
            .unwrap_or_else(|e| panic!("{ctx}: keyspace {name}: {e}"));
        let all: Vec<(Vec<u8>, Vec<u8>)> = ks
            .iter()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{ctx}: iterate {name}: {e}"));
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            kv.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(all.len(), want.len(), "{ctx}: key count of {name}");
        assert_eq!(all, want, "{ctx}: contents of {name}");
        for (k, v) in kv {
            assert_eq!(ks.get(k).unwrap().as_ref(), Some(v), "{ctx}: get in {name}");
        }
    }
}

/// A model with data in `"default"` and in the named keyspaces.
fn populated(db: &Db, names: &[&str]) -> Model {
    let mut model = Model::new();
    fill(db, &mut model, "default", 100);
    for name in names {
        fill(db, &mut model, name, 100);
    }
    model
}

fn table_files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst"))
        .collect()
}

fn dir_listing(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

macro_rules! assert_err {
    ($result:expr, $pattern:pat, $ctx:expr) => {
        match $result {
            Err($pattern) => {}
            Err(other) => panic!(
                "{}: expected {}, got the error {other:?}",
                $ctx,
                stringify!($pattern)
            ),
            Ok(_) => panic!("{}: expected {}, got Ok", $ctx, stringify!($pattern)),
        }
    };
}

/// Bad names — empty, over-long, holding a control character — are `InvalidArgument` in every
/// call that takes a name, and none of them creates, drops or changes anything.
#[test]
fn bad_keyspace_names_are_invalid_argument() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path());
    let mut model = populated(&db, &["users"]);

    let too_long = "x".repeat(siftdb::MAX_KEYSPACE_NAME_LEN + 1);
    // 128 two-byte characters: 128 characters but 256 bytes — the limit is in bytes.
    let too_long_multibyte = "é".repeat(128);
    let bad: Vec<(&str, String)> = vec![
        ("empty", String::new()),
        ("256 bytes", too_long),
        ("256 bytes of 2-byte chars", too_long_multibyte),
        ("newline", "a\nb".to_string()),
        ("NUL", "nul\0".to_string()),
        ("tab", "\tlead".to_string()),
        ("DEL", "del\u{7f}".to_string()),
        ("C1 control", "next\u{85}line".to_string()),
    ];
    for (what, name) in &bad {
        let ctx = format!("name {what} ({name:?})");
        assert_err!(db.keyspace(name), Error::InvalidArgument(_), ctx);
        assert_err!(
            db.create_keyspace(name, KeyspaceOptions::default()),
            Error::InvalidArgument(_),
            ctx
        );
        assert_err!(db.drop_keyspace(name), Error::InvalidArgument(_), ctx);
        check(&db, &model, &ctx);
    }

    // The limits themselves are accepted: exactly 255 bytes, and non-control Unicode.
    let longest = "y".repeat(siftdb::MAX_KEYSPACE_NAME_LEN);
    let longest_multibyte = format!("{}z", "é".repeat(127));
    assert_eq!(longest_multibyte.len(), 255);
    for name in [longest.as_str(), longest_multibyte.as_str(), "ключи 🔑"] {
        fill(&db, &mut model, name, 10);
    }
    check(&db, &model, "after the boundary names");

    // A read-only open checks names the same way (before it can say the keyspace is absent).
    let ro = Db::open_read_only(dir.path(), options()).unwrap();
    for (what, name) in &bad {
        assert_err!(ro.keyspace(name), Error::InvalidArgument(_), what);
    }
    drop(ro);

    drop(db);
    let db = open(dir.path());
    check(&db, &model, "after reopen");
}

/// `create_keyspace` of an existing name is `AlreadyExists`, whatever the options; the existing
/// keyspace, its data and its handles are untouched.
#[test]
fn create_existing_keyspace_is_already_exists() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path());
    let mut model = populated(&db, &["users"]);
    let users = db.keyspace("users").unwrap();

    let other = KeyspaceOptions {
        write_buffer_size: 4 << 10,
        prefix_extractor: Some(FixedPrefix::shared(3)),
        ..KeyspaceOptions::default()
    };
    for name in ["users", "default"] {
        assert_err!(
            db.create_keyspace(name, other.clone()),
            Error::AlreadyExists(_),
            name
        );
        assert_err!(
            db.create_keyspace(name, KeyspaceOptions::default()),
            Error::AlreadyExists(_),
            name
        );
        check(&db, &model, &format!("after create_keyspace({name})"));
    }
    // A created keyspace is also "existing" for a second create right after.
    db.create_keyspace("fresh", KeyspaceOptions::default())
        .unwrap();
    model.insert("fresh".to_string(), BTreeMap::new());
    assert_err!(
        db.create_keyspace("fresh", KeyspaceOptions::default()),
        Error::AlreadyExists(_),
        "fresh"
    );

    // The old handle still works and writes where it did.
    users.put(b"users:after", b"still here").unwrap();
    model
        .get_mut("users")
        .unwrap()
        .insert(b"users:after".to_vec(), b"still here".to_vec());
    check(&db, &model, "after the refused creates");

    drop((users, db));
    let db = open(dir.path());
    check(&db, &model, "after reopen");
    assert_err!(
        db.create_keyspace("users", KeyspaceOptions::default()),
        Error::AlreadyExists(_),
        "users after reopen"
    );
}

/// Every call through the handle of a dropped keyspace (and of its clones) is `KeyspaceDropped`;
/// the other keyspaces keep their data.
#[test]
fn dropped_keyspace_handles_fail_with_keyspace_dropped() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path());
    let mut model = populated(&db, &["doomed", "kept"]);
    let doomed = db.keyspace("doomed").unwrap();
    let clone = doomed.clone();
    let snapshot = db.snapshot();

    db.drop_keyspace("doomed").unwrap();
    model.remove("doomed");

    for (which, ks) in [("handle", &doomed), ("clone", &clone)] {
        let ctx = |call: &str| format!("{which}.{call}");
        assert_err!(
            ks.get(b"doomed:00001"),
            Error::KeyspaceDropped(_),
            ctx("get")
        );
        assert_err!(
            ks.get_opt(b"doomed:00001", &siftdb::ReadOptions::default()),
            Error::KeyspaceDropped(_),
            ctx("get_opt")
        );
        let mut buf = Vec::new();
        assert_err!(
            ks.get_into(b"doomed:00001", &mut buf),
            Error::KeyspaceDropped(_),
            ctx("get_into")
        );
        assert_err!(ks.put(b"k", b"v"), Error::KeyspaceDropped(_), ctx("put"));
        assert_err!(ks.delete(b"k"), Error::KeyspaceDropped(_), ctx("delete"));
        assert_err!(ks.flush(), Error::KeyspaceDropped(_), ctx("flush"));
        assert_err!(
            ks.compact_range(None, None),
            Error::KeyspaceDropped(_),
            ctx("compact_range")
        );
        // Iterators report the error as their first item, then end.
        for (kind, mut it) in [
            ("iter", ks.iter()),
            ("range", ks.range::<&[u8], _>(..)),
            ("prefix_iter", ks.prefix_iter(b"doomed")),
            ("iter_in", snapshot.iter_in(ks)),
        ] {
            assert_err!(
                it.next().expect("an error item"),
                Error::KeyspaceDropped(_),
                ctx(kind)
            );
            assert!(it.next().is_none(), "{}: ends after its error", ctx(kind));
        }
        let mut raw = ks.raw_iter();
        assert_err!(raw.status(), Error::KeyspaceDropped(_), ctx("raw_iter"));
        raw.seek_to_first();
        assert!(!raw.valid(), "{}", ctx("raw_iter valid"));
        assert_err!(
            snapshot.get_in(ks, b"doomed:00001"),
            Error::KeyspaceDropped(_),
            ctx("snapshot.get_in")
        );
        assert!(ks.level_info().is_empty(), "{}", ctx("level_info"));
        assert_eq!(ks.property("siftdb.levels"), None, "{}", ctx("property"));
        assert_eq!(ks.name(), "doomed");
        check(&db, &model, &ctx("after the calls"));
    }
    assert!(!db.property("siftdb.keyspaces").unwrap().contains("doomed"));

    // The same name through the Db is now absent: on a read-only open it is not found.
    let ro = Db::open_read_only(dir.path(), options()).unwrap();
    assert_err!(
        ro.keyspace("doomed"),
        Error::KeyspaceNotFound(_),
        "read-only"
    );
    check(&ro, &model, "read-only open after the drop");
    drop(ro);

    drop((doomed, clone, snapshot, db));
    let db = open(dir.path());
    check(&db, &model, "after reopen");
}

/// A batch that names a dropped keyspace fails as a whole with `KeyspaceDropped`: none of its
/// other operations (in live keyspaces) is applied — neither now nor after a reopen (the WAL
/// must not hold it). Both a batch built before the drop and one built after it with a stale
/// handle.
#[test]
fn batch_naming_a_dropped_keyspace_applies_nothing() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path());
    let mut model = populated(&db, &["doomed", "kept"]);
    let doomed = db.keyspace("doomed").unwrap();
    let kept = db.keyspace("kept").unwrap();

    let mixed = |doomed_first: bool| {
        let mut b = WriteBatch::new();
        if doomed_first {
            b.put_in(&doomed, b"doomed:new", b"x");
        }
        b.put(b"default:new", b"must not appear");
        b.put_in(&kept, b"kept:new", b"must not appear");
        b.delete_in(&kept, b"kept:00003");
        b.delete(b"default:00007");
        if !doomed_first {
            b.delete_in(&doomed, b"doomed:00001");
        }
        b
    };
    let built_before = [mixed(true), mixed(false)];

    db.drop_keyspace("doomed").unwrap();
    model.remove("doomed");

    for (i, batch) in built_before.into_iter().enumerate() {
        assert_err!(
            db.write(batch),
            Error::KeyspaceDropped(_),
            format!("batch {i} built before the drop")
        );
        check(
            &db,
            &model,
            &format!("after batch {i} built before the drop"),
        );
    }
    for doomed_first in [true, false] {
        assert_err!(
            db.write(mixed(doomed_first)),
            Error::KeyspaceDropped(_),
            "batch built after the drop"
        );
        check(&db, &model, "after a batch built after the drop");
    }

    // Good writes go on; a failed batch left no trace in the sequence of what follows.
    let mut good = WriteBatch::new();
    good.put(b"default:good", b"1")
        .put_in(&kept, b"kept:good", b"2");
    db.write(good).unwrap();
    model
        .get_mut("default")
        .unwrap()
        .insert(b"default:good".to_vec(), b"1".to_vec());
    model
        .get_mut("kept")
        .unwrap()
        .insert(b"kept:good".to_vec(), b"2".to_vec());
    check(&db, &model, "after a good batch");

    drop((doomed, kept, db));
    let db = open(dir.path());
    check(&db, &model, "after reopen");
}

/// `"default"` cannot be dropped (`InvalidArgument`); an absent keyspace, or one dropped already,
/// is `KeyspaceNotFound`. Nothing changes.
#[test]
fn dropping_default_or_an_absent_keyspace_fails() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path());
    let mut model = populated(&db, &["users", "gone"]);

    assert_err!(
        db.drop_keyspace("default"),
        Error::InvalidArgument(_),
        "drop default"
    );
    check(&db, &model, "after drop default");
    assert_err!(
        db.drop_keyspace("never-was"),
        Error::KeyspaceNotFound(_),
        "drop absent"
    );
    // Names are exact: no prefix or case folding.
    assert_err!(
        db.drop_keyspace("user"),
        Error::KeyspaceNotFound(_),
        "drop prefix"
    );
    assert_err!(
        db.drop_keyspace("USERS"),
        Error::KeyspaceNotFound(_),
        "drop other case"
    );
    check(&db, &model, "after drop absent");

    db.drop_keyspace("gone").unwrap();
    model.remove("gone");
    assert_err!(
        db.drop_keyspace("gone"),
        Error::KeyspaceNotFound(_),
        "drop twice"
    );
    check(&db, &model, "after drop twice");

    drop(db);
    let db = open(dir.path());
    check(&db, &model, "after reopen");
    assert_err!(
        db.drop_keyspace("gone"),
        Error::KeyspaceNotFound(_),
        "drop after reopen"
    );
    assert_err!(
        db.drop_keyspace("default"),
        Error::InvalidArgument(_),
        "drop default after reopen"
    );
    check(&db, &model, "at the end");
}

/// A batch naming keyspaces of two `Db` instances is `InvalidArgument` in both; so is a batch
/// naming only another instance's keyspace, a stale keyspace handle from a closed instance of
/// the same directory, and a snapshot read of another instance's keyspace. Neither database
/// changes.
#[test]
fn batch_mixing_two_databases_is_invalid_argument() {
    let dir1 = siftdb_tests::temp_dir();
    let dir2 = siftdb_tests::temp_dir();
    let db1 = open(dir1.path());
    let db2 = open(dir2.path());
    let model1 = populated(&db1, &["shared-name"]);
    let model2 = populated(&db2, &["shared-name"]);
    // The same name and (very likely) the same keyspace id in both: only the instance differs.
    let ks1 = db1.keyspace("shared-name").unwrap();
    let ks2 = db2.keyspace("shared-name").unwrap();
    let default2 = db2.keyspace("default").unwrap();

    let mut both = WriteBatch::new();
    both.put_in(&ks1, b"a", b"1").put_in(&ks2, b"b", b"2");
    let mut both_other_order = WriteBatch::new();
    both_other_order
        .put(b"plain default", b"3")
        .delete_in(&ks2, b"shared-name:00001")
        .put_in(&ks1, b"c", b"4");
    let mut only2 = WriteBatch::new();
    only2.put_in(&ks2, b"d", b"5");
    let mut default_of_2 = WriteBatch::new();
    default_of_2
        .put_in(&default2, b"e", b"6")
        .put_in(&ks1, b"f", b"7");

    for db in [&db1, &db2] {
        assert_err!(
            db.write(both.clone()),
            Error::InvalidArgument(_),
            "batch over two dbs"
        );
        assert_err!(
            db.write(both_other_order.clone()),
            Error::InvalidArgument(_),
            "batch over two dbs, other order"
        );
        assert_err!(
            db.write(default_of_2.clone()),
            Error::InvalidArgument(_),
            "batch with db2's default keyspace handle"
        );
    }
    assert_err!(
        db1.write(only2),
        Error::InvalidArgument(_),
        "db2's keyspace written through db1"
    );
    let snap1 = db1.snapshot();
    assert_err!(
        snap1.get_in(&ks2, b"shared-name:00001"),
        Error::InvalidArgument(_),
        "snapshot of db1 reading db2's keyspace"
    );
    assert_err!(
        snap1.iter_in(&ks2).next().expect("an error item"),
        Error::InvalidArgument(_),
        "snapshot of db1 iterating db2's keyspace"
    );
    drop(snap1);
    check(&db1, &model1, "db1");
    check(&db2, &model2, "db2");

    // A handle from a closed instance of the same directory is another database's too.
    drop(ks2);
    drop(default2);
    drop(db2);
    let stale = ks1.clone();
    drop(ks1);
    db1.close().unwrap();
    drop(db1);
    let db1 = open(dir1.path());
    let mut b = WriteBatch::new();
    b.put(b"new default", b"x")
        .put_in(&stale, b"through a stale handle", b"y");
    assert_err!(db1.write(b), Error::InvalidArgument(_), "stale handle");
    check(&db1, &model1, "db1 after reopen");
    drop((stale, db1));
    let db1 = open(dir1.path());
    let db2 = open(dir2.path());
    check(&db1, &model1, "db1 after second reopen");
    check(&db2, &model2, "db2 after reopen");
}

/// A read-only open refuses every write-ish call with `ReadOnly` (an absent keyspace is
/// `KeyspaceNotFound`, as it cannot be created), creates and deletes no file, and keeps reading
/// the same data. The writer opened afterwards finds everything as it was.
#[test]
fn read_only_open_refuses_every_write() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path());
    let model = populated(&db, &["users", "orders"]);
    // Close the writer: nothing moves in the directory while the read-only open is checked.
    drop(db);
    let files_before = dir_listing(dir.path());

    let ro = Db::open_read_only(dir.path(), options()).unwrap();
    check(&ro, &model, "read-only open");
    let users = ro.keyspace("users").unwrap();
    let default = ro.keyspace("default").unwrap();
    let checkpoint_dir = dir.path().join("cp");

    assert_err!(ro.put(b"k", b"v"), Error::ReadOnly, "put");
    assert_err!(ro.delete(b"default:00001"), Error::ReadOnly, "delete");
    let mut b = WriteBatch::new();
    b.put(b"k", b"v").put_in(&users, b"u", b"v");
    assert_err!(ro.write(b), Error::ReadOnly, "write");
    assert_err!(ro.write(WriteBatch::new()), Error::ReadOnly, "empty write");
    assert_err!(ro.flush(), Error::ReadOnly, "flush");
    assert_err!(
        ro.compact_range(None, None),
        Error::ReadOnly,
        "compact_range"
    );
    assert_err!(
        ro.compact_range(Some(b"a"), Some(b"b")),
        Error::ReadOnly,
        "compact_range of a range"
    );
    // Not a write: a read-only open runs no background work, so there is nothing to wait for
    // (as documented), and it returns at once.
    ro.wait_for_compaction().unwrap();
    assert_err!(
        ro.create_keyspace("new", KeyspaceOptions::default()),
        Error::ReadOnly,
        "create_keyspace"
    );
    assert_err!(
        ro.create_keyspace("users", KeyspaceOptions::default()),
        Error::ReadOnly,
        "create_keyspace of an existing one"
    );
    assert_err!(ro.drop_keyspace("users"), Error::ReadOnly, "drop_keyspace");
    assert_err!(
        ro.drop_keyspace("absent"),
        Error::ReadOnly,
        "drop_keyspace absent"
    );
    assert_err!(
        ro.checkpoint(&checkpoint_dir),
        Error::ReadOnly,
        "checkpoint"
    );
    assert!(
        !checkpoint_dir.exists(),
        "a refused checkpoint must not create its directory"
    );
    assert_err!(
        ro.keyspace("absent"),
        Error::KeyspaceNotFound(_),
        "keyspace(absent)"
    );
    // Through keyspace handles of the read-only open.
    for ks in [&users, &default] {
        let name = ks.name().to_string();
        assert_err!(ks.put(b"k", b"v"), Error::ReadOnly, format!("{name}.put"));
        assert_err!(
            ks.delete(b"users:00001"),
            Error::ReadOnly,
            format!("{name}.delete")
        );
        assert_err!(ks.flush(), Error::ReadOnly, format!("{name}.flush"));
        assert_err!(
            ks.compact_range(None, None),
            Error::ReadOnly,
            format!("{name}.compact_range")
        );
    }
    let mut b = WriteBatch::new();
    b.delete_in(&users, b"users:00001");
    assert_err!(ro.write(b), Error::ReadOnly, "batch of a keyspace handle");

    assert_eq!(ro.keyspace_names(), vec!["default", "users", "orders"]);
    assert!(ro.property("siftdb.keyspaces").unwrap().contains("orders"));
    check(&ro, &model, "read-only open after the refused calls");
    assert_eq!(
        dir_listing(dir.path()),
        files_before,
        "a read-only open created or deleted files"
    );
    drop((users, default));
    ro.close().unwrap();
    // Calls after close are `Closed`, not `ReadOnly` and not a panic.
    assert_err!(ro.get(b"default:00001"), Error::Closed, "get after close");
    drop(ro);
    assert_eq!(dir_listing(dir.path()), files_before);

    let db = open(dir.path());
    check(&db, &model, "writer after the read-only open");
    assert_eq!(db.keyspace_names(), vec!["default", "users", "orders"]);
}

/// A checkpoint into a non-empty directory (a stray file, or the database's own directory) is
/// `InvalidArgument` and writes nothing there; into an existing empty directory it works.
#[test]
fn checkpoint_into_a_non_empty_directory_is_invalid_argument() {
    let dir = siftdb_tests::temp_dir();
    let db = open(&dir.path().join("db"));
    let model = populated(&db, &["users"]);

    let target = dir.path().join("busy");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("precious.txt"), b"not a database").unwrap();
    assert_err!(
        db.checkpoint(&target),
        Error::InvalidArgument(_),
        "non-empty target"
    );
    assert_eq!(
        dir_listing(&target),
        BTreeSet::from(["precious.txt".to_string()]),
        "a refused checkpoint wrote into the directory"
    );
    assert_eq!(
        std::fs::read(target.join("precious.txt")).unwrap(),
        b"not a database"
    );
    // A directory holding only a subdirectory is not empty either.
    let nested = dir.path().join("nested");
    std::fs::create_dir_all(nested.join("sub")).unwrap();
    assert_err!(
        db.checkpoint(&nested),
        Error::InvalidArgument(_),
        "target with a subdirectory"
    );
    assert_eq!(dir_listing(&nested), BTreeSet::from(["sub".to_string()]));
    // The database's own directory.
    let own = dir_listing(&dir.path().join("db"));
    assert_err!(
        db.checkpoint(dir.path().join("db")),
        Error::InvalidArgument(_),
        "checkpoint into itself"
    );
    assert!(dir_listing(&dir.path().join("db")).is_superset(&own));
    assert_eq!(
        db.stats().checkpoints,
        0,
        "refused checkpoints are not counted"
    );
    check(&db, &model, "after the refused checkpoints");

    // A second checkpoint into the directory of the first is refused too.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    db.checkpoint(&empty).unwrap();
    assert_err!(
        db.checkpoint(&empty),
        Error::InvalidArgument(_),
        "checkpoint over a checkpoint"
    );
    assert_eq!(db.stats().checkpoints, 1);
    check(&open(&empty), &model, "the checkpoint");

    drop(db);
    let db = open(&dir.path().join("db"));
    check(&db, &model, "after reopen");
}

/// Dropping a keyspace and creating the same name again gives an empty keyspace — not the old
/// data from its tables, memtable or WAL — now and after a reopen; likewise when the reopen
/// comes between the drop and the re-creation.
#[test]
fn dropped_then_recreated_keyspace_is_empty() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path());
    let mut model = populated(&db, &["reborn", "other"]);
    let old = db.keyspace("reborn").unwrap();
    // The tail of the old keyspace is only in the memtable and the WAL.
    old.put(b"reborn:wal-only", b"old").unwrap();

    db.drop_keyspace("reborn").unwrap();
    let new = db.keyspace("reborn").unwrap();
    model.insert("reborn".to_string(), BTreeMap::new());
    check(&db, &model, "re-created");
    assert_eq!(new.get(b"reborn:00001").unwrap(), None);
    assert_eq!(new.get(b"reborn:wal-only").unwrap(), None);
    assert!(new.level_info().iter().all(|l| l.files == 0));
    // The old handle stays dead: it names the dropped keyspace, not the new one of its name.
    assert_err!(old.get(b"reborn:00001"), Error::KeyspaceDropped(_), "old");
    assert_err!(old.put(b"x", b"y"), Error::KeyspaceDropped(_), "old put");
    new.put(b"reborn:new", b"new").unwrap();
    model
        .get_mut("reborn")
        .unwrap()
        .insert(b"reborn:new".to_vec(), b"new".to_vec());
    check(&db, &model, "re-created with a key");

    drop((old, new, db));
    let db = open(dir.path());
    check(&db, &model, "after reopen");

    // Drop, reopen, then re-create: the old WAL records of the name must not come back.
    let ks = db.keyspace("reborn").unwrap();
    ks.put(b"reborn:second-life", b"unflushed").unwrap();
    drop(ks);
    db.drop_keyspace("reborn").unwrap();
    model.remove("reborn");
    drop(db);
    let db = open(dir.path());
    check(&db, &model, "dropped, reopened");
    db.create_keyspace("reborn", KeyspaceOptions::default())
        .unwrap();
    model.insert("reborn".to_string(), BTreeMap::new());
    check(&db, &model, "re-created after reopen");
    drop(db);
    let db = open(dir.path());
    check(&db, &model, "re-created, reopened");
}

/// The options a keyspace was created with are recorded and used again after a reopen (with
/// `Options::keyspaces` empty), and in a checkpoint: a fixed prefix extractor makes prefix
/// scans skip tables by their prefix filter; `filter_bits_per_key = 24` plans filters of more
/// than twice the bits of the default 10. The `"default"` keyspace, created without either,
/// shows the contrast.
///
/// (`filter_bits_per_key = 0` would be the more obvious probe, but the filter plan floors every
/// table at 1 bit/key, so it still builds filters — see the report on `KeyspaceOptions`'s doc
/// example, which calls that "no filter memory".)
#[test]
fn keyspace_options_come_back_after_reopen() {
    let dir = siftdb_tests::temp_dir();
    let db = open(&dir.path().join("db"));
    db.create_keyspace(
        "by-prefix",
        KeyspaceOptions {
            prefix_extractor: Some(FixedPrefix::shared(4)),
            ..KeyspaceOptions::default()
        },
    )
    .unwrap();
    db.create_keyspace(
        "wide-filter",
        KeyspaceOptions {
            filter_bits_per_key: 24.0,
            ..KeyspaceOptions::default()
        },
    )
    .unwrap();
    db.checkpoint(dir.path().join("cp")).unwrap();
    drop(db);

    for (what, path) in [
        ("reopen", dir.path().join("db")),
        ("checkpoint", dir.path().join("cp")),
    ] {
        // Twice: the second open reads a manifest the first open may have rewritten.
        for round in 0..2 {
            let ctx = format!("{what} round {round}");
            let db = open(&path);
            check_recorded_options(&db, &ctx);
        }
    }
}

/// Writes tables and checks that "by-prefix" has its extractor and "wide-filter" its filter bits
/// (see [`keyspace_options_come_back_after_reopen`]).
fn check_recorded_options(db: &Db, ctx: &str) {
    let by_prefix = db.keyspace("by-prefix").unwrap();
    let wide = db.keyspace("wide-filter").unwrap();
    // Two tables, each with keys of prefixes "aaaa" and "cccc" (and "default" alike). A scan
    // of the absent prefix "bbbb" lies inside every table's key range, so only a prefix filter
    // can rule a table out — and it does so whether or not a compaction merged the tables.
    for t in 0..2 {
        for p in ["aaaa", "cccc"] {
            for i in 0..50 {
                let k = format!("{p}{t}{i:03}");
                by_prefix.put(&k, b"v").unwrap();
                wide.put(&k, b"v").unwrap();
                db.put(&k, b"v").unwrap();
            }
        }
        by_prefix.flush().unwrap();
        wide.flush().unwrap();
        db.flush().unwrap();
    }

    let before = db.stats();
    assert_eq!(db.prefix_iter(b"bbbb").count(), 0, "{ctx}");
    let after = db.stats();
    assert_eq!(
        (after.prefix_checked, after.prefix_useful),
        (before.prefix_checked, before.prefix_useful),
        "{ctx}: the default keyspace has no extractor, yet prefix filters were consulted"
    );

    let before = db.stats();
    assert_eq!(by_prefix.prefix_iter(b"bbbb").count(), 0, "{ctx}");
    let after = db.stats();
    assert!(
        after.prefix_useful > before.prefix_useful,
        "{ctx}: the recorded fixed:4 extractor is not in use (prefix filters checked {} -> {}, \
         useful {} -> {})\n{}",
        before.prefix_checked,
        after.prefix_checked,
        before.prefix_useful,
        after.prefix_useful,
        by_prefix.property("siftdb.levels").unwrap()
    );
    let found: Vec<_> = by_prefix
        .prefix_iter(b"aaaa")
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    assert_eq!(found.len(), 100, "{ctx}: by-prefix scan of aaaa");
    assert!(found.iter().all(|(k, _)| k.starts_with(b"aaaa")), "{ctx}");

    // Key-weighted planned bits/key over the tree's levels.
    let planned = |levels: Vec<siftdb::LevelInfo>| {
        let keys: u64 = levels.iter().map(|l| l.keys).sum();
        let bits: f64 = levels
            .iter()
            .map(|l| l.planned_bits_per_key * l.keys as f64)
            .sum();
        (keys, bits / keys.max(1) as f64)
    };
    let (wide_keys, wide_bits) = planned(wide.level_info());
    let (default_keys, default_bits) = planned(db.level_info());
    assert!(
        wide_keys >= 200 && default_keys >= 200,
        "{ctx}: tables missing"
    );
    assert!(
        wide_bits >= 1.5 * default_bits && wide_bits > 15.0,
        "{ctx}: wide-filter's recorded filter_bits_per_key = 24 is not in use: planned \
         {wide_bits:.2} bits/key against the default keyspace's {default_bits:.2}\n{}\n{}",
        wide.property("siftdb.levels").unwrap(),
        db.property("siftdb.levels").unwrap()
    );
    // Reads agree whatever the filters.
    for i in [0, 25, 49] {
        let k = format!("cccc1{i:03}");
        assert_eq!(wide.get(&k).unwrap(), Some(b"v".to_vec()), "{ctx}");
        assert_eq!(by_prefix.get(&k).unwrap(), Some(b"v".to_vec()), "{ctx}");
    }
    assert_eq!(wide.get(b"bbbb1000").unwrap(), None);
}

/// Dropping a keyspace deletes its table files from the directory (and only its files), and
/// they do not come back after a reopen.
#[test]
fn dropped_keyspace_files_are_deleted() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path());
    let mut model = populated(&db, &["kept"]);
    db.flush().unwrap();
    db.keyspace("kept").unwrap().flush().unwrap();
    let before = table_files(dir.path());
    assert!(!before.is_empty());

    // Few enough tables (at most three) that no compaction of the keyspace is under way when it
    // is dropped: the file sets compared below are then stable.
    fill(&db, &mut model, "doomed", 200);
    let doomed = db.keyspace("doomed").unwrap();
    doomed.flush().unwrap();
    let with_doomed = table_files(dir.path());
    let doomed_files: BTreeSet<String> = with_doomed.difference(&before).cloned().collect();
    let in_level_info: usize = doomed.level_info().iter().map(|l| l.files).sum();
    assert!(
        !doomed_files.is_empty() && in_level_info > 0,
        "the doomed keyspace's flush wrote no table"
    );
    assert!(with_doomed.is_superset(&before));

    db.drop_keyspace("doomed").unwrap();
    model.remove("doomed");
    let after = table_files(dir.path());
    assert!(
        after.is_disjoint(&doomed_files),
        "files of the dropped keyspace are left: {:?}",
        after.intersection(&doomed_files).collect::<Vec<_>>()
    );
    assert_eq!(after, before, "the other keyspaces' tables changed");
    check(&db, &model, "after the drop");

    drop((doomed, db));
    let db = open(dir.path());
    let reopened = table_files(dir.path());
    assert!(reopened.is_disjoint(&doomed_files));
    check(&db, &model, "after reopen");
}

/// A keyspace dropped while its writes are still only in the WAL: a read-only open and a
/// checkpoint (whose fresh manifest no longer knows the keyspace's id) must skip those WAL
/// records — neither fail on them nor hand them to another keyspace — and a keyspace created
/// under the same name in the checkpoint starts empty.
#[test]
fn wal_records_of_a_dropped_keyspace_are_skipped_by_read_only_open_and_checkpoint() {
    let dir = siftdb_tests::temp_dir();
    let db = open(&dir.path().join("db"));
    let mut model = populated(&db, &["kept"]);
    let doomed = db.keyspace("doomed").unwrap();
    doomed.put(b"wal-only", b"x").unwrap();
    // A write of another keyspace after it in the same WAL, which must survive.
    db.put(b"default:after", b"y").unwrap();
    model
        .get_mut("default")
        .unwrap()
        .insert(b"default:after".to_vec(), b"y".to_vec());
    db.drop_keyspace("doomed").unwrap();
    db.checkpoint(dir.path().join("cp")).unwrap();

    let ro = Db::open_read_only(dir.path().join("db"), options()).unwrap();
    check(&ro, &model, "read-only open after the drop");
    drop(ro);
    let cp = open(&dir.path().join("cp"));
    check(&cp, &model, "checkpoint after the drop");
    let again = cp.keyspace("doomed").unwrap();
    assert_eq!(again.get(b"wal-only").unwrap(), None);
    assert_eq!(again.iter().count(), 0);
    drop((doomed, db));
    let db = open(&dir.path().join("db"));
    check(&db, &model, "source after reopen");
}

/// Keyspaces with tiny trees dropped while their flushes and compactions run: once the
/// background work settles, the directory holds exactly the live keyspaces' tables — no output
/// of a job that finished after the drop is left behind.
#[test]
fn dropping_a_keyspace_during_its_compactions_leaves_no_files() {
    let dir = siftdb_tests::temp_dir();
    let db = open(dir.path());
    let model = populated(&db, &["kept"]);
    db.flush().unwrap();
    db.keyspace("kept").unwrap().flush().unwrap();
    let tiny = KeyspaceOptions {
        write_buffer_size: 4 << 10,
        target_file_size_base: 4 << 10,
        max_bytes_for_level_base: 16 << 10,
        level0_file_num_compaction_trigger: 2,
        ..KeyspaceOptions::default()
    };
    let live_tables = |db: &Db| -> usize {
        db.keyspace_names()
            .iter()
            .map(|n| {
                let ks = db.keyspace(n).unwrap();
                ks.level_info().iter().map(|l| l.files).sum::<usize>()
            })
            .sum()
    };
    for round in 0..2 {
        let ks = db.create_keyspace("churn", tiny.clone()).unwrap();
        for i in 0..300 {
            ks.put(format!("c{i:06}"), [b'x'; 100]).unwrap();
        }
        // Dropped with flushes and compactions of it most likely under way.
        db.drop_keyspace("churn").unwrap();
        db.wait_for_compaction().unwrap();
        // File deletion may trail the jobs by a moment: allow it a little time.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while table_files(dir.path()).len() != live_tables(&db)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let (on_disk, live) = (table_files(dir.path()).len(), live_tables(&db));
        assert_eq!(
            on_disk, live,
            "round {round}: {on_disk} tables on disk, {live} live"
        );
        check(&db, &model, &format!("round {round}"));
    }
    drop(db);
    let db = open(dir.path());
    check(&db, &model, "after reopen");
    assert_eq!(table_files(dir.path()).len(), live_tables(&db));
}
