//! The command line: a bad directory or a taken port is a clear message and a non-zero exit.

use std::process::Command;

fn run(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_siftdb-server"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_data_directory_that_is_a_file_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let (ok, stderr) = run(&[
        "--id",
        "1",
        "--addr",
        &addr,
        "--dir",
        file.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(stderr.contains("data directory"), "{stderr}");
    assert!(stderr.contains("not a directory"), "{stderr}");
}

#[test]
fn a_taken_port_is_refused_before_the_directory_is_touched() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("node");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (ok, stderr) = run(&["--id", "1", "--addr", &addr, "--dir", dir.to_str().unwrap()]);
    assert!(!ok);
    assert!(stderr.contains("cannot listen on"), "{stderr}");
    assert!(!dir.exists());
}

#[test]
fn bad_arguments_and_config_files_are_refused() {
    let (ok, stderr) = run(&["--id", "one"]);
    assert!(!ok);
    assert!(stderr.contains("--id"), "{stderr}");
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("bad.toml");
    std::fs::write(&config, "[raft]\nheartbeat = 1\n").unwrap();
    let (ok, stderr) = run(&[
        "--id",
        "1",
        "--addr",
        "127.0.0.1:1",
        "--dir",
        root.path().join("d").to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(stderr.contains("configuration"), "{stderr}");
}
