//! A small key-value service written against rust-rocksdb's API only: the one line below is
//! all that names siftdb (an application does the same with `package = "siftdb-rocksdb"` in its
//! Cargo.toml and keeps `use rocksdb::...`).
//!
//! It keeps users and their sessions in two column families, writes each sign-up as one
//! atomic batch, answers lookups, lists a user's sessions by key prefix, counts logins with a
//! merge operator, and takes a checkpoint. Run: `cargo run -p siftdb-rocksdb --example kv_service`.

use siftdb_rocksdb as rocksdb;

use rocksdb::checkpoint::Checkpoint;
use rocksdb::{
    ColumnFamilyDescriptor, Direction, IteratorMode, MergeOperands, Options, SliceTransform,
    WriteBatch, DB,
};

/// A little-endian u64 counter.
fn add(_key: &[u8], existing: Option<&[u8]>, operands: &MergeOperands) -> Option<Vec<u8>> {
    let read = |b: &[u8]| b.try_into().ok().map(u64::from_le_bytes);
    let mut total = existing.map_or(Some(0), read)?;
    for op in operands {
        total += read(op)?;
    }
    Some(total.to_le_bytes().to_vec())
}

struct Service {
    db: DB,
}

impl Service {
    fn open(path: &std::path::Path) -> Result<Service, rocksdb::Error> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let mut users = Options::default();
        users.set_merge_operator_associative("add", add);
        let mut sessions = Options::default();
        // Session keys are "<user>/<session>": an 8-byte user id is the prefix.
        sessions.set_prefix_extractor(SliceTransform::create_fixed_prefix(8));
        let cfs = vec![
            ColumnFamilyDescriptor::new("users", users),
            ColumnFamilyDescriptor::new("sessions", sessions),
        ];
        Ok(Service {
            db: DB::open_cf_descriptors(&opts, path, cfs)?,
        })
    }

    fn sign_up(&self, user: &str, name: &str, session: &str) -> Result<(), rocksdb::Error> {
        let users = self.db.cf_handle("users").ok_or_else(|| missing("users"))?;
        let sessions = self
            .db
            .cf_handle("sessions")
            .ok_or_else(|| missing("sessions"))?;
        let mut batch = WriteBatch::default();
        batch.put_cf(&users, format!("{user}/name"), name);
        batch.put_cf(&sessions, format!("{user}/{session}"), b"active");
        self.db.write(batch)
    }

    fn log_in(&self, user: &str, session: &str) -> Result<(), rocksdb::Error> {
        let users = self.db.cf_handle("users").ok_or_else(|| missing("users"))?;
        let sessions = self
            .db
            .cf_handle("sessions")
            .ok_or_else(|| missing("sessions"))?;
        self.db
            .merge_cf(&users, format!("{user}/logins"), 1u64.to_le_bytes())?;
        self.db
            .put_cf(&sessions, format!("{user}/{session}"), b"active")
    }

    fn name(&self, user: &str) -> Result<Option<String>, rocksdb::Error> {
        let users = self.db.cf_handle("users").ok_or_else(|| missing("users"))?;
        let value = self.db.get_cf(&users, format!("{user}/name"))?;
        Ok(value.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    fn logins(&self, user: &str) -> Result<u64, rocksdb::Error> {
        let users = self.db.cf_handle("users").ok_or_else(|| missing("users"))?;
        let value = self.db.get_pinned_cf(&users, format!("{user}/logins"))?;
        Ok(value
            .and_then(|v| (*v).try_into().ok())
            .map_or(0, u64::from_le_bytes))
    }

    fn sessions(&self, user: &str) -> Result<Vec<String>, rocksdb::Error> {
        let sessions = self
            .db
            .cf_handle("sessions")
            .ok_or_else(|| missing("sessions"))?;
        let mut out = Vec::new();
        for item in self.db.prefix_iterator_cf(&sessions, user) {
            let (key, _) = item?;
            out.push(String::from_utf8_lossy(&key[user.len() + 1..]).into_owned());
        }
        Ok(out)
    }

    fn users(&self) -> Result<Vec<String>, rocksdb::Error> {
        let users = self.db.cf_handle("users").ok_or_else(|| missing("users"))?;
        let mut out = Vec::new();
        let mode = IteratorMode::From(b"", Direction::Forward);
        for item in self.db.iterator_cf(&users, mode) {
            let (key, _) = item?;
            if key.ends_with(b"/name") {
                out.push(String::from_utf8_lossy(&key[..key.len() - 5]).into_owned());
            }
        }
        Ok(out)
    }
}

fn missing(cf: &str) -> rocksdb::Error {
    rocksdb::Error::new(format!("Invalid argument: no column family {cf}"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let service = Service::open(&dir.path().join("db"))?;
    service.sign_up("user0001", "ann", "s1")?;
    service.sign_up("user0002", "bob", "s1")?;
    service.log_in("user0001", "s2")?;
    service.log_in("user0001", "s3")?;

    assert_eq!(service.name("user0001")?.as_deref(), Some("ann"));
    assert_eq!(service.name("user9999")?, None);
    assert_eq!(service.logins("user0001")?, 2);
    assert_eq!(service.sessions("user0001")?, ["s1", "s2", "s3"]);
    assert_eq!(service.sessions("user0002")?, ["s1"]);
    assert_eq!(service.users()?, ["user0001", "user0002"]);

    let backup = dir.path().join("checkpoint");
    Checkpoint::new(&service.db)?.create_checkpoint(&backup)?;
    drop(service);
    let copy = Service::open(&backup)?;
    assert_eq!(copy.logins("user0001")?, 2);
    println!(
        "kv_service: {} users, user0001 has {} sessions and {} logins; checkpoint reopened",
        copy.users()?.len(),
        copy.sessions("user0001")?.len(),
        copy.logins("user0001")?
    );
    Ok(())
}
