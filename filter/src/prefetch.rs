//! A hint to the CPU to start loading a cache line that a filter probe will read soon.
//!
//! Why: a point lookup probes one filter per level, and on a tree whose filters outgrow the
//! CPU's private caches each probe waits for memory. Starting the next level's load before
//! probing the current one lets the two waits overlap.

/// Asks the CPU to fetch the cache line holding `value` into all cache levels. A hint only: no
/// effect on results, none on other architectures.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has; a prefetch never faults
        // and never writes, and the address comes from a live reference anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetch_of_any_reference_is_harmless() {
        let words = vec![1u64, 2, 3];
        for w in &words {
            prefetch(w);
        }
        assert_eq!(words, [1, 2, 3]);
    }
}
