//! A node's configuration file: what it names overrides the defaults; unknown keys and timings
//! openraft would refuse are refused.

use siftdb_server::{read_config_file, RaftSettings};

#[test]
fn a_config_file_overrides_the_defaults_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("node.toml");
    std::fs::write(
        &path,
        "[raft]\nheartbeat_interval_ms = 50\nsnapshot_every = 7\n",
    )
    .unwrap();
    let settings = read_config_file(&path).unwrap();
    assert_eq!(settings.heartbeat_interval_ms, 50);
    assert_eq!(settings.snapshot_every, 7);
    assert_eq!(settings.keep_logs, RaftSettings::default().keep_logs);
    assert!(settings.openraft_config().is_ok());
}

#[test]
fn unknown_keys_and_bad_timings_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("node.toml");
    std::fs::write(&path, "[raft]\nheartbeat_ms = 50\n").unwrap();
    assert!(read_config_file(&path).is_err());
    let bad = RaftSettings {
        election_timeout_min_ms: 10,
        heartbeat_interval_ms: 100,
        ..RaftSettings::default()
    };
    assert!(bad.openraft_config().is_err());
}
