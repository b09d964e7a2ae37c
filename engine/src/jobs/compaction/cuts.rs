//! Where a compaction's output tables end: at about the target size, early where an output
//! would overlap too much of the level below the output level (its *grandparents*, LevelDB's
//! limit), and — with `Options::level_compaction_dynamic_file_size`, on by default — where a
//! grandparent file ends.
//!
//! Why the last: an output whose ends fall inside grandparent files overlaps, when it is
//! compacted down, those two files as well as the ones inside its range — at a level multiplier
//! of 4 about five files where four hold its keys. An output cut where a grandparent ends
//! overlaps only the ones it needs. So an output past three quarters of the target size ends at
//! the next grandparent boundary, and may grow to five quarters of the target to reach one.
//! RocksDB cuts its outputs at grandparent boundaries for the same reason (always, since the
//! option of that name went).

/// An output overlapping more than this many target file sizes of the level below it is cut
/// early (LevelDB's grandparent limit): compacting it down later would rewrite that much. A
/// trivial move is refused for the same reason.
pub(crate) const MAX_GRANDPARENT_OVERLAP_FILES: u64 = 10;

/// The cut rule of one compaction (see the module documentation), fed the outputs' user keys in
/// order.
#[derive(Debug)]
pub(crate) struct OutputCuts {
    target_size: u64,
    /// Files of the level below the output level: (largest user key, size), in key order.
    grandparents: Vec<(Vec<u8>, u64)>,
    /// The first grandparent not entirely before the keys seen.
    next: usize,
    /// Bytes of grandparents the output being written overlaps.
    overlap: u64,
    align: bool,
}

impl OutputCuts {
    /// Cuts at `target_size`, among `grandparents`, aligned to them if `align`.
    pub(crate) fn new(target_size: u64, grandparents: Vec<(Vec<u8>, u64)>, align: bool) -> Self {
        OutputCuts {
            target_size,
            grandparents,
            next: 0,
            overlap: 0,
            align,
        }
    }

    /// Whether the output being written (`size` bytes so far; `None`: none is) ends before
    /// `user_key`, the first key of a new user key.
    pub(crate) fn cut_before(&mut self, user_key: &[u8], size: Option<u64>) -> bool {
        // Grandparent files entirely before this key are overlapped by the current output.
        let mut crossed = false;
        while let Some((largest, bytes)) = self.grandparents.get(self.next) {
            if largest.as_slice() >= user_key {
                break;
            }
            if size.is_some() {
                self.overlap += bytes;
            }
            self.next += 1;
            crossed = true;
        }
        let Some(size) = size else {
            return false;
        };
        self.overlap > MAX_GRANDPARENT_OVERLAP_FILES * self.target_size || self.full(size, crossed)
    }

    /// A new output begins: it overlaps no grandparent yet.
    pub(crate) fn output_started(&mut self) {
        self.overlap = 0;
    }

    /// Whether an output of `size` bytes is done before a key that `crossed` the end of a
    /// grandparent file.
    fn full(&self, size: u64, crossed: bool) -> bool {
        let ahead = self.next < self.grandparents.len();
        if !self.align || !(ahead || crossed) {
            return size >= self.target_size;
        }
        let quarter = self.target_size / 4;
        size >= 5 * quarter || (crossed && size >= 3 * quarter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grandparents() -> Vec<(Vec<u8>, u64)> {
        // Files ending at "d", "h", "l", "p", 100 bytes each.
        ["d", "h", "l", "p"]
            .iter()
            .map(|k| (k.as_bytes().to_vec(), 100))
            .collect()
    }

    /// The keys before which `cuts` ends an output, for outputs growing by `step` bytes a key.
    fn cut_points(mut cuts: OutputCuts, keys: &str, step: u64) -> String {
        let mut size = None;
        let mut points = String::new();
        for k in keys.chars() {
            if cuts.cut_before(k.to_string().as_bytes(), size) {
                points.push(k);
                size = None;
                cuts.output_started();
            }
            size = Some(size.unwrap_or(0) + step);
        }
        points
    }

    #[test]
    fn outputs_end_where_a_grandparent_ends_once_past_three_quarters() {
        // Target 400 bytes, 100 a key: without alignment every fourth key starts an output;
        // with it, an output of three or four keys ends at the grandparent boundary after it.
        let keys = "abcdefghijklmnopqrst";
        let plain = OutputCuts::new(400, grandparents(), false);
        assert_eq!(cut_points(plain, keys, 100), "eimq");
        let aligned = OutputCuts::new(400, grandparents(), true);
        assert_eq!(cut_points(aligned, keys, 100), "eimq");
        // 60 a key: plain cuts once 420 bytes are written (seven keys). Aligned, the first
        // boundary ("e") comes at 240 bytes, too early; the output grows to 480 and ends at the
        // next ("i"), and so on.
        let plain = OutputCuts::new(400, grandparents(), false);
        assert_eq!(cut_points(plain, keys, 60), "ho");
        let aligned = OutputCuts::new(400, grandparents(), true);
        assert_eq!(cut_points(aligned, keys, 60), "iq");
    }

    #[test]
    fn an_aligned_output_grows_to_five_quarters_then_ends_anyway() {
        // One grandparent ending far ahead: no boundary to reach before 500 bytes.
        let far = vec![(b"z".to_vec(), 100)];
        let aligned = OutputCuts::new(400, far, true);
        assert_eq!(cut_points(aligned, "abcdefghijklm", 100), "fk");
        // Past the last grandparent the plain target applies again.
        let past = vec![(b"a".to_vec(), 100)];
        let aligned = OutputCuts::new(400, past, true);
        assert_eq!(cut_points(aligned, "bcdefghij", 100), "fj");
    }

    #[test]
    fn an_output_overlapping_too_many_grandparents_ends_early() {
        // Grandparents of 1000 bytes each, one per key: more than 10 × 400 bytes are passed
        // at the fifth, however small the output.
        let big: Vec<(Vec<u8>, u64)> = "abcdefghij"
            .chars()
            .map(|k| (k.to_string().into_bytes(), 1000))
            .collect();
        let plain = OutputCuts::new(400, big, false);
        assert_eq!(cut_points(plain, "abcdefghijk", 1), "fk");
    }
}
