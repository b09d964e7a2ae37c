//! bulkload: `--num` keys in key order loaded through external table files (siftdb's and
//! RocksDB's `SstFileWriter`, then one ingestion per keyspace; fjall's ingestion API), the
//! files cut at about `--target_file_size_base` and moved into the database. The timing covers
//! writing the files and ingesting them, so a load is measured until its keys are readable.

use super::super::engine::BulkLoader;
use super::super::error::{Error, Result};
use super::super::keys::Variant;
use super::super::measure::{Measured, Outcome};
use super::Workbench;
use crate::runner::args::Benchmark;

/// Files of this size when `--target_file_size_base` is not given (siftdb's and RocksDB's
/// default target).
const DEFAULT_FILE_BYTES: u64 = 64 << 20;

impl Workbench<'_> {
    /// bulkload (see the module documentation): one step on one thread, since a loader (fjall's
    /// ingestion) may not move between threads.
    pub(super) fn bulk_load(&self, stream: u64) -> Result<Measured> {
        let staging = super::sibling_dir(self.dir, "siftdb-bench-bulkload-")?;
        let file_bytes = self
            .config
            .tree
            .target_file_size_base
            .unwrap_or(DEFAULT_FILE_BYTES);
        let num = self.config.num;
        self.timed(Benchmark::BulkLoad, 1, 1, num, stream, |ctx, _| {
            let keyspaces = self.config.keyspaces.max(1);
            let mut loaders: Vec<Option<Box<dyn BulkLoader + '_>>> =
                (0..keyspaces).map(|_| None).collect();
            for index in 0..num {
                self.keys.encode(index, Variant::Written, &mut ctx.key);
                let ks = self.keys.keyspace(index);
                let slot = loaders
                    .get_mut(ks)
                    .ok_or_else(|| Error::new(format!("internal error: keyspace {ks}")))?;
                if slot.is_none() {
                    *slot = Some(self.loader(ks, staging.path(), file_bytes)?);
                }
                if let Some(loader) = slot.as_mut() {
                    loader.put(&ctx.key, self.values.value(&mut ctx.rng))?;
                }
                self.model.set_live(index);
            }
            for loader in loaders.into_iter().flatten() {
                loader.finish()?;
            }
            Ok(Outcome {
                ops: num,
                ..Outcome::default()
            })
        })
    }
    fn loader(
        &self,
        ks: usize,
        staging: &std::path::Path,
        file_bytes: u64,
    ) -> Result<Box<dyn BulkLoader + '_>> {
        self.engine
            .bulk_loader(ks, staging, file_bytes)?
            .ok_or_else(|| Error::new(format!("{} has no bulk load", self.engine.name())))
    }
}
