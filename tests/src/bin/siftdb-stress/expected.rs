//! The expected state: per key, the state last acknowledged (committed) and the state of a write
//! in flight (pending), mirrored into a file that a killed process leaves behind.
//!
//! A state is one `u64`: 0 for a key never written; `DELETED | id` for a key deleted by write
//! `id`; otherwise the value id (value keyspaces) or the counter's sum (counters). Value and
//! deletion ids come from one counter, so they grow with time across keys. The pending word is
//! `PENDING_NONE`, a state, or `PENDING_ANY` (any version of the key may show: a
//! `delete_files_in_range` whose `delete_range` is not acknowledged yet).
//!
//! Updates are made under the key's lock: `begin` (pending = new), the database write, then
//! `finish` (committed = new, pending cleared). Every update is also written with `pwrite` into
//! the file: the page cache keeps it when the process is SIGKILLed, so a crash test's driver
//! reads what each key may hold. A write whose outcome is unknown (it returned an error, under
//! `--faults`) leaves its state among the key's `extras` until a later write succeeds.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;

use crate::values::{COUNTERS, KEYSPACES};

/// No write in flight.
pub const PENDING_NONE: u64 = u64::MAX;
/// Any version of the key may be there.
pub const PENDING_ANY: u64 = u64::MAX - 1;
/// The flag of a deletion's state.
pub const DELETED: u64 = 1 << 63;

const MAGIC: &[u8; 8] = b"SIFTEXP1";
const HEADER: u64 = 64;

/// Whether `state` holds a value.
pub fn is_present(state: u64) -> bool {
    state != 0 && state & DELETED == 0
}

/// The write id of a state (a deletion's or a value's).
pub fn id_of(state: u64) -> u64 {
    state & !DELETED
}

/// The states a key may read as.
#[derive(Debug, Clone, Default)]
pub struct Allowed {
    /// Each a state.
    pub states: Vec<u64>,
    /// Any version of the key may show (or none).
    pub any: bool,
}

impl Allowed {
    /// Exactly `state`.
    pub fn exactly(state: u64) -> Allowed {
        Allowed {
            states: vec![state],
            any: false,
        }
    }

    /// Whether the key is present for certain (`Some(true)`), absent for certain
    /// (`Some(false)`), or either (`None`).
    pub fn presence(&self) -> Option<bool> {
        if self.any {
            return None;
        }
        let present = self.states.iter().filter(|&&s| is_present(s)).count();
        match present {
            0 => Some(false),
            n if n == self.states.len() => Some(true),
            _ => None,
        }
    }
}

/// The expected state of every key of every keyspace.
pub struct Expected {
    keys: u32,
    max_value: usize,
    committed: Vec<AtomicU64>,
    pending: Vec<AtomicU64>,
    file: Option<File>,
    next_id: AtomicU64,
    extras: Mutex<HashMap<usize, Vec<u64>>>,
}

impl Expected {
    /// A fresh state kept in memory only.
    pub fn in_memory(keys: u32, max_value: usize) -> Expected {
        let n = KEYSPACES.len() * keys as usize;
        Expected {
            keys,
            max_value,
            committed: (0..n).map(|_| AtomicU64::new(0)).collect(),
            pending: (0..n).map(|_| AtomicU64::new(PENDING_NONE)).collect(),
            file: None,
            next_id: AtomicU64::new(1),
            extras: Mutex::new(HashMap::new()),
        }
    }

    /// A fresh state mirrored into a new file at `path`.
    pub fn create(path: &Path, keys: u32, max_value: usize) -> io::Result<Expected> {
        let mut exp = Expected::in_memory(keys, max_value);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        let mut header = [0u8; HEADER as usize];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&keys.to_le_bytes());
        header[12..20].copy_from_slice(&(max_value as u64).to_le_bytes());
        file.write_all_at(&header, 0)?;
        let mut slots = Vec::with_capacity(exp.committed.len() * 16);
        for _ in 0..exp.committed.len() {
            slots.extend_from_slice(&0u64.to_le_bytes());
            slots.extend_from_slice(&PENDING_NONE.to_le_bytes());
        }
        file.write_all_at(&slots, HEADER)?;
        exp.file = Some(file);
        Ok(exp)
    }

    /// The state a file written by `create` (and updated since) holds.
    pub fn load(path: &Path) -> io::Result<Expected> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let mut header = [0u8; HEADER as usize];
        file.read_exact_at(&mut header, 0)?;
        if &header[..8] != MAGIC {
            return Err(io::Error::other(format!(
                "{} is not an expected-state file",
                path.display()
            )));
        }
        let keys = u32::from_le_bytes(header[8..12].try_into().unwrap());
        let max_value = u64::from_le_bytes(header[12..20].try_into().unwrap()) as usize;
        let mut exp = Expected::in_memory(keys, max_value);
        let mut slots = vec![0u8; exp.committed.len() * 16];
        file.read_exact_at(&mut slots, HEADER)?;
        let mut next = 1;
        for (i, slot) in slots.chunks_exact(16).enumerate() {
            let c = u64::from_le_bytes(slot[..8].try_into().unwrap());
            let p = u64::from_le_bytes(slot[8..].try_into().unwrap());
            exp.committed[i].store(c, SeqCst);
            exp.pending[i].store(p, SeqCst);
            if i / keys as usize != COUNTERS {
                for s in [c, p] {
                    if s != PENDING_NONE && s != PENDING_ANY {
                        next = next.max(id_of(s) + 1);
                    }
                }
            }
        }
        exp.next_id.store(next, SeqCst);
        exp.file = Some(file);
        Ok(exp)
    }

    /// Keys per keyspace.
    pub fn keys(&self) -> u32 {
        self.keys
    }

    /// The largest value of the run.
    pub fn max_value(&self) -> usize {
        self.max_value
    }

    fn slot(&self, ks: usize, key: u32) -> usize {
        ks * self.keys as usize + key as usize
    }

    fn store(&self, slot: usize, pending: bool, value: u64) {
        let words = if pending {
            &self.pending
        } else {
            &self.committed
        };
        words[slot].store(value, SeqCst);
        if let Some(file) = &self.file {
            let at = HEADER + slot as u64 * 16 + if pending { 8 } else { 0 };
            file.write_all_at(&value.to_le_bytes(), at)
                .unwrap_or_else(|e| panic!("cannot write the expected state: {e}"));
        }
    }

    /// A new write id, above every id given before.
    pub fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, SeqCst)
    }

    /// Every id given so far is below this.
    pub fn id_limit(&self) -> u64 {
        self.next_id.load(SeqCst)
    }

    /// The committed state of a key.
    pub fn committed(&self, ks: usize, key: u32) -> u64 {
        self.committed[self.slot(ks, key)].load(SeqCst)
    }

    /// The pending word of a key.
    pub fn pending(&self, ks: usize, key: u32) -> u64 {
        self.pending[self.slot(ks, key)].load(SeqCst)
    }

    /// Whether the key's state is known exactly (nothing pending, no unknown outcome).
    pub fn is_certain(&self, ks: usize, key: u32) -> bool {
        let slot = self.slot(ks, key);
        self.pending[slot].load(SeqCst) == PENDING_NONE && !self.lock_extras().contains_key(&slot)
    }

    /// The states the key may read as now.
    pub fn allowed(&self, ks: usize, key: u32) -> Allowed {
        let slot = self.slot(ks, key);
        let mut allowed = Allowed::exactly(self.committed[slot].load(SeqCst));
        let mut add = |s: u64| match s {
            PENDING_NONE => {}
            PENDING_ANY => allowed.any = true,
            s => allowed.states.push(s),
        };
        add(self.pending[slot].load(SeqCst));
        if let Some(extras) = self.lock_extras().get(&slot) {
            extras.iter().for_each(|&s| add(s));
        }
        allowed
    }

    /// A counter's certain sum (0 when absent), or `None` when its state is not certain.
    pub fn counter_base(&self, key: u32) -> Option<u64> {
        let c = self.committed(COUNTERS, key);
        self.is_certain(COUNTERS, key)
            .then_some(if is_present(c) { c } else { 0 })
    }

    /// A write of `state` is about to be issued.
    pub fn begin(&self, ks: usize, key: u32, state: u64) {
        self.store(self.slot(ks, key), true, state);
    }

    /// The write of `state` was acknowledged.
    pub fn finish(&self, ks: usize, key: u32, state: u64) {
        let slot = self.slot(ks, key);
        self.store(slot, false, state);
        self.store(slot, true, PENDING_NONE);
        self.lock_extras().remove(&slot);
    }

    /// The pending write was not made (a transaction's conflict).
    pub fn abandon(&self, ks: usize, key: u32) {
        self.store(self.slot(ks, key), true, PENDING_NONE);
    }

    /// The pending write failed: it may or may not be there.
    pub fn fail(&self, ks: usize, key: u32) {
        let slot = self.slot(ks, key);
        let pending = self.pending[slot].load(SeqCst);
        if pending != PENDING_NONE {
            self.lock_extras().entry(slot).or_default().push(pending);
        }
        self.store(slot, true, PENDING_NONE);
    }

    /// After a crash: the key holds `state` (one of those allowed).
    pub fn settle(&self, ks: usize, key: u32, state: u64) {
        self.finish(ks, key, state);
    }

    fn lock_extras(&self) -> std::sync::MutexGuard<'_, HashMap<usize, Vec<u64>>> {
        self.extras
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
