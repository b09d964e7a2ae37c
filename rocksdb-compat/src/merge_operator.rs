//! Merge operators as rust-rocksdb declares them (functions over [`MergeOperands`]), run by
//! siftdb's `MergeOperator`.

/// A merge function: the key, the existing value (if any) and the operands, oldest first, to
/// the merged value (`None`: the merge failed, reported as corruption).
pub trait MergeFn:
    Fn(&[u8], Option<&[u8]>, &MergeOperands) -> Option<Vec<u8>> + Send + Sync + 'static
{
}

impl<F> MergeFn for F where
    F: Fn(&[u8], Option<&[u8]>, &MergeOperands) -> Option<Vec<u8>> + Send + Sync + 'static
{
}

/// The operands of one merge, oldest first.
#[derive(Debug)]
pub struct MergeOperands {
    operands: Vec<Box<[u8]>>,
}

impl MergeOperands {
    fn new(operands: &[&[u8]]) -> MergeOperands {
        MergeOperands {
            operands: operands.iter().map(|o| Box::from(*o)).collect(),
        }
    }

    /// How many operands.
    pub fn len(&self) -> usize {
        self.operands.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.operands.is_empty()
    }

    /// The operands, oldest first.
    pub fn iter(&self) -> MergeOperandsIter<'_> {
        MergeOperandsIter {
            inner: self.operands.iter(),
        }
    }
}

/// An iterator over [`MergeOperands`].
#[derive(Debug)]
pub struct MergeOperandsIter<'a> {
    inner: std::slice::Iter<'a, Box<[u8]>>,
}

impl<'a> Iterator for MergeOperandsIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        self.inner.next().map(|b| &**b)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<'a> IntoIterator for &'a MergeOperands {
    type Item = &'a [u8];
    type IntoIter = MergeOperandsIter<'a>;

    fn into_iter(self) -> MergeOperandsIter<'a> {
        self.iter()
    }
}

type BoxedMergeFn =
    Box<dyn Fn(&[u8], Option<&[u8]>, &MergeOperands) -> Option<Vec<u8>> + Send + Sync>;

/// A full and an optional partial merge function as siftdb's `MergeOperator`.
pub(crate) struct MergeAdapter<F> {
    name: String,
    full: F,
    partial: Option<BoxedMergeFn>,
}

impl<F: MergeFn> MergeAdapter<F> {
    pub(crate) fn new(name: String, full: F, partial: Option<BoxedMergeFn>) -> Self {
        MergeAdapter {
            name,
            full,
            partial,
        }
    }
}

impl<F: MergeFn> siftdb::MergeOperator for MergeAdapter<F> {
    fn name(&self) -> &str {
        &self.name
    }

    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        (self.full)(key, existing, &MergeOperands::new(operands))
    }

    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        let partial = self.partial.as_ref()?;
        partial(key, None, &MergeOperands::new(operands))
    }
}
