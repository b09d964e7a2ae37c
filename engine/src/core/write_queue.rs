//! The queue of writers (group commit, after LevelDB's `DBImpl::Write`): writers queue up, the
//! first in line becomes the leader and takes every queued batch as its group, commits it, and
//! hands each follower its result. The write path (`paths/write.rs`) does the committing; this
//! is only the queue and who leads.

use std::collections::{HashMap, VecDeque};

use parking_lot::{Condvar, Mutex, MutexGuard};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::base::batch::WriteBatch;
use crate::base::error::{BackgroundError, BackgroundJob, Error, Result};
use crate::core::keyspace_tree::KeyspaceTree;
use crate::core::lock_order::{Held, Rank};

/// Largest group a leader assembles (bytes of encoded batches).
const MAX_GROUP_BYTES: usize = 1 << 20;

/// A queued write.
pub(crate) struct QueuedWrite {
    /// Its place in the queue, by which its writer finds its result.
    pub ticket: u64,
    pub batch: WriteBatch,
    /// Whether the writer asked for a sync.
    pub sync: bool,
    /// What must hold for the batch to commit (an optimistic transaction's validation): the
    /// leader checks it in the group's order, with every earlier group applied.
    pub check: Option<CommitCheck>,
}

/// A batch's condition to commit: none of `keys` written after sequence `snapshot`, by an
/// earlier group (checked against the tree) or by an earlier batch of the same group.
pub(crate) struct CommitCheck {
    pub snapshot: u64,
    /// (tree, key): the keys the transaction wrote or read for update.
    pub keys: Vec<(Arc<KeyspaceTree>, Vec<u8>)>,
}

#[derive(Default)]
struct Queue {
    next_ticket: u64,
    pending: VecDeque<QueuedWrite>,
    /// Results for the followers of finished groups (a failed group's error, duplicated for
    /// each writer with its variant and I/O kind intact).
    done: HashMap<u64, Result<()>>,
    leader_active: bool,
}

/// The queue of writers waiting to commit.
#[derive(Default)]
pub(crate) struct WriteQueue {
    queue: Mutex<Queue>,
    changed: Condvar,
    /// Counts the times the write path was handed back: a waiting writer spins on it briefly
    /// before it parks (`core/spin.rs`).
    handoffs: AtomicU64,
}

/// What a writer that entered the queue does next.
pub(crate) enum Turn<'a> {
    /// Another leader committed the batch: its result.
    Done(Result<()>),
    /// This writer leads: it commits the group, then calls [`WriteQueue::finish`].
    Lead(Leader<'a>),
}

/// The group a leader commits (its own batch among them). While it lives no other group starts;
/// dropped without [`WriteQueue::finish`] (a panic), it hands the write path back and fails the
/// group's writers, so no later writer waits forever.
pub(crate) struct Leader<'a> {
    queue: &'a WriteQueue,
    ticket: u64,
    group: Vec<QueuedWrite>,
    finished: bool,
    /// The write path's place in the lock order.
    _held: Held,
}

impl Leader<'_> {
    /// The writes of the group (a committer may move some of them out, rejected).
    pub(crate) fn group_mut(&mut self) -> &mut Vec<QueuedWrite> {
        &mut self.group
    }
}

impl Drop for Leader<'_> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut queue = self.queue.queue.lock();
        for w in &self.group {
            if w.ticket != self.ticket {
                queue.done.insert(
                    w.ticket,
                    Err(Error::Background(BackgroundError::described(
                        BackgroundJob::WalWrite,
                        "the write leader panicked",
                    ))),
                );
            }
        }
        queue.leader_active = false;
        self.queue.handoffs.fetch_add(1, Ordering::Release);
        self.queue.changed.notify_all();
    }
}

impl WriteQueue {
    /// Queues `batch` (to commit only if `check` holds) and waits until another leader has
    /// committed it, or this writer leads.
    pub(crate) fn enter(
        &self,
        batch: WriteBatch,
        sync: bool,
        check: Option<CommitCheck>,
    ) -> Turn<'_> {
        // A follower waits for the leader as the leader waits for the write path: neither may
        // hold a lock the leader takes (core/lock_order.rs).
        let held = Held::enter(Rank::WritePath);
        let mut queue = self.queue.lock();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.pending.push_back(QueuedWrite {
            ticket,
            batch,
            sync,
            check,
        });
        // Spun already since the last look: then park.
        let mut spun = false;
        loop {
            if let Some(result) = queue.done.remove(&ticket) {
                return Turn::Done(result);
            }
            if !queue.leader_active {
                break;
            }
            if !spun {
                // Look again (under the mutex) after the spin, whatever it saw: a hand-off
                // between the spin and the relock must not be slept through.
                spun = true;
                let seen = self.handoffs.load(Ordering::Acquire);
                MutexGuard::unlocked(&mut queue, || {
                    crate::core::spin::spin_until_changed(&self.handoffs, seen)
                });
                continue;
            }
            spun = false;
            self.changed.wait(&mut queue);
        }
        queue.leader_active = true;
        let group = take_group(&mut queue.pending, ticket);
        Turn::Lead(Leader {
            queue: self,
            ticket,
            group,
            finished: false,
            _held: held,
        })
    }

    /// Hands every writer of the leader's group its result (`result`, or its own error from
    /// `rejected`), gives the write path back, and returns the leader's own result.
    pub(crate) fn finish(
        &self,
        mut leader: Leader<'_>,
        result: Result<()>,
        rejected: Vec<(u64, Error)>,
    ) -> Result<()> {
        leader.finished = true;
        let mut queue = self.queue.lock();
        for w in &leader.group {
            let shared = match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(e.duplicate()),
            };
            queue.done.insert(w.ticket, shared);
        }
        for (t, e) in rejected {
            queue.done.insert(t, Err(e));
        }
        // `take_group` put the leader's own batch in its group, so its result is the group's
        // (or its own rejection): never the result of a group its batch was not in.
        let own = queue.done.remove(&leader.ticket).unwrap_or(result);
        queue.leader_active = false;
        self.handoffs.fetch_add(1, Ordering::Release);
        self.changed.notify_all();
        own
    }

    /// Runs `f` while no write group is in progress and none can start (used to switch
    /// memtables outside the write path without racing a leader that is appending).
    pub(crate) fn exclusive<R>(&self, f: impl FnOnce() -> R) -> R {
        let _held = Held::enter(Rank::WritePath);
        let mut queue = self.queue.lock();
        while queue.leader_active {
            self.changed.wait(&mut queue);
        }
        queue.leader_active = true;
        drop(queue);
        // Hands the write path back however `f` ends (a panic included), or every later writer
        // would wait forever.
        let _release = ReleaseWritePath(self);
        f()
    }
}

/// The group a new leader commits: every queued write up to and including its own (`ticket`),
/// which must commit before it and in order, then later ones while the group is under
/// [`MAX_GROUP_BYTES`]. A group that stopped at the byte limit before the leader's own batch
/// would leave that batch queued while its writer returned the group's result, an `Ok` for a
/// write not yet made (and never synced).
fn take_group(pending: &mut VecDeque<QueuedWrite>, ticket: u64) -> Vec<QueuedWrite> {
    let mut group = Vec::new();
    let mut bytes = 0;
    let mut own_taken = false;
    while !(own_taken && bytes >= MAX_GROUP_BYTES) {
        let Some(write) = pending.pop_front() else {
            break;
        };
        own_taken |= write.ticket == ticket;
        bytes += write.batch.size_bytes();
        group.push(write);
    }
    debug_assert!(own_taken, "a leader's own batch is queued when it leads");
    group
}

/// Gives the write path back on drop (see [`WriteQueue::exclusive`]).
struct ReleaseWritePath<'a>(&'a WriteQueue);

impl Drop for ReleaseWritePath<'_> {
    fn drop(&mut self) {
        let mut queue = self.0.queue.lock();
        queue.leader_active = false;
        self.0.handoffs.fetch_add(1, Ordering::Release);
        self.0.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaders_group_reaches_its_own_batch_past_the_byte_limit() {
        let big = || {
            let mut batch = WriteBatch::new();
            batch.put(b"k", vec![0u8; MAX_GROUP_BYTES]);
            batch
        };
        let mut pending: VecDeque<QueuedWrite> = (0..3)
            .map(|ticket| QueuedWrite {
                ticket,
                batch: big(),
                sync: false,
                check: None,
            })
            .collect();
        let group = take_group(&mut pending, 2);
        let tickets: Vec<u64> = group.iter().map(|w| w.ticket).collect();
        assert_eq!(tickets, [0, 1, 2], "in order, up to the leader's own");
        assert!(pending.is_empty());
    }

    #[test]
    fn a_panic_inside_exclusive_gives_the_write_path_back() {
        let queue = WriteQueue::default();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            queue.exclusive(|| panic!("inside the exclusive section"))
        }));
        assert!(panicked.is_err());
        // Would wait forever if the panic had kept the write path.
        assert_eq!(queue.exclusive(|| 7), 7);
    }

    #[test]
    fn a_leader_that_panics_fails_its_group_and_hands_the_write_path_back() {
        let queue = WriteQueue::default();
        let Turn::Lead(first) = queue.enter(WriteBatch::new(), false, None) else {
            panic!("the first writer leads")
        };
        std::thread::scope(|s| {
            // Two writers queue behind the first leader; whichever leads next takes both and
            // panics while committing.
            let writers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| match queue.enter(WriteBatch::new(), false, None) {
                        Turn::Lead(_leader) => panic!("the leader panics while committing"),
                        Turn::Done(result) => result,
                    })
                })
                .collect();
            while queue.queue.lock().pending.len() < 2 {
                std::thread::yield_now();
            }
            assert!(queue.finish(first, Ok(()), Vec::new()).is_ok());
            let results: Vec<_> = writers.into_iter().map(|w| w.join()).collect();
            assert_eq!(
                results.iter().filter(|r| r.is_err()).count(),
                1,
                "one leader panicked"
            );
            let follower = results.into_iter().find_map(std::result::Result::ok);
            assert!(
                matches!(follower, Some(Err(Error::Background(_)))),
                "the follower gets an error, not a hang: {follower:?}"
            );
        });
        // The write path is free again.
        let Turn::Lead(next) = queue.enter(WriteBatch::new(), false, None) else {
            panic!("a later writer leads")
        };
        assert!(queue.finish(next, Ok(()), Vec::new()).is_ok());
    }
}
