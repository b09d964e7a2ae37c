//! Background and maintenance jobs — flush, compaction, checkpoint, obsolete-file deletion and
//! the table I/O they share — each handed a narrow context, never the database. They name `core`
//! and `base` only.
//!
//! The threads: one flush thread (`flush.rs`), the compaction threads (`compaction/`), the deleter
//! thread (`file_deleter.rs`) and the filter-index thread (`filter_index.rs`), each started with
//! `background::spawn` and joined by the handle at close. A thread only waits for work and calls
//! one step (`flush::flush_next`, `compaction::compact_next`); with the cargo feature
//! `test-hooks`, `Db::open_stepped` starts none of them and the `Db::step_*` calls run the same
//! steps on the caller's thread, so a test chooses the interleaving
//! (`tests/tests/it/schedule_model.rs`). `Shared::stepped` then turns the waits for that work
//! into doing it: `flush_and_wait` flushes inline, `wait_for_compaction` compacts until nothing
//! is due, `Db::resume` flushes what it froze.

pub(crate) mod background;
pub(crate) mod blob_io;
pub(crate) mod checkpoint;
pub(crate) mod compaction;
pub(crate) mod deleter_thread;
pub(crate) mod filter_index_rebuild;
pub(crate) mod flush;
pub(crate) mod obsolete;
pub(crate) mod table_io;
