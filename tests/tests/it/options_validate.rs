//! Settings that cannot work are refused by `Db::open` with an `InvalidArgument` naming the
//! field, before anything is written (issue 11: no silent clamps).

use siftdb::{Db, Error, Options};

fn refused(field: &str, change: impl FnOnce(&mut Options)) {
    let dir = siftdb_tests::temp_dir();
    let path = dir.path().join("db");
    let mut options = Options::default();
    change(&mut options);
    match Db::open(&path, options) {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains(field), "{field}: {msg}"),
        other => panic!("{field}: expected InvalidArgument, got {other:?}"),
    }
    assert!(
        !path.exists(),
        "{field}: a refused open created the database"
    );
}

#[test]
fn settings_that_cannot_work_are_refused_by_name() {
    refused("write_buffer_size", |o| o.write_buffer_size = 0);
    refused("max_write_buffer_number", |o| o.max_write_buffer_number = 0);
    refused("max_write_buffer_number", |o| o.max_write_buffer_number = 1);
    refused("level0_file_num_compaction_trigger", |o| {
        o.level0_file_num_compaction_trigger = 0
    });
    refused("level0_stop_writes_trigger", |o| {
        o.level0_file_num_compaction_trigger = 8;
        o.level0_stop_writes_trigger = 4;
    });
    refused("max_background_jobs", |o| o.max_background_jobs = 0);
    refused("target_file_size_base", |o| o.target_file_size_base = 0);
    refused("max_bytes_for_level_base", |o| {
        o.max_bytes_for_level_base = 0
    });
    refused("max_bytes_for_level_multiplier", |o| {
        o.max_bytes_for_level_multiplier = 1.0
    });
    refused("max_bytes_for_level_multiplier", |o| {
        o.max_bytes_for_level_multiplier = f64::NAN
    });
    refused("block_size", |o| o.block_size = 0);
    refused("block_restart_interval", |o| o.block_restart_interval = 0);
    refused("filter_bits_per_key", |o| o.filter_bits_per_key = -1.0);
    refused("filter_bits_per_key", |o| o.filter_bits_per_key = f64::NAN);
    refused("filter_bits_per_key", |o| {
        o.filter_bits_per_key = f64::INFINITY
    });
    refused("filter_bits_per_key", |o| {
        o.filter_bits_per_key = siftdb::MAX_FILTER_BITS_PER_KEY + 1.0
    });
}

#[test]
fn the_defaults_and_the_smallest_workable_settings_are_accepted() {
    Options::default().validate().unwrap();
    let tight = Options {
        write_buffer_size: 1,
        max_write_buffer_number: 2,
        level0_file_num_compaction_trigger: 1,
        level0_stop_writes_trigger: 1,
        max_background_compactions: 1,
        target_file_size_base: 1,
        max_bytes_for_level_base: 1,
        max_bytes_for_level_multiplier: 1.01,
        block_size: 1,
        block_restart_interval: 1,
        filter_bits_per_key: 0.0,
        ..Options::default()
    };
    tight.validate().unwrap();
    let dir = siftdb_tests::temp_dir();
    let db = Db::open(dir.path(), tight).unwrap();
    for i in 0..200u32 {
        db.put(i.to_be_bytes(), [7u8; 10]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compaction().unwrap();
    for i in 0..200u32 {
        assert_eq!(db.get(i.to_be_bytes()).unwrap(), Some(vec![7u8; 10]));
    }
}
