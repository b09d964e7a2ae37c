//! The built `siftdb` binary on a real database: each subcommand's output, the read-only
//! default, and clean refusals.

use crate::common;

use common::*;

#[test]
fn levels_shows_each_keyspace_its_levels_and_tables() {
    let (_tmp, dir) = fresh_db();
    let db = dir.to_str().unwrap();
    let out = siftdb(&["levels", db]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for keyspace in ["keyspace default:", "keyspace users:", "keyspace events:"] {
        assert!(text.contains(keyspace), "{keyspace} missing:\n{text}");
    }
    let levels = tables(&dir, "default");
    let populated: Vec<usize> = (0..levels.len())
        .filter(|l| !levels[*l].is_empty())
        .collect();
    assert!(
        populated.len() >= 2,
        "the test database spans one level only: {populated:?}"
    );
    for level in &populated {
        assert!(
            text.contains(&format!("  L{level}: {} tables", levels[*level].len())),
            "L{level}:\n{text}"
        );
    }
    // Every live table is listed, with its key range.
    for table in levels.iter().flatten() {
        let name = table.file_name().unwrap().to_str().unwrap();
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    assert!(
        text.contains("filter blocked_bloom") || text.contains("filter ribbon"),
        "{text}"
    );
    assert!(text.contains("bits/key"), "{text}");
    assert!(
        text.contains(&format!("{} ..", key(0))),
        "no key range starts at the first key:\n{text}"
    );
}

#[test]
fn dump_table_shows_properties_filter_index_and_entries() {
    let (_tmp, dir) = fresh_db();
    let table = deep_table(&dir);
    let info = siftdb::inspect::table_info(&table).unwrap();
    let out = siftdb(&[
        "dump-table",
        table.to_str().unwrap(),
        "--entries",
        "--limit",
        "5",
        "--verify",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("entries            {}", info.entries)),
        "{text}"
    );
    assert!(text.contains("format version     3"), "{text}");
    assert!(text.contains("compression        lz4"), "{text}");
    assert!(text.contains("prefix extractor   fixed:4"), "{text}");
    let filter = info.filter.as_ref().expect("a filter");
    assert!(
        text.contains(&format!("kind               {}", filter.kind)),
        "{text}"
    );
    assert!(text.contains("expected FPR"), "{text}");
    assert!(text.contains("bits per key"), "{text}");
    assert!(
        text.contains(&format!("index ({} data blocks)", info.data_blocks)),
        "{text}"
    );
    let first = info.smallest_key.as_ref().unwrap();
    let first_key = String::from_utf8(first.user_key.clone()).unwrap();
    assert!(
        text.contains(&format!("entries (first 5 of {})", info.entries)),
        "{text}"
    );
    let i: u64 = first_key.trim_start_matches("key:").parse().unwrap();
    assert!(
        text.contains(&format!(
            "  {first_key}@{} put => {}",
            first.sequence,
            value(i)
        )),
        "{text}"
    );
    assert!(text.contains("verify: ok"), "{text}");
}

#[test]
fn check_passes_then_names_the_table_a_flipped_byte_damaged() {
    let (_tmp, dir) = fresh_db();
    let db = dir.to_str().unwrap();
    let out = siftdb(&["check", db]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("check passed"), "{text}");
    assert!(text.contains("keys checked against the filters"), "{text}");
    assert!(text.contains("ok   manifest"), "{text}");
    let victim = deep_table(&dir);
    flip_data_byte(&victim);
    let out = siftdb(&["check", db]);
    assert!(
        !out.status.success(),
        "a flipped byte passed the check:\n{}",
        stdout(&out)
    );
    let name = victim.to_str().unwrap();
    assert!(
        stdout(&out).contains(&format!("FAIL table    {name}")),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("checksum mismatch"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains(name),
        "stderr does not name the file: {}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

#[test]
fn get_and_scan_print_the_keys_and_values() {
    let (_tmp, dir) = fresh_db();
    let db = dir.to_str().unwrap();
    let out = siftdb(&["get", db, &key(1234)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{}\n", value(1234)));
    let out = siftdb(&["get", db, "user:00007", "--keyspace", "users"]);
    assert_eq!(stdout(&out), "name 7\n", "{}", stderr(&out));
    let out = siftdb(&["get", db, "absent"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not found"), "{}", stderr(&out));

    let out = siftdb(&["scan", db, "--from", &key(10), "--to", &key(13)]);
    let want: String = (10..13)
        .map(|i| format!("{} => {}\n", key(i), value(i)))
        .collect();
    assert_eq!(stdout(&out), want, "{}", stderr(&out));
    let out = siftdb(&[
        "--keyspace",
        "users",
        "scan",
        db,
        "--prefix",
        "user:0012",
        "--limit",
        "3",
    ]);
    let want: String = (120..123)
        .map(|i| format!("{} => name {i}\n", user_key(i)))
        .collect();
    assert_eq!(stdout(&out), want, "{}", stderr(&out));
    let out = siftdb(&["scan", db, "--keyspace", "events", "--hex"]);
    let want = format!("6531 => {}\n6532 => {}\n", hex(b"login"), hex(b"logout"));
    assert_eq!(stdout(&out), want, "{}", stderr(&out));
}

/// Bytes given as hex (with or without `0x`) are those bytes; printed as text, bytes that are
/// not printable are escaped (`\x00`); bad hex is refused before anything is written.
#[test]
fn hex_arguments_and_escaped_text_are_the_bytes_they_stand_for() {
    let (_tmp, dir) = fresh_db();
    let db = dir.to_str().unwrap();
    let events = ["--keyspace", "events"];
    let put = |key: &str, value: &str| {
        let out = siftdb(&[&["--write", "put", db, "--hex", key, value][..], &events].concat());
        assert!(out.status.success(), "{}", stderr(&out));
    };
    put("0x41", "00ff10");
    put("610062", "ff");
    let get = |key: &str, hex: bool| {
        let flag: &[&str] = if hex { &["--hex"] } else { &[] };
        stdout(&siftdb(&[&["get", db, key][..], flag, &events].concat()))
    };
    assert_eq!(get("41", true), "00ff10\n");
    assert_eq!(get("A", false), "\\x00\\xff\\x10\n");
    assert_eq!(get("0x610062", true), "ff\n");
    let out = siftdb(&[&["scan", db][..], &events].concat());
    assert!(
        stdout(&out).contains("a\\x00b => \\xff\n"),
        "{}",
        stdout(&out)
    );
    for bad in ["abc", "zz"] {
        let out = siftdb(&[&["--write", "put", db, "--hex", bad, "00"][..], &events].concat());
        assert!(!out.status.success(), "hex {bad:?} was taken");
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn put_needs_write_and_then_lands() {
    let (_tmp, dir) = fresh_db();
    let db = dir.to_str().unwrap();
    let before = std::fs::read_dir(&dir).unwrap().count();
    let out = siftdb(&["put", db, "new-key", "new-value"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--write"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        before,
        "a refused put wrote files"
    );
    assert!(!siftdb(&["get", db, "new-key"]).status.success());

    let out = siftdb(&["--write", "put", db, "new-key", "new-value"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&siftdb(&["get", db, "new-key"])), "new-value\n");
    let out = siftdb(&[
        "put",
        db,
        "--write",
        "--hex",
        "00ff",
        "cafe",
        "--keyspace",
        "events",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&siftdb(&[
            "get",
            db,
            "00ff",
            "--hex",
            "--keyspace",
            "events"
        ])),
        "cafe\n"
    );

    assert!(!siftdb(&["delete", db, "new-key"]).status.success());
    assert!(siftdb(&["delete", db, "new-key", "--write"])
        .status
        .success());
    assert!(!siftdb(&["get", db, "new-key"]).status.success());
    // The library sees what the tool wrote, and the database still checks clean.
    let reader = siftdb::Db::open_read_only(&dir, options()).unwrap();
    assert_eq!(reader.get("new-key").unwrap(), None);
    assert_eq!(reader.get(key(5)).unwrap(), Some(value(5).into_bytes()));
    assert!(siftdb(&["check", db]).status.success());
}

#[test]
fn compact_and_checkpoint_need_write() {
    let (tmp, dir) = fresh_db();
    let db = dir.to_str().unwrap();
    let copy = tmp.path().join("copy");
    let out = siftdb(&["checkpoint", db, copy.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("read-write"), "{}", stderr(&out));
    assert!(!copy.exists());
    let out = siftdb(&["compact", db]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--write"), "{}", stderr(&out));

    let out = siftdb(&["compact", db, "--write"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("keyspace default: tables per level"),
        "{}",
        stdout(&out)
    );
    // A full compaction leaves "default" in one level.
    let levels = tables(&dir, "default");
    assert_eq!(
        levels.iter().filter(|l| !l.is_empty()).count(),
        1,
        "{levels:?}"
    );
    let out = siftdb(&["--write", "checkpoint", db, copy.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let copy = copy.to_str().unwrap();
    assert_eq!(
        stdout(&siftdb(&["get", copy, &key(77)])),
        format!("{}\n", value(77))
    );
    assert!(siftdb(&["check", copy]).status.success());
}

#[test]
fn manifest_lists_edits_and_the_current_version() {
    let (_tmp, dir) = fresh_db();
    let out = siftdb(&["manifest", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("edit 0 ["), "{text}");
    assert!(text.contains("current version: next file number"), "{text}");
    assert!(text.contains("keyspace users (id"), "{text}");
    // Each live table was added, last, to the level it is in.
    for (level, files) in tables(&dir, "default").iter().enumerate() {
        for table in files {
            let name = table.file_name().unwrap().to_str().unwrap();
            let added = format!("  + L{level} {name}  ");
            assert!(text.contains(&added), "{added}:\n{text}");
        }
    }
}

#[test]
fn a_directory_that_is_not_a_database_is_refused_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "hello").unwrap();
    let foreign = tmp.path().to_str().unwrap();
    let missing = tmp.path().join("nothing-here");
    let missing = missing.to_str().unwrap();
    let file = tmp.path().join("notes.txt");
    let file = file.to_str().unwrap();
    let runs: [&[&str]; 8] = [
        &["levels", foreign],
        &["get", foreign, "k"],
        &["--write", "put", foreign, "k", "v"],
        &["scan", missing],
        &["check", foreign],
        &["manifest", missing],
        &["dump-table", file],
        &["dump-table", foreign],
    ];
    for args in runs {
        let out = siftdb(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.starts_with("siftdb: "), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("{"),
            "{args:?}: {err}"
        );
    }
    assert!(
        !tmp.path().join("CURRENT").exists(),
        "a refused command made a database"
    );
    assert!(!tmp.path().join("nothing-here").exists());
    assert_eq!(siftdb(&["frobnicate"]).status.code(), Some(2));
}
