//! siftdb-cli's integration tests, one binary: every command run as a user runs it, against a
//! real database (`common`), and the inspection reports.

mod cli_commands;
mod common;
mod inspect_reports;
