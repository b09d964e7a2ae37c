//! The pin guard.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::cache::Inner;
use crate::key::BlockKey;

/// A pin on a cached block: while any guard for an entry is alive, the entry
/// cannot be evicted. Dropping the last one returns the entry to its LRU as
/// most recently used. Cloning a guard adds a pin.
///
/// The guard owns a reference to the cache's shared state and to the value,
/// so it can be stored next to the table that needs the block, with no
/// lifetime tied to the [`BlockCache`](crate::BlockCache) handle. Dereferences
/// to the block.
pub struct PinnedBlock<V> {
    cache: Arc<Inner<V>>,
    key: BlockKey,
    value: Arc<V>,
    pin_id: u64,
}

impl<V> PinnedBlock<V> {
    pub(crate) fn new(cache: Arc<Inner<V>>, key: BlockKey, value: Arc<V>, pin_id: u64) -> Self {
        Self {
            cache,
            key,
            value,
            pin_id,
        }
    }

    /// The key of the pinned block.
    pub fn key(&self) -> BlockKey {
        self.key
    }

    /// The pinned block as a shared value (clone it to keep the block
    /// beyond the pin, without keeping it pinned).
    pub fn value(&self) -> &Arc<V> {
        &self.value
    }
}

impl<V> Deref for PinnedBlock<V> {
    type Target = V;

    fn deref(&self) -> &V {
        &self.value
    }
}

impl<V> Clone for PinnedBlock<V> {
    /// Another pin on the same entry (a no-op pin if the entry was erased).
    fn clone(&self) -> Self {
        self.cache
            .with_shard(&self.key, |shard, _| shard.add_pin(&self.key, self.pin_id));
        Self {
            cache: Arc::clone(&self.cache),
            key: self.key,
            value: Arc::clone(&self.value),
            pin_id: self.pin_id,
        }
    }
}

impl<V> Drop for PinnedBlock<V> {
    fn drop(&mut self) {
        self.cache.with_shard(&self.key, |shard, garbage| {
            shard.unpin(&self.key, self.pin_id, garbage)
        });
    }
}

impl<V: fmt::Debug> fmt::Debug for PinnedBlock<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBlock")
            .field("key", &self.key)
            .field("value", &self.value)
            .finish()
    }
}
