//! Judging what a read returned against the states a key may hold, and the full verification
//! pass over every key.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::Ordering::Relaxed;

use siftdb::Keyspace;

use crate::expected::{id_of, is_present, Allowed, Expected, DELETED};
use crate::stats::Stats;
use crate::values::{decode_id, describe, key_name, parse_key, value_matches, COUNTERS, KEYSPACES};

/// The state `got` shows for `key` of keyspace `ks` if it is a well-formed version of the key
/// (`Some(0)` for absent), else `None`.
pub fn recognise(ks: usize, key: u32, max: usize, got: Option<&[u8]>) -> Option<u64> {
    match got {
        None => Some(0),
        Some(v) if ks == COUNTERS => {
            let sum = u64::from_le_bytes(v.try_into().ok()?);
            (sum != 0 && sum & DELETED == 0).then_some(sum)
        }
        Some(v) => decode_id(ks, key, max, v),
    }
}

/// Whether `got` is what `state` reads as.
fn shows(ks: usize, key: u32, max: usize, state: u64, got: Option<&[u8]>) -> bool {
    match (is_present(state), got) {
        (false, None) => true,
        (true, Some(v)) if ks == COUNTERS => v == state.to_le_bytes(),
        (true, Some(v)) => value_matches(ks, key, state, max, v),
        _ => false,
    }
}

/// Whether `got` is one of the states `allowed`.
pub fn accepts(ks: usize, key: u32, max: usize, allowed: &Allowed, got: Option<&[u8]>) -> bool {
    if allowed.states.iter().any(|&s| shows(ks, key, max, s, got)) {
        return true;
    }
    allowed.any && recognise(ks, key, max, got).is_some()
}

/// A state for a report.
pub fn describe_state(ks: usize, key: u32, max: usize, state: u64) -> String {
    if state == 0 {
        "absent (never written)".to_string()
    } else if !is_present(state) {
        format!("absent (deleted by write {})", id_of(state))
    } else if ks == COUNTERS {
        format!("counter {state}")
    } else {
        let v = crate::values::encode(ks, key, state, max);
        format!("value id {state} ({})", describe(&v))
    }
}

/// The allowed states for a report.
pub fn describe_allowed(ks: usize, key: u32, max: usize, allowed: &Allowed) -> String {
    let mut parts: Vec<String> = allowed
        .states
        .iter()
        .map(|&s| describe_state(ks, key, max, s))
        .collect();
    if allowed.any {
        parts.push("any version of the key".to_string());
    }
    parts.join(" | ")
}

/// What a read returned, for a report.
pub fn describe_got(ks: usize, key: u32, max: usize, got: Option<&[u8]>) -> String {
    match got {
        None => "absent".to_string(),
        Some(v) => match recognise(ks, key, max, Some(v)) {
            Some(s) => describe_state(ks, key, max, s),
            None => format!("unrecognised bytes [{}]", describe(v)),
        },
    }
}

/// Checks reads against an expected state and reports what disagrees.
#[derive(Clone, Copy)]
pub struct Checker<'a> {
    /// The expected state.
    pub exp: &'a Expected,
    /// Where mismatches are counted and reported.
    pub stats: &'a Stats,
    /// Errors are expected (`--faults`): counted, not reported.
    pub faults: bool,
}

impl Checker<'_> {
    /// Compares a read of `key` with `allowed`.
    pub fn value(&self, op: &str, ks: usize, key: u32, allowed: &Allowed, got: Option<&[u8]>) {
        self.stats.verifications.fetch_add(1, Relaxed);
        let max = self.exp.max_value();
        if !accepts(ks, key, max, allowed, got) {
            self.stats.mismatch(
                op,
                KEYSPACES[ks],
                &String::from_utf8_lossy(&key_name(key)),
                &describe_allowed(ks, key, max, allowed),
                &describe_got(ks, key, max, got),
            );
        }
    }

    /// Compares a read of `key` with its expected state now (the caller holds its lock).
    pub fn read<V: AsRef<[u8]>>(
        &self,
        op: &str,
        ks: usize,
        key: u32,
        got: siftdb::Result<Option<V>>,
    ) {
        match got {
            Ok(v) => self.value(
                op,
                ks,
                key,
                &self.exp.allowed(ks, key),
                v.as_ref().map(AsRef::as_ref),
            ),
            Err(e) => self.error(
                op,
                KEYSPACES[ks],
                &String::from_utf8_lossy(&key_name(key)),
                &e,
            ),
        }
    }

    /// A read failed: an I/O error is counted under `--faults`; anything else is a mismatch.
    pub fn error(&self, op: &str, ks: &str, key: &str, e: &siftdb::Error) {
        if self.faults && crate::ops::is_fault(e) {
            self.stats.read_errors.fetch_add(1, Relaxed);
        } else {
            self.stats
                .mismatch(op, ks, key, "success", &format!("error: {e}"));
        }
    }

    /// Compares a scan's entries (in the order it returned them, ascending) with the keys
    /// `start..end` whose names lie in `bounds`: order, no stray key, every key as allowed
    /// (`allowed(key)`).
    pub fn scan(
        &self,
        op: &str,
        ks: usize,
        (start, end): (u32, u32),
        bounds: &(Bound<Vec<u8>>, Bound<Vec<u8>>),
        entries: &[(Vec<u8>, Vec<u8>)],
        allowed: &dyn Fn(u32) -> Allowed,
    ) {
        let range = format!(
            "{}..{}",
            String::from_utf8_lossy(&key_name(start)),
            String::from_utf8_lossy(&key_name(end))
        );
        if let Some(w) = entries.windows(2).find(|w| w[0].0 >= w[1].0) {
            let what = format!(
                "keys out of order: {:?} then {:?}",
                w[0].0.escape_ascii().to_string(),
                w[1].0.escape_ascii().to_string()
            );
            return self
                .stats
                .mismatch(op, KEYSPACES[ks], &range, "ascending keys", &what);
        }
        let mut got = BTreeMap::new();
        for (k, v) in entries {
            match parse_key(k).filter(|&i| i >= start && i < end && in_bounds(k, bounds)) {
                Some(i) => {
                    got.insert(i, v.as_slice());
                }
                None => {
                    let what = format!("stray key \"{}\"", k.escape_ascii());
                    return self.stats.mismatch(
                        op,
                        KEYSPACES[ks],
                        &range,
                        "keys within the bounds",
                        &what,
                    );
                }
            }
        }
        for key in (start..end).filter(|&i| in_bounds(&key_name(i), bounds)) {
            self.value(op, ks, key, &allowed(key), got.get(&key).copied());
        }
    }
}

/// Whether `key` lies in `bounds`.
pub fn in_bounds(key: &[u8], (lo, hi): &(Bound<Vec<u8>>, Bound<Vec<u8>>)) -> bool {
    let above = match lo {
        Bound::Included(b) => key >= b.as_slice(),
        Bound::Excluded(b) => key > b.as_slice(),
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(b) => key <= b.as_slice(),
        Bound::Excluded(b) => key < b.as_slice(),
        Bound::Unbounded => true,
    };
    above && below
}

/// Every key of every keyspace read with `get`, then every keyspace scanned whole: all against
/// the expected state (no thread may be writing). Returns the keys compared.
pub fn full_pass(checker: &Checker, handles: &[Keyspace], what: &str) -> u64 {
    let keys = checker.exp.keys();
    let mut checked = 0;
    for (ks, handle) in handles.iter().enumerate().take(KEYSPACES.len()) {
        for key in 0..keys {
            checker.read(what, ks, key, handle.get(key_name(key)));
            checked += 1;
        }
        let entries: siftdb::Result<Vec<(Vec<u8>, Vec<u8>)>> = handle.iter().collect();
        match entries {
            Ok(entries) => {
                let all = (Bound::Unbounded, Bound::Unbounded);
                let allowed = |key| checker.exp.allowed(ks, key);
                checker.scan(
                    &format!("{what} (scan)"),
                    ks,
                    (0, keys),
                    &all,
                    &entries,
                    &allowed,
                );
            }
            Err(e) => checker.error(what, KEYSPACES[ks], "(scan)", &e),
        }
    }
    checked
}
