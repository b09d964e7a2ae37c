//! Values read without a copy: siftdb's `PinnedValue`.

use std::ops::Deref;

/// A value read by `get_pinned`: it stays in its cached block while this lives (siftdb's
/// `PinnedValue`); dereferences to `[u8]`.
pub struct DBPinnableSlice<'a> {
    value: siftdb::PinnedValue,
    db: std::marker::PhantomData<&'a ()>,
}

impl DBPinnableSlice<'_> {
    pub(crate) fn new(value: siftdb::PinnedValue) -> Self {
        DBPinnableSlice {
            value,
            db: std::marker::PhantomData,
        }
    }
}

impl AsRef<[u8]> for DBPinnableSlice<'_> {
    fn as_ref(&self) -> &[u8] {
        self.value.as_slice()
    }
}

impl Deref for DBPinnableSlice<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.value.as_slice()
    }
}

impl std::fmt::Debug for DBPinnableSlice<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.value.as_slice())
    }
}

impl PartialEq<[u8]> for DBPinnableSlice<'_> {
    fn eq(&self, rhs: &[u8]) -> bool {
        self.value.as_slice() == rhs
    }
}

impl PartialEq<&[u8]> for DBPinnableSlice<'_> {
    fn eq(&self, rhs: &&[u8]) -> bool {
        self.value.as_slice() == *rhs
    }
}

impl<const N: usize> PartialEq<[u8; N]> for DBPinnableSlice<'_> {
    fn eq(&self, rhs: &[u8; N]) -> bool {
        self.value.as_slice() == rhs
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for DBPinnableSlice<'_> {
    fn eq(&self, rhs: &&[u8; N]) -> bool {
        self.value.as_slice() == *rhs
    }
}

impl PartialEq<Vec<u8>> for DBPinnableSlice<'_> {
    fn eq(&self, rhs: &Vec<u8>) -> bool {
        self.value.as_slice() == rhs.as_slice()
    }
}

/// A value returned by value (`key_may_exist_cf_opt_value`); dereferences to `[u8]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CSlice(pub(crate) Vec<u8>);

impl AsRef<[u8]> for CSlice {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Deref for CSlice {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}
