//! Background and maintenance jobs — flush, compaction, checkpoint, obsolete-file deletion and
//! the table I/O they share — each handed a narrow context, never the database. They name `core`
//! and `base` only.

pub(crate) mod background;
pub(crate) mod blob_io;
pub(crate) mod checkpoint;
pub(crate) mod compaction;
pub(crate) mod file_deleter;
pub(crate) mod filter_index;
pub(crate) mod flush;
pub(crate) mod obsolete;
pub(crate) mod table_io;
