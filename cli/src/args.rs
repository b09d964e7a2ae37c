//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Inspect, check and edit siftdb databases and table files.
///
/// Databases are opened read-only (no lock taken, nothing written) unless --write is given;
/// put, delete, compact and checkpoint need --write.
#[derive(Debug, Parser)]
#[command(name = "siftdb", version, about, long_about = None)]
pub(crate) struct Cli {
    /// Open the database read-write (takes its lock): needed by put, delete, compact and
    /// checkpoint.
    #[arg(long, global = true)]
    pub write: bool,
    /// The keyspace to read or write (get, put, delete, scan; levels and compact: only this
    /// one).
    #[arg(long, global = true, value_name = "NAME")]
    pub keyspace: Option<String>,
    /// Keys and values are hex (read from the arguments, printed), not UTF-8 text.
    #[arg(long, global = true)]
    pub hex: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Per keyspace and level: tables, bytes, keys, filter kind and bits per key; each table
    /// with its key range.
    Levels {
        /// The database directory.
        db: PathBuf,
    },
    /// Prints the value of KEY.
    Get {
        /// The database directory.
        db: PathBuf,
        /// The key.
        key: String,
    },
    /// Stores VALUE under KEY (needs --write).
    Put {
        /// The database directory.
        db: PathBuf,
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// Deletes KEY (needs --write).
    Delete {
        /// The database directory.
        db: PathBuf,
        /// The key.
        key: String,
    },
    /// Prints the keys and values of a range, one `key => value` per line.
    Scan {
        /// The database directory.
        db: PathBuf,
        #[command(flatten)]
        range: ScanRange,
    },
    /// A table file: properties, filters, index, and (with --entries) its entries.
    DumpTable {
        /// The table file (`NNNNNN.sst`).
        file: PathBuf,
        #[command(flatten)]
        show: DumpOptions,
    },
    /// The manifest's edits in order, then the version they build.
    Manifest {
        /// The database directory.
        db: PathBuf,
    },
    /// Verifies every checksum of the live files and the tables' filters against their keys;
    /// exits 1 naming each damaged file.
    Check {
        /// The database directory.
        db: PathBuf,
    },
    /// Compacts every key of every keyspace (or --keyspace) into the bottom level (needs
    /// --write).
    Compact {
        /// The database directory.
        db: PathBuf,
    },
    /// Writes a consistent copy of the database into DIR (needs --write).
    Checkpoint {
        /// The database directory.
        db: PathBuf,
        /// Where the checkpoint goes (must not exist, or be empty).
        dir: PathBuf,
    },
}

/// Which keys `scan` prints.
#[derive(Debug, Args)]
pub(crate) struct ScanRange {
    /// The first key (inclusive).
    #[arg(long, value_name = "KEY")]
    pub from: Option<String>,
    /// The end key (exclusive).
    #[arg(long, value_name = "KEY")]
    pub to: Option<String>,
    /// Only keys starting with this.
    #[arg(long, value_name = "PREFIX")]
    pub prefix: Option<String>,
    /// At most this many keys.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
}

/// What `dump-table` shows beyond the properties, filters and index.
#[derive(Debug, Args)]
pub(crate) struct DumpOptions {
    /// List the entries.
    #[arg(long)]
    pub entries: bool,
    /// At most this many entries (with --entries).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub limit: usize,
    /// Leave out the index (one line per data block).
    #[arg(long)]
    pub no_index: bool,
    /// Also verify every block checksum and the filters against the keys.
    #[arg(long)]
    pub verify: bool,
}
