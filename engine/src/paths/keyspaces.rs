//! Creating and dropping keyspaces (RocksDB's column families, fjall's keyspaces).
//!
//! Every keyspace is its own LSM tree — memtables, versions, compaction, filter plan and options
//! — and all share the database's WAL, sequence, block cache and manifest. A keyspace is created
//! and dropped by one manifest record each, so a crash leaves it wholly there or wholly gone.
//!
//! Both run with write groups held off (`WriteQueue::exclusive`), sync the WAL first (a keyspace
//! change never survives a power loss that loses writes acknowledged before it), and append their
//! record through the version set under the manifest lock. A drop then removes the tree from the
//! state and the version set, marks its handles dropped (their calls fail with
//! `Error::KeyspaceDropped`), erases its blocks from the cache and deletes its tables as obsolete.
//! A flush or compaction of the keyspace still running ends quietly (`KeyspaceDropped` from
//! `log_and_apply`; its outputs are orphans), and a batch naming it fails alone while the rest of
//! its group commits. Keyspace ids are never reused (`next_keyspace_id` in the manifest), so WAL
//! records of a dropped keyspace are never replayed into a new one of the same name.

use std::sync::Arc;

use crate::base::error::{Error, Result};
use crate::base::keyspace_options::{
    options_text, validate_name, KeyspaceOptions, DEFAULT_KEYSPACE,
};
use crate::core::keyspace_tree::KeyspaceTree;
use crate::paths::engine::Engine;

impl Engine {
    /// The live tree named `name`.
    pub(crate) fn tree_named(&self, name: &str) -> Option<Arc<KeyspaceTree>> {
        self.shared.state().lock().tree_named(name)
    }

    /// Creates keyspace `name` (one manifest record), unless it exists: then `Ok(None)` when
    /// `exists_ok`, [`Error::AlreadyExists`] otherwise.
    pub(crate) fn create_keyspace_tree(
        &self,
        name: &str,
        opts: &KeyspaceOptions,
        exists_ok: bool,
    ) -> Result<Arc<KeyspaceTree>> {
        validate_name(name)?;
        self.check_writable()?;
        let options = opts.apply_to(self.shared.options());
        options.validate()?;
        // Keyspace changes go one at a time, as every manifest writer does; the name is checked
        // again under the manifest lock so two creators of one name cannot both succeed.
        self.writes.exclusive(|| {
            self.sync_wal()?;
            self.shared.versions().create_keyspace_tree(
                name,
                options,
                &options_text(opts),
                exists_ok,
            )
        })
    }

    /// Drops keyspace `name`: one manifest record, then its memtables, cached blocks and files go.
    pub(crate) fn drop_keyspace_tree(&self, name: &str) -> Result<()> {
        self.check_writable()?;
        if name == DEFAULT_KEYSPACE {
            return Err(Error::InvalidArgument(
                "the \"default\" keyspace cannot be dropped".to_string(),
            ));
        }
        let tree = self
            .tree_named(name)
            .ok_or_else(|| Error::KeyspaceNotFound(name.to_string()))?;
        // No group commit runs while the tree leaves the state: a write either went in before
        // (and is dropped with it) or resolves the keyspace after and fails.
        let version = self.writes.exclusive(|| {
            self.sync_wal()?;
            self.shared.versions().drop_keyspace_tree(&tree)
        })?;
        for (_, f) in version.all() {
            self.shared.uncache_table(f.meta.number);
        }
        drop(version); // its tables are deletable once nothing holds them
        crate::jobs::obsolete::delete_obsolete_files(&self.shared);
        // Returns with the keyspace's files gone (the deleter thread took them meanwhile).
        self.shared.drain_deletions();
        Ok(())
    }

    /// Names of the live keyspaces, `"default"` first.
    pub(crate) fn keyspace_names(&self) -> Vec<String> {
        let state = self.shared.state().lock();
        state
            .trees
            .values()
            .map(|t| t.tree.name.to_string())
            .collect()
    }
}
