//! Comparator function types. siftdb orders keys bytewise only: a database opened with a
//! custom comparator is refused (see `Options::set_comparator`).

use std::cmp::Ordering;

/// Compares two keys.
pub type CompareFn = dyn Fn(&[u8], &[u8]) -> Ordering;
/// Compares two timestamps.
pub type CompareTsFn = dyn Fn(&[u8], &[u8]) -> Ordering;
/// Compares two keys, each with or without its timestamp.
pub type CompareWithoutTsFn = dyn Fn(&[u8], bool, &[u8], bool) -> Ordering;
