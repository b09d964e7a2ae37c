//! `siftdb`: inspect, check and edit siftdb databases and table files from the shell (RocksDB's
//! `ldb` and `sst_dump` in one tool). Read-only unless `--write` is given. See `docs/CLI.md`.

mod args;
mod db_commands;
mod inspect_commands;
mod text;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

/// Why a command failed: the one line printed after `siftdb: `.
#[derive(Debug)]
pub(crate) struct Failure(pub String);

impl From<siftdb::Error> for Failure {
    fn from(e: siftdb::Error) -> Failure {
        Failure(e.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            // The reader went away (`siftdb scan db | head`): not the tool's failure.
            return Failure(String::new());
        }
        Failure(format!("cannot write the output: {e}"))
    }
}

/// What a command returns.
pub(crate) type Outcome = Result<(), Failure>;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = run(&cli, &mut out).and_then(|()| out.flush().map_err(Failure::from));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(message)) if message.is_empty() => ExitCode::SUCCESS,
        Err(Failure(message)) => {
            let _ = out.flush();
            eprintln!("siftdb: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &args::Cli, out: &mut dyn Write) -> Outcome {
    use args::Command as C;
    match &cli.command {
        C::Levels { db } => inspect_commands::levels(cli, db, out),
        C::Get { db, key } => db_commands::get(cli, db, key, out),
        C::Put { db, key, value } => db_commands::put(cli, db, key, value, out),
        C::Delete { db, key } => db_commands::delete(cli, db, key, out),
        C::Scan { db, range } => db_commands::scan(cli, db, range, out),
        C::DumpTable { file, show } => inspect_commands::dump_table(cli, file, show, out),
        C::Manifest { db } => inspect_commands::manifest(cli, db, out),
        C::Check { db } => inspect_commands::check(db, out),
        C::Compact { db } => db_commands::compact(cli, db, out),
        C::Checkpoint { db, dir } => db_commands::checkpoint(cli, db, dir, out),
    }
}
