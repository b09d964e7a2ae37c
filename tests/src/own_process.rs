//! Tests that need a process of their own — they count the process's threads, open files or
//! heap — inside the one test binary: the test runs this binary again with `--exact` for
//! itself alone, and the child process does the work.

use std::process::Command;

/// Set in the child process: the test it runs.
const CHILD_ENV: &str = "SIFTDB_TEST_OWN_PROCESS";

/// The libtest name of test `name` in module `module` (`module_path!()`: the crate's name,
/// then the module path; libtest names tests without the crate).
pub fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_crate, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    }
}

/// Whether this process is the child [`run_alone`] started for the test `module::name`.
pub fn is_child(module: &str, name: &str) -> bool {
    std::env::var(CHILD_ENV).is_ok_and(|t| t == test_name(module, name))
}

/// Runs `body` in a process of its own: in the child started for test `name` of `module`
/// (pass `module_path!()` and the test function's name), `body` runs here; in the parent, the
/// test binary is run again for that test alone, and its failure is this test's (its output
/// shown).
pub fn run_alone(module: &str, name: &str, body: impl FnOnce()) {
    if is_child(module, name) {
        return body();
    }
    let test = test_name(module, name);
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("the test binary's path: {e}"));
    let output = Command::new(exe)
        .args(["--exact", &test, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &test)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the test binary for {test}: {e}"));
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!("{test} in its own process:\n{shown}");
    assert!(output.status.success(), "{test} failed in its own process");
    assert!(
        shown.contains("1 passed"),
        "{test}: the child ran no test (is the name right?)"
    );
}
