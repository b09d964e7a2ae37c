//! A linearizability checker for histories of a replicated key-value store: Wing and Gong's
//! search with Lowe's memoization of (linearized set, state), as porcupine does it, run key by
//! key (linearizability is local, Herlihy and Wing: a history is linearizable when each key's
//! part is). The partition tests check every client history with it.
//!
//! An operation whose outcome is unknown (a write that timed out) has no return: it may take
//! effect at any point after its call, or never (taking effect at the end of the history is
//! the same as never, to every read). A read that failed tells nothing; leave it out.
//!
//! ```
//! use siftdb_server::linearizability::{check, Operation, Kind};
//! let put = |v: &str, call, ret| Operation { key: b"k".to_vec(), kind: Kind::Put(v.into()), call, ret: Some(ret) };
//! let get = |v: Option<&str>, call, ret| Operation {
//!     key: b"k".to_vec(), kind: Kind::Get(v.map(|v| v.as_bytes().to_vec())), call, ret: Some(ret),
//! };
//! // A read after a completed write sees it...
//! assert!(check(&[put("a", 0, 1), get(Some("a"), 2, 3)]).is_ok());
//! // ...and a read that returns the value a later write replaced, after that write
//! // completed, is a stale read.
//! assert!(check(&[put("a", 0, 1), put("b", 2, 3), get(Some("a"), 4, 5)]).is_err());
//! ```

use std::collections::{BTreeMap, HashSet};

/// What an operation did to its key, or what it read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// Set the key to this value.
    Put(Vec<u8>),
    /// Removed the key.
    Delete,
    /// Read the key and found this (`None`: absent).
    Get(Option<Vec<u8>>),
}

/// One client operation: when it was called and when it returned, on one clock shared by every
/// client (any unit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// The key it acted on.
    pub key: Vec<u8>,
    /// What it did or read.
    pub kind: Kind,
    /// When the client called it.
    pub call: u64,
    /// When it returned; `None` when its outcome is unknown (a write that timed out).
    pub ret: Option<u64>,
}

/// A key whose operations no order explains.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not linearizable: the {ops} operations on key {key:?} fit no sequential order")]
pub struct Violation {
    /// The key.
    pub key: Vec<u8>,
    /// How many operations it had.
    pub ops: usize,
}

/// Checks that `history` is linearizable for a key-value store that starts empty.
pub fn check(history: &[Operation]) -> Result<(), Violation> {
    let mut by_key: BTreeMap<&[u8], Vec<&Operation>> = BTreeMap::new();
    for op in history {
        // A read without an answer constrains nothing.
        if matches!(op.kind, Kind::Get(_)) && op.ret.is_none() {
            continue;
        }
        by_key.entry(&op.key).or_default().push(op);
    }
    for (key, ops) in by_key {
        if !KeySearch::new(&ops).linearizable() {
            return Err(Violation {
                key: key.to_vec(),
                ops: ops.len(),
            });
        }
    }
    Ok(())
}

/// The state of one key: its value, or absent.
type State = Option<Vec<u8>>;

/// Applies `kind` to `state`: the state after it, or `None` if a read saw something else.
fn step(state: &State, kind: &Kind) -> Option<State> {
    match kind {
        Kind::Put(v) => Some(Some(v.clone())),
        Kind::Delete => Some(None),
        Kind::Get(seen) => (seen == state).then(|| state.clone()),
    }
}

/// One key's search: its calls and returns in time order, in a doubly linked list the search
/// lifts operations out of as it linearizes them (and puts back as it backtracks).
struct KeySearch<'a> {
    ops: Vec<&'a Operation>,
    /// Entries in time order: (operation, is its call).
    entries: Vec<(usize, bool)>,
    /// The return entry of each operation's call entry.
    return_of: Vec<usize>,
    /// Links; index `entries.len()` is the head sentinel.
    next: Vec<usize>,
    prev: Vec<usize>,
}

impl<'a> KeySearch<'a> {
    fn new(ops: &[&'a Operation]) -> KeySearch<'a> {
        let mut events: Vec<(u64, u8, usize)> = Vec::with_capacity(ops.len() * 2);
        for (i, op) in ops.iter().enumerate() {
            // At equal times calls come first: the operations then overlap, which only ever
            // allows more orders (no false alarm from a coarse clock).
            events.push((op.call, 0, i));
            events.push((op.ret.unwrap_or(u64::MAX), 1, i));
        }
        events.sort_unstable();
        let entries: Vec<(usize, bool)> = events.iter().map(|&(_, r, i)| (i, r == 0)).collect();
        let n = entries.len();
        let mut return_of = vec![0; n];
        let mut ret_entry = vec![0; ops.len()];
        for (e, &(op, is_call)) in entries.iter().enumerate() {
            if !is_call {
                ret_entry[op] = e;
            }
        }
        for (e, &(op, is_call)) in entries.iter().enumerate() {
            if is_call {
                return_of[e] = ret_entry[op];
            }
        }
        // A circular list through the sentinel `n`.
        let next = (0..=n).map(|i| (i + 1) % (n + 1)).collect();
        let prev = (0..=n).map(|i| (i + n) % (n + 1)).collect();
        KeySearch {
            ops: ops.to_vec(),
            entries,
            return_of,
            next,
            prev,
        }
    }

    fn head(&self) -> usize {
        self.entries.len()
    }

    fn unlink(&mut self, e: usize) {
        let (p, n) = (self.prev[e], self.next[e]);
        self.next[p] = n;
        self.prev[n] = p;
    }

    fn relink(&mut self, e: usize) {
        let (p, n) = (self.prev[e], self.next[e]);
        self.next[p] = e;
        self.prev[n] = e;
    }

    fn linearizable(mut self) -> bool {
        let head = self.head();
        let mut linearized = vec![0u64; self.ops.len().div_ceil(64)];
        let mut seen: HashSet<(Vec<u64>, State)> = HashSet::new();
        let mut stack: Vec<(usize, State)> = Vec::new();
        let mut state: State = None;
        let mut entry = self.next[head];
        while self.next[head] != head {
            if entry == head {
                // Every remaining call was tried here and none fits: back up.
                match self.backtrack(&mut stack, &mut state, &mut linearized) {
                    Some(e) => entry = e,
                    None => return false,
                }
                continue;
            }
            let (op, is_call) = self.entries[entry];
            if !is_call {
                // A return reached while its operation is not linearized: it must come
                // before this point, and no order found so far allows it.
                match self.backtrack(&mut stack, &mut state, &mut linearized) {
                    Some(e) => entry = e,
                    None => return false,
                }
                continue;
            }
            if let Some(after) = step(&state, &self.ops[op].kind) {
                linearized[op / 64] |= 1 << (op % 64);
                if seen.insert((linearized.clone(), after.clone())) {
                    stack.push((entry, std::mem::replace(&mut state, after)));
                    self.unlink(entry);
                    self.unlink(self.return_of[entry]);
                    entry = self.next[head];
                    continue;
                }
                linearized[op / 64] &= !(1 << (op % 64));
            }
            entry = self.next[entry];
        }
        true
    }

    /// Undoes the last linearized operation; the entry to try after its call, or `None` when
    /// nothing is left to undo.
    fn backtrack(
        &mut self,
        stack: &mut Vec<(usize, State)>,
        state: &mut State,
        linearized: &mut [u64],
    ) -> Option<usize> {
        let (call, before) = stack.pop()?;
        let op = self.entries[call].0;
        linearized[op / 64] &= !(1 << (op % 64));
        *state = before;
        self.relink(self.return_of[call]);
        self.relink(call);
        Some(self.next[call])
    }
}
