//! Reading a table at a *global sequence number* (RocksDB's global seqno of an ingested file).
//!
//! An external table is written with every entry (and range tombstone) at sequence 0; the
//! database that ingests it gives the whole file one sequence number `g`, recorded in its
//! manifest, never in the file. The reader presents every entry as if it carried `g`.
//!
//! Stored keys are never rewritten for comparisons. A seek target `(u, s, t)` is translated
//! instead into the target that lands on the same stored entry when compared with the raw keys
//! `(u', 0, t')`. Internal order is user key ascending, then trailer (`seq << 8 | kind`)
//! descending, so against the patched keys `(u', g, t')`:
//!
//! * `s > g`: the target sorts before every entry of `u` — as `(u, 1, t)` does among raw keys;
//! * `s == g`: only the kinds decide — as `(u, 0, t)` does;
//! * `s < g`: the target sorts after every entry of `u` and before every later user key — as
//!   `(u ++ [0], MAX_SEQUENCE, MAX kind)` does (`u ++ [0]` is `u`'s immediate successor, and its
//!   trailer is above any trailer of sequence 0).
//!
//! Patching `g` into every key keeps the raw order (all raw sequences are equal), so the index
//! and data blocks, whose order is the raw one, need nothing else.

use std::cmp::Ordering;

use super::Table;
use crate::error::{Result, SstError};
use crate::internal_key::{pack_trailer, ValueKind, MAX_SEQUENCE, TRAILER_LEN};

/// The target that, compared with a table's raw keys (all of sequence 0), lands where `target`
/// lands among the keys patched to sequence `g` (see the module documentation). Written into
/// `buf` unless `target` is too short to be an internal key (then returned as it is: it
/// compares bytewise either way).
pub(super) fn stored_order_target<'a>(target: &'a [u8], g: u64, buf: &'a mut Vec<u8>) -> &'a [u8] {
    let Some(split) = target.len().checked_sub(TRAILER_LEN) else {
        return target;
    };
    let (user_key, trailer) = target.split_at(split);
    let trailer = trailer.try_into().map_or(0, u64::from_le_bytes);
    let (sequence, kind) = (trailer >> 8, trailer & 0xff);
    buf.clear();
    buf.extend_from_slice(user_key);
    let trailer = match sequence.cmp(&g) {
        Ordering::Greater => (1 << 8) | kind,
        Ordering::Equal => kind,
        Ordering::Less => {
            buf.push(0);
            pack_trailer(MAX_SEQUENCE, ValueKind::MAX)
        }
    };
    buf.extend_from_slice(&trailer.to_le_bytes());
    buf
}

/// Writes `key` into `out` with its sequence replaced by `g` (its kind byte kept); a key too
/// short to hold a trailer is copied as it is.
pub(super) fn patch_key_into(key: &[u8], g: u64, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(key);
    if let Some(split) = key.len().checked_sub(TRAILER_LEN) {
        let kind = u64::from(key[split]);
        let trailer = (g.min(MAX_SEQUENCE) << 8) | kind;
        out[split..].copy_from_slice(&trailer.to_le_bytes());
    }
}

impl Table {
    /// Checks the table can be read at [`TableReadOptions::global_seqno`](super::TableReadOptions)
    /// and presents its range tombstones at it. Called at open, once the properties and the
    /// range tombstones are read.
    pub(super) fn apply_global_seqno(&mut self) -> Result<()> {
        let Some(g) = self.options.global_seqno else {
            return Ok(());
        };
        let at = self.footer.properties.offset;
        // A sequence other than 0 would be hidden by `g` (or, above it, collide with later
        // writes): such a file was not written for ingestion.
        if self.properties.max_sequence != 0 {
            return Err(self.corruption(
                at,
                format!(
                    "a table read at global sequence number {g} holds sequence numbers up to {}",
                    self.properties.max_sequence
                ),
            ));
        }
        if g > MAX_SEQUENCE {
            return Err(SstError::InvalidArgument(format!(
                "{}: global sequence number {g} exceeds the largest sequence number",
                self.name
            )));
        }
        if let Some(tombstones) = &self.range_tombstones {
            // The properties cover the tombstones; a block saying otherwise is damage.
            if tombstones.sequence_range().is_some_and(|(_, hi)| hi != 0) {
                return Err(self.corruption(
                    at,
                    "range tombstones above sequence 0 in a table read at a global sequence number",
                ));
            }
            if g != 0 {
                self.range_tombstones = Some(std::sync::Arc::new(tombstones.at_sequence(g)));
            }
        }
        // At 0 the entries already read as they should: no patching anywhere.
        self.global_seqno = (g != 0).then_some(g);
        Ok(())
    }

    /// The sequence number every entry of the table is read at
    /// ([`TableReadOptions::global_seqno`](super::TableReadOptions)): RocksDB's global seqno of
    /// an ingested file. `None`: the entries carry their own. The table's
    /// [`properties`](Table::properties) stay as written (sequence 0); [`Table::min_sequence`]
    /// and [`Table::max_sequence`] account for it.
    pub fn global_seqno(&self) -> Option<u64> {
        self.options.global_seqno
    }

    /// The smallest sequence number of the table's entries and range tombstones as read: the
    /// global seqno if it has one, else [`TableProperties::min_sequence`](crate::TableProperties).
    pub fn min_sequence(&self) -> u64 {
        self.options
            .global_seqno
            .unwrap_or(self.properties.min_sequence)
    }

    /// The largest sequence number of the table's entries and range tombstones as read: the
    /// global seqno if it has one, else [`TableProperties::max_sequence`](crate::TableProperties).
    pub fn max_sequence(&self) -> u64 {
        self.options
            .global_seqno
            .unwrap_or(self.properties.max_sequence)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::internal_key::{compare_internal, InternalKey};

    const KINDS: [ValueKind; 6] = [
        ValueKind::Delete,
        ValueKind::Put,
        ValueKind::ExpiringPut,
        ValueKind::Merge,
        ValueKind::RangeDelete,
        ValueKind::BlobIndex,
    ];

    #[test]
    fn stored_order_target_compares_as_the_patched_keys_do() {
        let users: [&[u8]; 7] = [b"", b"\0", b"a", b"a\0", b"a\0\0", b"ab", b"b"];
        for g in [1, 2, 100, MAX_SEQUENCE] {
            for &u in &users {
                for s in [0, 1, g - 1, g, g + 1, 101, MAX_SEQUENCE] {
                    for t in KINDS {
                        let target = InternalKey::new(u, s.min(MAX_SEQUENCE), t);
                        let mut buf = Vec::new();
                        let stored = stored_order_target(target.encoded(), g, &mut buf);
                        for &su in &users {
                            for st in KINDS {
                                let raw = InternalKey::new(su, 0, st);
                                let mut patched = Vec::new();
                                patch_key_into(raw.encoded(), g, &mut patched);
                                assert_eq!(patched, InternalKey::new(su, g, st).encoded());
                                assert_eq!(
                                    compare_internal(raw.encoded(), stored),
                                    compare_internal(&patched, target.encoded()),
                                    "stored {raw:?} target {target:?} at g {g}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn stored_order_target_keeps_short_targets() {
        let mut buf = Vec::new();
        assert_eq!(stored_order_target(b"abc", 5, &mut buf), b"abc");
        let mut out = Vec::new();
        patch_key_into(b"abc", 5, &mut out);
        assert_eq!(out, b"abc");
    }
}
