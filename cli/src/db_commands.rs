//! The commands that open the database: get, put, delete, scan, compact, checkpoint.

use std::io::Write;
use std::ops::Bound;
use std::path::Path;

use siftdb::{Db, Keyspace, WriteOptions};

use crate::args::{Cli, ScanRange};
use crate::text;
use crate::{Failure, Outcome};

/// Opens the database in `dir` with the settings it was created with: read-only, or
/// read-write with `write`. A missing or foreign directory is refused before anything else.
pub(crate) fn open(dir: &Path, write: bool) -> Result<Db, Failure> {
    let db = if write {
        Db::open(dir, siftdb::inspect::open_options(dir)?)?
    } else {
        Db::open_read_only(dir, siftdb::inspect::read_only_options(dir)?)?
    };
    Ok(db)
}

/// Refuses a command that changes the database unless `--write` was given; `what` says why
/// it needs it.
fn require_write(cli: &Cli, what: &str) -> Outcome {
    if cli.write {
        return Ok(());
    }
    Err(Failure(format!(
        "{what}: pass --write to open the database read-write (it is opened read-only by default)"
    )))
}

/// The keyspace `--keyspace` names ("default" without it); never creates one.
pub(crate) fn keyspace(db: &Db, cli: &Cli) -> Result<Keyspace, Failure> {
    let name = cli.keyspace.as_deref().unwrap_or(siftdb::DEFAULT_KEYSPACE);
    if !db.keyspace_names().iter().any(|n| n == name) {
        return Err(Failure(format!(
            "keyspace {name:?} does not exist (keyspaces: {})",
            db.keyspace_names().join(", ")
        )));
    }
    Ok(db.keyspace(name)?)
}

/// `get`: the value, or a failure when the key is absent.
pub(crate) fn get(cli: &Cli, dir: &Path, key: &str, out: &mut dyn Write) -> Outcome {
    let key_bytes = text::parse(key, cli.hex, "key")?;
    let db = open(dir, cli.write)?;
    let ks = keyspace(&db, cli)?;
    match ks.get(&key_bytes)? {
        Some(value) => Ok(writeln!(out, "{}", text::show(&value, cli.hex))?),
        None => Err(Failure(format!(
            "key {key:?} not found in keyspace {:?}",
            ks.name()
        ))),
    }
}

const SYNCED: WriteOptions = WriteOptions { sync: true };

/// `put` (with `--write`): a synced write.
pub(crate) fn put(cli: &Cli, dir: &Path, key: &str, value: &str, out: &mut dyn Write) -> Outcome {
    require_write(cli, "put writes to the database")?;
    let key = text::parse(key, cli.hex, "key")?;
    let value = text::parse(value, cli.hex, "value")?;
    let db = open(dir, true)?;
    keyspace(&db, cli)?.put_opt(&key, &value, &SYNCED)?;
    db.close()?;
    Ok(writeln!(out, "OK")?)
}

/// `delete` (with `--write`): a synced tombstone.
pub(crate) fn delete(cli: &Cli, dir: &Path, key: &str, out: &mut dyn Write) -> Outcome {
    require_write(cli, "delete writes to the database")?;
    let key = text::parse(key, cli.hex, "key")?;
    let db = open(dir, true)?;
    keyspace(&db, cli)?.delete_opt(&key, &SYNCED)?;
    db.close()?;
    Ok(writeln!(out, "OK")?)
}

/// `scan`: `key => value` lines of the range, the prefix and the limit.
pub(crate) fn scan(cli: &Cli, dir: &Path, range: &ScanRange, out: &mut dyn Write) -> Outcome {
    let parse = |arg: &Option<String>, what| {
        arg.as_deref()
            .map(|a| text::parse(a, cli.hex, what))
            .transpose()
    };
    let (from, to, prefix) = (
        parse(&range.from, "--from")?,
        parse(&range.to, "--to")?,
        parse(&range.prefix, "--prefix")?,
    );
    let db = open(dir, cli.write)?;
    let ks = keyspace(&db, cli)?;
    let mut lower = from.map_or(Bound::Unbounded, Bound::Included);
    let mut upper = to.map_or(Bound::Unbounded, Bound::Excluded);
    if let Some(p) = &prefix {
        lower = max_lower(lower, p.clone());
        if let Some(end) = prefix_end(p) {
            upper = min_upper(upper, end);
        }
    }
    let limit = range.limit.unwrap_or(usize::MAX);
    let prefix = prefix.unwrap_or_default();
    for (printed, entry) in ks.range((lower, upper)).enumerate() {
        let (key, value) = entry?;
        // The lower bound is at or past the prefix: the first key without it is past them all.
        if printed >= limit || !key.starts_with(&prefix) {
            break;
        }
        writeln!(
            out,
            "{} => {}",
            text::show(&key, cli.hex),
            text::show(&value, cli.hex)
        )?;
    }
    Ok(())
}

/// The first key after every key that starts with `prefix` (`None`: there is none).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// The tighter of an inclusive lower bound and `key`.
fn max_lower(bound: Bound<Vec<u8>>, key: Vec<u8>) -> Bound<Vec<u8>> {
    match bound {
        Bound::Included(k) if k >= key => Bound::Included(k),
        _ => Bound::Included(key),
    }
}

/// The tighter of an exclusive upper bound and `key`.
fn min_upper(bound: Bound<Vec<u8>>, key: Vec<u8>) -> Bound<Vec<u8>> {
    match bound {
        Bound::Excluded(k) if k <= key => Bound::Excluded(k),
        _ => Bound::Excluded(key),
    }
}

/// `compact` (with `--write`): a full manual compaction of each keyspace (or the one named),
/// with the files per level before and after.
pub(crate) fn compact(cli: &Cli, dir: &Path, out: &mut dyn Write) -> Outcome {
    require_write(cli, "compact rewrites tables")?;
    let db = open(dir, true)?;
    let names = match &cli.keyspace {
        Some(_) => vec![keyspace(&db, cli)?.name().to_string()],
        None => db.keyspace_names(),
    };
    for name in names {
        let ks = db.keyspace(&name)?;
        let before = shape(&ks);
        ks.compact_range(None, None)?;
        writeln!(
            out,
            "keyspace {name}: tables per level {before} -> {}",
            shape(&ks)
        )?;
    }
    db.close()?;
    Ok(())
}

/// Tables per level, `[L0, L1, ...]` up to the deepest level that holds one.
fn shape(ks: &Keyspace) -> String {
    let mut files: Vec<usize> = ks.level_info().iter().map(|l| l.files).collect();
    while files.len() > 1 && files.last() == Some(&0) {
        files.pop();
    }
    format!("{files:?}")
}

/// `checkpoint` (with `--write`): a consistent copy in `target`.
pub(crate) fn checkpoint(cli: &Cli, dir: &Path, target: &Path, out: &mut dyn Write) -> Outcome {
    require_write(
        cli,
        "checkpoint works on a read-write open only (a read-only open cannot take one)",
    )?;
    let db = open(dir, true)?;
    db.checkpoint(target)?;
    db.close()?;
    Ok(writeln!(out, "checkpoint written to {}", target.display())?)
}
