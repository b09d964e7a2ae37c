//! siftdb-compaction: merging iterator, leveled picker and compaction job (arrives in a later change).
