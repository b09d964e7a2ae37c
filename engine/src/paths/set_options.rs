//! `set_options`: changing a live database's mutable options (RocksDB's `SetOptions`). A
//! keyspace's new options are validated whole, recorded in `OPTIONS`, and swapped in at once;
//! new memtables, stall checks, compaction picks and new tables follow them. The compaction
//! threads' count is the caller's to apply (`jobs::compaction::set_threads`).

use crate::base::error::Result;
use crate::base::live_options::{check_name, is_live_db_option, thread_count, with_changes};
use crate::base::options_file::{write_options_file, RecordedOptions};
use crate::core::keyspace_tree::KeyspaceTree;
use crate::paths::engine::Engine;

/// What `set_options` calls changed so far (by keyspace and name), as `OPTIONS` records them.
pub(crate) type LiveChanges = std::collections::BTreeMap<(String, String), String>;

impl Engine {
    /// Applies `changes` to `tree` (and, with `db_wide`, to the database's compaction
    /// threads): all of them or, on a refused name or value, none. Returns the compaction
    /// threads now wanted if a change named them.
    pub(crate) fn set_options(
        &self,
        tree: &KeyspaceTree,
        changes: &[(&str, &str)],
        db_wide: bool,
    ) -> Result<Option<usize>> {
        self.shared.check_open()?;
        self.shared.check_writable()?;
        tree.check_live()?;
        for (name, _) in changes {
            check_name(name, db_wide)?;
        }
        let mut live = self.live_changes.lock();
        let options = with_changes(&tree.options(), changes)?;
        let threads = self.compaction_threads_after(&live, changes)?;
        let mut recorded = live.clone();
        for (name, value) in changes {
            let keyspace = if is_live_db_option(name) {
                "*"
            } else {
                &tree.name
            };
            recorded.insert((keyspace.to_string(), name.to_string()), value.to_string());
        }
        // Recorded first: a change the file does not show never takes effect. Deletions wait
        // meanwhile: the cleanup of obsolete files deletes temporary files (`OPTIONS.tmp`).
        let file = RecordedOptions {
            live: recorded.clone(),
            ..RecordedOptions::of(self.shared.options())
        };
        let paused = self.shared.deletions().paused();
        write_options_file(self.shared.fs().as_ref(), self.shared.dir(), &file)?;
        drop(paused);
        *live = recorded;
        tree.replace_options(options);
        tracing::info!(
            "siftdb: keyspace {:?} options changed: {changes:?}",
            tree.name
        );
        // A larger memtable or L0 may end a stall; a lower trigger may call for a compaction.
        self.shared.state().notify_all();
        Ok(threads)
    }

    /// The compaction threads wanted once `changes` apply over the earlier `live` ones (`None`
    /// if `changes` names neither thread option).
    fn compaction_threads_after(
        &self,
        live: &LiveChanges,
        changes: &[(&str, &str)],
    ) -> Result<Option<usize>> {
        if !changes.iter().any(|(n, _)| is_live_db_option(n)) {
            return Ok(None);
        }
        let mut options = self.shared.options().clone();
        let earlier = live.iter().filter(|((k, _), _)| k == "*");
        let pairs = earlier
            .map(|((_, n), v)| (n.as_str(), v.as_str()))
            .chain(changes.iter().copied());
        for (name, value) in pairs {
            match name {
                "max_background_jobs" => options.max_background_jobs = thread_count(name, value)?,
                "max_background_compactions" => {
                    options.max_background_compactions = thread_count(name, value)?
                }
                _ => {}
            }
        }
        Ok(Some(options.compaction_threads()))
    }
}
