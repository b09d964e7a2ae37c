//! Where a compaction's surviving entries go: output tables of about the target size, cut at
//! user-key boundaries where `cuts.rs` says.

use siftdb_compaction::CompactionSink;
use siftdb_sstable::{
    FragmentedRangeTombstones, InternalKey, SstError, TableBuildOptions, TableBuilder,
};

use super::cuts::OutputCuts;
use super::heat_map::HeatMap;
use crate::base::error::{Error, Result};
use crate::base::fs::{names, WritableFile};
use crate::base::version_edit::{BlobMeta, FileMeta};
use crate::core::blob_file::BlobReads;
use crate::core::shared::Shared;
use crate::jobs::blob_io::BlobSink;
use siftdb_sstable::blob::BlobIndex;
use siftdb_sstable::{ParsedKey, ValueKind};
use std::collections::BTreeSet;

/// Writes surviving entries into output tables (see the module documentation).
pub(crate) struct TableSink<'a> {
    db: &'a Shared,
    options: TableBuildOptions,
    output_level: usize,
    /// Where outputs end.
    cuts: OutputCuts,
    current: Option<(u64, TableBuilder<Box<dyn WritableFile>>)>,
    /// Every output number this sink took (finished or not), for the job to give back if it
    /// never installs them.
    numbers: Vec<u64>,
    outputs: Vec<FileMeta>,
    bytes_written: u64,
    /// The engine error that stopped the sink (the merge only carries table-layer errors).
    error: Option<Error>,
    /// The range tombstones the outputs carry: each output the part within its key range.
    range_tombstones: Option<FragmentedRangeTombstones>,
    /// The first user key of the output being written (`None` for the first output, which
    /// also takes the tombstones before its first key; a subcompaction's lower bound).
    output_start: Option<Vec<u8>>,
    /// Where the last output's tombstones end (a subcompaction's upper bound; `None`: they
    /// reach to the end).
    upper: Option<Vec<u8>>,
    /// Under adaptive filter allocation, what sizes each output's filter when it is finished.
    heat: Option<HeatMap>,
    /// The heat each finished output was written with (1 without a heat map).
    heats: Vec<f64>,
    /// The current output's references into blob files.
    blob_refs: crate::jobs::blob_io::BlobRefCounter,
    /// Blob garbage collection: values in the oldest blob files move to new ones.
    relocation: Option<Relocation<'a>>,
    /// The blob files relocation wrote, once finished.
    blob_metas: Vec<BlobMeta>,
}

/// What a compaction's blob garbage collection needs: the blob files whose live values it
/// moves (the oldest, `blob_garbage_collection_age_cutoff` of them), how to read them, and
/// where the values go.
pub(crate) struct Relocation<'a> {
    pub files: BTreeSet<u64>,
    pub reads: BlobReads,
    pub sink: BlobSink<'a>,
}

impl Relocation<'_> {
    /// The blob index to store instead of `stored` (an entry of `key`), if it points into a
    /// file being collected: its value is read and written to a new blob file.
    fn relocate(&mut self, key: &[u8], stored: &[u8]) -> Result<Option<Vec<u8>>> {
        let Some(parsed) = ParsedKey::parse(key) else {
            return Ok(None);
        };
        if parsed.kind != ValueKind::BlobIndex {
            return Ok(None);
        }
        let index = crate::core::blob_file::decode_index(parsed.user_key, stored)?;
        if !self.files.contains(&index.reference.file_number) {
            return Ok(None);
        }
        let value = self.reads.fetch(parsed.user_key, stored)?;
        let reference = self.sink.relocate(parsed.user_key, &value)?;
        let moved = BlobIndex {
            reference,
            expiry: index.expiry,
        };
        Ok(Some(moved.encode()))
    }
}

impl<'a> TableSink<'a> {
    pub(crate) fn new(
        db: &'a Shared,
        options: TableBuildOptions,
        target_size: u64,
        output_level: usize,
        grandparents: Vec<(Vec<u8>, u64)>,
    ) -> TableSink<'a> {
        TableSink {
            db,
            options,
            output_level,
            cuts: OutputCuts::new(
                target_size,
                grandparents,
                db.options().level_compaction_dynamic_file_size,
            ),
            current: None,
            numbers: Vec::new(),
            outputs: Vec::new(),
            bytes_written: 0,
            error: None,
            range_tombstones: None,
            output_start: None,
            upper: None,
            heat: None,
            heats: Vec::new(),
            blob_refs: crate::jobs::blob_io::BlobRefCounter::default(),
            relocation: None,
            blob_metas: Vec::new(),
        }
    }

    /// Moves the values of blob indexes into `relocation`'s files (blob garbage collection).
    pub(crate) fn set_relocation(&mut self, relocation: Option<Relocation<'a>>) {
        self.relocation = relocation;
    }

    /// Sizes each output's filter from `heat` (adaptive filter allocation) instead of the
    /// job's plan alone.
    pub(crate) fn set_heat_map(&mut self, heat: Option<HeatMap>) {
        self.heat = heat;
    }

    /// Gives the outputs `tombstones`, split between them at their boundaries: the output
    /// ending before key `k` (where the next begins) keeps the pieces below `k`, and its range
    /// reaches to just before `k` (an exclusive end), so no two outputs of a level overlap.
    pub(crate) fn set_range_tombstones(&mut self, tombstones: Option<FragmentedRangeTombstones>) {
        self.range_tombstones = tombstones;
    }

    /// Limits the outputs to the user keys of `[lower, upper)` (`None`: unbounded): the part
    /// of one subcompaction, whose outputs carry only the tombstones of their part, so the
    /// parts' outputs never overlap.
    pub(crate) fn set_bounds(&mut self, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) {
        self.output_start = lower;
        self.upper = upper;
    }

    /// Finishes the last output. Tombstones with no entry left around them still get an output
    /// of their own: they may delete keys in the levels below.
    pub(crate) fn finish(&mut self) -> Result<()> {
        let upper = self.upper.take();
        let tombstones_left = self.range_tombstones.as_ref().is_some_and(|t| {
            !t.clipped(self.output_start.as_deref(), upper.as_deref())
                .is_empty()
        });
        if self.current.is_none() && self.outputs.is_empty() && tombstones_left {
            self.start_output()?;
        }
        self.finish_current(upper.as_deref())?;
        if let Some(relocation) = self.relocation.take() {
            self.numbers.extend_from_slice(relocation.sink.numbers());
            self.blob_metas = relocation.sink.finish()?;
        }
        Ok(())
    }

    /// The output numbers taken so far: tables, and blob files of relocated values.
    pub(crate) fn numbers(&self) -> Vec<u64> {
        let blobs = self.relocation.as_ref().map(|r| r.sink.numbers());
        let blobs = blobs.unwrap_or_default().iter();
        self.numbers.iter().chain(blobs).copied().collect()
    }

    /// The error that stopped the sink, with its kind intact, if the merge failed because of it.
    pub(crate) fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }

    /// The finished outputs, the heat each was written with, the bytes written, and the blob
    /// files of relocated values.
    pub(crate) fn into_outputs(self) -> SinkOutputs {
        SinkOutputs {
            tables: self.outputs,
            heats: self.heats,
            bytes_written: self.bytes_written,
            blobs: self.blob_metas,
        }
    }

    /// Finishes and syncs the output being written, if any; the next output (if one follows)
    /// starts at `next_start`.
    fn finish_current(&mut self, next_start: Option<&[u8]>) -> Result<()> {
        let Some((number, mut builder)) = self.current.take() else {
            return Ok(());
        };
        if let Some(tombstones) = &self.range_tombstones {
            let mine = tombstones.clipped(self.output_start.as_deref(), next_start);
            if !mine.is_empty() {
                builder.set_range_tombstones(mine);
            }
        }
        self.output_start = next_start.map(<[u8]>::to_vec);
        let heat = match &mut self.heat {
            Some(map) => {
                let (heat, bits) = map.finish_output();
                builder.set_filter_bits_per_key(bits);
                heat
            }
            None => 1.0,
        };
        self.heats.push(heat);
        let (meta, mut file) = builder.finish_into()?;
        file.sync()?;
        self.bytes_written += meta.file_size;
        self.db
            .counters()
            .table_bytes_uncompressed
            .fetch_add(meta.uncompressed_size, std::sync::atomic::Ordering::Relaxed);
        let props = meta.properties;
        let key = |bytes: Vec<u8>| {
            InternalKey::from_encoded(bytes)
                .ok_or_else(|| Error::corruption("compaction output without keys"))
        };
        self.outputs.push(FileMeta {
            number,
            file_size: meta.file_size,
            smallest: key(props.smallest_key)?,
            largest: key(props.largest_key)?,
            entries: props.entries,
            distinct_keys: props.distinct_keys,
            filter_level: self.output_level,
            filter_cap_millibits: None,
            blob_refs: self.blob_refs.take(),
            global_seqno: None,
        });
        Ok(())
    }

    /// Whether the output being written should end before `user_key` (a new user key).
    fn should_cut_before(&mut self, user_key: &[u8]) -> bool {
        let size = self.current.as_ref().map(|c| c.1.estimated_size());
        self.cuts.cut_before(user_key, size)
    }

    fn start_output(&mut self) -> std::result::Result<(), SstError> {
        let number = self.db.versions().new_output();
        self.numbers.push(number);
        let file = self
            .db
            .create_output(
                &names::table(self.db.dir(), number),
                crate::base::rate_limiter::IoPriority::Low,
            )
            .map_err(|source| SstError::Io {
                file: format!("{number:06}.sst"),
                source,
            })?;
        self.current = Some((number, TableBuilder::new(file, self.options.clone())));
        Ok(())
    }
}

/// What a merge wrote: tables (with the heat each inherits), their bytes, and the blob files
/// of relocated values.
pub(crate) struct SinkOutputs {
    pub tables: Vec<FileMeta>,
    pub heats: Vec<f64>,
    pub bytes_written: u64,
    pub blobs: Vec<BlobMeta>,
}

impl TableSink<'_> {
    /// Keeps `error` for the job (the merge sees only that the sink failed).
    fn fail(&mut self, error: Error) -> SstError {
        let message = error.to_string();
        self.error = Some(error);
        SstError::InvalidArgument(message)
    }
}

impl CompactionSink for TableSink<'_> {
    fn add(
        &mut self,
        key: &[u8],
        value: &[u8],
        boundary: bool,
    ) -> std::result::Result<(), SstError> {
        if boundary && self.should_cut_before(siftdb_sstable::user_key_of(key)) {
            if let Err(e) = self.finish_current(Some(siftdb_sstable::user_key_of(key))) {
                let message = e.to_string();
                self.error = Some(e);
                return Err(SstError::InvalidArgument(message));
            }
            self.cuts.output_started();
        }
        if self.current.is_none() {
            self.start_output()?;
        }
        if let (true, Some(heat)) = (boundary, &mut self.heat) {
            heat.observe(siftdb_sstable::user_key_of(key));
        }
        let relocated = match self.relocation.as_mut().map(|r| r.relocate(key, value)) {
            Some(Ok(moved)) => moved,
            Some(Err(e)) => return Err(self.fail(e)),
            None => None,
        };
        let value = relocated.as_deref().unwrap_or(value);
        if let Err(e) = self.blob_refs.observe(key, value) {
            return Err(self.fail(e));
        }
        match self.current.as_mut() {
            Some(c) => c.1.add(key, value),
            None => Ok(()),
        }
    }
}
