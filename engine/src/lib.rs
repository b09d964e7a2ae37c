//! siftdb: an embedded LSM-tree key-value store (the engine arrives in a later change).
